//! Regions: a kernel whose own body synchronises (and nothing it calls does) is cut at every barrier
//! and warp collective, so a CTA runs as loops over its threads, one region at a time, with no
//! per-thread context switch.
//!
//! The thread body `i32 T(env, state)` starts at region `state` (0: the start; otherwise the point just
//! after stop number k) and returns where the thread stopped: `k | WAIT` (with `WARP` for a warp
//! collective) or `DONE`. Registers (allocas) live in LLVM values within a region; at a stop they are
//! saved to the thread's frame and a resumed region loads them back, so mem2reg still sees ordinary
//! allocas. `.local` arrays live in the frame. Frames are laid out slot by slot across the CTA's threads
//! (`frames + n * offset + t * size`), so a loop over threads touches consecutive addresses.
//!
//! A warp collective becomes a stop: before it the thread publishes its operands in the CTA's exchange
//! buffers (plain stores), and after the warp is released a runtime call with the collective's own
//! kind (and zero operands) reads the result. Which thread calls is in `Steps.cur`.
//!
//! The runtime decides when threads are released (ptx-jit's `regions.rs`), exactly as for fibers:
//! any control flow works, since each thread resumes from its own state. Uniform barriers are merely
//! the fast case, where one unmasked call runs every thread of the CTA through the same region.

use super::*;
use crate::collective::Kind;
use crate::regions::{WAIT, WARP};
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::LLVMOpcode;
use inkwell::llvm_sys::LLVMTypeKind;
use inkwell::values::AsValueRef;

// Field indices of the runtime's per-CTA `Steps` record (`crate::abi::Steps`), which `env.sync` points
// to. A warp collective stores its value `a` at `slots[parity[warp] * nslots + t]` (nslots: the thread
// count rounded up to whole warps) and its `b`, `c` at `args[t]` and `args[nslots + t]` (so that
// consecutive threads write consecutive words).
const STATES: u32 = StepsField::States.index();
const FRAMES: u32 = StepsField::Frames.index();
const STATE: u32 = StepsField::State.index();
const MASKED: u32 = StepsField::Masked.index();
const OR: u32 = StepsField::Or.index();
const AND: u32 = StepsField::And.index();
const CUR: u32 = StepsField::Cur.index();
const SLOTS: u32 = StepsField::Slots.index();
const ARGS: u32 = StepsField::Args.index();
const PARITY: u32 = StepsField::Parity.index();

/// Metadata marking, for the lane vectoriser, a warp collective's three published operands (the
/// stores of `a`, `b`, `c` before its stop) and the call that reads its result after it: a group of
/// lanes that is a whole warp, arriving there together, exchanges the values itself.
pub(super) const PUBLISHED: [&str; 3] = ["ptxjit.published.a", "ptxjit.published.b", "ptxjit.published.c"];
pub(super) const COLLECTIVE_RESULT: &str = "ptxjit.collective";
/// Metadata marking a store that recomputes a register at a resume point: it writes what the
/// register's one other store wrote in the same thread, so the register is still written once.
pub(super) const RECOMPUTED: &str = "ptxjit.recomputed";

/// What `split_regions` made of a thread body.
pub(super) struct Plan {
    pub frame_bytes: u64,
    /// The states a region can start from: 0, then each stop's resume state.
    pub states: Vec<u32>,
}

struct Stop {
    call: LLVMValueRef,
    kind: Kind,
}

/// Bytes of a register's slot, or None for a type the frame does not hold.
fn slot_bytes(ty: LLVMTypeRef) -> Option<u64> {
    unsafe {
        match LLVMGetTypeKind(ty) {
            LLVMTypeKind::LLVMIntegerTypeKind => Some((LLVMGetIntTypeWidth(ty) as u64).div_ceil(8).next_power_of_two()),
            LLVMTypeKind::LLVMHalfTypeKind | LLVMTypeKind::LLVMBFloatTypeKind => Some(2),
            LLVMTypeKind::LLVMFloatTypeKind => Some(4),
            LLVMTypeKind::LLVMDoubleTypeKind | LLVMTypeKind::LLVMPointerTypeKind => Some(8),
            LLVMTypeKind::LLVMArrayTypeKind => Some(slot_bytes(LLVMGetElementType(ty))? * LLVMGetArrayLength2(ty)),
            _ => None,
        }
    }
}

