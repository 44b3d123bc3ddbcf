//! The sanitizers, on the CPU, where every access of every thread is seen in order:
//! - **memcheck**: checked mode's bounds and alignment checks (`crate::runtime::checked`), plus, in the driver,
//!   double frees and device allocations leaked at context destruction;
//! - **racecheck**: two threads of a CTA touching the same shared or global byte, one of them writing
//!   and not both atomically, with no barrier between (a warp-level synchronisation orders the
//!   threads of its warp). A write-write race whose bytes end up as the first writer left them (the
//!   threads stored the same value, as real libraries do on purpose) is reported only with
//!   `racecheck=all`;
//! - **initcheck**: a load from shared memory no thread of the CTA has written, or from a device
//!   allocation nothing has written since `cuMemAlloc` (copies, fills and kernel stores write);
//! - **synccheck**: a barrier reached by threads at two different instructions, threads meeting at
//!   one barrier with different thread counts, threads meeting at a warp collective with different
//!   member masks (a mask may name exited lanes: the manual has the others wait only for non-exited
//!   ones), threads that wait for each other forever.
//!
//! Kernels are compiled in checked mode, so every access calls [`crate::runtime::checked::ptxjit_check`], which
//! hands it here, except what generated code decides itself (the launch's watch word,
//! `ptx_llvm::builtin::WATCH_*`): under racecheck, the loads the lowering proved race-free
//! (`ptx_front::intervals`), until a barrier completes with threads at different instructions;
//! under initcheck, shared-memory accesses of CTAs run on fibers, which keep the map of bytes
//! written ([`written_map`]) themselves. Each OS thread keeps the shadow state of the CTA it runs (a CTA runs on one thread
//! at a time: fibers, or a loop over its threads), keyed by launch and block and reset when either
//! changes. Findings go to the launch's record and are reported when the launch ends.

use crate::runtime::checked::FaultCell;
use crate::runtime::Env;
use parking_lot::{Mutex, RwLock};
use ptx_llvm::builtin::*;
use std::cell::{RefCell, UnsafeCell};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

mod hb;
mod shadow;
use shadow::{Acc, Shadow, Word};

/// Which tools are on: a set of `Tools::*` bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tools(pub u8);

impl Tools {
    pub const MEMCHECK: u8 = 1;
    pub const RACECHECK: u8 = 2;
    pub const INITCHECK: u8 = 4;
    pub const SYNCCHECK: u8 = 8;
    /// `racecheck=all`: same-value write-write races too.
    pub const RACE_ALL: u8 = 16;

    pub fn any(self) -> bool {
        self.0 != 0
    }
    pub fn has(self, t: u8) -> bool {
        self.0 & t != 0
    }

    /// `memcheck,racecheck=all,initcheck,synccheck` (any subset; `all` for every tool).
    pub fn parse(s: &str) -> Result<Tools, String> {
        let mut t = 0;
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            t |= match part {
                "memcheck" => Self::MEMCHECK,
                "racecheck" => Self::RACECHECK,
                "racecheck=all" => Self::RACECHECK | Self::RACE_ALL,
                "initcheck" => Self::INITCHECK,
                "synccheck" => Self::SYNCCHECK,
                "all" => Self::MEMCHECK | Self::RACECHECK | Self::INITCHECK | Self::SYNCCHECK,
                other => {
                    return Err(format!(
                        "unknown sanitizer `{other}` (memcheck, racecheck, racecheck=all, initcheck, synccheck, all)"
                    ))
                }
            };
        }
        Ok(Tools(t))
    }

    /// Which checked accesses generated code must hand to the runtime at a launch's start (the fault
    /// record's watch word).
    pub fn watch(self) -> u32 {
        let bit = |tool, bit| if self.has(tool) { bit } else { 0 };
        bit(Self::RACECHECK, WATCH_RACE) | bit(Self::INITCHECK, WATCH_INIT)
    }

    /// `PTXJIT_SANITIZE`, read once (an unknown tool is reported and ignored).
    pub fn from_env() -> Tools {
        static T: std::sync::OnceLock<Tools> = std::sync::OnceLock::new();
        *T.get_or_init(|| match std::env::var("PTXJIT_SANITIZE") {
            Ok(s) => Tools::parse(&s).unwrap_or_else(|e| {
                eprintln!("ptx-jit: PTXJIT_SANITIZE: {e}");
                Tools(0)
            }),
            Err(_) => Tools(0),
        })
    }
}

