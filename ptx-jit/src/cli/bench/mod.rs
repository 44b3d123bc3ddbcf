//! `ptx-jit bench compile`: per-file latency of retargeting (by phase) next to NVIDIA's ptxas on the
//! same files, single-threaded, as medians over the files; `bench parse`: front-end throughput;
//! `bench load`: lazy against eager module loading; `bench kernel` ([`kernel`]): one kernel's JIT
//! phases, first launch and steady state;
//! `bench program` ([`program`]): an unmodified program's kernels and modules.

mod counters;
pub mod kernel;
pub mod program;
mod progress;
mod report;
pub mod stats;

use super::{ptx_files, read};
use crate::nvptx::{self, Emit, Phases};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// One file's times: the best of `iters` runs of each.
pub struct FileTimes {
    pub file: PathBuf,
    pub arch: String,
    pub parse: Duration,
    pub check: Duration,
    pub phases: Phases,
    /// ptxas on the source file for the same target (`None` when it rejects the file).
    pub ptxas: Option<Duration>,
    /// Peak resident memory while compiling the file (this process's, reset before it), and
    /// ptxas's, in KiB.
    pub peak_kib: u64,
    pub ptxas_peak_kib: Option<u64>,
}

/// Starts a new peak-memory measurement for this process (Linux resets `VmHWM` to the current
/// resident size on writing 5 to `clear_refs`).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The peak resident memory (`VmHWM`, KiB) a `/proc/…/status` file reports.
fn vm_hwm_kib(status: &str) -> Option<u64> {
    let text = std::fs::read_to_string(status).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// This process's peak resident memory since the last [`reset_peak`], in KiB.
fn peak_kib() -> u64 {
    vm_hwm_kib("/proc/self/status").unwrap_or(0)
}

/// Runs `c` to its end: whether it succeeded, and its peak resident memory in KiB. The peak is read
/// from the child's own `VmHWM` while it runs (its memory after `exec` is its own; the rusage of a
/// spawned child would count this process's pages from before the `exec`), every 2 ms.
fn run_measured(c: &mut Command) -> Option<(bool, u64)> {
    let mut child = c
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Some(status) = child.try_wait().ok()? {
            return Some((status.success(), peak));
        }
        peak = peak.max(vm_hwm_kib(&status_file).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(2));
    }
}

impl FileTimes {
    pub fn ours(&self) -> Duration {
        let p = &self.phases;
        self.parse + self.check + p.validate + p.lower + p.optimise + p.codegen + p.recheck
    }
}

/// The `.target` of a PTX text (`sm_90` for `.target sm_90, debug`).
fn target_of(src: &str) -> Option<String> {
    let line = src.lines().find(|l| l.trim_start().starts_with(".target"))?;
    let t = line.trim_start().strip_prefix(".target")?.split(',').next()?.trim();
    Some(t.to_string())
}

