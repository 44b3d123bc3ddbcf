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
//! pattern: a fence, then a strong write (`.volatile`, `.relaxed`, atomic). Acquires are `ld.acquire`
//! and `atom.acquire`/`.acq_rel`, and the acquire pattern: a strong read, then a fence. The vectors
//! are made at the CTA's first release, acquire or fence, so kernels without them pay nothing.
//! A later plain write to a released address does not take its release away: that could hide a race,
//! never invent one.

use rustc_hash::FxHashMap;

pub struct Hb {
    n: usize,
    /// Row `t`: what thread `t` knows of each thread's clock; its own entry is its clock.
    vc: Vec<u32>,
    /// Row `t`: the releases thread `t`'s strong reads have seen since its last fence, which its next
    /// fence acquires.
    seen: Vec<u32>,
    /// Whether thread `t`'s next strong write releases (it has fenced since its last one).
    fenced: Vec<bool>,
    /// The vector each address's last release left there.
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
            fenced: vec![false; n],
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
        for (x, &y) in into.iter_mut().zip(r.iter()) {
            *x = (*x).max(y);
        }
    }

    /// Thread `t` wrote `addr` with a strong write; `release` if the instruction itself releases.
    pub fn write(&mut self, t: u32, addr: u64, release: bool) {
        let t = t as usize;
        if !(release || self.fenced[t]) {
            return;
        }
        self.fenced[t] = false;
        let row = &self.vc[t * self.n..(t + 1) * self.n];
        self.released.insert(addr, row.into());
        // Saturating: a thread past 2^32 - 1 releases orders everything it does after them as before
        // them, which can hide a race but never invents one.
        let own = &mut self.vc[t * (self.n + 1)];
        *own = own.saturating_add(1);
    }

    /// Thread `t` executed a fence: it acquires the releases its strong reads saw, and its next
    /// strong write releases.
    pub fn fence(&mut self, t: u32) {
        let t = t as usize;
        let row = t * self.n..(t + 1) * self.n;
        for k in row {
            self.vc[k] = self.vc[k].max(std::mem::take(&mut self.seen[k]));
        }
        self.fenced[t] = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_and_flag_orders_what_came_before_the_release() {
        let mut hb = Hb::new(4);
        // Thread 0 writes data at clock 1, fences and sets a flag with a relaxed store.
        let data = hb.clock(0);
        hb.fence(0);
        hb.write(0, 0x100, false);
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
    fn release_and_acquire_instructions_need_no_fence() {
        let mut hb = Hb::new(2);
        hb.write(0, 8, true);
        hb.read(1, 8, true);
        assert!(hb.knows(1, 0, 1));
        // A strong write without a fence or `.release` releases nothing.
        let mut hb = Hb::new(2);
        hb.write(0, 8, false);
        hb.read(1, 8, true);
        assert!(!hb.knows(1, 0, 1));
    }

    #[test]
    fn orders_are_transitive() {
        let mut hb = Hb::new(3);
        hb.write(0, 1, true);
        hb.read(1, 1, true);
        hb.write(1, 2, true);
        hb.read(2, 2, true);
        assert!(hb.knows(2, 0, 1) && hb.knows(2, 1, 1));
    }
}
