//! The instruction dispatch: which handler lowers a decoded instruction, and which forms the native
//! NVPTX lowering covers.

use super::*;

impl<'ctx> Lowerer<'ctx> {
    /// Whether the lowering implements this decoded form itself: every form of an opcode's primary
    /// ISA entry; vector moves; and on the host, extension entries that only add cache and eviction
    /// hints, 128-bit moves, `bar.red`, atomics on more types, every fence (proxy fences too: the
    /// host has one proxy), every cache policy, `lop3` with a predicate result, `cvta` of
    /// `.shared::cluster` (a cluster is one CTA), and the sub-instructions with handlers of their own. NVPTX gets no others natively: LLVM aborts on some (a 16-bit cmpxchg, say), so
    /// they go out as inline PTX.
    pub(super) fn native(&self, d: &Decoded) -> bool {
        if d.is_primary() || (d.spec.name == "mov" && d.get(G::Vec).is_some()) {
            return true;
        }
        self.flavour == Flavour::Host
            && match d.spec.name {
                "ld" | "st" | "ldu" | "mov" | "bfe" | "atom" | "red" | "prefetch" => d.spec.sub.is_empty(),
                "createpolicy" => true,
                "tensormap" => true,
                "bar" | "barrier" => {
                    (d.get(G::Sync) == Some(".red") && d.spec.sub.is_empty()) || d.spec.sub == [".cluster"]
                }
                "cp" | "mbarrier" | "stmatrix" | "movmatrix" | "wmma" | "wgmma" | "fence" | "membar" | "lop3"
                | "cvta" => true,
                _ => false,
            }
    }

