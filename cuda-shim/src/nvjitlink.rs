//! nvJitLink, NVIDIA's device-code linker library, for the CPU backend: `libnvJitLink.so.13`, built
//! beside `libcuda.so.1`, is a thin library (`cuda-shim/nvjitlink`) whose every entry point calls the
//! one of the same name, prefixed `ptxjit_`, here.
//!
//! Clients such as numba-cuda and cuda.core link with nvJitLink when it is installed and load the
//! "cubin" it returns. NVIDIA's library returns machine code, which the CPU cannot run; this one
//! returns the linked PTX (NUL-terminated), which `cuModuleLoadData` and `cuLibraryLoadData` accept.
//! Inputs:
//! - PTX, and fat binaries (their PTX for the `-arch` asked for), are linked as `cuLinkComplete`
//!   links them ([`crate::link::link_ptx`]);
//! - NVVM's link-time IR (LTO-IR) is an opaque format only NVIDIA's tools read: when NVIDIA's own
//!   nvJitLink is at hand (`PTXJIT_NVJITLINK=PATH`, or the `nvidia/cu13/lib` directory of the NVIDIA
//!   wheels this process has loaded libraries from, such as libNVVM), it turns the LTO-IR into PTX
//!   (`-lto -ptx`), and that PTX is linked with the rest; without it the input is refused, and the
//!   error log says how to get PTX instead (numba-cuda: `lto=False`);
//! - machine code (cubins, host objects and libraries) is refused.
//!
//! Options are nvJitLink's: `-arch=sm_NN` is required, the other documented ones are accepted and
//! passed on to NVIDIA's library for LTO-IR, and anything else is an unrecognised option, as with
//! NVIDIA's library. A handle whose creation failed fails every later call the same way.
//!
//! NVIDIA's library optimises the LTO-IR inputs on their own, before our link: a call from LTO-IR
//! into a function that only a PTX input defines stays an external call, which our link resolves.

use crate::link::{input_ptx, link, sm_number, Input};
use crate::state::{Table, Tag};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

/// `nvJitLinkResult`.
pub mod result {
    pub const SUCCESS: i32 = 0;
    pub const UNRECOGNIZED_OPTION: i32 = 1;
    pub const MISSING_ARCH: i32 = 2;
    pub const INVALID_INPUT: i32 = 3;
    pub const PTX_COMPILE: i32 = 4;
    pub const NVVM_COMPILE: i32 = 5;
    pub const INTERNAL: i32 = 6;
    pub const UNRECOGNIZED_INPUT: i32 = 8;
    pub const NULL_INPUT: i32 = 10;
    pub const INCOMPATIBLE_OPTIONS: i32 = 11;
    pub const UNRECOGNIZED_ARCH: i32 = 16;
}
use result::*;

/// `nvJitLinkInputType`.
const INPUT_CUBIN: c_int = 1;
const INPUT_PTX: c_int = 2;
const INPUT_LTOIR: c_int = 3;
const INPUT_FATBIN: c_int = 4;
const INPUT_OBJECT: c_int = 5;
const INPUT_LIBRARY: c_int = 6;
const INPUT_ANY: c_int = 10;

/// The version of nvJitLink's API this library follows (the venv's `nvJitLink.h`).
pub const VERSION: (u32, u32) = (13, 5);

/// Options `nvJitLink.h` documents, besides `-arch`: accepted, and passed on to NVIDIA's library for
/// LTO-IR. Flags first, then options that take a value after `=`.
const FLAGS: &[&str] = &[
    "-lto",
    "-ptx",
    "-O0",
    "-O3",
    "-time",
    "-verbose",
    "-g",
    "-lineinfo",
    "-optimize-unused-variables",
    "-nvvm-latest",
    "-no-cache",
    "-device-stack-protector",
    "-r",
];
const WITH_VALUE: &[&str] = &[
    "-maxrregcount=",
    "-Ofc=",
    "-ftz=",
    "-prec-div=",
    "-prec-sqrt=",
    "-fma=",
    "-kernels-used=",
    "-variables-used=",
    "-Xptxas=",
    "-Xnvvm=",
    "-split-compile=",
    "-split-compile-extended=",
    "-jump-table-density=",
];

