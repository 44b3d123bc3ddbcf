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
            Some(Entry::Reg {
                ty, vector: Some(len), ..
            }) => {
                // A whole vector register read or written as one value (`mov.b64 %rd, %v2`): its
                // elements are laid out like a packed integer, the first lowest.
                let (slot, _, _) = self.vector_slot(
                    st,
                    n,
                    &Name {
                        text: ".x",
                        span: n.span,
                    },
                    scope,
                )?;
                Ok((slot, super::bits_type(ty.bits() * len)))
            }
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
        self.of_bits(raw, want, ty.is_signed())
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
    pub(super) fn of_bits(&self, raw: IntValue<'ctx>, want: Type, signed: bool) -> R<BasicValueEnum<'ctx>> {
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
            Operand::Sym {
                name,
                component: Some(c),
            } => {
                let (slot, ty, k) = self.vector_slot(st, name, c, scope)?;
                let bits = self.to_bits(v, ty.bits(), signed)?;
                let p = unsafe {
                    self.b
                        .build_in_bounds_gep(self.int(ty.bits()), slot, &[self.i32().const_int(k, false)], "el")?
                };
                self.b.build_store(p, bits)?;
                Ok(())
            }
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
                    if let Some(Entry::Reg { vector: Some(_), .. }) = scope.lookup(name.text) {
                        return self.vector_element(st, name, c, want, scope);
                    }
                    let v = self.special(st, name, c)?;
                    return self.of_bits(v, want, false);
                }
                if scope.lookup(name.text).is_none() {
                    let v = match self.flavour {
                        Flavour::Nvvm => self.nvvm_scalar_sreg(name)?,
                        Flavour::Host if name.text == "WARP_SZ" => Some(self.i32().const_int(32, false)),
                        Flavour::Host if ptx_front::scope::special_register(name.text).is_some() => {
                            Some(self.special_scalar(st, name)?)
                        }
                        Flavour::Host => None,
                    };
                    if let Some(v) = v {
                        return self.of_bits(v, want, false);
                    }
                }
                match scope.lookup(name.text) {
                    Some(Entry::Reg { .. }) => self.reg_load(st, name, want, scope),
                    // A texture or surface reference stands for the handle it holds (module variables
                    // only: `declare.rs` refuses the others).
                    Some(Entry::Var(v)) if matches!(v.ty, Type::Texref | Type::Surfref) && v.space == Space::Global => {
                        let a = self.var_address(st, name, scope)?;
                        let p = self.b.build_int_to_ptr(a, self.ptr(0), "ref")?;
                        let h = self.b.build_load(self.i64(), p, "handle")?;
                        self.of_bits(h.into_int_value(), want, false)
                    }
                    Some(Entry::Var(_)) | None => {
                        let a = self.var_address(st, name, scope)?;
                        self.of_bits(a, want, false)
                    }
                    Some(Entry::Func(func)) => {
                        self.defined_somewhere(func, name)?;
                        let f = *self
                            .funcs
                            .get(name.text)
                            .ok_or_else(|| unsupported(name.span, "unknown function"))?;
                        let a =
                            self.b
                                .build_ptr_to_int(f.as_global_value().as_pointer_value(), self.addr_ty(), "fn")?;
                        self.of_bits(a, want, false)
                    }
                }
            }
            Operand::Imm(imm, span) => self.imm(*imm, want, *span),
            // `r + 4` as a value: the register's value plus the offset, wrapping in its width.
            Operand::Offset(n, off, s) if matches!(scope.lookup(n.text), Some(Entry::Reg { .. })) => {
                let v = self.read(
                    st,
                    &Operand::Sym {
                        name: *n,
                        component: None,
                    },
                    want,
                    scope,
                )?;
                let BasicValueEnum::IntValue(v) = v else {
                    return Err(unsupported(*s, "an offset applies to integer registers only"));
                };
                Ok(self
                    .b
                    .build_int_add(v, v.get_type().const_int(*off as u64, true), "off")?
                    .into())
            }
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

    /// A field of the host environment.
    pub(super) fn env_field(&mut self, st: &Fn<'ctx, '_, '_>, field: EnvField, ty: IntType<'ctx>) -> R<IntValue<'ctx>> {
        let p = self.env_ptr(st.env.expect("env"), field)?;
        Ok(self.b.build_load(ty, p, "envf")?.into_int_value())
    }

    /// `%tid.d`, `%ntid.d`, … on the host.
    pub(super) fn env_dim(&mut self, st: &Fn<'ctx, '_, '_>, field: EnvField, dim: u64) -> R<IntValue<'ctx>> {
        let p = self.env_dim_ptr(st.env.expect("env"), field, dim)?;
        Ok(self.b.build_load(self.i32(), p, "sreg")?.into_int_value())
    }

    /// Where dimension `dim` of an environment field of three dimensions (`tid`, `ntid`, …) is; the
    /// lane vectoriser recognises `tid` by this shape (`lanes::tid_dim`).
    pub(super) fn env_dim_ptr(&mut self, env: PointerValue<'ctx>, field: EnvField, dim: u64) -> R<PointerValue<'ctx>> {
        let i32t = self.i32();
        let p = self.env_ptr(env, field)?;
        Ok(unsafe {
            self.b.build_in_bounds_gep(
                i32t.array_type(3),
                p,
                &[i32t.const_zero(), i32t.const_int(dim, false)],
                "d",
            )?
        })
    }

    /// The thread's index within its CTA, x fastest.
    pub(super) fn linear_tid(&mut self, st: &Fn<'ctx, '_, '_>) -> R<IntValue<'ctx>> {
        let (tx, ty, tz) = (
            self.env_dim(st, EnvField::Tid, 0)?,
            self.env_dim(st, EnvField::Tid, 1)?,
            self.env_dim(st, EnvField::Tid, 2)?,
        );
        let (nx, ny) = (
            self.env_dim(st, EnvField::Ntid, 0)?,
            self.env_dim(st, EnvField::Ntid, 1)?,
        );
        let zy = self.b.build_int_add(self.b.build_int_mul(tz, ny, "z")?, ty, "zy")?;
        Ok(self.b.build_int_add(self.b.build_int_mul(zy, nx, "zyx")?, tx, "lin")?)
    }

    /// Scalar special registers (`%laneid`, `%lanemask_lt`, `%clock64`, …) on the host, where a CTA
    /// is its own cluster of one (NVPTX: `nvvm_scalar_sreg`).
    pub(super) fn special_scalar(&mut self, st: &Fn<'ctx, '_, '_>, n: &Name<'_>) -> R<IntValue<'ctx>> {
        let name = n.text;
        let sreg = ptx_front::scope::special_register(name).expect("special register");
        let (i32t, i64t) = (self.i32(), self.i64());
        let lane = |l: &mut Self| -> R<IntValue<'ctx>> {
            let lin = l.linear_tid(st)?;
            Ok(l.b.build_and(lin, i32t.const_int(31, false), "lane")?)
        };
        let one_shl = |l: &mut Self, by: IntValue<'ctx>| -> R<IntValue<'ctx>> {
            // Computed in 64 bits so a shift by 32 (for %lanemask_le of lane 31) is defined.
            let by = l.b.build_int_z_extend(by, i64t, "by")?;
            let v = l.b.build_left_shift(i64t.const_int(1, false), by, "bit")?;
            Ok(l.b.build_int_truncate(v, i32t, "bit")?)
        };
        let v = match name {
            "%laneid" => lane(self)?,
            "%warpid" => {
                let lin = self.linear_tid(st)?;
                self.b.build_right_shift(lin, i32t.const_int(5, false), false, "warp")?
            }
            "%nwarpid" => {
                let (x, y, z) = (
                    self.env_dim(st, EnvField::Ntid, 0)?,
                    self.env_dim(st, EnvField::Ntid, 1)?,
                    self.env_dim(st, EnvField::Ntid, 2)?,
                );
                let n = self.b.build_int_mul(self.b.build_int_mul(x, y, "n")?, z, "n")?;
                let n = self.b.build_int_add(n, i32t.const_int(31, false), "n")?;
                self.b.build_right_shift(n, i32t.const_int(5, false), false, "nwarp")?
            }
            "%lanemask_eq" | "%lanemask_lt" | "%lanemask_ge" => {
                let l = lane(self)?;
                let eq = one_shl(self, l)?;
                let lt = self.b.build_int_sub(eq, i32t.const_int(1, false), "lt")?;
                match name {
                    "%lanemask_eq" => eq,
                    "%lanemask_lt" => lt,
                    _ => self.b.build_not(lt, "ge")?,
                }
            }
            "%lanemask_le" | "%lanemask_gt" => {
                let l = lane(self)?;
                let l1 = self.b.build_int_add(l, i32t.const_int(1, false), "l1")?;
                let bit = one_shl(self, l1)?;
                let le = self.b.build_int_sub(bit, i32t.const_int(1, false), "le")?;
                if name == "%lanemask_le" {
                    le
                } else {
                    self.b.build_not(le, "gt")?
                }
            }
            "%smid" => self.env_field(st, EnvField::Smid, i32t)?,
            "%nsmid" => self.env_field(st, EnvField::Nsmid, i32t)?,
            "%gridid" => self.env_field(st, EnvField::Gridid, i64t)?,
            "%dynamic_smem_size" => self.env_field(st, EnvField::DynamicShared, i32t)?,
            "%total_smem_size" | "%aggr_smem_size" => {
                let dynamic = self.env_field(st, EnvField::DynamicShared, i32t)?;
                self.b
                    .build_int_add(dynamic, i32t.const_int(self.shared_size, false), "smem")?
            }
            "%clock" | "%clock_hi" | "%clock64" => {
                let c = self.call_intrinsic("llvm.readcyclecounter", &[], &[])?.into_int_value();
                match name {
                    "%clock64" => c,
                    "%clock" => self.b.build_int_truncate(c, i32t, "clock")?,
                    _ => {
                        let hi = self.b.build_right_shift(c, i64t.const_int(32, false), false, "hi")?;
                        self.b.build_int_truncate(hi, i32t, "clock_hi")?
                    }
                }
            }
            "%globaltimer" | "%globaltimer_lo" | "%globaltimer_hi" => {
                let f = self
                    .module
                    .get_function(crate::builtin::GLOBALTIMER)
                    .unwrap_or_else(|| {
                        self.module
                            .add_function(crate::builtin::GLOBALTIMER, i64t.fn_type(&[], false), None)
                    });
                let t = self
                    .b
                    .build_call(f, &[], "timer")?
                    .try_as_basic_value()
                    .basic()
                    .expect("timer value")
                    .into_int_value();
                match name {
                    "%globaltimer" => t,
                    "%globaltimer_lo" => self.b.build_int_truncate(t, i32t, "lo")?,
                    _ => {
                        let hi = self.b.build_right_shift(t, i64t.const_int(32, false), false, "hi")?;
                        self.b.build_int_truncate(hi, i32t, "hi")?
                    }
                }
            }
            // A cooperative launch's grid workspace, high half then low half (0 in other launches).
            "%envreg1" | "%envreg2" => {
                let ws = self.env_field(st, EnvField::GridWorkspace, i64t)?;
                let half = if name == "%envreg1" {
                    self.b
                        .build_right_shift(ws, i64t.const_int(32, false), false, "ws_hi")?
                } else {
                    ws
                };
                self.b.build_int_truncate(half, i32t, "envreg")?
            }
            "%cluster_nctarank" => self.cluster_rank(st, true)?,
            "%cluster_ctarank" => self.cluster_rank(st, false)?,
            "%is_explicit_cluster" => {
                let cluster = self.env_field(st, EnvField::Cluster, i32t)?;
                self.b
                    .build_int_compare(IntPredicate::NE, cluster, i32t.const_zero(), "explicit_cluster")?
            }
            // The other %envreg<N>, %pm<N>, reserved shared-memory offsets (none reserved),
            // %current_graph_exec (no graphs).
            _ => self.int(sreg.ty.bits()).const_zero(),
        };
        Ok(v)
    }

    /// One element (`.x`, `.y`, `.z`, `.w` or `.r`, `.g`, `.b`, `.a`) of a vector register.
    pub(super) fn vector_element<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        n: &Name<'a>,
        c: &Name<'a>,
        want: Type,
        scope: &Scope<'m, 'a>,
    ) -> R<BasicValueEnum<'ctx>> {
        let (slot, ty, k) = self.vector_slot(st, n, c, scope)?;
        let p = unsafe {
            self.b
                .build_in_bounds_gep(self.int(ty.bits()), slot, &[self.i32().const_int(k, false)], "el")?
        };
        let raw = self.b.build_load(self.int(ty.bits()), p, "el")?.into_int_value();
        self.of_bits(raw, want, ty.is_signed())
    }

    /// A vector register's storage (an array of its elements), its element type and the index `c` names.
    pub(super) fn vector_slot<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        n: &Name<'a>,
        c: &Name<'a>,
        scope: &Scope<'m, 'a>,
    ) -> R<(PointerValue<'ctx>, Type, u64)> {
        let Some(Entry::Reg {
            ty,
            vector: Some(len),
            id,
            ..
        }) = scope.lookup(n.text)
        else {
            return Err(unsupported(n.span, format!("`{}` is not a vector register", n.text)));
        };
        let k = match c.text {
            ".x" | ".r" => 0,
            ".y" | ".g" => 1,
            ".z" | ".b" => 2,
            ".w" | ".a" => 3,
            _ => return Err(unsupported(c.span, format!("`{}` is not a vector component", c.text))),
        };
        if k >= len as u64 {
            return Err(unsupported(c.span, format!("`{}` has only {len} elements", n.text)));
        }
        let slot = match st.regs.get(&id) {
            Some(p) => *p,
            None => {
                let p = st.alloca_at.build_alloca(self.int(ty.bits()).array_type(len), n.text)?;
                st.regs.insert(id, p);
                p
            }
        };
        Ok((slot, ty, k))
    }

    /// A whole vector register as the list of its elements, so `ld.v4.u32 v, [a]` and
    /// `mov.v2.u32 v, {a, b}` treat it like a brace list.
    /// The elements an operand stands for: a vector register's components, a brace list's members,
    /// or the operand alone.
    pub(super) fn vector_elements<'a>(&self, op: &Operand<'a>, scope: &Scope<'_, 'a>) -> Vec<Operand<'a>> {
        match (op, self.expand_vector(op, scope)) {
            (_, Some(p)) => p,
            (Operand::Vector(v, _), None) => v.clone(),
            (o, None) => vec![o.clone()],
        }
    }

    pub(super) fn expand_vector<'a>(&self, op: &Operand<'a>, scope: &Scope<'_, 'a>) -> Option<Vec<Operand<'a>>> {
        let Operand::Sym { name, component: None } = op else {
            return None;
        };
        let Some(Entry::Reg { vector: Some(len), .. }) = scope.lookup(name.text) else {
            return None;
        };
        Some(
            [".x", ".y", ".z", ".w"]
                .iter()
                .take(len as usize)
                .map(|c| Operand::Sym {
                    name: *name,
                    component: Some(Name {
                        text: c,
                        span: name.span,
                    }),
                })
                .collect(),
        )
    }

    pub(super) fn special<'a>(&mut self, st: &Fn<'ctx, '_, 'a>, n: &Name<'a>, c: &Name<'a>) -> R<IntValue<'ctx>> {
        let dim = match c.text {
            ".x" => 0,
            ".y" => 1,
            ".z" => 2,
            _ => return Err(unsupported(c.span, format!("component `{}` is not supported", c.text))),
        };
        if self.flavour == Flavour::Host {
            match n.text {
                "%clusterid" => return self.cluster_coordinate(st, dim, false),
                "%nclusterid" => {
                    let n = self.env_dim(st, EnvField::Nctaid, dim)?;
                    let shape = self.env_dim(st, EnvField::ClusterDim, dim)?;
                    return Ok(self.b.build_int_unsigned_div(n, shape, "nclusterid")?);
                }
                "%cluster_ctaid" => return self.cluster_coordinate(st, dim, true),
                "%cluster_nctaid" => return self.env_dim(st, EnvField::ClusterDim, dim),
                _ => {}
            }
        }
        let field = match n.text {
            "%tid" => EnvField::Tid,
            "%ntid" => EnvField::Ntid,
            "%ctaid" => EnvField::Ctaid,
            "%nctaid" => EnvField::Nctaid,
            _ => {
                return Err(unsupported(
                    n.span,
                    format!("special register `{}` is not supported yet", n.text),
                ))
            }
        };
        match self.flavour {
            Flavour::Host => {
                let env = st.env.expect("host functions take an env");
                let p = self.env_ptr(env, field)?;
                let p = unsafe {
                    self.b.build_in_bounds_gep(
                        self.i32().array_type(3),
                        p,
                        &[self.i32().const_zero(), self.i32().const_int(dim, false)],
                        "d",
                    )?
                };
                let v = self.b.build_load(self.i32(), p, n.text)?;
                if field == EnvField::Tid {
                    let kind = self.ctx.get_kind_id(crate::TID_METADATA);
                    let node = self.ctx.metadata_node(&[self.i32().const_int(dim, false).into()]);
                    v.as_instruction_value()
                        .expect("a load")
                        .set_metadata(node, kind)
                        .map_err(|e| unsupported(n.span, e.to_string()))?;
                }
                Ok(v.into_int_value())
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
            if let Some(&p) = st.locals.get(&(v as *const _)) {
                // On a GPU a `.local` variable's address is one in the local window (address space 5),
                // which `ld.local` takes and `cvta.local` makes generic; the alloca is generic.
                let p = match (self.flavour, v.space) {
                    (Flavour::Nvvm, Space::Local) => self.b.build_address_space_cast(p, self.ptr(5), "local")?,
                    _ => p,
                };
                return Ok(self.b.build_ptr_to_int(p, at, "addr")?);
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
        // A `.shared` variable named in a generic access (`ld.b32 r, [buf]`) means its generic address:
        // on the host, a place in the CTA's shared window.
        let space = match (&a.base, self.flavour, space) {
            (Some(n), Flavour::Host, Space::Generic)
                if self.shared_offsets.contains_key(n.text) && matches!(scope.lookup(n.text), Some(Entry::Var(_))) =>
            {
                Space::Shared
            }
            _ => space,
        };
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
        let addr = match &a.base {
            None => off,
            Some(n) => match scope.lookup(n.text) {
                // A 32-bit shared address is an offset into the CTA's window, and wraps modulo 2^32 with
                // its offset: nvcc strength-reduces indices into bases below the window (`%r - 140`,
                // then `[%r+68]`), which zero-extending put 4 GiB away. No window reaches 2 GiB, so
                // sign extension gives every such sum exactly, and keeps `base + offset` foldable into
                // an addressing mode (adding in 32 bits first cost sgemm's inner loop an instruction
                // per load). NVPTX keeps the plain form: the hardware wraps shared addresses itself.
                Some(Entry::Reg { ty, .. })
                    if ty.bits() == 32 && space == Space::Shared && self.flavour == Flavour::Host =>
                {
                    let v = self.reg_load(st, n, Type::U32, scope)?.into_int_value();
                    let v = self.b.build_int_s_extend(v, self.i64(), "a")?;
                    self.b.build_int_add(v, off, "addr")?
                }
                Some(Entry::Reg { ty, .. }) => {
                    let v = self
                        .reg_load(st, n, if ty.bits() == 32 { Type::U32 } else { Type::U64 }, scope)?
                        .into_int_value();
                    let v = self.b.build_int_z_extend_or_bit_cast(v, self.i64(), "a")?;
                    self.b.build_int_add(v, off, "addr")?
                }
                _ => {
                    let v = self.var_address(st, n, scope)?;
                    let v = self.b.build_int_z_extend_or_bit_cast(v, self.i64(), "a")?;
                    self.b.build_int_add(v, off, "addr")?
                }
            },
        };
        match (self.flavour, space) {
            (Flavour::Host, Space::Shared) | (Flavour::Host, Space::Param) => {
                let env = st.env.expect("env");
                let f = if space == Space::Shared {
                    EnvField::Shared
                } else {
                    EnvField::Params
                };
                if space == Space::Param && !st.is_kernel {
                    return Err(unsupported(
                        a.span,
                        "`ld.param` through a register address in a device function is not supported yet",
                    ));
                }
                if space == Space::Shared && self.cluster_access {
                    return self.cluster_pointer(st, addr);
                }
                let bp = self.env_ptr(env, f)?;
                let base = self.b.build_load(self.ptr(0), bp, "base")?.into_pointer_value();
                Ok(unsafe { self.b.build_in_bounds_gep(i8t, base, &[addr], "p")? })
            }
            // inttoptr, not `null + address`: LLVM gives a GEP on null no provenance, so accesses
            // through it are undefined even under "null-pointer-is-valid" (it turned stores into poison).
            _ => Ok(self.b.build_int_to_ptr(addr, p, "p")?),
        }
    }
}