/// What a finding is, with its code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// S0101: a race between two accesses.
    Race,
    /// S0201: a load from memory nothing has written.
    Uninitialized,
    /// S0202: a read of a register no path has written (found by the linter, P0504, reported at
    /// each launch of the kernel).
    UninitializedRegister,
    /// S0301: a barrier reached at two different instructions.
    DivergentBarrier,
    /// S0302: threads met at one barrier with different thread counts.
    BarrierCount,
    /// S0303: threads met at a warp collective with different member masks.
    WarpMask,
    /// S0304: threads wait at barriers or warp collectives that the threads they need never reach.
    Deadlock,
    /// S0401: an access outside every allocation (memcheck).
    InvalidAccess,
    /// S0402: a misaligned access (memcheck).
    Misaligned,
    /// S0403: `cuMemFree` of memory already freed (memcheck, driver).
    DoubleFree,
    /// S0404: a device allocation still held when its context is destroyed (memcheck, driver).
    Leak,
}

impl Kind {
    pub fn code(self) -> &'static str {
        match self {
            Kind::Race => "S0101",
            Kind::Uninitialized => "S0201",
            Kind::UninitializedRegister => "S0202",
            Kind::DivergentBarrier => "S0301",
            Kind::BarrierCount => "S0302",
            Kind::WarpMask => "S0303",
            Kind::Deadlock => "S0304",
            Kind::InvalidAccess => "S0401",
            Kind::Misaligned => "S0402",
            Kind::DoubleFree => "S0403",
            Kind::Leak => "S0404",
        }
    }
    pub fn tool(self) -> &'static str {
        match self {
            Kind::Race => "racecheck",
            Kind::Uninitialized | Kind::UninitializedRegister => "initcheck",
            Kind::DivergentBarrier | Kind::BarrierCount | Kind::WarpMask | Kind::Deadlock => "synccheck",
            _ => "memcheck",
        }
    }
    /// Leaks are warnings: reported, but not counted in a run's exit status (programs often leave
    /// freeing to the process's end).
    pub fn is_error(self) -> bool {
        self != Kind::Leak
    }

    /// The short name file tests use (`// report: race line=12 line=15`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Race => "race",
            Kind::Uninitialized => "uninit",
            Kind::UninitializedRegister => "uninit-register",
            Kind::DivergentBarrier => "divergent-barrier",
            Kind::BarrierCount => "barrier-count",
            Kind::WarpMask => "warp-mask",
            Kind::Deadlock => "deadlock",
            Kind::InvalidAccess => "invalid-access",
            Kind::Misaligned => "misaligned",
            Kind::DoubleFree => "double-free",
            Kind::Leak => "leak",
        }
    }
}

/// One access in a finding: where (byte offset in the PTX), which thread, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub site: Option<u32>,
    pub tid: Option<[u32; 3]>,
    pub how: How,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    Read,
    Write,
    Atomic,
    /// A barrier or warp collective.
    Sync,
}

impl How {
    /// How a checked access touches memory, from the `ACCESS_*` bits of its space code.
    pub fn of_access(space: u32) -> How {
        match space & !SPACE_MASK & !ACCESS_ORDERED & !ACCESS_UNRACED & !ACCESS_RELEASE & !ACCESS_ACQUIRE {
            ACCESS_WRITE => How::Write,
            ACCESS_ATOMIC => How::Atomic,
            _ => How::Read,
        }
    }

    fn word(self) -> &'static str {
        match self {
            How::Read => "read",
            How::Write => "write",
            How::Atomic => "atomic",
            How::Sync => "arrival",
        }
    }
}

/// A finding of one launch, before it is rendered: sites are byte offsets into the PTX.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub kind: Kind,
    pub ctaid: Option<[u32; 3]>,
    pub addr: u64,
    pub bytes: u64,
    pub space: u32,
    pub accesses: Vec<Access>,
    pub detail: String,
}

impl Finding {
    /// A finding with no access attached (a leak, a double free).
    pub fn plain(kind: Kind, addr: u64, bytes: u64, detail: String) -> Finding {
        Finding {
            kind,
            ctaid: None,
            addr,
            bytes,
            space: 0,
            accesses: vec![],
            detail,
        }
    }
}

/// Findings kept per launch at most: a race in a loop would otherwise repeat for every iteration.
const MAX_PER_LAUNCH: usize = 100;

/// Adds `f` to the launch's findings unless one of the same kind at the same sites is there.
pub fn record(cell: &FaultCell, f: Finding) {
    let mut list = cell.findings.lock();
    let same = |g: &Finding| {
        g.kind == f.kind
            && g.accesses.iter().map(|a| a.site).eq(f.accesses.iter().map(|a| a.site))
            && g.detail == f.detail
    };
    if list.len() < MAX_PER_LAUNCH && !list.iter().any(same) {
        list.push(f);
    }
}

