//! `cuGetProcAddress`: (name, requested CUDA version) → entry point. The versions are those of the
//! `PFN_<name>_v<version>` typedefs in cudaTypedefs.h: each variant serves requests from its version on.

use crate::errors::*;
use once_cell::sync::Lazy;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};

/// (API name, first CUDA version of this variant, exported symbol). Variants with an older ABI that we
/// do not implement (the 32-bit `cuMemAlloc` of CUDA 2.0, say) are absent: asking for them gets
/// `CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT`.
const TABLE: &[(&str, c_int, &str)] = &[
    ("cuInit", 2000, "cuInit"),
    ("cuDriverGetVersion", 2020, "cuDriverGetVersion"),
    ("cuDeviceGet", 2000, "cuDeviceGet"),
    ("cuDeviceGetCount", 2000, "cuDeviceGetCount"),
    ("cuDeviceGetName", 2000, "cuDeviceGetName"),
    ("cuDeviceGetAttribute", 2000, "cuDeviceGetAttribute"),
    ("cuDeviceComputeCapability", 2000, "cuDeviceComputeCapability"),
    ("cuDeviceTotalMem", 3020, "cuDeviceTotalMem_v2"),
    ("cuCtxCreate", 2000, "cuCtxCreate"),
    ("cuCtxCreate", 3020, "cuCtxCreate_v2"),
    ("cuCtxCreate", 11040, "cuCtxCreate_v3"),
    ("cuCtxCreate", 12050, "cuCtxCreate_v4"),
    ("cuCtxDestroy", 2000, "cuCtxDestroy"),
    ("cuCtxDestroy", 4000, "cuCtxDestroy_v2"),
    ("cuCtxSetCurrent", 4000, "cuCtxSetCurrent"),
    ("cuCtxGetCurrent", 4000, "cuCtxGetCurrent"),
    ("cuCtxPushCurrent", 4000, "cuCtxPushCurrent_v2"),
    ("cuCtxPopCurrent", 4000, "cuCtxPopCurrent_v2"),
    ("cuCtxGetDevice", 2000, "cuCtxGetDevice"),
    ("cuCtxSynchronize", 2000, "cuCtxSynchronize"),
    ("cuCtxSynchronize", 13000, "cuCtxSynchronize_v2"),
    ("cuDevicePrimaryCtxRetain", 7000, "cuDevicePrimaryCtxRetain"),
    ("cuDevicePrimaryCtxRelease", 7000, "cuDevicePrimaryCtxRelease"),
    ("cuDevicePrimaryCtxRelease", 11000, "cuDevicePrimaryCtxRelease_v2"),
    ("cuDevicePrimaryCtxGetState", 7000, "cuDevicePrimaryCtxGetState"),
    ("cuModuleLoadData", 2000, "cuModuleLoadData"),
    ("cuModuleLoadDataEx", 2010, "cuModuleLoadDataEx"),
    ("cuModuleUnload", 2000, "cuModuleUnload"),
    ("cuModuleGetFunction", 2000, "cuModuleGetFunction"),
    ("cuModuleGetGlobal", 3020, "cuModuleGetGlobal_v2"),
    ("cuMemAlloc", 3020, "cuMemAlloc_v2"),
    ("cuMemFree", 3020, "cuMemFree_v2"),
    ("cuMemGetInfo", 3020, "cuMemGetInfo_v2"),
    ("cuMemcpyHtoD", 3020, "cuMemcpyHtoD_v2"),
    ("cuMemcpyDtoH", 3020, "cuMemcpyDtoH_v2"),
    ("cuMemcpyDtoD", 3020, "cuMemcpyDtoD_v2"),
    ("cuMemsetD8", 3020, "cuMemsetD8_v2"),
    ("cuMemsetD32", 3020, "cuMemsetD32_v2"),
    ("cuStreamCreate", 2000, "cuStreamCreate"),
    ("cuStreamDestroy", 2000, "cuStreamDestroy"),
    ("cuStreamDestroy", 4000, "cuStreamDestroy_v2"),
    ("cuStreamSynchronize", 2000, "cuStreamSynchronize"),
    ("cuLaunchKernel", 4000, "cuLaunchKernel"),
    ("cuGetErrorName", 6000, "cuGetErrorName"),
    ("cuGetErrorString", 6000, "cuGetErrorString"),
    ("cuGetProcAddress", 11030, "cuGetProcAddress"),
    ("cuGetProcAddress", 12000, "cuGetProcAddress_v2"),
    ("cuGetExportTable", 3000, "cuGetExportTable"),
    ("cuModuleLoadFatBinary", 2000, "cuModuleLoadFatBinary"),
    ("cuModuleGetLoadingMode", 11070, "cuModuleGetLoadingMode"),
    ("cuLibraryLoadData", 12000, "cuLibraryLoadData"),
    ("cuLibraryLoadFromFile", 12000, "cuLibraryLoadFromFile"),
    ("cuLibraryUnload", 12000, "cuLibraryUnload"),
    ("cuLibraryGetKernel", 12000, "cuLibraryGetKernel"),
    ("cuLibraryGetModule", 12000, "cuLibraryGetModule"),
    ("cuLibraryGetGlobal", 12000, "cuLibraryGetGlobal"),
    ("cuLibraryGetKernelCount", 12040, "cuLibraryGetKernelCount"),
    ("cuLibraryEnumerateKernels", 12040, "cuLibraryEnumerateKernels"),
    ("cuKernelGetFunction", 12000, "cuKernelGetFunction"),
    ("cuKernelGetName", 12030, "cuKernelGetName"),
    ("cuKernelGetLibrary", 12050, "cuKernelGetLibrary"),
    ("cuLinkCreate", 5050, "cuLinkCreate"),
    ("cuLinkCreate", 6050, "cuLinkCreate_v2"),
    ("cuLinkAddData", 5050, "cuLinkAddData"),
    ("cuLinkAddData", 6050, "cuLinkAddData_v2"),
    ("cuLinkAddFile", 5050, "cuLinkAddFile"),
    ("cuLinkAddFile", 6050, "cuLinkAddFile_v2"),
    ("cuLinkComplete", 5050, "cuLinkComplete"),
    ("cuLinkDestroy", 5050, "cuLinkDestroy"),
    // interim.rs
    ("cuDeviceGetUuid", 9020, "cuDeviceGetUuid"),
    ("cuDeviceGetUuid", 11040, "cuDeviceGetUuid_v2"),
    ("cuFuncGetAttribute", 2020, "cuFuncGetAttribute"),
    ("cuEventCreate", 2000, "cuEventCreate"),
    ("cuEventRecord", 2000, "cuEventRecord"),
    ("cuEventRecordWithFlags", 11010, "cuEventRecordWithFlags"),
    ("cuEventQuery", 2000, "cuEventQuery"),
    ("cuEventSynchronize", 2000, "cuEventSynchronize"),
    ("cuEventDestroy", 4000, "cuEventDestroy_v2"),
    ("cuEventElapsedTime", 2000, "cuEventElapsedTime"),
    ("cuEventElapsedTime", 12080, "cuEventElapsedTime_v2"),
    ("cuStreamWaitEvent", 3020, "cuStreamWaitEvent"),
    ("cuStreamQuery", 2000, "cuStreamQuery"),
    ("cuLaunchKernelEx", 11060, "cuLaunchKernelEx"),
    ("cuMemcpyHtoDAsync", 3020, "cuMemcpyHtoDAsync_v2"),
    ("cuMemcpyDtoHAsync", 3020, "cuMemcpyDtoHAsync_v2"),
    ("cuMemcpyDtoDAsync", 3020, "cuMemcpyDtoDAsync_v2"),
    ("cuMemsetD8Async", 3020, "cuMemsetD8Async"),
    ("cuMemsetD32Async", 3020, "cuMemsetD32Async"),
    ("cuKernelGetAttribute", 12000, "cuKernelGetAttribute"),
];

