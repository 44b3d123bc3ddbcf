//! CTAs whose kernels synchronise threads: every thread of the CTA runs on its own fiber, which
//! suspends at barriers and warp collectives. The scheduler resumes runnable fibers until each waits
//! or finishes, then releases what can proceed:
//! - a warp collective once every live lane of its member mask waits at one (independent thread
//!   scheduling: lanes outside the mask go on alone);
//! - a named barrier once its thread count (or, without one, every live thread of the CTA) has arrived,
//!   `bar.arrive` included, handing out `bar.red` results;
//! - `activemask` once the whole warp is blocked: its lanes are the ones waiting at the same site;
//! - yields (`nanosleep`, `mbarrier` polls) at once, after the others have run; in a cooperative
//!   launch, when nothing else can, the worker gives up its time slice first.
//!
//! Threads that have exited count as arrived (as on sm_70+). If nothing can proceed, the kernel would
//! hang on a GPU; the launch fails instead.

use crate::jit::host::HostKernel;
use crate::runtime::{Env, Launch, LaunchError, SharedWindow};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use ptx_llvm::collective::{Kind, Reduction, CLUSTER_BARRIER};
use rayon::prelude::*;
use std::ffi::c_void;

/// Fiber stacks: JIT'd thread bodies keep registers in stack slots and recurse only through `call`;
/// a kernel's own `.local` arrays come on top.
const STACK_BYTES: usize = 256 * 1024;
/// Named barriers per CTA (`bar` ids 0–15), and the cluster barrier (`Lane::cluster_bar`).
const BARRIERS: usize = CLUSTER_BARRIER as usize + 1;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Wait {
    Bar {
        id: u32,
        op: u32,
    },
    /// `barrier.cluster.wait`: until barrier `id` has completed the phase this thread arrived in.
    Phase {
        id: u32,
        phase: u32,
    },
    Warp {
        mask: u32,
    },
    Converge {
        site: u32,
    },
    Yield,
}

type Fiber = Coroutine<(), Wait, crate::runtime::trap::Outcome, DefaultStack>;

/// What a fiber's `collective` calls need: its yielder, lane, the CTA's shared state, and the result
/// the scheduler hands it when it releases a barrier or an `activemask`.
struct Lane {
    yielder: *const Yielder<(), Wait>,
    lane: u32,
    warp: *mut Warp,
    /// The CTA's named barriers, and the cluster's barrier (the CTA's own outside clusters).
    bars: *mut Barrier,
    cluster_bar: *mut Barrier,
    result: u64,
    /// The cluster barrier's phase this thread last arrived in (for `barrier.cluster.wait`), and
    /// whether that arrival is still counted: a thread that exits after arriving no longer is.
    cluster_phase: u32,
    cluster_arrived: bool,
    /// The byte offset of the barrier or warp collective this thread last reached (checked code
    /// says, through [`note_site`]).
    site: u32,
    /// Whether that was a barrier every thread must reach at the same instruction (`.aligned`).
    aligned: bool,
    /// The launch's record, for synccheck's findings.
    cell: *const crate::runtime::checked::FaultCell,
    /// This thread's index in the block.
    tid: [u32; 3],
}

impl Lane {
    /// Barrier `id`: one of the CTA's, or the cluster's.
    fn barrier(&self, id: usize) -> *mut Barrier {
        if id == CLUSTER_BARRIER as usize {
            self.cluster_bar
        } else {
            // SAFETY: `bars` holds BARRIERS entries.
            unsafe { self.bars.add(id) }
        }
    }
}

/// Values exchanged by one warp, and which lanes are still running.
struct Warp {
    slots: [u64; 32],
    live: u32,
    /// The site whose lanes an `activemask` or lockstep access last let go on, and how many times in
    /// a row while other lanes of the warp waited at another (see `release_cta`).
    converged: std::cell::Cell<(u32, u32)>,
    /// The block, for synccheck's findings.
    ctaid: [u32; 3],
}

#[derive(Clone, Copy, Default)]
struct Barrier {
    arrived: u32,
    /// The thread count named by `bar.sync a, b` (0: every live thread).
    expected: u32,
    popc: u32,
    all: bool,
    any: bool,
    /// Phases completed so far.
    phase: u32,
}

impl Barrier {
    fn arrive(&mut self, expected: u32, pred: bool) {
        if self.arrived == 0 {
            *self = Barrier {
                arrived: 0,
                expected,
                popc: 0,
                all: true,
                any: false,
                phase: self.phase,
            };
        }
        self.arrived += 1;
        self.expected = self.expected.max(expected);
        self.popc += pred as u32;
        self.all &= pred;
        self.any |= pred;
    }
    fn result(&self, op: u32) -> u64 {
        match Reduction::from_code(op) {
            Reduction::Popc => self.popc as u64,
            Reduction::And => self.all as u64,
            Reduction::Or => self.any as u64,
            Reduction::None => 0,
        }
    }
}

