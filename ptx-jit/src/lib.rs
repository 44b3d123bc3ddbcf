//! ptx-jit: compiles PTX for the host CPU (and runs it with CUDA semantics) or re-emits it through
//! LLVM's NVPTX backend. The CLI and `libcuda.so.1` share this one code path.

// The layers, each using only those above it: the ABI and the presented device (`ptx_llvm::abi`,
// `device`, `memory_map`); the pure-Rust emulation generated code calls (`emu`); the JIT, PTX to host
// code (`jit`); the runtime that launches it (`runtime`); the NVPTX retargeter (`nvptx`); the CLI's
// library parts (`cli`). The crate root wires the runtime's entry points into the JIT
// (`runtime_symbols`).
pub mod cli;
pub mod device;
pub mod emu;
pub mod jit;
pub mod memory_map;
pub mod nvptx;
pub mod runtime;

pub use runtime::device_libs::{reset_heap, set_heap_limit};
pub use runtime::watchdog::{timeout as launch_timeout, Cancel};

pub use jit::host::{warm_up, HostKernel, HostModule, Loading, Retain};
pub use ptx_front::{Code, Diagnostic, Severity};
pub use ptx_llvm::abi::CLUSTER_TABLE;
pub use ptx_llvm::{Exec, KernelInfo, Options};
pub use runtime::{launch, launch_sanitized, Launch, LaunchError};

/// Held (shared) by every use of LLVM outside the JIT's code-generation lock (a kernel's preparation,
/// a module's load, IR for printing, retargeting for NVPTX), and exclusively, with that lock, while
/// the background compiler forks (`jit::host::tier_up`): a child copied while a thread was inside
/// LLVM could find LLVM's own locks held for ever. Taken before the code-generation lock, never
/// after it.
pub(crate) static LLVM_USE: parking_lot::RwLock<()> = parking_lot::RwLock::new(());

pub use ptx_llvm::builtin::DEVICE_FUNCTIONS;

/// The runtime's entry points that generated code calls, by name: the crate root hands them to the JIT
/// (`host`), so the JIT does not depend on the runtime's modules.
pub(crate) fn runtime_symbols() -> [(&'static str, u64); 11] {
    [
        // NVIDIA's device runtime, in place of the C library's functions of the same names.
        (
            "vprintf",
            crate::runtime::device_libs::ptxjit_vprintf as *const () as u64,
        ),
        (
            "__assertfail",
            crate::runtime::device_libs::ptxjit_assertfail as *const () as u64,
        ),
        ("malloc", crate::runtime::device_libs::ptxjit_malloc as *const () as u64),
        ("free", crate::runtime::device_libs::ptxjit_free as *const () as u64),
        (
            ptx_llvm::builtin::MEM,
            crate::runtime::memops::ptxjit_mem as *const () as u64,
        ),
        (
            ptx_llvm::builtin::CHECK,
            crate::runtime::checked::ptxjit_check as *const () as u64,
        ),
        (
            ptx_llvm::builtin::GLOBALTIMER,
            crate::emu::builtins::ptxjit_globaltimer as *const () as u64,
        ),
        (
            ptx_llvm::builtin::FP,
            crate::emu::builtins::ptxjit_fp as *const () as u64,
        ),
        (
            ptx_llvm::builtin::INT,
            crate::emu::builtins::ptxjit_int as *const () as u64,
        ),
        (
            ptx_llvm::builtin::VIDEO,
            crate::emu::video::ptxjit_video as *const () as u64,
        ),
        (
            ptx_llvm::builtin::TEX,
            crate::runtime::texture::ptxjit_tex as *const () as u64,
        ),
    ]
}

/// Parses and checks; any error-severity diagnostic fails. Warnings are returned with the module.
pub fn front(src: &str) -> Result<(ptx_front::ast::Module<'_>, Vec<Diagnostic>), Vec<Diagnostic>> {
    let (m, diags) = ptx_front::parse_and_check(src);
    if diags.iter().any(Diagnostic::is_error) {
        Err(diags)
    } else {
        Ok((m, diags))
    }
}

/// [`front`], and every function the module uses but does not define must be one the device runtime
/// provides (P0404): what NVIDIA's driver reports when a module is loaded, lazily or not (an H200
/// fails `cuModuleLoadData` for a broken kernel, a broken function no kernel calls and an undefined
/// callee alike). Warnings are returned.
pub fn check_whole(src: &str) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    let (m, diags) = front(src)?;
    let undefined: Vec<Diagnostic> = undefined_uses(&m, |_| false)
        .iter()
        .map(|u| ptx_llvm::undefined_function(&u.name))
        .collect();
    if undefined.is_empty() {
        Ok(diags)
    } else {
        Err(undefined)
    }
}

