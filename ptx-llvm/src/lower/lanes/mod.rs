//! Lane-vectorised regions: one region of a thread body, run for `LANES` consecutive threads (along x)
//! at once, each of the thread's registers a vector with one lane per thread.
//!
//! A thread loop whose body holds a loop of the thread's own cannot be vectorised by LLVM, and running
//! each thread's loop to completion before the next thread's walks memory in the worst order for a
//! CPU: each thread strides through what the CTA reads together (coalesced on a GPU). Here the threads
//! of a group go through such a loop together, so one iteration reads consecutive addresses as one
//! vector.
//!
//! Any control flow works, as on a GPU without reconvergence hints: every lane has a program counter
//! (a block number, in reverse post-order), and the group runs the lowest block any lane is at, masked
//! to the lanes there, until every lane has returned. Lanes that leave a loop early wait at its exit
//! (a higher number) while the others go round. Masked lanes keep their registers and touch no memory:
//! loads, stores and divisors are masked. A memory access checks at run time whether the active lanes'
//! addresses are one address (a scalar access), consecutive (a vector access) or neither (a gather or
//! scatter). Stores to one address keep the highest lane's value, as when threads run in order.
//!
//! The thread body must be in the lowering's form: registers are allocas of the entry block, every
//! other value is used only in its own block or defined in the entry block. Anything else, calls other
//! than to pure intrinsics, atomics and volatile accesses make `lane_region` decline (the region then
//! runs thread by thread, as before).

mod live;
mod memory;
mod vary;
mod warp;

use crate::abi::EnvField;
use crate::ir::{instructions, users};
use crate::lower::regions;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::{LLVMAtomicOrdering, LLVMOpcode, LLVMTypeKind};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use vary::{Affine, Stride};

/// Threads per vectorised group: a warp, and two AVX-512 vectors of 32-bit lanes.
pub(super) const LANES: u32 = 32;
/// The program counter of a lane that has returned (above every block number).
const EXIT: u64 = u32::MAX as u64;

fn successors(term: LLVMValueRef) -> Vec<LLVMBasicBlockRef> {
    unsafe {
        (0..LLVMGetNumSuccessors(term))
            .map(|k| LLVMGetSuccessor(term, k))
            .collect()
    }
}

fn const_int(v: LLVMValueRef) -> Option<u64> {
    unsafe { (!LLVMIsAConstantInt(v).is_null()).then(|| LLVMConstIntGetZExtValue(v)) }
}

fn metadata_kind(ctx: LLVMContextRef, name: &str) -> u32 {
    unsafe { LLVMGetMDKindIDInContext(ctx, name.as_ptr() as *const _, name.len() as u32) }
}

/// Whether instruction `i` carries the (empty) metadata `name` (the regions lowering's marks).
fn marked(i: LLVMValueRef, name: &str) -> bool {
    unsafe { !LLVMGetMetadata(i, metadata_kind(LLVMGetTypeContext(LLVMTypeOf(i)), name)).is_null() }
}

fn name_of(f: LLVMValueRef) -> String {
    let mut len = 0;
    let p = unsafe { LLVMGetValueName2(f, &mut len) };
    if p.is_null() {
        return String::new();
    }
    String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(p as *const u8, len) }).into_owned()
}

/// Bytes between consecutive elements of `ty` in memory, for the types a vector access may load as a
/// whole (a power of two of whole bytes); None for the rest, which always go through gathers.
fn element_bytes(ty: LLVMTypeRef) -> Option<u64> {
    unsafe {
        let bytes = match LLVMGetTypeKind(ty) {
            LLVMTypeKind::LLVMIntegerTypeKind => {
                let bits = LLVMGetIntTypeWidth(ty) as u64;
                bits.is_multiple_of(8).then_some(bits / 8)?
            }
            LLVMTypeKind::LLVMHalfTypeKind | LLVMTypeKind::LLVMBFloatTypeKind => 2,
            LLVMTypeKind::LLVMFloatTypeKind => 4,
            LLVMTypeKind::LLVMDoubleTypeKind | LLVMTypeKind::LLVMPointerTypeKind => 8,
            _ => return None,
        };
        bytes.is_power_of_two().then_some(bytes)
    }
}

/// Whether a value of `ty` can live in a lane vector.
fn scalar_type(ty: LLVMTypeRef) -> bool {
    use LLVMTypeKind::*;
    matches!(
        unsafe { LLVMGetTypeKind(ty) },
        LLVMIntegerTypeKind
            | LLVMHalfTypeKind
            | LLVMBFloatTypeKind
            | LLVMFloatTypeKind
            | LLVMDoubleTypeKind
            | LLVMPointerTypeKind
    )
}

/// Intrinsics with no effect on a region's results, dropped.
const NO_OPS: [&str; 7] = [
    "llvm.lifetime.",
    "llvm.assume",
    "llvm.prefetch",
    "llvm.dbg.",
    "llvm.experimental.noalias.scope.decl",
    "llvm.donothing",
    "llvm.sideeffect",
];

const WITH_OVERFLOW: [&str; 6] = [
    "llvm.sadd.with.overflow",
    "llvm.uadd.with.overflow",
    "llvm.ssub.with.overflow",
    "llvm.usub.with.overflow",
    "llvm.smul.with.overflow",
    "llvm.umul.with.overflow",
];

/// Whether a called function neither reads nor writes memory (LLVM's `memory(none)`).
fn pure_function(f: LLVMValueRef) -> bool {
    unsafe {
        let kind = LLVMGetEnumAttributeKindForName(c"memory".as_ptr(), 6);
        let a = LLVMGetEnumAttributeAtIndex(f, inkwell::llvm_sys::LLVMAttributeFunctionIndex, kind);
        !a.is_null() && LLVMGetEnumAttributeValue(a) == 0
    }
}

/// The dimension `d` of a load of the environment's `tid[d]` (`env` field 2, as the lowering reads it:
/// `gep [3 x i32], (gep %env_ty, env, 0, 2), 0, d`).
fn tid_dim(load: LLVMValueRef, env: LLVMValueRef) -> Option<u64> {
    unsafe {
        let p = LLVMGetOperand(load, 0);
        if LLVMIsAGetElementPtrInst(p).is_null() || LLVMGetNumOperands(p) != 3 {
            return None;
        }
        let q = LLVMGetOperand(p, 0);
        if LLVMIsAGetElementPtrInst(q).is_null() || LLVMGetNumOperands(q) != 3 || LLVMGetOperand(q, 0) != env {
            return None;
        }
        (const_int(LLVMGetOperand(q, 1)) == Some(0)
            && const_int(LLVMGetOperand(q, 2)) == Some(2)
            && const_int(LLVMGetOperand(p, 1)) == Some(0))
        .then(|| const_int(LLVMGetOperand(p, 2)))
        .flatten()
    }
}

/// The block a switch on `state` goes to for `state`.
fn switch_target(sw: LLVMValueRef, state: u64) -> Option<LLVMBasicBlockRef> {
    unsafe {
        for k in 1..LLVMGetNumSuccessors(sw) {
            if const_int(LLVMGetSwitchCaseValue(sw, k))? == state {
                return Some(LLVMGetSuccessor(sw, k));
            }
        }
        Some(LLVMGetSwitchDefaultDest(sw))
    }
}

/// The blocks reachable from `from` (where a switch on the thread body's `state` follows only
/// `state`'s case), in reverse post-order, and whether any of them closes a loop.
fn reverse_post_order(
    from: LLVMBasicBlockRef,
    succs: &dyn Fn(LLVMBasicBlockRef) -> Option<Vec<LLVMBasicBlockRef>>,
) -> Option<(Vec<LLVMBasicBlockRef>, bool)> {
    let mut post = vec![];
    let mut on_path = HashSet::new();
    let mut seen = HashSet::from([from]);
    let mut stack = vec![(from, succs(from)?, 0usize)];
    on_path.insert(from);
    let mut loops = false;
    while let Some((b, ss, next)) = stack.last_mut() {
        if *next < ss.len() {
            let s = ss[*next];
            *next += 1;
            if on_path.contains(&s) {
                loops = true;
            } else if seen.insert(s) {
                on_path.insert(s);
                let s_succs = succs(s)?;
                stack.push((s, s_succs, 0));
            }
        } else {
            on_path.remove(b);
            post.push(*b);
            stack.pop();
        }
    }
    post.reverse();
    Some((post, loops))
}

