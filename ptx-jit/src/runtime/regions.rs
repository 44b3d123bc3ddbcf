//! CTAs of kernels cut into regions (`Exec::Regions`, see ptx-llvm's `lower/regions.rs`). One call of the
//! block entry runs one region for the CTA's threads; each thread stops at a barrier or warp collective
//! (or finishes) and records where in `states`. Releases follow the same rules as the fiber scheduler:
//! a warp whose live lanes all wait at warp collectives, else the whole CTA when every live thread
//! waits at a barrier; exited threads count as arrived. When every thread stops at the same place, the
//! next region runs for all of them in one unmasked call: the common case, with no per-thread state
//! inspected by the runtime at all.

use crate::jit::host::HostKernel;
use crate::runtime::fibers::{shfl_source, vote_result};
use crate::runtime::{Launch, LaunchError, SharedWindow};
use ptx_llvm::collective::Kind;
use ptx_llvm::regions::{DONE, WAIT, WARP};
use rayon::prelude::*;
use std::ffi::c_void;

/// The record `env.sync` points to: the part generated code reads and writes (`ptx_llvm::abi::Steps`),
/// then the runtime's own.
#[repr(C)]
struct Steps {
    jit: ptx_llvm::abi::Steps,
    exchange: *mut Exchange,
}

/// Values exchanged by warp collectives: each thread publishes into half `parity[its warp]` of
/// `slots`; a release flips the warp's parity, so the lanes read what was published while later
/// collectives write to the other half.
struct Exchange {
    /// Two halves of one slot per thread, rounded up to whole warps.
    slots: Vec<u32>,
    /// Each thread's `b` operand (the shuffle's lane), then each thread's `c` (its clamp), both
    /// rounded up to whole warps as `slots` halves are.
    args: Vec<u32>,
    parity: Vec<u32>,
    /// Each warp's lanes that had not exited when it was last released.
    live: Vec<u32>,
}

unsafe extern "C" fn collective(sync: *mut c_void, kind: u32, _: u32, _: u32, _: u32, _: u32) -> u64 {
    // SAFETY: `sync` is the `Steps` of the CTA running this call, and `cur` the calling thread.
    let steps = unsafe { &*(sync as *const Steps) };
    let x = unsafe { &mut *steps.exchange };
    let t = steps.jit.cur as usize;
    let (w, lane) = (t / 32, t % 32);
    let half = x.slots.len() / 2;
    // The half published into before the warp's last release.
    let read = (x.parity[w] as usize ^ 1) * half + w * 32;
    let kind = Kind::from_code(kind);
    if let Some(mode) = kind.and_then(Kind::shfl_mode) {
        let (b, c) = (x.args[t], x.args[half + t]);
        let (src, valid) = shfl_source(mode, lane as u32, b, c);
        return x.slots[read + src] as u64 | (valid as u64) << 32;
    }
    if let Some(mode) = kind.and_then(Kind::vote_mode) {
        let live = x.live[w];
        let ballot = (0..32)
            .filter(|&i| live >> i & 1 == 1 && x.slots[read + i] & 1 == 1)
            .fold(0u32, |m, i| m | 1 << i);
        return vote_result(mode, ballot, live);
    }
    0
}

/// A worker's buffers, reused for every CTA it runs.
struct Buffers {
    states: Vec<u32>,
    /// 64-byte lines, so frame slots keep the alignment the JIT'd code assumes.
    frames: Vec<[u64; 8]>,
    exchange: Exchange,
    shared: SharedWindow,
}

impl Buffers {
    fn new(n: usize, frame_bytes: u64, shared: SharedWindow) -> Buffers {
        let warps = n.div_ceil(32);
        Buffers {
            states: vec![0; n],
            frames: vec![[0; 8]; (n as u64 * frame_bytes).div_ceil(64) as usize],
            exchange: Exchange {
                slots: vec![0; 2 * warps * 32],
                args: vec![0; 2 * warps * 32],
                parity: vec![0; warps],
                live: vec![0; warps],
            },
            shared,
        }
    }
}

fn full_mask(w: usize, n: usize) -> u32 {
    let lanes = (n - w * 32).min(32);
    if lanes == 32 {
        u32::MAX
    } else {
        (1u32 << lanes) - 1
    }
}

