//! The `driver` target: the input bytes decode to a sequence of driver API calls. Each argument is a
//! live object, a stale one (destroyed context, unloaded module, freed pointer, also from earlier
//! inputs), a handle of the wrong kind, a forged value, null, or an out-of-range size or enum. Every
//! call must return a `CUresult`; `CUDA_ERROR_UNKNOWN` means the shim caught a panic.
//!
//! What is passed stays within the contract a C caller could break only by accident of its own:
//! out-pointers are null or point at slots large enough; host pointers are null, unmapped low
//! addresses, memory the shim handed out, or a static buffer with sizes that fit it (a wild pointer
//! into the process's own heap would corrupt it whatever the driver did). Allocations are at most a
//! few KiB (huge sizes are ones no device can have), and kernels are three small ones that end.
//!
//! The regression inputs in `tests/fuzz/corpus/driver` mean what this decoder makes of them: a change
//! to the decoding must rewrite them (each holds a few calls, spelt out byte by byte), and
//! `cuda-shim/tests/robustness.rs` states the same findings directly.

use crate::targets::check;
use cuda::errors::*;
use cuda::library::*;
use cuda::link::*;
use cuda::*;
use std::ffi::{c_int, c_uint, c_void, CString};
use std::ptr::{null, null_mut};
use std::sync::Mutex;

/// Kernels that end whatever their arguments: `write` stores `%tid.x` to `p[tid]` below `n`, `fault`
/// traps, `sync` meets at a barrier over shared memory. All three take `(u64 p, u32 n)`.
const KERNELS: &str = r#"
.version 7.0
.target sm_52
.address_size 64
.visible .global .u32 counter;
.visible .entry write(.param .u64 p, .param .u32 n)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    .reg .pred %q;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    setp.ge.u32 %q, %r2, %r1;
    @%q bra DONE;
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
DONE:
    ret;
}
.visible .entry fault(.param .u64 p, .param .u32 n)
{
    trap;
}
.visible .entry sync(.param .u64 p, .param .u32 n)
{
    .reg .b32 %r<4>;
    .shared .align 4 .u32 s[32];
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 31;
    mul.lo.u32 %r3, %r2, 4;
    mov.u32 %r2, s;
    add.u32 %r3, %r3, %r2;
    st.shared.u32 [%r3], %r1;
    bar.sync 0;
    ld.shared.u32 %r1, [%r3];
    ret;
}
"#;

const NAMES: &[&str] = &["write", "fault", "sync", "counter", "", "nope", "write\u{1}"];

/// The host buffer copies may read and write: static, so queued work never outlives it.
const BUF: usize = 16 << 10;
struct HostBuf([u8; BUF]);
static mut HOST_BUF: HostBuf = HostBuf([0; BUF]);

fn buf() -> *mut u8 {
    // SAFETY: only the address is taken; the driver writes through it like a C program's buffer.
    unsafe { std::ptr::addr_of_mut!(HOST_BUF.0) as *mut u8 }
}

/// Handles and pointers of earlier inputs (all destroyed or freed by now).
static STALE: Mutex<Vec<u64>> = Mutex::new(Vec::new());

struct Input<'a> {
    b: &'a [u8],
    at: usize,
}

impl Input<'_> {
    fn u8(&mut self) -> u8 {
        let v = self.b.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        v
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn u64(&mut self) -> u64 {
        (self.u32() as u64) | (self.u32() as u64) << 32
    }
    fn below(&mut self, n: usize) -> usize {
        self.u8() as usize % n.max(1)
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
    fn done(&self) -> bool {
        self.at >= self.b.len()
    }
}

#[derive(Default)]
struct Pool {
    live: Vec<u64>,
    dead: Vec<u64>,
}

impl Pool {
    /// After a call that creates a handle: a success made `h` (the out-slot's value) live.
    fn created(&mut self, r: CUresult, h: u64) {
        if r == CUDA_SUCCESS {
            self.live.push(h);
        }
    }

    /// After a call that destroys `h`: a success made it dead.
    fn destroyed(&mut self, r: CUresult, h: u64) {
        if r == CUDA_SUCCESS {
            self.kill(h);
        }
    }

    fn kill(&mut self, h: u64) {
        if let Some(i) = self.live.iter().position(|&x| x == h) {
            self.live.swap_remove(i);
            self.dead.push(h);
        }
    }
}

/// A slot an out-pointer may point at: big enough for any struct a query writes.
#[repr(C, align(16))]
struct Slot([u8; 512]);

/// `CUlaunchConfig` and `CUlaunchAttribute` as cuda.h lays them out.
#[repr(C)]
struct LaunchConfig {
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared: c_uint,
    stream: *mut c_void,
    attrs: *mut LaunchAttribute,
    num_attrs: c_uint,
}
#[repr(C)]
#[derive(Clone, Copy)]
struct LaunchAttribute {
    id: c_uint,
    pad: [u8; 4],
    value: [u32; 16],
}

/// `CUDA_MEMCPY2D`.
#[repr(C)]
struct Memcpy2D {
    src_x: usize,
    src_y: usize,
    src_type: c_int,
    src_host: *const c_void,
    src_device: u64,
    src_array: *mut c_void,
    src_pitch: usize,
    dst_x: usize,
    dst_y: usize,
    dst_type: c_int,
    dst_host: *mut c_void,
    dst_device: u64,
    dst_array: *mut c_void,
    dst_pitch: usize,
    width: usize,
    height: usize,
}

extern "C" fn host_fn(_: *mut c_void) {}
extern "C" fn stream_cb(_: *mut c_void, _: CUresult, _: *mut c_void) {}

#[derive(Default)]
struct State {
    ctx: Pool,
    module: Pool,
    func: Pool,
    stream: Pool,
    event: Pool,
    lib: Pool,
    kernel: Pool,
    link: Pool,
    /// Live device allocations (base, size) and freed bases.
    mem: Vec<(u64, usize)>,
    freed: Vec<u64>,
    host: Vec<(u64, usize)>,
    host_freed: Vec<u64>,
    registered: bool,
    retained: u32,
    loads: u32,
    /// CUDA arrays, and texture and surface objects.
    arrays: Vec<u64>,
    objects: Vec<u64>,
}

impl State {
    fn pools(&self) -> [&Pool; 8] {
        [
            &self.ctx,
            &self.module,
            &self.func,
            &self.stream,
            &self.event,
            &self.lib,
            &self.kernel,
            &self.link,
        ]
    }

    /// A handle for an argument that takes pool `which`'s kind.
    fn handle(&self, inp: &mut Input, which: usize) -> *mut c_void {
        let p = self.pools()[which];
        let any = |v: &[u64], inp: &mut Input| if v.is_empty() { 0 } else { v[inp.below(v.len())] };
        let h = match inp.below(16) {
            0..=7 if !p.live.is_empty() => any(&p.live, inp),
            8 | 9 => any(&p.dead, inp),
            10 => 0,
            11 => inp.pick(&[1, 8, 0xdead_beef0, u64::MAX, 0x1000]),
            12 => {
                let other = self.pools()[inp.below(8)];
                any(&other.live, inp)
            }
            13 => any(&p.live, inp).wrapping_add(1),
            14 => inp.u64(),
            15 => any(&STALE.lock().unwrap(), inp),
            _ => any(&p.live, inp),
        };
        h as *mut c_void
    }

    /// A device pointer for an argument the shim must bound by its allocations: anything.
    fn dptr(&self, inp: &mut Input) -> u64 {
        match inp.below(12) {
            0..=4 if !self.mem.is_empty() => {
                let (b, s) = self.mem[inp.below(self.mem.len())];
                b + inp.pick(&[0, 0, 1, 4, s as u64 - 1, s as u64, s as u64 + 1])
            }
            5 if !self.freed.is_empty() => self.freed[inp.below(self.freed.len())],
            6 if !self.host.is_empty() => self.host[inp.below(self.host.len())].0,
            7 => 0,
            8 => inp.u64(),
            9 => inp.pick(&[0x10, 0x1000, u64::MAX, u64::MAX - 3, 1 << 47]),
            10 => {
                let s = STALE.lock().unwrap();
                if s.is_empty() {
                    0
                } else {
                    s[inp.below(s.len())]
                }
            }
            _ => self.mem.first().map_or(0, |m| m.0),
        }
    }

    /// A host or unified pointer for `n` bytes: memory the shim knows (any size, it checks), null,
    /// unmapped low addresses, or the static buffer when `n` fits it.
    fn hptr(&self, inp: &mut Input, n: usize) -> u64 {
        match inp.below(10) {
            0..=2 if !self.mem.is_empty() => self.mem[inp.below(self.mem.len())].0,
            3 if !self.freed.is_empty() => self.freed[inp.below(self.freed.len())],
            4 if !self.host.is_empty() => self.host[inp.below(self.host.len())].0,
            5 if !self.host_freed.is_empty() => self.host_freed[inp.below(self.host_freed.len())],
            6 => 0,
            7 => inp.pick(&[0x10, 0x1000, 0x8000]),
            _ if n <= BUF => buf() as u64,
            _ => 0,
        }
    }

    fn size(inp: &mut Input) -> usize {
        inp.pick(&[
            0,
            1,
            3,
            16,
            64,
            255,
            256,
            1000,
            4096,
            usize::MAX,
            1 << 50,
            (usize::MAX >> 1) + 1,
        ])
    }

    fn count(inp: &mut Input) -> usize {
        inp.pick(&[
            0,
            1,
            4,
            16,
            64,
            255,
            256,
            4096,
            4097,
            8192,
            usize::MAX,
            1 << 40,
            1 << 63,
        ])
    }
}

/// An out-pointer: null or a slot.
fn out<T>(inp: &mut Input, slot: &mut Slot) -> *mut T {
    if inp.below(8) == 0 {
        null_mut()
    } else {
        slot.0.as_mut_ptr() as *mut T
    }
}

fn read<T: Copy>(slot: &Slot) -> T {
    unsafe { (slot.0.as_ptr() as *const T).read() }
}

fn enum_value(inp: &mut Input) -> i32 {
    match inp.below(4) {
        0 => inp.pick(&[-1, i32::MIN, i32::MAX, 1 << 16, 255]),
        _ => inp.below(40) as i32,
    }
}

fn init() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| unsafe {
        assert_eq!(cuInit(0), CUDA_SUCCESS);
    });
}

