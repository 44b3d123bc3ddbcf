//! Memory: device, page-locked host, registered and managed allocations (all of them host memory
//! the CPU backend's kernels address directly), pointer queries, and copies and fills in 1, 2 and 3
//! dimensions, synchronous and on streams.
//!
//! A host pointer the shim does not know is pageable memory: an asynchronous copy from it is staged
//! at the call (the caller may reuse it at once), and one to it completes before the call returns.

use crate::device;
use crate::errors::*;
use crate::graph::NodeType;
use crate::state::*;
use crate::stream::{run_async, run_sync};
use crate::{init_check, out, CUdeviceptr, Handle};
use ptx_jit::runtime::sanitize::{Kind, Tools};
use std::alloc::Layout;
use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

static IDS: AtomicU64 = AtomicU64::new(1);

/// The size of a transparent huge page on x86-64.
const HUGE_PAGE: usize = 2 << 20;
/// `cuMemAllocPitch` rounds rows up to this.
const PITCH_ALIGN: usize = 512;

/// Bytes of host memory the shim holds for allocations (device, host and managed), which
/// [`device::total_mem`] bounds: an allocation beyond it fails with `CUDA_ERROR_OUT_OF_MEMORY`
/// before it can bring the OOM killer.
static USED: AtomicU64 = AtomicU64::new(0);

/// Reserves `bytes` of the device's memory, or fails with out-of-memory.
pub(crate) fn reserve(bytes: u64) -> Result<(), CUresult> {
    let total = device::total_mem();
    USED.fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
        u.checked_add(bytes).filter(|&n| n <= total)
    })
    .map(|_| ())
    .map_err(|_| CUDA_ERROR_OUT_OF_MEMORY)
}

/// Gives back what `reserve` counted.
pub(crate) fn unreserve(bytes: u64) {
    USED.fetch_sub(bytes, Ordering::AcqRel);
}

/// The read-write runs of mapped memory in `[start, end)` (`crate::vmm`), which are device memory
/// to copies, fills, pointer attributes and checked mode: replaced in one step, so memory that stays
/// accessible never drops out of the table meanwhile, and keeps its buffer id.
pub(crate) fn publish_mapped(start: u64, end: u64, runs: &[(u64, u64)]) {
    let mut mem = MEMORY.lock();
    let stale: Vec<u64> = mem
        .range(start..end)
        .filter(|(p, a)| matches!(a.kind, MemKind::Mapped { .. }) && !runs.contains(&(**p, a.size)))
        .map(|(p, _)| *p)
        .collect();
    for p in stale {
        mem.remove(&p);
    }
    for &(p, size) in runs {
        mem.entry(p).or_insert_with(|| Alloc {
            size,
            kind: MemKind::Mapped {
                id: IDS.fetch_add(1, Ordering::Relaxed),
            },
        });
    }
}

/// Waits for the work of every context, before memory that work may use goes away.
pub(crate) fn quiesce() {
    let mut all = vec![];
    CONTEXTS.retain(|_, c| {
        all.push(c.clone());
        true
    });
    for c in all {
        c.streams.synchronize();
    }
}

/// Memory held by allocations, for `cuMemGetInfo`.
pub fn used() -> u64 {
    USED.load(Ordering::Acquire)
}

unsafe fn allocate(size: usize) -> Result<(*mut u8, Layout), CUresult> {
    if size as u64 > device::total_mem() {
        return Err(CUDA_ERROR_OUT_OF_MEMORY);
    }
    // Small buffers share slabs (`crate::arena`): an overrun lands in another device buffer.
    if let Some(class) = crate::arena::class_size(size) {
        let layout = Layout::from_size_align(class, crate::arena::MIN).map_err(|_| CUDA_ERROR_OUT_OF_MEMORY)?;
        reserve(class as u64)?;
        return match crate::arena::alloc(class) {
            Some(p) => Ok((p, layout)),
            None => {
                USED.fetch_sub(class as u64, Ordering::AcqRel);
                Err(CUDA_ERROR_OUT_OF_MEMORY)
            }
        };
    }
    // A GPU maps memory in large pages, so a kernel that overruns its buffer a little goes unnoticed
    // there; here the same overrun could reach the host's own memory. Each large allocation gets a
    // tail as long as itself (up to 2 MiB) that only such kernels touch (checked mode still reports
    // them, by the size asked for).
    let padded = size.saturating_add(size.min(HUGE_PAGE)).next_multiple_of(4096);
    let layout = Layout::from_size_align(padded, HUGE_PAGE).map_err(|_| CUDA_ERROR_OUT_OF_MEMORY)?;
    reserve(padded as u64)?;
    map_huge(layout).map(|p| (p, layout)).ok_or_else(|| {
        USED.fetch_sub(padded as u64, Ordering::AcqRel);
        CUDA_ERROR_OUT_OF_MEMORY
    })
}

/// Large allocations go in huge pages, as on a GPU: kernels that stream through memory at a page's
/// stride (a warp's rows of a CTA's chunk) would otherwise spend much of their time on TLB misses.
/// Fresh anonymous memory, so the advice comes before any page is touched (the allocator's zeroing
/// touched them all first, and the buffer stayed in 4 KiB pages), and the kernel zeroes it lazily.
unsafe fn map_huge(layout: Layout) -> Option<*mut u8> {
    let len = layout.size() + HUGE_PAGE;
    let raw = libc::mmap(
        std::ptr::null_mut(),
        len,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
        -1,
        0,
    );
    if raw == libc::MAP_FAILED {
        return None;
    }
    let start = (raw as usize).next_multiple_of(HUGE_PAGE);
    let (head, tail) = (start - raw as usize, raw as usize + len - (start + layout.size()));
    if head > 0 {
        libc::munmap(raw, head);
    }
    if tail > 0 {
        libc::munmap((start + layout.size()) as *mut c_void, tail);
    }
    // Advice only: where the kernel has no huge pages the memory works as before.
    libc::madvise(start as *mut c_void, layout.size(), libc::MADV_HUGEPAGE);
    Some(start as *mut u8)
}

/// Gives back what `allocate` returned.
unsafe fn release(p: *mut u8, layout: Layout) {
    if layout.align() == HUGE_PAGE {
        libc::munmap(p as *mut c_void, layout.size());
    } else {
        crate::arena::free(p, layout.size());
    }
    USED.fetch_sub(layout.size() as u64, Ordering::AcqRel);
}

unsafe fn alloc_into(
    dptr: *mut CUdeviceptr,
    size: usize,
    kind: impl FnOnce(Layout, usize, u64) -> MemKind,
) -> Result<(), CUresult> {
    init_check()?;
    let ctx = current_ctx()?;
    // A context whose kernel faulted is unusable, as on a GPU: its error comes back from every call.
    CONTEXTS.get(ctx)?.streams.check()?;
    if dptr.is_null() || size == 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let (p, layout) = allocate(size)?;
    let id = IDS.fetch_add(1, Ordering::Relaxed);
    let kind = kind(layout, ctx, id);
    // Device memory is undefined until written; host and managed memory the host may write directly.
    if sanitizing(Tools::INITCHECK) && matches!(kind, MemKind::Device { .. }) {
        ptx_jit::runtime::sanitize::track(p as u64, size as u64);
    }
    MEMORY.lock().insert(
        p as u64,
        Alloc {
            size: size as u64,
            kind,
        },
    );
    *dptr = p as u64;
    Ok(())
}