/// What one kernel's lane regions may still cost, so that lowering stays linear in the kernel. Regions
/// reach the code up to their stops, so in a kernel whose barriers sit inside loops every region can
/// reach most of the body, and a region's lane code is about ten times its scalar code (gathers and
/// scatters take a few instructions per lane): without a bound, lane code grew with regions × body × 10
/// (cuBLAS's `libcublas.so.107.sm_120.ptx` passed 19 GB). Kernels whose regions are disjoint (every
/// test and benchmark kernel) stay inside; past the bound, regions run thread by thread.
pub(super) struct LaneBudget {
    /// Scalar instructions the regions may still cover: twice the body, so overlapping regions stop.
    scalar: u64,
    /// Lane instructions they may still add: sixteen per instruction of the body.
    lanes: u64,
}

/// The largest region (in scalar instructions, as lowered, before any optimisation) worth
/// vectorising: lane code is about ten times larger, and LLVM's time on it grows faster than that,
/// while a region this large spends its time in its own work, not in loop overhead. The reference
/// reduction's first region (`benches/kernels`, a loop unrolled four times, then warp shuffles)
/// lowers to 1,659: at 1,024 it ran thread by thread, 3.3x slower (`make bench`, sessions 16 to 22).
const MAX_REGION: u64 = 2048;

/// The largest region with a warp collective worth vectorising. Such a region's code may count on its
/// warp running in step (see `Exec::Regions`), which only lanes give, so it is vectorised whatever
/// its size up to this bound (CuPy's partition kernel is one region of 7,576). Past it, LLVM's time
/// grows faster than the code: HeCBench's welford kernel (186 unrolled shuffles) has a region of
/// 31,199 whose 355,000 lane instructions took 83 s of O3 and 12 s of code generation; thread by
/// thread, its optimised tier compiles in about a second. The price: warp-synchronous code (threads
/// of a warp exchanging values through memory with no synchronisation) in a larger region runs
/// thread by thread, as it does outside lane-vectorised regions.
const MAX_WARP_REGION: u64 = 8192;

impl LaneBudget {
    pub(super) fn of(thread_fn: LLVMValueRef) -> LaneBudget {
        let body = instruction_count(thread_fn);
        LaneBudget {
            scalar: 2 * body,
            lanes: 16 * body,
        }
    }
}

/// The instructions of a function.
pub(super) fn instruction_count(f: LLVMValueRef) -> u64 {
    let mut n = 0;
    let mut b = unsafe { LLVMGetFirstBasicBlock(f) };
    while !b.is_null() {
        n += unsafe { instructions(b) }.len() as u64;
        b = unsafe { LLVMGetNextBasicBlock(b) };
    }
    n
}

/// Builds `<LANES x i32> (ptr env)`: region `state` of the thread body `tf` (`i32 (ptr env, i32 state)`)
/// for the threads `tid.x .. tid.x + LANES` of `env` (same `tid.y`, `tid.z`), returning each thread's
/// stop. None (and nothing added) when the region has no loop of its own, holds something this
/// vectoriser does not handle, or is larger than what is left of the kernel's `budget` (which it
/// takes its size from).
pub(super) fn lane_region(
    module: LLVMModuleRef,
    tf: LLVMValueRef,
    state: u32,
    budget: &mut LaneBudget,
) -> Option<LLVMValueRef> {
    let entry = unsafe { LLVMGetEntryBasicBlock(tf) };
    let state_param = unsafe { LLVMGetParam(tf, 1) };
    let entry_switch = unsafe { LLVMGetBasicBlockTerminator(entry) };
    let on_state = |t: LLVMValueRef| unsafe {
        !t.is_null() && LLVMGetInstructionOpcode(t) == LLVMOpcode::LLVMSwitch && LLVMGetOperand(t, 0) == state_param
    };
    let succs = |b: LLVMBasicBlockRef| -> Option<Vec<LLVMBasicBlockRef>> {
        let t = unsafe { LLVMGetBasicBlockTerminator(b) };
        if t.is_null() {
            return None;
        }
        if on_state(t) {
            return Some(vec![switch_target(t, state as u64)?]);
        }
        if on_state(entry_switch) {
            // A whole warp goes on past its collectives (see `warp`).
            if let Some((resume, _)) = warp::resume_after(b, entry_switch) {
                return Some(vec![resume]);
            }
        }
        Some(successors(t))
    };
    let (mut order, loops) = reverse_post_order(entry, &succs)?;
    let size: u64 = order.iter().map(|&b| unsafe { instructions(b) }.len() as u64).sum();
    let collective = on_state(entry_switch) && order.iter().any(|&b| warp::resume_after(b, entry_switch).is_some());
    if size > budget.scalar || size > if collective { MAX_WARP_REGION } else { MAX_REGION } {
        return None;
    }
    budget.scalar -= size;
    // The entry block (first) runs before the others, once.
    order.remove(0);
    let mut v = Lanes::new(module, tf, state)?;
    v.dead = live::dead_writes(&[&[entry][..], &order].concat(), &succs);
    if on_state(entry_switch) {
        for &b in &order {
            if let Some((resume, state)) = warp::resume_after(b, entry_switch) {
                v.resumes.insert(resume, state);
                v.stops_to.insert(b, resume);
            }
        }
    }
    // Without a loop or a collective to go past, running threads one by one is as good.
    if !loops && v.resumes.is_empty() {
        unsafe { LLVMDeleteFunction(v.f) };
        return None;
    }
    let f = v.f;
    if v.build(&order).is_none() {
        unsafe { LLVMDeleteFunction(f) };
        return None;
    }
    let n = instruction_count(f);
    if n > budget.lanes {
        // Over the bound: this and the kernel's later regions run thread by thread, so at most one
        // region's lane code is built in vain.
        unsafe { LLVMDeleteFunction(f) };
        budget.lanes = 0;
        budget.scalar = 0;
        return None;
    }
    budget.lanes -= n;
    Some(f)
}

struct Lanes {
    ctx: LLVMContextRef,
    module: LLVMModuleRef,
    b: LLVMBuilderRef,
    tf: LLVMValueRef,
    f: LLVMValueRef,
    env: LLVMValueRef,
    state: u32,
    /// Each scalar value's lane vector, once built.
    map: RefCell<HashMap<LLVMValueRef, LLVMValueRef>>,
    /// The affine values whose lane vectors are built where first needed (with the mask of their
    /// lanes): where every access finds the affine form holds, none is.
    pending: HashMap<LLVMValueRef, LLVMValueRef>,
    /// The register writes no later block reads (`live::dead_writes`), and the reads in the block
    /// being built of what it wrote, with the value written.
    dead: HashSet<LLVMValueRef>,
    forward: HashMap<LLVMValueRef, LLVMValueRef>,
    /// Each register (an alloca of the thread body) and its lane vector's alloca.
    regs: HashMap<LLVMValueRef, LLVMValueRef>,
    /// The values the same in every lane (see `uniform_values`).
    uniform: HashSet<LLVMValueRef>,
    /// Each uniform value's one scalar, and each uniform register's scalar alloca.
    uni: HashMap<LLVMValueRef, LLVMValueRef>,
    /// The affine values of the block being built (see `vary`).
    aff: HashMap<LLVMValueRef, Affine>,
    /// The registers every write leaves affine with one stride (`vary::register_strides`): the
    /// stride, an `i1` alloca that says whether the lanes' vector now is (a write by some lanes
    /// only, or of a value whose lanes wrapped, clears it), and lane 0's value as a scalar (kept
    /// apart from the vector, so that a group whose addresses are affine need not compute them).
    affine_regs: HashMap<LLVMValueRef, (i64, LLVMValueRef, LLVMValueRef)>,
    /// The value each register was last written with in the block being built, and the loads of
    /// registers that read such a value (for `rebuild`).
    written: HashMap<LLVMValueRef, LLVMValueRef>,
    reads: HashMap<LLVMValueRef, LLVMValueRef>,
    /// Whether the group is a whole warp (the lane function's second parameter).
    whole_warp: LLVMValueRef,
    /// The blocks where a region resumes after a warp collective the group goes past, with the state,
    /// and the blocks that stop there.
    resumes: HashMap<LLVMBasicBlockRef, u32>,
    stops_to: HashMap<LLVMBasicBlockRef, LLVMBasicBlockRef>,
    /// The lanes' last published collective operands (`a`, `b`, `c`), and a vector's room in memory.
    published: [LLVMValueRef; 3],
    table: LLVMValueRef,
    pc: LLVMValueRef,
    result: LLVMValueRef,
    i32t: LLVMTypeRef,
    i64t: LLVMTypeRef,
    ptr: LLVMTypeRef,
}

