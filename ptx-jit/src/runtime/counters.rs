//! Exact counters of a launch (`ptx-jit bench kernel --counters`), from checked code built with
//! `ptx_llvm::Options::counters`: every thread reports each counted block it enters and the direction
//! of each conditional branch, and checked mode reports every memory access (`ptxjit_check`).
//!
//! Each CTA keeps, per thread, how often it entered each block, the directions its branches took in
//! order, and the addresses each access instruction touched in order. When the CTA ends, its warps
//! are put together under SIMT's model: the i-th execution of an instruction by each thread of a warp
//! is one warp-level execution. From that:
//! - a block's warp-level entries are, per warp, the most entries of any of its threads (and active
//!   lanes are thread-level over warp-level instructions);
//! - a branch execution is divergent when its active threads go both ways;
//! - a global request touches the distinct 32-byte sectors its threads' bytes fall in;
//! - a shared request needs as many wavefronts as the most distinct 4-byte words any one of the 32
//!   banks must deliver (threads reading one word share it), against the fewest its distinct words
//!   allow (one per 32 words); the difference is its bank conflicts.
//!
//! A CTA keeps at most [`MAX_TRACE`] addresses; beyond, accesses are no longer traced and the
//! totals say so.

use crate::runtime::Env;
use ptx_llvm::abi::builtin::{SPACE_CONST, SPACE_GLOBAL, SPACE_LOCAL, SPACE_MASK, SPACE_SHARED};
use rustc_hash::FxHashMap;
use std::cell::RefCell;

/// Addresses one CTA may trace (16 bytes each).
const MAX_TRACE: usize = 1 << 24;

/// The state spaces accesses are counted by (a generic address counts where it points).
pub const SPACES: [&str; 4] = ["global", "shared", "local", "const"];

/// What the accesses of one state space came to.
#[derive(Clone, Copy, Default, Debug, serde::Serialize, PartialEq, Eq)]
pub struct SpaceTotals {
    /// Thread-level accesses and the bytes they moved.
    pub accesses: u64,
    pub bytes: u64,
    /// Warp-level accesses.
    pub requests: u64,
    /// Global: 32-byte sectors the requests touched.
    pub sectors: u64,
    /// Shared: wavefronts the requests needed, and the fewest their distinct words allow.
    pub wavefronts: u64,
    pub ideal_wavefronts: u64,
}

/// A launch's counts (or several launches', added).
#[derive(Clone, Default, Debug)]
pub struct Totals {
    pub ctas: u64,
    pub warps: u64,
    /// By counted block (its site): thread-level and warp-level entries.
    pub blocks: FxHashMap<u32, (u64, u64)>,
    /// Warp-level executions of conditional branches, and the divergent ones.
    pub branches: u64,
    pub divergent: u64,
    /// By [`SPACES`].
    pub spaces: [SpaceTotals; 4],
    /// Some accesses were not traced ([`MAX_TRACE`]).
    pub truncated: bool,
}

/// Where a launch adds its counts.
#[derive(Default)]
pub struct Counters {
    totals: parking_lot::Mutex<Totals>,
}

impl Counters {
    pub fn totals(&self) -> Totals {
        self.totals.lock().clone()
    }
}

/// The executions of one instruction (a branch or an access) in a CTA: per thread, how many it has
/// made, and each execution keyed by its warp and its number within its thread, so that sorting by
/// the key groups the warp-level executions.
struct Trace {
    /// Bytes per access (0 for a branch).
    bytes: u64,
    made: Vec<u32>,
    entries: Vec<Entry>,
}

/// One execution: `warp << 32 | i` for its thread's i-th, the address (or 1 for a branch taken), and
/// the index in [`SPACES`] of the memory it touched.
#[derive(Clone, Copy)]
struct Entry {
    key: u64,
    value: u64,
    space: u8,
}

impl Trace {
    fn new(threads: usize, bytes: u64) -> Trace {
        Trace {
            bytes,
            made: vec![0; threads],
            entries: vec![],
        }
    }
    fn push(&mut self, t: usize, value: u64, space: u8) {
        let i = self.made[t];
        self.made[t] += 1;
        self.entries.push(Entry {
            key: ((t / 32) as u64) << 32 | i as u64,
            value,
            space,
        });
    }
    /// The warp-level executions, each as the entries of its threads.
    fn warp_level(&mut self) -> impl Iterator<Item = &[Entry]> {
        // A thread loop makes each thread's executions in turn: mostly sorted already.
        self.entries.sort_by_key(|e| e.key);
        self.entries.chunk_by(|a, b| a.key == b.key)
    }
}

