//! Small queries on LLVM IR through the C API, shared by the lowering's own passes and the host
//! optimiser's (ptx-jit).
//!
//! # Safety
//!
//! Each function takes a raw LLVM reference, which must point at a live value (or block) of a module
//! that outlives the call.

use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::{LLVMBasicBlockRef, LLVMValueRef};
use inkwell::llvm_sys::LLVMOpcode;

/// The instructions (and other values) that use `v`.
///
/// # Safety
/// `v` is a live value (module header).
pub unsafe fn users(v: LLVMValueRef) -> Vec<LLVMValueRef> {
    let mut out = vec![];
    unsafe {
        let mut u = LLVMGetFirstUse(v);
        while !u.is_null() {
            out.push(LLVMGetUser(u));
            u = LLVMGetNextUse(u);
        }
    }
    out
}

/// `v`'s opcode when it is an instruction.
///
/// # Safety
/// `v` is a live value (module header).
pub unsafe fn opcode(v: LLVMValueRef) -> Option<LLVMOpcode> {
    unsafe { (!LLVMIsAInstruction(v).is_null()).then(|| LLVMGetInstructionOpcode(v)) }
}

/// The instructions of a block, in order.
///
/// # Safety
/// `bb` is a live block (module header).
pub unsafe fn instructions(bb: LLVMBasicBlockRef) -> Vec<LLVMValueRef> {
    let mut out = vec![];
    unsafe {
        let mut i = LLVMGetFirstInstruction(bb);
        while !i.is_null() {
            out.push(i);
            i = LLVMGetNextInstruction(i);
        }
    }
    out
}