impl Drop for Lanes {
    fn drop(&mut self) {
        unsafe { LLVMDisposeBuilder(self.b) };
    }
}

impl Lanes {
    fn new(module: LLVMModuleRef, tf: LLVMValueRef, state: u32) -> Option<Lanes> {
        unsafe {
            let ctx = LLVMGetModuleContext(module);
            let i32t = LLVMInt32TypeInContext(ctx);
            let ptr = LLVMPointerTypeInContext(ctx, 0);
            let mut params = [ptr, LLVMInt1TypeInContext(ctx)];
            let fty = LLVMFunctionType(LLVMVectorType(i32t, LANES), params.as_mut_ptr(), 2, 0);
            let name = format!("{}.lanes{state:x}\0", name_of(tf));
            let f = LLVMAddFunction(module, name.as_ptr() as *const _, fty);
            LLVMSetLinkage(f, inkwell::llvm_sys::LLVMLinkage::LLVMInternalLinkage);
            Some(Lanes {
                ctx,
                module,
                b: LLVMCreateBuilderInContext(ctx),
                tf,
                f,
                env: LLVMGetParam(tf, 0),
                state,
                map: RefCell::new(HashMap::new()),
                pending: HashMap::new(),
                dead: HashSet::new(),
                forward: HashMap::new(),
                regs: HashMap::new(),
                uniform: HashSet::new(),
                uni: HashMap::new(),
                aff: HashMap::new(),
                affine_regs: HashMap::new(),
                written: HashMap::new(),
                reads: HashMap::new(),
                whole_warp: LLVMGetParam(f, 1),
                resumes: HashMap::new(),
                stops_to: HashMap::new(),
                published: [std::ptr::null_mut(); 3],
                table: std::ptr::null_mut(),
                pc: std::ptr::null_mut(),
                result: std::ptr::null_mut(),
                i32t,
                i64t: LLVMInt64TypeInContext(ctx),
                ptr,
            })
        }
    }

    fn vt(&self, ty: LLVMTypeRef) -> LLVMTypeRef {
        unsafe { LLVMVectorType(ty, LANES) }
    }

    fn block(&self, name: &str) -> LLVMBasicBlockRef {
        let name = format!("{name}\0");
        unsafe { LLVMAppendBasicBlockInContext(self.ctx, self.f, name.as_ptr() as *const _) }
    }

    fn const_splat(&self, c: LLVMValueRef) -> LLVMValueRef {
        let mut elems = vec![c; LANES as usize];
        unsafe { LLVMConstVector(elems.as_mut_ptr(), LANES) }
    }

    fn splat(&self, v: LLVMValueRef) -> LLVMValueRef {
        unsafe {
            if !LLVMIsAConstant(v).is_null() {
                return self.const_splat(v);
            }
            let vt = self.vt(LLVMTypeOf(v));
            let one = LLVMBuildInsertElement(
                self.b,
                LLVMGetPoison(vt),
                v,
                LLVMConstInt(self.i32t, 0, 0),
                c"".as_ptr(),
            );
            let zeros = LLVMConstNull(LLVMVectorType(self.i32t, LANES));
            LLVMBuildShuffleVector(self.b, one, LLVMGetPoison(vt), zeros, c"splat".as_ptr())
        }
    }

    /// The mask of every lane.
    fn all_on(&self) -> LLVMValueRef {
        self.const_splat(unsafe { LLVMConstInt(LLVMInt1TypeInContext(self.ctx), 1, 0) })
    }

    /// Writes `v` to the lanes of `m` of the vector at `to`, keeping the others'. Where `m` is every
    /// lane the old vector is not read, which keeps registers written before they are read out of the
    /// SSA form's phis (and their values dead where they are).
    fn store_lanes(&self, m: LLVMValueRef, v: LLVMValueRef, to: LLVMValueRef) {
        unsafe {
            let v = if m == self.all_on() {
                v
            } else {
                let old = LLVMBuildLoad2(self.b, LLVMTypeOf(v), to, c"".as_ptr());
                LLVMBuildSelect(self.b, m, v, old, c"".as_ptr())
            };
            LLVMBuildStore(self.b, v, to);
        }
    }

    /// `<0, k, 2k, …>` of integer type `ty`.
    fn iota(&self, ty: LLVMTypeRef, k: u64) -> LLVMValueRef {
        let mut elems: Vec<LLVMValueRef> = (0..LANES as u64)
            .map(|l| unsafe { LLVMConstInt(ty, l * k, 0) })
            .collect();
        unsafe { LLVMConstVector(elems.as_mut_ptr(), LANES) }
    }

    /// The lanes of a mask as an integer.
    fn bits(&self, m: LLVMValueRef) -> LLVMValueRef {
        unsafe { LLVMBuildBitCast(self.b, m, LLVMIntTypeInContext(self.ctx, LANES), c"bits".as_ptr()) }
    }

    /// Whether every lane of the mask is set.
    fn all(&self, m: LLVMValueRef) -> LLVMValueRef {
        unsafe {
            let t = LLVMIntTypeInContext(self.ctx, LANES);
            LLVMBuildICmp(
                self.b,
                inkwell::llvm_sys::LLVMIntPredicate::LLVMIntEQ,
                self.bits(m),
                LLVMConstAllOnes(t),
                c"all".as_ptr(),
            )
        }
    }

    fn intrinsic(&self, name: &str, overloads: &mut [LLVMTypeRef]) -> Option<(LLVMValueRef, LLVMTypeRef)> {
        self.intrinsic_id(
            unsafe { LLVMLookupIntrinsicID(name.as_ptr() as *const _, name.len()) },
            overloads,
        )
    }

    fn intrinsic_id(&self, id: u32, overloads: &mut [LLVMTypeRef]) -> Option<(LLVMValueRef, LLVMTypeRef)> {
        unsafe {
            if id == 0 || LLVMIntrinsicIsOverloaded(id) == 0 {
                return None;
            }
            let f = LLVMGetIntrinsicDeclaration(self.module, id, overloads.as_mut_ptr(), overloads.len());
            Some((f, LLVMGlobalGetValueType(f)))
        }
    }

    fn call(&self, (f, fty): (LLVMValueRef, LLVMTypeRef), args: &mut [LLVMValueRef]) -> LLVMValueRef {
        unsafe { LLVMBuildCall2(self.b, fty, f, args.as_mut_ptr(), args.len() as u32, c"".as_ptr()) }
    }

    /// A masked memory intrinsic's call, with the alignment operand where this LLVM still has one.
    fn masked(
        &self,
        name: &str,
        overloads: &mut [LLVMTypeRef],
        args: &[LLVMValueRef],
        ptr_at: usize,
    ) -> Option<LLVMValueRef> {
        let (f, fty) = self.intrinsic(name, overloads)?;
        let mut args = args.to_vec();
        if unsafe { LLVMCountParamTypes(fty) } as usize == args.len() + 1 {
            args.insert(ptr_at + 1, unsafe { LLVMConstInt(self.i32t, 1, 0) });
        }
        Some(self.call((f, fty), &mut args))
    }