/// One `nvJitLinkHandle`.
struct Linker {
    /// The `sm_NN` of `-arch`.
    sm: u32,
    /// Whether `nvJitLinkCreate` failed: every later call on the handle fails.
    failed_create: bool,
    /// Every option as given, for NVIDIA's library.
    options: Vec<String>,
    ptx: Vec<(String, String)>,
    lto_ir: Vec<(String, Vec<u8>)>,
    error_log: String,
    info_log: String,
    /// The linked PTX, NUL-terminated, once complete.
    linked: Option<Vec<u8>>,
}

static LINKERS: once_cell::sync::Lazy<Table<parking_lot::Mutex<Linker>>> =
    once_cell::sync::Lazy::new(|| Table::new(Tag::JitLink));

type Handle = *mut c_void;

/// Runs an entry point's body; a panic is an internal error, never an unwinding across C.
fn guard(f: impl FnOnce() -> c_int) -> c_int {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(INTERNAL)
}

/// Runs `f` on the linker `h` names.
fn with<R>(h: Handle, f: impl FnOnce(&mut Linker) -> R) -> Result<R, c_int> {
    if h.is_null() {
        return Err(NULL_INPUT);
    }
    let l = LINKERS.get(h as usize).map_err(|_| INVALID_INPUT)?;
    let mut l = l.lock();
    Ok(f(&mut l))
}

/// Runs `f` on the linker `h` names, unless its creation failed: then an internal error, as NVIDIA's
/// library gives.
fn usable(h: Handle, f: impl FnOnce(&mut Linker) -> c_int) -> c_int {
    with(h, |l| {
        if l.failed_create {
            return fail(l, (INTERNAL, "the linker was not created (see the error above)".into()));
        }
        f(l)
    })
    .unwrap_or_else(|e| e)
}

/// The linker's options, or the error and its log line.
fn parse_options(options: &[String]) -> Result<u32, (c_int, String)> {
    let mut sm = None;
    for o in options {
        if let Some(v) = o.strip_prefix("-arch=") {
            // `compute_NN` too, which the header allows when only PTX is produced.
            sm = Some(sm_number(v).ok_or((UNRECOGNIZED_ARCH, format!("unrecognized -arch value `{v}`")))?);
        } else if !(FLAGS.contains(&o.as_str()) || WITH_VALUE.iter().any(|k| o.starts_with(k))) {
            return Err((UNRECOGNIZED_OPTION, format!("unrecognized option `{o}`")));
        }
    }
    let sm = sm.ok_or((MISSING_ARCH, "option -arch=sm_NN not specified".to_string()))?;
    let only_ptx = ["-lto", "-ptx"].iter().all(|f| options.iter().any(|o| o == f));
    if options.iter().any(|o| o.starts_with("-arch=compute_")) && !only_ptx {
        return Err((INCOMPATIBLE_OPTIONS, "-arch=compute_NN needs -lto and -ptx".into()));
    }
    Ok(sm)
}

/// What an `NVJITLINK_INPUT_ANY` input is, from its first bytes.
fn sniff(data: &[u8]) -> c_int {
    const ELF: &[u8] = b"\x7fELF";
    const EM_CUDA: u16 = 190;
    match data {
        [0x50, 0xed, 0x55, 0xba, ..] => INPUT_FATBIN,
        [0xed, 0x43, 0x4e, 0x7f, ..] => INPUT_LTOIR,
        d if d.starts_with(b"!<arch>\n") => INPUT_LIBRARY,
        d if d.starts_with(ELF) && d.len() > 20 && u16::from_le_bytes([d[18], d[19]]) == EM_CUDA => INPUT_CUBIN,
        d if d.starts_with(ELF) => INPUT_OBJECT,
        _ => INPUT_PTX,
    }
}