struct Cta {
    key: (u64, [u32; 3], usize),
    threads: usize,
    sink: *const Counters,
    blocks: FxHashMap<u32, Vec<u32>>,
    branches: FxHashMap<u32, Trace>,
    accesses: FxHashMap<u32, Trace>,
    traced: usize,
    truncated: bool,
}

thread_local! {
    static CTA: RefCell<Option<Cta>> = const { RefCell::new(None) };
}

fn linear(env: &Env) -> usize {
    (env.tid[0] + env.ntid[0] * (env.tid[1] + env.ntid[1] * env.tid[2])) as usize
}

/// Runs `f` on the counts of `env`'s CTA, closing the CTA this thread ran before if it was another.
fn with_cta(env: &Env, sink: &Counters, f: impl FnOnce(&mut Cta, usize)) {
    CTA.with(|c| {
        let mut c = c.borrow_mut();
        let key = (env.gridid, env.ctaid, sink as *const Counters as usize);
        if c.as_ref().is_none_or(|cta| cta.key != key) {
            if let Some(old) = c.take() {
                close(old);
            }
            *c = Some(Cta {
                key,
                threads: env.ntid.iter().product::<u32>() as usize,
                sink,
                blocks: FxHashMap::default(),
                branches: FxHashMap::default(),
                accesses: FxHashMap::default(),
                traced: 0,
                truncated: false,
            });
        }
        if let Some(cta) = c.as_mut() {
            let t = linear(env);
            if t < cta.threads {
                f(cta, t);
            }
        }
    });
}

/// The thread enters the counted block at `site`.
pub fn block(env: &Env, sink: &Counters, site: u32) {
    with_cta(env, sink, |cta, t| {
        let n = cta.threads;
        cta.blocks.entry(site).or_insert_with(|| vec![0; n])[t] += 1;
    });
}

/// The conditional branch at `site` goes to its target (`taken`) or falls through.
pub fn branch(env: &Env, sink: &Counters, site: u32, taken: bool) {
    with_cta(env, sink, |cta, t| {
        let n = cta.threads;
        cta.branches
            .entry(site)
            .or_insert_with(|| Trace::new(n, 0))
            .push(t, taken as u64, 0);
    });
}

/// A checked access of `bytes` at `addr` by the instruction at `site` (`space`: its `SPACE_*` code;
/// `in_shared`: the address lies in the CTA's shared window).
pub fn access(env: &Env, sink: &Counters, addr: u64, bytes: u64, site: u32, space: u32, in_shared: bool) {
    let space = match space & SPACE_MASK {
        SPACE_GLOBAL => 0,
        SPACE_SHARED => 1,
        SPACE_LOCAL => 2,
        SPACE_CONST => 3,
        _ if in_shared => 1,
        _ if crate::runtime::checked::on_stack(addr) => 2,
        _ => 0,
    };
    // Banks are counted from the window's start.
    let at = if space == 1 {
        addr.wrapping_sub(env.shared as u64)
    } else {
        addr
    };
    with_cta(env, sink, |cta, t| {
        if cta.traced >= MAX_TRACE {
            cta.truncated = true;
            return;
        }
        cta.traced += 1;
        let n = cta.threads;
        cta.accesses
            .entry(site)
            .or_insert_with(|| Trace::new(n, bytes))
            .push(t, at, space);
    });
}

/// The CTA this thread ran is finished: its counts go to its launch's totals.
pub fn cta_done() {
    if let Some(cta) = CTA.with(|c| c.borrow_mut().take()) {
        close(cta);
    }
}

fn close(mut cta: Cta) {
    let mut add = Totals {
        ctas: 1,
        warps: cta.threads.div_ceil(32) as u64,
        truncated: cta.truncated,
        ..Default::default()
    };
    for (site, counts) in &cta.blocks {
        let threads = counts.iter().map(|&c| c as u64).sum();
        let warps = counts.chunks(32).map(|w| *w.iter().max().unwrap_or(&0) as u64).sum();
        add.blocks.insert(*site, (threads, warps));
    }
    for trace in cta.branches.values_mut() {
        for warp in trace.warp_level() {
            add.branches += 1;
            add.divergent += u64::from(warp.iter().any(|e| e.value != warp[0].value));
        }
    }
    let mut addrs = vec![];
    let mut units = vec![];
    for trace in cta.accesses.values_mut() {
        let bytes = trace.bytes.max(1);
        for warp in trace.warp_level() {
            for (s, totals) in add.spaces.iter_mut().enumerate() {
                addrs.clear();
                addrs.extend(warp.iter().filter(|e| e.space as usize == s).map(|e| e.value));
                if !addrs.is_empty() {
                    request(totals, s, &addrs, bytes, &mut units);
                }
            }
        }
    }
    // SAFETY: a launch's counters outlive its CTAs, which close before the launch returns.
    let sink = unsafe { &*cta.sink };
    sink.totals.lock().add(&add);
}

