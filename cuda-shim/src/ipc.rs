//! Device memory shared between processes (`cuIpcGetMemHandle`, `cuIpcOpenMemHandle`,
//! `cuIpcCloseMemHandle`), as PyTorch's and numba's multiprocessing use it.
//!
//! Device memory is the host's, private to the process. Exporting an allocation moves its region into
//! a memory file (`memfd`) mapped at the same addresses: the region is a small allocation's whole slab
//! (`crate::arena`), so that no page ever belongs to two files, or a large allocation's own pages. The
//! contents are copied into the file, after every context's queued work has finished, through a
//! mapping of the file that then replaces the region in one step (`mremap`), and the allocation keeps
//! its address; a region is moved once, and later exports of allocations in it reuse its file. A
//! write by another thread to the region during the copy (a synchronous copy or a host write to a
//! neighbouring buffer, racing with the export) can be lost.
//!
//! The handle names the exporting process, the file's descriptor there and its inode (checked when
//! opened, so a stale handle cannot open another file), and where in the file the allocation starts;
//! an importing process opens the file through `/proc/PID/fd/FD` and maps it. Both then see one memory.
//!
//! As with CUDA, freeing exported memory before every importer has closed it is undefined; opening a
//! handle twice in a context returns the same pointer (counted); a handle opens in one context per
//! process, and never in the process that exported it (`CUDA_ERROR_INVALID_CONTEXT`).
//!
//! Interprocess events (`cuIpcGetEventHandle`, `cuIpcOpenEventHandle`) keep their counters in a
//! [`SharedPage`], a one-page memory file made with the event, named by its handle as memory is.

use crate::errors::*;
use crate::state::*;
use crate::{init_check, out, CUdeviceptr, Handle};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::{c_uint, c_void};

/// `CUipcMemHandle` (cuda.h): 64 opaque bytes, passed by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct IpcMemHandle {
    reserved: [u8; 64],
}

impl crate::trace::Arg for IpcMemHandle {
    fn show(&self) -> String {
        match Named::decode(self, MAGIC).or_else(|| Named::decode(self, EVENT_MAGIC)) {
            Some(n) => format!("{{pid={}, fd={}, offset={}, size={}}}", n.pid, n.fd, n.offset, n.size),
            None => "{not a ptx-jit handle}".into(),
        }
    }
}

impl crate::trace::Peek for IpcMemHandle {
    fn peek(&self) -> String {
        crate::trace::Arg::show(self)
    }
}

/// What a handle holds, in its first 56 bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Named {
    pid: u32,
    fd: u32,
    /// The file's identity, checked when it is opened.
    ino: u64,
    dev: u64,
    /// Bytes of the file (its region) and where in them the allocation starts.
    len: u64,
    offset: u64,
    size: u64,
}

/// What the first 8 bytes of a memory handle and of an event handle are.
const MAGIC: &[u8; 8] = b"ptx-jit\x02";
const EVENT_MAGIC: &[u8; 8] = b"ptx-jit\x03";

impl Named {
    /// The handle, beginning with `magic` ([`MAGIC`] or [`EVENT_MAGIC`]).
    fn encode(&self, magic: &[u8; 8]) -> IpcMemHandle {
        let mut b = [0u8; 64];
        b[..8].copy_from_slice(magic);
        b[8..12].copy_from_slice(&self.pid.to_le_bytes());
        b[12..16].copy_from_slice(&self.fd.to_le_bytes());
        for (k, v) in [self.ino, self.dev, self.len, self.offset, self.size]
            .iter()
            .enumerate()
        {
            b[16 + 8 * k..24 + 8 * k].copy_from_slice(&v.to_le_bytes());
        }
        IpcMemHandle { reserved: b }
    }

    fn decode(h: &IpcMemHandle, magic: &[u8; 8]) -> Option<Named> {
        let b = &h.reserved;
        let u64_at = |k: usize| u64::from_le_bytes(b[k..k + 8].try_into().expect("8 bytes"));
        let u32_at = |k: usize| u32::from_le_bytes(b[k..k + 4].try_into().expect("4 bytes"));
        let n = Named {
            pid: u32_at(8),
            fd: u32_at(12),
            ino: u64_at(16),
            dev: u64_at(24),
            len: u64_at(32),
            offset: u64_at(40),
            size: u64_at(48),
        };
        let sane =
            &b[..8] == magic && n.len > 0 && n.len.is_multiple_of(4096) && n.offset.checked_add(n.size)? <= n.len;
        sane.then_some(n)
    }
}

/// Maps `len` bytes of a memory file, shared.
unsafe fn map_shared(fd: i32, len: u64) -> Option<*mut c_void> {
    let p = libc::mmap(
        std::ptr::null_mut(),
        len as usize,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_SHARED,
        fd,
        0,
    );
    (p != libc::MAP_FAILED).then_some(p)
}

