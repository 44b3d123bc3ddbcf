//! racecheck's shadow memory: for each byte the running CTA touched, who wrote it and who read it in
//! the current epoch (the stretch between two barriers).
//!
//! Each OS thread keeps one [`Table`] and hands it from CTA to CTA. It is built for the common case,
//! a CTA that touches a few contiguous ranges:
//! - words live in chunks of [`CHUNK`] words, found through a map from chunk number, with the
//!   last two chunks found remembered (consecutive accesses of one thread, or of neighbouring
//!   threads, fall in few chunks);
//! - nothing is cleared between epochs or CTAs: each shadow carries the stamp of the epoch that
//!   wrote it, stamps only grow, and an entry with an older stamp counts as empty. Chunks go back to
//!   a pool when a CTA ends and are reused as they are. Clearing them was most of racecheck's time
//!   on a kernel such as saxpy, whose CTAs touch each word once.
//!
//! While every access to a word has covered all four bytes, one shadow stands for the word (a
//! quarter of the memory and of the work); the first access to part of it gives each byte its own
//! copy ([`Table::word`]).

use rustc_hash::FxHashMap;

/// One access, packed into 16 bytes (a shadow holds three).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct Acc {
    /// Byte offset of the instruction in the PTX text.
    pub site: u32,
    /// The accessing warp's count of warp-level synchronisations at the time.
    pub wsync: u32,
    /// The thread's own clock at the time ([`super::hb`]; 1 until it first releases).
    pub clock: u32,
    /// [`PRESENT`], [`ATOMIC`] and the thread's linear index in the CTA (below 1,024).
    tag: u16,
}

const PRESENT: u16 = 1 << 15;
const ATOMIC: u16 = 1 << 14;

impl Acc {
    pub fn new(t: u32, wsync: u32, site: u32, atomic: bool) -> Acc {
        debug_assert!(t < 1024, "a CTA has at most 1,024 threads");
        Acc {
            site,
            wsync,
            clock: 1,
            tag: PRESENT | if atomic { ATOMIC } else { 0 } | t as u16,
        }
    }

    /// The same access, made when its thread's clock read `clock`.
    pub fn at(self, clock: u32) -> Acc {
        Acc { clock, ..self }
    }

    /// The thread's linear index in the CTA.
    pub fn t(self) -> u32 {
        (self.tag & 0x3ff) as u32
    }

    pub fn atomic(self) -> bool {
        self.tag & ATOMIC != 0
    }

    fn get(self) -> Option<Acc> {
        (self.tag & PRESENT != 0).then_some(self)
    }
}

/// What one epoch did to a byte (or to a whole word).
#[derive(Clone, Copy, Default)]
pub struct Shadow {
    /// The epoch that wrote the rest; an older one means none of it is current.
    stamp: u32,
    write: Acc,
    /// Up to two readers of distinct threads.
    reads: [Acc; 2],
}

impl Shadow {
    /// Whether no access of the current epoch touched it (the first reader takes `reads[0]`).
    pub fn untouched(&self) -> bool {
        (self.write.tag | self.reads[0].tag) & PRESENT == 0
    }

    /// The write of the current epoch, if any.
    pub fn write(&self) -> Option<Acc> {
        self.write.get()
    }

    pub fn reads(&self) -> impl Iterator<Item = Acc> + '_ {
        self.reads.iter().filter_map(|r| r.get())
    }

    pub fn set_write(&mut self, a: Acc) {
        self.write = a;
    }

    /// Records the first access of the epoch.
    pub fn first(&mut self, a: Acc, write: bool) {
        if write {
            self.write = a;
        } else {
            self.reads[0] = a;
        }
    }

    /// Adds a reader, unless that thread has read already or two others have.
    pub fn add_read(&mut self, a: Acc) {
        if self.reads().any(|r| r.t() == a.t()) {
            return;
        }
        if let Some(slot) = self.reads.iter_mut().find(|r| r.get().is_none()) {
            *slot = a;
        }
    }
}

