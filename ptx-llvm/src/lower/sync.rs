//! Barriers and warp collectives: runtime calls on the host, NVVM intrinsics for NVPTX.

use super::*;

impl<'ctx> Lowerer<'ctx> {
    /// `env->collective(env->sync, kind, a, b, c)`; the result is an i64.
    pub(super) fn collective(
        &mut self,
        st: &Fn<'ctx, '_, '_>,
        kind: u32,
        args: [Option<IntValue<'ctx>>; 3],
    ) -> R<IntValue<'ctx>> {
        let env_ty = self.env_ty();
        let env = st.env.expect("env");
        let sp = self.b.build_struct_gep(env_ty, env, 6, "sync")?;
        let sync = self.b.build_load(self.ptr(0), sp, "sync")?;
        let fp = self.b.build_struct_gep(env_ty, env, 7, "collective")?;
        let f = self.b.build_load(self.ptr(0), fp, "collective")?.into_pointer_value();
        let i32t = self.i32();
        let fty = self.i64().fn_type(
            &[self.ptr(0).into(), i32t.into(), i32t.into(), i32t.into(), i32t.into()],
            false,
        );
        let mut call_args: Vec<BasicMetadataValueEnum> = vec![sync.into(), i32t.const_int(kind as u64, false).into()];
        call_args.extend(
            args.iter()
                .map(|a| BasicMetadataValueEnum::from(a.unwrap_or(i32t.const_zero()))),
        );
        let r = self.b.build_indirect_call(fty, f, &call_args, "coll")?;
        match r.try_as_basic_value() {
            inkwell::values::ValueKind::Basic(v) => Ok(v.into_int_value()),
            _ => Err(unsupported(Span::default(), "internal error: collective result")),
        }
    }

    /// `shfl` and `vote`. On the host they go through the runtime, which exchanges values between the
    /// fibers of a warp; NVPTX gets the native instructions.
    pub(super) fn warp_collective<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let ops = &i.operands;
        let i32t = self.i32();
        let mode = d.get(G::Dir).expect("mode");
        if self.flavour == Flavour::Nvvm {
            return self.nvvm_warp_collective(st, i, d, mode, scope);
        }
        if d.spec.name == "shfl" {
            let kind = crate::collective::SHFL
                + [".up", ".down", ".bfly", ".idx"]
                    .iter()
                    .position(|m| *m == mode)
                    .expect("shfl mode") as u32;
            let a = self.read(st, &ops[1], Type::B32, scope)?.into_int_value();
            let b = self.read(st, &ops[2], Type::B32, scope)?.into_int_value();
            let c = self.read(st, &ops[3], Type::B32, scope)?.into_int_value();
            let r = self.collective(st, kind, [Some(a), Some(b), Some(c)])?;
            let v = self.b.build_int_truncate(r, i32t, "shfl")?;
            let top = self
                .b
                .build_right_shift(r, self.i64().const_int(32, false), false, "p")?;
            let p = self.b.build_int_truncate(top, self.ctx.bool_type(), "p")?;
            return match &ops[0] {
                Operand::Pair(dv, dp, _) => {
                    self.write(st, dv, v.into(), false, scope)?;
                    self.write(st, dp, p.into(), false, scope)
                }
                dst => self.write(st, dst, v.into(), false, scope),
            };
        }
        let kind = crate::collective::VOTE
            + [".all", ".any", ".uni", ".ballot"]
                .iter()
                .position(|m| *m == mode)
                .expect("vote mode") as u32;
        let p = self.read(st, &ops[1], Type::Pred, scope)?.into_int_value();
        let p = self.b.build_int_z_extend(p, i32t, "p")?;
        let r = self.collective(st, kind, [Some(p), None, None])?;
        let v = self.b.build_int_truncate(r, i32t, "vote")?;
        if mode == ".ballot" {
            self.write(st, &ops[0], v.into(), false, scope)
        } else {
            let b = self
                .b
                .build_int_compare(IntPredicate::NE, v, i32t.const_zero(), "vote")?;
            self.write(st, &ops[0], b.into(), false, scope)
        }
    }

    /// The `.sync` NVVM intrinsics; the legacy forms without a member mask use the full warp.
    pub(super) fn nvvm_warp_collective<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        mode: &str,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let ops = &i.operands;
        let i32t = self.i32();
        let m = &mode[1..];
        if d.spec.name == "shfl" {
            let mask = match ops.get(4) {
                Some(o) => self.read(st, o, Type::B32, scope)?,
                None => i32t.const_all_ones().into(),
            };
            let a = self.read(st, &ops[1], Type::B32, scope)?;
            let b = self.read(st, &ops[2], Type::B32, scope)?;
            let c = self.read(st, &ops[3], Type::B32, scope)?;
            let r = self
                .call_intrinsic(&format!("llvm.nvvm.shfl.sync.{m}.i32p"), &[], &[mask, a, b, c])?
                .into_struct_value();
            let v = self.b.build_extract_value(r, 0, "v")?;
            let p = self.b.build_extract_value(r, 1, "p")?;
            return match &ops[0] {
                Operand::Pair(dv, dp, _) => {
                    self.write(st, dv, v, false, scope)?;
                    self.write(st, dp, p, false, scope)
                }
                dst => self.write(st, dst, v, false, scope),
            };
        }
        let mask = match ops.get(2) {
            Some(o) => self.read(st, o, Type::B32, scope)?,
            None => i32t.const_all_ones().into(),
        };
        let p = self.read(st, &ops[1], Type::Pred, scope)?;
        let v = self.call_intrinsic(&format!("llvm.nvvm.vote.{m}.sync"), &[], &[mask, p])?;
        self.write(st, &ops[0], v, false, scope)
    }
}
