//! Forged and stale handles, null pointers and out-of-range sizes get error codes, never a crash.

use cuda::errors::*;
use cuda::*;
use std::ffi::{c_int, c_uint, c_void, CString};
use std::ptr::{null, null_mut};

const VECADD: &str = include_str!("../../tests/ptx/vecadd.ptx");

/// A new context, made current.
unsafe fn context() -> Handle {
    assert_eq!(cuInit(0), CUDA_SUCCESS);
    let mut ctx = null_mut();
    assert_eq!(cuCtxCreate_v2(&mut ctx, 0, 0), CUDA_SUCCESS);
    ctx
}

/// `vecadd` loaded in the current context: its module and function.
unsafe fn vecadd() -> (Handle, Handle) {
    let text = CString::new(VECADD).unwrap();
    let mut m = null_mut();
    assert_eq!(cuModuleLoadData(&mut m, text.as_ptr() as *const c_void), CUDA_SUCCESS);
    let mut f = null_mut();
    let name = CString::new("vecadd").unwrap();
    assert_eq!(cuModuleGetFunction(&mut f, m, name.as_ptr()), CUDA_SUCCESS);
    (m, f)
}

#[test]
fn bad_handles_pointers_and_sizes_are_errors() {
    unsafe {
        let ctx = context();
        let (m, f) = vecadd();

        // Stale stream and event handles, and handles of the wrong kind.
        let (mut s, mut e) = (null_mut(), null_mut());
        assert_eq!(cuStreamCreate(&mut s, 0), CUDA_SUCCESS);
        assert_eq!(cuEventCreate(&mut e, 0), CUDA_SUCCESS);
        assert_eq!(cuStreamDestroy_v2(s), CUDA_SUCCESS);
        assert_eq!(cuEventDestroy_v2(e), CUDA_SUCCESS);
        let forged = 0xdeadbeef0 as Handle;
        for bad in [s, forged, e, f, ctx] {
            assert_eq!(cuStreamSynchronize(bad), CUDA_ERROR_INVALID_HANDLE);
            assert_eq!(cuStreamQuery(bad), CUDA_ERROR_INVALID_HANDLE);
            assert_eq!(cuStreamDestroy_v2(bad), CUDA_ERROR_INVALID_HANDLE);
            assert_eq!(cuMemsetD8Async(0, 0, 0, bad), CUDA_ERROR_INVALID_HANDLE);
            assert_eq!(cuLaunchHostFunc(bad, null_mut(), null_mut()), CUDA_ERROR_INVALID_VALUE);
        }
        for bad in [e, forged, s, f] {
            assert_eq!(cuEventRecord(bad, null_mut()), CUDA_ERROR_INVALID_HANDLE);
            assert_eq!(cuEventQuery(bad), CUDA_ERROR_INVALID_HANDLE);
            assert_eq!(cuEventSynchronize(bad), CUDA_ERROR_INVALID_HANDLE);
            assert_eq!(cuStreamWaitEvent(null_mut(), bad, 0), CUDA_ERROR_INVALID_HANDLE);
            let mut ms = 0f32;
            assert_eq!(cuEventElapsedTime(&mut ms, bad, bad), CUDA_ERROR_INVALID_HANDLE);
        }
        let mut v = 0;
        for bad in [forged, s, m] {
            assert_eq!(cuFuncGetAttribute(&mut v, 0, bad), CUDA_ERROR_INVALID_HANDLE);
            assert_eq!(cuFuncSetAttribute(bad, 8, 0), CUDA_ERROR_INVALID_HANDLE);
            assert_eq!(
                cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut v, bad, 32, 0),
                CUDA_ERROR_INVALID_HANDLE
            );
            assert_eq!(cuCtxGetApiVersion(bad, null_mut()), CUDA_ERROR_INVALID_HANDLE);
            assert_eq!(cuCtxPushCurrent_v2(bad), CUDA_ERROR_INVALID_HANDLE);
        }

        // Null out-pointers.
        assert_eq!(cuStreamCreate(null_mut(), 0), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuEventCreate(null_mut(), 0), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemAlloc_v2(null_mut(), 16), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemAllocHost_v2(null_mut(), 16), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(
            cuMemAllocPitch_v2(null_mut(), null_mut(), 16, 16, 4),
            CUDA_ERROR_INVALID_VALUE
        );
        assert_eq!(cuPointerGetAttribute(null_mut(), 2, 0), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuFuncGetAttribute(null_mut(), 0, f), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuCtxGetLimit(null_mut(), 0), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(
            cuOccupancyMaxPotentialBlockSize(null_mut(), null_mut(), f, null_mut(), 0, 0),
            CUDA_ERROR_INVALID_VALUE
        );
        assert_eq!(cuMemcpy2D_v2(null()), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemcpy3D_v2(null()), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(
            cuLaunchKernelEx(null(), f, null_mut(), null_mut()),
            CUDA_ERROR_INVALID_VALUE
        );
        assert_eq!(cuMemHostRegister_v2(null_mut(), 16, 0), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuDeviceGetPCIBusId(null_mut(), 64, 0), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemcpyHtoD_v2(0, null(), 4), CUDA_ERROR_INVALID_VALUE);

        // Sizes and addresses outside any allocation.
        let mut d = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut d, 64), CUDA_SUCCESS);
        let mut buf = [0u8; 128];
        let p = buf.as_mut_ptr() as *mut c_void;
        assert_eq!(cuMemcpyDtoH_v2(p, d, 65), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemcpyDtoH_v2(p, d + 64, 1), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemcpyHtoD_v2(d + 1, p, 64), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemcpyDtoD_v2(d, d + 32, usize::MAX), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemcpyHtoDAsync_v2(0x10, p, 4, null_mut()), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(
            cuMemcpyDtoHAsync_v2(p, u64::MAX - 2, 4, null_mut()),
            CUDA_ERROR_INVALID_VALUE
        );
        assert_eq!(cuMemsetD32_v2(d, 0, usize::MAX / 2), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemsetD2D8_v2(d, usize::MAX, 0, 2, 2), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemsetD16_v2(d + 1, 0, 1), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemAlloc_v2(&mut d, usize::MAX), CUDA_ERROR_OUT_OF_MEMORY);
        assert_eq!(cuMemFree_v2(d + 8), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemFreeHost(p), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemFreeAsync(0xdead, null_mut()), CUDA_ERROR_INVALID_VALUE);
        // A device pointer used as host memory by a copy, not known anywhere: refused, not touched.
        assert_eq!(cuMemcpyDtoD_v2(0x1000, d, 4), CUDA_ERROR_INVALID_VALUE);

        // Launch configurations are checked at the call, not on the stream.
        let mut args = [null_mut::<c_void>(); 4];
        assert_eq!(
            cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut()),
            CUDA_ERROR_INVALID_VALUE
        );
        assert_eq!(
            cuLaunchKernel(f, 0, 1, 1, 32, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut()),
            CUDA_ERROR_INVALID_VALUE
        );
        assert_eq!(cuFuncSetAttribute(f, 99, 0), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuStreamCreate(&mut s, 7), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuEventCreate(&mut e, 0x100), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuCtxSetCacheConfig(9), CUDA_ERROR_INVALID_VALUE);
        let mut prop = 0 as c_uint;
        assert_eq!(cuStreamGetFlags(forged, &mut prop), CUDA_ERROR_INVALID_HANDLE);
        let mut n: c_int = 0;
        assert_eq!(
            cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut n, f, 0, 0),
            CUDA_ERROR_INVALID_VALUE
        );
        assert_eq!(
            cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut n, f, 4096, 0),
            CUDA_SUCCESS
        );
        assert_eq!(n, 0);

        // Destroyed context: its streams and memory are gone with it.
        let mut s2 = null_mut();
        assert_eq!(cuStreamCreate(&mut s2, 0), CUDA_SUCCESS);
        assert_eq!(cuCtxDestroy_v2(ctx), CUDA_SUCCESS);
        assert_eq!(cuStreamQuery(s2), CUDA_ERROR_INVALID_HANDLE);
        assert_eq!(cuMemFree_v2(d), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
        assert_eq!(cuMemAlloc_v2(&mut d, 16), CUDA_ERROR_INVALID_CONTEXT);
        assert_eq!(cuStreamQuery(null_mut()), CUDA_ERROR_INVALID_CONTEXT);
    }
}

