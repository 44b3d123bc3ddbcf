//! `ptx_llvm::builtin::MEM`: the host flavour's operations with effects on memory or on the launch —
//! `isspacep`, the `mbarrier` object of one CTA, float atomics the host has no instruction for,
//! `trap`, and the copies and bulk reductions of `cp.async`.
//!
//! An `mbarrier` is 8 opaque bytes of shared memory. Here they hold the pending arrival count (bits
//! 0–20), the expected count (21–41), the pending transaction bytes as a signed count (42–62) and the
//! phase (63). A CTA's threads run on one OS thread, so plain reads and writes are atomic enough.

use crate::runtime::Env;
use ptx_llvm::builtin::*;
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, Ordering};

const FIELD: u64 = (1 << 21) - 1;

struct Mbar {
    pending: u64,
    expected: u64,
    tx: i64,
    phase: u64,
}

impl Mbar {
    fn load(w: u64) -> Mbar {
        let tx = (w >> 42 & FIELD) as i64;
        Mbar {
            pending: w & FIELD,
            expected: w >> 21 & FIELD,
            tx: if tx >= 1 << 20 { tx - (1 << 21) } else { tx },
            phase: w >> 63,
        }
    }
    fn store(&self) -> u64 {
        self.pending & FIELD | (self.expected & FIELD) << 21 | (self.tx as u64 & FIELD) << 42 | self.phase << 63
    }
    /// The phase completes once every arrival and every transaction byte is in.
    fn settle(&mut self) {
        if self.pending == 0 && self.tx <= 0 {
            self.phase ^= 1;
            self.pending = self.expected;
            self.tx = 0;
        }
    }
}

/// Called by JIT code (`ptx_llvm::builtin::MEM`).
pub extern "C" fn ptxjit_mem(code: u32, env: *const Env, addr: u64, a: u64, b: u64) -> u64 {
    // SAFETY: JIT code passes its own environment and addresses its instruction may touch.
    let env = unsafe { &*env };
    let word = addr as *mut u64;
    let mbar = |f: &mut dyn FnMut(&mut Mbar)| -> u64 {
        let old = unsafe { word.read_unaligned() };
        let mut m = Mbar::load(old);
        f(&mut m);
        let new = m.store();
        unsafe { word.write_unaligned(new) };
        if (old ^ new) >> 63 != 0 {
            crate::runtime::sanitize::barrier_completed(); // a phase completed
        }
        old
    };
    let Some(op) = Mem::from_code(code) else { return 0 };
    match op {
        Mem::Isspacep => {
            let shared = env.shared as u64;
            let in_shared = addr >= shared && addr < shared + b;
            let in_local = crate::runtime::checked::on_stack(addr);
            (match a as u32 {
                SPACE_SHARED => in_shared,
                SPACE_LOCAL => in_local,
                SPACE_GLOBAL => !in_shared && !in_local,
                SPACE_CONST => false,
                _ => true,
            }) as u64
        }
        Mem::MbarInit => {
            unsafe {
                word.write_unaligned(
                    Mbar {
                        pending: a,
                        expected: a,
                        tx: 0,
                        phase: 0,
                    }
                    .store(),
                )
            };
            0
        }
        Mem::MbarArrive => mbar(&mut |m| {
            m.pending = m.pending.saturating_sub(a);
            if b & MBAR_DROP as u64 != 0 {
                m.expected = m.expected.saturating_sub(a);
            }
            m.settle();
        }),
        Mem::MbarExpectTx => mbar(&mut |m| m.tx += a as i64),
        Mem::MbarCompleteTx => mbar(&mut |m| {
            m.tx -= a as i64;
            m.settle();
        }),
        Mem::MbarTest => {
            let now = unsafe { word.read_unaligned() } >> 63;
            let waited = if b == 1 { a & 1 } else { a >> 63 };
            (now != waited) as u64
        }
        Mem::MbarInval => {
            unsafe { word.write_unaligned(0) };
            0
        }
        Mem::AtomicFp => {
            // Compare-and-swap loop around the exact float operation.
            let (_, ty, _, _, _) = parts(b as u32);
            let op = |old: u64| crate::emu::builtins::ptxjit_fp(b as u32, old, a, 0);
            if matches!(ty, F16 | BF16) {
                let cell = unsafe { AtomicU16::from_ptr(addr as *mut u16) };
                let mut old = cell.load(Ordering::Relaxed);
                loop {
                    match cell.compare_exchange_weak(old, op(old as u64) as u16, Ordering::AcqRel, Ordering::Relaxed) {
                        Ok(v) => return v as u64,
                        Err(v) => old = v,
                    }
                }
            }
            let cell = unsafe { AtomicU32::from_ptr(addr as *mut u32) };
            let mut old = cell.load(Ordering::Relaxed);
            loop {
                match cell.compare_exchange_weak(old, op(old as u64) as u32, Ordering::AcqRel, Ordering::Relaxed) {
                    Ok(v) => return v as u64,
                    Err(v) => old = v,
                }
            }
        }
        Mem::BulkReduce => {
            let (size, op, ty) = (b & 0xffff_ffff, (b >> 32 & 0xff) as usize, (b >> 40) as u32);
            bulk_reduce(addr, a, size, op, ty);
            0
        }
        Mem::Tensor => {
            // SAFETY: generated code passes its own argument block.
            let args = unsafe { &*(addr as *const ptx_llvm::abi::TensorArgs) };
            crate::runtime::tensor::tensor_op(env, args, a as u32 & 0xffff, (a >> 16) as usize, b as u32)
        }
        Mem::TensormapReplace => {
            // SAFETY: the map is the kernel's; a bad address faults as the instruction would.
            unsafe { crate::runtime::tensor::replace(addr, b as u32 & 0xff, (b >> 8) as usize, a) };
            0
        }
        Mem::Trap => {
            use crate::runtime::checked::FaultKind;
            let kind = match b as u32 {
                TRAP_NO_CLUSTER => {
                    FaultKind::Illegal("ran st.async or red.async in a launch that is not a cluster launch")
                }
                _ => FaultKind::Trap,
            };
            crate::runtime::checked::trap(env, a as u32, kind);
            1
        }
        Mem::WmmaLoad | Mem::WmmaStore => {
            let buf = a as *mut u32;
            let form = ptx_front::isa::WmmaForm::from_code(unsafe { (buf as *const u64).read_unaligned() });
            let n = unsafe { *buf.add(2) } as usize;
            let regs = unsafe { std::slice::from_raw_parts_mut(buf.add(3), n) };
            let lane = (crate::runtime::thread_index(env) % 32) as usize;
            let ok = form.and_then(|form| unsafe {
                if op == Mem::WmmaLoad {
                    crate::emu::wmma::load_lane(&form, lane, addr, b, regs)
                } else {
                    crate::emu::wmma::store_lane(&form, lane, addr, b, regs)
                }
            });
            if op == Mem::WmmaStore {
                if let Some(cell) = unsafe { (env.fault as *const crate::runtime::checked::FaultCell).as_ref() } {
                    // initcheck: the fragment's rows (at most 32, of at most 4-byte elements `b` apart)
                    // count as written; coarse, so a later read of them is never a false report.
                    crate::runtime::sanitize::copied(env, cell, addr, 32 * b.max(1) * 4);
                }
            }
            ok.is_none() as u64
        }
        Mem::Copy => {
            let (total, from_src) = (b & 0xffff_ffff, b >> 32);
            let n = from_src.min(total) as usize;
            unsafe {
                std::ptr::copy(a as *const u8, addr as *mut u8, n);
                std::ptr::write_bytes((addr as *mut u8).add(n), 0, total as usize - n);
            }
            if let Some(cell) = unsafe { (env.fault as *const crate::runtime::checked::FaultCell).as_ref() } {
                crate::runtime::sanitize::copied(env, cell, addr, total);
            }
            0
        }
    }
}

