//! `libnvJitLink.so.13`: NVIDIA's device-code linker API for programs that run on this project's
//! `libcuda.so.1`. Every entry point calls the implementation of the same name, prefixed `ptxjit_`,
//! in `libcuda.so.1` (`cuda-shim/src/nvjitlink.rs`), which is where the linker, the fat-binary
//! reader and the PTX checker live; this library only gives them nvJitLink's names, the plain ones
//! and the versioned ones (`__nvJitLinkCreate_13_5`) that `nvJitLink.h` makes programs call.
//!
//! `libcuda.so.1` is the one the process has loaded, else the one beside this library or in the
//! directory above (the build puts this library in `nvjitlink/` under `libcuda.so.1`'s directory),
//! else the one the loader's search finds.
//!
//! It lives in a directory of its own because a client that finds an nvJitLink turns link-time
//! optimisation on (numba-cuda does), and LTO-IR needs NVIDIA's own nvJitLink as well: only where
//! that is installed is this library the right one to load, first (`LD_PRELOAD`), since clients
//! that look for NVIDIA's wheels find NVIDIA's library before any on `LD_LIBRARY_PATH`.
// Entry points with C names (nvJitLink.h), whose safety contract is the header's.
#![allow(non_snake_case, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

/// `NVJITLINK_ERROR_INTERNAL`: what a call returns when `libcuda.so.1` cannot be loaded.
const ERROR_INTERNAL: c_int = 6;

/// Marks this library as this project's, so the implementation never loads it as NVIDIA's
/// (`cuda_shim::nvjitlink::FORWARDER_MARK`).
#[no_mangle]
pub static ptxjit_nvjitlink_forwarder: u8 = 1;

/// `libcuda.so.1`, loaded once.
fn driver() -> Option<&'static libloading::Library> {
    static LIB: OnceLock<Option<libloading::Library>> = OnceLock::new();
    LIB.get_or_init(|| {
        // The libcuda.so.1 this process has loaded already, if any: a second copy would be a second
        // driver, with its own tables.
        let flags = libc::RTLD_NOW | libc::RTLD_NOLOAD;
        // SAFETY: RTLD_NOLOAD loads nothing, so no initialiser runs.
        if let Ok(lib) = unsafe { libloading::os::unix::Library::open(Some("libcuda.so.1"), flags) } {
            // Unless it is NVIDIA's driver, which has no nvJitLink in it.
            if unsafe { lib.get::<*const c_void>(b"ptxjit_nvJitLinkCreate\0") }.is_ok() {
                return Some(lib.into());
            }
        }
        let dir = own_dir();
        let near = [dir.clone(), dir.and_then(|d| d.parent().map(|p| p.to_path_buf()))];
        let beside = near
            .into_iter()
            .flatten()
            .map(|d| d.join("libcuda.so.1"))
            .find(|p| p.is_file());
        let lib = match beside {
            // SAFETY: loading the driver runs no code of ours that depends on this library.
            Some(p) => unsafe { libloading::Library::new(p) },
            None => unsafe { libloading::Library::new("libcuda.so.1") },
        };
        lib.inspect_err(|e| eprintln!("libnvJitLink.so.13 (ptx-jit): cannot load libcuda.so.1: {e}"))
            .ok()
    })
    .as_ref()
}