/// Adds one input to `l`, or says why it cannot be linked.
fn add(l: &mut Linker, kind: c_int, data: &[u8], name: &str) -> Result<(), (c_int, String)> {
    let kind = if kind == INPUT_ANY { sniff(data) } else { kind };
    let input = match kind {
        INPUT_PTX => Input::Ptx,
        INPUT_FATBIN => Input::Fatbin,
        INPUT_CUBIN => Input::Cubin,
        INPUT_OBJECT | INPUT_LIBRARY => Input::Object,
        INPUT_LTOIR => {
            l.lto_ir.push((name.to_string(), data.to_vec()));
            return Ok(());
        }
        _ => {
            return Err((
                UNRECOGNIZED_INPUT,
                format!("input type {kind} is not one this linker takes"),
            ))
        }
    };
    let (text, target) =
        input_ptx(input, data, l.sm, name).map_err(|(msg, _)| (INVALID_INPUT, format!("{name}: {msg}")))?;
    // NVIDIA's library compiles each PTX input as it is added, so PTX for a newer architecture than
    // `-arch` fails here, as a compile error.
    if let Some(sm) = target.filter(|&sm| sm > l.sm) {
        return Err((
            PTX_COMPILE,
            format!("{name}: PTX for sm_{sm} cannot be compiled for -arch=sm_{}", l.sm),
        ));
    }
    l.ptx.push((name.to_string(), text));
    Ok(())
}

/// Links what `l` holds: its LTO-IR through NVIDIA's nvJitLink first, then all PTX; checks the result.
fn complete(l: &mut Linker) -> Result<(), (c_int, String)> {
    let t = std::time::Instant::now();
    let mut ptx = l.ptx.clone();
    let mut via = String::new();
    if !l.lto_ir.is_empty() {
        let nvidia = nvidia().map_err(|why| {
            (
                INVALID_INPUT,
                format!(
                    "{} is NVVM link-time IR, which only NVIDIA's nvJitLink can read, and {why}; \
                     set PTXJIT_NVJITLINK to NVIDIA's libnvJitLink.so.13, or have the compiler emit PTX \
                     (numba-cuda: @cuda.jit(lto=False))",
                    l.lto_ir[0].0
                ),
            )
        })?;
        let text = lto_to_ptx(nvidia, &l.options, &l.lto_ir).map_err(|e| (NVVM_COMPILE, e))?;
        via = format!(" ({} LTO-IR input(s) through NVIDIA's nvJitLink)", l.lto_ir.len());
        ptx.push(("<LTO-IR>".into(), text));
    }
    let whole = !l.options.iter().any(|o| o == "-r");
    let text = link(&ptx, whole).map_err(|e| (PTX_COMPILE, format!("link failed: {e}")))?;
    if let Err(diags) = ptx_jit::front(&text) {
        return Err((PTX_COMPILE, ptx_jit::one_line(&diags, "<linked>", &text)));
    }
    l.info_log = format!(
        "ptx-jit: linked {} input(s){via} into PTX for sm_{} in {:.1} ms\n",
        ptx.len(),
        l.sm,
        t.elapsed().as_secs_f64() * 1e3
    );
    l.linked = Some(with_nul(&text));
    Ok(())
}

// ---- NVIDIA's nvJitLink, for LTO-IR -----------------------------------------------------------------

/// A symbol exported only by `libnvJitLink.so.13` of this project, so that it is never taken for
/// NVIDIA's.
pub const FORWARDER_MARK: &str = "ptxjit_nvjitlink_forwarder";