/// Maps the file another process's handle names, after checking it is that file and long enough:
/// `INVALID_CONTEXT` for this process's own handle, `INVALID_HANDLE` when the exporter is gone or
/// the file is another.
unsafe fn map_peer(n: &Named) -> Result<*mut c_void, CUresult> {
    if n.pid == std::process::id() {
        return Err(CUDA_ERROR_INVALID_CONTEXT);
    }
    let path = std::ffi::CString::new(format!("/proc/{}/fd/{}", n.pid, n.fd)).expect("no NUL");
    let fd = libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(CUDA_ERROR_INVALID_HANDLE);
    }
    let mut st: libc::stat = std::mem::zeroed();
    let same = libc::fstat(fd, &mut st) == 0 && st.st_ino == n.ino && st.st_dev == n.dev && st.st_size as u64 >= n.len;
    let p = if same { map_shared(fd, n.len) } else { None };
    libc::close(fd);
    p.ok_or(CUDA_ERROR_INVALID_HANDLE)
}

/// A region moved into a memory file: its descriptor, the file's identity and length, and whether
/// the region is a slab (which stays for the process's life).
#[derive(Clone, Copy)]
struct File {
    fd: i32,
    ino: u64,
    dev: u64,
    len: u64,
    slab: bool,
}

/// A memory file of `len` bytes, its size sealed (an importer cannot shrink it under us, which would
/// turn accesses into SIGBUS).
unsafe fn memory_file(name: &std::ffi::CStr, len: u64) -> Option<(i32, libc::stat)> {
    let fd = libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING);
    if fd < 0 {
        return None;
    }
    let mut st: libc::stat = std::mem::zeroed();
    let ok = libc::ftruncate(fd, len as i64) == 0
        && libc::fcntl(
            fd,
            libc::F_ADD_SEALS,
            libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL,
        ) == 0
        && libc::fstat(fd, &mut st) == 0;
    if !ok {
        libc::close(fd);
        return None;
    }
    Some((fd, st))
}

/// Exported regions, by start. A slab's stays for the process's life; a large allocation's goes
/// when the allocation is freed.
static REGIONS: Mutex<Option<HashMap<u64, File>>> = Mutex::new(None);
/// Held through an export, which waits for every context's work: only exports wait for it.
static EXPORTING: Mutex<()> = Mutex::new(());

