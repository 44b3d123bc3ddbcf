//! Context-independent libraries (`cuLibrary*`, CUDA 12) and fat binary modules.
//!
//! A library is one module that belongs to no context (so it outlives context switches, as the API
//! promises). A `CUkernel` is the handle of a function of that module: CUDA lets a `CUkernel` be passed
//! wherever a `CUfunction` is expected, and with one handle space that holds by construction.

use crate::errors::*;
use crate::state::*;
use crate::*;

pub struct Library {
    /// The library's module, or why it has none: a library whose image holds no code this device can
    /// run loads, and every lookup in it fails with `CUDA_ERROR_NO_BINARY_FOR_GPU`, as NVIDIA's driver
    /// does (`cuModuleLoadData` of the same image fails at once; tests/gpu/README.md).
    module: Result<usize, CUresult>,
    /// Kernel handles handed out, by name: asking twice gives the same `CUkernel`, as with the driver.
    kernels: parking_lot::Mutex<std::collections::HashMap<String, usize>>,
    /// Whether a lookup that found no code has been logged (`PTX_JIT_LOG`): once per library, as
    /// libraries retry such lookups.
    reported: AtomicBool,
}

impl Library {
    pub fn module(&self) -> Result<usize, CUresult> {
        self.module
    }

    /// The `CUkernel` for `name`, the same on every call, not prepared.
    fn kernel(&self, name: &str) -> Result<usize, CUresult> {
        let mut k = self.kernels.lock();
        if let Some(&h) = k.get(name) {
            return Ok(h);
        }
        let h = function_handle(self.module()?, name, false)?;
        k.insert(name.to_string(), h);
        Ok(h)
    }

    /// [`Library::kernel`], prepared (without holding the library's lock: preparing a large kernel
    /// takes seconds, and other lookups in the library go on meanwhile).
    fn prepared_kernel(&self, name: &str) -> Result<usize, CUresult> {
        let h = self.kernel(name)?;
        let f = FUNCTIONS.get(h)?;
        crate::module::prepare(&f.module_obj, f.kernel)?;
        Ok(h)
    }
}

pub static LIBRARIES: once_cell::sync::Lazy<Table<Library>> = once_cell::sync::Lazy::new(|| Table::new(Tag::Library));

/// Checks library options (none of the known ones changes results here).
/// CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE (0) takes a value; CU_LIBRARY_BINARY_IS_PRESERVED
/// (1) takes none, so the values may be NULL when it is the only one (cuBLASLt passes it so), and it is
/// refused for a file (cuda.h).
unsafe fn library_options(
    n: c_uint,
    opts: *mut c_int,
    vals: *mut *mut c_void,
    from_file: bool,
) -> Result<(), CUresult> {
    if n > 0 && opts.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    for i in 0..n as usize {
        match *opts.add(i) {
            0 if !vals.is_null() => {}
            1 if !from_file => {}
            _ => return Err(CUDA_ERROR_INVALID_VALUE),
        }
    }
    Ok(())
}

/// Loads a library from its image with the JIT options given (its library options checked).
unsafe fn library_load(
    lib: *mut Handle,
    image: *const c_void,
    n_jit: c_uint,
    jit_opts: *mut c_int,
    jit_vals: *mut *mut c_void,
) -> Result<(), CUresult> {
    init_check()?;
    if lib.is_null() || image.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let mut log = JitLog::from_options(n_jit, jit_opts, jit_vals)?;
    let r = image_ptx(image, &mut log).and_then(|(text, retain)| load_ptx(0, &text, retain, &mut log));
    log.finish(r.is_ok());
    let module = match r {
        Err(CUDA_ERROR_NO_BINARY_FOR_GPU) => Err(CUDA_ERROR_NO_BINARY_FOR_GPU),
        r => Ok(r?),
    };
    *lib = LIBRARIES.insert(Library {
        module,
        kernels: Default::default(),
        reported: AtomicBool::new(false),
    }) as Handle;
    Ok(())
}

