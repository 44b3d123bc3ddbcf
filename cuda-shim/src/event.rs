//! Events: a record is a work item on a stream that marks the event complete, with the time, once
//! everything queued before it on that stream has run.
//!
//! An interprocess event (`CU_EVENT_INTERPROCESS`) keeps its two counters, records issued and
//! records completed, in a page of memory another process can map (`crate::ipc`): either process
//! records, waits for and queries the same event. Waits on such an event poll the page.

use crate::errors::*;
use crate::state::*;
use crate::stream::resolve;
use crate::{init_check, out, Handle};
use parking_lot::{Condvar, Mutex};
use std::ffi::{c_float, c_uint};
use std::time::Instant;

/// `CU_EVENT_DEFAULT | BLOCKING_SYNC | DISABLE_TIMING | INTERPROCESS`.
const FLAGS: c_uint = 0x1 | 0x2 | 0x4;
pub(crate) const DISABLE_TIMING: c_uint = 0x2;
pub(crate) const INTERPROCESS: c_uint = 0x4;

pub struct Event {
    pub ctx: usize,
    pub(crate) flags: c_uint,
    /// An interprocess event's shared counters (issued, completed), which stand in for `st`'s.
    pub(crate) shared: Option<crate::ipc::SharedPage>,
    /// (records issued, records completed, time of the last completed record)
    st: Mutex<(u64, u64, Option<Instant>)>,
    cv: Condvar,
    /// Recorded last in a capturing stream: the capture and the nodes the event stands for.
    captured: Mutex<Option<crate::graph::Capturing>>,
}

impl Event {
    /// The generation of the latest record, if it has not completed yet.
    pub fn pending(&self) -> Option<u64> {
        if let Some(p) = &self.shared {
            let (issued, done) = p.counters();
            return (done < issued).then_some(issued);
        }
        let s = self.st.lock();
        (s.1 < s.0).then_some(s.0)
    }
    pub fn wait(&self, generation: u64) {
        if let Some(p) = &self.shared {
            // Another process may complete it: poll, backing off to a millisecond, and give up if
            // the process that issued the record is gone.
            let mut nap = std::time::Duration::from_micros(10);
            while p.counters().1 < generation && !p.issuer_gone() {
                std::thread::sleep(nap);
                nap = (nap * 2).min(std::time::Duration::from_millis(1));
            }
            return;
        }
        let mut s = self.st.lock();
        while s.1 < generation {
            self.cv.wait(&mut s);
        }
    }
    /// The capture the event was last recorded in, while that capture goes on.
    pub fn captured(&self) -> Option<crate::graph::Capturing> {
        self.captured.lock().clone().filter(|c| !c.session.ended())
    }
    /// Issues a record (queued now, done later): its generation, which waits issued from now on
    /// wait for.
    pub fn issue(&self) -> u64 {
        if let Some(p) = &self.shared {
            return p.issue();
        }
        let mut st = self.st.lock();
        st.0 += 1;
        st.0
    }
    /// Record `generation` is done: everything before it has run.
    pub fn complete(&self, generation: u64) {
        if let Some(p) = &self.shared {
            p.complete(generation);
        }
        let mut st = self.st.lock();
        // Records complete in stream order, but two streams may record one event: keep the newest.
        if generation > st.1 {
            st.1 = generation;
            st.2 = Some(Instant::now());
        }
        self.cv.notify_all();
    }
}

impl Event {
    pub(crate) fn new(ctx: usize, flags: c_uint, shared: Option<crate::ipc::SharedPage>) -> Event {
        Event {
            ctx,
            flags,
            shared,
            st: Mutex::new((0, 0, None)),
            cv: Condvar::new(),
            captured: Mutex::new(None),
        }
    }
}

unsafe fn record(ev: Handle, s: Handle) -> Result<(), CUresult> {
    init_check()?;
    let e = EVENTS.get(ev as usize)?;
    let (ctx, q) = resolve(s)?;
    // In a capture, the event stands for the stream's last nodes (another stream waiting for it
    // joins the capture); it is not a node itself.
    let capture = crate::graph::record_event(&q);
    let in_capture = capture.is_some();
    *e.captured.lock() = capture;
    if in_capture {
        return Ok(());
    }
    let generation = e.issue();
    ctx.streams.enqueue(&q, Box::new(move || e.complete(generation)));
    Ok(())
}

