//! CTAs whose kernels synchronise threads: every thread of the CTA runs on its own fiber, which
//! suspends at `bar.sync` and at warp collectives (`shfl`, `vote`, `bar.warp.sync`). The scheduler
//! resumes runnable fibers until each waits or finishes; then it releases a warp whose live lanes all
//! wait at a warp collective, or else the whole CTA when every live thread waits at a barrier. Threads
//! that have exited count as arrived (as on sm_70+).

use crate::host::HostKernel;
use crate::runtime::{shared_words, Env, Launch, LaunchError};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use ptx_llvm::collective::{BAR_SYNC, SHFL, VOTE, WARP_SYNC};
use rayon::prelude::*;
use std::ffi::c_void;

/// Fiber stacks: JIT'd thread bodies keep registers in stack slots and recurse only through `call`.
const STACK_BYTES: usize = 256 * 1024;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Wait {
    Bar,
    Warp,
}

type Fiber = Coroutine<(), Wait, (), DefaultStack>;

/// What a fiber's `collective` calls need: its yielder, lane, and warp's exchange slots.
struct Lane {
    yielder: *const Yielder<(), Wait>,
    lane: u32,
    warp: *mut Warp,
}

/// Values exchanged by one warp, and which lanes are still running.
struct Warp {
    slots: [u32; 32],
    live: u32,
}

unsafe extern "C" fn collective(sync: *mut c_void, kind: u32, a: u32, b: u32, c: u32) -> u64 {
    // SAFETY: `sync` is the `Lane` of the fiber running this call; its warp outlives the CTA.
    let me = unsafe { &*(sync as *const Lane) };
    let y = unsafe { &*me.yielder };
    let warp = me.warp;
    let lane = me.lane;
    match kind {
        BAR_SYNC => {
            y.suspend(Wait::Bar);
            0
        }
        WARP_SYNC => {
            y.suspend(Wait::Warp);
            0
        }
        k if (SHFL..SHFL + 4).contains(&k) => {
            // Publish, wait for the warp, read the source lane, then wait again so no lane overwrites
            // its slot before every lane has read.
            unsafe { (*warp).slots[lane as usize] = a };
            y.suspend(Wait::Warp);
            let (src, valid) = shfl_source(k - SHFL, lane, b, c);
            let v = unsafe { (*warp).slots[src] };
            y.suspend(Wait::Warp);
            v as u64 | (valid as u64) << 32
        }
        k if (VOTE..VOTE + 4).contains(&k) => {
            unsafe { (*warp).slots[lane as usize] = a & 1 };
            y.suspend(Wait::Warp);
            let live = unsafe { (*warp).live };
            let ballot = (0..32)
                .filter(|&i| live >> i & 1 == 1 && unsafe { (*warp).slots[i] } == 1)
                .fold(0u32, |m, i| m | 1 << i);
            y.suspend(Wait::Warp);
            vote_result(k - VOTE, ballot, live)
        }
        _ => 0,
    }
}

/// The lane `shfl` mode `mode` (0..4: up, down, bfly, idx) reads for `lane`, and whether it is in range.
pub(crate) fn shfl_source(mode: u32, lane: u32, b: u32, c: u32) -> (usize, bool) {
    let (bval, cval, seg) = ((b & 31) as i32, (c & 31) as i32, ((c >> 8) & 31) as i32);
    let l = lane as i32;
    let max_lane = (l & seg) | (cval & !seg);
    let min_lane = l & seg;
    let (j, valid) = match mode {
        0 => (l - bval, l - bval >= max_lane),
        1 => (l + bval, l + bval <= max_lane),
        2 => (l ^ bval, (l ^ bval) <= max_lane),
        _ => {
            let j = min_lane | (bval & !seg);
            (j, j <= max_lane)
        }
    };
    ((if valid { j } else { l }) as usize & 31, valid)
}

/// `vote` mode `mode` (0..4: all, any, uni, ballot) over a warp's `ballot` of its `live` lanes.
pub(crate) fn vote_result(mode: u32, ballot: u32, live: u32) -> u64 {
    match mode {
        0 => (ballot == live) as u64,
        1 => (ballot != 0) as u64,
        2 => (ballot == live || ballot == 0) as u64,
        _ => ballot as u64,
    }
}

thread_local! {
    /// Stacks kept between CTAs on this worker, so a launch does not map and unmap them per CTA.
    static STACKS: std::cell::RefCell<Vec<DefaultStack>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Runnable,
    Waiting(Wait),
    Done,
}

