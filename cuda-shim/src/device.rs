//! The device the CPU backend presents. Limits come from ptx-jit's runtime so the two never disagree.

use crate::errors::*;
use crate::{device_check, init_check, out, CUdevice};
use ptx_jit::device as rt;
use std::ffi::{c_char, c_int};

/// The presented device (`PTXJIT_DEVICE`, see `ptx_jit::device::PROFILES`).
fn p() -> &'static rt::Profile {
    rt::profile()
}

/// Compute capability presented to clients (what NVRTC and numba compile for, and which PTX of a
/// fatbin is chosen), as `major * 10 + minor`.
pub fn sm() -> u32 {
    p().cc.0 * 10 + p().cc.1
}

pub fn cc() -> (i32, i32) {
    (p().cc.0 as i32, p().cc.1 as i32)
}

/// Residency limits of one multiprocessor, for occupancy and the attributes.
pub fn max_threads_per_sm() -> u64 {
    p().max_threads_per_sm as u64
}
pub fn max_blocks_per_sm() -> u64 {
    p().max_blocks_per_sm as u64
}
pub fn max_shared_per_sm() -> u64 {
    p().shared_per_sm
}
pub fn max_shared_per_block_optin() -> u64 {
    p().shared_per_block_optin
}

/// The register file of a multiprocessor and of a block (64 K 32-bit registers on every
/// architecture from 5.0 on).
pub const REGISTERS_PER_SM: u64 = 65536;

/// What a kernel reports as its registers per thread (`CU_FUNC_ATTRIBUTE_NUM_REGS`). The CPU has no
/// register file, and 0 makes libraries that size grids by registers divide by zero (cuBLAS's
/// `cublasSdot` did, killing the process with SIGFPE): the most registers per thread, in the
/// allocation unit of 8, at which a multiprocessor's full complement of threads still fits the
/// register file, so occupancy computed from registers is the threads' bound, as the shim's own is.
pub fn registers_per_thread() -> u64 {
    (REGISTERS_PER_SM / max_threads_per_sm()) & !7
}

/// Multiprocessors: the card's, or one per worker core (as `%nsmid` says).
pub fn sm_count() -> i32 {
    p().sms() as i32
}

pub fn total_mem() -> u64 {
    p().memory()
}

pub fn name() -> String {
    p().device_name()
}

/// How many identical devices are presented (`PTXJIT_DEVICE_COUNT`; `cuInit` refuses a bad one). They
/// share the host's memory: each reports the profile's total, and allocations on any of them count
/// against that one total.
pub fn count() -> i32 {
    rt::device_count().unwrap_or(1) as i32
}

/// Whether `dev` is the ordinal of a presented device.
pub fn exists(dev: CUdevice) -> bool {
    (0..count()).contains(&dev)
}

/// `cuDeviceGetAttribute` values of device `dev` (attribute numbers from `CUdevice_attribute` in
/// cuda.h).
pub fn attribute(attr: i32, dev: CUdevice) -> Result<i32, CUresult> {
    Ok(match attr {
        1 => rt::MAX_THREADS_PER_BLOCK as i32,                  // MAX_THREADS_PER_BLOCK
        2..=4 => rt::MAX_BLOCK_DIM[(attr - 2) as usize] as i32, // MAX_BLOCK_DIM_X/Y/Z
        5..=7 => rt::MAX_GRID_DIM[(attr - 5) as usize] as i32,  // MAX_GRID_DIM_X/Y/Z
        8 => rt::MAX_SHARED_PER_BLOCK as i32,                   // MAX_SHARED_MEMORY_PER_BLOCK
        9 => 64 * 1024,                                         // TOTAL_CONSTANT_MEMORY
        10 => 32,                                               // WARP_SIZE
        11 => i32::MAX,                                         // MAX_PITCH
        12 => REGISTERS_PER_SM as i32,                          // MAX_REGISTERS_PER_BLOCK
        13 => p().clock_khz as i32,                             // CLOCK_RATE (kHz)
        15 => 1,                                                // GPU_OVERLAP: copies run on stream workers
        16 => sm_count(),                                       // MULTIPROCESSOR_COUNT
        17 => 0,                                                // KERNEL_EXEC_TIMEOUT
        18 => 1,                                                // INTEGRATED: memory is the host's
        19 => 1,                                                // CAN_MAP_HOST_MEMORY
        20 => 0,                                                // COMPUTE_MODE default
        31 => 1,                                                // CONCURRENT_KERNELS: streams overlap
        32 => 0,                                                // ECC_ENABLED
        33 => dev,                                              // PCI_BUS_ID: one bus per device
        34 | 50 => 0,                                           // PCI device and domain
        36 => p().memory_clock_khz as i32,                      // MEMORY_CLOCK_RATE
        37 => p().bus_bits as i32,                              // GLOBAL_MEMORY_BUS_WIDTH
        38 => p().l2_bytes as i32,                              // L2_CACHE_SIZE
        39 => max_threads_per_sm() as i32,                      // MAX_THREADS_PER_MULTIPROCESSOR
        40 => 1,                                                // ASYNC_ENGINE_COUNT
        41 => 1,                                                // UNIFIED_ADDRESSING
        75 => cc().0,                                           // COMPUTE_CAPABILITY_MAJOR
        76 => cc().1,                                           // COMPUTE_CAPABILITY_MINOR
        81 => max_shared_per_sm() as i32,                       // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
        82 => REGISTERS_PER_SM as i32,                          // MAX_REGISTERS_PER_MULTIPROCESSOR
        83 => 1,                                                // MANAGED_MEMORY
        88 => 1,                                                // PAGEABLE_MEMORY_ACCESS: kernels run on the host
        89 => 1,                                                // CONCURRENT_MANAGED_ACCESS
        78 => 1,                                                // STREAM_PRIORITIES_SUPPORTED (kept, not scheduled by)
        79 | 80 => 1,                                           // GLOBAL/LOCAL_L1_CACHE_SUPPORTED
        86 => 1,                                   // HOST_NATIVE_ATOMIC_SUPPORTED: one memory, host atomics
        87 => 2,                                   // SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO (SIMD lanes halve)
        91 => 1,                                   // CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM
        95 => 1,                                   // COOPERATIVE_LAUNCH
        99 => 1,                                   // HOST_REGISTER_SUPPORTED
        100 => 1,                                  // PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES
        101 => 1,                                  // DIRECT_MANAGED_MEM_ACCESS_FROM_HOST
        102 => 1,                                  // VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED (crate::vmm)
        115 => 1,                                  // MEMORY_POOLS_SUPPORTED (crate::pool, crate::graph::memory)
        84 => 0,                                   // MULTI_GPU_BOARD
        97 => max_shared_per_block_optin() as i32, // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
        106 => max_blocks_per_sm() as i32,         // MAX_BLOCKS_PER_MULTIPROCESSOR
        122 | 123 => 1,                            // 64-bit stream memory ops, WAIT_VALUE_NOR (crate::memop)
        125 => 1,                                  // IPC_EVENT_SUPPORTED (crate::ipc: event handles between processes)
        a if crate::texture::limit(a) > 0 => crate::texture::limit(a) as i32, // textures and surfaces
        a if (1..=161).contains(&a) => 0,          // known, but a feature this device lacks
        _ => return Err(CUDA_ERROR_INVALID_VALUE),
    })
}