/// NVIDIA's nvJitLink, loaded once found: from `PTXJIT_NVJITLINK`, else from the `nvidia/cu13/lib`
/// (or `nvidia/nvjitlink/lib`) directory of an NVIDIA wheel this process has loaded a library from.
/// A failure is not kept: a later link may come after the process has loaded such a library.
fn nvidia() -> Result<&'static libloading::Library, String> {
    static LIB: OnceLock<libloading::Library> = OnceLock::new();
    if let Some(lib) = LIB.get() {
        return Ok(lib);
    }
    let candidates = candidates();
    if candidates.is_empty() {
        return Err("NVIDIA's nvJitLink was not found".into());
    }
    let mut why = vec![];
    for path in candidates {
        // Its own symbols first (RTLD_DEEPBIND), and none of them made global: ours have the same
        // names. (Sanitizer runtimes refuse RTLD_DEEPBIND; LTO-IR cannot be linked under them.)
        let flags = libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_DEEPBIND;
        match unsafe { libloading::os::unix::Library::open(Some(&path), flags) } {
            Ok(lib) if unsafe { lib.get::<*const c_void>(FORWARDER_MARK.as_bytes()) }.is_ok() => {
                why.push(format!("{} is this project's own", path.display()))
            }
            Ok(lib) => return Ok(LIB.get_or_init(|| lib.into())),
            Err(e) => why.push(e.to_string()),
        }
    }
    Err(format!("NVIDIA's nvJitLink could not be loaded ({})", why.join("; ")))
}

fn candidates() -> Vec<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("PTXJIT_NVJITLINK") {
        return vec![p.into()];
    }
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut out: Vec<std::path::PathBuf> = vec![];
    for path in maps.lines().filter_map(|l| l.split_whitespace().nth(5)) {
        for (dir, lib) in [
            ("/nvidia/cu13/", "lib/libnvJitLink.so.13"),
            ("/nvidia/nvjitlink/", "lib/libnvJitLink.so.13"),
        ] {
            if let Some(i) = path.find(dir) {
                let p = std::path::PathBuf::from(format!("{}{lib}", &path[..i + dir.len()]));
                if p.is_file() && !out.contains(&p) {
                    out.push(p);
                }
            }
        }
    }
    out
}

/// NVIDIA's nvJitLink's PTX for `inputs` (LTO-IR), linked with `options` plus `-lto -ptx`.
fn lto_to_ptx(lib: &libloading::Library, options: &[String], inputs: &[(String, Vec<u8>)]) -> Result<String, String> {
    type Create = unsafe extern "C" fn(*mut Handle, u32, *const *const c_char) -> c_int;
    type AddData = unsafe extern "C" fn(Handle, c_int, *const c_void, usize, *const c_char) -> c_int;
    type OnHandle = unsafe extern "C" fn(Handle) -> c_int;
    type Size = unsafe extern "C" fn(Handle, *mut usize) -> c_int;
    type Fill = unsafe extern "C" fn(Handle, *mut c_char) -> c_int;
    type Destroy = unsafe extern "C" fn(*mut Handle) -> c_int;
    // SAFETY (each): the signatures are nvJitLink.h's.
    fn sym<T: Copy>(lib: &libloading::Library, name: &str) -> Result<T, String> {
        unsafe { lib.get::<T>(name.as_bytes()) }
            .map(|s| *s)
            .map_err(|e| e.to_string())
    }
    let create: Create = sym(lib, "nvJitLinkCreate")?;
    let add: AddData = sym(lib, "nvJitLinkAddData")?;
    let complete: OnHandle = sym(lib, "nvJitLinkComplete")?;
    let ptx_size: Size = sym(lib, "nvJitLinkGetLinkedPtxSize")?;
    let ptx: Fill = sym(lib, "nvJitLinkGetLinkedPtx")?;
    let log_size: Size = sym(lib, "nvJitLinkGetErrorLogSize")?;
    let log: Fill = sym(lib, "nvJitLinkGetErrorLog")?;
    let destroy: Destroy = sym(lib, "nvJitLinkDestroy")?;
    let mut opts: Vec<CString> = options.iter().filter_map(|o| CString::new(o.as_str()).ok()).collect();
    for must in ["-lto", "-ptx"] {
        if !options.iter().any(|o| o == must) {
            opts.push(CString::new(must).expect("no NUL"));
        }
    }
    let ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
    let mut h: Handle = std::ptr::null_mut();
    // SAFETY: each call follows nvJitLink.h; buffers are sized by the matching size call.
    unsafe {
        let r = create(&mut h, ptrs.len() as u32, ptrs.as_ptr());
        let text = |size: Size, fill: Fill| {
            let mut n = 0usize;
            if size(h, &mut n) != SUCCESS || n == 0 {
                return String::new();
            }
            let mut buf = vec![0u8; n];
            fill(h, buf.as_mut_ptr().cast());
            let end = buf.iter().position(|&b| b == 0).unwrap_or(n);
            String::from_utf8_lossy(&buf[..end]).into_owned()
        };
        let mut result = if r == SUCCESS {
            Ok(())
        } else {
            Err(format!("nvJitLinkCreate failed ({r}): {}", text(log_size, log)))
        };
        for (name, data) in inputs.iter().take_while(|_| result.is_ok()) {
            let cname = CString::new(name.as_str()).unwrap_or_default();
            let r = add(h, INPUT_LTOIR, data.as_ptr().cast(), data.len(), cname.as_ptr());
            if r != SUCCESS {
                result = Err(format!("{name}: {}", text(log_size, log)));
                break;
            }
        }
        if result.is_ok() && complete(h) != SUCCESS {
            result = Err(text(log_size, log));
        }
        let out = result.map(|()| text(ptx_size, ptx));
        if !h.is_null() {
            destroy(&mut h);
        }
        out.map_err(|e| format!("NVIDIA's nvJitLink: {}", e.trim()))
    }
}