/// Publishes a value, waits for the member lanes, lets `f` read the warp, and waits again so no lane
/// overwrites its slot before every member has read.
fn exchange(me: &Lane, value: u64, mask: u32, f: impl FnOnce(&Warp, u32) -> u64) -> u64 {
    let y = unsafe { &*me.yielder };
    let warp = me.warp;
    unsafe { (*warp).slots[me.lane as usize] = value };
    y.suspend(Wait::Warp { mask });
    let members = (mask | 1 << me.lane) & unsafe { (*warp).live };
    let r = f(unsafe { &*warp }, members);
    y.suspend(Wait::Warp { mask });
    r
}

unsafe extern "C" fn collective(sync: *mut c_void, kind: u32, a: u32, b: u32, c: u32, mask: u32) -> u64 {
    // SAFETY: `sync` is the `Lane` of the fiber running this call; its CTA outlives the fibers.
    let me = unsafe { &mut *(sync as *mut Lane) };
    let y = unsafe { &*me.yielder };
    let lane = me.lane;
    let Some(kind) = Kind::from_code(kind) else { return 0 };
    if let Some(mode) = kind.shfl_mode() {
        return exchange(me, a as u64, mask, |w, _| {
            let (src, valid) = shfl_source(mode, lane, b, c);
            (w.slots[src] as u32) as u64 | (valid as u64) << 32
        });
    }
    if let Some(mode) = kind.vote_mode() {
        return exchange(me, (a & 1) as u64, mask, |w, members| {
            // Only the mask's threads vote (9.7.14.9): a thread that leaves itself out, which the
            // manual leaves undefined, gets the others' votes, as on a GPU.
            let voters = members & mask;
            let ballot = (0..32)
                .filter(|&i| voters >> i & 1 == 1 && w.slots[i] == 1)
                .fold(0u32, |m, i| m | 1 << i);
            vote_result(mode, ballot, voters)
        });
    }
    if let Some(op) = kind.redux_op() {
        return exchange(me, a as u64, mask, |w, members| {
            let vals = (0..32).filter(|&i| members >> i & 1 == 1).map(|i| w.slots[i] as u32);
            let signed = b == 1;
            (match op {
                0 => vals.fold(0u32, u32::wrapping_add),
                1 if signed => vals.map(|v| v as i32).min().unwrap_or(0) as u32,
                1 => vals.min().unwrap_or(0),
                2 if signed => vals.map(|v| v as i32).max().unwrap_or(0) as u32,
                2 => vals.max().unwrap_or(0),
                3 => vals.fold(u32::MAX, |x, v| x & v),
                4 => vals.fold(0, |x, v| x | v),
                _ => vals.fold(0, |x, v| x ^ v),
            }) as u64
        });
    }
    match kind {
        Kind::BarSync | Kind::BarArrive => {
            let id = (a as usize) % BARRIERS;
            let bar = unsafe { &mut *me.barrier(id) };
            let op = c;
            // SAFETY: the launch's record outlives its fibers.
            let cell = unsafe { &*me.cell };
            if bar.arrived > 0 && bar.expected != b && !cell.faulted() {
                if cell.tools.has(crate::runtime::sanitize::Tools::SYNCCHECK) {
                    let detail = format!("barrier {id} awaited {} and {b} threads", bar.expected);
                    synccheck(cell, crate::runtime::sanitize::Kind::BarrierCount, me, detail);
                }
                // The launch ends here, as on a GPU; the CTA's scheduler stops at the fault.
                cell.record(crate::runtime::checked::Fault {
                    tid: Some(me.tid),
                    ctaid: Some(unsafe { (*me.warp).ctaid }),
                    ..crate::runtime::checked::Fault::of(crate::runtime::checked::FaultKind::BarrierCount {
                        barrier: id as u32,
                        counts: [bar.expected, b],
                    })
                });
            }
            // The phase this arrival belongs to, for a later `barrier.cluster.wait`.
            me.result = bar.phase as u64;
            if id == CLUSTER_BARRIER as usize {
                me.cluster_phase = bar.phase;
                me.cluster_arrived = true;
            }
            bar.arrive(b, mask & 1 == 1);
            if kind == Kind::BarSync {
                y.suspend(Wait::Bar { id: id as u32, op });
            }
            me.result
        }
        Kind::BarWait => {
            let id = a % BARRIERS as u32;
            let phase = if id == CLUSTER_BARRIER {
                me.cluster_phase
            } else {
                me.result as u32
            };
            if unsafe { (*me.barrier(id as usize)).phase } == phase {
                y.suspend(Wait::Phase { id, phase });
            }
            0
        }
        Kind::WarpSync => {
            y.suspend(Wait::Warp { mask });
            0
        }
        Kind::Activemask | Kind::Lockstep => {
            y.suspend(Wait::Converge { site: c });
            me.result
        }
        Kind::Yield => {
            y.suspend(Wait::Yield);
            0
        }
        Kind::Mma | Kind::Ldmatrix | Kind::Stmatrix => {
            let buf = (a as u64 | (b as u64) << 32) as *mut u32;
            exchange(me, buf as u64, mask, |w, _| unsafe {
                crate::emu::matrix::warp_op(kind, c, w.slots.as_ptr(), lane)
            })
        }
        Kind::Wmma => {
            let buf = (a as u64 | (b as u64) << 32) as *mut u32;
            exchange(me, buf as u64, mask, |w, _| unsafe {
                crate::emu::matrix::wmma(w.slots.as_ptr(), lane)
            })
        }
        Kind::Wgmma => {
            let buf = (a as u64 | (b as u64) << 32) as *mut u32;
            exchange(me, buf as u64, mask, |w, members| {
                match unsafe { crate::emu::wgmma::lane(w.slots.as_ptr(), lane, members) } {
                    Ok(()) => 0,
                    Err(f) => {
                        use crate::runtime::checked::FaultKind;
                        // SAFETY: the lane's environment, which its thread is still running in.
                        let env = unsafe { &*f.env };
                        let kind = if f.address {
                            FaultKind::Shared(f.why)
                        } else {
                            FaultKind::Illegal(f.why)
                        };
                        crate::runtime::checked::trap(env, f.site, kind);
                        1
                    }
                }
            })
        }
        Kind::Movmatrix => exchange(me, a as u64, mask, |w, _| {
            let regs: [u32; 32] = std::array::from_fn(|i| w.slots[i] as u32);
            crate::emu::mma::movmatrix_lane(&regs, lane as usize) as u64
        }),
        Kind::MatchAny | Kind::MatchAll => exchange(me, a as u64 | (b as u64) << 32, mask, |w, members| {
            let mine = w.slots[lane as usize];
            let same = (0..32)
                .filter(|&i| members >> i & 1 == 1 && w.slots[i] == mine)
                .fold(0u32, |m, i| m | 1 << i);
            if kind == Kind::MatchAny {
                same as u64
            } else if same == members {
                members as u64 | 1 << 32
            } else {
                0
            }
        }),
        // Handled above.
        Kind::ShflUp
        | Kind::ShflDown
        | Kind::ShflBfly
        | Kind::ShflIdx
        | Kind::VoteAll
        | Kind::VoteAny
        | Kind::VoteUni
        | Kind::VoteBallot
        | Kind::ReduxAdd
        | Kind::ReduxMin
        | Kind::ReduxMax
        | Kind::ReduxAnd
        | Kind::ReduxOr
        | Kind::ReduxXor => 0,
    }
}

