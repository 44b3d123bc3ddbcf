//! Guards on the thread index (`if (blockIdx.x * blockDim.x + threadIdx.x < n)`) become, in a loop over
//! a CTA's threads, a condition that changes from lane to lane, so the vectoriser predicates every
//! memory access under it. Masked loads that miss the cache are slow on some CPUs (AMD's Zen issues
//! them without prefetching: twice the time of plain loads for a streaming kernel).
//!
//! Most CTAs are wholly inside or wholly outside such a guard. This pass rewrites an ordering
//! comparison `c(t) = (B + t) <pred> N` (`<`, `<=`, `>`, `>=`, signed or not) of a thread index `t` into
//! `all(B, N) || (c(t) && !none(B, N))`, where `all`/`none` say that `c` holds for every or no `t` of
//! the CTA: `B + t` for `t` in `[0, ntid)` wraps neither as signed nor as unsigned, so `c` is monotone
//! in `t` and its ends decide it. The rewrite holds for each thread on its own values, whatever `B` and
//! `N` are; where they do not depend on the thread, they are invariant in the thread loop and loop
//! unswitching gives the loop a copy with no predication at all.

use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMIntPredicate, LLVMOpcode};
use inkwell::module::Module;
use ptx_llvm::ir::{opcode, users};

/// Byte distance from `tid[d]` to `ntid[d]` in the host environment.
const TID_TO_NTID: u64 =
    (std::mem::offset_of!(ptx_llvm::abi::Env, ntid) - std::mem::offset_of!(ptx_llvm::abi::Env, tid)) as u64;

pub fn version_thread_guards(module: &Module<'_>) {
    let m = module.as_mut_ptr();
    unsafe {
        let ctx = LLVMGetModuleContext(m);
        let kind = LLVMGetMDKindIDInContext(
            ctx,
            ptx_llvm::TID_METADATA.as_ptr() as *const _,
            ptx_llvm::TID_METADATA.len() as u32,
        );
        let builder = LLVMCreateBuilderInContext(ctx);
        let mut f = LLVMGetFirstFunction(m);
        while !f.is_null() {
            for cmp in guards(f, kind) {
                rewrite(ctx, builder, cmp);
            }
            f = LLVMGetNextFunction(f);
        }
        LLVMDisposeBuilder(builder);
    }
}

/// A comparison to rewrite: the icmp, which operand is the thread index, `B`, the `%tid` load and the
/// extension (if any) between the sum and the comparison.
struct Guard {
    cmp: LLVMValueRef,
    index_side: u32,
    base: LLVMValueRef,
    tid: LLVMValueRef,
    ext: Option<LLVMOpcode>,
}

unsafe fn guards(f: LLVMValueRef, kind: u32) -> Vec<Guard> {
    let is_tid = |v: LLVMValueRef| opcode(v) == Some(LLVMOpcode::LLVMLoad) && !LLVMGetMetadata(v, kind).is_null();
    let mut out = vec![];
    let mut bb = LLVMGetFirstBasicBlock(f);
    while !bb.is_null() {
        let mut i = LLVMGetFirstInstruction(bb);
        while !i.is_null() {
            // Only an ordering is monotone in `t` (`!=` and `==` hold at both ends of a CTA and not in
            // between: `if (i != n - 1)`, as in warp-lang's cell offsets).
            let ordering = || {
                !matches!(
                    LLVMGetICmpPredicate(i),
                    LLVMIntPredicate::LLVMIntEQ | LLVMIntPredicate::LLVMIntNE
                )
            };
            if opcode(i) == Some(LLVMOpcode::LLVMICmp) && ordering() {
                for side in 0..2 {
                    let mut x = LLVMGetOperand(i, side);
                    let ext = match opcode(x) {
                        Some(op @ (LLVMOpcode::LLVMSExt | LLVMOpcode::LLVMZExt)) => {
                            x = LLVMGetOperand(x, 0);
                            Some(op)
                        }
                        _ => None,
                    };
                    if opcode(x) != Some(LLVMOpcode::LLVMAdd) {
                        continue;
                    }
                    let (a, b) = (LLVMGetOperand(x, 0), LLVMGetOperand(x, 1));
                    let (tid, base) = match (is_tid(a), is_tid(b)) {
                        (true, false) => (a, b),
                        (false, true) => (b, a),
                        _ => continue,
                    };
                    out.push(Guard {
                        cmp: i,
                        index_side: side,
                        base,
                        tid,
                        ext,
                    });
                    break;
                }
            }
            i = LLVMGetNextInstruction(i);
        }
        bb = LLVMGetNextBasicBlock(bb);
    }
    out
}

