//! Device memory shared between processes (`cuIpcGetMemHandle`, `cuIpcOpenMemHandle`,
//! `cuIpcCloseMemHandle`), as PyTorch's and numba's multiprocessing use it.
//!
//! Device memory is the host's, private to the process. Exporting an allocation moves the pages it
//! lies on into a memory file (`memfd`) mapped at the same addresses: the contents are copied, once,
//! after every context's work has finished, and the allocation keeps its address. The handle names
//! the exporting process, the file's descriptor there, and where in the file the allocation starts;
//! an importing process opens the file through `/proc/PID/fd/FD` and maps it. Both then see one
//! memory. Pages an exported allocation shares with small neighbours (which live in slabs) are shared
//! too; nothing else of the exporter is.
//!
//! As with CUDA, freeing exported memory before every importer has closed it is undefined, opening a
//! handle twice in a context returns the same pointer (counted), and a process cannot open its own
//! handles (`CUDA_ERROR_INVALID_CONTEXT`). Event handles are not supported.

use crate::errors::*;
use crate::state::*;
use crate::{init_check, out, CUdeviceptr};
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
        match Named::decode(self) {
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

/// What a handle holds, in its first 40 bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Named {
    pid: u32,
    fd: u32,
    /// Bytes of the file mapped (whole pages) and where in them the allocation starts.
    len: u64,
    offset: u64,
    size: u64,
}

const MAGIC: &[u8; 8] = b"ptx-jit\x01";

impl Named {
    fn encode(&self) -> IpcMemHandle {
        let mut b = [0u8; 64];
        b[..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&self.pid.to_le_bytes());
        b[12..16].copy_from_slice(&self.fd.to_le_bytes());
        b[16..24].copy_from_slice(&self.len.to_le_bytes());
        b[24..32].copy_from_slice(&self.offset.to_le_bytes());
        b[32..40].copy_from_slice(&self.size.to_le_bytes());
        IpcMemHandle { reserved: b }
    }

    fn decode(h: &IpcMemHandle) -> Option<Named> {
        let b = &h.reserved;
        let u64_at = |k: usize| u64::from_le_bytes(b[k..k + 8].try_into().expect("8 bytes"));
        let u32_at = |k: usize| u32::from_le_bytes(b[k..k + 4].try_into().expect("4 bytes"));
        let n = Named {
            pid: u32_at(8),
            fd: u32_at(12),
            len: u64_at(16),
            offset: u64_at(24),
            size: u64_at(32),
        };
        let sane =
            &b[..8] == MAGIC && n.len > 0 && n.len.is_multiple_of(4096) && n.offset.checked_add(n.size)? <= n.len;
        sane.then_some(n)
    }
}

/// An exported allocation (by its start): its handle, whose file stays open while it lives.
static EXPORTS: Mutex<Option<HashMap<u64, Named>>> = Mutex::new(None);

/// An opened handle: the mapping, the pointer handed out and how many opens it has.
struct Import {
    map: u64,
    len: u64,
    dptr: CUdeviceptr,
    opens: u32,
    ctx: usize,
}

static IMPORTS: Mutex<Option<HashMap<Named, Import>>> = Mutex::new(None);

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

/// Moves the pages of `[start, start + size)` into a memory file at the same addresses.
unsafe fn export(start: u64, size: u64) -> Result<Named, CUresult> {
    let first = start & !4095;
    let len = (start + size).next_multiple_of(4096) - first;
    let fd = libc::memfd_create(c"ptx-jit-ipc".as_ptr(), libc::MFD_CLOEXEC);
    if fd < 0 {
        return Err(CUDA_ERROR_OUT_OF_MEMORY);
    }
    let fail = |e: CUresult| {
        libc::close(fd);
        Err(e)
    };
    if libc::ftruncate(fd, len as i64) != 0 {
        return fail(CUDA_ERROR_OUT_OF_MEMORY);
    }
    // Nothing may write these pages between the copy and the remapping.
    crate::memory::quiesce();
    let mut done = 0u64;
    while done < len {
        let n = libc::pwrite(fd, (first + done) as *const c_void, (len - done) as usize, done as i64);
        if n <= 0 {
            return fail(CUDA_ERROR_OUT_OF_MEMORY);
        }
        done += n as u64;
    }
    let p = libc::mmap(
        first as *mut c_void,
        len as usize,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_SHARED | libc::MAP_FIXED,
        fd,
        0,
    );
    if p == libc::MAP_FAILED {
        // MAP_FIXED failing leaves the old mapping in place.
        return fail(CUDA_ERROR_OUT_OF_MEMORY);
    }
    Ok(Named {
        pid: std::process::id(),
        fd: fd as u32,
        len,
        offset: start - first,
        size,
    })
}

