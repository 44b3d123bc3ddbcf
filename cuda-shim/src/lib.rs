//! libcuda.so.1: the CUDA driver API over ptx-jit's CPU backend. This crate checks arguments, keeps
//! handle tables and maps errors; compiling and running kernels is ptx-jit's job.
//!
//! Every entry point catches panics and turns them into `CUDA_ERROR_UNKNOWN`: a bug here must never
//! take the host process down.

#![allow(non_snake_case, clippy::missing_safety_doc)]

#[macro_use]
mod macros;
mod arena;
pub mod context;
mod device;
mod driver_table;
pub mod errors;
pub mod event;
pub mod graph;
pub mod ipc;
pub mod launch;
pub mod memory;
pub mod passthrough;
pub mod pool;
mod proc;
pub mod texref;
pub mod texture;
pub mod vmm;
pub use proc::{api_names, implementation_table, resolve, resolve_for};
mod state;
pub mod stream;
mod tensor_map;
pub mod trace;
mod user_object;

pub use context::*;
pub use device::*;
pub use event::*;
pub use graph::*;
pub use launch::*;
pub use memory::*;
pub use stream::*;

use errors::*;
use state::*;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};

pub type CUdevice = c_int;
pub type CUdeviceptr = u64;
pub type Handle = *mut c_void;

static INITIALIZED: AtomicBool = AtomicBool::new(false);
/// Set in the child of a `fork` made after `cuInit`: as NVIDIA's driver does, the child cannot use
/// the driver (every call gives `CUDA_ERROR_NOT_INITIALIZED`, which is how numba-cuda detects the
/// fork); here the streams' worker threads did not survive the fork either.
static FORKED: AtomicBool = AtomicBool::new(false);

extern "C" fn forked_child() {
    FORKED.store(true, Ordering::Relaxed);
}
/// The CUDA version this driver implements (the `cuda.h` it was written against).
pub const DRIVER_VERSION: c_int = 13050;

/// A `CUresult` as a `Result`, to call one entry point from another.
pub(crate) fn status(r: CUresult) -> Result<(), CUresult> {
    if r == CUDA_SUCCESS {
        Ok(())
    } else {
        Err(r)
    }
}

pub(crate) fn init_check() -> Result<(), CUresult> {
    if INITIALIZED.load(Ordering::Acquire) && !FORKED.load(Ordering::Relaxed) {
        Ok(())
    } else {
        Err(CUDA_ERROR_NOT_INITIALIZED)
    }
}

pub(crate) fn device_check(dev: CUdevice) -> Result<(), CUresult> {
    init_check()?;
    if device::exists(dev) {
        Ok(())
    } else {
        Err(CUDA_ERROR_INVALID_DEVICE)
    }
}

/// The `n` elements of a C array argument: a null pointer is an error unless the array is empty.
pub(crate) unsafe fn c_array<'a, T>(p: *const T, n: usize) -> Result<&'a [T], CUresult> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    Ok(std::slice::from_raw_parts(p, n))
}

pub(crate) unsafe fn out<T>(p: *mut T, v: T) -> Result<(), CUresult> {
    if p.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    p.write(v);
    Ok(())
}

pub(crate) fn log_enabled() -> bool {
    std::env::var_os("PTX_JIT_LOG").is_some_and(|v| v != "0")
}

// Modules that define entry points with `api!` come after the macro.
mod export_table;
/// Public for the fuzz harness (`tests/fuzz`), which feeds the reader forged images.
#[doc(hidden)]
pub mod fatbin;
pub mod library;
pub mod link;
pub(crate) mod memop;
mod module;
pub mod nvjitlink;
pub use module::*;
pub(crate) use module::{image_ptx, load_ptx, JitLog};

api! {
    // ---- initialisation and version ----
    fn cuInit(flags: c_uint) {
        if flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        if FORKED.load(Ordering::Relaxed) {
            return Err(CUDA_ERROR_NOT_INITIALIZED);
        }
        if passthrough::selected() {
            // The real driver was not found (otherwise this call would have been forwarded).
            return Err(passthrough::unavailable());
        }
        // A device the backend cannot present is no device, said on stderr (a misspelt name would
        // otherwise pass as the default device).
        if let Err(e) = ptx_jit::device::profile_named().and(ptx_jit::device::device_count()) {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| eprintln!("ptx-jit: {e}"));
            return Err(CUDA_ERROR_NO_DEVICE);
        }
        static AT_FORK: std::sync::Once = std::sync::Once::new();
        // SAFETY: registers a handler that only stores to an atomic.
        AT_FORK.call_once(|| unsafe {
            libc::pthread_atfork(None, None, Some(forked_child));
        });
        INITIALIZED.store(true, Ordering::Release);
        // Checked kernels (PTXJIT_CHECKED=1) accept exactly the memory this driver has handed out.
        ptx_jit::memory_map::set_global_memory(memory::checked_range);
        ptx_jit::warm_up();
        Ok(())
    }
    fn cuDriverGetVersion(v: *mut c_int) {
        out(v, DRIVER_VERSION)
    }

    // ---- devices ----
    fn cuDeviceGet(dev: *mut CUdevice, ordinal: c_int) {
        device_check(ordinal)?;
        out(dev, ordinal)
    }
    fn cuDeviceGetCount(n: *mut c_int) {
        init_check()?;
        out(n, device::count())
    }
    fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: CUdevice) {
        device_check(dev)?;
        if name.is_null() || len <= 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let name_text = device::name();
        let b = name_text.as_bytes();
        let n = b.len().min(len as usize - 1);
        std::ptr::copy_nonoverlapping(b.as_ptr(), name as *mut u8, n);
        *name.add(n) = 0;
        Ok(())
    }
    fn cuDeviceGetAttribute(v: *mut c_int, attr: c_int, dev: CUdevice) {
        device_check(dev)?;
        out(v, device::attribute(attr, dev)?)
    }
    fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: CUdevice) {
        device_check(dev)?;
        out(bytes, device::total_mem() as usize)
    }
    fn cuDeviceComputeCapability(major: *mut c_int, minor: *mut c_int, dev: CUdevice) {
        device_check(dev)?;
        out(major, device::cc().0)?;
        out(minor, device::cc().1)
    }


    // ---- private tables ----
    fn cuGetExportTable(table: *mut *const c_void, id: *const c_void) {
        export_table::get(table, id)
    }

    // ---- profiler control (cudaProfiler.h) ----
    // With no profiler attached an H100's driver answers both with success
    // (tests/gpu/probes_c/launch_limits.c); none can attach here, so there is nothing to start.
    fn cuProfilerStart() {
        init_check()
    }
    fn cuProfilerStop() {
        init_check()
    }

    // ---- errors and entry points ----
    fn cuGetErrorName(e: CUresult, s: *mut *const c_char) {
        let (_, n) = NAMES.iter().find(|(c, _)| *c == e).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        out(s, n.as_ptr() as *const c_char)
    }
    fn cuGetErrorString(e: CUresult, s: *mut *const c_char) {
        let d = proc::error_string(e).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        out(s, d.as_ptr() as *const c_char)
    }
    fn cuGetProcAddress(symbol: *const c_char, pfn: *mut *mut c_void, version: c_int, flags: u64) {
        proc::get_proc_address(symbol, pfn, version, flags, std::ptr::null_mut())
    }
    fn cuGetProcAddress_v2(symbol: *const c_char, pfn: *mut *mut c_void, version: c_int, flags: u64, status: *mut c_int) {
        proc::get_proc_address(symbol, pfn, version, flags, status)
    }
}