unsafe fn rewrite(ctx: LLVMContextRef, b: LLVMBuilderRef, g: Guard) {
    let i32t = LLVMInt32TypeInContext(ctx);
    let i8t = LLVMInt8TypeInContext(ctx);
    let cmp = g.cmp;
    let pred: LLVMIntPredicate = LLVMGetICmpPredicate(cmp);
    let other = LLVMGetOperand(cmp, 1 - g.index_side);
    LLVMPositionBuilderBefore(b, cmp);
    // ntid[d], read next to tid[d].
    let mut off = [LLVMConstInt(LLVMInt64TypeInContext(ctx), TID_TO_NTID, 0)];
    let p = LLVMBuildGEP2(
        b,
        i8t,
        LLVMGetOperand(g.tid, 0),
        off.as_mut_ptr(),
        1,
        c"ntid.p".as_ptr(),
    );
    let ntid = LLVMBuildLoad2(b, i32t, p, c"ntid".as_ptr());
    let last = LLVMBuildSub(b, ntid, LLVMConstInt(i32t, 1, 0), c"".as_ptr());
    let hi = LLVMBuildAdd(b, g.base, last, c"guard.hi".as_ptr());
    let no_wrap = LLVMBuildAnd(
        b,
        LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntSGE, hi, g.base, c"".as_ptr()),
        LLVMBuildICmp(b, LLVMIntPredicate::LLVMIntUGE, hi, g.base, c"".as_ptr()),
        c"guard.nowrap".as_ptr(),
    );
    let at = |v: LLVMValueRef| {
        let v = match g.ext {
            Some(LLVMOpcode::LLVMSExt) => LLVMBuildSExt(b, v, LLVMTypeOf(other), c"".as_ptr()),
            Some(_) => LLVMBuildZExt(b, v, LLVMTypeOf(other), c"".as_ptr()),
            None => v,
        };
        let (l, r) = if g.index_side == 0 { (v, other) } else { (other, v) };
        LLVMBuildICmp(b, pred, l, r, c"".as_ptr())
    };
    let (first, end) = (at(g.base), at(hi));
    let all = LLVMBuildAnd(
        b,
        no_wrap,
        LLVMBuildAnd(b, first, end, c"".as_ptr()),
        c"guard.all".as_ptr(),
    );
    let either = LLVMBuildOr(b, first, end, c"".as_ptr());
    let none = LLVMBuildAnd(
        b,
        no_wrap,
        LLVMBuildNot(b, either, c"".as_ptr()),
        c"guard.none".as_ptr(),
    );
    // Uses of the comparison move to the new value; the comparison itself stays as its operand.
    position_after(b, cmp);
    let some = LLVMBuildAnd(b, cmp, LLVMBuildNot(b, none, c"".as_ptr()), c"".as_ptr());
    let new = LLVMBuildOr(b, all, some, c"guard".as_ptr());
    for user in users(cmp) {
        if user == some {
            continue;
        }
        for k in 0..LLVMGetNumOperands(user) {
            if LLVMGetOperand(user, k as u32) == cmp {
                LLVMSetOperand(user, k as u32, new);
            }
        }
    }
}

unsafe fn position_after(b: LLVMBuilderRef, i: LLVMValueRef) {
    let next = LLVMGetNextInstruction(i);
    if next.is_null() {
        LLVMPositionBuilderAtEnd(b, LLVMGetInstructionParent(i));
    } else {
        LLVMPositionBuilderBefore(b, next);
    }
}
