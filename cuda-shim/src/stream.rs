//! Streams: each one is a queue with its own worker thread, which runs the queue's work in order;
//! different streams run at the same time. The legacy default stream (per context) waits for the
//! earlier work of every blocking stream of its context, and blocking streams wait for its earlier
//! work, as CUDA specifies; non-blocking streams do neither. Each host thread has its own
//! per-thread default stream in each context, a blocking stream like a created one.
//!
//! Work that fails (a kernel that cannot finish) sets the context's sticky error, which every later
//! synchronising call of that context returns.

use crate::errors::*;
use crate::state::*;
use crate::{init_check, out, Handle};
use parking_lot::{Condvar, Mutex};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

pub type Job = Box<dyn FnOnce() + Send>;

/// A queued work item. Items run strictly in ticket order, on the worker or, for `steal` items, on
/// a thread that is blocked waiting for them (which saves a thread switch per synchronous call).
/// Host functions are never stolen: they run on the stream's own thread, as CUDA's do.
struct Item {
    ticket: u64,
    job: Job,
    steal: bool,
}

struct State {
    enqueued: u64,
    done: u64,
    items: VecDeque<Item>,
    closed: bool,
}

/// One queue's work: items enqueued and finished, numbered from 1.
pub struct Progress {
    st: Mutex<State>,
    cv: Condvar,
    /// Synchronises with the legacy default stream (not `CU_STREAM_NON_BLOCKING`).
    blocking: bool,
}

impl Progress {
    pub fn enqueued(&self) -> u64 {
        self.st.lock().enqueued
    }
    pub fn idle(&self) -> bool {
        let s = self.st.lock();
        s.enqueued == s.done
    }
    /// Blocks until the `ticket`-th item has finished, running waiting items itself when it may.
    pub fn wait(&self, ticket: u64) {
        let mut s = self.st.lock();
        while s.done < ticket {
            let next = s
                .items
                .front()
                .is_some_and(|i| i.steal && i.ticket <= ticket && i.ticket == s.done + 1);
            if next {
                let item = s.items.pop_front().expect("checked");
                drop(s);
                self.run(item.ticket, item.job);
                s = self.st.lock();
            } else {
                self.cv.wait(&mut s);
            }
        }
    }
    /// Runs item `ticket` once the one before it has finished, then marks it done.
    fn run(&self, ticket: u64, job: Job) {
        self.wait_done(ticket - 1);
        // A panic in one item must not stop the stream; the item's own code reports errors.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        let mut s = self.st.lock();
        s.done = ticket;
        self.cv.notify_all();
    }
    fn wait_done(&self, ticket: u64) {
        let mut s = self.st.lock();
        while s.done < ticket {
            self.cv.wait(&mut s);
        }
    }
    fn push(&self, job: Job, steal: bool) -> u64 {
        let mut s = self.st.lock();
        s.enqueued += 1;
        let ticket = s.enqueued;
        s.items.push_back(Item { ticket, job, steal });
        self.cv.notify_all();
        ticket
    }
    /// Takes a ticket for work the caller runs itself (with `run`).
    fn claim(&self) -> u64 {
        let mut s = self.st.lock();
        s.enqueued += 1;
        s.enqueued
    }
}

pub struct Queue {
    pub progress: Arc<Progress>,
    pub flags: u32,
    pub priority: i32,
    pub legacy: bool,
    /// The capture this stream takes part in, if any (`crate::graph`).
    pub capture: Mutex<Option<crate::graph::Capturing>>,
}

impl Drop for Queue {
    fn drop(&mut self) {
        crate::graph::abandon(self);
        // The worker finishes what is queued, then ends.
        self.progress.st.lock().closed = true;
        self.progress.cv.notify_all();
    }
}

impl Queue {
    /// A queue and its worker.
    pub fn new(flags: u32, priority: i32, legacy: bool) -> Result<Arc<Queue>, CUresult> {
        let progress = Arc::new(Progress {
            st: Mutex::new(State {
                enqueued: 0,
                done: 0,
                items: VecDeque::new(),
                closed: false,
            }),
            cv: Condvar::new(),
            blocking: flags & 1 == 0,
        });
        let p = progress.clone();
        std::thread::Builder::new()
            .name("cuda-stream".into())
            .spawn(move || loop {
                let item = {
                    let mut s = p.st.lock();
                    loop {
                        if let Some(i) = s.items.pop_front() {
                            break i;
                        }
                        if s.closed {
                            return;
                        }
                        p.cv.wait(&mut s);
                    }
                };
                p.run(item.ticket, item.job);
            })
            .map_err(|_| CUDA_ERROR_OUT_OF_MEMORY)?;
        Ok(Arc::new(Queue {
            progress,
            flags,
            priority,
            legacy,
            capture: Mutex::new(None),
        }))
    }
}

