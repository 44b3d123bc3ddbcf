//! Registers, operands and addresses: reading and writing PTX values as LLVM values.

use super::*;

impl<'ctx> Lowerer<'ctx> {
    pub(super) fn reg_slot<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        n: &Name<'a>,
        scope: &Scope<'m, 'a>,
    ) -> R<(PointerValue<'ctx>, Type)> {
        match scope.lookup(n.text) {
            Some(Entry::Reg {
                ty, vector: None, id, ..
            }) => {
                if let Some(p) = st.regs.get(&id) {
                    return Ok((*p, ty));
                }
                let p = st.alloca_at.build_alloca(self.int(ty.bits()), n.text)?;
                st.regs.insert(id, p);
                Ok((p, ty))
            }
            Some(Entry::Reg { .. }) => Err(unsupported(n.span, "vector registers are not supported yet")),
            _ => Err(unsupported(n.span, format!("`{}` is not a register", n.text))),
        }
    }

    /// Reads a register as a value of type `want` (size-adapted, bit-cast for floats).
    pub(super) fn reg_load<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        n: &Name<'a>,
        want: Type,
        scope: &Scope<'m, 'a>,
    ) -> R<BasicValueEnum<'ctx>> {
        let (slot, ty) = self.reg_slot(st, n, scope)?;
        let raw = self.b.build_load(self.int(ty.bits()), slot, n.text)?.into_int_value();
        self.from_bits(raw, want, ty.is_signed())
    }

    /// Truncates or extends an integer to `bits` (sign-extending when `signed`).
    pub(super) fn resize(&self, i: IntValue<'ctx>, bits: u32, signed: bool) -> R<IntValue<'ctx>> {
        let have = i.get_type().get_bit_width();
        Ok(match have.cmp(&bits) {
            std::cmp::Ordering::Greater => self.b.build_int_truncate(i, self.int(bits), "tr")?,
            std::cmp::Ordering::Less if signed => self.b.build_int_s_extend(i, self.int(bits), "sx")?,
            std::cmp::Ordering::Less => self.b.build_int_z_extend(i, self.int(bits), "zx")?,
            std::cmp::Ordering::Equal => i,
        })
    }

    /// Converts raw register bits to a value of type `want`.
    pub(super) fn from_bits(&self, raw: IntValue<'ctx>, want: Type, signed: bool) -> R<BasicValueEnum<'ctx>> {
        let v = self.resize(raw, want.bits(), signed)?;
        Ok(match want {
            Type::F32 | Type::F64 => self.b.build_bit_cast(v, self.value_ty(want), "f")?,
            _ => v.into(),
        })
    }

    /// Converts a value to `bits` wide register storage; `signed` picks sign extension when widening.
    pub(super) fn to_bits(&self, v: BasicValueEnum<'ctx>, bits: u32, signed: bool) -> R<IntValue<'ctx>> {
        let i = match v {
            BasicValueEnum::FloatValue(f) => {
                let w = f.get_type().get_bit_width();
                self.b.build_bit_cast(f, self.int(w), "b")?.into_int_value()
            }
            BasicValueEnum::IntValue(i) => i,
            other => {
                return Err(unsupported(
                    Span::default(),
                    format!("internal error: unexpected value {other:?}"),
                ))
            }
        };
        self.resize(i, bits, signed)
    }

    pub(super) fn write<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        op: &Operand<'a>,
        v: BasicValueEnum<'ctx>,
        signed: bool,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        match op {
            Operand::Sym { name, .. } => {
                let (slot, ty) = self.reg_slot(st, name, scope)?;
                let bits = self.to_bits(v, ty.bits(), signed)?;
                self.b.build_store(slot, bits)?;
                Ok(())
            }
            Operand::Sink(_) => Ok(()),
            other => Err(unsupported(
                other.span(),
                "this destination operand is not supported yet",
            )),
        }
    }

    pub(super) fn read<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        op: &Operand<'a>,
        want: Type,
        scope: &Scope<'m, 'a>,
    ) -> R<BasicValueEnum<'ctx>> {
        match op {
            Operand::Sym { name, component } => {
                if let Some(c) = component {
                    let v = self.special(st, name, c)?;
                    return self.from_bits(v, want, false);
                }
                if self.flavour == Flavour::Nvvm && scope.lookup(name.text).is_none() {
                    if let Some(v) = self.nvvm_scalar_sreg(name)? {
                        return self.from_bits(v, want, false);
                    }
                }
                match scope.lookup(name.text) {
                    Some(Entry::Reg { .. }) => self.reg_load(st, name, want, scope),
                    Some(Entry::Func(_)) if self.flavour == Flavour::Nvvm => {
                        let f = self.funcs[name.text].as_global_value().as_pointer_value();
                        let a = self.b.build_ptr_to_int(f, self.addr_ty(), "fn")?;
                        self.from_bits(a, want, false)
                    }
                    Some(Entry::Var(_)) | None => {
                        let a = self.var_address(st, name, scope)?;
                        self.from_bits(a, want, false)
                    }
                    Some(Entry::Func(_)) => Err(unsupported(name.span, "function addresses are not supported yet")),
                }
            }
            Operand::Imm(imm, span) => self.imm(*imm, want, *span),
            Operand::Not(x, s) => match self.read(st, x, want, scope)? {
                BasicValueEnum::IntValue(v) => Ok(self.b.build_not(v, "not")?.into()),
                _ => Err(unsupported(*s, "`!` applies to predicates only")),
            },
            Operand::Neg(x, _) => {
                let v = self.read(st, x, want, scope)?;
                Ok(match v {
                    BasicValueEnum::FloatValue(f) => self.b.build_float_neg(f, "neg")?.into(),
                    other => self.b.build_int_neg(other.into_int_value(), "neg")?.into(),
                })
            }
            other => Err(unsupported(other.span(), "this operand form is not supported yet")),
        }
    }

    pub(super) fn imm(&self, imm: Imm, want: Type, span: Span) -> R<BasicValueEnum<'ctx>> {
        let f32t = self.ctx.f32_type();
        let f64t = self.ctx.f64_type();
        Ok(match (imm, want) {
            (Imm::Int(i), Type::F32) => f32t.const_float(i as f64).into(),
            (Imm::Int(i), Type::F64) => f64t.const_float(i as f64).into(),
            (Imm::Int(i), t) => self.int(t.bits()).const_int(i as u64, false).into(),
            (Imm::F32(b), Type::F32) => f32t.const_float(f32::from_bits(b) as f64).into(),
            (Imm::F32(b), Type::F64) => f64t.const_float(f32::from_bits(b) as f64).into(),
            (Imm::F64(b), Type::F32) => f32t.const_float(f64::from_bits(b) as f32 as f64).into(),
            (Imm::F64(b), Type::F64) => f64t.const_float(f64::from_bits(b)).into(),
            (Imm::F32(b), t) if t.bits() == 32 => self.i32().const_int(b as u64, false).into(),
            (Imm::F64(b), t) if t.bits() == 64 => self.i64().const_int(b, false).into(),
            _ => {
                return Err(unsupported(
                    span,
                    format!("a float literal cannot be used as `{}`", want.name()),
                ))
            }
        })
    }

    pub(super) fn special<'a>(&mut self, st: &Fn<'ctx, '_, 'a>, n: &Name<'a>, c: &Name<'a>) -> R<IntValue<'ctx>> {
        let dim = match c.text {
            ".x" => 0,
            ".y" => 1,
            ".z" => 2,
            _ => return Err(unsupported(c.span, format!("component `{}` is not supported", c.text))),
        };
        let field = match n.text {
            "%tid" => 2,
            "%ntid" => 3,
            "%ctaid" => 4,
            "%nctaid" => 5,
            _ => {
                return Err(unsupported(
                    n.span,
                    format!("special register `{}` is not supported yet", n.text),
                ))
            }
        };
        match self.flavour {
            Flavour::Host => {
                let env_ty = self.env_ty();
                let env = st.env.expect("host functions take an env");
                let p = self.b.build_struct_gep(env_ty, env, field, "sreg")?;
                let p = unsafe {
                    self.b.build_in_bounds_gep(
                        self.i32().array_type(3),
                        p,
                        &[self.i32().const_zero(), self.i32().const_int(dim, false)],
                        "d",
                    )?
                };
                Ok(self.b.build_load(self.i32(), p, n.text)?.into_int_value())
            }
            Flavour::Nvvm => {
                let name = format!("llvm.nvvm.read.ptx.sreg.{}.{}", &n.text[1..], &c.text[1..]);
                let f = self.intrinsic(&name, &[])?;
                Ok(self
                    .b
                    .build_call(f, &[], "sreg")?
                    .try_as_basic_value()
                    .basic()
                    .expect("sreg value")
                    .into_int_value())
            }
        }
    }

    pub(super) fn intrinsic(&self, name: &str, tys: &[BasicTypeEnum<'ctx>]) -> R<FunctionValue<'ctx>> {
        inkwell::intrinsics::Intrinsic::find(name)
            .and_then(|i| i.get_declaration(&self.module, tys))
            .ok_or_else(|| unsupported(Span::default(), format!("LLVM intrinsic `{name}` is missing")))
    }

    pub(super) fn call_intrinsic(
        &self,
        name: &str,
        tys: &[BasicTypeEnum<'ctx>],
        args: &[BasicValueEnum<'ctx>],
    ) -> R<BasicValueEnum<'ctx>> {
        let f = self.intrinsic(name, tys)?;
        let args: Vec<BasicMetadataValueEnum> = args.iter().map(|a| (*a).into()).collect();
        Ok(self
            .b
            .build_call(f, &args, "i")?
            .try_as_basic_value()
            .basic()
            .expect("intrinsic value"))
    }

    pub(super) fn call_intrinsic_void(&self, name: &str, args: &[BasicValueEnum<'ctx>]) -> R<()> {
        let f = self.intrinsic(name, &[])?;
        let args: Vec<BasicMetadataValueEnum> = args.iter().map(|a| (*a).into()).collect();
        self.b.build_call(f, &args, "")?;
        Ok(())
    }

    /// The address of a variable in its own state space, as an integer of the module's address size
    /// (shared addresses are offsets into the CTA's window on the host).
    pub(super) fn var_address<'m, 'a>(
        &mut self,
        st: &Fn<'ctx, 'm, 'a>,
        n: &Name<'a>,
        scope: &Scope<'m, 'a>,
    ) -> R<IntValue<'ctx>> {
        let at = self.addr_ty();
        if let Some(off) = self.shared_offsets.get(n.text) {
            return Ok(at.const_int(*off, false));
        }
        if let Some(ParamHome::Buffer(off)) = st.params.get(n.text) {
            return Ok(at.const_int(*off, false));
        }
        // A kernel parameter's address in the nvvm flavour is that of its local copy, where `ld.param`
        // through the address reads it.
        if let (Flavour::Nvvm, Some(ParamHome::Slot(p))) = (self.flavour, st.params.get(n.text)) {
            return Ok(self.b.build_ptr_to_int(*p, at, "addr")?);
        }
        if let Some(g) = self.globals.get(n.text) {
            return Ok(self.b.build_ptr_to_int(g.as_pointer_value(), at, "addr")?);
        }
        if let Some(Entry::Var(v)) = scope.lookup(n.text) {
            if let Some(p) = st.locals.get(&(v as *const _)) {
                return Ok(self.b.build_ptr_to_int(*p, at, "addr")?);
            }
        }
        Err(unsupported(
            n.span,
            format!("cannot take the address of `{}` yet", n.text),
        ))
    }

    /// A pointer for `[addr]` in state space `space`.
    pub(super) fn address<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        a: &ast::Address<'a>,
        space: Space,
        scope: &Scope<'m, 'a>,
    ) -> R<PointerValue<'ctx>> {
        let i8t = self.ctx.i8_type();
        let p = self.ptr(self.llvm_space(space));
        let off = self.i64().const_int(a.offset as u64, true);
        // Direct variable references keep their pointer so LLVM sees the object.
        if let Some(base) = &a.base {
            let direct = match scope.lookup(base.text) {
                Some(Entry::Var(v)) => st
                    .locals
                    .get(&(v as *const _))
                    .copied()
                    .or_else(|| self.globals.get(base.text).map(|g| g.as_pointer_value())),
                None => match st.params.get(base.text) {
                    Some(ParamHome::Slot(s)) => Some(*s),
                    _ => self.globals.get(base.text).map(|g| g.as_pointer_value()),
                },
                _ => None,
            }
            .or_else(|| match st.params.get(base.text) {
                Some(ParamHome::Slot(s)) => Some(*s),
                _ => None,
            });
            if let Some(ptr) = direct {
                return Ok(unsafe { self.b.build_in_bounds_gep(i8t, ptr, &[off], "p")? });
            }
        }
        let base_int = match &a.base {
            None => self.i64().const_zero(),
            Some(n) => match scope.lookup(n.text) {
                Some(Entry::Reg { ty, .. }) => {
                    let v = self
                        .reg_load(st, n, if ty.bits() == 32 { Type::U32 } else { Type::U64 }, scope)?
                        .into_int_value();
                    self.b.build_int_z_extend_or_bit_cast(v, self.i64(), "a")?
                }
                _ => {
                    let v = self.var_address(st, n, scope)?;
                    self.b.build_int_z_extend_or_bit_cast(v, self.i64(), "a")?
                }
            },
        };
        let addr = self.b.build_int_add(base_int, off, "addr")?;
        match (self.flavour, space) {
            (Flavour::Host, Space::Shared) | (Flavour::Host, Space::Param) => {
                let env_ty = self.env_ty();
                let env = st.env.expect("env");
                let f = if space == Space::Shared { 1 } else { 0 };
                if space == Space::Param && !st.is_kernel {
                    return Err(unsupported(
                        a.span,
                        "`ld.param` through a register address in a device function is not supported yet",
                    ));
                }
                let bp = self.b.build_struct_gep(env_ty, env, f, "win")?;
                let base = self.b.build_load(self.ptr(0), bp, "base")?.into_pointer_value();
                Ok(unsafe { self.b.build_in_bounds_gep(i8t, base, &[addr], "p")? })
            }
            // inttoptr, not `null + address`: LLVM gives a GEP on null no provenance, so accesses
            // through it are undefined even under "null-pointer-is-valid" (it turned stores into poison).
            _ => Ok(self.b.build_int_to_ptr(addr, p, "p")?),
        }
    }
}
