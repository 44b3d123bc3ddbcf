//! Host-flavour forms that call `ptx_llvm::builtin` routines: floating point outside f32/f64 with
//! round-to-nearest, every `cvt` the inline path does not cover, and the rare integer operations.
//! The routines are pure, so LLVM may hoist and merge the calls.

use super::*;
use crate::builtin as bi;

/// The builtin type code of a type modifier as written.
pub(super) fn code_of(m: &str) -> Option<u32> {
    Some(match m {
        ".f16" => bi::F16,
        ".bf16" => bi::BF16,
        ".f32" => bi::F32,
        ".f64" => bi::F64,
        ".f16x2" => bi::F16X2,
        ".bf16x2" => bi::BF16X2,
        ".tf32" => bi::TF32,
        ".e4m3x2" => bi::E4M3X2,
        ".e5m2x2" => bi::E5M2X2,
        ".e2m1x2" => bi::E2M1X2,
        ".e2m3x2" => bi::E2M3X2,
        ".e3m2x2" => bi::E3M2X2,
        ".ue8m0x2" => bi::UE8M0X2,
        ".f32x2" => bi::F32X2,
        ".u8" => bi::U8,
        ".u16" => bi::U16,
        ".u32" | ".b32" => bi::U32,
        ".u64" | ".b64" => bi::U64,
        ".s8" => bi::S8,
        ".s16" => bi::S16,
        ".s32" => bi::S32,
        ".s64" => bi::S64,
        ".u16x2" => bi::U16X2,
        ".s16x2" => bi::S16X2,
        ".u4" => bi::U4,
        ".s4" => bi::S4,
        _ => return None,
    })
}

/// Type codes of the instruction's type modifiers, in the order written.
fn type_codes(d: &Decoded) -> Vec<u32> {
    d.mods()
        .filter(|(g, _)| matches!(g, G::Type | G::Size))
        .filter_map(|(_, m)| code_of(m))
        .collect()
}

fn round_code(d: &Decoded) -> u32 {
    match d.get(G::Round) {
        Some(".rn") => bi::RN,
        Some(".rz") => bi::RZ,
        Some(".rm") => bi::RM,
        Some(".rp") => bi::RP,
        Some(".rna") => bi::RNA,
        Some(".rni") => bi::RNI,
        Some(".rzi") => bi::RZI,
        Some(".rmi") => bi::RMI,
        Some(".rpi") => bi::RPI,
        _ => bi::RDEFAULT,
    }
}

fn flag_code(d: &Decoded) -> u32 {
    [
        (".ftz", bi::FTZ),
        (".sat", bi::SAT),
        (".relu", bi::RELU),
        (".NaN", bi::NAN),
        (".xorsign", bi::XORSIGN),
        (".satfinite", bi::SATFINITE),
    ]
    .iter()
    .filter(|(m, _)| d.has(m))
    .fold(0, |f, (_, b)| f | b)
}

/// Register width of a builtin type code.
fn width_of(code: u32) -> u32 {
    match code {
        bi::F16 | bi::BF16 | bi::E4M3X2 | bi::E5M2X2 | bi::E2M3X2 | bi::E3M2X2 | bi::UE8M0X2 | bi::U16 | bi::S16 => 16,
        bi::F64 | bi::U64 | bi::S64 | bi::F32X2 => 64,
        bi::U8 | bi::S8 | bi::E2M1X2 => 8,
        _ => 32,
    }
}

fn bits_of(code: u32) -> Type {
    match width_of(code) {
        8 => Type::B8,
        16 => Type::B16,
        64 => Type::B64,
        _ => Type::B32,
    }
}

