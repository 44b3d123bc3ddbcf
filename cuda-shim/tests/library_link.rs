//! Libraries, the linker and the private export tables called as a C client would: results, and error
//! codes (never crashes) for forged handles, null pointers and bad input.

use cuda::errors::*;
use cuda::library::*;
use cuda::link::*;
use cuda::*;
use std::ffi::{c_void, CStr, CString};
use std::ptr::{null, null_mut};

const PTX: &str = include_str!("../../tests/ptx/vecadd.ptx");

unsafe fn setup() -> Handle {
    assert_eq!(cuInit(0), CUDA_SUCCESS);
    let mut ctx = null_mut();
    assert_eq!(cuCtxCreate_v2(&mut ctx, 0, 0), CUDA_SUCCESS);
    ctx
}

#[test]
fn libraries_hand_out_kernels_that_are_functions() {
    unsafe {
        let ctx = setup();
        let text = CString::new(PTX).unwrap();
        let mut lib = null_mut();
        let img = text.as_ptr() as *const c_void;
        assert_eq!(
            cuLibraryLoadData(&mut lib, img, null_mut(), null_mut(), 0, null_mut(), null_mut(), 0),
            CUDA_SUCCESS
        );
        let (mut k, mut f, mut m, mut count) = (null_mut(), null_mut(), null_mut(), 0u32);
        let name = CString::new("vecadd").unwrap();
        assert_eq!(cuLibraryGetKernel(&mut k, lib, name.as_ptr()), CUDA_SUCCESS);
        assert_eq!(cuKernelGetFunction(&mut f, k), CUDA_SUCCESS);
        assert_eq!(f, k);
        let mut again = null_mut();
        assert_eq!(cuLibraryGetKernel(&mut again, lib, name.as_ptr()), CUDA_SUCCESS);
        assert_eq!(again, k);
        assert_eq!(cuLibraryGetModule(&mut m, lib), CUDA_SUCCESS);
        assert_eq!(cuLibraryGetKernelCount(&mut count, lib), CUDA_SUCCESS);
        assert_eq!(count, 1);
        let mut kname: *const std::ffi::c_char = null();
        assert_eq!(cuKernelGetName(&mut kname, k), CUDA_SUCCESS);
        assert_eq!(CStr::from_ptr(kname).to_str(), Ok("vecadd"));
        // Forged, mistyped and null arguments.
        assert_eq!(
            cuLibraryGetKernel(&mut k, 0xdead0 as Handle, name.as_ptr()),
            CUDA_ERROR_INVALID_HANDLE
        );
        assert_eq!(cuLibraryGetKernel(&mut k, m, name.as_ptr()), CUDA_ERROR_INVALID_HANDLE);
        assert_eq!(
            cuLibraryGetKernel(null_mut(), lib, name.as_ptr()),
            CUDA_ERROR_INVALID_VALUE
        );
        assert_eq!(cuLibraryGetKernel(&mut k, lib, null()), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuKernelGetFunction(&mut f, lib), CUDA_ERROR_INVALID_HANDLE);
        assert_eq!(
            cuLibraryLoadData(&mut lib, null(), null_mut(), null_mut(), 0, null_mut(), null_mut(), 0),
            CUDA_ERROR_INVALID_VALUE
        );
        let mut stale = lib;
        assert_eq!(cuLibraryUnload(lib), CUDA_SUCCESS);
        assert_eq!(cuLibraryUnload(lib), CUDA_ERROR_INVALID_HANDLE);
        assert_eq!(cuLibraryGetModule(&mut stale, lib), CUDA_ERROR_INVALID_HANDLE);
        assert_eq!(cuKernelGetFunction(&mut f, k), CUDA_ERROR_INVALID_HANDLE);
        cuCtxDestroy_v2(ctx);
    }
}