/// `cuCtxDestroy` while other threads allocate, copy, launch and free in that context: the API makes
/// that the caller's fault, but every call must still return an error code and the process must not
/// crash or corrupt its heap. Repeated, since the interleavings differ from run to run.
#[test]
fn destroying_a_context_other_threads_use_is_safe() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    unsafe {
        assert_eq!(cuInit(0), CUDA_SUCCESS);
    }
    for round in 0..6 {
        let mut ctx = null_mut();
        unsafe { assert_eq!(cuCtxCreate_v2(&mut ctx, 0, 0), CUDA_SUCCESS) };
        let ctx_addr = ctx as usize;
        let stop = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let (stop, calls) = (stop.clone(), calls.clone());
                std::thread::spawn(move || unsafe {
                    let ctx = ctx_addr as Handle;
                    let text = CString::new(VECADD).unwrap();
                    let name = CString::new("vecadd").unwrap();
                    let host = vec![1.0f32; 4096 + 64 * w];
                    let bytes = host.len() * 4;
                    while !stop.load(Ordering::Relaxed) {
                        cuCtxSetCurrent(ctx);
                        let (mut m, mut f) = (null_mut(), null_mut());
                        if cuModuleLoadData(&mut m, text.as_ptr() as *const c_void) == CUDA_SUCCESS {
                            cuModuleGetFunction(&mut f, m, name.as_ptr());
                        }
                        let (mut a, mut b, mut c) = (0u64, 0u64, 0u64);
                        cuMemAlloc_v2(&mut a, bytes);
                        cuMemAlloc_v2(&mut b, bytes);
                        cuMemAlloc_v2(&mut c, bytes);
                        cuMemcpyHtoD_v2(a, host.as_ptr() as *const c_void, bytes);
                        cuMemcpyHtoD_v2(b, host.as_ptr() as *const c_void, bytes);
                        let mut n = host.len() as c_uint;
                        let mut args = [
                            &mut a as *mut u64 as *mut c_void,
                            &mut b as *mut u64 as *mut c_void,
                            &mut c as *mut u64 as *mut c_void,
                            &mut n as *mut c_uint as *mut c_void,
                        ];
                        if !f.is_null() {
                            cuLaunchKernel(f, 16, 1, 1, 256, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut());
                        }
                        let mut back = vec![0f32; host.len()];
                        cuMemcpyDtoH_v2(back.as_mut_ptr() as *mut c_void, c, bytes);
                        cuCtxSynchronize();
                        for p in [a, b, c] {
                            cuMemFree_v2(p);
                        }
                        if !m.is_null() {
                            cuModuleUnload(m);
                        }
                        calls.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        while calls.load(Ordering::Relaxed) < 8 {
            std::thread::yield_now();
        }
        std::thread::sleep(std::time::Duration::from_millis(5 * round));
        unsafe { assert_eq!(cuCtxDestroy_v2(ctx), CUDA_SUCCESS) };
        std::thread::sleep(std::time::Duration::from_millis(20));
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            w.join().expect("a worker thread panicked");
        }
    }
    // The driver still works.
    unsafe {
        let mut ctx = null_mut();
        assert_eq!(cuCtxCreate_v2(&mut ctx, 0, 0), CUDA_SUCCESS);
        let mut p = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut p, 64), CUDA_SUCCESS);
        assert_eq!(cuMemFree_v2(p), CUDA_SUCCESS);
        assert_eq!(cuCtxDestroy_v2(ctx), CUDA_SUCCESS);
    }
}

