//! Tensor maps and the tensor copies of Hopper's bulk copy engine (TMA): `cuTensorMapEncodeTiled`
//! writes a [`TensorMap`] into the 128 opaque bytes of a `CUtensorMap`, and `cp.async.bulk.tensor` /
//! `cp.reduce.async.bulk.tensor` (`ptx_llvm::builtin::Mem::Tensor`) move a box of it between global
//! and shared memory.
//!
//! A box is the tensor's elements from the instruction's coordinates on, `ceil(box[i] /
//! element_strides[i])` of them along dimension i, a step of `element_strides[i]` apart (dimension 0
//! always steps by one). In shared memory it lies dimension 0 fastest, each row of it (its elements
//! along dimension 0) after the other, then swizzled: with a swizzle of 32, 64 or 128 bytes, a row
//! takes at least the swizzle's span, and the 16-byte chunk at bits 4–6 of a shared-window offset is
//! XORed with bits 7–9 (1, 2 or 3 of them), the pattern the manual's tables give ("Swizzling Modes").
//! A TF32 map rounds what it loads to TF32.
//! Elements outside the tensor read as zero (or a NaN for the float types, when the map asks for
//! it) and are not written by stores or reductions; a load counts the whole box's bytes on its
//! mbarrier. A box must start on a 16-byte boundary along dimension 0.

use crate::runtime::checked::FaultKind;
use crate::runtime::Env;
use ptx_llvm::abi::TensorArgs;
use ptx_llvm::builtin::*;

/// The bytes of a `CUtensorMap`. Their layout here: the magic (0..4), the `CUtensorMapDataType` (4),
/// rank (5), swizzle (6), L2 promotion | OOB NaN << 4 | invalid << 5 (7), the global address (8..16), dimensions as
/// u32 (16..36), byte strides as u64 (40..80), traversal strides (90..95), box dimensions as u32
/// (96..116), interleave (116).
pub const MAP_BYTES: usize = 128;
const MAGIC: &[u8; 4] = b"PJTM";

/// `CUtensorMapDataType` values, with their element sizes and this engine's type codes (for
/// reductions); the packed 4- and 6-bit types (13–15) are not supported.
const TYPES: [(u32, u32); 13] = [
    (1, U8),
    (2, U16),
    (4, U32),
    (4, S32),
    (8, U64),
    (8, S64),
    (2, F16),
    (4, F32),
    (8, F64),
    (2, BF16),
    (4, F32),
    (4, F32),
    (4, F32),
];
// `CUtensorMapDataType` values the rules below name.
const UINT32: u32 = 2;
const INT32: u32 = 3;
const UINT64: u32 = 4;
const INT64: u32 = 5;
const FLOAT16: u32 = 6;
const FLOAT32: u32 = 7;
const BFLOAT16: u32 = 9;
const FLOAT32_FTZ: u32 = 10;
const TFLOAT32: u32 = 11;
const TFLOAT32_FTZ: u32 = 12;

/// `FLOAT16` … `TFLOAT32_FTZ`: the types an OOB NaN fill applies to.
fn is_float(dtype: u32) -> bool {
    (FLOAT16..=TFLOAT32_FTZ).contains(&dtype)
}

/// What `cuTensorMapEncodeTiled` was given, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorMap {
    pub dtype: u32,
    pub rank: usize,
    pub global: u64,
    /// Elements along each dimension.
    pub dims: [u64; 5],
    /// Bytes from one element to the next along each dimension (dimension 0: the element's size).
    pub strides: [u64; 5],
    pub boxes: [u32; 5],
    pub element_strides: [u32; 5],
    /// `CUtensorMapSwizzle`: 0 none, 1–3 for 32, 64 and 128 bytes.
    pub swizzle: u32,
    pub l2_promotion: u32,
    /// `CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA`.
    pub oob_nan: bool,
}

/// Why a tensor map cannot be encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// The driver's documented requirements refuse it (`CUDA_ERROR_INVALID_VALUE`).
    Invalid(&'static str),
    /// Valid, but this engine does not do it (`CUDA_ERROR_NOT_SUPPORTED`).
    NotSupported(&'static str),
}

/// The parameters of `cuTensorMapEncodeTiled`, the arrays already read.
pub struct Tiled<'a> {
    pub dtype: u32,
    pub global: u64,
    pub dims: &'a [u64],
    /// `rank - 1` byte strides, for dimensions 1 and up.
    pub strides: &'a [u64],
    pub boxes: &'a [u32],
    pub element_strides: &'a [u32],
    pub interleave: u32,
    pub swizzle: u32,
    pub l2_promotion: u32,
    pub oob_fill: u32,
}

