//! The host flavour's out-of-line operations (`ptx_llvm::builtin`): floating point with directed
//! rounding or in the 16- and 8-bit formats, conversions between any two types, and integer operations
//! whose exact PTX definitions are easier to state in Rust than in IR. Results follow the GPU: NaN
//! results are the canonical NaN, `.ftz` flushes subnormal inputs and results, `.sat` clamps to
//! [0, 1] with NaN becoming +0.
//!
//! IEEE arithmetic in every format and rounding mode comes from `rustc_apfloat` (LLVM's APFloat in
//! Rust), so `add.rm.f16` or `cvt.rz.bf16.f64` round exactly as the format demands.

use ptx_llvm::builtin::*;
use rustc_apfloat::ieee::{BFloat, Double, Float8E4M3FN, Float8E5M2, Half, IeeeFloat, Semantics, Single};
use rustc_apfloat::{Float, FloatConvert, Round};

/// NVIDIA's TensorFloat-32: f32's exponent with a 10-bit mantissa, kept in an f32 register with the
/// low 13 bits zero.
pub struct Tf32S;
impl Semantics for Tf32S {
    const BITS: usize = 19;
    const EXP_BITS: usize = 8;
}
type Tf32 = IeeeFloat<Tf32S>;

fn round_of(rnd: u32) -> Round {
    match rnd {
        RZ | RZI => Round::TowardZero,
        RM | RMI => Round::TowardNegative,
        RP | RPI => Round::TowardPositive,
        RNA => Round::NearestTiesToAway,
        _ => Round::NearestTiesToEven,
    }
}

/// A scalar float format and how its values sit in register bits.
trait Fmt: Float + FloatConvert<Double> + FloatConvert<Single> + Copy {
    const WIDTH: u32;
    fn load(bits: u64) -> Self {
        Self::from_bits(bits as u128)
    }
    fn store(self) -> u64 {
        self.to_bits() as u64
    }
    /// The canonical NaN the GPU produces.
    fn canonical_nan() -> u64 {
        (1u64 << (Self::WIDTH - 1)) - 1
    }
}
impl Fmt for Half {
    const WIDTH: u32 = 16;
}
impl Fmt for BFloat {
    const WIDTH: u32 = 16;
}
impl Fmt for Single {
    const WIDTH: u32 = 32;
}
impl Fmt for Double {
    const WIDTH: u32 = 64;
    fn canonical_nan() -> u64 {
        0xfff8_0000_0000_0000
    }
}
impl Fmt for Tf32 {
    const WIDTH: u32 = 32;
    fn load(bits: u64) -> Self {
        Self::from_bits((bits >> 13) as u128 & 0x7ffff)
    }
    fn store(self) -> u64 {
        (self.to_bits() as u64) << 13
    }
}
impl Fmt for Float8E4M3FN {
    const WIDTH: u32 = 8;
}
impl Fmt for Float8E5M2 {
    const WIDTH: u32 = 8;
    fn canonical_nan() -> u64 {
        0x7f
    }
}

/// Runs `$e` with `$F` bound to the scalar format of type code `$t`.
macro_rules! by_format {
    ($t:expr, $F:ident => $e:expr, else $other:expr) => {
        match $t {
            F16 | F16X2 => {
                type $F = Half;
                $e
            }
            BF16 | BF16X2 => {
                type $F = BFloat;
                $e
            }
            F32 | F32X2 => {
                type $F = Single;
                $e
            }
            F64 => {
                type $F = Double;
                $e
            }
            TF32 => {
                type $F = Tf32;
                $e
            }
            E4M3X2 => {
                type $F = Float8E4M3FN;
                $e
            }
            E5M2X2 => {
                type $F = Float8E5M2;
                $e
            }
            _ => $other,
        }
    };
}

/// Lane width in bits of a (possibly packed) float type code, and its lane count.
fn lanes(t: u32) -> (u32, u32) {
    match t {
        F16 | BF16 => (16, 1),
        F16X2 | BF16X2 => (16, 2),
        F32X2 => (32, 2),
        E4M3X2 | E5M2X2 | E2M3X2 | E3M2X2 | UE8M0X2 => (8, 2),
        E2M1X2 => (4, 2),
        F64 => (64, 1),
        _ => (32, 1),
    }
}

fn is_int(t: u32) -> bool {
    (U8..=S64).contains(&t)
}

fn int_bits(t: u32) -> u32 {
    match t {
        U4 | S4 => 4,
        U16X2 | S16X2 => 32,
        _ => 8 << ((t - U8) % 4),
    }
}

fn int_signed(t: u32) -> bool {
    matches!(t, S8..=S64 | S4 | S16X2)
}

fn flush<F: Fmt>(x: F, flags: u32) -> F {
    if flags & FTZ != 0 && x.is_denormal() {
        F::ZERO.copy_sign(x)
    } else {
        x
    }
}