/// Device memory of `size` bytes on the current context, for the driver's own use (graph
/// allocations): its address.
/// It belongs to the driver ([`DRIVER_OWNED`]) until freed with [`release_now`] or handed to the
/// program with [`disown`].
pub(crate) unsafe fn alloc_device(size: usize) -> Result<CUdeviceptr, CUresult> {
    let mut p = 0;
    alloc_into(&mut p, size, |layout, ctx, id| MemKind::Device { layout, ctx, id })?;
    DRIVER_OWNED.lock().insert(p);
    Ok(p)
}

/// Allocations the driver made for its own objects ([`alloc_device`]), which live as long as those
/// objects do, not as long as the context that was current when they were made.
static DRIVER_OWNED: parking_lot::Mutex<std::collections::BTreeSet<u64>> =
    parking_lot::Mutex::new(std::collections::BTreeSet::new());

/// A driver-owned allocation becomes the program's, to free as any other.
pub(crate) fn disown(ptr: CUdeviceptr) {
    DRIVER_OWNED.lock().remove(&ptr);
}

/// Frees the allocation at `ptr` at once, without waiting for the streams: for memory nothing can
/// still use (a graph allocation whose graphs are gone, an allocation freed in stream order).
pub(crate) fn release_now(ptr: CUdeviceptr) {
    let Some(a) = MEMORY.lock().remove(&ptr) else { return };
    DRIVER_OWNED.lock().remove(&ptr);
    FREEING.lock().remove(&ptr);
    forget(ptr);
    if let Some(layout) = layout(&a.kind) {
        unsafe { release(ptr as *mut u8, layout) };
    }
}

fn sanitizing(tool: u8) -> bool {
    ptx_jit::runtime::sanitize::Tools::from_env().has(tool)
}

/// Allocations `cuMemFreeAsync` frees once their streams get there.
static FREEING: parking_lot::Mutex<std::collections::BTreeSet<u64>> =
    parking_lot::Mutex::new(std::collections::BTreeSet::new());

/// memcheck: starts of allocations freed lately, to tell a double free from a pointer never allocated.
static FREED: parking_lot::Mutex<std::collections::VecDeque<u64>> =
    parking_lot::Mutex::new(std::collections::VecDeque::new());

/// Reports a host-side memcheck finding (double free, leak).
fn memcheck(kind: ptx_jit::runtime::sanitize::Kind, addr: u64, bytes: u64, detail: String) {
    let f = ptx_jit::runtime::sanitize::Finding::plain(kind, addr, bytes, detail);
    ptx_jit::runtime::sanitize::report(
        &[f],
        &ptx_jit::runtime::sanitize::Source {
            kernel: "(host)",
            text: None,
        },
    );
}

/// Frees an allocation of the kinds `which` accepts, after the work of its context that may still use it.
fn free(ptr: u64, which: fn(&MemKind) -> bool) -> Result<(), CUresult> {
    init_check()?;
    if FREEING.lock().contains(&ptr) {
        return Err(CUDA_ERROR_INVALID_VALUE); // already freed, in stream order
    }
    let ctx = match MEMORY.lock().get(&ptr) {
        Some(a) if which(&a.kind) => owner(&a.kind),
        _ => {
            if sanitizing(Tools::MEMCHECK) && FREED.lock().contains(&ptr) {
                memcheck(Kind::DoubleFree, ptr, 0, format!("{ptr:#x} is freed a second time"));
            }
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
    };
    if let Some(c) = ctx.and_then(|h| CONTEXTS.get(h).ok()) {
        c.streams.synchronize();
    }
    let a = MEMORY.lock().remove(&ptr).ok_or(CUDA_ERROR_INVALID_VALUE)?;
    // Before the memory goes back: another thread may be given the same address at once.
    forget(ptr);
    if let Some(layout) = layout(&a.kind) {
        unsafe { release(ptr as *mut u8, layout) };
    }
    Ok(())
}

/// `cuMemAllocAsync`/`cuMemAllocFromPoolAsync`: stream-ordered allocation from `pool`. Memory that
/// exists at once is valid in stream order too. On a capturing stream, a graph allocation node.
pub(crate) unsafe fn alloc_async(dptr: *mut CUdeviceptr, size: usize, pool: usize, s: Handle) -> Result<(), CUresult> {
    if crate::stream::capturing(s)? && crate::graph::memory::capture_alloc(dptr, size, s)? {
        return Ok(());
    }
    crate::pool::admit(pool, size as u64)?;
    alloc_into(dptr, size, |layout, ctx, id| MemKind::Device { layout, ctx, id })?;
    if let Err(e) = crate::pool::allocated(pool, *dptr, size as u64) {
        // The pool went away meanwhile: the allocation goes too.
        let _ = free(*dptr, |_| true);
        return Err(e);
    }
    Ok(())
}

/// The pools' and sanitizers' side of freeing the allocation at `ptr`.
fn forget(ptr: u64) {
    crate::pool::released(ptr);
    crate::ipc::forget(ptr);
    if sanitizing(Tools::INITCHECK) {
        ptx_jit::runtime::sanitize::untrack(ptr);
    }
    if sanitizing(Tools::MEMCHECK) {
        let mut freed = FREED.lock();
        if freed.len() == 4096 {
            freed.pop_front();
        }
        freed.push_back(ptr);
    }
}

fn layout(k: &MemKind) -> Option<Layout> {
    match k {
        MemKind::Device { layout, .. } | MemKind::Host { layout, .. } | MemKind::Managed { layout, .. } => {
            Some(*layout)
        }
        _ => None,
    }
}

fn owner(k: &MemKind) -> Option<usize> {
    match k {
        MemKind::Device { ctx, .. }
        | MemKind::Host { ctx, .. }
        | MemKind::Managed { ctx, .. }
        | MemKind::Registered { ctx, .. }
        | MemKind::Imported { ctx } => Some(*ctx),
        MemKind::ModuleVar(m) => MODULES.get(*m).ok().map(|m| m.ctx),
        MemKind::Mapped { .. } => None,
    }
}

/// Frees what a destroyed (or reset) context owned. Stream-ordered allocations belong to their
/// device's memory pool, and the driver's own (graph allocations, conditional handles) to their
/// objects, which outlive the context (warp-lang frees pool memory after destroying it).
pub fn release_ctx(ctx: usize, dead_modules: &[usize]) {
    crate::texture::release_ctx(ctx);
    crate::ipc::release_ctx(ctx);
    for &m in dead_modules {
        crate::texref::release_module(m);
    }
    let driver_owned = DRIVER_OWNED.lock().clone();
    let mut mem = MEMORY.lock();
    let gone: Vec<u64> = mem
        .iter()
        .filter(|(p, a)| match &a.kind {
            MemKind::ModuleVar(m) => dead_modules.contains(m),
            k => owner(k) == Some(ctx) && !crate::pool::holds(**p) && !driver_owned.contains(*p),
        })
        .map(|(p, _)| *p)
        .collect();
    let mut freeing = FREEING.lock();
    for p in &gone {
        freeing.remove(p);
    }
    drop(freeing);
    for p in gone {
        let Some(a) = mem.remove(&p) else { continue };
        if sanitizing(Tools::MEMCHECK) && matches!(a.kind, MemKind::Device { .. } | MemKind::Managed { .. }) {
            memcheck(
                Kind::Leak,
                p,
                a.size,
                format!(
                    "{} bytes of device memory at {p:#x} are still allocated when their context is destroyed",
                    a.size
                ),
            );
        }
        // Before the memory goes back, as in `free`: another thread may be given the same addresses.
        forget(p);
        if let Some(l) = layout(&a.kind) {
            unsafe { release(p as *mut u8, l) };
        }
    }
}

/// Memory a checked kernel may touch, for `ptx_jit::runtime::checked`: the allocation or module variable
/// holding `ptr` (start, end); else, as the device reports pageable memory access, the page of host
/// memory the program has mapped there. Device memory outside every allocation is never valid: the
/// tail of a large allocation, and a slab block no allocation holds (freed or never handed out).
pub fn checked_range(ptr: u64) -> Option<(u64, u64)> {
    {
        let mem = MEMORY.lock();
        if let Some((&start, a)) = mem.range(..=ptr).next_back() {
            if ptr < start + a.size {
                return Some((start, start + a.size));
            }
            if layout(&a.kind).is_some_and(|l| ptr < start + l.size() as u64) {
                return None;
            }
        }
    }
    if crate::arena::contains(ptr) {
        return None;
    }
    let page = ptr & !4095;
    let mut resident = 0u8;
    // SAFETY: mincore only asks the kernel whether the page is mapped (ENOMEM when it is not).
    let mapped = unsafe { libc::mincore(page as *mut c_void, 4096, &mut resident) } == 0;
    mapped.then_some((page, page + 4096))
}

/// The allocation that contains `ptr`: (start, size, kind summary).
fn lookup(ptr: u64) -> Option<(u64, u64, Info)> {
    let mem = MEMORY.lock();
    let (start, a) = mem.range(..=ptr).next_back()?;
    if ptr >= start + a.size.max(1) {
        return None;
    }
    let (memtype, managed, host, id, flags) = match &a.kind {
        MemKind::Device { id, .. } | MemKind::Mapped { id } => (2, false, false, *id, 0),
        MemKind::ModuleVar(m) => (2, false, false, (*m as u64) << 20 ^ *start, 0),
        MemKind::Host { id, flags, .. } => (1, false, true, *id, *flags),
        MemKind::Registered { id, flags, .. } => (1, false, true, *id, *flags),
        MemKind::Managed { id, .. } => (2, true, true, *id, 0),
        MemKind::Imported { .. } => (2, false, false, *start, 0),
    };
    Some((
        *start,
        a.size,
        Info {
            ctx: owner(&a.kind).unwrap_or(0),
            memtype,
            managed,
            host,
            id,
            flags,
            exportable: matches!(a.kind, MemKind::Device { .. }),
        },
    ))
}

struct Info {
    ctx: usize,
    /// `CUmemorytype`: 1 host, 2 device.
    memtype: c_int,
    managed: bool,
    /// Host code may use the pointer (page-locked, registered or managed memory).
    host: bool,
    id: u64,
    flags: u32,
    /// `cuIpcGetMemHandle` takes it (`cuMemAlloc` memory).
    exportable: bool,
}

/// `CUmemLocation` (cuda.h), passed by value: a location type and an id.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MemLocation {
    kind: c_int,
    id: c_int,
}