/// An exported allocation is freed: its file closes (importers keep their mappings).
pub(crate) fn forget(start: u64) {
    if let Some(n) = EXPORTS.lock().as_mut().and_then(|m| m.remove(&start)) {
        unsafe { libc::close(n.fd as i32) };
    }
}

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

/// Opens a handle (both ABIs of `cuIpcOpenMemHandle`).
unsafe fn open(dptr: *mut CUdeviceptr, handle: IpcMemHandle, flags: c_uint) -> Result<(), CUresult> {
    init_check()?;
    let ctx = current_ctx()?;
    let n = Named::decode(&handle).ok_or(CUDA_ERROR_INVALID_VALUE)?;
    if dptr.is_null() || flags & !1 != 0 {
        return Err(CUDA_ERROR_INVALID_VALUE); // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS only
    }
    if n.pid == std::process::id() {
        return Err(CUDA_ERROR_INVALID_CONTEXT);
    }
    let mut imports = IMPORTS.lock();
    let map = imports.get_or_insert_with(HashMap::new);
    if let Some(i) = map.get_mut(&n) {
        i.opens += 1;
        return out(dptr, i.dptr);
    }
    let path = std::ffi::CString::new(format!("/proc/{}/fd/{}", n.pid, n.fd)).expect("no NUL");
    let fd = libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(CUDA_ERROR_INVALID_HANDLE); // the exporter is gone, or freed it
    }
    let mut st: libc::stat = std::mem::zeroed();
    let fits = libc::fstat(fd, &mut st) == 0 && st.st_size as u64 >= n.len;
    let p = if fits {
        libc::mmap(
            std::ptr::null_mut(),
            n.len as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    } else {
        libc::MAP_FAILED
    };
    libc::close(fd);
    if p == libc::MAP_FAILED {
        return Err(CUDA_ERROR_INVALID_HANDLE);
    }
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

api! {
    exports = ipc_exports;

    fn cuIpcGetMemHandle(handle: *mut IpcMemHandle, dptr: CUdeviceptr) {
        init_check()?;
        if handle.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let (start, size) = allocation(dptr)?;
        let mut exports = EXPORTS.lock();
        let map = exports.get_or_insert_with(HashMap::new);
        let named = match map.get(&start) {
            Some(n) => *n,
            None => {
                let n = export(start, size)?;
                map.insert(start, n);
                n
            }
        };
        out(handle, named.encode())
    }
    fn cuIpcOpenMemHandle(dptr: *mut CUdeviceptr, handle: IpcMemHandle, flags: c_uint) {
        open(dptr, handle, flags)
    }
    fn cuIpcOpenMemHandle_v2(dptr: *mut CUdeviceptr, handle: IpcMemHandle, flags: c_uint) {
        open(dptr, handle, flags)
    }
    fn cuIpcCloseMemHandle(dptr: CUdeviceptr) {
        init_check()?;
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
            // Work queued on the memory runs first.
            crate::memory::quiesce();
            let i = map.remove(&key).expect("found above");
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
            len: 8192,
            offset: 256,
            size: 1000,
        };
        assert!(Named::decode(&n.encode()) == Some(n));
        assert!(Named::decode(&IpcMemHandle { reserved: [0; 64] }).is_none());
        let mut past = n;
        past.size = 8000; // beyond the mapped pages
        assert!(Named::decode(&past.encode()).is_none());
    }
}