/// The result modifiers, applied to a value of format F.
fn finish<F: Fmt>(r: F, flags: u32) -> u64 {
    if r.is_nan() {
        return if flags & SAT != 0 { 0 } else { F::canonical_nan() };
    }
    let mut r = flush(r, flags);
    if flags & SAT != 0 {
        let one = F::from_u128(1).value;
        if r.is_negative() || r.is_zero() {
            r = F::ZERO;
        } else if r > one {
            r = one;
        }
    }
    if flags & RELU != 0 && r.is_negative() {
        r = F::ZERO;
    }
    r.store()
}

/// `min`/`max`: a NaN operand yields the other (both NaN, or `.NaN`: the canonical NaN); -0 < +0.
fn min_max<F: Fmt>(max: bool, x: F, y: F, flags: u32) -> u64 {
    let (mut x, mut y) = (x, y);
    let sign = flags & XORSIGN != 0 && (x.is_negative() != y.is_negative());
    if flags & XORSIGN != 0 {
        x = x.abs();
        y = y.abs();
    }
    let r = match (x.is_nan(), y.is_nan()) {
        (true, true) => return F::canonical_nan(),
        (true, false) | (false, true) if flags & NAN != 0 => return F::canonical_nan(),
        (true, false) => y,
        (false, true) => x,
        _ if x.is_zero() && y.is_zero() => {
            if max == x.is_negative() {
                y
            } else {
                x
            }
        }
        _ if (x < y) == max => y,
        _ => x,
    };
    let r = if sign { -r } else { r };
    finish(r, flags & (RELU | FTZ))
}

/// Correctly rounded square root in any mode: the nearest root from the host, nudged by the sign
/// of its exact residual.
fn sqrt_r(x: f64, round: Round) -> f64 {
    let s = x.sqrt();
    if !s.is_finite() || s == 0.0 {
        return s;
    }
    let residual = (-s).mul_add(s, x);
    match round {
        Round::TowardZero | Round::TowardNegative if residual < 0.0 => next_toward(s, f64::NEG_INFINITY),
        Round::TowardPositive if residual > 0.0 => next_toward(s, f64::INFINITY),
        _ => s,
    }
}

fn next_toward(x: f64, to: f64) -> f64 {
    let b = x.to_bits();
    f64::from_bits(if (to > x) == (x >= 0.0) { b + 1 } else { b - 1 })
}

fn to_f64<F: Fmt>(x: F) -> f64 {
    let d: Double = x.convert(&mut false).value;
    f64::from_bits(d.to_bits() as u64)
}

fn from_f64<F: Fmt>(v: f64, round: Round) -> F
where
    Double: FloatConvert<F>,
{
    Double::from_bits(v.to_bits() as u128)
        .convert_r(round, &mut false)
        .value
}

/// One lane of an arithmetic operation in format F.
fn arith<F: Fmt>(op: u32, a: u64, b: u64, c: u64, rnd: u32, flags: u32) -> u64
where
    Double: FloatConvert<F>,
{
    let round = round_of(rnd);
    let (x, y, z) = (
        flush(F::load(a), flags),
        flush(F::load(b), flags),
        flush(F::load(c), flags),
    );
    // Double precision keeps NaN payloads (PTX ISA 9.7.3): a NaN operand comes back, quieted.
    if F::WIDTH == 64 && matches!(op, ADD | SUB | MUL | FMA | DIV | SQRT | RCP) {
        let nan_in = [(x, a), (y, b), (z, c)]
            .into_iter()
            .take(match op {
                SQRT | RCP => 1,
                FMA => 3,
                _ => 2,
            })
            .find(|(v, _)| v.is_nan());
        if let Some((_, bits)) = nan_in {
            return bits | 1 << 51;
        }
    }
    // Single-input functions with no rounding mode of their own are evaluated in f64 and rounded once.
    let via_f64 = |f: fn(f64) -> f64| finish(from_f64::<F>(f(to_f64(x)), round), flags);
    match op {
        ADD => finish(x.add_r(y, round).value, flags),
        SUB => finish(x.sub_r(y, round).value, flags),
        MUL => finish(x.mul_r(y, round).value, flags),
        FMA => finish(x.mul_add_r(y, z, round).value, flags),
        DIV => finish(x.div_r(y, round).value, flags),
        MIN | MAX => min_max(op == MAX, x, y, flags),
        SQRT if x.is_negative() && !x.is_zero() => F::canonical_nan(),
        SQRT => finish(from_f64::<F>(sqrt_r(to_f64(x), round), round), flags),
        RCP => finish(F::from_u128(1).value.div_r(x, round).value, flags),
        RSQRT => via_f64(|v| 1.0 / v.sqrt()),
        EX2 => via_f64(f64::exp2),
        LG2 => via_f64(f64::log2),
        SIN => via_f64(f64::sin),
        COS => via_f64(f64::cos),
        TANH => via_f64(f64::tanh),
        ABS => {
            let v = F::load(a);
            if v.is_nan() {
                F::canonical_nan()
            } else {
                flush(v.abs(), flags).store()
            }
        }
        NEG => {
            let v = F::load(a);
            if v.is_nan() {
                F::canonical_nan()
            } else {
                flush(-v, flags).store()
            }
        }
        TESTP => {
            let v = F::load(a);
            (match rnd {
                TESTP_FINITE => v.is_finite(),
                TESTP_INFINITE => v.is_infinite(),
                TESTP_NUMBER => !v.is_nan(),
                TESTP_NAN => v.is_nan(),
                // The manual counts zeros as normal numbers.
                TESTP_NORMAL => v.is_normal() || v.is_zero(),
                _ => v.is_denormal(),
            }) as u64
        }
        CMP => {
            use std::cmp::Ordering::*;
            let ord = x.partial_cmp(&y);
            // CMPS: six ordered comparisons, their unordered twins, then .num and .nan.
            let r = match rnd {
                12 => ord.is_some(),
                13 => ord.is_none(),
                k => {
                    let holds = match k % 6 {
                        0 => ord == Some(Equal),
                        1 => matches!(ord, Some(Less | Greater)),
                        2 => ord == Some(Less),
                        3 => matches!(ord, Some(Less | Equal)),
                        4 => ord == Some(Greater),
                        _ => matches!(ord, Some(Greater | Equal)),
                    };
                    holds || (k >= 6 && ord.is_none())
                }
            };
            r as u64
        }
        _ => 0,
    }
}

