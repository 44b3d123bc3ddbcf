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
pub mod launch;
pub mod memory;
pub mod passthrough;
mod proc;
pub use proc::{api_names, implementation_table, resolve, resolve_for};
mod state;
pub mod stream;
pub mod trace;

pub use context::*;
pub use device::*;
pub use event::*;
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
    if INITIALIZED.load(Ordering::Acquire) {
        Ok(())
    } else {
        Err(CUDA_ERROR_NOT_INITIALIZED)
    }
}

pub(crate) fn device_check(dev: CUdevice) -> Result<(), CUresult> {
    init_check()?;
    if dev == 0 {
        Ok(())
    } else {
        Err(CUDA_ERROR_INVALID_DEVICE)
    }
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

api! {
    // ---- initialisation and version ----
    fn cuInit(flags: c_uint) {
        if flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        if passthrough::selected() {
            // The real driver was not found (otherwise this call would have been forwarded).
            return Err(passthrough::unavailable());
        }
        INITIALIZED.store(true, Ordering::Release);
        // Checked kernels (PTXJIT_CHECKED=1) accept exactly the memory this driver has handed out.
        ptx_jit::checked::set_global_memory(memory::checked_range);
        ptx_jit::warm_up();
        Ok(())
    }
    fn cuDriverGetVersion(v: *mut c_int) {
        out(v, DRIVER_VERSION)
    }

    // ---- devices ----
    fn cuDeviceGet(dev: *mut CUdevice, ordinal: c_int) {
        init_check()?;
        if ordinal != 0 {
            return Err(CUDA_ERROR_INVALID_DEVICE);
        }
        out(dev, 0)
    }
    fn cuDeviceGetCount(n: *mut c_int) {
        init_check()?;
        out(n, 1)
    }
    fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: CUdevice) {
        device_check(dev)?;
        if name.is_null() || len <= 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let b = device::NAME.as_bytes();
        let n = b.len().min(len as usize - 1);
        std::ptr::copy_nonoverlapping(b.as_ptr(), name as *mut u8, n);
        *name.add(n) = 0;
        Ok(())
    }
    fn cuDeviceGetAttribute(v: *mut c_int, attr: c_int, dev: CUdevice) {
        device_check(dev)?;
        out(v, device::attribute(attr)?)
    }
    fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: CUdevice) {
        device_check(dev)?;
        out(bytes, device::total_mem() as usize)
    }
    fn cuDeviceComputeCapability(major: *mut c_int, minor: *mut c_int, dev: CUdevice) {
        device_check(dev)?;
        out(major, device::CC.0)?;
        out(minor, device::CC.1)
    }


    // ---- modules ----
    fn cuModuleLoadData(module: *mut Handle, image: *const c_void) {
        module_load(module, image, &mut JitLog::default())
    }
    fn cuModuleLoadDataEx(module: *mut Handle, image: *const c_void, n: c_uint, opts: *mut c_int, vals: *mut *mut c_void) {
        let mut log = JitLog::from_options(n, opts, vals)?;
        let r = module_load(module, image, &mut log);
        log.finish(r.is_ok());
        r
    }
    fn cuModuleUnload(module: Handle) {
        init_check()?;
        let h = module as usize;
        MODULES.remove(h)?;
        FUNCTIONS.retain(|_, f| f.module != h);
        MEMORY.lock().retain(|_, a| !matches!(a.kind, MemKind::ModuleVar(m) if m == h));
        Ok(())
    }
    fn cuModuleGetFunction(f: *mut Handle, module: Handle, name: *const c_char) {
        init_check()?;
        if f.is_null() || name.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let h = module as usize;
        let m = MODULES.get(h)?;
        let name = CStr::from_ptr(name).to_str().map_err(|_| CUDA_ERROR_NOT_FOUND)?;
        let k = m.host.kernels.iter().position(|k| k.info.name == name).ok_or(CUDA_ERROR_NOT_FOUND)?;
        *f = FUNCTIONS.insert(FuncObj { module: h, module_obj: m, kernel: k }) as Handle;
        Ok(())
    }
    fn cuModuleGetGlobal_v2(dptr: *mut CUdeviceptr, bytes: *mut usize, module: Handle, name: *const c_char) {
        init_check()?;
        if name.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let m = MODULES.get(module as usize)?;
        let name = CStr::from_ptr(name).to_str().map_err(|_| CUDA_ERROR_NOT_FOUND)?;
        let (_, addr, size) = m.host.globals.iter().find(|g| g.0 == name).ok_or(CUDA_ERROR_NOT_FOUND)?;
        if !dptr.is_null() {
            *dptr = *addr;
        }
        if !bytes.is_null() {
            *bytes = *size as usize;
        }
        Ok(())
    }





    // ---- private tables ----
    fn cuGetExportTable(table: *mut *const c_void, id: *const c_void) {
        export_table::get(table, id)
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

/// Builds the kernel's argument buffer from `kernelParams` (one pointer per parameter) or from
/// `extra` (`CU_LAUNCH_PARAM_BUFFER_POINTER`/`_SIZE`).
pub(crate) unsafe fn param_buffer(
    k: &ptx_jit::KernelInfo,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Result<Vec<u8>, CUresult> {
    if !params.is_null() && !extra.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE); // cuda.h: kernelParams and extra are exclusive
    }
    let mut buf = vec![0u8; k.param_bytes as usize];
    if !params.is_null() {
        for (i, p) in k.params.iter().enumerate() {
            let src = *params.add(i);
            if src.is_null() {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            std::ptr::copy_nonoverlapping(
                src as *const u8,
                buf.as_mut_ptr().add(p.offset as usize),
                p.size as usize,
            );
        }
        return Ok(buf);
    }
    if !extra.is_null() {
        let (mut ptr, mut size): (*const u8, Option<usize>) = (std::ptr::null(), None);
        let mut i = 0;
        loop {
            match *extra.add(i) as usize {
                0 => break,                                // CU_LAUNCH_PARAM_END
                1 => ptr = *extra.add(i + 1) as *const u8, // BUFFER_POINTER
                2 => {
                    // BUFFER_SIZE: a pointer to the size, which a caller may leave null.
                    let p = *extra.add(i + 1) as *const usize;
                    if p.is_null() {
                        return Err(CUDA_ERROR_INVALID_VALUE);
                    }
                    size = Some(p.read_unaligned());
                }
                _ => return Err(CUDA_ERROR_INVALID_VALUE),
            }
            i += 2;
        }
        let size = size.ok_or(CUDA_ERROR_INVALID_VALUE)?;
        if ptr.is_null() || (size as u64) < k.param_bytes {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        std::ptr::copy_nonoverlapping(ptr, buf.as_mut_ptr(), k.param_bytes as usize);
        return Ok(buf);
    }
    if k.params.is_empty() {
        Ok(buf)
    } else {
        Err(CUDA_ERROR_INVALID_VALUE)
    }
}

/// The JIT options of `cuModuleLoadDataEx` and `cuLinkCreate` that report back: the info and error log
/// buffers (with their sizes written back) and the wall time.
#[derive(Default)]
pub(crate) struct JitLog {
    error: Option<(*mut u8, usize, *mut *mut c_void)>,
    info: Option<(*mut u8, usize, *mut *mut c_void)>,
    wall: Option<*mut *mut c_void>,
    pub(crate) error_text: String,
    pub(crate) info_text: String,
    pub(crate) wall_ms: f64,
}

// The pointers are the caller's option slots, which the API requires to stay valid for the linker's life;
// a link state holding them may be completed on another thread.
unsafe impl Send for JitLog {}
unsafe impl Sync for JitLog {}

impl JitLog {
    pub(crate) unsafe fn from_options(n: c_uint, opts: *mut c_int, vals: *mut *mut c_void) -> Result<JitLog, CUresult> {
        let mut log = JitLog::default();
        if n > 0 && (opts.is_null() || vals.is_null()) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let (mut ebuf, mut esize, mut ibuf, mut isize) = (None, None, None, None);
        for i in 0..n as usize {
            let v = vals.add(i);
            match *opts.add(i) {
                2 => log.wall = Some(v),         // CU_JIT_WALL_TIME
                3 => ibuf = Some(*v as *mut u8), // CU_JIT_INFO_LOG_BUFFER
                4 => isize = Some((*v as usize as u32 as usize, v)),
                5 => ebuf = Some(*v as *mut u8), // CU_JIT_ERROR_LOG_BUFFER
                6 => esize = Some((*v as usize as u32 as usize, v)),
                0..=34 => {} // tuning options that have no meaning for the CPU backend
                _ => return Err(CUDA_ERROR_INVALID_VALUE),
            }
        }
        if let (Some(b), Some((s, slot))) = (ebuf, esize) {
            log.error = Some((b, s, slot));
        }
        if let (Some(b), Some((s, slot))) = (ibuf, isize) {
            log.info = Some((b, s, slot));
        }
        Ok(log)
    }

    /// Writes the logs (NUL-terminated, truncated to the buffers), their lengths and the wall time back.
    pub(crate) unsafe fn finish(&mut self, _ok: bool) {
        for (target, text) in [(self.error, &self.error_text), (self.info, &self.info_text)] {
            if let Some((buf, size, slot)) = target {
                if buf.is_null() || size == 0 {
                    continue;
                }
                let n = text.len().min(size - 1);
                std::ptr::copy_nonoverlapping(text.as_ptr(), buf, n);
                *buf.add(n) = 0;
                *slot = (n + 1) as *mut c_void; // bytes written, as the driver reports
            }
        }
        if let Some(slot) = self.wall {
            // A float in the option's slot, as cuda.h documents for CU_JIT_WALL_TIME.
            *slot = (self.wall_ms as f32).to_bits() as usize as *mut c_void;
        }
    }
}

unsafe fn module_load(module: *mut Handle, image: *const c_void, log: &mut JitLog) -> Result<(), CUresult> {
    init_check()?;
    let ctx = current_ctx()?;
    if module.is_null() || image.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let text = image_ptx(image, log)?;
    *module = load_ptx(ctx, &text, log)? as Handle;
    Ok(())
}

/// The PTX text of a module image: PTX itself, or the best PTX entry of a fat binary.
unsafe fn image_ptx(image: *const c_void, log: &mut JitLog) -> Result<std::borrow::Cow<'static, str>, CUresult> {
    // The first bytes identify the format; never read past a short string's NUL.
    let mut head = [0u8; 4];
    for (i, b) in head.iter_mut().enumerate() {
        *b = *(image as *const u8).add(i);
        if *b == 0 {
            break;
        }
    }
    if &head == b"\x7fELF" {
        log.error_text = "ptx-jit: this is a cubin (GPU machine code); the CPU backend needs PTX".into();
        return Err(CUDA_ERROR_NO_BINARY_FOR_GPU);
    }
    let magic = u32::from_le_bytes(head);
    if magic == fatbin::FATBIN_MAGIC || magic == fatbin::WRAPPER_MAGIC {
        return fatbin::ptx_for_device(image as *const u8).map(Into::into).map_err(|e| {
            log.error_text = format!("ptx-jit: {e}");
            if log_enabled() {
                eprintln!("{}", log.error_text);
            }
            e.code()
        });
    }
    let text = CStr::from_ptr(image as *const c_char).to_str().map_err(|_| {
        log.error_text = "ptx-jit: the image is neither PTX text nor a known binary format".into();
        CUDA_ERROR_INVALID_IMAGE
    })?;
    Ok(text.into())
}

/// Compiles PTX into a module owned by context `ctx` (0: by no context, as libraries are).
fn load_ptx(ctx: usize, text: &str, log: &mut JitLog) -> Result<usize, CUresult> {
    let t = std::time::Instant::now();
    match ptx_jit::load_with(text, ptx_jit::checked_from_env()) {
        Ok(host) => {
            let h = MODULES.insert(ModuleObj { ctx, host });
            let m = MODULES.get(h)?;
            let mut mem = MEMORY.lock();
            for (_, addr, size) in &m.host.globals {
                mem.insert(
                    *addr,
                    Alloc {
                        size: *size,
                        kind: MemKind::ModuleVar(h),
                    },
                );
            }
            log.wall_ms = t.elapsed().as_secs_f64() * 1e3;
            log.info_text = format!(
                "ptx-jit: compiled {} kernel(s) for the CPU in {:.1} ms",
                m.host.kernels.len(),
                log.wall_ms
            );
            Ok(h)
        }
        Err(diags) => {
            log.error_text = ptx_jit::one_line(&diags, "module.ptx", text);
            if log_enabled() {
                ptx_jit::Diagnostic::render_each(&diags, "module.ptx", text, false, |r| eprint!("{r}"));
            }
            // Broken syntax, names or headers are "invalid PTX" for sure. Anything else may be valid PTX
            // beyond what the ISA table and the backend know yet (an opcode, modifier or type form),
            // so it is reported as "not supported" rather than blamed on the module.
            use ptx_jit::Code::*;
            let broken = diags
                .iter()
                .any(|d| d.is_error() && matches!(d.code, P0001 | P0002 | P0201 | P0202 | P0203 | P0302));
            let code = |c| diags.iter().any(|d| d.is_error() && d.code == c);
            Err(if code(P0403) {
                CUDA_ERROR_OUT_OF_MEMORY
            } else if broken || code(P0207) {
                CUDA_ERROR_INVALID_PTX
            } else {
                CUDA_ERROR_NOT_SUPPORTED
            })
        }
    }
}
