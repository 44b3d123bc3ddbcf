//! Host-flavour parts of the lowering: the environment struct, and the block entry's loops over the
//! CTA's threads (and over CTAs, for loop kernels) with their parallel-loop metadata.

use super::*;
use crate::abi::FieldType;

/// An LLVM struct of the ABI's field types (`crate::abi`), in order.
pub(super) fn abi_struct(ctx: &Context, fields: impl Iterator<Item = FieldType>) -> inkwell::types::StructType<'_> {
    let p = ctx.ptr_type(AddressSpace::default());
    let types: Vec<BasicTypeEnum> = fields
        .map(|t| match t {
            FieldType::Ptr => p.into(),
            FieldType::I32 => ctx.i32_type().into(),
            FieldType::I64 => ctx.i64_type().into(),
            FieldType::I32x3 => ctx.i32_type().array_type(3).into(),
        })
        .collect();
    ctx.struct_type(&types, false)
}

impl<'ctx> Lowerer<'ctx> {
    /// The host environment's LLVM struct (`crate::abi::Env`).
    pub(super) fn env_ty(&mut self) -> inkwell::types::StructType<'ctx> {
        if let Some(t) = self.env_ty {
            return t;
        }
        let t = abi_struct(self.ctx, EnvField::ALL.iter().map(|&(_, t)| t));
        self.env_ty = Some(t);
        t
    }

    /// Where field `f` of the environment at `env` is.
    pub(super) fn env_ptr(&mut self, env: PointerValue<'ctx>, f: EnvField) -> R<PointerValue<'ctx>> {
        let env_ty = self.env_ty();
        Ok(self.b.build_struct_gep(env_ty, env, f.index(), f.name())?)
    }

    /// The entry block of a block function: a private copy of the environment, with the argument buffer.
    /// Leaves the builder at the end of the entry block.
    pub(super) fn block_env(&mut self, block_fn: FunctionValue<'ctx>) -> R<PointerValue<'ctx>> {
        let env_ty = self.env_ty();
        let entry = self.ctx.append_basic_block(block_fn, "entry");
        self.b.position_at_end(entry);
        let src = block_fn.get_nth_param(0).expect("env").into_pointer_value();
        let params = block_fn.get_nth_param(1).expect("params").into_pointer_value();
        let env = self.b.build_alloca(env_ty, "env")?;
        let whole = self.b.build_load(env_ty, src, "env.in")?;
        self.b.build_store(env, whole)?;
        let pp = self.env_ptr(env, EnvField::Params)?;
        self.b.build_store(pp, params)?;
        Ok(env)
    }

    /// `void kernel(Env*, params)` of a `Loop` kernel (the thread body for every thread of the CTA) or a
    /// `Fibers` kernel (one thread per call; the runtime gives each its own fiber and environment).
    pub(super) fn host_block_loop(
        &mut self,
        block_fn: FunctionValue<'ctx>,
        thread_fn: FunctionValue<'ctx>,
        exec: Exec,
    ) -> R<()> {
        let env = self.block_env(block_fn)?;
        let mut args: Vec<BasicMetadataValueEnum> = vec![env.into()];
        if thread_fn.count_params() == 2 {
            args.push(self.i32().const_zero().into());
        }
        if exec == Exec::Fibers {
            self.b.build_call(thread_fn, &args, "")?;
        } else {
            // CTAs ctaid.x .. ctaid.x + ctas, one after the other.
            let i32t = self.i32();
            let cp = self.env_ptr(env, EnvField::Ctas)?;
            let count = self.b.build_load(i32t, cp, "ctas")?.into_int_value();
            let xp = self.env_ptr(env, EnvField::Ctaid)?;
            let x0 = self.b.build_load(i32t, xp, "x0")?.into_int_value();
            let pre = self.b.get_insert_block().expect("block");
            let head = self.ctx.append_basic_block(block_fn, "cta");
            let done = self.ctx.append_basic_block(block_fn, "ctas.done");
            self.b.build_unconditional_branch(head)?;
            self.b.position_at_end(head);
            let c = self.b.build_phi(i32t, "c")?;
            c.add_incoming(&[(&i32t.const_zero(), pre)]);
            let cv = c.as_basic_value().into_int_value();
            self.b.build_store(xp, self.b.build_int_add(x0, cv, "x")?)?;
            self.thread_loops(block_fn, env, |this, _| {
                let c = this.b.build_call(thread_fn, &args, "")?;
                // Inlining hoists a thread's `.local` arrays out of the loop, so every thread would share
                // them: only kernels without such memory may claim independent iterations.
                if !this.private_memory {
                    this.parallel(Some(unsafe {
                        inkwell::values::InstructionValue::new(c.as_value_ref())
                    }));
                }
                Ok(())
            })?;
            let next = self.b.build_int_add(cv, i32t.const_int(1, false), "c")?;
            c.add_incoming(&[(&next, self.b.get_insert_block().expect("block"))]);
            let more = self.b.build_int_compare(IntPredicate::ULT, next, count, "more")?;
            self.b.build_conditional_branch(more, head, done)?;
            self.b.position_at_end(done);
        }
        self.b.build_return(None)?;
        Ok(())
    }

    /// Loops z, y, x over the CTA's threads from the builder's position, setting `env.tid`; `body` gets the
    /// linear thread index (i64) and leaves the builder where the iteration ends. x is innermost, so
    /// consecutive threads are consecutive iterations. Leaves the builder after the loops.
    pub(super) fn thread_loops(
        &mut self,
        block_fn: FunctionValue<'ctx>,
        env: PointerValue<'ctx>,
        mut body: impl FnMut(&mut Self, IntValue<'ctx>) -> R<()>,
    ) -> R<()> {
        let i64t = self.i64();
        let ntid = self.ntid_values(env)?;
        let mut exits = vec![];
        let mut ivs = vec![];
        let mut linear = i64t.const_zero();
        for d in [2u32, 1, 0] {
            let (phi, exit) = self.open_tid_loop(block_fn, env, d, "loop", Some("done"))?;
            let exit = exit.expect("asked for");
            let n = self.b.build_int_z_extend(ntid[d as usize], i64t, "n")?;
            let i = self
                .b
                .build_int_z_extend(phi.as_basic_value().into_int_value(), i64t, "i")?;
            linear = self
                .b
                .build_int_nuw_add(self.b.build_int_nuw_mul(linear, n, "l")?, i, "l")?;
            ivs.push((phi, d));
            exits.push(exit);
        }
        body(self, linear)?;
        for ((phi, d), exit) in ivs.into_iter().rev().zip(exits.into_iter().rev()) {
            let br = self.close_tid_loop(phi, ntid[d as usize], exit)?;
            if d == 0 {
                self.mark_parallel_loop(br);
            }
        }
        Ok(())
    }

    /// `ntid` from the environment, per dimension.
    pub(super) fn ntid_values(&mut self, env: PointerValue<'ctx>) -> R<Vec<IntValue<'ctx>>> {
        let i32t = self.i32();
        (0..3)
            .map(|d| -> R<IntValue> {
                let p = self.env_dim_ptr(env, EnvField::Ntid, d)?;
                Ok(self.b.build_load(i32t, p, "n")?.into_int_value())
            })
            .collect()
    }

    /// Opens a loop over `tid[d]` from 0 at the builder's position: a head block `head` whose counter
    /// is stored to the environment's `tid[d]`, and (when `exit` names one) the block after the loop,
    /// made now so blocks keep their order. Leaves the builder in the head.
    pub(super) fn open_tid_loop(
        &mut self,
        block_fn: FunctionValue<'ctx>,
        env: PointerValue<'ctx>,
        d: u32,
        head: &str,
        exit: Option<&str>,
    ) -> R<(PhiValue<'ctx>, Option<BasicBlock<'ctx>>)> {
        let i32t = self.i32();
        let pre = self.b.get_insert_block().expect("block");
        let head = self.ctx.append_basic_block(block_fn, head);
        let exit = exit.map(|name| self.ctx.append_basic_block(block_fn, name));
        self.b.build_unconditional_branch(head)?;
        self.b.position_at_end(head);
        let phi = self.b.build_phi(i32t, "t")?;
        phi.add_incoming(&[(&i32t.const_zero(), pre)]);
        let p = self.env_dim_ptr(env, EnvField::Tid, d as u64)?;
        self.b.build_store(p, phi.as_basic_value())?;
        Ok((phi, exit))
    }

    /// Closes the loop of counter `phi` at the builder's position: the next count goes round while it
    /// is below `n`, then on to `exit`, where the builder is left. Returns the loop's branch.
    pub(super) fn close_tid_loop(
        &mut self,
        phi: PhiValue<'ctx>,
        n: IntValue<'ctx>,
        exit: BasicBlock<'ctx>,
    ) -> R<inkwell::values::InstructionValue<'ctx>> {
        let i32t = self.i32();
        let next = self
            .b
            .build_int_add(phi.as_basic_value().into_int_value(), i32t.const_int(1, false), "next")?;
        let latch = self.b.get_insert_block().expect("block");
        let head = phi.as_instruction().get_parent().expect("head");
        phi.add_incoming(&[(&next, latch)]);
        let more = self.b.build_int_compare(IntPredicate::ULT, next, n, "more")?;
        let br = self.b.build_conditional_branch(more, head, exit)?;
        self.b.position_at_end(exit);
        Ok(br)
    }

    /// The access group of the thread loops' bodies (one for the module: a loop's claim covers only
    /// the accesses inside it).
    pub(super) fn access_group(&self) -> inkwell::llvm_sys::prelude::LLVMMetadataRef {
        unsafe { inkwell::llvm_sys::core::LLVMMDNodeInContext2(self.ctx.raw(), std::ptr::null_mut(), 0) }
    }

    /// Puts an instruction of a thread loop's body (a call of the thread body, whose inlined accesses
    /// inherit it) in the thread loops' access group.
    pub(super) fn parallel(&self, i: Option<inkwell::values::InstructionValue<'ctx>>) {
        use inkwell::llvm_sys::core::{LLVMGetMDKindIDInContext, LLVMMetadataAsValue, LLVMSetMetadata};
        if let Some(i) = i {
            unsafe {
                let kind = LLVMGetMDKindIDInContext(self.ctx.raw(), c"llvm.access.group".as_ptr(), 17);
                LLVMSetMetadata(
                    i.as_value_ref(),
                    kind,
                    LLVMMetadataAsValue(self.ctx.raw(), self.access_group()),
                );
            }
        }
    }

    /// Marks the innermost thread loop parallel: between synchronisation points a CTA's threads are
    /// independent (communication without a barrier is a race on a GPU too), so LLVM may vectorise
    /// across threads even where it cannot prove independence, e.g. through addresses in registers.
    pub(super) fn mark_parallel_loop(&self, latch: inkwell::values::InstructionValue<'ctx>) {
        use inkwell::llvm_sys::core::*;
        use inkwell::llvm_sys::debuginfo::{
            LLVMDisposeTemporaryMDNode, LLVMMetadataReplaceAllUsesWith, LLVMTemporaryMDNode,
        };
        unsafe {
            let c = self.ctx.raw();
            let name = LLVMMDStringInContext2(c, c"llvm.loop.parallel_accesses".as_ptr(), 27);
            let mut pa = [name, self.access_group()];
            let pa = LLVMMDNodeInContext2(c, pa.as_mut_ptr(), 2);
            let tmp = LLVMTemporaryMDNode(c, std::ptr::null_mut(), 0);
            let mut ops = [tmp, pa];
            let id = LLVMMDNodeInContext2(c, ops.as_mut_ptr(), 2);
            LLVMMetadataReplaceAllUsesWith(tmp, id);
            let _ = LLVMDisposeTemporaryMDNode;
            let kind = LLVMGetMDKindIDInContext(c, c"llvm.loop".as_ptr(), 9);
            LLVMSetMetadata(latch.as_value_ref(), kind, LLVMMetadataAsValue(c, id));
        }
    }
}