/// One warp-level request of space `s` by threads at `addrs`, `bytes` each (`units`: scratch).
fn request(t: &mut SpaceTotals, s: usize, addrs: &[u64], bytes: u64, units: &mut Vec<u64>) {
    t.accesses += addrs.len() as u64;
    t.bytes += addrs.len() as u64 * bytes;
    t.requests += 1;
    units.clear();
    match s {
        0 => {
            for &a in addrs {
                units.extend(a >> 5..=(a + bytes - 1) >> 5);
            }
            units.sort_unstable();
            units.dedup();
            t.sectors += units.len() as u64;
        }
        1 => {
            for &a in addrs {
                units.extend(a >> 2..=(a + bytes - 1) >> 2);
            }
            units.sort_unstable();
            units.dedup();
            let mut per_bank = [0u64; 32];
            for w in units.iter() {
                per_bank[(w % 32) as usize] += 1;
            }
            t.wavefronts += per_bank.iter().copied().max().unwrap_or(0);
            t.ideal_wavefronts += (units.len() as u64).div_ceil(32);
        }
        _ => {}
    }
}

impl Totals {
    fn add(&mut self, o: &Totals) {
        self.ctas += o.ctas;
        self.warps += o.warps;
        for (site, (t, w)) in &o.blocks {
            let e = self.blocks.entry(*site).or_default();
            e.0 += t;
            e.1 += w;
        }
        self.branches += o.branches;
        self.divergent += o.divergent;
        for (a, b) in self.spaces.iter_mut().zip(&o.spaces) {
            a.accesses += b.accesses;
            a.bytes += b.bytes;
            a.requests += b.requests;
            a.sectors += b.sectors;
            a.wavefronts += b.wavefronts;
            a.ideal_wavefronts += b.ideal_wavefronts;
        }
        self.truncated |= o.truncated;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sectors_and_bank_conflicts_of_one_request() {
        // 32 consecutive floats: four sectors; a stride of 32 floats: 32 sectors.
        let u = &mut vec![];
        let mut t = SpaceTotals::default();
        request(&mut t, 0, &(0..32).map(|i| 4096 + 4 * i).collect::<Vec<_>>(), 4, u);
        assert_eq!((t.requests, t.sectors, t.bytes), (1, 4, 128));
        request(&mut t, 0, &(0..32).map(|i| 128 * i).collect::<Vec<_>>(), 4, u);
        assert_eq!(t.sectors, 4 + 32);
        // Shared: consecutive words, one wavefront; all threads on one word, a broadcast; a stride of
        // two words, two-way conflicts; 16-byte accesses of consecutive words need four, no conflict.
        let mut s = SpaceTotals::default();
        request(&mut s, 1, &(0..32).map(|i| 4 * i).collect::<Vec<_>>(), 4, u);
        assert_eq!((s.wavefronts, s.ideal_wavefronts), (1, 1));
        request(&mut s, 1, &[8; 32], 4, u);
        assert_eq!((s.wavefronts, s.ideal_wavefronts), (2, 2));
        request(&mut s, 1, &(0..32).map(|i| 8 * i).collect::<Vec<_>>(), 4, u);
        assert_eq!((s.wavefronts, s.ideal_wavefronts), (4, 3));
        request(&mut s, 1, &(0..32).map(|i| 16 * i).collect::<Vec<_>>(), 16, u);
        assert_eq!((s.wavefronts, s.ideal_wavefronts), (8, 7));
    }

    #[test]
    fn executions_group_by_warp_and_number() {
        // Threads 0 and 1 (warp 0) run the instruction twice and once, thread 40 (warp 1) once.
        let mut t = Trace::new(64, 4);
        for (thread, value) in [(0, 10), (0, 11), (1, 20), (40, 30)] {
            t.push(thread, value, 0);
        }
        let groups: Vec<Vec<u64>> = t.warp_level().map(|w| w.iter().map(|e| e.value).collect()).collect();
        assert_eq!(groups, [vec![10, 20], vec![11], vec![30]]);
    }
}
