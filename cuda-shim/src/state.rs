//! Handle tables and device memory. Handles are opaque numbers with a type tag, never pointers to our
//! objects, so a forged or stale handle is a failed lookup and not a wild dereference.

use crate::errors::*;
use parking_lot::Mutex;
use std::alloc::Layout;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    UserObject = 0,
    Context = 1,
    Module = 2,
    Function = 3,
    Stream = 4,
    Graph = 5,
    GraphNode = 6,
    GraphExec = 7,
    MemPool = 8,
    Event = 9,
    Array = 10,
    Reference = 11,
    Mipmapped = 12,
    // High numbers, clear of the others.
    JitLink = 13,
    Link = 14,
    Library = 15,
}

static NEXT: AtomicUsize = AtomicUsize::new(1);

pub fn new_handle(tag: Tag) -> usize {
    // Low 4 bits carry the tag; the rest is a counter. Never 0 (NULL is "no handle" in the API).
    (NEXT.fetch_add(1, Ordering::Relaxed) << 4) | tag as usize
}

pub struct Table<T> {
    tag: Tag,
    map: Mutex<HashMap<usize, Arc<T>>>,
}

impl<T> Table<T> {
    pub fn new(tag: Tag) -> Self {
        Table {
            tag,
            map: Mutex::new(HashMap::new()),
        }
    }
    pub fn insert(&self, v: T) -> usize {
        let h = new_handle(self.tag);
        self.map.lock().insert(h, Arc::new(v));
        h
    }
    pub fn get(&self, h: usize) -> Result<Arc<T>, CUresult> {
        if h & 0xf != self.tag as usize {
            return Err(CUDA_ERROR_INVALID_HANDLE);
        }
        self.map.lock().get(&h).cloned().ok_or(CUDA_ERROR_INVALID_HANDLE)
    }
    pub fn remove(&self, h: usize) -> Result<Arc<T>, CUresult> {
        if h & 0xf != self.tag as usize {
            return Err(CUDA_ERROR_INVALID_HANDLE);
        }
        self.map.lock().remove(&h).ok_or(CUDA_ERROR_INVALID_HANDLE)
    }
    pub fn retain(&self, f: impl FnMut(&usize, &mut Arc<T>) -> bool) {
        self.map.lock().retain(f);
    }
    pub fn len(&self) -> usize {
        self.map.lock().len()
    }
}

pub struct Context {
    pub device: i32,
    pub primary: bool,
    /// `cuCtxGetId`: unique over the process's life.
    pub id: u64,
    pub flags: std::sync::atomic::AtomicU32,
    pub streams: crate::stream::CtxStreams,
    /// Limits, cache and shared-memory configuration (`cuCtxSetLimit`, `cuCtxSetCacheConfig`, ...).
    pub config: Mutex<crate::context::Config>,
    /// Set when the context is destroyed: ends its launches still running after a grace period.
    pub cancel: Arc<ptx_jit::Cancel>,
    /// Contexts (of other devices) whose memory this one has been given access to
    /// (`cuCtxEnablePeerAccess`).
    pub peers: Mutex<Vec<usize>>,
}

impl Context {
    pub fn new(device: i32, primary: bool, flags: u32) -> Result<Context, CUresult> {
        static IDS: AtomicUsize = AtomicUsize::new(1);
        Ok(Context {
            device,
            primary,
            id: IDS.fetch_add(1, Ordering::Relaxed) as u64,
            flags: std::sync::atomic::AtomicU32::new(flags),
            streams: crate::stream::CtxStreams::new()?,
            config: Mutex::new(crate::context::Config::default()),
            cancel: Arc::default(),
            peers: Mutex::default(),
        })
    }
}

pub struct ModuleObj {
    pub ctx: usize,
    pub host: ptx_jit::HostModule,
}

pub struct FuncObj {
    pub module: usize,
    pub module_obj: Arc<ModuleObj>,
    pub kernel: usize,
}

pub struct Stream {
    pub ctx: usize,
    pub queue: Arc<crate::stream::Queue>,
}

