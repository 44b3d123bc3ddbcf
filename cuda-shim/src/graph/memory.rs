//! Graph memory: allocation and free nodes (`cuGraphAddMemAllocNode`, `cuGraphAddMemFreeNode`, and
//! `cuMemAllocAsync`/`cuMemFreeAsync` captured from a stream), and the device's graph memory
//! attributes.
//!
//! CUDA fixes a graph allocation's address when the node is made, backs it from the allocation
//! node's run until a free ends it (a free node, `cuMemFreeAsync`, `cuMemFree`), and refuses to
//! relaunch a graph whose allocation is still live. Here the memory is allocated when the node is
//! made, at that address, and kept as long as the node or an executable graph made from it exists;
//! running the nodes only marks it live or freed. When its graphs are gone, an allocation no free
//! node ends, or one still live, becomes an ordinary allocation, which the program frees as any
//! other (warp-lang frees the allocations of a capture it refused); the others go back at once.

use super::{NodeJob, NodeType, NODES};
use crate::errors::*;
use crate::pool::{AccessDesc, PoolProps};
use crate::{device_check, init_check, out, CUdeviceptr, Handle};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

/// One graph allocation: its address and size, and whether a run of its allocation node has made
/// it live (and no free has ended it since).
pub struct GraphAlloc {
    pub ptr: CUdeviceptr,
    pub size: u64,
    device: c_int,
    live: AtomicBool,
    /// Whether its allocation node has ever run.
    launched: AtomicBool,
    /// Whether a free node ends it (then the program never frees it).
    freed_by_node: AtomicBool,
}

/// The graph allocations that exist, by address, for the frees that end them.
static ALLOCS: Mutex<BTreeMap<CUdeviceptr, Weak<GraphAlloc>>> = Mutex::new(BTreeMap::new());

/// Per device: bytes of graph allocations live (used) and existing (reserved), and the high-water
/// marks of both (`CUgraphMem_attribute`: used, used high, reserved, reserved high).
static STATS: Mutex<Vec<[u64; 4]>> = Mutex::new(Vec::new());

fn account(device: c_int, used: i64, reserved: i64) {
    let mut stats = STATS.lock();
    if stats.len() <= device as usize {
        stats.resize(device as usize + 1, [0; 4]);
    }
    let s = &mut stats[device as usize];
    s[0] = s[0].saturating_add_signed(used);
    s[2] = s[2].saturating_add_signed(reserved);
    s[1] = s[1].max(s[0]);
    s[3] = s[3].max(s[2]);
}

impl GraphAlloc {
    /// A new allocation of `size` bytes on the current context's device, not live yet.
    unsafe fn new(size: usize) -> Result<Arc<GraphAlloc>, CUresult> {
        let ptr = crate::memory::alloc_device(size)?;
        let device = crate::state::CONTEXTS.get(crate::state::current_ctx()?)?.device;
        let a = Arc::new(GraphAlloc {
            ptr,
            size: size as u64,
            device,
            live: AtomicBool::new(false),
            launched: AtomicBool::new(false),
            freed_by_node: AtomicBool::new(false),
        });
        ALLOCS.lock().insert(ptr, Arc::downgrade(&a));
        account(device, 0, size as i64);
        Ok(a)
    }

    /// What the allocation node does when it runs: the memory is live from now on.
    fn alloc_job(self: &Arc<Self>) -> NodeJob {
        let a = self.clone();
        Arc::new(move || {
            a.launched.store(true, Ordering::Release);
            if !a.live.swap(true, Ordering::AcqRel) {
                account(a.device, a.size as i64, 0);
            }
            Ok(())
        })
    }

    /// Ends the allocation's live span. Freeing it again is an error; freeing one whose allocation
    /// node never ran leaves it as it is (warp-lang frees the allocations of a capture it refused).
    fn end(&self) -> Result<(), CUresult> {
        if self.live.swap(false, Ordering::AcqRel) {
            account(self.device, -(self.size as i64), 0);
            Ok(())
        } else if self.launched.load(Ordering::Acquire) {
            Err(CUDA_ERROR_INVALID_VALUE)
        } else {
            Ok(())
        }
    }
}

impl Drop for GraphAlloc {
    fn drop(&mut self) {
        ALLOCS.lock().remove(&self.ptr);
        account(self.device, 0, -(self.size as i64));
        let live = *self.live.get_mut();
        if live {
            account(self.device, -(self.size as i64), 0);
        }
        if live || !*self.freed_by_node.get_mut() {
            // The program's now, to free as any allocation.
            crate::memory::disown(self.ptr);
        } else {
            // This may run on a stream's worker (the last launch of a destroyed executable graph
            // ends there), so the memory goes back without waiting for the streams: nothing that
            // could still use it exists.
            crate::memory::release_now(self.ptr);
        }
    }
}

/// The graph allocation at `ptr`, if there is one.
fn lookup(ptr: CUdeviceptr) -> Option<Arc<GraphAlloc>> {
    ALLOCS.lock().get(&ptr).and_then(Weak::upgrade)
}

/// A free of `ptr` outside a graph (`cuMemFree`, or `cuMemFreeAsync` when its turn comes): `None`
/// if `ptr` is not a graph allocation, else the end of its live span.
pub fn free(ptr: CUdeviceptr) -> Option<Result<(), CUresult>> {
    lookup(ptr).map(|a| a.end())
}

