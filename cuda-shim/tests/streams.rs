//! Streams, events, contexts, memory and launches through the driver API, as a C client calls them:
//! real asynchrony (work queued behind a blocked host function has not run), ordering between the
//! legacy, per-thread and created streams, timings, sticky launch errors, and exact results.

use cuda::errors::*;
use cuda::*;
use std::ffi::{c_int, c_uint, c_void, CString};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const VECADD: &str = include_str!("../../tests/ptx/vecadd.ptx");

/// Half a warp waits for the whole warp, the other half for the whole CTA: on a GPU the kernel
/// hangs; here the launch fails.
const STUCK: &str = "
.version 7.0
.target sm_80
.address_size 64
.visible .entry stuck()
{
	.reg .pred %p;
	.reg .b32 %r;
	mov.u32 %r, %tid.x;
	setp.lt.u32 %p, %r, 16;
	@%p bra LOW;
	bar.sync 0;
	ret;
LOW:
	bar.warp.sync 0xffffffff;
	ret;
}
";

fn ok(r: CUresult) {
    assert_eq!(r, CUDA_SUCCESS);
}

unsafe fn context() -> Handle {
    ok(cuInit(0));
    let mut ctx = null_mut();
    ok(cuCtxCreate_v2(&mut ctx, 0, 0));
    ctx
}

unsafe fn function(src: &str, name: &str) -> Handle {
    let text = CString::new(src).unwrap();
    let mut m = null_mut();
    ok(cuModuleLoadData(&mut m, text.as_ptr() as *const c_void));
    let mut f = null_mut();
    let n = CString::new(name).unwrap();
    ok(cuModuleGetFunction(&mut f, m, n.as_ptr()));
    f
}

/// A host function that blocks its stream until the gate opens.
struct Gate(Mutex<bool>, std::sync::Condvar);

impl Gate {
    fn new() -> Arc<Gate> {
        Arc::new(Gate(Mutex::new(false), std::sync::Condvar::new()))
    }
    fn open(&self) {
        *self.0.lock().unwrap() = true;
        self.1.notify_all();
    }
}

unsafe extern "C" fn wait_gate(p: *mut c_void) {
    let g = &*(p as *const Gate);
    let mut open = g.0.lock().unwrap();
    while !*open {
        open = g.1.wait(open).unwrap();
    }
}

unsafe fn block(stream: Handle, g: &Arc<Gate>) {
    ok(cuLaunchHostFunc(
        stream,
        wait_gate as *mut c_void,
        Arc::as_ptr(g) as *mut c_void,
    ));
}

/// Appends its tag to a log shared by the test.
struct Tag(Arc<Mutex<Vec<u32>>>, u32);

unsafe extern "C" fn push_tag(p: *mut c_void) {
    let t = Box::from_raw(p as *mut Tag);
    t.0.lock().unwrap().push(t.1);
}

unsafe fn tag(stream: Handle, log: &Arc<Mutex<Vec<u32>>>, t: u32) {
    let b = Box::into_raw(Box::new(Tag(log.clone(), t)));
    ok(cuLaunchHostFunc(stream, push_tag as *mut c_void, b as *mut c_void));
}

unsafe fn vecadd(f: Handle, stream: Handle, a: u64, b: u64, c: u64, n: &mut u32) -> CUresult {
    let (mut a, mut b, mut c) = (a, b, c);
    let mut args = [
        &mut a as *mut u64 as *mut c_void,
        &mut b as *mut u64 as *mut c_void,
        &mut c as *mut u64 as *mut c_void,
        n as *mut u32 as *mut c_void,
    ];
    cuLaunchKernel(
        f,
        n.div_ceil(64).max(1),
        1,
        1,
        64,
        1,
        1,
        0,
        stream,
        args.as_mut_ptr(),
        null_mut(),
    )
}

unsafe fn upload(v: &[f32]) -> u64 {
    let mut d = 0;
    ok(cuMemAlloc_v2(&mut d, v.len() * 4));
    ok(cuMemcpyHtoD_v2(d, v.as_ptr() as *const c_void, v.len() * 4));
    d
}

unsafe fn download(d: u64, n: usize) -> Vec<f32> {
    let mut v = vec![0f32; n];
    ok(cuMemcpyDtoH_v2(v.as_mut_ptr() as *mut c_void, d, n * 4));
    v
}

