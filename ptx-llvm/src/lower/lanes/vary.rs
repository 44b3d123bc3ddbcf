//! How the values of a thread body vary across the lanes of a group: the same in every lane
//! (uniform: one scalar serves them all), or lane 0's value plus the lane number times a constant
//! stride (affine: `tid.x`, and the indices and addresses computed from it). An access whose address
//! is affine with the element's size as stride is one vector access, known without comparing the
//! lanes' addresses.

use super::{pure_function, tid_dim};
use crate::ir::instructions;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMAtomicOrdering, LLVMOpcode, LLVMTypeKind};
use std::collections::{HashMap, HashSet};

/// Which values of the blocks (entry first) are the same in every lane, and which registers hold only
/// such values. A register counts when it is written once, with a uniform value: a lane reads either
/// that value or one never written (PTX leaves those undefined); stores that recompute it at a resume
/// point (`regions::RECOMPUTED`) write that value again, and count when they too store a uniform value.
/// A value is uniform when it is computed purely from uniform values, or loaded from a uniform address
/// or register; `tid.x` is not.
pub(super) fn uniform_values(
    blocks: &[LLVMBasicBlockRef],
    env: LLVMValueRef,
    state: LLVMValueRef,
) -> (HashSet<LLVMValueRef>, HashSet<LLVMValueRef>) {
    use LLVMOpcode::*;
    let body: Vec<LLVMValueRef> = blocks.iter().flat_map(|&b| unsafe { instructions(b) }).collect();
    let mut stores: HashMap<LLVMValueRef, Vec<LLVMValueRef>> = HashMap::new();
    for &i in &body {
        if unsafe { LLVMGetInstructionOpcode(i) } == LLVMStore {
            let p = unsafe { LLVMGetOperand(i, 1) };
            if unsafe { !LLVMIsAAllocaInst(p).is_null() } {
                stores.entry(p).or_default().push(i);
            }
        }
    }
    let recomputed = |st: &LLVMValueRef| super::marked(*st, crate::lower::regions::RECOMPUTED);
    let mut regs: HashSet<LLVMValueRef> = stores
        .iter()
        .filter(|(_, v)| v.iter().filter(|st| !recomputed(st)).count() == 1)
        .map(|(&r, _)| r)
        .collect();
    loop {
        let mut uniform: HashSet<LLVMValueRef> = HashSet::new();
        let is = |u: &HashSet<LLVMValueRef>, v: LLVMValueRef| unsafe {
            !LLVMIsAConstant(v).is_null() || v == env || v == state || u.contains(&v)
        };
        for &i in &body {
            let op = unsafe { LLVMGetInstructionOpcode(i) };
            let operands = |u: &HashSet<LLVMValueRef>| unsafe {
                (0..LLVMGetNumOperands(i) as u32).all(|k| is(u, LLVMGetOperand(i, k)))
            };
            let same = unsafe {
                match op {
                    LLVMLoad => {
                        let p = LLVMGetOperand(i, 0);
                        if !LLVMIsAAllocaInst(p).is_null() {
                            regs.contains(&p)
                        } else {
                            LLVMGetVolatile(i) == 0
                                && LLVMGetOrdering(i) == LLVMAtomicOrdering::LLVMAtomicOrderingNotAtomic
                                && tid_dim(i, env) != Some(0)
                                && is(&uniform, p)
                        }
                    }
                    LLVMCall => {
                        let f = LLVMGetCalledValue(i);
                        !LLVMIsAFunction(f).is_null()
                            && LLVMGetIntrinsicID(f) != 0
                            && pure_function(f)
                            && LLVMGetTypeKind(LLVMTypeOf(i)) != LLVMTypeKind::LLVMVoidTypeKind
                            && operands(&uniform)
                    }
                    LLVMAdd | LLVMFAdd | LLVMSub | LLVMFSub | LLVMMul | LLVMFMul | LLVMFDiv | LLVMFRem | LLVMShl
                    | LLVMLShr | LLVMAShr | LLVMAnd | LLVMOr | LLVMXor | LLVMUDiv | LLVMSDiv | LLVMURem | LLVMSRem
                    | LLVMFNeg | LLVMTrunc | LLVMZExt | LLVMSExt | LLVMFPToUI | LLVMFPToSI | LLVMUIToFP
                    | LLVMSIToFP | LLVMFPTrunc | LLVMFPExt | LLVMPtrToInt | LLVMIntToPtr | LLVMBitCast
                    | LLVMAddrSpaceCast | LLVMICmp | LLVMFCmp | LLVMSelect | LLVMGetElementPtr | LLVMFreeze
                    | LLVMExtractValue => operands(&uniform),
                    _ => false,
                }
            };
            if same {
                uniform.insert(i);
            }
        }
        let kept: HashSet<LLVMValueRef> = regs
            .iter()
            .copied()
            .filter(|r| {
                stores[r]
                    .iter()
                    .all(|&st| is(&uniform, unsafe { LLVMGetOperand(st, 0) }))
            })
            .collect();
        if kept == regs {
            return (uniform, regs);
        }
        regs = kept;
    }
}

