//! Large kernels keep O3's cost linear. LLVM's loop vectoriser takes time that grows with the square
//! of the loop body it plans for (VPlan's analyses walk operand chains per recipe), and a kernel's
//! thread loop is its whole body. Measured on straight-line kernels, whole O3 pipeline with and
//! without it: 1.5 s against 0.2 s at 8,000 PTX instructions, 24 s against 1.1 s at 31,000; a
//! 200 MB kernel would never finish. Past [`VECTORISE_MAX_INSTRUCTIONS`] a module's loops are marked
//! `llvm.loop.vectorize.enable = false` (the rest of O3 still runs), so its threads run one at a time.
//!
//! (Turning vectorisation off through the pass builder's tuning options leaves the planning in place
//! in LLVM 22; the loop hint stops it before it starts.)

use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::debuginfo::{LLVMMetadataReplaceAllUsesWith, LLVMTemporaryMDNode};
use inkwell::llvm_sys::prelude::{LLVMBasicBlockRef, LLVMBuilderRef, LLVMContextRef, LLVMValueRef};
use inkwell::module::Module;
use inkwell::values::AsValueRef;

/// IR instructions past which a module's loops are not vectorised: about 12,000 PTX instructions in
/// a thread loop, where planning a long dependence chain takes some 3 s.
pub const VECTORISE_MAX_INSTRUCTIONS: usize = 16_000;

/// Marks every loop of a module over [`VECTORISE_MAX_INSTRUCTIONS`] not to be vectorised; returns
/// whether it did.
pub fn bound_vectorisation(module: &Module<'_>) -> bool {
    if instruction_count(module) <= VECTORISE_MAX_INSTRUCTIONS {
        return false;
    }
    let c = module.get_context();
    let ctx = c.raw();
    unsafe {
        let kind = LLVMGetMDKindIDInContext(ctx, c"llvm.loop".as_ptr(), 9);
        let mut hint = [
            LLVMMDStringInContext2(ctx, c"llvm.loop.vectorize.enable".as_ptr(), 26),
            LLVMValueAsMetadata(LLVMConstInt(LLVMInt1TypeInContext(ctx), 0, 0)),
        ];
        let hint = LLVMMDNodeInContext2(ctx, hint.as_mut_ptr(), 2);
        for f in module.get_functions() {
            for b in f.get_basic_block_iter() {
                let Some(latch) = b.get_terminator() else { continue };
                let latch = latch.as_value_ref();
                if LLVMGetMetadata(latch, kind).is_null() {
                    continue;
                }
                // A loop's ID is a distinct node whose first operand is itself.
                let tmp = LLVMTemporaryMDNode(ctx, std::ptr::null_mut(), 0);
                let mut ops = [tmp, hint];
                let id = LLVMMDNodeInContext2(ctx, ops.as_mut_ptr(), 2);
                LLVMMetadataReplaceAllUsesWith(tmp, id);
                LLVMSetMetadata(latch, kind, LLVMMetadataAsValue(ctx, id));
            }
        }
    }
    true
}

/// Instructions in the module's function bodies.
fn instruction_count(module: &Module<'_>) -> usize {
    module
        .get_functions()
        .flat_map(|f| f.get_basic_block_iter())
        .map(|b| b.get_instructions().count())
        .sum()
}

/// Instructions past which a block is cut in two before code generation. Instruction selection,
/// the two-address pass and the machine scheduler each take time that grows faster than linearly in
/// a block's length (a 150,000-instruction block spends most of its compile there); blocks of
/// ordinary kernels, unrolled loops included, stay below it.
pub const BLOCK_MAX_INSTRUCTIONS: usize = 2_048;

