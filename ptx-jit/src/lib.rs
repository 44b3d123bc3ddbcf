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
pub use ptx_llvm::{Exec, KernelInfo, Options};
pub use runtime::{launch, launch_sanitized, Launch, LaunchError};

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

/// Loads a module lazily or eagerly ([`Loading`]). An eager load checks the whole text first, so it
/// fails on an error anywhere, also in a function no kernel reaches; a lazy load reports a kernel's
/// errors when the kernel is first asked for ([`HostModule::prepare`]).
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
    if loading == Loading::Eager {
        front(src)?;
    }
    jit::host::load_text(src, retain, true, options, loading)
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
    fn device_functions_are_bound() {
        let bound: Vec<&str> = runtime_symbols().iter().map(|(n, _)| *n).collect();
        assert!(DEVICE_FUNCTIONS.iter().all(|f| bound.contains(f)), "{bound:?}");
    }
}