/// Runs the call sequence the bytes describe, then destroys what it made. `Ok(true)`: some launch
/// ran.
pub fn run(data: &[u8]) -> Result<bool, String> {
    init();
    let mut s = State::default();
    let mut inp = Input { b: data, at: 0 };
    let mut launched = false;
    let mut calls = 0;
    // An odd first byte starts with a context, the kernels and a buffer, so launches are common.
    if inp.u8() & 1 == 1 {
        unsafe { prologue(&mut s) };
    }
    let result = (|| -> Result<(), String> {
        while !inp.done() && calls < 200 {
            calls += 1;
            launched |= unsafe { step(&mut s, &mut inp)? };
        }
        Ok(())
    })();
    unsafe { cleanup(&mut s) };
    result.map(|()| launched)
}

/// A context, the kernels' module and functions, and a 256-byte buffer.
unsafe fn prologue(s: &mut State) {
    let mut h = null_mut();
    if cuCtxCreate_v2(&mut h, 0, 0) != CUDA_SUCCESS {
        return;
    }
    s.ctx.live.push(h as u64);
    let text = CString::new(KERNELS).unwrap();
    s.loads += 1;
    if cuModuleLoadData(&mut h, text.as_ptr() as *const c_void) == CUDA_SUCCESS {
        s.module.live.push(h as u64);
        for name in [c"write", c"fault", c"sync"] {
            let mut f = null_mut();
            if cuModuleGetFunction(&mut f, h, name.as_ptr()) == CUDA_SUCCESS {
                s.func.live.push(f as u64);
            }
        }
    }
    let mut d = 0;
    if cuMemAlloc_v2(&mut d, 256) == CUDA_SUCCESS {
        s.mem.push((d, 256));
    }
}