    /// `v`'s lanes as a vector.
    fn value(&self, v: LLVMValueRef) -> Option<LLVMValueRef> {
        unsafe {
            if !LLVMIsAConstant(v).is_null() {
                return scalar_type(LLVMTypeOf(v)).then(|| self.const_splat(v));
            }
        }
        if let Some(x) = self.map.borrow().get(&v).copied() {
            return Some(x);
        }
        if let Some(&w) = self.forward.get(&v) {
            return self.value(w);
        }
        if let Some(&m) = self.pending.get(&v) {
            // Built where first needed: every caller builds in the block's main path.
            let x = self.compute(v, m, &|k| self.value(unsafe { LLVMGetOperand(v, k) }))?;
            self.map.borrow_mut().insert(v, x);
            return Some(x);
        }
        self.scalar(v)
            .filter(|&s| scalar_type(unsafe { LLVMTypeOf(s) }))
            .map(|s| self.splat(s))
    }

    /// Whether `value(v)` gives the lanes of `v` (here or, for a deferred affine value, where first
    /// needed), without building anything.
    fn available(&self, v: LLVMValueRef) -> bool {
        if let Some(&w) = self.forward.get(&v) {
            return self.available(w);
        }
        self.map.borrow().contains_key(&v)
            || self.pending.contains_key(&v)
            || self.scalar(v).is_some_and(|s| scalar_type(unsafe { LLVMTypeOf(s) }))
    }

    /// The one value of a uniform `v`.
    fn scalar(&self, v: LLVMValueRef) -> Option<LLVMValueRef> {
        unsafe {
            if !LLVMIsAConstant(v).is_null() {
                return Some(v);
            }
            if v == self.env {
                return Some(LLVMGetParam(self.f, 0));
            }
            if v == LLVMGetParam(self.tf, 1) {
                return Some(LLVMConstInt(self.i32t, self.state as u64, 0));
            }
        }
        self.uni.get(&v).copied()
    }

    fn build(&mut self, order: &[LLVMBasicBlockRef]) -> Option<()> {
        let entry_bb = self.block("entry");
        let dispatch = self.block("dispatch");
        let done = self.block("done");
        let tf_entry = unsafe { LLVMGetEntryBasicBlock(self.tf) };
        let number: HashMap<LLVMBasicBlockRef, u64> = order.iter().enumerate().map(|(k, &b)| (b, k as u64)).collect();
        let blocks: HashMap<LLVMBasicBlockRef, LLVMBasicBlockRef> =
            order.iter().map(|&b| (b, self.block("lanes"))).collect();
        unsafe {
            LLVMPositionBuilderAtEnd(self.b, entry_bb);
            let mut all = vec![tf_entry];
            all.extend_from_slice(order);
            let (uniform, uniform_regs) = vary::uniform_values(&all, self.env, LLVMGetParam(self.tf, 1));
            let strides = vary::register_strides(&all, self.env, &uniform, &uniform_regs);
            self.uniform = uniform;
            for i in instructions(tf_entry) {
                if LLVMGetInstructionOpcode(i) != LLVMOpcode::LLVMAlloca {
                    continue;
                }
                let ty = LLVMGetAllocatedType(i);
                let plain = users(i).into_iter().all(|u| match crate::ir::opcode(u) {
                    Some(LLVMOpcode::LLVMLoad) => true,
                    Some(LLVMOpcode::LLVMStore) => LLVMGetOperand(u, 0) != i,
                    _ => false,
                });
                if !plain || !scalar_type(ty) || const_int(LLVMGetOperand(i, 0)) != Some(1) {
                    return None;
                }
                if uniform_regs.contains(&i) {
                    self.uni.insert(i, LLVMBuildAlloca(self.b, ty, c"ureg".as_ptr()));
                } else {
                    self.regs
                        .insert(i, LLVMBuildAlloca(self.b, self.vt(ty), c"reg".as_ptr()));
                    if let Some(&s) = strides.get(&i) {
                        let flag = LLVMBuildAlloca(self.b, LLVMInt1TypeInContext(self.ctx), c"affine".as_ptr());
                        let first = LLVMBuildAlloca(self.b, ty, c"first".as_ptr());
                        LLVMBuildStore(self.b, LLVMConstInt(LLVMInt1TypeInContext(self.ctx), 0, 0), flag);
                        self.affine_regs.insert(i, (s, flag, first));
                    }
                }
            }
            let vi32 = self.vt(self.i32t);
            for p in self.published.iter_mut() {
                *p = LLVMBuildAlloca(self.b, vi32, c"published".as_ptr());
            }
            self.table = LLVMBuildAlloca(self.b, vi32, c"table".as_ptr());
            self.pc = LLVMBuildAlloca(self.b, vi32, c"pc".as_ptr());
            self.result = LLVMBuildAlloca(self.b, vi32, c"result".as_ptr());
            LLVMBuildStore(self.b, LLVMConstNull(vi32), self.result);
            // The entry block runs once, for every lane: its values are the ones other blocks share.
            let all_on = self.all_on();
            let full = LLVMConstInt(LLVMInt1TypeInContext(self.ctx), 1, 0);
            let body = instructions(tf_entry);
            let (term, rest) = body.split_last()?;
            for &i in rest {
                if LLVMGetInstructionOpcode(i) != LLVMOpcode::LLVMAlloca {
                    self.instruction(i, all_on, full)?;
                }
            }
            let next = self.next_pc(*term, &number, all_on)?;
            LLVMBuildStore(self.b, next, self.pc);
            LLVMBuildBr(self.b, dispatch);
            let shared = (
                self.map.borrow().clone(),
                self.uni.clone(),
                self.aff.clone(),
                self.pending.clone(),
                self.forward.clone(),
            );

            LLVMPositionBuilderAtEnd(self.b, dispatch);
            let pcv = LLVMBuildLoad2(self.b, vi32, self.pc, c"pc".as_ptr());
            let umin = self.intrinsic("llvm.vector.reduce.umin", &mut [vi32])?;
            let lowest = self.call(umin, &mut [pcv]);
            let sw = LLVMBuildSwitch(self.b, lowest, done, order.len() as u32);
            for (k, b) in order.iter().enumerate() {
                LLVMAddCase(sw, LLVMConstInt(self.i32t, k as u64, 0), blocks[b]);
            }
            // Each block twice: for any lanes (reached through the dispatch), and for all of them
            // (reached directly where every lane goes the same way), where masks fold away.
            let all_blocks: HashMap<LLVMBasicBlockRef, LLVMBasicBlockRef> =
                order.iter().map(|&b| (b, self.block("lanes.all"))).collect();
            for &b in order {
                if b == tf_entry {
                    return None;
                }
                for every in [false, true] {
                    LLVMPositionBuilderAtEnd(self.b, if every { all_blocks[&b] } else { blocks[&b] });
                    // Values of other blocks are out of reach (the lowering uses none across blocks).
                    self.map.borrow_mut().clone_from(&shared.0);
                    self.uni.clone_from(&shared.1);
                    self.aff.clone_from(&shared.2);
                    self.pending.clone_from(&shared.3);
                    self.forward.clone_from(&shared.4);
                    self.written.clear();
                    self.reads.clear();
                    let pcv = LLVMBuildLoad2(self.b, vi32, self.pc, c"pc".as_ptr());
                    let (m, full) = if every {
                        (all_on, full)
                    } else {
                        let here = self.const_splat(LLVMConstInt(self.i32t, number[&b], 0));
                        let m = LLVMBuildICmp(
                            self.b,
                            inkwell::llvm_sys::LLVMIntPredicate::LLVMIntEQ,
                            pcv,
                            here,
                            c"m".as_ptr(),
                        );
                        (m, self.all(m))
                    };
                    if let Some(&state) = self.resumes.get(&b) {
                        self.warp_or_stop(state, m, full, pcv, dispatch);
                    }
                    let body = instructions(b);
                    let (term, rest) = body.split_last()?;
                    for &i in rest {
                        self.instruction(i, m, full)?;
                    }
                    if every {
                        self.uniform_branch(*term, &number, &all_blocks);
                    }
                    let next = self.next_pc(*term, &number, m)?;
                    let pcv2 = if every {
                        next
                    } else {
                        LLVMBuildSelect(self.b, m, next, pcv, c"pc".as_ptr())
                    };
                    LLVMBuildStore(self.b, pcv2, self.pc);
                    // Where every lane goes to the same block, go there directly.
                    let mut targets: Vec<LLVMBasicBlockRef> = vec![];
                    for s in successors(*term).into_iter().chain(self.stops_to.get(&b).copied()) {
                        if number.contains_key(&s) && !targets.contains(&s) {
                            targets.push(s);
                        }
                    }
                    for s in targets {
                        let there = self.const_splat(LLVMConstInt(self.i32t, number[&s], 0));
                        let eq = LLVMBuildICmp(
                            self.b,
                            inkwell::llvm_sys::LLVMIntPredicate::LLVMIntEQ,
                            pcv2,
                            there,
                            c"".as_ptr(),
                        );
                        let all = self.all(eq);
                        let other = self.block("lanes.split");
                        LLVMBuildCondBr(self.b, all, all_blocks[&s], other);
                        LLVMPositionBuilderAtEnd(self.b, other);
                    }
                    LLVMBuildBr(self.b, dispatch);
                }
            }
            LLVMPositionBuilderAtEnd(self.b, done);
            let r = LLVMBuildLoad2(self.b, vi32, self.result, c"stops".as_ptr());
            LLVMBuildRet(self.b, r);
        }
        Some(())
    }