    pub(super) fn inst<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        self.cluster_access = self.maps_cluster && d.has(".shared::cluster");
        if self.try_builtin(st, i, d, scope)? {
            return Ok(());
        }
        if self.flavour == Flavour::Host && d.get(G::Type) == Some(".f32x2") {
            return self.f32x2(st, i, d, scope);
        }
        if self.flavour == Flavour::Host && matches!(d.spec.name, "st" | "red") && d.spec.sub == [".async"] {
            return self.async_store(st, i, d, scope);
        }
        // The inline lowering implements the forms of each opcode's primary ISA-table entry; the other
        // entries (sub-instructions such as st.async, new modifiers) are recognised, not lowered,
        // unless a builtin took them above.
        if !self.native(d) {
            let mods: String = i.mods.iter().map(|m| m.text).collect();
            return Err(unsupported(
                i.span,
                format!("`{}{mods}` is not supported yet", i.opcode.text),
            ));
        }
        let ops = &i.operands;
        let name = d.spec.name;
        let t = d.ty();
        let need_ty = || t.ok_or_else(|| unsupported(i.span, "missing type"));
        match name {
            "mov" if d.get(G::Vec).is_some() => {
                // mov.v2/.v4: element by element between vector registers and brace lists.
                let t = need_ty()?;
                let (dst, src) = (
                    self.vector_elements(&ops[0], scope),
                    self.vector_elements(&ops[1], scope),
                );
                // Read every source before writing, so `mov.v2 {a, b}, {b, a}` swaps.
                let vals = src.iter().map(|o| self.read(st, o, t, scope)).collect::<R<Vec<_>>>()?;
                for (o, v) in dst.iter().zip(vals) {
                    self.write(st, o, v, t.is_signed(), scope)?;
                }
                Ok(())
            }
            "mov" => {
                let t = need_ty()?;
                match (&ops[0], &ops[1]) {
                    // Pack `mov.b64 %rd, {%r1, %r2}` and unpack `mov.b64 {%r1, %r2}, %rd`: the first
                    // element is the lowest part.
                    (dst, Operand::Vector(parts, _)) => {
                        let n = parts.len() as u32;
                        let (w, part_t) = (t.bits(), bits_type(t.bits() / n.max(1)));
                        let wt = self.int(w);
                        let mut acc = wt.const_zero();
                        for (k, p) in parts.iter().enumerate() {
                            let v = self.read(st, p, part_t, scope)?.into_int_value();
                            let v = self.b.build_int_z_extend(v, wt, "part")?;
                            let v =
                                self.b
                                    .build_left_shift(v, wt.const_int(k as u64 * (w / n) as u64, false), "part")?;
                            acc = self.b.build_or(acc, v, "pack")?;
                        }
                        self.write(st, dst, acc.into(), false, scope)
                    }
                    (Operand::Vector(parts, _), src) => {
                        let n = parts.len() as u32;
                        let w = t.bits();
                        let wt = self.int(w);
                        let whole = self.read(st, src, bits_type(w), scope)?.into_int_value();
                        for (k, p) in parts.iter().enumerate() {
                            let v = self.b.build_right_shift(
                                whole,
                                wt.const_int(k as u64 * (w / n) as u64, false),
                                false,
                                "part",
                            )?;
                            let v = self.b.build_int_truncate(v, self.int(w / n), "part")?;
                            self.write(st, p, v.into(), false, scope)?;
                        }
                        Ok(())
                    }
                    (dst, src) => {
                        let v = self.read(st, src, t, scope)?;
                        self.write(st, dst, v, false, scope)
                    }
                }
            }
            "popc" | "clz" | "brev" => {
                let t = need_ty()?;
                let a = self.read(st, &ops[1], t, scope)?;
                let ty = self.value_ty(t);
                let v = match name {
                    "popc" => self.call_intrinsic("llvm.ctpop", &[ty], &[a])?,
                    "clz" => self.call_intrinsic("llvm.ctlz", &[ty], &[a, self.ctx.bool_type().const_zero().into()])?,
                    _ => self.call_intrinsic("llvm.bitreverse", &[ty], &[a])?,
                };
                self.write(st, &ops[0], v, false, scope)
            }
            "sqrt" | "rcp" | "rsqrt" | "sin" | "cos" | "lg2" | "ex2" => self.float_unary(st, i, d, scope),
            "shf" | "lop3" | "bfe" | "bfi" => self.bit_field(st, i, d, scope),
            "membar" | "fence" => {
                if self.checked && !d.has(".proxy") {
                    // racecheck's release and acquire patterns ([`crate::builtin::ACCESS_FENCE`]).
                    self.note_site(st, 0, crate::builtin::ACCESS_FENCE)?;
                }
                // Every PTX fence is at least as strong as the host needs; seq_cst covers them all.
                self.b
                    .build_fence(inkwell::AtomicOrdering::SequentiallyConsistent, false, "")?;
                Ok(())
            }
            "copysign" => {
                let t = need_ty()?;
                let a = self.read(st, &ops[1], t, scope)?;
                let b = self.read(st, &ops[2], t, scope)?;
                // PTX puts the sign source first: d = |b| with a's sign.
                let v = self.call_intrinsic("llvm.copysign", &[self.value_ty(t)], &[b, a])?;
                self.write(st, &ops[0], v, false, scope)
            }
            "add" | "sub" | "mad" if d.has(".cc") => self.carry_arith(st, i, d, scope),
            "addc" | "subc" | "madc" => self.carry_arith(st, i, d, scope),
            "add" | "sub" | "mul" | "div" | "rem" | "min" | "max" | "and" | "or" | "xor" | "shl" | "shr" => {
                let t = need_ty()?;
                let mode = d.get(G::Mode);
                let src_t = t;
                let a = self.read(st, &ops[1], src_t, scope)?;
                let bt = if matches!(name, "shl" | "shr") {
                    Type::U32
                } else {
                    src_t
                };
                let b = self.read(st, &ops[2], bt, scope)?;
                let v = self.binary(name, d, t, mode, a, b, i.span)?;
                self.write(st, &ops[0], v, t.is_signed(), scope)
            }
            "mad" | "fma" => {
                let t = need_ty()?;
                let a = self.read(st, &ops[1], t, scope)?;
                let b = self.read(st, &ops[2], t, scope)?;
                if t.is_float() {
                    self.rounding_supported(d, i.span)?;
                    if d.has(".sat") {
                        // The host takes `.sat` through a builtin; NVPTX gets the instruction as inline PTX.
                        return Err(unsupported(i.span, "`.sat` on floats is not supported yet"));
                    }
                    let c = self.read(st, &ops[3], t, scope)?;
                    let v = self.float_fma(d, t, a, b, c)?;
                    return self.write(st, &ops[0], v, false, scope);
                }
                let mode = d.get(G::Mode);
                let ct = if mode == Some(".wide") { widen(t) } else { t };
                let c = self.read(st, &ops[3], ct, scope)?;
                let p = self.binary("mul", d, t, mode, a, b, i.span)?.into_int_value();
                if d.has(".sat") {
                    return Err(unsupported(i.span, "`mad.sat` is not supported yet"));
                }
                let v = self.b.build_int_add(p, c.into_int_value(), "mad")?;
                self.write(st, &ops[0], v.into(), t.is_signed(), scope)
            }
            "neg" | "abs" | "not" => {
                let t = need_ty()?;
                let a = self.read(st, &ops[1], t, scope)?;
                let a = self.ftz(d, a)?;
                let v: BasicValueEnum = match (name, a) {
                    ("neg", BasicValueEnum::FloatValue(f)) => self.b.build_float_neg(f, "neg")?.into(),
                    ("abs", BasicValueEnum::FloatValue(_)) => {
                        self.call_intrinsic("llvm.fabs", &[self.value_ty(t)], &[a])?
                    }
                    ("neg", BasicValueEnum::IntValue(x)) => self.b.build_int_neg(x, "neg")?.into(),
                    ("abs", BasicValueEnum::IntValue(_)) => self.call_intrinsic(
                        "llvm.abs",
                        &[self.value_ty(t)],
                        &[a, self.ctx.bool_type().const_zero().into()],
                    )?,
                    ("not", BasicValueEnum::IntValue(x)) => self.b.build_not(x, "not")?.into(),
                    _ => {
                        return Err(unsupported(
                            i.span,
                            format!("`{name}` of this type is not supported yet"),
                        ))
                    }
                };
                let v = match (v, a) {
                    (BasicValueEnum::FloatValue(_), BasicValueEnum::FloatValue(x)) => self.sign_op_nan(x, v)?,
                    _ => v,
                };
                self.write(st, &ops[0], v, t.is_signed(), scope)
            }
            "setp" | "set" => self.setp(st, i, d, scope),
            "griddepcontrol" => match self.flavour {
                // Launches complete in order on the CPU, so there is never a prerequisite grid to wait for.
                Flavour::Host => Ok(()),
                // LLVM aborts if it cannot select the intrinsic for the requested target, and lowering
                // does not know that target yet; refuse rather than risk it.
                Flavour::Nvvm => Err(unsupported(
                    i.span,
                    "`griddepcontrol` is not supported for NVPTX output yet",
                )),
            },
            "prmt" => {
                let t = need_ty()?;
                if d.get(G::Dir).is_some() {
                    return Err(unsupported(
                        i.span,
                        "`prmt` modes other than the default are not supported yet",
                    ));
                }
                let a = self.read(st, &ops[1], t, scope)?.into_int_value();
                let b = self.read(st, &ops[2], t, scope)?.into_int_value();
                let c = self.read(st, &ops[3], t, scope)?.into_int_value();
                // Result byte k is byte (c >> 4k) & 7 of b:a, or that byte's sign replicated when bit 3 is set.
                let i64t = self.i64();
                let lo = self.b.build_int_z_extend(a, i64t, "lo")?;
                let hi = self.b.build_left_shift(
                    self.b.build_int_z_extend(b, i64t, "hi")?,
                    i64t.const_int(32, false),
                    "hi",
                )?;
                let x = self.b.build_or(lo, hi, "x")?;
                let c64 = self.b.build_int_z_extend(c, i64t, "c")?;
                let mut acc = i64t.const_zero();
                for k in 0..4u64 {
                    let sel = self
                        .b
                        .build_right_shift(c64, i64t.const_int(4 * k, false), false, "sel")?;
                    let idx = self.b.build_and(sel, i64t.const_int(7, false), "idx")?;
                    let sh = self.b.build_int_mul(idx, i64t.const_int(8, false), "sh")?;
                    let byte = self.b.build_and(
                        self.b.build_right_shift(x, sh, false, "b")?,
                        i64t.const_int(0xff, false),
                        "byte",
                    )?;
                    let msb = self.b.build_int_compare(
                        IntPredicate::NE,
                        self.b.build_and(byte, i64t.const_int(0x80, false), "m")?,
                        i64t.const_zero(),
                        "msb",
                    )?;
                    let rep = self
                        .b
                        .build_select(msb, i64t.const_int(0xff, false), i64t.const_zero(), "rep")?
                        .into_int_value();
                    let signed = self.b.build_int_compare(
                        IntPredicate::NE,
                        self.b.build_and(sel, i64t.const_int(8, false), "s")?,
                        i64t.const_zero(),
                        "signed",
                    )?;
                    let byte = self.b.build_select(signed, rep, byte, "byte")?.into_int_value();
                    acc = self.b.build_or(
                        acc,
                        self.b.build_left_shift(byte, i64t.const_int(8 * k, false), "pos")?,
                        "prmt",
                    )?;
                }
                let v = self.b.build_int_truncate(acc, self.i32(), "prmt")?;
                self.write(st, &ops[0], v.into(), false, scope)
            }
            "selp" => {
                let t = need_ty()?;
                let a = self.read(st, &ops[1], t, scope)?;
                let b = self.read(st, &ops[2], t, scope)?;
                let c = self.read(st, &ops[3], Type::Pred, scope)?.into_int_value();
                let v = self.b.build_select(c, a, b, "selp")?;
                self.write(st, &ops[0], v, false, scope)
            }
            "cvt" => self.cvt(st, i, d, scope),
            "cvta" => {
                let t = need_ty()?;
                let space = d.get(G::Space).and_then(Space::from_dot).unwrap_or(Space::Generic);
                let a = self.read(st, &ops[1], t, scope)?.into_int_value();
                let to = d.has(".to");
                let v = match (self.flavour, space) {
                    (Flavour::Host, Space::Shared) => {
                        let bp = self.env_ptr(st.env.expect("env"), EnvField::Shared)?;
                        let base = self.b.build_load(self.ptr(0), bp, "base")?.into_pointer_value();
                        let base = self.b.build_ptr_to_int(base, self.int(t.bits()), "b")?;
                        if to {
                            self.b.build_int_sub(a, base, "cvta")?
                        } else {
                            self.b.build_int_add(a, base, "cvta")?
                        }
                    }
                    (Flavour::Host, Space::Param) if st.is_kernel => {
                        // Kernel parameters live in the launch's argument buffer.
                        let bp = self.env_ptr(st.env.expect("env"), EnvField::Params)?;
                        let base = self.b.build_load(self.ptr(0), bp, "base")?.into_pointer_value();
                        let base = self.b.build_ptr_to_int(base, self.int(t.bits()), "b")?;
                        if to {
                            self.b.build_int_sub(a, base, "cvta")?
                        } else {
                            self.b.build_int_add(a, base, "cvta")?
                        }
                    }
                    (Flavour::Host, Space::Param) => {
                        return Err(unsupported(
                            i.span,
                            "`cvta.param` in a device function is not supported yet",
                        ))
                    }
                    (Flavour::Host, _) => a,
                    (Flavour::Nvvm, s) => {
                        let from_sp = if to { 0 } else { self.llvm_space(s) };
                        let to_sp = if to { self.llvm_space(s) } else { 0 };
                        let p = self.b.build_int_to_ptr(a, self.ptr(from_sp), "p")?;
                        let c = self.b.build_address_space_cast(p, self.ptr(to_sp), "c")?;
                        self.b.build_ptr_to_int(c, self.int(t.bits()), "cvta")?
                    }
                };
                self.write(st, &ops[0], v.into(), false, scope)
            }
            "ld" | "st" | "ldu" => self.memory(st, i, d, scope),
            // Cache hints, register budgets, profiler events and debugger stops: no effect on any value.
            "prefetch" | "prefetchu" | "applypriority" | "discard" | "setmaxnreg" | "pmevent" | "brkpt" => Ok(()),
            "getctarank" | "mapa" if self.flavour == Flavour::Host => self.cluster_map(st, i, d, scope),
            "getctarank" | "mapa" => Err(unsupported(i.span, format!("`{name}` is not supported for NVPTX yet"))),
            // An opaque L2 policy; the loads that take one ignore it.
            "createpolicy" => self.write(st, &ops[0], self.i64().const_zero().into(), false, scope),
            "isspacep" => self.isspacep(st, i, d, scope),
            "alloca" | "stacksave" | "stackrestore" => self.stack(st, i, d, scope),
            "cp" => self.async_copy(st, i, d, scope),
            "tensormap" if d.spec.sub == [".cp_fenceproxy"] => self.tensormap_copy(st, i, scope),
            "tensormap" => self.tensormap_replace(st, i, d, scope),
            "mbarrier" => self.mbarrier(st, i, d, scope),
            "slct" | "cnot" => self.select_not(st, i, d, scope),
            "brx" => self.branch_indexed(st, i, scope),
            "trap" => {
                if self.flavour == Flavour::Nvvm {
                    return self.call_intrinsic_void("llvm.trap", &[]);
                }
                let i64t = self.i64();
                let site = i64t.const_int(i.span.start as u64, false);
                self.mem_call(
                    st,
                    crate::builtin::Mem::Trap,
                    i64t.const_zero(),
                    site,
                    i64t.const_zero(),
                )?;
                self.emit_return(st)
            }
            "atom" | "red" => self.atomic(st, i, d, scope),
            "bra" => {
                let target = self.label(st, i)?;
                self.b.build_unconditional_branch(target)?;
                Ok(())
            }
            "ret" => self.emit_return(st),
            "call" => {
                self.call(st, i, scope)?;
                self.stop_if_faulted(st, None)
            }
            "exit" => self.emit_return(st),
            "bar" | "barrier" => self.barrier(st, i, d, scope),
            "activemask" | "redux" | "match" | "elect" | "nanosleep" => self.warp_other(st, i, d, scope),
            "mma" | "ldmatrix" | "stmatrix" | "movmatrix" => self.warp_matrix(st, i, d, scope),
            "wmma" => self.wmma(st, i, d, scope),
            "wgmma" => self.wgmma(st, i, d, scope),
            "tex" | "tld4" | "txq" | "suld" | "sust" | "sured" | "suq" => self.texture(st, i, d, scope),
            "shfl" | "vote" => self.warp_collective(st, i, d, scope),
            _ if isa::simd_op(name).is_some() => self.simd_video(st, i, d, scope),
            other => Err(unsupported(i.opcode.span, format!("`{other}` is not supported yet"))),
        }
    }
}
