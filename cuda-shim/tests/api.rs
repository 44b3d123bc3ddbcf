//! The driver API called directly, as a C client would: handle validation, error codes, logs,
//! cuGetProcAddress, and concurrent use from several threads.

use cuda::errors::*;
use cuda::link::{cuLinkAddData_v2, cuLinkComplete, cuLinkCreate_v2, cuLinkDestroy};
use cuda::pool::*;
use cuda::vmm::*;
use cuda::*;
use std::ffi::{c_void, CStr, CString};
use std::ptr::null_mut;

const PTX: &str = include_str!("../../tests/ptx/vecadd.ptx");

unsafe fn setup() -> Handle {
    assert_eq!(cuInit(0), CUDA_SUCCESS);
    let mut ctx = null_mut();
    assert_eq!(cuCtxCreate_v2(&mut ctx, 0, 0), CUDA_SUCCESS);
    ctx
}

unsafe fn load(src: &str) -> (CUresult, Handle, String) {
    let text = CString::new(src).unwrap();
    let mut log = vec![0u8; 4096];
    let mut opts = [5, 6]; // CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
    let mut vals = [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void];
    let mut m = null_mut();
    let r = cuModuleLoadDataEx(
        &mut m,
        text.as_ptr() as *const c_void,
        2,
        opts.as_mut_ptr(),
        vals.as_mut_ptr(),
    );
    let s = CStr::from_bytes_until_nul(&log).unwrap().to_string_lossy().into_owned();
    (r, m, s)
}

/// The vecadd test module, loaded, and its kernel.
unsafe fn vecadd() -> (Handle, Handle) {
    let (r, m, _) = load(PTX);
    assert_eq!(r, CUDA_SUCCESS);
    let mut f = null_mut();
    let name = CString::new("vecadd").unwrap();
    assert_eq!(cuModuleGetFunction(&mut f, m, name.as_ptr()), CUDA_SUCCESS);
    (m, f)
}

/// A kernel's registers per thread are never 0 (cuBLAS divides by them: `cublasSdot` died of SIGFPE),
/// and a multiprocessor full of threads still fits the register file at that count.
#[test]
fn kernels_report_registers_that_do_not_limit_occupancy() {
    unsafe {
        let ctx = setup();
        let (_, f) = vecadd();
        let (mut regs, mut per_sm, mut threads) = (0, 0, 0);
        assert_eq!(cuFuncGetAttribute(&mut regs, 4, f), CUDA_SUCCESS); // NUM_REGS
        assert_eq!(cuDeviceGetAttribute(&mut per_sm, 82, 0), CUDA_SUCCESS); // registers per SM
        assert_eq!(cuDeviceGetAttribute(&mut threads, 39, 0), CUDA_SUCCESS); // threads per SM
        assert!(
            regs > 0 && regs % 8 == 0 && regs * threads <= per_sm,
            "{regs} {threads} {per_sm}"
        );
        cuCtxDestroy_v2(ctx);
    }
}

/// `CU_FUNC_ATTRIBUTE_PTX_VERSION` is the PTX's own target and `BINARY_VERSION` the device's: CUB
/// picks its tuning from the first, and found none for a device newer than every PTX it shipped.
#[test]
fn kernels_report_the_target_of_their_ptx() {
    unsafe {
        let ctx = setup();
        let (r, m, _) = load(&PTX.replace(".target sm_80", ".target sm_52"));
        assert_eq!(r, CUDA_SUCCESS);
        let mut f = null_mut();
        let name = CString::new("vecadd").unwrap();
        assert_eq!(cuModuleGetFunction(&mut f, m, name.as_ptr()), CUDA_SUCCESS);
        let (mut ptx, mut binary, mut major, mut minor) = (0, 0, 0, 0);
        assert_eq!(cuFuncGetAttribute(&mut ptx, 5, f), CUDA_SUCCESS);
        assert_eq!(cuFuncGetAttribute(&mut binary, 6, f), CUDA_SUCCESS);
        assert_eq!(cuDeviceGetAttribute(&mut major, 75, 0), CUDA_SUCCESS);
        assert_eq!(cuDeviceGetAttribute(&mut minor, 76, 0), CUDA_SUCCESS);
        assert_eq!((ptx, binary), (52, major * 10 + minor));
        cuCtxDestroy_v2(ctx);
    }
}

