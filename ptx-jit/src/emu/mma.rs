//! Warp-level matrix instructions (`mma.sync`, `ldmatrix`, `stmatrix`, `movmatrix`) emulated per warp.
//!
//! The CPU engine runs a warp's lanes one at a time, so these functions see every lane's registers at
//! once: the lowering stores each lane's operand registers into a buffer of 32-bit words and the runtime
//! hands all 32 buffers over, asking for one lane's result. Registers are placed exactly where the PTX
//! ISA manual (9.7.15.4, "Matrix Fragments for mma.*") puts them, so code that fills fragments by hand
//! (not only through `ldmatrix`) computes what it would on a GPU.
//!
//! Arithmetic (the manual leaves order and rounding unspecified for everything but `.f64`):
//! - f16/bf16/tf32/e4m3/e5m2 inputs: D is C + sum of A*B computed exactly (in a wide fixed-point
//!   accumulator), then rounded once, to nearest even, to the f32 or f16 result type; order therefore
//!   does not matter. Hardware is looser (it may truncate partial sums); we do not model that. Any
//!   infinite or NaN term gives the f64 sum of those terms; NaN results are the canonical NaN
//!   (0x7fffffff / 0x7fff).
//! - tf32 inputs ignore the low 13 bits of each 32-bit register (the manual says so for wgmma; we
//!   assume mma does the same).
//! - f64: a chain of fused multiply-adds `d = fma(a[k], b[k], d)` from `d = c`, k ascending, in the
//!   instruction's rounding mode (`.rn` default, `.rz`, `.rm`, `.rp`).
//! - integers: the exact sum, wrapped to 32 bits, or clamped to the s32 range with `.satfinite`.
//! - b1: `popc(a AND/XOR b)` over k, added to C (wrapping).

use rustc_apfloat::ieee::Double;
use rustc_apfloat::{Float, Round};

use ptx_front::isa::{MmaBitOp as BitOp, MmaForm, MmaType as Ty};

/// Elements per 32-bit register (an f64 register holds one element, as does a 32-bit one).
pub(crate) fn per_reg(t: Ty) -> usize {
    (32 / t.bits()).max(1)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    A,
    B,
    C,
    D,
}

/// What decides the arithmetic of one element of D: the element types and the modifiers. Shared by
/// `mma` and `wgmma` (`crate::emu::wgmma`), which differ only in where their elements come from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Arith {
    pub d: Ty,
    pub a: Ty,
    pub b: Ty,
    pub c: Ty,
    pub satfinite: bool,
    pub bit_op: Option<BitOp>,
    /// The f64 rounding mode, `.rn`/`.rz`/`.rm`/`.rp` as 0..3 (a number: `Round` is not `Debug`).
    pub round: u8,
}

impl Arith {
    /// The raw bits of one element of D: the raw accumulator `c` (None: the accumulator is not read,
    /// as in `wgmma` with scale-d false) plus the dot product of the raw elements `a(0..k)` and
    /// `b(0..k)`, each product negated when `negate` (floating point only: `wgmma`'s scales).
    pub(crate) fn element(
        &self,
        c: Option<u64>,
        k: usize,
        negate: bool,
        a: impl Fn(usize) -> u64,
        b: impl Fn(usize) -> u64,
    ) -> u64 {
        match self.a {
            Ty::F64 if self.round == 0 => {
                // The host's fused multiply-add rounds to nearest even, and is much faster than apfloat's.
                let mut acc = f64::from_bits(c.unwrap_or(0));
                for kk in 0..k {
                    acc = f64::from_bits(a(kk)).mul_add(f64::from_bits(b(kk)), acc);
                }
                acc.to_bits()
            }
            Ty::F64 => {
                let round = [Round::TowardZero, Round::TowardNegative, Round::TowardPositive][self.round as usize - 1];
                let mut acc = Double::from_bits(c.unwrap_or(0) as u128);
                for kk in 0..k {
                    let (x, y) = (Double::from_bits(a(kk) as u128), Double::from_bits(b(kk) as u128));
                    acc = x.mul_add_r(y, acc, round).value;
                }
                acc.to_bits() as u64
            }
            Ty::B1 => {
                let mut acc = c.map_or(0, |c| int_value(Ty::S32, c));
                for kk in 0..k {
                    acc += match self.bit_op {
                        Some(BitOp::And) => a(kk) & b(kk),
                        _ => a(kk) ^ b(kk),
                    } as i64;
                }
                acc as u32 as u64
            }
            ta if ta.is_i8() || ta.is_i4() => {
                let mut acc = c.map_or(0, |c| int_value(Ty::S32, c));
                for kk in 0..k {
                    acc += int_value(ta, a(kk)) * int_value(self.b, b(kk));
                }
                if self.satfinite {
                    acc = acc.clamp(i32::MIN as i64, i32::MAX as i64);
                }
                acc as u32 as u64
            }
            ta => {
                let sign = if negate { -1.0 } else { 1.0 };
                let term = |kk: usize| sign * float_value(ta, a(kk)) * float_value(self.b, b(kk));
                let c = c.map(|c| float_value(self.c, c));
                let sum = match exact_f64_sum(c, (0..k).map(term)) {
                    Some(x) => x,
                    None => {
                        let mut sum = ExactSum::default();
                        if let Some(c) = c {
                            sum.add(c);
                        }
                        (0..k).for_each(|kk| sum.add(term(kk)));
                        if self.d == Ty::F16 {
                            sum.round(11, -14)
                        } else {
                            sum.round(24, -126)
                        }
                    }
                };
                if self.d == Ty::F16 {
                    f16_bits(sum)
                } else {
                    f32_bits(sum)
                }
            }
        }
    }
}

/// One `mma.sync` form: shape, element types, layouts and modifiers, plus where every matrix element
/// lives in the lanes' buffers (built once here, so `mma_lane` only looks elements up).
#[derive(Clone, Debug)]
pub struct MmaDesc {
    m: usize,
    n: usize,
    k: usize,
    arith: Arith,
    a_row: bool,
    b_row: bool,
    /// m8n8k4 with f16 inputs: four independent 8x8x4 products, each on a quad pair (lanes 4q..4q+3
    /// and 16+4q..16+4q+3), with layouts of their own.
    quad_pair: bool,
    /// Where each element of A, B and C lives, indexed by computation, then A by row and k, B by column
    /// and k (so a dot product reads both operands in order), C by row and column.
    at: [Vec<Loc>; 3],
}