impl TensorMap {
    /// Checks `t` against the requirements cuda.h documents for `cuTensorMapEncodeTiled`.
    pub fn tiled(t: &Tiled<'_>) -> Result<TensorMap, EncodeError> {
        use EncodeError::{Invalid, NotSupported};
        let rank = t.dims.len();
        if !(1..=5).contains(&rank) {
            return Err(Invalid("the rank must be 1 to 5"));
        }
        if t.strides.len() != rank - 1 || t.boxes.len() != rank || t.element_strides.len() != rank {
            return Err(Invalid("the arrays must have rank (strides: rank - 1) entries"));
        }
        if t.dtype > 15 {
            return Err(Invalid("unknown data type"));
        }
        let Some(&(size, _)) = TYPES.get(t.dtype as usize) else {
            return Err(NotSupported("the packed 4- and 6-bit data types"));
        };
        if t.interleave > 2 {
            return Err(Invalid("unknown interleave"));
        }
        if t.swizzle > 6 {
            return Err(Invalid("unknown swizzle"));
        }
        if t.l2_promotion > 3 || t.oob_fill > 1 {
            return Err(Invalid("unknown L2 promotion or out-of-bounds fill"));
        }
        if t.interleave != 0 && rank < 3 {
            return Err(Invalid("an interleaved layout needs a rank of at least 3"));
        }
        if !t.global.is_multiple_of(16) || (t.interleave == 2 && !t.global.is_multiple_of(32)) {
            return Err(Invalid(
                "the global address must be 16-byte aligned (32 for 32-byte interleave)",
            ));
        }
        if t.dims.iter().any(|&d| d == 0 || d > 1 << 31) {
            return Err(Invalid("each dimension must be 1 to 2^31"));
        }
        let unit = if t.interleave == 2 { 32 } else { 16 };
        if t.strides.iter().any(|&s| s % unit != 0 || s >= 1 << 40) {
            return Err(Invalid(
                "each stride must be a multiple of 16 bytes (32 for 32-byte interleave) below 2^40",
            ));
        }
        if t.boxes.iter().any(|&b| b == 0 || b > 256) {
            return Err(Invalid("each box dimension must be 1 to 256"));
        }
        let inner = t.boxes[0] as u64 * size as u64;
        if t.interleave == 0 && !inner.is_multiple_of(16) {
            return Err(Invalid("the box's inner dimension must be a multiple of 16 bytes"));
        }
        if t.element_strides.iter().any(|&e| e == 0 || e > 8) {
            return Err(Invalid("each element stride must be 1 to 8"));
        }
        if t.interleave == 2 && t.swizzle != 1 {
            return Err(Invalid("32-byte interleave needs the 32-byte swizzle"));
        }
        if t.interleave == 0 && t.swizzle != 0 && inner > 16 << t.swizzle.min(3) {
            return Err(Invalid("the box's inner dimension exceeds the swizzle's span"));
        }
        if t.oob_fill == 1 && !is_float(t.dtype) {
            return Err(Invalid("a NaN fill needs a floating-point type"));
        }
        if t.interleave != 0 {
            return Err(NotSupported("interleaved layouts"));
        }
        if t.swizzle > 3 {
            return Err(NotSupported("the swizzles of 32- and 64-byte atoms"));
        }
        let mut m = TensorMap {
            dtype: t.dtype,
            rank,
            global: t.global,
            dims: [1; 5],
            strides: [0; 5],
            boxes: [1; 5],
            element_strides: [1; 5],
            swizzle: t.swizzle,
            l2_promotion: t.l2_promotion,
            oob_nan: t.oob_fill == 1,
        };
        m.dims[..rank].copy_from_slice(t.dims);
        m.strides[0] = size as u64;
        m.strides[1..rank].copy_from_slice(t.strides);
        m.boxes[..rank].copy_from_slice(t.boxes);
        m.element_strides[..rank].copy_from_slice(t.element_strides);
        // Dimension 0 has no traversal stride without interleave (cuda.h: its value is ignored).
        m.element_strides[0] = 1;
        Ok(m)
    }

