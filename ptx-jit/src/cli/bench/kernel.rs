//! `ptx-jit bench kernel`: one kernel's JIT phase by phase over fresh compiles, its first launch, and
//! its steady state in each tier (launches until the mean's 95% interval is tight, or a time budget
//! runs out), optionally beside NVIDIA's ptxas compiling the same kernel.

use super::progress::Progress;
use super::stats::{Running, Summary};
use crate::cli::run::{Buffers, KernelArgs, Request};
use crate::jit::host::{Tier, TierTimes};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The arguments of `ptx-jit bench kernel`.
#[derive(clap::Args)]
pub struct BenchKernel {
    #[command(flatten)]
    pub kernel: KernelArgs,
    /// Fresh compiles to time the JIT's phases and the first launch over (each from a new load,
    /// with the disk cache off).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub compiles: u32,
    /// The tiers whose steady state is measured.
    #[arg(long, value_enum, default_value = "both")]
    pub tier: Tiers,
    /// Seconds each tier's steady state may take at most.
    #[arg(long, default_value_t = 5.0)]
    pub budget: f64,
    /// Launching stops once the 95% confidence interval of the mean launch time is within this
    /// fraction of the mean.
    #[arg(long, default_value_t = 0.01)]
    pub precision: f64,
    /// Launches at least, after warm-up.
    #[arg(long, default_value_t = 10)]
    pub min_launches: usize,
    /// Launches at most, after warm-up.
    #[arg(long, default_value_t = 100_000)]
    pub max_launches: usize,
    /// Time a peer on the same PTX as well: `ptxas` compiling the kernel for the file's target.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub against: Vec<Peer>,
    /// The ptxas to run (default: $PTXAS, else `ptxas` on the PATH).
    #[arg(long)]
    pub ptxas: Option<PathBuf>,
    /// Keep the disk cache on (compiles then time the cache's reads).
    #[arg(long)]
    pub cache: bool,
    /// Count one launch exactly: instructions by class, active lanes, divergent branches, barriers,
    /// bytes per state space, global sectors per request and shared bank conflicts.
    #[arg(long)]
    pub counters: bool,
    // The CSV has one row per sample: `kind,stage,name,index,ms`.
    #[command(flatten)]
    pub out: super::Outputs,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Tiers {
    Quick,
    Optimised,
    Both,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum Peer {
    Ptxas,
}

/// Everything one `bench kernel` measured; `--json` writes it as it is.
#[derive(serde::Serialize)]
pub struct Results {
    pub file: String,
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub cpu: String,
    pub disk_cache: bool,
    /// Every phase of the JIT, one sample per fresh compile, in the order they run.
    pub phases: Vec<Phase>,
    /// Each fresh compile's peak resident memory above the process's before it (MB).
    pub compile_peak_mb: Vec<f64>,
    /// Each fresh compile's first launch.
    pub first_launches: Vec<FirstLaunch>,
    pub steady: Vec<Steady>,
    pub peers: Vec<PeerTimes>,
    pub counters: Option<super::counters::Report>,
}

impl Results {
    /// The median time of a stage: the sum of its phases' medians.
    pub fn stage_ms(&self, stage: &str) -> f64 {
        self.phases
            .iter()
            .filter(|p| p.stage == stage)
            .map(|p| p.summary.median)
            .sum()
    }

    /// A tier's JIT time, the kernel's preparation included (what a first launch in it pays).
    pub fn jit_ms(&self, tier: &str) -> f64 {
        self.stage_ms(tier) + self.stage_ms("prepare")
    }
}

/// One phase: `stage` is `load`, `prepare` (once per kernel) or a tier (`quick`, `optimised`).
#[derive(serde::Serialize)]
pub struct Phase {
    pub stage: &'static str,
    pub name: String,
    pub samples_ms: Vec<f64>,
    pub summary: Summary,
}

/// A kernel's first launch after a fresh load: its wall time, of which `jit_ms` compiled the tier it
/// ran (the quick tier when the launch is small).
#[derive(serde::Serialize)]
pub struct FirstLaunch {
    pub tier: &'static str,
    pub wall_ms: f64,
    pub jit_ms: f64,
}

/// A tier's steady state: launches after warm-up, and why launching stopped (`interval`, `budget`
/// or `launches`).
#[derive(serde::Serialize)]
pub struct Steady {
    pub tier: &'static str,
    pub warmup: usize,
    pub samples_ms: Vec<f64>,
    pub summary: Summary,
    pub stopped_by: &'static str,
}

#[derive(serde::Serialize)]
pub struct PeerTimes {
    pub peer: &'static str,
    pub command: String,
    pub samples_ms: Vec<f64>,
    pub summary: Summary,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn tier_name(t: Tier) -> &'static str {
    match t {
        Tier::Quick => "quick",
        Tier::Optimised => "optimised",
        Tier::Auto => "automatic",
    }
}

pub fn run(a: BenchKernel) -> Result<ExitCode, ExitCode> {
    let fail = |e: String| {
        eprintln!("error: {e}");
        ExitCode::from(1)
    };
    let usage = |e: String| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    };
    let positive = |x: f64| x.is_finite() && x > 0.0;
    if !positive(a.precision) || !positive(a.budget) {
        return Err(usage("--precision and --budget must be positive numbers".into()));
    }
    let src = super::read(&a.kernel.file)?;
    let request = a.kernel.request().map_err(usage)?;
    if !a.cache && !crate::jit::cache::disable() {
        return Err(fail("the disk cache could not be turned off".into()));
    }
    // The JIT's own start-up belongs to no kernel.
    crate::load(".version 7.0\n.target sm_75\n.address_size 64\n")
        .map_err(|_| fail("the JIT does not start".into()))?;
    let mut results = Results {
        file: a.kernel.file.display().to_string(),
        kernel: a.kernel.kernel.clone(),
        grid: request.grid,
        block: request.block,
        cpu: inkwell::targets::TargetMachine::get_host_cpu_name().to_string(),
        disk_cache: a.cache,
        phases: vec![],
        compile_peak_mb: vec![],
        first_launches: vec![],
        steady: vec![],
        peers: vec![],
        counters: None,
    };
    let module = compiles(&a, &src, &request, &mut results)?;
    let k = module
        .prepare(a.kernel.find(&module).map_err(usage)?)
        .map_err(|d| fail(crate::one_line(d, "", &src)))?;
    let tiers: &[Tier] = match a.tier {
        Tiers::Quick => &[Tier::Quick],
        Tiers::Optimised => &[Tier::Optimised],
        Tiers::Both => &[Tier::Quick, Tier::Optimised],
    };
    for &tier in tiers {
        if tier == Tier::Quick && k.entry_quick().is_err() {
            continue; // warned about above
        }
        results.steady.push(steady(&a, k, tier, &request).map_err(fail)?);
    }
    if a.against.contains(&Peer::Ptxas) {
        results.peers.push(ptxas(&a, &src).map_err(fail)?);
    }
    if a.counters {
        let report = super::counters::count(&a.kernel, &src, &request).map_err(fail)?;
        results.counters = Some(report);
    }
    print_table(&results);
    if let Some(c) = &results.counters {
        let optimised = results
            .steady
            .iter()
            .find(|s| s.tier == "optimised")
            .map(|s| s.summary.median);
        c.print(optimised);
    }
    a.out
        .write(&results, || csv(&results), || super::report::kernel_page(&results))?;
    Ok(ExitCode::SUCCESS)
}

/// Loads, prepares and first-launches the kernel `--compiles` times, each from a fresh load, and
/// compiles the tier the first launch did not run; records every phase. Gives the last module.
fn compiles(
    a: &BenchKernel,
    src: &str,
    request: &Request,
    results: &mut Results,
) -> Result<crate::HostModule, ExitCode> {
    let fail = |e: String| {
        eprintln!("error: {e}");
        ExitCode::from(1)
    };
    let options = crate::jit::host::options();
    let mut load = vec![];
    let mut prepare: [Vec<f64>; 3] = Default::default();
    let mut tiers: [Vec<TierTimes>; 2] = Default::default();
    let mut progress = Progress::new("compiling", a.compiles as u64);
    let mut last = None;
    for _ in 0..a.compiles {
        let t = Instant::now();
        let module = crate::load_as(src, options, crate::Loading::Lazy)
            .map_err(|d| fail(crate::one_line(&d, &a.kernel.file.display().to_string(), src)))?;
        load.push(ms(t.elapsed()));
        let k = module
            .prepare(a.kernel.find(&module).map_err(fail)?)
            .map_err(|d| fail(crate::one_line(d, &a.kernel.file.display().to_string(), src)))?;
        let p = k.prepared_in;
        for (v, d) in prepare.iter_mut().zip([p.parse, p.check, p.lower]) {
            v.push(ms(d));
        }
        let buffers = Buffers::new(&k.info, &request.args).map_err(fail)?;
        let launch = crate::Launch::new(request.grid, request.block, a.kernel.shared, &buffers.params);
        // The peak of the compiles (and the launch's own memory), not of the buffers made above.
        super::reset_peak();
        let base = super::peak_kib();
        let t = Instant::now();
        crate::launch(k, &launch).map_err(|e| fail(format!("the first launch failed: {e}")))?;
        let wall = ms(t.elapsed());
        let [quick, _] = k.tier_times();
        let (tier, jit) = match quick {
            Some(q) => (Tier::Quick, q.total()),
            None => (Tier::Optimised, k.tier_times()[1].map_or(Duration::ZERO, |o| o.total())),
        };
        results.first_launches.push(FirstLaunch {
            tier: tier_name(tier),
            wall_ms: wall,
            jit_ms: ms(jit),
        });
        // The tier the first launch did not compile. A quick tier that fails to compile is reported,
        // not fatal: launches then run the optimised code, as the runtime falls back to it.
        match tier {
            Tier::Quick => drop(k.entry().map_err(fail)?),
            _ => {
                if let Err(e) = k.entry_quick() {
                    eprintln!("warning: the quick tier does not compile: {e}");
                }
            }
        }
        for (all, t) in tiers.iter_mut().zip(k.tier_times()) {
            all.extend(t);
        }
        results
            .compile_peak_mb
            .push(super::peak_kib().saturating_sub(base) as f64 / 1024.0);
        drop(buffers);
        last = Some(module);
        progress.inc();
    }
    progress.finish();
    let mut phase = |stage: &'static str, name: &str, samples: Vec<f64>| {
        if let Some(summary) = Summary::of(&samples) {
            results.phases.push(Phase {
                stage,
                name: name.to_string(),
                samples_ms: samples,
                summary,
            });
        }
    };
    phase("load", "index", load);
    for (name, samples) in ["parse", "check", "lower"].into_iter().zip(prepare) {
        phase("prepare", name, samples);
    }
    for (stage, times) in ["quick", "optimised"].into_iter().zip(&tiers) {
        let each = |f: &dyn Fn(&TierTimes) -> Duration| times.iter().map(|t| ms(f(t))).collect::<Vec<f64>>();
        phase(stage, "parse", each(&|t| t.parse));
        phase(stage, "lower", each(&|t| t.lower));
        for (i, (name, in_quick)) in crate::jit::pipeline::pass_names().into_iter().enumerate() {
            if stage == "optimised" || in_quick {
                phase(stage, name, each(&|t| t.passes[i]));
            }
        }
        phase(stage, "codegen", each(&|t| t.codegen));
        phase(stage, "link", each(&|t| t.link));
    }
    last.ok_or_else(|| fail("no compile ran".into()))
}