// ---- the shadow state of the running CTA ------------------------------------------------------------

/// A write-write race whose verdict waits for the end of the epoch: the bytes the first writer left
/// (`first`) against what they hold then.
struct Pending {
    addr: u64,
    first: u8,
    finding: Finding,
}

struct Cta {
    gridid: u64,
    ctaid: [u32; 3],
    ntid: [u32; 3],
    tools: Tools,
    /// Warp-level synchronisations per warp.
    warp_sync: Vec<u32>,
    /// Release and acquire between its threads, once one of them has released.
    hb: Option<Box<hb::Hb>>,
    /// The threads that have executed a fence: each strong write of theirs releases ([`hb`]).
    fenced: Vec<bool>,
    shadow: shadow::Table,
    pending: Vec<Pending>,
    /// initcheck: bytes of the shared window written by the CTA, one bit each.
    /// Cells: generated code reads and writes the words through a raw pointer too
    /// ([`written_map`]).
    shared_written: Vec<std::cell::Cell<u64>>,
    cell: *const FaultCell,
}

thread_local! {
    /// Reached only through [`cta_slot`].
    static CTA: UnsafeCell<Option<Cta>> = const { UnsafeCell::new(None) };
    /// The shadow table of the CTA this thread ran last, with its chunks.
    static SPARE_SHADOW: RefCell<shadow::Table> = RefCell::new(shadow::Table::default());
}

impl Cta {
    fn threads(&self) -> usize {
        self.ntid.iter().product::<u32>() as usize
    }
}

fn unlinear(t: u32, ntid: [u32; 3]) -> [u32; 3] {
    [t % ntid[0], t / ntid[0] % ntid[1], t / (ntid[0] * ntid[1])]
}

/// This thread's CTA state. A plain cell rather than a `RefCell`, and `f` runs outside
/// `LocalKey::with`, so that the whole of [`access`] inlines into one function: it runs for every
/// access of a sanitized kernel.
///
/// # Safety
/// Nothing `f` calls may reach `cta_slot` again (no function of this module that takes the slot
/// calls another), so that the reference it gets is the only one.
#[inline(always)]
unsafe fn cta_slot<R>(f: impl FnOnce(&mut Option<Cta>) -> R) -> R {
    let slot = CTA.with(UnsafeCell::get);
    // SAFETY: the slot is this thread's, and by the contract above not borrowed elsewhere now.
    f(&mut *slot)
}

/// Runs `f` on the shadow state of `env`'s CTA, opening it if this thread last ran another one.
#[inline(always)]
fn with_cta<R>(env: &Env, cell: &FaultCell, f: impl FnOnce(&mut Cta) -> R) -> R {
    // SAFETY: `open` and the callers' `f` (the access checks) never take the slot.
    unsafe {
        cta_slot(|c| {
            let same =
                matches!(&*c, Some(s) if s.gridid == env.gridid && s.ctaid == env.ctaid && std::ptr::eq(s.cell, cell));
            if !same {
                open(c, env, cell);
            }
            match c {
                Some(cta) => f(cta),
                None => unreachable!("opened above"),
            }
        })
    }
}

/// Closes the CTA this thread ran before, if any, and opens `env`'s. Apart from [`with_cta`], which
/// runs on every access, to keep that one small.
#[cold]
#[inline(never)]
fn open(c: &mut Option<Cta>, env: &Env, cell: &FaultCell) {
    // The shadow table keeps its chunks from the CTA this thread ran before: a grid's CTAs touch
    // alike.
    if let Some(old) = c.take() {
        close(old);
    }
    let mut shadow = SPARE_SHADOW.with(|s| std::mem::take(&mut *s.borrow_mut()));
    shadow.open_cta();
    let threads = env.ntid.iter().product::<u32>() as usize;
    *c = Some(Cta {
        gridid: env.gridid,
        ctaid: env.ctaid,
        ntid: env.ntid,
        tools: cell.tools,
        warp_sync: vec![0; threads.div_ceil(32)],
        hb: None,
        fenced: vec![],
        shadow,
        pending: vec![],
        shared_written: (0..(cell.shared_bytes as usize).div_ceil(64))
            .map(|_| std::cell::Cell::new(0))
            .collect(),
        cell,
    });
}

/// initcheck: opens the shadow state of `env`'s CTA now and gives its map of shared bytes written,
/// which generated code reads and marks itself (`Env::written`); null for a CTA without shared
/// memory. The map lives until the CTA is done ([`cta_done`]).
pub fn written_map(env: &Env, cell: &FaultCell) -> *mut u64 {
    with_cta(env, cell, |cta| {
        if cta.shared_written.is_empty() {
            std::ptr::null_mut()
        } else {
            // `Cell<u64>` is laid out as `u64`, and writes through it need no exclusive borrow.
            cta.shared_written.as_ptr() as *mut u64
        }
    })
}