    pub fn element_size(&self) -> u64 {
        TYPES[self.dtype as usize].0 as u64
    }

    /// Elements the box takes along dimension `i`.
    fn count(&self, i: usize) -> u64 {
        (self.boxes[i] as u64).div_ceil(self.element_strides[i] as u64)
    }

    /// The bytes a box takes in shared memory, which a load counts on its mbarrier.
    pub fn box_bytes(&self) -> u64 {
        (0..self.rank).map(|i| self.count(i)).product::<u64>() * self.element_size()
    }

    /// The 128 bytes of a `CUtensorMap` (the rest zero).
    pub fn to_bytes(&self) -> [u8; MAP_BYTES] {
        let mut b = [0u8; MAP_BYTES];
        b[..4].copy_from_slice(MAGIC);
        b[4] = self.dtype as u8;
        b[5] = self.rank as u8;
        b[6] = self.swizzle as u8;
        b[7] = self.l2_promotion as u8 | (self.oob_nan as u8) << 4;
        b[8..16].copy_from_slice(&self.global.to_le_bytes());
        for i in 0..5 {
            b[16 + 4 * i..20 + 4 * i].copy_from_slice(&(self.dims[i] as u32).to_le_bytes());
            b[40 + 8 * i..48 + 8 * i].copy_from_slice(&self.strides[i].to_le_bytes());
            b[96 + 4 * i..100 + 4 * i].copy_from_slice(&self.boxes[i].to_le_bytes());
            b[90 + i] = self.element_strides[i] as u8;
        }
        b
    }

    /// A map [`Self::to_bytes`] wrote, or None for other bytes.
    pub fn from_bytes(b: &[u8; MAP_BYTES]) -> Option<TensorMap> {
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let (dtype, rank) = (b[4] as u32, b[5] as usize);
        // Byte 116 is the interleave `tensormap.replace` may set; none is supported.
        if &b[..4] != MAGIC || dtype as usize >= TYPES.len() || !(1..=5).contains(&rank) || b[116] != 0 {
            return None;
        }
        let mut m = TensorMap {
            dtype,
            rank,
            global: u64_at(8),
            dims: std::array::from_fn(|i| u32_at(16 + 4 * i) as u64),
            strides: std::array::from_fn(|i| u64_at(40 + 8 * i)),
            boxes: std::array::from_fn(|i| u32_at(96 + 4 * i)),
            element_strides: std::array::from_fn(|i| b[90 + i] as u32),
            swizzle: b[6] as u32,
            l2_promotion: b[7] as u32 & 15,
            oob_nan: b[7] >> 4 & 1 != 0,
        };
        // Dimension 0 steps by one element of the (possibly replaced) type.
        let size = m.element_size();
        m.strides[0] = size;
        m.element_strides[0] = 1;
        // What cuTensorMapEncodeTiled checked, again: tensormap.replace may have changed anything.
        let sane = m.swizzle <= 3
            && b[7] >> 5 == 0
            && m.global.is_multiple_of(16)
            && m.strides[1..rank].iter().all(|&s| s.is_multiple_of(16) && s < 1 << 40)
            && m.dims.iter().all(|&d| d <= 1 << 31)
            && (m.boxes[0] as u64 * size).is_multiple_of(16)
            && (!m.oob_nan || is_float(dtype))
            && (m.swizzle == 0 || m.count(0) * size <= 16 << m.swizzle)
            && (0..5)
                .all(|i| m.dims[i] > 0 && (1..=256).contains(&m.boxes[i]) && (1..=8).contains(&m.element_strides[i]));
        sane.then_some(m)
    }

    /// The fill of an element outside the tensor: zero, or the NaN an H200 (driver 580.159.04) writes,
    /// 0x7ff7 in every 16 bits (0x7ff77ff7 for an f32, 0x7ff7 for an f16; tests/demo/tma.c).
    fn fill(&self) -> u64 {
        if self.oob_nan {
            0x7ff7_7ff7_7ff7_7ff7
        } else {
            0
        }
    }

