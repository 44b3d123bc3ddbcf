//! Warp collectives inside a group. A group is a whole warp when the CTA's x extent is a multiple of
//! 32; when all of its lanes reach a `shfl`, `vote` or `bar.warp.sync` together, the group exchanges
//! the values itself and goes on into the region after the collective, where the thread body would
//! stop for the runtime to release the warp. A group that is not a whole warp, or whose lanes arrive
//! apart, stops there as the thread body does (its operands are published and its registers saved
//! by the code before the stop), and the runtime takes over.

use super::{const_int, marked, Lanes, LANES};
use crate::collective::Kind;
use crate::ir::instructions;
use crate::lower::regions::{COLLECTIVE_RESULT, PUBLISHED};
use crate::regions::{DONE, WAIT, WARP};
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::LLVMIntPredicate::*;
use inkwell::llvm_sys::LLVMOpcode;

// A group is one warp, lane for lane.
const _: () = assert!(LANES == 32);

/// The collective whose result call `i` reads (`COLLECTIVE_RESULT`), when a group can compute it.
fn exchange_kind(i: LLVMValueRef) -> Option<Kind> {
    let kind = Kind::from_code(const_int(unsafe { LLVMGetOperand(i, 1) })? as u32)?;
    kind.is_shfl_or_vote().then_some(kind)
}

/// For a block ending in a warp collective's stop (`ret k | WAIT | WARP`), the block its region
/// resumes at (the case of `k | WARP` in the thread body's switch on its state, `entry_switch`), and
/// the state; None when the group could not go on there itself.
pub(super) fn resume_after(b: LLVMBasicBlockRef, entry_switch: LLVMValueRef) -> Option<(LLVMBasicBlockRef, u32)> {
    unsafe {
        let t = LLVMGetBasicBlockTerminator(b);
        if t.is_null() || LLVMGetInstructionOpcode(t) != LLVMOpcode::LLVMRet || LLVMGetNumOperands(t) != 1 {
            return None;
        }
        let stop = const_int(LLVMGetOperand(t, 0))? as u32;
        if stop == DONE || stop & (WAIT | WARP) != WAIT | WARP {
            return None;
        }
        let state = stop & !WAIT;
        let resume = super::switch_target(entry_switch, state as u64)?;
        if resume == LLVMGetSwitchDefaultDest(entry_switch) {
            return None;
        }
        for i in crate::ir::instructions(resume) {
            if crate::ir::opcode(i) == Some(LLVMOpcode::LLVMCall) && marked(i, COLLECTIVE_RESULT) {
                exchange_kind(i)?;
            }
        }
        Some((resume, state))
    }
}

impl Lanes {
    /// At the start of resume block `state`'s code for the lanes of `m` (`full`: all of them): unless
    /// the group is a whole warp with every lane here, these lanes stop as the thread body does, and
    /// the code goes on to `dispatch`. The builder is left where the exchange goes on.
    pub(super) fn warp_or_stop(
        &mut self,
        state: u32,
        m: LLVMValueRef,
        full: LLVMValueRef,
        pcv: LLVMValueRef,
        dispatch: LLVMBasicBlockRef,
    ) {
        unsafe {
            let ok = self.and(self.whole_warp, Some(full));
            let on = self.block("lanes.warp");
            let stop = self.block("lanes.stop");
            LLVMBuildCondBr(self.b, ok, on, stop);
            LLVMPositionBuilderAtEnd(self.b, stop);
            self.store_lanes(
                m,
                self.const_splat(LLVMConstInt(self.i32t, (state | WAIT) as u64, 0)),
                self.result,
            );
            let exit = self.const_splat(LLVMConstInt(self.i32t, super::EXIT, 0));
            LLVMBuildStore(self.b, LLVMBuildSelect(self.b, m, exit, pcv, c"".as_ptr()), self.pc);
            LLVMBuildBr(self.b, dispatch);
            LLVMPositionBuilderAtEnd(self.b, on);
        }
    }

    /// Operand `j` of the collective whose result call `i` reads, as a splat, where every block stopping
    /// for it publishes the same constant.
    fn published_const(&self, i: LLVMValueRef, j: usize) -> Option<LLVMValueRef> {
        let resume = unsafe { LLVMGetInstructionParent(i) };
        let mut found = None;
        for (&stop, _) in self.stops_to.iter().filter(|&(_, &r)| r == resume) {
            let st = unsafe { instructions(stop) }
                .into_iter()
                .find(|&st| marked(st, PUBLISHED[j]))?;
            let v = self.constant_int(unsafe { LLVMGetOperand(st, 0) })?;
            if found.is_some_and(|f| f != v) {
                return None;
            }
            found = Some(v);
        }
        found.map(|v| self.const_splat(v))
    }

    /// `v` as an integer constant: a constant, or a read of a uniform register only ever written with it
    /// (as `mov.b32 %r51, 16` sets up a shuffle's lane).
    fn constant_int(&self, v: LLVMValueRef) -> Option<LLVMValueRef> {
        unsafe {
            if !LLVMIsAConstantInt(v).is_null() {
                return Some(v);
            }
            if crate::ir::opcode(v) != Some(LLVMOpcode::LLVMLoad) || !self.uni.contains_key(&LLVMGetOperand(v, 0)) {
                return None;
            }
            let mut written = crate::ir::users(LLVMGetOperand(v, 0))
                .into_iter()
                .filter(|&u| crate::ir::opcode(u) == Some(LLVMOpcode::LLVMStore))
                .map(|st| LLVMGetOperand(st, 0));
            let c = written.next()?;
            (!LLVMIsAConstantInt(c).is_null() && written.all(|w| w == c)).then_some(c)
        }
    }

