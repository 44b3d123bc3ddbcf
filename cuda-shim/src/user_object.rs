//! User objects (`cuUserObjectCreate`): a host pointer and a destructor, reference counted by the
//! program and by the graphs that hold it (`cuGraphRetainUserObject`), so that resources a graph's
//! work needs live as long as the graph, every executable graph made from it (until an update
//! brings another graph's) and every launch in flight. Destructors run on one thread of their own,
//! in order, once the last reference goes, as CUDA runs them outside the calling thread (and they
//! may not call CUDA).

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
        destructor_thread(o.ptr, o.destroy);
    }
    Ok(())
}

/// Runs a destructor on the one thread that runs them all, in the order their objects died, as CUDA
/// does.
fn destructor_thread(ptr: usize, destroy: Destroy) {
    static QUEUE: Mutex<Option<std::sync::mpsc::Sender<(usize, Destroy)>>> = Mutex::new(None);
    let mut q = QUEUE.lock();
    let tx = q.get_or_insert_with(|| {
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Destroy)>();
        let spawned = std::thread::Builder::new()
            .name("cuda-user-objects".into())
            .spawn(move || {
                for (ptr, destroy) in rx {
                    // SAFETY: the program gave this destructor for this pointer; it runs once.
                    unsafe { destroy(ptr as *mut c_void) };
                }
            });
        if spawned.is_err() {
            eprintln!("ptx-jit: no thread for user objects' destructors; they will not run");
        }
        tx
    });
    let _ = tx.send((ptr, destroy));
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
        let held = self.0.lock();
        for &(h, n) in held.iter() {
            let _ = retain(h, n);
        }
        Held(Mutex::new(held.clone()))
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
        if obj.is_null() || destroy.is_null() || refs == 0 || refs > i32::MAX as c_uint || flags != NO_DESTRUCTOR_SYNC {
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
        if n == 0 || n > i32::MAX as c_uint {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        retain(obj as usize, n as u64)
    }
    fn cuUserObjectRelease(obj: Handle, n: c_uint) {
        init_check()?;
        if n == 0 || n > i32::MAX as c_uint {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        release(obj as usize, n as u64)
    }
    fn cuGraphRetainUserObject(g: Handle, obj: Handle, n: c_uint, flags: c_uint) {
        init_check()?;
        if n == 0 || n > i32::MAX as c_uint || flags & !MOVE != 0 {
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
        if n == 0 || n > i32::MAX as c_uint {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        crate::graph::GRAPHS.get(g as usize)?.user_objects.remove(obj as usize, n as u64)
    }
}
