//! Contexts: created and primary, the per-thread context stack, limits and configuration.

use crate::errors::*;
use crate::state::*;
use crate::{device_check, init_check, out, CUdevice, Handle};
use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::Ordering;

/// `CU_LIMIT_MALLOC_HEAP_SIZE`: the device heap of kernels' `malloc`.
const MALLOC_HEAP_SIZE: c_int = 2;

/// `CUlimit` values, indexed by limit; `None` for limits this device does not have.
const LIMIT_DEFAULTS: [Option<u64>; 11] = [
    Some(1024),    // STACK_SIZE
    Some(1 << 20), // PRINTF_FIFO_SIZE
    Some(8 << 20), // MALLOC_HEAP_SIZE
    Some(2),       // DEV_RUNTIME_SYNC_DEPTH
    Some(2048),    // DEV_RUNTIME_PENDING_LAUNCH_COUNT
    Some(64),      // MAX_L2_FETCH_GRANULARITY
    Some(0),       // PERSISTING_L2_CACHE_SIZE
    None,          // SHMEM_SIZE: CIG contexts only
    Some(0),       // CIG_ENABLED (read-only)
    None,          // CIG_SHMEM_FALLBACK_ENABLED: CIG contexts only
    None,          // PER_BLOCK_MEMORY_SIZE
];

pub struct Config {
    pub limits: [Option<u64>; 11],
    pub cache: c_int,
    pub shared: c_int,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            limits: LIMIT_DEFAULTS,
            cache: 0,
            shared: 0,
        }
    }
}

/// `CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX | CU_CTX_COREDUMP_ENABLE |
/// CU_CTX_USER_COREDUMP_ENABLE | CU_CTX_SYNC_MEMOPS`: the flags a context accepts.
const CTX_FLAGS: c_uint = 0x07 | 0x08 | 0x10 | 0x20 | 0x40 | 0x80;

/// `CUctxCreateParams` (cuda.h, CUDA 12.5+).
#[repr(C)]
pub struct CtxCreateParams {
    exec_affinity: *mut c_void,
    num_exec_affinity: c_int,
    cig: *mut c_void,
}

unsafe fn ctx_create(pctx: *mut Handle, flags: c_uint, dev: CUdevice) -> Result<(), CUresult> {
    device_check(dev)?;
    if pctx.is_null() || flags & !CTX_FLAGS != 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let h = CONTEXTS.insert(Context::new(dev, false, flags)?);
    with_ctx_stack(|s| s.push(h))?;
    *pctx = h as Handle;
    Ok(())
}

/// How long a context's destruction waits for its running work before cancelling it: a correct
/// program's last kernels (and their `printf` output) finish, a runaway one does not hold the
/// caller forever.
const DESTROY_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Waits for the context's work (cancelling what still runs after [`DESTROY_GRACE`]), then frees
/// everything it owns. The context itself goes too unless `keep` (a primary context reset keeps its
/// handle).
pub fn destroy_ctx(h: usize, keep: bool) -> Result<(), CUresult> {
    let c = CONTEXTS.get(h)?;
    c.cancel.after(DESTROY_GRACE);
    c.streams.synchronize();
    c.cancel.reset();
    if !keep {
        CONTEXTS.remove(h)?;
        // Another thread's stacks keep the handle, which later calls find destroyed.
        let _ = with_ctx_stack(|s| s.retain(|&c| c != h));
    }
    let mut dead = vec![];
    MODULES.retain(|k, m| {
        if m.ctx == h {
            dead.push(*k);
            false
        } else {
            true
        }
    });
    FUNCTIONS.retain(|_, f| !dead.contains(&f.module));
    crate::memory::release_ctx(h, &dead);
    STREAMS.retain(|_, s| s.ctx != h);
    EVENTS.retain(|_, e| e.ctx != h);
    c.streams.sticky.store(CUDA_SUCCESS, Ordering::Release);
    *c.config.lock() = Config::default();
    if CONTEXTS.len() == keep as usize {
        ptx_jit::reset_heap();
    }
    Ok(())
}

