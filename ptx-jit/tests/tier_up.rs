//! The optimised tier in the background: in a process that started the JIT as the driver does
//! (`warm_up`), a kernel's small launches run its quick tier until its optimised code, compiled by a
//! child process, is linked; and a process that exits while that compile runs exits cleanly.

use std::time::{Duration, Instant};

/// `out[i] = f(i)` for a chain of `n` dependent multiply-adds, long enough that O3 takes a while.
fn chain_kernel(n: usize) -> String {
    let mut body = String::new();
    for k in 0..n {
        body += &format!(
            "  fma.rn.f32 %f1, %f1, 0f3F7FF000, 0f{:08X};\n",
            (1.0f32 + k as f32 / 4096.0).to_bits()
        );
    }
    format!(
        ".version 7.0
.target sm_75
.address_size 64
.visible .entry chain(.param .u64 out)
{{
  .reg .b32 %r<2>;
  .reg .f32 %f<2>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %tid.x;
  cvt.rn.f32.u32 %f1, %r1;
{body}  mul.wide.u32 %rd2, %r1, 4;
  add.u64 %rd3, %rd1, %rd2;
  st.global.f32 [%rd3], %f1;
  ret;
}}
"
    )
}

fn launch(k: &ptx_jit::HostKernel, threads: u32) -> Vec<f32> {
    let mut out = vec![0f32; threads as usize];
    let params = (out.as_mut_ptr() as u64).to_le_bytes();
    ptx_jit::launch(k, &ptx_jit::Launch::new([1, 1, 1], [threads, 1, 1], 0, &params)).expect("launch");
    out
}

#[test]
fn launches_run_the_quick_tier_until_the_optimised_one_is_linked() {
    ptx_jit::jit::cache::disable();
    ptx_jit::warm_up();
    let module = ptx_jit::load(&chain_kernel(1500)).expect("loads");
    let k = module.kernel("chain").expect("prepares");
    let first = launch(k, 64);
    let [quick, full] = k.tier_times();
    assert!(
        quick.is_some() && full.is_none(),
        "the first launch runs the quick tier alone"
    );
    // The second launch asks for the optimised tier and does not wait for it (its compile takes far
    // longer than the launch).
    assert_eq!(launch(k, 64), first);
    assert!(
        k.tier_times()[1].is_none(),
        "the second launch waited for the optimised tier"
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    while k.tier_times()[1].is_none() {
        assert!(Instant::now() < deadline, "the optimised tier never came");
        assert_eq!(launch(k, 64), first, "a launch while the optimised tier compiles");
        std::thread::sleep(Duration::from_millis(20));
    }
    let full = k.tier_times()[1].expect("linked");
    assert!(
        !full.cached && full.codegen > Duration::ZERO,
        "compiled, not taken from a cache: {full:?}"
    );
    // The optimised code computes the same (and runs from now on).
    assert_eq!(launch(k, 64), first);
    assert_eq!(launch(k, 64), first);
}

/// The child side of the next test: a kernel with a loop over global memory (whose O3 compile makes
/// LLVM objects on first use that an exit handler destroys) launched twice; then the process exits
/// at once, in the middle of the optimised tier's compile.
#[test]
fn exit_during_a_background_compile_child() {
    if std::env::var_os("TIER_UP_EXIT_CHILD").is_none() {
        return;
    }
    ptx_jit::jit::cache::disable();
    ptx_jit::warm_up();
    let module = ptx_jit::load(include_str!("../../tests/ptx/vecadd.ptx")).expect("loads");
    let k = module.kernel("vecadd").expect("prepares");
    let (a, b, mut c) = ([1f32; 8], [2f32; 8], [0f32; 8]);
    let mut params = vec![];
    for p in [a.as_ptr() as u64, b.as_ptr() as u64, c.as_mut_ptr() as u64] {
        params.extend(p.to_le_bytes());
    }
    params.extend(8u32.to_le_bytes());
    // A long kernel first, so that the background compile is still at work when vecadd's begins.
    let long = ptx_jit::load(&chain_kernel(2000)).expect("loads");
    let chain = long.kernel("chain").expect("prepares");
    launch(chain, 32);
    launch(chain, 32);
    for _ in 0..2 {
        ptx_jit::launch(k, &ptx_jit::Launch::new([2, 1, 1], [4, 1, 1], 0, &params)).expect("launch");
    }
    assert_eq!(c, [3f32; 8]);
    std::process::exit(0);
}

/// With the optimised tier compiled on a thread of this process instead, the child died of SIGSEGV at
/// exit (LLVM's x86 memory-unfold table, destroyed by an exit handler, read by the compile).
#[test]
fn a_process_exits_cleanly_while_the_optimised_tier_compiles() {
    for _ in 0..5 {
        let out = std::process::Command::new(std::env::current_exe().expect("this test"))
            .args(["--exact", "exit_during_a_background_compile_child", "--nocapture"])
            .env("TIER_UP_EXIT_CHILD", "1")
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
