//! The virtual memory management API: address ranges reserved apart from the memory behind them
//! (`cuMemAddressReserve`), physical allocations (`cuMemCreate`) mapped into them (`cuMemMap`) and
//! made accessible (`cuMemSetAccess`), as frameworks grow a buffer in place (PyTorch's expandable
//! segments).
//!
//! On the host: a reservation is address space with no access (`PROT_NONE`), a physical allocation a
//! memory file (`memfd`) of its size, a mapping that file mapped shared at a fixed address in the
//! reservation, and access `mprotect`. So one physical allocation mapped at two addresses shows the
//! same bytes at both, and a kernel that touches a reserved but unmapped (or not yet accessible)
//! address faults, which ends its launch with `CUDA_ERROR_ILLEGAL_ADDRESS`. A mapped and accessible
//! range is device memory to the rest of the driver (copies, fills, pointer attributes, checked mode).
//! Physical memory counts against the device's total. Exporting handles to other processes is not
//! supported (asking for a POSIX file descriptor handle type is accepted, as frameworks do).

use crate::errors::*;
use crate::{device, init_check, out, CUdeviceptr};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

/// What physical memory is allocated and mapped in: a GPU's large page.
pub const GRANULARITY: usize = 2 << 20;

/// A physical allocation: a memory file, given back (and uncounted) when its handle is released and
/// its last mapping is gone.
struct Physical {
    fd: OwnedFd,
    size: usize,
    device: c_int,
}

impl Drop for Physical {
    fn drop(&mut self) {
        crate::memory::unreserve(self.size as u64);
    }
}

/// A reserved address range and what is mapped in it, by start address.
struct Reservation {
    size: usize,
    maps: BTreeMap<usize, Mapping>,
}

struct Mapping {
    size: usize,
    /// Held so the memory outlives a release of its handle while mapped.
    _physical: Arc<Physical>,
    /// What `cuMemSetAccess` granted: 0 nothing, 1 read, 3 read and write.
    access: c_int,
}

/// Physical allocations by handle (`CUmemGenericAllocationHandle`, a number).
static PHYSICAL: Mutex<BTreeMap<u64, Arc<Physical>>> = Mutex::new(BTreeMap::new());
static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
/// Reservations by start address.
static RESERVED: Mutex<BTreeMap<usize, Reservation>> = Mutex::new(BTreeMap::new());

/// `CUmemAllocationProp`, as far as this implementation reads it.
#[repr(C)]
pub struct AllocationProp {
    kind: c_int,
    handle_types: c_int,
    location_type: c_int,
    location_id: c_int,
    win32: *mut c_void,
    compression: u8,
    gpu_direct_rdma: u8,
    usage: u16,
    reserved: [u8; 4],
}

/// `CUmemAccessDesc`.
#[repr(C)]
pub struct AccessDesc {
    location_type: c_int,
    location_id: c_int,
    flags: c_int,
}

/// A pinned allocation on a presented device. A POSIX file descriptor may be asked for as a handle
/// type (frameworks ask for it whether or not they export); Windows and fabric handles cannot be.
unsafe fn check_prop(p: *const AllocationProp) -> Result<&'static AllocationProp, CUresult> {
    let p = p.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
    if p.kind != 1 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    check_location(p.location_type, p.location_id)?;
    if p.handle_types & !1 != 0 {
        return Err(CUDA_ERROR_NOT_SUPPORTED);
    }
    Ok(p)
}

/// A device location (host and NUMA-node locations are not supported).
fn check_location(t: c_int, id: c_int) -> Result<(), CUresult> {
    match t {
        1 if device::exists(id) => Ok(()),
        1 => Err(CUDA_ERROR_INVALID_DEVICE),
        2..=4 => Err(CUDA_ERROR_NOT_SUPPORTED),
        _ => Err(CUDA_ERROR_INVALID_VALUE),
    }
}

fn aligned(v: usize) -> bool {
    v.is_multiple_of(GRANULARITY)
}

/// The reservation holding `[ptr, ptr + size)`, as (start, reservation).
fn within(all: &mut BTreeMap<usize, Reservation>, ptr: usize, size: usize) -> Option<(usize, &mut Reservation)> {
    let (&start, r) = all.range_mut(..=ptr).next_back()?;
    (ptr.checked_add(size)? <= start + r.size).then_some((start, r))
}

