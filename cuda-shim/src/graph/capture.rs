//! Stream capture (`cuStreamBeginCapture` … `cuStreamEndCapture`): while a stream captures, work
//! queued on it becomes nodes instead of running, each depending on the stream's last ones. An
//! event recorded in a capturing stream carries those nodes; a stream that waits for it joins the
//! capture. `cuStreamEndCapture` on the stream that began it ends the capture of every stream that
//! joined and gives the graph; a stream that joined and did not rejoin the origin makes it fail
//! (`CUDA_ERROR_STREAM_CAPTURE_UNJOINED`). Waiting for a capturing stream (synchronise, query) is
//! refused and invalidates the capture, as CUDA does, and so does ending it on another stream than
//! its origin (`…_UNMATCHED`, then `…_INVALIDATED` at the origin's end, as an H200 answers).

use super::*;

/// One capture, shared by the streams that joined it.
pub struct Session {
    pub graph: usize,
    /// Whether the capture made its graph (`cuStreamBeginCapture`), which a failed capture drops, or
    /// captures into the program's (`cuStreamBeginCaptureToGraph`), which stays.
    owned: bool,
    pub id: u64,
    mode: c_int,
    /// The stream that began it (its queue's address, as `cuStreamGetId` names it).
    origin: usize,
    thread: std::thread::ThreadId,
    /// Streams that joined through an event, with the queues, to end their capture too.
    joined: Mutex<Vec<Arc<Queue>>>,
    invalid: AtomicBool,
    /// Ended (by `cuStreamEndCapture`, or its stream destroyed): no longer counted as in progress.
    ended: AtomicBool,
}

impl Session {
    /// Ends the capture, however it ends, and gives the streams that joined it: under the lock of
    /// that list, so no stream joins once it is taken.
    fn close(&self) -> Vec<Arc<Queue>> {
        let mut joined = self.joined.lock();
        self.ended.store(true, Ordering::Release);
        std::mem::take(&mut *joined)
    }
    /// A failed or abandoned capture's graph goes, if the capture made it.
    fn drop_graph(&self) {
        if self.owned {
            let _ = drop_graph(self.graph);
        }
    }
    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }
}

/// A capturing stream is destroyed: a capture it began is over, for every stream that joined it,
/// and its graph is dropped.
pub fn abandon(q: &Queue) {
    if let Some(c) = q.capture.lock().take() {
        if c.session.origin == queue_id(q) {
            for j in c.session.close() {
                j.capture.lock().take();
            }
            c.session.drop_graph();
        }
    }
}

/// A stream's part in a capture: the session and the nodes its next work depends on.
#[derive(Clone)]
pub struct Capturing {
    pub session: Arc<Session>,
    pub deps: Vec<usize>,
}

static CAPTURE_IDS: AtomicU64 = AtomicU64::new(1);

/// Captures begun in global or thread-local mode (those not ended forbid unsafe calls: a global one on
/// every thread, a thread-local one on the thread that began it).
static STRICT_SESSIONS: Mutex<Vec<std::sync::Weak<Session>>> = Mutex::new(Vec::new());

fn queue_id(q: &Queue) -> usize {
    Arc::as_ptr(&q.progress) as usize
}

