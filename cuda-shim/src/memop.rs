//! Stream memory operations: `cuStreamWaitValue32/64`, `cuStreamWriteValue32/64` and
//! `cuStreamBatchMemOp`, which order a stream against a flag in memory that the host, a kernel or
//! another stream sets (NCCL-style signalling).
//!
//! Each call queues one item on the stream. A wait polls the word, backing off from 10 µs to a
//! millisecond, until its condition holds; like a GPU stream it waits forever if nothing sets the
//! word, except that destroying the context ends it (the stream's work then fails). Writes, atomic
//! reductions and barriers are the host's atomics and fences. The address must lie in device
//! memory or registered host memory and be aligned to the operation's width. Captured into a graph,
//! the operations become one batch-memory-operation node, as `cuGraphAddBatchMemOpNode` makes
//! (`crate::graph`).

use crate::errors::*;
use crate::stream::{resolve, run_async};
use crate::{init_check, Handle};
use std::ffi::c_uint;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// `CUstreamWaitValue_flags`: the condition in the low bits, and a flush of remote writes (nothing
/// to flush on one machine).
const WAIT_FLUSH: c_uint = 1 << 30;
/// `CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER`: taken by the CUDA 8 and 9 names only; cuda.h says the
/// v2 API does not support it, and an H200 answers `CUDA_ERROR_INVALID_VALUE`.
const WRITE_NO_BARRIER: c_uint = 1;
/// `cuStreamBatchMemOp` takes at most this many operations.
const MAX_BATCH: c_uint = 256;

/// `CUstreamBatchMemOpType`.
mod kind {
    pub const WAIT_32: u32 = 1;
    pub const WRITE_32: u32 = 2;
    pub const FLUSH_REMOTE_WRITES: u32 = 3;
    pub const WAIT_64: u32 = 4;
    pub const WRITE_64: u32 = 5;
    pub const BARRIER: u32 = 6;
    pub const ATOMIC_REDUCTION: u32 = 8;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cond {
    /// `(int)(*addr - value) >= 0`: at or past `value`, wrapping.
    Geq,
    Eq,
    /// `(*addr & value) != 0`.
    And,
    /// `~(*addr | value) != 0`.
    Nor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reduce {
    Add,
    And,
    Or,
}

/// One memory operation, decoded and checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Wait {
        addr: u64,
        value: u64,
        wide: bool,
        cond: Cond,
    },
    Write {
        addr: u64,
        value: u64,
        wide: bool,
        barrier: bool,
    },
    Reduce {
        addr: u64,
        value: u64,
        wide: bool,
        op: Reduce,
    },
    Barrier,
}

/// Checks that `addr` holds a word of the width in memory the device can reach.
fn word_at(addr: u64, wide: bool) -> Result<(), CUresult> {
    let bytes = if wide { 8 } else { 4 };
    if addr == 0 || !addr.is_multiple_of(bytes) {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    crate::state::check_range(addr, bytes)
}

fn wait(addr: u64, value: u64, flags: c_uint, wide: bool) -> Result<Op, CUresult> {
    let cond = match flags & !WAIT_FLUSH {
        0 => Cond::Geq,
        1 => Cond::Eq,
        2 => Cond::And,
        3 => Cond::Nor,
        _ => return Err(CUDA_ERROR_INVALID_VALUE),
    };
    word_at(addr, wide)?;
    Ok(Op::Wait {
        addr,
        value,
        wide,
        cond,
    })
}

/// API generations: the CUDA 8 and 9 names (v1) and those of CUDA 11.7 and later (v2).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    V1,
    V2,
}

/// Whether a write with `flags` keeps its memory barrier, or why `api` refuses the flags.
fn write_barrier(flags: c_uint, api: Api) -> Result<bool, CUresult> {
    let allowed = if api == Api::V1 { WRITE_NO_BARRIER } else { 0 };
    if flags & !allowed != 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    Ok(flags & WRITE_NO_BARRIER == 0)
}