#[test]
fn launches_are_asynchronous_and_copy_their_arguments() {
    unsafe {
        let ctx = context();
        let f = function(VECADD, "vecadd");
        let mut s = null_mut();
        ok(cuStreamCreate(&mut s, 0));
        let a: Vec<f32> = (0..1000).map(|i| i as f32).collect();
        let (da, db) = (upload(&a), upload(&a));
        let mut dc = 0;
        ok(cuMemAlloc_v2(&mut dc, 4000));
        let g = Gate::new();
        block(s, &g);
        let mut n = 1000u32;
        ok(vecadd(f, s, da, db, dc, &mut n));
        // The argument buffer was copied at the call: changing `n` now must not matter.
        n = 0;
        assert_eq!(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
        // Host-pinned destination: the copy is queued behind the kernel.
        let mut host = null_mut();
        ok(cuMemAllocHost_v2(&mut host, 4000));
        ok(cuMemcpyDtoHAsync_v2(host, dc, 4000, s));
        let out = std::slice::from_raw_parts(host as *const f32, 1000);
        assert!(
            out.iter().all(|&x| x == 0.0),
            "nothing ran while the stream was blocked"
        );
        g.open();
        ok(cuStreamSynchronize(s));
        assert_eq!(cuStreamQuery(s), CUDA_SUCCESS);
        for (i, &x) in out.iter().enumerate() {
            assert_eq!(x, 2.0 * i as f32);
        }
        assert_eq!(n, 0);
        ok(cuMemFreeHost(host));
        ok(cuStreamDestroy_v2(s));
        ok(cuCtxDestroy_v2(ctx));
    }
}

#[test]
fn streams_overlap_and_the_legacy_stream_waits_for_blocking_ones() {
    unsafe {
        let ctx = context();
        let (mut blocking, mut other, mut nonblocking) = (null_mut(), null_mut(), null_mut());
        ok(cuStreamCreate(&mut blocking, 0));
        ok(cuStreamCreate(&mut other, 0));
        ok(cuStreamCreate(&mut nonblocking, 1)); // CU_STREAM_NON_BLOCKING
        let log = Arc::new(Mutex::new(vec![]));
        let g = Gate::new();
        block(blocking, &g);
        tag(blocking, &log, 1);
        tag(null_mut(), &log, 2); // legacy: waits for `blocking`
        tag(other, &log, 3); // blocking stream: waits for the legacy work queued before it
        let b = Box::into_raw(Box::new(Tag(log.clone(), 4)));
        ok(cuLaunchHostFunc_v2(
            nonblocking,
            push_tag as *mut c_void,
            b as *mut c_void,
            1,
        )); // runs at once
        ok(cuStreamSynchronize(nonblocking));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(*log.lock().unwrap(), vec![4], "only the non-blocking stream ran");
        g.open();
        ok(cuCtxSynchronize());
        assert_eq!(*log.lock().unwrap(), vec![4, 1, 2, 3]);
        for s in [blocking, other, nonblocking] {
            ok(cuStreamDestroy_v2(s));
        }
        ok(cuCtxDestroy_v2(ctx));
    }
}

#[test]
fn per_thread_default_streams_are_per_thread() {
    unsafe {
        let ctx = context();
        let g = Gate::new();
        // This thread's per-thread stream is blocked...
        ok(cuLaunchHostFunc_ptsz(
            null_mut(),
            wait_gate as *mut c_void,
            Arc::as_ptr(&g) as *mut c_void,
        ));
        assert_eq!(cuStreamQuery(2 as Handle), CUDA_ERROR_NOT_READY);
        assert_eq!(cuStreamQuery_ptsz(null_mut()), CUDA_ERROR_NOT_READY);
        // ...the legacy stream is another stream...
        assert_eq!(cuStreamQuery(null_mut()), CUDA_SUCCESS);
        // ...and another thread's per-thread stream is free.
        let ctx_h = ctx as usize;
        let other = std::thread::spawn(move || {
            ok(cuCtxSetCurrent(ctx_h as Handle));
            let done = Arc::new(Mutex::new(vec![]));
            tag(2 as Handle, &done, 7);
            ok(cuStreamSynchronize(2 as Handle));
            let v = done.lock().unwrap().clone();
            v
        })
        .join()
        .unwrap();
        assert_eq!(other, vec![7]);
        g.open();
        ok(cuStreamSynchronize_ptsz(null_mut()));
        let mut flags = 9;
        ok(cuStreamGetFlags(2 as Handle, &mut flags));
        assert_eq!(flags, 0);
        ok(cuCtxDestroy_v2(ctx));
    }
}

#[test]
fn events_time_and_order_work() {
    unsafe {
        let ctx = context();
        let (mut s1, mut s2) = (null_mut(), null_mut());
        ok(cuStreamCreate(&mut s1, 1));
        ok(cuStreamCreate(&mut s2, 1));
        let (mut start, mut end, mut untimed) = (null_mut(), null_mut(), null_mut());
        ok(cuEventCreate(&mut start, 0));
        ok(cuEventCreate(&mut end, 0));
        ok(cuEventCreate(&mut untimed, 2)); // CU_EVENT_DISABLE_TIMING
        assert_eq!(cuEventQuery(start), CUDA_SUCCESS, "never recorded");
        let g = Gate::new();
        ok(cuEventRecord(start, s1));
        block(s1, &g);
        ok(cuEventRecord(end, s1));
        let mut ms = 0f32;
        assert_eq!(cuEventQuery(end), CUDA_ERROR_NOT_READY);
        assert_eq!(cuEventElapsedTime(&mut ms, start, end), CUDA_ERROR_NOT_READY);
        // s2 waits for `end`.
        let log = Arc::new(Mutex::new(vec![]));
        ok(cuStreamWaitEvent(s2, end, 0));
        tag(s2, &log, 1);
        std::thread::sleep(Duration::from_millis(40));
        assert!(log.lock().unwrap().is_empty());
        g.open();
        ok(cuEventSynchronize(end));
        ok(cuStreamSynchronize(s2));
        assert_eq!(*log.lock().unwrap(), vec![1]);
        ok(cuEventElapsedTime(&mut ms, start, end));
        assert!((35.0..5000.0).contains(&ms), "{ms} ms");
        ok(cuEventRecord(untimed, s1));
        ok(cuEventSynchronize(untimed));
        assert_eq!(cuEventElapsedTime(&mut ms, start, untimed), CUDA_ERROR_INVALID_HANDLE);
        for e in [start, end, untimed] {
            ok(cuEventDestroy_v2(e));
        }
        assert_eq!(cuEventQuery(start), CUDA_ERROR_INVALID_HANDLE);
        ok(cuCtxDestroy_v2(ctx));
    }
}

static CALLBACK_STATUS: AtomicU32 = AtomicU32::new(u32::MAX);

unsafe extern "C" fn callback(_s: Handle, status: CUresult, data: *mut c_void) {
    CALLBACK_STATUS.store(status as u32 + data as u32, Ordering::SeqCst);
}

#[test]
fn launch_failures_are_sticky() {
    unsafe {
        let ctx = context();
        let f = function(STUCK, "stuck");
        let mut args: [*mut c_void; 0] = [];
        // Queued without error; the failure shows at the next synchronising call, and stays.
        ok(cuLaunchKernel(
            f,
            1,
            1,
            1,
            32,
            1,
            1,
            0,
            null_mut(),
            args.as_mut_ptr(),
            null_mut(),
        ));
        assert_eq!(cuCtxSynchronize(), CUDA_ERROR_LAUNCH_FAILED);
        assert_eq!(cuStreamSynchronize(null_mut()), CUDA_ERROR_LAUNCH_FAILED);
        // Every later call of the context returns it, as a GPU's driver does: the context is unusable.
        let mut d = 0;
        assert_eq!(cuMemAlloc_v2(&mut d, 4), CUDA_ERROR_LAUNCH_FAILED);
        ok(cuCtxDestroy_v2(ctx));
        // A fresh context is clean.
        let ctx = context();
        let mut s = null_mut();
        ok(cuStreamCreate(&mut s, 0));
        ok(cuStreamAddCallback(s, callback as *mut c_void, 7 as *mut c_void, 0));
        ok(cuStreamSynchronize(s));
        assert_eq!(CALLBACK_STATUS.load(Ordering::SeqCst), 7);
        ok(cuCtxDestroy_v2(ctx));
    }
}

/// `CUDA_MEMCPY2D`, laid out as in cuda.h.
#[repr(C)]
#[derive(Default)]
struct Copy2D {
    src_x: usize,
    src_y: usize,
    src_type: c_int,
    src_host: usize,
    src_device: u64,
    src_array: usize,
    src_pitch: usize,
    dst_x: usize,
    dst_y: usize,
    dst_type: c_int,
    dst_host: usize,
    dst_device: u64,
    dst_array: usize,
    dst_pitch: usize,
    width: usize,
    height: usize,
}

#[test]
fn pitched_fills_and_copies() {
    unsafe {
        let ctx = context();
        let (mut d, mut pitch) = (0u64, 0usize);
        ok(cuMemAllocPitch_v2(&mut d, &mut pitch, 40, 6, 4));
        assert_eq!(pitch, 512);
        ok(cuMemsetD2D32_v2(d, pitch, 0xdeadbeef, 10, 6));
        ok(cuMemsetD16_v2(d + pitch as u64, 0x1234, 4)); // first 8 bytes of row 1
                                                         // Rows 1..5, columns 1..8 (in u32) out to a packed host array.
        let mut host = vec![0u32; 7 * 5];
        let c = Copy2D {
            src_x: 4,
            src_y: 1,
            src_type: 2,
            src_device: d,
            src_pitch: pitch,
            dst_type: 1,
            dst_host: host.as_mut_ptr() as usize,
            dst_pitch: 28,
            width: 28,
            height: 5,
            ..Default::default()
        };
        ok(cuMemcpy2D_v2(&c as *const Copy2D as *const _));
        let mut expect = vec![0xdeadbeefu32; 35];
        expect[0] = 0x12341234;
        assert_eq!(host, expect);
        // Past the allocation's end: an error, nothing written.
        let bad = Copy2D { height: 7, ..c };
        assert_eq!(
            cuMemcpy2D_v2(&bad as *const Copy2D as *const _),
            CUDA_ERROR_INVALID_VALUE
        );
        assert_eq!(cuMemsetD2D32_v2(d, pitch, 0, 10, 7), CUDA_ERROR_INVALID_VALUE);
        assert_eq!(cuMemsetD32_v2(d + 2, 0, 1), CUDA_ERROR_INVALID_VALUE, "misaligned");
        // 3D: two slices of 3 rows of 8 bytes, device to device, into a packed destination.
        let mut packed = 0u64;
        ok(cuMemAlloc_v2(&mut packed, 48));
        let mut c3 = [0usize; 25];
        c3[4] = 2; // srcMemoryType DEVICE
        c3[6] = d as usize; // srcDevice
        c3[9] = pitch; // srcPitch
        c3[10] = 3; // srcHeight
        c3[15] = 2; // dstMemoryType DEVICE
        c3[17] = packed as usize; // dstDevice
        c3[20] = 8; // dstPitch
        c3[21] = 3; // dstHeight
        c3[22] = 8; // WidthInBytes
        c3[23] = 3; // Height
        c3[24] = 2; // Depth
        ok(cuMemcpy3D_v2(c3.as_ptr() as *const _));
        let mut out3 = [0u32; 12];
        ok(cuMemcpyDtoH_v2(out3.as_mut_ptr() as *mut c_void, packed, 48));
        // Rows 0..2 then 3..5 of the allocation; row 1 starts with the 16-bit fill.
        let mut expect3 = [0xdeadbeefu32; 12];
        expect3[2] = 0x12341234;
        expect3[3] = 0x12341234;
        assert_eq!(out3, expect3);
        // The peer form: the reserved slots carry the contexts.
        ok(cuMemsetD8_v2(packed, 0, 48));
        c3[8] = ctx as usize;
        c3[19] = ctx as usize;
        ok(cuMemcpy3DPeer(c3.as_ptr() as *const _));
        ok(cuMemcpyDtoH_v2(out3.as_mut_ptr() as *mut c_void, packed, 48));
        assert_eq!(out3, expect3);
        assert_eq!(
            cuMemcpy3D_v2(c3.as_ptr() as *const _),
            CUDA_ERROR_INVALID_VALUE,
            "reserved must be NULL"
        );
        c3[19] = 0x5;
        assert_eq!(cuMemcpy3DPeer(c3.as_ptr() as *const _), CUDA_ERROR_INVALID_HANDLE);
        c3[8] = 0;
        c3[19] = 0;
        c3[10] = 2; // a source slice shorter than the copy's height
        assert_eq!(cuMemcpy3D_v2(c3.as_ptr() as *const _), CUDA_ERROR_INVALID_VALUE);
        // An array side needs an array.
        let arr = Copy2D { src_type: 3, ..c };
        assert_eq!(
            cuMemcpy2D_v2(&arr as *const Copy2D as *const _),
            CUDA_ERROR_INVALID_HANDLE
        );
        ok(cuMemFree_v2(d));
        ok(cuCtxDestroy_v2(ctx));
    }
}

#[test]
fn async_copies_from_pageable_memory_are_staged() {
    unsafe {
        let ctx = context();
        let mut s = null_mut();
        ok(cuStreamCreate(&mut s, 0));
        let mut d = 0;
        ok(cuMemAlloc_v2(&mut d, 16));
        let g = Gate::new();
        block(s, &g);
        let mut src = [1u32, 2, 3, 4];
        ok(cuMemcpyHtoDAsync_v2(d, src.as_ptr() as *const c_void, 16, s));
        src = [0; 4]; // the caller may reuse its buffer at once
        ok(cuMemsetD32Async(d + 12, 9, 1, s));
        g.open();
        let mut back = [0u32; 4];
        // Pageable destination: complete when the call returns.
        ok(cuMemcpyDtoHAsync_v2(back.as_mut_ptr() as *mut c_void, d, 16, s));
        assert_eq!(back, [1, 2, 3, 9]);
        assert_eq!(src, [0; 4]);
        ok(cuCtxDestroy_v2(ctx));
    }
}

#[test]
fn pointer_queries() {
    unsafe {
        let ctx = context();
        let mut d = 0;
        ok(cuMemAlloc_v2(&mut d, 1000));
        let (mut base, mut size) = (0u64, 0usize);
        ok(cuMemGetAddressRange_v2(&mut base, &mut size, d + 10));
        assert_eq!((base, size), (d, 1000));
        assert_eq!(
            cuMemGetAddressRange_v2(&mut base, &mut size, d + 1000),
            CUDA_ERROR_NOT_FOUND
        );
        let mut ty = 0u32;
        ok(cuPointerGetAttribute(&mut ty as *mut u32 as *mut c_void, 2, d + 999));
        assert_eq!(ty, 2); // CU_MEMORYTYPE_DEVICE
        let mut c = null_mut::<c_void>();
        ok(cuPointerGetAttribute(&mut c as *mut *mut c_void as *mut c_void, 1, d));
        assert_eq!(c, ctx);
        let mut hp = 0u64;
        assert_eq!(
            cuPointerGetAttribute(&mut hp as *mut u64 as *mut c_void, 4, d),
            CUDA_ERROR_INVALID_VALUE
        );
        // Registered host memory: host type, same address on both sides.
        let mut v = vec![0u8; 4096];
        ok(cuMemHostRegister_v2(v.as_mut_ptr() as *mut c_void, 4096, 0));
        assert_eq!(
            cuMemHostRegister_v2(v.as_mut_ptr().add(8) as *mut c_void, 8, 0),
            CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
        );
        let mut dp = 0u64;
        ok(cuMemHostGetDevicePointer_v2(
            &mut dp,
            v.as_mut_ptr().add(5) as *mut c_void,
            0,
        ));
        assert_eq!(dp, v.as_ptr() as u64 + 5);
        ok(cuMemsetD8_v2(dp, 7, 3));
        assert_eq!(&v[4..9], &[0, 7, 7, 7, 0]);
        // cuPointerGetAttributes: unknown memory gets defaults, not an error.
        let local = 0u64;
        let mut attrs = [2 as c_int, 8, 9];
        let (mut t, mut managed, mut ordinal) = (5u32, 5u32, 5i32);
        let mut data = [
            &mut t as *mut u32 as *mut c_void,
            &mut managed as *mut u32 as *mut c_void,
            &mut ordinal as *mut i32 as *mut c_void,
        ];
        ok(cuPointerGetAttributes(
            3,
            attrs.as_mut_ptr(),
            data.as_mut_ptr(),
            &local as *const u64 as u64,
        ));
        assert_eq!((t, managed, ordinal), (0, 0, -2));
        let mut m = 0;
        ok(cuMemAllocManaged(&mut m, 64, 1));
        ok(cuPointerGetAttributes(3, attrs.as_mut_ptr(), data.as_mut_ptr(), m));
        assert_eq!((t, managed, ordinal), (2, 1, 0));
        // Prefetch and advice: managed (or unknown host) memory only.
        ok(cuMemPrefetchAsync(m, 64, 0, null_mut()));
        ok(cuMemPrefetchAsync_v2(
            m,
            64,
            std::mem::transmute::<[i32; 2], MemLocation>([2, 0]),
            0,
            null_mut(),
        ));
        assert_eq!(
            cuMemPrefetchAsync(d, 64, 0, null_mut()),
            CUDA_ERROR_INVALID_VALUE,
            "device memory"
        );
        assert_eq!(
            cuMemPrefetchAsync(m, 65, 0, null_mut()),
            CUDA_ERROR_INVALID_VALUE,
            "past the end"
        );
        ok(cuMemAdvise(m, 64, 1, 0));
        ok(cuStreamAttachMemAsync(null_mut(), m, 0, 1));
        ok(cuMemHostUnregister(v.as_mut_ptr() as *mut c_void));
        assert_eq!(
            cuMemHostUnregister(v.as_mut_ptr() as *mut c_void),
            CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED
        );
        let (mut free, mut total) = (0usize, 0usize);
        ok(cuMemGetInfo_v2(&mut free, &mut total));
        assert!(free < total);
        ok(cuCtxDestroy_v2(ctx));
    }
}

#[test]
fn context_state_and_limits() {
    unsafe {
        ok(cuInit(0));
        let mut p = null_mut();
        ok(cuDevicePrimaryCtxSetFlags_v2(0, 4)); // CU_CTX_SCHED_BLOCKING_SYNC
        ok(cuDevicePrimaryCtxRetain(&mut p, 0));
        let (mut flags, mut active) = (0u32, 0i32);
        ok(cuDevicePrimaryCtxGetState(0, &mut flags, &mut active));
        assert_eq!((flags, active), (4, 1));
        ok(cuCtxPushCurrent_v2(p));
        let mut v = 0usize;
        ok(cuCtxGetLimit(&mut v, 0));
        assert_eq!(v, 1024);
        ok(cuCtxSetLimit(0, 4096));
        ok(cuCtxGetLimit(&mut v, 0));
        assert_eq!(v, 4096);
        assert_eq!(cuCtxSetLimit(8, 1), CUDA_ERROR_UNSUPPORTED_LIMIT);
        assert_eq!(cuCtxGetLimit(&mut v, 99), CUDA_ERROR_UNSUPPORTED_LIMIT);
        let (mut least, mut greatest) = (9, 9);
        ok(cuCtxGetStreamPriorityRange(&mut least, &mut greatest));
        assert_eq!((least, greatest), (0, -5));
        let mut s = null_mut();
        ok(cuStreamCreateWithPriority(&mut s, 0, -100));
        let mut prio = 0;
        ok(cuStreamGetPriority(s, &mut prio));
        assert_eq!(prio, -5, "clamped");
        let (mut sc, mut green) = (null_mut(), 1 as Handle);
        ok(cuStreamGetCtx(s, &mut sc));
        assert_eq!(sc, p);
        ok(cuStreamGetCtx_v2(s, &mut sc, &mut green));
        assert_eq!((sc, green), (p, null_mut()));
        let mut ver = 0u32;
        ok(cuCtxGetApiVersion(p, &mut ver));
        assert_eq!(ver, 3020);
        // Reset frees the context's resources (the stream), but the handle stays retained.
        ok(cuDevicePrimaryCtxReset_v2(0));
        assert_eq!(cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
        ok(cuCtxGetLimit(&mut v, 0));
        assert_eq!(v, 1024);
        let mut popped = null_mut();
        ok(cuCtxPopCurrent_v2(&mut popped));
        assert_eq!(popped, p);
        assert_eq!(cuCtxPopCurrent_v2(&mut popped), CUDA_ERROR_INVALID_CONTEXT);
        ok(cuDevicePrimaryCtxRelease_v2(0));
        ok(cuDevicePrimaryCtxGetState(0, &mut flags, &mut active));
        assert_eq!(active, 0);
        assert_eq!(cuCtxDestroy_v2(p), CUDA_ERROR_INVALID_HANDLE);
    }
}

#[test]
fn function_attributes_and_occupancy() {
    unsafe {
        let ctx = context();
        let f = function(VECADD, "vecadd");
        let mut v = 0;
        ok(cuFuncGetAttribute(&mut v, 0, f));
        assert_eq!(v, 1024);
        ok(cuFuncGetAttribute(&mut v, 8, f));
        assert_eq!(v, 48 * 1024);
        let mut n = 0;
        ok(cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut n, f, 256, 0));
        assert_eq!(n, 8); // 2048 threads per multiprocessor
        ok(cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut n, f, 32, 0));
        assert_eq!(n, 32); // the block limit
        ok(cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut n, f, 64, 100 * 1024));
        assert_eq!(n, 2); // shared memory: 228 KiB per multiprocessor
        let (mut grid, mut block) = (0, 0);
        ok(cuOccupancyMaxPotentialBlockSize(
            &mut grid,
            &mut block,
            f,
            null_mut(),
            0,
            0,
        ));
        let mut sms = 0;
        ok(cuDeviceGetAttribute(&mut sms, 16, 0));
        assert_eq!((grid, block), (2 * sms, 1024));
        ok(cuOccupancyMaxPotentialBlockSize(
            &mut grid,
            &mut block,
            f,
            null_mut(),
            0,
            200,
        ));
        assert_eq!(block, 128); // 16 blocks of 128 fill a multiprocessor; 10 of 192 do not
                                // Dynamic shared memory over 48 KiB needs the opt-in.
        let (a, b) = (upload(&[1.0; 64]), upload(&[2.0; 64]));
        let mut c = 0;
        ok(cuMemAlloc_v2(&mut c, 256));
        let (mut pa, mut pb, mut pc, mut pn) = (a, b, c, 64u32);
        let mut args = [
            &mut pa as *mut u64 as *mut c_void,
            &mut pb as *mut u64 as *mut c_void,
            &mut pc as *mut u64 as *mut c_void,
            &mut pn as *mut u32 as *mut c_void,
        ];
        let big = 64 * 1024;
        assert_eq!(
            cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, big, null_mut(), args.as_mut_ptr(), null_mut()),
            CUDA_ERROR_INVALID_VALUE
        );
        ok(cuFuncSetAttribute(f, 8, big as c_int));
        ok(cuLaunchKernel(
            f,
            1,
            1,
            1,
            64,
            1,
            1,
            big,
            null_mut(),
            args.as_mut_ptr(),
            null_mut(),
        ));
        assert_eq!(download(c, 64), vec![3.0; 64]);
        assert_eq!(cuFuncSetAttribute(f, 8, 300 * 1024), CUDA_ERROR_INVALID_VALUE);
        let mut offset = 0usize;
        let mut size = 0usize;
        ok(cuFuncGetParamCount(f, &mut size));
        assert_eq!(size, 4);
        ok(cuFuncGetParamInfo(f, 3, &mut offset, &mut size));
        assert_eq!((offset, size), (24, 4));
        assert_eq!(
            cuFuncGetParamInfo(f, 4, &mut offset, &mut size),
            CUDA_ERROR_INVALID_VALUE
        );
        let mut name = std::ptr::null();
        ok(cuFuncGetName(&mut name, f));
        assert_eq!(std::ffi::CStr::from_ptr(name).to_str().unwrap(), "vecadd");
        // cuLaunchKernelEx with attributes; clusters beyond one block are not supported.
        #[repr(C)]
        struct Attr {
            id: c_uint,
            pad: [u8; 4],
            value: [u32; 16],
        }
        #[repr(C)]
        struct Config {
            grid: [c_uint; 3],
            block: [c_uint; 3],
            shared: c_uint,
            stream: Handle,
            attrs: *mut Attr,
            n: c_uint,
        }
        let mut attrs = [
            Attr {
                id: 8,
                pad: [0; 4],
                value: [0; 16],
            },
            Attr {
                id: 2,
                pad: [0; 4],
                value: [1; 16],
            },
        ];
        let cfg = Config {
            grid: [1, 1, 1],
            block: [64, 1, 1],
            shared: 0,
            stream: null_mut(),
            attrs: attrs.as_mut_ptr(),
            n: 2,
        };
        ok(cuMemsetD32_v2(c, 0, 64));
        ok(cuLaunchKernelEx(
            &cfg as *const Config as *const _,
            f,
            args.as_mut_ptr(),
            null_mut(),
        ));
        assert_eq!(download(c, 64), vec![3.0; 64]);
        let mut attrs = [Attr {
            id: 4,
            pad: [0; 4],
            value: [2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        }];
        let cfg = Config {
            attrs: attrs.as_mut_ptr(),
            n: 1,
            ..cfg
        };
        // Clusters of two must divide the grid (of one CTA here); a grid of two runs as one cluster.
        assert_eq!(
            cuLaunchKernelEx(&cfg as *const Config as *const _, f, args.as_mut_ptr(), null_mut()),
            CUDA_ERROR_INVALID_CLUSTER_SIZE
        );
        let cfg = Config { grid: [2, 1, 1], ..cfg };
        ok(cuMemsetD32_v2(c, 0, 64));
        ok(cuLaunchKernelEx(
            &cfg as *const Config as *const _,
            f,
            args.as_mut_ptr(),
            null_mut(),
        ));
        assert_eq!(download(c, 64), vec![3.0; 64]);
        // Past 8 CTAs a cluster needs the function's leave.
        attrs[0].value[..3].copy_from_slice(&[16, 1, 1]);
        let cfg = Config {
            grid: [16, 1, 1],
            ..cfg
        };
        assert_eq!(
            cuLaunchKernelEx(&cfg as *const Config as *const _, f, args.as_mut_ptr(), null_mut()),
            CUDA_ERROR_INVALID_CLUSTER_SIZE
        );
        // The largest cluster: the portable 8, or 16 with the leave; how many fit at once.
        let mut size = 0;
        ok(cuOccupancyMaxPotentialClusterSize(
            &mut size,
            f,
            &cfg as *const Config as *const _,
        ));
        assert_eq!(size, 8);
        ok(cuFuncSetAttribute(f, 14, 1));
        ok(cuOccupancyMaxPotentialClusterSize(
            &mut size,
            f,
            &cfg as *const Config as *const _,
        ));
        assert_eq!(size, 16);
        ok(cuLaunchKernelEx(
            &cfg as *const Config as *const _,
            f,
            args.as_mut_ptr(),
            null_mut(),
        ));
        ok(cuFuncSetAttribute(f, 14, 0));
        let (mut blocks, mut clusters) = (0, 0);
        ok(cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut blocks, f, 64, 0));
        ok(cuOccupancyMaxActiveClusters(
            &mut clusters,
            f,
            &cfg as *const Config as *const _,
        ));
        assert_eq!(clusters, blocks * sms / 16);
        let plain = Config { n: 0, ..cfg };
        assert_eq!(
            cuOccupancyMaxActiveClusters(&mut clusters, f, &plain as *const Config as *const _),
            CUDA_ERROR_INVALID_CLUSTER_SIZE
        );
        // Cooperative grids must fit on the device at once.
        assert_eq!(
            cuLaunchCooperativeKernel(f, 33 * sms as u32, 1, 1, 64, 1, 1, 0, null_mut(), args.as_mut_ptr()),
            CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE
        );
        ok(cuLaunchCooperativeKernel(
            f,
            1,
            1,
            1,
            64,
            1,
            1,
            0,
            null_mut(),
            args.as_mut_ptr(),
        ));
        ok(cuCtxSynchronize());
        ok(cuCtxDestroy_v2(ctx));
    }
}