fn ctx_or_current(ctx: Handle) -> Result<std::sync::Arc<Context>, CUresult> {
    let h = if ctx.is_null() { current_ctx()? } else { ctx as usize };
    CONTEXTS.get(h).map_err(|e| {
        if ctx.is_null() {
            CUDA_ERROR_CONTEXT_IS_DESTROYED
        } else {
            e
        }
    })
}

fn current() -> Result<std::sync::Arc<Context>, CUresult> {
    init_check()?;
    ctx_or_current(std::ptr::null_mut())
}

api! {
    exports = context_exports;

    fn cuCtxCreate(pctx: *mut Handle, flags: c_uint, dev: CUdevice) {
        ctx_create(pctx, flags, dev)
    }
    fn cuCtxCreate_v2(pctx: *mut Handle, flags: c_uint, dev: CUdevice) {
        ctx_create(pctx, flags, dev)
    }
    fn cuCtxCreate_v3(pctx: *mut Handle, params: *mut c_void, n: c_int, flags: c_uint, dev: CUdevice) {
        if n > 0 || (!params.is_null() && n != 0) {
            return Err(CUDA_ERROR_NOT_SUPPORTED); // execution affinity needs real SM partitions
        }
        ctx_create(pctx, flags, dev)
    }
    fn cuCtxCreate_v4(pctx: *mut Handle, params: *mut CtxCreateParams, flags: c_uint, dev: CUdevice) {
        if let Some(p) = params.as_ref() {
            if p.num_exec_affinity > 0 || !p.cig.is_null() {
                return Err(CUDA_ERROR_NOT_SUPPORTED);
            }
        }
        ctx_create(pctx, flags, dev)
    }
    fn cuCtxDestroy_v2(ctx: Handle) {
        init_check()?;
        let h = ctx as usize;
        if CONTEXTS.get(h)?.primary {
            return Err(CUDA_ERROR_INVALID_CONTEXT);
        }
        destroy_ctx(h, false)
    }
    fn cuCtxDestroy(ctx: Handle) {
        crate::status(cuCtxDestroy_v2(ctx))
    }
    fn cuCtxSetCurrent(ctx: Handle) {
        init_check()?;
        let h = ctx as usize;
        if h != 0 {
            CONTEXTS.get(h)?;
        }
        with_ctx_stack(|s| {
            s.pop();
            if h != 0 {
                s.push(h);
            }
        })?;
        Ok(())
    }
    fn cuCtxGetCurrent(pctx: *mut Handle) {
        init_check()?;
        let top = ctx_top().unwrap_or(0);
        out(pctx, top as Handle)
    }
    fn cuCtxPushCurrent_v2(ctx: Handle) {
        init_check()?;
        CONTEXTS.get(ctx as usize)?;
        with_ctx_stack(|s| s.push(ctx as usize))?;
        Ok(())
    }
    fn cuCtxPushCurrent(ctx: Handle) {
        crate::status(cuCtxPushCurrent_v2(ctx))
    }
    fn cuCtxPopCurrent_v2(pctx: *mut Handle) {
        init_check()?;
        let h = with_ctx_stack(|s| s.pop())?.ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        if !pctx.is_null() {
            *pctx = h as Handle;
        }
        Ok(())
    }
    fn cuCtxPopCurrent(pctx: *mut Handle) {
        crate::status(cuCtxPopCurrent_v2(pctx))
    }
    fn cuCtxGetDevice(dev: *mut CUdevice) {
        out(dev, current()?.device)
    }
    fn cuCtxGetDevice_v2(dev: *mut CUdevice, ctx: Handle) {
        init_check()?;
        out(dev, ctx_or_current(ctx)?.device)
    }
    fn cuCtxSynchronize() {
        let c = current()?;
        crate::graph::forbid_sync()?;
        c.streams.synchronize();
        c.streams.check()
    }
    fn cuCtxSynchronize_v2(ctx: Handle) {
        init_check()?;
        let c = ctx_or_current(ctx)?;
        crate::graph::forbid_sync()?;
        c.streams.synchronize();
        c.streams.check()
    }
    fn cuCtxGetApiVersion(ctx: Handle, version: *mut c_uint) {
        init_check()?;
        ctx_or_current(ctx)?;
        out(version, 3020) // contexts of the `_v2` API generation, as every current driver reports
    }
    fn cuCtxGetFlags(flags: *mut c_uint) {
        out(flags, current()?.flags.load(Ordering::Relaxed))
    }
    fn cuCtxSetFlags(flags: c_uint) {
        let c = current()?;
        if flags & !CTX_FLAGS != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        c.flags.store(flags, Ordering::Relaxed);
        Ok(())
    }
    fn cuCtxGetId(ctx: Handle, id: *mut u64) {
        init_check()?;
        out(id, ctx_or_current(ctx)?.id)
    }
    fn cuCtxGetLimit(v: *mut usize, limit: c_int) {
        let c = current()?;
        let l = usize::try_from(limit).ok().and_then(|i| c.config.lock().limits.get(i).copied().flatten());
        out(v, l.ok_or(CUDA_ERROR_UNSUPPORTED_LIMIT)? as usize)
    }
    fn cuCtxSetLimit(limit: c_int, v: usize) {
        let c = current()?;
        let mut cfg = c.config.lock();
        let slot = usize::try_from(limit).ok().and_then(|i| cfg.limits.get_mut(i)).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        match (limit, slot.as_mut()) {
            (8, _) | (_, None) => Err(CUDA_ERROR_UNSUPPORTED_LIMIT), // read-only or absent
            (_, Some(s)) => {
                // One device heap for the process: the last size set before a kernel uses it, as
                // the heap rounds it.
                *s = if limit == MALLOC_HEAP_SIZE {
                    ptx_jit::set_heap_limit(v as u64).ok_or(CUDA_ERROR_INVALID_VALUE)?
                } else {
                    v as u64
                };
                Ok(())
            }
        }
    }
    fn cuCtxGetCacheConfig(cfg: *mut c_int) {
        out(cfg, current()?.config.lock().cache)
    }
    fn cuCtxSetCacheConfig(cfg: c_int) {
        let c = current()?;
        if !(0..=4).contains(&cfg) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        c.config.lock().cache = cfg; // a preference; the CPU has no L1/shared split
        Ok(())
    }
    fn cuCtxGetSharedMemConfig(cfg: *mut c_int) {
        out(cfg, current()?.config.lock().shared)
    }
    fn cuCtxSetSharedMemConfig(cfg: c_int) {
        let c = current()?;
        if !(0..=2).contains(&cfg) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        c.config.lock().shared = cfg;
        Ok(())
    }
    fn cuCtxGetStreamPriorityRange(least: *mut c_int, greatest: *mut c_int) {
        current()?;
        if !least.is_null() {
            *least = crate::stream::PRIORITY_RANGE.0;
        }
        if !greatest.is_null() {
            *greatest = crate::stream::PRIORITY_RANGE.1;
        }
        Ok(())
    }
    fn cuCtxResetPersistingL2Cache() {
        current()?;
        Ok(()) // the persisting L2 limit is 0: no line is ever persisting
    }
    fn cuCtxEnablePeerAccess(peer: Handle, flags: c_uint) {
        let c = current()?;
        let p = CONTEXTS.get(peer as usize)?;
        if flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        if p.device == c.device {
            // A device is not its own peer; an H200 answers this (tests/gpu/probes_c/peer_probe.c).
            return Err(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
        }
        let mut peers = c.peers.lock();
        if peers.contains(&(peer as usize)) {
            return Err(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
        }
        peers.push(peer as usize);
        Ok(())
    }
    fn cuCtxDisablePeerAccess(peer: Handle) {
        let c = current()?;
        CONTEXTS.get(peer as usize)?;
        let mut peers = c.peers.lock();
        let at = peers
            .iter()
            .position(|&p| p == peer as usize)
            .ok_or(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED)?;
        peers.swap_remove(at);
        Ok(())
    }

    // ---- primary contexts ----
    fn cuDevicePrimaryCtxRetain(pctx: *mut Handle, dev: CUdevice) {
        device_check(dev)?;
        if pctx.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let mut all = PRIMARY.lock();
        let p = &mut all[dev as usize];
        let h = match *p {
            Some((h, n)) => {
                *p = Some((h, n + 1));
                h
            }
            None => {
                let flags = PRIMARY_FLAGS[dev as usize].load(Ordering::Relaxed);
                let h = CONTEXTS.insert(Context::new(dev, true, flags)?);
                *p = Some((h, 1));
                h
            }
        };
        *pctx = h as Handle;
        Ok(())
    }
    fn cuDevicePrimaryCtxRelease_v2(dev: CUdevice) {
        device_check(dev)?;
        let mut all = PRIMARY.lock();
        let p = &mut all[dev as usize];
        match *p {
            Some((h, 1)) => {
                *p = None;
                drop(all);
                destroy_ctx(h, false)
            }
            Some((h, n)) => {
                *p = Some((h, n - 1));
                Ok(())
            }
            None => Err(CUDA_ERROR_INVALID_CONTEXT),
        }
    }
    fn cuDevicePrimaryCtxRelease(dev: CUdevice) {
        crate::status(cuDevicePrimaryCtxRelease_v2(dev))
    }
    fn cuDevicePrimaryCtxGetState(dev: CUdevice, flags: *mut c_uint, active: *mut c_int) {
        device_check(dev)?;
        let p = PRIMARY.lock()[dev as usize];
        let f = match p {
            Some((h, _)) => CONTEXTS.get(h)?.flags.load(Ordering::Relaxed),
            None => PRIMARY_FLAGS[dev as usize].load(Ordering::Relaxed),
        };
        out(flags, f)?;
        out(active, p.is_some() as c_int)
    }
    fn cuDevicePrimaryCtxSetFlags_v2(dev: CUdevice, flags: c_uint) {
        device_check(dev)?;
        if flags & !CTX_FLAGS != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        PRIMARY_FLAGS[dev as usize].store(flags, Ordering::Relaxed);
        if let Some((h, _)) = PRIMARY.lock()[dev as usize] {
            CONTEXTS.get(h)?.flags.store(flags, Ordering::Relaxed);
        }
        Ok(())
    }
    fn cuDevicePrimaryCtxSetFlags(dev: CUdevice, flags: c_uint) {
        crate::status(cuDevicePrimaryCtxSetFlags_v2(dev, flags))
    }
    fn cuDevicePrimaryCtxReset_v2(dev: CUdevice) {
        device_check(dev)?;
        let p = PRIMARY.lock()[dev as usize];
        PRIMARY_FLAGS[dev as usize].store(0, Ordering::Relaxed);
        match p {
            // Everything the context owns goes; the retained handle stays usable.
            Some((h, _)) => destroy_ctx(h, true),
            None => Ok(()),
        }
    }
    fn cuDevicePrimaryCtxReset(dev: CUdevice) {
        crate::status(cuDevicePrimaryCtxReset_v2(dev))
    }
}

/// Flags for each device's primary context (`cuDevicePrimaryCtxSetFlags`), kept while it is inactive.
static PRIMARY_FLAGS: [std::sync::atomic::AtomicU32; ptx_jit::device::MAX_DEVICES as usize] =
    [const { std::sync::atomic::AtomicU32::new(0) }; ptx_jit::device::MAX_DEVICES as usize];
