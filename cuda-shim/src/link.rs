//! `cuLink*`: links PTX inputs into one module.
//!
//! The CPU backend compiles PTX, so the linked "image" that `cuLinkComplete` hands back is PTX text too
//! (NUL-terminated), which `cuModuleLoadData` and `cuLibraryLoadData` accept. Linking resolves the
//! `.extern` declarations of one input against the definitions of another: declarations that some input
//! defines are dropped, weak (and common) definitions of functions and variables give way to a strong
//! one or to the first, two strong definitions are an error, a call that passes a result to a function
//! defined without one (a C function returning `void`, declared with a result) passes none, and the
//! header takes the highest `.version` and target of the inputs. Machine code (cubin, object,
//! archive) and LTO-IR cannot be linked into PTX; those inputs fail with `CUDA_ERROR_NOT_SUPPORTED`
//! and a message in the error log, except NVIDIA's device runtime (`libcudadevrt.a`), for which the
//! linker takes ptx-jit's own (`device_runtime.ptx`: the cooperative-groups grid barrier).

use crate::errors::*;
use crate::state::*;
use crate::*;
use ptx_front::ast::{Function, Item, Linkage, ModuleDirective};

pub struct LinkState {
    inputs: parking_lot::Mutex<Vec<(String, String)>>,
    log: parking_lot::Mutex<JitLog>,
    image: parking_lot::Mutex<Option<Vec<u8>>>,
}

pub static LINKS: once_cell::sync::Lazy<Table<LinkState>> = once_cell::sync::Lazy::new(|| Table::new(Tag::Link));

/// What a linker input holds: the driver's `CUjitInputType` and nvJitLink's `nvJitLinkInputType`
/// number them differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Input {
    Ptx,
    Fatbin,
    Cubin,
    /// A host object or library (`.o`, `.a`) with device code in it.
    Object,
    /// NVVM's link-time IR.
    LtoIr,
}

impl Input {
    /// `CUjitInputType`.
    fn of_driver(kind: c_int) -> Option<Input> {
        Some(match kind {
            0 => Input::Cubin,
            1 => Input::Ptx,
            2 => Input::Fatbin,
            3 | 4 => Input::Object,
            5 => Input::LtoIr,
            _ => return None,
        })
    }
}

/// The number of a target name: `sm_90a` and `compute_90` are 90 (an `a` or `f` suffix names the
/// base architecture).
pub(crate) fn sm_number(target: &str) -> Option<u32> {
    let n = target.strip_prefix("sm_").or_else(|| target.strip_prefix("compute_"))?;
    n.trim_end_matches(['a', 'f']).parse().ok()
}

/// The architecture a parsed module's `.target` names first.
fn target_of(m: &ptx_front::ast::Module<'_>) -> Option<u32> {
    m.directives.iter().find_map(|d| match d {
        ModuleDirective::Target { targets, .. } => targets.first().and_then(|t| sm_number(t.text)),
        _ => None,
    })
}

/// ptx-jit's device runtime, linked where a program links NVIDIA's `libcudadevrt.a`.
pub(crate) const DEVICE_RUNTIME: &str = include_str!("device_runtime.ptx");

/// The functions [`DEVICE_RUNTIME`] defines.
pub(crate) const DEVICE_RUNTIME_FUNCTIONS: [&str; 3] = [
    "cudaCGGetIntrinsicHandle",
    "cudaCGSynchronize",
    "cudaGraphSetConditional",
];

/// Whether some text calls one of the device runtime's functions (a text search, as for the
/// driver's builtins).
pub(crate) fn calls_device_runtime<'t>(mut texts: impl Iterator<Item = &'t str>) -> bool {
    texts.any(|t| DEVICE_RUNTIME_FUNCTIONS.iter().any(|f| t.contains(f)))
}

