//! Exact counters of a launch (`ptx-jit bench kernel --counters`), from checked code built with
//! `ptx_llvm::Options::counters`: every thread reports each counted block it enters and the direction
//! of each conditional branch, and checked mode reports every memory access (`ptxjit_check`).
//!
//! Each CTA keeps, per thread, how often it entered each block, and each branch direction and each
//! access address numbered by the entry of its block it happened in. When the CTA ends, its warps
//! are put together under SIMT's model: what the threads of a warp do in their i-th entry of a block
//! is one warp-level execution (an instruction a predicate turns off in some threads still pairs the
//! others' executions rightly, as they are numbered by block entries). From that:
//! - a block's warp-level entries are, per warp, the most entries of any of its threads (and active
//!   lanes are thread-level over warp-level instructions);
//! - a branch execution is divergent when its active threads go both ways;
//! - a global request touches the distinct 32-byte sectors its threads' bytes fall in;
//! - a shared request needs as many wavefronts as the most distinct 4-byte words any one of the 32
//!   banks must deliver (threads reading one word share it), against the fewest its distinct words
//!   allow (one per 32 words); the difference is its bank conflicts.
//!
//! A CTA keeps at most [`MAX_TRACE`] branch directions and addresses; beyond, they are no longer
//! traced and the totals say so.

use crate::runtime::Env;
use ptx_llvm::abi::builtin::{SPACE_CONST, SPACE_GLOBAL, SPACE_LOCAL, SPACE_MASK, SPACE_SHARED};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::sync::Arc;

/// Branch directions and addresses one CTA may trace ([`Entry`]: 24 bytes each).
pub const MAX_TRACE: usize = 1 << 22;

/// The state spaces accesses are counted by (a generic address counts where it points).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    Global,
    Shared,
    Local,
    Const,
}

impl Space {
    pub const ALL: [Space; 4] = [Space::Global, Space::Shared, Space::Local, Space::Const];
    pub fn name(self) -> &'static str {
        match self {
            Space::Global => "global",
            Space::Shared => "shared",
            Space::Local => "local",
            Space::Const => "const",
        }
    }
}

/// What the accesses of one state space came to.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
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
    /// By [`Space`].
    pub spaces: [SpaceTotals; 4],
    /// Some branch directions or accesses were not traced ([`MAX_TRACE`]).
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

/// One execution of a branch or an access: `warp << 32 | entry`, the thread's entry of the block it
/// happened in, then the address (or 1 for a branch taken), its bytes and its [`Space`].
#[derive(Clone, Copy)]
struct Entry {
    key: u64,
    value: u64,
    bytes: u32,
    space: u8,
}

struct Cta {
    key: (u64, [u32; 3], usize),
    threads: usize,
    sink: Arc<Counters>,
    /// By block site, each thread's entries.
    blocks: FxHashMap<u32, Vec<u32>>,
    /// Each thread's entry of the block it is in (its count of that block's entries then).
    current: Vec<u32>,
    /// By site, the executions of branches and of accesses.
    branches: FxHashMap<u32, Vec<Entry>>,
    accesses: FxHashMap<u32, Vec<Entry>>,
    traced: usize,
    truncated: bool,
}

impl Cta {
    /// Room for one more traced execution.
    fn room(&mut self) -> bool {
        self.traced += 1;
        self.truncated |= self.traced > MAX_TRACE;
        self.traced <= MAX_TRACE
    }
    fn entry(&self, t: usize, value: u64, bytes: u32, space: Space) -> Entry {
        Entry {
            key: ((t / 32) as u64) << 32 | self.current[t] as u64,
            value,
            bytes,
            space: space as u8,
        }
    }
}

thread_local! {
    static CTA: RefCell<Option<Cta>> = const { RefCell::new(None) };
}