/// One call; `Ok(true)` for a launch that was accepted.
unsafe fn step(s: &mut State, inp: &mut Input) -> Result<bool, String> {
    let mut slot = Slot([0; 512]);
    let mut slot2 = Slot([0; 512]);
    let op = inp.u8();
    let (name, r) = match op % 64 {
        // ---- contexts ----
        0 => {
            let p = out(inp, &mut slot);
            let flags = inp.pick(&[0, 1, 4, 8, 0x20, 0xffff_ffff]);
            let dev = inp.pick(&[0, 0, 0, 1, -1]);
            let r = cuCtxCreate_v2(p, flags, dev);
            s.ctx.created(r, read(&slot));
            ("cuCtxCreate_v2", r)
        }
        1 => {
            let h = s.handle(inp, 0);
            let r = cuCtxDestroy_v2(h);
            s.ctx.destroyed(r, h as u64);
            ("cuCtxDestroy_v2", r)
        }
        2 => ("cuCtxSetCurrent", cuCtxSetCurrent(s.handle(inp, 0))),
        3 => ("cuCtxPushCurrent_v2", cuCtxPushCurrent_v2(s.handle(inp, 0))),
        4 => ("cuCtxPopCurrent_v2", cuCtxPopCurrent_v2(out(inp, &mut slot))),
        5 => match inp.below(10) {
            0 => ("cuCtxGetCurrent", cuCtxGetCurrent(out(inp, &mut slot))),
            1 => ("cuCtxGetDevice", cuCtxGetDevice(out(inp, &mut slot))),
            2 => ("cuCtxSynchronize", cuCtxSynchronize()),
            3 => (
                "cuCtxGetApiVersion",
                cuCtxGetApiVersion(s.handle(inp, 0), out(inp, &mut slot)),
            ),
            4 => ("cuCtxGetLimit", cuCtxGetLimit(out(inp, &mut slot), enum_value(inp))),
            5 => {
                let v = inp.pick(&[0, 1, 1024, 1 << 20, usize::MAX, 1 << 40]);
                ("cuCtxSetLimit", cuCtxSetLimit(enum_value(inp), v))
            }
            6 => ("cuCtxSetCacheConfig", cuCtxSetCacheConfig(enum_value(inp))),
            7 => (
                "cuCtxGetStreamPriorityRange",
                cuCtxGetStreamPriorityRange(out(inp, &mut slot), out(inp, &mut slot2)),
            ),
            8 => ("cuCtxSetFlags", cuCtxSetFlags(enum_value(inp) as c_uint)),
            _ => ("cuCtxGetId", cuCtxGetId(s.handle(inp, 0), out(inp, &mut slot))),
        },
        6 => {
            let dev = inp.pick(&[0, 0, 1, -1]);
            match inp.below(5) {
                0 => {
                    let p = out(inp, &mut slot);
                    let r = cuDevicePrimaryCtxRetain(p, dev);
                    if r == CUDA_SUCCESS {
                        s.retained += 1;
                        s.ctx.live.push(read(&slot));
                    }
                    ("cuDevicePrimaryCtxRetain", r)
                }
                1 => {
                    let r = cuDevicePrimaryCtxRelease_v2(dev);
                    if r == CUDA_SUCCESS {
                        s.retained = s.retained.saturating_sub(1);
                    }
                    ("cuDevicePrimaryCtxRelease_v2", r)
                }
                2 => ("cuDevicePrimaryCtxReset_v2", cuDevicePrimaryCtxReset_v2(dev)),
                3 => (
                    "cuDevicePrimaryCtxSetFlags_v2",
                    cuDevicePrimaryCtxSetFlags_v2(dev, enum_value(inp) as c_uint),
                ),
                _ => (
                    "cuDevicePrimaryCtxGetState",
                    cuDevicePrimaryCtxGetState(dev, out(inp, &mut slot), out(inp, &mut slot2)),
                ),
            }
        }
        // ---- devices ----
        7 => {
            let dev = inp.pick(&[0, 0, 1, -1, i32::MAX]);
            let len = inp.pick(&[-1, 0, 1, 16, 64, 512]);
            match inp.below(9) {
                0 => (
                    "cuDeviceGetAttribute",
                    cuDeviceGetAttribute(out(inp, &mut slot), enum_value(inp).wrapping_mul(4), dev),
                ),
                1 => ("cuDeviceGetName", cuDeviceGetName(out(inp, &mut slot), len, dev)),
                2 => ("cuDeviceTotalMem_v2", cuDeviceTotalMem_v2(out(inp, &mut slot), dev)),
                3 => (
                    "cuDeviceGetPCIBusId",
                    cuDeviceGetPCIBusId(out(inp, &mut slot), len, dev),
                ),
                4 => {
                    let id = [c"0000:01:00.0", c"", c"zz", c"0000:00:00.0"][inp.below(4)];
                    let id = if inp.below(6) == 0 { null() } else { id.as_ptr() };
                    ("cuDeviceGetByPCIBusId", cuDeviceGetByPCIBusId(out(inp, &mut slot), id))
                }
                5 => (
                    "cuDeviceComputeCapability",
                    cuDeviceComputeCapability(out(inp, &mut slot), out(inp, &mut slot2), dev),
                ),
                6 => ("cuDeviceGetUuid_v2", cuDeviceGetUuid_v2(out(inp, &mut slot), dev)),
                7 => ("cuDeviceGet", cuDeviceGet(out(inp, &mut slot), dev)),
                _ => (
                    "cuDeviceCanAccessPeer",
                    cuDeviceCanAccessPeer(out(inp, &mut slot), dev, inp.pick(&[0, 1, -1])),
                ),
            }
        }
        // ---- memory ----
        8..=10 => {
            let p = out(inp, &mut slot);
            let n = State::size(inp);
            let r = cuMemAlloc_v2(p, n);
            if r == CUDA_SUCCESS {
                if n > 4096 {
                    return Err(format!("cuMemAlloc_v2 of {n} bytes succeeded"));
                }
                s.mem.push((read(&slot), n.max(1)));
            }
            ("cuMemAlloc_v2", r)
        }
        11 | 12 => {
            let d = s.dptr(inp);
            let r = cuMemFree_v2(d);
            if r == CUDA_SUCCESS {
                if let Some(i) = s.mem.iter().position(|m| m.0 == d) {
                    s.mem.swap_remove(i);
                    s.freed.push(d);
                } else if let Some(i) = s.host.iter().position(|m| m.0 == d) {
                    // Host memory is device memory too under unified addressing.
                    s.host.swap_remove(i);
                    s.host_freed.push(d);
                }
            }
            ("cuMemFree_v2", r)
        }
        13 => {
            let p = out(inp, &mut slot);
            let n = State::size(inp);
            let r = if inp.below(2) == 0 {
                ("cuMemAllocHost_v2", cuMemAllocHost_v2(p, n))
            } else {
                ("cuMemHostAlloc", cuMemHostAlloc(p, n, enum_value(inp) as c_uint))
            };
            if r.1 == CUDA_SUCCESS {
                if n > 4096 {
                    return Err(format!("{} of {n} bytes succeeded", r.0));
                }
                s.host.push((read(&slot), n.max(1)));
            }
            r
        }
        14 => {
            let p = s.hptr(inp, 0);
            let r = cuMemFreeHost(p as *mut c_void);
            if r == CUDA_SUCCESS {
                if let Some(i) = s.host.iter().position(|m| m.0 == p) {
                    s.host.swap_remove(i);
                    s.host_freed.push(p);
                }
            }
            ("cuMemFreeHost", r)
        }
        15 => {
            if s.registered || inp.below(2) == 0 {
                let r = cuMemHostUnregister(s.hptr(inp, 0) as *mut c_void);
                if r == CUDA_SUCCESS {
                    s.registered = false;
                }
                ("cuMemHostUnregister", r)
            } else {
                let n = inp.pick(&[0, 1, 4096, BUF]);
                let p = if inp.below(4) == 0 {
                    null_mut()
                } else {
                    buf() as *mut c_void
                };
                let r = cuMemHostRegister_v2(p, n, enum_value(inp) as c_uint);
                s.registered |= r == CUDA_SUCCESS;
                ("cuMemHostRegister_v2", r)
            }
        }
        16 => match inp.below(6) {
            0 => (
                "cuMemGetAddressRange_v2",
                cuMemGetAddressRange_v2(out(inp, &mut slot), out(inp, &mut slot2), s.dptr(inp)),
            ),
            1 => (
                "cuPointerGetAttribute",
                cuPointerGetAttribute(out(inp, &mut slot), enum_value(inp), s.dptr(inp)),
            ),
            2 => {
                let n = inp.below(9) as c_uint;
                let mut attrs = [0 as c_int; 8];
                for a in attrs.iter_mut() {
                    *a = enum_value(inp);
                }
                let mut slots: Vec<Slot> = (0..8).map(|_| Slot([0; 512])).collect();
                let mut data: Vec<*mut c_void> = slots.iter_mut().map(|s| s.0.as_mut_ptr() as *mut c_void).collect();
                let d = s.dptr(inp);
                (
                    "cuPointerGetAttributes",
                    cuPointerGetAttributes(n, attrs.as_mut_ptr(), data.as_mut_ptr(), d),
                )
            }
            3 => (
                "cuMemGetInfo_v2",
                cuMemGetInfo_v2(out(inp, &mut slot), out(inp, &mut slot2)),
            ),
            4 => (
                "cuPointerSetAttribute",
                cuPointerSetAttribute(
                    out::<c_void>(inp, &mut slot) as *const c_void,
                    enum_value(inp),
                    s.dptr(inp),
                ),
            ),
            _ => (
                "cuMemHostGetFlags",
                cuMemHostGetFlags(out(inp, &mut slot), s.hptr(inp, 0) as *mut c_void),
            ),
        },
        17..=19 => {
            let n = State::count(inp);
            let stream = s.handle(inp, 3);
            let asynchronous = inp.below(3) == 0;
            match (inp.below(4), asynchronous) {
                (0, false) => ("cuMemcpyHtoD_v2", cuMemcpyHtoD_v2(s.dptr(inp), host_src(s, inp, n), n)),
                (0, true) => (
                    "cuMemcpyHtoDAsync_v2",
                    cuMemcpyHtoDAsync_v2(s.dptr(inp), host_src(s, inp, n), n, stream),
                ),
                (1, false) => (
                    "cuMemcpyDtoH_v2",
                    cuMemcpyDtoH_v2(host_src(s, inp, n) as *mut c_void, s.dptr(inp), n),
                ),
                (1, true) => (
                    "cuMemcpyDtoHAsync_v2",
                    cuMemcpyDtoHAsync_v2(host_src(s, inp, n) as *mut c_void, s.dptr(inp), n, stream),
                ),
                (2, false) => ("cuMemcpyDtoD_v2", cuMemcpyDtoD_v2(s.dptr(inp), s.dptr(inp), n)),
                (2, true) => (
                    "cuMemcpyDtoDAsync_v2",
                    cuMemcpyDtoDAsync_v2(s.dptr(inp), s.dptr(inp), n, stream),
                ),
                (_, false) => ("cuMemcpy", cuMemcpy(s.hptr(inp, n), s.hptr(inp, n), n)),
                (_, true) => (
                    "cuMemcpyAsync",
                    cuMemcpyAsync(s.hptr(inp, n), s.hptr(inp, n), n, stream),
                ),
            }
        }
        20 | 21 => {
            let d = s.dptr(inp);
            let n = State::count(inp);
            let v = inp.u32();
            let stream = s.handle(inp, 3);
            let (pitch, h) = (State::count(inp), inp.pick(&[0, 1, 2, 16, usize::MAX]));
            match inp.below(8) {
                0 => ("cuMemsetD8_v2", cuMemsetD8_v2(d, v as u8, n)),
                1 => ("cuMemsetD16_v2", cuMemsetD16_v2(d, v as u16, n)),
                2 => ("cuMemsetD32_v2", cuMemsetD32_v2(d, v, n)),
                3 => ("cuMemsetD8Async", cuMemsetD8Async(d, v as u8, n, stream)),
                4 => ("cuMemsetD32Async", cuMemsetD32Async(d, v, n, stream)),
                5 => ("cuMemsetD2D8_v2", cuMemsetD2D8_v2(d, pitch, v as u8, n, h)),
                6 => ("cuMemsetD2D32_v2", cuMemsetD2D32_v2(d, pitch, v, n, h)),
                _ => (
                    "cuMemsetD2D16Async",
                    cuMemsetD2D16Async(d, pitch, v as u16, n, h, stream),
                ),
            }
        }
        22 => {
            let p = out(inp, &mut slot);
            let w = inp.pick(&[0, 1, 100, 2048, usize::MAX, 1 << 40]);
            let h = inp.pick(&[0, 1, 64, usize::MAX]);
            let r = cuMemAllocPitch_v2(p, out(inp, &mut slot2), w, h, inp.pick(&[0, 1, 4, 8, 16, 3]));
            if r == CUDA_SUCCESS {
                let pitch: usize = read(&slot2);
                s.mem.push((read(&slot), (pitch * h).max(1)));
            }
            ("cuMemAllocPitch_v2", r)
        }
        23 => {
            let stream = s.handle(inp, 3);
            match inp.below(4) {
                0 => {
                    let p = out(inp, &mut slot);
                    let n = State::size(inp);
                    let r = cuMemAllocAsync(p, n, stream);
                    if r == CUDA_SUCCESS {
                        s.mem.push((read(&slot), n.max(1)));
                    }
                    ("cuMemAllocAsync", r)
                }
                1 => {
                    let d = s.dptr(inp);
                    let r = cuMemFreeAsync(d, stream);
                    if r == CUDA_SUCCESS {
                        if let Some(i) = s.mem.iter().position(|m| m.0 == d) {
                            s.mem.swap_remove(i);
                            s.freed.push(d);
                        }
                    }
                    ("cuMemFreeAsync", r)
                }
                2 => (
                    "cuMemPrefetchAsync",
                    cuMemPrefetchAsync(s.dptr_known(inp), State::count(inp), enum_value(inp), stream),
                ),
                _ => (
                    "cuMemAdvise",
                    cuMemAdvise(s.dptr_known(inp), State::count(inp), enum_value(inp), enum_value(inp)),
                ),
            }
        }
        24 => {
            if inp.below(4) == 0 {
                ("cuMemcpy2D_v2", cuMemcpy2D_v2(null()))
            } else {
                let (w, h) = (State::count(inp), inp.pick(&[0, 1, 2, 16, usize::MAX]));
                let host = |inp: &mut Input| inp.pick(&[0usize, 0x1000, 0x8000]) as *mut c_void;
                let c = Memcpy2D {
                    src_x: inp.pick(&[0, 1, 4096, usize::MAX]),
                    src_y: inp.pick(&[0, 1, usize::MAX]),
                    src_type: inp.pick(&[1, 2, 3, 4, 0, 7]),
                    src_host: host(inp),
                    src_device: s.dptr(inp),
                    src_array: null_mut(),
                    src_pitch: State::count(inp),
                    dst_x: inp.pick(&[0, 1, 4096, usize::MAX]),
                    dst_y: inp.pick(&[0, 1, usize::MAX]),
                    dst_type: inp.pick(&[1, 2, 3, 4, 0, 7]),
                    dst_host: host(inp),
                    dst_device: s.dptr(inp),
                    dst_array: null_mut(),
                    dst_pitch: State::count(inp),
                    width: w,
                    height: h,
                };
                ("cuMemcpy2D_v2", cuMemcpy2D_v2(&c as *const Memcpy2D as *const _))
            }
        }
        // ---- streams and events ----
        25 | 26 => {
            let p = out(inp, &mut slot);
            let flags = inp.pick(&[0, 1, 2, 0xffff_ffff]);
            let r = if inp.below(2) == 0 {
                ("cuStreamCreate", cuStreamCreate(p, flags))
            } else {
                (
                    "cuStreamCreateWithPriority",
                    cuStreamCreateWithPriority(p, flags, enum_value(inp)),
                )
            };
            s.stream.created(r.1, read(&slot));
            r
        }
        27 => {
            let h = s.handle(inp, 3);
            let r = cuStreamDestroy_v2(h);
            s.stream.destroyed(r, h as u64);
            ("cuStreamDestroy_v2", r)
        }
        28 | 29 => {
            let st = s.handle(inp, 3);
            match inp.below(13) {
                0 => ("cuStreamSynchronize", cuStreamSynchronize(st)),
                1 => ("cuStreamQuery", cuStreamQuery(st)),
                2 => ("cuStreamGetFlags", cuStreamGetFlags(st, out(inp, &mut slot))),
                3 => ("cuStreamGetPriority", cuStreamGetPriority(st, out(inp, &mut slot))),
                4 => ("cuStreamGetCtx", cuStreamGetCtx(st, out(inp, &mut slot))),
                5 => (
                    "cuStreamWaitEvent",
                    cuStreamWaitEvent(st, s.handle(inp, 4), inp.pick(&[0, 1, 7])),
                ),
                6 => {
                    let cb = if inp.below(4) == 0 {
                        null_mut()
                    } else {
                        stream_cb as *mut c_void
                    };
                    (
                        "cuStreamAddCallback",
                        cuStreamAddCallback(st, cb, null_mut(), inp.pick(&[0, 0, 1])),
                    )
                }
                7 => {
                    let f = if inp.below(4) == 0 {
                        null_mut()
                    } else {
                        host_fn as *mut c_void
                    };
                    ("cuLaunchHostFunc", cuLaunchHostFunc(st, f, null_mut()))
                }
                8 => ("cuStreamIsCapturing", cuStreamIsCapturing(st, out(inp, &mut slot))),
                9 => (
                    "cuStreamBeginCapture_v2",
                    cuStreamBeginCapture_v2(st, inp.pick(&[0, 1, 2, 2, 7])),
                ),
                10 => {
                    // End a capture; whatever graph comes out is instantiated, launched and dropped.
                    let mut g = null_mut();
                    let r = cuStreamEndCapture(st, if inp.below(8) == 0 { null_mut() } else { &mut g });
                    if r == CUDA_SUCCESS && !g.is_null() {
                        let mut e = null_mut();
                        if cuGraphInstantiateWithFlags(&mut e, g, 0) == CUDA_SUCCESS {
                            let _ = cuGraphLaunch(e, st);
                            let _ = cuGraphExecDestroy(e);
                        }
                        let _ = cuGraphDestroy(g);
                    }
                    ("cuStreamEndCapture", r)
                }
                11 => {
                    // Graph calls on forged, null and stale handles.
                    let forged = inp.pick(&[0usize, 0x15, 0x25, 0x1237, usize::MAX]) as Handle;
                    match inp.below(3) {
                        0 => ("cuGraphLaunch", cuGraphLaunch(forged, st)),
                        1 => ("cuGraphDestroy", cuGraphDestroy(forged)),
                        _ => (
                            "cuGraphGetNodes",
                            cuGraphGetNodes(forged, null_mut(), out(inp, &mut slot)),
                        ),
                    }
                }
                _ => ("cuStreamGetId", cuStreamGetId(st, out(inp, &mut slot))),
            }
        }
        30 => {
            let p = out(inp, &mut slot);
            let r = cuEventCreate(p, inp.pick(&[0, 1, 2, 4, 0xff]));
            s.event.created(r, read(&slot));
            ("cuEventCreate", r)
        }
        31 => {
            let h = s.handle(inp, 4);
            let r = cuEventDestroy_v2(h);
            s.event.destroyed(r, h as u64);
            ("cuEventDestroy_v2", r)
        }
        32 | 33 => {
            let e = s.handle(inp, 4);
            match inp.below(5) {
                0 => ("cuEventRecord", cuEventRecord(e, s.handle(inp, 3))),
                1 => (
                    "cuEventRecordWithFlags",
                    cuEventRecordWithFlags(e, s.handle(inp, 3), inp.pick(&[0, 1, 2])),
                ),
                2 => ("cuEventQuery", cuEventQuery(e)),
                3 => ("cuEventSynchronize", cuEventSynchronize(e)),
                _ => (
                    "cuEventElapsedTime",
                    cuEventElapsedTime(out(inp, &mut slot), e, s.handle(inp, 4)),
                ),
            }
        }
        // ---- modules, functions, libraries, linking ----
        34 | 35 => {
            let p = out(inp, &mut slot);
            let text = image(inp);
            if text.is_some() && s.loads >= 3 {
                return Ok(false);
            }
            s.loads += text.is_some() as u32;
            let ptr = text.as_ref().map_or(null(), |t| t.as_ptr() as *const c_void);
            let r = cuModuleLoadData(p, ptr);
            s.module.created(r, read(&slot));
            ("cuModuleLoadData", r)
        }
        36 => {
            let h = s.handle(inp, 1);
            let r = cuModuleUnload(h);
            s.module.destroyed(r, h as u64);
            ("cuModuleUnload", r)
        }
        37 | 38 => {
            let m = s.handle(inp, 1);
            let name = CString::new(inp.pick(NAMES)).unwrap();
            let np = if inp.below(8) == 0 { null() } else { name.as_ptr() };
            if inp.below(4) == 0 {
                (
                    "cuModuleGetGlobal_v2",
                    cuModuleGetGlobal_v2(out(inp, &mut slot), out(inp, &mut slot2), m, np),
                )
            } else {
                let p = out(inp, &mut slot);
                let r = cuModuleGetFunction(p, m, np);
                s.func.created(r, read(&slot));
                ("cuModuleGetFunction", r)
            }
        }
        39 => {
            let f = s.handle(inp, 2);
            match inp.below(9) {
                0 => (
                    "cuFuncGetAttribute",
                    cuFuncGetAttribute(out(inp, &mut slot), enum_value(inp), f),
                ),
                1 => (
                    "cuFuncSetAttribute",
                    cuFuncSetAttribute(f, enum_value(inp), enum_value(inp).wrapping_mul(4096)),
                ),
                2 => ("cuFuncSetCacheConfig", cuFuncSetCacheConfig(f, enum_value(inp))),
                3 => (
                    "cuFuncGetParamInfo",
                    cuFuncGetParamInfo(
                        f,
                        inp.pick(&[0, 1, 2, usize::MAX]),
                        out(inp, &mut slot),
                        out(inp, &mut slot2),
                    ),
                ),
                4 => ("cuFuncGetName", cuFuncGetName(out(inp, &mut slot), f)),
                5 => ("cuFuncGetModule", cuFuncGetModule(out(inp, &mut slot), f)),
                6 => (
                    "cuOccupancyMaxActiveBlocksPerMultiprocessor",
                    cuOccupancyMaxActiveBlocksPerMultiprocessor(
                        out(inp, &mut slot),
                        f,
                        enum_value(inp).wrapping_mul(32),
                        State::size(inp),
                    ),
                ),
                7 => (
                    "cuOccupancyMaxPotentialBlockSize",
                    cuOccupancyMaxPotentialBlockSize(
                        out(inp, &mut slot),
                        out(inp, &mut slot2),
                        f,
                        null_mut(),
                        State::size(inp),
                        enum_value(inp).wrapping_mul(32),
                    ),
                ),
                _ => (
                    "cuOccupancyAvailableDynamicSMemPerBlock",
                    cuOccupancyAvailableDynamicSMemPerBlock(
                        out(inp, &mut slot),
                        f,
                        enum_value(inp),
                        enum_value(inp).wrapping_mul(32),
                    ),
                ),
            }
        }
        40..=43 => return launch(s, inp),
        44 => {
            let p = out(inp, &mut slot);
            let text = image(inp);
            if text.is_some() && s.loads >= 3 {
                return Ok(false);
            }
            s.loads += text.is_some() as u32;
            let ptr = text.as_ref().map_or(null(), |t| t.as_ptr() as *const c_void);
            let r = cuLibraryLoadData(p, ptr, null_mut(), null_mut(), 0, null_mut(), null_mut(), 0);
            s.lib.created(r, read(&slot));
            ("cuLibraryLoadData", r)
        }
        45 => {
            let h = s.handle(inp, 5);
            let r = cuLibraryUnload(h);
            s.lib.destroyed(r, h as u64);
            ("cuLibraryUnload", r)
        }
        46 => {
            let l = s.handle(inp, 5);
            match inp.below(5) {
                0 => {
                    let name = CString::new(inp.pick(NAMES)).unwrap();
                    let p = out(inp, &mut slot);
                    let r = cuLibraryGetKernel(p, l, name.as_ptr());
                    s.kernel.created(r, read(&slot));
                    ("cuLibraryGetKernel", r)
                }
                1 => ("cuLibraryGetModule", cuLibraryGetModule(out(inp, &mut slot), l)),
                2 => (
                    "cuLibraryGetKernelCount",
                    cuLibraryGetKernelCount(out(inp, &mut slot), l),
                ),
                3 => {
                    let mut ks = [null_mut::<c_void>(); 8];
                    let n = inp.below(9) as c_uint;
                    let p = if inp.below(6) == 0 { null_mut() } else { ks.as_mut_ptr() };
                    ("cuLibraryEnumerateKernels", cuLibraryEnumerateKernels(p, n, l))
                }
                _ => {
                    let name = CString::new(inp.pick(NAMES)).unwrap();
                    (
                        "cuLibraryGetGlobal",
                        cuLibraryGetGlobal(out(inp, &mut slot), out(inp, &mut slot2), l, name.as_ptr()),
                    )
                }
            }
        }
        47 => {
            let k = s.handle(inp, 6);
            match inp.below(4) {
                0 => {
                    let p = out(inp, &mut slot);
                    let r = cuKernelGetFunction(p, k);
                    s.func.created(r, read(&slot));
                    ("cuKernelGetFunction", r)
                }
                1 => ("cuKernelGetName", cuKernelGetName(out(inp, &mut slot), k)),
                2 => ("cuKernelGetLibrary", cuKernelGetLibrary(out(inp, &mut slot), k)),
                _ => (
                    "cuKernelGetAttribute",
                    cuKernelGetAttribute(out(inp, &mut slot), enum_value(inp), k, inp.pick(&[0, 1])),
                ),
            }
        }
        48 => {
            let p = out(inp, &mut slot);
            let r = cuLinkCreate_v2(0, null_mut(), null_mut(), p);
            s.link.created(r, read(&slot));
            ("cuLinkCreate_v2", r)
        }
        49 => {
            let l = s.handle(inp, 7);
            match inp.below(3) {
                0 => {
                    let text = image(inp);
                    if text.is_some() && s.loads >= 3 {
                        return Ok(false);
                    }
                    s.loads += text.is_some() as u32;
                    let (ptr, len) = text.as_ref().map_or((null_mut(), 0), |t| {
                        (t.as_ptr() as *mut c_void, t.as_bytes_with_nul().len())
                    });
                    let len = inp.pick(&[len, len, 0, 1, usize::MAX]).min(len);
                    let kind = inp.pick(&[1, 1, 0, 2, 3, 4, 5, 99, -1]);
                    (
                        "cuLinkAddData_v2",
                        cuLinkAddData_v2(l, kind, ptr, len, c"fuzz.ptx".as_ptr(), 0, null_mut(), null_mut()),
                    )
                }
                1 => (
                    "cuLinkComplete",
                    cuLinkComplete(l, out(inp, &mut slot), out(inp, &mut slot2)),
                ),
                _ => {
                    let r = cuLinkDestroy(l);
                    if r == CUDA_SUCCESS {
                        s.link.kill(l as u64);
                    }
                    ("cuLinkDestroy", r)
                }
            }
        }
        // ---- everything else ----
        50 => {
            let e = inp.pick(&[0, 1, 2, 100, 200, 700, 999, -1, i32::MAX]) as CUresult;
            if inp.below(2) == 0 {
                ("cuGetErrorName", cuGetErrorName(e, out(inp, &mut slot)))
            } else {
                ("cuGetErrorString", cuGetErrorString(e, out(inp, &mut slot)))
            }
        }
        51 => {
            let sym = [
                c"cuInit",
                c"cuMemAlloc",
                c"cuLaunchKernel",
                c"",
                c"nope",
                c"cuGetProcAddress",
            ][inp.below(6)];
            let sp = if inp.below(6) == 0 { null() } else { sym.as_ptr() };
            let version = inp.pick(&[0, 1000, 12000, 13050, -1, i32::MAX]);
            let flags = inp.pick(&[0, 1, 2, 4, u64::MAX]);
            (
                "cuGetProcAddress_v2",
                cuGetProcAddress_v2(sp, out(inp, &mut slot), version, flags, out(inp, &mut slot2)),
            )
        }
        52 => ("cuInit", cuInit(inp.pick(&[0, 0, 1, 0xffff_ffff]))),
        53 => {
            let p = out(inp, &mut slot);
            let n = State::size(inp);
            let r = cuMemAllocManaged(p, n, inp.pick(&[1, 2, 0, 3]));
            if r == CUDA_SUCCESS {
                if n > 4096 {
                    return Err(format!("cuMemAllocManaged of {n} bytes succeeded"));
                }
                s.mem.push((read(&slot), n.max(1)));
            }
            ("cuMemAllocManaged", r)
        }
        54 => (
            "cuMemHostGetDevicePointer_v2",
            cuMemHostGetDevicePointer_v2(out(inp, &mut slot), s.hptr(inp, 0) as *mut c_void, inp.pick(&[0, 1])),
        ),
        55 => ("cuCtxSynchronize", cuCtxSynchronize()),
        56 => {
            // JIT options: log buffers (slots of 512 bytes) and their sizes, the wall time, tuning
            // options with any value, and unknown options.
            let p = out(inp, &mut slot);
            let text = image(inp);
            if text.is_some() && s.loads >= 3 {
                return Ok(false);
            }
            s.loads += text.is_some() as u32;
            let mut logs = [Slot([0; 512]), Slot([0; 512])];
            let (mut opts, mut vals) = ([0 as c_int; 4], [null_mut::<c_void>(); 4]);
            for (o, v) in opts.iter_mut().zip(vals.iter_mut()) {
                *o = match inp.below(8) {
                    0..=4 => inp.pick(&[2, 3, 4, 5, 6]),
                    5 => enum_value(inp),
                    _ => inp.pick(&[0, 1, 7, 8]),
                };
                *v = match *o {
                    3 | 5 if inp.below(6) == 0 => null_mut(),
                    3 | 5 => logs[(*o == 5) as usize].0.as_mut_ptr() as *mut c_void,
                    4 | 6 => inp.pick(&[0usize, 1, 16, 512]) as *mut c_void,
                    _ => inp.u64() as usize as *mut c_void,
                };
            }
            let n = inp.below(5) as c_uint;
            let (op, vp) = if inp.below(8) == 0 {
                (null_mut(), null_mut())
            } else {
                (opts.as_mut_ptr(), vals.as_mut_ptr())
            };
            let ptr = text.as_ref().map_or(null(), |t| t.as_ptr() as *const c_void);
            let r = cuModuleLoadDataEx(p, ptr, n, op, vp);
            s.module.created(r, read(&slot));
            ("cuModuleLoadDataEx", r)
        }
        57 => textures(s, inp),
        _ => return Ok(false),
    };
    check(r, name)?;
    Ok(false)
}

