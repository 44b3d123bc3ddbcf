//! `bench kernel --counters`: one launch of the kernel built with counters
//! (`crate::runtime::counters`), its block entries multiplied out by each block's static mix
//! (`ptx_front::mix`), into the figures a profiler reports.

use crate::cli::run::{Buffers, KernelArgs, Request};
use crate::runtime::counters::{Counters, Space, MAX_TRACE};
use ptx_front::mix::{Block, Class};
use std::time::Instant;

/// Thread-level and warp-level instructions of one class.
#[derive(serde::Serialize, Clone)]
pub struct ClassCount {
    pub class: &'static str,
    pub thread_instructions: u64,
    pub warp_instructions: u64,
}

/// The accesses of one state space.
#[derive(serde::Serialize, Clone)]
pub struct SpaceCount {
    #[serde(skip)]
    pub kind: Space,
    pub space: &'static str,
    pub accesses: u64,
    pub bytes: u64,
    pub requests: u64,
    /// Global: 32-byte sectors touched, and their average per request (4 for 32 consecutive
    /// 4-byte words).
    pub sectors: u64,
    pub sectors_per_request: f64,
    /// Shared: wavefronts, the fewest possible, and the bank conflicts (the difference).
    pub wavefronts: u64,
    pub ideal_wavefronts: u64,
    pub bank_conflicts: u64,
}

/// What one counted launch came to.
#[derive(serde::Serialize, Clone)]
pub struct Report {
    /// The counted launch's wall time (checked code that calls the runtime at every block, branch
    /// and access).
    pub launch_ms: f64,
    pub ctas: u64,
    pub warps: u64,
    pub thread_instructions: u64,
    pub warp_instructions: u64,
    /// Thread-level over warp-level instructions: how many of a warp's 32 lanes do the work.
    pub active_lanes: f64,
    /// Every class, in `ptx_front::mix::Class::ALL`'s order; their thread instructions sum to
    /// `thread_instructions`.
    pub classes: Vec<ClassCount>,
    pub branches: u64,
    pub divergent_branches: u64,
    pub barriers: u64,
    pub warp_barriers: u64,
    pub spaces: Vec<SpaceCount>,
    /// The CTA's trace of addresses overflowed: the memory figures cover part of the accesses.
    pub truncated: bool,
}

/// Loads the kernel with counters, launches it once and puts the counts together.
pub fn count(what: &KernelArgs, src: &str, request: &Request) -> Result<Report, String> {
    let options = ptx_llvm::Options {
        checked: true,
        counters: true,
        ..crate::jit::host::options()
    };
    let one_line = |d: &[crate::Diagnostic]| crate::one_line(d, &what.file.display().to_string(), src);
    let module = crate::load_as(src, options, crate::Loading::Lazy).map_err(|d| one_line(&d))?;
    let k = module.prepare(what.find(&module)?).map_err(one_line)?;
    let buffers = Buffers::new(&k.info, &request.args)?;
    let counters = std::sync::Arc::new(Counters::default());
    k.entry()
        .map_err(|e| format!("the counting build does not compile: {e}"))?;
    let launch = crate::Launch {
        counters: Some(counters.clone()),
        sanitize: Default::default(),
        tier: crate::jit::host::Tier::Optimised,
        ..crate::Launch::new(request.grid, request.block, what.shared, &buffers.params)
    };
    let t = Instant::now();
    crate::launch(k, &launch).map_err(|e| format!("the counted launch failed: {e}"))?;
    let launch_ms = t.elapsed().as_secs_f64() * 1e3;
    let (m, _) = ptx_front::parse(src);
    let blocks: rustc_hash::FxHashMap<u32, Block> = ptx_front::mix::module_blocks(&m)
        .into_iter()
        .map(|b| (b.site, b))
        .collect();
    report(&counters.totals(), &blocks, launch_ms)
}