    /// The lanes' next program counters after block terminator `t` (the returning lanes' results are
    /// recorded here).
    fn next_pc(
        &mut self,
        t: LLVMValueRef,
        number: &HashMap<LLVMBasicBlockRef, u64>,
        m: LLVMValueRef,
    ) -> Option<LLVMValueRef> {
        let pc_of = |this: &Self, b: LLVMBasicBlockRef| -> Option<LLVMValueRef> {
            Some(this.const_splat(unsafe { LLVMConstInt(this.i32t, *number.get(&b)?, 0) }))
        };
        unsafe {
            match LLVMGetInstructionOpcode(t) {
                LLVMOpcode::LLVMBr if LLVMIsConditional(t) == 0 => pc_of(self, LLVMGetSuccessor(t, 0)),
                LLVMOpcode::LLVMBr => {
                    let c = self.value(LLVMGetCondition(t))?;
                    let (a, b) = (
                        pc_of(self, LLVMGetSuccessor(t, 0))?,
                        pc_of(self, LLVMGetSuccessor(t, 1))?,
                    );
                    Some(LLVMBuildSelect(self.b, c, a, b, c"next".as_ptr()))
                }
                LLVMOpcode::LLVMSwitch if LLVMGetOperand(t, 0) == LLVMGetParam(self.tf, 1) => {
                    pc_of(self, switch_target(t, self.state as u64)?)
                }
                LLVMOpcode::LLVMRet => {
                    if let Some(&resume) = self.stops_to.get(&LLVMGetInstructionParent(t)) {
                        return pc_of(self, resume);
                    }
                    if LLVMGetNumOperands(t) == 1 {
                        let v = self.value(LLVMGetOperand(t, 0))?;
                        if LLVMTypeOf(v) != self.vt(self.i32t) {
                            return None;
                        }
                        self.store_lanes(m, v, self.result);
                    }
                    Some(self.const_splat(LLVMConstInt(self.i32t, EXIT, 0)))
                }
                _ => None,
            }
        }
    }

    /// For conditional branch `t` in a block's copy for every lane: where the condition compares values
    /// affine in the lane and its first and last lanes agree, so do all the lanes in between (the
    /// difference of the operands is linear in the lane and, where neither wraps, so is its sign),
    /// and the code goes on directly to the target's copy for every lane, with no vector of the
    /// compared values (a loop's `i + 3 * step < end`, say). Leaves the builder where the lanes are
    /// compared one by one.
    fn uniform_branch(
        &self,
        t: LLVMValueRef,
        number: &HashMap<LLVMBasicBlockRef, u64>,
        all_blocks: &HashMap<LLVMBasicBlockRef, LLVMBasicBlockRef>,
    ) {
        use inkwell::llvm_sys::LLVMIntPredicate::*;
        unsafe {
            if LLVMGetInstructionOpcode(t) != LLVMOpcode::LLVMBr || LLVMIsConditional(t) == 0 {
                return;
            }
            let (s0, s1) = (LLVMGetSuccessor(t, 0), LLVMGetSuccessor(t, 1));
            let (Some(&n0), Some(&n1)) = (number.get(&s0), number.get(&s1)) else {
                return;
            };
            let mut c = LLVMGetCondition(t);
            while let Some(&w) = self.forward.get(&c) {
                c = w;
            }
            if crate::ir::opcode(c) != Some(LLVMOpcode::LLVMICmp) {
                return;
            }
            let pred = LLVMGetICmpPredicate(c);
            let signed = match pred {
                LLVMIntSLT | LLVMIntSLE | LLVMIntSGT | LLVMIntSGE => true,
                LLVMIntULT | LLVMIntULE | LLVMIntUGT | LLVMIntUGE => false,
                _ => return,
            };
            let (Some(x), Some(y)) = (self.affine(LLVMGetOperand(c, 0)), self.affine(LLVMGetOperand(c, 1))) else {
                return;
            };
            let ty = LLVMTypeOf(x.first);
            if LLVMGetTypeKind(ty) != LLVMTypeKind::LLVMIntegerTypeKind || (x.stride == 0 && y.stride == 0) {
                return;
            }
            let last = |a: Affine| {
                let span = LLVMConstInt(ty, (LANES as i64 - 1).wrapping_mul(a.stride) as u64, 1);
                LLVMBuildAdd(self.b, a.first, span, c"last".as_ptr())
            };
            let c0 = LLVMBuildICmp(self.b, pred, x.first, y.first, c"first".as_ptr());
            let cn = LLVMBuildICmp(self.b, pred, last(x), last(y), c"last".as_ptr());
            let mut ok = LLVMBuildICmp(self.b, LLVMIntEQ, c0, cn, c"agree".as_ptr());
            for a in [x, y] {
                ok = self.and(ok, Some(vary::no_wrap(self.b, a.first, a.stride, signed, a.holds)));
            }
            let on = self.block("lanes.uniform");
            let lanewise = self.block("lanes.lanewise");
            LLVMBuildCondBr(self.b, ok, on, lanewise);
            LLVMPositionBuilderAtEnd(self.b, on);
            let pc = |n: u64| self.const_splat(LLVMConstInt(self.i32t, n, 0));
            LLVMBuildStore(
                self.b,
                LLVMBuildSelect(self.b, c0, pc(n0), pc(n1), c"pc".as_ptr()),
                self.pc,
            );
            LLVMBuildCondBr(self.b, c0, all_blocks[&s0], all_blocks[&s1]);
            LLVMPositionBuilderAtEnd(self.b, lanewise);
        }
    }

    fn copy_fast_math(&self, from: LLVMValueRef, to: LLVMValueRef) {
        unsafe {
            if LLVMCanValueUseFastMathFlags(from) != 0
                && !LLVMIsAInstruction(to).is_null()
                && LLVMCanValueUseFastMathFlags(to) != 0
            {
                LLVMSetFastMathFlags(to, LLVMGetFastMathFlags(from));
            }
        }
    }

