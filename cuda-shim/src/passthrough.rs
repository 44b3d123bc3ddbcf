//! The passthrough backend (`PTXJIT_BACKEND=passthrough`): every call goes to the real driver,
//! loaded with libloading from its system location. PTX given to `cuModuleLoadData(Ex)` and
//! `cuLibraryLoadData` is first retargeted by ptx-jit for the real device's compute capability and
//! the highest PTX version both the driver and LLVM know; anything ptx-jit cannot retarget goes to
//! the driver unchanged. Tracing (`PTXJIT_TRACE`) sees every call made through the shim's exports.

use crate::errors::*;
use crate::{trace, Handle};
use once_cell::sync::Lazy;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};

/// Where the real libcuda.so.1 lives on common Linux installations; `PTXJIT_REAL_LIBCUDA` comes first.
const SYSTEM_PATHS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
    "/usr/lib64/libcuda.so.1",
    "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
    "/usr/lib/wsl/lib/libcuda.so.1",
    "/usr/local/cuda/compat/libcuda.so.1",
];

static SELECTED: Lazy<bool> = Lazy::new(|| std::env::var("PTXJIT_BACKEND").is_ok_and(|v| v == "passthrough"));

struct Real {
    lib: libloading::Library,
}

static REAL: Lazy<Option<Real>> = Lazy::new(|| {
    if !*SELECTED {
        return None;
    }
    let env = std::env::var("PTXJIT_REAL_LIBCUDA").ok();
    for path in env.iter().map(String::as_str).chain(SYSTEM_PATHS.iter().copied()) {
        let Ok(lib) = (unsafe { libloading::Library::new(path) }) else {
            continue;
        };
        // Never forward to ourselves (a system path may be a link to this library).
        let ours = unsafe { lib.get::<usize>(b"ptxjit_shim_marker\0") }.is_ok();
        if ours {
            trace::note(&format!("passthrough: {path} is ptx-jit's own libcuda, skipped"));
            continue;
        }
        trace::note(&format!("passthrough: forwarding to {path}"));
        return Some(Real { lib });
    }
    trace::note("passthrough: no real libcuda.so.1 found");
    None
});

/// Marks this library, so the passthrough backend can tell it from a real driver.
#[no_mangle]
pub static ptxjit_shim_marker: usize = 1;

/// The passthrough backend was asked for.
pub fn selected() -> bool {
    *SELECTED
}

/// What `cuInit` returns when the real driver is missing.
pub fn unavailable() -> CUresult {
    CUDA_ERROR_NO_DEVICE
}

/// The real driver's symbol `name`.
pub fn real_symbol(name: &str) -> Option<usize> {
    real(name)
}

fn real(name: &str) -> Option<usize> {
    let r = REAL.as_ref()?;
    let sym = CString::new(name).ok()?;
    unsafe {
        r.lib
            .get::<*const c_void>(sym.as_bytes_with_nul())
            .ok()
            .map(|s| *s as usize)
    }
}

unsafe extern "C" fn missing() -> CUresult {
    CUDA_ERROR_NOT_SUPPORTED
}

/// Where an exported entry point forwards to in passthrough mode: `None` runs the CPU backend.
pub fn target(name: &str) -> Option<usize> {
    if !*SELECTED || REAL.is_none() {
        return None;
    }
    Some(match name {
        // Resolution goes through the shim, which consults the real driver itself.
        "cuGetProcAddress" | "cuGetProcAddress_v2" => return None,
        "cuModuleLoadData" => module_load_data as *const () as usize,
        "cuModuleLoadDataEx" => module_load_data_ex as *const () as usize,
        "cuLibraryLoadData" => library_load_data as *const () as usize,
        _ => real(name).unwrap_or(missing as *const () as usize),
    })
}

type GetProc = unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64, *mut c_int) -> CUresult;

static FORWARDERS: Lazy<std::collections::HashMap<&'static str, usize>> =
    Lazy::new(|| crate::driver_table::forward::all().into_iter().collect());

/// The entry point for a name the shim does not export: the real driver's, or, when tracing, a
/// forwarder to it (`symbol` is the variant the request resolves to) that logs the call.
pub fn proc_address(name: &str, symbol: Option<&str>, version: c_int, flags: u64) -> Option<usize> {
    if !*SELECTED || REAL.is_none() {
        return None;
    }
    if trace::enabled() {
        if let Some(&f) = symbol.and_then(|s| FORWARDERS.get(s)) {
            return Some(f);
        }
    }
    let gp: GetProc = unsafe { std::mem::transmute(real("cuGetProcAddress_v2")?) };
    let n = CString::new(name).ok()?;
    let mut p = std::ptr::null_mut();
    let mut status = 0;
    let r = unsafe { gp(n.as_ptr(), &mut p, version, flags, &mut status) };
    (r == CUDA_SUCCESS && !p.is_null()).then_some(p as usize)
}

/// The PTX ISA version a CUDA driver version accepts at most (CUDA 11.0 → 7.0, 12.0 → 8.0, ...).
pub fn max_ptx(driver: c_int) -> u32 {
    let (major, minor) = (driver / 1000, (driver % 1000) / 10);
    let v = match (major, minor) {
        (m, _) if m >= 13 => 90 + minor as u32,
        (12, n) if n >= 8 => 87 + (n as u32 - 8), // 12.8 → 8.7, 12.9 → 8.8
        (12, n) if n >= 5 => 85,                  // 12.5 and 12.6 → 8.5
        (12, n) => 80 + n as u32,
        (11, n) => 70 + n as u32,
        (10, n) => 63 + n as u32,
        _ => 60,
    };
    // Capped by what LLVM 22 can emit.
    ptx_jit::nvptx::arch::PTX_VERSIONS
        .iter()
        .copied()
        .filter(|&p| p <= v)
        .max()
        .unwrap_or(32)
}

