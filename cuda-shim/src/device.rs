//! The device the CPU backend presents. Limits come from ptx-jit's runtime so the two never disagree.

use crate::errors::*;
use ptx_jit::runtime as rt;

pub const NAME: &str = "ptx-jit CPU device";
/// Compute capability presented to clients (what NVRTC and numba compile for).
pub const CC: (i32, i32) = (8, 0);

pub fn sm_count() -> i32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as i32)
}

pub fn total_mem() -> u64 {
    // Half of physical memory: device allocations live in host RAM beside the application's own.
    let pages = unsafe {
        libc_sysconf(30 /* _SC_PAGESIZE */)
    } as u64;
    let count = unsafe {
        libc_sysconf(85 /* _SC_PHYS_PAGES */)
    } as u64;
    if pages == 0 || count == 0 {
        8 << 30
    } else {
        pages * count / 2
    }
}

extern "C" {
    #[link_name = "sysconf"]
    fn libc_sysconf(name: i32) -> i64;
}

/// `cuDeviceGetAttribute` values (attribute numbers from `CUdevice_attribute` in cuda.h).
pub fn attribute(attr: i32) -> Result<i32, CUresult> {
    Ok(match attr {
        1 => rt::MAX_THREADS_PER_BLOCK as i32,                  // MAX_THREADS_PER_BLOCK
        2..=4 => rt::MAX_BLOCK_DIM[(attr - 2) as usize] as i32, // MAX_BLOCK_DIM_X/Y/Z
        5..=7 => rt::MAX_GRID_DIM[(attr - 5) as usize] as i32,  // MAX_GRID_DIM_X/Y/Z
        8 => rt::MAX_SHARED_PER_BLOCK as i32,                   // MAX_SHARED_MEMORY_PER_BLOCK
        9 => 64 * 1024,                                         // TOTAL_CONSTANT_MEMORY
        10 => 32,                                               // WARP_SIZE
        11 => i32::MAX,                                         // MAX_PITCH
        12 => 65536,                                            // MAX_REGISTERS_PER_BLOCK
        13 => 1_000_000,                                        // CLOCK_RATE (kHz)
        14 => 512,                                              // TEXTURE_ALIGNMENT
        15 => 0,                                                // GPU_OVERLAP
        16 => sm_count(),                                       // MULTIPROCESSOR_COUNT
        17 => 0,                                                // KERNEL_EXEC_TIMEOUT
        18 => 1,                                                // INTEGRATED: memory is the host's
        19 => 1,                                                // CAN_MAP_HOST_MEMORY
        20 => 0,                                                // COMPUTE_MODE default
        31 => 0,                                                // CONCURRENT_KERNELS
        32 => 0,                                                // ECC_ENABLED
        33 | 34 | 50 => 0,                                      // PCI bus/device/domain
        36 => 1_000_000,                                        // MEMORY_CLOCK_RATE
        37 => 64,                                               // GLOBAL_MEMORY_BUS_WIDTH
        38 => 4 << 20,                                          // L2_CACHE_SIZE
        39 => 2048,                                             // MAX_THREADS_PER_MULTIPROCESSOR
        40 => 0,                                                // ASYNC_ENGINE_COUNT
        41 => 1,                                                // UNIFIED_ADDRESSING
        75 => CC.0,                                             // COMPUTE_CAPABILITY_MAJOR
        76 => CC.1,                                             // COMPUTE_CAPABILITY_MINOR
        81 => rt::MAX_SHARED_PER_BLOCK_OPTIN as i32 + 1024,     // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
        82 => 65536,                                            // MAX_REGISTERS_PER_MULTIPROCESSOR
        83 => 0,                                                // MANAGED_MEMORY (not yet)
        84 => 0,                                                // MULTI_GPU_BOARD
        97 => rt::MAX_SHARED_PER_BLOCK_OPTIN as i32,            // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
        106 => 32,                                              // MAX_BLOCKS_PER_MULTIPROCESSOR
        1..=161 => 0,                                           // known, but a feature this device lacks
        _ => return Err(CUDA_ERROR_INVALID_VALUE),
    })
}