/// How a value varies along the lanes: lane `l` holds lane 0's value plus `l × s` (`By(s)`, in the
/// value's own wrapping arithmetic; `By(0)` for uniform values), or not known to (`Varies`).
/// `Unknown` is the analysis's starting point for registers, before any write of theirs is seen.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Stride {
    Unknown,
    By(i64),
    Varies,
}

impl Stride {
    fn map(self, f: impl Fn(i64) -> Option<i64>) -> Stride {
        match self {
            Stride::By(s) => f(s).map_or(Stride::Varies, Stride::By),
            other => other,
        }
    }

    fn map2(self, other: Stride, f: impl Fn(i64, i64) -> Option<i64>) -> Stride {
        match (self, other) {
            (Stride::Varies, _) | (_, Stride::Varies) => Stride::Varies,
            (Stride::Unknown, _) | (_, Stride::Unknown) => Stride::Unknown,
            (Stride::By(a), Stride::By(b)) => f(a, b).map_or(Stride::Varies, Stride::By),
        }
    }

    /// What a register written with both holds.
    fn meet(self, other: Stride) -> Stride {
        match (self, other) {
            (Stride::Unknown, x) | (x, Stride::Unknown) => x,
            (Stride::By(a), Stride::By(b)) if a == b => self,
            _ => Stride::Varies,
        }
    }
}

fn signed_const(v: LLVMValueRef) -> Option<i64> {
    unsafe { (!LLVMIsAConstantInt(v).is_null()).then(|| LLVMConstIntGetSExtValue(v)) }
}

/// The stride of instruction `i`'s result from its operands' (`operand(k)`), for the operations that
/// keep values affine. Extensions keep the stride only where the lanes do not wrap in the narrow
/// type: `no_wrap` builds that condition at run time.
pub(super) fn step(i: LLVMValueRef, operand: &dyn Fn(u32) -> Stride) -> Stride {
    use LLVMOpcode::*;
    unsafe {
        match LLVMGetInstructionOpcode(i) {
            LLVMAdd => operand(0).map2(operand(1), i64::checked_add),
            LLVMSub => operand(0).map2(operand(1), i64::checked_sub),
            LLVMMul => match (signed_const(LLVMGetOperand(i, 0)), signed_const(LLVMGetOperand(i, 1))) {
                (_, Some(c)) => operand(0).map(|s| s.checked_mul(c)),
                (Some(c), _) => operand(1).map(|s| s.checked_mul(c)),
                _ => operand(0).map2(operand(1), |a, b| (a == 0 && b == 0).then_some(0)),
            },
            LLVMShl => match signed_const(LLVMGetOperand(i, 1)) {
                Some(k @ 0..=62) => operand(0).map(|s| s.checked_mul(1 << k)),
                _ => Stride::Varies,
            },
            // The same in every lane where adding the lanes' steps never carries past the shifted-out
            // bits (`no_carry`), as for a thread's warp, `t >> 5`, in a group that is one.
            LLVMLShr | LLVMAShr => match signed_const(LLVMGetOperand(i, 1)) {
                Some(k @ 0..=62) => operand(0).map(|s| (s >= 0 && (super::LANES as i64 - 1) * s < 1 << k).then_some(0)),
                _ => Stride::Varies,
            },
            // A condition the same in every lane picks the same arm in all of them.
            LLVMSelect => match operand(0) {
                Stride::By(0) => operand(1).map2(operand(2), |a, b| (a == b).then_some(a)),
                Stride::Unknown => Stride::Unknown,
                _ => Stride::Varies,
            },
            LLVMSExt | LLVMZExt | LLVMPtrToInt | LLVMIntToPtr => operand(0),
            LLVMTrunc => {
                let bits = LLVMGetIntTypeWidth(LLVMTypeOf(i));
                operand(0).map(|s| (bits >= 64 || s.unsigned_abs() < 1 << (bits - 1)).then_some(s))
            }
            LLVMGetElementPtr => {
                let n = LLVMGetNumOperands(i) as u32;
                if (2..n).all(|k| !LLVMIsAConstantInt(LLVMGetOperand(i, k)).is_null()) && n > 2 {
                    // A constant path into an aggregate after the first index: lane-independent
                    // when that index is.
                    let first = LLVMGetOperand(i, 1);
                    return if LLVMIsAConstantInt(first).is_null() {
                        Stride::Varies
                    } else {
                        operand(0)
                    };
                }
                match (
                    n,
                    super::element_bytes(LLVMGetGEPSourceElementType(i)).map(|b| b as i64),
                ) {
                    (2, Some(size)) => operand(0).map2(operand(1), |b, x| x.checked_mul(size)?.checked_add(b)),
                    _ => Stride::Varies,
                }
            }
            _ => Stride::Varies,
        }
    }
}