impl<'ctx> Lowerer<'ctx> {
    /// `i64 sym(i32 code, i64 a, i64 b, i64 c)`, declared pure.
    pub(super) fn builtin_call(&self, sym: &str, code: u32, args: &[IntValue<'ctx>]) -> R<IntValue<'ctx>> {
        let i64t = self.i64();
        let f = self.module.get_function(sym).unwrap_or_else(|| {
            let ty = i64t.fn_type(&[self.i32().into(), i64t.into(), i64t.into(), i64t.into()], false);
            let f = self.module.add_function(sym, ty, None);
            for a in ["nounwind", "willreturn"] {
                f.add_attribute(
                    AttributeLoc::Function,
                    self.ctx.create_enum_attribute(Attribute::get_named_enum_kind_id(a), 0),
                );
            }
            // memory(none): the routine reads and writes nothing but its arguments.
            f.add_attribute(
                AttributeLoc::Function,
                self.ctx
                    .create_enum_attribute(Attribute::get_named_enum_kind_id("memory"), 0),
            );
            f
        });
        let mut call: Vec<BasicMetadataValueEnum> = vec![self.i32().const_int(code as u64, false).into()];
        for k in 0..3 {
            let v = match args.get(k) {
                Some(a) => self.b.build_int_z_extend_or_bit_cast(*a, i64t, "arg")?,
                None => i64t.const_zero(),
            };
            call.push(v.into());
        }
        Ok(self
            .b
            .build_call(f, &call, "builtin")?
            .try_as_basic_value()
            .basic()
            .expect("builtin returns i64")
            .into_int_value())
    }

    /// `i64 ptxjit_mem(i32 code, ptr env, i64 addr, i64 a, i64 b)`: effects on memory or the launch.
    pub(super) fn mem_call(
        &mut self,
        st: &Fn<'ctx, '_, '_>,
        code: bi::Mem,
        addr: IntValue<'ctx>,
        a: IntValue<'ctx>,
        b: IntValue<'ctx>,
    ) -> R<IntValue<'ctx>> {
        let (i32t, i64t, pt) = (self.i32(), self.i64(), self.ptr(0));
        let f = self.module.get_function(bi::MEM).unwrap_or_else(|| {
            let ty = i64t.fn_type(&[i32t.into(), pt.into(), i64t.into(), i64t.into(), i64t.into()], false);
            self.module.add_function(bi::MEM, ty, None)
        });
        let mut args: Vec<BasicMetadataValueEnum> =
            vec![i32t.const_int(code as u64, false).into(), st.env.expect("env").into()];
        for v in [addr, a, b] {
            args.push(self.b.build_int_z_extend_or_bit_cast(v, i64t, "arg")?.into());
        }
        Ok(self
            .b
            .build_call(f, &args, "mem")?
            .try_as_basic_value()
            .basic()
            .expect("mem returns i64")
            .into_int_value())
    }

    /// Reads operands as raw bits of `t`'s width.
    fn raw_operands<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        ops: &'m [Operand<'a>],
        t: Type,
        scope: &Scope<'m, 'a>,
    ) -> R<Vec<IntValue<'ctx>>> {
        ops.iter()
            .map(|o| Ok(self.read(st, o, t, scope)?.into_int_value()))
            .collect()
    }

    /// `x` clamped to [+0, 1] as `.sat` does: NaN, negative values and -0 give +0 (and, with `ftz`,
    /// positive subnormals too).
    fn saturate(&self, x: inkwell::values::FloatValue<'ctx>, ftz: bool) -> R<inkwell::values::FloatValue<'ctx>> {
        let ty = x.get_type();
        let (zero, one) = (ty.const_zero(), ty.const_float(1.0));
        let low = if ftz {
            // The smallest normal value of the type.
            let min = if ty == self.ctx.f32_type() {
                f32::MIN_POSITIVE as f64
            } else {
                f64::MIN_POSITIVE
            };
            ty.const_float(min)
        } else {
            zero
        };
        let predicate = if ftz { FloatPredicate::OGE } else { FloatPredicate::OGT };
        let keep = self.b.build_float_compare(predicate, x, low, "sat_keep")?;
        let big = self.b.build_float_compare(FloatPredicate::OGT, x, one, "sat_big")?;
        let capped = self.b.build_select(big, one, x, "sat_cap")?.into_float_value();
        Ok(self.b.build_select(keep, capped, zero, "sat")?.into_float_value())
    }

    /// An f32 `add`/`sub`/`mul`/`fma` rounded toward zero, -inf or +inf (`rnd`), on the raw bits in
    /// `args`; the result's bits, as `ptxjit_fp` gives them. nvcc's `expf` and `logf` round one `fma`
    /// this way per element, so it must be inline (and vectorisable), not a call.
    ///
    /// In f64, `a*b` is exact, and the sum with `c` (or `a ± b`) is `r` plus an error `e` that
    /// Knuth's two-sum finds exactly, so the exact result is `r + e`. Rounding `r` to the nearest
    /// f32 gives one of the two f32 values around the exact result (no f32 value lies strictly
    /// between `r` and it, or it would be a closer f64), or the exact result itself; one ulp up or
    /// down when that value lies on the wrong side gives the directed rounding (to ±inf and back
    /// from it on overflow, as directed rounding does). A NaN becomes the canonical NaN.
    fn directed_f32(&self, op: u32, rnd: u32, args: &[IntValue<'ctx>]) -> R<IntValue<'ctx>> {
        let (f32t, f64t, i32t, i64t) = (self.ctx.f32_type(), self.ctx.f64_type(), self.i32(), self.i64());
        let wide: Vec<_> = args
            .iter()
            .map(|a| -> R<_> {
                let bits = self.b.build_int_truncate_or_bit_cast(*a, i32t, "bits")?;
                let f = self.b.build_bit_cast(bits, f32t, "f")?.into_float_value();
                Ok(self.b.build_float_ext(f, f64t, "wide")?)
            })
            .collect::<R<_>>()?;
        let zero = f64t.const_zero();
        // The exact result is p + q.
        let (p, q) = match op {
            bi::ADD => (wide[0], wide[1]),
            bi::SUB => (wide[0], self.b.build_float_neg(wide[1], "nb")?),
            bi::MUL => (self.b.build_float_mul(wide[0], wide[1], "p")?, zero),
            _ => (self.b.build_float_mul(wide[0], wide[1], "p")?, wide[2]),
        };
        let (r, e) = if op == bi::MUL {
            (p, zero)
        } else {
            let r = self.b.build_float_add(p, q, "r")?;
            // Two-sum: the rounding error of r, exactly (NaN when an operand is infinite, which
            // makes neither comparison below hold: an infinite result is exact).
            let qq = self.b.build_float_sub(r, p, "qq")?;
            let pp = self.b.build_float_sub(r, qq, "pp")?;
            let (ep, eq) = (
                self.b.build_float_sub(p, pp, "ep")?,
                self.b.build_float_sub(q, qq, "eq")?,
            );
            (r, self.b.build_float_add(ep, eq, "e")?)
        };
        let near = self.b.build_float_trunc(r, f32t, "near")?;
        let back = self.b.build_float_ext(near, f64t, "back")?;
        let bits = self.b.build_bit_cast(near, i32t, "nbits")?.into_int_value();
        // One ulp up or down from `near`, by its sign (the cases that need it never meet a zero of
        // the wrong sign: rounding to nearest keeps the sign of `r`).
        let negative = self
            .b
            .build_int_compare(IntPredicate::SLT, bits, i32t.const_zero(), "neg")?;
        let one = i32t.const_int(1, false);
        let (inc, dec) = (
            self.b.build_int_add(bits, one, "inc")?,
            self.b.build_int_sub(bits, one, "dec")?,
        );
        let up = self.b.build_select(negative, dec, inc, "up")?.into_int_value();
        let down = self.b.build_select(negative, inc, dec, "down")?.into_int_value();
        // Whether `near` lies above or below the exact result.
        let fcmp = |pred, a, b, name| self.b.build_float_compare(pred, a, b, name);
        let same = fcmp(FloatPredicate::OEQ, back, r, "same")?;
        let (e_neg, e_pos) = (
            fcmp(FloatPredicate::OLT, e, zero, "e_neg")?,
            fcmp(FloatPredicate::OGT, e, zero, "e_pos")?,
        );
        let above = self.b.build_or(
            fcmp(FloatPredicate::OGT, back, r, "gt")?,
            self.b.build_and(same, e_neg, "same_neg")?,
            "above",
        )?;
        let below = self.b.build_or(
            fcmp(FloatPredicate::OLT, back, r, "lt")?,
            self.b.build_and(same, e_pos, "same_pos")?,
            "below",
        )?;
        let fixed = match rnd {
            bi::RM => self.b.build_select(above, down, bits, "rm")?,
            bi::RP => self.b.build_select(below, up, bits, "rp")?,
            _ => {
                // Toward zero: down when a positive result rounded up, up when a negative one
                // rounded down.
                let pos = fcmp(FloatPredicate::OGT, r, zero, "pos")?;
                let neg = fcmp(FloatPredicate::OLT, r, zero, "negr")?;
                let too_far_up = self.b.build_and(above, pos, "far_up")?;
                let too_far_down = self.b.build_and(below, neg, "far_down")?;
                let v = self.b.build_select(too_far_up, down, bits, "rz")?;
                self.b.build_select(too_far_down, up, v.into_int_value(), "rz")?
            }
        }
        .into_int_value();
        // An exact zero sum is -0 toward -inf unless both addends are +0 (IEEE 754 6.3); f64's
        // rounding to nearest made it +0.
        let fixed = if rnd == bi::RM && op != bi::MUL {
            let is_zero = fcmp(FloatPredicate::OEQ, r, zero, "zero")?;
            let plus_zero = |v| -> R<_> {
                let bits = self.b.build_bit_cast(v, i64t, "zbits")?.into_int_value();
                Ok(self
                    .b
                    .build_int_compare(IntPredicate::EQ, bits, i64t.const_zero(), "pz")?)
            };
            let both = self.b.build_and(plus_zero(p)?, plus_zero(q)?, "both_pz")?;
            let minus = self
                .b
                .build_and(is_zero, self.b.build_not(both, "not_both")?, "minus_zero")?;
            let m0 = i32t.const_int(0x8000_0000, false);
            self.b.build_select(minus, m0, fixed, "rm_zero")?.into_int_value()
        } else {
            fixed
        };
        let nan = fcmp(FloatPredicate::UNO, r, r, "nan")?;
        let canonical = i32t.const_int(0x7fff_ffff, false);
        let v = self.b.build_select(nan, canonical, fixed, "directed")?.into_int_value();
        Ok(self.b.build_int_z_extend(v, i64t, "directed")?)
    }

    /// Lowers `i` through a builtin when its form needs one; `Ok(false)` leaves it to the inline paths.
    pub(super) fn try_builtin<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<bool> {
        if self.flavour != Flavour::Host {
            return Ok(false);
        }
        let name = d.spec.name;
        let ops = &i.operands;
        let codes = type_codes(d);
        let Some(&t) = codes.first() else { return Ok(false) };
        let rnd = round_code(d);
        let flags = flag_code(d);
        let small = matches!(t, bi::F16 | bi::BF16 | bi::F16X2 | bi::BF16X2);
        let directed = matches!(rnd, bi::RZ | bi::RM | bi::RP);
        let fp_op = match name {
            "add" => Some(bi::ADD),
            "sub" => Some(bi::SUB),
            "mul" => Some(bi::MUL),
            "fma" | "mad" => Some(bi::FMA),
            "div" => Some(bi::DIV),
            "min" => Some(bi::MIN),
            "max" => Some(bi::MAX),
            "sqrt" => Some(bi::SQRT),
            "rcp" => Some(bi::RCP),
            "rsqrt" => Some(bi::RSQRT),
            "ex2" => Some(bi::EX2),
            "lg2" => Some(bi::LG2),
            "sin" => Some(bi::SIN),
            "cos" => Some(bi::COS),
            "tanh" => Some(bi::TANH),
            "abs" => Some(bi::ABS),
            "neg" => Some(bi::NEG),
            "testp" => Some(bi::TESTP),
            _ => None,
        };
        let is_float = matches!(t, bi::F16..=bi::BF16X2 | bi::F32X2);
        if let (Some(op), true) = (fp_op, is_float) {
            let minmax_flags = flags & (bi::NAN | bi::XORSIGN | bi::RELU) != 0;
            if !(small || directed || flags & bi::SAT != 0 || minmax_flags || op == bi::TANH || op == bi::TESTP) {
                return Ok(false);
            }
            let raw_t = bits_of(t);
            let (rnd, srcs) = if op == bi::TESTP {
                let prop = [
                    ".finite",
                    ".infinite",
                    ".number",
                    ".notanumber",
                    ".normal",
                    ".subnormal",
                ]
                .iter()
                .position(|m| d.has(m))
                .unwrap_or(0) as u32;
                (prop, &ops[1..])
            } else {
                (rnd, &ops[1..])
            };
            let args = self.raw_operands(st, srcs, raw_t, scope)?;
            let r = if t == bi::F32 && flags == 0 && directed && matches!(op, bi::ADD | bi::SUB | bi::MUL | bi::FMA) {
                self.directed_f32(op, rnd, &args)?
            } else {
                self.builtin_call(bi::FP, bi::code(op, t, t, rnd, flags), &args)?
            };
            let v = if op == bi::TESTP {
                self.b.build_int_truncate(r, self.ctx.bool_type(), "testp")?
            } else {
                self.b.build_int_truncate(r, self.int(width_of(t)), "fp")?
            };
            self.write(st, &ops[0], v.into(), false, scope)?;
            return Ok(true);
        }
        match name {
            _ if crate::builtin::VIDEO_OPS.contains(&name) => {
                self.video(st, i, d, scope)?;
                Ok(true)
            }
            "setp" | "set" => {
                // The compared type is the last one written (`set.dtype.stype`).
                let s = *codes.last().expect("typed");
                if !matches!(s, bi::F16 | bi::BF16 | bi::F16X2 | bi::BF16X2) {
                    return Ok(false);
                }
                self.half_compare(st, i, d, s, scope)?;
                Ok(true)
            }
            "cvt" if d.has(".pack") => {
                let args = self.raw_operands(st, &ops[1..], Type::B32, scope)?;
                let (dt, s) = (t, codes.get(1).copied().unwrap_or(bi::S32));
                let r = self.builtin_call(bi::INT, bi::code(bi::CVT_PACK, dt, s, 0, 0), &args)?;
                let r = self.b.build_int_truncate(r, self.i32(), "pack")?;
                self.write(st, &ops[0], r.into(), false, scope)?;
                Ok(true)
            }
            "cvt" => {
                let s = codes.get(1).copied().unwrap_or(t);
                let sm = |c: u32| matches!(c, bi::F16 | bi::BF16 | bi::F16X2 | bi::BF16X2 | bi::TF32..=bi::UE8M0X2);
                let is_f = |c: u32| c <= bi::UE8M0X2;
                let inline_ok = !sm(t) && !sm(s) && ops.len() == 2 && flags & (bi::RELU | bi::SATFINITE) == 0 && {
                    let int_int_sat = !is_f(t) && !is_f(s) && flags & bi::SAT != 0;
                    let float_sat = is_f(t) && flags & bi::SAT != 0;
                    let int_to_float_rnd = is_f(t) && !is_f(s) && !matches!(rnd, bi::RN | bi::RDEFAULT);
                    let narrow_rnd =
                        is_f(t) && is_f(s) && width_of(t) < width_of(s) && !matches!(rnd, bi::RN | bi::RDEFAULT);
                    !(int_int_sat || float_sat || int_to_float_rnd || narrow_rnd)
                };
                if inline_ok {
                    return Ok(false);
                }
                // `cvt.sat` of an f32 or f64 to itself, without rounding to an integer, clamps (nvcc's
                // `expf` does it per element).
                let same_value = matches!(rnd, bi::RDEFAULT | bi::RN | bi::RZ | bi::RM | bi::RP);
                if t == s
                    && matches!(t, bi::F32 | bi::F64)
                    && same_value
                    && flags & !(bi::SAT | bi::FTZ) == 0
                    && ops.len() == 2
                {
                    let ty = if t == bi::F32 { Type::F32 } else { Type::F64 };
                    let x = self.read(st, &ops[1], ty, scope)?.into_float_value();
                    let v = self.saturate(x, flags & bi::FTZ != 0)?;
                    self.write(st, &ops[0], v.into(), false, scope)?;
                    return Ok(true);
                }
                // `.ftz` means nothing for the 16-bit formats; the builtin applies it where it can.
                let args = self.raw_operands(st, &ops[1..], bits_of(s), scope)?;
                let r = self.builtin_call(bi::FP, bi::code(bi::CVT, t, s, rnd, flags), &args)?;
                let r = self.b.build_int_truncate(r, self.int(width_of(t)), "cvt")?;
                let signed = matches!(t, bi::S8..=bi::S64);
                self.write(st, &ops[0], r.into(), signed, scope)?;
                Ok(true)
            }
            _ => self.int_builtin(st, i, d, t, &codes, scope),
        }
    }

    /// `setp`/`set` on 16-bit float types: one comparison per lane, combined with `c` as the
    /// boolean operation says.
    fn half_compare<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        s: u32,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let ops = &i.operands;
        let cmp = d.get(G::Cmp).unwrap_or(".eq");
        let k = bi::CMPS.iter().position(|c| *c == cmp).unwrap_or(0) as u32;
        let args = self.raw_operands(st, &ops[1..3], bits_of(s), scope)?;
        let bits = self.builtin_call(bi::FP, bi::code(bi::CMP, s, s, k, flag_code(d) & bi::FTZ), &args)?;
        let lanes = if matches!(s, bi::F16X2 | bi::BF16X2) { 2 } else { 1 };
        let boolt = self.ctx.bool_type();
        let c = match (d.get(G::BoolOp), ops.get(3)) {
            (Some(op), Some(c)) => Some((op, self.read(st, c, Type::Pred, scope)?.into_int_value())),
            _ => None,
        };
        let mut lane_bits = vec![];
        for l in 0..lanes {
            let bit = self
                .b
                .build_right_shift(bits, self.i64().const_int(l, false), false, "lane")?;
            let r = self.b.build_int_truncate(bit, boolt, "cmp")?;
            let r = match c {
                Some((".and", c)) => self.b.build_and(r, c, "and")?,
                Some((".or", c)) => self.b.build_or(r, c, "or")?,
                Some((_, c)) => self.b.build_xor(r, c, "xor")?,
                None => r,
            };
            lane_bits.push(r);
        }
        if d.spec.name == "setp" {
            return match (&ops[0], lanes) {
                (Operand::Pair(p, q, _), 2) => {
                    self.write(st, p, lane_bits[0].into(), false, scope)?;
                    self.write(st, q, lane_bits[1].into(), false, scope)
                }
                (Operand::Pair(p, q, _), _) => {
                    let n = self.b.build_not(lane_bits[0], "n")?;
                    self.write(st, p, lane_bits[0].into(), false, scope)?;
                    self.write(st, q, n.into(), false, scope)
                }
                (dst, _) => self.write(st, dst, lane_bits[0].into(), false, scope),
            };
        }
        // set: per lane, all ones for integer destinations, 1.0 for float ones.
        let dt = *type_codes(d).first().expect("set has a destination type");
        let (lane_w, yes) = match dt {
            bi::F16 | bi::F16X2 => (16, 0x3c00u64),
            bi::BF16 | bi::BF16X2 => (16, 0x3f80),
            bi::F32 => (32, 0x3f80_0000),
            _ if lanes == 2 => (16, 0xffff),
            _ => (32, 0xffff_ffff),
        };
        let wt = self.int(width_of(dt).max(lane_w * lanes as u32));
        let mut acc = wt.const_zero();
        for (l, b) in lane_bits.iter().enumerate() {
            let v = self
                .b
                .build_select(*b, wt.const_int(yes, false), wt.const_zero(), "set")?
                .into_int_value();
            let v = self
                .b
                .build_left_shift(v, wt.const_int(l as u64 * lane_w as u64, false), "set")?;
            acc = self.b.build_or(acc, v, "set")?;
        }
        self.write(st, &ops[0], acc.into(), false, scope)
    }

    /// Integer operations done by `ptxjit_int`.
    fn int_builtin<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        t: u32,
        codes: &[u32],
        scope: &Scope<'m, 'a>,
    ) -> R<bool> {
        let hi = d.get(G::Mode) == Some(".hi");
        let clamp = d.has(".clamp") as u32;
        let (op, mode, t2) = match d.spec.name {
            "mul24" => (if hi { bi::MUL24_HI } else { bi::MUL24_LO }, 0, t),
            "mad24" => (if hi { bi::MAD24_HI } else { bi::MAD24_LO }, d.has(".sat") as u32, t),
            "mad" if hi && d.has(".sat") => (bi::MAD_HI_SAT, 0, t),
            "sad" => (bi::SAD, 0, t),
            "bfind" => (bi::BFIND, d.has(".shiftamt") as u32, t),
            "fns" => (bi::FNS, 0, t),
            "bmsk" => (bi::BMSK, clamp, t),
            "szext" => (bi::SZEXT, clamp, t),
            "dp4a" => (bi::DP4A, 0, codes.get(1).copied().unwrap_or(t)),
            "dp2a" => (bi::DP2A, hi as u32, codes.get(1).copied().unwrap_or(t)),
            "add" | "sub" | "min" | "max" if matches!(t, bi::U16X2 | bi::S16X2) || d.has(".relu") => {
                let k = ["add", "sub", "min", "max"]
                    .iter()
                    .position(|n| *n == d.spec.name)
                    .unwrap_or(0) as u32;
                (bi::PACKED, k, d.has(".relu") as u32)
            }
            "prmt" => match d.get(G::Dir) {
                None => return Ok(false),
                Some(m) => (
                    bi::PRMT,
                    bi::PRMT_MODES.iter().position(|x| *x == m).unwrap_or(0) as u32,
                    t,
                ),
            },
            _ => return Ok(false),
        };
        let ops = &i.operands;
        let w = width_of(t);
        // dp4a/dp2a read their 32-bit operands whole; the accumulator and result are 32-bit too.
        let args = self.raw_operands(st, &ops[1..], bits_of(t), scope)?;
        let r = self.builtin_call(bi::INT, bi::code(op, t, t2, mode, 0), &args)?;
        let r = self.b.build_int_truncate(r, self.int(w), "int")?;
        self.write(st, &ops[0], r.into(), false, scope)?;
        Ok(true)
    }
}
