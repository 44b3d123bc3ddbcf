//! Warp-synchronous code: a kernel with warp collectives whose threads, between them, talk through
//! shared memory with no `__syncwarp` (code written when a warp always ran in step, such as CuPy's
//! partition kernel). A GPU runs such a warp in step; so must its first launch and its later ones
//! here (lane-vectorised regions, never the quick tier's thread-by-thread walk) where the regions
//! can be vectorised.

const PTX: &str = "
.version 7.0
.target sm_75
.address_size 64
.visible .entry rotate(.param .u64 out, .param .u32 k)
{
  .reg .pred %p<3>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .shared .align 4 .b32 s[32];
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 32;
  vote.sync.any.pred %p2, %p1, 0xffffffff;
  ld.param.u32 %r5, [k];
  mul.lo.u32 %r2, %r1, %r5;
  mov.u64 %rd2, s;
  mul.wide.u32 %rd3, %r1, 4;
  add.u64 %rd4, %rd2, %rd3;
  st.shared.u32 [%rd4], %r2;
  add.u32 %r3, %r1, 1;
  and.b32 %r3, %r3, 31;
  mul.wide.u32 %rd5, %r3, 4;
  add.u64 %rd6, %rd2, %rd5;
  ld.shared.u32 %r4, [%rd6];
  add.u64 %rd7, %rd1, %rd3;
  st.global.u32 [%rd7], %r4;
  ret;
}
";

#[test]
fn a_warp_runs_in_step_between_its_collectives() {
    // Without the disk cache, whose optimised tier would skip the quick tier anyway.
    ptx_jit::jit::cache::disable();
    let module = ptx_jit::load(PTX).expect("loads");
    let k = module.kernel("rotate").expect("prepares");
    assert!(
        matches!(k.info.exec, ptx_jit::Exec::Regions { warp: true, .. }),
        "{:?}",
        k.info.exec
    );
    // Each launch stores other values, so that one cannot read what the one before left in shared
    // memory.
    for (launch, factor) in [10u32, 7].into_iter().enumerate() {
        let want: Vec<u32> = (0..32).map(|i| (i + 1) % 32 * factor).collect();
        let mut out = vec![0u32; 32];
        let mut params = (out.as_mut_ptr() as u64).to_le_bytes().to_vec();
        params.extend(factor.to_le_bytes());
        ptx_jit::launch(k, &ptx_jit::Launch::new([1, 1, 1], [32, 1, 1], 0, &params)).expect("launch");
        assert_eq!(out, want, "launch {launch}");
    }
}