/// Ends an epoch: decides the pending write-write races (same-value ones are reported only with
/// `racecheck=all`).
fn settle(cta: &mut Cta) {
    // SAFETY: the CTA's launch record outlives its CTAs.
    let cell = unsafe { &*cta.cell };
    for p in cta.pending.drain(..) {
        // SAFETY: the address was checked valid when the access happened, in this launch.
        let now = unsafe { (p.addr as *const u8).read_volatile() };
        if now != p.first || cta.tools.has(Tools::RACE_ALL) {
            record(cell, p.finding);
        }
    }
}

/// The CTA this thread ran is finished: settles what waits for the end of its epoch.
pub fn cta_done() {
    // SAFETY: taking the state out holds no reference.
    if let Some(cta) = unsafe { cta_slot(Option::take) } {
        close(cta);
    }
}

/// A CTA's shadow state set aside while the fiber scheduler runs another CTA of its cluster on this
/// thread (see `crate::runtime::checked::Parked`).
pub struct Parked(Option<Cta>);

/// Takes this thread's CTA state out, to be put back with [`unpark`].
pub fn park() -> Parked {
    // SAFETY: taking the state out holds no reference.
    Parked(unsafe { cta_slot(Option::take) })
}

/// Puts a parked CTA state back as this thread's; the slot must be empty (parked first).
pub fn unpark(p: Parked) {
    // SAFETY: replacing the state holds no reference.
    unsafe { cta_slot(|c| *c = p.0) };
}

/// Settles a finished CTA and keeps its shadow table for the next.
fn close(mut cta: Cta) {
    settle(&mut cta);
    SPARE_SHADOW.with(|s| *s.borrow_mut() = std::mem::take(&mut cta.shadow));
}

/// A barrier completed in the running CTA (fibers), or an `mbarrier` phase (whose arrivals are
/// ordered before the waits that see it; counted as a barrier of the whole CTA, which can hide a
/// race but never invents one): a new epoch starts.
pub fn barrier_completed() {
    // SAFETY: `settle` and `new_epoch` never take the slot.
    unsafe {
        cta_slot(|c| {
            if let Some(cta) = c {
                settle(cta);
                cta.shadow.new_epoch();
            }
        })
    };
}

/// A thread of the running CTA executed a fence (`fence`, `membar`): racecheck's release and acquire
/// patterns ([`hb`]).
pub fn fence(env: &Env, cell: &FaultCell) {
    if !cell.tools.has(Tools::RACECHECK) {
        return;
    }
    with_cta(env, cell, |cta| {
        let t = crate::runtime::thread_index(env) as usize;
        if cta.fenced.is_empty() {
            cta.fenced = vec![false; cta.threads()];
        }
        if let Some(f) = cta.fenced.get_mut(t) {
            *f = true;
        }
        if let Some(hb) = &mut cta.hb {
            hb.fence(t as u32);
        }
    });
}

/// Warp `w` of the running CTA synchronised (a warp collective or `bar.warp.sync` released).
pub fn warp_synced(w: usize) {
    // SAFETY: a counter's update takes nothing else.
    unsafe {
        cta_slot(|c| {
            if let Some(cta) = c.as_mut() {
                if let Some(s) = cta.warp_sync.get_mut(w) {
                    *s += 1;
                }
                if let Some(hb) = &mut cta.hb {
                    hb.warp(w * 32..(w + 1) * 32);
                }
            }
        })
    };
}