fn run_cta(k: &HostKernel, l: &Launch<'_>, cta: u64, shared: &mut [u64]) -> Result<(), LaunchError> {
    let [bx, by, bz] = l.block;
    let n = (bx * by * bz) as usize;
    let base = Env::for_cta(l, cta, shared, collective);
    let mut warps: Vec<Warp> = (0..n.div_ceil(32))
        .map(|w| Warp {
            slots: [0; 32],
            live: if (w + 1) * 32 <= n {
                u32::MAX
            } else {
                (1u32 << (n % 32)) - 1
            },
        })
        .collect();
    // Fibers hold raw pointers into `warps` and `lanes`; neither moves until the fibers are done.
    let warps_ptr = warps.as_mut_ptr();
    let mut lanes: Vec<Lane> = (0..n)
        .map(|i| Lane {
            yielder: std::ptr::null(),
            lane: (i % 32) as u32,
            warp: unsafe { warps_ptr.add(i / 32) },
        })
        .collect();
    // Raw pointers are not 'static-safe for the type system; the fibers never outlive this call.
    let (base_addr, entry) = (&base as *const Env as usize, k.entry()?);
    let mut fibers: Vec<Fiber> = Vec::with_capacity(n);
    for (i, lane) in lanes.iter_mut().enumerate() {
        let (x, y, z) = (i as u32 % bx, i as u32 / bx % by, i as u32 / (bx * by));
        let stack = match STACKS.with(|s| s.borrow_mut().pop()) {
            Some(s) => s,
            None => {
                DefaultStack::new(STACK_BYTES).map_err(|e| LaunchError::OutOfResources(format!("fiber stack: {e}")))?
            }
        };
        let lane_addr = lane as *mut Lane as usize;
        fibers.push(Coroutine::with_stack(stack, move |yielder: &Yielder<(), Wait>, ()| {
            // SAFETY: `base` and the lanes live until every fiber has finished or been leaked.
            let lane = unsafe { &mut *(lane_addr as *mut Lane) };
            lane.yielder = yielder;
            let mut env = unsafe { *(base_addr as *const Env) };
            env.tid = [x, y, z];
            env.sync = lane as *mut Lane as *mut c_void;
            unsafe { entry(&env, env.params) };
        }));
    }
    let mut state = vec![State::Runnable; n];
    loop {
        for i in 0..n {
            if state[i] == State::Runnable {
                state[i] = match fibers[i].resume(()) {
                    CoroutineResult::Yield(w) => State::Waiting(w),
                    CoroutineResult::Return(()) => {
                        unsafe { (*warps_ptr.add(i / 32)).live &= !(1 << (i % 32)) };
                        State::Done
                    }
                };
            }
        }
        if state.iter().all(|s| *s == State::Done) {
            break;
        }
        // Release every warp whose live lanes all wait at a warp collective.
        let mut released = false;
        for w in 0..warps.len() {
            let lanes = w * 32..((w + 1) * 32).min(n);
            let waiting = lanes
                .clone()
                .all(|i| matches!(state[i], State::Waiting(Wait::Warp) | State::Done));
            if waiting && lanes.clone().any(|i| state[i] != State::Done) {
                lanes.for_each(|i| {
                    if state[i] != State::Done {
                        state[i] = State::Runnable
                    }
                });
                released = true;
            }
        }
        if !released {
            if state
                .iter()
                .all(|s| matches!(s, State::Waiting(Wait::Bar) | State::Done))
            {
                state
                    .iter_mut()
                    .filter(|s| **s != State::Done)
                    .for_each(|s| *s = State::Runnable);
            } else {
                // Threads wait at different kinds of synchronisation that can never all be met: the
                // kernel would hang on a GPU. The fibers cannot be unwound through JIT frames, so they
                // (and their stacks) are leaked rather than dropped.
                std::mem::forget(fibers);
                std::mem::forget(lanes);
                std::mem::forget(warps);
                return Err(LaunchError::Failed(
                    "threads wait at a barrier that the rest of the CTA never reaches (the kernel would hang)".into(),
                ));
            }
        }
    }
    STACKS.with(|s| s.borrow_mut().extend(fibers.into_iter().map(Coroutine::into_stack)));
    Ok(())
}

pub fn launch(k: &HostKernel, l: &Launch<'_>) -> Result<(), LaunchError> {
    let words = shared_words(k, l);
    let total = l.grid.iter().map(|&g| g as u64).product::<u64>();
    (0..total)
        .into_par_iter()
        .try_for_each_init(|| vec![0u64; words], |shared, cta| run_cta(k, l, cta, shared))
}