#[test]
fn linker_rejects_bad_states_and_inputs() {
    unsafe {
        let ctx = setup();
        let mut state = null_mut();
        assert_eq!(cuLinkCreate_v2(0, null_mut(), null_mut(), &mut state), CUDA_SUCCESS);
        let text = CString::new(PTX).unwrap();
        let name = CString::new("vecadd.ptx").unwrap();
        let data = text.as_ptr() as *mut c_void;
        let n = PTX.len();
        assert_eq!(
            cuLinkAddData_v2(0xbad0 as Handle, 1, data, n, name.as_ptr(), 0, null_mut(), null_mut()),
            CUDA_ERROR_INVALID_HANDLE
        );
        assert_eq!(
            cuLinkAddData_v2(state, 1, null_mut(), n, name.as_ptr(), 0, null_mut(), null_mut()),
            CUDA_ERROR_INVALID_VALUE
        );
        assert_eq!(
            cuLinkAddData_v2(state, 99, data, n, name.as_ptr(), 0, null_mut(), null_mut()),
            CUDA_ERROR_INVALID_VALUE
        );
        let garbage = b"this is not PTX at all";
        assert_eq!(
            cuLinkAddData_v2(
                state,
                1,
                garbage.as_ptr() as *mut c_void,
                garbage.len(),
                name.as_ptr(),
                0,
                null_mut(),
                null_mut()
            ),
            CUDA_ERROR_INVALID_PTX
        );
        let missing = CString::new("/nonexistent/file.ptx").unwrap();
        assert_eq!(
            cuLinkAddFile_v2(state, 1, missing.as_ptr(), 0, null_mut(), null_mut()),
            CUDA_ERROR_FILE_NOT_FOUND
        );
        let (mut image, mut size) = (null_mut(), 0usize);
        assert_eq!(cuLinkComplete(state, &mut image, &mut size), CUDA_ERROR_INVALID_PTX); // nothing to link
        assert_eq!(
            cuLinkAddData_v2(state, 1, data, n, name.as_ptr(), 0, null_mut(), null_mut()),
            CUDA_SUCCESS
        );
        assert_eq!(cuLinkComplete(state, null_mut(), &mut size), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuLinkComplete(state, &mut image, &mut size), CUDA_SUCCESS);
        let linked = std::slice::from_raw_parts(image as *const u8, size);
        assert_eq!(linked.last(), Some(&0));
        let mut m = null_mut();
        assert_eq!(cuModuleLoadData(&mut m, image), CUDA_SUCCESS);
        assert_eq!(cuLinkDestroy(state), CUDA_SUCCESS);
        assert_eq!(cuLinkDestroy(state), CUDA_ERROR_INVALID_HANDLE);
        cuCtxDestroy_v2(ctx);
    }
}

#[test]
fn export_tables_check_their_arguments() {
    unsafe {
        assert_eq!(cuInit(0), CUDA_SUCCESS);
        let unknown = [0x5au8; 16];
        let mut t: *const c_void = null();
        assert_eq!(
            cuGetExportTable(&mut t, unknown.as_ptr() as *const c_void),
            CUDA_ERROR_NOT_FOUND
        );
        assert!(t.is_null());
        assert_eq!(
            cuGetExportTable(null_mut(), unknown.as_ptr() as *const c_void),
            CUDA_ERROR_INVALID_VALUE
        );
        assert_eq!(cuGetExportTable(&mut t, null()), CUDA_ERROR_INVALID_VALUE);
        // The runtime's interface: a size header of 13 pointers; loading a module from a null wrapper fails.
        let cudart = [
            0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9u8,
        ];
        assert_eq!(cuGetExportTable(&mut t, cudart.as_ptr() as *const c_void), CUDA_SUCCESS);
        let slots = t as *const usize;
        assert_eq!(*slots, 13 * 8);
        let get_module: unsafe extern "C" fn(*mut Handle, *const c_void) -> CUresult =
            std::mem::transmute(*slots.add(1));
        let mut m = null_mut();
        assert_eq!(get_module(&mut m, null()), CUDA_ERROR_INVALID_VALUE);
        let not_a_fatbin = [0u8; 64];
        assert_eq!(
            get_module(&mut m, not_a_fatbin.as_ptr() as *const c_void),
            CUDA_ERROR_INVALID_IMAGE
        );
    }
}