impl MmaDesc {
    /// The layouts of a dense `mma` form.
    pub fn new(f: MmaForm) -> MmaDesc {
        let (m, n, k) = (f.m, f.n, f.k);
        let quad_pair = (m, n, k) == (8, 8, 4) && f.a == Ty::F16;
        let mut desc = MmaDesc {
            m,
            n,
            k,
            arith: Arith {
                d: f.d,
                a: f.a,
                b: f.b,
                c: f.c,
                satfinite: f.satfinite,
                bit_op: f.bit_op,
                round: f.round,
            },
            a_row: f.a_row,
            b_row: f.b_row,
            quad_pair,
            at: [Vec::new(), Vec::new(), Vec::new()],
        };
        let (wa, wb, _, _) = desc.words();
        for (slot, op, base) in [(0, Op::A, 0), (1, Op::B, wa), (2, Op::C, wa + wb)] {
            let (rows, cols) = desc.dims(op);
            let bits = desc.ty(op).bits();
            let hole = Loc {
                lane: u8::MAX,
                word: 0,
                shift: 0,
            };
            let mut at = vec![hole; desc.computations() * rows * cols];
            for lane in 0..32 {
                for i in 0..desc.count(op) {
                    let (r, c) = desc.pos(op, lane, i);
                    let (major, minor, len) = if op == Op::B { (c, r, rows) } else { (r, c, cols) };
                    let (word, shift) = (base + i * bits / 32, i * bits % 32);
                    at[(desc.computation(lane) * (rows * cols / len) + major) * len + minor] = Loc {
                        lane: lane as u8,
                        word: word as u16,
                        shift: shift as u8,
                    };
                }
            }
            debug_assert!(at.iter().all(|l| l.lane != u8::MAX), "layout leaves a hole in {op:?}");
            desc.at[slot] = at;
        }
        desc
    }

    /// 32-bit words per lane for A, B, C and D (an f64 register is two words, low first).
    pub fn words(&self) -> (usize, usize, usize, usize) {
        let w = |op| self.count(op) * self.ty(op).bits() / 32;
        (w(Op::A), w(Op::B), w(Op::C), w(Op::D))
    }

    fn ty(&self, op: Op) -> Ty {
        match op {
            Op::A => self.arith.a,
            Op::B => self.arith.b,
            Op::C => self.arith.c,
            Op::D => self.arith.d,
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
        if self.quad_pair {
            4
        } else {
            1
        }
    }

    fn computation(&self, lane: usize) -> usize {
        if self.quad_pair {
            (lane >> 2) & 3
        } else {
            0
        }
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
        let e = per_reg(self.ty(op));
        match op {
            Op::A => a_position(e, lane, i),
            Op::B => (e * (lane % 4) + i % e + 4 * e * (i / e), lane >> 2),
            Op::C | Op::D => d_position(lane, i),
        }
    }

    /// Raw bits of the element at `loc` of an operand of type `ty`.
    fn load(bufs: &[&[u32]; 32], loc: Loc, ty: Ty) -> u64 {
        let w = &bufs[loc.lane as usize][loc.word as usize..];
        match ty.bits() {
            64 => w[0] as u64 | (w[1] as u64) << 32,
            bits => (w[0] >> loc.shift) as u64 & ((1u64 << bits) - 1),
        }
    }
}

/// (row, column) of element `i` of lane `lane`'s part of a 16-row A tile with `e` elements per
/// register (see [`MmaDesc::pos`]); `wgmma` lays each warp's 16 rows of A out the same way.
pub(crate) fn a_position(e: usize, lane: usize, i: usize) -> (usize, usize) {
    let (g, t) = (lane >> 2, lane % 4);
    (g + 8 * ((i / e) & 1), e * t + i % e + 4 * e * (i / (2 * e)))
}

/// (row, column) of element `i` of lane `lane`'s part of a 16x8 C/D tile (past 4 elements, the
/// next tile 8 columns right: `wgmma`'s D is such tiles side by side).
pub(crate) fn d_position(lane: usize, i: usize) -> (usize, usize) {
    let (g, t) = (lane >> 2, lane % 4);
    (g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2))
}

/// Where one matrix element sits: lane, word of the lane's buffer, bit offset in the word.
#[derive(Clone, Copy, Debug)]
struct Loc {
    lane: u8,
    word: u16,
    shift: u8,
}

/// Element `i` of `bits` bits of a fragment's words (64-bit ones take two words, low first).
pub(crate) fn get_elem(words: &[u32], bits: usize, i: usize) -> u64 {
    if bits == 64 {
        return words[2 * i] as u64 | (words[2 * i + 1] as u64) << 32;
    }
    let (w, sh) = (i * bits / 32, i * bits % 32);
    (words[w] as u64 >> sh) & ((1u64 << bits) - 1)
}

/// Writes element `i` of `bits` bits into a fragment's words (see [`get_elem`]).
pub(crate) fn put_elem(words: &mut [u32], bits: usize, i: usize, v: u64) {
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
        return if ieee && man == 0 {
            sign * f64::INFINITY
        } else {
            f64::NAN
        };
    }
    let (sig, e) = if exp == 0 {
        (man, 1 - bias)
    } else {
        (man | 1 << mb, exp - bias)
    };
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

