//! A kernel made of one long chain of dependent instructions (what unrolled code and generated
//! kernels look like) compiles and runs when launched from a thread with a small stack: LLVM's
//! analyses recurse once per link of such a chain, so compiling on the launching thread overflowed its
//! stack and killed the process.

/// `chain(p)`: each thread computes `links` rounds of `x = (x + t) ^ ((x + t) >> 3)` from `x = 0`,
/// `t = tid.x + 1`, and stores `x` at `p[tid.x]`.
fn chain_kernel(links: usize) -> String {
    let mut s = String::from(
        ".version 7.0\n.target sm_75\n.address_size 64\n.visible .entry chain(.param .u64 p)\n{\n\
         .reg .u32 %r<5>;\n.reg .u64 %rd<4>;\n\
         ld.param.u64 %rd1, [p];\nmov.u32 %r1, %tid.x;\nadd.u32 %r4, %r1, 1;\nmov.u32 %r2, 0;\n",
    );
    for _ in 0..links {
        s.push_str("add.u32 %r2, %r2, %r4;\nshr.u32 %r3, %r2, 3;\nxor.b32 %r2, %r2, %r3;\n");
    }
    s.push_str("mul.wide.u32 %rd2, %r1, 4;\nadd.u64 %rd3, %rd1, %rd2;\nst.global.u32 [%rd3], %r2;\nret;\n}\n");
    s
}

#[test]
fn long_chains_compile_from_a_small_stack() {
    const LINKS: usize = 4_000;
    let src = chain_kernel(LINKS);
    let runs = std::thread::Builder::new()
        .stack_size(512 << 10)
        .spawn(move || {
            let module = ptx_jit::load(&src).expect("the kernel loads");
            let k = module.kernel("chain").expect("kernel `chain`");
            // The first launch runs the quick tier, the second the optimised code.
            (0..2)
                .map(|_| {
                    let mut out = vec![0u32; 32];
                    let params = (out.as_mut_ptr() as u64).to_le_bytes();
                    ptx_jit::launch(k, &ptx_jit::Launch::new([1, 1, 1], [32, 1, 1], 0, &params)).expect("launch");
                    out
                })
                .collect::<Vec<_>>()
        })
        .expect("thread")
        .join()
        .expect("no panic");
    let want: Vec<u32> = (1..=32u32)
        .map(|t| {
            (0..LINKS).fold(0u32, |x, _| {
                let y = x.wrapping_add(t);
                y ^ (y >> 3)
            })
        })
        .collect();
    assert_eq!(runs[0], want, "quick tier");
    assert_eq!(runs[1], want, "optimised code");
}
