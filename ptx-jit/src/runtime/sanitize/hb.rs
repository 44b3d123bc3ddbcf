//! racecheck's ordering between threads of a CTA beyond barriers and warp synchronisation: the memory
//! model's release and acquire, as vector clocks.
//!
//! A thread's clock starts at 1 and advances at each of its releases; every access it makes carries
//! the clock it had ([`super::shadow::Acc::clock`]). A release leaves the releasing thread's whole
//! vector at the address it writes; a thread that acquires the value there takes the greatest of its
//! own vector and that one, element by element. An earlier access by thread `u` with clock `c` is
//! then ordered before the acquiring thread's later accesses exactly when that thread's entry for `u`
//! is at least `c`.
//!
//! Releases are `st.release`, `red.release` and `atom.release`/`.acq_rel`, and the manual's release
//! pattern: a fence, then (anywhere after it) a strong write (`.volatile`, `.relaxed`, atomic); every
//! strong write after a thread's first fence releases. Acquires are `ld.acquire` and
//! `atom.acquire`/`.acq_rel`, and the acquire pattern: a strong read, then a fence. A releasing
//! read-modify-write adds its vector to the one already at the address (it continues the release
//! sequence there); a releasing store replaces it. A warp-level synchronisation joins the vectors of
//! the warp's threads, so orders chain through it. The vectors are made at the CTA's first release:
//! kernels without one pay nothing but a flag per thread for their fences.
//! Where the model is approximated, it is towards ordering more (a later plain write to a released
//! address keeps the release; accesses between a fence and the write that releases count as before
//! it; a partial warp synchronisation joins the whole warp): that can hide a race, never invent one.

use rustc_hash::FxHashMap;

pub struct Hb {
    n: usize,
    /// Row `t`: what thread `t` knows of each thread's clock; its own entry is its clock.
    vc: Vec<u32>,
    /// Row `t`: the releases thread `t`'s strong reads have seen since its last fence, which its next
    /// fence acquires.
    seen: Vec<u32>,
    /// The vector each address's releases left there.
    released: FxHashMap<u64, Box<[u32]>>,
}

impl Hb {
    /// The clocks of a CTA of `n` threads, before any of them has synchronised.
    pub fn new(n: usize) -> Hb {
        let mut vc = vec![0; n * n];
        for t in 0..n {
            vc[t * n + t] = 1;
        }
        Hb {
            n,
            vc,
            seen: vec![0; n * n],
            released: FxHashMap::default(),
        }
    }

    /// Thread `t`'s clock.
    pub fn clock(&self, t: u32) -> u32 {
        self.vc[t as usize * (self.n + 1)]
    }

    /// Whether an access of thread `u` made at clock `c` is ordered before what thread `t` does now.
    pub fn knows(&self, t: u32, u: u32, c: u32) -> bool {
        self.vc.get(t as usize * self.n + u as usize).is_some_and(|&k| k >= c)
    }

    /// Thread `t` read `addr` with a strong read: an acquire now (`ld.acquire`), or at its next fence.
    pub fn read(&mut self, t: u32, addr: u64, acquire: bool) {
        let Some(r) = self.released.get(&addr) else { return };
        let row = t as usize * self.n..(t as usize + 1) * self.n;
        let into = if acquire {
            &mut self.vc[row]
        } else {
            &mut self.seen[row]
        };
        join(into, r);
    }

    /// Thread `t` released at `addr` (a strong write that releases); `rmw` for a read-modify-write,
    /// which adds to the release sequence there instead of starting a new one.
    pub fn release(&mut self, t: u32, addr: u64, rmw: bool) {
        let t = t as usize;
        let row = &self.vc[t * self.n..(t + 1) * self.n];
        match self.released.get_mut(&addr) {
            Some(old) if rmw => join(old, row),
            _ => _ = self.released.insert(addr, row.into()),
        }
        self.tick(t);
    }