/// What a context keeps for its streams.
pub struct CtxStreams {
    pub legacy: Arc<Queue>,
    /// Every other queue of the context (created and per-thread streams), for the legacy stream's
    /// waits and for `cuCtxSynchronize`. Finished queues whose stream is gone are pruned.
    others: Mutex<Vec<Arc<Progress>>>,
    /// Taken while a work item's dependencies are captured and it is queued, so tickets of all
    /// queues of the context follow one order and waits never form a cycle.
    order: Mutex<()>,
    pub sticky: AtomicI32,
}

impl CtxStreams {
    pub fn new() -> Result<CtxStreams, CUresult> {
        Ok(CtxStreams {
            legacy: Queue::new(0, 0, true)?,
            others: Mutex::new(Vec::new()),
            order: Mutex::new(()),
            sticky: AtomicI32::new(CUDA_SUCCESS),
        })
    }

    pub fn register(&self, q: &Queue) {
        let mut o = self.others.lock();
        o.retain(|p| Arc::strong_count(p) > 2 || !p.idle()); // alive (queue + worker + us) or busy
        o.push(q.progress.clone());
    }

    /// The context's sticky error, if a launch failed.
    pub fn check(&self) -> Result<(), CUresult> {
        match self.sticky.load(Ordering::Acquire) {
            CUDA_SUCCESS => Ok(()),
            e => Err(e),
        }
    }

    pub fn fail(&self, e: CUresult) {
        let _ = self
            .sticky
            .compare_exchange(CUDA_SUCCESS, e, Ordering::AcqRel, Ordering::Acquire);
    }

    /// What work queued on `q` now must wait for, by CUDA's stream semantics. Called with `order` held.
    fn deps(&self, q: &Queue) -> Vec<(Arc<Progress>, u64)> {
        if q.legacy {
            self.others
                .lock()
                .iter()
                .filter(|p| p.blocking && !p.idle())
                .map(|p| (p.clone(), p.enqueued()))
                .collect()
        } else if q.progress.blocking && !self.legacy.progress.idle() {
            vec![(self.legacy.progress.clone(), self.legacy.progress.enqueued())]
        } else {
            vec![]
        }
    }

    /// Queues `job` on `q` behind what it must wait for; returns its ticket.
    pub fn enqueue(&self, q: &Queue, job: Job) -> u64 {
        self.push(q, job, true)
    }

    /// `enqueue` for host functions, which run on the stream's own thread.
    pub fn enqueue_host(&self, q: &Queue, job: Job) -> u64 {
        self.push(q, job, false)
    }

    fn push(&self, q: &Queue, job: Job, steal: bool) -> u64 {
        let _order = self.order.lock();
        let deps = self.deps(q);
        let job: Job = if deps.is_empty() {
            job
        } else {
            Box::new(move || {
                for (p, t) in deps {
                    p.wait(t);
                }
                job()
            })
        };
        q.progress.push(job, steal)
    }

    /// Runs `job` in `q`'s order on the calling thread and returns when it is done: the
    /// synchronous calls, without a thread switch.
    pub fn run_here(&self, q: &Queue, job: impl FnOnce()) {
        let (ticket, deps) = {
            let _order = self.order.lock();
            (q.progress.claim(), self.deps(q))
        };
        for (p, t) in deps {
            p.wait(t);
        }
        q.progress.wait(ticket - 1);
        let p = &q.progress;
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        let mut s = p.st.lock();
        s.done = ticket;
        p.cv.notify_all();
    }

    /// Waits for all work queued so far on every stream of the context.
    pub fn synchronize(&self) {
        let all: Vec<(Arc<Progress>, u64)> = {
            let _order = self.order.lock();
            let mut v: Vec<_> = self.others.lock().iter().map(|p| (p.clone(), p.enqueued())).collect();
            v.push((self.legacy.progress.clone(), self.legacy.progress.enqueued()));
            v
        };
        for (p, t) in all {
            p.wait(t);
        }
    }
}

