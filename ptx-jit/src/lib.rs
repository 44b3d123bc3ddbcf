//! ptx-jit: compiles PTX for the host CPU (and runs it with CUDA semantics) or re-emits it through
//! LLVM's NVPTX backend. The CLI and `libcuda.so.1` share this one code path.

pub mod arch;
pub mod args;
pub mod bench;
pub mod coverage;
mod fibers;
pub mod host;
pub mod nvptx;
pub mod runtime;

pub use host::{HostKernel, HostModule};
pub use ptx_front::{Code, Diagnostic, Severity};
pub use ptx_llvm::KernelInfo;
pub use runtime::{launch, Launch, LaunchError};

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
    let (m, _) = front(src)?;
    host::compile(&m)
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
