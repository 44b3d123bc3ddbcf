//! `ptx-jit bench program -- CMD ARGS…`: an unmodified CUDA program on our libcuda.so.1, profiled
//! (`PTXJIT_PROFILE`, `crate::runtime::profile`): per kernel its launches, JIT time, run time and
//! share of the program's wall time; per module its load time and disk-cache hits.

use crate::runtime::profile::{KernelRecord, ModuleRecord, Profile};
use std::process::ExitCode;
use std::time::Instant;

/// The arguments of `ptx-jit bench program`.
#[derive(clap::Args)]
pub struct BenchProgram {
    // The CSV has one row per kernel.
    #[command(flatten)]
    pub out: super::Outputs,
    /// The program and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

/// A program's run: its wall time and exit status, and what its processes did with the JIT.
#[derive(serde::Serialize)]
pub struct ProgramRun {
    pub command: Vec<String>,
    pub wall_ms: f64,
    pub exit_code: Option<i32>,
    pub processes: usize,
    pub modules: Vec<ModuleRecord>,
    pub kernels: Vec<KernelRecord>,
}

impl ProgramRun {
    /// Disk-cache hits among module `id`'s kernels: preparations and tiers taken from the cache.
    pub fn cache_hits(&self, id: &str) -> u64 {
        self.kernels
            .iter()
            .filter(|k| k.module == id)
            .map(|k| u64::from(k.prepared_from_cache) + u64::from(k.tiers_from_cache))
            .sum()
    }

    /// A kernel's name with its module's position among the loads when two modules share a name.
    pub fn label(&self, k: &KernelRecord) -> String {
        let twins = self.kernels.iter().filter(|o| o.name == k.name).count();
        match self.modules.iter().position(|m| m.id == k.module) {
            Some(i) if twins > 1 => format!("{} (module {})", k.name, i + 1),
            _ => k.name.clone(),
        }
    }
}

pub fn run(a: BenchProgram) -> Result<ExitCode, ExitCode> {
    let fail = |e: String| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    };
    let library_path = super::super::our_library_path().map_err(fail)?;
    let dir = tempfile::tempdir().map_err(|e| fail(format!("cannot make a temporary directory: {e}")))?;
    let start = Instant::now();
    let status = std::process::Command::new(&a.command[0])
        .args(&a.command[1..])
        .env("LD_LIBRARY_PATH", library_path)
        .env("PTXJIT_PROFILE", dir.path())
        .status()
        .map_err(|e| fail(format!("cannot run `{}`: {e}", a.command[0])))?;
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    let mut run = ProgramRun {
        command: a.command.clone(),
        wall_ms,
        exit_code: status.code(),
        processes: 0,
        modules: vec![],
        kernels: vec![],
    };
    let entries = std::fs::read_dir(dir.path()).map_err(|e| fail(e.to_string()))?;
    for e in entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
    {
        let path = e.path();
        let text = std::fs::read_to_string(&path).map_err(|e| fail(format!("{}: {e}", path.display())))?;
        let p: Profile = serde_json::from_str(&text).map_err(|e| fail(format!("{}: {e}", path.display())))?;
        run.processes += 1;
        run.modules.extend(p.modules);
        run.kernels.extend(p.kernels);
    }
    run.kernels.sort_by(|a, b| b.exec_ms.total_cmp(&a.exec_ms));
    print_table(&run);
    a.out.write(&run, || csv(&run), || super::report::program_page(&run))?;
    match status.code() {
        Some(0) => Ok(ExitCode::SUCCESS),
        Some(c) => Err(ExitCode::from(c.clamp(1, 255) as u8)),
        None => Err(ExitCode::from(1)),
    }
}

fn print_table(r: &ProgramRun) {
    let status = r
        .exit_code
        .map_or("killed by a signal".to_string(), |c| format!("exit {c}"));
    println!(
        "`{}`: {:.1} ms wall, {status}; {} process(es) used the driver",
        r.command.join(" "),
        r.wall_ms,
        r.processes
    );
    if r.processes == 0 {
        println!("(no process loaded ptx-jit's libcuda.so.1)");
        return;
    }
    println!(
        "\n{:<32} {:>9} {:>11} {:>11} {:>7}  cache",
        "kernel", "launches", "JIT ms", "run ms", "share"
    );
    for k in &r.kernels {
        let cache = match (k.prepared_from_cache, k.tiers_from_cache) {
            (false, 0) => String::new(),
            (p, t) => format!("{} tier(s){}", t, if p { ", prepared" } else { "" }),
        };
        println!(
            "{:<32} {:>9} {:>11.3} {:>11.3} {:>6.1}%  {cache}",
            r.label(k),
            k.launches,
            k.jit_ms,
            k.exec_ms,
            100.0 * k.exec_ms / r.wall_ms.max(1e-9)
        );
    }
    let (jit, exec): (f64, f64) = (
        r.kernels.iter().map(|k| k.jit_ms).sum(),
        r.kernels.iter().map(|k| k.exec_ms).sum(),
    );
    println!(
        "{:<32} {:>9} {jit:>11.3} {exec:>11.3} {:>6.1}%",
        "all kernels",
        r.kernels.iter().map(|k| k.launches).sum::<u64>(),
        100.0 * exec / r.wall_ms.max(1e-9)
    );
    println!(
        "\n{:<6} {:>12} {:>8} {:>11}  cache hits",
        "module", "PTX bytes", "kernels", "load ms"
    );
    for (i, m) in r.modules.iter().enumerate() {
        println!(
            "{:<6} {:>12} {:>8} {:>11.3}  {}",
            i + 1,
            m.bytes,
            m.kernels,
            m.load_ms,
            r.cache_hits(&m.id)
        );
    }
}

/// One row per kernel.
fn csv(r: &ProgramRun) -> String {
    let mut out = String::from("kernel,module,launches,failed,threads,jit_ms,exec_ms,share,cache_hits\n");
    for k in &r.kernels {
        let module = r.modules.iter().position(|m| m.id == k.module).map_or(0, |i| i + 1);
        out.push_str(&format!(
            "{},{module},{},{},{},{},{},{},{}\n",
            k.name,
            k.launches,
            k.failed,
            k.threads,
            k.jit_ms,
            k.exec_ms,
            k.exec_ms / r.wall_ms.max(1e-9),
            u64::from(k.prepared_from_cache) + u64::from(k.tiers_from_cache)
        ));
    }
    out
}