/// The figures of `totals`, given each counted block's mix.
fn report(
    totals: &crate::runtime::counters::Totals,
    blocks: &rustc_hash::FxHashMap<u32, Block>,
    launch_ms: f64,
) -> Result<Report, String> {
    let mut classes = [(0u64, 0u64); Class::COUNT];
    let (mut barriers, mut warp_barriers) = (0, 0);
    for (site, &(threads, warps)) in &totals.blocks {
        let b = blocks
            .get(site)
            .ok_or_else(|| format!("internal error: the counters report a block at byte {site} that the mix lacks"))?;
        for (c, &n) in classes.iter_mut().zip(&b.classes) {
            c.0 += threads * n as u64;
            c.1 += warps * n as u64;
        }
        barriers += threads * b.barriers as u64;
        warp_barriers += warps * b.barriers as u64;
    }
    let thread_instructions = classes.iter().map(|c| c.0).sum();
    let warp_instructions: u64 = classes.iter().map(|c| c.1).sum();
    Ok(Report {
        launch_ms,
        ctas: totals.ctas,
        warps: totals.warps,
        thread_instructions,
        warp_instructions,
        active_lanes: thread_instructions as f64 / warp_instructions.max(1) as f64,
        classes: Class::ALL
            .iter()
            .zip(classes)
            .map(|(c, (t, w))| ClassCount {
                class: c.name(),
                thread_instructions: t,
                warp_instructions: w,
            })
            .collect(),
        branches: totals.branches,
        divergent_branches: totals.divergent,
        barriers,
        warp_barriers,
        spaces: Space::ALL
            .iter()
            .zip(&totals.spaces)
            .map(|(&kind, s)| SpaceCount {
                kind,
                space: kind.name(),
                accesses: s.accesses,
                bytes: s.bytes,
                requests: s.requests,
                sectors: s.sectors,
                sectors_per_request: s.sectors as f64 / s.requests.max(1) as f64,
                wavefronts: s.wavefronts,
                ideal_wavefronts: s.ideal_wavefronts,
                bank_conflicts: s.wavefronts - s.ideal_wavefronts,
            })
            .collect(),
        truncated: totals.truncated,
    })
}

impl Report {
    /// The terminal table; `optimised`, the optimised tier's median launch, gives the counting's cost.
    pub fn print(&self, optimised: Option<f64>) {
        let cost = optimised.map_or(String::new(), |o| {
            format!(
                ", {:.0}x the optimised tier's median launch",
                self.launch_ms / o.max(1e-9)
            )
        });
        println!(
            "\ncounters (one launch of checked code that counts: {:.3} ms{cost}):",
            self.launch_ms
        );
        println!(
            "  {} CTAs, {} warps; {} thread instructions in {} warp instructions ({:.2} active lanes of 32)",
            self.ctas, self.warps, self.thread_instructions, self.warp_instructions, self.active_lanes
        );
        println!(
            "  branches: {} warp-level, {} divergent; barriers: {} by threads, {} by warps",
            self.branches, self.divergent_branches, self.barriers, self.warp_barriers
        );
        println!("  {:<16} {:>14} {:>14}", "class", "thread instr.", "warp instr.");
        for c in self.classes.iter().filter(|c| c.thread_instructions > 0) {
            println!(
                "  {:<16} {:>14} {:>14}",
                c.class, c.thread_instructions, c.warp_instructions
            );
        }
        println!(
            "  {:<8} {:>10} {:>12} {:>10} {:>9} {:>10} {:>15}",
            "space", "accesses", "bytes", "requests", "sectors", "sect./req", "bank conflicts"
        );
        for s in self.spaces.iter().filter(|s| s.accesses > 0) {
            let (sectors, per, conflicts) = match s.kind {
                Space::Global => (
                    s.sectors.to_string(),
                    format!("{:.2}", s.sectors_per_request),
                    String::new(),
                ),
                Space::Shared => (String::new(), String::new(), s.bank_conflicts.to_string()),
                Space::Local | Space::Const => Default::default(),
            };
            println!(
                "  {:<8} {:>10} {:>12} {:>10} {:>9} {:>10} {:>15}",
                s.space, s.accesses, s.bytes, s.requests, sectors, per, conflicts
            );
        }
        if self.truncated {
            println!("  (branches and memory cover only the first {MAX_TRACE} of some CTAs' executions)");
        }
    }
}
