//! Checked mode through the driver API (PTXJIT_CHECKED=1, set before cuInit): an out-of-bounds
//! access ends that launch with CUDA_ERROR_ILLEGAL_ADDRESS (a misaligned one with
//! CUDA_ERROR_MISALIGNED_ADDRESS), which (as in CUDA) sticks to the context
//! and comes back from the next synchronising call; the process lives on, and a fresh context runs
//! correct launches with their exact results. This file is its own test binary because the mode is
//! chosen per process.

use cuda::errors::*;
use cuda::*;
use std::ffi::{c_void, CString};
use std::ptr::null_mut;

const PTX: &str = include_str!("checked_faults.ptx");

/// A context with the module loaded and a 32-byte output buffer.
struct Setup {
    ctx: Handle,
    m: Handle,
    out: u64,
}

unsafe fn setup() -> Setup {
    assert_eq!(cuInit(0), CUDA_SUCCESS);
    let mut ctx = null_mut();
    assert_eq!(cuCtxCreate_v2(&mut ctx, 0, 0), CUDA_SUCCESS);
    let text = CString::new(PTX).unwrap();
    let mut m = null_mut();
    assert_eq!(cuModuleLoadData(&mut m, text.as_ptr() as *const c_void), CUDA_SUCCESS);
    let mut out = 0u64;
    assert_eq!(cuMemAlloc_v2(&mut out, 32), CUDA_SUCCESS);
    Setup { ctx, m, out }
}

/// Launches `name` on one CTA and waits for it: the launch's status.
unsafe fn run(s: &Setup, name: &str, threads: u32, extra: Option<u64>) -> CUresult {
    let mut f = null_mut();
    let n = CString::new(name).unwrap();
    assert_eq!(cuModuleGetFunction(&mut f, s.m, n.as_ptr()), CUDA_SUCCESS);
    let mut out = s.out;
    let mut p = extra.unwrap_or(0);
    let mut args = [&mut out as *mut u64 as *mut c_void, &mut p as *mut u64 as *mut c_void];
    let r = cuLaunchKernel(f, 1, 1, 1, threads, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut());
    if r != CUDA_SUCCESS {
        return r;
    }
    cuCtxSynchronize()
}

unsafe fn read(s: &Setup, n: usize) -> Vec<u32> {
    let mut v = vec![0u32; n];
    assert_eq!(
        cuMemcpyDtoH_v2(v.as_mut_ptr() as *mut c_void, s.out, n * 4),
        CUDA_SUCCESS
    );
    v
}

/// A faulting launch poisons its context: it is destroyed, and the next case gets a new one.
unsafe fn expect_fault(s: Setup, name: &str, threads: u32, extra: Option<u64>) -> Setup {
    expect_error(s, name, threads, extra, CUDA_ERROR_ILLEGAL_ADDRESS)
}

unsafe fn expect_error(s: Setup, name: &str, threads: u32, extra: Option<u64>, want: CUresult) -> Setup {
    assert_eq!(run(&s, name, threads, extra), want, "{name}");
    assert_eq!(cuCtxDestroy_v2(s.ctx), CUDA_SUCCESS);
    setup()
}

#[test]
fn out_of_bounds_accesses_fail_the_launch_only() {
    std::env::set_var("PTXJIT_CHECKED", "1");
    unsafe {
        let s = setup();
        // 8 threads fit; 9 do not.
        assert_eq!(run(&s, "global_oob", 8, None), CUDA_SUCCESS);
        assert_eq!(read(&s, 8), (0..8).collect::<Vec<u32>>());
        let s = expect_fault(s, "global_oob", 9, None);

        // Shared: 16 bytes, threads 0-3 in bounds.
        assert_eq!(run(&s, "shared_oob", 1, None), CUDA_SUCCESS);
        let s = expect_fault(s, "shared_oob", 5, None);

        // A wild generic pointer, and then a valid one (the buffer itself).
        let s = expect_fault(s, "wild_load", 1, Some(0x10));
        assert_eq!(run(&s, "wild_load", 1, Some(s.out)), CUDA_SUCCESS);

        // Local memory reached through its generic address is fine.
        assert_eq!(run(&s, "local_ok", 1, None), CUDA_SUCCESS);
        assert_eq!(read(&s, 1), vec![7]);

        // An 8-byte store at a multiple of 8 is fine; at 4 past one it is misaligned, as on a GPU.
        assert_eq!(run(&s, "misaligned", 1, Some(8)), CUDA_SUCCESS);
        assert_eq!(read(&s, 4), vec![7, 0, 5, 5]); // word 0 is local_ok's
        let s = expect_error(s, "misaligned", 1, Some(4), CUDA_ERROR_MISALIGNED_ADDRESS);

        // The process is fine and a fresh context computes exactly.
        assert_eq!(run(&s, "global_oob", 8, None), CUDA_SUCCESS);
        assert_eq!(read(&s, 8), (0..8).collect::<Vec<u32>>());
        assert_eq!(cuCtxDestroy_v2(s.ctx), CUDA_SUCCESS);
    }
}
