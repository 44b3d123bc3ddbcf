//! The command line (`ptx-jit`): one module per subcommand, each with its arguments and one function
//! that runs it; `main.rs` only parses and dispatches. `args` (kernel argument forms) is shared with
//! the tests.

pub mod args;
pub mod bench;
pub mod compile;
pub mod coverage;
pub mod explain;
pub mod fmt;
pub mod lint;
pub mod run;
pub mod sanitize;

use crate::nvptx::{self, arch};
use crate::Diagnostic;
use args::{Arg, ElemExt};
use clap::{Parser, Subcommand};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "ptx-jit", version, about = "Lint, run and retarget NVIDIA PTX")]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Check PTX files and report every problem with rich diagnostics.
    Lint(lint::Lint),
    /// Print PTX in canonical form (one statement per line, exact float literals); parsing the output
    /// gives the same syntax tree.
    Fmt(fmt::Fmt),
    /// Re-emit PTX through LLVM's NVPTX backend for a target (or print the LLVM IR).
    Compile(compile::Compile),
    /// Run a kernel on the CPU and print its buffers afterwards.
    Run(run::Run),
    /// Run an unmodified CUDA program on ptx-jit's libcuda.so.1 with sanitizers on, like
    /// compute-sanitizer: findings go to stderr (and, with --log, to a JSON file); exit status 1 if
    /// anything was found, else the program's own.
    Sanitize(sanitize::Sanitize),
    /// Measure compile latency (beside ptxas) and front-end throughput.
    Bench(bench::Bench),
    /// For every instruction section of the PTX ISA 8.5 manual: how many forms of the ISA table parse,
    /// check, lower for the host and lower for NVPTX (measured by compiling each form).
    Coverage(coverage::Coverage),
    /// Explain a diagnostic code (P0201) or describe an instruction (add).
    Explain(explain::Explain),
}

/// Runs a subcommand: `Ok` with its exit status, or `Err` with the status of a failure it reported.
pub fn run(cmd: Cmd) -> Result<ExitCode, ExitCode> {
    match cmd {
        Cmd::Lint(a) => lint::lint(a),
        Cmd::Fmt(a) => fmt::fmt(a),
        Cmd::Compile(a) => compile::compile(a),
        Cmd::Run(a) => run::run(a),
        Cmd::Sanitize(a) => sanitize::sanitize(a),
        Cmd::Bench(a) => bench::run(a),
        Cmd::Coverage(a) => coverage::run(a),
        Cmd::Explain(a) => explain::explain(a),
    }
}

/// A file's text, or why it has none: an I/O error, or the place of its first byte that is not UTF-8.
pub(crate) fn read_text(p: &PathBuf) -> Result<String, String> {
    let bytes = std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |k| k + 1);
        // The valid prefix is UTF-8, so its characters can be counted.
        let column = String::from_utf8_lossy(&valid[line_start..]).chars().count() + 1;
        let byte = e.as_bytes()[valid.len()];
        format!(
            "cannot read {}: not UTF-8 text (byte 0x{byte:02X} at line {line}, column {column})",
            p.display()
        )
    })
}

pub(crate) fn read(p: &PathBuf) -> Result<String, ExitCode> {
    read_text(p).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    })
}

/// The `.ptx` files of directories (sorted) and the files named.
pub(crate) fn ptx_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ExitCode> {
    let mut files = vec![];
    for p in paths {
        if p.is_dir() {
            let mut v: Vec<_> = std::fs::read_dir(p)
                .map_err(|e| {
                    eprintln!("error: cannot read {}: {e}", p.display());
                    ExitCode::from(2)
                })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
                .collect();
            v.sort();
            files.extend(v);
        } else {
            files.push(p.clone());
        }
    }
    Ok(files)
}

pub(crate) fn print_diags(diags: &[Diagnostic], file: &str, src: &str) {
    let color = std::io::stderr().is_terminal();
    Diagnostic::render_each(diags, file, src, color, |r| eprint!("{r}"));
}

pub(crate) fn dims(s: &str) -> Result<[u32; 3], String> {
    let v: Vec<u32> = s
        .split(',')
        .map(|x| x.trim().parse::<u32>().map_err(|_| format!("`{s}` is not X[,Y[,Z]]")))
        .collect::<Result<_, _>>()?;
    if v.is_empty() || v.len() > 3 {
        return Err(format!("`{s}` is not X[,Y[,Z]]"));
    }
    Ok([v[0], *v.get(1).unwrap_or(&1), *v.get(2).unwrap_or(&1)])
}

/// `LD_LIBRARY_PATH` with the directory of the libcuda.so.1 beside this binary first, so that an
/// unmodified program started with it runs on ptx-jit.
pub(crate) fn our_library_path() -> Result<std::ffi::OsString, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find ptx-jit's own path: {e}"))?;
    let dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    if !dir.join("libcuda.so.1").exists() {
        return Err(format!("no libcuda.so.1 beside {} (run `make build`)", exe.display()));
    }
    let mut path = dir.into_os_string();
    if let Some(p) = std::env::var_os("LD_LIBRARY_PATH").filter(|p| !p.is_empty()) {
        path.push(":");
        path.push(p);
    }
    Ok(path)
}