    /// Emits instruction `i` for the lanes of mask `m` (`full`: every lane is in it).
    fn instruction(&mut self, i: LLVMValueRef, m: LLVMValueRef, full: LLVMValueRef) -> Option<()> {
        use LLVMOpcode::*;
        let op = unsafe { LLVMGetInstructionOpcode(i) };
        let uniform_register =
            |p: LLVMValueRef| unsafe { !LLVMIsAAllocaInst(p).is_null() && self.uni.contains_key(&p) };
        if self.uniform.contains(&i) || (op == LLVMStore && uniform_register(unsafe { LLVMGetOperand(i, 1) })) {
            // Once for the group: the same instruction on the operands' one values.
            unsafe {
                // Operands first: a clone left outside any block would spoil the module.
                let ops = (0..LLVMGetNumOperands(i) as u32)
                    .map(|k| self.scalar(LLVMGetOperand(i, k)))
                    .collect::<Option<Vec<_>>>()?;
                let c = LLVMInstructionClone(i);
                for (k, o) in ops.into_iter().enumerate() {
                    LLVMSetOperand(c, k as u32, o);
                }
                LLVMInsertIntoBuilder(self.b, c);
                self.uni.insert(i, c);
            }
            return Some(());
        }
        let ty = unsafe { LLVMTypeOf(i) };
        let operand = |this: &Self, k: u32| this.value(unsafe { LLVMGetOperand(i, k) });
        let r = unsafe {
            match op {
                LLVMLoad => {
                    if LLVMGetVolatile(i) != 0
                        || LLVMGetOrdering(i) != LLVMAtomicOrdering::LLVMAtomicOrderingNotAtomic
                        || !scalar_type(ty)
                    {
                        return None;
                    }
                    let p = LLVMGetOperand(i, 0);
                    if let Some(&reg) = self.regs.get(&p) {
                        if let Some(&w) = self.written.get(&p) {
                            self.reads.insert(i, w);
                            if LLVMTypeOf(w) == ty {
                                // What this block wrote: the lanes outside `m`, which it did not
                                // write, matter to none of its effects.
                                if let Some(a) = self.affine(w) {
                                    self.aff.insert(i, a);
                                }
                                self.forward.insert(i, w);
                                return Some(());
                            }
                        }
                        let v = LLVMBuildLoad2(self.b, self.vt(ty), reg, c"".as_ptr());
                        if let Some(&(stride, flag, first)) = self.affine_regs.get(&p) {
                            let first = LLVMBuildLoad2(self.b, ty, first, c"first".as_ptr());
                            let holds =
                                LLVMBuildLoad2(self.b, LLVMInt1TypeInContext(self.ctx), flag, c"affine".as_ptr());
                            self.aff.insert(
                                i,
                                Affine {
                                    first,
                                    stride,
                                    holds: Some(holds),
                                },
                            );
                        }
                        v
                    } else if let Some(d) = tid_dim(i, self.env) {
                        // `tid`: the group's first thread's, plus the lane along x.
                        let vp = self.value(p)?;
                        let sp = LLVMBuildExtractElement(self.b, vp, LLVMConstInt(self.i32t, 0, 0), c"".as_ptr());
                        let s = LLVMBuildLoad2(self.b, ty, sp, c"tid".as_ptr());
                        let v = self.splat(s);
                        if d == 0 {
                            self.aff.insert(
                                i,
                                Affine {
                                    first: s,
                                    stride: 1,
                                    holds: None,
                                },
                            );
                            LLVMBuildAdd(self.b, v, self.iota(ty, 1), c"tid".as_ptr())
                        } else {
                            v
                        }
                    } else {
                        let v = self.load(ty, p, LLVMGetAlignment(i), m, full)?;
                        if let Some(a) = self.affine(p).filter(|a| a.stride == 0) {
                            // Every lane reads one address, so one value (where the form holds).
                            if matches!(
                                LLVMGetTypeKind(ty),
                                LLVMTypeKind::LLVMIntegerTypeKind | LLVMTypeKind::LLVMPointerTypeKind
                            ) {
                                let first = LLVMBuildExtractElement(
                                    self.b,
                                    v,
                                    LLVMConstInt(self.i32t, 0, 0),
                                    c"first".as_ptr(),
                                );
                                self.aff.insert(
                                    i,
                                    Affine {
                                        first,
                                        stride: 0,
                                        holds: a.holds,
                                    },
                                );
                            }
                        }
                        v
                    }
                }
                LLVMStore => {
                    if LLVMGetVolatile(i) != 0 || LLVMGetOrdering(i) != LLVMAtomicOrdering::LLVMAtomicOrderingNotAtomic
                    {
                        return None;
                    }
                    let p = LLVMGetOperand(i, 1);
                    if let Some(&reg) = self.regs.get(&p) {
                        self.written.insert(p, LLVMGetOperand(i, 0));
                        if self.dead.contains(&i) {
                            return Some(());
                        }
                        let v = operand(self, 0)?;
                        self.store_lanes(m, v, reg);
                        if let Some(&(stride, flag, first)) = self.affine_regs.get(&p) {
                            let holds = match self.affine(LLVMGetOperand(i, 0)) {
                                Some(a) if a.stride == stride => {
                                    LLVMBuildStore(self.b, a.first, first);
                                    self.and(full, a.holds)
                                }
                                _ => LLVMConstInt(LLVMInt1TypeInContext(self.ctx), 0, 0),
                            };
                            LLVMBuildStore(self.b, holds, flag);
                        }
                    } else {
                        let v = operand(self, 0)?;
                        self.publish(i, v, m);
                        match self.scalar(p) {
                            Some(p) => {
                                self.store_one(v, p, LLVMGetAlignment(i), m);
                            }
                            None => self.store(v, p, LLVMGetAlignment(i), m, full)?,
                        }
                    }
                    return Some(());
                }
                LLVMCall if marked(i, regions::COLLECTIVE_RESULT) => self.exchange(i)?,
                LLVMCall => return self.call_inst(i),
                _ => {
                    self.track(i);
                    let operands_ready =
                        || (0..LLVMGetNumOperands(i) as u32).all(|k| self.available(LLVMGetOperand(i, k)));
                    // Comparisons too: a branch on one may need only its end lanes (`uniform_branch`).
                    let deferred = self.aff.contains_key(&i) || op == LLVMICmp;
                    if deferred && scalar_type(ty) && operands_ready() {
                        self.pending.insert(i, m);
                        return Some(());
                    }
                    self.compute(i, m, &|k| self.value(LLVMGetOperand(i, k)))?
                }
            }
        };
        self.map.get_mut().insert(i, r);
        Some(())
    }

    /// The lanes of arithmetic instruction `i` for the lanes of mask `m`, from its operands' lanes
    /// (`operand(k)`).
    fn compute(
        &self,
        i: LLVMValueRef,
        m: LLVMValueRef,
        operand: &dyn Fn(u32) -> Option<LLVMValueRef>,
    ) -> Option<LLVMValueRef> {
        use LLVMOpcode::*;
        let ty = unsafe { LLVMTypeOf(i) };
        let op = unsafe { LLVMGetInstructionOpcode(i) };
        let r = unsafe {
            match op {
                LLVMAdd | LLVMFAdd | LLVMSub | LLVMFSub | LLVMMul | LLVMFMul | LLVMFDiv | LLVMFRem | LLVMShl
                | LLVMLShr | LLVMAShr | LLVMAnd | LLVMOr | LLVMXor => {
                    if !scalar_type(ty) {
                        return None;
                    }
                    let r = LLVMBuildBinOp(self.b, op, operand(0)?, operand(1)?, c"".as_ptr());
                    self.copy_fast_math(i, r);
                    r
                }
                LLVMUDiv | LLVMSDiv | LLVMURem | LLVMSRem => {
                    // Masked lanes divide by one: their operands may be anything.
                    let d = operand(1)?;
                    let one = self.const_splat(LLVMConstInt(LLVMTypeOf(LLVMGetOperand(i, 1)), 1, 0));
                    let d = LLVMBuildSelect(self.b, m, d, one, c"".as_ptr());
                    LLVMBuildBinOp(self.b, op, operand(0)?, d, c"".as_ptr())
                }
                LLVMFNeg => {
                    let r = LLVMBuildFNeg(self.b, operand(0)?, c"".as_ptr());
                    self.copy_fast_math(i, r);
                    r
                }
                LLVMTrunc | LLVMZExt | LLVMSExt | LLVMFPToUI | LLVMFPToSI | LLVMUIToFP | LLVMSIToFP | LLVMFPTrunc
                | LLVMFPExt | LLVMPtrToInt | LLVMIntToPtr | LLVMBitCast | LLVMAddrSpaceCast => {
                    if !scalar_type(ty) {
                        return None;
                    }
                    LLVMBuildCast(self.b, op, operand(0)?, self.vt(ty), c"".as_ptr())
                }
                LLVMICmp => LLVMBuildICmp(self.b, LLVMGetICmpPredicate(i), operand(0)?, operand(1)?, c"".as_ptr()),
                LLVMFCmp => {
                    let r = LLVMBuildFCmp(self.b, LLVMGetFCmpPredicate(i), operand(0)?, operand(1)?, c"".as_ptr());
                    self.copy_fast_math(i, r);
                    r
                }
                LLVMSelect => {
                    if !scalar_type(ty) {
                        return None;
                    }
                    let r = LLVMBuildSelect(self.b, operand(0)?, operand(1)?, operand(2)?, c"".as_ptr());
                    self.copy_fast_math(i, r);
                    r
                }
                LLVMFreeze => LLVMBuildFreeze(self.b, operand(0)?, c"".as_ptr()),
                LLVMGetElementPtr => {
                    let base = operand(0)?;
                    let mut idx = vec![];
                    for k in 1..LLVMGetNumOperands(i) as u32 {
                        let x = LLVMGetOperand(i, k);
                        // Constant indices stay scalar: struct fields must.
                        idx.push(if LLVMIsAConstantInt(x).is_null() {
                            operand(k)?
                        } else {
                            x
                        });
                    }
                    LLVMBuildGEP2(
                        self.b,
                        LLVMGetGEPSourceElementType(i),
                        base,
                        idx.as_mut_ptr(),
                        idx.len() as u32,
                        c"".as_ptr(),
                    )
                }
                LLVMExtractValue => {
                    if LLVMGetNumIndices(i) != 1 {
                        return None;
                    }
                    LLVMBuildExtractValue(self.b, operand(0)?, *LLVMGetIndices(i), c"".as_ptr())
                }
                _ => return None,
            }
        };
        Some(r)
    }