/// Runs `f` on the counts of `env`'s CTA, closing the CTA this thread ran before if it was another.
fn with_cta(env: &Env, sink: &Arc<Counters>, f: impl FnOnce(&mut Cta, usize)) {
    CTA.with(|c| {
        let mut c = c.borrow_mut();
        let key = (env.gridid, env.ctaid, Arc::as_ptr(sink) as usize);
        if c.as_ref().is_none_or(|cta| cta.key != key) {
            if let Some(old) = c.take() {
                close(old);
            }
            let threads = env.ntid.iter().product::<u32>() as usize;
            *c = Some(Cta {
                key,
                threads,
                sink: sink.clone(),
                blocks: FxHashMap::default(),
                current: vec![0; threads],
                branches: FxHashMap::default(),
                accesses: FxHashMap::default(),
                traced: 0,
                truncated: false,
            });
        }
        if let Some(cta) = c.as_mut() {
            let t = crate::runtime::thread_index(env) as usize;
            if t < cta.threads {
                f(cta, t);
            }
        }
    });
}

/// The thread enters the counted block at `site`.
pub fn block(env: &Env, sink: &Arc<Counters>, site: u32) {
    with_cta(env, sink, |cta, t| {
        let n = cta.threads;
        let entries = &mut cta.blocks.entry(site).or_insert_with(|| vec![0; n])[t];
        *entries += 1;
        cta.current[t] = *entries;
    });
}

/// The conditional branch at `site` goes to its target (`taken`) or falls through.
pub fn branch(env: &Env, sink: &Arc<Counters>, site: u32, taken: bool) {
    with_cta(env, sink, |cta, t| {
        if cta.room() {
            // A branch touches no memory: its entry's space is never read.
            let e = cta.entry(t, taken as u64, 0, Space::Global);
            cta.branches.entry(site).or_default().push(e);
        }
    });
}

/// A checked access of `bytes` at `addr` by the instruction at `site` (`space`: its `SPACE_*` code;
/// `in_shared`: the address lies in the CTA's shared window).
pub fn access(env: &Env, sink: &Arc<Counters>, addr: u64, bytes: u64, site: u32, space: u32, in_shared: bool) {
    let space = match space & SPACE_MASK {
        SPACE_GLOBAL => Space::Global,
        SPACE_SHARED => Space::Shared,
        SPACE_LOCAL => Space::Local,
        SPACE_CONST => Space::Const,
        _ if in_shared => Space::Shared,
        _ if crate::runtime::checked::on_stack(addr) => Space::Local,
        _ => Space::Global,
    };
    // Banks are counted from the window's start.
    let at = if space == Space::Shared {
        addr.wrapping_sub(env.shared as u64)
    } else {
        addr
    };
    with_cta(env, sink, |cta, t| {
        if cta.room() {
            let e = cta.entry(t, at, bytes.min(u32::MAX as u64) as u32, space);
            cta.accesses.entry(site).or_default().push(e);
        }
    });
}

/// The CTA this thread ran is finished: its counts go to its launch's totals.
pub fn cta_done() {
    if let Some(cta) = CTA.with(|c| c.borrow_mut().take()) {
        close(cta);
    }
}

/// The warp-level executions among `entries`, each as the entries of its threads.
fn warp_level(entries: &mut [Entry]) -> impl Iterator<Item = &[Entry]> {
    // A thread loop makes each thread's executions in turn: mostly sorted already. The sort is
    // stable, so a warp-level execution keeps its threads in order.
    entries.sort_by_key(|e| e.key);
    entries.chunk_by(|a, b| a.key == b.key)
}

/// A CTA's counts set aside while the fiber scheduler runs another CTA of its cluster on this thread
/// (see `crate::runtime::checked::Parked`).
pub struct Parked(Option<Cta>);

/// Takes this thread's CTA counts out, to be put back with [`unpark`].
pub fn park() -> Parked {
    Parked(CTA.with(|c| c.borrow_mut().take()))
}

/// Puts parked counts back as this thread's; the slot must be empty (parked first).
pub fn unpark(p: Parked) {
    CTA.with(|c| *c.borrow_mut() = p.0);
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
    for entries in cta.branches.values_mut() {
        for warp in warp_level(entries) {
            add.branches += 1;
            add.divergent += u64::from(warp.iter().any(|e| e.value != warp[0].value));
        }
    }
    let (mut mine, mut units) = (vec![], vec![]);
    for entries in cta.accesses.values_mut() {
        for warp in warp_level(entries) {
            for s in Space::ALL {
                mine.clear();
                mine.extend(
                    warp.iter()
                        .filter(|e| e.space == s as u8)
                        .map(|e| (e.value, e.bytes as u64)),
                );
                if !mine.is_empty() {
                    request(&mut add.spaces[s as usize], s, &mine, &mut units);
                }
            }
        }
    }
    cta.sink.totals.lock().add(&add);
}