/// Checked code's note of the barrier or warp collective the thread running on fiber `sync` is about
/// to reach.
pub fn note_site(sync: *mut c_void, site: u32, aligned: bool) {
    // SAFETY: a fiber kernel's `env.sync` is its `Lane`; other kernels pass null.
    if let Some(lane) = unsafe { (sync as *mut Lane).as_mut() } {
        lane.site = site;
        lane.aligned = aligned;
    }
}

/// Records a synccheck finding at `lane`'s last barrier.
fn synccheck(
    cell: &crate::runtime::checked::FaultCell,
    kind: crate::runtime::sanitize::Kind,
    lane: &Lane,
    detail: String,
) {
    synccheck_at(cell, kind, &[lane], detail);
}

/// Records a synccheck finding at the last barriers of `lanes`.
fn synccheck_at(
    cell: &crate::runtime::checked::FaultCell,
    kind: crate::runtime::sanitize::Kind,
    lanes: &[&Lane],
    detail: String,
) {
    use crate::runtime::sanitize::{Access, Finding, How};
    let accesses = lanes
        .iter()
        .map(|l| Access {
            site: (l.site != 0).then_some(l.site),
            tid: Some(l.tid),
            how: How::Sync,
        })
        .collect();
    let ctaid = unsafe { (*lanes[0].warp).ctaid };
    crate::runtime::sanitize::record(
        cell,
        Finding {
            kind,
            ctaid: Some(ctaid),
            addr: 0,
            bytes: 0,
            space: 0,
            accesses,
            detail,
        },
    );
}