/// Launches the kernel in `tier` until its mean time is known to `--precision`, the budget is spent
/// or `--max-launches` ran, after a warm-up of at least one launch and 50 ms.
fn steady(a: &BenchKernel, k: &crate::HostKernel, tier: Tier, request: &Request) -> Result<Steady, String> {
    let buffers = Buffers::new(&k.info, &request.args)?;
    let once = || -> Result<f64, String> {
        let launch = crate::Launch {
            tier,
            ..crate::Launch::new(request.grid, request.block, a.kernel.shared, &buffers.params)
        };
        let t = Instant::now();
        crate::launch(k, &launch).map_err(|e| format!("a launch in the {} tier failed: {e}", tier_name(tier)))?;
        Ok(ms(t.elapsed()))
    };
    let start = Instant::now();
    let mut warmup = 0;
    while warmup == 0 || start.elapsed() < Duration::from_millis(50) && warmup < 100 {
        once()?;
        warmup += 1;
    }
    let budget = Duration::try_from_secs_f64(a.budget).unwrap_or(Duration::MAX);
    let start = Instant::now();
    let mut progress = Progress::new(&format!("{} tier", tier_name(tier)), a.max_launches as u64);
    let (mut samples, mut running) = (vec![], Running::default());
    let stopped_by = loop {
        let x = once()?;
        samples.push(x);
        running.push(x);
        progress.inc();
        if samples.len() >= a.min_launches.max(2) && running.half_width() <= a.precision * running.mean() {
            break "interval";
        }
        if start.elapsed() >= budget {
            break "budget";
        }
        if samples.len() >= a.max_launches {
            break "launches";
        }
    };
    progress.finish();
    Ok(Steady {
        tier: tier_name(tier),
        warmup,
        summary: Summary::of(&samples).ok_or("no launch ran")?,
        samples_ms: samples,
        stopped_by,
    })
}