/// One warp-level request of space `s` by threads at the (address, bytes) of `at` (`units`: scratch).
fn request(t: &mut SpaceTotals, s: Space, at: &[(u64, u64)], units: &mut Vec<u64>) {
    t.accesses += at.len() as u64;
    t.bytes += at.iter().map(|a| a.1).sum::<u64>();
    t.requests += 1;
    units.clear();
    let span = |a: u64, bytes: u64, shift: u32| (a >> shift)..=(a + bytes.max(1) - 1) >> shift;
    match s {
        Space::Global => {
            at.iter().for_each(|&(a, b)| units.extend(span(a, b, 5)));
            units.sort_unstable();
            units.dedup();
            t.sectors += units.len() as u64;
        }
        Space::Shared => {
            at.iter().for_each(|&(a, b)| units.extend(span(a, b, 2)));
            units.sort_unstable();
            units.dedup();
            let mut per_bank = [0u64; 32];
            for w in units.iter() {
                per_bank[(w % 32) as usize] += 1;
            }
            t.wavefronts += per_bank.iter().copied().max().unwrap_or(0);
            t.ideal_wavefronts += (units.len() as u64).div_ceil(32);
        }
        Space::Local | Space::Const => {}
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

    fn all(addrs: impl Iterator<Item = u64>, bytes: u64) -> Vec<(u64, u64)> {
        addrs.map(|a| (a, bytes)).collect()
    }

    #[test]
    fn sectors_and_bank_conflicts_of_one_request() {
        let u = &mut vec![];
        // 32 consecutive floats: four sectors; a stride of 32 floats: 32 sectors.
        let mut t = SpaceTotals::default();
        request(&mut t, Space::Global, &all((0..32).map(|i| 4096 + 4 * i), 4), u);
        assert_eq!((t.requests, t.sectors, t.bytes), (1, 4, 128));
        request(&mut t, Space::Global, &all((0..32).map(|i| 128 * i), 4), u);
        assert_eq!(t.sectors, 4 + 32);
        // Shared: consecutive words, one wavefront; all threads on one word, a broadcast; a stride of
        // two words, two-way conflicts; 16-byte accesses of consecutive words need four, no conflict.
        let mut s = SpaceTotals::default();
        request(&mut s, Space::Shared, &all((0..32).map(|i| 4 * i), 4), u);
        assert_eq!((s.wavefronts, s.ideal_wavefronts), (1, 1));
        request(&mut s, Space::Shared, &all(std::iter::repeat_n(8, 32), 4), u);
        assert_eq!((s.wavefronts, s.ideal_wavefronts), (2, 2));
        request(&mut s, Space::Shared, &all((0..32).map(|i| 8 * i), 4), u);
        assert_eq!((s.wavefronts, s.ideal_wavefronts), (4, 3));
        request(&mut s, Space::Shared, &all((0..32).map(|i| 16 * i), 16), u);
        assert_eq!((s.wavefronts, s.ideal_wavefronts), (8, 7));
    }

    #[test]
    fn executions_group_by_warp_and_block_entry() {
        // Threads 0 and 1 (warp 0) in their first entry, thread 0 in its second, thread 40 (warp 1)
        // in its first: three warp-level executions.
        let e = |t: u64, entry: u64, value| Entry {
            key: (t / 32) << 32 | entry,
            value,
            bytes: 4,
            space: 0,
        };
        let mut entries = vec![e(0, 1, 10), e(0, 2, 11), e(1, 1, 20), e(40, 1, 30)];
        let groups: Vec<Vec<u64>> = warp_level(&mut entries)
            .map(|w| w.iter().map(|e| e.value).collect())
            .collect();
        assert_eq!(groups, [vec![10, 20], vec![11], vec![30]]);
    }
}