    /// Thread `t` executed a fence: it acquires the releases its strong reads saw.
    pub fn fence(&mut self, t: u32) {
        let row = t as usize * self.n..(t as usize + 1) * self.n;
        join(&mut self.vc[row.clone()], &self.seen[row.clone()]);
        self.seen[row].fill(0);
    }

    /// The threads `warp` synchronised (a warp collective or `bar.warp.sync`): each knows what any of
    /// them knew, and what each does next comes after.
    pub fn warp(&mut self, warp: std::ops::Range<usize>) {
        let n = self.n;
        let warp = warp.start.min(n)..warp.end.min(n);
        let mut joined = vec![0u32; n];
        for t in warp.clone() {
            join(&mut joined, &self.vc[t * n..(t + 1) * n]);
        }
        for t in warp {
            self.vc[t * n..(t + 1) * n].copy_from_slice(&joined);
            self.tick(t);
        }
    }

    /// Thread `t`'s clock moves on: what it does from here is after what it has published.
    fn tick(&mut self, t: usize) {
        // Saturating: a thread past 2^32 - 1 steps orders everything it does after them as before
        // them, which can hide a race but never invents one.
        let own = &mut self.vc[t * (self.n + 1)];
        *own = own.saturating_add(1);
    }
}

/// `into` knows what `from` knows too: the element-wise greatest of the two.
fn join(into: &mut [u32], from: &[u32]) {
    into.iter_mut().zip(from).for_each(|(x, &y)| *x = (*x).max(y));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_and_flag_orders_what_came_before_the_release() {
        let mut hb = Hb::new(4);
        // Thread 0 writes data at clock 1, fences and sets a flag with a relaxed store (which releases,
        // as it follows a fence).
        let data = hb.clock(0);
        hb.fence(0);
        hb.release(0, 0x100, false);
        let after = hb.clock(0);
        assert_eq!((data, after), (1, 2));
        // Thread 1 reads the flag (strong) but has not fenced yet: not ordered.
        hb.read(1, 0x100, false);
        assert!(!hb.knows(1, 0, data));
        hb.fence(1);
        assert!(hb.knows(1, 0, data));
        assert!(
            !hb.knows(1, 0, after),
            "what thread 0 did after its release stays unordered"
        );
        // Thread 2 never read the flag.
        hb.fence(2);
        assert!(!hb.knows(2, 0, data));
    }

    #[test]
    fn acquire_instructions_need_no_fence() {
        let mut hb = Hb::new(2);
        hb.release(0, 8, false);
        hb.read(1, 8, true);
        assert!(hb.knows(1, 0, 1));
    }

    #[test]
    fn orders_are_transitive() {
        let mut hb = Hb::new(3);
        hb.release(0, 1, false);
        hb.read(1, 1, true);
        hb.release(1, 2, false);
        hb.read(2, 2, true);
        assert!(hb.knows(2, 0, 1) && hb.knows(2, 1, 1));
    }

    #[test]
    fn read_modify_writes_continue_a_release_sequence() {
        // Threads 0 and 1 each publish data, then add to a counter with a releasing atomic; thread 2
        // reads the counter with an acquire and sees both.
        let mut hb = Hb::new(3);
        hb.release(0, 64, true);
        hb.release(1, 64, true);
        hb.read(2, 64, true);
        assert!(hb.knows(2, 0, 1) && hb.knows(2, 1, 1));
        // A plain releasing store starts a new sequence.
        hb.release(0, 64, false);
        hb.read(2, 64, true);
        assert!(hb.knows(2, 0, 2) && !hb.knows(2, 1, 2));
    }

    #[test]
    fn warp_synchronisation_chains_with_release() {
        // Lane 1 writes, its warp synchronises, lane 0 releases; thread 40 (another warp) acquires.
        let mut hb = Hb::new(64);
        let written = hb.clock(1);
        hb.warp(0..32);
        hb.release(0, 8, false);
        hb.read(40, 8, true);
        assert!(hb.knows(40, 1, written));
        assert!(!hb.knows(40, 1, hb.clock(1)), "lane 1's later accesses stay unordered");
    }
}