fn write(addr: u64, value: u64, flags: c_uint, wide: bool, api: Api) -> Result<Op, CUresult> {
    let barrier = write_barrier(flags, api)?;
    word_at(addr, wide)?;
    Ok(Op::Write {
        addr,
        value,
        wide,
        barrier,
    })
}

/// One `CUstreamBatchMemOpParams` (a 48-byte union whose first word is the operation), as words.
fn batch_op(p: &[u64; 6], api: Api) -> Result<Op, CUresult> {
    let (op, hi) = (p[0] as u32, (p[0] >> 32) as u32);
    match op {
        // waitValue / writeValue: operation, address, value (32 or 64 bits), flags, alias.
        kind::WAIT_32 => wait(p[1], p[2] & 0xffff_ffff, p[3] as c_uint, false),
        kind::WAIT_64 => wait(p[1], p[2], p[3] as c_uint, true),
        kind::WRITE_32 => write(p[1], p[2] & 0xffff_ffff, p[3] as c_uint, false, api),
        kind::WRITE_64 => write(p[1], p[2], p[3] as c_uint, true, api),
        // flushRemoteWrites / memoryBarrier: operation, flags (0 / SYS or GPU scope).
        kind::FLUSH_REMOTE_WRITES if hi == 0 => Ok(Op::Barrier),
        kind::BARRIER if hi <= 1 => Ok(Op::Barrier),
        // atomicReduction: operation, flags (0), reduction, data type, address, value, alias.
        kind::ATOMIC_REDUCTION if hi == 0 => {
            let op = match p[1] as u32 {
                0 => Reduce::Add,
                5 => Reduce::And,
                6 => Reduce::Or,
                _ => return Err(CUDA_ERROR_INVALID_VALUE),
            };
            // CU_ATOMIC_CAPABILITY_UNSIGNED | REDUCTION | SCALAR_32 or SCALAR_64.
            let wide = match (p[1] >> 32) as u32 {
                0b01110 => false,
                0b10110 => true,
                _ => return Err(CUDA_ERROR_INVALID_VALUE),
            };
            word_at(p[2], wide)?;
            Ok(Op::Reduce {
                addr: p[2],
                value: if wide { p[3] } else { p[3] & 0xffff_ffff },
                wide,
                op,
            })
        }
        _ => Err(CUDA_ERROR_INVALID_VALUE),
    }
}

fn holds(cond: Cond, now: u64, value: u64, wide: bool) -> bool {
    let mask = if wide { u64::MAX } else { 0xffff_ffff };
    match cond {
        Cond::Geq if wide => now.wrapping_sub(value) as i64 >= 0,
        Cond::Geq => (now as u32).wrapping_sub(value as u32) as i32 >= 0,
        Cond::Eq => now == value,
        Cond::And => now & value != 0,
        Cond::Nor => !(now | value) & mask != 0,
    }
}

/// The word at `addr` (checked by `run` just before).
fn load(addr: u64, wide: bool) -> u64 {
    // SAFETY: an aligned word of live device or registered host memory, touched only atomically here.
    unsafe {
        if wide {
            AtomicU64::from_ptr(addr as *mut u64).load(Ordering::Acquire)
        } else {
            AtomicU32::from_ptr(addr as *mut u32).load(Ordering::Acquire) as u64
        }
    }
}