    /// Bytes from one row of the box (its elements along dimension 0) to the next in shared memory:
    /// the row's, or under a swizzle at least the swizzle's span, as an H200 lays them out.
    fn row_pitch(&self) -> u64 {
        let row = self.count(0) * self.element_size();
        if self.swizzle == 0 {
            row
        } else {
            row.max(16 << self.swizzle)
        }
    }

    /// Calls `f(shared_offset, global_address or None)` for every element of the box at `coords`,
    /// dimension 0 fastest; `shared_offset` counts bytes from the box's start, before swizzling. Stops
    /// with an error when `f` returns false or an element's address passes 2^64.
    fn each(&self, coords: &[i64; 5], mut f: impl FnMut(u64, Option<u64>) -> bool) -> Result<(), ()> {
        let counts: [u64; 5] = std::array::from_fn(|i| if i < self.rank { self.count(i) } else { 1 });
        let (size, pitch) = (self.element_size(), self.row_pitch());
        let mut row = 0u64;
        for j4 in 0..counts[4] {
            for j3 in 0..counts[3] {
                for j2 in 0..counts[2] {
                    for j1 in 0..counts[1] {
                        for j0 in 0..counts[0] {
                            let k = row * pitch + j0 * size;
                            let js = [j0, j1, j2, j3, j4];
                            let mut at = Some(self.global);
                            for i in 0..self.rank {
                                let c = coords[i] + (js[i] * self.element_strides[i] as u64) as i64;
                                if c < 0 || c as u64 >= self.dims[i] {
                                    at = None;
                                    break;
                                }
                                let step = (c as u64).checked_mul(self.strides[i]).ok_or(())?;
                                at = Some(at.and_then(|a| a.checked_add(step)).ok_or(())?);
                            }
                            if !f(k, at) {
                                return Err(());
                            }
                        }
                        row += 1;
                    }
                }
            }
        }
        Ok(())
    }
}

/// `tensormap.replace`: field `field` (an index into `ptx_llvm::builtin::TENSORMAP_FIELDS`) of the map
/// at `map`, at ordinal `ord` where the field has one, becomes `v`. Bytes are patched in place, as
/// the GPU does: a map made invalid faults at its next use. The element type takes PTX's numbering
/// (the manual's table), not the driver's.
///
/// # Safety
/// `map` must be valid for reading and writing 128 bytes.
pub(crate) unsafe fn replace(map: u64, field: u32, ord: usize, v: u64) {
    let b = &mut *(map as *mut [u8; MAP_BYTES]);
    // An ordinal past the field's dimensions marks the map invalid (bit 5 of byte 7), as does an
    // out-of-range value: a field the next use refuses (0, or an unknown code).
    let strides = field == 4;
    if ord > if strides { 3 } else { 4 } {
        b[7] |= 1 << 5;
        return;
    }
    let small = |v: u64, max: u64| if v <= max { v } else { 0 };
    match field {
        0 => b[8..16].copy_from_slice(&v.to_le_bytes()),
        1 => b[5] = small(v + 1, 5) as u8,
        2 => b[96 + 4 * ord..100 + 4 * ord].copy_from_slice(&(small(v, 256) as u32).to_le_bytes()),
        3 => b[16 + 4 * ord..20 + 4 * ord].copy_from_slice(&(v as u32).to_le_bytes()),
        // The ordinal counts the strides the driver takes, from dimension 1 on.
        4 => b[48 + 8 * ord..56 + 8 * ord].copy_from_slice(&v.to_le_bytes()),
        5 => b[90 + ord] = small(v, 8) as u8,
        6 => {
            // PTX: u8 u16 u32 s32 u64 s64 f16 f32 f32.ftz f64 bf16 tf32 tf32.ftz.
            const DRIVER: [u8; 13] = [0, 1, 2, 3, 4, 5, 6, 7, 10, 8, 9, 11, 12];
            b[4] = DRIVER.get(v as usize).copied().unwrap_or(0xff);
        }
        7 => b[116] = small(v, 2) as u8 | (v > 2) as u8,
        8 => b[6] = if v <= 3 { v as u8 } else { 0xff },
        9 => b[7] = b[7] & 15 | ((v == 1) as u8) << 4 | ((v > 1) as u8) << 5,
        _ => {}
    }
}