/// Writes 64-bit words into a slot, as a descriptor's bytes.
fn words(slot: &mut Slot, w: &[u64]) {
    for (k, v) in w.iter().enumerate() {
        slot.0[8 * k..8 * k + 8].copy_from_slice(&v.to_le_bytes());
    }
}

/// Arrays, copies to and from them, texture and surface objects: descriptors of any shape, format
/// and flags, forged and stale handles.
unsafe fn textures(s: &mut State, inp: &mut Input) -> (&'static str, CUresult) {
    use cuda::texture::*;
    let mut slot = Slot([0; 512]);
    let mut desc = Slot([0; 512]);
    let mut tdesc = Slot([0; 512]);
    let array = |s: &State, inp: &mut Input| -> u64 {
        match inp.below(4) {
            0 | 1 if !s.arrays.is_empty() => s.arrays[inp.below(s.arrays.len())],
            _ => inp.pick(&[0, 10, 0x1a, u64::MAX]),
        }
    };
    match inp.below(8) {
        0 => {
            let (w, h, d) = (
                inp.pick(&[0u64, 1, 3, 64, 1 << 17, 1 << 20]),
                inp.pick(&[0u64, 1, 5, 1 << 16]),
                inp.pick(&[0u64, 0, 2, 7]),
            );
            let format = inp.pick(&[1u64, 2, 3, 8, 9, 10, 0x10, 0x20, 0x50, 0, 0xffff]);
            let channels = inp.pick(&[1u64, 2, 3, 4, 0]);
            let flags = inp.pick(&[0u64, 1, 2, 3, 4, 8, 0x40, 0xffff]);
            words(&mut desc, &[w, h, d, format | channels << 32, flags]);
            let r = cuArray3DCreate_v2(out(inp, &mut slot), desc.0.as_ptr() as *const Array3DDescriptor);
            if r == CUDA_SUCCESS {
                s.arrays.push(read(&slot));
            }
            ("cuArray3DCreate_v2", r)
        }
        1 => {
            let a = array(s, inp);
            let r = cuArrayDestroy(a as Handle);
            if r == CUDA_SUCCESS {
                s.arrays.retain(|&x| x != a);
            }
            ("cuArrayDestroy", r)
        }
        2 => {
            // A 2D copy between host memory and an array, at any offset and size.
            let a = array(s, inp);
            let (x, y) = (inp.pick(&[0u64, 1, 4, 1 << 20]), inp.pick(&[0u64, 1, 3]));
            let (wb, h) = (inp.pick(&[0u64, 1, 4, 16, 64, 1 << 30]), inp.pick(&[0u64, 1, 2, 9]));
            let host = s.hptr(inp, 64);
            let to = inp.below(2) == 0;
            // srcX, srcY, srcType, srcHost, srcDevice, srcArray, srcPitch, then dst, width, height.
            let (array_side, host_side) = ([x, y, 3, 0, 0, a, 0], [0, 0, 1, host, 0, 0, 64]);
            let (src, dst) = if to {
                (host_side, array_side)
            } else {
                (array_side, host_side)
            };
            let all: Vec<u64> = src.iter().chain(&dst).copied().chain([wb, h]).collect();
            words(&mut desc, &all);
            ("cuMemcpy2D_v2", cuMemcpy2D_v2(desc.0.as_ptr() as *const cuda::Memcpy2D))
        }
        3 => {
            let a = array(s, inp);
            let off = inp.pick(&[0usize, 1, 16, 1 << 40]);
            let n = inp.pick(&[0usize, 1, 8, 64]);
            let host = s.hptr(inp, 64) as *mut c_void;
            if inp.below(2) == 0 {
                ("cuMemcpyHtoA_v2", cuMemcpyHtoA_v2(a as Handle, off, host, n))
            } else {
                ("cuMemcpyAtoH_v2", cuMemcpyAtoH_v2(host, a as Handle, off, n))
            }
        }
        4 | 5 => {
            // A resource: an array, or linear or pitched memory at a known, freed or forged address.
            let ty = inp.pick(&[0u64, 0, 1, 2, 3, 7]);
            let ptr = match inp.below(3) {
                0 if !s.mem.is_empty() => s.mem[inp.below(s.mem.len())].0,
                1 if !s.freed.is_empty() => s.freed[inp.below(s.freed.len())],
                _ => inp.pick(&[0u64, 0x200, 0x1000]),
            };
            let fmt = inp.pick(&[1u64, 2, 8, 0x20, 0x50, 0]) | inp.pick(&[1u64, 2, 4, 3]) << 32;
            let res = match ty {
                0 => [array(s, inp), 0, 0, 0, 0],
                2 => [ptr, fmt, inp.pick(&[0, 4, 64, 256, 1 << 40]), 0, 0],
                _ => [
                    ptr,
                    fmt,
                    inp.pick(&[1, 4, 8]),
                    inp.pick(&[1, 2, 8]),
                    inp.pick(&[0, 32, 64, 512]),
                ],
            };
            words(&mut desc, &[ty, res[0], res[1], res[2], res[3], res[4]]);
            let p = out(inp, &mut slot);
            let (name, r) = if inp.below(2) == 0 {
                // addressMode[0..3], filterMode, flags (and the rest zero).
                let mode = inp.pick(&[0u64, 1, 2, 3, 9]);
                let (filter, flags) = (inp.pick(&[0u64, 1, 7]), inp.pick(&[0u64, 1, 2, 3, 0x10]));
                words(&mut tdesc, &[mode | mode << 32, mode | filter << 32, flags]);
                let view = if inp.below(8) == 0 { 8 as *const c_void } else { null() };
                let r = cuTexObjectCreate(
                    p,
                    desc.0.as_ptr() as *const ResourceDesc,
                    tdesc.0.as_ptr() as *const TextureDesc,
                    view,
                );
                ("cuTexObjectCreate", r)
            } else {
                (
                    "cuSurfObjectCreate",
                    cuSurfObjectCreate(p, desc.0.as_ptr() as *const ResourceDesc),
                )
            };
            if r == CUDA_SUCCESS {
                s.objects.push(read(&slot));
            }
            (name, r)
        }
        6 => {
            let h = match inp.below(3) {
                0 if !s.objects.is_empty() => s.objects[inp.below(s.objects.len())],
                _ => inp.pick(&[0u64, 1, 77, u64::MAX]),
            };
            let (name, r) = if inp.below(2) == 0 {
                ("cuTexObjectDestroy", cuTexObjectDestroy(h))
            } else {
                ("cuSurfObjectDestroy", cuSurfObjectDestroy(h))
            };
            if r == CUDA_SUCCESS {
                s.objects.retain(|&x| x != h);
            }
            (name, r)
        }
        _ => {
            let h = match inp.below(3) {
                0 if !s.objects.is_empty() => s.objects[inp.below(s.objects.len())],
                _ => inp.pick(&[0u64, 1, 77, u64::MAX]),
            };
            (
                "cuTexObjectGetResourceDesc",
                cuTexObjectGetResourceDesc(out(inp, &mut slot), h),
            )
        }
    }
}