/// The value of an element's raw bits, exactly (every `mma` and `wmma` element type fits an f64).
pub(crate) fn element_value(ty: Ty, raw: u64) -> f64 {
    if ty.is_i8() || ty.is_i4() || matches!(ty, Ty::S32 | Ty::B1) {
        int_value(ty, raw) as f64
    } else {
        float_value(ty, raw)
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
pub(crate) fn f16_bits(x: f64) -> u64 {
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
    if x.is_nan() {
        0x7fff_ffff
    } else {
        (x as f32).to_bits() as u64
    }
}

/// The sum of `c` (when there is one) and `terms`, when f64 holds it and every partial sum exactly:
/// each addition's rounding error (Knuth's two-sum) is zero. Products of the narrow inputs are exact
/// in f64, so the sum is then the exact one and rounds once, as [`ExactSum`] rounds it; most dot
/// products of real data take this path, at the cost of a few additions each. None when a term is
/// infinite or NaN, or an addition rounded.
fn exact_f64_sum(c: Option<f64>, terms: impl Iterator<Item = f64>) -> Option<f64> {
    let mut s = c.unwrap_or(-0.0);
    for t in terms {
        let r = s + t;
        // Two-sum: the exact error of `s + t`, valid for any finite pair.
        let tb = r - s;
        let err = (s - (r - tb)) + (t - tb);
        if !r.is_finite() || err != 0.0 {
            return None;
        }
        s = r;
    }
    Some(s)
}

/// Bits of the fixed-point sum below the binary point.
const FRAC: i32 = 400;

/// Exact sum of the terms of a low-precision dot product, as a 768-bit two's-complement fixed-point
/// number with `FRAC` fraction bits: every product of two f16/bf16/tf32/fp8 values and every f32 or
/// f16 addend, as an f64 with 53 significant bits, is a multiple of 2^-324 below 2^257, so nothing is
/// lost before the one rounding and 33 such terms cannot overflow.
/// Infinities and NaNs bypass it (`special` keeps their f64 sum).
#[derive(Default)]
struct ExactSum {
    limbs: [u64; 12],
    special: Option<f64>,
    /// Every term so far was -0 (an exact zero sum is then -0, otherwise +0).
    all_neg_zero: Option<bool>,
}

impl ExactSum {
    fn add(&mut self, x: f64) {
        if !x.is_finite() {
            self.special = Some(self.special.unwrap_or(0.0) + x);
            return;
        }
        self.all_neg_zero = Some(self.all_neg_zero.unwrap_or(true) && x == 0.0 && x.is_sign_negative());
        if x == 0.0 {
            return;
        }
        let bits = x.to_bits();
        let biased = (bits >> 52 & 0x7ff) as i32;
        let mant = bits & ((1 << 52) - 1) | if biased == 0 { 0 } else { 1 << 52 };
        let shift = (biased.max(1) - 1075 + FRAC) as usize;
        let v = (mant as u128) << (shift % 64);
        let term = [v as u64, (v >> 64) as u64];
        let mut carry = false;
        for (j, limb) in self.limbs.iter_mut().enumerate().skip(shift / 64) {
            let t = term.get(j - shift / 64).copied().unwrap_or(0);
            if t == 0 && !carry && j > shift / 64 {
                break; // nothing left to add or borrow
            }
            let (r, o1, o2);
            if x < 0.0 {
                (r, o1) = limb.overflowing_sub(t);
                (*limb, o2) = r.overflowing_sub(carry as u64);
            } else {
                (r, o1) = limb.overflowing_add(t);
                (*limb, o2) = r.overflowing_add(carry as u64);
            }
            carry = o1 || o2;
        }
    }

    /// The sum rounded to nearest even to a format with `man_bits` significant bits and smallest
    /// normal exponent `emin` (the result, an f64, holds that format's value exactly; values past its
    /// largest finite one come back with more exponent than it has, for the caller's conversion to
    /// turn into infinity).
    fn round(&self, man_bits: i32, emin: i32) -> f64 {
        if let Some(x) = self.special {
            return x;
        }
        let neg = self.limbs[11] >> 63 == 1;
        let mut mag = self.limbs;
        if neg {
            let mut carry = true;
            for limb in &mut mag {
                let (r, o) = (!*limb).overflowing_add(carry as u64);
                *limb = r;
                carry = o;
            }
        }
        let Some(top) = (0..12).rev().find(|&j| mag[j] != 0) else {
            return if self.all_neg_zero == Some(true) { -0.0 } else { 0.0 };
        };
        let bit = |i: usize| mag[i / 64] >> (i % 64) & 1 == 1;
        let msb = 64 * top + 63 - mag[top].leading_zeros() as usize;
        let quantum = (msb as i32 - FRAC).max(emin) - (man_bits - 1);
        let q = (quantum + FRAC) as usize;
        let kept = (q..=msb.max(q)).rev().fold(0u64, |acc, i| acc << 1 | bit(i) as u64);
        let half = bit(q - 1);
        let sticky =
            mag[..(q - 1) / 64].iter().any(|&l| l != 0) || mag[(q - 1) / 64] & ((1 << ((q - 1) % 64)) - 1) != 0;
        let r = kept + (half && (sticky || kept & 1 == 1)) as u64;
        let v = r as f64 * pow2(quantum);
        if neg {
            -v
        } else {
            v
        }
    }
}

/// The D fragment words of `lane`, given every lane's buffer = [A words..., B words..., C words...].
/// Panics if a buffer is shorter than `desc.words()` says (the lowering sizes them from it).
pub fn mma_lane(desc: &MmaDesc, bufs: &[&[u32]; 32], lane: usize) -> Vec<u32> {
    let (wa, wb, wc, wd) = desc.words();
    assert!(
        bufs.iter().all(|b| b.len() >= wa + wb + wc),
        "mma lane buffer shorter than {} words",
        wa + wb + wc
    );
    let comp = desc.computation(lane);
    let mut out = vec![0u32; wd];
    for i in 0..desc.count(Op::D) {
        let (r, c) = desc.pos(Op::D, lane, i);
        let (m, n, k) = (desc.m, desc.n, desc.k);
        let (a_row, b_col) = (
            &desc.at[0][(comp * m + r) * k..][..k],
            &desc.at[1][(comp * n + c) * k..][..k],
        );
        let a = |kk: usize| MmaDesc::load(bufs, a_row[kk], desc.arith.a);
        let b = |kk: usize| MmaDesc::load(bufs, b_col[kk], desc.arith.b);
        let c_raw = MmaDesc::load(bufs, desc.at[2][(comp * m + r) * n + c], desc.arith.c);
        let d = desc.arith.element(Some(c_raw), k, false, a, b);
        put_elem(&mut out, desc.arith.d.bits(), i, d);
    }
    out
}

fn half(word: u32, hi: bool) -> u32 {
    if hi {
        word >> 16
    } else {
        word & 0xffff
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use ptx_front::isa::mma_form;
    use rustc_apfloat::ieee::{BFloat, Float8E4M3FN, Float8E5M2, Half, Single};
    use rustc_apfloat::FloatConvert;

    /// The manual's row/column formulas (9.7.15.4.1-13), transcribed shape by shape, independently of
    /// `MmaDesc::pos`. `ty` is the type of the operand `op` ('A', 'B', 'C' for C and D).
    fn manual_pos(shape: &str, ty: &str, op: char, a_row: bool, b_row: bool, lane: usize, i: usize) -> (usize, usize) {
        let group_id = lane >> 2;
        let tig = lane % 4; // threadID_in_group
        let (g, t) = (group_id, tig);
        let hi = if lane < 16 { 0 } else { 4 };
        match (shape, ty, op) {
            // m8n8k4 .f16: four quad-pair computations (lanes < 16 the low group).
            ("m8n8k4", "f16", 'A') if a_row => (lane % 4 + hi, i),
            ("m8n8k4", "f16", 'A') => (i % 4 + hi, lane % 4),
            ("m8n8k4", "f16", 'B') if b_row => (lane % 4, i + hi),
            ("m8n8k4", "f16", 'B') => (i, lane % 4 + hi),
            ("m8n8k4", "f16", 'C') => (lane % 4 + hi, i),
            ("m8n8k4", "f32", 'C') => ((lane & 0b1) + (i & 0b10) + hi, (i & 0b100) + (lane & 0b10) + (i & 0b1)),
            // m8n8k4 .f64
            ("m8n8k4", "f64", 'A') => (lane >> 2, lane % 4),
            ("m8n8k4", "f64", 'B') => (lane % 4, lane >> 2),
            ("m8n8k4", "f64", 'C') => (g, t * 2 + (i & 0x1)),
            // m8n8k16 / m8n8k32 / m8n8k128
            ("m8n8k16", _, 'A') => (g, t * 4 + i),
            ("m8n8k16", _, 'B') => (t * 4 + i, g),
            ("m8n8k32", _, 'A') => (g, t * 8 + i),
            ("m8n8k32", _, 'B') => (t * 8 + i, g),
            ("m8n8k128", _, 'A') => (g, t * 32 + i),
            ("m8n8k128", _, 'B') => (t * 32 + i, g),
            ("m8n8k16" | "m8n8k32" | "m8n8k128", _, 'C') => (g, t * 2 + i),
            // m16n8k4 (.tf32 and .f64 alike)
            ("m16n8k4", _, 'A') => (if i == 0 { g } else { g + 8 }, t),
            ("m16n8k4", _, 'B') => (t, g),
            // m16n8k8
            ("m16n8k8", "f16" | "bf16", 'A') => (if i < 2 { g } else { g + 8 }, t * 2 + (i & 0x1)),
            ("m16n8k8", "tf32" | "f64", 'A') => {
                (if i == 0 || i == 2 { g } else { g + 8 }, if i < 2 { t } else { t + 4 })
            }
            ("m16n8k8", "f16" | "bf16", 'B') => (t * 2 + i, g),
            ("m16n8k8", "tf32" | "f64", 'B') => (if i == 0 { t } else { t + 4 }, g),
            // m16n8k16
            ("m16n8k16", "f16" | "bf16", 'A') => (
                if i < 2 || (4..6).contains(&i) { g } else { g + 8 },
                if i < 4 {
                    t * 2 + (i & 0x1)
                } else {
                    t * 2 + (i & 0x1) + 8
                },
            ),
            // "i % 2 = 0" in the manual.
            ("m16n8k16", "f64", 'A') => (
                if i & 1 == 0 { g } else { g + 8 },
                if i & 1 == 0 { i * 2 + t } else { i * 2 - 2 + t },
            ),
            ("m16n8k16", "s8" | "u8", 'A') => (if i < 4 { g } else { g + 8 }, t * 4 + (i & 0x3)),
            ("m16n8k16", "f16" | "bf16", 'B') => (
                if i < 2 {
                    t * 2 + (i & 0x1)
                } else {
                    t * 2 + (i & 0x1) + 8
                },
                g,
            ),
            ("m16n8k16", "f64", 'B') => (t + i * 4, g),
            ("m16n8k16", "s8" | "u8", 'B') => (t * 4 + i, g),
            // m16n8k32
            ("m16n8k32", "s4" | "u4", 'A') => (if i < 8 { g } else { g + 8 }, t * 8 + (i & 0x7)),
            ("m16n8k32", "s4" | "u4", 'B') => (t * 8 + (i & 0x7), g),
            ("m16n8k32", _, 'A') => (
                if i < 4 || (8..12).contains(&i) { g } else { g + 8 },
                if i < 8 {
                    t * 4 + (i & 0x3)
                } else {
                    t * 4 + (i & 0x3) + 16
                },
            ),
            ("m16n8k32", _, 'B') => (
                if i < 4 {
                    t * 4 + (i & 0x3)
                } else {
                    t * 4 + (i & 0x3) + 16
                },
                g,
            ),
            // m16n8k64
            ("m16n8k64", _, 'A') => (
                if i < 8 || (16..24).contains(&i) { g } else { g + 8 },
                if i < 16 {
                    t * 8 + (i & 0x7)
                } else {
                    t * 8 + (i & 0x7) + 32
                },
            ),
            ("m16n8k64", _, 'B') => (
                if i < 8 {
                    t * 8 + (i & 0x7)
                } else {
                    t * 8 + (i & 0x7) + 32
                },
                g,
            ),
            // m16n8k128 / m16n8k256 (.b1)
            ("m16n8k128", _, 'A') => (if i < 32 { g } else { g + 8 }, t * 32 + (i & 0x1f)),
            ("m16n8k128", _, 'B') => (t * 32 + i, g),
            // The manual writes `(threadID_in_group * 32) + i` for i < 64, which would overlap the next
            // lane's columns for 32 <= i < 64; the figure's pattern (and every other shape) masks i.
            ("m16n8k256", _, 'A') => (
                if i < 32 || (64..96).contains(&i) { g } else { g + 8 },
                if i < 64 {
                    t * 32 + (i & 0x1f)
                } else {
                    t * 32 + (i & 0x1f) + 128
                },
            ),
            ("m16n8k256", _, 'B') => (
                if i < 32 {
                    t * 32 + (i & 0x1f)
                } else {
                    t * 32 + (i & 0x1f) + 128
                },
                g,
            ),
            (_, _, 'C') => (if i < 2 { g } else { g + 8 }, t * 2 + (i & 0x1)),
            _ => panic!("no manual layout for {shape} {ty} {op}"),
        }
    }

    /// Element `i` of `bits` width from packed words, element 0 in the low bits of word 0.
    fn bits_of(ty: &str) -> usize {
        match ty {
            "b1" => 1,
            "s4" | "u4" => 4,
            "s8" | "u8" | "e4m3" | "e5m2" => 8,
            "f16" | "bf16" => 16,
            "f64" => 64,
            _ => 32,
        }
    }

    fn to_f64<F: Float + FloatConvert<Double>>(raw: u64) -> f64 {
        let mut lost = false;
        f64::from_bits(F::from_bits(raw as u128).convert(&mut lost).value.to_bits() as u64)
    }

    fn from_f64<F: Float>(x: f64, exact: bool) -> u64
    where
        Double: FloatConvert<F>,
    {
        let mut lost = false;
        let v = Double::from_bits(x.to_bits() as u128).convert(&mut lost).value;
        assert!(!(exact && lost), "{x} is not exact");
        v.to_bits() as u64
    }

    /// Decoding by rustc_apfloat: independent of the module's own decoders.
    fn decode(ty: &str, raw: u64) -> f64 {
        match ty {
            "f16" => to_f64::<Half>(raw),
            "bf16" => to_f64::<BFloat>(raw),
            "tf32" => to_f64::<Single>(raw & !0x1fff),
            "f32" => to_f64::<Single>(raw),
            "e4m3" => to_f64::<Float8E4M3FN>(raw),
            "e5m2" => to_f64::<Float8E5M2>(raw),
            "f64" => f64::from_bits(raw),
            _ => unreachable!(),
        }
    }

    fn encode_exact(ty: &str, x: f64) -> u64 {
        match ty {
            "f16" => from_f64::<Half>(x, true),
            "bf16" => from_f64::<BFloat>(x, true),
            "tf32" | "f32" => from_f64::<Single>(x, true),
            "f64" => x.to_bits(),
            _ => unreachable!(),
        }
    }

    fn int(ty: &str, raw: u64) -> i64 {
        match ty {
            "s8" => raw as u8 as i8 as i64,
            "s4" => {
                if raw >= 8 {
                    raw as i64 - 16
                } else {
                    raw as i64
                }
            }
            "s32" => raw as u32 as i32 as i64,
            _ => raw as i64,
        }
    }

    /// Distinct-ish element `idx` of an operand of type `ty`, chosen so every float dot product here
    /// is exact in f64 (then rounding order cannot matter and the reference below is unambiguous).
    fn element(ty: &str, idx: usize, salt: usize) -> u64 {
        let p = (idx * 7 + salt) % 256; // a permutation of 0..256
        match ty {
            "f16" | "bf16" | "tf32" => {
                let raw = encode_exact(ty, (p as f64 - 128.0) / 64.0);
                // tf32 inputs carry junk in the 13 ignored bits.
                if ty == "tf32" {
                    raw | (idx as u64 * 0x1357) & 0x1fff
                } else {
                    raw
                }
            }
            "f32" => encode_exact(ty, ((idx * 5 + salt) % 512) as f64 / 8.0 - 32.0),
            // Top exponent bit cleared: no NaN/Inf and a modest exponent range.
            "e4m3" | "e5m2" => ((idx * 37 + salt) % 256) as u64 & 0xbf,
            "f64" => (((idx * 7 + salt) % 257) as f64 * 1.1 - 100.3).to_bits(),
            "s32" => ((idx as i64 * 1_234_567 + salt as i64) % 2_000_003 - 1_000_000) as u32 as u64,
            _ => {
                let bits = bits_of(ty);
                ((idx * 37 + salt * 11 + (idx >> 3)) as u64) & ((1u64 << bits) - 1)
            }
        }
    }

    struct Form<'a> {
        shape: &'a str,
        tys: [&'a str; 4], // d, a, b, c
        a_row: bool,
        b_row: bool,
        sat: bool,
        and: bool,
    }

    fn form(mods: &str) -> (Vec<String>, Form<'_>) {
        let toks: Vec<&str> = mods.split('.').collect();
        let tys: Vec<&str> = toks
            .iter()
            .copied()
            .filter(|t| Ty::parse(&format!(".{t}")).is_some())
            .collect();
        let lay: Vec<bool> = toks
            .iter()
            .filter(|t| matches!(**t, "row" | "col"))
            .map(|t| *t == "row")
            .collect();
        let f = Form {
            shape: toks
                .iter()
                .find(|t| t.starts_with('m') && t.contains('n') && t.contains('k'))
                .unwrap(),
            tys: [tys[0], tys[1], tys[2], tys[3]],
            a_row: lay[0],
            b_row: lay[1],
            sat: toks.contains(&"satfinite"),
            and: toks.contains(&"and"),
        };
        (toks.iter().map(|t| format!(".{t}")).collect(), f)
    }

    /// D = A*B + C for one element, from raw codes, the plain way.
    fn reference(f: &Form, a: &[u64], b: &[u64], c: u64) -> u64 {
        let [td, ta, tb, tc] = f.tys;
        match ta {
            "f64" => a
                .iter()
                .zip(b)
                .fold(f64::from_bits(c), |acc, (&x, &y)| {
                    f64::from_bits(x).mul_add(f64::from_bits(y), acc)
                })
                .to_bits(),
            "b1" => {
                let popc: i64 = a
                    .iter()
                    .zip(b)
                    .map(|(x, y)| if f.and { x & y } else { x ^ y } as i64)
                    .sum();
                (int("s32", c) + popc) as u32 as u64
            }
            "s8" | "u8" | "s4" | "u4" => {
                let s: i64 = int("s32", c) + a.iter().zip(b).map(|(&x, &y)| int(ta, x) * int(tb, y)).sum::<i64>();
                (if f.sat {
                    s.clamp(i32::MIN as i64, i32::MAX as i64)
                } else {
                    s
                }) as u32 as u64
            }
            _ => {
                // Products summed from the top of k down, C last: a different order than the module's,
                // harmless because the data keeps every sum exact.
                let s = a
                    .iter()
                    .zip(b)
                    .rev()
                    .fold(0.0, |acc, (&x, &y)| acc + decode(ta, x) * decode(tb, y))
                    + decode(tc, c);
                if td == "f16" {
                    from_f64::<Half>(s, false)
                } else {
                    from_f64::<Single>(s, false)
                }
            }
        }
    }

    /// Distributes distinct A, B, C over the lanes by the manual's layouts, runs every lane and checks
    /// D (gathered by the manual's D layout) against the triple loop, and the word counts.
    fn check(mods: &str, words: (usize, usize, usize, usize)) {
        let (toks, f) = form(mods);
        let toks: Vec<&str> = toks.iter().map(|s| s.as_str()).collect();
        let desc = MmaDesc::new(mma_form(&toks).unwrap_or_else(|e| panic!("{mods} does not parse: {e}")));
        assert_eq!(desc.words(), words, "{mods}");
        let dims: Vec<usize> = f.shape[1..].split(['n', 'k']).map(|x| x.parse().unwrap()).collect();
        let (m, n, k) = (dims[0], dims[1], dims[2]);
        let qp = f.shape == "m8n8k4" && f.tys[1] == "f16";
        let comps = if qp { 4 } else { 1 };
        let comp = |lane: usize| if qp { (lane >> 2) & 3 } else { 0 };
        let [td, ta, tb, tc] = f.tys;
        let mats: Vec<Vec<u64>> = [(ta, m * k), (tb, k * n), (tc, m * n)]
            .iter()
            .enumerate()
            .map(|(s, &(ty, len))| (0..comps * len).map(|idx| element(ty, idx, 3 + 17 * s)).collect())
            .collect();
        let cols = [k, n, n];
        let mut bufs = vec![Vec::new(); 32];
        for (o, (op, ty, nw)) in [('A', ta, words.0), ('B', tb, words.1), ('C', tc, words.2)]
            .into_iter()
            .enumerate()
        {
            let mut seen = vec![0; mats[o].len()];
            for (lane, buf) in bufs.iter_mut().enumerate() {
                let bits = bits_of(ty);
                let mut w = vec![0u32; nw];
                for i in 0..nw * 32 / bits {
                    let (r, c) = manual_pos(f.shape, ty, op, f.a_row, f.b_row, lane, i);
                    let idx = (comp(lane) * mats[o].len() / comps) + r * cols[o] + c;
                    seen[idx] += 1;
                    put_elem(&mut w, bits, i, mats[o][idx]);
                }
                buf.extend(w);
            }
            assert!(
                seen.iter().all(|&s| s == 1),
                "{mods}: the manual layout of {op} is not one-to-one"
            );
        }
        let refs: [&[u32]; 32] = std::array::from_fn(|l| bufs[l].as_slice());
        let mut d = vec![None; comps * m * n];
        for lane in 0..32 {
            let out = mma_lane(&desc, &refs, lane);
            assert_eq!(out.len(), words.3);
            let bits = bits_of(td);
            for i in 0..words.3 * 32 / bits {
                let (r, c) = manual_pos(f.shape, td, 'C', f.a_row, f.b_row, lane, i);
                let slot = &mut d[comp(lane) * m * n + r * n + c];
                assert!(slot.is_none(), "{mods}: D element ({r}, {c}) twice");
                *slot = Some(get_elem(&out, bits, i));
            }
        }
        for q in 0..comps {
            for r in 0..m {
                for c in 0..n {
                    let a: Vec<u64> = (0..k).map(|kk| mats[0][q * m * k + r * k + kk]).collect();
                    let b: Vec<u64> = (0..k).map(|kk| mats[1][q * k * n + kk * n + c]).collect();
                    let want = reference(&f, &a, &b, mats[2][q * m * n + r * n + c]);
                    assert_eq!(
                        d[q * m * n + r * n + c],
                        Some(want),
                        "{mods}: computation {q} D[{r}][{c}]"
                    );
                }
            }
        }
    }

    #[test]
    fn m16n8k16_half_and_bf16() {
        check("sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", (4, 2, 4, 4));
        check("sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", (4, 2, 2, 2));
        check("sync.aligned.m16n8k16.row.col.f32.f16.f16.f16", (4, 2, 2, 4));
        check("sync.aligned.m16n8k16.row.col.f16.f16.f16.f32", (4, 2, 4, 2));
        check("sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", (4, 2, 4, 4));
    }

    #[test]
    fn m16n8k8_half_bf16_tf32() {
        check("sync.aligned.m16n8k8.row.col.f32.f16.f16.f32", (2, 1, 4, 4));
        check("sync.aligned.m16n8k8.row.col.f16.f16.f16.f16", (2, 1, 2, 2));
        check("sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32", (2, 1, 4, 4));
        check("sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", (4, 2, 4, 4));
    }

    #[test]
    fn m16n8k4_tf32() {
        check("sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32", (2, 1, 4, 4));
    }

    #[test]
    fn f64_shapes() {
        check("sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", (2, 2, 4, 4));
        check("sync.aligned.m16n8k4.row.col.f64.f64.f64.f64.rn", (4, 2, 8, 8));
        check("sync.aligned.m16n8k8.row.col.f64.f64.f64.f64", (8, 4, 8, 8));
        check("sync.aligned.m16n8k16.row.col.f64.f64.f64.f64.rn", (16, 8, 8, 8));
    }

    #[test]
    fn m8n8k4_half_quad_pairs_every_layout() {
        for lay in ["row.col", "row.row", "col.col", "col.row"] {
            check(&format!("sync.aligned.m8n8k4.{lay}.f16.f16.f16.f16"), (2, 2, 4, 4));
            check(&format!("sync.aligned.m8n8k4.{lay}.f32.f16.f16.f16"), (2, 2, 4, 8));
            check(&format!("sync.aligned.m8n8k4.{lay}.f32.f16.f16.f32"), (2, 2, 8, 8));
        }
    }

    #[test]
    fn int8_shapes() {
        for (a, b) in [("s8", "s8"), ("s8", "u8"), ("u8", "s8"), ("u8", "u8")] {
            check(&format!("sync.aligned.m8n8k16.row.col.s32.{a}.{b}.s32"), (1, 1, 2, 2));
            check(&format!("sync.aligned.m16n8k16.row.col.s32.{a}.{b}.s32"), (2, 1, 4, 4));
            check(
                &format!("sync.aligned.m16n8k32.row.col.satfinite.s32.{a}.{b}.s32"),
                (4, 2, 4, 4),
            );
        }
    }

    #[test]
    fn int4_shapes() {
        for (a, b) in [("s4", "s4"), ("s4", "u4"), ("u4", "s4"), ("u4", "u4")] {
            check(
                &format!("sync.aligned.m8n8k32.row.col.satfinite.s32.{a}.{b}.s32"),
                (1, 1, 2, 2),
            );
            check(&format!("sync.aligned.m16n8k32.row.col.s32.{a}.{b}.s32"), (2, 1, 4, 4));
            check(&format!("sync.aligned.m16n8k64.row.col.s32.{a}.{b}.s32"), (4, 2, 4, 4));
        }
    }

    #[test]
    fn fp8_m16n8k32() {
        for (a, b) in [("e4m3", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e4m3"), ("e5m2", "e5m2")] {
            check(&format!("sync.aligned.m16n8k32.row.col.f32.{a}.{b}.f32"), (4, 2, 4, 4));
        }
    }

    #[test]
    fn single_bit_shapes() {
        for op in ["xor", "and"] {
            check(
                &format!("sync.aligned.m8n8k128.row.col.s32.b1.b1.s32.{op}.popc"),
                (1, 1, 2, 2),
            );
            check(
                &format!("sync.aligned.m16n8k128.row.col.s32.b1.b1.s32.{op}.popc"),
                (2, 1, 4, 4),
            );
            check(
                &format!("sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.{op}.popc"),
                (4, 2, 4, 4),
            );
        }
    }

    /// The descriptor of modifiers written as one text (`sync.aligned.m16n8k16…`).
    fn desc(text: &str) -> MmaDesc {
        let mods: Vec<String> = text.split('.').map(|m| format!(".{m}")).collect();
        MmaDesc::new(mma_form(&mods.iter().map(String::as_str).collect::<Vec<_>>()).unwrap())
    }

    /// Every lane gets the same words, so the layout does not matter and the sums are easy to state.
    fn uniform(mods: &str, a: u32, b: u32, c: u32) -> Vec<u32> {
        let desc = desc(mods);
        let (wa, wb, wc, _) = desc.words();
        let buf: Vec<u32> = [(a, wa), (b, wb), (c, wc)]
            .iter()
            .flat_map(|&(v, n)| vec![v; n])
            .collect();
        mma_lane(&desc, &[buf.as_slice(); 32], 5)
    }

    #[test]
    fn integer_overflow_wraps_or_saturates() {
        let big = (i32::MAX - 5) as u32;
        // 16 products of (-128)(-128) = 262144 on top of i32::MAX - 5.
        let wrap = big.wrapping_add(262_144);
        assert_eq!(
            uniform(
                "sync.aligned.m8n8k16.row.col.s32.s8.s8.s32",
                0x8080_8080,
                0x8080_8080,
                big
            ),
            vec![wrap; 2]
        );
        assert_eq!(
            uniform(
                "sync.aligned.m8n8k16.row.col.satfinite.s32.s8.s8.s32",
                0x8080_8080,
                0x8080_8080,
                big
            ),
            vec![i32::MAX as u32; 2]
        );
        // (-128)(255) * 16 below i32::MIN + 5.
        let small = (i32::MIN + 5) as u32;
        assert_eq!(
            uniform(
                "sync.aligned.m8n8k16.row.col.satfinite.s32.s8.u8.s32",
                0x8080_8080,
                0xffff_ffff,
                small
            ),
            vec![i32::MIN as u32; 2]
        );
        assert_eq!(
            uniform(
                "sync.aligned.m8n8k16.row.col.s32.s8.u8.s32",
                0x8080_8080,
                0xffff_ffff,
                small
            ),
            vec![small.wrapping_add((-128i32 * 255 * 16) as u32); 2]
        );
    }

    #[test]
    fn float_dot_product_rounds_once() {
        // C = 1 plus eight products of 2^-24: 1 + 2^-21 exactly. Accumulating in f32 step by step
        // would round every 1 + 2^-24 back to 1.
        let two_m12 = 0x0c00_0c00; // f16 2^-12, twice
        let d = uniform(
            "sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
            two_m12,
            two_m12,
            1f32.to_bits(),
        );
        assert_eq!(d, vec![(1.0f32 + 2f32.powi(-21)).to_bits(); 4]);
        // f16 results: C = 1 + 2^-10 plus eight products of 2^-14 = 1 + 2^-10 + 2^-11, halfway between
        // two f16 values; ties go to the even one, 1 + 2^-9.
        let two_m7 = 0x2000_2000;
        assert_eq!(
            uniform(
                "sync.aligned.m16n8k8.row.col.f16.f16.f16.f16",
                two_m7,
                two_m7,
                0x3c01_3c01
            ),
            vec![0x3c02_3c02; 2]
        );
        // inf * 0 + 0 * inf is NaN, and comes out canonical.
        assert_eq!(
            uniform(
                "sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
                0x0000_7c00,
                0x7c00_0000,
                0
            ),
            vec![0x7fff_ffff; 4]
        );
        assert_eq!(
            uniform(
                "sync.aligned.m16n8k8.row.col.f16.f16.f16.f16",
                0x0000_7c00,
                0x7c00_0000,
                0
            ),
            vec![0x7fff_7fff; 2]
        );
    }

    #[test]
    fn float_sum_is_exact_before_rounding() {
        // bf16: C = 1, four products of 2^-26 and four of 2^-82: exactly 1 + 2^-24 + 2^-80, just above
        // the f32 midpoint, so 1 + 2^-23. Summing in f64 would drop the 2^-80s and tie down to 1.
        let (a, b) = (0x2b00_3900u32, 0x2b00_3900u32); // bf16 (2^-13 low, 2^-41 high), twice
        let d = uniform("sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32", a, b, 1f32.to_bits());
        assert_eq!(d, vec![(1.0f32 + f32::EPSILON).to_bits(); 4]);
    }

    #[test]
    fn exact_sum_matches_integer_reference() {
        // Sums of 17 products of random finite f16 values: multiples of 2^-48 below 2^37, so scaled by
        // 2^48 they are exact i128s, which apfloat rounds to f32 on its own.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20_000 {
            let mut sum = ExactSum::default();
            let mut exact = 0i128;
            for _ in 0..17 {
                let [x, y] = [0, 1].map(|_| loop {
                    let v = decode("f16", next() & 0xffff);
                    if v.is_finite() {
                        break v;
                    }
                });
                sum.add(x * y);
                exact += (x * y * pow2(48)) as i128;
            }
            let mut lost = false;
            let want: Double = Single::from_i128(exact).value.convert(&mut lost).value;
            let want = f64::from_bits(want.to_bits() as u64) * pow2(-48);
            let got = sum.round(24, -126);
            assert!(
                got == want && got.is_sign_negative() == want.is_sign_negative(),
                "{exact}: {got:e} vs {want:e}"
            );
        }
    }

    #[test]
    fn f64_rounding_modes_round_every_fma() {
        let one = 1f64.to_bits();
        let tiny = 2f64.powi(-60).to_bits();
        let w = |x: u64| [x as u32, (x >> 32) as u32];
        let run = |rnd: &str, b: f64| {
            let desc = desc(&format!("sync.aligned.m8n8k4.row.col.f64.f64.f64.f64{rnd}"));
            let buf: Vec<u32> = [w(one), w(b.to_bits()), w(one), w(one)].concat();
            let d = mma_lane(&desc, &[buf.as_slice(); 32], 0);
            f64::from_bits(d[0] as u64 | (d[1] as u64) << 32)
        };
        let t = f64::from_bits(tiny);
        // Four fmas of 1 * 2^-60 onto 1: each rounds separately.
        assert_eq!(run("", t), 1.0);
        assert_eq!(run(".rn", t), 1.0);
        assert_eq!(run(".rz", t), 1.0);
        assert_eq!(run(".rp", t), 1.0 + 4.0 * f64::EPSILON);
        assert_eq!(run(".rm", -t), 1.0 - 2.0 * f64::EPSILON);
        assert_eq!(run(".rz", -t), 1.0 - 2.0 * f64::EPSILON);
        assert_eq!(run(".rp", -t), 1.0);
    }

    #[test]
    fn decoders_match_apfloat() {
        for raw in 0..=0xffffu64 {
            let (ours, theirs) = (float_value(Ty::F16, raw), decode("f16", raw));
            assert!(
                ours.to_bits() == theirs.to_bits() || ours.is_nan() && theirs.is_nan(),
                "f16 {raw:#x}"
            );
            let (ours, theirs) = (float_value(Ty::Bf16, raw), decode("bf16", raw));
            assert!(
                ours.to_bits() == theirs.to_bits() || ours.is_nan() && theirs.is_nan(),
                "bf16 {raw:#x}"
            );
        }
        for raw in 0..=0xffu64 {
            for (ty, name) in [(Ty::E4m3, "e4m3"), (Ty::E5m2, "e5m2")] {
                let (ours, theirs) = (float_value(ty, raw), decode(name, raw));
                assert!(
                    ours.to_bits() == theirs.to_bits() || ours.is_nan() && theirs.is_nan(),
                    "{name} {raw:#x}"
                );
            }
        }
    }

    #[test]
    fn f16_rounding_matches_apfloat() {
        // Every f16 value, the midpoints between neighbours and points just either side of them,
        // across subnormals, normals and the overflow threshold.
        let mut xs = vec![
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            65504.0,
            65519.99,
            65520.0,
            1e300,
            1e-300,
        ];
        for raw in 0..0x7c00u64 {
            let (x, next) = (decode("f16", raw), decode("f16", raw + 1));
            let mid = (x + next) / 2.0;
            // (Past 65504 the "midpoint" is infinite; its upper neighbour would be a NaN.)
            let up = if mid.is_finite() {
                f64::from_bits(mid.to_bits() + 1)
            } else {
                mid
            };
            for v in [x, mid, up, f64::from_bits(mid.to_bits() - 1)] {
                xs.extend([v, -v]);
            }
        }
        for x in xs {
            assert_eq!(f16_bits(x), from_f64::<Half>(x, false), "{x:e}");
        }
        assert_eq!(f16_bits(f64::NAN), 0x7fff);
    }

    /// Four 8x8 matrices of distinct b16 elements, rows scattered with padding; returns the memory and
    /// each lane's row address (lane 8j + r: row r of matrix j).
    fn matrices(seed: u16) -> (Vec<u16>, [u64; 32]) {
        let mut mem = vec![0u16; 32 * 12];
        let mut rows = [0u64; 32];
        for (lane, row) in rows.iter_mut().enumerate() {
            let slot = (lane * 13 + 5) % 32; // scattered, each row 24 bytes apart
            for c in 0..8 {
                mem[slot * 12 + c] = seed.wrapping_add((lane * 8 + c) as u16 * 3);
            }
            *row = slot as u64 * 24;
        }
        (mem, rows)
    }

    fn at(mem: &[u16], base: u64, addr: u64, c: usize) -> u32 {
        mem[((addr - base) / 2) as usize + c] as u32
    }

    #[test]
    fn ldmatrix_fragments() {
        for trans in [false, true] {
            for num in [1, 2, 4] {
                let (mem, offs) = matrices(100);
                let base = mem.as_ptr() as u64;
                let mut rows = [0u64; 32];
                for l in 0..8 * num {
                    rows[l] = base + offs[l]; // lanes past 8 * num keep address 0: never read
                }
                for lane in 0..32 {
                    let regs = unsafe { ldmatrix_lane(num, trans, &rows, lane) };
                    let (g, t) = (lane / 4, lane % 4);
                    // Element (r, c) of matrix j: row r's address, column c (columns with .trans).
                    let el = |j: usize, r: usize, c: usize| {
                        if trans {
                            at(&mem, base, rows[8 * j + c], r)
                        } else {
                            at(&mem, base, rows[8 * j + r], c)
                        }
                    };
                    let want: Vec<u32> = (0..num).map(|j| el(j, g, 2 * t) | el(j, g, 2 * t + 1) << 16).collect();
                    assert_eq!(regs, want, "lane {lane} x{num} trans {trans}");
                }
            }
        }
    }

    #[test]
    fn stmatrix_inverts_ldmatrix() {
        for (ld_trans, st_trans) in [(false, false), (true, true), (false, true), (true, false)] {
            for num in [1, 2, 4] {
                let (src, offs) = matrices(7);
                let src_base = src.as_ptr() as u64;
                let src_rows: [u64; 32] = std::array::from_fn(|l| src_base + offs[l]);
                let regs: Vec<Vec<u32>> = (0..32)
                    .map(|l| unsafe { ldmatrix_lane(num, ld_trans, &src_rows, l) })
                    .collect();
                let regs: [&[u32]; 32] = std::array::from_fn(|l| regs[l].as_slice());
                let (mut dst, offs2) = matrices(0);
                dst.fill(0xdead);
                let dst_base = dst.as_mut_ptr() as u64;
                let dst_rows: [u64; 32] = std::array::from_fn(|l| dst_base + offs2[(l + 3) % 32]);
                for lane in 0..32 {
                    unsafe { stmatrix_lane(num, st_trans, &dst_rows, &regs, lane) };
                }
                for j in 0..4 {
                    for r in 0..8 {
                        for c in 0..8 {
                            let got = at(&dst, dst_base, dst_rows[8 * j + r], c);
                            // Same transposition on both sides: a copy; different: the transpose.
                            let (sr, sc) = if ld_trans == st_trans { (r, c) } else { (c, r) };
                            let want = if j < num {
                                at(&src, src_base, src_rows[8 * j + sr], sc)
                            } else {
                                0xdead
                            };
                            assert_eq!(got, want, "x{num} ld {ld_trans} st {st_trans} matrix {j} ({r}, {c})");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn movmatrix_transposes() {
        // Element (r, c) = 8r + c + 0x100, in the ldmatrix layout: lane 4r + c/2, half c%2.
        let regs: [u32; 32] = std::array::from_fn(|l| {
            let (r, c) = (l / 4, 2 * (l % 4));
            (8 * r + c + 0x100) as u32 | ((8 * r + c + 1 + 0x100) as u32) << 16
        });
        let out: [u32; 32] = std::array::from_fn(|l| movmatrix_lane(&regs, l));
        for (lane, &got) in out.iter().enumerate() {
            let (r, c) = (lane / 4, 2 * (lane % 4));
            // The result's (r, c) is the source's (c, r).
            assert_eq!(
                got,
                (8 * c + r + 0x100) as u32 | ((8 * (c + 1) + r + 0x100) as u32) << 16,
                "lane {lane}"
            );
        }
        let back: [u32; 32] = std::array::from_fn(|l| movmatrix_lane(&out, l));
        assert_eq!(back, regs);
    }
}