/// Work queued on `q` while it captures becomes a node of the capture's graph, after the stream's
/// last nodes: the node; `None` if `q` is not capturing. Work that cannot be captured (`kind`
/// `None`) invalidates the capture.
pub fn captured(
    q: &Queue,
    kind: Option<NodeType>,
    job: impl FnOnce() -> Option<NodeJob>,
) -> Result<Option<usize>, CUresult> {
    let mut cap = q.capture.lock();
    let Some(c) = cap.as_mut() else { return Ok(None) };
    if c.session.invalid.load(Ordering::Acquire) {
        return Err(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    let Some(kind) = kind else {
        c.session.invalid.store(true, Ordering::Release);
        return Err(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    };
    let graph = GRAPHS.get(c.session.graph)?;
    let node = graph.add(c.session.graph, kind, job(), &c.deps)?;
    c.deps = vec![node];
    Ok(Some(node))
}

/// An external event record or wait (`CU_EVENT_RECORD_EXTERNAL`, `CU_EVENT_WAIT_EXTERNAL`) on a
/// capturing stream: a node of that kind for event `e`, as `cuGraphAddEventRecordNode` and
/// `cuGraphAddEventWaitNode` make them; `Ok(false)` if `q` is not capturing.
pub fn capture_event(q: &Queue, record: bool, e: Arc<crate::event::Event>) -> Result<bool, CUresult> {
    let (kind, job) = if record {
        (NodeType::EventRecord, event_record_job(e.clone()))
    } else {
        (NodeType::WaitEvent, event_wait_job(e.clone()))
    };
    let Some(node) = captured(q, Some(kind), || Some(job))? else {
        return Ok(false);
    };
    *NODES.get(node)?.event.lock() = Some(e);
    Ok(true)
}

/// A call that waits for `q` (synchronise, query) while it captures: refused, and the capture can
/// no longer end well.
pub fn forbid_wait(q: &Queue) -> Result<(), CUresult> {
    match q.capture.lock().as_ref() {
        Some(c) => {
            c.session.invalid.store(true, Ordering::Release);
            Err(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
        }
        None => Ok(()),
    }
}

/// The captures that forbid this thread potentially unsafe calls now: a global-mode one anywhere,
/// or a thread-local one this thread began; none if this thread relaxed its mode.
fn forbidding() -> Vec<Arc<Session>> {
    if crate::stream::capture_mode() == 2 {
        return vec![];
    }
    let me = std::thread::current().id();
    let mut sessions = STRICT_SESSIONS.lock();
    prune(&mut sessions);
    sessions
        .iter()
        .filter_map(std::sync::Weak::upgrade)
        .filter(|s| s.mode == 0 || s.thread == me)
        .collect()
}

/// A device-wide synchronise made while a capture forbids it, which CUDA refuses as potentially
/// unsafe ("operation not permitted when stream is capturing"); those captures can then no longer
/// end well (an H200: `cuStreamEndCapture` gives `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`).
/// Synchronous copies and memsets are not refused: an H200 runs a `cuMemsetD32` made while a
/// non-blocking stream captures in global mode.
pub fn forbid_sync() -> Result<(), CUresult> {
    let forbidding = forbidding();
    if forbidding.is_empty() {
        return Ok(());
    }
    for s in forbidding {
        s.invalid.store(true, Ordering::Release);
    }
    Err(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
}

/// Memory allocated or freed outside stream order (`cuMemAlloc`, `cuMemFree`) while a capture
/// forbids it: refused, as a graph would not replay it (`cuThreadExchangeStreamCaptureMode`'s own
/// example). The capture goes on: warp-lang's tests, which pass on GPUs, refuse a staging buffer
/// this way and then end the capture and launch its graph.
pub fn forbid_alloc() -> Result<(), CUresult> {
    if forbidding().is_empty() {
        Ok(())
    } else {
        Err(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
    }
}

/// Drops the captures that have ended from a list of them.
fn prune(sessions: &mut Vec<std::sync::Weak<Session>>) {
    sessions.retain(|w| w.upgrade().is_some_and(|s| !s.ended()));
}

/// `cuEventRecord` on a capturing stream: the event stands for the stream's last nodes.
pub fn record_event(q: &Queue) -> Option<Capturing> {
    q.capture.lock().clone()
}

/// `cuStreamWaitEvent` for an event recorded in a capture: the stream joins it (or, already in
/// it, also waits for the event's nodes).
pub fn join(q: &Arc<Queue>, c: &Capturing) -> Result<(), CUresult> {
    let mut cap = q.capture.lock();
    match cap.as_mut() {
        Some(mine) if Arc::ptr_eq(&mine.session, &c.session) => {
            mine.deps.extend(&c.deps);
            mine.deps.sort_unstable();
            mine.deps.dedup();
            Ok(())
        }
        Some(_) => Err(CUDA_ERROR_STREAM_CAPTURE_ISOLATION),
        None => {
            if q.legacy {
                return Err(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
            }
            let mut joined = c.session.joined.lock();
            if c.session.ended() {
                // The capture is over: its event no longer joins anything.
                return Err(CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
            }
            joined.push(q.clone());
            *cap = Some(c.clone());
            Ok(())
        }
    }
}

/// Begins a capture on stream `s` into a new graph, or (`into`) into an existing graph after the
/// given nodes of it.
unsafe fn begin_capture(s: Handle, mode: c_int, into: Option<(usize, Vec<usize>)>) -> Result<(), CUresult> {
    init_check()?;
    if !(0..=2).contains(&mode) {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let (_, q) = resolve(s)?;
    if q.legacy {
        return Err(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    }
    let mut cap = q.capture.lock();
    if cap.is_some() {
        return Err(CUDA_ERROR_ILLEGAL_STATE);
    }
    let owned = into.is_none();
    let (graph, deps) = match into {
        Some((g, deps)) => {
            GRAPHS.get(g)?;
            for &d in &deps {
                if NODES.get(d)?.graph != g {
                    return Err(CUDA_ERROR_INVALID_VALUE);
                }
            }
            (g, deps)
        }
        None => (GRAPHS.insert(Graph::default()), vec![]),
    };
    let session = Arc::new(Session {
        graph,
        owned,
        id: CAPTURE_IDS.fetch_add(1, Ordering::Relaxed),
        mode,
        origin: queue_id(&q),
        thread: std::thread::current().id(),
        joined: Mutex::new(vec![]),
        invalid: AtomicBool::new(false),
        ended: AtomicBool::new(false),
    });
    if mode != 2 {
        let mut sessions = STRICT_SESSIONS.lock();
        prune(&mut sessions);
        sessions.push(Arc::downgrade(&session));
    }
    *cap = Some(Capturing { session, deps });
    Ok(())
}

unsafe fn end_capture(s: Handle, pg: *mut Handle) -> Result<(), CUresult> {
    init_check()?;
    if pg.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let (_, q) = resolve(s)?;
    let c = q.capture.lock().clone().ok_or(CUDA_ERROR_ILLEGAL_STATE)?;
    let session = c.session;
    if session.origin != queue_id(&q) {
        // The capture can no longer end well (an H200: the origin's end then gives INVALIDATED).
        session.invalid.store(true, Ordering::Release);
        return Err(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    }
    if session.mode != 2 && session.thread != std::thread::current().id() {
        return Err(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
    }
    // Every stream that joined must have rejoined the origin: its last nodes are among what the
    // origin's next work would depend on.
    let joined = session.close();
    let origin_deps = c.deps;
    let mut unjoined = false;
    for j in &joined {
        if let Some(jc) = j.capture.lock().take() {
            if !jc.deps.iter().all(|d| reaches(session.graph, &origin_deps, *d)) {
                unjoined = true;
            }
        }
    }
    *q.capture.lock() = None;
    if session.invalid.load(Ordering::Acquire) || unjoined {
        session.drop_graph();
        *pg = std::ptr::null_mut();
        return Err(if session.invalid.load(Ordering::Acquire) {
            CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
        } else {
            CUDA_ERROR_STREAM_CAPTURE_UNJOINED
        });
    }
    *pg = session.graph as Handle;
    Ok(())
}

/// Whether node `target` is one of `from` or something they depend on, in `graph`.
fn reaches(graph: usize, from: &[usize], target: usize) -> bool {
    let Ok(g) = GRAPHS.get(graph) else { return false };
    let nodes = g.nodes.lock();
    let deps: std::collections::HashMap<usize, &Vec<usize>> = nodes.iter().map(|(h, d)| (*h, d)).collect();
    let mut stack = from.to_vec();
    let mut seen = std::collections::HashSet::new();
    while let Some(n) = stack.pop() {
        if n == target {
            return true;
        }
        if seen.insert(n) {
            stack.extend(deps.get(&n).map(|d| d.iter().copied()).into_iter().flatten());
        }
    }
    false
}

/// `cuStreamIsCapturing`/`cuStreamGetCaptureInfo*`: the status (NONE 0, ACTIVE 1, INVALIDATED 2)
/// and, where asked for, the capture's id, graph and the stream's current dependencies (a pointer
/// valid until the stream's next captured work, as CUDA documents).
unsafe fn capture_info(
    s: Handle,
    status: *mut c_int,
    id: *mut u64,
    graph: *mut Handle,
    deps: *mut *const Handle,
    edges: *mut *const c_void,
    n: *mut usize,
) -> Result<(), CUresult> {
    init_check()?;
    let (_, q) = resolve(s)?;
    let cap = q.capture.lock().clone();
    out(
        status,
        match &cap {
            None => 0,
            Some(c) if c.session.invalid.load(Ordering::Acquire) => 2,
            Some(_) => 1,
        },
    )?;
    let set = |p: *mut u64, v: u64| {
        if !p.is_null() {
            *p = v;
        }
    };
    set(id, cap.as_ref().map_or(0, |c| c.session.id));
    set(graph as *mut u64, cap.as_ref().map_or(0, |c| c.session.graph as u64));
    let list = cap.map(|c| c.deps).unwrap_or_default();
    set(n as *mut u64, list.len() as u64);
    // A thread that is ending (the static CUDA runtime's thread-exit handler) has no list to give.
    DEPS_OUT
        .try_with(|d| {
            let mut d = d.borrow_mut();
            d.0 = list.iter().map(|&h| h as Handle).collect();
            // Every edge is a plain dependency: its `CUgraphEdgeData` (8 bytes) is all zeros.
            d.1 = vec![0; list.len()];
            if !deps.is_null() {
                *deps = if d.0.is_empty() { std::ptr::null() } else { d.0.as_ptr() };
            }
            if !edges.is_null() {
                *edges = if d.1.is_empty() {
                    std::ptr::null()
                } else {
                    d.1.as_ptr() as *const c_void
                };
            }
        })
        .map_err(|_| CUDA_ERROR_INVALID_CONTEXT)?;
    Ok(())
}

thread_local! {
    /// The dependency list (and its edge data) `cuStreamGetCaptureInfo` last gave this thread.
    static DEPS_OUT: std::cell::RefCell<(Vec<Handle>, Vec<u64>)> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// `cuStreamUpdateCaptureDependencies`: the nodes a capturing stream's next work depends on get
/// `deps` added (flags 0) or become `deps` (flags 1); they must be nodes of the capture's graph.
unsafe fn update_capture_dependencies(s: Handle, deps: *const Handle, n: usize, flags: c_uint) -> Result<(), CUresult> {
    init_check()?;
    if flags > 1 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let (_, q) = resolve(s)?;
    let mut cap = q.capture.lock();
    let c = cap.as_mut().ok_or(CUDA_ERROR_ILLEGAL_STATE)?;
    let new = deps_of(deps, n)?;
    for &d in new {
        if NODES.get(d)?.graph != c.session.graph {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
    }
    if flags == 1 {
        c.deps.clear();
    }
    c.deps.extend_from_slice(new);
    c.deps.sort_unstable();
    c.deps.dedup();
    Ok(())
}

api! {
    exports = capture_exports;

    fn cuStreamBeginCapture[cuStreamBeginCapture_ptsz](s: Handle) {
        begin_capture(s, 0, None)
    }
    fn cuStreamBeginCapture_v2[cuStreamBeginCapture_v2_ptsz](s: Handle, mode: c_int) {
        begin_capture(s, mode, None)
    }
    fn cuStreamBeginCaptureToGraph[cuStreamBeginCaptureToGraph_ptsz](s: Handle, g: Handle, deps: *const Handle, edges: *const c_void, n: usize, mode: c_int) {
        plain_edges(edges, n)?;
        begin_capture(s, mode, Some((g as usize, deps_of(deps, n)?.to_vec())))
    }
    fn cuStreamEndCapture[cuStreamEndCapture_ptsz](s: Handle, pg: *mut Handle) {
        end_capture(s, pg)
    }
    fn cuStreamIsCapturing[cuStreamIsCapturing_ptsz](s: Handle, status: *mut c_int) {
        capture_info(s, status, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut())
    }
    fn cuStreamGetCaptureInfo[cuStreamGetCaptureInfo_ptsz](s: Handle, status: *mut c_int, id: *mut u64) {
        capture_info(s, status, id, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut())
    }
    fn cuStreamGetCaptureInfo_v2[cuStreamGetCaptureInfo_v2_ptsz](s: Handle, status: *mut c_int, id: *mut u64, graph: *mut Handle, deps: *mut *const Handle, n: *mut usize) {
        capture_info(s, status, id, graph, deps, std::ptr::null_mut(), n)
    }
    fn cuStreamGetCaptureInfo_v3[cuStreamGetCaptureInfo_v3_ptsz](s: Handle, status: *mut c_int, id: *mut u64, graph: *mut Handle, deps: *mut *const Handle, edges: *mut *const c_void, n: *mut usize) {
        capture_info(s, status, id, graph, deps, edges, n)
    }
    fn cuStreamUpdateCaptureDependencies[cuStreamUpdateCaptureDependencies_ptsz](s: Handle, deps: *const Handle, n: usize, flags: c_uint) {
        update_capture_dependencies(s, deps, n, flags)
    }
    fn cuStreamUpdateCaptureDependencies_v2[cuStreamUpdateCaptureDependencies_v2_ptsz](s: Handle, deps: *const Handle, edges: *const c_void, n: usize, flags: c_uint) {
        plain_edges(edges, n)?;
        update_capture_dependencies(s, deps, n, flags)
    }
}