/// `cp.reduce.async.bulk`: each element of the destination combined with the source's, atomically
/// per element (other CTAs may reduce into the same global memory at the same time).
fn bulk_reduce(dst: u64, src: u64, size: u64, op: usize, ty: u32) {
    let bytes = match ty {
        F16 | BF16 => 2,
        U64 | S64 | F64 => 8,
        _ => 4,
    };
    for k in 0..size / bytes {
        let (d, s) = (dst + k * bytes, src + k * bytes);
        // SAFETY: the lowering checked (in checked mode) or trusts both ranges, as for a copy.
        unsafe {
            let mut v = 0u64;
            std::ptr::copy_nonoverlapping(s as *const u8, &mut v as *mut u64 as *mut u8, bytes as usize);
            reduce_element(d, v, bytes, op, ty);
        }
    }
}

/// Combines the `bytes`-byte element at `dst` with `v` ([`combine`]), atomically. PTX reduces 2-,
/// 4- and 8-byte elements only; other sizes change nothing.
///
/// # Safety
/// `dst` must be valid for an atomic access of `bytes` bytes.
pub(crate) unsafe fn reduce_element(dst: u64, v: u64, bytes: u64, op: usize, ty: u32) {
    match bytes {
        2 => {
            let cell = AtomicU16::from_ptr(dst as *mut u16);
            let _ = cell.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |o| {
                Some(combine(op, ty, o as u64, v) as u16)
            });
        }
        4 => {
            let cell = AtomicU32::from_ptr(dst as *mut u32);
            let _ = cell.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |o| {
                Some(combine(op, ty, o as u64, v) as u32)
            });
        }
        8 => {
            let cell = AtomicU64::from_ptr(dst as *mut u64);
            let _ = cell.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |o| Some(combine(op, ty, o, v)));
        }
        _ => {}
    }
}

/// One element of a bulk (or surface) reduction: `old` (the destination's) combined with `v`, as
/// `atom` would; `op` indexes [`BULK_OPS`], `ty` is a builtin type code.
pub(crate) fn combine(op: usize, ty: u32, old: u64, v: u64) -> u64 {
    let wide = matches!(ty, U64 | S64);
    let op = BULK_OPS[op];
    if matches!(ty, F16 | BF16 | F32 | F64) {
        let f = match op {
            ".add" => ADD,
            ".min" => MIN,
            _ => MAX,
        };
        // Subnormal inputs and results are kept: the manual says cp.reduce.async.bulk's f32 add
        // flushes them, but an H200 (driver 580.159.04) keeps them (tests/ptx-host/bulk_reduce.ptx).
        return crate::emu::builtins::ptxjit_fp(code(f, ty, ty, RN, 0), old, v, 0);
    }
    let (o32, v32) = (old as u32, v as u32);
    match op {
        ".and" => old & v,
        ".or" => old | v,
        ".xor" => old ^ v,
        ".add" if wide => old.wrapping_add(v),
        ".add" => o32.wrapping_add(v32) as u64,
        ".inc" => (if o32 >= v32 { 0 } else { o32 + 1 }) as u64,
        ".dec" => (if o32 == 0 || o32 > v32 { v32 } else { o32 - 1 }) as u64,
        _ => {
            let less = match (ty, wide) {
                (S64, _) => (v as i64) < (old as i64),
                (_, true) => v < old,
                (S32, _) => (v32 as i32) < (o32 as i32),
                _ => v32 < o32,
            };
            if less == (op == ".min") {
                v
            } else {
                old
            }
        }
    }
}