/// The lane `shfl` mode `mode` (0..4: up, down, bfly, idx) reads for `lane`, and whether it is in range.
pub(crate) fn shfl_source(mode: u32, lane: u32, b: u32, c: u32) -> (usize, bool) {
    let (bval, cval, seg) = ((b & 31) as i32, (c & 31) as i32, ((c >> 8) & 31) as i32);
    let l = lane as i32;
    let max_lane = (l & seg) | (cval & !seg);
    let min_lane = l & seg;
    let (j, valid) = match mode {
        0 => (l - bval, l - bval >= max_lane),
        1 => (l + bval, l + bval <= max_lane),
        2 => (l ^ bval, (l ^ bval) <= max_lane),
        _ => {
            let j = min_lane | (bval & !seg);
            (j, j <= max_lane)
        }
    };
    ((if valid { j } else { l }) as usize & 31, valid)
}

/// `vote` mode `mode` (0..4: all, any, uni, ballot) over a warp's `ballot` of its `live` lanes.
pub(crate) fn vote_result(mode: u32, ballot: u32, live: u32) -> u64 {
    match mode {
        0 => (ballot == live) as u64,
        1 => (ballot != 0) as u64,
        2 => (ballot == live || ballot == 0) as u64,
        _ => ballot as u64,
    }
}

thread_local! {
    /// Stacks kept between CTAs on this worker, so a launch does not map and unmap them per CTA.
    static STACKS: std::cell::RefCell<Vec<DefaultStack>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Runnable,
    Waiting(Wait),
    Done,
}

/// Which CTA of a cluster of several the thread's sanitizer and counter state belongs to; the
/// others' is parked. The scheduler switches before it runs a CTA's fibers or releases its
/// barriers, so each CTA's accesses and epochs land in its own state.
struct Owner<'c> {
    cell: &'c crate::runtime::checked::FaultCell,
    parked: Vec<Option<crate::runtime::checked::Parked>>,
    current: usize,
    active: bool,
}

impl<'c> Owner<'c> {
    fn new(cell: &'c crate::runtime::checked::FaultCell, ctas: usize) -> Self {
        Owner {
            cell,
            parked: (0..ctas).map(|_| None).collect(),
            current: 0,
            active: ctas > 1 && cell.tracks_ctas(),
        }
    }

    fn switch(&mut self, c: usize) {
        if !self.active || c == self.current {
            return;
        }
        self.parked[self.current] = Some(self.cell.park());
        if let Some(p) = self.parked[c].take() {
            p.resume();
        }
        self.current = c;
    }

    /// Every CTA is done: settles each.
    fn finish(&mut self) {
        for c in 0..self.parked.len() {
            self.switch(c);
            self.cell.cta_done();
        }
    }
}

/// Marks runnable whatever can proceed in a cluster of `bars.len()` CTAs of `per_cta` threads each
/// (threads, lanes and warps in rank order); false if nothing can.
#[allow(clippy::too_many_arguments)]
fn release(
    state: &mut [State],
    lanes: &mut [Lane],
    warps: &[Warp],
    bars: &mut [[Barrier; BARRIERS]],
    cluster_bar: &mut Barrier,
    per_cta: usize,
    owner: &mut Owner<'_>,
    cooperative: bool,
) -> bool {
    let cell = owner.cell;
    let mut released = false;
    let wpc = per_cta.div_ceil(32);
    for (c, cta_bars) in bars.iter_mut().enumerate() {
        let r = c * per_cta..(c + 1) * per_cta;
        owner.switch(c);
        released |= release_cta(
            &mut state[r.clone()],
            &mut lanes[r],
            &warps[c * wpc..(c + 1) * wpc],
            cta_bars,
            cell,
        );
    }
    if release_barrier(state, lanes, CLUSTER_BARRIER as usize, cluster_bar, cell) {
        for l in lanes.iter_mut() {
            l.cluster_arrived = false;
        }
        // The cluster's barrier starts an epoch in each CTA.
        let mine = owner.current;
        for c in (0..bars.len()).filter(|&c| c != mine) {
            owner.switch(c);
            crate::runtime::sanitize::barrier_completed();
        }
        released = true;
    }
    for (i, s) in state.iter_mut().enumerate() {
        if let State::Waiting(Wait::Phase { id, phase }) = *s {
            let bar = if id == CLUSTER_BARRIER {
                &*cluster_bar
            } else {
                &bars[i / per_cta][id as usize]
            };
            if bar.phase != phase {
                *s = State::Runnable;
                released = true;
            }
        }
    }
    // Threads that yielded go on too, but only now: until here they count as waiting, so the lanes of
    // their warp at an `activemask` or a lockstep access are not kept waiting for them.
    let mut yielders = false;
    for s in state.iter_mut() {
        if *s == State::Waiting(Wait::Yield) {
            *s = State::Runnable;
            yielders = true;
        }
    }
    // In a cooperative launch, only threads that poll memory with `nanosleep` between looks can go
    // on: what they wait for comes from another CTA, so the CPU goes to it first.
    if yielders && !released && cooperative {
        std::thread::yield_now();
    }
    released || yielders
}