/// One of PTX 8.6's fp4 and fp6 formats (`cuda_fp4.hpp`, `cuda_fp6.hpp`): no infinity or NaN.
struct Narrow {
    exp_bits: u32,
    man_bits: u32,
    /// The exponent of the smallest normal value (1 - bias).
    emin: i32,
    /// The largest value: what overflow, infinities and NaN (without its sign) become.
    max: f64,
}

fn narrow_format(t: u32) -> Option<Narrow> {
    let (exp_bits, man_bits, emin, max) = match t {
        E2M1X2 => (2, 1, 0, 6.0),
        E2M3X2 => (2, 3, 0, 7.5),
        E3M2X2 => (3, 2, -2, 28.0),
        _ => return None,
    };
    Some(Narrow {
        exp_bits,
        man_bits,
        emin,
        max,
    })
}

/// The exponent of a positive, normal f64.
fn exponent(v: f64) -> i32 {
    (v.to_bits() >> 52 & 0x7ff) as i32 - 1023
}

impl Narrow {
    fn decode(&self, bits: u64) -> f64 {
        let m = self.man_bits;
        let field = (bits >> m & mask(self.exp_bits)) as i32;
        let man = (bits & mask(m)) as f64;
        let v = if field == 0 {
            man * 2f64.powi(self.emin - m as i32)
        } else {
            (man + (1u64 << m) as f64) * 2f64.powi(field - 1 + self.emin - m as i32)
        };
        if bits >> (self.exp_bits + m) & 1 == 1 {
            -v
        } else {
            v
        }
    }

    /// Rounds `x` into the format, saturating: what NVIDIA's host conversions do (NaN gives the
    /// positive largest value, anything larger in magnitude the largest value of its sign).
    fn encode(&self, x: f64, round: Round) -> u64 {
        let m = self.man_bits;
        let sign_bit = 1u64 << (self.exp_bits + m);
        let largest = sign_bit - 1;
        if x.is_nan() {
            return largest;
        }
        let sign = if x.is_sign_negative() { sign_bit } else { 0 };
        let a = x.abs();
        if a >= self.max {
            return sign | largest;
        }
        // The value in units of the format's spacing at a's binade, rounded to an integer.
        let e = if a == 0.0 {
            self.emin
        } else {
            exponent(a).max(self.emin)
        };
        let ulp = 2f64.powi(e - m as i32);
        let n = a / ulp;
        let up = x.is_sign_negative() == (round == Round::TowardNegative);
        let n = match round {
            Round::TowardZero => n.trunc(),
            Round::TowardPositive | Round::TowardNegative if up => n.ceil(),
            Round::TowardPositive | Round::TowardNegative => n.trunc(),
            _ => n.round_ties_even(),
        };
        let v = n * ulp;
        if v == 0.0 {
            return sign;
        }
        let e = exponent(v);
        sign | if e < self.emin {
            (v / 2f64.powi(self.emin - m as i32)) as u64
        } else {
            ((e - self.emin + 1) as u64) << m | ((v / 2f64.powi(e - m as i32)) as u64 - (1 << m))
        }
    }
}