pub static CONTEXTS: once_cell::sync::Lazy<Table<Context>> = once_cell::sync::Lazy::new(|| Table::new(Tag::Context));
pub static MODULES: once_cell::sync::Lazy<Table<ModuleObj>> = once_cell::sync::Lazy::new(|| Table::new(Tag::Module));
pub static FUNCTIONS: once_cell::sync::Lazy<Table<FuncObj>> = once_cell::sync::Lazy::new(|| Table::new(Tag::Function));
pub static EVENTS: once_cell::sync::Lazy<Table<crate::event::Event>> =
    once_cell::sync::Lazy::new(|| Table::new(Tag::Event));
pub static STREAMS: once_cell::sync::Lazy<Table<Stream>> = once_cell::sync::Lazy::new(|| Table::new(Tag::Stream));

/// Primary context per device (indexed by ordinal): (handle, reference count).
pub static PRIMARY: Mutex<[Option<(usize, u32)>; ptx_jit::device::MAX_DEVICES as usize]> =
    Mutex::new([None; ptx_jit::device::MAX_DEVICES as usize]);

thread_local! {
    /// The calling thread's context stack; the top is current. Reached through [`with_ctx_stack`].
    static CTX_STACK: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on the calling thread's context stack. A thread whose storage is being torn down (the
/// static CUDA runtime's own thread-exit handler calls in then) has none: an invalid context.
pub fn with_ctx_stack<R>(f: impl FnOnce(&mut Vec<usize>) -> R) -> Result<R, CUresult> {
    CTX_STACK
        .try_with(|s| f(&mut s.borrow_mut()))
        .map_err(|_| CUDA_ERROR_INVALID_CONTEXT)
}

/// The calling thread's current context, if it has one.
pub fn ctx_top() -> Option<usize> {
    with_ctx_stack(|s| s.last().copied()).ok().flatten()
}

pub fn current_ctx() -> Result<usize, CUresult> {
    match ctx_top() {
        Some(h) => CONTEXTS.get(h).map(|_| h).map_err(|_| CUDA_ERROR_CONTEXT_IS_DESTROYED),
        None => Err(CUDA_ERROR_INVALID_CONTEXT),
    }
}

pub enum MemKind {
    /// `cuMemAlloc`, `cuMemAllocPitch`, `cuMemAllocAsync`: ours to free.
    Device { layout: Layout, ctx: usize, id: u64 },
    /// `cuMemHostAlloc`, `cuMemAllocHost`: page-locked host memory (as far as the device sees), ours to free.
    Host {
        layout: Layout,
        ctx: usize,
        id: u64,
        flags: u32,
    },
    /// `cuMemHostRegister`: the application's memory, made visible to the device.
    Registered { ctx: usize, id: u64, flags: u32 },
    /// `cuMemAllocManaged`.
    Managed { layout: Layout, ctx: usize, id: u64 },
    /// A module's `.global`/`.const` variable: freed with the module.
    ModuleVar(usize),
    /// Physical memory mapped and made accessible in a reserved range (`crate::vmm`): no
    /// context's, and unmapped, never freed, through the driver.
    Mapped { id: u64 },
    /// Another process's device memory, opened in context `ctx` (`crate::ipc`): unmapped by
    /// `cuIpcCloseMemHandle`, never freed here.
    Imported { ctx: usize },
}

pub struct Alloc {
    pub size: u64,
    pub kind: MemKind,
}

/// Every range of device memory, by start address.
pub static MEMORY: Mutex<BTreeMap<u64, Alloc>> = Mutex::new(BTreeMap::new());

/// Checks that [ptr, ptr+len) lies inside one known range of device memory.
pub fn check_range(ptr: u64, len: u64) -> Result<(), CUresult> {
    let mem = MEMORY.lock();
    let (start, a) = mem.range(..=ptr).next_back().ok_or(CUDA_ERROR_INVALID_VALUE)?;
    let end = start + a.size.max(1);
    if ptr >= end || ptr.checked_add(len).is_none_or(|e| e > start + a.size) {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    Ok(())
}
