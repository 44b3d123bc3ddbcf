//! Checked mode: every global, shared and local access of a kernel compiled with `checked` asks
//! [`ptxjit_check`] first, except an aligned plain shared-memory access inside the window, which
//! generated code lets through itself unless a sanitizer follows it. Valid memory is:
//! - global and const: the ranges registered here (module variables, the CLI's buffers), or what the
//!   driver shim says is allocated;
//! - shared: the CTA's window (static plus dynamic);
//! - local: the running thread's stack (a fiber's, or the worker's), which catches wild pointers
//!   though not an overrun from one local array into its neighbour;
//! - generic: any of these.
//!
//! The first bad access of a launch is recorded with its thread, block, address and PTX line; every
//! thread then stops at its next check, and the launch fails with an illegal-address error. `trap`
//! uses the same record in every mode.

use crate::runtime::Env;
use parking_lot::Mutex;
use ptx_llvm::builtin::*;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Valid ranges a thread remembers: a kernel moves between a few buffers (saxpy's x and y).
const REMEMBERED: usize = 4;

thread_local! {
    /// The last valid ranges found on this thread (start, end), and the launch they were found for:
    /// kernels touch the same buffers again and again, and memory valid when a launch starts stays
    /// valid until it ends (freeing synchronises with the launch first). Without them every check
    /// takes the lock of the table of allocations, which CTAs on other cores contend for.
    static LAST: Cell<(u64, [(u64, u64); REMEMBERED])> = const { Cell::new((0, [(0, 0); REMEMBERED])) };
}

/// Whether `addr..end` lies in a range this thread found valid in launch `gridid`.
fn remembered(gridid: u64, addr: u64, end: u64) -> bool {
    let (g, ranges) = LAST.with(Cell::get);
    g == gridid && ranges.iter().any(|&(s, e)| addr >= s && end <= e)
}

fn in_global(gridid: u64, addr: u64, end: u64) -> bool {
    if remembered(gridid, addr, end) {
        return true;
    }
    let (g, ranges) = LAST.with(Cell::get);
    match crate::memory_map::lookup(addr) {
        Some((s, e)) if end <= e => {
            let mut kept = if g == gridid { ranges } else { [(0, 0); REMEMBERED] };
            kept.rotate_right(1);
            kept[0] = (s, e);
            LAST.with(|l| l.set((gridid, kept)));
            true
        }
        _ => false,
    }
}

thread_local! {
    /// The stack the current thread of the kernel runs on: (lowest, highest) address.
    static STACK: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// Sets the stack range for the kernel code about to run on this OS thread (`crate::runtime::trap::resume`).
pub fn set_stack(low: u64, high: u64) {
    STACK.with(|s| s.set((low, high)));
}

/// Whether `addr` is on the running kernel thread's stack (its local memory).
pub fn on_stack(addr: u64) -> bool {
    let (lo, hi) = STACK.with(Cell::get);
    addr >= lo && addr < hi
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// An access outside every allocation (checked mode).
    Access,
    /// An access of 2, 4, 8 or 16 bytes at an address that is not a multiple of its size, which a GPU
    /// refuses (checked mode).
    Misaligned,
    Trap,
    /// A failed `assert` in device code (`__assertfail`).
    Assert,
    /// A hardware fault in generated code (any mode), caught by `crate::runtime::trap`.
    Signal(crate::runtime::trap::Trap),
    /// Threads met at one barrier with different thread counts (`bar.sync 1, 64` against
    /// `bar.sync 1, 32`), which an H100 ends with an illegal instruction (any mode).
    BarrierCount {
        barrier: u32,
        counts: [u32; 2],
    },
    /// The launch ran longer than `PTXJIT_LAUNCH_TIMEOUT` allows.
    Timeout,
    /// The launch was cancelled: its context is being destroyed.
    Cancelled,
    /// A texture or surface instruction on a handle that names no live object of its kind, or a
    /// surface access out of bounds under `.trap` (`crate::runtime::texture`): what happened.
    Texture(&'static str),
    /// A device-heap call that cannot be honoured (`free` of a pointer `malloc` did not return).
    Heap(&'static str),
    /// An instruction the launch may not run, which a GPU ends with an illegal instruction: what.
    Illegal(&'static str),
    /// A tensor copy whose box, or a `wgmma` whose matrix, leaves the CTA's shared memory (an
    /// illegal address): what.
    Shared(&'static str),
}

/// The first bad access (or `trap`, failed assertion, hardware fault or end from outside) of a launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// What happened.
    pub kind: FaultKind,
    /// Byte offset of the instruction in the PTX text, where known.
    pub site: Option<u32>,
    pub addr: u64,
    pub bytes: u64,
    pub space: u32,
    /// The thread, where known (a fault in a loop over a CTA's threads names only its block).
    pub tid: Option<[u32; 3]>,
    pub ctaid: Option<[u32; 3]>,
    /// How many blocks along x from `ctaid` the fault may be in (a loop over CTAs names its first).
    pub blocks: u32,
}

impl Fault {
    /// A fault with no access attached.
    pub fn of(kind: FaultKind) -> Fault {
        Fault {
            kind,
            site: None,
            addr: 0,
            bytes: 0,
            space: 0,
            tid: None,
            ctaid: None,
            blocks: 1,
        }
    }

    pub fn space_name(&self) -> &'static str {
        match self.space & SPACE_MASK {
            SPACE_GLOBAL => ".global",
            SPACE_SHARED => ".shared",
            SPACE_LOCAL => ".local",
            SPACE_CONST => ".const",
            _ => "generic",
        }
    }
}

/// A launch's fault record, shared by its CTAs through `Env::fault`. Its first field is the watch
/// word generated code reads (`ptx_llvm::builtin::WATCH_*`).
#[derive(Default)]
#[repr(C)]
pub struct FaultCell {
    pub watch: AtomicU32,
    faulted: AtomicBool,
    /// Set by [`FaultCell::stop`]: the launch's error is a CTA's own, and what the others record
    /// while they are being ended (their interruption) is not kept.
    stopped: AtomicBool,
    first: Mutex<Option<Fault>>,
    /// Bytes of the shared window (static plus dynamic) of this launch.
    pub shared_bytes: u64,
    /// The sanitizers this launch runs under (`crate::runtime::sanitize`), and what they found.
    pub tools: crate::runtime::sanitize::Tools,
    pub findings: Mutex<Vec<crate::runtime::sanitize::Finding>>,
    /// The counters this launch adds to (`crate::runtime::counters`; never with a sanitizer).
    pub counting: Option<std::sync::Arc<crate::runtime::counters::Counters>>,
}

impl FaultCell {
    pub fn new(shared_bytes: u64, tools: crate::runtime::sanitize::Tools) -> Self {
        FaultCell {
            watch: AtomicU32::new(tools.watch()),
            shared_bytes,
            tools,
            ..Default::default()
        }
    }
    /// A launch that counts: every access calls the runtime, as under racecheck.
    pub fn counting(shared_bytes: u64, counters: std::sync::Arc<crate::runtime::counters::Counters>) -> Self {
        FaultCell {
            watch: AtomicU32::new(WATCH_RACE | WATCH_UNRACED),
            shared_bytes,
            counting: Some(counters),
            ..Default::default()
        }
    }
    /// The CTA the calling thread ran has ended: the sanitizers and the counters close it.
    pub fn cta_done(&self) {
        if self.tools.any() {
            crate::runtime::sanitize::cta_done();
        }
        if self.counting.is_some() {
            crate::runtime::counters::cta_done();
        }
    }
    /// Whether the launch keeps state per CTA on the thread running it (sanitizers, counters).
    pub fn tracks_ctas(&self) -> bool {
        self.tools.any() || self.counting.is_some()
    }
    /// Sets the running CTA's sanitizer and counter state aside, for the fiber scheduler to run
    /// another CTA of its cluster on this thread.
    pub fn park(&self) -> Parked {
        Parked {
            sanitize: crate::runtime::sanitize::park(),
            counters: crate::runtime::counters::park(),
        }
    }
    pub fn faulted(&self) -> bool {
        self.faulted.load(Ordering::Relaxed)
    }
    pub fn take(&self) -> Option<Fault> {
        self.first.lock().take()
    }
    /// Ends the launch's other CTAs where they next look (their schedulers, a CTA about to start)
    /// without a fault of its own: one CTA has failed, and its error is the launch's. A cooperative
    /// launch's CTAs would otherwise wait for it at their grid barrier.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
        self.faulted.store(true, Ordering::Relaxed);
    }
    pub fn record(&self, f: Fault) {
        if self.stopped.load(Ordering::Relaxed) {
            return;
        }
        let mut first = self.first.lock();
        if first.is_none() {
            *first = Some(f);
        }
        self.faulted.store(true, Ordering::Relaxed);
    }
}

/// Called by checked JIT code (`ptx_llvm::builtin::CHECK`): 0 lets the access go ahead.
///
/// It runs for every access of a checked kernel, so the common case (an aligned access inside the
/// shared window, or inside a global range this thread found before, with no sanitizer watching)
/// is decided here, and everything else in [`check_slow`].
///
/// # Safety
/// `env` is the calling kernel's environment.
pub unsafe extern "C" fn ptxjit_check(env: *const Env, addr: u64, bytes: u64, site: u32, space: u32) -> u32 {
    // SAFETY: checked code passes its own environment, whose fault cell outlives the launch.
    let env = unsafe { &*env };
    let Some(cell) = (unsafe { (env.fault as *const FaultCell).as_ref() }) else {
        return 0;
    };
    if cell.faulted() {
        return 1;
    }
    if bytes != 0 && (!matches!(bytes, 2 | 4 | 8 | 16) || addr & (bytes - 1) == 0) {
        let end = addr.wrapping_add(bytes);
        let shared = env.shared as u64;
        let (ok, in_shared) = match space & SPACE_MASK {
            SPACE_SHARED => (addr >= shared && end <= shared + cell.shared_bytes && end > addr, true),
            SPACE_GLOBAL => (end > addr && remembered(env.gridid, addr, end), false),
            _ => (false, false), // generic, local and const accesses, and sites, take the longer way
        };
        if ok {
            if watched(cell, space) {
                observe(env, cell, addr, bytes, site, space, in_shared);
            }
            return 0;
        }
        // Another CTA's window in the cluster (distributed shared memory, through `mapa`), by a
        // `.shared::cluster` or a generic address.
        let spaces = [SPACE_SHARED, SPACE_GENERIC];
        if spaces.contains(&(space & SPACE_MASK)) && end > addr && cluster_access(env, cell, addr, end, space) {
            return 0;
        }
    }
    check_slow(env, cell, addr, bytes, site, space)
}

/// Whether bytes `addr..end` lie in the shared window of another CTA of `env`'s cluster; initcheck
/// then counts a store's bytes as written there. Racecheck does not follow such accesses, nor does
/// initcheck follow such loads.
fn cluster_access(env: &Env, cell: &FaultCell, addr: u64, end: u64, space: u32) -> bool {
    const N: usize = ptx_llvm::abi::CLUSTER_TABLE;
    // SAFETY: the environment's table has 2 * CLUSTER_TABLE entries (`Env::cluster_shared`).
    let table = unsafe { std::slice::from_raw_parts(env.cluster_shared, 2 * N) };
    let Some(r) = (0..N).find(|&r| {
        let w = table[r] as u64;
        w != 0 && addr >= w && end <= w + cell.shared_bytes
    }) else {
        return false;
    };
    if space & ACCESS_WRITE != 0 {
        cluster_written(env, cell, r, addr - table[r] as u64, end - addr);
    }
    true
}

/// initcheck: bytes `offset..offset + bytes` of the shared window of rank `rank` in `env`'s
/// cluster count as written.
pub(crate) fn cluster_written(env: &Env, cell: &FaultCell, rank: usize, offset: u64, bytes: u64) {
    const N: usize = ptx_llvm::abi::CLUSTER_TABLE;
    // SAFETY: the environment's table has 2 * CLUSTER_TABLE entries (`Env::cluster_shared`).
    let written = unsafe { *env.cluster_shared.add(N + rank % N) } as *const std::sync::atomic::AtomicU64;
    if written.is_null() || !cell.tools.has(crate::runtime::sanitize::Tools::INITCHECK) {
        return;
    }
    for b in offset..(offset + bytes).min(cell.shared_bytes) {
        // SAFETY: the map has a bit per byte of the window, and the bytes are inside it.
        let word = unsafe { &*written.add((b / 64) as usize) };
        word.fetch_or(1 << (b % 64), std::sync::atomic::Ordering::Relaxed);
    }
}

/// A checked access that stayed in bounds, which the watch word asked to see: the counters' or the
/// sanitizers'.
fn observe(env: &Env, cell: &FaultCell, addr: u64, bytes: u64, site: u32, space: u32, in_shared: bool) {
    match &cell.counting {
        Some(c) => crate::runtime::counters::access(env, c, addr, bytes, site, space, in_shared),
        None => crate::runtime::sanitize::access(env, cell, addr, bytes, site, space, in_shared),
    }
}

/// Whether a sanitizer wants to see this access (the watch word): initcheck every one, racecheck
/// all but the loads the lowering proved race-free (`ACCESS_UNRACED`), unless a divergent barrier
/// voided that proof.
pub fn watched(cell: &FaultCell, space: u32) -> bool {
    cell.watch.load(Ordering::Relaxed) & (WATCH_INIT | race_bit(space)) != 0
}

/// Whether racecheck records this access (see [`watched`]).
pub fn race_watched(cell: &FaultCell, space: u32) -> bool {
    cell.watch.load(Ordering::Relaxed) & race_bit(space) != 0
}

#[inline(never)]
fn check_slow(env: &Env, cell: &FaultCell, addr: u64, bytes: u64, site: u32, space: u32) -> u32 {
    if addr == 0 && space & (ACCESS_BLOCK | ACCESS_BRANCH) != 0 {
        if let Some(c) = &cell.counting {
            match space & ACCESS_BLOCK {
                0 => crate::runtime::counters::branch(env, c, site, bytes != 0),
                _ => crate::runtime::counters::block(env, c, site),
            }
        }
        return 0;
    }
    if addr == 0 && space == ACCESS_FENCE {
        crate::runtime::sanitize::fence(env, cell);
        return 0;
    }
    if addr == 0 && (bytes == 0 || space == ACCESS_SITE) {
        if space == ACCESS_SITE && cell.tools.any() {
            crate::runtime::fibers::note_site(env.sync, site, bytes == 1);
        }
        return 0; // only asked whether the launch has faulted
    }
    let access = space;
    let space = space & SPACE_MASK;
    let fault = |kind| {
        cell.record(Fault {
            kind,
            site: Some(site),
            addr,
            bytes,
            space: access,
            tid: Some(env.tid),
            ctaid: Some(env.ctaid),
            blocks: 1,
        });
        1
    };
    if matches!(bytes, 2 | 4 | 8 | 16) && !addr.is_multiple_of(bytes) {
        return fault(FaultKind::Misaligned);
    }
    let end = addr.saturating_add(bytes);
    let shared = env.shared as u64;
    let in_shared = addr >= shared && end <= shared + cell.shared_bytes;
    let (lo, hi) = STACK.with(Cell::get);
    let in_stack = addr >= lo && end <= hi;
    let ok = match space {
        SPACE_SHARED => in_shared,
        SPACE_LOCAL => in_stack,
        SPACE_GLOBAL | SPACE_CONST => in_global(env.gridid, addr, end),
        _ => in_shared || in_stack || in_global(env.gridid, addr, end),
    };
    if ok {
        if watched(cell, access) {
            observe(env, cell, addr, bytes, site, access, in_shared);
        }
        return 0;
    }
    fault(FaultKind::Access)
}

/// A CTA's sanitizer and counter state, set aside ([`FaultCell::park`]) while another CTA of its
/// cluster runs on the thread; [`Parked::resume`] makes it the thread's again.
pub struct Parked {
    sanitize: crate::runtime::sanitize::Parked,
    counters: crate::runtime::counters::Parked,
}

impl Parked {
    pub fn resume(self) {
        crate::runtime::sanitize::unpark(self.sanitize);
        crate::runtime::counters::unpark(self.counters);
    }
}

/// `trap` (or a failed device-side `assert`): the launch fails; threads stop at their next check.
pub fn trap(env: &Env, site: u32, kind: FaultKind) {
    if let Some(cell) = unsafe { (env.fault as *const FaultCell).as_ref() } {
        cell.record(Fault {
            site: (kind != FaultKind::Assert).then_some(site),
            tid: Some(env.tid),
            ctaid: Some(env.ctaid),
            ..Fault::of(kind)
        });
    }
}
