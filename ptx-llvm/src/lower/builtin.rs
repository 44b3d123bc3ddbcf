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
        code: u32,
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
            let r = self.builtin_call(bi::FP, bi::code(op, t, t, rnd, flags), &args)?;
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
