//! Warp-level matrix instructions (`mma.sync`, `ldmatrix`, `stmatrix`, `movmatrix`) emulated per warp.
//!
//! The CPU engine runs a warp's lanes one at a time, so these functions see every lane's registers at
//! once: the lowering stores each lane's operand registers into a buffer of 32-bit words and the runtime
//! hands all 32 buffers over, asking for one lane's result. Registers are placed exactly where the PTX
//! ISA manual (9.7.15.4, "Matrix Fragments for mma.*") puts them, so code that fills fragments by hand
//! (not only through `ldmatrix`) computes what it would on a GPU.
//!
//! Arithmetic (the manual leaves order and rounding unspecified for everything but `.f64`):
//! - f16/bf16/tf32/e4m3/e5m2 inputs: each product is exact in f64 and the dot product is summed in
//!   f64 (C first, then k ascending), then rounded once, to nearest even, to the f32 or f16 result.
//!   For the shapes here the f64 sum is exact unless the terms span more than ~50 binades, so the
//!   result is normally the correctly rounded exact value (hardware truncates in places; we do not
//!   model that). NaN results are the canonical NaN (0x7fffffff / 0x7fff).
//! - tf32 inputs ignore the low 13 bits of each 32-bit register (the manual says so for wgmma; we
//!   assume mma does the same).
//! - f64: a chain of fused multiply-adds `d = fma(a[k], b[k], d)` from `d = c`, k ascending, in the
//!   instruction's rounding mode (`.rn` default, `.rz`, `.rm`, `.rp`).
//! - integers: the exact sum, wrapped to 32 bits, or clamped to the s32 range with `.satfinite`.
//! - b1: `popc(a AND/XOR b)` over k, added to C (wrapping).

use rustc_apfloat::ieee::Double;
use rustc_apfloat::{Float, Round};

/// Element types of mma operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    F16,
    Bf16,
    Tf32,
    E4m3,
    E5m2,
    F32,
    F64,
    S8,
    U8,
    S4,
    U4,
    B1,
    S32,
}

impl Ty {
    fn parse(s: &str) -> Option<Ty> {
        Some(match s {
            ".f16" => Ty::F16,
            ".bf16" => Ty::Bf16,
            ".tf32" => Ty::Tf32,
            ".e4m3" => Ty::E4m3,
            ".e5m2" => Ty::E5m2,
            ".f32" => Ty::F32,
            ".f64" => Ty::F64,
            ".s8" => Ty::S8,
            ".u8" => Ty::U8,
            ".s4" => Ty::S4,
            ".u4" => Ty::U4,
            ".b1" => Ty::B1,
            ".s32" => Ty::S32,
            _ => return None,
        })
    }

    fn bits(self) -> usize {
        match self {
            Ty::B1 => 1,
            Ty::S4 | Ty::U4 => 4,
            Ty::S8 | Ty::U8 | Ty::E4m3 | Ty::E5m2 => 8,
            Ty::F16 | Ty::Bf16 => 16,
            Ty::Tf32 | Ty::F32 | Ty::S32 => 32,
            Ty::F64 => 64,
        }
    }

    /// Elements per 32-bit register (an f64 register holds one element, as does a 32-bit one).
    fn per_reg(self) -> usize {
        (32 / self.bits()).max(1)
    }

    fn is_i8(self) -> bool {
        matches!(self, Ty::S8 | Ty::U8)
    }

    fn is_i4(self) -> bool {
        matches!(self, Ty::S4 | Ty::U4)
    }

    fn is_f8(self) -> bool {
        matches!(self, Ty::E4m3 | Ty::E5m2)
    }

