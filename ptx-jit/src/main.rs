//! The `ptx-jit` command line; the subcommands live in `ptx_jit::cli`.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Like other Unix tools, stop quietly when the reader of our output goes away (`| head`).
    // SAFETY: restoring the default disposition of a signal at start-up, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = ptx_jit::cli::Cli::parse();
    match ptx_jit::cli::run(cli.cmd) {
        Ok(c) | Err(c) => c,
    }
}