/// Cuts every block longer than [`BLOCK_MAX_INSTRUCTIONS`] into a chain of blocks joined by
/// unconditional branches, so code generation sees pieces of bounded size; returns the number of
/// cuts. Runs after the optimisation pipeline, which would merge the pieces again.
pub fn split_long_blocks(module: &Module<'_>) -> usize {
    let mut cuts = 0;
    let ctx = module.get_context().raw();
    unsafe {
        let builder = LLVMCreateBuilderInContext(ctx);
        for f in module.get_functions() {
            let mut b = LLVMGetFirstBasicBlock(f.as_value_ref());
            while !b.is_null() {
                let mut last = b;
                // The first cut may not separate phis, or the entry block's allocas, from their block.
                let mut i = LLVMGetFirstInstruction(b);
                while !i.is_null() && (!LLVMIsAPHINode(i).is_null() || !LLVMIsAAllocaInst(i).is_null()) {
                    i = LLVMGetNextInstruction(i);
                }
                let mut n = 0;
                while !i.is_null() {
                    let next = LLVMGetNextInstruction(i);
                    n += 1;
                    if n == BLOCK_MAX_INSTRUCTIONS && !next.is_null() {
                        last = move_tail(ctx, builder, last, next);
                        cuts += 1;
                        n = 0;
                    }
                    i = next;
                }
                if last != b {
                    retarget_successor_phis(builder, b, last);
                }
                b = LLVMGetNextBasicBlock(last);
            }
        }
        LLVMDisposeBuilder(builder);
    }
    cuts
}

/// Moves `from` and every instruction after it in its block into a new block placed after it, and
/// ends the old block with a branch to the new one, which it returns.
unsafe fn move_tail(
    ctx: LLVMContextRef,
    builder: LLVMBuilderRef,
    block: LLVMBasicBlockRef,
    from: LLVMValueRef,
) -> LLVMBasicBlockRef {
    unsafe {
        let next_block = LLVMGetNextBasicBlock(block);
        let tail = if next_block.is_null() {
            LLVMAppendBasicBlockInContext(ctx, LLVMGetBasicBlockParent(block), c"cut".as_ptr())
        } else {
            LLVMInsertBasicBlockInContext(ctx, next_block, c"cut".as_ptr())
        };
        LLVMPositionBuilderAtEnd(builder, tail);
        let mut i = from;
        while !i.is_null() {
            let next = LLVMGetNextInstruction(i);
            // Leaving the block drops the name from the function's symbol table: keep it, so dumped
            // IR reads the same.
            let mut len = 0;
            let name = std::ffi::CStr::from_ptr(LLVMGetValueName2(i, &mut len)).to_owned();
            LLVMInstructionRemoveFromParent(i);
            LLVMInsertIntoBuilder(builder, i);
            LLVMSetValueName2(i, name.as_ptr(), len);
            i = next;
        }
        LLVMPositionBuilderAtEnd(builder, block);
        LLVMBuildBr(builder, tail);
        // Code generation's preparation merges a block into its only predecessor when that ends in
        // an unconditional branch, unless the block's address is taken: creating its address
        // (unused, so nothing can jump there) keeps the cut.
        LLVMBlockAddress(LLVMGetBasicBlockParent(block), tail);
        tail
    }
}