/// The stride of each vector register (an alloca of the thread body) that every write in the blocks
/// leaves affine with one stride, found by iterating to a fixed point from `Unknown`. `uniform` and
/// `registers` are `uniform_values`' results (uniform registers have no vector).
pub(super) fn register_strides(
    blocks: &[LLVMBasicBlockRef],
    env: LLVMValueRef,
    uniform: &HashSet<LLVMValueRef>,
    uniform_regs: &HashSet<LLVMValueRef>,
) -> HashMap<LLVMValueRef, i64> {
    let body: Vec<LLVMValueRef> = blocks.iter().flat_map(|&b| unsafe { instructions(b) }).collect();
    let mut regs: HashMap<LLVMValueRef, Stride> = HashMap::new();
    for &i in &body {
        unsafe {
            if LLVMGetInstructionOpcode(i) == LLVMOpcode::LLVMStore {
                let p = LLVMGetOperand(i, 1);
                if !LLVMIsAAllocaInst(p).is_null() && !uniform_regs.contains(&p) {
                    regs.insert(p, Stride::Unknown);
                }
            }
        }
    }
    loop {
        let mut values: HashMap<LLVMValueRef, Stride> = HashMap::new();
        let of = |values: &HashMap<LLVMValueRef, Stride>, v: LLVMValueRef| unsafe {
            if !LLVMIsAConstant(v).is_null() || uniform.contains(&v) || v == env {
                Stride::By(0)
            } else {
                values.get(&v).copied().unwrap_or(Stride::Varies)
            }
        };
        let mut next: HashMap<LLVMValueRef, Stride> = regs.keys().map(|&r| (r, Stride::Unknown)).collect();
        for &i in &body {
            unsafe {
                let s = match LLVMGetInstructionOpcode(i) {
                    LLVMOpcode::LLVMLoad => {
                        let p = LLVMGetOperand(i, 0);
                        if let Some(&r) = regs.get(&p) {
                            r
                        } else if tid_dim(i, env) == Some(0) {
                            Stride::By(1)
                        } else {
                            of(&values, i)
                        }
                    }
                    LLVMOpcode::LLVMStore => {
                        let p = LLVMGetOperand(i, 1);
                        if let Some(r) = next.get_mut(&p) {
                            *r = r.meet(of(&values, LLVMGetOperand(i, 0)));
                        }
                        continue;
                    }
                    _ if uniform.contains(&i) => Stride::By(0),
                    _ => step(i, &|k| of(&values, LLVMGetOperand(i, k))),
                };
                values.insert(i, s);
            }
        }
        if next == regs {
            return regs
                .into_iter()
                .filter_map(|(r, s)| if let Stride::By(s) = s { Some((r, s)) } else { None })
                .collect();
        }
        regs = next;
    }
}

/// An affine value while a group's code is built: lane 0's value (a scalar), the stride, and the
/// condition under which the lanes really are affine (None: always).
#[derive(Clone, Copy)]
pub(super) struct Affine {
    pub first: LLVMValueRef,
    pub stride: i64,
    pub holds: Option<LLVMValueRef>,
}