/// The value of a constant operand, also through a register stored once with a constant (as in
/// `mov.b32 %r51, -1; shfl.sync ... %r51`) and through width changes.
fn constant(v: LLVMValueRef) -> Option<u64> {
    unsafe {
        if !LLVMIsAConstantInt(v).is_null() {
            return Some(LLVMConstIntGetZExtValue(v));
        }
        if LLVMIsAInstruction(v).is_null() {
            return None;
        }
        match LLVMGetInstructionOpcode(v) {
            LLVMOpcode::LLVMZExt | LLVMOpcode::LLVMTrunc | LLVMOpcode::LLVMSExt | LLVMOpcode::LLVMBitCast => {
                let inner = constant(LLVMGetOperand(v, 0))?;
                let bits = LLVMGetIntTypeWidth(LLVMTypeOf(v));
                let from = LLVMGetIntTypeWidth(LLVMTypeOf(LLVMGetOperand(v, 0)));
                let inner =
                    if LLVMGetInstructionOpcode(v) == LLVMOpcode::LLVMSExt && from < 64 && inner >> (from - 1) & 1 == 1
                    {
                        inner | !0u64 << from
                    } else {
                        inner
                    };
                Some(if bits >= 64 {
                    inner
                } else {
                    inner & ((1u64 << bits) - 1)
                })
            }
            LLVMOpcode::LLVMLoad => {
                let p = LLVMGetOperand(v, 0);
                if LLVMIsAAllocaInst(p).is_null() {
                    return None;
                }
                let stores: Vec<LLVMValueRef> = users(p)
                    .into_iter()
                    .filter(|&u| LLVMGetInstructionOpcode(u) == LLVMOpcode::LLVMStore)
                    .collect();
                match stores.as_slice() {
                    [st] if LLVMGetOperand(*st, 1) == p => {
                        let c = LLVMGetOperand(*st, 0);
                        (!LLVMIsAConstantInt(c).is_null()).then(|| LLVMConstIntGetZExtValue(c))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

fn const_u32(v: LLVMValueRef) -> Option<u32> {
    unsafe { (!LLVMIsAConstantInt(v).is_null()).then(|| LLVMConstIntGetZExtValue(v) as u32) }
}

use crate::ir::{instructions, users};

/// For each stop, the scalar allocas (indices into `scalars`) whose values may be read after it before
/// being written: only those are saved and restored. Allocas used other than by a load or as a store's
/// address are always taken.
fn live_after_stops(blocks: &[LLVMBasicBlockRef], scalars: &[LLVMValueRef], stops: &[Stop]) -> Vec<Vec<usize>> {
    let m = scalars.len();
    let index: HashMap<LLVMValueRef, usize> = scalars.iter().enumerate().map(|(i, &a)| (a, i)).collect();
    let mut always = vec![false; m];
    for (i, &a) in scalars.iter().enumerate() {
        for u in unsafe { users(a) } {
            let op = unsafe { LLVMGetInstructionOpcode(u) };
            let plain = match op {
                LLVMOpcode::LLVMLoad => true,
                LLVMOpcode::LLVMStore => (unsafe { LLVMGetOperand(u, 0) }) != a,
                _ => false,
            };
            always[i] |= !plain;
        }
    }
    // What an instruction does to the allocas: (index, is a read).
    let access = |i: LLVMValueRef| -> Option<(usize, bool)> {
        match unsafe { LLVMGetInstructionOpcode(i) } {
            LLVMOpcode::LLVMLoad => index.get(&unsafe { LLVMGetOperand(i, 0) }).map(|&a| (a, true)),
            LLVMOpcode::LLVMStore => index.get(&unsafe { LLVMGetOperand(i, 1) }).map(|&a| (a, false)),
            _ => None,
        }
    };
    // Backwards through a run of instructions: reads make live, writes make dead.
    let step_back = |live: &mut Vec<bool>, ins: &[LLVMValueRef]| {
        for &i in ins.iter().rev() {
            if let Some((a, read)) = access(i) {
                live[a] = read;
            }
        }
    };
    let bindex: HashMap<LLVMBasicBlockRef, usize> = blocks.iter().enumerate().map(|(i, &b)| (b, i)).collect();
    let body: Vec<Vec<LLVMValueRef>> = blocks.iter().map(|&b| unsafe { instructions(b) }).collect();
    let succs: Vec<Vec<usize>> = blocks
        .iter()
        .map(|&b| unsafe {
            let t = LLVMGetBasicBlockTerminator(b);
            if t.is_null() {
                return vec![];
            }
            (0..LLVMGetNumSuccessors(t))
                .map(|k| bindex[&LLVMGetSuccessor(t, k)])
                .collect()
        })
        .collect();
    let mut live_in = vec![vec![false; m]; blocks.len()];
    loop {
        let mut changed = false;
        for b in (0..blocks.len()).rev() {
            let mut live = vec![false; m];
            for &s in &succs[b] {
                for a in 0..m {
                    live[a] |= live_in[s][a];
                }
            }
            step_back(&mut live, &body[b]);
            if live != live_in[b] {
                live_in[b] = live;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    stops
        .iter()
        .map(|s| {
            let bb = unsafe { LLVMGetInstructionParent(s.call) };
            let b = bindex[&bb];
            let mut live = vec![false; m];
            for &sc in &succs[b] {
                for a in 0..m {
                    live[a] |= live_in[sc][a];
                }
            }
            let at = body[b].iter().position(|&i| i == s.call).expect("stop");
            step_back(&mut live, &body[b][at + 1..]);
            (0..m).filter(|&a| live[a] || always[a]).collect()
        })
        .collect()
}

/// Registers worth recomputing at a resume point rather than restoring from the frame: stored once,
/// with a value computed by plain arithmetic from the launch and the thread's identity (environment
/// fields, parameters, constants) and other such registers. Typical are addresses such as
/// `shared + tid.x * 4`: recomputed, LLVM sees how they advance from thread to thread and vectorises
/// the accesses of a thread loop; restored, they would be opaque. Maps the alloca to its value.
fn recomputable(scalars: &[LLVMValueRef], env: LLVMValueRef) -> HashMap<LLVMValueRef, LLVMValueRef> {
    let mut def = HashMap::new();
    for &a in scalars {
        let us = unsafe { users(a) };
        let stores: Vec<LLVMValueRef> = us
            .iter()
            .copied()
            .filter(|&u| unsafe { LLVMGetInstructionOpcode(u) } == LLVMOpcode::LLVMStore)
            .collect();
        let plain = us.iter().all(|&u| unsafe {
            match LLVMGetInstructionOpcode(u) {
                LLVMOpcode::LLVMLoad => true,
                LLVMOpcode::LLVMStore => LLVMGetOperand(u, 1) == a && LLVMGetOperand(u, 0) != a,
                _ => false,
            }
        });
        if plain && stores.len() == 1 {
            def.insert(a, unsafe { LLVMGetOperand(stores[0], 0) });
        }
    }
    // A value is invariant if everything it is computed from is; `None` marks one being decided, so a
    // cycle counts as not invariant.
    fn invariant(
        v: LLVMValueRef,
        env: LLVMValueRef,
        def: &HashMap<LLVMValueRef, LLVMValueRef>,
        memo: &mut HashMap<LLVMValueRef, Option<bool>>,
    ) -> bool {
        unsafe {
            if !LLVMIsAConstant(v).is_null() {
                return true;
            }
            if !LLVMIsAArgument(v).is_null() {
                return v == env;
            }
            if LLVMIsAInstruction(v).is_null() {
                return false;
            }
            match memo.get(&v) {
                Some(Some(r)) => return *r,
                Some(None) => return false,
                None => {}
            }
            memo.insert(v, None);
            use LLVMOpcode::*;
            let op = LLVMGetInstructionOpcode(v);
            let operands = |memo: &mut HashMap<_, _>| {
                (0..LLVMGetNumOperands(v) as u32).all(|i| invariant(LLVMGetOperand(v, i), env, def, memo))
            };
            let r = match op {
                LLVMLoad if LLVMGetVolatile(v) == 0 => {
                    let p = LLVMGetOperand(v, 0);
                    if let Some(&d) = def.get(&p) {
                        invariant(d, env, def, memo)
                    } else {
                        // Environment fields, and the argument buffer that field 0 points to.
                        let root = strip_geps(p);
                        let params = !LLVMIsALoadInst(root).is_null()
                            && strip_geps(LLVMGetOperand(root, 0)) == env
                            && field_of(LLVMGetOperand(root, 0)) == Some(0);
                        (root == env || params) && invariant(p, env, def, memo)
                    }
                }
                LLVMAdd | LLVMSub | LLVMMul | LLVMShl | LLVMLShr | LLVMAShr | LLVMAnd | LLVMOr | LLVMXor
                | LLVMTrunc | LLVMZExt | LLVMSExt | LLVMPtrToInt | LLVMIntToPtr | LLVMBitCast | LLVMGetElementPtr
                | LLVMICmp | LLVMSelect => operands(memo),
                _ => false,
            };
            memo.insert(v, Some(r));
            r
        }
    }
    let mut memo = HashMap::new();
    def.iter()
        .filter(|&(_, &v)| invariant(v, env, &def, &mut memo))
        .map(|(&a, &v)| (a, v))
        .collect()
}

/// Emits a copy of `v`'s computation at the builder, following loads of recomputable registers to
/// their definitions.
fn recompute(
    b: LLVMBuilderRef,
    v: LLVMValueRef,
    remat: &HashMap<LLVMValueRef, LLVMValueRef>,
    done: &mut HashMap<LLVMValueRef, LLVMValueRef>,
) -> LLVMValueRef {
    unsafe {
        if LLVMIsAInstruction(v).is_null() {
            return v;
        }
        if let Some(&c) = done.get(&v) {
            return c;
        }
        let c = if LLVMGetInstructionOpcode(v) == LLVMOpcode::LLVMLoad && remat.contains_key(&LLVMGetOperand(v, 0)) {
            recompute(b, remat[&LLVMGetOperand(v, 0)], remat, done)
        } else {
            let ops: Vec<LLVMValueRef> = (0..LLVMGetNumOperands(v) as u32)
                .map(|i| recompute(b, LLVMGetOperand(v, i), remat, done))
                .collect();
            let c = LLVMInstructionClone(v);
            for (i, o) in ops.into_iter().enumerate() {
                LLVMSetOperand(c, i as u32, o);
            }
            LLVMInsertIntoBuilder(b, c);
            c
        };
        done.insert(v, c);
        c
    }
}

/// The pointer under any chain of GEPs.
fn strip_geps(mut p: LLVMValueRef) -> LLVMValueRef {
    unsafe {
        while !LLVMIsAGetElementPtrInst(p).is_null() {
            p = LLVMGetOperand(p, 0);
        }
    }
    p
}

/// The struct field a `getelementptr %T, ptr, 0, field` selects.
fn field_of(p: LLVMValueRef) -> Option<u32> {
    unsafe {
        if LLVMIsAGetElementPtrInst(p).is_null() || LLVMGetNumOperands(p) < 3 {
            return None;
        }
        const_u32(LLVMGetOperand(p, 2))
    }
}

impl<'ctx> Lowerer<'ctx> {
    /// Marks instruction `i` for the lane vectoriser with the empty metadata `name` (read by
    /// `lanes::marked`).
    fn mark(&self, i: inkwell::values::InstructionValue<'ctx>, name: &str) {
        i.set_metadata(self.ctx.metadata_node(&[]), self.ctx.get_kind_id(name))
            .expect("metadata");
    }

    /// A call of `env->collective` (the callee is loaded from the environment's `EnvField::Collective`),
    /// with its kind.
    fn collective_call(&self, i: LLVMValueRef, env: LLVMValueRef) -> Option<Option<Kind>> {
        unsafe {
            if LLVMGetInstructionOpcode(i) != LLVMOpcode::LLVMCall {
                return None;
            }
            let callee = LLVMGetCalledValue(i);
            if LLVMIsALoadInst(callee).is_null() {
                return None;
            }
            let gep = LLVMGetOperand(callee, 0);
            let is_field = !LLVMIsAGetElementPtrInst(gep).is_null()
                && LLVMGetOperand(gep, 0) == env
                && LLVMGetNumOperands(gep) == 3
                && const_u32(LLVMGetOperand(gep, 2)) == Some(EnvField::Collective as u32);
            is_field.then(|| const_u32(LLVMGetOperand(i, 1)).and_then(Kind::from_code))
        }
    }

    /// Whether `f` calls `env->collective` for something that waits for other threads (a yield, as of
    /// `nanosleep`, does not).
    pub(super) fn calls_collective(&self, f: FunctionValue<'ctx>) -> bool {
        let env = f.get_nth_param(0).expect("env").as_value_ref();
        f.get_basic_blocks()
            .iter()
            .flat_map(|b| unsafe { instructions(b.as_mut_ptr()) })
            .any(|i| matches!(self.collective_call(i, env), Some(k) if k != Some(Kind::Yield)))
    }

    /// Cuts the thread body `tf` at its barriers and warp collectives. None (and `tf` untouched) when
    /// its shape is outside what regions handle; the kernel then runs on fibers.
    pub(super) fn split_regions(&mut self, tf: FunctionValue<'ctx>) -> R<Option<Plan>> {
        let f = tf.as_value_ref();
        let env = tf.get_nth_param(0).expect("env").as_value_ref();
        let blocks: Vec<LLVMBasicBlockRef> = tf.get_basic_blocks().iter().map(|b| b.as_mut_ptr()).collect();
        let entry = blocks[0];
        let mut allocas = vec![];
        let mut stops = vec![];
        for &bb in &blocks {
            for i in unsafe { instructions(bb) } {
                let op = unsafe { LLVMGetInstructionOpcode(i) };
                match op {
                    LLVMOpcode::LLVMAlloca => {
                        let ty = unsafe { LLVMGetAllocatedType(i) };
                        let fixed = unsafe { const_u32(LLVMGetOperand(i, 0)) } == Some(1);
                        if bb != entry || !fixed || slot_bytes(ty).is_none() {
                            return Ok(None);
                        }
                        allocas.push(i);
                    }
                    // Phis would need their incoming blocks moved with the split; the lowering makes none.
                    LLVMOpcode::LLVMPHI => return Ok(None),
                    _ => {}
                }
                // Only allocas may be used across blocks: the lowering keeps every other value local.
                if op != LLVMOpcode::LLVMAlloca
                    && unsafe { users(i) }
                        .iter()
                        .any(|&u| unsafe { LLVMGetInstructionParent(u) } != bb)
                {
                    return Ok(None);
                }
                // Regions handle barrier 0 of the whole CTA without a reduction, and warp collectives
                // of the full warp; named barriers, thread counts, `bar.red`, member masks and the other
                // collectives run on fibers.
                let operand = |j| constant(unsafe { LLVMGetOperand(i, j) });
                match self.collective_call(i, env) {
                    Some(Some(Kind::BarSync)) if (2..5).all(|j| operand(j) == Some(0)) => stops.push(Stop {
                        call: i,
                        kind: Kind::BarSync,
                    }),
                    Some(Some(kind))
                        if (kind == Kind::WarpSync || kind.is_shfl_or_vote())
                            && operand(5) == Some(u32::MAX as u64) =>
                    {
                        stops.push(Stop { call: i, kind })
                    }
                    Some(_) => return Ok(None),
                    None => {}
                }
            }
        }
        // No value computed before a stop may be used after it, other than by the stop itself.
        for s in &stops {
            let bb = unsafe { LLVMGetInstructionParent(s.call) };
            let ins = unsafe { instructions(bb) };
            let at = ins.iter().position(|&i| i == s.call).expect("stop in its block");
            let after: std::collections::HashSet<_> = ins[at + 1..].iter().copied().collect();
            if ins[..at]
                .iter()
                .any(|&i| unsafe { users(i) }.iter().any(|u| after.contains(u)))
            {
                return Ok(None);
            }
        }
        let _ = f;
        self.cut(tf, &allocas, &stops).map(Some)
    }

    fn cut(&mut self, tf: FunctionValue<'ctx>, allocas: &[LLVMValueRef], stops: &[Stop]) -> R<Plan> {
        let i32t = self.i32();
        let i64t = self.i64();
        let i8t = self.ctx.i8_type();
        let ptr = self.ptr(0);
        let env = tf.get_nth_param(0).expect("env").into_pointer_value();
        let state = tf.get_nth_param(1).expect("state").into_int_value();
        let steps_ty = self.steps_ty();
        let entry = tf.get_first_basic_block().expect("entry");
        // Frame layout: one slot per alloca; arrays 16-aligned.
        let mut slots = vec![];
        let mut off = 0u64;
        for &a in allocas {
            let ty = unsafe { LLVMGetAllocatedType(a) };
            let array = unsafe { LLVMGetTypeKind(ty) } == LLVMTypeKind::LLVMArrayTypeKind;
            let size = slot_bytes(ty).expect("checked").max(1);
            let (size, align) = if array { (align_up(size, 16), 16) } else { (size, size) };
            off = align_up(off, align);
            slots.push((a, ty, array, off, size));
            off += size;
        }
        let frame_bytes = align_up(off.max(1), 16);
        // Entry: the thread's index and frame, then the jump to the region asked for.
        let old_br = entry.get_terminator().expect("entry branch");
        let start = unsafe { BasicBlock::new(LLVMGetSuccessor(old_br.as_value_ref(), 0)) }.expect("start block");
        old_br.erase_from_basic_block();
        self.b.position_at_end(entry);
        let field = |this: &mut Self, f: EnvField, d: u64| -> R<IntValue<'ctx>> {
            let p = this.env_dim_ptr(env, f, d)?;
            let v = this.b.build_load(i32t, p, "v")?.into_int_value();
            Ok(this.b.build_int_z_extend(v, i64t, "v")?)
        };
        let (tx, ty_, tz) = (
            field(self, EnvField::Tid, 0)?,
            field(self, EnvField::Tid, 1)?,
            field(self, EnvField::Tid, 2)?,
        );
        let (nx, ny, nz) = (
            field(self, EnvField::Ntid, 0)?,
            field(self, EnvField::Ntid, 1)?,
            field(self, EnvField::Ntid, 2)?,
        );
        let t = self.b.build_int_mul(tz, ny, "t")?;
        let t = self.b.build_int_add(t, ty_, "t")?;
        let t = self.b.build_int_mul(t, nx, "t")?;
        let t = self.b.build_int_nuw_add(t, tx, "t")?;
        let n = self.b.build_int_mul(nx, ny, "n")?;
        let n = self.b.build_int_mul(n, nz, "n")?;
        let sync_p = self.env_ptr(env, EnvField::Sync)?;
        let steps = self.b.build_load(ptr, sync_p, "steps")?;
        let frames_p = self
            .b
            .build_struct_gep(steps_ty, steps.into_pointer_value(), FRAMES, "frames")?;
        let frames = self.b.build_load(ptr, frames_p, "frames")?;
        // The frames do not move during a launch: LLVM may hoist the load out of the thread loops.
        {
            let v = frames;
            let inv = self.ctx.get_kind_id("invariant.load");
            let empty = self.ctx.metadata_node(&[]);
            v.as_instruction_value()
                .expect("load")
                .set_metadata(empty, inv)
                .expect("metadata");
        }
        let (steps, frames) = (steps.into_pointer_value(), frames.into_pointer_value());
        let cur_p = self.b.build_struct_gep(steps_ty, steps, CUR, "cur")?;
        let t32 = self.b.build_int_truncate(t, i32t, "t32")?;
        // The exchange buffers of warp collectives; like the frames, fixed for a launch.
        let field_ptr = |this: &Self, f: u32| -> R<PointerValue<'ctx>> {
            let p = this.b.build_struct_gep(steps_ty, steps, f, "x")?;
            let v = this.b.build_load(ptr, p, "x")?;
            let inv = this.ctx.get_kind_id("invariant.load");
            v.as_instruction_value()
                .expect("load")
                .set_metadata(this.ctx.metadata_node(&[]), inv)
                .expect("metadata");
            Ok(v.into_pointer_value())
        };
        let slots_base = field_ptr(self, SLOTS)?;
        let args_base = field_ptr(self, ARGS)?;
        let parity = field_ptr(self, PARITY)?;
        let n32 = self.b.build_int_truncate(n, i32t, "n32")?;
        let nslots = self.b.build_and(
            self.b.build_int_add(n32, i32t.const_int(31, false), "ns")?,
            i32t.const_int(!31u32 as u64, false),
            "nslots",
        )?;
        let mut scalars = vec![];
        for &(a, ty, array, off, size) in &slots {
            let o = self.b.build_int_mul(n, i64t.const_int(off, false), "o")?;
            let o = self
                .b
                .build_int_add(o, self.b.build_int_mul(t, i64t.const_int(size, false), "o")?, "o")?;
            let slot = unsafe { self.b.build_in_bounds_gep(i8t, frames, &[o], "slot")? };
            if array {
                unsafe { LLVMReplaceAllUsesWith(a, slot.as_value_ref()) };
            } else {
                scalars.push((a, ty, slot));
            }
        }
        for &(a, ..) in slots.iter().filter(|s| s.2) {
            unsafe { LLVMInstructionEraseFromParent(a) };
        }
        let blocks: Vec<LLVMBasicBlockRef> = tf.get_basic_blocks().iter().map(|b| b.as_mut_ptr()).collect();
        let scalar_refs: Vec<LLVMValueRef> = scalars.iter().map(|s| s.0).collect();
        let live = live_after_stops(&blocks, &scalar_refs, stops);
        let remat = recomputable(&scalar_refs, env.as_value_ref());
        // Each stop: its block ends in a save and a return; the rest goes to a new block that restores.
        let mut cases = vec![];
        let mut states = vec![0u32];
        for (k, s) in stops.iter().enumerate() {
            let warp = s.kind != Kind::BarSync;
            let resume = (k as u32 + 1) | if warp { WARP } else { 0 };
            let bb = unsafe { LLVMGetInstructionParent(s.call) };
            let bbv = unsafe { BasicBlock::new(bb) }.expect("block");
            let rb = self.ctx.append_basic_block(tf, &format!("resume{}", k + 1));
            let rest: Vec<LLVMValueRef> = {
                let ins = unsafe { instructions(bb) };
                let at = ins.iter().position(|&i| i == s.call).expect("stop");
                ins[at + 1..].to_vec()
            };
            self.b.position_at_end(rb);
            for i in &rest {
                unsafe {
                    LLVMInstructionRemoveFromParent(*i);
                    LLVMInsertIntoBuilder(self.b.as_mut_ptr(), *i);
                }
            }
            // Before the stop: publish a warp collective's operands, save the registers, return.
            self.b
                .position_before(&unsafe { inkwell::values::InstructionValue::new(s.call) });
            let fty = self.i64().fn_type(
                &[
                    ptr.into(),
                    i32t.into(),
                    i32t.into(),
                    i32t.into(),
                    i32t.into(),
                    i32t.into(),
                ],
                false,
            );
            if s.kind.is_shfl_or_vote() {
                // slots[parity[warp]][t] = a; args[t] = b; args[nslots + t] = c
                let w = self.b.build_right_shift(t32, i32t.const_int(5, false), false, "w")?;
                let pp = unsafe { self.b.build_in_bounds_gep(i32t, parity, &[w], "pp")? };
                let par = self.b.build_load(i32t, pp, "parity")?.into_int_value();
                let half = self.b.build_int_mul(par, nslots, "half")?;
                let at = self.b.build_int_add(half, t32, "at")?;
                let sp = unsafe { self.b.build_in_bounds_gep(i32t, slots_base, &[at], "slot")? };
                let operand = |j| {
                    let v = unsafe { inkwell::values::AnyValueEnum::new(LLVMGetOperand(s.call, j)) };
                    BasicValueEnum::try_from(v).expect("collective operand")
                };
                let st = self.b.build_store(sp, operand(2))?;
                self.mark(st, PUBLISHED[0]);
                for (j, o) in [(3u32, i32t.const_zero()), (4, nslots)] {
                    let at = self.b.build_int_add(o, t32, "a")?;
                    let ap = unsafe { self.b.build_in_bounds_gep(i32t, args_base, &[at], "arg")? };
                    let st = self.b.build_store(ap, operand(j))?;
                    self.mark(st, PUBLISHED[j as usize - 2]);
                }
            }
            for &(a, ty, slot) in live[k]
                .iter()
                .map(|&i| &scalars[i])
                .filter(|s| !remat.contains_key(&s.0))
            {
                let ty = unsafe { BasicTypeEnum::new(ty) };
                let v = self.b.build_load(ty, unsafe { PointerValue::new(a) }, "save")?;
                self.b.build_store(slot, v)?;
            }
            self.b
                .build_return(Some(&i32t.const_int((resume | WAIT) as u64, false)))?;
            // After it: restore, then a warp collective reads its result.
            let first = rb.get_first_instruction();
            match first {
                Some(i) => self.b.position_before(&i),
                None => self.b.position_at_end(rb),
            }
            let mut done = HashMap::new();
            for &(a, ty, slot) in live[k].iter().map(|&i| &scalars[i]) {
                let (v, recomputed) = match remat.get(&a) {
                    Some(&d) => (recompute(self.b.as_mut_ptr(), d, &remat, &mut done), true),
                    None => {
                        let ty = unsafe { BasicTypeEnum::new(ty) };
                        (self.b.build_load(ty, slot, "restore")?.as_value_ref(), false)
                    }
                };
                let st = unsafe { inkwell::values::InstructionValue::new(LLVMBuildStore(self.b.as_mut_ptr(), v, a)) };
                if recomputed {
                    self.mark(st, RECOMPUTED);
                }
            }
            let result = if s.kind.is_shfl_or_vote() {
                self.b.build_store(cur_p, t32)?;
                let sp = self.env_ptr(env, EnvField::Sync)?;
                let sync = self.b.build_load(ptr, sp, "sync")?;
                let fp = self.env_ptr(env, EnvField::Collective)?;
                let callee = self.b.build_load(ptr, fp, "collective")?.into_pointer_value();
                let zero = i32t.const_zero();
                let r = self.b.build_indirect_call(
                    fty,
                    callee,
                    &[
                        sync.into(),
                        i32t.const_int(s.kind as u64, false).into(),
                        zero.into(),
                        zero.into(),
                        zero.into(),
                        i32t.const_all_ones().into(),
                    ],
                    "get",
                )?;
                self.mark(
                    unsafe { inkwell::values::InstructionValue::new(r.as_value_ref()) },
                    COLLECTIVE_RESULT,
                );
                r.try_as_basic_value().basic().expect("i64").as_value_ref()
            } else {
                self.i64().const_zero().as_value_ref()
            };
            unsafe {
                LLVMReplaceAllUsesWith(s.call, result);
                LLVMInstructionEraseFromParent(s.call);
            }
            let _ = bbv;
            cases.push((resume, rb));
            states.push(resume);
        }
        self.b.position_at_end(entry);
        let sw_cases: Vec<(IntValue<'ctx>, BasicBlock<'ctx>)> = cases
            .iter()
            .map(|&(v, b)| (i32t.const_int(v as u64, false), b))
            .collect();
        self.b.build_switch(state, start, &sw_cases)?;
        Ok(Plan { frame_bytes, states })
    }

    /// The runtime's `Steps` record.
    fn steps_ty(&self) -> inkwell::types::StructType<'ctx> {
        abi_struct(self.ctx, StepsField::ALL.iter().map(|&(_, t)| t))
    }

    /// `void kernel(env, params)` for a kernel cut into regions: runs region `steps.state` for every
    /// thread of the CTA (or, when `steps.masked`, for the threads whose state it is), storing where
    /// each stopped in `steps.states` and the OR and AND of those states in `steps.or`/`steps.and`.
    /// The unmasked loops, one per state, inline the thread body with that state constant, so each
    /// holds one region's code (except after warp collectives); the masked loop, the rarer case, calls it.
    pub(super) fn regions_block_fn(
        &mut self,
        block_fn: FunctionValue<'ctx>,
        thread_fn: FunctionValue<'ctx>,
        plan: &Plan,
    ) -> R<u32> {
        let i32t = self.i32();
        let env_ty = self.env_ty();
        let steps_ty = self.steps_ty();
        let env = self.block_env(block_fn)?;
        // The masked loop's environment is its own, so the one the inlined loops use stays private.
        let env2 = self.b.build_alloca(env_ty, "env.masked")?;
        let whole = self.b.build_load(env_ty, env, "env")?;
        self.b.build_store(env2, whole)?;
        let sp = self.env_ptr(env, EnvField::Sync)?;
        let steps = self.b.build_load(self.ptr(0), sp, "steps")?.into_pointer_value();
        let load = |this: &Self, f: u32| -> R<BasicValueEnum<'ctx>> {
            let p = this.b.build_struct_gep(steps_ty, steps, f, "p")?;
            let ty: BasicTypeEnum = if f == STATES { this.ptr(0).into() } else { i32t.into() };
            Ok(this.b.build_load(ty, p, "v")?)
        };
        let state = load(self, STATE)?.into_int_value();
        let masked = load(self, MASKED)?.into_int_value();
        let states = load(self, STATES)?.into_pointer_value();
        let or_acc = self.b.build_alloca(i32t, "or")?;
        let and_acc = self.b.build_alloca(i32t, "and")?;
        self.b.build_store(or_acc, i32t.const_zero())?;
        self.b.build_store(and_acc, i32t.const_all_ones())?;
        let entry = self.b.get_insert_block().expect("entry");
        let exit = self.ctx.append_basic_block(block_fn, "exit");
        let inline = self
            .ctx
            .create_enum_attribute(Attribute::get_named_enum_kind_id("alwaysinline"), 0);
        let noinline = self
            .ctx
            .create_enum_attribute(Attribute::get_named_enum_kind_id("noinline"), 0);
        // One thread: run it from `sv`, record where it stopped.
        let run_one = |this: &mut Self,
                       env: PointerValue<'ctx>,
                       t: IntValue<'ctx>,
                       sv: IntValue<'ctx>,
                       check: bool,
                       inlined: bool|
         -> R<()> {
            let slot = unsafe { this.b.build_in_bounds_gep(i32t, states, &[t], "st")? };
            let run = this.ctx.append_basic_block(block_fn, "run");
            let next = this.ctx.append_basic_block(block_fn, "next");
            if check {
                let cur = this.b.build_load(i32t, slot, "cur")?;
                this.parallel(cur.as_instruction_value());
                let mine = this
                    .b
                    .build_int_compare(IntPredicate::EQ, cur.into_int_value(), sv, "mine")?;
                this.b.build_conditional_branch(mine, run, next)?;
            } else {
                this.b.build_unconditional_branch(run)?;
            }
            this.b.position_at_end(run);
            let call = this.b.build_call(thread_fn, &[env.into(), sv.into()], "r")?;
            call.add_attribute(AttributeLoc::Function, if inlined { inline } else { noinline });
            let r = call.try_as_basic_value().basic().expect("state").into_int_value();
            this.parallel(r.as_instruction_value());
            let st = this.b.build_store(slot, r)?;
            this.parallel(Some(st));
            let o = this.b.build_load(i32t, or_acc, "o")?.into_int_value();
            this.b.build_store(or_acc, this.b.build_or(o, r, "o")?)?;
            let a = this.b.build_load(i32t, and_acc, "a")?.into_int_value();
            this.b.build_store(and_acc, this.b.build_and(a, r, "a")?)?;
            this.b.build_unconditional_branch(next)?;
            this.b.position_at_end(next);
            Ok(())
        };
        let mut cases = vec![];
        let mut lane_regions = 0;
        let mut lane_budget = super::lanes::LaneBudget::of(thread_fn.as_value_ref());
        for &s in &plan.states {
            let sv = i32t.const_int(s as u64, false);
            let case = self.ctx.append_basic_block(block_fn, &format!("state{s:x}"));
            cases.push((sv, case));
            self.b.position_at_end(case);
            // A region after a warp collective starts with a runtime call, which no thread loop can
            // vectorise past, and such regions are short: calling the body there saves compile time.
            let inlined = s & WARP == 0;
            let env_here = if inlined { env } else { env2 };
            let lanes = if inlined && self.options.lanes {
                super::lanes::lane_region(self.module.as_mut_ptr(), thread_fn.as_value_ref(), s, &mut lane_budget)
            } else {
                None
            };
            match lanes {
                Some(lf) => {
                    lane_regions += 1;
                    let lf = unsafe { FunctionValue::new(lf) }.expect("function");
                    lf.add_attribute(AttributeLoc::Function, inline);
                    let vt = i32t.vec_type(super::lanes::LANES);
                    let group = |this: &mut Self, t: IntValue<'ctx>| -> R<()> {
                        // A group is a whole warp when the x extent is a multiple of 32.
                        let nxp = this.env_dim_ptr(env, EnvField::Ntid, 0)?;
                        let nx = this.b.build_load(i32t, nxp, "nx")?.into_int_value();
                        let odd = this.b.build_and(nx, i32t.const_int(31, false), "odd")?;
                        let whole = this
                            .b
                            .build_int_compare(IntPredicate::EQ, odd, i32t.const_zero(), "warp")?;
                        let r = this.b.build_call(lf, &[env.into(), whole.into()], "stops")?;
                        let r = r.try_as_basic_value().basic().expect("stops").into_vector_value();
                        let slot = unsafe { this.b.build_in_bounds_gep(i32t, states, &[t], "st")? };
                        this.b
                            .build_store(slot, r)?
                            .set_alignment(4)
                            .map_err(|e| unsupported(Span::default(), e.to_string()))?;
                        for (acc, name) in [(or_acc, "llvm.vector.reduce.or"), (and_acc, "llvm.vector.reduce.and")] {
                            let all = this.call_intrinsic(name, &[vt.into()], &[r.into()])?.into_int_value();
                            let o = this.b.build_load(i32t, acc, "acc")?.into_int_value();
                            let o = if name.ends_with("or") {
                                this.b.build_or(o, all, "o")?
                            } else {
                                this.b.build_and(o, all, "a")?
                            };
                            this.b.build_store(acc, o)?;
                        }
                        Ok(())
                    };
                    self.lane_loops(block_fn, env, group, |this, t| run_one(this, env, t, sv, false, true))?;
                }
                None => self.thread_loops(block_fn, env_here, |this, t| {
                    run_one(this, env_here, t, sv, false, inlined)
                })?,
            }
            self.b.build_unconditional_branch(exit)?;
        }
        let some = self.ctx.append_basic_block(block_fn, "masked");
        self.b.position_at_end(some);
        self.thread_loops(block_fn, env2, |this, t| run_one(this, env2, t, state, true, false))?;
        self.b.build_unconditional_branch(exit)?;
        let dispatch = self.ctx.append_basic_block(block_fn, "dispatch");
        self.b.position_at_end(dispatch);
        self.b.build_switch(state, exit, &cases)?;
        self.b.position_at_end(entry);
        let is_masked = self
            .b
            .build_int_compare(IntPredicate::NE, masked, i32t.const_zero(), "m")?;
        self.b.build_conditional_branch(is_masked, some, dispatch)?;
        self.b.position_at_end(exit);
        for (f, acc) in [(OR, or_acc), (AND, and_acc)] {
            let v = self.b.build_load(i32t, acc, "v")?;
            let p = self.b.build_struct_gep(steps_ty, steps, f, "p")?;
            self.b.build_store(p, v)?;
        }
        self.b.build_return(None)?;
        Ok(lane_regions)
    }
}
