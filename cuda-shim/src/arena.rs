//! Small allocations (up to [`MAX`]) come from slabs of their size class, powers of two from 256
//! bytes (the alignment `cuMemAlloc` guarantees): a 64-byte buffer costs 256 bytes, not a page and
//! the heap allocator's bookkeeping. Slabs are fresh anonymous memory, kept for reuse once mapped, so
//! a kernel that overruns a small buffer lands in another device buffer, as on a GPU, never in the
//! host's heap.

use parking_lot::Mutex;

/// The smallest class, and the alignment of every block.
pub const MIN: usize = 256;
/// The largest class.
pub const MAX: usize = 1 << 20;
/// Bytes mapped at a time for a class.
const SLAB: usize = 2 << 20;
const CLASSES: usize = (MAX / MIN).trailing_zeros() as usize + 1;

/// Free blocks of each class.
static FREE: Mutex<[Vec<usize>; CLASSES]> = Mutex::new([const { Vec::new() }; CLASSES]);
/// Where slabs start: device memory for good, so a pointer into one that no allocation holds is a
/// freed (or never allocated) device buffer, not host memory.
static SLABS: Mutex<std::collections::BTreeSet<usize>> = Mutex::new(std::collections::BTreeSet::new());

/// Whether `p` lies in one of the arena's slabs.
pub fn contains(p: u64) -> bool {
    SLABS
        .lock()
        .range(..=p as usize)
        .next_back()
        .is_some_and(|&s| (p as usize) < s + SLAB)
}

/// The slab holding `p`: its start and length.
pub fn slab_of(p: u64) -> Option<(u64, u64)> {
    let s = *SLABS.lock().range(..=p as usize).next_back()?;
    ((p as usize) < s + SLAB).then_some((s as u64, SLAB as u64))
}

/// The block size `size` bytes take, if the arena serves them.
pub fn class_size(size: usize) -> Option<usize> {
    (size <= MAX).then(|| size.max(MIN).next_power_of_two())
}

fn index(class: usize) -> usize {
    (class / MIN).trailing_zeros() as usize
}

/// A zeroed block of `class` bytes (a [`class_size`]), or `None` when no memory can be mapped.
pub fn alloc(class: usize) -> Option<*mut u8> {
    let mut free = FREE.lock();
    let list = &mut free[index(class)];
    if list.is_empty() {
        // SAFETY: a fresh private anonymous mapping, owned by the arena from now on.
        let slab = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                SLAB,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if slab == libc::MAP_FAILED {
            return None;
        }
        SLABS.lock().insert(slab as usize);
        // Lowest addresses are handed out first.
        list.extend((0..SLAB / class).rev().map(|i| slab as usize + i * class));
    }
    let p = list.pop()? as *mut u8;
    // SAFETY: the block is the arena's and `class` bytes long (a reused one holds old data).
    unsafe { std::ptr::write_bytes(p, 0, class) };
    Some(p)
}

/// Gives back a block [`alloc`] returned for `class`.
pub fn free(p: *mut u8, class: usize) {
    FREE.lock()[index(class)].push(p as usize);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_powers_of_two_from_256() {
        assert_eq!(class_size(1), Some(256));
        assert_eq!(class_size(64), Some(256));
        assert_eq!(class_size(257), Some(512));
        assert_eq!(class_size(MAX), Some(MAX));
        assert_eq!(class_size(MAX + 1), None);
    }

    #[test]
    fn blocks_are_aligned_distinct_zeroed_and_reused() {
        let a = alloc(256).unwrap();
        let b = alloc(256).unwrap();
        assert_ne!(a, b);
        assert_eq!(a as usize % MIN, 0);
        unsafe { std::ptr::write_bytes(a, 0xab, 256) };
        free(a, 256);
        let c = alloc(256).unwrap();
        assert_eq!(c, a, "a freed block is reused first");
        assert!(unsafe { std::slice::from_raw_parts(c, 256) }.iter().all(|&x| x == 0));
        free(b, 256);
        free(c, 256);
    }
}