static SYMBOLS: Lazy<HashMap<&'static str, usize>> = Lazy::new(|| crate::all_exports().into_iter().collect());

/// Resolves (name, version) to an exported symbol name.
pub fn resolve(name: &str, version: c_int) -> Result<&'static str, c_int> {
    let mut variants = TABLE.iter().filter(|(n, _, _)| *n == name).peekable();
    if variants.peek().is_none() {
        return Err(1); // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
    }
    variants
        .filter(|(_, v, _)| *v <= version)
        .max_by_key(|(_, v, _)| *v)
        .map(|(_, _, s)| *s)
        .ok_or(2) // VERSION_NOT_SUFFICIENT
}

pub unsafe fn get_proc_address(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
    status: *mut c_int,
) -> Result<(), CUresult> {
    if symbol.is_null() || pfn.is_null() || flags > 2 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    *pfn = std::ptr::null_mut();
    let set = |s: c_int| {
        if !status.is_null() {
            *status = s;
        }
    };
    // Every stream flavour (default, legacy, per-thread) maps to the same implementation: all work
    // completes before the call returns.
    let name = CStr::from_ptr(symbol).to_str().map_err(|_| CUDA_ERROR_INVALID_VALUE)?;
    match resolve(name, version) {
        Ok(sym) => {
            let addr = *SYMBOLS.get(sym).expect("every table symbol is exported");
            *pfn = addr as *mut c_void;
            set(0);
            Ok(())
        }
        Err(s) => {
            set(s);
            if crate::log_enabled() {
                eprintln!("ptx-jit: cuGetProcAddress({name}, {version}): not implemented");
            }
            Err(CUDA_ERROR_NOT_FOUND)
        }
    }
}

/// `cuGetErrorString` text: the code's name in words, NUL-terminated and kept for the process's life.
pub fn error_string(e: CUresult) -> Option<&'static str> {
    static STRINGS: Lazy<HashMap<CUresult, String>> = Lazy::new(|| {
        NAMES
            .iter()
            .map(|(c, n)| {
                let words = n
                    .trim_end_matches('\0')
                    .trim_start_matches("CUDA_ERROR_")
                    .trim_start_matches("CUDA_")
                    .to_lowercase()
                    .replace('_', " ");
                (*c, format!("{words}\0"))
            })
            .collect()
    });
    STRINGS.get(&e).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_newest_variant_not_after_the_request() {
        assert_eq!(resolve("cuCtxCreate", 3020), Ok("cuCtxCreate_v2"));
        assert_eq!(resolve("cuCtxCreate", 12000), Ok("cuCtxCreate_v3"));
        assert_eq!(resolve("cuCtxCreate", 13050), Ok("cuCtxCreate_v4"));
        assert_eq!(resolve("cuMemAlloc", 2000), Err(2));
        assert_eq!(resolve("cuNoSuchThing", 13000), Err(1));
    }

    #[test]
    fn every_table_symbol_is_exported() {
        for (_, _, s) in TABLE {
            assert!(SYMBOLS.contains_key(s), "{s}");
        }
    }

    #[test]
    fn error_strings() {
        assert_eq!(error_string(CUDA_ERROR_INVALID_VALUE), Some("invalid value\0"));
        assert_eq!(error_string(CUDA_SUCCESS), Some("success\0"));
    }
}