/// A power-of-two scale (`.ue8m0`) from an f32 or bf16 value, as NVIDIA's host conversions in
/// `cuda_fp8.hpp` define it: the exponent of the value taken to bf16 (truncated for `.rz`, its
/// magnitude rounded up for `.rp`), raised by one for `.rp` when bits below remain; the sign is
/// ignored, NaN gives 0xff, and `.satfinite` keeps other overflow at 0xfe.
fn to_ue8m0(s: u32, a: u64, rnd: u32, satfinite: bool) -> u64 {
    let h = if s == F32 {
        let (u, abs) = (a as u32, a as u32 & 0x7fff_ffff);
        if abs > 0x7f80_0000 {
            0x7fff
        } else if rnd == RP && abs < 0x7f80_0000 && u & 0xffff != 0 {
            (abs >> 16) + 1
        } else {
            (if rnd == RP { abs } else { u }) >> 16
        }
    } else {
        a as u32 & 0xffff
    };
    let abs = h & 0x7fff;
    let mut e = h >> 7 & 0xff;
    if rnd == RP && h & 0x7f != 0 && abs > 0x40 && abs < 0x7f80 {
        e += 1;
    }
    if satfinite && abs <= 0x7f80 && e == 0xff {
        e = 0xfe;
    }
    e as u64
}

/// A scale (`.ue8m0`) as bf16: 2^(e-127), 2^-127 being a bf16 subnormal, 0xff the canonical NaN.
fn from_ue8m0(e: u64) -> u64 {
    match e & 0xff {
        0xff => 0x7fff,
        0 => 0x40,
        e => e << 7,
    }
}

/// `cvt` of one value from type `s` to type `d` (floats of any format and integers).
fn convert(d: u32, s: u32, a: u64, rnd: u32, flags: u32) -> u64 {
    let round = round_of(rnd);
    if d == UE8M0X2 {
        return to_ue8m0(s, a, rnd, flags & SATFINITE != 0);
    }
    if s == UE8M0X2 {
        return from_ue8m0(a);
    }
    if is_int(s) && is_int(d) {
        // Integer to integer with `.sat`: clamp to the destination's range.
        let v: i128 = if int_signed(s) {
            sext(a, int_bits(s)) as i128
        } else {
            (a & mask(int_bits(s))) as i128
        };
        let (lo, hi) = int_range(d);
        return (v.clamp(lo, hi) as u64) & mask(int_bits(d));
    }
    if is_int(s) {
        let v: i128 = if int_signed(s) {
            sext(a, int_bits(s)) as i128
        } else {
            (a & mask(int_bits(s))) as i128
        };
        return by_format!(d, F => finish(F::from_i128_r(v, round).value, flags), else 0);
    }
    // NaNs as an H100 converts them (see `ptx_llvm::builtin`); the rest become the canonical NaN below.
    let nan = by_format!(s, F => F::load(a).is_nan(), else false);
    if nan && is_int(d) {
        return nan_to_int(lanes(s).0, int_bits(d));
    }
    if nan && flags & SAT == 0 {
        match d {
            // bf16 is f32's upper half: its bits widen as they are.
            F32 if s == BF16 => return (a & 0xffff) << 16,
            F32 | F16 | BF16 if s == F64 => {
                let (w, m) = (lanes(d).0, by_format!(d, F => F::PRECISION as u32 - 1, else 0));
                return narrow_f64_nan(a, w, m);
            }
            F64 if matches!(s, F16 | BF16) => {
                let m = by_format!(s, F => F::PRECISION as u32 - 1, else 0);
                return widen_nan_to_f64(a, 16, m);
            }
            TF32 if s == F32 => return tf32_nan(a as u32, rnd, flags) as u64,
            _ => {}
        }
    }
    // From a float: decode to f64 exactly (every format here fits), then round into the destination.
    let x: f64 = match narrow_format(s) {
        Some(f) => f.decode(a),
        None => by_format!(s, F => {
            let v = flush(F::load(a), flags);
            if v.is_nan() { f64::NAN } else { to_f64(v) }
        }, else 0.0),
    };
    if let Some(f) = narrow_format(d) {
        // `.relu` takes negative values (not NaN) to +0.
        let x = if flags & RELU != 0 && x.is_sign_negative() && !x.is_nan() {
            0.0
        } else {
            x
        };
        return f.encode(x, round);
    }
    if is_int(d) {
        let r = Double::from_bits(x.to_bits() as u128).round_to_integral(round).value;
        let r = f64::from_bits(r.to_bits() as u64);
        let (lo, hi) = int_range(d);
        return (r.clamp(lo as f64, hi as f64) as i128 as u64) & mask(int_bits(d));
    }
    by_format!(d, F => {
        let mut flags = flags;
        if flags & SATFINITE != 0 && !x.is_nan() {
            let max = to_f64(F::largest());
            if x.abs() > max {
                return finish(from_f64::<F>(max.copysign(x), round), flags);
            }
            flags &= !SATFINITE;
        }
        let r: F = Double::from_bits(x.to_bits() as u128).convert_r(round, &mut false).value;
        // Same-format conversions with an integer rounding mode round to an integral value.
        let r = if matches!(rnd, RNI | RZI | RMI | RPI) { r.round_to_integral(round).value } else { r };
        finish(r, flags)
    }, else 0)
}

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    }
}