/// An f32 rounded to TF32's 10 mantissa bits, to nearest with ties to even; infinities and NaNs as
/// they are.
fn round_tf32(x: u32) -> u32 {
    if x & 0x7f80_0000 == 0x7f80_0000 {
        return x;
    }
    (x + 0xfff + (x >> 13 & 1)) & !0x1fff
}

/// The swizzled place of byte `offset` of the shared window (see the module's comment).
fn swizzled(offset: u64, swizzle: u32) -> u64 {
    if swizzle == 0 {
        return offset;
    }
    let mask = (1u64 << swizzle) - 1;
    offset ^ ((offset >> 7 & mask) << 4)
}

/// `ptx_llvm::builtin::Mem::Tensor`: `op` is [`TENSOR_LOAD`], [`TENSOR_STORE`] or a reduction
/// ([`TENSOR_REDUCE`] | its [`BULK_OPS`] index); `dims` the instruction's dimensionality. Returns 1
/// when the launch faulted: a map cuTensorMapEncodeTiled did not write, a box the GPU refuses, one
/// that leaves the shared window, an address past 2^64.
pub(crate) fn tensor_op(env: &Env, args: &TensorArgs, op: u32, dims: usize, site: u32) -> u64 {
    let checked = op & TENSOR_CHECKED != 0;
    let op = op & !TENSOR_CHECKED;
    let fault = |kind| {
        crate::runtime::checked::trap(env, site, kind);
        1
    };
    let illegal = |what| fault(FaultKind::Illegal(what));
    // SAFETY: the map's address is the kernel's; reading it faults like any access would, which the
    // trap handler turns into the launch's error. Another thread may be rewriting it: copy it first.
    let bytes = unsafe { std::ptr::read_unaligned(args.map as *const [u8; MAP_BYTES]) };
    let Some(m) = TensorMap::from_bytes(&bytes) else {
        return illegal(
            "used a tensor map that cuTensorMapEncodeTiled did not write (or that tensormap.replace broke)",
        );
    };
    if m.rank != dims {
        return illegal("used a tensor map whose rank differs from the instruction's dimensions");
    }
    let coords = args.coords;
    // An H200 ends the launch when the box does not start on a 16-byte boundary of dimension 0 (the
    // manual: "The address of the bounding Box must also be aligned to 16 bytes").
    if (coords[0] * m.element_size() as i64) % 16 != 0 {
        return illegal("copied a tensor box whose first element is not 16-byte aligned");
    }
    // It ends a store or reduction whose box starts before the tensor, too.
    if op != TENSOR_LOAD && coords[..m.rank].iter().any(|&c| c < 0) {
        return illegal("stored a tensor box that starts before the tensor (a negative coordinate)");
    }
    let ty = TYPES[m.dtype as usize].1;
    let red = (op & !TENSOR_REDUCE) as usize;
    if op & TENSOR_REDUCE != 0 && !reduces(BULK_OPS[red.min(7)], m.dtype) {
        return illegal("reduced tensor elements of a type the operation does not take");
    }
    let base = env.shared as u64;
    let start = args.shared.wrapping_sub(base);
    let size = m.element_size();
    // The windows a load writes: its own CTA's, or under `.multicast::cluster` those of the ranks in
    // the mask, at the same offsets.
    let multicast = args.multicast & TensorArgs::MULTICAST_BIT != 0;
    let ranks: Vec<usize> = (0..ptx_llvm::abi::CLUSTER_TABLE)
        .filter(|r| multicast && args.multicast >> r & 1 == 1)
        .collect();
    let windows: Vec<u64> = if multicast {
        // SAFETY: the table has CLUSTER_TABLE entries (`Env::cluster_shared`).
        let table = unsafe { std::slice::from_raw_parts(env.cluster_shared, ptx_llvm::abi::CLUSTER_TABLE) };
        match ranks.iter().map(|&r| table[r] as u64).collect::<Vec<_>>() {
            w if w.contains(&0) => return illegal("multicast a tensor box to a CTA rank past the cluster"),
            w => w,
        }
    } else {
        vec![base]
    };
    // Every element's place in shared memory, which must lie inside the window.
    let place = |k: u64| {
        let off = swizzled(start.checked_add(k)?, m.swizzle);
        (off.checked_add(size)? <= args.window).then_some(off)
    };
    let tf32 = matches!(m.dtype, TFLOAT32 | TFLOAT32_FTZ);
    let fill = m.fill();
    let cell = unsafe { (env.fault as *const crate::runtime::checked::FaultCell).as_ref() };
    // Checked code has each global element's access checked (and seen by the sanitizers), as its
    // own accesses are.
    let access = match op {
        TENSOR_LOAD => SPACE_GLOBAL,
        TENSOR_STORE => SPACE_GLOBAL | ACCESS_WRITE,
        _ => SPACE_GLOBAL | ACCESS_ATOMIC,
    };
    // Whether a checked access stopped the copy (the check recorded its fault).
    let mut recorded = false;
    // SAFETY: each element's shared place is checked before it is touched; global addresses are the
    // map's, whose faults the trap handler catches.
    let done = m.each(&coords, |k, at| unsafe {
        let Some(off) = place(k) else { return false };
        if let Some(a) = at.filter(|_| checked) {
            if crate::runtime::checked::ptxjit_check(env, a, size, site, access) != 0 {
                recorded = true;
                return false;
            }
        }
        if let Some(cell) = cell {
            // initcheck: the copy writes these bytes (in each CTA of a multicast).
            match (op, at) {
                (TENSOR_LOAD, _) if multicast => ranks
                    .iter()
                    .for_each(|&r| crate::runtime::checked::cluster_written(env, cell, r, off, size)),
                (TENSOR_LOAD, _) => crate::runtime::sanitize::copied(env, cell, base + off, size),
                (_, Some(a)) => crate::runtime::sanitize::copied(env, cell, a, size),
                _ => {}
            }
        }
        for &w in &windows {
            let sh = (w + off) as *mut u8;
            match (op, at) {
                // TF32 maps round each f32 to 10 mantissa bits on the way in (an H200 does).
                (TENSOR_LOAD, Some(a)) if tf32 => {
                    (sh as *mut u32).write_unaligned(round_tf32((a as *const u32).read_unaligned()))
                }
                (TENSOR_LOAD, Some(a)) => std::ptr::copy_nonoverlapping(a as *const u8, sh, size as usize),
                (TENSOR_LOAD, None) => std::ptr::copy_nonoverlapping(fill.to_le_bytes().as_ptr(), sh, size as usize),
                (TENSOR_STORE, Some(a)) => std::ptr::copy_nonoverlapping(sh, a as *mut u8, size as usize),
                (_, Some(a)) => {
                    let mut v = 0u64;
                    std::ptr::copy_nonoverlapping(sh, &mut v as *mut u64 as *mut u8, size as usize);
                    crate::runtime::memops::reduce_element(a, v, size, red, ty);
                }
                (_, None) => {}
            }
        }
        true
    });
    if done.is_err() {
        if recorded {
            return 1;
        }
        return fault(FaultKind::Shared(
            "copied a tensor box past the CTA's shared memory or 2^64",
        ));
    }
    if op == TENSOR_LOAD && args.mbar != 0 {
        // Each destination CTA's mbarrier, at the offset of the one named.
        for &w in &windows {
            let mbar = w + args.mbar.wrapping_sub(base);
            crate::runtime::memops::ptxjit_mem(Mem::MbarCompleteTx as u32, env, mbar, m.box_bytes(), 0);
        }
    }
    0
}

