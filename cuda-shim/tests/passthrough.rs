//! `PTXJIT_BACKEND=passthrough` on a machine without a real driver: `cuInit` reports
//! `CUDA_ERROR_NO_DEVICE`, every other call `CUDA_ERROR_NOT_INITIALIZED`, and the shim never
//! forwards to itself. Its own test binary, because the backend is chosen once per process.

use cuda::errors::*;
use cuda::*;
use std::ptr::null_mut;

#[test]
fn without_a_real_driver_init_fails_cleanly() {
    // The real driver's usual homes (see passthrough.rs); a machine with a GPU has one.
    let system = [
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        "/usr/lib64/libcuda.so.1",
        "/usr/lib/wsl/lib/libcuda.so.1",
    ];
    if let Some(p) = system.iter().find(|p| std::path::Path::new(p).exists()) {
        eprintln!("skipped: a real driver is installed at {p}");
        return;
    }
    // Offer the shim itself as the "real" driver: it must be recognised and refused.
    let exe = std::env::current_exe().unwrap();
    let own = exe.parent().unwrap().join("libcuda.so");
    let trace = std::env::temp_dir().join(format!("ptxjit-passthrough-{}.log", std::process::id()));
    std::env::set_var("PTXJIT_BACKEND", "passthrough");
    std::env::set_var("PTXJIT_REAL_LIBCUDA", &own);
    std::env::set_var("PTXJIT_TRACE", &trace);
    unsafe {
        assert_eq!(cuInit(0), CUDA_ERROR_NO_DEVICE);
        let mut n = 0;
        assert_eq!(cuDeviceGetCount(&mut n), CUDA_ERROR_NOT_INITIALIZED);
        let mut ctx = null_mut();
        assert_eq!(cuCtxCreate_v2(&mut ctx, 0, 0), CUDA_ERROR_NOT_INITIALIZED);
        let mut d = 0;
        assert_eq!(cuMemAlloc_v2(&mut d, 16), CUDA_ERROR_NOT_INITIALIZED);
    }
    let log = std::fs::read_to_string(&trace).unwrap();
    let _ = std::fs::remove_file(&trace);
    if own.exists() {
        assert!(log.contains("is ptx-jit's own libcuda, skipped"), "{log}");
    }
    assert!(log.contains("# passthrough: no real libcuda.so.1 found"), "{log}");
    assert!(log.contains("cuInit(flags=0) = CUDA_ERROR_NO_DEVICE"), "{log}");
}