/// Whether `data` is NVIDIA's device runtime library: an `ar` archive holding
/// `cuda_device_runtime.o` (its one member in CUDA 13).
fn is_device_runtime(data: &[u8]) -> bool {
    let Some(mut rest) = data.strip_prefix(b"!<arch>\n") else {
        return false;
    };
    // Members: a 60-byte header (the name in its first 16 bytes, the size in decimal at 48..58),
    // then the data, padded to an even length. GNU's `//` member holds the names longer than 15
    // bytes, which a header gives as `/offset`.
    let mut long_names: &[u8] = &[];
    while rest.len() >= 60 {
        let (header, body) = rest.split_at(60);
        let Some(size) = std::str::from_utf8(&header[48..58])
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
        else {
            return false;
        };
        let raw = std::str::from_utf8(&header[..16]).unwrap_or_default().trim_end();
        let name: &[u8] = match raw.strip_prefix('/').map(str::parse::<usize>) {
            Some(Ok(at)) => {
                let from = long_names.get(at..).unwrap_or_default();
                &from[..from.iter().position(|&b| b == b'/' || b == b'\n').unwrap_or(from.len())]
            }
            _ => raw.trim_end_matches('/').as_bytes(),
        };
        if raw == "//" {
            long_names = body.get(..size).unwrap_or_default();
        } else if name == b"cuda_device_runtime.o" {
            return true;
        }
        rest = body.get(size + size % 2..).unwrap_or_default();
    }
    false
}

/// The PTX text of one linker input and the architecture its `.target` names, or why it cannot be
/// linked (and the driver's error code).
pub(crate) fn input_ptx(
    kind: Input,
    data: &[u8],
    sm: u32,
    name: &str,
) -> Result<(String, Option<u32>), (String, CUresult)> {
    let text = match kind {
        Input::Ptx => {
            let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
            std::str::from_utf8(&data[..end])
                .map_err(|_| ("PTX input is not text".to_string(), CUDA_ERROR_INVALID_PTX))?
                .to_string()
        }
        Input::Fatbin => fatbin::best_ptx(data, sm).map_err(|e| (e.to_string(), e.code()))?,
        Input::Cubin => {
            return Err((
                "a cubin is machine code; the CPU backend links PTX only".into(),
                CUDA_ERROR_NOT_SUPPORTED,
            ))
        }
        Input::Object if is_device_runtime(data) => DEVICE_RUNTIME.to_string(),
        Input::Object => {
            return Err((
                "objects and libraries hold machine code; the CPU backend links PTX only".into(),
                CUDA_ERROR_NOT_SUPPORTED,
            ))
        }
        Input::LtoIr => {
            return Err((
                "NVVM/LTO-IR inputs are not supported; link PTX".into(),
                CUDA_ERROR_NOT_SUPPORTED,
            ))
        }
    };
    // Check the input now, as the driver does, so the error names the input it comes from.
    let (m, diags) = ptx_front::parser::parse(&text);
    if diags.iter().any(|d| d.is_error()) {
        return Err((ptx_jit::one_line(&diags, name, &text), CUDA_ERROR_INVALID_PTX));
    }
    let target = target_of(&m);
    drop(m);
    Ok((text, target))
}

/// One linked PTX text out of several PTX modules (`(name, text)`).
pub fn link_ptx(inputs: &[(String, String)]) -> Result<String, String> {
    link(inputs, true)
}

/// [`link_ptx`], or, unless `whole`, a relocatable link (nvJitLink's `-r`), whose calls may stay
/// undefined for a later link.
pub fn link(inputs: &[(String, String)], whole: bool) -> Result<String, String> {
    if inputs.is_empty() {
        return Err("nothing to link".into());
    }
    let first: Vec<_> = inputs.iter().map(|(_, t)| ptx_front::parser::parse(t)).collect();
    for ((name, text), (_, diags)) in inputs.iter().zip(&first) {
        if diags.iter().any(|d| d.is_error()) {
            return Err(ptx_jit::one_line(diags, name, text));
        }
    }
    let renames = local_renames(&first);
    if renames.iter().all(Vec::is_empty) {
        let texts: Vec<&str> = inputs.iter().map(|(_, t)| t.as_str()).collect();
        return link_parsed(inputs, &texts, &first, whole);
    }
    // Some internal names had to be renamed: the inputs are parsed again as renamed.
    let texts: Vec<String> = inputs
        .iter()
        .zip(&renames)
        .map(|((_, text), renames)| rename(text, renames))
        .collect();
    drop(first);
    let parsed: Vec<_> = texts.iter().map(|t| ptx_front::parser::parse(t)).collect();
    // A renamed name that is also an opcode (`.func max`) would have renamed instructions too.
    for (((name, _), text), (_, diags)) in inputs.iter().zip(&texts).zip(&parsed) {
        if diags.iter().any(|d| d.is_error()) {
            return Err(format!(
                "cannot keep the internal names of {name} apart from another input's: {}",
                ptx_jit::one_line(diags, name, text)
            ));
        }
    }
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    link_parsed(inputs, &texts, &parsed, whole)
}