/// Slot 51 of the context-queries table gives the driver's handle for a public stream (cuBLAS asks
/// for it before every routine) and slot 39 a number for that handle: the default stream becomes the
/// legacy or the per-thread one, a created stream stays itself, a destroyed one is refused.
#[test]
fn context_queries_name_streams() {
    unsafe {
        assert_eq!(cuInit(0), CUDA_SUCCESS);
        let mut ctx = null_mut();
        assert_eq!(cuCtxCreate_v2(&mut ctx, 0, 0), CUDA_SUCCESS);
        let id = [
            0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2u8,
        ];
        let mut t: *const c_void = null();
        assert_eq!(cuGetExportTable(&mut t, id.as_ptr() as *const c_void), CUDA_SUCCESS);
        let slots = t as *const usize;
        type StreamHandle = unsafe extern "C" fn(Handle, Handle, *mut Handle, i32) -> CUresult;
        type Id = unsafe extern "C" fn(Handle, Handle, *mut u64) -> CUresult;
        let handle: StreamHandle = std::mem::transmute(*slots.add(51));
        let number: Id = std::mem::transmute(*slots.add(39));
        let mut h = null_mut();
        assert_eq!(handle(null_mut(), null_mut(), &mut h, 0), CUDA_SUCCESS);
        assert_eq!(h as usize, 1); // CU_STREAM_LEGACY
        assert_eq!(handle(ctx, null_mut(), &mut h, 1), CUDA_SUCCESS);
        assert_eq!(h as usize, 2); // CU_STREAM_PER_THREAD
        let mut s = null_mut();
        assert_eq!(cuStreamCreate(&mut s, 0), CUDA_SUCCESS);
        assert_eq!(handle(ctx, s, &mut h, 0), CUDA_SUCCESS);
        assert_eq!(h, s);
        let (mut n, mut id) = (0u64, 0u64);
        assert_eq!(number(ctx, h, &mut n), CUDA_SUCCESS);
        assert_eq!(cuStreamGetId(s, &mut id), CUDA_SUCCESS);
        assert_eq!(n, id);
        let mut legacy = 0u64;
        assert_eq!(number(ctx, 1usize as Handle, &mut legacy), CUDA_SUCCESS);
        assert_ne!(legacy, n);
        assert_eq!(handle(ctx, s, null_mut(), 0), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(number(ctx, null_mut(), &mut n), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuStreamDestroy_v2(s), CUDA_SUCCESS);
        assert_eq!(handle(ctx, s, &mut h, 0), CUDA_ERROR_INVALID_HANDLE);
        assert_eq!(number(ctx, s, &mut n), CUDA_ERROR_INVALID_HANDLE);
        cuCtxDestroy_v2(ctx);
    }
}

/// Slot 7 of the module-tools table calls back with each kernel of a module and returns how many
/// there were (cuFFT takes the one kernel of each of its modules so); a bad module gives 0 calls.
#[test]
fn module_tools_iterate_over_kernels() {
    unsafe extern "C" fn collect(seen: *mut c_void, f: Handle) {
        (*(seen as *mut Vec<Handle>)).push(f);
    }
    unsafe {
        assert_eq!(cuInit(0), CUDA_SUCCESS);
        let mut ctx = null_mut();
        assert_eq!(cuCtxCreate_v2(&mut ctx, 0, 0), CUDA_SUCCESS);
        let two = format!(
            "{PTX}\n{}",
            PTX.split(".address_size 64")
                .nth(1)
                .unwrap()
                .replace("vecadd", "second")
        );
        let text = CString::new(two).unwrap();
        let mut m = null_mut();
        assert_eq!(cuModuleLoadData(&mut m, text.as_ptr() as *const c_void), CUDA_SUCCESS);
        let id = [
            0x6e, 0x16, 0x3f, 0xbe, 0xb9, 0x58, 0x44, 0x4d, 0x83, 0x5c, 0xe1, 0x82, 0xaf, 0xf1, 0x99, 0x1eu8,
        ];
        let mut t: *const c_void = null();
        assert_eq!(cuGetExportTable(&mut t, id.as_ptr() as *const c_void), CUDA_SUCCESS);
        type Each = unsafe extern "C" fn(*mut c_void, Handle);
        type Iterate = unsafe extern "C" fn(Handle, Handle, Option<Each>, *mut c_void) -> u32;
        let iterate: Iterate = std::mem::transmute(*(t as *const usize).add(7));
        let mut seen: Vec<Handle> = vec![];
        let n = iterate(ctx, m, Some(collect), &mut seen as *mut Vec<Handle> as *mut c_void);
        assert_eq!((n, seen.len()), (2, 2));
        let names: Vec<String> = seen
            .iter()
            .map(|&f| {
                let mut name = null();
                assert_eq!(cuFuncGetName(&mut name, f), CUDA_SUCCESS);
                CStr::from_ptr(name).to_str().unwrap().to_string()
            })
            .collect();
        assert_eq!(names, ["vecadd", "second"]);
        seen.clear();
        let forged = 0x7777usize as Handle;
        assert_eq!(
            iterate(ctx, forged, Some(collect), &mut seen as *mut Vec<Handle> as *mut c_void),
            0
        );
        assert!(seen.is_empty());
        cuCtxDestroy_v2(ctx);
    }
}