fn run_cta(
    l: &Launch<'_>,
    entry: ptx_llvm::abi::BlockFn,
    cta: u64,
    buf: &mut Buffers,
    fault: *const c_void,
) -> Result<(), LaunchError> {
    let n = buf.states.len();
    let warps = n.div_ceil(32);
    buf.exchange.parity.iter_mut().for_each(|p| *p = 0);
    let mut steps = Steps {
        jit: ptx_llvm::abi::Steps {
            states: buf.states.as_mut_ptr(),
            frames: buf.frames.as_mut_ptr() as *mut u8,
            state: 0,
            masked: 0,
            or: 0,
            and: 0,
            cur: 0,
            slots: buf.exchange.slots.as_mut_ptr(),
            args: buf.exchange.args.as_mut_ptr(),
            parity: buf.exchange.parity.as_mut_ptr(),
        },
        exchange: &mut buf.exchange,
    };
    let mut env = crate::runtime::env_for_cta(l, cta, buf.shared.words(), collective);
    env.sync = &mut steps as *mut Steps as *mut c_void;
    env.fault = fault;
    // SAFETY: `fault` is the launch's record, alive until the launch returns.
    let cell = unsafe { &*(fault as *const crate::runtime::checked::FaultCell) };
    // Runs one region; false if the launch has ended (a fault here or elsewhere): the CTA stops.
    // This whole function runs on a guarded kernel stack (`launch`), so a trap leaves it from inside.
    let call = |steps: &mut Steps, state: u32, masked: bool| {
        steps.jit.state = state;
        steps.jit.masked = masked as u32;
        // SAFETY: the JIT'd entry of a Regions kernel, built for this Env and Steps layout; every buffer
        // it reaches lives in `buf` for the whole CTA.
        unsafe { entry(&env, env.params) };
        !cell.faulted()
    };
    let mut uniform = Some(0);
    loop {
        if let Some(s) = uniform {
            if !call(&mut steps, s, false) {
                return Ok(());
            }
            if steps.jit.or == steps.jit.and {
                let v = steps.jit.or;
                if v == DONE {
                    return Ok(());
                }
                if v & WARP != 0 {
                    let x = unsafe { &mut *steps.exchange };
                    for w in 0..warps {
                        x.parity[w] ^= 1;
                        x.live[w] = full_mask(w, n);
                    }
                }
                uniform = Some(v & !WAIT);
                continue;
            }
        }
        // Threads stopped at different places: run every runnable group until all wait or are done.
        let states = unsafe { std::slice::from_raw_parts_mut(steps.jit.states, n) };
        // One state at a time: a masked call runs every thread in it, and they all stop (or finish).
        while let Some(s) = states.iter().copied().find(|&s| s != DONE && s & WAIT == 0) {
            if !call(&mut steps, s, true) {
                return Ok(());
            }
        }
        if states.iter().all(|&s| s == DONE) {
            return Ok(());
        }
        let waits_warp = |s: u32| s != DONE && s & WAIT != 0 && s & WARP != 0;
        let x = unsafe { &mut *steps.exchange };
        let mut released = false;
        for w in 0..warps {
            let lanes = &mut states[w * 32..((w + 1) * 32).min(n)];
            if lanes.iter().all(|&s| s == DONE || waits_warp(s)) && lanes.iter().any(|&s| s != DONE) {
                x.parity[w] ^= 1;
                x.live[w] = lanes
                    .iter()
                    .enumerate()
                    .filter(|(_, &s)| s != DONE)
                    .fold(0, |m, (i, _)| m | 1 << i);
                lanes.iter_mut().filter(|s| **s != DONE).for_each(|s| *s &= !WAIT);
                released = true;
            }
        }
        if !released {
            if states.iter().all(|&s| s == DONE || (s & WAIT != 0 && s & WARP == 0)) {
                states.iter_mut().filter(|s| **s != DONE).for_each(|s| *s &= !WAIT);
            } else {
                return Err(LaunchError::Failed(
                    "threads wait at a barrier that the rest of the CTA never reaches (the kernel would hang)".into(),
                ));
            }
        }
        let first = states[0];
        uniform = (first != DONE && states.iter().all(|&s| s == first)).then_some(first);
    }
}

/// Frames of one CTA at most (per worker thread): registers and `.local` arrays of every thread.
const MAX_FRAMES_BYTES: u64 = 1 << 30;

pub fn launch(
    k: &HostKernel,
    l: &Launch<'_>,
    entry: ptx_llvm::abi::BlockFn,
    frame_bytes: u64,
    fault: *const c_void,
) -> Result<(), LaunchError> {
    let n = l.block.iter().map(|&b| b as usize).product::<usize>();
    if n as u64 * frame_bytes > MAX_FRAMES_BYTES {
        return Err(LaunchError::OutOfResources(format!(
            "{n} threads with {frame_bytes} bytes of registers and local memory each"
        )));
    }
    let total = l.grid.iter().map(|&g| g as u64).product::<u64>();
    let fault_addr = fault as usize;
    (0..total).into_par_iter().try_for_each_init(
        || Buffers::new(n, frame_bytes, SharedWindow::for_launch(k, l)),
        |buf, cta| {
            // SAFETY: `fault` is the launch's fault record, alive until the launch returns.
            let cell = unsafe { &*(fault_addr as *const crate::runtime::checked::FaultCell) };
            if cell.faulted() {
                return Ok(()); // the launch has failed: no further CTAs start
            }
            // The CTA, its region scheduler included, runs on a guarded stack: one switch per CTA.
            let mut result = Ok(());
            let trapped = unsafe {
                crate::runtime::trap::run(cell, &mut || {
                    result = run_cta(l, entry, cta, buf, fault_addr as *const c_void)
                })
            };
            cell.cta_done();
            crate::runtime::texture::release_cached();
            if let Err(t) = trapped {
                cell.record(crate::runtime::checked::Fault {
                    ctaid: Some(crate::runtime::cta_index(cta, l.grid)),
                    ..crate::runtime::checked::Fault::of(crate::runtime::checked::FaultKind::Signal(t))
                });
            }
            if result.is_err() {
                cell.stop(); // the other CTAs end too (see `FaultCell::stop`)
            }
            result
        },
    )
}