/// `CUdevprop` (cuda.h), the pre-4.0 device properties.
#[repr(C)]
pub struct DevProp {
    max_threads_per_block: c_int,
    max_threads_dim: [c_int; 3],
    max_grid_size: [c_int; 3],
    shared_mem_per_block: c_int,
    total_constant_memory: c_int,
    simd_width: c_int,
    mem_pitch: c_int,
    regs_per_block: c_int,
    clock_rate: c_int,
    texture_align: c_int,
}

/// A device's UUID: fixed bytes that name this backend, the last one the device's ordinal in hex.
fn uuid(dev: CUdevice) -> [u8; 16] {
    let mut u = *b"ptx-jit CPU dev0";
    u[15] = b"0123456789abcdef"[dev as usize % 16];
    u
}

/// A device's PCI bus id: device `n` sits alone on bus `n`.
fn pci_bus_id(dev: CUdevice) -> String {
    format!("0000:{dev:02x}:00.0")
}

api! {
    exports = device_exports;

    fn cuDeviceGetUuid(u: *mut [u8; 16], dev: CUdevice) {
        device_check(dev)?;
        out(u, uuid(dev))
    }
    fn cuDeviceGetUuid_v2(u: *mut [u8; 16], dev: CUdevice) {
        device_check(dev)?;
        out(u, uuid(dev))
    }
    fn cuDeviceGetPCIBusId(id: *mut c_char, len: c_int, dev: CUdevice) {
        device_check(dev)?;
        let bus = pci_bus_id(dev);
        if id.is_null() || len <= bus.len() as c_int {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        std::ptr::copy_nonoverlapping(bus.as_ptr(), id as *mut u8, bus.len());
        *id.add(bus.len()) = 0;
        Ok(())
    }
    fn cuDeviceGetByPCIBusId(dev: *mut CUdevice, id: *const c_char) {
        init_check()?;
        if id.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let s = std::ffi::CStr::from_ptr(id).to_string_lossy().to_ascii_lowercase();
        // "0000:01:00.0" or the short "01:00.0" form.
        let found = (0..count()).find(|&d| {
            let bus = pci_bus_id(d);
            s == bus || s == bus[5..]
        });
        out(dev, found.ok_or(CUDA_ERROR_INVALID_DEVICE)?)
    }
    fn cuDeviceCanAccessPeer(can: *mut c_int, dev: CUdevice, peer: CUdevice) {
        device_check(dev)?;
        device_check(peer)?;
        // The devices share the host's memory, so each reaches every other; a device is not its own
        // peer.
        out(can, (dev != peer) as c_int)
    }
    fn cuDeviceGetProperties(p: *mut DevProp, dev: CUdevice) {
        device_check(dev)?;
        let a = |n| attribute(n, dev).unwrap_or(0);
        out(p, DevProp {
            max_threads_per_block: a(1),
            max_threads_dim: [a(2), a(3), a(4)],
            max_grid_size: [a(5), a(6), a(7)],
            shared_mem_per_block: a(8),
            total_constant_memory: a(9),
            simd_width: a(10),
            mem_pitch: a(11),
            regs_per_block: a(12),
            clock_rate: a(13),
            texture_align: a(14),
        })
    }
}