/// The condition that `LANES` lanes from `first` by `stride` (>= 0) differ only in the low `bits`
/// bits: their low bits never carry into the rest.
pub(super) fn no_carry(b: LLVMBuilderRef, first: LLVMValueRef, stride: i64, bits: u64) -> LLVMValueRef {
    use inkwell::llvm_sys::LLVMIntPredicate::LLVMIntULE;
    unsafe {
        let ty = LLVMTypeOf(first);
        let low = (1u64 << bits) - 1;
        let span = (super::LANES as u64 - 1) * stride as u64;
        let masked = LLVMBuildAnd(b, first, LLVMConstInt(ty, low, 0), c"".as_ptr());
        LLVMBuildICmp(
            b,
            LLVMIntULE,
            masked,
            LLVMConstInt(ty, low - span, 0),
            c"nocarry".as_ptr(),
        )
    }
}

/// The condition that `LANES` lanes from `first` by `stride` do not wrap around in `first`'s type,
/// read as signed or not, and that `given` holds: then extending each lane keeps them affine.
/// `given` picks the bound of one strict comparison (one no value passes where it is false), not a
/// second condition: where it is a register's affine flag, invariant in a loop, the bound is
/// computed before the loop and the test in it is one compare and branch.
pub(super) fn no_wrap(
    b: LLVMBuilderRef,
    first: LLVMValueRef,
    stride: i64,
    signed: bool,
    given: Option<LLVMValueRef>,
) -> LLVMValueRef {
    use inkwell::llvm_sys::LLVMIntPredicate::*;
    unsafe {
        let ty = LLVMTypeOf(first);
        let bits = LLVMGetIntTypeWidth(ty);
        let ctx = LLVMGetTypeContext(ty);
        let bool_const = |v: bool| LLVMConstInt(LLVMInt1TypeInContext(ctx), v as u64, 0);
        if stride == 0 {
            return given.unwrap_or(bool_const(true));
        }
        let span = (super::LANES as u128 - 1) * stride.unsigned_abs() as u128;
        if bits > 64 || span >= 1u128 << bits {
            return bool_const(false);
        }
        // Bounds as two's complement bit patterns of the type: the first that fails, and one that
        // every value fails.
        let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
        let (max, min) = (mask >> 1, (mask >> 1) + 1);
        let span = span as u64;
        let (pred, bound, never) = match (signed, stride > 0) {
            (true, true) => (LLVMIntSLT, max.wrapping_sub(span).wrapping_add(1) & mask, min),
            (true, false) => (LLVMIntSGT, min.wrapping_add(span).wrapping_sub(1) & mask, max),
            (false, true) => (LLVMIntULT, (mask - span).wrapping_add(1) & mask, 0),
            (false, false) => (LLVMIntUGT, span - 1, mask),
        };
        let mut bound = LLVMConstInt(ty, bound, 0);
        if let Some(g) = given {
            bound = LLVMBuildSelect(b, g, bound, LLVMConstInt(ty, never, 0), c"bound".as_ptr());
        }
        LLVMBuildICmp(b, pred, first, bound, c"nowrap".as_ptr())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `i8` start, strides both ways, signed and not, with and without a `given` condition,
    /// against the lanes' values computed without wrapping.
    #[test]
    fn no_wrap_holds_exactly_when_no_lane_leaves_the_range() {
        unsafe {
            let ctx = LLVMContextCreate();
            let b = LLVMCreateBuilderInContext(ctx);
            let (i8t, i1t) = (LLVMInt8TypeInContext(ctx), LLVMInt1TypeInContext(ctx));
            for signed in [false, true] {
                for stride in [1i64, 3, -1, -2] {
                    for given in [None, Some(true), Some(false)] {
                        for first in 0..256u64 {
                            let g = given.map(|v| LLVMConstInt(i1t, v as u64, 0));
                            let c = no_wrap(b, LLVMConstInt(i8t, first, 0), stride, signed, g);
                            assert!(!LLVMIsAConstantInt(c).is_null());
                            let start = if signed { first as u8 as i8 as i64 } else { first as i64 };
                            let range = if signed { -128..=127 } else { 0..=255 };
                            let fits =
                                (0..crate::lower::lanes::LANES as i64).all(|l| range.contains(&(start + l * stride)));
                            let want = fits && given != Some(false);
                            assert_eq!(
                                LLVMConstIntGetZExtValue(c) == 1,
                                want,
                                "first {first} stride {stride} signed {signed} given {given:?}"
                            );
                        }
                    }
                }
            }
            LLVMDisposeBuilder(b);
            LLVMContextDispose(ctx);
        }
    }
}