impl crate::trace::Arg for MemLocation {
    fn show(&self) -> String {
        format!("{{type={}, id={}}}", self.kind, self.id)
    }
}

/// Prefetching and advice take managed memory (or, on a device with pageable memory access,
/// any host memory): a range inside one known allocation, or memory the shim does not know.
fn managed_range(dptr: u64, n: usize) -> Result<(), CUresult> {
    if dptr == 0 || n == 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    match lookup(dptr) {
        Some((_, _, i)) if !i.managed && i.memtype == 2 => Err(CUDA_ERROR_INVALID_VALUE),
        Some(_) => check_range(dptr, n as u64),
        None => Ok(()),
    }
}

// ---- copies ----

/// A copy of `depth` slices of `height` rows of `width` bytes between two pitched layouts.
#[derive(Clone, Copy)]
struct Copy3 {
    src: u64,
    dst: u64,
    width: usize,
    height: usize,
    depth: usize,
    src_pitch: usize,
    src_rows: usize,
    dst_pitch: usize,
    dst_rows: usize,
}

impl Copy3 {
    fn linear(src: u64, dst: u64, n: usize) -> Copy3 {
        Copy3 {
            src,
            dst,
            width: n,
            height: 1,
            depth: 1,
            src_pitch: n,
            src_rows: 1,
            dst_pitch: n,
            dst_rows: 1,
        }
    }
    fn bytes(&self) -> usize {
        self.width * self.height * self.depth
    }
    /// Bytes from the first to the last byte touched on one side.
    fn extent(&self, pitch: usize, rows: usize) -> Result<u64, CUresult> {
        if self.bytes() == 0 {
            return Ok(0);
        }
        let e = (|| {
            let slice = pitch.checked_mul(rows)?;
            (self.depth - 1)
                .checked_mul(slice)?
                .checked_add((self.height - 1).checked_mul(pitch)?)?
                .checked_add(self.width)
        })();
        e.map(|e| e as u64).ok_or(CUDA_ERROR_INVALID_VALUE)
    }
    /// [`Copy3::run`]; when a side is memory the shim does not know (`unknown`), under a guard, so a
    /// pointer that is not mapped fails the copy with `CUDA_ERROR_INVALID_VALUE`.
    unsafe fn run_checked(&self, unknown: bool) -> Result<(), CUresult> {
        if !unknown {
            self.run();
            return Ok(());
        }
        // SAFETY: the copy owns nothing and takes no lock: abandoning it at a fault is sound.
        ptx_jit::runtime::trap::run(std::ptr::null(), &mut || self.run()).map_err(|_| CUDA_ERROR_INVALID_VALUE)
    }