/// A new function handle for kernel `name` of module `module`. With `prepare`, the kernel is
/// prepared first (see `module::prepare`): its errors fail the lookup, and no handle is made;
/// without, it is prepared when first used.
pub(crate) fn function_handle(module: usize, name: &str, prepare: bool) -> Result<usize, CUresult> {
    let m = MODULES.get(module)?;
    let k = m.host.find(name).ok_or(CUDA_ERROR_NOT_FOUND)?;
    if prepare {
        crate::module::prepare(&m, k)?;
    }
    Ok(FUNCTIONS.insert(FuncObj {
        module,
        module_obj: m,
        kernel: k,
    }))
}

unsafe fn c_name<'a>(p: *const c_char) -> Result<&'a str, CUresult> {
    if p.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    CStr::from_ptr(p).to_str().map_err(|_| CUDA_ERROR_NOT_FOUND)
}

api! {
    fn cuKernelGetAttribute(v: *mut c_int, attr: c_int, kernel: Handle, dev: CUdevice) {
        // A CUkernel is its CUfunction here (see the module comment).
        crate::device_check(dev)?;
        status(crate::launch::cuFuncGetAttribute(v, attr, kernel))
    }
    fn cuKernelSetAttribute(attr: c_int, v: c_int, kernel: Handle, dev: CUdevice) {
        // The attribute is the kernel's in every context of the device, as its function's is here.
        crate::device_check(dev)?;
        status(crate::launch::cuFuncSetAttribute(kernel, attr, v))
    }
    fn cuKernelSetCacheConfig(kernel: Handle, cfg: c_int, dev: CUdevice) {
        crate::device_check(dev)?;
        status(crate::launch::cuFuncSetCacheConfig(kernel, cfg))
    }
    fn cuLibraryLoadData(lib: *mut Handle, code: *const c_void, jit_opts: *mut c_int, jit_vals: *mut *mut c_void, n_jit: c_uint, lib_opts: *mut c_int, lib_vals: *mut *mut c_void, n_lib: c_uint) {
        library_options(n_lib, lib_opts, lib_vals, false)?;
        library_load(lib, code, n_jit, jit_opts, jit_vals)
    }
    fn cuLibraryLoadFromFile(lib: *mut Handle, path: *const c_char, jit_opts: *mut c_int, jit_vals: *mut *mut c_void, n_jit: c_uint, lib_opts: *mut c_int, lib_vals: *mut *mut c_void, n_lib: c_uint) {
        init_check()?;
        library_options(n_lib, lib_opts, lib_vals, true)?;
        let path = c_name(path)?;
        let mut data = std::fs::read(path).map_err(|_| CUDA_ERROR_FILE_NOT_FOUND)?;
        data.push(0); // PTX files carry no NUL of their own
        library_load(lib, data.as_ptr() as *const c_void, n_jit, jit_opts, jit_vals)
    }
    fn cuLibraryUnload(lib: Handle) {
        init_check()?;
        let l = LIBRARIES.remove(lib as usize)?;
        match l.module {
            Ok(m) => status(crate::cuModuleUnload(m as Handle)),
            Err(_) => Ok(()),
        }
    }
    fn cuLibraryGetModule(module: *mut Handle, lib: Handle) {
        init_check()?;
        let l = LIBRARIES.get(lib as usize)?;
        out(module, l.module()? as Handle)
    }
    fn cuLibraryGetKernel(kernel: *mut Handle, lib: Handle, name: *const c_char) {
        init_check()?;
        if kernel.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let l = LIBRARIES.get(lib as usize)?;
        let name = c_name(name)?;
        let r = l.prepared_kernel(name);
        if r == Err(CUDA_ERROR_NO_BINARY_FOR_GPU) && log_enabled() && !l.reported.swap(true, Ordering::Relaxed) {
            eprintln!("ptx-jit: kernel `{name}`: its library holds machine code only, and the CPU backend needs PTX");
        }
        *kernel = r? as Handle;
        Ok(())
    }
    fn cuLibraryGetKernelCount(count: *mut c_uint, lib: Handle) {
        init_check()?;
        let l = LIBRARIES.get(lib as usize)?;
        out(count, MODULES.get(l.module()?)?.host.kernel_names().count() as c_uint)
    }
    fn cuLibraryEnumerateKernels(kernels: *mut Handle, n: c_uint, lib: Handle) {
        init_check()?;
        let l = LIBRARIES.get(lib as usize)?;
        let m = MODULES.get(l.module()?)?;
        crate::module::enumerate(&m, kernels, n, |name| l.kernel(name))
    }
    fn cuLibraryGetGlobal(dptr: *mut CUdeviceptr, bytes: *mut usize, lib: Handle, name: *const c_char) {
        init_check()?;
        let l = LIBRARIES.get(lib as usize)?;
        status(crate::cuModuleGetGlobal_v2(dptr, bytes, l.module()? as Handle, name))
    }
    fn cuLibraryGetManaged(dptr: *mut CUdeviceptr, bytes: *mut usize, lib: Handle, name: *const c_char) {
        init_check()?;
        let wanted = c_name(name)?;
        let module = LIBRARIES.get(lib as usize)?.module()?;
        // Device memory is the host's, so a managed variable's device address is the one the host
        // uses too (the static runtime points `__managed__` variables' host symbols there).
        if !MODULES.get(module)?.host.managed.iter().any(|n| n == wanted) {
            return Err(CUDA_ERROR_NOT_FOUND);
        }
        status(crate::cuModuleGetGlobal_v2(dptr, bytes, module as Handle, name))
    }
    fn cuKernelGetFunction(func: *mut Handle, kernel: Handle) {
        init_check()?;
        FUNCTIONS.get(kernel as usize)?;
        out(func, kernel)
    }
    fn cuKernelGetName(name: *mut *const c_char, kernel: Handle) {
        init_check()?;
        let f = FUNCTIONS.get(kernel as usize)?;
        // Names live as long as the module; hand out a NUL-terminated copy kept with the handle table.
        let n = format!("{}\0", f.module_obj.host.kernel_names().nth(f.kernel).unwrap_or_default());
        let mut names = NAMES.lock();
        let s = names.entry(kernel as usize).or_insert(n);
        out(name, s.as_ptr() as *const c_char)
    }
    fn cuKernelGetLibrary(lib: *mut Handle, kernel: Handle) {
        init_check()?;
        let f = FUNCTIONS.get(kernel as usize)?;
        let mut found = None;
        LIBRARIES.retain(|h, l| {
            if l.module == Ok(f.module) {
                found = Some(*h);
            }
            true
        });
        out(lib, found.ok_or(CUDA_ERROR_INVALID_HANDLE)? as Handle)
    }
    fn cuModuleGetLoadingMode(mode: *mut c_int) {
        init_check()?;
        // CU_MODULE_EAGER_LOADING (1) or CU_MODULE_LAZY_LOADING (2), as CUDA_MODULE_LOADING asks.
        out(mode, if ptx_jit::Loading::from_env() == ptx_jit::Loading::Eager { 1 } else { 2 })
    }
    fn cuModuleLoadFatBinary(module: *mut Handle, image: *const c_void) {
        init_check()?;
        let ctx = current_ctx()?;
        if module.is_null() || image.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let mut log = JitLog::default();
        log.check = crate::module::WholeCheck::Invalid; // the module API, as cuModuleLoadData
        let (text, retain) = crate::module::fatbin_ptx(image, &mut log)?;
        *module = load_ptx(ctx, &text, retain, &mut log)? as Handle;
        Ok(())
    }
}

static NAMES: parking_lot::Mutex<std::collections::BTreeMap<usize, String>> =
    parking_lot::Mutex::new(std::collections::BTreeMap::new());