/// A link whose result has an error in a kernel's body fails at `cuLinkComplete`, with the error in
/// the log, although modules load lazily (the linker checks its result whole).
#[test]
fn a_link_with_a_broken_kernel_fails() {
    unsafe {
        let ctx = setup();
        let mut log = vec![0u8; 4096];
        let mut opts = [5, 6]; // CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
        let mut vals = [log.as_mut_ptr() as *mut c_void, log.len() as *mut c_void];
        let mut state = null_mut();
        assert_eq!(
            cuLinkCreate_v2(2, opts.as_mut_ptr(), vals.as_mut_ptr(), &mut state),
            CUDA_SUCCESS
        );
        let broken = PTX.replace("%r<6>", "%r<3>");
        let name = CString::new("broken.ptx").unwrap();
        let r = cuLinkAddData_v2(
            state,
            1,
            broken.as_ptr() as *mut c_void,
            broken.len(),
            name.as_ptr(),
            0,
            null_mut(),
            null_mut(),
        );
        assert_eq!(r, CUDA_SUCCESS);
        let (mut image, mut size) = (null_mut(), 0);
        assert_eq!(cuLinkComplete(state, &mut image, &mut size), CUDA_ERROR_INVALID_PTX);
        let text = CStr::from_bytes_until_nul(&log).unwrap().to_string_lossy().into_owned();
        assert!(text.contains("`%r3` is not declared"), "{text}");
        assert_eq!(cuLinkDestroy(state), CUDA_SUCCESS);
        cuCtxDestroy_v2(ctx);
    }
}

#[test]
fn forged_and_stale_handles_are_errors() {
    unsafe {
        let ctx = setup();
        let (m, f) = vecadd();
        // A module handle used as a function, a made-up handle, and a function after its module died.
        let mut args: [*mut c_void; 0] = [];
        assert_eq!(
            cuLaunchKernel(m, 1, 1, 1, 1, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut()),
            CUDA_ERROR_INVALID_HANDLE
        );
        assert_eq!(
            cuLaunchKernel(
                0xdead0 as Handle,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                null_mut(),
                args.as_mut_ptr(),
                null_mut()
            ),
            CUDA_ERROR_INVALID_HANDLE
        );
        assert_eq!(cuModuleUnload(m), CUDA_SUCCESS);
        assert_eq!(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
        assert_eq!(
            cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut()),
            CUDA_ERROR_INVALID_HANDLE
        );
        assert_eq!(cuStreamSynchronize(0x12345 as Handle), CUDA_ERROR_INVALID_HANDLE);
        assert_eq!(cuCtxDestroy_v2(ctx), CUDA_SUCCESS);
        assert_eq!(cuCtxDestroy_v2(ctx), CUDA_ERROR_INVALID_HANDLE);
    }
}

#[test]
fn memory_ranges_are_checked() {
    unsafe {
        let ctx = setup();
        let mut p = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut p, 64), CUDA_SUCCESS);
        assert_eq!(p % 256, 0);
        let host = [7u8; 128];
        assert_eq!(cuMemcpyHtoD_v2(p, host.as_ptr() as *const c_void, 64), CUDA_SUCCESS);
        assert_eq!(
            cuMemcpyHtoD_v2(p, host.as_ptr() as *const c_void, 65),
            CUDA_ERROR_INVALID_VALUE
        );
        assert_eq!(
            cuMemcpyHtoD_v2(p + 60, host.as_ptr() as *const c_void, 8),
            CUDA_ERROR_INVALID_VALUE
        );
        assert_eq!(cuMemcpyHtoD_v2(p, std::ptr::null(), 8), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemsetD32_v2(p + 2, 0, 1), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemsetD32_v2(p, 0xabcd, 16), CUDA_SUCCESS);
        let mut back = [0u32; 16];
        assert_eq!(cuMemcpyDtoH_v2(back.as_mut_ptr() as *mut c_void, p, 64), CUDA_SUCCESS);
        assert_eq!(back, [0xabcd; 16]);
        assert_eq!(cuMemFree_v2(p + 8), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemFree_v2(p), CUDA_SUCCESS);
        assert_eq!(cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(
            cuMemcpyDtoH_v2(back.as_mut_ptr() as *mut c_void, p, 4),
            CUDA_ERROR_INVALID_VALUE
        );
        cuCtxDestroy_v2(ctx);
    }
}