/// A checked access that stayed in bounds (called by `ptxjit_check`): racecheck and initcheck.
pub fn access(env: &Env, cell: &FaultCell, addr: u64, bytes: u64, site: u32, space: u32, in_shared: bool) {
    let ordered = space & ACCESS_ORDERED != 0;
    // A load proved race-free is recorded only after a divergent barrier voided the proof.
    let recorded = crate::runtime::checked::race_watched(cell, space);
    let how = How::of_access(space);
    let tools = cell.tools;
    let shared_base = env.shared as u64;
    let flags = space;
    let space = space & SPACE_MASK;
    // Local memory is the thread's own.
    if space == SPACE_LOCAL
        || space == SPACE_CONST
        || (space == SPACE_GENERIC && crate::runtime::checked::on_stack(addr))
    {
        return;
    }
    let strong = how == How::Atomic || ordered;
    with_cta(env, cell, |cta| {
        let t = crate::runtime::thread_index(env);
        let wsync = cta.warp_sync.get(t as usize / 32).copied().unwrap_or(0);
        // Before the CTA's first release there is nothing to acquire.
        if let (Some(hb), true) = (&mut cta.hb, strong && how != How::Write) {
            hb.read(t, addr, flags & ACCESS_ACQUIRE != 0);
        }
        let clock = cta.hb.as_ref().map_or(1, |hb| hb.clock(t));
        let me = Acc::new(t, wsync, site, strong).at(clock);
        if tools.has(Tools::INITCHECK) {
            initcheck(cta, cell, env, addr, bytes, site, space, in_shared, shared_base, how);
        }
        let fenced = cta.fenced.get(t as usize).copied().unwrap_or(false);
        if tools.has(Tools::RACECHECK) && strong && how != How::Read && (flags & ACCESS_RELEASE != 0 || fenced) {
            let n = cta.threads();
            let hb = cta.hb.get_or_insert_with(|| Box::new(hb::Hb::new(n)));
            hb.release(t, addr, how == How::Atomic);
        }
        if recorded {
            // Shared addresses are shown as offsets into the window.
            let shown = if space == SPACE_SHARED || (space == SPACE_GENERIC && in_shared) {
                addr - shared_base
            } else {
                addr
            };
            race(cta, addr, bytes, me, how, space, shown, env);
        }
    });
}

/// An asynchronous copy (`cp.async`, `cp.async.bulk`) wrote `bytes` at `dst`: initcheck counts them
/// as written (the copy's own instruction is not an access racecheck sees).
pub fn copied(env: &Env, cell: &FaultCell, dst: u64, bytes: u64) {
    if !cell.tools.has(Tools::INITCHECK) {
        return;
    }
    let base = env.shared as u64;
    if dst >= base && dst < base + cell.shared_bytes {
        let end = (dst + bytes).min(base + cell.shared_bytes);
        with_cta(env, cell, |cta| {
            for b in (dst - base) as usize..(end - base) as usize {
                if let Some(w) = cta.shared_written.get(b / 64) {
                    w.set(w.get() | 1 << (b % 64));
                }
            }
        });
    } else {
        mark_written(Some(env.gridid), dst, bytes);
    }
}

/// Whether `a` (earlier) and `b` (now) are ordered: same thread, same warp with a warp-level
/// synchronisation between them, or a release after `a` that `b`'s thread has acquired.
fn ordered(a: Acc, b: Acc, hb: Option<&hb::Hb>) -> bool {
    a.t() == b.t()
        || (a.t() / 32 == b.t() / 32 && b.wsync != a.wsync)
        || hb.is_some_and(|hb| hb.knows(b.t(), a.t(), a.clock))
}

/// A conflict at one byte: the earlier access, how it touched the byte, and whether the verdict
/// waits for the end of the epoch (two plain writes may have stored the same value).
#[derive(Clone, Copy)]
struct Conflict {
    other: Acc,
    other_how: How,
    same_value: bool,
}

/// Records access `me` in the current epoch's shadow of a byte (or word); the conflict it has with an
/// earlier access, if any.
fn race_byte(s: &mut Shadow, me: Acc, how: How, hb: Option<&hb::Hb>) -> Option<Conflict> {
    if s.untouched() {
        // The common case, the epoch's first access to the byte (or word): nothing to compare.
        s.first(me, how != How::Read);
        return None;
    }
    let conflicts = |other: Acc| !ordered(other, me, hb) && (!other.atomic() || !me.atomic());
    let kind = |a: Acc, plain: How| if a.atomic() { How::Atomic } else { plain };
    let mut found = s.write().filter(|w| conflicts(*w)).map(|w| Conflict {
        other: w,
        other_how: kind(w, How::Write),
        same_value: how == How::Write && !w.atomic(),
    });
    if how != How::Read && found.is_none() {
        found = s.reads().find(|r| conflicts(*r)).map(|r| Conflict {
            other: r,
            other_how: kind(r, How::Read),
            same_value: false,
        });
    }
    match how {
        How::Read => s.add_read(me),
        _ => s.set_write(me),
    }
    found
}