api! {
    exports = event_exports;

    fn cuEventCreate(pev: *mut Handle, flags: c_uint) {
        init_check()?;
        if pev.is_null() || flags & !FLAGS != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let ctx = current_ctx()?;
        // An interprocess event cannot time (CUDA asks for DISABLE_TIMING with it).
        let shared = match flags & INTERPROCESS {
            0 => None,
            _ if flags & DISABLE_TIMING == 0 => return Err(CUDA_ERROR_INVALID_VALUE),
            _ => Some(crate::ipc::SharedPage::new()?),
        };
        *pev = EVENTS.insert(Event::new(ctx, flags, shared)) as Handle;
        Ok(())
    }
    fn cuEventDestroy_v2(ev: Handle) {
        init_check()?;
        EVENTS.remove(ev as usize)?;
        Ok(())
    }
    fn cuEventDestroy(ev: Handle) {
        crate::status(cuEventDestroy_v2(ev))
    }
    fn cuEventRecord[cuEventRecord_ptsz](ev: Handle, s: Handle) {
        record(ev, s)
    }
    fn cuEventRecordWithFlags[cuEventRecordWithFlags_ptsz](ev: Handle, s: Handle, flags: c_uint) {
        if flags & !1 != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // CU_EVENT_RECORD_EXTERNAL makes an event record node in a capture; another record in a
        // capture is an edge to the streams that wait for it.
        if flags & 1 != 0 {
            init_check()?;
            let e = EVENTS.get(ev as usize)?;
            let (_, q) = resolve(s)?;
            if crate::graph::capture_event(&q, true, e)? {
                return Ok(());
            }
        }
        record(ev, s)
    }
    fn cuEventQuery(ev: Handle) {
        init_check()?;
        let e = EVENTS.get(ev as usize)?;
        if e.pending().is_some() { Err(CUDA_ERROR_NOT_READY) } else { Ok(()) }
    }
    fn cuEventSynchronize(ev: Handle) {
        init_check()?;
        let e = EVENTS.get(ev as usize)?;
        if let Some(g) = e.pending() {
            e.wait(g);
        }
        CONTEXTS.get(e.ctx).map_err(|_| CUDA_ERROR_CONTEXT_IS_DESTROYED)?.streams.check()
    }
    fn cuEventElapsedTime_v2(ms: *mut c_float, start: Handle, end: Handle) {
        elapsed(ms, start, end)
    }
    fn cuEventElapsedTime(ms: *mut c_float, start: Handle, end: Handle) {
        elapsed(ms, start, end)
    }
}

unsafe fn elapsed(ms: *mut c_float, start: Handle, end: Handle) -> Result<(), CUresult> {
    init_check()?;
    let (a, b) = (EVENTS.get(start as usize)?, EVENTS.get(end as usize)?);
    if ms.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    if (a.flags | b.flags) & DISABLE_TIMING != 0 {
        return Err(CUDA_ERROR_INVALID_HANDLE);
    }
    // One statement per lock: `start` and `end` may be the same event, and in one tuple both guards
    // would live to its end (the second lock then waits for the first forever).
    let sa = *a.st.lock();
    let sb = *b.st.lock();
    if sa.0 == 0 || sb.0 == 0 {
        return Err(CUDA_ERROR_INVALID_HANDLE); // never recorded
    }
    if sa.1 < sa.0 || sb.1 < sb.0 {
        return Err(CUDA_ERROR_NOT_READY);
    }
    let (ta, tb) = (sa.2.ok_or(CUDA_ERROR_NOT_READY)?, sb.2.ok_or(CUDA_ERROR_NOT_READY)?);
    let v = if tb >= ta {
        (tb - ta).as_secs_f64()
    } else {
        -(ta - tb).as_secs_f64()
    };
    out(ms, (v * 1e3) as c_float)
}
