//! The functions of NVIDIA's device runtime that kernels call by name, bound in the JIT in place of
//! the C library's namesakes: `vprintf` (CUDA's `printf`: a format string and a buffer of arguments,
//! each aligned to its size, floats promoted to double), `__assertfail` (a failed `assert`), and
//! `malloc`/`free` (the device heap). Host-flavour functions take the thread's environment first.

use crate::runtime::checked::{Fault, FaultCell, FaultKind};
use crate::runtime::Env;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, CStr};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One conversion of a format: the spec text (`%08.3f`) and how many argument bytes it reads.
fn conversions(fmt: &[u8]) -> Vec<(usize, usize, u8, usize)> {
    // (start, end, conversion letter, argument size)
    let mut out = vec![];
    let mut i = 0;
    while i < fmt.len() {
        if fmt[i] != b'%' {
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        if i < fmt.len() && fmt[i] == b'%' {
            i += 1;
            continue;
        }
        let mut long = 0;
        while i < fmt.len() && !fmt[i].is_ascii_alphabetic() {
            i += 1;
        }
        while i < fmt.len() && matches!(fmt[i], b'l' | b'h' | b'z' | b'j' | b't' | b'L') {
            if fmt[i] == b'l' || fmt[i] == b'z' || fmt[i] == b'j' || fmt[i] == b't' {
                long += 1;
            }
            i += 1;
        }
        if i >= fmt.len() {
            break;
        }
        let conv = fmt[i];
        i += 1;
        let size = match conv {
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' | b's' | b'p' => 8,
            _ if long > 0 => 8,
            _ => 4,
        };
        out.push((start, i, conv, size));
    }
    out
}

/// Formats CUDA's printf arguments with the C library, one conversion at a time.
///
/// # Safety
/// `fmt` is a NUL-terminated string and `args` the argument buffer the kernel built for it.
unsafe fn format(fmt: *const c_char, args: *const u8) -> Vec<u8> {
    let f = unsafe { CStr::from_ptr(fmt) }.to_bytes();
    let mut out = vec![];
    let mut at = 0usize;
    let mut offset = 0usize;
    // Literal text between conversions, with `%%` printed as `%`.
    let literal = |out: &mut Vec<u8>, text: &[u8]| {
        let mut k = 0;
        while k < text.len() {
            out.push(text[k]);
            k += if text[k] == b'%' && text.get(k + 1) == Some(&b'%') {
                2
            } else {
                1
            };
        }
    };
    for (start, end, conv, size) in conversions(f) {
        literal(&mut out, &f[at..start]);
        at = end;
        offset = offset.next_multiple_of(size);
        let spec = std::ffi::CString::new(&f[start..end]).expect("no NUL inside a C string");
        let mut buf = vec![0u8; 512];
        let p = unsafe { args.add(offset) };
        let n = unsafe {
            match (conv, size) {
                (b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A', _) => libc::snprintf(
                    buf.as_mut_ptr() as *mut c_char,
                    buf.len(),
                    spec.as_ptr(),
                    (p as *const f64).read_unaligned(),
                ),
                (b's', _) => {
                    let s = (p as *const *const c_char).read_unaligned();
                    let s = if s.is_null() { c"(null)".as_ptr() } else { s };
                    libc::snprintf(buf.as_mut_ptr() as *mut c_char, buf.len(), spec.as_ptr(), s)
                }
                (_, 8) => libc::snprintf(
                    buf.as_mut_ptr() as *mut c_char,
                    buf.len(),
                    spec.as_ptr(),
                    (p as *const u64).read_unaligned(),
                ),
                _ => libc::snprintf(
                    buf.as_mut_ptr() as *mut c_char,
                    buf.len(),
                    spec.as_ptr(),
                    (p as *const u32).read_unaligned(),
                ),
            }
        };
        offset += size;
        out.extend_from_slice(&buf[..(n.max(0) as usize).min(buf.len() - 1)]);
    }
    literal(&mut out, &f[at..]);
    out
}

/// `vprintf(fmt, args)`: prints to stdout and returns the number of arguments, as CUDA's does.
pub extern "C" fn ptxjit_vprintf(_env: *const Env, fmt: *const c_char, args: *const u8) -> c_int {
    if fmt.is_null() {
        return -1;
    }
    let text = unsafe { format(fmt, args) };
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(&text);
    let _ = o.flush();
    conversions(unsafe { CStr::from_ptr(fmt) }.to_bytes()).len() as c_int
}

/// `__assertfail(message, file, line, function, char_size)`: reports the failed assertion as CUDA
/// does, then ends the launch as `trap` would.
pub extern "C" fn ptxjit_assertfail(
    env: *const Env,
    message: *const c_char,
    file: *const c_char,
    line: u32,
    function: *const c_char,
    _char_size: u64,
) {
    let text = |p: *const c_char| {
        if p.is_null() {
            "?".to_string()
        } else {
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    let env = unsafe { &*env };
    eprintln!(
        "{}:{line}: {}: block [{},{},{}], thread [{},{},{}] Assertion `{}` failed.",
        text(file),
        text(function),
        env.ctaid[0],
        env.ctaid[1],
        env.ctaid[2],
        env.tid[0],
        env.tid[1],
        env.tid[2],
        text(message)
    );
    crate::runtime::checked::trap(env, 0, crate::runtime::checked::FaultKind::Assert);
}

// ---- the device heap ---------------------------------------------------------------------------

/// The device heap's size (`CU_LIMIT_MALLOC_HEAP_SIZE`, 8 MiB by default as on a GPU): what kernels'
/// `malloc` may hold at once. One heap for the process, made again when its last context goes.
static HEAP_LIMIT: AtomicU64 = AtomicU64::new(HEAP_DEFAULT);
/// Bytes the heap's live blocks hold.
static HEAP_USED: AtomicU64 = AtomicU64::new(0);
/// Live blocks: address → size. Only these may be freed.
static HEAP: Mutex<BTreeMap<u64, u64>> = Mutex::new(BTreeMap::new());

/// The heap's size before any `cuCtxSetLimit`.
const HEAP_DEFAULT: u64 = 8 << 20;
/// Whether a kernel has called `malloc` since the heap was made: its size is fixed from then on.
static HEAP_IN_USE: AtomicBool = AtomicBool::new(false);

/// A kernel called `malloc` or `free`: the heap's size is fixed from now on.
fn heap_used() {
    if !HEAP_IN_USE.load(Ordering::Relaxed) {
        HEAP_IN_USE.store(true, Ordering::Relaxed);
    }
}

/// Sets the device heap's size (`cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE)`) and gives the size the
/// heap gets, as an H200 does: at least 4 MiB, rounded up to 64 KiB (1 MiB reads back as 4 MiB,
/// 4 MiB + 1 as 4 MiB + 64 KiB). `None`, as CUDA refuses it, once a kernel has used the heap.
pub fn set_heap_limit(bytes: u64) -> Option<u64> {
    if HEAP_IN_USE.load(Ordering::Relaxed) {
        return None;
    }
    let size = bytes.max(4 << 20).checked_next_multiple_of(64 << 10).unwrap_or(!0xffff);
    HEAP_LIMIT.store(size, Ordering::Relaxed);
    Some(size)
}

/// Frees every block and gives the heap its default size again: the last context is gone, and a
/// GPU's heap goes with its context.
pub fn reset_heap() {
    // Each block's size is given back, not a store of 0: a `malloc` racing this keeps its count.
    for (p, size) in std::mem::take(&mut *HEAP.lock()) {
        release(p, size);
    }
    HEAP_LIMIT.store(HEAP_DEFAULT, Ordering::Relaxed);
    HEAP_IN_USE.store(false, Ordering::Relaxed);
}

/// `malloc(size)` in a kernel: a block of the device heap, 16-byte aligned, valid in every thread and
/// launch until `free`; null when the heap is full, as on a GPU.
pub extern "C" fn ptxjit_malloc(_env: *const Env, size: u64) -> u64 {
    heap_used();
    let rounded = size.div_ceil(16).saturating_mul(16);
    let limit = HEAP_LIMIT.load(Ordering::Relaxed);
    let fits = |used: u64| used.checked_add(rounded).filter(|&u| u <= limit);
    if size == 0
        || HEAP_USED
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, fits)
            .is_err()
    {
        return 0;
    }
    // SAFETY: a plain allocation, freed only by `ptxjit_free`; zeroed so that what a kernel reads
    // before writing is not the host's garbage.
    let p = unsafe { libc::calloc(1, rounded as usize) } as u64;
    if p == 0 {
        HEAP_USED.fetch_sub(rounded, Ordering::Relaxed);
        return 0;
    }
    HEAP.lock().insert(p, rounded);
    crate::memory_map::register(p, rounded);
    p
}

/// `free(ptr)` in a kernel: returns a block to the device heap. Null is ignored; a pointer the heap
/// did not hand out ends the launch and is never given to the host's allocator.
pub extern "C" fn ptxjit_free(env: *const Env, ptr: u64) {
    heap_used();
    if ptr == 0 {
        return;
    }
    let Some(size) = HEAP.lock().remove(&ptr) else {
        // SAFETY: generated code passes its own environment.
        let env = unsafe { &*env };
        if let Some(cell) = unsafe { (env.fault as *const FaultCell).as_ref() } {
            cell.record(Fault {
                addr: ptr,
                tid: Some(env.tid),
                ctaid: Some(env.ctaid),
                ..Fault::of(FaultKind::Heap("freed a pointer the device heap did not hand out"))
            });
        }
        return;
    };
    release(ptr, size);
}

/// Gives a block the caller took out of `HEAP` back to the system.
fn release(ptr: u64, size: u64) {
    crate::memory_map::unregister(ptr);
    HEAP_USED.fetch_sub(size, Ordering::Relaxed);
    // SAFETY: `ptr` came from `calloc` in `ptxjit_malloc`, and its removal from `HEAP` made the
    // caller its only owner.
    unsafe { libc::free(ptr as *mut libc::c_void) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_cuda_printf_buffers() {
        // int, then a double at offset 8 (aligned), then a 64-bit integer and a string pointer.
        let s = c"hi";
        let mut buf = [0u8; 32];
        buf[0..4].copy_from_slice(&(-7i32).to_le_bytes());
        buf[8..16].copy_from_slice(&2.5f64.to_le_bytes());
        buf[16..24].copy_from_slice(&(1u64 << 40).to_le_bytes());
        buf[24..32].copy_from_slice(&(s.as_ptr() as u64).to_le_bytes());
        let out = unsafe { format(c"a=%d b=%.2f c=%llu d=%s %%\n".as_ptr(), buf.as_ptr()) };
        assert_eq!(String::from_utf8(out).unwrap(), "a=-7 b=2.50 c=1099511627776 d=hi %\n");
    }
}