/// How many times in a row the lanes at one converge site go on while other lanes of their warp wait
/// at another, before those go once.
const STARVING: u32 = 32;

/// One CTA's warp collectives, `activemask`s and named barriers.
fn release_cta(
    state: &mut [State],
    lanes: &mut [Lane],
    warps: &[Warp],
    bars: &mut [Barrier; BARRIERS],
    cell: &crate::runtime::checked::FaultCell,
) -> bool {
    use crate::runtime::sanitize::{Kind, Tools};
    let sync = cell.tools.has(Tools::SYNCCHECK);
    let n = state.len();
    let mut released = false;
    for (w, warp) in warps.iter().enumerate() {
        let range = w * 32..((w + 1) * 32).min(n);
        // Warp collectives: each distinct member mask whose live lanes all wait, judged on the states
        // before this pass, so that lanes naming different masks (each must name all the others, but
        // code that leaves itself out exists) go on together, as a GPU's warp executes the collective
        // once for all of them.
        let masks: Vec<Option<u32>> = range
            .clone()
            .map(|i| match state[i] {
                State::Waiting(Wait::Warp { mask }) => Some(mask),
                _ => None,
            })
            .collect();
        let mask_of = |j: usize| masks[j - range.start];
        for i in range.clone() {
            let Some(mask) = mask_of(i) else { continue };
            let members = (mask | 1 << (i % 32)) & warp.live;
            let group = range.clone().filter(|&j| members >> (j % 32) & 1 == 1);
            if group.clone().all(|j| mask_of(j).is_some()) {
                // The manual: every thread waits for the non-exited threads of the mask, which must
                // execute the collective with the same mask.
                if sync {
                    if let Some((j, m)) = group
                        .clone()
                        .find_map(|j| mask_of(j).filter(|&m| m != mask).map(|m| (j, m)))
                    {
                        let detail = format!("lane {} passed {mask:#010x}, lane {} passed {m:#010x}", i % 32, j % 32);
                        synccheck_at(cell, Kind::WarpMask, &[&lanes[i], &lanes[j]], detail);
                    }
                }
                for j in group {
                    state[j] = State::Runnable;
                }
                crate::runtime::sanitize::warp_synced(w);
                released = true;
            }
        }
        // activemask: when no lane of the warp can move, the lanes at one site form the mask.
        let blocked = range.clone().all(|i| !matches!(state[i], State::Runnable));
        if blocked {
            let mut sites: Vec<u32> = vec![];
            for i in range.clone() {
                if let State::Waiting(Wait::Converge { site }) = state[i] {
                    if !sites.contains(&site) {
                        sites.push(site);
                    }
                }
            }
            // The lowest lane's site goes first, as a GPU's warp runs its lower lanes' path first;
            // but a site released `STARVING` times in a row while lanes wait at another (a lane spinning
            // on a flag that another lane of its warp is to set) lets the next site go once.
            let (last, streak) = warp.converged.get();
            let (site, streak) = match sites.as_slice() {
                [first, second, ..] if *first == last && streak >= STARVING => (Some(*second), 0),
                [first, _, ..] if *first == last => (Some(*first), streak + 1),
                [first, ..] => (Some(*first), 0),
                [] => (None, 0),
            };
            if let Some(site) = site {
                warp.converged.set((site, streak));
                let at_site: Vec<usize> = range
                    .clone()
                    .filter(|&i| state[i] == State::Waiting(Wait::Converge { site }))
                    .collect();
                let m = at_site.iter().fold(0u32, |m, &i| m | 1 << (i % 32));
                for i in at_site {
                    lanes[i].result = m as u64;
                    state[i] = State::Runnable;
                }
                released = true;
            }
        }
    }
    for (id, bar) in bars.iter_mut().enumerate().take(CLUSTER_BARRIER as usize) {
        released |= release_barrier(state, lanes, id, bar, cell);
    }
    released
}