#[test]
fn rejected_modules_explain_themselves() {
    unsafe {
        let ctx = setup();
        let bad = PTX.replace("add.f32", "addd.f32");
        let (r, _, log) = load(&bad);
        assert_eq!(r, CUDA_ERROR_NOT_SUPPORTED);
        assert!(log.contains("error[P0101]: unknown instruction `addd`"), "{log}");
        let broken = PTX.replace("%r<6>", "%r<3>");
        let (r, _, log) = load(&broken);
        assert_eq!(r, CUDA_ERROR_INVALID_PTX);
        assert!(log.contains("`%r3` is not declared"), "{log}");
        let mut m = null_mut();
        let elf = b"\x7fELF\x02\x01\x01\0";
        assert_eq!(
            cuModuleLoadData(&mut m, elf.as_ptr() as *const c_void),
            CUDA_ERROR_NO_BINARY_FOR_GPU
        );
        cuCtxDestroy_v2(ctx);
    }
}

#[test]
fn get_proc_address_picks_variants_by_version() {
    unsafe {
        let mut pfn = null_mut();
        let mut status = -1;
        let name = CString::new("cuMemAlloc").unwrap();
        assert_eq!(
            cuGetProcAddress_v2(name.as_ptr(), &mut pfn, 13000, 0, &mut status),
            CUDA_SUCCESS
        );
        assert_eq!((pfn as usize, status), (cuMemAlloc_v2 as *const () as usize, 0));
        // The 32-bit cuMemAlloc of CUDA 2.0 resolves, to an entry point that says it is not supported.
        type Alloc32 = unsafe extern "C" fn(*mut u32, u32) -> CUresult;
        assert_eq!(
            cuGetProcAddress_v2(name.as_ptr(), &mut pfn, 2000, 0, &mut status),
            CUDA_SUCCESS
        );
        assert_eq!(status, 0);
        let mut small = 0u32;
        assert_eq!(
            std::mem::transmute::<*mut c_void, Alloc32>(pfn)(&mut small, 16),
            CUDA_ERROR_NOT_SUPPORTED
        );
        assert_eq!(
            cuGetProcAddress_v2(name.as_ptr(), &mut pfn, 1000, 0, &mut status),
            CUDA_ERROR_NOT_FOUND
        );
        assert_eq!((pfn, status), (null_mut(), 2));
        let ctx = CString::new("cuCtxCreate").unwrap();
        assert_eq!(
            cuGetProcAddress_v2(ctx.as_ptr(), &mut pfn, 12080, 0, &mut status),
            CUDA_SUCCESS
        );
        assert_eq!(pfn as usize, cuCtxCreate_v4 as *const () as usize);
        // Per-thread default stream variants by flag.
        let launch = CString::new("cuLaunchKernel").unwrap();
        assert_eq!(
            cuGetProcAddress_v2(launch.as_ptr(), &mut pfn, 13000, 2, &mut status),
            CUDA_SUCCESS
        );
        assert_eq!(pfn as usize, cuLaunchKernel_ptsz as *const () as usize);
        assert_eq!(
            cuGetProcAddress_v2(launch.as_ptr(), &mut pfn, 13000, 1, &mut status),
            CUDA_SUCCESS
        );
        assert_eq!(pfn as usize, cuLaunchKernel as *const () as usize);
        // A cuda.h function the shim does not implement: found, and honest when called.
        let ipc = CString::new("cuMemRetainAllocationHandle").unwrap();
        assert_eq!(
            cuGetProcAddress_v2(ipc.as_ptr(), &mut pfn, 13000, 0, &mut status),
            CUDA_SUCCESS
        );
        type RetainAllocationHandle = unsafe extern "C" fn(*mut c_void, *mut c_void) -> CUresult;
        assert_eq!(
            std::mem::transmute::<*mut c_void, RetainAllocationHandle>(pfn)(null_mut(), null_mut()),
            CUDA_ERROR_NOT_SUPPORTED
        );
        let missing = CString::new("cuNoSuchFunction").unwrap();
        assert_eq!(
            cuGetProcAddress_v2(missing.as_ptr(), &mut pfn, 13000, 0, &mut status),
            CUDA_ERROR_NOT_FOUND
        );
        assert_eq!(status, 1);
        assert_eq!(
            cuGetProcAddress(missing.as_ptr(), &mut pfn, 13000, 0),
            CUDA_ERROR_NOT_FOUND
        );
        let mut s: *const std::ffi::c_char = std::ptr::null();
        assert_eq!(cuGetErrorName(CUDA_ERROR_INVALID_HANDLE, &mut s), CUDA_SUCCESS);
        assert_eq!(CStr::from_ptr(s).to_str().unwrap(), "CUDA_ERROR_INVALID_HANDLE");
        assert_eq!(cuGetErrorString(CUDA_ERROR_INVALID_HANDLE, &mut s), CUDA_SUCCESS);
        assert_eq!(CStr::from_ptr(s).to_str().unwrap(), "invalid handle");
        assert_eq!(cuGetErrorName(12345, &mut s), CUDA_ERROR_INVALID_VALUE);
    }
}