/// Times every file; files that do not compile are reported on stderr and skipped.
pub fn compile_latency(
    files: &[PathBuf],
    arch: Option<&str>,
    ptxas: Option<&Path>,
    iters: u32,
    opt: u8,
) -> Vec<FileTimes> {
    let mut out = vec![];
    for f in files {
        let Ok(src) = std::fs::read_to_string(f) else { continue };
        let Some(target) = arch.map(str::to_string).or_else(|| target_of(&src)) else {
            continue;
        };
        let Ok(a) = crate::nvptx::arch::validate(&target, None) else {
            eprintln!("skipped {}: no LLVM target {target}", f.display());
            continue;
        };
        let mut best: Option<FileTimes> = None;
        for _ in 0..iters.max(1) {
            reset_peak();
            let t0 = Instant::now();
            let (m, _) = ptx_front::parse(&src);
            let parse = t0.elapsed();
            let t0 = Instant::now();
            let opts = ptx_front::check::Options {
                no_lints: true,
                ..Default::default()
            };
            let errors = ptx_front::check::check_with(&m, &opts).iter().any(|d| d.is_error());
            let check = t0.elapsed();
            if errors {
                eprintln!("skipped {}: rejected by the checker", f.display());
                break;
            }
            let mut phases = Phases::default();
            if let Err(d) = nvptx::emit_bytes(&m, &a, opt, Emit::Ptx, &mut phases) {
                eprintln!("skipped {}: {}", f.display(), crate::one_line(&d[..1], "", &src));
                break;
            }
            drop(m);
            let t = FileTimes {
                file: f.clone(),
                arch: target.clone(),
                parse,
                check,
                phases,
                ptxas: None,
                peak_kib: peak_kib(),
                ptxas_peak_kib: None,
            };
            if best.as_ref().is_none_or(|b| t.ours() < b.ours()) {
                best = Some(t);
            }
        }
        let Some(mut t) = best else { continue };
        if let Some(p) = ptxas {
            // Sources with `.extern .func` only assemble as relocatable objects.
            let reloc = src.lines().any(|l| l.trim_start().starts_with(".extern .func"));
            for _ in 0..iters.max(1) {
                let t0 = Instant::now();
                let mut c = Command::new(p);
                c.arg(format!("-arch={target}")).arg(f).arg("-o").arg("/dev/null");
                if reloc {
                    c.arg("-c");
                }
                let run = run_measured(&mut c);
                let dt = t0.elapsed();
                let Some((true, kib)) = run else {
                    t.ptxas = None;
                    t.ptxas_peak_kib = None;
                    break;
                };
                t.ptxas = Some(t.ptxas.map_or(dt, |b| b.min(dt)));
                t.ptxas_peak_kib = Some(t.ptxas_peak_kib.map_or(kib, |b| b.min(kib)));
            }
        }
        out.push(t);
    }
    out
}

pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Where `bench kernel` and `bench program` write what they measured, besides the terminal.
#[derive(clap::Args)]
pub struct Outputs {
    /// Write every measurement as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write CSV here (`bench kernel`: a row per sample, `kind,stage,name,index,ms`; `bench program`: a
    /// row per kernel).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Write a self-contained HTML report with plots into this directory (`index.html`).
    #[arg(long)]
    pub report: Option<PathBuf>,
}

impl Outputs {
    /// Writes the outputs asked for: `results` as JSON, and the CSV and the page made on demand.
    pub fn write(
        &self,
        results: &impl serde::Serialize,
        csv: impl FnOnce() -> String,
        page: impl FnOnce() -> String,
    ) -> Result<(), ExitCode> {
        let write = |path: &Path, text: &str| {
            std::fs::write(path, text).map_err(|e| {
                eprintln!("error: {}: {e}", path.display());
                ExitCode::from(1)
            })
        };
        if let Some(path) = &self.json {
            let text = serde_json::to_string_pretty(results).map_err(|e| {
                eprintln!("error: {e}");
                ExitCode::from(1)
            })?;
            write(path, &text)?;
        }
        if let Some(path) = &self.csv {
            write(path, &csv())?;
        }
        if let Some(dir) = &self.report {
            if let Err(e) = std::fs::create_dir_all(dir) {
                eprintln!("error: {}: {e}", dir.display());
                return Err(ExitCode::from(1));
            }
            let index = dir.join("index.html");
            write(&index, &page())?;
            eprintln!("report: {}", index.display());
        }
        Ok(())
    }
}

/// The arguments of `ptx-jit bench`.
#[derive(clap::Args)]
pub struct Bench {
    #[command(subcommand)]
    pub what: BenchCmd,
}