/// The allocation holding `dptr`, as a (start, size) of device memory.
fn allocation(dptr: CUdeviceptr) -> Result<(u64, u64), CUresult> {
    let mem = MEMORY.lock();
    let (&start, a) = mem.range(..=dptr).next_back().ok_or(CUDA_ERROR_INVALID_VALUE)?;
    let device = matches!(a.kind, MemKind::Device { .. });
    if !device || dptr >= start + a.size {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    Ok((start, a.size))
}

/// The region an allocation is exported with: its slab, or its own pages.
fn region(start: u64, size: u64) -> (u64, u64) {
    crate::arena::slab_of(start).unwrap_or_else(|| {
        let first = start & !4095;
        (first, (start + size).next_multiple_of(4096) - first)
    })
}

/// Moves `[start, start + len)` into a new memory file at the same addresses.
unsafe fn move_to_file(start: u64, len: u64) -> Result<File, CUresult> {
    let (fd, st) = memory_file(c"ptx-jit-ipc", len).ok_or(CUDA_ERROR_OUT_OF_MEMORY)?;
    let Some(staging) = map_shared(fd, len) else {
        libc::close(fd);
        return Err(CUDA_ERROR_OUT_OF_MEMORY);
    };
    // Work queued on the region runs first; then the copy, and the file's mapping replaces the
    // region in one step (a failure leaves the region as it was).
    crate::memory::quiesce();
    std::ptr::copy_nonoverlapping(start as *const u8, staging as *mut u8, len as usize);
    let moved = libc::mremap(
        staging,
        len as usize,
        len as usize,
        libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
        start as *mut c_void,
    );
    if moved == libc::MAP_FAILED {
        libc::munmap(staging, len as usize);
        libc::close(fd);
        return Err(CUDA_ERROR_OUT_OF_MEMORY);
    }
    // Large allocations asked for huge pages; the file's pages may get them too.
    libc::madvise(start as *mut c_void, len as usize, libc::MADV_HUGEPAGE);
    Ok(File {
        fd,
        ino: st.st_ino,
        dev: st.st_dev,
        len,
        slab: crate::arena::slab_of(start).is_some(),
    })
}

/// An allocation is freed: a large allocation's file closes (importers keep their mappings); a
/// slab's stays, as the slab does.
pub(crate) fn forget(start: u64) {
    let mut regions = REGIONS.lock();
    let Some(m) = regions.as_mut() else { return };
    let key = start & !4095;
    if m.get(&key).is_some_and(|f| !f.slab) {
        let f = m.remove(&key).expect("found above");
        unsafe { libc::close(f.fd) };
    }
}

/// An opened handle: the mapping, the pointer handed out, how many opens it has and in which context.
struct Import {
    map: u64,
    len: u64,
    dptr: CUdeviceptr,
    opens: u32,
    ctx: usize,
}

static IMPORTS: Mutex<Option<HashMap<Named, Import>>> = Mutex::new(None);

/// Unmaps what a destroyed context had opened.
pub(crate) fn release_ctx(ctx: usize) {
    let gone: Vec<Import> = match IMPORTS.lock().as_mut() {
        Some(m) => {
            let keys: Vec<Named> = m.iter().filter(|(_, i)| i.ctx == ctx).map(|(k, _)| *k).collect();
            keys.iter().filter_map(|k| m.remove(k)).collect()
        }
        None => vec![],
    };
    for i in gone {
        unmap(&i);
    }
}

fn unmap(i: &Import) {
    MEMORY.lock().remove(&i.dptr);
    unsafe { libc::munmap(i.map as *mut c_void, i.len as usize) };
}

/// Exports the allocation holding `dptr`.
unsafe fn get(handle: *mut IpcMemHandle, dptr: CUdeviceptr) -> Result<(), CUresult> {
    init_check()?;
    if handle.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let _one_at_a_time = EXPORTING.lock();
    let (start, size) = allocation(dptr)?;
    let (first, len) = region(start, size);
    let known = REGIONS.lock().as_ref().and_then(|m| m.get(&first).copied());
    let file = match known {
        Some(f) => f,
        None => {
            let f = move_to_file(first, len)?;
            REGIONS.lock().get_or_insert_with(HashMap::new).insert(first, f);
            f
        }
    };
    let n = Named {
        pid: std::process::id(),
        fd: file.fd as u32,
        ino: file.ino,
        dev: file.dev,
        len: file.len,
        offset: start - first,
        size,
    };
    out(handle, n.encode(MAGIC))
}

/// Opens a handle (both ABIs of `cuIpcOpenMemHandle`).
unsafe fn open(dptr: *mut CUdeviceptr, handle: IpcMemHandle, flags: c_uint) -> Result<(), CUresult> {
    init_check()?;
    let ctx = current_ctx()?;
    let n = Named::decode(&handle, MAGIC).ok_or(CUDA_ERROR_INVALID_VALUE)?;
    if dptr.is_null() || flags & !1 != 0 {
        return Err(CUDA_ERROR_INVALID_VALUE); // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS only
    }
    if n.pid == std::process::id() {
        return Err(CUDA_ERROR_INVALID_CONTEXT); // before the lookup: its own handle is never open
    }
    let mut imports = IMPORTS.lock();
    let map = imports.get_or_insert_with(HashMap::new);
    if let Some(i) = map.get_mut(&n) {
        if i.ctx != ctx {
            return Err(CUDA_ERROR_INVALID_CONTEXT); // one context per process opens a handle
        }
        i.opens += 1;
        return out(dptr, i.dptr);
    }
    let p = map_peer(&n)?;
    let d = p as u64 + n.offset;
    MEMORY.lock().insert(
        d,
        Alloc {
            size: n.size,
            kind: MemKind::Imported { ctx },
        },
    );
    map.insert(
        n,
        Import {
            map: p as u64,
            len: n.len,
            dptr: d,
            opens: 1,
            ctx,
        },
    );
    out(dptr, d)
}

/// An interprocess event's counters, records issued and records completed, in a one-page memory
/// file both processes map (`crate::event`).
pub struct SharedPage {
    page: *mut std::sync::atomic::AtomicU64,
    /// The file, while this process made it (the handle names it); -1 in an importer.
    fd: i32,
    ino: u64,
    dev: u64,
}

// SAFETY: the page is atomics only, mapped as long as the value lives.
unsafe impl Send for SharedPage {}
unsafe impl Sync for SharedPage {}

impl SharedPage {
    /// A fresh page, zeroed.
    pub fn new() -> Result<SharedPage, CUresult> {
        unsafe {
            let (fd, st) = memory_file(c"ptx-jit-ipc-event", 4096).ok_or(CUDA_ERROR_OUT_OF_MEMORY)?;
            let page = map_shared(fd, 4096).ok_or_else(|| {
                libc::close(fd);
                CUDA_ERROR_OUT_OF_MEMORY
            })? as *mut std::sync::atomic::AtomicU64;
            Ok(SharedPage {
                page,
                fd,
                ino: st.st_ino,
                dev: st.st_dev,
            })
        }
    }

    fn word(&self, k: usize) -> &std::sync::atomic::AtomicU64 {
        // SAFETY: two words of the mapped page.
        unsafe { &*self.page.add(k) }
    }

    /// (records issued, records completed).
    pub fn counters(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Acquire;
        (self.word(0).load(Acquire), self.word(1).load(Acquire))
    }

    pub fn issue(&self) -> u64 {
        // Who issued last: a waiter gives up if that process dies before completing it.
        self.word(2)
            .store(std::process::id() as u64, std::sync::atomic::Ordering::Release);
        self.word(0).fetch_add(1, std::sync::atomic::Ordering::AcqRel) + 1
    }

    /// Whether the process that issued the last record is gone (its record will never complete).
    pub fn issuer_gone(&self) -> bool {
        let pid = self.word(2).load(std::sync::atomic::Ordering::Acquire) as i32;
        pid > 0
            && unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    }

    pub fn complete(&self, generation: u64) {
        self.word(1).fetch_max(generation, std::sync::atomic::Ordering::AcqRel);
    }

    /// What the page's handle names: this process's file, one page.
    fn named(&self) -> Named {
        Named {
            pid: std::process::id(),
            fd: self.fd as u32,
            ino: self.ino,
            dev: self.dev,
            len: 4096,
            offset: 0,
            size: 4096,
        }
    }

    /// Maps the page an event handle of another process names.
    unsafe fn open(h: &IpcMemHandle) -> Result<SharedPage, CUresult> {
        let n = Named::decode(h, EVENT_MAGIC)
            .filter(|n| n.len == 4096)
            .ok_or(CUDA_ERROR_INVALID_VALUE)?;
        Ok(SharedPage {
            page: map_peer(&n)? as *mut std::sync::atomic::AtomicU64,
            fd: -1,
            ino: n.ino,
            dev: n.dev,
        })
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        unsafe {
            libc::munmap(self.page as *mut c_void, 4096);
            if self.fd >= 0 {
                libc::close(self.fd);
            }
        }
    }
}

api! {
    exports = ipc_exports;

    fn cuIpcGetEventHandle(handle: *mut IpcMemHandle, ev: Handle) {
        init_check()?;
        let e = EVENTS.get(ev as usize)?;
        // Made with CU_EVENT_INTERPROCESS (and so DISABLE_TIMING), in this process.
        let page = e.shared.as_ref().filter(|p| p.fd >= 0).ok_or(CUDA_ERROR_INVALID_HANDLE)?;
        if handle.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        out(handle, page.named().encode(EVENT_MAGIC))
    }
    fn cuIpcOpenEventHandle(ev: *mut Handle, handle: IpcMemHandle) {
        init_check()?;
        let ctx = current_ctx()?;
        if ev.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let page = SharedPage::open(&handle)?;
        let flags = crate::event::INTERPROCESS | crate::event::DISABLE_TIMING;
        out(ev, EVENTS.insert(crate::event::Event::new(ctx, flags, Some(page))) as Handle)
    }

    fn cuIpcGetMemHandle(handle: *mut IpcMemHandle, dptr: CUdeviceptr) {
        get(handle, dptr)
    }
    fn cuIpcOpenMemHandle(dptr: *mut CUdeviceptr, handle: IpcMemHandle, flags: c_uint) {
        open(dptr, handle, flags)
    }
    fn cuIpcOpenMemHandle_v2(dptr: *mut CUdeviceptr, handle: IpcMemHandle, flags: c_uint) {
        open(dptr, handle, flags)
    }
    fn cuIpcCloseMemHandle(dptr: CUdeviceptr) {
        init_check()?;
        let closed = {
            let mut imports = IMPORTS.lock();
            let map = imports.as_mut().ok_or(CUDA_ERROR_INVALID_VALUE)?;
            let key = *map
                .iter()
                .find(|(_, i)| i.dptr == dptr)
                .map(|(k, _)| k)
                .ok_or(CUDA_ERROR_INVALID_VALUE)?;
            let i = map.get_mut(&key).expect("found above");
            i.opens -= 1;
            if i.opens == 0 {
                map.remove(&key)
            } else {
                None
            }
        };
        if let Some(i) = closed {
            // Work the context queued on the memory runs first.
            if let Ok(c) = CONTEXTS.get(i.ctx) {
                c.streams.synchronize();
            }
            unmap(&i);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_and_refuse_garbage() {
        let n = Named {
            pid: 7,
            fd: 9,
            ino: 1234,
            dev: 5,
            len: 8192,
            offset: 256,
            size: 1000,
        };
        assert!(Named::decode(&n.encode(MAGIC), MAGIC) == Some(n));
        assert!(Named::decode(&n.encode(MAGIC), EVENT_MAGIC).is_none());
        assert!(Named::decode(&IpcMemHandle { reserved: [0; 64] }, MAGIC).is_none());
        let past = Named { size: 8000, ..n }; // beyond the file
        assert!(Named::decode(&past.encode(MAGIC), MAGIC).is_none());
    }
}
