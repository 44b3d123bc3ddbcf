//! Tensor maps (`cuTensorMapEncodeTiled`): the opaque 128 bytes that Hopper's tensor copies
//! (`cp.async.bulk.tensor`) read, laid out by `ptx_jit::runtime::tensor::TensorMap`. Im2col maps are
//! not supported.

use crate::errors::*;
use crate::{c_array, init_check};
use ptx_jit::runtime::tensor::{EncodeError, TensorMap, Tiled, MAP_BYTES};
use std::ffi::c_void;

/// The map at `map`. cuda.h requires 64-byte alignment, but an H200's driver (580.159.04) takes any
/// address (tests/demo/tma.c).
unsafe fn map_at<'a>(map: *mut c_void) -> Result<&'a mut [u8; MAP_BYTES], CUresult> {
    if map.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    Ok(&mut *(map as *mut [u8; MAP_BYTES]))
}

api! {
    exports = tensor_map_exports;

    fn cuTensorMapEncodeTiled(tensorMap: *mut c_void, tensorDataType: u32, tensorRank: u32, globalAddress: *mut c_void, globalDim: *const u64, globalStrides: *const u64, boxDim: *const u32, elementStrides: *const u32, interleave: u32, swizzle: u32, l2Promotion: u32, oobFill: u32) {
        init_check()?;
        let out = map_at(tensorMap)?;
        let rank = tensorRank as usize;
        if !(1..=5).contains(&rank) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let m = TensorMap::tiled(&Tiled {
            dtype: tensorDataType,
            global: globalAddress as u64,
            dims: c_array(globalDim, rank)?,
            strides: c_array(globalStrides, rank - 1)?,
            boxes: c_array(boxDim, rank)?,
            element_strides: c_array(elementStrides, rank)?,
            interleave,
            swizzle,
            l2_promotion: l2Promotion,
            oob_fill: oobFill,
        })
        .map_err(|e| {
            if crate::log_enabled() {
                eprintln!("ptx-jit: cuTensorMapEncodeTiled: {e:?}");
            }
            match e {
                EncodeError::Invalid(_) => CUDA_ERROR_INVALID_VALUE,
                EncodeError::NotSupported(_) => CUDA_ERROR_NOT_SUPPORTED,
            }
        })?;
        *out = m.to_bytes();
        Ok(())
    }

    fn cuTensorMapReplaceAddress(tensorMap: *mut c_void, globalAddress: *mut c_void) {
        init_check()?;
        let bytes = map_at(tensorMap)?;
        let mut m = TensorMap::from_bytes(bytes).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        if !(globalAddress as u64).is_multiple_of(16) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        m.global = globalAddress as u64;
        *bytes = m.to_bytes();
        Ok(())
    }
}
