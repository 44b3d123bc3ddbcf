//! User objects (`cuUserObjectCreate`): a host pointer and a destructor, reference counted by the
//! program and by the graphs that hold it (`cuGraphRetainUserObject`), so that resources a graph's
//! work needs live as long as the graph, and as every executable graph made from it. The
//! destructor runs on a thread of its own once the last reference goes, as CUDA runs it outside
//! the calling thread (and it may not call CUDA).

use crate::errors::*;
use crate::state::{Table, Tag};
use crate::{init_check, out, Handle};
use parking_lot::Mutex;
use std::ffi::{c_uint, c_void};

/// `CU_USER_OBJECT_NO_DESTRUCTOR_SYNC`, the one flag `cuUserObjectCreate` takes (and requires).
const NO_DESTRUCTOR_SYNC: c_uint = 1;
/// `CU_GRAPH_USER_OBJECT_MOVE`: the graph takes the caller's references instead of new ones.
const MOVE: c_uint = 1;

type Destroy = unsafe extern "C" fn(*mut c_void);

struct UserObject {
    ptr: usize,
    destroy: Destroy,
    refs: Mutex<u64>,
}

static OBJECTS: once_cell::sync::Lazy<Table<UserObject>> = once_cell::sync::Lazy::new(|| Table::new(Tag::UserObject));

/// Adds `n` references to object `h`.
pub fn retain(h: usize, n: u64) -> Result<(), CUresult> {
    let o = OBJECTS.get(h)?;
    *o.refs.lock() += n;
    Ok(())
}

/// Drops `n` references of object `h`; the last one runs its destructor. More than it has is an
/// error, and nothing is dropped.
pub fn release(h: usize, n: u64) -> Result<(), CUresult> {
    let o = OBJECTS.get(h)?;
    let mut refs = o.refs.lock();
    *refs = refs.checked_sub(n).ok_or(CUDA_ERROR_INVALID_VALUE)?;
    if *refs == 0 {
        drop(refs);
        OBJECTS.remove(h)?;
        let (ptr, destroy) = (o.ptr, o.destroy);
        // SAFETY: the program gave this destructor for this pointer; it runs once.
        std::thread::spawn(move || unsafe { destroy(ptr as *mut c_void) });
    }
    Ok(())
}

/// References a graph (or an executable graph) holds: object → count.
#[derive(Default)]
pub struct Held(Mutex<Vec<(usize, u64)>>);

impl Held {
    pub fn add(&self, h: usize, n: u64) {
        let mut held = self.0.lock();
        match held.iter_mut().find(|(o, _)| *o == h) {
            Some((_, c)) => *c += n,
            None => held.push((h, n)),
        }
    }
    /// Gives back `n` of the references to `h` it holds (more than it holds is an error).
    pub fn remove(&self, h: usize, n: u64) -> Result<(), CUresult> {
        let mut held = self.0.lock();
        let at = held
            .iter()
            .position(|(o, c)| *o == h && *c >= n)
            .ok_or(CUDA_ERROR_INVALID_VALUE)?;
        held[at].1 -= n;
        if held[at].1 == 0 {
            held.remove(at);
        }
        release(h, n)
    }
    /// The same references again, for an executable graph made from this graph.
    pub fn duplicate(&self) -> Held {
        let held = self.0.lock().clone();
        for &(h, n) in &held {
            let _ = retain(h, n);
        }
        Held(Mutex::new(held))
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        for (h, n) in self.0.get_mut().drain(..) {
            let _ = release(h, n);
        }
    }
}

api! {
    exports = user_object_exports;
    fn cuUserObjectCreate(obj: *mut Handle, ptr: *mut c_void, destroy: *mut c_void, refs: c_uint, flags: c_uint) {
        init_check()?;
        if obj.is_null() || destroy.is_null() || refs == 0 || flags != NO_DESTRUCTOR_SYNC {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // SAFETY: a CUhostFn, as cuda.h declares the parameter.
        let destroy: Destroy = std::mem::transmute::<*mut c_void, Destroy>(destroy);
        let h = OBJECTS.insert(UserObject {
            ptr: ptr as usize,
            destroy,
            refs: Mutex::new(refs as u64),
        });
        out(obj, h as Handle)
    }
    fn cuUserObjectRetain(obj: Handle, n: c_uint) {
        init_check()?;
        if n == 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        retain(obj as usize, n as u64)
    }
    fn cuUserObjectRelease(obj: Handle, n: c_uint) {
        init_check()?;
        if n == 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        release(obj as usize, n as u64)
    }
    fn cuGraphRetainUserObject(g: Handle, obj: Handle, n: c_uint, flags: c_uint) {
        init_check()?;
        if n == 0 || flags & !MOVE != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let graph = crate::graph::GRAPHS.get(g as usize)?;
        OBJECTS.get(obj as usize)?;
        // Moved references are the caller's already; others are new ones.
        if flags & MOVE == 0 {
            retain(obj as usize, n as u64)?;
        }
        graph.user_objects.add(obj as usize, n as u64);
        Ok(())
    }
    fn cuGraphReleaseUserObject(g: Handle, obj: Handle, n: c_uint) {
        init_check()?;
        if n == 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        crate::graph::GRAPHS.get(g as usize)?.user_objects.remove(obj as usize, n as u64)
    }
}
