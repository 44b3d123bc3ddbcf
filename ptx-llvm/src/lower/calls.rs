//! `call` of device functions with `.param` and register arguments.

use super::*;

impl<'ctx> Lowerer<'ctx> {
    pub(super) fn call<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let (rets, callee, args): (&[Operand], &Operand, &[Operand]) = match i.operands.as_slice() {
            [Operand::List(r, _), f, Operand::List(a, _)] => (r, f, a),
            [Operand::List(r, _), f] => (r, f, &[]),
            [f, Operand::List(a, _)] => (&[], f, a),
            [f] => (&[], f, &[]),
            _ => return Err(unsupported(i.span, "this form of `call` is not supported yet")),
        };
        let Operand::Sym { name: fname, .. } = callee else {
            return Err(unsupported(callee.span(), "indirect calls are not supported yet"));
        };
        let Some(fv) = self.funcs.get(fname.text).copied() else {
            return Err(unsupported(fname.span, "unknown function"));
        };
        let Some(Entry::Func(fdecl)) = scope.lookup(fname.text) else {
            return Err(unsupported(fname.span, "unknown function"));
        };
        let mut vals: Vec<BasicMetadataValueEnum> = vec![];
        if let Some(env) = st.env {
            vals.push(env.into());
        }
        if args.len() != fdecl.params.len() || rets.len() != fdecl.returns.len() {
            return Err(unsupported(
                i.span,
                format!(
                    "`{}` takes {} arguments and {} results",
                    fname.text,
                    fdecl.params.len(),
                    fdecl.returns.len()
                ),
            ));
        }
        for (arg, p) in args.iter().zip(&fdecl.params) {
            let ty = self.param_ty(p)?;
            let v = match arg {
                Operand::Sym { name, .. } => match scope.lookup(name.text) {
                    Some(Entry::Var(v)) if v.space == Space::Param => {
                        let slot = st.locals[&(v as *const _)];
                        self.b.build_load(ty, slot, "arg")?
                    }
                    Some(Entry::Reg { .. }) => {
                        let t = if p.dims.is_empty() {
                            p.ty
                        } else {
                            return Err(unsupported(arg.span(), "array argument from a register"));
                        };
                        let v = self.reg_load(st, name, t, scope)?;
                        self.to_bits(v, ty.into_int_type().get_bit_width(), false)?.into()
                    }
                    _ => return Err(unsupported(arg.span(), "unsupported call argument")),
                },
                Operand::Imm(imm, s) if p.dims.is_empty() => {
                    let v = self.imm(*imm, p.ty, *s)?;
                    self.to_bits(v, ty.into_int_type().get_bit_width(), false)?.into()
                }
                other => return Err(unsupported(other.span(), "unsupported call argument")),
            };
            vals.push(v.into());
        }
        let r = self.b.build_call(fv, &vals, "call")?;
        if let Some(Operand::Sym { name, .. }) = rets.first() {
            let v = r.try_as_basic_value().basic().expect("call returns a value");
            match scope.lookup(name.text) {
                Some(Entry::Var(var)) if var.space == Space::Param => {
                    self.b.build_store(st.locals[&(var as *const _)], v)?;
                }
                Some(Entry::Reg { .. }) => {
                    let ret_ty = fdecl.returns[0].ty;
                    let v = self.from_bits(v.into_int_value(), ret_ty, false)?;
                    self.write(st, &rets[0], v, false, scope)?;
                }
                _ => return Err(unsupported(name.span, "unsupported call result")),
            }
        }
        Ok(())
    }
}
