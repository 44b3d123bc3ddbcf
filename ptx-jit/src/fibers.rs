//! CTAs whose kernels synchronise (`bar.sync`): every thread of the CTA runs on its own fiber. A
//! barrier suspends the fiber; the scheduler resumes every live fiber once per round, so a round ends
//! with all of them at the same barrier (threads that have exited count as arrived, as on sm_70+).

use crate::host::HostKernel;
use crate::runtime::{shared_words, Env, Launch, LaunchError};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use rayon::prelude::*;
use std::ffi::c_void;

/// Fiber stacks: JIT'd thread bodies keep registers in stack slots and recurse only through `call`.
const STACK_BYTES: usize = 256 * 1024;

type Fiber = Coroutine<(), (), (), DefaultStack>;

unsafe extern "C" fn suspend(sync: *mut c_void) {
    // SAFETY: `sync` is the Yielder of the fiber that is running this call.
    let y = unsafe { &*(sync as *const Yielder<(), ()>) };
    y.suspend(());
}

thread_local! {
    /// Stacks kept between CTAs on this worker, so a launch does not map and unmap them per CTA.
    static STACKS: std::cell::RefCell<Vec<DefaultStack>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn run_cta(k: &HostKernel, l: &Launch<'_>, cta: u64, shared: &mut [u64]) -> Result<(), LaunchError> {
    let [bx, by, bz] = l.block;
    let base = Env::for_cta(l, cta, shared, suspend);
    // Raw pointers are not 'static-safe for the type system; the fibers never outlive this call.
    let (base_addr, entry) = (&base as *const Env as usize, k.entry);
    let mut fibers: Vec<Fiber> = Vec::with_capacity((bx * by * bz) as usize);
    for z in 0..bz {
        for y in 0..by {
            for x in 0..bx {
                let stack = match STACKS.with(|s| s.borrow_mut().pop()) {
                    Some(s) => s,
                    None => DefaultStack::new(STACK_BYTES)
                        .map_err(|e| LaunchError::OutOfResources(format!("fiber stack: {e}")))?,
                };
                fibers.push(Coroutine::with_stack(stack, move |yielder: &Yielder<(), ()>, ()| {
                    // SAFETY: `base` lives until every fiber has finished (run_cta drives them all to completion).
                    let mut env = unsafe { *(base_addr as *const Env) };
                    env.tid = [x, y, z];
                    env.sync = yielder as *const Yielder<(), ()> as *mut c_void;
                    unsafe { entry(&env, env.params) };
                }));
            }
        }
    }
    let mut live: Vec<usize> = (0..fibers.len()).collect();
    while !live.is_empty() {
        live.retain(|&i| matches!(fibers[i].resume(()), CoroutineResult::Yield(())));
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
