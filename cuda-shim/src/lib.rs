//! libcuda.so.1: the CUDA driver API over ptx-jit's CPU backend. This crate checks arguments, keeps
//! handle tables and maps errors; compiling and running kernels is ptx-jit's job.
//!
//! Every entry point catches panics and turns them into `CUDA_ERROR_UNKNOWN`: a bug here must never
//! take the host process down.

#![allow(non_snake_case, clippy::missing_safety_doc)]

mod device;
pub mod errors;
mod proc;
pub use proc::resolve;
mod state;

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
fn status(r: CUresult) -> Result<(), CUresult> {
    if r == CUDA_SUCCESS {
        Ok(())
    } else {
        Err(r)
    }
}

fn init_check() -> Result<(), CUresult> {
    if INITIALIZED.load(Ordering::Acquire) {
        Ok(())
    } else {
        Err(CUDA_ERROR_NOT_INITIALIZED)
    }
}

fn device_check(dev: CUdevice) -> Result<(), CUresult> {
    init_check()?;
    if dev == 0 {
        Ok(())
    } else {
        Err(CUDA_ERROR_INVALID_DEVICE)
    }
}

unsafe fn out<T>(p: *mut T, v: T) -> Result<(), CUresult> {
    if p.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    p.write(v);
    Ok(())
}

fn log_enabled() -> bool {
    std::env::var_os("PTX_JIT_LOG").is_some_and(|v| v != "0")
}

/// Defines exported entry points. Each body returns `Result<(), CUresult>`; panics become
/// `CUDA_ERROR_UNKNOWN`. `exports()` lists every symbol for `cuGetProcAddress`.
macro_rules! api {
    ($(fn $name:ident($($a:ident: $t:ty),* $(,)?) $body:block)*) => {
        $(
            #[no_mangle]
            pub unsafe extern "C" fn $name($($a: $t),*) -> CUresult {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> Result<(), CUresult> { $body }));
                match r {
                    Ok(Ok(())) => CUDA_SUCCESS,
                    Ok(Err(e)) => e,
                    Err(_) => CUDA_ERROR_UNKNOWN,
                }
            }
        )*
        pub(crate) fn exports() -> Vec<(&'static str, usize)> {
            vec![$((stringify!($name), $name as *const () as usize)),*]
        }
    };
}