thread_local! {
    /// Set while a `_ptsz`/`_ptds` entry point runs: the NULL stream is the per-thread stream.
    static PER_THREAD: Cell<bool> = const { Cell::new(false) };
    /// This thread's per-thread default stream in each context.
    static OWN: RefCell<HashMap<usize, Arc<Queue>>> = RefCell::new(HashMap::new());
}

pub fn per_thread_scope<R>(on: bool, f: impl FnOnce() -> R) -> R {
    if !on {
        return f();
    }
    let prev = PER_THREAD.with(|c| c.replace(true));
    let r = f();
    PER_THREAD.with(|c| c.set(prev));
    r
}

fn per_thread_queue(ctx_handle: usize, ctx: &Context) -> Result<Arc<Queue>, CUresult> {
    // A thread that is ending (the static CUDA runtime calls in from its thread-exit handler) has
    // no per-thread stream any more.
    let own = OWN.try_with(|m| {
        let mut m = m.borrow_mut();
        m.retain(|h, _| CONTEXTS.get(*h).is_ok());
        if let Some(q) = m.get(&ctx_handle) {
            return Ok(q.clone());
        }
        let q = Queue::new(0, 0, false)?;
        ctx.streams.register(&q);
        m.insert(ctx_handle, q.clone());
        Ok(q)
    });
    own.map_err(|_| CUDA_ERROR_INVALID_HANDLE)?
}

/// `CU_STREAM_LEGACY` and `CU_STREAM_PER_THREAD`.
pub const LEGACY: usize = 1;
pub const PER_THREAD_HANDLE: usize = 2;

/// The context and queue a stream handle names. NULL is the legacy default stream, or the
/// per-thread one inside a `_ptsz`/`_ptds` entry point; the other defaults belong to the current
/// context; a created stream belongs to the context it was created in.
pub fn resolve(s: Handle) -> Result<(Arc<Context>, Arc<Queue>), CUresult> {
    let h = s as usize;
    let h = if h == 0 && PER_THREAD.with(Cell::get) {
        PER_THREAD_HANDLE
    } else {
        h
    };
    match h {
        0 | LEGACY | PER_THREAD_HANDLE => {
            let ch = current_ctx()?;
            let ctx = CONTEXTS.get(ch).map_err(|_| CUDA_ERROR_CONTEXT_IS_DESTROYED)?;
            let q = if h == PER_THREAD_HANDLE {
                per_thread_queue(ch, &ctx)?
            } else {
                ctx.streams.legacy.clone()
            };
            Ok((ctx, q))
        }
        _ => {
            let st = STREAMS.get(h)?;
            let ctx = CONTEXTS.get(st.ctx).map_err(|_| CUDA_ERROR_CONTEXT_IS_DESTROYED)?;
            Ok((ctx, st.queue.clone()))
        }
    }
}

/// Runs `job` on the stream and waits for it: the synchronous memory calls, which CUDA orders on
/// the default stream (refused while that stream captures).
pub fn run_sync(s: Handle, job: impl FnOnce() -> Result<(), CUresult>) -> Result<(), CUresult> {
    let (ctx, q) = resolve(s)?;
    crate::graph::forbid_wait(&q)?;
    ctx.streams.check()?;
    let mut result = Ok(());
    ctx.streams.run_here(&q, || result = job());
    result
}

/// Queues `job` on the stream; its failure becomes the context's sticky error. While the stream
/// captures, the job becomes a graph node of type `kind` instead (work without a `kind` cannot be
/// captured, and fails the capture).
pub fn run_async(
    s: Handle,
    kind: Option<crate::graph::NodeType>,
    job: impl Fn() -> Result<(), CUresult> + Send + Sync + 'static,
) -> Result<(), CUresult> {
    let (ctx, q) = resolve(s)?;
    ctx.streams.check()?;
    let mut job = Some(job);
    if crate::graph::captured(&q, kind, || job.take().map(|j| Arc::new(j) as crate::graph::NodeJob))?.is_some() {
        return Ok(());
    }
    let job = job.expect("not captured");
    let c = ctx.clone();
    ctx.streams.enqueue(
        &q,
        Box::new(move || {
            // After a kernel faults, the context's later work does not run, as on a GPU.
            if c.streams.check().is_err() {
                return;
            }
            if let Err(e) = job() {
                if crate::log_enabled() {
                    let what = kind.map_or("work", |k| k.name());
                    eprintln!(
                        "ptx-jit: {what} queued on a stream failed with error {e}: the context's later calls report it"
                    );
                }
                c.streams.fail(e);
            }
        }),
    );
    Ok(())
}

