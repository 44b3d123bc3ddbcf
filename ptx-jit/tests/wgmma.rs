//! `wgmma.mma_async` through the whole host path: lowering, the fiber scheduler's warp collective and
//! the emulation. A descriptor that reaches past the CTA's shared memory ends the launch with an
//! illegal-address error naming why (on a GPU: `CUDA_ERROR_ILLEGAL_ADDRESS`), not a wild read; the
//! next launch of a correct one computes the product.

const PTX: &str = "
.version 8.5
.target sm_90a
.address_size 64
.visible .entry ones(.param .u64 out, .param .u64 bdesc)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<8>;
  .shared .align 1024 .b16 s[256];
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [bdesc];
  mov.u32 %r1, %tid.x;
  // B (16 x 8 f16) is all ones: 256 bytes, two halves per thread.
  mov.u64 %rd3, s;
  mul.wide.u32 %rd4, %r1, 4;
  add.u64 %rd5, %rd3, %rd4;
  mov.b32 %r2, 0x3c003c00;
  st.shared.u32 [%rd5], %r2;
  bar.sync 0;
  // A in registers: all ones too. D = A * B (scale-d 0): 16 everywhere.
  wgmma.fence.sync.aligned;
  wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0, %f1, %f2, %f3}, {%r2, %r2, %r2, %r2}, %rd2, 0, 1, 1, 0;
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  mul.wide.u32 %rd6, %r1, 16;
  add.u64 %rd7, %rd1, %rd6;
  st.global.v4.f32 [%rd7], {%f0, %f1, %f2, %f3};
  ret;
}
";

#[test]
fn a_descriptor_past_shared_memory_fails_the_launch_and_the_next_runs() {
    let module = ptx_jit::load(PTX).expect("loads");
    let k = module.kernel("ones").expect("prepares");
    let launch = |desc: u64| {
        let mut out = vec![0f32; 4 * 128];
        let mut params = (out.as_mut_ptr() as u64).to_le_bytes().to_vec();
        params.extend(desc.to_le_bytes());
        let r = ptx_jit::launch(k, &ptx_jit::Launch::new([1, 1, 1], [128, 1, 1], 0, &params));
        (r, out)
    };
    // No swizzle, start 0, the second 16-byte chunk of K 128 bytes on: B fits in the 512 bytes.
    let good = (128u64 >> 4) << 16;
    // The same starting 64 KiB on: past the window.
    let wild = good | 65536 >> 4;
    let (r, _) = launch(wild);
    let err = r.expect_err("a wild descriptor fails");
    assert!(
        matches!(&err, ptx_jit::LaunchError::IllegalAddress(m) if m.contains("outside the CTA's shared memory")),
        "{err}"
    );
    let (r, out) = launch(good);
    r.expect("a correct launch after the failed one");
    assert!(out.iter().all(|&v| v == 16.0), "{:?}", &out[..8]);
}
