//! Video instructions on the host. Scalar ones (`vadd` … `vset`): the operands' registers go whole to
//! the runtime's `ptxjit_video`, with the form (types, selectors, modifiers) packed into its code.
//! SIMD ones (`vadd2` … `vset4`) are inline IR, lane by lane, so lane-vectorised regions keep them.

use super::*;
use crate::builtin::{self as bi, Video};

impl<'ctx> Lowerer<'ctx> {
    pub(super) fn video<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let name = d.spec.name;
        let op = bi::VIDEO_OPS.iter().position(|&o| o == name).expect("a video opcode") as u32;
        let signed: Vec<bool> = d.types().map(|t| t.is_signed()).collect();
        // vset has no destination type: its result is unsigned.
        let (d_signed, a_signed, b_signed) = match signed.as_slice() {
            [a, b] => (false, *a, *b),
            [dt, a, b, ..] => (*dt, *a, *b),
            _ => return Err(unsupported(i.span, format!("`{name}` needs its operand types"))),
        };
        // An operand: its register (a `-` taken off, for vmad) and its part selector.
        let split = |o: &'m Operand<'a>| -> R<(&'m Name<'a>, u32, bool)> {
            let (o, neg) = match o {
                Operand::Neg(x, _) => (&**x, true),
                o => (o, false),
            };
            match o {
                Operand::Sym { name, component } => {
                    // The checker has refused other selectors, and components of vector registers.
                    let sel = component.map_or(Some(0), |c| isa::scalar_selector(c.text));
                    let Some(sel) = sel else {
                        return Err(unsupported(o.span(), "not a part selector"));
                    };
                    Ok((name, sel, neg))
                }
                other => Err(unsupported(other.span(), format!("`{name}` takes registers here"))),
            }
        };
        let ops = &i.operands;
        let (dn, dsel, _) = split(&ops[0])?;
        let mut srcs = vec![];
        let mut neg = 0;
        let mut sels = [0u32; 2];
        for (k, o) in ops[1..].iter().enumerate() {
            let v = match o {
                Operand::Imm(..) => self.read(st, o, Type::B32, scope)?.into_int_value(),
                _ => {
                    let (n, sel, negated) = split(o)?;
                    if k < 2 {
                        sels[k] = sel;
                    }
                    neg |= (negated as u32) << k;
                    let whole = Operand::Sym {
                        name: *n,
                        component: None,
                    };
                    self.read(st, &whole, Type::B32, scope)?.into_int_value()
                }
            };
            srcs.push(v);
        }
        let op2 = match d.get(G::Op) {
            Some(".add") => 1,
            Some(".min") => 2,
            Some(".max") => 3,
            _ => 0,
        };
        let v = Video {
            op,
            d_signed,
            a_signed,
            b_signed,
            sat: d.has(".sat"),
            wrap: d.has(".wrap"),
            op2,
            asel: sels[0],
            bsel: sels[1],
            dsel,
            scale: if d.has(".shr7") {
                1
            } else if d.has(".shr15") {
                2
            } else {
                0
            },
            po: d.has(".po"),
            neg,
            cmp: d
                .get(G::Cmp)
                .and_then(|c| bi::VIDEO_CMPS.iter().position(|&x| x == c))
                .unwrap_or(0) as u32,
        };
        let r = self.builtin_call(bi::VIDEO, v.pack(), &srcs)?;
        let r = self.b.build_int_truncate(r, self.i32(), "video")?;
        let whole = Operand::Sym {
            name: *dn,
            component: None,
        };
        self.write(st, &whole, r.into(), false, scope)
    }

    /// `vop2`/`vop4`, as the manual's pseudocode (9.7.18.2) states them: each lane's operands are parts
    /// of b:a picked by the selectors and extended to 64 bits (the manual's 33), the operation gives a
    /// 34-bit result, `.sat` clamps it to the lane's range for d's signedness; then the lanes the mask
    /// names either replace c's lanes (the others keep c's) or, with `.add`, are summed onto c.
    pub(super) fn simd_video<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let name = d.spec.name;
        let Some((op, lanes)) = isa::simd_op(name) else {
            return Err(unsupported(i.span, format!("`{name}` is not a SIMD video instruction")));
        };
        let bits = 32 / lanes;
        let is_set = isa::SIMD_OPS[op] == "vset";
        let signed: Vec<bool> = d.types().map(|t| t.is_signed()).collect();
        // vset has no destination type: its 0/1 results are unsigned.
        let (d_signed, a_signed, b_signed) = match signed.as_slice() {
            [a, b] if is_set => (false, *a, *b),
            [dt, a, b] => (*dt, *a, *b),
            _ => return Err(unsupported(i.span, format!("`{name}` needs its operand types"))),
        };
        let ops = &i.operands;
        let part = |o: &'m Operand<'a>| match o {
            Operand::Sym { name, component } => Ok((*name, component.map(|c| c.text))),
            other => Err(unsupported(other.span(), format!("`{name}` takes registers"))),
        };
        let (dn, dmask) = part(&ops[0])?;
        let (an, asel) = part(&ops[1])?;
        let (bn, bsel) = part(&ops[2])?;
        let (cn, _) = part(&ops[3])?;
        let bad = |c: &str| unsupported(i.span, format!("`{c}` is not a selector of `{name}`"));
        let mask = match dmask {
            Some(c) => isa::simd_mask(c, lanes).ok_or_else(|| bad(c))?,
            None => (1 << lanes) - 1,
        };
        let select = |sel: Option<&str>, is_b: bool| match sel {
            Some(c) => isa::simd_select(c, lanes).ok_or_else(|| bad(c)),
            None => Ok(isa::simd_default_select(lanes, is_b)),
        };
        let (asel, bsel) = (select(asel, false)?, select(bsel, true)?);
        let whole = |n: Name<'a>| Operand::Sym {
            name: n,
            component: None,
        };
        let (i32t, i64t, lane_t) = (self.i32(), self.i64(), self.int(bits));
        let mut read = |s: &mut Self, n| -> R<IntValue<'ctx>> {
            let v = s.read(st, &whole(n), Type::B32, scope)?.into_int_value();
            Ok(s.b.build_int_z_extend(v, i64t, "w")?)
        };
        let (a, b, c) = (read(self, an)?, read(self, bn)?, read(self, cn)?);
        let b = self.b.build_left_shift(b, i64t.const_int(32, false), "b")?;
        let ba = self.b.build_or(b, a, "ba")?;
        let c32 = self.b.build_int_truncate(c, i32t, "c")?;
        // Part `k` of b:a, extended.
        let extract = |s: &mut Self, k: u32, signed: bool| -> R<IntValue<'ctx>> {
            let v =
                s.b.build_right_shift(ba, i64t.const_int((k * bits) as u64, false), false, "part")?;
            let v = s.b.build_int_truncate(v, lane_t, "part")?;
            Ok(s.b.build_int_cast_sign_flag(v, i64t, signed, "part")?)
        };
        let accumulate = d.get(G::Op) == Some(".add");
        let sat = d.has(".sat");
        let (lo, hi) = if d_signed {
            (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
        } else {
            (0, (1i64 << bits) - 1)
        };
        let mut out = if accumulate { c32 } else { i32t.const_zero() };
        for lane in 0..lanes {
            let va = extract(self, asel[lane as usize], a_signed)?;
            let vb = extract(self, bsel[lane as usize], b_signed)?;
            let t = match isa::SIMD_OPS[op] {
                "vadd" => self.b.build_int_add(va, vb, "t")?,
                "vsub" => self.b.build_int_sub(va, vb, "t")?,
                "vavrg" => {
                    // (s + 1) >> 1 for a non-negative sum, s >> 1 otherwise: halves round away from zero.
                    let sum = self.b.build_int_add(va, vb, "s")?;
                    let nonneg = self
                        .b
                        .build_int_compare(IntPredicate::SGE, sum, i64t.const_zero(), "nn")?;
                    let up = self.b.build_int_z_extend(nonneg, i64t, "up")?;
                    let sum = self.b.build_int_add(sum, up, "s")?;
                    self.b.build_right_shift(sum, i64t.const_int(1, false), true, "t")?
                }
                "vabsdiff" => {
                    let diff = self.b.build_int_sub(va, vb, "diff")?;
                    let f = self.call_intrinsic(
                        "llvm.abs",
                        &[i64t.into()],
                        &[diff.into(), self.ctx.bool_type().const_zero().into()],
                    )?;
                    f.into_int_value()
                }
                "vmin" | "vmax" => {
                    let f = if isa::SIMD_OPS[op] == "vmin" {
                        "llvm.smin"
                    } else {
                        "llvm.smax"
                    };
                    self.call_intrinsic(f, &[i64t.into()], &[va.into(), vb.into()])?
                        .into_int_value()
                }
                _ => {
                    let cmp = match d.get(G::Cmp) {
                        Some(".eq") => IntPredicate::EQ,
                        Some(".ne") => IntPredicate::NE,
                        Some(".lt") => IntPredicate::SLT,
                        Some(".le") => IntPredicate::SLE,
                        Some(".gt") => IntPredicate::SGT,
                        _ => IntPredicate::SGE,
                    };
                    let r = self.b.build_int_compare(cmp, va, vb, "cmp")?;
                    self.b.build_int_z_extend(r, i64t, "t")?
                }
            };
            let t = if sat {
                let f = self.call_intrinsic(
                    "llvm.smax",
                    &[i64t.into()],
                    &[t.into(), i64t.const_int(lo as u64, true).into()],
                )?;
                self.call_intrinsic(
                    "llvm.smin",
                    &[i64t.into()],
                    &[f, i64t.const_int(hi as u64, true).into()],
                )?
                .into_int_value()
            } else {
                t
            };
            let t = self.b.build_int_truncate(t, i32t, "t")?;
            let masked = mask >> lane & 1 == 1;
            out = if accumulate {
                if masked {
                    self.b.build_int_add(out, t, "acc")?
                } else {
                    out
                }
            } else {
                // The lane's bits of the result, or of c where the mask leaves it out.
                let src = if masked {
                    t
                } else {
                    self.b
                        .build_right_shift(c32, i32t.const_int((lane * bits) as u64, false), false, "cl")?
                };
                let field = self
                    .b
                    .build_and(src, i32t.const_int((1u64 << bits) - 1, false), "lane")?;
                let field = self
                    .b
                    .build_left_shift(field, i32t.const_int((lane * bits) as u64, false), "lane")?;
                self.b.build_or(out, field, "merge")?
            };
        }
        self.write(st, &whole(dn), out.into(), false, scope)
    }
}