    /// `v`'s lanes, computed here again where `v` is affine arithmetic. Where an access finds its
    /// address's affine form holds it needs no vector of addresses: computing them only on the
    /// path that does leaves them dead on the other (where they are never stored in a register
    /// that lives on).
    fn rebuild(&self, v: LLVMValueRef, m: LLVMValueRef) -> Option<LLVMValueRef> {
        if let Some(&w) = self.reads.get(&v).or_else(|| self.forward.get(&v)) {
            // A register this block (or the entry block) wrote: the lanes of `m` read what it was
            // written with.
            return self.rebuild(w, m);
        }
        // Deferred values not built yet are built here without being kept: this may be a fallback's
        // path, which the block's main path does not go through.
        let deferred =
            self.aff.contains_key(&v) || (self.pending.contains_key(&v) && !self.map.borrow().contains_key(&v));
        if deferred && unsafe { crate::ir::opcode(v) }.is_some_and(|op| op != LLVMOpcode::LLVMLoad) {
            return self.compute(v, m, &|k| self.rebuild(unsafe { LLVMGetOperand(v, k) }, m));
        }
        self.value(v)
    }

    /// `v`'s affine form, if it has one here (uniform values have stride 0).
    fn affine(&self, v: LLVMValueRef) -> Option<Affine> {
        if let Some(&a) = self.aff.get(&v) {
            return Some(a);
        }
        let first = self.scalar(v)?;
        matches!(
            unsafe { LLVMGetTypeKind(LLVMTypeOf(first)) },
            LLVMTypeKind::LLVMIntegerTypeKind | LLVMTypeKind::LLVMPointerTypeKind
        )
        .then_some(Affine {
            first,
            stride: 0,
            holds: None,
        })
    }

    fn and(&self, a: LLVMValueRef, b: Option<LLVMValueRef>) -> LLVMValueRef {
        match b {
            Some(b) if const_int(a) == Some(1) => b,
            Some(b) => unsafe { LLVMBuildAnd(self.b, a, b, c"".as_ptr()) },
            None => a,
        }
    }

    /// Records instruction `i`'s affine form when its operands have theirs and the operation keeps
    /// it: lane 0's value is `i` itself on the operands' lane 0 values.
    fn track(&mut self, i: LLVMValueRef) {
        unsafe {
            let n = LLVMGetNumOperands(i) as u32;
            let ops: Vec<Option<Affine>> = (0..n).map(|k| self.affine(LLVMGetOperand(i, k))).collect();
            let Stride::By(stride) =
                vary::step(i, &|k| ops[k as usize].map_or(Stride::Varies, |a| Stride::By(a.stride)))
            else {
                return;
            };
            let Some(ops) = ops.into_iter().collect::<Option<Vec<Affine>>>() else {
                return;
            };
            let c = LLVMInstructionClone(i);
            for (k, o) in ops.iter().enumerate() {
                LLVMSetOperand(c, k as u32, o.first);
            }
            LLVMInsertIntoBuilder(self.b, c);
            let mut holds = ops
                .iter()
                .fold(None, |acc: Option<LLVMValueRef>, o| match (acc, o.holds) {
                    (Some(a), h) => Some(self.and(a, h)),
                    (None, h) => h,
                });
            let op = LLVMGetInstructionOpcode(i);
            let cond = match op {
                LLVMOpcode::LLVMSExt | LLVMOpcode::LLVMZExt => {
                    // The operands' condition goes into the compare's bound.
                    Some(vary::no_wrap(
                        self.b,
                        ops[0].first,
                        ops[0].stride,
                        op == LLVMOpcode::LLVMSExt,
                        holds.take(),
                    ))
                }
                LLVMOpcode::LLVMLShr | LLVMOpcode::LLVMAShr if ops[0].stride != 0 => {
                    let k = const_int(LLVMGetOperand(i, 1)).unwrap_or(0);
                    Some(vary::no_carry(self.b, ops[0].first, ops[0].stride, k))
                }
                _ => None,
            };
            if let Some(w) = cond {
                holds = Some(self.and(w, holds));
            }
            self.aff.insert(
                i,
                Affine {
                    first: c,
                    stride,
                    holds,
                },
            );
        }
    }

    /// A call: pure intrinsics only, as one vector intrinsic where LLVM has it for these operand
    /// types, else once per lane.
    fn call_inst(&mut self, i: LLVMValueRef) -> Option<()> {
        unsafe {
            let callee = LLVMGetCalledValue(i);
            if LLVMIsAFunction(callee).is_null() || LLVMGetIntrinsicID(callee) == 0 {
                return None;
            }
            let name = name_of(callee);
            let ty = LLVMTypeOf(i);
            if NO_OPS.iter().any(|p| name.starts_with(p)) {
                return (LLVMGetTypeKind(ty) == LLVMTypeKind::LLVMVoidTypeKind).then_some(());
            }
            if !pure_function(callee) {
                return None;
            }
            let n = LLVMGetNumArgOperands(i);
            let args: Vec<LLVMValueRef> = (0..n).map(|k| LLVMGetOperand(i, k)).collect();
            let id = LLVMGetIntrinsicID(callee);
            let r = if WITH_OVERFLOW.iter().any(|p| name.starts_with(p)) {
                let mut vals = args.iter().map(|&a| self.value(a)).collect::<Option<Vec<_>>>()?;
                let f = self.intrinsic_id(id, &mut [self.vt(LLVMTypeOf(args[0]))])?;
                self.call(f, &mut vals)
            } else if !scalar_type(ty) {
                return None;
            } else if let Some((f, fty)) = args
                .iter()
                .all(|&a| LLVMTypeOf(a) == ty)
                .then(|| self.intrinsic_id(id, &mut [self.vt(ty)]))
                .flatten()
                .filter(|&(_, fty)| {
                    // The declaration must take and give lane vectors of every operand.
                    let mut got = vec![std::ptr::null_mut(); LLVMCountParamTypes(fty) as usize];
                    LLVMGetParamTypes(fty, got.as_mut_ptr());
                    got.len() == n as usize
                        && got.iter().all(|&t| t == self.vt(ty))
                        && LLVMGetReturnType(fty) == self.vt(ty)
                })
            {
                let mut vals = args.iter().map(|&a| self.value(a)).collect::<Option<Vec<_>>>()?;
                let r = self.call((f, fty), &mut vals);
                self.copy_fast_math(i, r);
                r
            } else {
                self.per_lane(i, callee, &args)?
            };
            self.map.get_mut().insert(i, r);
            Some(())
        }
    }