fn run(op: Op, cancel: &ptx_jit::Cancel) -> Result<(), CUresult> {
    // Checked again now: a graph's operation, or one on another context's memory, may outlive the
    // memory it was given.
    match op {
        Op::Wait { addr, wide, .. } | Op::Write { addr, wide, .. } | Op::Reduce { addr, wide, .. } => {
            word_at(addr, wide).map_err(|_| CUDA_ERROR_ILLEGAL_ADDRESS)?
        }
        Op::Barrier => {}
    }
    match op {
        Op::Wait {
            addr,
            value,
            wide,
            cond,
        } => {
            let mut nap = Duration::from_micros(10);
            while !holds(cond, load(addr, wide), value, wide) {
                if cancel.due() {
                    return Err(CUDA_ERROR_LAUNCH_FAILED);
                }
                std::thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_millis(1));
            }
        }
        Op::Write {
            addr,
            value,
            wide,
            barrier,
        } => {
            if barrier {
                fence(Ordering::SeqCst);
            }
            // SAFETY: as in `load`.
            unsafe {
                if wide {
                    AtomicU64::from_ptr(addr as *mut u64).store(value, Ordering::Release)
                } else {
                    AtomicU32::from_ptr(addr as *mut u32).store(value as u32, Ordering::Release)
                }
            }
        }
        Op::Reduce { addr, value, wide, op } => {
            // SAFETY: as in `load`.
            unsafe {
                if wide {
                    let a = AtomicU64::from_ptr(addr as *mut u64);
                    match op {
                        Reduce::Add => a.fetch_add(value, Ordering::SeqCst),
                        Reduce::And => a.fetch_and(value, Ordering::SeqCst),
                        Reduce::Or => a.fetch_or(value, Ordering::SeqCst),
                    };
                } else {
                    let (a, v) = (AtomicU32::from_ptr(addr as *mut u32), value as u32);
                    match op {
                        Reduce::Add => a.fetch_add(v, Ordering::SeqCst),
                        Reduce::And => a.fetch_and(v, Ordering::SeqCst),
                        Reduce::Or => a.fetch_or(v, Ordering::SeqCst),
                    };
                }
            }
        }
        Op::Barrier => fence(Ordering::SeqCst),
    }
    Ok(())
}

/// Runs `ops` in order; a wait ends when `cancel` is due.
fn job(ops: Vec<Op>, cancel: Arc<ptx_jit::Cancel>) -> impl Fn() -> Result<(), CUresult> + Send + Sync + 'static {
    move || ops.iter().try_for_each(|&op| run(op, &cancel))
}

/// Queues `ops` on stream `s`, to run in order.
fn queue(s: Handle, ops: Vec<Op>) -> Result<(), CUresult> {
    let cancel = resolve(s)?.0.cancel.clone();
    run_async(s, Some(crate::graph::NodeType::BatchMemOp), job(ops, cancel))
}

/// A batch's operations as given (`CUstreamBatchMemOpParams`, as words), and decoded.
pub(crate) unsafe fn batch_ops(
    count: c_uint,
    params: *const [u64; 6],
    flags: c_uint,
    api: Api,
) -> Result<(Vec<[u64; 6]>, Vec<Op>), CUresult> {
    if count == 0 || count > MAX_BATCH || params.is_null() || flags != 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let words = std::slice::from_raw_parts(params, count as usize).to_vec();
    let ops = words.iter().map(|w| batch_op(w, api)).collect::<Result<_, _>>()?;
    Ok((words, ops))
}

/// A graph node's work for a batch: its waits end when context `ctx` is destroyed.
pub(crate) fn batch_job(ctx: &crate::state::Context, ops: Vec<Op>) -> crate::graph::NodeJob {
    Arc::new(job(ops, ctx.cancel.clone()))
}

unsafe fn batch(s: Handle, count: c_uint, params: *const [u64; 6], flags: c_uint, api: Api) -> Result<(), CUresult> {
    init_check()?;
    queue(s, batch_ops(count, params, flags, api)?.1)
}

fn write_value(s: Handle, addr: u64, value: u64, flags: c_uint, wide: bool, api: Api) -> Result<(), CUresult> {
    init_check()?;
    queue(s, vec![write(addr, value, flags, wide, api)?])
}

