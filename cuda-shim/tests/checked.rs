//! Checked mode through the driver API (PTXJIT_CHECKED=1, set before cuInit): an out-of-bounds
//! access ends that launch with CUDA_ERROR_ILLEGAL_ADDRESS, the process lives on, and correct
//! launches (before and after) give their exact results. This file is its own test binary because
//! the mode is chosen per process.

use cuda::errors::*;
use cuda::*;
use std::ffi::{c_void, CString};
use std::ptr::null_mut;

const PTX: &str = include_str!("checked_faults.ptx");

unsafe fn launch(m: Handle, name: &str, threads: u32, args: &mut [*mut c_void]) -> CUresult {
    let mut f = null_mut();
    let n = CString::new(name).unwrap();
    assert_eq!(cuModuleGetFunction(&mut f, m, n.as_ptr()), CUDA_SUCCESS);
    cuLaunchKernel(f, 1, 1, 1, threads, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut())
}

unsafe fn read(d: u64, n: usize) -> Vec<u32> {
    let mut v = vec![0u32; n];
    assert_eq!(cuMemcpyDtoH_v2(v.as_mut_ptr() as *mut c_void, d, n * 4), CUDA_SUCCESS);
    v
}

#[test]
fn out_of_bounds_accesses_fail_the_launch_only() {
    std::env::set_var("PTXJIT_CHECKED", "1");
    unsafe {
        assert_eq!(cuInit(0), CUDA_SUCCESS);
        let mut ctx = null_mut();
        assert_eq!(cuCtxCreate_v2(&mut ctx, 0, 0), CUDA_SUCCESS);
        let text = CString::new(PTX).unwrap();
        let mut m = null_mut();
        assert_eq!(cuModuleLoadData(&mut m, text.as_ptr() as *const c_void), CUDA_SUCCESS);
        let mut out = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut out, 32), CUDA_SUCCESS);
        let mut args = [&mut out as *mut u64 as *mut c_void];

        // 8 threads fit; 9 do not, and the 9th thread's store never happens.
        assert_eq!(launch(m, "global_oob", 8, &mut args), CUDA_SUCCESS);
        assert_eq!(read(out, 8), (0..8).collect::<Vec<u32>>());
        assert_eq!(launch(m, "global_oob", 9, &mut args), CUDA_ERROR_ILLEGAL_ADDRESS);

        // Shared: 16 bytes, threads 0-3 in bounds.
        assert_eq!(launch(m, "shared_oob", 1, &mut args), CUDA_SUCCESS);
        assert_eq!(launch(m, "shared_oob", 5, &mut args), CUDA_ERROR_ILLEGAL_ADDRESS);

        // A wild generic pointer, and then a valid one (the buffer itself).
        let mut wild = 0x10u64;
        let mut args2 = [&mut out as *mut u64 as *mut c_void, &mut wild as *mut u64 as *mut c_void];
        assert_eq!(launch(m, "wild_load", 1, &mut args2), CUDA_ERROR_ILLEGAL_ADDRESS);
        let mut good = out;
        let mut args3 = [&mut out as *mut u64 as *mut c_void, &mut good as *mut u64 as *mut c_void];
        assert_eq!(launch(m, "wild_load", 1, &mut args3), CUDA_SUCCESS);

        // Local memory reached through its generic address is fine.
        assert_eq!(launch(m, "local_ok", 1, &mut args), CUDA_SUCCESS);
        assert_eq!(read(out, 1), vec![7]);

        // The process and the context are still usable.
        assert_eq!(launch(m, "global_oob", 8, &mut args), CUDA_SUCCESS);
        assert_eq!(read(out, 8), (0..8).collect::<Vec<u32>>());
        cuMemFree_v2(out);
        cuModuleUnload(m);
        cuCtxDestroy_v2(ctx);
    }
}
