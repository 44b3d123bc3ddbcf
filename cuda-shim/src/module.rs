//! Modules: loading PTX (or the best PTX entry of a fat binary) through ptx-jit, the JIT options
//! logs, and the `cuModule*` entry points. Libraries (`library`) and the linker (`link`) load through
//! the same `load_ptx`.

use crate::errors::*;
use crate::state::*;
use crate::*;

api! {
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
        // A context whose kernel faulted keeps its modules and gives its error, as an H200 does; its
        // destruction frees them.
        let ctx = MODULES.get(h)?.ctx;
        if let Ok(c) = CONTEXTS.get(ctx) {
            c.streams.check()?;
        }
        MODULES.remove(h)?;
        crate::texref::release_module(h);
        FUNCTIONS.retain(|_, f| f.module != h);
        MEMORY.lock().retain(|_, a| !matches!(a.kind, MemKind::ModuleVar(m) if m == h));
        Ok(())
    }
    fn cuModuleGetFunction(f: *mut Handle, module: Handle, name: *const c_char) {
        init_check()?;
        if f.is_null() || name.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        MODULES.get(module as usize)?;
        let name = CStr::from_ptr(name).to_str().map_err(|_| CUDA_ERROR_NOT_FOUND)?;
        // The lookup prepares the kernel, so its errors surface here, as with NVIDIA's lazy loading.
        *f = crate::library::function_handle(module as usize, name, true)? as Handle;
        Ok(())
    }
    fn cuModuleGetFunctionCount(count: *mut c_uint, module: Handle) {
        init_check()?;
        out(count, MODULES.get(module as usize)?.host.kernel_names().count() as c_uint)
    }
    fn cuModuleEnumerateFunctions(functions: *mut Handle, n: c_uint, module: Handle) {
        init_check()?;
        let m = MODULES.get(module as usize)?;
        enumerate(&m, functions, n, |name| crate::library::function_handle(module as usize, name, false))
    }
    fn cuModuleGetGlobal_v2(dptr: *mut CUdeviceptr, bytes: *mut usize, module: Handle, name: *const c_char) {
        init_check()?;
        if name.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let m = MODULES.get(module as usize)?;
        let name = CStr::from_ptr(name).to_str().map_err(|_| CUDA_ERROR_NOT_FOUND)?;
        // A texture or surface reference is no variable to the driver.
        if m.host.references.iter().any(|(n, _)| n == name) {
            return Err(CUDA_ERROR_NOT_FOUND);
        }
        let (_, addr, size) = m.host.globals.iter().find(|g| g.0 == name).ok_or(CUDA_ERROR_NOT_FOUND)?;
        if !dptr.is_null() {
            *dptr = *addr;
        }
        if !bytes.is_null() {
            *bytes = *size as usize;
        }
        Ok(())
    }
}

/// The JIT options of `cuModuleLoadDataEx` and `cuLinkCreate` that report back: the info and error log
/// buffers (with their sizes written back) and the wall time.
#[derive(Default)]
pub(crate) struct JitLog {
    error: Option<(*mut u8, usize, *mut *mut c_void)>,
    info: Option<(*mut u8, usize, *mut *mut c_void)>,
    wall: Option<*mut *mut c_void>,
    /// How much of the module a lazy load checks at once.
    pub(crate) check: WholeCheck,
    pub(crate) error_text: String,
    pub(crate) info_text: String,
    pub(crate) wall_ms: f64,
}

/// How much of a module a lazy load checks before it indexes the kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum WholeCheck {
    /// Nothing: each kernel is checked when first used. Libraries (`cuLibraryLoadData`, the runtime's
    /// fat binaries): their cost follows the kernels used, whatever the size of the module.
    #[default]
    Kernels,
    /// The module API, which NVIDIA's driver checks whole at load even when lazy (an H200 fails
    /// `cuModuleLoadData` for a broken kernel, an unused broken function, an undefined callee): what
    /// is certainly invalid PTX fails the load; what may be valid PTX beyond what ptx-jit knows fails
    /// the kernels that use it, at their lookup, and the other kernels run.
    Invalid,
    /// Every error fails the load: the caller reads the error log, or the linker checks its result.
    All,
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
            log.check = WholeCheck::All;
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
    let (text, retain) = image_ptx(image, log)?;
    log.check = log.check.max(WholeCheck::Invalid);
    *module = load_ptx(ctx, &text, retain, log)? as Handle;
    Ok(())
}

