//! Ends launches from outside: a launch that runs longer than `PTXJIT_LAUNCH_TIMEOUT` seconds (off by
//! default, as on a GPU without a display), or one whose owner cancels it (the driver destroying its
//! context). One thread watches every such launch; when one has to end, it marks the launch's fault
//! record and interrupts the threads running kernel code (`crate::runtime::trap::interrupt`) until the launch
//! has returned. A cooperative launch is also looked at every few milliseconds for a fault: its other
//! CTAs may wait at a grid barrier for the CTA that faulted, and are interrupted too. Other launches
//! with neither a timeout nor a cancel flag are not watched at all, and generated code never checks
//! anything: the watch costs nothing until it fires.

use crate::runtime::checked::{Fault, FaultCell, FaultKind};
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a launch that has to end is interrupted again, until it returns (a thread may be
/// outside generated code when the signal comes).
const RETRY: Duration = Duration::from_millis(10);

/// A cancel flag that launches share (one per driver context): set, it ends their launches at a
/// deadline.
#[derive(Default)]
pub struct Cancel {
    /// Nanoseconds after [`epoch`] at which the launches end; 0 while not cancelled.
    at: AtomicU64,
}

impl Cancel {
    /// Ends the launches that are still running `grace` from now, and every later one at once.
    pub fn after(&self, grace: Duration) {
        let at = (Instant::now() + grace).duration_since(epoch()).as_nanos().max(1) as u64;
        self.at.store(at, Ordering::Release);
        WAKE.notify_one();
    }
    /// Clears the flag (a primary context reset keeps its context).
    pub fn reset(&self) {
        self.at.store(0, Ordering::Release);
    }
    /// Whether the deadline has passed: work that waits without running kernel code (a stream's
    /// wait on memory) checks this to end itself.
    pub fn due(&self) -> bool {
        self.deadline().is_some_and(|d| Instant::now() >= d)
    }
    /// When the launches end, if cancelled.
    fn deadline(&self) -> Option<Instant> {
        match self.at.load(Ordering::Acquire) {
            0 => None,
            n => Some(epoch() + Duration::from_nanos(n)),
        }
    }
}

fn epoch() -> Instant {
    static E: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *E.get_or_init(Instant::now)
}

struct Watched {
    id: u64,
    /// Valid while the entry is listed: [`Watch`] removes it, under the lock, before the launch's
    /// record is dropped.
    cell: *const FaultCell,
    deadline: Option<Instant>,
    cancel: Option<Arc<Cancel>>,
    /// Looked at every [`RETRY`] for a fault: a cooperative launch, whose other CTAs may spin at a
    /// grid barrier for the one that faulted, so generated code never returns by itself.
    poll: bool,
}

// SAFETY: `cell` is only read under `WATCHED`'s lock, while its launch keeps it alive.
unsafe impl Send for Watched {}

static WATCHED: Mutex<Vec<Watched>> = Mutex::new(Vec::new());
static WAKE: Condvar = Condvar::new();

/// `PTXJIT_LAUNCH_TIMEOUT`, in (fractional) seconds; read once.
pub fn timeout() -> Option<Duration> {
    static T: std::sync::OnceLock<Option<Duration>> = std::sync::OnceLock::new();
    *T.get_or_init(|| {
        let v = std::env::var("PTXJIT_LAUNCH_TIMEOUT").ok()?;
        let secs: f64 = v.trim().parse().ok()?;
        (secs > 0.0 && secs.is_finite()).then(|| Duration::from_secs_f64(secs))
    })
}

/// A launch being watched; dropping it ends the watch.
pub struct Watch(Option<u64>);

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(id) = self.0 {
            WATCHED.lock().retain(|w| w.id != id);
        }
    }
}

/// Watches the launch whose record is `cell` (it must outlive the returned [`Watch`]), if a timeout
/// is set, `cancel` is given or `poll` asks for a look every [`RETRY`] (a cooperative launch). A
/// launch whose cancel flag is already set ends before it starts.
pub fn watch(cell: &FaultCell, cancel: Option<Arc<Cancel>>, poll: bool) -> Watch {
    let deadline = timeout().map(|t| Instant::now() + t);
    if deadline.is_none() && cancel.is_none() && !poll {
        return Watch(None);
    }
    if cancel
        .as_ref()
        .and_then(|c| c.deadline())
        .is_some_and(|d| d <= Instant::now())
    {
        cell.record(Fault::of(FaultKind::Cancelled));
        return Watch(None);
    }
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    start();
    WATCHED.lock().push(Watched {
        id,
        cell,
        deadline,
        cancel,
        poll,
    });
    WAKE.notify_one();
    Watch(Some(id))
}

fn start() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let _ = std::thread::Builder::new().name("ptx-jit-watchdog".into()).spawn(run);
    });
}

fn run() {
    let mut list = WATCHED.lock();
    loop {
        let now = Instant::now();
        let mut ending = false;
        let mut next: Option<Instant> = None;
        for w in list.iter() {
            // SAFETY: listed entries' records are alive (see `Watched::cell`).
            let cell = unsafe { &*w.cell };
            let cancel = w.cancel.as_ref().and_then(|c| c.deadline());
            if !cell.faulted() {
                if w.deadline.is_some_and(|d| d <= now) {
                    cell.record(Fault::of(FaultKind::Timeout));
                } else if cancel.is_some_and(|d| d <= now) {
                    cell.record(Fault::of(FaultKind::Cancelled));
                }
            }
            if cell.faulted() {
                ending = true;
            } else {
                let poll = w.poll.then(|| now + RETRY);
                for d in w.deadline.into_iter().chain(cancel).chain(poll) {
                    next = Some(next.map_or(d, |n: Instant| n.min(d)));
                }
            }
        }
        if ending {
            parking_lot::MutexGuard::unlocked(&mut list, crate::runtime::trap::interrupt);
            WAKE.wait_for(&mut list, RETRY);
        } else if let Some(d) = next {
            WAKE.wait_until(&mut list, d);
        } else {
            WAKE.wait(&mut list);
        }
    }
}