unsafe fn call<F: Copy>(name: &str) -> Option<F> {
    let p = real(name)?;
    Some(std::mem::transmute_copy::<usize, F>(&p))
}

/// PTX text retargeted for the current context's device, or `None` to pass the image on unchanged.
unsafe fn retarget(image: *const c_void) -> Option<CString> {
    if image.is_null() {
        return None;
    }
    let text = CStr::from_ptr(image as *const c_char).to_str().ok()?;
    if !text.contains(".version") || !text.contains(".target") {
        return None; // a cubin or a fat binary
    }
    type GetDevice = unsafe extern "C" fn(*mut c_int) -> CUresult;
    type GetAttr = unsafe extern "C" fn(*mut c_int, c_int, c_int) -> CUresult;
    type Version = unsafe extern "C" fn(*mut c_int) -> CUresult;
    let (mut dev, mut major, mut minor, mut drv) = (0, 0, 0, 0);
    if call::<GetDevice>("cuCtxGetDevice")?(&mut dev) != CUDA_SUCCESS
        || call::<GetAttr>("cuDeviceGetAttribute")?(&mut major, 75, dev) != CUDA_SUCCESS
        || call::<GetAttr>("cuDeviceGetAttribute")?(&mut minor, 76, dev) != CUDA_SUCCESS
        || call::<Version>("cuDriverGetVersion")?(&mut drv) != CUDA_SUCCESS
    {
        return None;
    }
    let ptx = max_ptx(drv);
    let arch = match ptx_jit::nvptx::arch::validate(
        &format!("sm_{major}{minor}"),
        Some(&format!("{}.{}", ptx / 10, ptx % 10)),
    ) {
        Ok(a) => a,
        Err(e) => {
            trace::note(&format!("passthrough: PTX passed on unchanged: {e}"));
            return None;
        }
    };
    match ptx_jit::retarget(text, &arch, 3, ptx_jit::nvptx::Emit::Ptx) {
        Ok(out) => {
            trace::note(&format!(
                "passthrough: PTX retargeted for {} / PTX {}.{}",
                arch.cpu(),
                ptx / 10,
                ptx % 10
            ));
            CString::new(out).ok()
        }
        Err(d) => {
            trace::note(&format!(
                "passthrough: PTX passed on unchanged: {}",
                ptx_jit::one_line(&d, "module.ptx", text)
            ));
            None
        }
    }
}

unsafe extern "C" fn module_load_data(module: *mut Handle, image: *const c_void) -> CUresult {
    let Some(f) = call::<unsafe extern "C" fn(*mut Handle, *const c_void) -> CUresult>("cuModuleLoadData") else {
        return CUDA_ERROR_NOT_INITIALIZED;
    };
    match retarget(image) {
        Some(p) => f(module, p.as_ptr() as *const c_void),
        None => f(module, image),
    }
}

unsafe extern "C" fn module_load_data_ex(
    module: *mut Handle,
    image: *const c_void,
    n: c_uint,
    opts: *mut c_int,
    vals: *mut *mut c_void,
) -> CUresult {
    type F = unsafe extern "C" fn(*mut Handle, *const c_void, c_uint, *mut c_int, *mut *mut c_void) -> CUresult;
    let Some(f) = call::<F>("cuModuleLoadDataEx") else {
        return CUDA_ERROR_NOT_INITIALIZED;
    };
    match retarget(image) {
        Some(p) => f(module, p.as_ptr() as *const c_void, n, opts, vals),
        None => f(module, image, n, opts, vals),
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn library_load_data(
    lib: *mut Handle,
    code: *const c_void,
    jit_opts: *mut c_int,
    jit_vals: *mut *mut c_void,
    n_jit: c_uint,
    lib_opts: *mut c_int,
    lib_vals: *mut *mut c_void,
    n_lib: c_uint,
) -> CUresult {
    type F = unsafe extern "C" fn(
        *mut Handle,
        *const c_void,
        *mut c_int,
        *mut *mut c_void,
        c_uint,
        *mut c_int,
        *mut *mut c_void,
        c_uint,
    ) -> CUresult;
    let Some(f) = call::<F>("cuLibraryLoadData") else {
        return CUDA_ERROR_NOT_INITIALIZED;
    };
    let p = retarget(code);
    let code = p.as_ref().map_or(code, |p| p.as_ptr() as *const c_void);
    f(lib, code, jit_opts, jit_vals, n_jit, lib_opts, lib_vals, n_lib)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_versions_map_to_ptx_versions() {
        assert_eq!(max_ptx(11080), 78);
        assert_eq!(max_ptx(12000), 80);
        assert_eq!(max_ptx(12040), 84);
        assert_eq!(max_ptx(12060), 85);
        assert_eq!(max_ptx(12080), 87);
        assert_eq!(max_ptx(13000), 90);
        // Newer drivers accept more than LLVM 22 writes: capped at 9.0.
        assert_eq!(max_ptx(13050), 90);
    }
}