/// racecheck for an access of `bytes` at `addr`, word by word ([`shadow::Table::word`]).
#[allow(clippy::too_many_arguments)]
fn race(cta: &mut Cta, addr: u64, bytes: u64, me: Acc, how: How, space: u32, shown: u64, env: &Env) {
    let mut first: Option<(u64, Conflict)> = None;
    let hb = cta.hb.as_deref();
    for word in addr >> 2..=(addr + bytes - 1) >> 2 {
        let (lo, hi) = ((word << 2).max(addr), ((word << 2) + 4).min(addr + bytes));
        match cta.shadow.word(word, hi - lo == 4) {
            Word::Whole(s) => {
                if let Some(c) = race_byte(s, me, how, hb) {
                    first.get_or_insert((lo, c));
                }
            }
            Word::Bytes(shadows) => {
                for b in lo..hi {
                    if let Some(c) = race_byte(&mut shadows[(b & 3) as usize], me, how, hb) {
                        first.get_or_insert((b, c));
                    }
                }
            }
        }
    }
    if let Some((at, c)) = first {
        found(cta, addr, bytes, me, how, space, shown, env, at, c);
    }
}

/// A race [`race`] found at byte `at`: reported, or kept for the end of the epoch.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn found(
    cta: &mut Cta,
    addr: u64,
    bytes: u64,
    me: Acc,
    how: How,
    space: u32,
    shown: u64,
    env: &Env,
    at: u64,
    c: Conflict,
) {
    let finding = Finding {
        kind: Kind::Race,
        ctaid: Some(env.ctaid),
        addr: shown + (at - addr),
        bytes,
        space,
        accesses: vec![
            Access {
                site: Some(c.other.site),
                tid: Some(unlinear(c.other.t(), cta.ntid)),
                how: c.other_how,
            },
            Access {
                site: Some(me.site),
                tid: Some(env.tid),
                how,
            },
        ],
        detail: String::new(),
    };
    if c.same_value {
        // Decided at the end of the epoch; the first writer's byte is there now (the access is in
        // bounds: checked first).
        let first = unsafe { (at as *const u8).read_volatile() };
        if cta.pending.len() < 4096 {
            cta.pending.push(Pending {
                addr: at,
                first,
                finding,
            });
        }
    } else {
        // SAFETY: the launch's record outlives its CTAs.
        record(unsafe { &*cta.cell }, finding);
    }
}

#[allow(clippy::too_many_arguments)]
fn initcheck(
    cta: &mut Cta,
    cell: &FaultCell,
    env: &Env,
    addr: u64,
    bytes: u64,
    site: u32,
    space: u32,
    in_shared: bool,
    shared_base: u64,
    how: How,
) {
    let shared = space == SPACE_SHARED || (space == SPACE_GENERIC && in_shared);
    // An atomic reads the old value, then writes.
    let (reads, writes) = (how != How::Write, how != How::Read);
    let unwritten = if shared {
        let off = (addr - shared_base) as usize;
        let bits = &cta.shared_written;
        let mut missing = false;
        for b in off..off + bytes as usize {
            let (w, m) = (b / 64, 1u64 << (b % 64));
            if reads {
                missing |= bits.get(w).is_some_and(|x| x.get() & m == 0);
            }
            if let (true, Some(x)) = (writes, bits.get(w)) {
                x.set(x.get() | m);
            }
        }
        missing
    } else {
        let missing = reads && !global_written(env.gridid, addr, bytes);
        if writes {
            mark_written(Some(env.gridid), addr, bytes);
        }
        missing
    };
    if unwritten {
        record(
            cell,
            Finding {
                kind: Kind::Uninitialized,
                ctaid: Some(env.ctaid),
                addr,
                bytes,
                space: if shared { SPACE_SHARED } else { SPACE_GLOBAL },
                accesses: vec![Access {
                    site: Some(site),
                    tid: Some(env.tid),
                    how,
                }],
                detail: String::new(),
            },
        );
    }
}

// ---- initcheck's device allocations ------------------------------------------------------------------

/// One bit per byte of a tracked allocation.
type Bits = Arc<[AtomicU64]>;

/// Device allocations whose bytes are undefined until written: start → one bit per byte.
static TRACKED: RwLock<BTreeMap<u64, Bits>> = RwLock::new(BTreeMap::new());
/// Whether any allocation is tracked: without one (the CLI's buffers), global loads need no lookup.
static ANY_TRACKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A new device allocation: undefined until written (initcheck).
pub fn track(start: u64, len: u64) {
    let words = (len as usize).div_ceil(64);
    TRACKED
        .write()
        .insert(start, (0..words).map(|_| AtomicU64::new(0)).collect());
    ANY_TRACKED.store(true, Ordering::Release);
}

/// The allocation at `start` is freed.
pub fn untrack(start: u64) {
    TRACKED.write().remove(&start);
}

/// Tracked allocations a thread remembers: a kernel moves between a few buffers.
const REMEMBERED_TRACKED: usize = 4;