/// The directory this library was loaded from.
fn own_dir() -> Option<std::path::PathBuf> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr fills `info` for an address inside a loaded object.
    if unsafe { libc::dladdr(driver as *const c_void, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    let path = unsafe { CStr::from_ptr(info.dli_fname) }.to_str().ok()?;
    std::path::Path::new(path).parent().map(|d| d.to_path_buf())
}

/// Defines each entry point, forwarding to `ptxjit_NAME` in `libcuda.so.1`, and its versioned twins.
macro_rules! forward {
    ($($name:ident ($($a:ident: $t:ty),*) = $($versioned:ident)*;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name($($a: $t),*) -> c_int {
            type F = unsafe extern "C" fn($($t),*) -> c_int;
            static TARGET: OnceLock<Option<F>> = OnceLock::new();
            let f = TARGET.get_or_init(|| {
                let name = concat!("ptxjit_", stringify!($name), "\0");
                // SAFETY: the implementation has this signature (nvJitLink.h's).
                driver().and_then(|lib| unsafe { lib.get::<F>(name.as_bytes()) }.ok().map(|s| *s))
            });
            match f {
                Some(f) => f($($a),*),
                None => ERROR_INTERNAL,
            }
        }
        twins!($name [$($a: $t),*] $($versioned)*);
    )*};
}

/// The versioned names of one entry point (`nvJitLink.h` maps each name to one of them).
macro_rules! twins {
    ($name:ident $args:tt $($versioned:ident)*) => {$( twin!($name $versioned $args); )*};
}

macro_rules! twin {
    ($name:ident $versioned:ident [$($a:ident: $t:ty),*]) => {
        #[no_mangle]
        pub unsafe extern "C" fn $versioned($($a: $t),*) -> c_int {
            $name($($a),*)
        }
    };
}

type Handle = *mut c_void;

forward! {
    nvJitLinkCreate(handle: *mut Handle, n: u32, options: *const *const c_char)
        = __nvJitLinkCreate_13_0 __nvJitLinkCreate_13_1 __nvJitLinkCreate_13_2
          __nvJitLinkCreate_13_3 __nvJitLinkCreate_13_4 __nvJitLinkCreate_13_5;
    nvJitLinkDestroy(handle: *mut Handle)
        = __nvJitLinkDestroy_13_0 __nvJitLinkDestroy_13_1 __nvJitLinkDestroy_13_2
          __nvJitLinkDestroy_13_3 __nvJitLinkDestroy_13_4 __nvJitLinkDestroy_13_5;
    nvJitLinkAddData(h: Handle, kind: c_int, data: *const c_void, size: usize, name: *const c_char)
        = __nvJitLinkAddData_13_0 __nvJitLinkAddData_13_1 __nvJitLinkAddData_13_2
          __nvJitLinkAddData_13_3 __nvJitLinkAddData_13_4 __nvJitLinkAddData_13_5;
    nvJitLinkAddFile(h: Handle, kind: c_int, path: *const c_char)
        = __nvJitLinkAddFile_13_0 __nvJitLinkAddFile_13_1 __nvJitLinkAddFile_13_2
          __nvJitLinkAddFile_13_3 __nvJitLinkAddFile_13_4 __nvJitLinkAddFile_13_5;
    nvJitLinkComplete(h: Handle)
        = __nvJitLinkComplete_13_0 __nvJitLinkComplete_13_1 __nvJitLinkComplete_13_2
          __nvJitLinkComplete_13_3 __nvJitLinkComplete_13_4 __nvJitLinkComplete_13_5;
    nvJitLinkGetLinkedCubinSize(h: Handle, size: *mut usize)
        = __nvJitLinkGetLinkedCubinSize_13_0 __nvJitLinkGetLinkedCubinSize_13_1 __nvJitLinkGetLinkedCubinSize_13_2
          __nvJitLinkGetLinkedCubinSize_13_3 __nvJitLinkGetLinkedCubinSize_13_4 __nvJitLinkGetLinkedCubinSize_13_5;
    nvJitLinkGetLinkedCubin(h: Handle, out: *mut c_void)
        = __nvJitLinkGetLinkedCubin_13_0 __nvJitLinkGetLinkedCubin_13_1 __nvJitLinkGetLinkedCubin_13_2
          __nvJitLinkGetLinkedCubin_13_3 __nvJitLinkGetLinkedCubin_13_4 __nvJitLinkGetLinkedCubin_13_5;
    nvJitLinkGetLinkedPtxSize(h: Handle, size: *mut usize)
        = __nvJitLinkGetLinkedPtxSize_13_0 __nvJitLinkGetLinkedPtxSize_13_1 __nvJitLinkGetLinkedPtxSize_13_2
          __nvJitLinkGetLinkedPtxSize_13_3 __nvJitLinkGetLinkedPtxSize_13_4 __nvJitLinkGetLinkedPtxSize_13_5;
    nvJitLinkGetLinkedPtx(h: Handle, out: *mut c_char)
        = __nvJitLinkGetLinkedPtx_13_0 __nvJitLinkGetLinkedPtx_13_1 __nvJitLinkGetLinkedPtx_13_2
          __nvJitLinkGetLinkedPtx_13_3 __nvJitLinkGetLinkedPtx_13_4 __nvJitLinkGetLinkedPtx_13_5;
    nvJitLinkGetLinkedLTOIRSize(h: Handle, size: *mut usize)
        = __nvJitLinkGetLinkedLTOIRSize_13_0 __nvJitLinkGetLinkedLTOIRSize_13_1 __nvJitLinkGetLinkedLTOIRSize_13_2
          __nvJitLinkGetLinkedLTOIRSize_13_3 __nvJitLinkGetLinkedLTOIRSize_13_4 __nvJitLinkGetLinkedLTOIRSize_13_5;
    nvJitLinkGetLinkedLTOIR(h: Handle, out: *mut c_void)
        = __nvJitLinkGetLinkedLTOIR_13_0 __nvJitLinkGetLinkedLTOIR_13_1 __nvJitLinkGetLinkedLTOIR_13_2
          __nvJitLinkGetLinkedLTOIR_13_3 __nvJitLinkGetLinkedLTOIR_13_4 __nvJitLinkGetLinkedLTOIR_13_5;
    nvJitLinkGetErrorLogSize(h: Handle, size: *mut usize)
        = __nvJitLinkGetErrorLogSize_13_0 __nvJitLinkGetErrorLogSize_13_1 __nvJitLinkGetErrorLogSize_13_2
          __nvJitLinkGetErrorLogSize_13_3 __nvJitLinkGetErrorLogSize_13_4 __nvJitLinkGetErrorLogSize_13_5;
    nvJitLinkGetErrorLog(h: Handle, out: *mut c_char)
        = __nvJitLinkGetErrorLog_13_0 __nvJitLinkGetErrorLog_13_1 __nvJitLinkGetErrorLog_13_2
          __nvJitLinkGetErrorLog_13_3 __nvJitLinkGetErrorLog_13_4 __nvJitLinkGetErrorLog_13_5;
    nvJitLinkGetInfoLogSize(h: Handle, size: *mut usize)
        = __nvJitLinkGetInfoLogSize_13_0 __nvJitLinkGetInfoLogSize_13_1 __nvJitLinkGetInfoLogSize_13_2
          __nvJitLinkGetInfoLogSize_13_3 __nvJitLinkGetInfoLogSize_13_4 __nvJitLinkGetInfoLogSize_13_5;
    nvJitLinkGetInfoLog(h: Handle, out: *mut c_char)
        = __nvJitLinkGetInfoLog_13_0 __nvJitLinkGetInfoLog_13_1 __nvJitLinkGetInfoLog_13_2
          __nvJitLinkGetInfoLog_13_3 __nvJitLinkGetInfoLog_13_4 __nvJitLinkGetInfoLog_13_5;
    // No versioned names: nvJitLink.h declares this one plainly.
    nvJitLinkVersion(major: *mut u32, minor: *mut u32) = ;
}