/// A use of a function that a module declares without a body and does not define (nor make through
/// `.alias`), and that the device runtime does not provide: the first for each such function.
pub struct UndefinedUse<'a> {
    pub name: ptx_front::ast::Name<'a>,
    /// The function whose body uses it; `None` for a variable's initializer.
    pub user: Option<&'a str>,
}

/// The uses in `m` of functions declared without a body, defined neither in `m` nor where `elsewhere`
/// says (another module a linker joins), and not the device runtime's: a `call`'s callee, the
/// address a `mov` or `cvta` takes, a variable's initializer. The one rule the driver's load, the
/// linkers and nvJitLink apply.
pub fn undefined_uses<'m, 'a>(
    m: &'m ptx_front::ast::Module<'a>,
    elsewhere: impl Fn(&str) -> bool,
) -> Vec<UndefinedUse<'a>> {
    use ptx_front::ast::{visit, Directive, Item, Operand, Statement, VarDecl};
    let functions = || {
        m.items.iter().filter_map(|i| match i {
            Item::Function(f) => Some(f),
            _ => None,
        })
    };
    let aliases: Vec<&str> = m
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Directive(Directive::Alias { alias, .. }) => Some(alias.text),
            _ => None,
        })
        .collect();
    let defined: std::collections::HashSet<&str> =
        functions().filter(|f| f.body.is_some()).map(|f| f.name.text).collect();
    let mut missing: std::collections::HashSet<&str> = functions()
        .filter(|f| f.body.is_none())
        .map(|f| f.name.text)
        .filter(|n| !defined.contains(n) && !aliases.contains(n) && !DEVICE_FUNCTIONS.contains(n) && !elsewhere(n))
        .collect();
    let mut uses = vec![];
    let mut check = |n: &ptx_front::ast::Name<'a>, user: Option<&'a str>| {
        if missing.remove(n.text) {
            uses.push(UndefinedUse { name: *n, user });
        }
    };
    fn initializer<'a>(
        v: &VarDecl<'a>,
        user: Option<&'a str>,
        check: &mut impl FnMut(&ptx_front::ast::Name<'a>, Option<&'a str>),
    ) {
        if let Some(init) = &v.init {
            init.names(&mut |n| check(n, user));
        }
    }
    for i in &m.items {
        if let Item::Var(v) = i {
            initializer(v, None, &mut check);
        }
    }
    for f in functions() {
        let Some(body) = &f.body else { continue };
        let user = Some(f.name.text);
        visit(body, &mut |st| match st {
            Statement::Var(v) => initializer(v, user, &mut check),
            Statement::Inst(i) => {
                let named = match (i.opcode.text, i.operands.as_slice()) {
                    // call (results), f, (arguments): the callee follows the optional result list.
                    ("call", [Operand::List(..), Operand::Sym { name, .. }, ..])
                    | ("call", [Operand::Sym { name, .. }, ..]) => Some(name),
                    ("mov" | "cvta", [_, Operand::Sym { name, .. }, ..]) => Some(name),
                    _ => None,
                };
                if let Some(n) = named {
                    check(n, user);
                }
            }
            _ => {}
        });
    }
    uses
}

/// PTX text to host code, ready to launch: the whole module checked and every kernel prepared now.
pub fn load(src: &str) -> Result<HostModule, Vec<Diagnostic>> {
    load_with(src, false)
}

/// [`load`], optionally in checked mode: out-of-bounds accesses fail the launch with
/// [`LaunchError::IllegalAddress`] instead of touching memory. Module variables are registered as
/// valid memory while the module lives.
pub fn load_with(src: &str, checked: bool) -> Result<HostModule, Vec<Diagnostic>> {
    load_options(
        src,
        Options {
            checked,
            ..jit::host::options()
        },
    )
}

