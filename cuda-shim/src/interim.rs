//! Minimal synchronous versions of entry points that the clients of issue 7 (the static CUDA runtime,
//! numba-cuda) call before they launch anything, and that the device/context/memory/stream work on
//! another branch implements in full. Each one is real for the CPU device (no faked success); when
//! that branch lands, its versions replace these: delete the function here and its `proc.rs` line.

use crate::errors::*;
use crate::state::{Table, Tag};
use crate::*;

/// The presented device's UUID: fixed, so that it is stable across runs, as a GPU's is.
const DEVICE_UUID: [u8; 16] = *b"ptx-jit-cpu-dev0";


/// An event: when it was last recorded. Work is complete when its call returns, so the time of
/// `cuEventRecord` is the time the stream reached the event.
pub struct Event {
    flags: c_uint,
    recorded: parking_lot::Mutex<Option<std::time::Instant>>,
}

static EVENTS: once_cell::sync::Lazy<Table<Event>> = once_cell::sync::Lazy::new(|| Table::new(Tag::InterimEvent));

fn event_check(e: Handle) -> Result<std::sync::Arc<Event>, CUresult> {
    EVENTS.get(e as usize)
}

unsafe fn elapsed(ms: *mut f32, start: Handle, end: Handle) -> Result<(), CUresult> {
    init_check()?;
    let (s, e) = (event_check(start)?, event_check(end)?);
    if (s.flags | e.flags) & 2 != 0 {
        return Err(CUDA_ERROR_INVALID_HANDLE); // CU_EVENT_DISABLE_TIMING
    }
    let (Some(t0), Some(t1)) = (*s.recorded.lock(), *e.recorded.lock()) else {
        return Err(CUDA_ERROR_INVALID_HANDLE);
    };
    let d = if t1 >= t0 { (t1 - t0).as_secs_f64() } else { -(t0 - t1).as_secs_f64() };
    out(ms, (d * 1e3) as f32)
}

/// `CUlaunchConfig` (cuda.h).
#[repr(C)]
pub struct LaunchConfig {
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared: c_uint,
    stream: Handle,
    attrs: *mut c_void,
    num_attrs: c_uint,
}

/// `CUfunction_attribute` values for a kernel of the CPU backend.
fn func_attribute(f: usize, attr: c_int) -> Result<c_int, CUresult> {
    use ptx_jit::runtime as rt;
    let func = crate::state::FUNCTIONS.get(f)?;
    let k = &func.module_obj.host.kernels[func.kernel].info;
    Ok(match attr {
        0 => rt::MAX_THREADS_PER_BLOCK as c_int,                                        // MAX_THREADS_PER_BLOCK
        1 => k.static_shared as c_int,                                                   // SHARED_SIZE_BYTES
        2 | 3 => 0,                                                                      // CONST/LOCAL_SIZE_BYTES
        4 => 32,                                                                         // NUM_REGS: a register file is no limit here
        5 | 6 => device::CC.0 * 10 + device::CC.1,                                      // PTX/BINARY_VERSION
        7 => 0,                                                                          // CACHE_MODE_CA
        8 => (rt::MAX_SHARED_PER_BLOCK_OPTIN - k.static_shared.min(rt::MAX_SHARED_PER_BLOCK_OPTIN)) as c_int, // MAX_DYNAMIC_SHARED_SIZE_BYTES
        9 => -1,                                                                         // PREFERRED_SHARED_MEMORY_CARVEOUT: no preference
        10..=19 => 0,                                                                    // cluster and scheduling attributes: none set
        _ => return Err(CUDA_ERROR_INVALID_VALUE),
    })
}

