//! Loads, stores and atomics.

use super::*;

impl<'ctx> Lowerer<'ctx> {
    pub(super) fn memory<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let t = d.ty().expect("ld/st type");
        let space = d.get(G::Space).and_then(Space::from_dot).unwrap_or(Space::Generic);
        if t == Type::B128 {
            return Err(unsupported(i.span, "128-bit loads and stores are not supported yet"));
        }
        let is_ld = d.spec.name == "ld";
        let at = isa::address_operand(d.spec.name).expect("ld and st take an address");
        let (data, addr) = (&i.operands[1 - at], &i.operands[at]);
        let Operand::Addr(a) = addr else {
            return Err(unsupported(addr.span(), "expected an address"));
        };
        let base = self.address(st, a, space, scope)?;
        let expanded = self.expand_vector(data, scope);
        let elems: Vec<&Operand<'a>> = match (data, &expanded) {
            (_, Some(parts)) => parts.iter().collect(),
            (Operand::Vector(v, _), _) => v.iter().collect(),
            (other, _) => vec![other],
        };
        let mem_ty = self.value_ty(t);
        let align = t.bytes() * elems.len() as u32;
        for (k, e) in elems.into_iter().enumerate() {
            let p = if k == 0 {
                base
            } else {
                unsafe {
                    self.b.build_in_bounds_gep(
                        self.ctx.i8_type(),
                        base,
                        &[self.i64().const_int((k as u32 * t.bytes()) as u64, false)],
                        "e",
                    )?
                }
            };
            let a = if k == 0 { align } else { t.bytes() };
            if is_ld {
                let v = self.b.build_load(mem_ty, p, "ld")?;
                if let Some(inst) = v.as_instruction_value() {
                    let _ = inst.set_alignment(a);
                }
                self.write(st, e, v, t.is_signed(), scope)?;
            } else {
                let v = self.read(st, e, t, scope)?;
                let s = self.b.build_store(p, v)?;
                let _ = s.set_alignment(a);
            }
        }
        Ok(())
    }

    /// `atom`/`red` as LLVM atomics: they are real host atomics, since CTAs run in parallel.
    pub(super) fn atomic<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        use inkwell::llvm_sys::core::{LLVMBuildAtomicCmpXchg, LLVMBuildAtomicRMW, LLVMBuildExtractValue};
        use inkwell::llvm_sys::{LLVMAtomicOrdering as O, LLVMAtomicRMWBinOp as B};
        use inkwell::values::AsValueRef;
        let t = d.ty().expect("typed");
        let is_atom = d.spec.name == "atom";
        let ops = &i.operands;
        let space = d.get(G::Space).and_then(Space::from_dot).unwrap_or(Space::Generic);
        let at = isa::address_operand(d.spec.name).expect("atom and red take an address");
        let Operand::Addr(a) = &ops[at] else {
            return Err(unsupported(i.span, "expected an address"));
        };
        let ptr = self.address(st, a, space, scope)?;
        let b = self.read(st, &ops[at + 1], t, scope)?;
        let ordering = match d.get(G::Sem) {
            None | Some(".relaxed") => O::LLVMAtomicOrderingMonotonic,
            _ => O::LLVMAtomicOrderingAcquireRelease,
        };
        let op = d.get(G::Op).expect("atom has an op");
        let (float, signed) = (t.is_float(), t.is_signed());
        let raw = unsafe {
            if op == ".cas" {
                let c = self.read(
                    st,
                    ops.get(3)
                        .ok_or_else(|| unsupported(i.span, "`atom.cas` needs a new value"))?,
                    t,
                    scope,
                )?;
                if float {
                    return Err(unsupported(i.span, "`atom.cas` on a float type is not valid"));
                }
                let pair = LLVMBuildAtomicCmpXchg(
                    self.b.as_mut_ptr(),
                    ptr.as_value_ref(),
                    b.as_value_ref(),
                    c.as_value_ref(),
                    ordering,
                    O::LLVMAtomicOrderingMonotonic,
                    0,
                );
                LLVMBuildExtractValue(self.b.as_mut_ptr(), pair, 0, c"old".as_ptr())
            } else {
                let bin = match (op, float, signed) {
                    (".exch", _, _) => B::LLVMAtomicRMWBinOpXchg,
                    (".add", true, _) => B::LLVMAtomicRMWBinOpFAdd,
                    (".add", false, _) => B::LLVMAtomicRMWBinOpAdd,
                    (".and", false, _) => B::LLVMAtomicRMWBinOpAnd,
                    (".or", false, _) => B::LLVMAtomicRMWBinOpOr,
                    (".xor", false, _) => B::LLVMAtomicRMWBinOpXor,
                    // inc/dec wrap at b exactly as PTX defines them.
                    (".inc", false, false) => B::LLVMAtomicRMWBinOpUIncWrap,
                    (".dec", false, false) => B::LLVMAtomicRMWBinOpUDecWrap,
                    (".min", false, true) => B::LLVMAtomicRMWBinOpMin,
                    (".max", false, true) => B::LLVMAtomicRMWBinOpMax,
                    (".min", false, false) => B::LLVMAtomicRMWBinOpUMin,
                    (".max", false, false) => B::LLVMAtomicRMWBinOpUMax,
                    _ => {
                        return Err(unsupported(
                            i.span,
                            format!("`{}{op}{}` is not supported yet", d.spec.name, t.name()),
                        ))
                    }
                };
                LLVMBuildAtomicRMW(
                    self.b.as_mut_ptr(),
                    bin,
                    ptr.as_value_ref(),
                    b.as_value_ref(),
                    ordering,
                    0,
                )
            }
        };
        if is_atom {
            let old = BasicValueEnum::try_from(unsafe { inkwell::values::AnyValueEnum::new(raw) })
                .map_err(|_| unsupported(i.span, "internal error: atomic result"))?;
            self.write(st, &ops[0], old, signed, scope)?;
        }
        Ok(())
    }
}