impl State {
    /// A pointer for prefetch and advice, which take any host memory on a device with pageable
    /// memory access: never the process's own heap.
    fn dptr_known(&self, inp: &mut Input) -> u64 {
        match inp.below(4) {
            0 if !self.mem.is_empty() => self.mem[inp.below(self.mem.len())].0,
            1 if !self.freed.is_empty() => self.freed[inp.below(self.freed.len())],
            2 => inp.pick(&[0x1000, 0x10]),
            _ => 0,
        }
    }
}

/// A host pointer for `n` bytes (see [`State::hptr`]).
fn host_src(s: &State, inp: &mut Input, n: usize) -> *const c_void {
    s.hptr(inp, n) as *const c_void
}

/// A module image: the kernels, broken text, an empty string, a cubin header, or null (`None`).
fn image(inp: &mut Input) -> Option<CString> {
    Some(match inp.below(8) {
        0..=3 => CString::new(KERNELS).unwrap(),
        4 => CString::new(KERNELS.replace("ret;", "ret")).unwrap(),
        5 => CString::new("").unwrap(),
        6 => CString::new(&b"\x7fELF\x02\x01\x01"[..]).unwrap(),
        _ => return None,
    })
}

/// `cuLaunchKernel` or `cuLaunchKernelEx` with sizes valid or out of range, and arguments the
/// `write` kernel stays inside (or faults on: null, unmapped).
unsafe fn launch(s: &mut State, inp: &mut Input) -> Result<bool, String> {
    let f = s.handle(inp, 2);
    let dim = |inp: &mut Input, big: c_uint| -> c_uint {
        if inp.below(8) == 0 {
            inp.pick(&[0, big, u32::MAX, 1 << 31])
        } else {
            inp.pick(&[1, 1, 2, 3])
        }
    };
    let grid = [dim(inp, 1 << 31), dim(inp, 65536), dim(inp, 65536)];
    let block = [
        if inp.below(2) == 0 {
            inp.pick(&[1, 32, 64, 128])
        } else {
            dim(inp, 1025)
        },
        dim(inp, 1025),
        dim(inp, 65),
    ];
    let shared = inp.pick(&[0, 0, 16, 48 << 10, 1 << 20, u32::MAX]);
    let stream = s.handle(inp, 3);
    let (mut p, mut n): (u64, u32) = match inp.below(6) {
        0..=2 if !s.mem.is_empty() => {
            let (b, size) = s.mem[inp.below(s.mem.len())];
            (b, (size / 4) as u32)
        }
        3 if !s.freed.is_empty() => (s.freed[inp.below(s.freed.len())], 16),
        4 => (inp.pick(&[0, 0x1000]), inp.pick(&[0, 1, 1000])),
        _ => (0, 0),
    };
    let mut params = [&mut p as *mut u64 as *mut c_void, &mut n as *mut u32 as *mut c_void];
    // The same arguments packed for `extra` (p at 0, n at 8: 12 bytes), with its size and pointer
    // missing, null, too small or in another order.
    let mut packed = [p, n as u64];
    let mut size: usize = inp.pick(&[12, 16, 8, 0]);
    let sp = if inp.below(6) == 0 {
        null_mut()
    } else {
        &mut size as *mut usize as *mut c_void
    };
    let bp = if inp.below(6) == 0 {
        null_mut()
    } else {
        packed.as_mut_ptr() as *mut c_void
    };
    let tag = |v: usize| v as *mut c_void;
    let mut extra: [*mut c_void; 5] = match inp.below(4) {
        0 => [tag(1), bp, tag(2), sp, tag(0)],
        1 => [tag(2), sp, tag(1), bp, tag(0)],
        2 => [tag(1), bp, tag(0), null_mut(), null_mut()],
        _ => [
            tag(inp.pick(&[3, 0xff, usize::MAX])),
            bp,
            tag(0),
            null_mut(),
            null_mut(),
        ],
    };
    let (pp, ep) = match inp.below(8) {
        0 => (null_mut(), null_mut()),
        1 | 2 => (null_mut(), extra.as_mut_ptr()),
        3 => (params.as_mut_ptr(), extra.as_mut_ptr()),
        _ => (params.as_mut_ptr(), null_mut()),
    };
    let r = if inp.below(4) == 0 {
        let mut attrs = [LaunchAttribute {
            id: 0,
            pad: [0; 4],
            value: [0; 16],
        }; 4];
        for a in attrs.iter_mut() {
            a.id = inp.below(24) as c_uint;
            for v in a.value.iter_mut().take(4) {
                *v = inp.pick(&[0, 1, 2, 4, 1024, u32::MAX]);
            }
        }
        let cfg = LaunchConfig {
            grid,
            block,
            shared,
            stream,
            attrs: attrs.as_mut_ptr(),
            num_attrs: inp.below(5) as c_uint,
        };
        let cp = if inp.below(8) == 0 {
            null()
        } else {
            &cfg as *const LaunchConfig as *const _
        };
        ("cuLaunchKernelEx", cuLaunchKernelEx(cp, f, pp, ep))
    } else {
        let [gx, gy, gz] = grid;
        let [bx, by, bz] = block;
        (
            "cuLaunchKernel",
            cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, pp, ep),
        )
    };
    check(r.1, r.0)?;
    if r.1 == CUDA_SUCCESS && inp.below(2) == 0 {
        check(cuCtxSynchronize(), "cuCtxSynchronize")?;
    }
    Ok(r.1 == CUDA_SUCCESS)
}