    fn is_f16_or_f32(self) -> bool {
        matches!(self, Ty::F16 | Ty::F32)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    A,
    B,
    C,
    D,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BitOp {
    And,
    Xor,
}

/// One `mma.sync` form: shape, element types, layouts and modifiers, plus where every matrix element
/// lives in the lanes' buffers (built once here, so `mma_lane` only looks elements up).
#[derive(Clone, Debug)]
pub struct MmaDesc {
    m: usize,
    n: usize,
    k: usize,
    d: Ty,
    a: Ty,
    b: Ty,
    c: Ty,
    a_row: bool,
    b_row: bool,
    satfinite: bool,
    bit_op: Option<BitOp>,
    /// `.rz`/`.rm`/`.rp`/`.rn` for f64 as 0..3 (kept as a number: `Round` is not `Debug`).
    round: u8,
    /// m8n8k4 with f16 inputs: four independent 8x8x4 products, each on a quad pair (lanes 4q..4q+3
    /// and 16+4q..16+4q+3), with layouts of their own.
    quad_pair: bool,
    /// For A, B and C: `(lane, element)` holding each matrix element, indexed by
    /// `(computation * rows + row) * cols + col`.
    at: [Vec<(u8, u16)>; 3],
}

impl MmaDesc {
    /// Parses the modifiers of `mma` in written order (`.sync`, `.aligned`, the shape, the layouts,
    /// `.satfinite`, the d/a/b/c types, a rounding mode for f64, `.xor`/`.and` and `.popc` for b1).
    /// None for malformed or unsupported forms (sparse `mma.sp` is not handled here).
    pub fn parse(mods: &[&str]) -> Option<MmaDesc> {
        let mut shape = None;
        let mut layouts = Vec::new();
        let mut types = Vec::new();
        let (mut satfinite, mut popc) = (false, false);
        let mut bit_op = None;
        let mut round = None;
        for &m in mods {
            match m {
                ".sync" | ".aligned" => {}
                ".row" => layouts.push(true),
                ".col" => layouts.push(false),
                ".satfinite" => satfinite = true,
                ".popc" => popc = true,
                ".and" => bit_op = Some(BitOp::And),
                ".xor" => bit_op = Some(BitOp::Xor),
                ".rn" => round = Some(0),
                ".rz" => round = Some(1),
                ".rm" => round = Some(2),
                ".rp" => round = Some(3),
                _ => {
                    if let Some(t) = Ty::parse(m) {
                        types.push(t);
                    } else if shape.is_none() {
                        shape = Some(parse_shape(m)?);
                    } else {
                        return None;
                    }
                }
            }
        }
        let (m, n, k) = shape?;
        let ([d, a, b, c], [a_row, b_row]) = (<[Ty; 4]>::try_from(types).ok()?, <[bool; 2]>::try_from(layouts).ok()?);
        let quad_pair = (m, n, k) == (8, 8, 4) && a == Ty::F16;
        let ok_types = match (m, n, k) {
            _ if a == Ty::F64 => {
                [d, b, c] == [Ty::F64; 3] && matches!((m, k), (8, 4) | (16, 4) | (16, 8) | (16, 16))
            }
            (8, 8, 4) => {
                a == Ty::F16 && b == Ty::F16 && d.is_f16_or_f32() && c.is_f16_or_f32() && !(c == Ty::F32 && d == Ty::F16)
            }
            (16, 8, 8) | (16, 8, 16) if matches!(a, Ty::F16 | Ty::Bf16) => {
                b == a
                    && (if a == Ty::F16 { d.is_f16_or_f32() && c.is_f16_or_f32() } else { d == Ty::F32 && c == Ty::F32 })
                    && (k == 16 || d == c)
            }
            (16, 8, 4) | (16, 8, 8) if a == Ty::Tf32 => b == a && d == Ty::F32 && c == Ty::F32,
            (16, 8, 32) if a.is_f8() => b.is_f8() && d == Ty::F32 && c == Ty::F32,
            (8, 8, 16) | (16, 8, 16) | (16, 8, 32) if a.is_i8() => b.is_i8() && d == Ty::S32 && c == Ty::S32,
            (8, 8, 32) | (16, 8, 32) | (16, 8, 64) if a.is_i4() => b.is_i4() && d == Ty::S32 && c == Ty::S32,
            (8, 8, 128) | (16, 8, 128) | (16, 8, 256) => a == Ty::B1 && b == Ty::B1 && d == Ty::S32 && c == Ty::S32,
            _ => false,
        };
        let int_in = a.is_i8() || a.is_i4();
        let ok_mods = (quad_pair || (a_row && !b_row))
            && (!satfinite || int_in)
            && (round.is_none() || a == Ty::F64)
            && ((a == Ty::B1) == (popc && bit_op.is_some()))
            && (a == Ty::B1 || bit_op.is_none() && !popc);
        if !ok_types || !ok_mods {
            return None;
        }
        let mut desc = MmaDesc {
            m,
            n,
            k,
            d,
            a,
            b,
            c,
            a_row,
            b_row,
            satfinite,
            bit_op,
            round: round.unwrap_or(0),
            quad_pair,
            at: [Vec::new(), Vec::new(), Vec::new()],
        };
        for (slot, op) in [Op::A, Op::B, Op::C].into_iter().enumerate() {
            let (rows, cols) = desc.dims(op);
            let mut at = vec![(u8::MAX, 0u16); desc.computations() * rows * cols];
            for lane in 0..32 {
                for i in 0..desc.count(op) {
                    let (r, c) = desc.pos(op, lane, i);
                    at[(desc.computation(lane) * rows + r) * cols + c] = (lane as u8, i as u16);
                }
            }
            debug_assert!(at.iter().all(|&(l, _)| l != u8::MAX), "layout leaves a hole in {op:?}");
            desc.at[slot] = at;
        }
        Some(desc)
    }

    /// 32-bit words per lane for A, B, C and D (an f64 register is two words, low first).
    pub fn words(&self) -> (usize, usize, usize, usize) {
        let w = |op| self.count(op) * self.ty(op).bits() / 32;
        (w(Op::A), w(Op::B), w(Op::C), w(Op::D))
    }

    fn ty(&self, op: Op) -> Ty {
        match op {
            Op::A => self.a,
            Op::B => self.b,
            Op::C => self.c,
            Op::D => self.d,
        }
    }

    fn dims(&self, op: Op) -> (usize, usize) {
        match op {
            Op::A => (self.m, self.k),
            Op::B => (self.k, self.n),
            Op::C | Op::D => (self.m, self.n),
        }
    }

    fn computations(&self) -> usize {
        if self.quad_pair { 4 } else { 1 }
    }

    fn computation(&self, lane: usize) -> usize {
        if self.quad_pair { (lane >> 2) & 3 } else { 0 }
    }

    /// Elements of `op` each lane holds.
    fn count(&self, op: Op) -> usize {
        let (rows, cols) = self.dims(op);
        rows * cols * self.computations() / 32
    }

    /// (row, column) of element `i` of lane `lane`'s fragment of `op`.
    ///
    /// Outside m8n8k4.f16, the manual's per-shape formulas are all one pattern once written in terms
    /// of `e`, the elements per 32-bit register (1 for tf32/f64, 2 for f16/bf16, 4 for 8-bit, 8 for
    /// 4-bit, 32 for b1): A holds, per register, `e` consecutive columns of row `g` or `g + 8` (the
    /// rows alternating per register, the second pair of registers moving 4e columns right); B holds
    /// `e` consecutive rows of column `g`, the next register 4e rows down; C/D hold two adjacent
    /// columns of row `g`, then of row `g + 8`. The tests check this against each shape's own formula.
    fn pos(&self, op: Op, lane: usize, i: usize) -> (usize, usize) {
        if self.quad_pair {
            let hi = if lane < 16 { 0 } else { 4 };
            let q = lane % 4;
            return match op {
                Op::A if self.a_row => (q + hi, i),
                Op::A => (i + hi, q),
                Op::B if self.b_row => (q, i + hi),
                Op::B => (i, q + hi),
                _ if self.ty(op) == Ty::F16 => (q + hi, i),
                _ => ((lane & 1) + (i & 2) + hi, (i & 4) + (lane & 2) + (i & 1)),
            };
        }
        let (g, t) = (lane >> 2, lane % 4);
        let e = self.ty(op).per_reg();
        match op {
            Op::A => (g + 8 * ((i / e) & 1), e * t + i % e + 4 * e * (i / (2 * e))),
            Op::B => (e * t + i % e + 4 * e * (i / e), g),
            Op::C | Op::D => (g + 8 * (i >> 1), 2 * t + (i & 1)),
        }
    }

    /// Raw bits of matrix element (r, c) of computation `comp` of operand `op` (A, B or C).
    fn fetch(&self, op: Op, bufs: &[&[u32]; 32], comp: usize, r: usize, c: usize) -> u64 {
        let (wa, wb, _, _) = self.words();
        let (slot, base) = match op {
            Op::A => (0, 0),
            Op::B => (1, wa),
            _ => (2, wa + wb),
        };
        let (rows, cols) = self.dims(op);
        let (lane, i) = self.at[slot][(comp * rows + r) * cols + c];
        get_elem(&bufs[lane as usize][base..], self.ty(op).bits(), i as usize)
    }
}

fn parse_shape(s: &str) -> Option<(usize, usize, usize)> {
    let rest = s.strip_prefix(".m")?;
    let (m, rest) = rest.split_once('n')?;
    let (n, k) = rest.split_once('k')?;
    Some((m.parse().ok()?, n.parse().ok()?, k.parse().ok()?))
}

/// Element `i` of `bits` width from packed words, element 0 in the low bits of word 0.
fn get_elem(words: &[u32], bits: usize, i: usize) -> u64 {
    if bits == 64 {
        return words[2 * i] as u64 | (words[2 * i + 1] as u64) << 32;
    }
    let (w, sh) = (i * bits / 32, i * bits % 32);
    (words[w] as u64 >> sh) & ((1u64 << bits) - 1)
}

fn put_elem(words: &mut [u32], bits: usize, i: usize, v: u64) {
    if bits == 64 {
        words[2 * i] = v as u32;
        words[2 * i + 1] = (v >> 32) as u32;
        return;
    }
    let (w, sh) = (i * bits / 32, i * bits % 32);
    let mask = (((1u64 << bits) - 1) << sh) as u32;
    words[w] = words[w] & !mask | ((v << sh) as u32 & mask);
}

fn pow2(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// Binary minifloat with `eb` exponent and `mb` mantissa bits to f64 (exact). `ieee`: an all-ones
/// exponent means infinity/NaN; otherwise (e4m3) only the all-ones pattern is NaN.
fn minifloat(raw: u64, eb: u32, mb: u32, ieee: bool) -> f64 {
    let bias = (1i32 << (eb - 1)) - 1;
    let sign = if raw >> (eb + mb) & 1 == 1 { -1.0 } else { 1.0 };
    let exp = (raw >> mb) as i32 & ((1 << eb) - 1);
    let man = raw & ((1 << mb) - 1);
    let max_exp = (1 << eb) - 1;
    if exp == max_exp && (ieee || man == (1 << mb) - 1) {
        return if ieee && man == 0 { sign * f64::INFINITY } else { f64::NAN };
    }
    let (sig, e) = if exp == 0 { (man, 1 - bias) } else { (man | 1 << mb, exp - bias) };
    sign * sig as f64 * pow2(e - mb as i32)
}

fn float_value(ty: Ty, raw: u64) -> f64 {
    match ty {
        Ty::F16 => minifloat(raw, 5, 10, true),
        Ty::E5m2 => minifloat(raw, 5, 2, true),
        Ty::E4m3 => minifloat(raw, 4, 3, false),
        Ty::Bf16 => f32::from_bits((raw as u32) << 16) as f64,
        Ty::Tf32 => f32::from_bits(raw as u32 & !0x1fff) as f64,
        Ty::F32 => f32::from_bits(raw as u32) as f64,
        _ => f64::from_bits(raw),
    }
}

fn int_value(ty: Ty, raw: u64) -> i64 {
    match ty {
        Ty::S8 => raw as u8 as i8 as i64,
        Ty::S4 => ((raw as u8) << 4) as i8 as i64 >> 4,
        Ty::S32 => raw as u32 as i32 as i64,
        _ => raw as i64,
    }
}

/// f64 to f16 bits, rounding once to nearest even (going through f32 would round twice).
fn f16_bits(x: f64) -> u64 {
    if x.is_nan() {
        return 0x7fff;
    }
    let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
    let a = x.abs();
    // The f16 spacing at a's binade (subnormals share the spacing 2^-24); scaling by it is exact.
    let e = ((a.to_bits() >> 52) as i32 - 1023).max(-14);
    let q = pow2(e - 10);
    let r = (a / q).round_ties_even() * q;
    if r > 65504.0 {
        return sign | 0x7c00;
    }
    let bits = if r < pow2(-14) {
        (r * pow2(24)) as u64 // 1024 here is the smallest normal, whose encoding is the same
    } else {
        let e = (r.to_bits() >> 52) as i64 - 1023;
        ((e + 15) as u64) << 10 | ((r * pow2(10 - e as i32)) as u64 - 1024)
    };
    sign | bits
}

fn f32_bits(x: f64) -> u64 {
    if x.is_nan() { 0x7fff_ffff } else { (x as f32).to_bits() as u64 }
}

/// The D fragment words of `lane`, given every lane's buffer = [A words..., B words..., C words...].
/// Panics if a buffer is shorter than `desc.words()` says (the lowering sizes them from it).
pub fn mma_lane(desc: &MmaDesc, bufs: &[&[u32]; 32], lane: usize) -> Vec<u32> {
    let (wa, wb, wc, wd) = desc.words();
    assert!(bufs.iter().all(|b| b.len() >= wa + wb + wc), "mma lane buffer shorter than {} words", wa + wb + wc);
    let comp = desc.computation(lane);
    let mut out = vec![0u32; wd];
    for i in 0..desc.count(Op::D) {
        let (r, c) = desc.pos(Op::D, lane, i);
        let a = |kk| desc.fetch(Op::A, bufs, comp, r, kk);
        let b = |kk| desc.fetch(Op::B, bufs, comp, kk, c);
        let c_raw = desc.fetch(Op::C, bufs, comp, r, c);
        let d = match desc.a {
            Ty::F64 => {
                let round = [Round::NearestTiesToEven, Round::TowardZero, Round::TowardNegative, Round::TowardPositive]
                    [desc.round as usize];
                let mut acc = Double::from_bits(c_raw as u128);
                for kk in 0..desc.k {
                    let (x, y) = (Double::from_bits(a(kk) as u128), Double::from_bits(b(kk) as u128));
                    acc = x.mul_add_r(y, acc, round).value;
                }
                acc.to_bits() as u64
            }
            Ty::B1 => {
                let mut acc = int_value(Ty::S32, c_raw);
                for kk in 0..desc.k {
                    acc += match desc.bit_op {
                        Some(BitOp::And) => a(kk) & b(kk),
                        _ => a(kk) ^ b(kk),
                    } as i64;
                }
                acc as u32 as u64
            }
            ta if ta.is_i8() || ta.is_i4() => {
                let mut acc = int_value(Ty::S32, c_raw);
                for kk in 0..desc.k {
                    acc += int_value(ta, a(kk)) * int_value(desc.b, b(kk));
                }
                if desc.satfinite {
                    acc = acc.clamp(i32::MIN as i64, i32::MAX as i64);
                }
                acc as u32 as u64
            }
            ta => {
                let mut acc = float_value(desc.c, c_raw);
                for kk in 0..desc.k {
                    acc += float_value(ta, a(kk)) * float_value(desc.b, b(kk));
                }
                if desc.d == Ty::F16 { f16_bits(acc) } else { f32_bits(acc) }
            }
        };
        put_elem(&mut out, desc.d.bits(), i, d);
    }
    out
}

fn half(word: u32, hi: bool) -> u32 {
    if hi { word >> 16 } else { word & 0xffff }
}

/// `ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.b16`: lane `lane`'s `num` registers. `rows[i]` is the
/// address lane i supplies (lanes 8j..8j+7 give the rows of matrix j). Without `.trans` lane l gets
/// elements (l/4, 2(l%4)) and (l/4, 2(l%4)+1) of each matrix, low half first; with `.trans` the
/// addressed rows are the matrix's columns, so it gets the same elements of the transpose.
///
/// # Safety
/// Every address `rows[i]`, i < 8 * num, must be readable for 16 bytes; only bytes within those are read.
pub unsafe fn ldmatrix_lane(num: usize, trans: bool, rows: &[u64; 32], lane: usize) -> Vec<u32> {
    assert!(matches!(num, 1 | 2 | 4), "ldmatrix .x{num}");
    let (g, t) = (lane >> 2, lane % 4);
    let rd16 = |addr: u64| unsafe { std::ptr::read_unaligned(addr as usize as *const u16) } as u32;
    (0..num)
        .map(|j| {
            if trans {
                rd16(rows[8 * j + 2 * t] + 2 * g as u64) | rd16(rows[8 * j + 2 * t + 1] + 2 * g as u64) << 16
            } else {
                unsafe { std::ptr::read_unaligned((rows[8 * j + g] + 4 * t as u64) as usize as *const u32) }
            }
        })
        .collect()
}

/// `stmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.b16`: lane `lane` stores the 16-byte row it supplies
/// the address of (lanes 8j..8j+7 supply matrix j's rows; lanes past 8 * num store nothing), gathering
/// the row's eight elements from the lanes' registers `regs[l][j]`, laid out as for `ldmatrix`.
///
/// # Safety
/// `rows[lane]` must be writable for 16 bytes when lane < 8 * num.
pub unsafe fn stmatrix_lane(num: usize, trans: bool, rows: &[u64; 32], regs: &[&[u32]; 32], lane: usize) {
    assert!(matches!(num, 1 | 2 | 4), "stmatrix .x{num}");
    if lane >= 8 * num {
        return;
    }
    let (j, r) = (lane / 8, lane % 8);
    for c in 0..8 {
        // Element (r, c) of the stored rows: the matrix's (r, c), or its (c, r) with .trans.
        let (row, col) = if trans { (c, r) } else { (r, c) };
        let v = half(regs[4 * row + col / 2][j], col % 2 == 1) as u16;
        unsafe { std::ptr::write_unaligned((rows[lane] + 2 * c as u64) as usize as *mut u16, v) };
    }
}

/// `movmatrix.sync.aligned.m8n8.trans.b16`: lane `lane`'s register of the transposed matrix, both
/// matrices in the `ldmatrix` layout (lane l holds (l/4, 2(l%4)) low and (l/4, 2(l%4)+1) high).
pub fn movmatrix_lane(regs: &[u32; 32], lane: usize) -> u32 {
    let (g, t) = (lane >> 2, lane % 4);
    let src = |row: usize| half(regs[4 * row + g / 2], g % 2 == 1);
    src(2 * t) | src(2 * t + 1) << 16
}