/// Many threads, several contexts, several streams per thread: launches and async copies at
/// once, each result checked exactly.
#[test]
fn concurrent_streams_and_contexts() {
    unsafe {
        ok(cuInit(0));
    }
    let shared_ctx = unsafe {
        let mut c = null_mut();
        ok(cuCtxCreate_v2(&mut c, 0, 0));
        let mut none = null_mut();
        ok(cuCtxPopCurrent_v2(&mut none));
        c as usize
    };
    let failures = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..6u32)
        .map(|t| {
            let failures = failures.clone();
            std::thread::spawn(move || unsafe {
                // Even threads share one context; odd ones have their own.
                let own = if t % 2 == 1 { Some(context()) } else { None };
                if own.is_none() {
                    ok(cuCtxSetCurrent(shared_ctx as Handle));
                }
                let f = function(VECADD, "vecadd");
                let n = 4096usize;
                let mut streams = [null_mut(); 3];
                for s in &mut streams {
                    ok(cuStreamCreate(s, (t % 2) as c_uint));
                }
                let mut host = null_mut();
                ok(cuMemAllocHost_v2(&mut host, n * 4 * streams.len()));
                let mut bufs = vec![];
                for (k, &s) in streams.iter().enumerate() {
                    let a: Vec<f32> = (0..n).map(|i| (i as u32 * (t + 1) + k as u32) as f32).collect();
                    let (mut da, mut db, mut dc) = (0, 0, 0);
                    for p in [&mut da, &mut db, &mut dc] {
                        ok(cuMemAllocAsync(p, n * 4, s));
                    }
                    ok(cuMemcpyHtoDAsync_v2(da, a.as_ptr() as *const c_void, n * 4, s));
                    ok(cuMemcpyDtoDAsync_v2(db, da, n * 4, s));
                    for _ in 0..5 {
                        let mut nn = n as u32;
                        ok(vecadd(f, s, da, db, dc, &mut nn));
                        ok(cuMemcpyDtoDAsync_v2(db, dc, n * 4, s));
                    }
                    let dst = (host as *mut f32).add(k * n);
                    ok(cuMemcpyDtoHAsync_v2(dst as *mut c_void, dc, n * 4, s));
                    ok(cuMemFreeAsync(da, s));
                    bufs.push((a, db, dc));
                }
                ok(cuCtxSynchronize());
                for (k, (a, db, dc)) in bufs.iter().enumerate() {
                    let out = std::slice::from_raw_parts((host as *const f32).add(k * n), n);
                    // b = a, then b = a + b five times: 6a.
                    for i in 0..n {
                        if out[i] != 6.0 * a[i] {
                            failures.store(true, Ordering::SeqCst);
                        }
                    }
                    ok(cuMemFree_v2(*db));
                    ok(cuMemFree_v2(*dc));
                }
                ok(cuMemFreeHost(host));
                for s in streams {
                    ok(cuStreamDestroy_v2(s));
                }
                if let Some(c) = own {
                    ok(cuCtxDestroy_v2(c));
                }
            })
        })
        .collect();
    let t0 = Instant::now();
    for t in threads {
        t.join().unwrap();
    }
    assert!(!failures.load(Ordering::SeqCst), "a result differed");
    assert!(t0.elapsed() < Duration::from_secs(120));
    unsafe { ok(cuCtxDestroy_v2(shared_ctx as Handle)) };
}
