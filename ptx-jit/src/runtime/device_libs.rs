//! The functions of NVIDIA's device runtime that kernels call by name, bound in the JIT in place of
//! the C library's namesakes: `vprintf` (CUDA's `printf`: a format string and a buffer of arguments,
//! each aligned to its size, floats promoted to double) and `__assertfail` (a failed `assert`).
//! Host-flavour functions take the thread's environment first.

use crate::runtime::Env;
use std::ffi::{c_char, c_int, CStr};
use std::io::Write;

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
