//! `cvt`: conversions between integer and floating-point types, with PTX rounding and saturation.

use super::*;

impl<'ctx> Lowerer<'ctx> {
    pub(super) fn cvt<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let mut ts = d.types();
        let (dt, s) = (ts.next().expect("cvt dtype"), ts.next().expect("cvt atype"));
        let small = |t: Type| matches!(t, Type::F16 | Type::Bf16 | Type::F16x2 | Type::Bf16x2 | Type::Tf32);
        if small(dt) || small(s) || i.operands.len() != 2 {
            return self.cvt_half(st, i, d, dt, s, scope);
        }
        let a = self.read(st, &i.operands[1], s, scope)?;
        let a = self.ftz(d, a)?;
        let rnd = d.get(G::Round);
        if d.has(".sat") && dt.is_float() {
            return Err(unsupported(i.span, "`cvt.sat` to a float type is not supported yet"));
        }
        let v: BasicValueEnum = match (dt.is_float(), s.is_float()) {
            (false, false) => {
                let x = a.into_int_value();
                if d.has(".sat") && (dt.bits() < s.bits() || dt.is_signed() != s.is_signed()) {
                    return Err(unsupported(i.span, "saturating integer `cvt` is not supported yet"));
                }
                self.b
                    .build_int_cast_sign_flag(x, self.int(dt.bits()), s.is_signed(), "cvt")?
                    .into()
            }
            (true, false) => {
                if !matches!(rnd, None | Some(".rn")) {
                    return Err(unsupported(
                        i.span,
                        "int-to-float rounding other than `.rn` is not supported yet",
                    ));
                }
                let ft = self.value_ty(dt).into_float_type();
                if s.is_signed() {
                    self.b.build_signed_int_to_float(a.into_int_value(), ft, "cvt")?.into()
                } else {
                    self.b
                        .build_unsigned_int_to_float(a.into_int_value(), ft, "cvt")?
                        .into()
                }
            }
            (false, true) => {
                // PTX float-to-int conversions saturate and map NaN to 0, exactly like fptosi.sat.
                let r = match rnd {
                    Some(".rni") => Some("llvm.roundeven"),
                    Some(".rmi") => Some("llvm.floor"),
                    Some(".rpi") => Some("llvm.ceil"),
                    Some(".rzi") | None => None,
                    Some(other) => {
                        return Err(unsupported(
                            i.span,
                            format!("`{other}` is not valid for float-to-int cvt"),
                        ))
                    }
                };
                let x = match r {
                    Some(f) => self.call_intrinsic(f, &[a.get_type()], &[a])?,
                    None => a,
                };
                let on_nan = crate::builtin::nan_to_int(s.bits(), dt.bits());
                if on_nan != 0 && self.flavour == Flavour::Nvvm {
                    // LLVM's NVPTX lowering maps NaN to 0; the GPU's own cvt does not.
                    return Err(unsupported(i.span, "a float-to-int `cvt` with a non-zero NaN result"));
                }
                let f = if dt.is_signed() {
                    "llvm.fptosi.sat"
                } else {
                    "llvm.fptoui.sat"
                };
                let v = self.call_intrinsic(f, &[self.int(dt.bits()).into(), x.get_type()], &[x])?;
                if on_nan == 0 {
                    v
                } else {
                    let nan = self.b.build_float_compare(
                        FloatPredicate::UNO,
                        a.into_float_value(),
                        a.into_float_value(),
                        "isnan",
                    )?;
                    let k = self.int(dt.bits()).const_int(on_nan, false);
                    self.b.build_select(nan, k, v.into_int_value(), "cvt")?
                }
            }
            (true, true) => {
                let ft = self.value_ty(dt).into_float_type();
                let x = a.into_float_value();
                let x: BasicValueEnum = match dt.bits().cmp(&s.bits()) {
                    std::cmp::Ordering::Greater => self.b.build_float_ext(x, ft, "ext")?.into(),
                    std::cmp::Ordering::Less => {
                        if !matches!(rnd, None | Some(".rn")) {
                            return Err(unsupported(
                                i.span,
                                "narrowing float rounding other than `.rn` is not supported yet",
                            ));
                        }
                        self.b.build_float_trunc(x, ft, "trunc")?.into()
                    }
                    std::cmp::Ordering::Equal => x.into(),
                };
                match rnd {
                    Some(".rni") => self.call_intrinsic("llvm.roundeven", &[ft.into()], &[x])?,
                    Some(".rmi") => self.call_intrinsic("llvm.floor", &[ft.into()], &[x])?,
                    Some(".rpi") => self.call_intrinsic("llvm.ceil", &[ft.into()], &[x])?,
                    Some(".rzi") => self.call_intrinsic("llvm.trunc", &[ft.into()], &[x])?,
                    _ => x,
                }
            }
        };
        let v = self.ftz(d, v)?;
        let v = if (dt, s, self.flavour) == (Type::F32, Type::F64, Flavour::Host) {
            self.narrowed_nan(a.into_float_value(), v.into_float_value())?
        } else {
            self.canon(v)?
        };
        self.write(st, &i.operands[0], v, dt.is_signed(), scope)
    }

    /// f64 `x` narrowed to f32 `v`, with a NaN's bits as `builtin::narrow_f64_nan` gives them: sign,
    /// quiet bit and the payload's top 23 bits (cvt_all.ptx checks both against the GPU's values).
    fn narrowed_nan(
        &self,
        x: inkwell::values::FloatValue<'ctx>,
        v: inkwell::values::FloatValue<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let (i32t, i64t) = (self.i32(), self.ctx.i64_type());
        let b = self.b.build_bit_cast(x, i64t, "bits")?.into_int_value();
        let top = self.b.build_right_shift(b, i64t.const_int(29, false), false, "top")?;
        let top = self.b.build_int_truncate(top, i32t, "top")?;
        let payload = self.b.build_and(top, i32t.const_int(0x007f_ffff, false), "payload")?;
        let hi = self.b.build_right_shift(b, i64t.const_int(32, false), false, "hi")?;
        let hi = self.b.build_int_truncate(hi, i32t, "hi")?;
        let sign = self.b.build_and(hi, i32t.const_int(0x8000_0000, false), "sign")?;
        let nan_bits = self.b.build_or(sign, payload, "nan")?;
        let nan_bits = self.b.build_or(nan_bits, i32t.const_int(0x7fc0_0000, false), "nan")?;
        let is_nan = self.b.build_float_compare(FloatPredicate::UNO, x, x, "isnan")?;
        let bits = self.b.build_bit_cast(v, i32t, "bits")?.into_int_value();
        Ok(self.b.build_select(is_nan, nan_bits, bits, "narrow")?)
    }

    /// Conversions between f32 and the 16-bit float types. f16 uses LLVM's `half` (round to nearest
    /// even); bf16 is done on the bits, so neither flavour depends on a runtime routine or on sm_80.
    pub(super) fn cvt_half<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        dt: Type,
        s: Type,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let (i16t, i32t, f32t) = (self.ctx.i16_type(), self.i32(), self.ctx.f32_type());
        let narrowing = s == Type::F32;
        if i.operands.len() != 2
            || !(narrowing && matches!(dt, Type::F16 | Type::Bf16)
                || dt == Type::F32 && matches!(s, Type::F16 | Type::Bf16))
            || (narrowing && d.get(G::Round) != Some(".rn"))
            || d.has(".sat")
            || d.has(".relu")
        {
            return Err(unsupported(
                i.span,
                format!(
                    "`cvt{}{}` with these modifiers is not supported yet",
                    dt.name(),
                    s.name()
                ),
            ));
        }
        let a = self.read(st, &i.operands[1], s, scope)?;
        let a = self.ftz(d, a)?;
        let v: BasicValueEnum = match (dt, s) {
            (Type::F32, Type::F16) => {
                // A NaN widens to the canonical 0x7fffffff, as an H100 gives, also where LLVM folds a
                // constant NaN (it would keep the payload).
                let h = self.b.build_bit_cast(a, self.ctx.f16_type(), "h")?.into_float_value();
                self.canonical_nan(self.b.build_float_ext(h, f32t, "f")?)?
            }
            (Type::F16, _) => {
                let h = self
                    .b
                    .build_float_trunc(a.into_float_value(), self.ctx.f16_type(), "h")?;
                self.b.build_bit_cast(h, i16t, "h")?
            }
            (Type::F32, _) => {
                let w = self.b.build_int_z_extend(a.into_int_value(), i32t, "w")?;
                let w = self.b.build_left_shift(w, i32t.const_int(16, false), "w")?;
                self.b.build_bit_cast(w, f32t, "f")?
            }
            _ => {
                // Round to nearest even on the upper half.
                let bits = self.b.build_bit_cast(a, i32t, "bits")?.into_int_value();
                let odd = self.b.build_and(
                    self.b.build_right_shift(bits, i32t.const_int(16, false), false, "u")?,
                    i32t.const_int(1, false),
                    "odd",
                )?;
                let bias = self.b.build_int_add(odd, i32t.const_int(0x7fff, false), "bias")?;
                let rounded = self.b.build_right_shift(
                    self.b.build_int_add(bits, bias, "r")?,
                    i32t.const_int(16, false),
                    false,
                    "r",
                )?;
                let nan = self.b.build_float_compare(
                    FloatPredicate::UNO,
                    a.into_float_value(),
                    a.into_float_value(),
                    "nan",
                )?;
                // Any NaN gives the canonical 0x7fff, as an H100's `cvt.rn.bf16.f32` does.
                let r = self
                    .b
                    .build_select(nan, i32t.const_int(0x7fff, false), rounded, "bf16")?
                    .into_int_value();
                self.b.build_int_truncate(r, i16t, "bf16")?.into()
            }
        };
        let v = self.ftz(d, v)?;
        self.write(st, &i.operands[0], v, false, scope)
    }
}