/// Barrier `id` of the threads of `state` (a CTA's, or the cluster's): completes its phase when its
/// count is in, handing `bar.red` results to the threads waiting on it.
fn release_barrier(
    state: &mut [State],
    lanes: &mut [Lane],
    id: usize,
    bar: &mut Barrier,
    cell: &crate::runtime::checked::FaultCell,
) -> bool {
    use crate::runtime::sanitize::{Kind, Tools};
    if bar.arrived == 0 {
        return false;
    }
    let n = state.len();
    let live = state.iter().filter(|s| **s != State::Done).count() as u32;
    let expected = if bar.expected == 0 { live } else { bar.expected };
    let waiters = state
        .iter()
        .any(|s| matches!(s, State::Waiting(Wait::Bar { id: b, .. }) if *b as usize == id));
    // A phase completes when its count is in; a named barrier also needs a thread waiting on it
    // (arrivals from bar.arrive alone carry over to the next bar.sync).
    if bar.arrived < expected || !(waiters || id == CLUSTER_BARRIER as usize) {
        return false;
    }
    let waiting: Vec<usize> = (0..n)
        .filter(|&i| matches!(state[i], State::Waiting(Wait::Bar { id: b, .. }) if b as usize == id))
        .collect();
    if cell.tools.has(Tools::SYNCCHECK) {
        // Threads released together from different instructions, one of them an aligned barrier
        // (`bar.sync`), which all must reach at the same place: a divergent barrier. Unaligned
        // `barrier.sync` counts arrivals per barrier, wherever they come from (sm_70+).
        let first = waiting.first().map(|&i| &lanes[i]);
        if let Some(&other) = waiting
            .iter()
            .find(|&&i| first.is_some_and(|f| lanes[i].site != f.site && (lanes[i].aligned || f.aligned)))
        {
            let detail = format!("barrier {id} was reached at two different instructions");
            synccheck_at(
                cell,
                Kind::DivergentBarrier,
                &[&lanes[waiting[0]], &lanes[other]],
                detail,
            );
        }
    }
    // racecheck skips loads proved race-free on the ground that all threads of an epoch start it
    // at one barrier instruction; threads released from different ones void that for the rest
    // of the launch.
    if cell.tools.has(Tools::RACECHECK) && waiting.iter().any(|&i| lanes[i].site != lanes[waiting[0]].site) {
        cell.watch
            .fetch_or(ptx_llvm::builtin::WATCH_UNRACED, std::sync::atomic::Ordering::Relaxed);
    }
    for &i in &waiting {
        if let State::Waiting(Wait::Bar { op, .. }) = state[i] {
            lanes[i].result = bar.result(op);
            state[i] = State::Runnable;
        }
    }
    bar.arrived = 0;
    bar.phase = bar.phase.wrapping_add(1);
    crate::runtime::sanitize::barrier_completed();
    true
}