thread_local! {
    /// The tracked allocations a kernel on this thread touched last (up to [`REMEMBERED_TRACKED`]),
    /// and their launch: (launch, [(start, bits)]). Kernels touch the same buffers again and again,
    /// and without it every global access under initcheck takes the table's lock, which CTAs on
    /// other cores contend for. Valid for one launch, as `crate::runtime::checked`'s remembered
    /// ranges are; the `Arc` keeps the bits alive even if the allocation is freed meanwhile.
    static LAST_TRACKED: RefCell<(u64, Vec<(u64, Bits)>)> = const { RefCell::new((0, Vec::new())) };
}

/// Calls `f(bits, first byte, end byte)` for the tracked allocation holding `addr`, if any; from a
/// kernel of launch `gridid`, or from the host (`None`).
fn in_tracked<R>(gridid: Option<u64>, addr: u64, bytes: u64, f: impl Fn(&[AtomicU64], usize, usize) -> R) -> Option<R> {
    if !ANY_TRACKED.load(Ordering::Acquire) {
        return None;
    }
    let within = |start: u64, bits: &[AtomicU64]| {
        let off = addr.wrapping_sub(start) as usize;
        (addr >= start && off < bits.len() * 64).then(|| (off, (off + bytes as usize).min(bits.len() * 64)))
    };
    if let Some(g) = gridid {
        // `f` runs inside the borrow: cloning the `Arc` would touch a counter other cores share.
        let hit = LAST_TRACKED.with(|l| match &*l.borrow() {
            (lg, list) if *lg == g => list
                .iter()
                .find_map(|(start, bits)| within(*start, bits).map(|(from, to)| f(bits, from, to))),
            _ => None,
        });
        if hit.is_some() {
            return hit;
        }
    }
    let map = TRACKED.read();
    let (start, bits) = map.range(..=addr).next_back()?;
    let (from, to) = within(*start, bits)?;
    if let Some(g) = gridid {
        LAST_TRACKED.with(|l| {
            let (lg, list) = &mut *l.borrow_mut();
            if *lg != g {
                *lg = g;
                list.clear();
            }
            list.truncate(REMEMBERED_TRACKED - 1);
            list.insert(0, (*start, bits.clone()));
        });
    }
    Some(f(bits, from, to))
}

/// `bytes` at `addr` have been written (a copy, a fill, or a store of a kernel of launch `gridid`).
pub fn mark_written(gridid: Option<u64>, addr: u64, bytes: u64) {
    in_tracked(gridid, addr, bytes, |bits, from, to| {
        for b in from..to {
            bits[b / 64].fetch_or(1 << (b % 64), Ordering::Relaxed);
        }
    });
}

/// Whether every byte of `[addr, addr + bytes)` in a tracked allocation has been written, as a
/// kernel of launch `gridid` reads it (memory outside tracked allocations counts as written).
fn global_written(gridid: u64, addr: u64, bytes: u64) -> bool {
    in_tracked(Some(gridid), addr, bytes, |bits, from, to| {
        (from..to).all(|b| bits[b / 64].load(Ordering::Relaxed) >> (b % 64) & 1 == 1)
    })
    .unwrap_or(true)
}

// ---- reports -----------------------------------------------------------------------------------

/// Error findings of the whole process so far, for the exit code of `ptx-jit run`.
static TOTAL: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

pub fn total() -> usize {
    TOTAL.load(std::sync::atomic::Ordering::Relaxed)
}

/// What a report needs to know about the kernel: its name, and its PTX text to name lines.
pub struct Source<'a> {
    pub kernel: &'a str,
    pub text: Option<&'a str>,
}

fn space_name(space: u32) -> &'static str {
    match space {
        SPACE_SHARED => ".shared",
        SPACE_GLOBAL => ".global",
        SPACE_LOCAL => ".local",
        SPACE_CONST => ".const",
        _ => "generic",
    }
}

/// 1-based line of a byte offset, and the line's text.
fn line(text: &str, site: u32) -> (usize, &str) {
    let at = (site as usize).min(text.len());
    let n = text[..at].matches('\n').count() + 1;
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    (n, text[start..end].trim())
}