/// The original block's terminator now ends `last`: phis in its successors that named the original
/// block as the incoming one are rebuilt to name `last` (the C API cannot set an incoming block).
unsafe fn retarget_successor_phis(builder: LLVMBuilderRef, old: LLVMBasicBlockRef, last: LLVMBasicBlockRef) {
    unsafe {
        let term = LLVMGetBasicBlockTerminator(last);
        let mut seen = Vec::new();
        for s in 0..LLVMGetNumSuccessors(term) {
            let succ = LLVMGetSuccessor(term, s);
            if seen.contains(&succ) {
                continue;
            }
            seen.push(succ);
            let mut phi = LLVMGetFirstInstruction(succ);
            while !phi.is_null() && !LLVMIsAPHINode(phi).is_null() {
                let next = LLVMGetNextInstruction(phi);
                LLVMPositionBuilderBefore(builder, phi);
                let new = LLVMBuildPhi(builder, LLVMTypeOf(phi), c"".as_ptr());
                for k in 0..LLVMCountIncoming(phi) {
                    let mut v = LLVMGetIncomingValue(phi, k);
                    let mut from = LLVMGetIncomingBlock(phi, k);
                    if from == old {
                        from = last;
                    }
                    LLVMAddIncoming(new, &mut v, &mut from, 1);
                }
                LLVMReplaceAllUsesWith(phi, new);
                let mut len = 0;
                let name = LLVMGetValueName2(phi, &mut len);
                let name = std::ffi::CStr::from_ptr(name).to_owned();
                LLVMInstructionEraseFromParent(phi);
                LLVMSetValueName2(new, name.as_ptr(), len);
                phi = next;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inkwell::context::Context;
    use inkwell::IntPredicate;

    /// `f(x)`: a loop whose body adds 1 to `x` `n` times in one block, then a block with a phi of
    /// the body's result (the body is its only predecessor besides the entry).
    fn long_loop<'c>(c: &'c Context, n: usize) -> inkwell::module::Module<'c> {
        let m = c.create_module("t");
        let i32t = c.i32_type();
        let f = m.add_function("f", i32t.fn_type(&[i32t.into()], false), None);
        let (entry, body, exit) = (
            c.append_basic_block(f, "entry"),
            c.append_basic_block(f, "body"),
            c.append_basic_block(f, "exit"),
        );
        let b = c.create_builder();
        b.position_at_end(entry);
        b.build_unconditional_branch(body).unwrap();
        b.position_at_end(body);
        let x = b.build_phi(i32t, "x").unwrap();
        let mut v = x.as_basic_value().into_int_value();
        for _ in 0..n {
            v = b.build_int_add(v, i32t.const_int(1, false), "v").unwrap();
        }
        let done = b
            .build_int_compare(IntPredicate::UGT, v, i32t.const_int(1 << 20, false), "done")
            .unwrap();
        let latch = b.build_conditional_branch(done, exit, body).unwrap();
        x.add_incoming(&[(&f.get_nth_param(0).unwrap().into_int_value(), entry), (&v, body)]);
        let loop_id = c.metadata_node(&[c.metadata_string("llvm.loop.mustprogress").into()]);
        latch.set_metadata(loop_id, c.get_kind_id("llvm.loop")).unwrap();
        b.position_at_end(exit);
        let r = b.build_phi(i32t, "r").unwrap();
        r.add_incoming(&[(&v, body)]);
        b.build_return(Some(&r.as_basic_value())).unwrap();
        m
    }

    #[test]
    fn long_blocks_are_cut_and_successor_phis_follow() {
        let c = Context::create();
        let m = long_loop(&c, 5_000);
        let last = m
            .get_function("f")
            .unwrap()
            .get_last_basic_block()
            .unwrap()
            .get_first_instruction()
            .unwrap();
        let v = last
            .get_operand(0)
            .unwrap()
            .value()
            .unwrap()
            .into_int_value()
            .get_name()
            .to_string_lossy()
            .into_owned();
        assert_eq!(split_long_blocks(&m), 2);
        m.verify().unwrap();
        let f = m.get_function("f").unwrap();
        let names: Vec<String> = f
            .get_basic_block_iter()
            .map(|b| b.get_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 5, "{names:?}");
        assert!(names[2].starts_with("cut") && names[3].starts_with("cut"), "{names:?}");
        let cut = &names[3];
        // The loop's back edge and the exit's phi now come from the last piece.
        let ir = m.print_to_string().to_string();
        assert!(
            ir.contains(&format!("%x = phi i32 [ %0, %entry ], [ %{v}, %{cut} ]")),
            "{ir}"
        );
        assert!(ir.contains(&format!("%r = phi i32 [ %{v}, %{cut} ]")), "{ir}");
        // A block at the limit stays whole.
        let m = long_loop(&c, BLOCK_MAX_INSTRUCTIONS - 3);
        assert_eq!(split_long_blocks(&m), 0);
    }

    #[test]
    fn only_large_modules_lose_loop_vectorisation() {
        let c = Context::create();
        let small = long_loop(&c, 1_000);
        assert!(!bound_vectorisation(&small));
        assert!(!small
            .print_to_string()
            .to_string()
            .contains("llvm.loop.vectorize.enable"));
        let large = long_loop(&c, VECTORISE_MAX_INSTRUCTIONS);
        assert!(bound_vectorisation(&large));
        large.verify().unwrap();
        let ir = large.print_to_string().to_string();
        assert!(ir.contains(r#"!{!"llvm.loop.vectorize.enable", i1 false}"#), "{ir}");
    }
}