#[derive(clap::Subcommand)]
pub enum BenchCmd {
    /// One kernel (the arguments of `run`): every phase of its JIT over fresh compiles, its first
    /// launch, and its steady state in each tier (min, median, max, mean with a 95% interval),
    /// optionally beside ptxas; as a table, JSON, CSV and an HTML report.
    Kernel(kernel::BenchKernel),
    /// An unmodified CUDA program on ptx-jit's libcuda.so.1: per kernel its launches, JIT time, run
    /// time and share of the program's time; per module its load time and disk-cache hits.
    Program(program::BenchProgram),
    /// Per-file compile latency of `compile` (by phase) and of NVIDIA's ptxas on the same files, each
    /// file for its own `.target` unless --arch is given; medians over the files.
    Compile {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Path of ptxas (e.g. the venv's nvidia/cu13/bin/ptxas); without it only our phases are timed.
        #[arg(long)]
        ptxas: Option<PathBuf>,
        #[arg(long)]
        arch: Option<String>,
        #[arg(long, default_value_t = 3)]
        iters: u32,
        #[arg(short = 'O', default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
        opt: u8,
        /// Also write every file's times as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// MB/s of parsing, and of parsing plus checking, single-threaded, over files or directories.
    Parse {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        #[arg(long, default_value_t = 5)]
        iters: u32,
    },
    /// Module loading, lazy (the default) against eager (`CUDA_MODULE_LOADING=EAGER`), side by side
    /// for each file: the load's time and added peak memory, and a kernel's first use (prepared and
    /// compiled) after a lazy load; then every file loaded lazily and kept, as a process that loads a
    /// whole library does.
    Load {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// The kernel to use first (default: each module's first).
        #[arg(long)]
        kernel: Option<String>,
        /// Leave out the eager loads (minutes for a large library).
        #[arg(long)]
        no_eager: bool,
    },
}

/// `ptx-jit bench compile|parse`.
pub fn run(a: Bench) -> Result<std::process::ExitCode, std::process::ExitCode> {
    match a.what {
        BenchCmd::Kernel(k) => kernel::run(k),
        BenchCmd::Program(p) => program::run(p),
        BenchCmd::Compile {
            paths,
            ptxas,
            arch,
            iters,
            opt,
            json,
        } => compile(&paths, ptxas, arch, iters, opt, json),
        BenchCmd::Parse { paths, iters } => parse(&paths, iters),
        BenchCmd::Load {
            paths,
            kernel,
            no_eager,
        } => load(&paths, kernel.as_deref(), !no_eager),
    }
}

/// `ptx-jit bench compile`: per-file compile latency by phase, beside ptxas.
fn compile(
    paths: &[std::path::PathBuf],
    ptxas: Option<std::path::PathBuf>,
    arch: Option<String>,
    iters: u32,
    opt: u8,
    json: Option<std::path::PathBuf>,
) -> Result<std::process::ExitCode, std::process::ExitCode> {
    let files = ptx_files(paths)?;
    let rows = compile_latency(&files, arch.as_deref(), ptxas.as_deref(), iters, opt);
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let med = |f: &dyn Fn(&FileTimes) -> f64| median(rows.iter().map(f).collect());
    println!(
        "{} of {} files compiled; medians over files, best of {iters} runs each, -O{opt}, single thread",
        rows.len(),
        files.len()
    );
    println!("  parse     {:8.3} ms", med(&|r| ms(r.parse)));
    println!("  check     {:8.3} ms", med(&|r| ms(r.check)));
    println!("  validate  {:8.3} ms", med(&|r| ms(r.phases.validate)));
    println!("  lower     {:8.3} ms", med(&|r| ms(r.phases.lower)));
    println!("  optimise  {:8.3} ms", med(&|r| ms(r.phases.optimise)));
    println!("  codegen   {:8.3} ms", med(&|r| ms(r.phases.codegen)));
    println!("  recheck   {:8.3} ms", med(&|r| ms(r.phases.recheck)));
    println!(
        "  total     {:8.3} ms (ptx-jit compile, PTX to PTX)",
        med(&|r| ms(r.ours()))
    );
    println!(
        "  peak RSS  {:8.1} MB (this process while compiling a file)",
        med(&|r| r.peak_kib as f64 / 1024.0)
    );
    let with: Vec<_> = rows.iter().filter(|r| r.ptxas.is_some()).collect();
    if !with.is_empty() {
        let p = |r: &&FileTimes| ms(r.ptxas.unwrap_or_default());
        let ours: Vec<f64> = with.iter().map(|r| ms(r.ours())).collect();
        let theirs: Vec<f64> = with.iter().map(p).collect();
        let ratio: Vec<f64> = with.iter().map(|r| ms(r.ours()) / p(r).max(1e-6)).collect();
        println!(
            "on the {} files ptxas accepts: ptx-jit {:.3} ms, ptxas {:.3} ms (PTX to SASS, process included); per-file ratio ptx-jit/ptxas median {:.3}",
            with.len(),
            median(ours),
            median(theirs),
            median(ratio)
        );
        let mb = |k: u64| k as f64 / 1024.0;
        let rss_ratio: Vec<f64> = with
            .iter()
            .filter_map(|r| Some(r.peak_kib as f64 / r.ptxas_peak_kib?.max(1) as f64))
            .collect();
        println!(
            "peak RSS: ptx-jit {:.1} MB, ptxas {:.1} MB (medians); per-file ratio ptx-jit/ptxas median {:.3}",
            median(with.iter().map(|r| mb(r.peak_kib)).collect()),
            median(with.iter().filter_map(|r| r.ptxas_peak_kib.map(mb)).collect()),
            median(rss_ratio)
        );
    }
    if let Some(j) = json {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "file": r.file.display().to_string(), "arch": r.arch,
                    "parse_ms": ms(r.parse), "check_ms": ms(r.check), "validate_ms": ms(r.phases.validate),
                    "lower_ms": ms(r.phases.lower), "optimise_ms": ms(r.phases.optimise),
                    "codegen_ms": ms(r.phases.codegen), "recheck_ms": ms(r.phases.recheck),
                    "total_ms": ms(r.ours()), "ptxas_ms": r.ptxas.map(ms),
                    "peak_rss_kib": r.peak_kib, "ptxas_peak_rss_kib": r.ptxas_peak_kib,
                })
            })
            .collect();
        std::fs::write(&j, serde_json::to_string_pretty(&v).unwrap_or_default()).map_err(|e| {
            eprintln!("error: cannot write {}: {e}", j.display());
            ExitCode::from(2)
        })?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `ptx-jit bench parse`: front-end throughput.