/// Tells the rest of the driver which parts of reservation `r` (at `start`) are device memory: one
/// range per run of adjacent read-write mappings, so a buffer that spans two mappings is one range
/// to copies, fills and checked mode, as its addresses are one range to a kernel. (Read-only
/// mappings are left out: the driver's own copies and fills would write them.)
fn publish(start: usize, r: &Reservation) {
    let mut runs: Vec<(u64, u64)> = vec![];
    for (&s, m) in &r.maps {
        match runs.last_mut() {
            Some((a, len)) if m.access == 3 && *a + *len == s as u64 => *len += m.size as u64,
            _ if m.access == 3 => runs.push((s as u64, m.size as u64)),
            _ => {}
        }
    }
    crate::memory::publish_mapped(start as u64, (start + r.size) as u64, &runs);
}

/// The starts of the mappings of `r` that cover `[ptr, ptr + size)` exactly: whole mappings, with
/// no gap between them (unmapping and access are per mapping).
fn whole_mappings(r: &Reservation, ptr: usize, size: usize) -> Result<Vec<usize>, CUresult> {
    let starts: Vec<usize> = r.maps.range(ptr..ptr + size).map(|(&s, _)| s).collect();
    let mut reached = ptr;
    for s in &starts {
        if *s != reached {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        reached += r.maps[s].size;
    }
    if starts.is_empty() || reached != ptr + size {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    Ok(starts)
}

/// Makes `[ptr, ptr + size)` inaccessible reserved space again (`MAP_FIXED` over what was there).
unsafe fn unreachable_again(ptr: usize, size: usize) -> Result<(), CUresult> {
    let p = libc::mmap(
        ptr as *mut c_void,
        size,
        libc::PROT_NONE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
        -1,
        0,
    );
    if p == libc::MAP_FAILED {
        return Err(CUDA_ERROR_OUT_OF_MEMORY);
    }
    Ok(())
}

api! {
    exports = vmm_exports;

    fn cuMemGetAllocationGranularity(granularity: *mut usize, prop: *const AllocationProp, _option: c_int) {
        init_check()?;
        check_prop(prop)?;
        // The minimum and the recommended granularity are the same here.
        out(granularity, GRANULARITY)
    }
    fn cuMemCreate(handle: *mut u64, size: usize, prop: *const AllocationProp, flags: u64) {
        init_check()?;
        let p = check_prop(prop)?;
        if handle.is_null() || size == 0 || !aligned(size) || flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        crate::memory::reserve(size as u64)?;
        let fd = libc::memfd_create(c"ptx-jit device memory".as_ptr(), libc::MFD_CLOEXEC);
        if fd < 0 {
            crate::memory::unreserve(size as u64);
            return Err(CUDA_ERROR_OUT_OF_MEMORY);
        }
        let fd = OwnedFd::from_raw_fd(fd);
        if libc::ftruncate(fd.as_raw_fd(), size as libc::off_t) != 0 {
            crate::memory::unreserve(size as u64);
            return Err(CUDA_ERROR_OUT_OF_MEMORY);
        }
        let h = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        PHYSICAL.lock().insert(h, Arc::new(Physical { fd, size, device: p.location_id }));
        *handle = h;
        Ok(())
    }
    fn cuMemRelease(handle: u64) {
        init_check()?;
        // Its memory lives on while a mapping holds it.
        PHYSICAL.lock().remove(&handle).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        Ok(())
    }
    fn cuMemGetAllocationPropertiesFromHandle(prop: *mut AllocationProp, handle: u64) {
        init_check()?;
        let device = PHYSICAL.lock().get(&handle).ok_or(CUDA_ERROR_INVALID_VALUE)?.device;
        let p = prop.as_mut().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        std::ptr::write_bytes(p as *mut AllocationProp, 0, 1);
        p.kind = 1;
        p.location_type = 1;
        p.location_id = device;
        Ok(())
    }
    fn cuMemAddressReserve(ptr: *mut CUdeviceptr, size: usize, alignment: usize, _addr: CUdeviceptr, flags: u64) {
        init_check()?;
        if ptr.is_null() || size == 0 || !aligned(size) || flags != 0 || (alignment != 0 && !alignment.is_power_of_two()) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // Address space only: nothing is committed until memory is mapped.
        let align = alignment.max(GRANULARITY);
        let len = size.checked_add(align).ok_or(CUDA_ERROR_OUT_OF_MEMORY)?;
        let raw = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        );
        if raw == libc::MAP_FAILED {
            return Err(CUDA_ERROR_OUT_OF_MEMORY);
        }
        let start = (raw as usize).next_multiple_of(align);
        let (head, tail) = (start - raw as usize, raw as usize + len - (start + size));
        if head > 0 {
            libc::munmap(raw, head);
        }
        if tail > 0 {
            libc::munmap((start + size) as *mut c_void, tail);
        }
        RESERVED.lock().insert(start, Reservation { size, maps: BTreeMap::new() });
        *ptr = start as CUdeviceptr;
        Ok(())
    }
    fn cuMemAddressFree(ptr: CUdeviceptr, size: usize) {
        init_check()?;
        let mut all = RESERVED.lock();
        match all.get(&(ptr as usize)) {
            Some(r) if r.size == size && r.maps.is_empty() => {}
            _ => return Err(CUDA_ERROR_INVALID_VALUE), // not a reservation, or memory still mapped in it
        }
        all.remove(&(ptr as usize));
        libc::munmap(ptr as *mut c_void, size);
        Ok(())
    }
    fn cuMemMap(ptr: CUdeviceptr, size: usize, offset: usize, handle: u64, flags: u64) {
        init_check()?;
        let (ptr, size) = (ptr as usize, size);
        if size == 0 || !aligned(ptr) || !aligned(size) || !aligned(offset) || flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let physical = PHYSICAL.lock().get(&handle).cloned().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        if offset.checked_add(size).is_none_or(|end| end > physical.size) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let mut all = RESERVED.lock();
        let (_, r) = within(&mut all, ptr, size).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let overlaps = r.maps.range(..ptr + size).next_back().is_some_and(|(&s, m)| s + m.size > ptr);
        if overlaps {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        // No access until cuMemSetAccess.
        let p = libc::mmap(
            ptr as *mut c_void,
            size,
            libc::PROT_NONE,
            libc::MAP_SHARED | libc::MAP_FIXED,
            physical.fd.as_raw_fd(),
            offset as libc::off_t,
        );
        if p == libc::MAP_FAILED {
            return Err(CUDA_ERROR_OUT_OF_MEMORY);
        }
        r.maps.insert(ptr, Mapping { size, _physical: physical, access: 0 });
        Ok(())
    }
    fn cuMemUnmap(ptr: CUdeviceptr, size: usize) {
        init_check()?;
        // Work still queued may use the memory, as with cuMemFree: it finishes first (before the
        // lock, so other threads' calls do not wait behind it).
        crate::memory::quiesce();
        let (ptr, size) = (ptr as usize, size);
        let mut all = RESERVED.lock();
        let (start, r) = within(&mut all, ptr, size).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let starts = whole_mappings(r, ptr, size)?;
        unreachable_again(ptr, size)?;
        for s in starts {
            r.maps.remove(&s);
        }
        publish(start, r);
        Ok(())
    }
    fn cuMemSetAccess(ptr: CUdeviceptr, size: usize, desc: *const AccessDesc, count: usize) {
        init_check()?;
        if count == 0 || desc.is_null() || size == 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let mut flags = 0;
        for i in 0..count {
            let d = &*desc.add(i);
            check_location(d.location_type, d.location_id)?;
            if !matches!(d.flags, 0 | 1 | 3) {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            flags = flags.max(d.flags); // the presented devices share one memory
        }
        let (ptr, size) = (ptr as usize, size);
        let mut all = RESERVED.lock();
        let (start, r) = within(&mut all, ptr, size).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let maps = whole_mappings(r, ptr, size)?;
        let prot = match flags {
            3 => libc::PROT_READ | libc::PROT_WRITE,
            1 => libc::PROT_READ,
            _ => libc::PROT_NONE,
        };
        if libc::mprotect(ptr as *mut c_void, size, prot) != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        for s in maps {
            r.maps.get_mut(&s).expect("listed").access = flags;
        }
        publish(start, r);
        Ok(())
    }
    fn cuMemGetAccess(flags: *mut u64, location: *const [c_int; 2], ptr: CUdeviceptr) {
        init_check()?;
        let l = location.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        check_location(l[0], l[1])?;
        let mut all = RESERVED.lock();
        let (_, r) = within(&mut all, ptr as usize, 1).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let access = r
            .maps
            .range(..=ptr as usize)
            .next_back()
            .filter(|(&s, m)| s + m.size > ptr as usize)
            .map(|(_, m)| m.access)
            .ok_or(CUDA_ERROR_INVALID_VALUE)?;
        out(flags, access as u64)
    }
}