    /// A pure call made once per lane (constant operands stay as they are: some must be immediates).
    fn per_lane(&mut self, i: LLVMValueRef, callee: LLVMValueRef, args: &[LLVMValueRef]) -> Option<LLVMValueRef> {
        unsafe {
            let fty = LLVMGetCalledFunctionType(i);
            let vals: Vec<Option<LLVMValueRef>> = args
                .iter()
                .map(|&a| {
                    if LLVMIsAConstant(a).is_null() {
                        self.value(a).map(Some)
                    } else {
                        Some(None)
                    }
                })
                .collect::<Option<_>>()?;
            let mut r = LLVMGetPoison(self.vt(LLVMTypeOf(i)));
            for l in 0..LANES as u64 {
                let lane = LLVMConstInt(self.i32t, l, 0);
                let mut one: Vec<LLVMValueRef> = args
                    .iter()
                    .zip(&vals)
                    .map(|(&a, v)| match v {
                        Some(v) => LLVMBuildExtractElement(self.b, *v, lane, c"".as_ptr()),
                        None => a,
                    })
                    .collect();
                let c = LLVMBuildCall2(self.b, fty, callee, one.as_mut_ptr(), one.len() as u32, c"".as_ptr());
                self.copy_fast_math(i, c);
                r = LLVMBuildInsertElement(self.b, r, c, lane, c"".as_ptr());
            }
            Some(r)
        }
    }

    /// Branches to the first of `arms` (condition, code) that holds or, when none holds, `otherwise`; returns the value
    /// each produced (None for stores). `likely`: the arms are the expected case, and `otherwise` the
    /// rare one (told to LLVM, whose register allocator then keeps the arms' values in registers).
    fn choose(
        &self,
        arms: Vec<Arm<'_>>,
        otherwise: Box<dyn Fn(&Self) -> LLVMValueRef + '_>,
        ty: Option<LLVMTypeRef>,
        likely: bool,
    ) -> Option<LLVMValueRef> {
        unsafe {
            let join = self.block("lanes.join");
            let mut incoming = vec![];
            for (cond, code) in arms {
                // Conditions are built in turn: a later one costs nothing where an earlier holds.
                let cond = cond(self);
                let then = self.block("lanes.mem");
                let next = self.block("lanes.mem");
                let br = LLVMBuildCondBr(self.b, cond, then, next);
                if likely {
                    self.expect_taken(br);
                }
                LLVMPositionBuilderAtEnd(self.b, then);
                let v = code(self);
                incoming.push((v, LLVMGetInsertBlock(self.b)));
                LLVMBuildBr(self.b, join);
                LLVMPositionBuilderAtEnd(self.b, next);
            }
            let v = otherwise(self);
            incoming.push((v, LLVMGetInsertBlock(self.b)));
            LLVMBuildBr(self.b, join);
            LLVMPositionBuilderAtEnd(self.b, join);
            let ty = ty?;
            let phi = LLVMBuildPhi(self.b, ty, c"".as_ptr());
            let (mut vs, mut bs): (Vec<_>, Vec<_>) = incoming.into_iter().unzip();
            LLVMAddIncoming(phi, vs.as_mut_ptr(), bs.as_mut_ptr(), vs.len() as u32);
            Some(phi)
        }
    }

    /// Marks conditional branch `br` as almost always going to its first successor.
    fn expect_taken(&self, br: LLVMValueRef) {
        unsafe {
            let name = "branch_weights";
            let mut node = [
                LLVMMDStringInContext2(self.ctx, name.as_ptr() as *const _, name.len()),
                LLVMValueAsMetadata(LLVMConstInt(self.i32t, 2000, 0)),
                LLVMValueAsMetadata(LLVMConstInt(self.i32t, 1, 0)),
            ];
            let md = LLVMMDNodeInContext2(self.ctx, node.as_mut_ptr(), node.len());
            LLVMSetMetadata(br, metadata_kind(self.ctx, "prof"), LLVMMetadataAsValue(self.ctx, md));
        }
    }
}

/// A branch of `Lanes::choose`: its condition and its code, each built where it is needed.
type Arm<'a> = (
    Box<dyn Fn(&Lanes) -> LLVMValueRef + 'a>,
    Box<dyn Fn(&Lanes) -> LLVMValueRef + 'a>,
);

impl<'ctx> super::Lowerer<'ctx> {
    /// The thread loops of a region with a lane-vectorised body `lanes_fn`: along x, groups of `LANES`
    /// threads run through `group` (given the group's first linear index), the rest one by one through
    /// `single` (given the thread's).
    pub(super) fn lane_loops(
        &mut self,
        block_fn: inkwell::values::FunctionValue<'ctx>,
        env: inkwell::values::PointerValue<'ctx>,
        mut group: impl FnMut(&mut Self, inkwell::values::IntValue<'ctx>) -> super::R<()>,
        mut single: impl FnMut(&mut Self, inkwell::values::IntValue<'ctx>) -> super::R<()>,
    ) -> super::R<()> {
        use inkwell::IntPredicate;
        let i32t = self.i32();
        let ntid = self.ntid_values(env)?;
        let mut outer = vec![];
        for d in [2u32, 1] {
            let (phi, _) = self.open_tid_loop(block_fn, env, d, "lanes.outer", None)?;
            outer.push((phi, d));
        }
        let (z, y) = (
            outer[0].0.as_basic_value().into_int_value(),
            outer[1].0.as_basic_value().into_int_value(),
        );
        let row = self.b.build_int_mul(
            self.b.build_int_add(self.b.build_int_mul(z, ntid[1], "r")?, y, "r")?,
            ntid[0],
            "row",
        )?;
        // x: whole groups, then the threads left over.
        let width = i32t.const_int(LANES as u64, false);
        let mut x = i32t.const_zero();
        for grouped in [true, false] {
            let pre = self.b.get_insert_block().expect("block");
            let head = self.ctx.append_basic_block(block_fn, "lanes.x");
            let body = self.ctx.append_basic_block(block_fn, "lanes.run");
            let exit = self.ctx.append_basic_block(block_fn, "lanes.x.done");
            self.b.build_unconditional_branch(head)?;
            self.b.position_at_end(head);
            let phi = self.b.build_phi(i32t, "x")?;
            phi.add_incoming(&[(&x, pre)]);
            let xv = phi.as_basic_value().into_int_value();
            let more = if grouped {
                let end = self.b.build_int_add(xv, width, "end")?;
                self.b.build_int_compare(IntPredicate::ULE, end, ntid[0], "more")?
            } else {
                self.b.build_int_compare(IntPredicate::ULT, xv, ntid[0], "more")?
            };
            self.b.build_conditional_branch(more, body, exit)?;
            self.b.position_at_end(body);
            let p = self.env_dim_ptr(env, EnvField::Tid, 0)?;
            self.b.build_store(p, xv)?;
            let lin = self
                .b
                .build_int_z_extend(self.b.build_int_add(row, xv, "lin")?, self.i64(), "lin")?;
            if grouped {
                group(self, lin)?;
            } else {
                single(self, lin)?;
            }
            let step = if grouped { width } else { i32t.const_int(1, false) };
            let next = self.b.build_int_add(xv, step, "x")?;
            phi.add_incoming(&[(&next, self.b.get_insert_block().expect("block"))]);
            self.b.build_unconditional_branch(head)?;
            self.b.position_at_end(exit);
            x = xv;
        }
        for (phi, d) in outer.into_iter().rev() {
            let exit = self.ctx.append_basic_block(block_fn, "lanes.outer.done");
            self.close_tid_loop(phi, ntid[d as usize], exit)?;
        }
        Ok(())
    }
}