fn parse(paths: &[std::path::PathBuf], iters: u32) -> Result<std::process::ExitCode, std::process::ExitCode> {
    let files = ptx_files(paths)?;
    let texts: Vec<String> = files.iter().map(read).collect::<Result<_, _>>()?;
    let bytes: usize = texts.iter().map(String::len).sum();
    let time = |f: &dyn Fn(&str)| {
        let mut best = f64::MAX;
        for _ in 0..iters.max(1) {
            let t = std::time::Instant::now();
            texts.iter().for_each(|s| f(s));
            best = best.min(t.elapsed().as_secs_f64());
        }
        bytes as f64 / 1e6 / best
    };
    // The median of per-file rates, as other parsers' benchmarks report it.
    let median = |f: &dyn Fn(&str)| -> f64 {
        let mut rates: Vec<f64> = texts
            .iter()
            .map(|s| {
                let mut best = f64::MAX;
                for _ in 0..iters.max(1) {
                    let t = std::time::Instant::now();
                    f(s);
                    best = best.min(t.elapsed().as_secs_f64());
                }
                s.len() as f64 / 1e6 / best.max(1e-9)
            })
            .collect();
        rates.sort_by(f64::total_cmp);
        rates.get(rates.len() / 2).copied().unwrap_or(0.0)
    };
    let rates: Vec<(&str, f64, f64)> = ptx_front::STAGES
        .iter()
        .map(|&(name, f)| (name, time(&f), median(&f)))
        .collect();
    let rejected = |f: &dyn Fn(&str) -> bool| texts.iter().filter(|s| f(s)).count();
    let syntax = rejected(&|s| !ptx_front::parse(s).1.is_empty());
    let any = rejected(&|s| ptx_front::parse_and_check(s).1.iter().any(|d| d.is_error()));
    println!(
        "{} files, {:.1} MB; best of {iters}, single thread",
        files.len(),
        bytes as f64 / 1e6
    );
    println!("                  all files   median file");
    for (name, all, med) in &rates {
        let note = match *name {
            "parse + check" => "   (errors)",
            "lint" => "   (errors and warnings, as `ptx-jit lint`)",
            _ => "",
        };
        println!("{:<16}{all:7.1} MB/s  {med:7.1} MB/s{note}", format!("{name}:"));
    }
    println!("rejected: {syntax} with syntax errors, {any} with any error");
    Ok(ExitCode::SUCCESS)
}