/// Whether stream `s` is capturing.
pub fn capturing(s: Handle) -> Result<bool, CUresult> {
    Ok(resolve(s)?.1.capture.lock().is_some())
}

/// A raw pointer carried into a stream's worker. The API's contract (the memory stays valid until
/// the work has run) is what makes this sound.
#[derive(Clone, Copy)]
pub struct Ptr(pub usize);
unsafe impl Send for Ptr {}

thread_local! {
    /// `cuThreadExchangeStreamCaptureMode`'s per-thread mode (CU_STREAM_CAPTURE_MODE_GLOBAL first).
    static CAPTURE_MODE: Cell<c_int> = const { Cell::new(0) };
}

/// This thread's capture mode (0 global, 1 thread-local, 2 relaxed).
pub fn capture_mode() -> c_int {
    CAPTURE_MODE.with(Cell::get)
}

/// `cuStreamAddCallback`'s and `cuLaunchHostFunc`'s functions.
type StreamCallback = unsafe extern "C" fn(Handle, CUresult, *mut c_void);
type HostFn = unsafe extern "C" fn(*mut c_void);

/// The priorities `cuCtxGetStreamPriorityRange` reports (least, greatest). The CPU backend keeps a
/// stream's priority but does not schedule by it.
pub const PRIORITY_RANGE: (c_int, c_int) = (0, -5);

unsafe fn stream_create(ps: *mut Handle, flags: c_uint, priority: c_int) -> Result<(), CUresult> {
    init_check()?;
    if ps.is_null() || flags > 1 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let ch = current_ctx()?;
    let ctx = CONTEXTS.get(ch)?;
    // Out-of-range priorities are clamped, as CUDA does.
    let priority = priority.clamp(PRIORITY_RANGE.1, PRIORITY_RANGE.0);
    let queue = Queue::new(flags, priority, false)?;
    ctx.streams.register(&queue);
    *ps = STREAMS.insert(Stream { ctx: ch, queue }) as Handle;
    Ok(())
}