api! {
    // ---- initialisation and version ----
    fn cuInit(flags: c_uint) {
        if flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        INITIALIZED.store(true, Ordering::Release);
        // Checked kernels (PTXJIT_CHECKED=1) accept exactly the memory this driver has handed out.
        ptx_jit::checked::set_global_memory(|p, n| state::check_range(p, n).is_ok());
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

    // ---- contexts ----
    fn cuCtxCreate_v2(pctx: *mut Handle, flags: c_uint, dev: CUdevice) {
        ctx_create(pctx, flags, dev)
    }
    fn cuCtxCreate_v3(pctx: *mut Handle, params: *mut c_void, n: c_int, flags: c_uint, dev: CUdevice) {
        if n > 0 || (!params.is_null() && n != 0) {
            return Err(CUDA_ERROR_NOT_SUPPORTED); // execution affinity needs real SM partitions
        }
        ctx_create(pctx, flags, dev)
    }
    fn cuCtxCreate_v4(pctx: *mut Handle, params: *mut CtxCreateParams, flags: c_uint, dev: CUdevice) {
        if let Some(p) = params.as_ref() {
            if p.num_exec_affinity > 0 || !p.cig.is_null() {
                return Err(CUDA_ERROR_NOT_SUPPORTED);
            }
        }
        ctx_create(pctx, flags, dev)
    }
    fn cuCtxDestroy_v2(ctx: Handle) {
        init_check()?;
        let h = ctx as usize;
        let c = CONTEXTS.get(h)?;
        if c.primary {
            return Err(CUDA_ERROR_INVALID_CONTEXT);
        }
        destroy_ctx(h)?;
        Ok(())
    }
    fn cuCtxSetCurrent(ctx: Handle) {
        init_check()?;
        let h = ctx as usize;
        if h != 0 {
            CONTEXTS.get(h)?;
        }
        CTX_STACK.with(|s| {
            let mut s = s.borrow_mut();
            s.pop();
            if h != 0 {
                s.push(h);
            }
        });
        Ok(())
    }
    fn cuCtxGetCurrent(pctx: *mut Handle) {
        init_check()?;
        let top = CTX_STACK.with(|s| s.borrow().last().copied()).unwrap_or(0);
        out(pctx, top as Handle)
    }
    fn cuCtxPushCurrent_v2(ctx: Handle) {
        init_check()?;
        CONTEXTS.get(ctx as usize)?;
        CTX_STACK.with(|s| s.borrow_mut().push(ctx as usize));
        Ok(())
    }
    fn cuCtxPopCurrent_v2(pctx: *mut Handle) {
        init_check()?;
        let h = CTX_STACK.with(|s| s.borrow_mut().pop()).ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        if !pctx.is_null() {
            *pctx = h as Handle;
        }
        Ok(())
    }
    fn cuCtxGetDevice(dev: *mut CUdevice) {
        init_check()?;
        let h = current_ctx()?;
        out(dev, CONTEXTS.get(h)?.device)
    }
    fn cuCtxSynchronize() {
        init_check()?;
        current_ctx()?;
        Ok(()) // every operation completes before its call returns
    }
    fn cuCtxSynchronize_v2(ctx: Handle) {
        init_check()?;
        CONTEXTS.get(ctx as usize)?;
        Ok(())
    }
    fn cuDevicePrimaryCtxRetain(pctx: *mut Handle, dev: CUdevice) {
        device_check(dev)?;
        if pctx.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let mut p = PRIMARY.lock();
        let h = match *p {
            Some((h, n)) => {
                *p = Some((h, n + 1));
                h
            }
            None => {
                let h = CONTEXTS.insert(Context { device: dev, primary: true });
                *p = Some((h, 1));
                h
            }
        };
        *pctx = h as Handle;
        Ok(())
    }
    fn cuDevicePrimaryCtxRelease_v2(dev: CUdevice) {
        device_check(dev)?;
        let mut p = PRIMARY.lock();
        match *p {
            Some((h, 1)) => {
                *p = None;
                drop(p);
                destroy_ctx(h)
            }
            Some((h, n)) => {
                *p = Some((h, n - 1));
                Ok(())
            }
            None => Err(CUDA_ERROR_INVALID_CONTEXT),
        }
    }
    fn cuDevicePrimaryCtxGetState(dev: CUdevice, flags: *mut c_uint, active: *mut c_int) {
        device_check(dev)?;
        out(flags, 0)?;
        out(active, PRIMARY.lock().is_some() as c_int)
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

    // ---- memory ----
    fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, size: usize) {
        init_check()?;
        current_ctx()?;
        if dptr.is_null() || size == 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // 256-byte alignment, as the CUDA driver guarantees. A GPU maps memory in large pages, so a
        // kernel that overruns its buffer a little goes unnoticed there; here the same overrun would
        // corrupt the host's heap. Each allocation gets a tail as long as itself (up to 2 MiB) that
        // only such kernels touch (checked mode still reports them, by the size asked for).
        let padded = size.saturating_add(size.min(2 << 20)).next_multiple_of(4096);
        let layout = std::alloc::Layout::from_size_align(padded, 256).map_err(|_| CUDA_ERROR_OUT_OF_MEMORY)?;
        if size as u64 > device::total_mem() {
            return Err(CUDA_ERROR_OUT_OF_MEMORY);
        }
        let p = std::alloc::alloc_zeroed(layout);
        if p.is_null() {
            return Err(CUDA_ERROR_OUT_OF_MEMORY);
        }
        MEMORY.lock().insert(p as u64, Alloc { size: size as u64, kind: MemKind::Device(layout) });
        *dptr = p as u64;
        Ok(())
    }
    fn cuMemFree_v2(dptr: CUdeviceptr) {
        init_check()?;
        if dptr == 0 {
            return Ok(());
        }
        let mut mem = MEMORY.lock();
        match mem.get(&dptr) {
            Some(Alloc { kind: MemKind::Device(layout), .. }) => {
                let layout = *layout;
                mem.remove(&dptr);
                drop(mem);
                std::alloc::dealloc(dptr as *mut u8, layout);
                Ok(())
            }
            _ => Err(CUDA_ERROR_INVALID_VALUE),
        }
    }
    fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) {
        init_check()?;
        let used: u64 = MEMORY.lock().values().map(|a| a.size).sum();
        let t = device::total_mem();
        out(free, t.saturating_sub(used) as usize)?;
        out(total, t as usize)
    }
    fn cuMemcpyHtoD_v2(dst: CUdeviceptr, src: *const c_void, n: usize) {
        init_check()?;
        if n == 0 {
            return Ok(());
        }
        if src.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        check_range(dst, n as u64)?;
        std::ptr::copy(src as *const u8, dst as *mut u8, n);
        Ok(())
    }
    fn cuMemcpyDtoH_v2(dst: *mut c_void, src: CUdeviceptr, n: usize) {
        init_check()?;
        if n == 0 {
            return Ok(());
        }
        if dst.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        check_range(src, n as u64)?;
        std::ptr::copy(src as *const u8, dst as *mut u8, n);
        Ok(())
    }
    fn cuMemcpyDtoD_v2(dst: CUdeviceptr, src: CUdeviceptr, n: usize) {
        init_check()?;
        if n == 0 {
            return Ok(());
        }
        check_range(src, n as u64)?;
        check_range(dst, n as u64)?;
        std::ptr::copy(src as *const u8, dst as *mut u8, n);
        Ok(())
    }
    fn cuMemsetD8_v2(dst: CUdeviceptr, v: u8, n: usize) {
        init_check()?;
        if n == 0 {
            return Ok(());
        }
        check_range(dst, n as u64)?;
        std::ptr::write_bytes(dst as *mut u8, v, n);
        Ok(())
    }
    fn cuMemsetD32_v2(dst: CUdeviceptr, v: c_uint, n: usize) {
        init_check()?;
        if n == 0 {
            return Ok(());
        }
        if dst % 4 != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        check_range(dst, (n as u64).checked_mul(4).ok_or(CUDA_ERROR_INVALID_VALUE)?)?;
        std::slice::from_raw_parts_mut(dst as *mut u32, n).fill(v);
        Ok(())
    }

    // ---- streams ----
    fn cuStreamCreate(ps: *mut Handle, flags: c_uint) {
        init_check()?;
        if flags > 1 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let ctx = current_ctx()?;
        out(ps, STREAMS.insert(Stream { ctx }) as Handle)
    }
    fn cuStreamDestroy_v2(s: Handle) {
        init_check()?;
        STREAMS.remove(s as usize)?;
        Ok(())
    }
    fn cuStreamSynchronize(s: Handle) {
        init_check()?;
        stream_check(s)
    }

    // ---- launches ----
    fn cuLaunchKernel(f: Handle, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shared: c_uint, stream: Handle, params: *mut *mut c_void, extra: *mut *mut c_void) {
        init_check()?;
        current_ctx()?;
        stream_check(stream)?;
        let func = FUNCTIONS.get(f as usize)?;
        let k = &func.module_obj.host.kernels[func.kernel];
        let buf = param_buffer(&k.info, params, extra)?;
        let launch = ptx_jit::Launch::new([gx, gy, gz], [bx, by, bz], shared as u64, &buf);
        ptx_jit::launch(k, &launch).map_err(|e| {
            // Checked mode's report is what the user asked for; other errors only with logging on.
            if log_enabled() || matches!(e, ptx_jit::LaunchError::IllegalAddress(_)) {
                eprintln!("ptx-jit: cuLaunchKernel({}): {e}", k.info.name);
            }
            match e {
                ptx_jit::LaunchError::InvalidConfig(_) | ptx_jit::LaunchError::InvalidArgs(_) => CUDA_ERROR_INVALID_VALUE,
                ptx_jit::LaunchError::OutOfResources(_) => CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                ptx_jit::LaunchError::Failed(_) => CUDA_ERROR_LAUNCH_FAILED,
                ptx_jit::LaunchError::IllegalAddress(_) => CUDA_ERROR_ILLEGAL_ADDRESS,
            }
        })
    }

    // ---- first-version names whose ABI equals the current one ----
    fn cuCtxCreate(pctx: *mut Handle, flags: c_uint, dev: CUdevice) {
        ctx_create(pctx, flags, dev)
    }
    fn cuCtxDestroy(ctx: Handle) {
        status(cuCtxDestroy_v2(ctx))
    }
    fn cuDevicePrimaryCtxRelease(dev: CUdevice) {
        status(cuDevicePrimaryCtxRelease_v2(dev))
    }
    fn cuStreamDestroy(s: Handle) {
        status(cuStreamDestroy_v2(s))
    }

    // ---- private tables ----
    fn cuGetExportTable(table: *mut *const c_void, id: *const c_void) {
        // The private tables (asked for by NVRTC and the static CUDA runtime) are not implemented yet.
        if !table.is_null() {
            *table = std::ptr::null();
        }
        if log_enabled() && !id.is_null() {
            let uuid = std::slice::from_raw_parts(id as *const u8, 16);
            eprintln!("ptx-jit: cuGetExportTable({uuid:02x?}): not supported");
        }
        Err(CUDA_ERROR_NOT_SUPPORTED)
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

/// `CUctxCreateParams` (cuda.h, CUDA 12.5+).
#[repr(C)]
pub struct CtxCreateParams {
    exec_affinity: *mut c_void,
    num_exec_affinity: c_int,
    cig: *mut c_void,
}

unsafe fn ctx_create(pctx: *mut Handle, flags: c_uint, dev: CUdevice) -> Result<(), CUresult> {
    device_check(dev)?;
    if pctx.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let _ = flags; // scheduling flags have no meaning on the CPU backend
    let h = CONTEXTS.insert(Context {
        device: dev,
        primary: false,
    });
    CTX_STACK.with(|s| s.borrow_mut().push(h));
    *pctx = h as Handle;
    Ok(())
}

fn destroy_ctx(h: usize) -> Result<(), CUresult> {
    CONTEXTS.remove(h)?;
    CTX_STACK.with(|s| s.borrow_mut().retain(|&c| c != h));
    let dead: Vec<usize> = {
        let mut v = vec![];
        MODULES.retain(|k, m| {
            if m.ctx == h {
                v.push(*k);
                false
            } else {
                true
            }
        });
        v
    };
    FUNCTIONS.retain(|_, f| !dead.contains(&f.module));
    MEMORY
        .lock()
        .retain(|_, a| !matches!(a.kind, MemKind::ModuleVar(m) if dead.contains(&m)));
    STREAMS.retain(|_, s| s.ctx != h);
    Ok(())
}

/// The default streams (NULL, `CU_STREAM_LEGACY`, `CU_STREAM_PER_THREAD`) or a live stream.
fn stream_check(s: Handle) -> Result<(), CUresult> {
    match s as usize {
        0 | 1 | 2 => Ok(()),
        h => STREAMS.get(h).map(|_| ()),
    }
}

/// Builds the kernel's argument buffer from `kernelParams` (one pointer per parameter) or from
/// `extra` (`CU_LAUNCH_PARAM_BUFFER_POINTER`/`_SIZE`).
unsafe fn param_buffer(
    k: &ptx_jit::KernelInfo,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Result<Vec<u8>, CUresult> {
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
                0 => break,                                             // CU_LAUNCH_PARAM_END
                1 => ptr = *extra.add(i + 1) as *const u8,              // BUFFER_POINTER
                2 => size = Some(*(*extra.add(i + 1) as *const usize)), // BUFFER_SIZE
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

/// The info and error log buffers of `cuModuleLoadDataEx`.
#[derive(Default)]
struct JitLog {
    error: Option<(*mut u8, usize, *mut *mut c_void)>,
    info: Option<(*mut u8, usize, *mut *mut c_void)>,
    error_text: String,
    info_text: String,
}

impl JitLog {
    unsafe fn from_options(n: c_uint, opts: *mut c_int, vals: *mut *mut c_void) -> Result<JitLog, CUresult> {
        let mut log = JitLog::default();
        if n > 0 && (opts.is_null() || vals.is_null()) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let (mut ebuf, mut esize, mut ibuf, mut isize) = (None, None, None, None);
        for i in 0..n as usize {
            let v = vals.add(i);
            match *opts.add(i) {
                3 => ibuf = Some(*v as *mut u8), // CU_JIT_INFO_LOG_BUFFER
                4 => isize = Some((*v as usize, v)),
                5 => ebuf = Some(*v as *mut u8), // CU_JIT_ERROR_LOG_BUFFER
                6 => esize = Some((*v as usize, v)),
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

    unsafe fn finish(&mut self, _ok: bool) {
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
    }
}

unsafe fn module_load(module: *mut Handle, image: *const c_void, log: &mut JitLog) -> Result<(), CUresult> {
    init_check()?;
    let ctx = current_ctx()?;
    if module.is_null() || image.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
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
    if head == [0x50, 0xed, 0x55, 0xba] || head == [0x46, 0x62, 0x43, 0xa1] {
        log.error_text = "ptx-jit: fat binaries are not supported yet; pass PTX text".into();
        return Err(CUDA_ERROR_NOT_SUPPORTED);
    }
    let text = CStr::from_ptr(image as *const c_char).to_str().map_err(|_| {
        log.error_text = "ptx-jit: the image is neither PTX text nor a known binary format".into();
        CUDA_ERROR_INVALID_IMAGE
    })?;
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
            log.info_text = format!(
                "ptx-jit: compiled {} kernel(s) for the CPU in {:.1} ms",
                m.host.kernels.len(),
                t.elapsed().as_secs_f64() * 1e3
            );
            *module = h as Handle;
            Ok(())
        }
        Err(diags) => {
            log.error_text = ptx_jit::one_line(&diags, "module.ptx", text);
            if log_enabled() {
                for d in &diags {
                    eprint!("{}", d.render("module.ptx", text, false));
                }
            }
            // Broken syntax, names or headers are "invalid PTX" for sure. Anything else may be valid PTX
            // beyond what the ISA table and the backend know yet (an opcode, modifier or type form),
            // so it is reported as "not supported" rather than blamed on the module.
            use ptx_jit::Code::*;
            let broken = diags
                .iter()
                .any(|d| d.is_error() && matches!(d.code, P0001 | P0002 | P0201 | P0202 | P0203 | P0302));
            Err(if broken {
                CUDA_ERROR_INVALID_PTX
            } else {
                CUDA_ERROR_NOT_SUPPORTED
            })
        }
    }
}