/// Several host threads, each with its own context, load, copy and launch at once.
#[test]
fn concurrent_threads_and_contexts() {
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            std::thread::spawn(move || unsafe {
                let ctx = setup();
                let (r, m, log) = load(PTX);
                assert_eq!(r, CUDA_SUCCESS, "{log}");
                let mut f = null_mut();
                let name = CString::new("vecadd").unwrap();
                assert_eq!(cuModuleGetFunction(&mut f, m, name.as_ptr()), CUDA_SUCCESS);
                let n = 10_000u32;
                let a: Vec<f32> = (0..n).map(|i| (i * (t + 1)) as f32).collect();
                let b: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
                let bytes = n as usize * 4;
                let (mut da, mut db, mut dc) = (0u64, 0u64, 0u64);
                for (p, h) in [(&mut da, Some(&a)), (&mut db, Some(&b)), (&mut dc, None)] {
                    assert_eq!(cuMemAlloc_v2(p, bytes), CUDA_SUCCESS);
                    if let Some(h) = h {
                        assert_eq!(cuMemcpyHtoD_v2(*p, h.as_ptr() as *const c_void, bytes), CUDA_SUCCESS);
                    }
                }
                for _ in 0..20 {
                    let mut args = [
                        &mut da as *mut u64 as *mut c_void,
                        &mut db as *mut u64 as *mut c_void,
                        &mut dc as *mut u64 as *mut c_void,
                        &n as *const u32 as *mut c_void,
                    ];
                    assert_eq!(
                        cuLaunchKernel(
                            f,
                            n.div_ceil(128),
                            1,
                            1,
                            128,
                            1,
                            1,
                            0,
                            null_mut(),
                            args.as_mut_ptr(),
                            null_mut()
                        ),
                        CUDA_SUCCESS
                    );
                }
                let mut c = vec![0f32; n as usize];
                assert_eq!(cuMemcpyDtoH_v2(c.as_mut_ptr() as *mut c_void, dc, bytes), CUDA_SUCCESS);
                for i in 0..n as usize {
                    assert_eq!(c[i], a[i] + b[i]);
                }
                for p in [da, db, dc] {
                    assert_eq!(cuMemFree_v2(p), CUDA_SUCCESS);
                }
                assert_eq!(cuModuleUnload(m), CUDA_SUCCESS);
                assert_eq!(cuCtxDestroy_v2(ctx), CUDA_SUCCESS);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn launch_arguments_through_extra() {
    unsafe {
        let ctx = setup();
        let (_, m, _) = load(PTX);
        let mut f = null_mut();
        let name = CString::new("vecadd").unwrap();
        assert_eq!(cuModuleGetFunction(&mut f, m, name.as_ptr()), CUDA_SUCCESS);
        let (mut a, mut c) = (0u64, 0u64);
        cuMemAlloc_v2(&mut a, 16);
        cuMemAlloc_v2(&mut c, 16);
        cuMemsetD32_v2(a, 2.5f32.to_bits(), 4);
        // The packed argument buffer: three pointers and an int, natural alignment.
        let mut buf = [0u8; 28];
        buf[0..8].copy_from_slice(&a.to_le_bytes());
        buf[8..16].copy_from_slice(&a.to_le_bytes());
        buf[16..24].copy_from_slice(&c.to_le_bytes());
        buf[24..28].copy_from_slice(&4u32.to_le_bytes());
        let mut size = buf.len();
        let mut extra = [
            std::ptr::dangling_mut::<c_void>(),
            buf.as_mut_ptr() as *mut c_void,
            2 as *mut c_void,
            &mut size as *mut usize as *mut c_void,
            null_mut(),
        ];
        assert_eq!(
            cuLaunchKernel(f, 1, 1, 1, 4, 1, 1, 0, null_mut(), null_mut(), extra.as_mut_ptr()),
            CUDA_SUCCESS
        );
        let mut out = [0f32; 4];
        cuMemcpyDtoH_v2(out.as_mut_ptr() as *mut c_void, c, 16);
        assert_eq!(out, [5.0; 4]);
        // No arguments at all for a kernel that takes four.
        assert_eq!(
            cuLaunchKernel(f, 1, 1, 1, 4, 1, 1, 0, null_mut(), null_mut(), null_mut()),
            CUDA_ERROR_INVALID_VALUE
        );
        cuCtxDestroy_v2(ctx);
    }
}

/// `CUmemPoolProps` for a pinned pool on device 0 (the rest zero).
#[repr(C)]
struct PoolProps {
    alloc_type: i32,
    handle_types: i32,
    location_type: i32,
    location_id: i32,
    win32: *mut c_void,
    max_size: usize,
    usage: u16,
    reserved: [u8; 54],
}

#[test]
fn memory_pools_count_what_they_hand_out() {
    unsafe {
        let _ctx = setup();
        let attr = |pool: Handle, a: i32| {
            let mut v = 0u64;
            assert_eq!(
                cuMemPoolGetAttribute(pool, a, &mut v as *mut u64 as *mut c_void),
                CUDA_SUCCESS
            );
            v
        };
        const USED: i32 = 7;
        const USED_HIGH: i32 = 8;
        const RESERVED: i32 = 5;
        // The default pool is the current one until another is set.
        let (mut default, mut current) = (null_mut(), null_mut());
        assert_eq!(cuDeviceGetDefaultMemPool(&mut default, 0), CUDA_SUCCESS);
        assert_eq!(cuDeviceGetMemPool(&mut current, 0), CUDA_SUCCESS);
        assert_eq!(default, current);
        assert_eq!(cuDeviceGetDefaultMemPool(&mut current, 99), CUDA_ERROR_INVALID_DEVICE);
        let props = PoolProps {
            alloc_type: 1,
            handle_types: 0,
            location_type: 1,
            location_id: 0,
            win32: null_mut(),
            max_size: 0,
            usage: 0,
            reserved: [0; 54],
        };
        let mut pool = null_mut();
        assert_eq!(
            cuMemPoolCreate(&mut pool, &props as *const PoolProps as *const _),
            CUDA_SUCCESS
        );
        let exported = PoolProps {
            handle_types: 1,
            ..props
        };
        let mut other = null_mut();
        assert_eq!(
            cuMemPoolCreate(&mut other, &exported as *const PoolProps as *const _),
            CUDA_ERROR_NOT_SUPPORTED
        );
        // Allocations from the pool count as used until freed, by either free.
        let (mut a, mut b) = (0u64, 0u64);
        assert_eq!(cuMemAllocFromPoolAsync(&mut a, 1000, pool, null_mut()), CUDA_SUCCESS);
        assert_eq!(cuMemAllocFromPoolAsync(&mut b, 24, pool, null_mut()), CUDA_SUCCESS);
        assert_eq!(
            (attr(pool, USED), attr(pool, RESERVED), attr(pool, USED_HIGH)),
            (1024, 1024, 1024)
        );
        assert_eq!(cuMemFreeAsync(a, null_mut()), CUDA_SUCCESS);
        assert_eq!(cuMemFree_v2(b), CUDA_SUCCESS);
        assert_eq!((attr(pool, USED), attr(pool, USED_HIGH)), (0, 1024));
        let mut zero = 0u64;
        assert_eq!(
            cuMemPoolSetAttribute(pool, USED_HIGH, &mut zero as *mut u64 as *mut c_void),
            CUDA_SUCCESS
        );
        assert_eq!(attr(pool, USED_HIGH), 0);
        let mut threshold = 1u64 << 30;
        assert_eq!(
            cuMemPoolSetAttribute(pool, 4, &mut threshold as *mut u64 as *mut c_void),
            CUDA_SUCCESS
        );
        assert_eq!(attr(pool, 4), 1 << 30);
        // cuMemAllocAsync takes from the device's current pool.
        assert_eq!(cuDeviceSetMemPool(0, pool), CUDA_SUCCESS);
        assert_eq!(cuMemAllocAsync(&mut a, 64, null_mut()), CUDA_SUCCESS);
        assert_eq!(attr(pool, USED), 64);
        assert_eq!(attr(default, USED), 0);
        assert_eq!(cuMemFreeAsync(a, null_mut()), CUDA_SUCCESS);
        assert_eq!(cuCtxSynchronize(), CUDA_SUCCESS);
        assert_eq!(attr(pool, USED), 0);
        // The default pool cannot be destroyed; another can, and the device falls back to its default.
        // A pool of at most 4 KiB refuses more, and reports what it is.
        let small = PoolProps {
            max_size: 4096,
            ..props
        };
        let mut capped = null_mut();
        assert_eq!(
            cuMemPoolCreate(&mut capped, &small as *const PoolProps as *const _),
            CUDA_SUCCESS
        );
        assert_eq!(cuMemAllocFromPoolAsync(&mut a, 4096, capped, null_mut()), CUDA_SUCCESS);
        assert_eq!(
            cuMemAllocFromPoolAsync(&mut b, 1, capped, null_mut()),
            CUDA_ERROR_OUT_OF_MEMORY
        );
        assert_eq!((attr(capped, 13), attr(capped, 11) as i32), (4096, 0));
        // Each high-water mark resets alone.
        assert_eq!(cuMemFree_v2(a), CUDA_SUCCESS);
        let mut zero = 0u64;
        assert_eq!(
            cuMemPoolSetAttribute(capped, 6, &mut zero as *mut u64 as *mut c_void),
            CUDA_SUCCESS
        );
        assert_eq!((attr(capped, 6), attr(capped, USED_HIGH)), (0, 4096));
        assert_eq!(cuMemPoolDestroy(capped), CUDA_SUCCESS);
        assert_eq!(cuMemPoolDestroy(default), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemPoolDestroy(pool), CUDA_SUCCESS);
        assert_eq!(cuDeviceGetMemPool(&mut current, 0), CUDA_SUCCESS);
        assert_eq!(current, default);
        assert_eq!(cuMemPoolTrimTo(pool, 0), CUDA_ERROR_INVALID_HANDLE);
    }
}

/// `CUmemAllocationProp` for pinned memory on device 0.
#[repr(C)]
struct AllocationProp {
    kind: i32,
    handle_types: i32,
    location_type: i32,
    location_id: i32,
    win32: *mut c_void,
    compression: u8,
    rdma: u8,
    usage: u16,
    reserved: [u8; 4],
}

/// `CUmemAccessDesc`.
#[repr(C)]
struct AccessDesc {
    location_type: i32,
    location_id: i32,
    flags: i32,
}

#[test]
fn reserved_address_ranges_take_mapped_memory() {
    unsafe {
        let _ctx = setup();
        let prop = AllocationProp {
            kind: 1,
            handle_types: 0,
            location_type: 1,
            location_id: 0,
            win32: null_mut(),
            compression: 0,
            rdma: 0,
            usage: 0,
            reserved: [0; 4],
        };
        let p = &prop as *const AllocationProp as *const _;
        let mut g = 0usize;
        assert_eq!(cuMemGetAllocationGranularity(&mut g, p, 0), CUDA_SUCCESS);
        assert_eq!(g, 2 << 20);
        // Three granules of address space, two physical allocations mapped into the first two.
        let mut va = 0u64;
        assert_eq!(cuMemAddressReserve(&mut va, 3 * g, 0, 0, 0), CUDA_SUCCESS);
        assert_eq!(va % g as u64, 0);
        let (mut h1, mut h2) = (0u64, 0u64);
        assert_eq!(cuMemCreate(&mut h1, g, p, 0), CUDA_SUCCESS);
        assert_eq!(cuMemCreate(&mut h2, g, p, 0), CUDA_SUCCESS);
        assert_eq!(cuMemCreate(&mut h2, g + 1, p, 0), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemMap(va, g, 0, h1, 0), CUDA_SUCCESS);
        assert_eq!(cuMemMap(va + g as u64, g, 0, h2, 0), CUDA_SUCCESS);
        assert_eq!(cuMemMap(va, g, 0, h2, 0), CUDA_ERROR_INVALID_VALUE); // already mapped there
                                                                         // The handles may go once mapped: the mappings hold the memory.
        assert_eq!(cuMemRelease(h1), CUDA_SUCCESS);
        assert_eq!(cuMemRelease(h2), CUDA_SUCCESS);
        // Not device memory until accessible.
        assert_eq!(cuMemsetD32_v2(va, 1, 4), CUDA_ERROR_INVALID_VALUE);
        let rw = AccessDesc {
            location_type: 1,
            location_id: 0,
            flags: 3,
        };
        let desc = &rw as *const AccessDesc as *const _;
        assert_eq!(cuMemSetAccess(va, 2 * g, desc, 1), CUDA_SUCCESS);
        assert_eq!(cuMemSetAccess(va, 3 * g, desc, 1), CUDA_ERROR_INVALID_VALUE); // the third is unmapped
        let mut access = 0u64;
        let here = [1i32, 0];
        assert_eq!(
            cuMemGetAccess(&mut access, &here as *const [i32; 2] as *const _, va),
            CUDA_SUCCESS
        );
        assert_eq!(access, 3);
        // One range across both mappings: a fill and a kernel straddling the boundary.
        let n = 64u32;
        let straddle = va + g as u64 - 4 * (n as u64 / 2);
        assert_eq!(cuMemsetD32_v2(straddle, 5, n as usize), CUDA_SUCCESS);
        let (_m, f) = vecadd();
        let mut out_ = straddle;
        let (mut a, mut b, mut count) = (straddle, straddle, n);
        let mut args = [
            &mut a as *mut u64 as *mut c_void,
            &mut b as *mut u64 as *mut c_void,
            &mut out_ as *mut u64 as *mut c_void,
            &mut count as *mut u32 as *mut c_void,
        ];
        assert_eq!(
            cuLaunchKernel(f, 1, 1, 1, n, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut()),
            CUDA_SUCCESS
        );
        let mut host = vec![0f32; n as usize];
        assert_eq!(
            cuMemcpyDtoH_v2(host.as_mut_ptr() as *mut c_void, straddle, 4 * n as usize),
            CUDA_SUCCESS
        );
        let five = f32::from_bits(5);
        assert!(host.iter().all(|&x| x == five + five), "{host:?}");
        // Access is granted per whole mapping; a read-only one is no memory the driver writes.
        assert_eq!(cuMemSetAccess(va, g / 2, desc, 1), CUDA_ERROR_INVALID_VALUE);
        let ro = AccessDesc { flags: 1, ..rw };
        let ro_desc = &ro as *const AccessDesc as *const _;
        assert_eq!(cuMemSetAccess(va + g as u64, g, ro_desc, 1), CUDA_SUCCESS);
        let second = va + g as u64;
        assert_eq!(
            cuMemGetAccess(&mut access, &here as *const [i32; 2] as *const _, second),
            CUDA_SUCCESS
        );
        assert_eq!(access, 1);
        assert_eq!(cuMemsetD32_v2(second, 5, 4), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemsetD32_v2(va, 5, 4), CUDA_SUCCESS);
        // Unmapped again: no longer device memory; the range can then be freed.
        assert_eq!(cuMemUnmap(va + g as u64, g), CUDA_SUCCESS);
        assert_eq!(cuMemsetD32_v2(straddle, 5, n as usize), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemAddressFree(va, 3 * g), CUDA_ERROR_INVALID_VALUE); // still mapped
                                                                           // A kernel writing to reserved memory nothing is mapped at: an illegal address, as on a GPU.
        let mut unmapped = va + 2 * g as u64;
        args[2] = &mut unmapped as *mut u64 as *mut c_void;
        // The inputs from the first granule, still mapped (through the pointers the launch reads).
        *(args[0] as *mut u64) = va;
        *(args[1] as *mut u64) = va;
        assert_eq!(
            cuLaunchKernel(f, 1, 1, 1, n, 1, 1, 0, null_mut(), args.as_mut_ptr(), null_mut()),
            CUDA_SUCCESS
        );
        assert_eq!(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
        assert_eq!(cuMemUnmap(va, g), CUDA_SUCCESS);
        assert_eq!(cuMemAddressFree(va, 3 * g), CUDA_SUCCESS);
    }
}