/// Runs the CTAs of one cluster (one CTA outside cluster launches), given in rank order with a
/// shared window each: every thread of every CTA on a fiber of one scheduler, so the CTAs can wait
/// for each other (`barrier.cluster`, mbarriers signalled across the cluster) and reach each
/// other's shared memory through the cluster's table of windows (`Env::cluster_shared`).
fn run_cluster(
    l: &Launch<'_>,
    entry: ptx_llvm::abi::BlockFn,
    ctas: &[u64],
    windows: &mut [SharedWindow],
    fault: *const c_void,
    local_bytes: usize,
) -> Result<(), LaunchError> {
    let [bx, by, bz] = l.block;
    let per_cta = (bx * by * bz) as usize;
    let n = per_cta * ctas.len();
    let wpc = per_cta.div_ceil(32);
    // SAFETY: `fault` is the launch's record, alive until the launch returns.
    let cell = unsafe { &*(fault as *const crate::runtime::checked::FaultCell) };
    if cell.faulted() {
        return Ok(()); // the launch has failed: no further CTAs start
    }
    let mut owner = Owner::new(cell, ctas.len());
    // The windows by rank, then their initcheck maps (`Env::cluster_shared`).
    let mut table = [std::ptr::null_mut::<u8>(); 2 * ptx_llvm::abi::CLUSTER_TABLE];
    for (t, w) in table.iter_mut().zip(windows.iter_mut()) {
        *t = w.words().as_mut_ptr() as *mut u8;
    }
    let mut bases: Vec<Env> = ctas
        .iter()
        .zip(windows.iter_mut())
        .enumerate()
        .map(|(c, (&cta, w))| {
            owner.switch(c);
            let mut base = crate::runtime::env_for_cta(l, cta, w.words(), collective);
            base.fault = fault;
            if cell.tools.has(crate::runtime::sanitize::Tools::INITCHECK) {
                base.written = crate::runtime::sanitize::written_map(&base, cell);
            }
            base
        })
        .collect();
    for (c, base) in bases.iter_mut().enumerate() {
        table[ptx_llvm::abi::CLUSTER_TABLE + c] = base.written as *mut u8;
        base.cluster_shared = table.as_ptr();
    }
    let mut warps: Vec<Warp> = (0..ctas.len() * wpc)
        .map(|w| Warp {
            slots: [0; 32],
            live: if (w % wpc + 1) * 32 <= per_cta {
                u32::MAX
            } else {
                (1u32 << (per_cta % 32)) - 1
            },
            converged: Default::default(),
            ctaid: bases[w / wpc].ctaid,
        })
        .collect();
    let mut bars = vec![[Barrier::default(); BARRIERS]; ctas.len()];
    let mut cluster_bar = Barrier::default();
    // Fibers hold raw pointers into `warps`, `bars` and `lanes`; none moves until the fibers are done.
    let (warps_ptr, bars_ptr, cluster_ptr) = (warps.as_mut_ptr(), bars.as_mut_ptr(), &mut cluster_bar as *mut Barrier);
    let tid = |i: usize| {
        let t = (i % per_cta) as u32;
        [t % bx, t / bx % by, t / (bx * by)]
    };
    let mut lanes: Vec<Lane> = (0..n)
        .map(|i| Lane {
            yielder: std::ptr::null(),
            lane: (i % per_cta % 32) as u32,
            warp: unsafe { warps_ptr.add(i / per_cta * wpc + i % per_cta / 32) },
            bars: unsafe { bars_ptr.add(i / per_cta) as *mut Barrier },
            cluster_bar: cluster_ptr,
            result: 0,
            cluster_phase: 0,
            cluster_arrived: false,
            site: 0,
            aligned: false,
            cell: cell as *const crate::runtime::checked::FaultCell,
            tid: tid(i),
        })
        .collect();
    // Raw pointers are not 'static-safe for the type system; the fibers never outlive this call.
    let bases_addr = bases.as_ptr() as usize;
    let mut fibers: Vec<Fiber> = Vec::with_capacity(n);
    // Each fiber's stack (lowest, highest address), for the trap handler and checked mode.
    let mut stacks: Vec<(usize, usize)> = Vec::with_capacity(n);
    for (i, lane) in lanes.iter_mut().enumerate() {
        let want = STACK_BYTES.saturating_add(local_bytes);
        let stack = match STACKS
            .with(|s| s.borrow_mut().pop())
            .filter(|s| crate::runtime::trap::bounds(s).1 - crate::runtime::trap::bounds(s).0 > want)
        {
            Some(s) => s,
            None => DefaultStack::new(want).map_err(|e| LaunchError::OutOfResources(format!("fiber stack: {e}")))?,
        };
        stacks.push(crate::runtime::trap::bounds(&stack));
        let lane_addr = lane as *mut Lane as usize;
        let (cta, t) = (i / per_cta, tid(i));
        fibers.push(Coroutine::with_stack(stack, move |yielder: &Yielder<(), Wait>, ()| {
            // SAFETY: `bases` and the lanes live until every fiber has finished or been leaked.
            let lane = unsafe { &mut *(lane_addr as *mut Lane) };
            lane.yielder = yielder;
            let mut env = unsafe { *(bases_addr as *const Env).add(cta) };
            env.tid = t;
            env.sync = lane as *mut Lane as *mut c_void;
            unsafe { entry(&env, env.params) };
            Ok(())
        }));
    }
    let mut state = vec![State::Runnable; n];
    let result = loop {
        for i in 0..n {
            if state[i] == State::Runnable {
                owner.switch(i / per_cta);
                state[i] = match crate::runtime::trap::resume(&mut fibers[i], (), stacks[i], cell) {
                    CoroutineResult::Yield(w) => State::Waiting(w),
                    CoroutineResult::Return(Ok(())) => {
                        unsafe { (*lanes[i].warp).live &= !(1 << lanes[i].lane) };
                        forget_cluster_arrival(&mut lanes[i]);
                        State::Done
                    }
                    CoroutineResult::Return(Err(t)) => {
                        forget_cluster_arrival(&mut lanes[i]);
                        cell.record(crate::runtime::checked::Fault {
                            tid: Some(tid(i)),
                            ctaid: Some(bases[i / per_cta].ctaid),
                            ..crate::runtime::checked::Fault::of(crate::runtime::checked::FaultKind::Signal(t))
                        });
                        State::Done
                    }
                };
            }
        }
        if state.iter().all(|s| *s == State::Done) {
            break Ok(());
        }
        if cell.faulted() {
            break Ok(()); // this CTA or another has faulted, or the launch was ended: the CTA stops here
        }
        // No fiber runs while the scheduler looks at the shared state.
        if !release(
            &mut state,
            &mut lanes,
            &warps,
            &mut bars,
            &mut cluster_bar,
            per_cta,
            &mut owner,
            l.cooperative,
        ) {
            if cell.tools.has(crate::runtime::sanitize::Tools::SYNCCHECK) {
                // One waiting thread from each of the first two places threads wait at: the report
                // shows what each side waits at.
                let waiting: Vec<usize> = (0..n).filter(|&i| state[i] != State::Done).collect();
                let first = waiting.first().map(|&i| lanes[i].site);
                let other = waiting.iter().find(|&&i| Some(lanes[i].site) != first);
                let stuck: Vec<&Lane> = waiting.iter().take(1).chain(other).map(|&i| &lanes[i]).collect();
                if !stuck.is_empty() {
                    let detail = if other.is_some() {
                        "they wait at different instructions"
                    } else {
                        "the threads they wait for have exited"
                    };
                    synccheck_at(
                        cell,
                        crate::runtime::sanitize::Kind::Deadlock,
                        &stuck,
                        detail.to_string(),
                    );
                }
            }
            break Err(LaunchError::Failed(
                "threads wait at a barrier or warp collective that the threads it needs never reach (the kernel would hang)"
                    .into(),
            ));
        }
    };
    // Fibers stopped in the middle of generated code hold nothing that needs dropping: they are reset,
    // not unwound (unwinding cannot cross JIT frames), and their stacks kept for the next CTA.
    for f in fibers.iter_mut().filter(|f| !f.done()) {
        // SAFETY: a suspended fiber's frames are generated code and `collective`, which own nothing.
        unsafe { f.force_reset() };
    }
    STACKS.with(|s| s.borrow_mut().extend(fibers.into_iter().map(Coroutine::into_stack)));
    if owner.active {
        owner.finish();
    } else {
        cell.cta_done();
    }
    crate::runtime::texture::release_cached();
    result
}

