//! Integer, floating-point and bit-field arithmetic, comparisons and carry chains.

use super::*;

impl<'ctx> Lowerer<'ctx> {
    /// `.ftz`: f32 subnormals become zero of the same sign (inputs and results, as the manual says).
    /// Only `.ftz` flushes: an H100's `div.approx.f32` keeps subnormals, though the manual says it
    /// flushes them (tests/gpu/probes/approx_special.ptx).
    pub(super) fn ftz(&self, d: &Decoded, v: BasicValueEnum<'ctx>) -> R<BasicValueEnum<'ctx>> {
        let BasicValueEnum::FloatValue(f) = v else { return Ok(v) };
        if !d.has(".ftz") || f.get_type() != self.ctx.f32_type() {
            return Ok(v);
        }
        let abs = self
            .call_intrinsic("llvm.fabs", &[f.get_type().into()], &[v])?
            .into_float_value();
        let tiny = self.b.build_float_compare(
            FloatPredicate::OLT,
            abs,
            f.get_type().const_float(f32::MIN_POSITIVE as f64),
            "tiny",
        )?;
        let zero = self.call_intrinsic(
            "llvm.copysign",
            &[f.get_type().into()],
            &[f.get_type().const_zero().into(), v],
        )?;
        Ok(self.b.build_select(tiny, zero, v, "ftz")?)
    }

    /// Host: an f32 NaN result becomes the GPU's canonical NaN (0x7fffffff) rather than whatever the
    /// host's instruction produced; f64 NaNs keep their payloads as PTX says.
    pub(super) fn canon(&self, v: BasicValueEnum<'ctx>) -> R<BasicValueEnum<'ctx>> {
        let BasicValueEnum::FloatValue(f) = v else { return Ok(v) };
        if self.flavour != Flavour::Host || f.get_type() != self.ctx.f32_type() {
            return Ok(v);
        }
        self.canonical_nan(f)
    }

    /// The bits of f32 `f`, 0x7fffffff where it is a NaN. Selected as integers: LLVM treats all NaNs
    /// of a float select as interchangeable and would fold the choice away. Callers flush (`.ftz`)
    /// before this, as a flush never makes a NaN.
    pub(super) fn canonical_nan(&self, f: inkwell::values::FloatValue<'ctx>) -> R<BasicValueEnum<'ctx>> {
        let nan = self.b.build_float_compare(FloatPredicate::UNO, f, f, "isnan")?;
        let bits = self.b.build_bit_cast(f, self.i32(), "bits")?.into_int_value();
        Ok(self
            .b
            .build_select(nan, self.i32().const_int(0x7fff_ffff, false), bits, "canon")?)
    }

    /// `neg` and `abs` of a NaN on the host, as an H100 computes them (tests/gpu/probes/neg_abs_nan.ptx):
    /// f32 gives the canonical NaN; f64 gives the input NaN quieted, its sign and payload untouched.
    pub(super) fn sign_op_nan(
        &self,
        x: inkwell::values::FloatValue<'ctx>,
        v: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        if self.flavour != Flavour::Host || x.get_type() != self.ctx.f64_type() {
            return self.canon(v);
        }
        let i64t = self.ctx.i64_type();
        let nan = self.b.build_float_compare(FloatPredicate::UNO, x, x, "isnan")?;
        let quiet = self.b.build_or(
            self.b.build_bit_cast(x, i64t, "bits")?.into_int_value(),
            i64t.const_int(1 << 51, false),
            "quiet",
        )?;
        let bits = self.b.build_bit_cast(v, i64t, "bits")?.into_int_value();
        Ok(self.b.build_select(nan, quiet, bits, "signop")?)
    }

    pub(super) fn rounding_supported(&self, d: &Decoded, span: Span) -> R<()> {
        match d.get(G::Round) {
            None | Some(".rn") => Ok(()),
            Some(r) => Err(unsupported(
                span,
                format!("float rounding mode `{r}` is not supported yet (only `.rn`)"),
            )),
        }
    }

    /// Packed f32 pairs (`add`, `sub`, `mul`, `fma` `.f32x2`, PTX 8.6): each half of the .b64 operands
    /// is an f32, lane 0 low, computed as the f32 instruction computes it (directed roundings went to
    /// the builtin before).
    pub(super) fn f32x2<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let ops = &i.operands;
        let (i32t, i64t, f32t) = (self.i32(), self.i64(), self.ctx.f32_type());
        let words = ops[1..]
            .iter()
            .map(|o| Ok(self.read(st, o, Type::B64, scope)?.into_int_value()))
            .collect::<R<Vec<_>>>()?;
        self.rounding_supported(d, i.span)?;
        let mut out = i64t.const_zero();
        for k in 0..2u64 {
            let mut xs = vec![];
            for w in &words {
                let v = self
                    .b
                    .build_right_shift(*w, i64t.const_int(32 * k, false), false, "lane")?;
                let v = self.b.build_int_truncate(v, i32t, "lane")?;
                xs.push(self.b.build_bit_cast(v, f32t, "f")?);
            }
            let r = if d.spec.name == "fma" {
                self.float_fma(d, Type::F32, xs[0], xs[1], xs[2])?
            } else {
                self.binary(d.spec.name, d, Type::F32, None, xs[0], xs[1], i.span)?
            };
            let bits = match r {
                BasicValueEnum::IntValue(v) => v,
                v => self.b.build_bit_cast(v, i32t, "bits")?.into_int_value(),
            };
            let bits = self.b.build_int_z_extend(bits, i64t, "w")?;
            let bits = self.b.build_left_shift(bits, i64t.const_int(32 * k, false), "w")?;
            out = self.b.build_or(out, bits, "pair")?;
        }
        self.write(st, &ops[0], out.into(), false, scope)
    }

    /// A float fused multiply-add with `.ftz` applied to inputs and result, NaN canonical.
    pub(super) fn float_fma(
        &self,
        d: &Decoded,
        t: Type,
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
        c: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let (a, b, c) = (self.ftz(d, a)?, self.ftz(d, b)?, self.ftz(d, c)?);
        let v = self.call_intrinsic("llvm.fma", &[self.value_ty(t)], &[a, b, c])?;
        let v = self.ftz(d, v)?;
        self.canon(v)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn binary(
        &self,
        name: &str,
        d: &Decoded,
        t: Type,
        mode: Option<&str>,
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
        span: Span,
    ) -> R<BasicValueEnum<'ctx>> {
        if t.is_float() {
            self.rounding_supported(d, span)?;
            if d.has(".sat") {
                return Err(unsupported(span, "`.sat` on floats is not supported yet"));
            }
            if self.flavour == Flavour::Nvvm && name == "div" && (d.has(".approx") || d.has(".full")) {
                // LLVM would print `div.rn`; the GPU's own instruction keeps its results (2^126 < |b|).
                return Err(unsupported(
                    span,
                    "approximate `div` goes out as the GPU's own instruction",
                ));
            }
            let (a, b) = (self.ftz(d, a)?, self.ftz(d, b)?);
            let (x, y) = (a.into_float_value(), b.into_float_value());
            let r: BasicValueEnum = match name {
                "add" => self.b.build_float_add(x, y, "add")?.into(),
                "sub" => self.b.build_float_sub(x, y, "sub")?.into(),
                "mul" => self.b.build_float_mul(x, y, "mul")?.into(),
                "div" if d.has(".approx") && self.flavour == Flavour::Host && t == Type::F32 => {
                    // a * (1/b) with 1/b flushed: for 2^126 < |b| the quotient is 0 (NaN for an
                    // infinite a), as the manual says and an H100 gives.
                    let q = self.b.build_float_div(x, y, "div")?;
                    let abs = self
                        .call_intrinsic("llvm.fabs", &[y.get_type().into()], &[b])?
                        .into_float_value();
                    let big = self.b.build_float_compare(
                        FloatPredicate::OGT,
                        abs,
                        y.get_type().const_float(2f64.powi(126)),
                        "big",
                    )?;
                    let zero = self.call_intrinsic(
                        "llvm.copysign",
                        &[y.get_type().into()],
                        &[y.get_type().const_zero().into(), b],
                    )?;
                    let z = self.b.build_float_mul(x, zero.into_float_value(), "z")?;
                    self.b.build_select(big, z, q, "div")?
                }
                "div" => self.b.build_float_div(x, y, "div")?.into(),
                // A NaN operand yields the other one, and -0 < +0 (PTX ISA 9.7.3.11).
                "min" => self.call_intrinsic("llvm.minimumnum", &[x.get_type().into()], &[a, b])?,
                "max" => self.call_intrinsic("llvm.maximumnum", &[x.get_type().into()], &[a, b])?,
                _ => return Err(unsupported(span, format!("`{name}` of a float type is not supported"))),
            };
            let r = self.ftz(d, r)?;
            return self.canon(r);
        }
        let (x, y) = (a.into_int_value(), b.into_int_value());
        let signed = t.is_signed();
        let bits = t.bits();
        if d.has(".cc") || (d.has(".sat") && !(bits == 32 && signed && matches!(name, "add" | "sub"))) {
            return Err(unsupported(
                span,
                format!("`{name}` with these modifiers is not supported yet"),
            ));
        }
        Ok(match name {
            "add" if d.has(".sat") => self.call_intrinsic("llvm.sadd.sat", &[x.get_type().into()], &[a, b])?,
            "sub" if d.has(".sat") => self.call_intrinsic("llvm.ssub.sat", &[x.get_type().into()], &[a, b])?,
            "add" => self.b.build_int_add(x, y, "add")?.into(),
            "sub" => self.b.build_int_sub(x, y, "sub")?.into(),
            "mul" => match mode {
                None | Some(".lo") => self.b.build_int_mul(x, y, "mul")?.into(),
                Some(m) => {
                    let wt = self.int(bits * 2);
                    let (xw, yw) = if signed {
                        (
                            self.b.build_int_s_extend(x, wt, "x")?,
                            self.b.build_int_s_extend(y, wt, "y")?,
                        )
                    } else {
                        (
                            self.b.build_int_z_extend(x, wt, "x")?,
                            self.b.build_int_z_extend(y, wt, "y")?,
                        )
                    };
                    let p = self.b.build_int_mul(xw, yw, "wide")?;
                    if m == ".wide" {
                        p.into()
                    } else {
                        let hi = self
                            .b
                            .build_right_shift(p, wt.const_int(bits as u64, false), false, "hi")?;
                        self.b.build_int_truncate(hi, self.int(bits), "hi")?.into()
                    }
                }
            },
            "div" | "rem" => {
                // x86 traps on division by zero and on MIN / -1; PTX does not. Divide by 1 instead and
                // patch the result: x / 0 and x % 0 are all ones (what an H100 gives, signed or not).
                let it = x.get_type();
                let zero = self.b.build_int_compare(IntPredicate::EQ, y, it.const_zero(), "z")?;
                let mut bad = zero;
                if signed {
                    let min = it.const_int(1u64 << (bits - 1), false);
                    let m1 = self.b.build_int_compare(IntPredicate::EQ, x, min, "min")?;
                    let n1 = self
                        .b
                        .build_int_compare(IntPredicate::EQ, y, it.const_all_ones(), "n1")?;
                    let ovf = self.b.build_and(m1, n1, "ovf")?;
                    bad = self.b.build_or(zero, ovf, "bad")?;
                }
                let safe = self
                    .b
                    .build_select(bad, it.const_int(1, false), y, "safe")?
                    .into_int_value();
                let q = match (name, signed) {
                    ("div", true) => self.b.build_int_signed_div(x, safe, "q")?,
                    ("div", false) => self.b.build_int_unsigned_div(x, safe, "q")?,
                    (_, true) => self.b.build_int_signed_rem(x, safe, "r")?,
                    (_, false) => self.b.build_int_unsigned_rem(x, safe, "r")?,
                };
                // MIN / -1 wraps to MIN (what `x / 1 * -1` gives) and MIN % -1 is 0.
                let special = if name == "div" {
                    let ovf_val = self.b.build_int_neg(x, "wrap")?;
                    self.b
                        .build_select(zero, it.const_all_ones(), ovf_val, "sp")?
                        .into_int_value()
                } else {
                    self.b
                        .build_select(zero, it.const_all_ones(), it.const_zero(), "sp")?
                        .into_int_value()
                };
                self.b.build_select(bad, special, q, name)?
            }
            "min" | "max" => {
                let f = match (name, signed) {
                    ("min", true) => "llvm.smin",
                    ("min", false) => "llvm.umin",
                    ("max", true) => "llvm.smax",
                    _ => "llvm.umax",
                };
                self.call_intrinsic(f, &[x.get_type().into()], &[a, b])?
            }
            "and" => self.b.build_and(x, y, "and")?.into(),
            "or" => self.b.build_or(x, y, "or")?.into(),
            "xor" => self.b.build_xor(x, y, "xor")?.into(),
            "shl" | "shr" => {
                // Shift amounts past the width saturate in PTX (LLVM would make them poison).
                let it = x.get_type();
                let amt = self.b.build_int_z_extend_or_bit_cast(y, self.i32(), "amt")?;
                let maxs = self.i32().const_int(bits as u64 - 1, false);
                let over = self.b.build_int_compare(IntPredicate::UGT, amt, maxs, "over")?;
                let clamped = self.b.build_select(over, maxs, amt, "c")?.into_int_value();
                let sh = self.b.build_int_cast_sign_flag(clamped, it, false, "s")?;
                if name == "shl" {
                    let v = self.b.build_left_shift(x, sh, "shl")?;
                    self.b.build_select(over, it.const_zero(), v, "shl")?
                } else if signed {
                    self.b.build_right_shift(x, sh, true, "shr")?.into()
                } else {
                    let v = self.b.build_right_shift(x, sh, false, "shr")?;
                    self.b.build_select(over, it.const_zero(), v, "shr")?
                }
            }
            _ => return Err(unsupported(span, format!("`{name}` is not supported yet"))),
        })
    }

    pub(super) fn setp<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        // setp.cmp.type; set.cmp.dtype.stype compares in its second (source) type.
        let t = d.types().last().expect("setp has a type");
        let ops = &i.operands;
        let a = self.read(st, &ops[1], t, scope)?;
        let a = self.ftz(d, a)?;
        let b = self.read(st, &ops[2], t, scope)?;
        let b = self.ftz(d, b)?;
        let cmp = d.get(G::Cmp).expect("setp has a comparison");
        let r = if t.is_float() {
            use FloatPredicate::*;
            let p = match cmp {
                ".eq" => OEQ,
                ".ne" => ONE,
                ".lt" => OLT,
                ".le" => OLE,
                ".gt" => OGT,
                ".ge" => OGE,
                ".equ" => UEQ,
                ".neu" => UNE,
                ".ltu" => ULT,
                ".leu" => ULE,
                ".gtu" => UGT,
                ".geu" => UGE,
                ".num" => ORD,
                ".nan" => UNO,
                other => return Err(unsupported(i.span, format!("`{other}` does not apply to floats"))),
            };
            self.b
                .build_float_compare(p, a.into_float_value(), b.into_float_value(), "cmp")?
        } else {
            use IntPredicate::*;
            let s = t.is_signed();
            let p = match cmp {
                ".eq" => EQ,
                ".ne" => NE,
                ".lt" if s => SLT,
                ".le" if s => SLE,
                ".gt" if s => SGT,
                ".ge" if s => SGE,
                ".lt" | ".lo" => ULT,
                ".le" | ".ls" => ULE,
                ".gt" | ".hi" => UGT,
                ".ge" | ".hs" => UGE,
                other => return Err(unsupported(i.span, format!("`{other}` does not apply to integers"))),
            };
            self.b
                .build_int_compare(p, a.into_int_value(), b.into_int_value(), "cmp")?
        };
        let (p, q) = match (d.get(G::BoolOp), ops.get(3)) {
            (Some(op), Some(c)) => {
                let c = self.read(st, c, Type::Pred, scope)?.into_int_value();
                let nr = self.b.build_not(r, "nr")?;
                let comb = |x: IntValue<'ctx>| -> R<IntValue<'ctx>> {
                    Ok(match op {
                        ".and" => self.b.build_and(x, c, "and")?,
                        ".or" => self.b.build_or(x, c, "or")?,
                        _ => self.b.build_xor(x, c, "xor")?,
                    })
                };
                (comb(r)?, comb(nr)?)
            }
            (None, None) => (r, self.b.build_not(r, "nr")?),
            _ => return Err(unsupported(i.span, "a boolean operation needs a predicate operand `c`")),
        };
        if d.spec.name == "set" {
            // All ones for integer destinations, 1.0f for f32; 0 otherwise.
            let dt = d.ty().expect("set has a destination type");
            let yes = if dt == Type::F32 {
                1f32.to_bits() as u64
            } else {
                u32::MAX as u64
            };
            let v = self
                .b
                .build_select(p, self.i32().const_int(yes, false), self.i32().const_zero(), "set")?;
            return self.write(st, &ops[0], v, false, scope);
        }
        match &ops[0] {
            Operand::Pair(dp, dq, _) => {
                self.write(st, dp, p.into(), false, scope)?;
                self.write(st, dq, q.into(), false, scope)
            }
            dst => self.write(st, dst, p.into(), false, scope),
        }
    }

    /// Extended-precision arithmetic through the carry flag: `add.cc`, `addc`, `sub.cc`, `subc`,
    /// `mad.cc`, `madc`. Sums are formed at twice the width so the carry is the bit above.
    pub(super) fn carry_arith<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let name = d.spec.name;
        let t = d.ty().expect("typed");
        let ops = &i.operands;
        let bits = t.bits();
        let (it, wt) = (self.int(bits), self.int(bits * 2));
        let flag = match st.carry {
            Some(p) => p,
            None => {
                let p = st.alloca_at.build_alloca(self.ctx.bool_type(), "cc.cf")?;
                st.alloca_at.build_store(p, self.ctx.bool_type().const_zero())?;
                st.carry = Some(p);
                p
            }
        };
        if t.is_float() {
            return Err(unsupported(
                i.span,
                "carry-chain arithmetic is defined for integer types only",
            ));
        }
        let a = self.read(st, &ops[1], t, scope)?.into_int_value();
        let b = self.read(st, &ops[2], t, scope)?.into_int_value();
        // Subtraction is a + ~b + carry, as the hardware does it: sub.cc carries in 1, and CC.CF
        // afterwards is the carry out, i.e. 1 when there was no borrow (ZLUDA's GPU-recorded
        // subc_cc_s32 case shows CF = 0 after a borrowing sub.cc).
        let carry_in = if matches!(name, "addc" | "subc" | "madc") {
            let c = self.b.build_load(self.ctx.bool_type(), flag, "cf")?.into_int_value();
            self.b.build_int_z_extend(c, wt, "cin")?
        } else if name == "sub" {
            wt.const_int(1, false)
        } else {
            wt.const_zero()
        };
        let (x, y) = if matches!(name, "mad" | "madc") {
            // The product's low or high half, then the addend.
            let mode = d.get(G::Mode).unwrap_or(".lo");
            if mode == ".wide" {
                return Err(unsupported(i.span, "`mad.wide.cc` is not valid PTX"));
            }
            let ext = |v: IntValue<'ctx>| {
                if t.is_signed() {
                    self.b.build_int_s_extend(v, wt, "e")
                } else {
                    self.b.build_int_z_extend(v, wt, "e")
                }
            };
            let full = self.b.build_int_mul(ext(a)?, ext(b)?, "prod")?;
            let half = if mode == ".hi" {
                self.b
                    .build_right_shift(full, wt.const_int(bits as u64, false), false, "hi")?
            } else {
                full
            };
            let p = self.b.build_int_truncate(half, it, "p")?;
            let c = self.read(st, &ops[3], t, scope)?.into_int_value();
            (p, c)
        } else {
            (a, b)
        };
        let y = if matches!(name, "sub" | "subc") {
            self.b.build_not(y, "nb")?
        } else {
            y
        };
        let (xw, yw) = (
            self.b.build_int_z_extend(x, wt, "x")?,
            self.b.build_int_z_extend(y, wt, "y")?,
        );
        let s = self.b.build_int_add(xw, yw, "s")?;
        let wide = self.b.build_int_add(s, carry_in, "s")?;
        let result = self.b.build_int_truncate(wide, it, "r")?;
        if d.has(".cc") {
            let top = self
                .b
                .build_right_shift(wide, wt.const_int(bits as u64, false), false, "top")?;
            let out = self.b.build_int_truncate(top, self.ctx.bool_type(), "cout")?;
            self.b.build_store(flag, out)?;
        }
        self.write(st, &ops[0], result.into(), t.is_signed(), scope)
    }

    /// shf, lop3, bfe and bfi, with the manual's clamping of positions and lengths.
    pub(super) fn bit_field<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let t = d.ty().expect("typed");
        let ops = &i.operands;
        let it = self.int(t.bits());
        let w = t.bits() as u64;
        let int = |v: BasicValueEnum<'ctx>| v.into_int_value();
        let a = int(self.read(st, &ops[1], t, scope)?);
        let u32t = self.i32();
        let v: IntValue = match d.spec.name {
            "shf" => {
                let b = int(self.read(st, &ops[2], t, scope)?);
                let c = int(self.read(st, &ops[3], Type::U32, scope)?);
                let left = d.get(G::Dir) == Some(".l");
                let f = if left { "llvm.fshl" } else { "llvm.fshr" };
                // The intrinsics shift by c mod 32 (the .wrap mode); .clamp saturates at 32, where the
                // result is the other word whole.
                let shifted = int(self.call_intrinsic(f, &[it.into()], &[b.into(), a.into(), c.into()])?);
                if d.get(G::Mode2) == Some(".clamp") {
                    let full = self
                        .b
                        .build_int_compare(IntPredicate::UGE, c, u32t.const_int(32, false), "full")?;
                    self.b
                        .build_select(full, if left { a } else { b }, shifted, "shf")?
                        .into_int_value()
                } else {
                    shifted
                }
            }
            "lop3" => {
                let b = int(self.read(st, &ops[2], t, scope)?);
                let c = int(self.read(st, &ops[3], t, scope)?);
                let Operand::Imm(Imm::Int(lut), _) = &ops[4] else {
                    return Err(unsupported(ops[4].span(), "`lop3` needs an immediate truth table"));
                };
                // Bit k of the table is the result for a = k>>2 & 1, b = k>>1 & 1, c = k & 1.
                let mut acc = it.const_zero();
                for k in 0..8 {
                    if lut >> k & 1 == 0 {
                        continue;
                    }
                    let pick = |x: IntValue<'ctx>, bit: i32| -> R<IntValue<'ctx>> {
                        Ok(if k >> bit & 1 == 1 {
                            x
                        } else {
                            self.b.build_not(x, "n")?
                        })
                    };
                    let term = self.b.build_and(pick(a, 2)?, pick(b, 1)?, "t")?;
                    let term = self.b.build_and(term, pick(c, 0)?, "t")?;
                    acc = self.b.build_or(acc, term, "lop3")?;
                }
                acc
            }
            "bfe" => {
                let pos = int(self.read(st, &ops[2], Type::U32, scope)?);
                let len = int(self.read(st, &ops[3], Type::U32, scope)?);
                let m = u32t.const_int(0xff, false);
                let pos = self.b.build_and(pos, m, "pos")?;
                let len = self.b.build_and(len, m, "len")?;
                let signed = t.is_signed();
                let wv = u32t.const_int(w, false);
                let out = self.b.build_int_compare(IntPredicate::UGE, pos, wv, "out")?;
                let p = self.b.build_int_z_extend_or_bit_cast(
                    self.b
                        .build_select(out, u32t.const_int(w - 1, false), pos, "p")?
                        .into_int_value(),
                    it,
                    "p",
                )?;
                let x = self.b.build_right_shift(a, p, signed, "x")?;
                // Past the top, unsigned fields read zeros (signed ones keep the replicated sign bit).
                let x = if signed {
                    x
                } else {
                    self.b.build_select(out, it.const_zero(), x, "x")?.into_int_value()
                };
                let short = self.b.build_int_compare(IntPredicate::ULT, len, wv, "short")?;
                let keep = self
                    .b
                    .build_int_z_extend_or_bit_cast(self.b.build_int_sub(wv, len, "k")?, it, "k")?;
                let keep = self.b.build_select(short, keep, it.const_zero(), "k")?.into_int_value();
                let up = self.b.build_left_shift(x, keep, "up")?;
                let field = self.b.build_right_shift(up, keep, signed, "field")?;
                let zero = self
                    .b
                    .build_int_compare(IntPredicate::EQ, len, u32t.const_zero(), "zero")?;
                self.b
                    .build_select(zero, it.const_zero(), field, "bfe")?
                    .into_int_value()
            }
            _ => {
                let b = int(self.read(st, &ops[2], t, scope)?);
                let pos = int(self.read(st, &ops[3], Type::U32, scope)?);
                let len = int(self.read(st, &ops[4], Type::U32, scope)?);
                let m = u32t.const_int(0xff, false);
                let pos = self.b.build_and(pos, m, "pos")?;
                let len = self.b.build_and(len, m, "len")?;
                let wv = u32t.const_int(w, false);
                let nothing = self.b.build_or(
                    self.b
                        .build_int_compare(IntPredicate::EQ, len, u32t.const_zero(), "z")?,
                    self.b.build_int_compare(IntPredicate::UGE, pos, wv, "o")?,
                    "nothing",
                )?;
                let short = self.b.build_int_compare(IntPredicate::ULT, len, wv, "short")?;
                let l = self.b.build_int_z_extend_or_bit_cast(
                    self.b
                        .build_select(short, len, u32t.const_zero(), "l")?
                        .into_int_value(),
                    it,
                    "l",
                )?;
                let ones = self.b.build_int_sub(
                    self.b.build_left_shift(it.const_int(1, false), l, "b")?,
                    it.const_int(1, false),
                    "ones",
                )?;
                let ones = self
                    .b
                    .build_select(short, ones, it.const_all_ones(), "ones")?
                    .into_int_value();
                let p = self.b.build_int_z_extend_or_bit_cast(
                    self.b
                        .build_select(nothing, u32t.const_zero(), pos, "p")?
                        .into_int_value(),
                    it,
                    "p",
                )?;
                let mask = self.b.build_left_shift(ones, p, "mask")?;
                let ins = self.b.build_and(self.b.build_left_shift(a, p, "ins")?, mask, "ins")?;
                let kept = self.b.build_and(b, self.b.build_not(mask, "nm")?, "kept")?;
                let f = self.b.build_or(kept, ins, "bfi")?;
                self.b.build_select(nothing, b, f, "bfi")?.into_int_value()
            }
        };
        // lop3.BoolOp d|p, …, q: p = (d != 0) BoolOp q.
        if let (Operand::Pair(dv, dp, _), Some(op)) = (&ops[0], d.get(G::BoolOp)) {
            let q = self.read(st, &ops[5], Type::Pred, scope)?.into_int_value();
            let nonzero = self.b.build_int_compare(IntPredicate::NE, v, it.const_zero(), "nz")?;
            let p = match op {
                ".and" => self.b.build_and(nonzero, q, "p")?,
                _ => self.b.build_or(nonzero, q, "p")?,
            };
            self.write(st, dv, v.into(), false, scope)?;
            return self.write(st, dp, p.into(), false, scope);
        }
        self.write(st, &ops[0], v.into(), t.is_signed(), scope)
    }

    /// sqrt, rcp, rsqrt and the `.approx` transcendental functions. Correctly rounded results stand in for
    /// `.approx` ones on the host (they are within the manual's bounds); NVPTX gets the approx intrinsics.
    pub(super) fn float_unary<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let name = d.spec.name;
        let t = d.ty().expect("typed");
        self.rounding_supported(d, i.span)?;
        if self.flavour == Flavour::Nvvm && matches!(name, "sqrt" | "rcp") && d.has(".approx") {
            // LLVM would print the `.rn` forms; the GPU's own instruction keeps its results.
            return Err(unsupported(
                i.span,
                "approximate `sqrt`/`rcp` go out as the GPU's own instruction",
            ));
        }
        let a = self.read(st, &i.operands[1], t, scope)?;
        let a = self.ftz(d, a)?;
        let ty = self.value_ty(t);
        let one = ty.into_float_type().const_float(1.0);
        let nvvm = self.flavour == Flavour::Nvvm;
        let ftz = if d.has(".ftz") { "ftz." } else { "" };
        let v: BasicValueEnum = match name {
            "rcp" | "rsqrt" if !nvvm && t == Type::F64 && d.has(".approx") && !ftz.is_empty() => {
                return self.write(st, &i.operands[0], self.upper_word_approx(name, a)?, false, scope);
            }
            "sqrt" => self.call_intrinsic("llvm.sqrt", &[ty], &[a])?,
            "rcp" => self.b.build_float_div(one, a.into_float_value(), "rcp")?.into(),
            "rsqrt" if nvvm => {
                let suffix = if t == Type::F64 { "d" } else { "f" };
                self.call_intrinsic(&format!("llvm.nvvm.rsqrt.approx.{ftz}{suffix}"), &[], &[a])?
            }
            "rsqrt" => {
                let s = self.call_intrinsic("llvm.sqrt", &[ty], &[a])?;
                self.b.build_float_div(one, s.into_float_value(), "rsqrt")?.into()
            }
            "ex2" if nvvm => self.call_intrinsic(
                &format!("llvm.nvvm.ex2.approx{}", if ftz.is_empty() { "" } else { ".ftz" }),
                &[ty],
                &[a],
            )?,
            "sin" | "cos" | "lg2" if nvvm => {
                self.call_intrinsic(&format!("llvm.nvvm.{name}.approx.{ftz}f"), &[], &[a])?
            }
            "ex2" if t == Type::F32 => self.exp2_f32(a.into_float_value())?.into(),
            "ex2" => self.call_intrinsic("llvm.exp2", &[ty], &[a])?,
            "lg2" => self.call_intrinsic("llvm.log2", &[ty], &[a])?,
            "sin" => self.call_intrinsic("llvm.sin", &[ty], &[a])?,
            _ => self.call_intrinsic("llvm.cos", &[ty], &[a])?,
        };
        let v = self.ftz(d, v)?;
        let v = self.canon(v)?;
        self.write(st, &i.operands[0], v, false, scope)
    }

    /// `2^x` in f32 without the C library's overflow and underflow path (which sets `errno`, and cost
    /// a tenth of a kernel's time where most inputs underflow): the library takes that path for x at
    /// or above 128 and below -149, so those arguments are replaced and their results chosen here.
    /// Between -150 and -149 the result is the smallest subnormal, as for -149 itself; -150 and
    /// below give +0 (2^-150 is the tie, which goes to even), 128 and above +inf; NaN stays NaN.
    fn exp2_f32(&self, x: inkwell::values::FloatValue<'ctx>) -> R<inkwell::values::FloatValue<'ctx>> {
        // The smallest argument glibc's exp2f computes without its error path, the largest whose
        // result rounds to zero, and the first whose result overflows.
        const LOWEST: f64 = -149.0;
        const ZERO_AT: f64 = -150.0;
        const OVERFLOW_AT: f64 = 128.0;
        let t = x.get_type();
        let k = |v: f64| t.const_float(v);
        let low = self.b.build_float_compare(FloatPredicate::OLT, x, k(LOWEST), "low")?;
        let high = self
            .b
            .build_float_compare(FloatPredicate::OGE, x, k(OVERFLOW_AT), "high")?;
        let x1 = self.b.build_select(low, k(LOWEST), x, "clamp")?;
        let x2 = self.b.build_select(high, k(0.0), x1.into_float_value(), "clamp")?;
        let r = self.call_intrinsic("llvm.exp2", &[t.into()], &[x2])?.into_float_value();
        let zero = self
            .b
            .build_float_compare(FloatPredicate::OLE, x, k(ZERO_AT), "to_zero")?;
        let r = self.b.build_select(zero, k(0.0), r, "exp2")?.into_float_value();
        Ok(self
            .b
            .build_select(high, k(f64::INFINITY), r, "exp2")?
            .into_float_value())
    }

    /// `rcp.approx.ftz.f64` and `rsqrt.approx.ftz.f64` on the host, as the manual defines them: the
    /// function of `a`'s upper word alone (sign, exponent and 20 mantissa bits), its result's upper
    /// word kept and the lower one zero; subnormals flush to signed zero and NaNs give the canonical
    /// 0x7fffffff00000000. A NaN whose payload lies in the lower word alone reads as an infinity, as
    /// on an H200 (tests/ptx/approx_f64.ptx). Code that refines such a seed (cuRAND's double-precision normal
    /// distributions) gets the GPU's bits only from the truncated seed, not from a full-precision one.
    fn upper_word_approx(&self, name: &str, a: BasicValueEnum<'ctx>) -> R<BasicValueEnum<'ctx>> {
        let (i64t, f64t) = (self.ctx.i64_type(), self.ctx.f64_type());
        let k = |v: u64| i64t.const_int(v, false);
        let (upper, sign, exponent) = (k(0xffff_ffff_0000_0000), k(1 << 63), k(0x7ff0_0000_0000_0000));
        let bits = self.b.build_bit_cast(a, i64t, "bits")?.into_int_value();
        let subnormal = |v| -> R<_> {
            let e = self.b.build_and(v, exponent, "exp")?;
            Ok(self.b.build_int_compare(IntPredicate::EQ, e, k(0), "tiny")?)
        };
        let flushed = |v| -> R<_> {
            let tiny = subnormal(v)?;
            let zero = self.b.build_and(v, sign, "signed_zero")?;
            Ok(self.b.build_select(tiny, zero, v, "ftz")?.into_int_value())
        };
        let x = flushed(self.b.build_and(bits, upper, "upper")?)?;
        let x = self.b.build_bit_cast(x, f64t, "x")?.into_float_value();
        let denominator = match name {
            "rsqrt" => self
                .call_intrinsic("llvm.sqrt", &[f64t.into()], &[x.into()])?
                .into_float_value(),
            _ => x,
        };
        let r = self.b.build_float_div(f64t.const_float(1.0), denominator, name)?;
        let r_bits = self.b.build_bit_cast(r, i64t, "r_bits")?.into_int_value();
        let r_bits = flushed(self.b.build_and(r_bits, upper, "r_upper")?)?;
        let nan = self.b.build_or(
            self.b.build_float_compare(FloatPredicate::UNO, x, x, "nan_in")?,
            self.b.build_float_compare(FloatPredicate::UNO, r, r, "nan_out")?,
            "nan",
        )?;
        let r_bits = self.b.build_select(nan, k(0x7fff_ffff_0000_0000), r_bits, "canon")?;
        Ok(self.b.build_bit_cast(r_bits, f64t, name)?)
    }

    /// `slct` (a if c >= 0, else b; -0.0 counts as zero, NaN picks b) and `cnot` (1 if a is 0).
    pub(super) fn select_not<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let ops = &i.operands;
        let mut ts = d.types();
        let t = ts.next().expect("typed");
        if d.spec.name == "cnot" {
            let a = self.read(st, &ops[1], t, scope)?.into_int_value();
            let z = self
                .b
                .build_int_compare(IntPredicate::EQ, a, a.get_type().const_zero(), "z")?;
            let v = self.b.build_int_z_extend(z, a.get_type(), "cnot")?;
            return self.write(st, &ops[0], v.into(), false, scope);
        }
        let ct = ts.next().unwrap_or(Type::S32);
        let a = self.read(st, &ops[1], t, scope)?;
        let b = self.read(st, &ops[2], t, scope)?;
        let c = self.read(st, &ops[3], ct, scope)?;
        let pick_a = match self.ftz(d, c)? {
            BasicValueEnum::FloatValue(f) => {
                self.b
                    .build_float_compare(FloatPredicate::OGE, f, f.get_type().const_zero(), "ge")?
            }
            other => {
                let x = other.into_int_value();
                self.b
                    .build_int_compare(IntPredicate::SGE, x, x.get_type().const_zero(), "ge")?
            }
        };
        let v = self.b.build_select(pick_a, a, b, "slct")?;
        self.write(st, &ops[0], v, t.is_signed(), scope)
    }
}