/// The PTX text of a module image: PTX itself, or the best PTX entry of a fat binary; and how the
/// module keeps it ([`retain`]).
pub(crate) unsafe fn image_ptx(
    image: *const c_void,
    log: &mut JitLog,
) -> Result<(std::borrow::Cow<'static, str>, ptx_jit::Retain), CUresult> {
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
        if log_enabled() {
            eprintln!("{}", log.error_text);
        }
        return Err(CUDA_ERROR_NO_BINARY_FOR_GPU);
    }
    let magic = u32::from_le_bytes(head);
    if magic == fatbin::FATBIN_MAGIC || magic == fatbin::WRAPPER_MAGIC {
        return fatbin_ptx(image, log);
    }
    let text = CStr::from_ptr(image as *const c_char).to_str().map_err(|_| {
        log.error_text = "ptx-jit: the image is neither PTX text nor a known binary format".into();
        CUDA_ERROR_INVALID_IMAGE
    })?;
    Ok((text.into(), ptx_jit::Retain::Copy))
}

/// The PTX of the fat binary (or wrapper) at `image` for the device, and how its module keeps it: a
/// compressed entry is kept compressed (a module then costs its entry's size until a kernel of it is
/// used), another one as text. The units of a program built with relocatable device code come linked
/// into one text.
pub(crate) unsafe fn fatbin_ptx(
    image: *const c_void,
    log: &mut JitLog,
) -> Result<(std::borrow::Cow<'static, str>, ptx_jit::Retain), CUresult> {
    let mut fail = |text: String, code: CUresult| {
        log.error_text = text;
        if log_enabled() {
            eprintln!("{}", log.error_text);
        }
        code
    };
    let mut units = fatbin::ptx_for_device(image as *const u8).map_err(|e| fail(format!("ptx-jit: {e}"), e.code()))?;
    if units.len() > 1 {
        let mut inputs: Vec<_> = units
            .into_iter()
            .enumerate()
            .map(|(i, u)| (format!("unit {}", i + 1), u.text))
            .collect();
        // nvcc links NVIDIA's device runtime into such programs; ptx-jit's stands in for it.
        if crate::link::calls_device_runtime(inputs.iter().map(|(_, t)| t.as_str())) {
            inputs.push(("device_runtime.ptx".into(), crate::link::DEVICE_RUNTIME.to_string()));
        }
        let linked = crate::link::link_ptx(&inputs).map_err(|e| {
            fail(
                format!("ptx-jit: linking the relocatable device code's units: {e}"),
                CUDA_ERROR_INVALID_PTX,
            )
        })?;
        return Ok((linked.into(), ptx_jit::Retain::Copy));
    }
    let ptx = units.pop().ok_or_else(|| {
        fail(
            "ptx-jit: an empty list of fat binaries".into(),
            CUDA_ERROR_INVALID_IMAGE,
        )
    })?;
    let retain = match ptx.packed {
        Some(p) => ptx_jit::Retain::Again(Box::new(move || p.text().map_err(|e| e.to_string()))),
        None => ptx_jit::Retain::Copy,
    };
    Ok((ptx.text.into(), retain))
}

/// Writes handles for the module's kernels, at most `n`, in order (`cuModuleEnumerateFunctions`,
/// `cuLibraryEnumerateKernels`). The kernels are not prepared: a lazily loaded one is when first
/// used, as NVIDIA's driver loads it (`cuFuncIsLoaded`).
pub(crate) unsafe fn enumerate(
    m: &ModuleObj,
    handles: *mut Handle,
    n: c_uint,
    handle: impl Fn(&str) -> Result<usize, CUresult>,
) -> Result<(), CUresult> {
    if handles.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    for (i, name) in m.host.kernel_names().take(n as usize).enumerate() {
        *handles.add(i) = handle(name)? as Handle;
    }
    Ok(())
}