    unsafe fn run(&self) {
        let init = sanitizing(Tools::INITCHECK);
        for z in 0..self.depth {
            for y in 0..self.height {
                let s = self.src as usize + z * self.src_pitch * self.src_rows + y * self.src_pitch;
                let d = self.dst as usize + z * self.dst_pitch * self.dst_rows + y * self.dst_pitch;
                std::ptr::copy(s as *const u8, d as *mut u8, self.width);
                if init {
                    ptx_jit::runtime::sanitize::mark_written(None, d as u64, self.width as u64);
                }
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Mem {
    Host = 1,
    Device = 2,
    /// A CUDA array's elements, whose bounds `crate::texture::array_region` has checked.
    Array = 3,
    Unified = 4,
}

/// Checks one side of a copy; returns whether it is pageable host memory.
fn side(kind: Mem, ptr: u64, extent: u64) -> Result<bool, CUresult> {
    if extent == 0 {
        return Ok(false);
    }
    if ptr == 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    match kind {
        Mem::Device => check_range(ptr, extent).map(|_| false),
        Mem::Array => Ok(false),
        // A host or unified pointer inside known memory must stay inside it; elsewhere it is the
        // application's pageable memory.
        Mem::Host | Mem::Unified => match lookup(ptr) {
            Some(_) => check_range(ptr, extent).map(|_| false),
            // Device memory no allocation holds: freed, or never handed out.
            None if crate::arena::contains(ptr) => Err(CUDA_ERROR_INVALID_VALUE),
            None => Ok(true),
        },
    }
}

/// Checks a copy's sides and shape: whether either side is pageable host memory, or `None` when
/// there is nothing to copy.
unsafe fn check_copy(c: &Copy3, src: Mem, dst: Mem) -> Result<Option<(bool, bool)>, CUresult> {
    let several_rows = c.height * c.depth > 1;
    if c.width > 0 && several_rows && (c.src_pitch < c.width || c.dst_pitch < c.width) {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let src_pageable = side(src, c.src, c.extent(c.src_pitch, c.src_rows)?)?;
    let dst_pageable = side(dst, c.dst, c.extent(c.dst_pitch, c.dst_rows)?)?;
    Ok((c.bytes() > 0).then_some((src_pageable, dst_pageable)))
}

/// What a queued copy keeps alive until it has run: the arrays it reads or writes.
pub(crate) type Keep = Vec<ptx_jit::runtime::texture::Keep>;

/// Validates and runs (or queues) a copy. `stream` is `None` for the synchronous calls.
unsafe fn copy(c: Copy3, src: Mem, dst: Mem, stream: Option<Handle>) -> Result<(), CUresult> {
    copy_keeping(c, src, dst, Keep::new(), stream)
}

/// [`copy`], keeping `keep` alive until the copy has run, wherever it is queued.
unsafe fn copy_keeping(c: Copy3, src: Mem, dst: Mem, keep: Keep, stream: Option<Handle>) -> Result<(), CUresult> {
    init_check()?;
    if let Some(s) = stream {
        crate::stream::resolve(s)?;
    }
    let Some((src_pageable, dst_pageable)) = check_copy(&c, src, dst)? else {
        return Ok(());
    };
    // Pageable memory is whatever the caller passed: a wild pointer must fail the call, not the process.
    let pageable = src_pageable || dst_pageable;
    let s = match stream {
        None => {
            return run_sync(std::ptr::null_mut(), move || {
                let _keep = &keep;
                c.run_checked(pageable)
            })
        }
        Some(s) => s,
    };
    if crate::stream::capturing(s)? {
        // A graph's copy reads and writes its memory when the graph runs, checked again then.
        return run_async(s, Some(NodeType::Memcpy), move || {
            let _keep = &keep;
            match unsafe { check_copy(&c, src, dst) }? {
                Some((sp, dp)) => c.run_checked(sp || dp),
                None => Ok(()),
            }
        });
    }
    if dst_pageable {
        // The host must see the data when the call returns.
        return run_sync(s, move || {
            let _keep = &keep;
            c.run_checked(true)
        });
    }
    if src_pageable {
        // Staged now, so the caller may reuse its buffer at once.
        let mut staged = vec![0u8; c.bytes()];
        let gather = Copy3 {
            dst: staged.as_mut_ptr() as u64,
            dst_pitch: c.width,
            dst_rows: c.height,
            ..c
        };
        gather.run_checked(true)?;
        let mut scatter = c;
        scatter.src_pitch = c.width;
        scatter.src_rows = c.height;
        return run_async(s, Some(NodeType::Memcpy), move || {
            let _keep = &keep;
            let c = Copy3 {
                src: staged.as_ptr() as u64,
                ..scatter
            };
            c.run();
            Ok(())
        });
    }
    run_async(s, Some(NodeType::Memcpy), move || {
        let _keep = &keep;
        c.run();
        Ok(())
    })
}

/// `CUDA_MEMCPY2D` (cuda.h).
#[repr(C)]
pub struct Memcpy2D {
    src_x: usize,
    src_y: usize,
    src_type: c_int,
    src_host: *const c_void,
    src_device: CUdeviceptr,
    src_array: *mut c_void,
    src_pitch: usize,
    dst_x: usize,
    dst_y: usize,
    dst_type: c_int,
    dst_host: *mut c_void,
    dst_device: CUdeviceptr,
    dst_array: *mut c_void,
    dst_pitch: usize,
    width: usize,
    height: usize,
}

/// `CUDA_MEMCPY3D` (cuda.h).
#[repr(C)]
pub struct Memcpy3D {
    src_x: usize,
    src_y: usize,
    src_z: usize,
    src_lod: usize,
    src_type: c_int,
    src_host: *const c_void,
    src_device: CUdeviceptr,
    src_array: *mut c_void,
    reserved0: *mut c_void,
    src_pitch: usize,
    src_height: usize,
    dst_x: usize,
    dst_y: usize,
    dst_z: usize,
    dst_lod: usize,
    dst_type: c_int,
    dst_host: *mut c_void,
    dst_device: CUdeviceptr,
    dst_array: *mut c_void,
    reserved1: *mut c_void,
    dst_pitch: usize,
    dst_height: usize,
    width: usize,
    height: usize,
    depth: usize,
}

/// One side of a pitched copy: its kind, the address of its first byte, its pitch and rows per slice
/// (an array's own, whatever the descriptor says). An array's elements go to `keep`.
#[allow(clippy::too_many_arguments)]
fn pitched_side(
    ty: c_int,
    host: usize,
    device: u64,
    array: *mut c_void,
    [x, y, z]: [usize; 3],
    pitch: usize,
    rows: usize,
    extent: [usize; 3],
    keep: &mut Keep,
) -> Result<(Mem, u64, usize, usize), CUresult> {
    let kind = match ty {
        1 => Mem::Host,
        2 => Mem::Device,
        3 => {
            let (at, pitch, rows, elements) = crate::texture::array_region(array as Handle, [x, y, z], extent)?;
            keep.push(elements);
            return Ok((Mem::Array, at, pitch, rows));
        }
        4 => Mem::Unified,
        _ => return Err(CUDA_ERROR_INVALID_VALUE),
    };
    let base = if kind == Mem::Host { host as u64 } else { device };
    let off = (|| {
        z.checked_mul(pitch.checked_mul(rows)?)?
            .checked_add(y.checked_mul(pitch)?)?
            .checked_add(x)
    })()
    .ok_or(CUDA_ERROR_INVALID_VALUE)?;
    Ok((
        kind,
        base.checked_add(off as u64).ok_or(CUDA_ERROR_INVALID_VALUE)?,
        pitch,
        rows,
    ))
}

unsafe fn copy2d(p: *const Memcpy2D, stream: Option<Handle>) -> Result<(), CUresult> {
    init_check()?;
    let p = p.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
    let extent = [p.width, p.height, 1];
    let mut keep = Keep::new();
    let (sk, src, src_pitch, src_rows) = pitched_side(
        p.src_type,
        p.src_host as usize,
        p.src_device,
        p.src_array,
        [p.src_x, p.src_y, 0],
        p.src_pitch,
        p.height,
        extent,
        &mut keep,
    )?;
    let (dk, dst, dst_pitch, dst_rows) = pitched_side(
        p.dst_type,
        p.dst_host as usize,
        p.dst_device,
        p.dst_array,
        [p.dst_x, p.dst_y, 0],
        p.dst_pitch,
        p.height,
        extent,
        &mut keep,
    )?;
    let c = Copy3 {
        src,
        dst,
        width: p.width,
        height: p.height,
        depth: 1,
        src_pitch,
        src_rows,
        dst_pitch,
        dst_rows,
    };
    copy_keeping(c, sk, dk, keep, stream)
}

/// `peer`: the layout is `CUDA_MEMCPY3D_PEER`, whose two reserved pointers are the source and
/// destination contexts.
unsafe fn copy3d(p: *const Memcpy3D, stream: Option<Handle>, peer: bool) -> Result<(), CUresult> {
    init_check()?;
    let (c, sk, dk, keep) = plan3d(p, peer)?;
    copy_keeping(c, sk, dk, keep, stream)
}

/// A graph's memcpy node: the copy `CUDA_MEMCPY3D` describes, checked now and run when the graph
/// runs.
pub(crate) unsafe fn copy3d_job(p: *const Memcpy3D) -> Result<crate::graph::NodeJob, CUresult> {
    let (c, sk, dk, keep) = plan3d(p, false)?;
    check_copy(&c, sk, dk)?;
    // Checked again at each run: the graph may run after its memory was freed (arrays it keeps).
    Ok(std::sync::Arc::new(move || {
        let _keep = &keep;
        match unsafe { check_copy(&c, sk, dk) }? {
            Some((s, d)) => c.run_checked(s || d),
            None => Ok(()),
        }
    }))
}

/// The copy a `CUDA_MEMCPY3D` describes, with the kinds of its sides.
unsafe fn plan3d(p: *const Memcpy3D, peer: bool) -> Result<(Copy3, Mem, Mem, Keep), CUresult> {
    let p = p.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
    if peer {
        peer_check(p.reserved1, p.reserved0)?;
    } else if !p.reserved0.is_null() || !p.reserved1.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    if p.src_lod != 0 || p.dst_lod != 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let rows = |h: usize| if p.depth <= 1 { p.height.max(h) } else { h };
    let (src_rows, dst_rows) = (rows(p.src_height), rows(p.dst_height));
    // An array side has its own rows.
    if p.depth > 1 && ((p.src_type != 3 && src_rows < p.height) || (p.dst_type != 3 && dst_rows < p.height)) {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let extent = [p.width, p.height, p.depth];
    let mut keep = Keep::new();
    let (sk, src, src_pitch, src_rows) = pitched_side(
        p.src_type,
        p.src_host as usize,
        p.src_device,
        p.src_array,
        [p.src_x, p.src_y, p.src_z],
        p.src_pitch,
        src_rows,
        extent,
        &mut keep,
    )?;
    let (dk, dst, dst_pitch, dst_rows) = pitched_side(
        p.dst_type,
        p.dst_host as usize,
        p.dst_device,
        p.dst_array,
        [p.dst_x, p.dst_y, p.dst_z],
        p.dst_pitch,
        dst_rows,
        extent,
        &mut keep,
    )?;
    let c = Copy3 {
        src,
        dst,
        width: p.width,
        height: p.height,
        depth: p.depth,
        src_pitch,
        src_rows,
        dst_pitch,
        dst_rows,
    };
    Ok((c, sk, dk, keep))
}

/// The other side of a 1D array copy.
pub(crate) enum ArrayPeer {
    Host(u64),
    Device(u64),
    /// Another array, from a byte offset.
    Array(Handle, usize),
}

/// The 1D array copies (`cuMemcpyHtoA`, `cuMemcpyAtoD` and their kin): `n` bytes at byte `offset`
/// of the array's elements, to or from `peer`.
pub(crate) unsafe fn array_copy(
    array: Handle,
    offset: usize,
    peer: ArrayPeer,
    to_array: bool,
    n: usize,
    stream: Option<Handle>,
) -> Result<(), CUresult> {
    init_check()?;
    let (at, elements) = crate::texture::array_bytes(array, offset, n)?;
    let mut keep = vec![elements];
    let (other, kind) = match peer {
        ArrayPeer::Host(p) => (p, Mem::Host),
        ArrayPeer::Device(p) => (p, Mem::Device),
        ArrayPeer::Array(h, off) => {
            let (at, elements) = crate::texture::array_bytes(h, off, n)?;
            keep.push(elements);
            (at, Mem::Array)
        }
    };
    if to_array {
        copy_keeping(Copy3::linear(other, at, n), kind, Mem::Array, keep, stream)
    } else {
        copy_keeping(Copy3::linear(at, other, n), Mem::Array, kind, keep, stream)
    }
}

fn peer_check(dst_ctx: Handle, src_ctx: Handle) -> Result<(), CUresult> {
    CONTEXTS.get(dst_ctx as usize)?;
    CONTEXTS.get(src_ctx as usize)?;
    Ok(())
}

// ---- fills ----

/// Fills `height` rows of `width` elements of `size` bytes, `pitch` bytes apart.
unsafe fn fill(
    dst: u64,
    pitch: usize,
    value: u32,
    size: usize,
    width: usize,
    height: usize,
    stream: Option<Handle>,
) -> Result<(), CUresult> {
    init_check()?;
    if let Some(s) = stream {
        crate::stream::resolve(s)?;
    }
    let job = fill_job(dst, pitch, value, size, width, height)?;
    match stream {
        None => run_sync(std::ptr::null_mut(), || job()),
        Some(s) => run_async(s, Some(NodeType::Memset), move || job()),
    }
}

/// A fill, checked now, as a job (run at once, queued, or a graph's memset node).
pub(crate) unsafe fn fill_job(
    dst: u64,
    pitch: usize,
    value: u32,
    size: usize,
    width: usize,
    height: usize,
) -> Result<crate::graph::NodeJob, CUresult> {
    if width == 0 || height == 0 {
        return Ok(std::sync::Arc::new(|| Ok(())));
    }
    let row = width.checked_mul(size).ok_or(CUDA_ERROR_INVALID_VALUE)?;
    if !dst.is_multiple_of(size as u64) || (height > 1 && (pitch < row || !pitch.is_multiple_of(size))) {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let extent = (height - 1)
        .checked_mul(pitch)
        .and_then(|e| e.checked_add(row))
        .ok_or(CUDA_ERROR_INVALID_VALUE)?;
    check_range(dst, extent as u64)?;
    Ok(std::sync::Arc::new(move || {
        // Checked again at each run: a graph may run after its memory was freed.
        check_range(dst, extent as u64)?;
        if sanitizing(Tools::INITCHECK) {
            for y in 0..height {
                ptx_jit::runtime::sanitize::mark_written(None, (dst as usize + y * pitch) as u64, row as u64);
            }
        }
        for y in 0..height {
            let p = dst as usize + y * pitch;
            // SAFETY: the rows were just checked to lie in one allocation.
            unsafe {
                match size {
                    1 => std::ptr::write_bytes(p as *mut u8, value as u8, width),
                    2 => std::slice::from_raw_parts_mut(p as *mut u16, width).fill(value as u16),
                    _ => std::slice::from_raw_parts_mut(p as *mut u32, width).fill(value),
                }
            }
        }
        Ok(())
    }))
}

// ---- pointer attributes ----

/// Writes attribute `attr` of `ptr` into `data`; `None` info means memory the shim does not know.
unsafe fn attribute(
    data: *mut c_void,
    attr: c_int,
    ptr: u64,
    found: Option<&(u64, u64, Info)>,
    strict: bool,
) -> Result<(), CUresult> {
    if data.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let Some((start, size, i)) = found else {
        if strict {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // cuPointerGetAttributes: unknown memory reads as "not CUDA's" (zero / NULL, ordinal -2), except
        // that its host pointer is itself, as an H200 answers (tests/gpu/probes_c/pointer_attributes.c).
        match attr {
            9 => *(data as *mut c_int) = -2,
            4 => *(data as *mut u64) = ptr,
            1 | 3 | 7 | 11 | 12 | 17 | 18 | 19 | 20 => *(data as *mut u64) = 0,
            2 | 6 | 8 | 10 | 13 | 14 | 15 | 16 | 21 => *(data as *mut c_uint) = 0,
            22 => *(data as *mut c_int) = -1,
            _ => return Err(CUDA_ERROR_INVALID_VALUE),
        }
        return Ok(());
    };
    match attr {
        1 => *(data as *mut usize) = i.ctx,                // CONTEXT
        2 => *(data as *mut c_uint) = i.memtype as c_uint, // MEMORY_TYPE
        3 => *(data as *mut u64) = ptr,                    // DEVICE_POINTER
        4 if i.host => *(data as *mut u64) = ptr,          // HOST_POINTER
        // Device-only memory has no host pointer: an error for one attribute, NULL in a list (the
        // CUDA runtime's cudaPointerGetAttributes asks for it with five others).
        4 if strict => return Err(CUDA_ERROR_INVALID_VALUE),
        4 => *(data as *mut u64) = 0,
        6 => *(data as *mut c_uint) = 1, // SYNC_MEMOPS: synchronous calls always synchronise
        7 => *(data as *mut u64) = i.id, // BUFFER_ID
        8 => *(data as *mut c_uint) = i.managed as c_uint, // IS_MANAGED
        9 => *(data as *mut c_int) = CONTEXTS.get(i.ctx).map_or(0, |c| c.device), // DEVICE_ORDINAL
        // IS_LEGACY_CUDA_IPC_CAPABLE: `cuMemAlloc` memory exports (`crate::ipc`).
        10 => *(data as *mut c_uint) = i.exportable as c_uint,
        11 | 19 => *(data as *mut u64) = *start, // RANGE_START_ADDR, MAPPING_BASE_ADDR
        12 | 18 => *(data as *mut usize) = *size as usize, // RANGE_SIZE, MAPPING_SIZE
        13 => *(data as *mut c_uint) = 1,        // MAPPED
        14 => *(data as *mut u64) = 0,           // ALLOWED_HANDLE_TYPES: none exportable
        15 => *(data as *mut c_uint) = 0,        // IS_GPU_DIRECT_RDMA_CAPABLE
        16 => *(data as *mut c_uint) = 3,        // ACCESS_FLAGS: read-write
        17 => *(data as *mut usize) = 0,         // MEMPOOL_HANDLE: no pools
        20 => *(data as *mut u64) = i.id,        // MEMORY_BLOCK_ID
        21 => *(data as *mut c_uint) = 0,        // IS_HW_DECOMPRESS_CAPABLE
        22 => *(data as *mut c_int) = -1,        // LOCALITY_DOMAIN_ORDINAL
        _ => return Err(CUDA_ERROR_INVALID_VALUE),
    }
    let _ = i.flags;
    Ok(())
}

/// `CU_MEMHOSTALLOC_PORTABLE | DEVICEMAP | WRITECOMBINED`.
const HOST_ALLOC_FLAGS: c_uint = 0x7;
/// `CU_MEMHOSTREGISTER_PORTABLE | DEVICEMAP | IOMEMORY | READ_ONLY`.
const HOST_REGISTER_FLAGS: c_uint = 0xf;

unsafe fn host_alloc(pp: *mut *mut c_void, size: usize, flags: c_uint) -> Result<(), CUresult> {
    if pp.is_null() || flags & !HOST_ALLOC_FLAGS != 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let mut p = 0u64;
    alloc_into(&mut p, size, |layout, ctx, id| MemKind::Host { layout, ctx, id, flags })?;
    *pp = p as *mut c_void;
    Ok(())
}

unsafe fn host_register(p: *mut c_void, size: usize, flags: c_uint) -> Result<(), CUresult> {
    init_check()?;
    let ctx = current_ctx()?;
    if p.is_null() || size == 0 || flags & !HOST_REGISTER_FLAGS != 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let start = p as u64;
    let end = start.checked_add(size as u64).ok_or(CUDA_ERROR_INVALID_VALUE)?;
    let mut mem = MEMORY.lock();
    let overlaps = mem.range(..end).next_back().is_some_and(|(s, a)| s + a.size > start);
    if overlaps {
        return Err(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    }
    let id = IDS.fetch_add(1, Ordering::Relaxed);
    mem.insert(
        start,
        Alloc {
            size: size as u64,
            kind: MemKind::Registered { ctx, id, flags },
        },
    );
    Ok(())
}

api! {
    exports = memory_exports;

    // ---- allocation ----
    fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, size: usize) {
        crate::graph::forbid_alloc()?;
        alloc_into(dptr, size, |layout, ctx, id| MemKind::Device { layout, ctx, id })
    }
    fn cuMemAllocPitch_v2(dptr: *mut CUdeviceptr, pitch: *mut usize, width: usize, height: usize, elem: c_uint) {
        crate::graph::forbid_alloc()?;
        if pitch.is_null() || width == 0 || height == 0 || !matches!(elem, 4 | 8 | 16) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let p = width.checked_next_multiple_of(PITCH_ALIGN).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let size = p.checked_mul(height).ok_or(CUDA_ERROR_OUT_OF_MEMORY)?;
        alloc_into(dptr, size, |layout, ctx, id| MemKind::Device { layout, ctx, id })?;
        *pitch = p;
        Ok(())
    }
    fn cuMemFree_v2(dptr: CUdeviceptr) {
        crate::graph::forbid_alloc()?;
        if dptr == 0 {
            return init_check();
        }
        if let Some(r) = crate::graph::memory::free(dptr) {
            return r;
        }
        free(dptr, |k| matches!(k, MemKind::Device { .. } | MemKind::Managed { .. }))
    }
    fn cuMemAllocAsync[cuMemAllocAsync_ptsz](dptr: *mut CUdeviceptr, size: usize, s: Handle) {
        init_check()?;
        // From the current pool of the stream's device.
        let (ctx, _) = crate::stream::resolve(s)?;
        alloc_async(dptr, size, crate::pool::current(ctx.device)?, s)
    }
    fn cuMemFreeAsync[cuMemFreeAsync_ptsz](dptr: CUdeviceptr, s: Handle) {
        init_check()?;
        if crate::stream::capturing(s)? && crate::graph::memory::capture_free(dptr, s)? {
            return Ok(());
        }
        if crate::graph::memory::is_graph_alloc(dptr) {
            // A graph allocation ends its live span when the stream gets there. One whose allocation
            // node never ran is left as it is: warp-lang frees the allocations of a capture it then
            // refuses, which a GPU's driver accepts without failing the context.
            return run_async(s, None, move || {
                let _ = crate::graph::memory::free(dptr); // a second free fails no context
                Ok(())
            });
        }
        match MEMORY.lock().get(&dptr) {
            Some(Alloc { kind: MemKind::Device { .. }, .. }) => {}
            _ => return Err(CUDA_ERROR_INVALID_VALUE),
        }
        // Freed once the stream's earlier work is done (work queued before, on any stream, still
        // finds it: a memset checks its memory when it runs); a second free is refused now. Queued
        // as it is, so that it runs after a fault too (the stream's other work is skipped then).
        let (ctx, q) = crate::stream::resolve(s)?;
        ctx.streams.check()?;
        if !FREEING.lock().insert(dptr) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        ctx.streams.enqueue(
            &q,
            Box::new(move || {
                if FREEING.lock().contains(&dptr) {
                    release_now(dptr);
                }
            }),
        );
        Ok(())
    }
    fn cuMemAllocManaged(dptr: *mut CUdeviceptr, size: usize, flags: c_uint) {
        if flags != 1 && flags != 2 {
            return Err(CUDA_ERROR_INVALID_VALUE); // CU_MEM_ATTACH_GLOBAL or CU_MEM_ATTACH_HOST
        }
        crate::graph::forbid_alloc()?;
        alloc_into(dptr, size, |layout, ctx, id| MemKind::Managed { layout, ctx, id })
    }
    fn cuMemAllocHost_v2(pp: *mut *mut c_void, size: usize) {
        host_alloc(pp, size, 0)
    }
    fn cuMemHostAlloc(pp: *mut *mut c_void, size: usize, flags: c_uint) {
        host_alloc(pp, size, flags)
    }
    fn cuMemFreeHost(p: *mut c_void) {
        free(p as u64, |k| matches!(k, MemKind::Host { .. }))
    }
    fn cuMemHostGetDevicePointer_v2(pdptr: *mut CUdeviceptr, p: *mut c_void, flags: c_uint) {
        init_check()?;
        current_ctx()?;
        if flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        match lookup(p as u64) {
            Some((_, _, i)) if i.host => out(pdptr, p as u64), // one address space
            _ => Err(CUDA_ERROR_INVALID_VALUE),
        }
    }
    fn cuMemHostGetFlags(flags: *mut c_uint, p: *mut c_void) {
        init_check()?;
        match lookup(p as u64) {
            Some((_, _, i)) if i.memtype == 1 => out(flags, i.flags),
            _ => Err(CUDA_ERROR_INVALID_VALUE),
        }
    }
    fn cuMemHostRegister_v2(p: *mut c_void, size: usize, flags: c_uint) {
        host_register(p, size, flags)
    }
    fn cuMemHostRegister(p: *mut c_void, size: usize, flags: c_uint) {
        host_register(p, size, flags)
    }
    fn cuMemHostUnregister(p: *mut c_void) {
        init_check()?;
        match MEMORY.lock().get(&(p as u64)) {
            Some(Alloc { kind: MemKind::Registered { .. }, .. }) => {}
            _ => return Err(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED),
        }
        free(p as u64, |k| matches!(k, MemKind::Registered { .. }))
    }
    fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) {
        init_check()?;
        current_ctx()?;
        let t = device::total_mem();
        out(free, t.saturating_sub(used()) as usize)?;
        out(total, t as usize)
    }
    fn cuMemGetAddressRange_v2(base: *mut CUdeviceptr, size: *mut usize, dptr: CUdeviceptr) {
        init_check()?;
        let (s, n, _) = lookup(dptr).ok_or(CUDA_ERROR_NOT_FOUND)?;
        if !base.is_null() {
            *base = s;
        }
        if !size.is_null() {
            *size = n as usize;
        }
        Ok(())
    }
    fn cuPointerGetAttribute(data: *mut c_void, attr: c_int, ptr: CUdeviceptr) {
        init_check()?;
        let found = lookup(ptr);
        attribute(data, attr, ptr, found.as_ref(), true)
    }
    fn cuPointerGetAttributes(n: c_uint, attrs: *mut c_int, data: *mut *mut c_void, ptr: CUdeviceptr) {
        init_check()?;
        if n == 0 || attrs.is_null() || data.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let found = lookup(ptr);
        for i in 0..n as usize {
            attribute(*data.add(i), *attrs.add(i), ptr, found.as_ref(), false)?;
        }
        Ok(())
    }

    // ---- hints for managed memory: already where every processor can use it ----
    fn cuMemPrefetchAsync[cuMemPrefetchAsync_ptsz](dptr: CUdeviceptr, n: usize, dev: c_int, s: Handle) {
        init_check()?;
        crate::stream::resolve(s)?;
        if dev != -1 && !crate::device::exists(dev) {
            return Err(CUDA_ERROR_INVALID_DEVICE); // a device or CU_DEVICE_CPU
        }
        managed_range(dptr, n)
    }
    fn cuMemPrefetchAsync_v2[cuMemPrefetchAsync_v2_ptsz](dptr: CUdeviceptr, n: usize, location: MemLocation, flags: c_uint, s: Handle) {
        init_check()?;
        crate::stream::resolve(s)?;
        if flags != 0 || !(1..=4).contains(&location.kind) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        managed_range(dptr, n)
    }
    fn cuMemAdvise(dptr: CUdeviceptr, n: usize, advice: c_int, dev: c_int) {
        init_check()?;
        if !(1..=6).contains(&advice) || (dev != -1 && !crate::device::exists(dev)) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        managed_range(dptr, n)
    }
    fn cuMemAdvise_v2(dptr: CUdeviceptr, n: usize, advice: c_int, location: MemLocation) {
        init_check()?;
        if !(1..=6).contains(&advice) || !(1..=4).contains(&location.kind) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        managed_range(dptr, n)
    }
    fn cuPointerSetAttribute(value: *const c_void, attr: c_int, ptr: CUdeviceptr) {
        init_check()?;
        if value.is_null() || lookup(ptr).is_none() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        match attr {
            6 => Ok(()), // SYNC_MEMOPS: synchronous calls here always synchronise
            _ => Err(CUDA_ERROR_INVALID_VALUE),
        }
    }

    // ---- copies ----
    fn cuMemcpyHtoD_v2[cuMemcpyHtoD_v2_ptds](dst: CUdeviceptr, src: *const c_void, n: usize) {
        copy(Copy3::linear(src as u64, dst, n), Mem::Host, Mem::Device, None)
    }
    fn cuMemcpyDtoH_v2[cuMemcpyDtoH_v2_ptds](dst: *mut c_void, src: CUdeviceptr, n: usize) {
        copy(Copy3::linear(src, dst as u64, n), Mem::Device, Mem::Host, None)
    }
    fn cuMemcpyDtoD_v2[cuMemcpyDtoD_v2_ptds](dst: CUdeviceptr, src: CUdeviceptr, n: usize) {
        copy(Copy3::linear(src, dst, n), Mem::Device, Mem::Device, None)
    }
    fn cuMemcpy[cuMemcpy_ptds](dst: CUdeviceptr, src: CUdeviceptr, n: usize) {
        copy(Copy3::linear(src, dst, n), Mem::Unified, Mem::Unified, None)
    }
    fn cuMemcpyPeer[cuMemcpyPeer_ptds](dst: CUdeviceptr, dst_ctx: Handle, src: CUdeviceptr, src_ctx: Handle, n: usize) {
        init_check()?;
        peer_check(dst_ctx, src_ctx)?;
        copy(Copy3::linear(src, dst, n), Mem::Device, Mem::Device, None)
    }
    fn cuMemcpyHtoDAsync_v2[cuMemcpyHtoDAsync_v2_ptsz](dst: CUdeviceptr, src: *const c_void, n: usize, s: Handle) {
        copy(Copy3::linear(src as u64, dst, n), Mem::Host, Mem::Device, Some(s))
    }
    fn cuMemcpyDtoHAsync_v2[cuMemcpyDtoHAsync_v2_ptsz](dst: *mut c_void, src: CUdeviceptr, n: usize, s: Handle) {
        copy(Copy3::linear(src, dst as u64, n), Mem::Device, Mem::Host, Some(s))
    }
    fn cuMemcpyDtoDAsync_v2[cuMemcpyDtoDAsync_v2_ptsz](dst: CUdeviceptr, src: CUdeviceptr, n: usize, s: Handle) {
        copy(Copy3::linear(src, dst, n), Mem::Device, Mem::Device, Some(s))
    }
    fn cuMemcpyAsync[cuMemcpyAsync_ptsz](dst: CUdeviceptr, src: CUdeviceptr, n: usize, s: Handle) {
        copy(Copy3::linear(src, dst, n), Mem::Unified, Mem::Unified, Some(s))
    }
    fn cuMemcpyPeerAsync[cuMemcpyPeerAsync_ptsz](dst: CUdeviceptr, dst_ctx: Handle, src: CUdeviceptr, src_ctx: Handle, n: usize, s: Handle) {
        init_check()?;
        peer_check(dst_ctx, src_ctx)?;
        copy(Copy3::linear(src, dst, n), Mem::Device, Mem::Device, Some(s))
    }
    fn cuMemcpy2D_v2[cuMemcpy2D_v2_ptds](p: *const Memcpy2D) {
        copy2d(p, None)
    }
    fn cuMemcpy2DUnaligned_v2[cuMemcpy2DUnaligned_v2_ptds](p: *const Memcpy2D) {
        copy2d(p, None)
    }
    fn cuMemcpy2DAsync_v2[cuMemcpy2DAsync_v2_ptsz](p: *const Memcpy2D, s: Handle) {
        copy2d(p, Some(s))
    }
    fn cuMemcpy3D_v2[cuMemcpy3D_v2_ptds](p: *const Memcpy3D) {
        copy3d(p, None, false)
    }
    fn cuMemcpy3DAsync_v2[cuMemcpy3DAsync_v2_ptsz](p: *const Memcpy3D, s: Handle) {
        copy3d(p, Some(s), false)
    }
    fn cuMemcpy3DPeer[cuMemcpy3DPeer_ptds](p: *const Memcpy3D) {
        copy3d(p, None, true)
    }
    fn cuMemcpy3DPeerAsync[cuMemcpy3DPeerAsync_ptsz](p: *const Memcpy3D, s: Handle) {
        copy3d(p, Some(s), true)
    }

    // ---- fills ----
    fn cuMemsetD8_v2[cuMemsetD8_v2_ptds](dst: CUdeviceptr, v: u8, n: usize) {
        fill(dst, n, v as u32, 1, n, 1, None)
    }
    fn cuMemsetD16_v2[cuMemsetD16_v2_ptds](dst: CUdeviceptr, v: u16, n: usize) {
        fill(dst, n * 2, v as u32, 2, n, 1, None)
    }
    fn cuMemsetD32_v2[cuMemsetD32_v2_ptds](dst: CUdeviceptr, v: c_uint, n: usize) {
        fill(dst, n * 4, v, 4, n, 1, None)
    }
    fn cuMemsetD2D8_v2[cuMemsetD2D8_v2_ptds](dst: CUdeviceptr, pitch: usize, v: u8, w: usize, h: usize) {
        fill(dst, pitch, v as u32, 1, w, h, None)
    }
    fn cuMemsetD2D16_v2[cuMemsetD2D16_v2_ptds](dst: CUdeviceptr, pitch: usize, v: u16, w: usize, h: usize) {
        fill(dst, pitch, v as u32, 2, w, h, None)
    }
    fn cuMemsetD2D32_v2[cuMemsetD2D32_v2_ptds](dst: CUdeviceptr, pitch: usize, v: c_uint, w: usize, h: usize) {
        fill(dst, pitch, v, 4, w, h, None)
    }
    fn cuMemsetD8Async[cuMemsetD8Async_ptsz](dst: CUdeviceptr, v: u8, n: usize, s: Handle) {
        fill(dst, n, v as u32, 1, n, 1, Some(s))
    }
    fn cuMemsetD16Async[cuMemsetD16Async_ptsz](dst: CUdeviceptr, v: u16, n: usize, s: Handle) {
        fill(dst, n * 2, v as u32, 2, n, 1, Some(s))
    }
    fn cuMemsetD32Async[cuMemsetD32Async_ptsz](dst: CUdeviceptr, v: c_uint, n: usize, s: Handle) {
        fill(dst, n * 4, v, 4, n, 1, Some(s))
    }
    fn cuMemsetD2D8Async[cuMemsetD2D8Async_ptsz](dst: CUdeviceptr, pitch: usize, v: u8, w: usize, h: usize, s: Handle) {
        fill(dst, pitch, v as u32, 1, w, h, Some(s))
    }
    fn cuMemsetD2D16Async[cuMemsetD2D16Async_ptsz](dst: CUdeviceptr, pitch: usize, v: u16, w: usize, h: usize, s: Handle) {
        fill(dst, pitch, v as u32, 2, w, h, Some(s))
    }
    fn cuMemsetD2D32Async[cuMemsetD2D32Async_ptsz](dst: CUdeviceptr, pitch: usize, v: c_uint, w: usize, h: usize, s: Handle) {
        fill(dst, pitch, v, 4, w, h, Some(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_allocations_are_huge_page_aligned_zeroed_and_padded() {
        for size in [HUGE_PAGE - 4096, HUGE_PAGE, 3 * HUGE_PAGE + 5] {
            let (p, layout) = unsafe { allocate(size) }.unwrap();
            assert_eq!(p as usize % HUGE_PAGE, 0, "{size}");
            assert_eq!(layout.size(), (size + size.min(HUGE_PAGE)).next_multiple_of(4096));
            let all = unsafe { std::slice::from_raw_parts_mut(p, layout.size()) };
            assert!(all.iter().all(|&b| b == 0));
            all.fill(0xa5); // the whole padded length is mapped and writable
            unsafe { release(p, layout) };
        }
    }

    #[test]
    fn small_allocations_take_their_size_class() {
        let before = used();
        let (p, layout) = unsafe { allocate(1000) }.unwrap();
        assert_eq!(
            (p as usize % crate::arena::MIN, layout.size(), layout.align()),
            (0, 1024, crate::arena::MIN)
        );
        assert!(unsafe { std::slice::from_raw_parts(p, 1024) }.iter().all(|&b| b == 0));
        assert!(used() >= before + 1024);
        unsafe { release(p, layout) };
    }

    #[test]
    fn allocations_beyond_the_device_fail_without_reserving() {
        let before = used();
        assert_eq!(unsafe { allocate(1 << 40) }.err(), Some(CUDA_ERROR_OUT_OF_MEMORY));
        assert_eq!(unsafe { allocate(usize::MAX) }.err(), Some(CUDA_ERROR_OUT_OF_MEMORY));
        assert_eq!(used(), before);
    }
}
