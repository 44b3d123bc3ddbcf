//! `ptx-jit sanitize -- PROGRAM ARGS…`: an unmodified CUDA program on our libcuda.so.1 with sanitizers on.

use super::*;

/// The arguments of `ptx-jit sanitize`.
#[derive(clap::Args)]
pub struct Sanitize {
    /// memcheck, racecheck (racecheck=all), initcheck, synccheck or all, comma-separated.
    #[arg(long, default_value = "all")]
    pub tools: String,
    /// Also write every finding as one JSON object per line to this file.
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// The program and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// `ptx-jit sanitize -- PROGRAM ARGS…`: the program runs on the libcuda.so.1 beside this binary,
/// with `PTXJIT_SANITIZE` and a JSON log whose lines are the findings.
pub fn sanitize(a: Sanitize) -> Result<ExitCode, ExitCode> {
    let Sanitize { tools, log, command } = a;
    let tools = tools.as_str();
    let usage = |e: String| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    };
    crate::runtime::sanitize::Tools::parse(tools).map_err(usage)?;
    let library_path = our_library_path().map_err(usage)?;
    let temp = std::env::temp_dir().join(format!("ptx-jit-sanitize-{}.jsonl", std::process::id()));
    let log_path = log.clone().unwrap_or_else(|| temp.clone());
    let _ = std::fs::remove_file(&log_path);
    let status = std::process::Command::new(&command[0])
        .args(&command[1..])
        .env("LD_LIBRARY_PATH", library_path)
        .env("PTXJIT_SANITIZE", tools)
        .env("PTXJIT_SANITIZE_LOG", &log_path)
        .status()
        .map_err(|e| usage(format!("cannot run `{}`: {e}", command[0])))?;
    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
    let found = text.lines().filter(|l| l.contains("\"severity\":\"error\"")).count();
    let warnings = text.lines().count() - found;
    if log.is_none() {
        let _ = std::fs::remove_file(&temp);
    }
    eprintln!("ptx-jit sanitize: {found} error(s), {warnings} warning(s) ({tools})");
    if found > 0 {
        return Err(ExitCode::from(1));
    }
    match status.code() {
        Some(0) => Ok(ExitCode::SUCCESS),
        Some(c) => Err(ExitCode::from(c.clamp(1, 255) as u8)),
        None => Err(ExitCode::from(1)),
    }
}