/// [`link`] of the inputs' `texts`, parsed.
fn link_parsed(
    inputs: &[(String, String)],
    texts: &[&str],
    parsed: &[(ptx_front::ast::Module<'_>, Vec<ptx_front::Diagnostic>)],
    whole: bool,
) -> Result<String, String> {
    let defines = |f: &Function| f.body.is_some();
    // Names defined with external linkage by some input, strong first, and each common symbol's
    // largest declaration: (bytes, where, input), the first of that size.
    let mut strong = std::collections::HashSet::new();
    let mut any_def = std::collections::HashSet::new();
    let mut largest_common: std::collections::HashMap<&str, (u64, u32, usize)> = Default::default();
    for (input, (m, _)) in parsed.iter().enumerate() {
        for item in &m.items {
            match item {
                Item::Function(f) if defines(f) => {
                    if f.linkage == Some(Linkage::Visible) && !strong.insert(f.name.text) {
                        return Err(format!("duplicate definition of '{}'", f.name.text));
                    }
                    any_def.insert(f.name.text);
                }
                Item::Directive(ptx_front::ast::Directive::Alias { alias, .. }) => {
                    any_def.insert(alias.text);
                }
                Item::Var(v) if v.linkage != Some(Linkage::Extern) => {
                    if v.linkage == Some(Linkage::Visible) && !strong.insert(v.name.text) {
                        return Err(format!("duplicate definition of '{}'", v.name.text));
                    }
                    if v.linkage == Some(Linkage::Common) {
                        let here = (v.size_bytes(), v.span.start, input);
                        let best = largest_common.entry(v.name.text).or_insert(here);
                        if here.0 > best.0 {
                            *best = here;
                        }
                    }
                    any_def.insert(v.name.text);
                }
                _ => {}
            }
        }
    }
    // The header: the highest PTX version and target of the inputs.
    let (mut version, mut target, mut sm) = ((0, 0), String::new(), 0u32);
    for (m, _) in parsed {
        for d in &m.directives {
            match d {
                ModuleDirective::Version { major, minor, .. } => version = version.max((*major, *minor)),
                ModuleDirective::Target { targets, .. } => {
                    let n = targets.first().and_then(|t| sm_number(t.text)).unwrap_or(0);
                    if target.is_empty() || n > sm {
                        sm = n;
                        target = targets.iter().map(|t| t.text).collect::<Vec<_>>().join(", ");
                    }
                }
                ModuleDirective::AddressSize { .. } => {}
            }
        }
    }
    // A function some input uses that no input defines, and not one of the device runtime's, is an
    // undefined reference, as NVIDIA's linkers report it (the rule the driver's load applies too).
    for (m, _) in parsed.iter().filter(|_| whole) {
        if let Some(u) = ptx_jit::undefined_uses(m, |n| any_def.contains(n)).first() {
            return Err(match u.user {
                Some(f) => format!("undefined reference to '{}' in '{f}'", u.name.text),
                None => format!("undefined reference to '{}'", u.name.text),
            });
        }
    }
    // Functions defined without a result: a C function returning `void` that an input declares with
    // one (numba's C-ABI device functions do) is called with that input's result dropped.
    let void: std::collections::HashSet<&str> = parsed
        .iter()
        .flat_map(|(m, _)| &m.items)
        .filter_map(|item| match item {
            // A weak definition that gives way to a strong one does not count.
            Item::Function(f)
                if defines(f)
                    && f.returns.is_empty()
                    && !(f.linkage == Some(Linkage::Weak) && strong.contains(f.name.text)) =>
            {
                Some(f.name.text)
            }
            _ => None,
        })
        .collect();
    let mut out = format!(
        ".version {}.{}\n.target {target}\n.address_size 64\n",
        version.0, version.1
    );
    let mut emitted = std::collections::HashSet::new();
    for (input, (((name, _), text), (m, _))) in inputs.iter().zip(texts).zip(parsed).enumerate() {
        out.push_str(&format!("\n// ---- {name}\n"));
        for item in &m.items {
            let keep = match item {
                // A declaration of something an input defines: the definition serves.
                Item::Function(f) if !defines(f) => !any_def.contains(f.name.text) && emitted.insert(f.name.text),
                // A weak definition gives way to a strong one, and to an earlier weak one.
                Item::Function(f) if f.linkage == Some(Linkage::Weak) => {
                    !strong.contains(f.name.text) && emitted.insert(f.name.text)
                }
                Item::Function(f) => {
                    emitted.insert(f.name.text);
                    true
                }
                Item::Var(v) if v.linkage == Some(Linkage::Extern) => {
                    !any_def.contains(v.name.text) && emitted.insert(v.name.text)
                }
                // Weak variables (header-defined constants, such as libcu++'s, that every input
                // carries) give way to a strong definition, and to an earlier weak one.
                Item::Var(v) if v.linkage == Some(Linkage::Weak) => {
                    !strong.contains(v.name.text) && emitted.insert(v.name.text)
                }
                // A common symbol resolves to its largest declaration (the manual's rule), the
                // first of that size.
                Item::Var(v) if v.linkage == Some(Linkage::Common) => {
                    !strong.contains(v.name.text)
                        && largest_common.get(v.name.text) == Some(&(v.size_bytes(), v.span.start, input))
                        && emitted.insert(v.name.text)
                }
                Item::Var(v) => {
                    emitted.insert(v.name.text);
                    true
                }
                _ => true,
            };
            if keep {
                let span = span_of(item);
                let mut at = span.start;
                // NVIDIA's linker does not compare a declaration with the definition, so such a
                // call's result is left unwritten there; here the call passes none.
                for drop in void_results(item, &void) {
                    out.push_str(&text[at..drop.start]);
                    at = drop.end;
                }
                out.push_str(&text[at..span.end]);
                // A variable's span stops before its `;`.
                if matches!(item, Item::Var(_)) {
                    out.push(';');
                }
                out.push('\n');
            }
        }
    }
    Ok(out)
}

/// The text of each call's result list (with the comma after it) in `item`'s body, where the callee is
/// one of the `void` functions but the call passes results: in source order.
fn void_results(item: &Item, void: &std::collections::HashSet<&str>) -> Vec<std::ops::Range<usize>> {
    use ptx_front::ast::{Operand, Statement};
    let Item::Function(Function { body: Some(body), .. }) = item else {
        return vec![];
    };
    let mut drops = vec![];
    ptx_front::ast::visit(body, &mut |s| {
        if let Statement::Inst(i) = s {
            if let ("call", [results @ Operand::List(..), Operand::Sym { name, .. }, ..]) =
                (i.opcode.text, i.operands.as_slice())
            {
                if void.contains(name.text) {
                    drops.push(results.span().start as usize..name.span.start as usize);
                }
            }
        }
    });
    drops
}

/// Per input, its internal names to rename, each with its new name (none: nothing to rename). A
/// function or variable defined without `.visible`, `.extern`, `.weak` or `.common` belongs to its
/// own input, as NVIDIA's linkers keep it: units of one program each carry their copy of the math library's internal tables and
/// helpers (`__cudart_i2opi_d`, `__internal_trig_reduction_slowpathd`) under the same names. Where an
/// earlier input already uses the name, or another input gives it external linkage, the later
/// input's copy is renamed throughout its text.
fn local_renames<'a>(
    parsed: &[(ptx_front::ast::Module<'a>, Vec<ptx_front::Diagnostic>)],
) -> Vec<Vec<(String, String)>> {
    let internal = |item: &Item<'a>| match item {
        Item::Function(f) if f.linkage.is_none() && f.body.is_some() && f.kind == ptx_front::ast::FnKind::Func => {
            Some(f.name.text)
        }
        Item::Var(v) if v.linkage.is_none() => Some(v.name.text),
        _ => None,
    };
    let mut taken: std::collections::HashSet<&str> = parsed
        .iter()
        .flat_map(|(m, _)| &m.items)
        .filter_map(|item| match item {
            Item::Function(f) if f.linkage.is_some() || f.kind == ptx_front::ast::FnKind::Entry => Some(f.name.text),
            Item::Var(v) if v.linkage.is_some() => Some(v.name.text),
            _ => None,
        })
        .collect();
    let mut all: std::collections::HashSet<String> = parsed
        .iter()
        .flat_map(|(m, _)| &m.items)
        .filter_map(|item| match item {
            Item::Function(f) => Some(f.name.text.to_string()),
            Item::Var(v) => Some(v.name.text.to_string()),
            _ => None,
        })
        .collect();
    parsed
        .iter()
        .enumerate()
        .map(|(input, (m, _))| {
            let mut renames = vec![];
            for name in m.items.iter().filter_map(internal) {
                if taken.insert(name) {
                    continue;
                }
                let mut new = format!("{name}$u{}", input + 1);
                while !all.insert(new.clone()) {
                    new.push('$');
                }
                renames.push((name.to_string(), new));
            }
            renames
        })
        .collect()
}

/// `text` with each identifier named in `renames` replaced by its new name (declarations and uses
/// alike, so the input means what it meant).
fn rename(text: &str, renames: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut at = 0;
    for (tok, span) in ptx_front::lexer::lex(text) {
        let ptx_front::lexer::Tok::Ident(id) = tok else {
            continue;
        };
        if let Some((_, new)) = renames.iter().find(|(old, _)| *old == id) {
            out.push_str(&text[at..span.start as usize]);
            out.push_str(new);
            at = span.end as usize;
        }
    }
    out.push_str(&text[at..]);
    out
}

fn span_of(item: &Item) -> std::ops::Range<usize> {
    match item {
        Item::Function(f) => f.span.range(),
        Item::Var(v) => v.span.range(),
        Item::Directive(d) => d.span().range(),
        Item::Statement(_) => 0..0, // only in fragment mode, never in a parsed module
    }
}

unsafe fn add_input(state: Handle, kind: c_int, data: &[u8], name: &str) -> Result<(), CUresult> {
    let l = LINKS.get(state as usize)?;
    // The error log is written at once, as the driver does, so the caller can read why this input failed.
    let fail = |msg: String, code: CUresult| {
        let mut log = l.log.lock();
        log.error_text = format!("ptx-jit: {name}: {msg}");
        log.finish(false);
        Err(code)
    };
    let kind = Input::of_driver(kind).ok_or(CUDA_ERROR_INVALID_VALUE)?;
    match input_ptx(kind, data, crate::device::sm(), name) {
        Ok((text, _)) => {
            l.inputs.lock().push((name.to_string(), text));
            Ok(())
        }
        Err((msg, code)) => fail(msg, code),
    }
}

unsafe fn input_name<'a>(name: *const c_char) -> &'a str {
    if name.is_null() {
        "<input>"
    } else {
        CStr::from_ptr(name).to_str().unwrap_or("<input>")
    }
}

unsafe fn check_options(n: c_uint, opts: *mut c_int, vals: *mut *mut c_void) -> Result<(), CUresult> {
    // Per-input options are tuning options only; the same check as for the linker's own.
    JitLog::from_options(n, opts, vals).map(|_| ())
}

api! {
    fn cuLinkCreate_v2(n: c_uint, opts: *mut c_int, vals: *mut *mut c_void, state: *mut Handle) {
        init_check()?;
        current_ctx()?;
        if state.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let log = JitLog::from_options(n, opts, vals)?;
        let h = LINKS.insert(LinkState {
            inputs: Default::default(),
            log: parking_lot::Mutex::new(log),
            image: Default::default(),
        });
        *state = h as Handle;
        Ok(())
    }
    fn cuLinkAddData_v2(state: Handle, kind: c_int, data: *mut c_void, size: usize, name: *const c_char, n: c_uint, opts: *mut c_int, vals: *mut *mut c_void) {
        init_check()?;
        if data.is_null() || size == 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        check_options(n, opts, vals)?;
        let bytes = std::slice::from_raw_parts(data as *const u8, size);
        add_input(state, kind, bytes, input_name(name))
    }
    fn cuLinkAddFile_v2(state: Handle, kind: c_int, path: *const c_char, n: c_uint, opts: *mut c_int, vals: *mut *mut c_void) {
        init_check()?;
        if path.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        check_options(n, opts, vals)?;
        let path = CStr::from_ptr(path).to_str().map_err(|_| CUDA_ERROR_FILE_NOT_FOUND)?;
        LINKS.get(state as usize)?;
        let data = std::fs::read(path).map_err(|_| CUDA_ERROR_FILE_NOT_FOUND)?;
        add_input(state, kind, &data, path)
    }
    fn cuLinkComplete(state: Handle, image: *mut *mut c_void, size: *mut usize) {
        init_check()?;
        if image.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let l = LINKS.get(state as usize)?;
        let inputs = l.inputs.lock().clone();
        let mut log = l.log.lock();
        let t = std::time::Instant::now();
        let r = link_ptx(&inputs).map_err(|e| {
            log.error_text = format!("ptx-jit: link failed: {e}");
            CUDA_ERROR_INVALID_PTX
        });
        // Check that the result compiles, so that a bad link fails here, with the log filled in.
        let r = r.and_then(|text| {
            let mut probe = JitLog::default();
            probe.check = crate::module::WholeCheck::All;
            let m = load_ptx(0, &text, ptx_jit::Retain::Copy, &mut probe).inspect_err(|_| log.error_text = probe.error_text.clone())?;
            let _ = MODULES.remove(m).map(|_| ());
            MEMORY.lock().retain(|_, a| !matches!(a.kind, MemKind::ModuleVar(h) if h == m));
            Ok(text)
        });
        log.wall_ms = t.elapsed().as_secs_f64() * 1e3;
        if r.is_ok() {
            log.info_text = format!("ptx-jit: linked {} PTX input(s) in {:.1} ms", inputs.len(), log.wall_ms);
        }
        log.finish(r.is_ok());
        let mut bytes = r?.into_bytes();
        bytes.push(0);
        let mut img = l.image.lock();
        *img = Some(bytes);
        let b = img.as_ref().unwrap();
        *image = b.as_ptr() as *mut c_void;
        if !size.is_null() {
            *size = b.len();
        }
        Ok(())
    }
    fn cuLinkDestroy(state: Handle) {
        init_check()?;
        LINKS.remove(state as usize)?;
        Ok(())
    }
    // The names before CUDA 6.5 have the same ABI.
    fn cuLinkCreate(n: c_uint, opts: *mut c_int, vals: *mut *mut c_void, state: *mut Handle) {
        status(cuLinkCreate_v2(n, opts, vals, state))
    }
    fn cuLinkAddData(state: Handle, kind: c_int, data: *mut c_void, size: usize, name: *const c_char, n: c_uint, opts: *mut c_int, vals: *mut *mut c_void) {
        status(cuLinkAddData_v2(state, kind, data, size, name, n, opts, vals))
    }
    fn cuLinkAddFile(state: Handle, kind: c_int, path: *const c_char, n: c_uint, opts: *mut c_int, vals: *mut *mut c_void) {
        status(cuLinkAddFile_v2(state, kind, path, n, opts, vals))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CALLER: &str = ".version 8.0\n.target sm_75\n.address_size 64\n\
        .extern .func (.param .b32 r) twice (.param .b32 x);\n\
        .visible .entry k(.param .u64 p) {\n .reg .b32 %r<3>; .reg .b64 %rd<2>;\n ld.param.u64 %rd1, [p];\n\
        ld.global.u32 %r1, [%rd1];\n { .param .b32 a; .param .b32 r; st.param.b32 [a], %r1;\n\
        call (r), twice, (a); ld.param.b32 %r2, [r]; }\n st.global.u32 [%rd1], %r2;\n ret;\n}\n";
    const CALLEE: &str = ".version 8.5\n.target sm_80\n.address_size 64\n\
        .visible .func (.param .b32 r) twice (.param .b32 x) {\n .reg .b32 %r<3>;\n ld.param.b32 %r1, [x];\n\
        add.s32 %r2, %r1, %r1;\n st.param.b32 [r], %r2;\n ret;\n}\n";

    #[test]
    fn nvidias_device_runtime_is_known_by_its_member() {
        // An archive as GNU ar writes it: a symbol table, the long names, then the member.
        let member = |name: &str, body: &[u8]| {
            let mut m = format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n", 0, 0, 0, 644, body.len()).into_bytes();
            m.extend_from_slice(body);
            if body.len() % 2 == 1 {
                m.push(b'\n');
            }
            m
        };
        let archive = |long: &str| {
            let mut a = b"!<arch>\n".to_vec();
            a.extend(member("/", &[0, 0, 0, 0]));
            a.extend(member("//", format!("{long}/\n").as_bytes()));
            a.extend(member("/0", b"\x7fELF"));
            a
        };
        assert!(is_device_runtime(&archive("cuda_device_runtime.o")));
        assert!(!is_device_runtime(&archive("my_device_library.o")));
        assert!(!is_device_runtime(b"!<arch>\n"));
        assert!(!is_device_runtime(b"\x7fELF"));
    }

    #[test]
    fn resolves_declarations_against_definitions() {
        let out = link_ptx(&[("a.ptx".into(), CALLER.into()), ("b.ptx".into(), CALLEE.into())]).unwrap();
        assert!(out.starts_with(".version 8.5\n.target sm_80\n"), "{out}");
        assert!(!out.contains(".extern .func"), "{out}");
        assert_eq!(out.matches("twice (.param .b32 x)").count(), 1, "{out}");
        ptx_jit::load(&out).expect("the linked module compiles");
    }

    #[test]
    fn a_void_function_declared_with_a_result_is_called_without_one() {
        // numba's C-ABI device functions: the caller declares a result the C definition lacks.
        let caller = CALLER.replace("twice", "store");
        let callee = ".version 8.5\n.target sm_80\n.address_size 64\n\
            .visible .func store (.param .b32 x) {\n .reg .b32 %r<2>;\n ld.param.b32 %r1, [x];\n\
            st.global.u32 [seen], %r1;\n ret;\n}\n.visible .global .u32 seen;\n";
        let out = link_ptx(&[("a.ptx".into(), caller), ("b.ptx".into(), callee.into())]).unwrap();
        assert!(out.contains("call store, (a);"), "{out}");
        let m = ptx_jit::load(&out).expect("the linked module compiles");
        let k = m.kernel("k").expect("prepares");
        let mut word = 21u32;
        let params = (&mut word as *mut u32 as u64).to_le_bytes();
        ptx_jit::launch(k, &ptx_jit::Launch::new([1, 1, 1], [1, 1, 1], 0, &params)).expect("runs");
        let seen = m.globals.iter().find(|g| g.0 == "seen").expect("placed").1;
        assert_eq!(
            unsafe { *(seen as *const u32) },
            21,
            "the function ran with its argument"
        );
    }

    #[test]
    fn the_device_runtime_defines_the_functions_it_is_known_by() {
        let (m, _) = ptx_front::parser::parse(DEVICE_RUNTIME);
        let mut defined: Vec<&str> = m
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Function(f) if f.body.is_some() && f.linkage == Some(Linkage::Visible) => Some(f.name.text),
                _ => None,
            })
            .collect();
        defined.sort();
        assert_eq!(defined, DEVICE_RUNTIME_FUNCTIONS);
    }

    #[test]
    fn internal_names_stay_with_their_input() {
        // Two units of one program, each with its own internal `pick` and `table` under the same
        // names (as each carries the math library's), and a name the first keeps internal while
        // the second defines it for all (`shared`).
        let unit = |n: u32, rest: &str| {
            format!(
                ".version 8.0\n.target sm_80\n.address_size 64\n\
                .global .align 4 .u32 table[2] = {{{n}, {}}};\n\
                .func (.param .b32 r) pick (.param .b32 i)\n;\n\
                .func (.param .b32 r) pick (.param .b32 i) {{\n .reg .b32 %r<3>; .reg .b64 %rd<3>;\n\
                ld.param.b32 %r1, [i];\n mul.wide.u32 %rd1, %r1, 4;\n mov.u64 %rd2, table;\n\
                add.s64 %rd2, %rd2, %rd1;\n ld.global.u32 %r2, [%rd2];\n st.param.b32 [r], %r2;\n ret;\n}}\n{rest}",
                n + 1
            )
        };
        let call = |f: &str| {
            format!(
                "{{ .param .b32 a; .param .b32 r; st.param.b32 [a], %r1;\n call (r), {f}, (a); ld.param.b32 %r2, [r]; }}"
            )
        };
        let first = unit(
            10,
            &format!(
                ".global .u32 shared = 7;\n.extern .func (.param .b32 r) second (.param .b32 i);\n\
                .visible .entry k(.param .u64 p) {{\n .reg .b32 %r<6>; .reg .b64 %rd<2>;\n\
                ld.param.u64 %rd1, [p];\n mov.u32 %r1, 1;\n {}\n mov.u32 %r3, %r2;\n {}\n\
                ld.global.u32 %r4, [shared];\n st.global.u32 [%rd1], %r3;\n st.global.u32 [%rd1+4], %r2;\n\
                st.global.u32 [%rd1+8], %r4;\n ret;\n}}\n",
                call("pick"),
                call("second")
            ),
        );
        let second = unit(
            20,
            &format!(
                ".visible .global .u32 shared = 9;\n\
                .visible .func (.param .b32 r) second (.param .b32 i) {{\n .reg .b32 %r<3>;\n\
                ld.param.b32 %r1, [i];\n {}\n st.param.b32 [r], %r2;\n ret;\n}}\n",
                call("pick")
            ),
        );
        let out = link_ptx(&[("first.ptx".into(), first), ("second.ptx".into(), second)]).unwrap();
        assert!(
            out.contains("call (r), pick$u2, (a);"),
            "the second unit calls its own copy: {out}"
        );
        assert!(out.contains(".global .u32 shared$u1 = 7;"), "{out}");
        let m = ptx_jit::load(&out).expect("the linked module compiles");
        let k = m.kernel("k").expect("prepares");
        let mut words = [0u32; 3];
        let params = (words.as_mut_ptr() as u64).to_le_bytes();
        ptx_jit::launch(k, &ptx_jit::Launch::new([1, 1, 1], [1, 1, 1], 0, &params)).expect("runs");
        assert_eq!(words, [11, 21, 7], "each unit reads its own table and its own `shared`");
    }

    #[test]
    fn duplicate_strong_definitions_are_an_error() {
        let e = link_ptx(&[("b.ptx".into(), CALLEE.into()), ("c.ptx".into(), CALLEE.into())]).unwrap_err();
        assert!(e.contains("duplicate definition of 'twice'"), "{e}");
    }

    #[test]
    fn weak_and_common_variables_are_kept_once_and_give_way_to_a_strong_one() {
        let module = |vars: &str| format!(".version 8.0\n.target sm_80\n.address_size 64\n{vars}\n");
        let a = module(".weak .global .align 4 .u32 order = 3;\n.common .global .align 8 .u64 slot;");
        let b = module(".weak .global .align 4 .u32 order = 3;\n.common .global .align 8 .u64 slot[4];");
        let out = link_ptx(&[("a.ptx".into(), a.clone()), ("b.ptx".into(), b)]).unwrap();
        assert_eq!(out.matches(" order = 3").count(), 1, "{out}");
        assert_eq!(out.matches(" slot").count(), 1, "{out}");
        assert!(out.contains(" slot[4];"), "the largest common declaration wins: {out}");
        let strong = module(".visible .global .align 4 .u32 order = 5;");
        let out = link_ptx(&[("a.ptx".into(), a), ("s.ptx".into(), strong.clone())]).unwrap();
        assert!(out.contains("order = 5") && !out.contains("order = 3"), "{out}");
        ptx_jit::load(&out).expect("the linked module compiles");
        let e = link_ptx(&[("s.ptx".into(), strong.clone()), ("t.ptx".into(), strong)]).unwrap_err();
        assert!(e.contains("duplicate definition of 'order'"), "{e}");
    }

    #[test]
    fn a_call_nothing_defines_is_an_undefined_reference() {
        let e = link_ptx(&[("a.ptx".into(), CALLER.into())]).unwrap_err();
        assert_eq!(e, "undefined reference to 'twice' in 'k'");
        // The device runtime's functions need no definition.
        let printf = CALLER.replace("twice", "vprintf");
        link_ptx(&[("p.ptx".into(), printf)]).expect("vprintf is the runtime's");
    }

    #[test]
    fn broken_input_names_the_input() {
        let e = link_ptx(&[("bad.ptx".into(), ".version 8.0\n.target sm_75\nfoo bar;\n".into())]).unwrap_err();
        assert!(e.contains("bad.ptx"), "{e}");
    }
}