fn sext(v: u64, bits: u32) -> i64 {
    ((v << (64 - bits)) as i64) >> (64 - bits)
}

fn int_range(t: u32) -> (i128, i128) {
    let b = int_bits(t);
    if int_signed(t) {
        (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1)
    } else {
        (0, (1i128 << b) - 1)
    }
}

/// Called by JIT code (`ptx_llvm::builtin::FP`).
pub extern "C" fn ptxjit_fp(code: u32, a: u64, b: u64, c: u64) -> u64 {
    let (op, dty, sty, rnd, flags) = parts(code);
    if op == CVT {
        return cvt_packed(dty, sty, a, b, rnd, flags);
    }
    let (w, n) = lanes(dty);
    let mut out = 0u64;
    for k in 0..n {
        let lane = |v: u64| v >> (k * w) & mask(w);
        let r = by_format!(dty, F => arith::<F>(op, lane(a), lane(b), lane(c), rnd, flags), else 0);
        // Comparisons give one bit per lane; everything else a lane of the same width.
        out |= if matches!(op, CMP | TESTP) {
            r << k
        } else {
            r << (k * w)
        };
    }
    out
}

/// Called by JIT code (`ptx_llvm::builtin::GLOBALTIMER`).
pub extern "C" fn ptxjit_globaltimer() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// `cvt` with packed operands: a packed destination takes `a` into its upper lane and `b` into its
/// lower one; a packed source converts lane by lane into a packed destination.
fn cvt_packed(d: u32, s: u32, a: u64, b: u64, rnd: u32, flags: u32) -> u64 {
    let (dw, dn) = if is_int(d) { (int_bits(d), 1) } else { lanes(d) };
    let (sw, sn) = if is_int(s) { (int_bits(s), 1) } else { lanes(s) };
    let one = |v: u64| convert(d, s, v, rnd, flags) & mask(dw);
    match (dn, sn) {
        (2, 1) => one(a) << dw | one(b),
        (2, 2) => one(a >> sw & mask(sw)) << dw | one(a & mask(sw)),
        _ => one(a),
    }
}