/// One word's entry: a shadow for the whole word, or (when `split` is not 0) the number, plus one,
/// of its four bytes' shadows in [`Table::split`], valid while `whole.stamp` is of the running CTA.
#[derive(Clone, Copy, Default)]
struct Slot {
    whole: Shadow,
    split: u32,
}

/// Words per chunk: 64 bytes of memory, 896 bytes of shadow (a slot is 56 bytes). Small, as a CTA
/// that touches one word per row of a matrix takes a chunk per word.
const CHUNK: u64 = 16;

type Chunk = Box<[Slot; CHUNK as usize]>;

/// The shadow of the CTA an OS thread runs, kept from CTA to CTA.
pub struct Table {
    /// The current epoch's stamp.
    stamp: u32,
    /// The stamp of the running CTA's first epoch: older entries are a previous CTA's.
    cta_start: u32,
    /// The running CTA's chunks: chunk number (word / [`CHUNK`]) → index in `chunks`.
    index: FxHashMap<u64, u32>,
    /// The last two chunks used: (chunk number, the chunk). A thread typically alternates between
    /// two arrays (saxpy's x and y). Pointers into `chunks`' boxes, which do not move while the CTA
    /// runs, to save two dependent loads per access.
    last: [(u64, *mut [Slot; CHUNK as usize]); 2],
    /// Which of `last` was used most recently (the other is replaced).
    recent: usize,
    /// The pool: the running CTA uses the first `used`.
    chunks: Vec<Chunk>,
    used: usize,
    /// Split words' byte shadows, of the running CTA.
    split: Vec<[Shadow; 4]>,
}

impl Default for Table {
    fn default() -> Table {
        Table {
            stamp: 0,
            cta_start: 0,
            index: FxHashMap::default(),
            last: NO_LAST,
            recent: 0,
            chunks: vec![],
            used: 0,
            split: vec![],
        }
    }
}

const NO_LAST: [(u64, *mut [Slot; CHUNK as usize]); 2] = [(u64::MAX, std::ptr::null_mut()); 2];

