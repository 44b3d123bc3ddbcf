//! ptx-jit: compiles PTX for the host CPU (and runs it with CUDA semantics) or re-emits it through
//! LLVM's NVPTX backend. The CLI and `libcuda.so.1` share this one code path.

mod addressing;
pub mod arch;
pub mod args;
pub mod bench;
mod builtins;
pub mod checked;
pub mod coverage;
mod device_libs;
mod fibers;
mod guards;
pub mod host;
mod matrix;
mod memops;
pub mod mma;
mod nan;
pub mod nvptx;
mod regions;
pub mod runtime;
pub mod sanitize;
pub mod trap;
mod video;
mod watchdog;
pub use watchdog::{timeout as launch_timeout, Cancel};
pub mod wmma;

pub use host::{warm_up, HostKernel, HostModule};
pub use ptx_front::{Code, Diagnostic, Severity};
pub use ptx_llvm::{Exec, KernelInfo, Options};
pub use runtime::{launch, launch_sanitized, Launch, LaunchError};

/// Parses and checks; any error-severity diagnostic fails. Warnings are returned with the module.
pub fn front(src: &str) -> Result<(ptx_front::ast::Module<'_>, Vec<Diagnostic>), Vec<Diagnostic>> {
    let (m, diags) = ptx_front::parse_and_check(src);
    if diags.iter().any(Diagnostic::is_error) {
        Err(diags)
    } else {
        Ok((m, diags))
    }
}

/// PTX text to host code, ready to launch.
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
            ..host::options()
        },
    )
}

/// [`load`] with explicit lowering options (e.g. to run a kernel on fibers rather than as regions).
pub fn load_options(src: &str, options: Options) -> Result<HostModule, Vec<Diagnostic>> {
    let (m, warnings) = front(src)?;
    let mut module = host::compile_with(&m, Some(src), options)?;
    // initcheck's registers: the linter's reads before any write, inside each kernel's body.
    for k in &mut module.kernels {
        let Some(span) = m.items.iter().find_map(|i| match i {
            ptx_front::ast::Item::Function(f) if f.name.text == k.info.name => Some(f.span),
            _ => None,
        }) else {
            continue;
        };
        k.unwritten_registers = warnings
            .iter()
            .filter(|d| d.code == Code::P0504 && span.start <= d.span.start && d.span.end <= span.end)
            .map(|d| {
                (
                    d.span.start,
                    src[d.span.start as usize..d.span.end as usize].to_string(),
                )
            })
            .collect();
    }
    Ok(module)
}

/// Whether `PTXJIT_CHECKED` asks for checked mode (any value but empty or `0`), or `PTXJIT_SANITIZE`
/// for a sanitizer (which sees accesses through checked mode's calls).
pub fn checked_from_env() -> bool {
    std::env::var("PTXJIT_CHECKED").is_ok_and(|v| !v.is_empty() && v != "0") || sanitize::Tools::from_env().any()
}

/// PTX text to PTX for `arch` (validated first: LLVM aborts on impossible pairs).
pub fn retarget(src: &str, arch: &arch::Arch, opt: u8, emit: nvptx::Emit) -> Result<String, Vec<Diagnostic>> {
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
