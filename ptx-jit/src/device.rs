//! The device the CPU backend presents: its memory, its multiprocessors and its launch limits. One
//! source for the driver shim's attributes, the launch checks and the loader's memory bound.

/// `%nsmid`: the CPU backend presents one SM per core.
pub fn sm_count() -> u32 {
    rayon::current_num_threads() as u32
}

/// Memory of the device the CPU backend presents: half of physical memory, as device allocations and
/// module variables live in host RAM beside the application's own. Allocations beyond it fail
/// cleanly instead of bringing the OOM killer.
pub fn device_memory() -> u64 {
    static BYTES: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let (page, pages) = unsafe { (libc::sysconf(libc::_SC_PAGESIZE), libc::sysconf(libc::_SC_PHYS_PAGES)) };
        if page <= 0 || pages <= 0 {
            8 << 30
        } else {
            page as u64 * pages as u64 / 2
        }
    })
}

/// Launch limits of the device the CPU backend presents.
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;
pub const MAX_BLOCK_DIM: [u32; 3] = [1024, 1024, 64];
pub const MAX_GRID_DIM: [u32; 3] = [i32::MAX as u32, 65535, 65535];
pub const MAX_SHARED_PER_BLOCK: u64 = 48 * 1024;
pub const MAX_SHARED_PER_BLOCK_OPTIN: u64 = 227 * 1024;