    /// A store that publishes a collective's operand: also kept in the group's own copy.
    pub(super) fn publish(&self, i: LLVMValueRef, v: LLVMValueRef, m: LLVMValueRef) {
        for (j, name) in PUBLISHED.iter().enumerate() {
            if marked(i, name) && unsafe { LLVMTypeOf(v) } == self.vt(self.i32t) {
                self.store_lanes(m, v, self.published[j]);
            }
        }
    }

    /// The result of collective-result call `i` for a whole warp that arrived together, computed from
    /// the published operands as the runtime would (`value | valid << 32` for `shfl`).
    pub(super) fn exchange(&self, i: LLVMValueRef) -> Option<LLVMValueRef> {
        let kind = exchange_kind(i)?;
        unsafe {
            let b = self.b;
            let vi32 = self.vt(self.i32t);
            let vi64 = self.vt(self.i64t);
            let n = |k: u64| self.const_splat(LLVMConstInt(self.i32t, k, 0));
            let get = |j: usize| LLVMBuildLoad2(b, vi32, self.published[j], c"".as_ptr());
            let a = get(0);
            if let Some(mode) = kind.vote_mode() {
                let on = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, a, n(1), c"".as_ptr()), n(0), c"".as_ptr());
                let ballot = self.bits(on);
                let all = LLVMBuildICmp(b, LLVMIntEQ, ballot, LLVMConstAllOnes(LLVMTypeOf(ballot)), c"".as_ptr());
                let none = LLVMBuildICmp(b, LLVMIntEQ, ballot, LLVMConstNull(LLVMTypeOf(ballot)), c"".as_ptr());
                let r = match mode {
                    0 => LLVMBuildZExt(b, all, self.i64t, c"".as_ptr()),
                    1 => LLVMBuildZExt(b, LLVMBuildNot(b, none, c"".as_ptr()), self.i64t, c"".as_ptr()),
                    2 => LLVMBuildZExt(b, LLVMBuildOr(b, all, none, c"".as_ptr()), self.i64t, c"".as_ptr()),
                    _ => LLVMBuildZExt(b, ballot, self.i64t, c"".as_ptr()),
                };
                return Some(self.splat(r));
            }
            // The source lane, as `shfl_source` in ptx-jit's fibers.
            let (bv, c) = (
                self.published_const(i, 1).unwrap_or_else(|| get(1)),
                self.published_const(i, 2).unwrap_or_else(|| get(2)),
            );
            let bval = LLVMBuildAnd(b, bv, n(31), c"".as_ptr());
            let cval = LLVMBuildAnd(b, c, n(31), c"".as_ptr());
            let seg = LLVMBuildAnd(b, LLVMBuildLShr(b, c, n(8), c"".as_ptr()), n(31), c"seg".as_ptr());
            let not_seg = LLVMBuildNot(b, seg, c"".as_ptr());
            let l = self.iota(self.i32t, 1);
            let min_lane = LLVMBuildAnd(b, l, seg, c"".as_ptr());
            let max_lane = LLVMBuildOr(
                b,
                min_lane,
                LLVMBuildAnd(b, cval, not_seg, c"".as_ptr()),
                c"max".as_ptr(),
            );
            let (j, valid) = match kind.shfl_mode().unwrap_or(0) {
                0 => {
                    let j = LLVMBuildSub(b, l, bval, c"".as_ptr());
                    (j, LLVMBuildICmp(b, LLVMIntSGE, j, max_lane, c"".as_ptr()))
                }
                1 => {
                    let j = LLVMBuildAdd(b, l, bval, c"".as_ptr());
                    (j, LLVMBuildICmp(b, LLVMIntSLE, j, max_lane, c"".as_ptr()))
                }
                2 => {
                    let j = LLVMBuildXor(b, l, bval, c"".as_ptr());
                    (j, LLVMBuildICmp(b, LLVMIntSLE, j, max_lane, c"".as_ptr()))
                }
                _ => {
                    let j = LLVMBuildOr(b, min_lane, LLVMBuildAnd(b, bval, not_seg, c"".as_ptr()), c"".as_ptr());
                    (j, LLVMBuildICmp(b, LLVMIntSLE, j, max_lane, c"".as_ptr()))
                }
            };
            let src = LLVMBuildAnd(b, LLVMBuildSelect(b, valid, j, l, c"".as_ptr()), n(31), c"src".as_ptr());
            let value = if LLVMIsAConstant(src).is_null() {
                // Lane `src`'s value: from a copy of the lanes in memory.
                LLVMBuildStore(b, a, self.table);
                let mut idx = [src];
                let at = LLVMBuildGEP2(b, self.i32t, self.table, idx.as_mut_ptr(), 1, c"".as_ptr());
                self.masked(
                    "llvm.masked.gather",
                    &mut [vi32, self.vt(self.ptr)],
                    &[at, self.all_on(), LLVMGetPoison(vi32)],
                    0,
                )?
            } else {
                // Operands known here (the usual `shfl.sync.down.b32 d, a, 16, 31, -1`): a fixed
                // permutation of the lanes.
                LLVMBuildShuffleVector(b, a, LLVMGetPoison(vi32), src, c"".as_ptr())
            };
            let value = LLVMBuildZExt(b, value, vi64, c"".as_ptr());
            let valid = LLVMBuildShl(
                b,
                LLVMBuildZExt(b, valid, vi64, c"".as_ptr()),
                self.const_splat(LLVMConstInt(self.i64t, 32, 0)),
                c"".as_ptr(),
            );
            Some(LLVMBuildOr(b, value, valid, c"shfl".as_ptr()))
        }
    }
}