/// Destroys what the sequence made and left alive; their handles join the stale ones.
unsafe fn cleanup(s: &mut State) {
    for c in s.ctx.live.clone() {
        cuCtxSetCurrent(c as *mut c_void);
        cuCtxSynchronize();
    }
    for &h in &s.event.live {
        cuEventDestroy_v2(h as *mut c_void);
    }
    for &h in &s.stream.live {
        cuStreamDestroy_v2(h as *mut c_void);
    }
    for &h in &s.link.live {
        cuLinkDestroy(h as *mut c_void);
    }
    for &h in &s.module.live {
        cuModuleUnload(h as *mut c_void);
    }
    for &h in &s.lib.live {
        cuLibraryUnload(h as *mut c_void);
    }
    for &h in &s.objects {
        cuda::texture::cuTexObjectDestroy(h);
        cuda::texture::cuSurfObjectDestroy(h);
    }
    for &a in &s.arrays {
        cuda::texture::cuArrayDestroy(a as Handle);
    }
    for &(d, _) in &s.mem {
        cuMemFree_v2(d);
    }
    for &(p, _) in &s.host {
        cuMemFreeHost(p as *mut c_void);
    }
    if s.registered {
        cuMemHostUnregister(buf() as *mut c_void);
    }
    for &h in &s.ctx.live {
        cuCtxDestroy_v2(h as *mut c_void);
    }
    for _ in 0..s.retained {
        cuDevicePrimaryCtxRelease_v2(0);
    }
    let mut popped = null_mut();
    for _ in 0..64 {
        if cuCtxPopCurrent_v2(&mut popped) != CUDA_SUCCESS {
            break;
        }
    }
    cuCtxSetCurrent(null_mut());
    let mut stale = STALE.lock().unwrap();
    for p in [
        &s.ctx, &s.module, &s.func, &s.stream, &s.event, &s.lib, &s.kernel, &s.link,
    ] {
        stale.extend(p.live.iter().chain(&p.dead).copied().filter(|&h| h != 0));
    }
    stale.extend(s.mem.iter().map(|m| m.0).chain(s.freed.iter().copied()));
    stale.extend(s.host.iter().map(|m| m.0).chain(s.host_freed.iter().copied()));
    let n = stale.len();
    if n > 256 {
        stale.drain(..n - 256);
    }
}
