//! `PTXJIT_TRACE=path`: one line per driver call with its arguments and result. Its own test
//! binary, because the trace target is read once per process.

use cuda::errors::*;
use cuda::*;
use std::ffi::{c_void, CString};
use std::ptr::null_mut;

/// Addresses differ from run to run; everything else in a trace is stable.
fn redact(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("0x") {
        out.push_str(&rest[..i]);
        let hex = rest[i + 2..].chars().take_while(char::is_ascii_hexdigit).count();
        out.push_str("0x…");
        rest = &rest[i + 2 + hex..];
    }
    out.push_str(rest);
    out
}

#[test]
fn every_call_is_traced_with_arguments_and_result() {
    let path = std::env::temp_dir().join(format!("ptxjit-trace-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&path);
    std::env::set_var("PTXJIT_TRACE", &path);
    unsafe {
        assert_eq!(cuInit(0), CUDA_SUCCESS);
        let mut v = 0;
        assert_eq!(cuDriverGetVersion(&mut v), CUDA_SUCCESS);
        assert_eq!(cuDeviceGetAttribute(&mut v, 75, 0), CUDA_SUCCESS);
        assert_eq!(cuDeviceGetAttribute(&mut v, 75, 3), CUDA_ERROR_INVALID_DEVICE);
        let mut ctx = null_mut();
        assert_eq!(cuCtxCreate_v2(&mut ctx, 0, 0), CUDA_SUCCESS);
        let mut d = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut d, 1024), CUDA_SUCCESS);
        assert_eq!(cuMemsetD32_v2(d, 7, 256), CUDA_SUCCESS);
        assert_eq!(cuMemsetD32_v2(d, 7, 257), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemFree_v2(d), CUDA_SUCCESS);
        assert_eq!(cuStreamQuery(0x1234 as Handle), CUDA_ERROR_INVALID_HANDLE);
        let name = CString::new("cuMemRetainAllocationHandle").unwrap();
        let mut pfn = null_mut();
        let mut status = 0;
        assert_eq!(
            cuGetProcAddress_v2(name.as_ptr(), &mut pfn, 12000, 0, &mut status),
            CUDA_SUCCESS
        );
        let f: unsafe extern "C" fn(*mut c_void, *mut c_void) -> CUresult = std::mem::transmute(pfn);
        assert_eq!(f(null_mut(), null_mut()), CUDA_ERROR_NOT_SUPPORTED);
        assert_eq!(cuCtxDestroy_v2(ctx), CUDA_SUCCESS);
    }
    let log = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    insta::assert_snapshot!(redact(&log));
}