api! {
    exports = memop_exports;
    fn cuStreamWaitValue32_v2[cuStreamWaitValue32_v2_ptsz](s: Handle, addr: u64, value: u32, flags: c_uint) {
        init_check()?;
        queue(s, vec![wait(addr, value as u64, flags, false)?])
    }
    fn cuStreamWaitValue64_v2[cuStreamWaitValue64_v2_ptsz](s: Handle, addr: u64, value: u64, flags: c_uint) {
        init_check()?;
        queue(s, vec![wait(addr, value, flags, true)?])
    }
    fn cuStreamWriteValue32_v2[cuStreamWriteValue32_v2_ptsz](s: Handle, addr: u64, value: u32, flags: c_uint) {
        write_value(s, addr, value as u64, flags, false, Api::V2)
    }
    fn cuStreamWriteValue64_v2[cuStreamWriteValue64_v2_ptsz](s: Handle, addr: u64, value: u64, flags: c_uint) {
        write_value(s, addr, value, flags, true, Api::V2)
    }
    fn cuStreamBatchMemOp_v2[cuStreamBatchMemOp_v2_ptsz](s: Handle, count: c_uint, params: *const [u64; 6], flags: c_uint) {
        batch(s, count, params, flags, Api::V2)
    }
    // The names of CUDA 8 and 9 (the "v1" operations) have the same ABI and meaning, and their writes
    // may skip the memory barrier.
    fn cuStreamWaitValue32[cuStreamWaitValue32_ptsz](s: Handle, addr: u64, value: u32, flags: c_uint) {
        crate::status(cuStreamWaitValue32_v2(s, addr, value, flags))
    }
    fn cuStreamWaitValue64[cuStreamWaitValue64_ptsz](s: Handle, addr: u64, value: u64, flags: c_uint) {
        crate::status(cuStreamWaitValue64_v2(s, addr, value, flags))
    }
    fn cuStreamWriteValue32[cuStreamWriteValue32_ptsz](s: Handle, addr: u64, value: u32, flags: c_uint) {
        write_value(s, addr, value as u64, flags, false, Api::V1)
    }
    fn cuStreamWriteValue64[cuStreamWriteValue64_ptsz](s: Handle, addr: u64, value: u64, flags: c_uint) {
        write_value(s, addr, value, flags, true, Api::V1)
    }
    fn cuStreamBatchMemOp[cuStreamBatchMemOp_ptsz](s: Handle, count: c_uint, params: *const [u64; 6], flags: c_uint) {
        batch(s, count, params, flags, Api::V1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_follow_the_manual() {
        // At or past, wrapping: 1 is past 0xffff_fffe in 32 bits.
        assert!(holds(Cond::Geq, 1, 0xffff_fffe, false));
        assert!(!holds(Cond::Geq, 5, 6, false));
        assert!(holds(Cond::Geq, 6, 6, true));
        assert!(!holds(Cond::Geq, 1, 0xffff_fffe, true));
        assert!(holds(Cond::Eq, 7, 7, false) && !holds(Cond::Eq, 7, 8, false));
        assert!(holds(Cond::And, 0b100, 0b110, false) && !holds(Cond::And, 0b001, 0b110, false));
        // NOR in 32 bits: bits above the word do not count.
        assert!(!holds(Cond::Nor, 0xffff_0000, 0x0000_ffff, false));
        assert!(holds(Cond::Nor, 0xffff_0000, 0x0000_fff0, false));
    }

    #[test]
    fn batch_entries_decode_as_cuda_h_lays_them_out() {
        // A 64-bit atomic add: operation 8, flags 0, reduction ADD (0), data type unsigned 64.
        let p = [8, (0b10110u64 << 32), 0x1000, 5, 0, 0];
        assert!(
            matches!(batch_op(&p, Api::V2), Err(CUDA_ERROR_INVALID_VALUE)),
            "no memory at 0x1000"
        );
        assert_eq!(batch_op(&[6, 0, 0, 0, 0, 0], Api::V2), Ok(Op::Barrier));
        // A write without its memory barrier: through the CUDA 8 names only.
        assert_eq!(write_barrier(WRITE_NO_BARRIER, Api::V1), Ok(false));
        assert_eq!(write_barrier(WRITE_NO_BARRIER, Api::V2), Err(CUDA_ERROR_INVALID_VALUE));
        assert_eq!(write_barrier(0, Api::V2), Ok(true));
        assert_eq!(write_barrier(2, Api::V1), Err(CUDA_ERROR_INVALID_VALUE));
        assert_eq!(
            batch_op(&[6 | (2 << 32), 0, 0, 0, 0, 0], Api::V2),
            Err(CUDA_ERROR_INVALID_VALUE)
        );
        assert_eq!(batch_op(&[7, 0, 0, 0, 0, 0], Api::V2), Err(CUDA_ERROR_INVALID_VALUE));
    }
}