/// Whether `ptr` is a graph allocation (which `cuMemFreeAsync` only marks freed).
pub fn is_graph_alloc(ptr: CUdeviceptr) -> bool {
    ALLOCS.lock().contains_key(&ptr)
}

/// A free node's work: it ends the allocation's live span.
fn free_job(a: Arc<GraphAlloc>) -> NodeJob {
    a.freed_by_node.store(true, Ordering::Release);
    Arc::new(move || a.end())
}

/// `cuMemAllocAsync` on a capturing stream: an allocation node after the stream's last nodes, whose
/// address goes to `dptr` at once. `Ok(false)` if the stream is not capturing after all.
pub unsafe fn capture_alloc(dptr: *mut CUdeviceptr, size: usize, s: Handle) -> Result<bool, CUresult> {
    if dptr.is_null() || size == 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let a = GraphAlloc::new(size)?;
    let (_, q) = crate::stream::resolve(s)?;
    let job = a.alloc_job();
    let Some(node) = crate::graph::captured(&q, Some(NodeType::MemAlloc), || Some(job))? else {
        return Ok(false);
    };
    *NODES.get(node)?.alloc.lock() = Some(a.clone());
    *dptr = a.ptr;
    Ok(true)
}

/// `cuMemFreeAsync` on a capturing stream: a free node, for a graph allocation only (CUDA: "must be
/// passed the address of a graph allocation").
pub fn capture_free(ptr: CUdeviceptr, s: Handle) -> Result<bool, CUresult> {
    let a = lookup(ptr).ok_or(CUDA_ERROR_INVALID_VALUE)?;
    let (_, q) = crate::stream::resolve(s)?;
    let job = free_job(a.clone());
    let Some(node) = crate::graph::captured(&q, Some(NodeType::MemFree), || Some(job))? else {
        return Ok(false);
    };
    *NODES.get(node)?.alloc.lock() = Some(a);
    Ok(true)
}

/// `CUDA_MEM_ALLOC_NODE_PARAMS` (v1; v2 is the same fields).
#[repr(C)]
pub struct AllocNodeParams {
    pool: PoolProps,
    access: *const AccessDesc,
    access_count: usize,
    bytesize: usize,
    dptr: CUdeviceptr,
}

api! {
    exports = graph_memory_exports;

    fn cuGraphAddMemAllocNode(pn: *mut Handle, g: Handle, deps: *const Handle, n: usize, p: *mut AllocNodeParams) {
        init_check()?;
        let params = p.as_mut().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        if params.bytesize == 0 || !params.pool.is_device_pinned() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        if params.pool.shared() {
            return Err(CUDA_ERROR_NOT_SUPPORTED); // cuda.h: IPC is not supported for graph allocations
        }
        let a = GraphAlloc::new(params.bytesize)?;
        let node = crate::graph::add_node(pn, g, deps, n, NodeType::MemAlloc, Some(a.alloc_job()))?;
        *NODES.get(node)?.alloc.lock() = Some(a.clone());
        params.dptr = a.ptr;
        Ok(())
    }
    fn cuGraphAddMemFreeNode(pn: *mut Handle, g: Handle, deps: *const Handle, n: usize, ptr: CUdeviceptr) {
        init_check()?;
        let a = lookup(ptr).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let node = crate::graph::add_node(pn, g, deps, n, NodeType::MemFree, Some(free_job(a.clone())))?;
        *NODES.get(node)?.alloc.lock() = Some(a);
        Ok(())
    }
    fn cuGraphMemAllocNodeGetParams(node: Handle, p: *mut AllocNodeParams) {
        init_check()?;
        if p.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let a = node_alloc(node, NodeType::MemAlloc)?;
        std::ptr::write_bytes(p as *mut u8, 0, std::mem::size_of::<AllocNodeParams>());
        let params = &mut *p;
        params.pool.set_device_pinned(a.device);
        params.bytesize = a.size as usize;
        params.dptr = a.ptr;
        Ok(())
    }
    fn cuGraphMemFreeNodeGetParams(node: Handle, ptr: *mut CUdeviceptr) {
        init_check()?;
        out(ptr, node_alloc(node, NodeType::MemFree)?.ptr)
    }
    fn cuDeviceGetGraphMemAttribute(dev: c_int, attr: c_int, value: *mut c_void) {
        device_check(dev)?;
        if !(0..4).contains(&attr) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let v = STATS.lock().get(dev as usize).map_or(0, |s| s[attr as usize]);
        out(value as *mut u64, v)
    }
    fn cuDeviceSetGraphMemAttribute(dev: c_int, attr: c_int, value: *mut c_void) {
        device_check(dev)?;
        // Only the high-water marks can be set, and only back to 0 (to the current amount).
        if value.is_null() || !matches!(attr, 1 | 3) || *(value as *const u64) != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        account(dev, 0, 0);
        let mut stats = STATS.lock();
        let s = &mut stats[dev as usize];
        s[attr as usize] = s[attr as usize - 1];
        Ok(())
    }
    fn cuDeviceGraphMemTrim(dev: c_int) {
        // Graph memory is held only while its graphs exist: nothing unused is kept to give back.
        device_check(dev)
    }
}

/// The allocation an allocation or free node (`kind`) stands for.
fn node_alloc(node: Handle, kind: NodeType) -> Result<Arc<GraphAlloc>, CUresult> {
    let n = NODES.get(node as usize)?;
    if n.kind != kind {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let a = n.alloc.lock().clone();
    a.ok_or(CUDA_ERROR_INVALID_VALUE)
}