/// ptxas compiling the kernel alone (`--entry`) for the file's own target, `--compiles` times.
fn ptxas(a: &BenchKernel, src: &str) -> Result<PeerTimes, String> {
    let exe = a
        .ptxas
        .clone()
        .or_else(|| std::env::var_os("PTXAS").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("ptxas"));
    let target = super::target_of(src).ok_or("the file has no .target for ptxas")?;
    let args = [
        format!("-arch={target}"),
        format!("--entry={}", a.kernel.kernel),
        "-o".into(),
        "/dev/null".into(),
        a.kernel.file.display().to_string(),
    ];
    let command = format!("{} {}", exe.display(), args.join(" "));
    let mut samples = vec![];
    for _ in 0..a.compiles {
        let t = Instant::now();
        let out = std::process::Command::new(&exe)
            .args(&args)
            .output()
            .map_err(|e| format!("{}: {e} (give --ptxas PATH)", exe.display()))?;
        if !out.status.success() {
            return Err(format!(
                "`{command}` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        samples.push(ms(t.elapsed()));
    }
    Ok(PeerTimes {
        peer: "ptxas",
        command,
        summary: Summary::of(&samples).ok_or("ptxas did not run")?,
        samples_ms: samples,
    })
}

/// The stages of `r`'s phases, in their order.
pub fn stages(r: &Results) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = vec![];
    for p in &r.phases {
        if !out.contains(&p.stage) {
            out.push(p.stage);
        }
    }
    out
}

/// The terminal table.
fn print_table(r: &Results) {
    let threads: u64 = r.grid.iter().chain(&r.block).map(|&d| d as u64).product();
    let [g, b] = [r.grid, r.block];
    println!(
        "{} in {}: grid {}x{}x{}, block {}x{}x{} ({threads} threads), on {}",
        r.kernel, r.file, g[0], g[1], g[2], b[0], b[1], b[2], r.cpu
    );
    let runs = r.first_launches.len();
    println!(
        "\nJIT phases, medians of {runs} fresh compile{} (disk cache {}):",
        if runs == 1 { "" } else { "s" },
        if r.disk_cache { "on" } else { "off" }
    );
    for stage in stages(r) {
        let phases: Vec<&Phase> = r.phases.iter().filter(|p| p.stage == stage).collect();
        let total = r.stage_ms(stage);
        for (i, p) in phases.iter().enumerate() {
            println!(
                "  {:<10} {:<11} {:>9.3} ms {:>5.1}%",
                if i == 0 { stage } else { "" },
                p.name,
                p.summary.median,
                100.0 * p.summary.median / total.max(1e-12)
            );
        }
        if phases.len() > 1 {
            println!("  {:<10} {:<11} {total:>9.3} ms", "", "total");
        }
    }
    if let Some(peak) = Summary::of(&r.compile_peak_mb) {
        println!("  peak memory of a compile: +{:.1} MB (median)", peak.median);
    }
    if let (Some(wall), Some(jit)) = (
        Summary::of(&r.first_launches.iter().map(|f| f.wall_ms).collect::<Vec<_>>()),
        Summary::of(&r.first_launches.iter().map(|f| f.jit_ms).collect::<Vec<_>>()),
    ) {
        println!(
            "\nfirst launch after a load ({} tier): {:.3} ms, of which {:.3} ms compiling (medians)",
            r.first_launches[0].tier, wall.median, jit.median
        );
    }
    if !r.steady.is_empty() {
        println!("\nsteady state (ms per launch):");
        println!(
            "  {:<10} {:>7} {:>10} {:>10} {:>10} {:>22}  stopped by",
            "tier", "n", "min", "median", "max", "mean ± 95% CI"
        );
        for s in &r.steady {
            let m = &s.summary;
            println!(
                "  {:<10} {:>7} {:>10.4} {:>10.4} {:>10.4} {:>12.4} ± {:<7.4}  {}",
                s.tier, m.n, m.min, m.median, m.max, m.mean, m.ci95, s.stopped_by
            );
        }
    }
    for p in &r.peers {
        println!(
            "\n{}: median {:.3} ms over {} runs (`{}`)",
            p.peer, p.summary.median, p.summary.n, p.command
        );
        for stage in ["quick", "optimised"] {
            println!(
                "  {stage} tier's JIT (prepare included) / {}: {:.2}x",
                p.peer,
                r.jit_ms(stage) / p.summary.median.max(1e-12)
            );
        }
    }
}

/// Every sample as CSV rows: `phase,STAGE,NAME,i,ms`, `first_launch,TIER,wall|jit,i,ms`,
/// `launch,TIER,,i,ms`, `peer,NAME,,i,ms` and `peak_mb,compile,,i,MB`.
pub fn csv(r: &Results) -> String {
    let mut rows = vec![];
    let mut add = |kind: &str, stage: &str, name: &str, samples: &[f64]| {
        rows.extend(
            samples
                .iter()
                .enumerate()
                .map(|(i, x)| format!("{kind},{stage},{name},{i},{x}")),
        );
    };
    for p in &r.phases {
        add("phase", p.stage, &p.name, &p.samples_ms);
    }
    add("peak_mb", "compile", "", &r.compile_peak_mb);
    if let Some(first) = r.first_launches.first() {
        let (wall, jit): (Vec<f64>, Vec<f64>) = r.first_launches.iter().map(|f| (f.wall_ms, f.jit_ms)).unzip();
        add("first_launch", first.tier, "wall", &wall);
        add("first_launch", first.tier, "jit", &jit);
    }
    for s in &r.steady {
        add("launch", s.tier, "", &s.samples_ms);
    }
    for p in &r.peers {
        add("peer", p.peer, "", &p.samples_ms);
    }
    format!("kind,stage,name,index,ms\n{}\n", rows.join("\n"))
}