/// `ptx-jit bench load`: lazy against eager loading, per file.
fn load(paths: &[PathBuf], kernel: Option<&str>, eager: bool) -> Result<ExitCode, ExitCode> {
    let files = ptx_files(paths)?;
    let options = crate::jit::host::options();
    // The JIT's own set-up is not part of any load.
    crate::load(".version 7.0\n.target sm_75\n.address_size 64\n").map_err(|_| ExitCode::from(1))?;
    // Time and added peak memory (MB) of `f`, from a trimmed heap.
    let measure = |f: &mut dyn FnMut()| {
        #[cfg(target_env = "gnu")]
        unsafe {
            libc::malloc_trim(0);
        }
        reset_peak();
        let base = peak_kib();
        let t = Instant::now();
        f();
        (
            t.elapsed().as_secs_f64() * 1e3,
            (peak_kib().saturating_sub(base)) as f64 / 1024.0,
        )
    };
    println!("file: size, kernels | lazy load: ms, +MB | first use of one kernel: ms, +MB | eager load: ms, +MB");
    let (mut lazy_total, mut eager_total) = (0.0, 0.0);
    for f in &files {
        let src = read(f)?;
        let mut lazy = None;
        let (lazy_ms, lazy_mb) = measure(&mut || lazy = Some(crate::load_as(&src, options, crate::Loading::Lazy)));
        let module = match lazy {
            Some(Ok(m)) => m,
            _ => {
                eprintln!("{}: does not load", f.display());
                continue;
            }
        };
        let name = kernel
            .map(str::to_string)
            .or_else(|| module.kernel_names().next().map(str::to_string));
        let mut first = String::new();
        let (use_ms, use_mb) = measure(&mut || {
            let Some(k) = name.as_deref().and_then(|n| module.find(n)) else {
                first = " (no such kernel)".into();
                return;
            };
            match module
                .prepare(k)
                .map_err(|d| d.first().map(|d| d.message.clone()).unwrap_or_default())
            {
                Ok(k) => {
                    if let Err(e) = k.entry() {
                        first = format!(" (fails: {e})");
                    }
                }
                Err(e) => first = format!(" (fails: {e})"),
            }
        });
        let kernels = module.kernel_names().count();
        drop(module);
        let (mut eager_ms, mut eager_mb, mut eager_note) = (0.0, 0.0, " (not measured)".to_string());
        if eager {
            let mut loaded = None;
            (eager_ms, eager_mb) = measure(&mut || loaded = Some(crate::load_as(&src, options, crate::Loading::Eager)));
            eager_note = match &loaded {
                Some(Err(d)) => format!(
                    " (fails: {})",
                    d.first().map(|d| d.message.as_str()).unwrap_or_default()
                ),
                _ => String::new(),
            };
        }
        lazy_total += lazy_ms;
        eager_total += eager_ms;
        println!(
            "{}: {:.2} MB, {kernels} | {lazy_ms:.1} ms, +{lazy_mb:.0} MB | {use_ms:.1} ms, +{use_mb:.0} MB{first} | {eager_ms:.1} ms, +{eager_mb:.0} MB{eager_note}",
            f.display(),
            src.len() as f64 / 1e6,
        );
    }
    if eager {
        println!(
            "total load time: lazy {lazy_total:.1} ms, eager {eager_total:.1} ms (eager / lazy {:.1}x)",
            eager_total / lazy_total.max(1e-9)
        );
    }
    let texts: Vec<String> = files.iter().map(read).collect::<Result<_, _>>()?;
    let mb = texts.iter().map(String::len).sum::<usize>() as f64 / 1e6;
    let mut kept = vec![];
    let (all_ms, all_mb) = measure(&mut || {
        kept = texts
            .iter()
            .filter_map(|t| crate::load_as(t, options, crate::Loading::Lazy).ok())
            .collect()
    });
    println!(
        "all {} files loaded lazily and kept: {} loaded, {mb:.1} MB of PTX, {all_ms:.0} ms, +{all_mb:.0} MB",
        files.len(),
        kept.len()
    );
    Ok(ExitCode::SUCCESS)
}