fn message(f: &Finding, kernel: &str) -> String {
    let space = space_name(f.space);
    match f.kind {
        Kind::Race => {
            let hows: Vec<&str> = f.accesses.iter().map(|a| a.how.word()).collect();
            format!(
                "race on {space} memory in `{kernel}`: a {} and a {} of byte {:#x} with no barrier between",
                hows[0], hows[1], f.addr
            )
        }
        Kind::Uninitialized => format!(
            "`{kernel}` reads {} byte(s) of {space} memory at {:#x} that nothing has written",
            f.bytes, f.addr
        ),
        Kind::UninitializedRegister => format!("`{kernel}` reads register `{}`, which no path has written", f.detail),
        Kind::DivergentBarrier => format!(
            "a barrier in `{kernel}` completed with threads from different instructions: {}",
            f.detail
        ),
        Kind::Deadlock => format!(
            "threads of `{kernel}` wait at barriers or warp collectives that the threads they need never reach: {}",
            f.detail
        ),
        Kind::BarrierCount => format!(
            "threads of `{kernel}` met at one barrier with different thread counts: {}",
            f.detail
        ),
        Kind::WarpMask => format!(
            "threads of `{kernel}` met at a warp collective with different member masks: {}",
            f.detail
        ),
        Kind::InvalidAccess => format!(
            "`{kernel}` accessed {} byte(s) of {space} memory at {:#x}, outside every allocation",
            f.bytes, f.addr
        ),
        Kind::Misaligned => format!(
            "`{kernel}` accessed {} bytes of {space} memory at {:#x}, which is not a multiple of {}",
            f.bytes, f.addr, f.bytes
        ),
        Kind::DoubleFree | Kind::Leak => f.detail.clone(),
    }
}

/// Renders a finding in rustc's style: code and message, then a label per access with its line,
/// thread and block.
pub fn render(f: &Finding, src: &Source<'_>) -> String {
    let severity = if f.kind.is_error() { "error" } else { "warning" };
    let mut out = format!(
        "{severity}[{}]: {}: {}\n",
        f.kind.code(),
        f.kind.tool(),
        message(f, src.kernel)
    );
    let block = f
        .ctaid
        .map(|c| format!(" of block ({}, {}, {})", c[0], c[1], c[2]))
        .unwrap_or_default();
    for a in &f.accesses {
        let thread = a
            .tid
            .map(|t| format!("thread ({}, {}, {}){block}", t[0], t[1], t[2]))
            .unwrap_or_else(|| format!("a thread{block}"));
        match (a.site, src.text) {
            (Some(site), Some(text)) => {
                let (n, code) = line(text, site);
                let _ = writeln!(out, "  --> line {n}: {}, by {thread}", a.how.word());
                let _ = writeln!(out, "   | {code}");
            }
            _ => {
                let _ = writeln!(out, "  --> {}, by {thread}", a.how.word());
            }
        }
    }
    if f.kind == Kind::Race {
        out.push_str("   = note: no `bar.sync`, warp-level sync within a warp, or release and acquire (a fence and a flag) orders these accesses\n");
    }
    out
}

/// One finding as a JSON object (for `PTXJIT_SANITIZE_LOG`).
pub fn json(f: &Finding, src: &Source<'_>) -> serde_json::Value {
    let accesses: Vec<serde_json::Value> = f
        .accesses
        .iter()
        .map(|a| {
            serde_json::json!({
                "line": match (a.site, src.text) { (Some(s), Some(t)) => Some(line(t, s).0), _ => None },
                "thread": a.tid,
                "access": a.how.word(),
            })
        })
        .collect();
    serde_json::json!({
        "tool": f.kind.tool(),
        "severity": if f.kind.is_error() { "error" } else { "warning" },
        "code": f.kind.code(),
        "kind": f.kind.name(),
        "message": message(f, src.kernel),
        "kernel": src.kernel,
        "block": f.ctaid,
        "address": f.addr,
        "bytes": f.bytes,
        "space": space_name(f.space),
        "accesses": accesses,
    })
}

/// The JSON log (`PTXJIT_SANITIZE_LOG`), one object per line, appended as findings come.
static LOG: Mutex<Option<std::fs::File>> = Mutex::new(None);

/// Reports findings: rendered on stderr, and appended to `PTXJIT_SANITIZE_LOG` when set.
pub fn report(findings: &[Finding], src: &Source<'_>) {
    if findings.is_empty() {
        return;
    }
    let errors = findings.iter().filter(|f| f.kind.is_error()).count();
    TOTAL.fetch_add(errors, std::sync::atomic::Ordering::Relaxed);
    let mut text = String::new();
    for f in findings {
        text.push_str(&render(f, src));
    }
    eprint!("{text}");
    let Some(path) = std::env::var_os("PTXJIT_SANITIZE_LOG") else {
        return;
    };
    let mut log = LOG.lock();
    if log.is_none() {
        *log = std::fs::OpenOptions::new().create(true).append(true).open(path).ok();
    }
    if let Some(file) = log.as_mut() {
        use std::io::Write;
        for f in findings {
            let _ = writeln!(file, "{}", json(f, src));
        }
    }
}