/// A thread that exits counts as arrived at the cluster barrier through the cluster's live count; an
/// arrival it made before exiting must not count twice.
fn forget_cluster_arrival(lane: &mut Lane) {
    if std::mem::take(&mut lane.cluster_arrived) {
        // SAFETY: the cluster's barrier outlives its fibers.
        unsafe { (*lane.cluster_bar).arrived -= 1 };
    }
}

/// The CTAs of cluster number `c` (x fastest over the grid of clusters), in rank order (x fastest
/// within the cluster), as linear CTA indices.
fn cluster_ctas(l: &Launch<'_>, c: u64) -> Vec<u64> {
    let [dx, dy, dz] = l.cluster_dim.map(|d| d as u64);
    let [gx, gy, _] = l.grid.map(|g| g as u64);
    let (cx, cy) = (gx / dx, gy / dy);
    let (x0, y0, z0) = (c % cx * dx, c / cx % cy * dy, c / (cx * cy) * dz);
    let mut out = Vec::with_capacity((dx * dy * dz) as usize);
    for z in 0..dz {
        for y in 0..dy {
            for x in 0..dx {
                out.push(x0 + x + gx * (y0 + y + gy * (z0 + z)));
            }
        }
    }
    out
}

pub fn launch(
    k: &HostKernel,
    l: &Launch<'_>,
    entry: ptx_llvm::abi::BlockFn,
    fault: *const c_void,
) -> Result<(), LaunchError> {
    let size = l.cluster_dim.iter().map(|&d| d as u64).product::<u64>();
    let total = l.grid.iter().map(|&g| g as u64).product::<u64>() / size;
    let fault = fault as usize;
    (0..total).into_par_iter().try_for_each_init(
        || (0..size).map(|_| SharedWindow::for_launch(k, l)).collect::<Vec<_>>(),
        |windows, c| {
            let ctas = if size == 1 { vec![c] } else { cluster_ctas(l, c) };
            let r = run_cluster(
                l,
                entry,
                &ctas,
                windows,
                fault as *const c_void,
                k.info.local_bytes as usize,
            );
            if r.is_err() {
                // SAFETY: `fault` is the launch's record, alive until the launch returns.
                unsafe { (*(fault as *const crate::runtime::checked::FaultCell)).stop() };
            }
            r
        },
    )
}