/// A word's shadow as [`Table::word`] gives it.
pub enum Word<'t> {
    Whole(&'t mut Shadow),
    Bytes(&'t mut [Shadow; 4]),
}

impl Table {
    /// A CTA starts: everything in the table becomes a previous CTA's.
    pub fn open_cta(&mut self) {
        // The pool keeps what the last CTAs needed, not the most any CTA ever did.
        let keep = self.used.max(1024);
        if self.chunks.len() > 4 * keep {
            self.chunks.truncate(keep);
        }
        self.next_stamp();
        self.cta_start = self.stamp;
        self.index.clear();
        self.last = NO_LAST;
        self.used = 0;
        self.split.clear();
    }

    /// A barrier completed: a new epoch starts.
    pub fn new_epoch(&mut self) {
        self.next_stamp();
    }

    fn next_stamp(&mut self) {
        if self.stamp == u32::MAX {
            // Stamps would repeat: forget everything instead (an epoch boundary forgets anyway, and
            // a split word's bytes may be whole again).
            for c in &mut self.chunks {
                c.fill(Slot::default());
            }
            self.split.clear();
            // Writing the chunks through `chunks` retires the pointers `last` holds.
            self.last = NO_LAST;
            self.stamp = 0;
            self.cta_start = 0;
        }
        self.stamp += 1;
    }

    /// Chunk `key`, made if the running CTA has none, now the most recent in `last`.
    #[inline(never)]
    fn find(&mut self, key: u64) -> *mut [Slot; CHUNK as usize] {
        let (chunks, used) = (&mut self.chunks, &mut self.used);
        let at = *self.index.entry(key).or_insert_with(|| {
            if *used == chunks.len() {
                chunks.push(Box::new([Slot::default(); CHUNK as usize]));
            }
            *used += 1;
            (*used - 1) as u32
        });
        let chunk: *mut [Slot; CHUNK as usize] = &mut *self.chunks[at as usize];
        self.recent ^= 1;
        self.last[self.recent] = (key, chunk);
        chunk
    }

    /// The current epoch's shadow of the 4-byte word `word` (address / 4), split into bytes first if
    /// `whole` is false. A shadow from an earlier epoch comes back empty, stamped with this one.
    #[inline(always)]
    pub fn word(&mut self, word: u64, whole: bool) -> Word<'_> {
        let (stamp, cta_start) = (self.stamp, self.cta_start);
        let key = word / CHUNK;
        let chunk = if self.last[0].0 == key {
            self.recent = 0;
            self.last[0].1
        } else if self.last[1].0 == key {
            self.recent = 1;
            self.last[1].1
        } else {
            self.find(key)
        };
        // SAFETY: `last` points into `chunks`' boxes, which live until `open_cta` clears `last`.
        let slot = unsafe { &mut (*chunk)[(word % CHUNK) as usize] };
        if slot.split != 0 && slot.whole.stamp < cta_start {
            slot.split = 0;
        }
        if slot.whole.stamp != stamp {
            slot.whole = Shadow {
                stamp,
                ..Shadow::default()
            };
        }
        if slot.split == 0 && whole {
            return Word::Whole(&mut slot.whole);
        }
        if slot.split == 0 {
            self.split.push([slot.whole; 4]);
            slot.split = self.split.len() as u32;
        }
        let bytes = &mut self.split[slot.split as usize - 1];
        for b in bytes.iter_mut().filter(|b| b.stamp != stamp) {
            *b = Shadow {
                stamp,
                ..Shadow::default()
            };
        }
        Word::Bytes(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(t: &mut Table, word: u64, thread: u32) {
        match t.word(word, true) {
            Word::Whole(s) => s.set_write(Acc::new(thread, 0, 7, false)),
            Word::Bytes(b) => b.iter_mut().for_each(|s| s.set_write(Acc::new(thread, 0, 7, false))),
        }
    }

    fn writer(t: &mut Table, word: u64) -> Option<u32> {
        match t.word(word, true) {
            Word::Whole(s) => s.write().map(Acc::t),
            Word::Bytes(b) => b[0].write().map(Acc::t),
        }
    }

    #[test]
    fn entries_live_for_one_epoch_of_one_cta() {
        let mut t = Table::default();
        t.open_cta();
        write(&mut t, 5, 3);
        write(&mut t, 5000, 4);
        assert_eq!(writer(&mut t, 5), Some(3));
        assert_eq!(writer(&mut t, 5000), Some(4));
        t.new_epoch();
        assert_eq!(writer(&mut t, 5), None);
        write(&mut t, 5, 9);
        t.open_cta();
        assert_eq!(writer(&mut t, 5), None, "a new CTA sees nothing of the last");
        assert_eq!(t.chunks.len(), 2, "chunks are reused");
    }

    #[test]
    fn a_split_word_stays_split_until_the_cta_ends() {
        let mut t = Table::default();
        t.open_cta();
        write(&mut t, 1, 2);
        let Word::Bytes(b) = t.word(1, false) else {
            panic!("split")
        };
        assert!(
            b.iter().all(|s| s.write().map(Acc::t) == Some(2)),
            "bytes inherit the word"
        );
        b[1].set_write(Acc::new(6, 0, 0, false));
        t.new_epoch();
        assert!(matches!(t.word(1, true), Word::Bytes(b) if b.iter().all(|s| s.write().is_none())));
        t.open_cta();
        assert!(
            matches!(t.word(1, true), Word::Whole(s) if s.untouched()),
            "whole again, and empty"
        );
    }

    #[test]
    fn stamps_wrap_by_forgetting() {
        let mut t = Table::default();
        t.open_cta();
        write(&mut t, 1, 2);
        t.stamp = u32::MAX;
        t.new_epoch();
        assert_eq!(t.stamp, 1);
        assert_eq!(writer(&mut t, 1), None);
    }
}
