//! `PTXJIT_TRACE=1` (stderr) or `PTXJIT_TRACE=path` (appended to the file): one line per driver call,
//! with its arguments and result, for both backends. Pointers and handles print in hex, numbers in
//! decimal, so a trace shows what an application asks the driver for.

use crate::errors::*;
use once_cell::sync::Lazy;
use parking_lot::Mutex;
use std::io::Write;

static SINK: Lazy<Option<Mutex<Box<dyn Write + Send>>>> = Lazy::new(|| {
    let v = std::env::var_os("PTXJIT_TRACE")?;
    if v.is_empty() || v == "0" {
        return None;
    }
    if v == "1" {
        return Some(Mutex::new(Box::new(std::io::stderr())));
    }
    match std::fs::OpenOptions::new().create(true).append(true).open(&v) {
        Ok(f) => Some(Mutex::new(Box::new(f))),
        Err(e) => {
            eprintln!(
                "ptx-jit: PTXJIT_TRACE: cannot open {}: {e}; tracing to stderr",
                v.to_string_lossy()
            );
            Some(Mutex::new(Box::new(std::io::stderr())))
        }
    }
});

pub fn enabled() -> bool {
    SINK.is_some()
}

/// An argument as the trace prints it.
pub trait Arg {
    fn show(&self) -> String;
}

macro_rules! decimal {
    ($($t:ty),*) => { $(impl Arg for $t { fn show(&self) -> String { self.to_string() } })* };
}
decimal!(i8, u8, i16, u16, i32, u32, i64, usize, f32, f64);

/// `CUdeviceptr` and 64-bit flags read best in hex.
impl Arg for u64 {
    fn show(&self) -> String {
        format!("{self:#x}")
    }
}

impl<T: ?Sized> Arg for *mut T {
    fn show(&self) -> String {
        (*self as *const T).show()
    }
}

impl<T: ?Sized> Arg for *const T {
    fn show(&self) -> String {
        if self.is_null() {
            "NULL".into()
        } else {
            format!("{:#x}", *self as *const u8 as usize)
        }
    }
}

/// What an out-parameter points to, shown after a successful call (`dptr=0x7ffd…→0x7f3a…`).
pub trait Peek {
    fn peek(&self) -> String;
}

macro_rules! peek_decimal {
    ($($t:ty),*) => { $(impl Peek for $t { fn peek(&self) -> String { self.to_string() } })* };
}
peek_decimal!(i32, u32, usize, f32);

impl Peek for u64 {
    fn peek(&self) -> String {
        format!("{self:#x}")
    }
}

impl Peek for *mut std::ffi::c_void {
    fn peek(&self) -> String {
        self.show()
    }
}

/// Argument display with the pointee when there is one, chosen at compile time by the
/// argument's type ("autoref specialisation": `Deref` gives `Pointee` priority over `Plain`).
pub struct Show<'a, T>(pub &'a T);

pub trait Pointee {
    fn render(&self, ok: bool) -> String;
}

impl<T: Peek> Pointee for Show<'_, *mut T> {
    fn render(&self, ok: bool) -> String {
        let p = *self.0;
        // Only a successful call is known to have written a valid pointee.
        if ok && !p.is_null() {
            format!("{}→{}", p.show(), unsafe { (*p).peek() })
        } else {
            p.show()
        }
    }
}

/// C strings (names and symbols) read as text: what the call read, or (for `cuDeviceGetName`) wrote.
fn c_string(p: *const std::ffi::c_char, ok: bool) -> String {
    if !ok || p.is_null() {
        return p.show();
    }
    let s = unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy();
    let s: String = s.chars().take(80).collect();
    format!("{s:?}")
}

impl Pointee for Show<'_, *const std::ffi::c_char> {
    fn render(&self, ok: bool) -> String {
        c_string(*self.0, ok)
    }
}

impl Pointee for Show<'_, *mut std::ffi::c_char> {
    fn render(&self, ok: bool) -> String {
        c_string(*self.0, ok)
    }
}

pub trait Plain {
    fn render(&self, ok: bool) -> String;
}

impl<T: Arg> Plain for &Show<'_, T> {
    fn render(&self, _ok: bool) -> String {
        self.0.show()
    }
}

/// `name(a=1, b=0x7f..) = CUDA_SUCCESS`
pub fn line(name: &str, args: &[(&str, String)], r: CUresult) -> String {
    let args: Vec<String> = args.iter().map(|(n, v)| format!("{n}={v}")).collect();
    let result = NAMES
        .iter()
        .find(|(c, _)| *c == r)
        .map(|(_, n)| n.trim_end_matches('\0').to_string())
        .unwrap_or_else(|| format!("CUresult({r})"));
    format!("{name}({}) = {result}", args.join(", "))
}

pub fn call(name: &str, args: &[(&str, String)], r: CUresult) {
    if let Some(sink) = SINK.as_ref() {
        let mut s = line(name, args, r);
        s.push('\n');
        let _ = sink.lock().write_all(s.as_bytes());
    }
}

/// A free-form note in the trace (the passthrough backend's retargeting, say).
pub fn note(text: &str) {
    if let Some(sink) = SINK.as_ref() {
        let _ = writeln!(sink.lock(), "# {text}");
    }
}