// ---- entry points (called by libnvJitLink.so.13) ----------------------------------------------------

unsafe fn c_str<'a>(p: *const c_char) -> Option<&'a str> {
    (!p.is_null()).then(|| CStr::from_ptr(p).to_str().ok()).flatten()
}

/// Records a failure in the error log (which nvJitLink clients read after any failed call).
fn fail(l: &mut Linker, (code, msg): (c_int, String)) -> c_int {
    l.error_log.push_str(&format!("ptx-jit: {msg}\n"));
    code
}

#[no_mangle]
pub unsafe extern "C" fn ptxjit_nvJitLinkCreate(handle: *mut Handle, n: u32, options: *const *const c_char) -> c_int {
    guard(|| {
        if handle.is_null() || options.is_null() {
            return NULL_INPUT;
        }
        // NVIDIA's library takes "-arch=sm_80 -lto" in one entry too.
        let options: Option<Vec<&str>> = (0..n as usize).map(|i| c_str(*options.add(i))).collect();
        let Some(options) = options else {
            return NULL_INPUT;
        };
        let options = options
            .iter()
            .flat_map(|o| o.split_whitespace())
            .map(str::to_string)
            .collect();
        let mut l = Linker {
            sm: 0,
            failed_create: false,
            options,
            ptx: vec![],
            lto_ir: vec![],
            error_log: String::new(),
            info_log: String::new(),
            linked: None,
        };
        // As NVIDIA's library does, a handle comes back even when an option is wrong, so the caller
        // can read the error log.
        let r = match parse_options(&l.options) {
            Ok(sm) => {
                l.sm = sm;
                SUCCESS
            }
            Err(e) => {
                l.failed_create = true;
                fail(&mut l, e)
            }
        };
        *handle = LINKERS.insert(parking_lot::Mutex::new(l)) as Handle;
        r
    })
}

