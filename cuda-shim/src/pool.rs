//! Stream-ordered memory pools (`cuMemPool*`, `cuMemAllocFromPoolAsync`): each device has a default
//! pool and a current one (`cuDeviceSetMemPool`), and `cuMemAllocAsync` allocates from the current
//! one.
//!
//! A pool here is accounting over ordinary device allocations: what it has handed out (used), what it
//! holds (reserved), their high-water marks, and its attributes. Freed memory goes back to the host
//! at once, so a pool never holds more than is in use (reserved = used; a release threshold is kept
//! and reported but has nothing to keep), and trimming has nothing to release. Pools shared between
//! processes (export and import of handles and pointers) are not supported.

use crate::errors::*;
use crate::state::*;
use crate::{device, init_check, out, CUdeviceptr, Handle};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

pub struct Pool {
    device: i32,
    /// Most bytes in use at once (`CUmemPoolProps::maxSize`; 0: no limit but the device's memory).
    max_size: u64,
    st: Mutex<Stats>,
}

#[derive(Default)]
struct Stats {
    /// `CU_MEMPOOL_ATTR_REUSE_*` (attributes 1 to 3), on by default as CUDA has them.
    reuse: [c_int; 3],
    release_threshold: u64,
    used: u64,
    used_high: u64,
    reserved_high: u64,
}

pub static POOLS: once_cell::sync::Lazy<Table<Pool>> = once_cell::sync::Lazy::new(|| Table::new(Tag::MemPool));

/// Each device's default pool and current pool (0: not made yet, the default).
static DEVICE_POOLS: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

/// Allocations made from pools: the pool and the size, by address.
type Owners = BTreeMap<u64, (Arc<Pool>, u64)>;

/// Which pool each allocation came from, and its size.
static FROM: Mutex<Owners> = Mutex::new(BTreeMap::new());

fn new_pool(device: i32, max_size: u64) -> usize {
    POOLS.insert(Pool {
        device,
        max_size,
        st: Mutex::new(Stats {
            reuse: [1, 1, 1],
            ..Default::default()
        }),
    })
}

/// Device `dev`'s (default, current) pools, making the default on first use.
fn device_pools(dev: i32) -> Result<(usize, usize), CUresult> {
    if !device::exists(dev) {
        return Err(CUDA_ERROR_INVALID_DEVICE);
    }
    let mut all = DEVICE_POOLS.lock();
    if all.len() <= dev as usize {
        all.resize(dev as usize + 1, (0, 0));
    }
    let entry = &mut all[dev as usize];
    if entry.0 == 0 {
        entry.0 = new_pool(dev, 0);
    }
    if entry.1 == 0 || POOLS.get(entry.1).is_err() {
        entry.1 = entry.0;
    }
    Ok(*entry)
}

/// Device `dev`'s current pool (`cuMemAllocAsync` takes from the stream's device's).
pub fn current(dev: i32) -> Result<usize, CUresult> {
    Ok(device_pools(dev)?.1)
}

/// Whether `pool` may hand out `size` more bytes (its `maxSize`).
pub fn admit(pool: usize, size: u64) -> Result<(), CUresult> {
    let p = POOLS.get(pool)?;
    let used = p.st.lock().used;
    if p.max_size != 0 && used.saturating_add(size) > p.max_size {
        return Err(CUDA_ERROR_OUT_OF_MEMORY);
    }
    Ok(())
}

/// An allocation of `size` bytes at `ptr` made from `pool`.
pub fn allocated(pool: usize, ptr: CUdeviceptr, size: u64) -> Result<(), CUresult> {
    let p = POOLS.get(pool)?;
    {
        let mut s = p.st.lock();
        s.used += size;
        s.used_high = s.used_high.max(s.used);
        s.reserved_high = s.reserved_high.max(s.used);
    }
    FROM.lock().insert(ptr, (p, size));
    Ok(())
}

/// Whether the allocation at `ptr` came from a pool.
pub fn holds(ptr: CUdeviceptr) -> bool {
    FROM.lock().contains_key(&ptr)
}

/// The allocation at `ptr` is freed (by `cuMemFree` or `cuMemFreeAsync`): its pool, if any, has
/// that much less in use.
pub fn released(ptr: CUdeviceptr) {
    if let Some((p, size)) = FROM.lock().remove(&ptr) {
        p.st.lock().used -= size;
    }
}

/// `CUmemPoolProps`, as far as this implementation reads it.
#[repr(C)]
pub struct PoolProps {
    alloc_type: c_int,
    handle_types: c_int,
    location_type: c_int,
    location_id: c_int,
    win32: *mut c_void,
    max_size: usize,
    usage: u16,
    reserved: [u8; 54],
}

impl PoolProps {
    /// Pinned device memory (`CU_MEM_ALLOCATION_TYPE_PINNED` on a device that exists), the one kind
    /// pools and graph allocations hold.
    pub unsafe fn is_device_pinned(&self) -> bool {
        self.alloc_type == 1 && location_ok(self.location_type, self.location_id)
    }
    /// Whether it asks for handles another process could import.
    pub fn shared(&self) -> bool {
        self.handle_types != 0
    }
    /// Pinned memory on device `dev` (what a query gives back).
    pub fn set_device_pinned(&mut self, dev: c_int) {
        self.alloc_type = 1;
        self.location_type = 1;
        self.location_id = dev;
    }
}