/// Called by JIT code (`ptx_llvm::builtin::INT`).
pub extern "C" fn ptxjit_int(code: u32, a: u64, b: u64, c: u64) -> u64 {
    let (op, t, t2, mode, _) = parts(code);
    let bits = int_bits(t);
    let signed = int_signed(t);
    let (a32, b32, c32) = (a as u32, b as u32, c as u32);
    match op {
        MUL24_LO | MUL24_HI | MAD24_LO | MAD24_HI => {
            let ext = |v: u32| {
                if signed {
                    sext(v as u64, 24)
                } else {
                    (v & 0xff_ffff) as i64
                }
            };
            let p = ext(a32) * ext(b32);
            let r = if matches!(op, MUL24_HI | MAD24_HI) {
                (p >> 16) as u32
            } else {
                p as u32
            };
            if op == MAD24_HI && mode == 1 {
                // mad24.hi.sat.s32: the signed sum saturates.
                let v = r as i32 as i64 + c32 as i32 as i64;
                return v.clamp(i32::MIN as i64, i32::MAX as i64) as u32 as u64;
            }
            let r = if matches!(op, MAD24_LO | MAD24_HI) {
                r.wrapping_add(c32)
            } else {
                r
            };
            r as u64
        }
        SAD => {
            let (x, y) = if signed {
                (sext(a, bits) as i128, sext(b, bits) as i128)
            } else {
                ((a & mask(bits)) as i128, (b & mask(bits)) as i128)
            };
            (c.wrapping_add((x - y).unsigned_abs() as u64)) & mask(bits)
        }
        BFIND => {
            let v = a & mask(bits);
            // Signed values look for the top bit that differs from the sign.
            let v = if signed && sext(v, bits) < 0 {
                !v & mask(bits)
            } else {
                v
            };
            if v == 0 {
                return u32::MAX as u64;
            }
            let pos = 63 - v.leading_zeros() as u64;
            if mode == 1 {
                bits as u64 - 1 - pos
            } else {
                pos
            }
        }
        FNS => {
            let (m, base, offset) = (a32, b32, c32 as i32);
            if offset == 0 {
                return if base < 32 && m >> base & 1 == 1 {
                    base as u64
                } else {
                    u32::MAX as u64
                };
            }
            if offset == i32::MIN {
                // An H100 gives 0 for every mask and base (tests/gpu/probes/fns_offsets.ptx); the manual's
                // pseudocode would search for the 2^31-th set bit and find none.
                return 0;
            }
            let (mut pos, mut count, inc) = (base as i64, offset.unsigned_abs() - 1, offset.signum() as i64);
            while (0..32).contains(&pos) {
                if m >> pos & 1 == 1 {
                    if count == 0 {
                        return pos as u64;
                    }
                    count -= 1;
                }
                pos += inc;
            }
            u32::MAX as u64
        }
        BMSK => {
            let (pos, width) = if mode == 1 {
                (a32.min(32), b32.min(32))
            } else {
                (a32 & 31, b32 & 31)
            };
            (mask(width) << pos) as u32 as u64
        }
        SZEXT => {
            let pos = if mode == 1 { b32.min(32) } else { b32 & 31 };
            if pos == 0 {
                return 0;
            }
            (if signed {
                sext(a32 as u64, pos) as u32
            } else {
                (a32 as u64 & mask(pos)) as u32
            }) as u64
        }
        DP4A | DP2A => {
            let sa = int_signed(t);
            let sb = int_signed(t2);
            let byte = |v: u32, k: u32| {
                let x = (v >> (8 * k)) as u8;
                if sb {
                    x as i8 as i64
                } else {
                    x as i64
                }
            };
            let acc = if op == DP4A {
                let ab = |v: u32, k: u32| {
                    let x = (v >> (8 * k)) as u8;
                    if sa {
                        x as i8 as i64
                    } else {
                        x as i64
                    }
                };
                (0..4).map(|k| ab(a32, k) * byte(b32, k)).sum::<i64>()
            } else {
                let half = |k: u32| {
                    let x = (a32 >> (16 * k)) as u16;
                    if sa {
                        x as i16 as i64
                    } else {
                        x as i64
                    }
                };
                let first = if mode == 1 { 2 } else { 0 };
                half(0) * byte(b32, first) + half(1) * byte(b32, first + 1)
            };
            (c32 as i64).wrapping_add(acc) as u32 as u64
        }
        PRMT => prmt(a32, b32, c32, mode) as u64,
        MAD_HI_SAT => {
            let p = (a32 as i32 as i64) * (b32 as i32 as i64);
            let v = (p >> 32) + c32 as i32 as i64;
            v.clamp(i32::MIN as i64, i32::MAX as i64) as u32 as u64
        }
        PACKED => {
            // Lanes of 16 bits (.u16x2/.s16x2) or one 32-bit lane (.s32 with .relu).
            let (w, n) = if matches!(t, U16X2 | S16X2) { (16, 2) } else { (bits, 1) };
            let signed = t == S16X2 || (t != U16X2 && signed);
            let relu = t2 == 1;
            (0..n).fold(0u64, |acc, k| {
                let lane = |v: u64| {
                    let x = v >> (k * w) & mask(w);
                    if signed {
                        sext(x, w)
                    } else {
                        x as i64
                    }
                };
                let (x, y) = (lane(a), lane(b));
                let r = match mode {
                    PACKED_ADD => x.wrapping_add(y),
                    PACKED_SUB => x.wrapping_sub(y),
                    PACKED_MIN => x.min(y),
                    _ => x.max(y),
                };
                let r = if relu { r.max(0) } else { r };
                acc | ((r as u64) & mask(w)) << (k * w)
            })
        }
        CVT_PACK => {
            let (lo, hi) = int_range(t);
            let nb = int_bits(t);
            let sat = |v: u32| {
                let v = if int_signed(t2) { v as i32 as i128 } else { v as i128 };
                (v.clamp(lo, hi) as u64 & mask(nb)) as u32
            };
            // Narrow results make room for c's low bits above the pair (16-bit results take no c).
            let packed = sat(a32) << nb | sat(b32);
            (if nb < 16 { c32 << (2 * nb) | packed } else { packed }) as u64
        }
        _ => 0,
    }
}

