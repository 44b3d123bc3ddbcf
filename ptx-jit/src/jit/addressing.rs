//! PTX computes addresses in integer registers, so the host lowering dereferences `inttoptr (add base,
//! offset)`. LLVM's scalar evolution cannot see through `inttoptr`, so a loop over threads whose
//! addresses are consecutive looks like a loop over unrelated addresses: it is not vectorised, or only
//! with gathers and scatters. Rewriting such an address as `getelementptr i8, (inttoptr base), offset`
//! exposes the offset's evolution. Host memory is flat, so both forms reach the same byte.

use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::LLVMOpcode;
use inkwell::module::Module;

/// Whether `v` looks like a scaled index rather than a base address.
fn looks_like_offset(v: LLVMValueRef) -> bool {
    unsafe {
        if !LLVMIsAConstantInt(v).is_null() {
            return true;
        }
        if LLVMIsAInstruction(v).is_null() {
            return false;
        }
        matches!(
            LLVMGetInstructionOpcode(v),
            LLVMOpcode::LLVMShl | LLVMOpcode::LLVMMul | LLVMOpcode::LLVMSExt | LLVMOpcode::LLVMZExt
        )
    }
}

/// Rewrites every scalar `inttoptr (add a, b)` in the module, repeatedly, so nested sums become chains
/// of byte offsets from the innermost base.
pub fn split_address_sums(module: &Module<'_>) {
    let m = module.as_mut_ptr();
    unsafe {
        let ctx = LLVMGetModuleContext(m);
        let i8t = LLVMInt8TypeInContext(ctx);
        let builder = LLVMCreateBuilderInContext(ctx);
        for _ in 0..8 {
            let mut found = vec![];
            let mut f = LLVMGetFirstFunction(m);
            while !f.is_null() {
                let mut bb = LLVMGetFirstBasicBlock(f);
                while !bb.is_null() {
                    let mut i = LLVMGetFirstInstruction(bb);
                    while !i.is_null() {
                        if LLVMGetInstructionOpcode(i) == LLVMOpcode::LLVMIntToPtr {
                            let sum = LLVMGetOperand(i, 0);
                            let scalar =
                                LLVMGetTypeKind(LLVMTypeOf(i)) == inkwell::llvm_sys::LLVMTypeKind::LLVMPointerTypeKind;
                            if scalar
                                && !LLVMIsAInstruction(sum).is_null()
                                && LLVMGetInstructionOpcode(sum) == LLVMOpcode::LLVMAdd
                            {
                                found.push(i);
                            }
                        }
                        i = LLVMGetNextInstruction(i);
                    }
                    bb = LLVMGetNextBasicBlock(bb);
                }
                f = LLVMGetNextFunction(f);
            }
            if found.is_empty() {
                break;
            }
            for i in found {
                let sum = LLVMGetOperand(i, 0);
                let (a, b) = (LLVMGetOperand(sum, 0), LLVMGetOperand(sum, 1));
                let (base, offset) = if looks_like_offset(a) && !looks_like_offset(b) {
                    (b, a)
                } else {
                    (a, b)
                };
                LLVMPositionBuilderBefore(builder, i);
                let p = LLVMBuildIntToPtr(builder, base, LLVMTypeOf(i), c"base".as_ptr());
                let mut idx = [offset];
                let g = LLVMBuildGEP2(builder, i8t, p, idx.as_mut_ptr(), 1, c"addr".as_ptr());
                LLVMReplaceAllUsesWith(i, g);
                LLVMInstructionEraseFromParent(i);
            }
        }
        LLVMDisposeBuilder(builder);
    }
}