/// Whether `cp.reduce.async.bulk.tensor` reduces elements of map type `dtype` with `op` (the
/// manual's table of operations and element types).
fn reduces(op: &str, dtype: u32) -> bool {
    match op {
        ".add" => matches!(
            dtype,
            UINT32 | INT32 | UINT64 | FLOAT32 | FLOAT32_FTZ | FLOAT16 | BFLOAT16
        ),
        ".min" | ".max" => matches!(dtype, UINT32 | INT32 | UINT64 | INT64 | FLOAT16 | BFLOAT16),
        ".inc" | ".dec" => dtype == UINT32,
        _ => matches!(dtype, UINT32 | INT32 | UINT64 | INT64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiled(dims: &[u64], strides: &[u64], boxes: &[u32], swizzle: u32) -> Result<TensorMap, EncodeError> {
        TensorMap::tiled(&Tiled {
            dtype: 7,
            global: 0x1000,
            dims,
            strides,
            boxes,
            element_strides: &[1, 1, 1, 1, 1][..dims.len()],
            interleave: 0,
            swizzle,
            l2_promotion: 0,
            oob_fill: 0,
        })
    }

    #[test]
    fn encoding_round_trips() {
        let m = tiled(&[40, 24], &[160], &[32, 8], 3).expect("valid");
        assert_eq!(TensorMap::from_bytes(&m.to_bytes()), Some(m.clone()));
        assert_eq!(m.box_bytes(), 32 * 8 * 4);
        assert_eq!(TensorMap::from_bytes(&[0; MAP_BYTES]), None);
    }

    #[test]
    fn documented_requirements() {
        use EncodeError::*;
        assert!(
            matches!(tiled(&[40, 24], &[168], &[32, 8], 0), Err(Invalid(_))),
            "stride not a multiple of 16"
        );
        assert!(
            matches!(tiled(&[40, 24], &[160], &[3, 8], 0), Err(Invalid(_))),
            "inner box of 12 bytes"
        );
        assert!(
            matches!(tiled(&[40, 24], &[160], &[16, 8], 1), Err(Invalid(_))),
            "64 bytes in a 32-byte swizzle"
        );
        assert!(
            matches!(tiled(&[40, 24], &[160], &[32, 257], 0), Err(Invalid(_))),
            "box over 256"
        );
        assert!(tiled(&[40, 24], &[160], &[8, 8], 1).is_ok());
    }

    #[test]
    fn replace_patches_each_field() {
        let bytes = tiled(&[40, 24], &[160], &[32, 8], 0).expect("valid").to_bytes();
        let patched = |field, ord, v| {
            let mut b = bytes;
            unsafe { replace(b.as_mut_ptr() as u64, field, ord, v) };
            TensorMap::from_bytes(&b)
        };
        assert_eq!(patched(0, 0, 0x2000).map(|m| m.global), Some(0x2000));
        assert_eq!(patched(2, 1, 4).map(|m| m.boxes[1]), Some(4));
        assert_eq!(patched(3, 1, 12).map(|m| m.dims[1]), Some(12));
        assert_eq!(patched(4, 0, 320).map(|m| m.strides[1]), Some(320));
        assert_eq!(patched(5, 1, 2).map(|m| m.element_strides[1]), Some(2));
        // PTX's f16 (6) is the driver's FLOAT16 (6), its f32.ftz (8) the driver's FLOAT32_FTZ (10); the
        // element size follows the type.
        assert_eq!(
            patched(6, 0, 8).map(|m| (m.dtype, m.strides[0])),
            Some((FLOAT32_FTZ, 4))
        );
        assert_eq!(patched(6, 0, 6).map(|m| (m.dtype, m.strides[0])), Some((FLOAT16, 2)));
        assert_eq!(patched(8, 0, 3).map(|m| m.swizzle), Some(3));
        assert_eq!(patched(9, 0, 1).map(|m| m.oob_nan), Some(true));
        // What the next use must refuse: rank 6, a box over 256, an ordinal past the strides, a
        // fill code past the table, an interleave.
        assert_eq!(patched(1, 0, 5), None);
        assert_eq!(patched(2, 0, 257), None);
        assert_eq!(patched(4, 4, 16), None);
        assert_eq!(patched(9, 0, 2), None);
        assert_eq!(patched(7, 0, 1), None);
    }

    #[test]
    fn swizzle_matches_the_manuals_tables() {
        // 128-byte swizzle, row 5 (bytes 640..768): chunks 5 4 7 6 1 0 3 2.
        let row: Vec<u64> = (0..8).map(|c| (swizzled(640 + 16 * c, 3) - 640) / 16).collect();
        assert_eq!(row, [5, 4, 7, 6, 1, 0, 3, 2]);
        assert_eq!(round_tf32(0x8023_a9b0), 0x8023_a000);
        assert_eq!(round_tf32(0x3f81_9074), 0x3f81_a000);
        // 32-byte swizzle: rows alternate 0..7 and 1 0 3 2 5 4 7 6.
        let row: Vec<u64> = (0..8).map(|c| (swizzled(128 + 16 * c, 1) - 128) / 16).collect();
        assert_eq!(row, [1, 0, 3, 2, 5, 4, 7, 6]);
    }
}
