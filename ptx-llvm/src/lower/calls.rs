//! `call` of device functions: direct, or indirect through a register and a `.callprototype` (or a
//! `.calltargets` list); arguments and results in `.param` variables, registers or vector registers.

use super::*;

/// P0404 at a use of `name`, a function declared without a body that no module defines: the
/// lowering refuses it (on the host it would bind to the C library's namesake), and a whole-module
/// check at load reports it (`ptx_jit::check_whole`).
pub fn undefined_function(name: &Name<'_>) -> Diagnostic {
    Diagnostic::error(
        Code::P0404,
        name.span,
        format!("`{}` is used but no module defines it", name.text),
    )
    .label("declared, never defined")
    .help("link the module that defines it (cuLinkAddData, nvJitLink) before loading")
}

impl<'ctx> Lowerer<'ctx> {
    /// Refuses a function that has no body here and is not one of the device runtime's, before a
    /// call or its address: on the host such a name would bind to the C library's namesake (`abort`).
    pub(super) fn defined_somewhere(&self, f: &Function<'_>, name: &Name<'_>) -> R<()> {
        if f.body.is_some()
            || self.flavour != Flavour::Host
            || self.aliases.contains(name.text)
            || crate::builtin::DEVICE_FUNCTIONS.contains(&name.text)
        {
            return Ok(());
        }
        Err(Fail::Diag(Box::new(undefined_function(name))))
    }

    pub(super) fn call<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        // call (rets), f, (args) [, proto]; the result and argument lists are optional.
        let ops = i.operands.as_slice();
        let (rets, rest): (&[Operand], &[Operand]) = match ops {
            [Operand::List(r, _), rest @ ..] => (r, rest),
            rest => (&[], rest),
        };
        let (callee, args, proto) = match rest {
            [f, Operand::List(a, _), p] => (f, a.as_slice(), Some(p)),
            [f, Operand::List(a, _)] => (f, a.as_slice(), None),
            [f, p] => (f, &[][..], Some(p)),
            [f] => (f, &[][..], None),
            _ => return Err(unsupported(i.span, "this form of `call` is not supported yet")),
        };
        let Operand::Sym { name: fname, .. } = callee else {
            return Err(unsupported(callee.span(), "this callee is not supported"));
        };
        // The signature: the callee's own, or for a call through a register, the prototype's (or the
        // first function of a `.calltargets` list).
        let (decl_rets, decl_params, target) = match scope.lookup(fname.text) {
            Some(Entry::Func(f)) => {
                self.defined_somewhere(f, fname)?;
                let fv = *self
                    .funcs
                    .get(fname.text)
                    .ok_or_else(|| unsupported(fname.span, "unknown function"))?;
                (&f.returns[..], &f.params[..], Ok(fv))
            }
            Some(Entry::Reg { .. }) => {
                let Some(Operand::Sym { name: pname, .. }) = proto else {
                    return Err(unsupported(i.span, "an indirect call needs a prototype"));
                };
                let (r, p) = st
                    .protos
                    .get(pname.text)
                    .copied()
                    .ok_or_else(|| unsupported(pname.span, "prototype not found"))?;
                let addr = self.read(st, callee, Type::U64, scope)?.into_int_value();
                let fp = self.b.build_int_to_ptr(addr, self.ptr(0), "fp")?;
                (r, p, Err(fp))
            }
            _ => return Err(unsupported(fname.span, "unknown function")),
        };
        if args.len() != decl_params.len() || rets.len() != decl_rets.len() {
            return Err(unsupported(
                i.span,
                format!(
                    "`{}` takes {} arguments and {} results",
                    fname.text,
                    decl_params.len(),
                    decl_rets.len()
                ),
            ));
        }
        let mut vals: Vec<BasicMetadataValueEnum> = vec![];
        if let Some(env) = st.env {
            vals.push(env.into());
        }
        for (arg, p) in args.iter().zip(decl_params) {
            let v = self.argument(st, arg, p, scope)?;
            vals.push(v.into());
        }
        let r = match target {
            Ok(fv) => self.b.build_call(fv, &vals, "call")?,
            Err(fp) => {
                let fty = self.func_type(decl_rets, decl_params)?;
                self.b.build_indirect_call(fty, fp, &vals, "icall")?
            }
        };
        let Some(v) = r.try_as_basic_value().basic() else {
            return Ok(());
        };
        let results: Vec<BasicValueEnum> = if rets.len() > 1 {
            (0..rets.len() as u32)
                .map(|k| self.b.build_extract_value(v.into_struct_value(), k, "r"))
                .collect::<Result<_, _>>()?
        } else {
            vec![v]
        };
        for ((ret, decl), v) in rets.iter().zip(decl_rets).zip(results) {
            self.result(st, ret, decl, v, scope)?;
        }
        Ok(())
    }

    /// One argument as its parameter's LLVM type.
    fn argument<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        arg: &Operand<'a>,
        p: &VarDecl<'_>,
        scope: &Scope<'m, 'a>,
    ) -> R<BasicValueEnum<'ctx>> {
        let ty = self.param_ty(p)?;
        match arg {
            Operand::Sym { name, component: None } => match scope.lookup(name.text) {
                Some(Entry::Var(v)) if v.space == Space::Param => {
                    let slot = st.locals[&(v as *const _)];
                    Ok(self.b.build_load(ty, slot, "arg")?)
                }
                Some(Entry::Reg { vector: Some(_), .. }) => {
                    // A vector register's storage has the parameter's size; pass it whole.
                    let (slot, _, _) = self.vector_slot(
                        st,
                        name,
                        &Name {
                            text: ".x",
                            span: name.span,
                        },
                        scope,
                    )?;
                    Ok(self.b.build_load(ty, slot, "arg")?)
                }
                Some(Entry::Reg { .. }) if p.dims.is_empty() && p.vector.is_none() => {
                    let v = self.reg_load(st, name, p.ty, scope)?;
                    Ok(self.to_bits(v, ty.into_int_type().get_bit_width(), false)?.into())
                }
                _ => {
                    // Any other value (a variable's or function's address, a special register).
                    let v = self.read(st, arg, p.ty, scope)?;
                    Ok(self.to_bits(v, ty.into_int_type().get_bit_width(), false)?.into())
                }
            },
            _ if p.dims.is_empty() && p.vector.is_none() => {
                let v = self.read(st, arg, p.ty, scope)?;
                Ok(self.to_bits(v, ty.into_int_type().get_bit_width(), false)?.into())
            }
            other => Err(unsupported(other.span(), "unsupported call argument")),
        }
    }

    /// Stores one result of a call where the caller asked for it.
    fn result<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        ret: &Operand<'a>,
        decl: &VarDecl<'_>,
        v: BasicValueEnum<'ctx>,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let Operand::Sym { name, .. } = ret else {
            return Err(unsupported(ret.span(), "unsupported call result"));
        };
        match scope.lookup(name.text) {
            Some(Entry::Var(var)) if var.space == Space::Param => {
                self.b.build_store(st.locals[&(var as *const _)], v)?;
            }
            Some(Entry::Reg { vector: Some(_), .. }) => {
                let (slot, _, _) = self.vector_slot(
                    st,
                    name,
                    &Name {
                        text: ".x",
                        span: name.span,
                    },
                    scope,
                )?;
                self.b.build_store(slot, v)?;
            }
            Some(Entry::Reg { .. }) if v.is_int_value() => {
                let v = self.of_bits(v.into_int_value(), decl.ty, false)?;
                self.write(st, ret, v, false, scope)?;
            }
            _ => return Err(unsupported(name.span, "unsupported call result")),
        }
        Ok(())
    }
}