#[no_mangle]
pub unsafe extern "C" fn ptxjit_nvJitLinkDestroy(handle: *mut Handle) -> c_int {
    guard(|| {
        if handle.is_null() || (*handle).is_null() {
            return NULL_INPUT;
        }
        match LINKERS.remove(*handle as usize) {
            Ok(_) => {
                *handle = std::ptr::null_mut();
                SUCCESS
            }
            Err(_) => INVALID_INPUT,
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn ptxjit_nvJitLinkAddData(
    h: Handle,
    kind: c_int,
    data: *const c_void,
    size: usize,
    name: *const c_char,
) -> c_int {
    guard(|| {
        if data.is_null() || size == 0 {
            return NULL_INPUT;
        }
        let bytes = std::slice::from_raw_parts(data as *const u8, size);
        let name = c_str(name).unwrap_or("<input>");
        usable(h, |l| {
            add(l, kind, bytes, name).map_or_else(|e| fail(l, e), |()| SUCCESS)
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn ptxjit_nvJitLinkAddFile(h: Handle, kind: c_int, path: *const c_char) -> c_int {
    guard(|| {
        let Some(path) = c_str(path) else {
            return NULL_INPUT;
        };
        usable(h, |l| match std::fs::read(path) {
            Ok(bytes) => add(l, kind, &bytes, path).map_or_else(|e| fail(l, e), |()| SUCCESS),
            Err(e) => fail(l, (INVALID_INPUT, format!("{path}: {e}"))),
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn ptxjit_nvJitLinkComplete(h: Handle) -> c_int {
    guard(|| usable(h, |l| complete(l).map_or_else(|e| fail(l, e), |()| SUCCESS)))
}

/// The size of one of the linker's outputs (with its NUL, for text).
unsafe fn size_of(h: Handle, size: *mut usize, what: impl FnOnce(&Linker) -> Result<usize, c_int>) -> c_int {
    guard(|| {
        if size.is_null() {
            return NULL_INPUT;
        }
        match with(h, |l| what(l)).and_then(|r| r) {
            Ok(n) => {
                *size = n;
                SUCCESS
            }
            Err(e) => e,
        }
    })
}

/// Copies one of the linker's outputs to `out`.
unsafe fn copy_out(h: Handle, out: *mut c_void, what: impl FnOnce(&Linker) -> Result<Vec<u8>, c_int>) -> c_int {
    guard(|| {
        if out.is_null() {
            return NULL_INPUT;
        }
        match with(h, |l| what(l)).and_then(|r| r) {
            Ok(bytes) => {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), out as *mut u8, bytes.len());
                SUCCESS
            }
            Err(e) => e,
        }
    })
}

/// The linked image: PTX, which this project's driver loads as NVIDIA's loads a cubin.
fn linked(l: &Linker) -> Result<&[u8], c_int> {
    l.linked.as_deref().ok_or(INTERNAL)
}

fn with_nul(s: &str) -> Vec<u8> {
    let mut b = s.as_bytes().to_vec();
    b.push(0);
    b
}

#[no_mangle]
pub unsafe extern "C" fn ptxjit_nvJitLinkGetLinkedCubinSize(h: Handle, size: *mut usize) -> c_int {
    size_of(h, size, |l| linked(l).map(<[u8]>::len))
}

#[no_mangle]
pub unsafe extern "C" fn ptxjit_nvJitLinkGetLinkedCubin(h: Handle, out: *mut c_void) -> c_int {
    copy_out(h, out, |l| linked(l).map(<[u8]>::to_vec))
}

#[no_mangle]
pub unsafe extern "C" fn ptxjit_nvJitLinkGetLinkedPtxSize(h: Handle, size: *mut usize) -> c_int {
    size_of(h, size, |l| linked(l).map(<[u8]>::len))
}

#[no_mangle]
pub unsafe extern "C" fn ptxjit_nvJitLinkGetLinkedPtx(h: Handle, out: *mut c_char) -> c_int {
    copy_out(h, out.cast(), |l| linked(l).map(<[u8]>::to_vec))
}

/// Linking into LTO-IR needs NVIDIA's compiler: refused, with a line in the error log.
unsafe fn refuse_lto_ir(h: Handle, out: *const c_void) -> c_int {
    guard(|| {
        if out.is_null() {
            return NULL_INPUT;
        }
        with(h, |l| {
            fail(l, (INTERNAL, "the CPU backend links into PTX, not LTO-IR".into()))
        })
        .unwrap_or_else(|e| e)
    })
}

#[no_mangle]
pub unsafe extern "C" fn ptxjit_nvJitLinkGetLinkedLTOIRSize(h: Handle, size: *mut usize) -> c_int {
    refuse_lto_ir(h, size.cast())
}

#[no_mangle]
pub unsafe extern "C" fn ptxjit_nvJitLinkGetLinkedLTOIR(h: Handle, out: *mut c_void) -> c_int {
    refuse_lto_ir(h, out)
}

#[no_mangle]
pub unsafe extern "C" fn ptxjit_nvJitLinkGetErrorLogSize(h: Handle, size: *mut usize) -> c_int {
    size_of(h, size, |l| Ok(l.error_log.len() + 1))
}

#[no_mangle]
pub unsafe extern "C" fn ptxjit_nvJitLinkGetErrorLog(h: Handle, out: *mut c_char) -> c_int {
    copy_out(h, out.cast(), |l| Ok(with_nul(&l.error_log)))
}

#[no_mangle]
pub unsafe extern "C" fn ptxjit_nvJitLinkGetInfoLogSize(h: Handle, size: *mut usize) -> c_int {
    size_of(h, size, |l| Ok(l.info_log.len() + 1))
}

#[no_mangle]
pub unsafe extern "C" fn ptxjit_nvJitLinkGetInfoLog(h: Handle, out: *mut c_char) -> c_int {
    copy_out(h, out.cast(), |l| Ok(with_nul(&l.info_log)))
}

#[no_mangle]
pub unsafe extern "C" fn ptxjit_nvJitLinkVersion(major: *mut u32, minor: *mut u32) -> c_int {
    if major.is_null() || minor.is_null() {
        return NULL_INPUT;
    }
    (*major, *minor) = VERSION;
    SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(o: &[&str]) -> Vec<String> {
        o.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_follow_nvidias_rules() {
        assert_eq!(
            parse_options(&opts(&["-arch=sm_80", "-lto", "-O3", "-maxrregcount=32"])),
            Ok(80)
        );
        assert_eq!(parse_options(&opts(&["-arch=sm_90a"])), Ok(90));
        assert_eq!(parse_options(&opts(&["-lto"])).unwrap_err().0, MISSING_ARCH);
        assert_eq!(
            parse_options(&opts(&["-arch=compute_80", "-lto", "-ptx", "-r"])),
            Ok(80)
        );
        assert_eq!(
            parse_options(&opts(&["-arch=compute_80"])).unwrap_err().0,
            INCOMPATIBLE_OPTIONS
        );
        assert_eq!(
            parse_options(&opts(&["-arch=gfx90a"])).unwrap_err().0,
            UNRECOGNIZED_ARCH
        );
        assert_eq!(
            parse_options(&opts(&["-arch=sm_80", "-O2"])).unwrap_err().0,
            UNRECOGNIZED_OPTION
        );
        assert_eq!(
            parse_options(&opts(&["-arch=sm_80", "-fast"])).unwrap_err().0,
            UNRECOGNIZED_OPTION
        );
    }

    #[test]
    fn inputs_are_told_apart_by_their_first_bytes() {
        assert_eq!(sniff(b".version 8.0\n"), INPUT_PTX);
        assert_eq!(sniff(&[0x50, 0xed, 0x55, 0xba, 1, 0]), INPUT_FATBIN);
        assert_eq!(sniff(&[0xed, 0x43, 0x4e, 0x7f, 1]), INPUT_LTOIR);
        assert_eq!(sniff(b"!<arch>\nfoo"), INPUT_LIBRARY);
        // e_machine, at byte 18: EM_CUDA (190) for device code, x86-64 (62) for a host object.
        let mut cubin = b"\x7fELF".to_vec();
        cubin.resize(64, 0);
        cubin[18] = 190;
        assert_eq!(sniff(&cubin), INPUT_CUBIN);
        cubin[18] = 62;
        assert_eq!(sniff(&cubin), INPUT_OBJECT);
    }
}