/// [`load`] with explicit lowering options (e.g. to run a kernel on fibers rather than as regions).
pub fn load_options(src: &str, options: Options) -> Result<HostModule, Vec<Diagnostic>> {
    load_as(src, options, Loading::Eager)
}

/// Loads a module lazily or eagerly ([`Loading`]). An eager load checks the whole text first
/// ([`check_whole`]), so it fails on an error anywhere, also in a function no kernel reaches; a lazy
/// load reports a kernel's errors when the kernel is first asked for ([`HostModule::prepare`]).
pub fn load_as(src: &str, options: Options, loading: Loading) -> Result<HostModule, Vec<Diagnostic>> {
    load_retained(src, options, loading, Retain::Copy)
}

/// [`load_as`], keeping the text as `retain` says.
pub fn load_retained(
    src: &str,
    options: Options,
    loading: Loading,
    retain: Retain,
) -> Result<HostModule, Vec<Diagnostic>> {
    let start = std::time::Instant::now();
    if loading == Loading::Eager {
        check_whole(src)?;
    }
    let m = jit::host::load_text(src, retain, true, options, loading)?;
    runtime::profile::module_loaded(m.id(), src.len(), m.kernel_names().count(), start.elapsed());
    Ok(m)
}

/// Whether `PTXJIT_CHECKED` asks for checked mode (any value but empty or `0`), or `PTXJIT_SANITIZE`
/// for a sanitizer (which sees accesses through checked mode's calls).
pub fn checked_from_env() -> bool {
    std::env::var("PTXJIT_CHECKED").is_ok_and(|v| !v.is_empty() && v != "0")
        || runtime::sanitize::Tools::from_env().any()
}

/// PTX text to PTX for `arch` (validated first: LLVM aborts on impossible pairs).
pub fn retarget(src: &str, arch: &nvptx::arch::Arch, opt: u8, emit: nvptx::Emit) -> Result<String, Vec<Diagnostic>> {
    let (m, _) = front(src)?;
    nvptx::emit(&m, arch, opt, emit)
}

/// Renders diagnostics one per line, for logs (the CUDA JIT error log, panics in tests).
pub fn one_line(diags: &[Diagnostic], file: &str, src: &str) -> String {
    diags
        .iter()
        .map(|d| d.one_line(file, src))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod device_function_tests {
    use super::*;

    #[test]
    fn a_whole_check_finds_functions_no_module_defines() {
        let module = |decls: &str, call: &str| {
            format!(
                ".version 7.0\n.target sm_75\n.address_size 64\n{decls}\n\
                 .visible .entry k() {{\n {call}\n ret;\n}}\n"
            )
        };
        let codes = |src: &str| match check_whole(src) {
            Ok(_) => vec![],
            Err(d) => d.iter().map(|d| d.code).collect::<Vec<_>>(),
        };
        // Declared, called, defined nowhere: P0404, once however often it is called.
        assert_eq!(codes(&module(".extern .func f();", "call f; call f;")), [Code::P0404]);
        // Declared and defined later in the module; the device runtime's; declared, never used.
        assert!(codes(&module(".func f();\n.func f() { ret; }", "call f;")).is_empty());
        let printf = ".extern .func (.param .b32 r) vprintf (.param .b64 a, .param .b64 b);";
        let use_printf = "{ .param .b64 a; .param .b64 b; .param .b32 r; st.param.b64 [a], 0; st.param.b64 [b], 0;\n \
                          call (r), vprintf, (a, b); }";
        assert!(codes(&module(printf, use_printf)).is_empty());
        assert!(codes(&module(".extern .func g();", "")).is_empty());
        // Its address taken by a `mov` or held by a variable's initializer.
        assert_eq!(
            codes(&module(".extern .func f();", ".reg .b64 %rd1;\n mov.u64 %rd1, f;")),
            [Code::P0404]
        );
        assert_eq!(
            codes(&module(".extern .func f();\n.global .u64 fp = f;", "")),
            [Code::P0404]
        );
    }

    #[test]
    fn device_functions_are_bound() {
        let bound: Vec<&str> = runtime_symbols().iter().map(|(n, _)| *n).collect();
        assert!(DEVICE_FUNCTIONS.iter().all(|f| bound.contains(f)), "{bound:?}");
    }
}