/// What the driver fuzzer (`tests/fuzz`) found: an elapsed time from an event to itself and the
/// first `cuFuncGetName` of a function each locked a mutex the call already held (the thread hung),
/// and a null `CU_LAUNCH_PARAM_BUFFER_SIZE` pointer in `extra` was read through.
#[test]
fn fuzzer_findings_return_errors() {
    unsafe {
        let ctx = context();
        let mut e = null_mut();
        assert_eq!(cuEventCreate(&mut e, 0), CUDA_SUCCESS);
        assert_eq!(cuEventRecord(e, null_mut()), CUDA_SUCCESS);
        assert_eq!(cuEventSynchronize(e), CUDA_SUCCESS);
        let mut ms = -1f32;
        assert_eq!(cuEventElapsedTime(&mut ms, e, e), CUDA_SUCCESS);
        assert_eq!(ms, 0.0);

        let (_, f) = vecadd();
        let mut got: *const std::ffi::c_char = null();
        assert_eq!(cuFuncGetName(&mut got, f), CUDA_SUCCESS);
        assert_eq!(std::ffi::CStr::from_ptr(got).to_str(), Ok("vecadd"));

        let mut packed = [0u64; 4];
        let mut extra = [
            std::ptr::without_provenance_mut(1),
            packed.as_mut_ptr() as *mut c_void,
            std::ptr::without_provenance_mut(2),
            null_mut(),
            null_mut(),
        ];
        assert_eq!(
            cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, null_mut(), null_mut(), extra.as_mut_ptr()),
            CUDA_ERROR_INVALID_VALUE
        );
        assert_eq!(cuCtxDestroy_v2(ctx), CUDA_SUCCESS);
    }
}
