//! Minimal synchronous versions of entry points that the clients of issue 7 (the static CUDA runtime,
//! numba-cuda) call before they launch anything, and that the device/context/memory/stream work on
//! another branch implements in full. Each one is real for the CPU device (no faked success); when
//! that branch lands, its versions replace these: delete the function here and its `proc.rs` line.

use crate::errors::*;
use crate::*;

/// The presented device's UUID: fixed, so that it is stable across runs, as a GPU's is.
const DEVICE_UUID: [u8; 16] = *b"ptx-jit-cpu-dev0";

api! {
    fn cuDeviceGetUuid(uuid: *mut [u8; 16], dev: CUdevice) {
        device_check(dev)?;
        out(uuid, DEVICE_UUID)
    }
    fn cuDeviceGetUuid_v2(uuid: *mut [u8; 16], dev: CUdevice) {
        device_check(dev)?;
        out(uuid, DEVICE_UUID)
    }
}