api! {
    fn cuDeviceGetUuid(uuid: *mut [u8; 16], dev: CUdevice) {
        device_check(dev)?;
        out(uuid, DEVICE_UUID)
    }
    fn cuDeviceGetUuid_v2(uuid: *mut [u8; 16], dev: CUdevice) {
        device_check(dev)?;
        out(uuid, DEVICE_UUID)
    }
    // Asynchronous copies and sets, done synchronously: the stream's earlier work is already complete
    // (every operation finishes before its call returns), so order on the stream holds.
    fn cuMemcpyHtoDAsync_v2(dst: CUdeviceptr, src: *const c_void, n: usize, stream: Handle) {
        stream_check(stream)?;
        status(crate::cuMemcpyHtoD_v2(dst, src, n))
    }
    fn cuMemcpyDtoHAsync_v2(dst: *mut c_void, src: CUdeviceptr, n: usize, stream: Handle) {
        stream_check(stream)?;
        status(crate::cuMemcpyDtoH_v2(dst, src, n))
    }
    fn cuMemcpyDtoDAsync_v2(dst: CUdeviceptr, src: CUdeviceptr, n: usize, stream: Handle) {
        stream_check(stream)?;
        status(crate::cuMemcpyDtoD_v2(dst, src, n))
    }
    fn cuMemsetD8Async(dst: CUdeviceptr, v: u8, n: usize, stream: Handle) {
        stream_check(stream)?;
        status(crate::cuMemsetD8_v2(dst, v, n))
    }
    fn cuMemsetD32Async(dst: CUdeviceptr, v: c_uint, n: usize, stream: Handle) {
        stream_check(stream)?;
        status(crate::cuMemsetD32_v2(dst, v, n))
    }
    fn cuLaunchKernelEx(config: *const LaunchConfig, f: Handle, params: *mut *mut c_void, extra: *mut *mut c_void) {
        let c = config.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        if c.num_attrs > 0 {
            // Launch attributes (clusters, cooperative, priorities…) need the full implementation.
            return Err(CUDA_ERROR_NOT_SUPPORTED);
        }
        status(crate::cuLaunchKernel(f, c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1], c.block[2], c.shared, c.stream, params, extra))
    }
    fn cuEventCreate(ev: *mut Handle, flags: c_uint) {
        init_check()?;
        current_ctx()?;
        if flags & !0xf != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        out(ev, EVENTS.insert(Event { flags, recorded: parking_lot::Mutex::new(None) }) as Handle)
    }
    fn cuEventRecord(ev: Handle, stream: Handle) {
        init_check()?;
        stream_check(stream)?;
        *event_check(ev)?.recorded.lock() = Some(std::time::Instant::now());
        Ok(())
    }
    fn cuEventRecordWithFlags(ev: Handle, stream: Handle, flags: c_uint) {
        if flags > 1 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        status(cuEventRecord(ev, stream))
    }
    fn cuEventQuery(ev: Handle) {
        init_check()?;
        event_check(ev).map(|_| ())
    }
    fn cuEventSynchronize(ev: Handle) {
        init_check()?;
        event_check(ev).map(|_| ())
    }
    fn cuEventDestroy_v2(ev: Handle) {
        init_check()?;
        EVENTS.remove(ev as usize).map(|_| ())
    }
    fn cuEventElapsedTime(ms: *mut f32, start: Handle, end: Handle) {
        elapsed(ms, start, end)
    }
    fn cuEventElapsedTime_v2(ms: *mut f32, start: Handle, end: Handle) {
        elapsed(ms, start, end)
    }
    fn cuStreamWaitEvent(stream: Handle, ev: Handle, flags: c_uint) {
        init_check()?;
        stream_check(stream)?;
        if flags > 1 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        event_check(ev).map(|_| ())
    }
    fn cuStreamQuery(stream: Handle) {
        init_check()?;
        stream_check(stream)
    }
    fn cuFuncGetAttribute(v: *mut c_int, attr: c_int, f: Handle) {
        init_check()?;
        out(v, func_attribute(f as usize, attr)?)
    }
    fn cuKernelGetAttribute(v: *mut c_int, attr: c_int, kernel: Handle, dev: CUdevice) {
        device_check(dev)?;
        out(v, func_attribute(kernel as usize, attr)?)
    }
}