/// `prmt`: picks four bytes of the eight in `b:a` as the selector `c` and mode say.
fn prmt(a: u32, b: u32, c: u32, mode: u32) -> u32 {
    let x = (b as u64) << 32 | a as u64;
    let byte = |k: u32| (x >> (8 * (k & 7))) as u8 as u32;
    if mode == 0 {
        return (0..4).fold(0, |d, k| {
            let sel = c >> (4 * k) & 15;
            let v = byte(sel & 7);
            let v = if sel & 8 != 0 {
                if v & 0x80 != 0 {
                    0xff
                } else {
                    0
                }
            } else {
                v
            };
            d | v << (8 * k)
        });
    }
    let s = c & 3;
    // Byte sources for d.b0..d.b3 of each mode, from the manual's table.
    let src: [u32; 4] = match mode {
        1 => [s, s + 1, s + 2, s + 3],
        2 => [s, s + 7, s + 6, s + 5].map(|v| v & 7),
        3 => [s; 4],
        4 => [s, s.max(1), s.max(2), 3],
        5 => [0, s.min(1), s.min(2), s],
        _ => {
            let base = (s & 1) * 2;
            [base, base + 1, base, base + 1]
        }
    };
    (0..4).fold(0, |d, k| d | byte(src[k as usize]) << (8 * k))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(op: u32, t: u32, rnd: u32, flags: u32, a: u64, b: u64, c: u64) -> u64 {
        ptxjit_fp(code(op, t, t, rnd, flags), a, b, c)
    }

    #[test]
    fn directed_rounding_of_f32() {
        // 1 + 2^-30 is not an f32: .rp goes up one ulp, .rz/.rm stay, .rn stays.
        let one = 1f32.to_bits() as u64;
        let tiny = (2f32.powi(-30)).to_bits() as u64;
        assert_eq!(fp(ADD, F32, RP, 0, one, tiny, 0), 0x3f80_0001);
        assert_eq!(fp(ADD, F32, RZ, 0, one, tiny, 0), 0x3f80_0000);
        assert_eq!(fp(SUB, F32, RM, 0, one, tiny, 0), 0x3f7f_ffff);
        assert_eq!(fp(SUB, F32, RZ, 0, one, tiny, 0), 0x3f7f_ffff);
        // 1/3: .rz and .rn differ in the last bit.
        let three = 3f32.to_bits() as u64;
        assert_eq!(fp(DIV, F32, RN, 0, one, three, 0), 0x3eaa_aaab);
        assert_eq!(fp(DIV, F32, RZ, 0, one, three, 0), 0x3eaa_aaaa);
    }

    #[test]
    fn half_precision_and_packed() {
        // 1.0 + 1.0 = 2.0 in both f16 lanes; bf16 1.5 * 2 = 3.
        assert_eq!(fp(ADD, F16X2, RN, 0, 0x3c00_3c00, 0x3c00_3c00, 0), 0x4000_4000);
        assert_eq!(fp(MUL, BF16, RN, 0, 0x3fc0, 0x4000, 0), 0x4040);
        // f16 overflow rounds to infinity (.rn) or the largest finite value (.rz).
        assert_eq!(fp(MUL, F16, RN, 0, 0x7bff, 0x4000, 0), 0x7c00);
        assert_eq!(fp(MUL, F16, RZ, 0, 0x7bff, 0x4000, 0), 0x7bff);
        // .relu on fma; .sat clamps to 1.0.
        assert_eq!(fp(FMA, F16, RN, RELU, 0xbc00, 0x3c00, 0x0000), 0);
        assert_eq!(fp(ADD, F32, RN, SAT, 0x4000_0000, 0, 0), 0x3f80_0000);
    }

    #[test]
    fn min_max_rules() {
        let (nan, one, neg_zero) = (0x7fc0_0000u64, 0x3f80_0000u64, 0x8000_0000u64);
        assert_eq!(fp(MIN, F32, RN, 0, nan, one, 0), one);
        assert_eq!(fp(MIN, F32, RN, NAN, nan, one, 0), 0x7fff_ffff);
        assert_eq!(fp(MIN, F32, RN, 0, 0, neg_zero, 0), neg_zero);
        assert_eq!(fp(MAX, F32, RN, 0, neg_zero, 0, 0), 0);
        // xorsign.abs: |−2| vs |1| → max is 2 with sign (−)·(+) = −.
        assert_eq!(fp(MAX, F16, RN, XORSIGN, 0xc000, 0x3c00, 0), 0xc000);
    }

    #[test]
    fn conversions() {
        let c = |d, s, r, f, a, b| ptxjit_fp(code(CVT, d, s, r, f), a, b, 0);
        // f32 → f16x2: a in the upper half.
        assert_eq!(
            c(F16X2, F32, RN, 0, 1f32.to_bits() as u64, 2f32.to_bits() as u64),
            0x3c00_4000
        );
        // f32 → e4m3x2 with satfinite: 1000 saturates at 448 (0x7e); 1.0 is 0x38.
        assert_eq!(
            c(
                E4M3X2,
                F32,
                RN,
                SATFINITE,
                1000f32.to_bits() as u64,
                1f32.to_bits() as u64
            ),
            0x7e38
        );
        // e5m2x2 → f16x2 is exact: e5m2 is the top byte of an f16.
        assert_eq!(c(F16X2, E5M2X2, RN, 0, 0x3c40, 0), 0x3c00_4000);
        // tf32 keeps 10 mantissa bits, rounding to nearest, ties away.
        assert_eq!(c(TF32, F32, RNA, 0, 0x3f80_1000, 0), 0x3f80_2000);
        // float → int saturates, NaN → 0; int → f16 rounds.
        assert_eq!(c(S32, F32, RZI, 0, 3e10f32.to_bits() as u64, 0), i32::MAX as u32 as u64);
        assert_eq!(c(U8, F32, RNI, 0, 0x7fc0_0000, 0), 0);
        assert_eq!(c(F16, S32, RZ, 0, 2049, 0), 0x6800);
        assert_eq!(c(F16, S32, RP, 0, 2049, 0), 0x6801);
        // saturating integer narrowing.
        assert_eq!(c(U8, S32, RN, 0, (-5i32) as u32 as u64, 0), 0);
        assert_eq!(c(S8, S32, RN, 0, 300, 0), 127);
        // bf16 NaNs widen to f32 with their bits; f16 NaNs become the canonical f32 NaN (an H100's
        // answers for loaded operands, tests/gpu/probes/cvt_nan.ptx).
        assert_eq!(c(F32, BF16, RN, 0, 0x7f81, 0), 0x7f81_0000);
        assert_eq!(c(F32, BF16, RN, 0, 0xffc1, 0), 0xffc1_0000);
        assert_eq!(c(F32, F16, RN, 0, 0x7d01, 0), 0x7fff_ffff);
    }

    #[test]
    fn square_roots_in_every_mode() {
        // sqrt(2) in f32: .rn rounds up to 0x3fb504f3, .rz/.rm give 0x3fb504f3 - 1.
        let two = 2f32.to_bits() as u64;
        assert_eq!(fp(SQRT, F32, RN, 0, two, 0, 0), 0x3fb5_04f3);
        assert_eq!(fp(SQRT, F32, RZ, 0, two, 0, 0), 0x3fb5_04f3);
        assert_eq!(fp(SQRT, F32, RP, 0, two, 0, 0), 0x3fb5_04f4);
        assert_eq!(fp(SQRT, F32, RN, 0, 0xbf80_0000, 0, 0), 0x7fff_ffff);
    }

    #[test]
    fn integer_builtins() {
        let i = |op, t, t2, m, a, b, c| ptxjit_int(code(op, t, t2, m, 0), a, b, c);
        // ZLUDA's vectors: mul24.hi.u32, bfind.shiftamt, dp4a, dp2a, cvt.pack.
        assert_eq!(i(MUL24_HI, U32, U32, 0, 0x0075_5555, 0x0075_5555, 0), 0x35c7_1c23);
        assert_eq!(i(BFIND, U32, U32, 1, 0x2cd1_a4c1, 0, 0), 2);
        assert_eq!(i(BFIND, U32, U32, 1, 0, 0, 0), 0xffff_ffff);
        assert_eq!(i(BFIND, S32, S32, 0, 0xffff_ffff, 0, 0), 0xffff_ffff);
        assert_eq!(i(DP4A, S32, S32, 0, 0x8e2d_a590, 0xedea_ee14, 0x248a_9f70), 0x248a_a1ae);
        assert_eq!(i(DP2A, S32, S32, 1, 0x8e2d_a590, 0xedea_ee14, 0x248a_9f70), 0x249a_d7b9);
        assert_eq!(i(CVT_PACK, U8, S32, 0, 0xffff_feff, 0x101, 0xf839_b0ed), 0xb0ed_00ff);
        assert_eq!(i(CVT_PACK, S8, S32, 0, 0xffff_feff, 0x101, 0xf839_b0ed), 0xb0ed_807f);
        // fns: the 2nd set bit at or after bit 4 of 0b1011_0000 is bit 5; backwards from 7, the 3rd is 4.
        assert_eq!(i(FNS, U32, U32, 0, 0b1011_0000, 4, 2), 5);
        assert_eq!(i(FNS, U32, U32, 0, 0b1011_0000, 7, -3i32 as u32 as u64), 4);
        assert_eq!(i(FNS, U32, U32, 0, 0b1011_0000, 6, 0), 0xffff_ffff);
        assert_eq!(i(FNS, U32, U32, 0, 0b1011_0000, 7, i32::MIN as u32 as u64), 0);
        // bmsk: 4 ones from bit 28 clamp at bit 31; szext sign-extends 0x80 from 8 bits.
        assert_eq!(i(BMSK, U32, U32, 1, 28, 8, 0), 0xf000_0000);
        assert_eq!(i(SZEXT, S32, S32, 1, 0x80, 8, 0), 0xffff_ff80);
        assert_eq!(i(SZEXT, U32, U32, 0, 0x1ff, 8, 0), 0xff);
        // prmt modes on a = 0x33221100, b = 0x77665544.
        let (a, b) = (0x3322_1100, 0x7766_5544);
        assert_eq!(i(PRMT, U32, U32, 1, a, b, 1), 0x4433_2211); // f4e
        assert_eq!(i(PRMT, U32, U32, 2, a, b, 0), 0x5566_7700); // b4e: 5 6 7 0
        assert_eq!(i(PRMT, U32, U32, 3, a, b, 2), 0x2222_2222); // rc8
        assert_eq!(i(PRMT, U32, U32, 4, a, b, 1), 0x3322_1111); // ecl
        assert_eq!(i(PRMT, U32, U32, 5, a, b, 2), 0x2222_1100); // ecr
        assert_eq!(i(PRMT, U32, U32, 6, a, b, 1), 0x3322_3322); // rc16
        assert_eq!(i(PRMT, U32, U32, 0, a, b, 0x3210), a);
    }
}
