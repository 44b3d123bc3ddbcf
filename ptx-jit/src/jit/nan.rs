//! The host lowering makes every f32 NaN result the GPU's canonical NaN (`0x7fffffff`) with a compare
//! and a select after the operation (`ptx_llvm`'s `canon`). In a chain of dependent operations, such
//! as a sum accumulated in a loop, those two instructions sit on the critical path of every step.
//!
//! The payload of a NaN only matters where its bits can be seen. A canonicalisation can go when every
//! use of its result is blind to the payload: a comparison, or an arithmetic operation (any NaN
//! operand gives a NaN result) whose own result is canonicalised, possibly through bit casts, phis and
//! selects.
//! The last canonicalisation of a chain stays, so what is stored or moved as bits is unchanged.

use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMOpcode, LLVMRealPredicate};
use inkwell::module::Module;
use ptx_llvm::ir::{opcode, users};
use std::collections::HashSet;

const CANONICAL: u64 = 0x7fff_ffff;

pub fn drop_inner_canonicalisations(module: &Module<'_>) {
    unsafe {
        let mut f = LLVMGetFirstFunction(module.as_mut_ptr());
        while !f.is_null() {
            let mut doomed = vec![];
            let mut bb = LLVMGetFirstBasicBlock(f);
            while !bb.is_null() {
                let mut i = LLVMGetFirstInstruction(bb);
                while !i.is_null() {
                    if let Some(value) = canonicalised(i) {
                        if uses_blind(i, &mut HashSet::new()) {
                            doomed.push((i, value));
                        }
                    }
                    i = LLVMGetNextInstruction(i);
                }
                bb = LLVMGetNextBasicBlock(bb);
            }
            for (select, value) in doomed {
                LLVMReplaceAllUsesWith(select, value);
                LLVMInstructionEraseFromParent(select);
            }
            f = LLVMGetNextFunction(f);
        }
    }
}

/// For `select (fcmp uno f, f), 0x7fffffff, (bitcast f)`: the value selected when `f` is not a NaN.
unsafe fn canonicalised(s: LLVMValueRef) -> Option<LLVMValueRef> {
    if opcode(s)? != LLVMOpcode::LLVMSelect {
        return None;
    }
    let (cond, nan, value) = (LLVMGetOperand(s, 0), LLVMGetOperand(s, 1), LLVMGetOperand(s, 2));
    if !canonical_nan(nan) {
        return None;
    }
    if opcode(cond)? != LLVMOpcode::LLVMFCmp || LLVMGetFCmpPredicate(cond) != LLVMRealPredicate::LLVMRealUNO {
        return None;
    }
    let f = LLVMGetOperand(cond, 0);
    let cast = opcode(value)? == LLVMOpcode::LLVMBitCast && LLVMGetOperand(value, 0) == f;
    cast.then_some(value)
}

/// Whether `c` is the canonical NaN's bits, or a vector of them (lane-vectorised regions).
unsafe fn canonical_nan(c: LLVMValueRef) -> bool {
    let is =
        |c: LLVMValueRef| !c.is_null() && !LLVMIsAConstantInt(c).is_null() && LLVMConstIntGetZExtValue(c) == CANONICAL;
    let ty = LLVMTypeOf(c);
    if LLVMGetTypeKind(ty) == inkwell::llvm_sys::LLVMTypeKind::LLVMVectorTypeKind && !LLVMIsAConstant(c).is_null() {
        return (0..LLVMGetVectorSize(ty)).all(|k| is(LLVMGetAggregateElement(c, k)));
    }
    is(c)
}

/// Whether no use of `v` (through bit casts and phis) can tell one NaN from another.
unsafe fn uses_blind(v: LLVMValueRef, seen: &mut HashSet<LLVMValueRef>) -> bool {
    if !seen.insert(v) {
        return true;
    }
    users(v).into_iter().all(|u| match opcode(u) {
        Some(LLVMOpcode::LLVMBitCast | LLVMOpcode::LLVMPHI) => uses_blind(u, seen),
        // A value chosen (as lane-vectorised registers are blended), not the condition choosing.
        Some(LLVMOpcode::LLVMSelect) if LLVMGetOperand(u, 0) != v => uses_blind(u, seen),
        Some(LLVMOpcode::LLVMFCmp) => true,
        Some(LLVMOpcode::LLVMFAdd | LLVMOpcode::LLVMFSub | LLVMOpcode::LLVMFMul | LLVMOpcode::LLVMFDiv) => {
            result_canonicalised(u)
        }
        Some(LLVMOpcode::LLVMCall) if is_fma(u) => result_canonicalised(u),
        _ => false,
    })
}

unsafe fn is_fma(call: LLVMValueRef) -> bool {
    let callee = LLVMGetCalledValue(call);
    if LLVMIsAFunction(callee).is_null() {
        return false;
    }
    let mut len = 0;
    let name = LLVMGetValueName2(callee, &mut len);
    let name = std::slice::from_raw_parts(name as *const u8, len);
    name.starts_with(b"llvm.fma.") || name.starts_with(b"llvm.fmuladd.")
}

/// Whether every use of the arithmetic result `r` is its own canonicalisation.
unsafe fn result_canonicalised(r: LLVMValueRef) -> bool {
    users(r).into_iter().all(|u| match opcode(u) {
        Some(LLVMOpcode::LLVMFCmp) => true,
        Some(LLVMOpcode::LLVMBitCast) => users(u).into_iter().all(|s| canonicalised(s) == Some(u)),
        _ => false,
    })
}
