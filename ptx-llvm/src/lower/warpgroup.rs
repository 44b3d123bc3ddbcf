//! Warpgroup matrix instructions on the host (`wgmma`, 9.7.16). `wgmma.mma_async` is a warp
//! collective here: a warp's 16 rows of D depend only on its own 16 rows of A and on all of B, so each
//! warp computes its part when its lanes arrive, without waiting for the warpgroup's other three. Each
//! lane fills a buffer (a [`WgmmaHead`], then its A and D registers) and the runtime computes its new
//! D from the warp's buffers (ptx-jit's `emu::wgmma`).
//!
//! The operation finishes before the instruction does, which the manual allows: reading D before
//! `wgmma.wait_group` is undefined behaviour, and so is writing A or B before it. So `wgmma.fence`,
//! `commit_group` and `wait_group` have nothing to do.

use super::*;
use crate::abi::WgmmaHead;

impl<'ctx> Lowerer<'ctx> {
    pub(super) fn wgmma<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        self.host_only(i.span, "wgmma")?;
        match d.spec.sub {
            [".fence"] | [".commit_group"] | [".wait_group"] => return Ok(()),
            [".mma_async"] => {}
            _ => return Err(unsupported(i.span, "sparse `wgmma.mma_async.sp` is not supported yet")),
        }
        let mods: Vec<&str> = d.mods().map(|(_, m)| m).collect();
        let form = isa::wgmma_form(&mods).map_err(|why| unsupported(i.span, why))?;
        let ops = &i.operands;
        let a_regs = matches!(ops.get(1), Some(Operand::Vector(..)));
        if ops.len() != form.operands(a_regs) {
            return Err(unsupported(i.span, "wrong number of operands"));
        }
        let dl = self.fragment(&ops[0], scope);
        let al = if a_regs { self.fragment(&ops[1], scope) } else { vec![] };
        let words = |l: &[(&Operand<'_>, u32)]| l.iter().map(|(_, w)| w).sum::<u32>();
        if words(&dl) as usize != form.d_regs() || (a_regs && words(&al) as usize != isa::WgmmaForm::A_REGS) {
            return Err(unsupported(
                ops[0].span(),
                "the registers of D or A do not match the form",
            ));
        }
        let imm = |k: usize| match ops.get(k) {
            Some(Operand::Imm(ast::Imm::Int(v), _)) => *v,
            _ => 0,
        };
        let mut flags = 0;
        if form.scales() {
            flags |= if imm(4) == -1 { WgmmaHead::NEGATE_A } else { 0 };
            flags |= if imm(5) == -1 { WgmmaHead::NEGATE_B } else { 0 };
        }
        if form.transposes() {
            // imm-trans-a comes only with A in shared memory.
            let (ta, tb) = if a_regs { (0, imm(6)) } else { (imm(6), imm(7)) };
            flags |= if ta == 1 { WgmmaHead::TRANS_A } else { 0 };
            flags |= if tb == 1 { WgmmaHead::TRANS_B } else { 0 };
        }
        if a_regs {
            flags |= WgmmaHead::A_REGS;
        }
        let (i32t, i64t) = (self.i32(), self.i64());
        let head = WgmmaHead::WORDS;
        let buf = st.alloca_at.build_alloca(
            i64t.array_type(head + (words(&al) + words(&dl)).div_ceil(2)),
            "wgmma.buf",
        )?;
        let put = |l: &mut Self, k: u32, v: IntValue<'ctx>| -> R<()> {
            let p = unsafe {
                l.b.build_in_bounds_gep(i64t, buf, &[i64t.const_int(k as u64, false)], "w")?
            };
            l.b.build_store(p, v)?;
            Ok(())
        };
        put(self, WgmmaHead::FORM, i64t.const_int(form.code(), false))?;
        let env = st.env.expect("env");
        put(self, WgmmaHead::ENV, self.b.build_ptr_to_int(env, i64t, "env")?)?;
        let a_desc = if a_regs {
            i64t.const_zero()
        } else {
            self.read(st, &ops[1], Type::B64, scope)?.into_int_value()
        };
        put(self, WgmmaHead::A_DESC, a_desc)?;
        let b_desc = self.read(st, &ops[2], Type::B64, scope)?.into_int_value();
        put(self, WgmmaHead::B_DESC, b_desc)?;
        let (_, window) = self.shared_offset(st, i64t.const_zero())?;
        put(self, WgmmaHead::WINDOW, window)?;
        // scale-d: an immediate or a predicate.
        let scale = match &ops[3] {
            Operand::Imm(ast::Imm::Int(v), _) => i64t.const_int((*v != 0) as u64, false),
            o => {
                let p = self.read(st, o, Type::Pred, scope)?.into_int_value();
                self.b.build_int_z_extend(p, i64t, "scale")?
            }
        };
        let flags = self.b.build_or(scale, i64t.const_int(flags, false), "flags")?;
        put(self, WgmmaHead::FLAGS, flags)?;
        // The warp's rank in its warpgroup: (linear thread index / 32) mod 4.
        let tid = self.linear_tid(st)?;
        let warp = self.b.build_right_shift(tid, i32t.const_int(5, false), false, "warp")?;
        let rank = self.b.build_and(warp, i32t.const_int(3, false), "rank")?;
        put(self, WgmmaHead::RANK, self.b.build_int_z_extend(rank, i64t, "rank")?)?;
        put(self, WgmmaHead::SITE, i64t.const_int(i.span.start as u64, false))?;
        let k = self.store_fragment(st, buf, 2 * head, &al, scope)?;
        self.store_fragment(st, buf, k, &dl, scope)?;
        let ptr = self.b.build_ptr_to_int(buf, i64t, "buf")?;
        let (lo, hi) = self.halves(ptr)?;
        let full = Some(i32t.const_all_ones());
        let r = self.collective(st, crate::collective::Kind::Wgmma, [Some(lo), Some(hi), None, full])?;
        // A matrix outside the shared window ends the launch; the runtime recorded why.
        let faulted = self
            .b
            .build_int_compare(IntPredicate::NE, r, i64t.const_zero(), "faulted")?;
        self.return_if(st, faulted)?;
        self.load_fragment(st, buf, k, &dl, scope)
    }
}