/// Loads PTX into a module owned by context `ctx` (0: by no context, as libraries are): lazily unless
/// `CUDA_MODULE_LOADING=EAGER`, so a kernel is prepared when first looked up ([`prepare`]), but
/// checked whole first as `log.check` says.
pub(crate) fn load_ptx(ctx: usize, text: &str, retain: ptx_jit::Retain, log: &mut JitLog) -> Result<usize, CUresult> {
    let t = std::time::Instant::now();
    let linked = with_builtins(text);
    let (text, retain) = match &linked {
        Some(l) => (l.as_str(), ptx_jit::Retain::Copy),
        None => (text, retain),
    };
    let loading = ptx_jit::Loading::from_env();
    let options = ptx_jit::Options {
        checked: ptx_jit::checked_from_env(),
        ..ptx_jit::jit::host::options()
    };
    let loaded = match (loading, log.check) {
        (ptx_jit::Loading::Lazy, WholeCheck::Kernels) | (ptx_jit::Loading::Eager, _) => Ok(()),
        (_, check) => match ptx_jit::check_whole(text) {
            Err(d) if check == WholeCheck::Invalid && load_error(&d) == CUDA_ERROR_NOT_SUPPORTED => Ok(()),
            r => r.map(drop),
        },
    }
    .and_then(|()| ptx_jit::load_retained(text, options, loading, retain));
    match loaded {
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
            let (n, what) = (
                m.host.kernel_names().count(),
                match loading {
                    ptx_jit::Loading::Lazy => "indexed (each is compiled when first used)",
                    ptx_jit::Loading::Eager => "checked and lowered",
                },
            );
            log.info_text = format!("ptx-jit: {n} kernel(s) {what} in {:.1} ms", log.wall_ms);
            Ok(h)
        }
        Err(diags) => {
            log.error_text = ptx_jit::one_line(&diags, "module.ptx", text);
            if log_enabled() {
                render(&diags, text);
            }
            Err(load_error(&diags))
        }
    }
}

/// Device functions NVIDIA's driver provides to any module that calls them, with no device library
/// linked: `cudaGraphSetConditional` (a `__cudart_builtin__`, which NVRTC leaves as an `.extern`
/// call).
const BUILTINS: [&str; 1] = ["cudaGraphSetConditional"];

/// `text` linked with ptx-jit's device runtime, which defines the builtins, when it calls one; `None`
/// when it calls none (the usual case, found by a text search) or the link fails (the load then
/// reports the module's own error).
fn with_builtins(text: &str) -> Option<String> {
    if !BUILTINS.iter().any(|b| text.contains(b)) {
        return None;
    }
    let inputs = [
        ("module.ptx".to_string(), text.to_string()),
        (
            "device_runtime.ptx".to_string(),
            crate::link::DEVICE_RUNTIME.to_string(),
        ),
    ];
    crate::link::link_ptx(&inputs).ok()
}

/// Kernel `k` of module `m`, prepared (the first use of a lazily loaded kernel checks and lowers it),
/// or the code its load would have failed with.
pub(crate) fn prepare(m: &ModuleObj, k: usize) -> Result<&ptx_jit::HostKernel, CUresult> {
    m.host.prepare(k).map_err(|diags| {
        if log_enabled() {
            render(diags, &m.host.text().unwrap_or_default());
        }
        load_error(diags)
    })
}

/// Writes the diagnostics of a module the JIT refuses to stderr.
fn render(diags: &[ptx_jit::Diagnostic], text: &str) {
    ptx_jit::Diagnostic::render_each(diags, "module.ptx", text, false, |r| eprint!("{r}"));
}

/// The CUDA error for a module or kernel the JIT refuses.
fn load_error(diags: &[ptx_jit::Diagnostic]) -> CUresult {
    // Broken syntax, names or headers, and calls of functions no module defines (ptxas's "unresolved
    // extern function") are "invalid PTX" for sure. Anything else may be valid PTX
    // beyond what the ISA table and the backend know yet (an opcode, modifier or type form), so it
    // is reported as "not supported" rather than blamed on the module.
    use ptx_jit::Code::*;
    let broken = diags
        .iter()
        .any(|d| d.is_error() && matches!(d.code, P0001 | P0002 | P0201 | P0202 | P0203 | P0302));
    let code = |c| diags.iter().any(|d| d.is_error() && d.code == c);
    if code(P0403) {
        CUDA_ERROR_OUT_OF_MEMORY
    } else if broken || code(P0207) || code(P0404) {
        CUDA_ERROR_INVALID_PTX
    } else {
        CUDA_ERROR_NOT_SUPPORTED
    }
}
