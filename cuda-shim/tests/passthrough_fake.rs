//! The passthrough backend against a stand-in driver (a small C library built here, since no GPU
//! is needed to check forwarding): calls reach it, PTX reaches it retargeted for the device and
//! driver it reports, `cuGetProcAddress` serves its functions, and the trace shows all of it.
//! Its own test binary, because the backend is chosen once per process.

use cuda::errors::*;
use cuda::*;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::null_mut;

const FAKE: &str = r#"
#include <string.h>
static char image[1 << 20];
int cuInit(unsigned f) { return f ? 1 : 0; }
int cuDriverGetVersion(int *v) { *v = 12040; return 0; }
int cuCtxGetDevice(int *d) { *d = 0; return 0; }
int cuDeviceGetAttribute(int *v, int a, int d) { *v = a == 75 ? 8 : a == 76 ? 6 : 0; return 0; }
int cuModuleLoadData(void **m, const void *p) { strncpy(image, p, sizeof image - 1); *m = (void *)0x1230; return 0; }
const char *fake_image(void) { return image; }
int cuMemRetainAllocationHandle(void *handle, void *addr) { return 42; }
int cuGetProcAddress_v2(const char *n, void **p, int v, unsigned long long f, int *st) {
    if (!strcmp(n, "cuMemRetainAllocationHandle")) { *p = (void *)cuMemRetainAllocationHandle; if (st) *st = 0; return 0; }
    *p = 0; if (st) *st = 1; return 500;
}
"#;

#[test]
fn calls_and_retargeted_ptx_reach_the_real_driver() {
    let dir = std::env::temp_dir().join(format!("ptxjit-fake-driver-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (src, lib) = (dir.join("fake.c"), dir.join("libcuda.so.1"));
    std::fs::write(&src, FAKE).unwrap();
    let built = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        eprintln!("skipped: no C compiler to build the stand-in driver");
        return;
    }
    let trace = dir.join("trace.log");
    std::env::set_var("PTXJIT_BACKEND", "passthrough");
    std::env::set_var("PTXJIT_REAL_LIBCUDA", &lib);
    std::env::set_var("PTXJIT_TRACE", &trace);
    unsafe {
        assert_eq!(cuInit(0), CUDA_SUCCESS);
        assert_eq!(cuInit(1), CUDA_ERROR_INVALID_VALUE, "the stand-in's answer");
        let mut v = 0;
        assert_eq!(cuDriverGetVersion(&mut v), CUDA_SUCCESS);
        assert_eq!(v, 12040, "the real driver's version, not the shim's");
        // PTX for sm_80 / 8.5 arrives as sm_86 / PTX 8.4 (what a 12.4 driver accepts).
        let ptx = CString::new(include_str!("../../tests/ptx/vecadd.ptx")).unwrap();
        let mut m = null_mut();
        assert_eq!(cuModuleLoadData(&mut m, ptx.as_ptr() as *const c_void), CUDA_SUCCESS);
        assert_eq!(m as usize, 0x1230);
        let lib = libloading::Library::new(dir.join("libcuda.so.1")).unwrap();
        let image: libloading::Symbol<unsafe extern "C" fn() -> *const c_char> = lib.get(b"fake_image\0").unwrap();
        let seen = CStr::from_ptr(image()).to_str().unwrap().to_string();
        assert!(seen.contains(".target sm_86"), "{seen}");
        assert!(seen.contains(".version 8.4"), "{seen}");
        assert!(seen.contains(".entry vecadd"), "{seen}");
        // A function the shim does not export comes from the real driver, traced.
        let name = CString::new("cuMemRetainAllocationHandle").unwrap();
        let mut pfn = null_mut();
        let mut status = -1;
        assert_eq!(
            cuGetProcAddress_v2(name.as_ptr(), &mut pfn, 12000, 0, &mut status),
            CUDA_SUCCESS
        );
        let f: unsafe extern "C" fn(*mut c_void, *mut c_void) -> CUresult = std::mem::transmute(pfn);
        assert_eq!(f(0x10 as *mut c_void, null_mut()), 42);
        // Missing from the stand-in: not supported, never the CPU backend.
        let mut n = 0;
        assert_eq!(cuDeviceGetCount(&mut n), CUDA_ERROR_NOT_SUPPORTED);
    }
    let log = std::fs::read_to_string(&trace).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    for line in [
        "cuInit(flags=0) = CUDA_SUCCESS",
        "cuDriverGetVersion(v=0x",
        "→12040) = CUDA_SUCCESS",
        "# passthrough: PTX retargeted for sm_86 / PTX 8.4",
        "cuModuleLoadData(module=0x",
        "cuMemRetainAllocationHandle(handle=0x10, addr=NULL) = CUresult(42)",
        "cuDeviceGetCount(n=0x",
    ] {
        assert!(log.contains(line), "missing `{line}` in\n{log}");
    }
}