api! {
    exports = stream_exports;

    fn cuStreamCreate(ps: *mut Handle, flags: c_uint) {
        stream_create(ps, flags, 0)
    }
    fn cuStreamCreateWithPriority(ps: *mut Handle, flags: c_uint, priority: c_int) {
        stream_create(ps, flags, priority)
    }
    fn cuStreamDestroy_v2(s: Handle) {
        init_check()?;
        // The worker finishes the queued work, then ends.
        STREAMS.remove(s as usize)?;
        Ok(())
    }
    fn cuStreamDestroy(s: Handle) {
        crate::status(cuStreamDestroy_v2(s))
    }
    fn cuStreamSynchronize[cuStreamSynchronize_ptsz](s: Handle) {
        init_check()?;
        let (ctx, q) = resolve(s)?;
        crate::graph::forbid_wait(&q)?;
        q.progress.wait(q.progress.enqueued());
        ctx.streams.check()
    }
    fn cuStreamQuery[cuStreamQuery_ptsz](s: Handle) {
        init_check()?;
        let (ctx, q) = resolve(s)?;
        crate::graph::forbid_wait(&q)?;
        ctx.streams.check()?;
        if q.progress.idle() { Ok(()) } else { Err(CUDA_ERROR_NOT_READY) }
    }
    fn cuStreamGetFlags[cuStreamGetFlags_ptsz](s: Handle, flags: *mut c_uint) {
        init_check()?;
        let (_, q) = resolve(s)?;
        out(flags, q.flags)
    }
    fn cuStreamGetPriority[cuStreamGetPriority_ptsz](s: Handle, priority: *mut c_int) {
        init_check()?;
        let (_, q) = resolve(s)?;
        out(priority, q.priority)
    }
    fn cuStreamGetCtx[cuStreamGetCtx_ptsz](s: Handle, pctx: *mut Handle) {
        init_check()?;
        let h = match s as usize {
            0 | LEGACY | PER_THREAD_HANDLE => current_ctx()?,
            h => STREAMS.get(h)?.ctx,
        };
        out(pctx, h as Handle)
    }
    fn cuStreamGetId[cuStreamGetId_ptsz](s: Handle, id: *mut u64) {
        init_check()?;
        let (_, q) = resolve(s)?;
        out(id, Arc::as_ptr(&q.progress) as u64)
    }
    fn cuStreamGetDevice[cuStreamGetDevice_ptsz](s: Handle, dev: *mut c_int) {
        init_check()?;
        let (ctx, _) = resolve(s)?;
        out(dev, ctx.device)
    }
    fn cuStreamWaitEvent[cuStreamWaitEvent_ptsz](s: Handle, ev: Handle, flags: c_uint) {
        init_check()?;
        if flags > 1 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let e = EVENTS.get(ev as usize)?;
        let (ctx, q) = resolve(s)?;
        // CU_EVENT_WAIT_EXTERNAL in a capture: an event wait node.
        if flags & 1 != 0 && crate::graph::capture_event(&q, false, e.clone())? {
            return Ok(());
        }
        // An event recorded in a capture: the stream joins it (or waits for its nodes).
        if let Some(c) = e.captured() {
            return crate::graph::join(&q, &c);
        }
        if q.capture.lock().is_some() {
            // A capture cannot wait for work outside it.
            return Err(CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
        }
        // The wait is for the event's most recent record, as of this call.
        if let Some(generation) = e.pending() {
            ctx.streams.enqueue(&q, Box::new(move || e.wait(generation)));
        }
        Ok(())
    }
    fn cuStreamAddCallback[cuStreamAddCallback_ptsz](s: Handle, cb: *mut c_void, data: *mut c_void, flags: c_uint) {
        init_check()?;
        if cb.is_null() || flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let cb: StreamCallback = std::mem::transmute(cb);
        let (ctx, q) = resolve(s)?;
        if crate::graph::captured(&q, None, || None)?.is_some() {
            return Ok(());
        }
        let (sh, d, c) = (Ptr(s as usize), Ptr(data as usize), ctx.clone());
        ctx.streams.enqueue_host(&q, Box::new(move || {
            let (sh, d) = (sh, d);
            cb(sh.0 as Handle, c.streams.sticky.load(Ordering::Acquire), d.0 as *mut c_void)
        }));
        Ok(())
    }
    fn cuThreadExchangeStreamCaptureMode(mode: *mut c_int) {
        if mode.is_null() || !(0..=2).contains(&*mode) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        *mode = CAPTURE_MODE.with(|m| m.replace(*mode));
        Ok(())
    }
    fn cuLaunchHostFunc[cuLaunchHostFunc_ptsz](s: Handle, f: *mut c_void, data: *mut c_void) {
        launch_host_func(s, f, data)
    }
    fn cuLaunchHostFunc_v2[cuLaunchHostFunc_v2_ptsz](s: Handle, f: *mut c_void, data: *mut c_void, sync_mode: c_uint) {
        // CU_HOST_TASK_BLOCKING or _SPINWAIT: how the worker waits for work, the same either way here.
        if sync_mode > 1 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        launch_host_func(s, f, data)
    }
    fn cuStreamGetCtx_v2[cuStreamGetCtx_v2_ptsz](s: Handle, pctx: *mut Handle, green: *mut Handle) {
        if pctx.is_null() || green.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        crate::status(cuStreamGetCtx(s, pctx))?;
        *green = std::ptr::null_mut(); // green contexts are not supported: no stream belongs to one
        Ok(())
    }
    fn cuStreamAttachMemAsync[cuStreamAttachMemAsync_ptsz](s: Handle, dptr: u64, len: usize, flags: c_uint) {
        init_check()?;
        resolve(s)?;
        if !matches!(flags, 1 | 2 | 4) || check_range(dptr, len.max(1) as u64).is_err() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // Attaching limits which streams may touch managed memory; host and kernels share one
        // coherent memory here, so every access is already allowed.
        Ok(())
    }
}

/// `cuLaunchHostFunc`: unlike a stream callback, not called once the context has failed.
unsafe fn launch_host_func(s: Handle, f: *mut c_void, data: *mut c_void) -> Result<(), CUresult> {
    init_check()?;
    if f.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let f: HostFn = std::mem::transmute(f);
    let (ctx, q) = resolve(s)?;
    ctx.streams.check()?;
    let d = data as usize;
    let node = move || -> Option<crate::graph::NodeJob> {
        Some(Arc::new(move || {
            f(d as *mut c_void);
            Ok(())
        }))
    };
    if crate::graph::captured(&q, Some(crate::graph::NodeType::Host), node)?.is_some() {
        return Ok(());
    }
    let (d, c) = (data as usize, ctx.clone());
    ctx.streams.enqueue_host(
        &q,
        Box::new(move || {
            if c.streams.check().is_ok() {
                f(d as *mut c_void)
            }
        }),
    );
    Ok(())
}