/// `CUmemAccessDesc`.
#[repr(C)]
pub struct AccessDesc {
    location_type: c_int,
    location_id: c_int,
    flags: c_int,
}

/// The pool's devices can all reach it: the presented devices share the host's memory.
unsafe fn location_ok(t: c_int, id: c_int) -> bool {
    t == 1 && device::exists(id) // CU_MEM_LOCATION_TYPE_DEVICE
}

api! {
    exports = pool_exports;

    fn cuDeviceGetDefaultMemPool(pool: *mut Handle, dev: c_int) {
        init_check()?;
        out(pool, device_pools(dev)?.0 as Handle)
    }
    fn cuDeviceGetMemPool(pool: *mut Handle, dev: c_int) {
        init_check()?;
        out(pool, device_pools(dev)?.1 as Handle)
    }
    fn cuDeviceSetMemPool(dev: c_int, pool: Handle) {
        init_check()?;
        device_pools(dev)?;
        let p = POOLS.get(pool as usize)?;
        if p.device != dev {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        DEVICE_POOLS.lock()[dev as usize].1 = pool as usize;
        Ok(())
    }
    fn cuMemPoolCreate(pool: *mut Handle, props: *const PoolProps) {
        init_check()?;
        let p = props.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        if pool.is_null() || p.alloc_type != 1 || !location_ok(p.location_type, p.location_id) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        if p.handle_types != 0 {
            return Err(CUDA_ERROR_NOT_SUPPORTED); // pools shared between processes
        }
        *pool = new_pool(p.location_id, p.max_size as u64) as Handle;
        Ok(())
    }
    fn cuMemPoolDestroy(pool: Handle) {
        init_check()?;
        let p = POOLS.get(pool as usize)?;
        if device_pools(p.device)?.0 == pool as usize {
            return Err(CUDA_ERROR_INVALID_VALUE); // a device's default pool lives as long as the device
        }
        // Its allocations stay valid until freed (then nothing counts them).
        FROM.lock().retain(|_, (q, _)| !Arc::ptr_eq(q, &p));
        POOLS.remove(pool as usize)?;
        Ok(())
    }
    fn cuMemAllocFromPoolAsync[cuMemAllocFromPoolAsync_ptsz](dptr: *mut CUdeviceptr, size: usize, pool: Handle, s: Handle) {
        init_check()?;
        POOLS.get(pool as usize)?;
        crate::memory::alloc_async(dptr, size, pool as usize, s)
    }
    fn cuMemPoolTrimTo(pool: Handle, _min_bytes_to_keep: usize) {
        // A pool holds no memory beyond what is in use: there is nothing to release.
        init_check()?;
        POOLS.get(pool as usize)?;
        Ok(())
    }
    fn cuMemPoolSetAttribute(pool: Handle, attr: c_int, value: *mut c_void) {
        init_check()?;
        let p = POOLS.get(pool as usize)?;
        if value.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let mut s = p.st.lock();
        match attr {
            1..=3 => s.reuse[attr as usize - 1] = *(value as *const c_int),
            4 => s.release_threshold = *(value as *const u64),
            // The high-water marks can only be reset (to the current amount).
            6 if *(value as *const u64) == 0 => s.reserved_high = s.used,
            8 if *(value as *const u64) == 0 => s.used_high = s.used,
            _ => return Err(CUDA_ERROR_INVALID_VALUE),
        }
        Ok(())
    }
    fn cuMemPoolGetAttribute(pool: Handle, attr: c_int, value: *mut c_void) {
        init_check()?;
        let p = POOLS.get(pool as usize)?;
        if value.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let s = p.st.lock();
        match attr {
            1..=3 => *(value as *mut c_int) = s.reuse[attr as usize - 1],
            4 => *(value as *mut u64) = s.release_threshold,
            5 | 7 => *(value as *mut u64) = s.used, // reserved = used: freed memory is not kept
            6 => *(value as *mut u64) = s.reserved_high,
            8 => *(value as *mut u64) = s.used_high,
            9 => *(value as *mut c_int) = 1,            // ALLOCATION_TYPE: pinned
            10 => *(value as *mut c_int) = 0,           // EXPORT_HANDLE_TYPES: none
            11 => *(value as *mut c_int) = p.device,    // LOCATION_ID
            12 => *(value as *mut c_int) = 1,           // LOCATION_TYPE: a device
            13 => *(value as *mut u64) = p.max_size,    // MAX_POOL_SIZE
            _ => return Err(CUDA_ERROR_INVALID_VALUE),
        }
        Ok(())
    }
    fn cuMemPoolSetAccess(pool: Handle, map: *const AccessDesc, count: usize) {
        init_check()?;
        POOLS.get(pool as usize)?;
        if count > 0 && map.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        for i in 0..count {
            let d = &*map.add(i);
            if !location_ok(d.location_type, d.location_id) || !(0..=3).contains(&d.flags) || d.flags == 2 {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
        }
        // Every presented device already reaches every pool: the host's memory is shared.
        Ok(())
    }
    fn cuMemPoolGetAccess(flags: *mut c_int, pool: Handle, location: *const [c_int; 2]) {
        init_check()?;
        POOLS.get(pool as usize)?;
        let l = location.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        if !location_ok(l[0], l[1]) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        out(flags, 3) // CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    }
}
