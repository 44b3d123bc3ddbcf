//! The translator. Registers become allocas (mem2reg turns them into SSA), labels become basic blocks,
//! and every instruction is lowered from its ISA-table decoding. This file holds the module and
//! function structure and the instruction dispatch; the submodules hold one concern each.

mod arith;
mod asm;
mod async_copy;
mod builtin;
mod calls;
mod cluster;
pub use calls::undefined_function;
mod convert;
mod declare;
mod dispatch;
mod host;
mod lanes;
mod memory;
mod regions;
mod sync;
mod texture;
mod values;
mod video;
mod warpgroup;

#[cfg(test)]
mod abi_layout;

use crate::abi::{EnvField, StepsField};
use crate::Flavour;
use host::abi_struct;
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::builder::{Builder, BuilderError};
use inkwell::context::Context;
use inkwell::module::{Linkage as LlLinkage, Module};
use inkwell::types::{AnyType, BasicType, BasicTypeEnum, IntType};
use inkwell::values::{
    AsValueRef, BasicMetadataValueEnum, BasicValue, BasicValueEnum, FunctionValue, GlobalValue, IntValue, PhiValue,
    PointerValue,
};
use inkwell::{AddressSpace, FloatPredicate, IntPredicate};
use ptx_front::ast::{self, Expr, FnKind, Function, Imm, Init, Instruction, Item, Name, Operand, Statement, VarDecl};
use ptx_front::diag::{Code, Diagnostic};
use ptx_front::isa::{self, Decoded, G};
use ptx_front::scope::{Entry, Labels, Scope};
use ptx_front::span::Span;
use ptx_front::types::{Kind, Space, Type};
use ptx_front::Target;
use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ParamInfo {
    pub name: String,
    pub offset: u64,
    pub size: u64,
    pub align: u64,
}

/// What preparing a kernel learns; the disk cache keeps it (serde).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KernelInfo {
    pub name: String,
    pub params: Vec<ParamInfo>,
    /// Size of the argument buffer, laid out with natural alignment as the CUDA driver does.
    pub param_bytes: u64,
    /// Bytes of static `.shared` memory; dynamic shared memory starts at this offset (aligned to 16, or
    /// to the largest `.align` of its declarations).
    pub static_shared: u64,
    /// Bytes the static `.shared` variables take (`CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`): without the
    /// padding before dynamic shared memory.
    pub shared_bytes: u64,
    /// Bytes of the `.const` variables lowered with the kernel, which are those it can reach
    /// (`CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES`, the user constant bank ptxas reports).
    pub const_bytes: u64,
    /// Bytes of the kernel's own `.local` variables, per thread (its callees' come on top).
    pub local_bytes: u64,
    /// Host flavour: how the runtime runs the kernel's CTAs.
    pub exec: Exec,
    /// The most threads a block may have: the product of `.maxntid`'s dimensions (None without one).
    pub max_threads: Option<u64>,
    /// The block shape `.reqntid` requires (missing dimensions are 1).
    pub required_block: Option<[u32; 3]>,
    /// The cluster shape `.reqnctapercluster` requires: every launch of the kernel is a cluster launch.
    pub cluster: Option<[u32; 3]>,
    /// `.explicitcluster`: the kernel must be launched as clusters (with `.reqnctapercluster` or cluster
    /// dimensions at launch).
    pub explicit_cluster: bool,
    /// The module's `.target` (120 for `compute_120` PTX; 0 without one): the virtual architecture the
    /// kernel was written for, which `CU_FUNC_ATTRIBUTE_PTX_VERSION` reports and CUB's dispatch reads to
    /// choose among the tunings it was compiled with.
    pub target_sm: u32,
}

/// How a host kernel runs a CTA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Exec {
    /// No thread synchronises: the entry loops over the CTA's threads around the inlined thread body.
    Loop,
    /// Barriers and warp collectives sit only in the kernel's own body: the body is cut at them into
    /// regions, and one call of the entry runs one region for the CTA's threads (see `regions.rs`).
    /// Each thread keeps its registers in a frame of `frame_bytes` between regions. `lanes` of the
    /// regions run for groups of threads at once (see `lanes.rs`). `warp`: the body has warp
    /// collectives, so its code may count on a warp's threads running in step between them (code
    /// written before `__syncwarp` existed, such as CuPy's partition kernel): such a kernel skips the
    /// quick tier (which runs regions thread by thread) and its regions with collectives may be larger
    /// and still lane-vectorised, all of a warp in step (see `lanes::lane_region`). A region the
    /// vectoriser cannot take (too large, no loop or collective, the budget spent) still runs thread
    /// by thread.
    Regions { frame_bytes: u64, lanes: u32, warp: bool },
    /// Everything else (synchronisation inside called functions): the entry runs one thread, and the
    /// runtime runs each thread on its own fiber.
    Fibers,
}

/// Options of the host lowering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Cut synchronising kernels into regions where possible; otherwise every one runs on fibers.
    pub regions: bool,
    /// Checked mode: bounds-check every global, shared and local access.
    pub checked: bool,
    /// Run regions that loop by themselves for groups of threads at once (see `lower/lanes.rs`).
    pub lanes: bool,
    /// Counters (with checked mode, host flavour): each thread reports every counted block it enters
    /// and the direction of every conditional branch (`builtin::ACCESS_BLOCK`, `ACCESS_BRANCH`).
    pub counters: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            regions: true,
            checked: false,
            lanes: true,
            counters: false,
        }
    }
}

pub struct Lowered<'ctx> {
    pub module: Module<'ctx>,
    pub kernels: Vec<KernelInfo>,
    /// Module-scope `.global`/`.const` variables: (name, size in bytes).
    pub globals: Vec<(String, u64)>,
    /// Nvvm: the opcode offsets of the instructions emitted as inline PTX (their text goes out verbatim,
    /// so every requirement of their form binds the output).
    pub inline_asm: Vec<u32>,
}

enum Fail {
    /// Boxed: a lowering result is passed up through every handler, and the diagnostic is rare.
    Diag(Box<Diagnostic>),
    Llvm(BuilderError),
}
impl From<BuilderError> for Fail {
    fn from(e: BuilderError) -> Self {
        Fail::Llvm(e)
    }
}
type R<T> = Result<T, Fail>;

fn unsupported(span: Span, what: impl Into<String>) -> Fail {
    Fail::Diag(Box::new(
        Diagnostic::error(Code::P0401, span, what.into())
            .label("not supported yet")
            .help("see the README's list of what works today"),
    ))
}

/// Lowers a module that has passed `ptx_front::check` without errors.
pub fn lower<'ctx>(
    ctx: &'ctx Context,
    m: &ast::Module<'_>,
    flavour: Flavour,
    name: &str,
) -> Result<Lowered<'ctx>, Vec<Diagnostic>> {
    lower_with(ctx, m, flavour, name, Options::default())
}

/// [`lower`] with options. Checked mode (host flavour): every global, shared and local access first
/// calls `ptx_llvm::builtin::CHECK`, and a thread whose access is out of bounds stops there.
pub fn lower_with<'ctx>(
    ctx: &'ctx Context,
    m: &ast::Module<'_>,
    flavour: Flavour,
    name: &str,
    options: Options,
) -> Result<Lowered<'ctx>, Vec<Diagnostic>> {
    lower_only(ctx, m, flavour, name, options, None)
}

/// [`lower_with`] for one kernel: the module's declarations and variables, and the bodies of the
/// kernel `kernel` and of the functions it can reach (those it calls or takes the address of,
/// transitively, and those variables' initializers name), so a module's kernels can be lowered one
/// at a time, each for the cost of what it uses. An empty `kernel` lowers the variables alone.
pub fn lower_kernel<'ctx>(
    ctx: &'ctx Context,
    m: &ast::Module<'_>,
    flavour: Flavour,
    options: Options,
    kernel: &str,
) -> Result<Lowered<'ctx>, Vec<Diagnostic>> {
    lower_only(ctx, m, flavour, kernel, options, Some(kernel))
}

/// Lowers the module, or only what kernel `only` reaches, in one pass.
fn lower_only<'ctx>(
    ctx: &'ctx Context,
    m: &ast::Module<'_>,
    flavour: Flavour,
    name: &str,
    options: Options,
    only: Option<&str>,
) -> Result<Lowered<'ctx>, Vec<Diagnostic>> {
    let module = ctx.create_module(name);
    if flavour == Flavour::Nvvm {
        module.set_triple(&inkwell::targets::TargetTriple::create("nvptx64-nvidia-cuda"));
    }
    let target = Target::of(m);
    let reached = only.map(|k| reachable(m, k));
    let mut l = Lowerer {
        ctx,
        module,
        b: ctx.create_builder(),
        flavour,
        target,
        globals: HashMap::new(),
        shared_offsets: HashMap::new(),
        shared_size: 0,
        shared_used: 0,
        const_size: 0,
        funcs: HashMap::new(),
        aliases: Default::default(),
        diags: vec![],
        asm_used: vec![],
        symbol_inits: vec![],
        env_ty: None,
        syncing: syncing_functions(m, reached.as_ref()),
        options,
        checked: options.checked && flavour == Flavour::Host,
        site: 0,
        aligned: false,
        unraced: false,
        may_trap: m.items.iter().any(|i| {
            let Item::Function(f) = i else { return false };
            let mut found = false;
            if let Some(b) = &f.body {
                ast::visit(b, &mut |s| {
                    // Texture and surface instructions end the launch on a bad handle or `.trap`,
                    // tensor copies on a bad map or box, `wgmma` on a matrix outside shared memory,
                    // st.async and red.async outside a cluster launch.
                    let has = |i: &ast::Instruction<'_>, m: &str| i.mods.iter().any(|x| x.text == m);
                    found |= matches!(s, Statement::Inst(i) if matches!(i.opcode.text, "trap" | "tex" | "tld4" | "txq" | "suld" | "sust" | "sured" | "suq" | "wgmma")
                        || (i.opcode.text == "cp" && has(i, ".tensor"))
                        || (matches!(i.opcode.text, "st" | "red") && has(i, ".async"))
                        || (i.opcode.text == "call" && i.operands.iter().any(|o| matches!(o, Operand::Sym { name, .. } if name.text == "__assertfail"))));
                });
            }
            found
        }),
        maps_cluster: m.items.iter().any(|i| {
            let Item::Function(f) = i else { return false };
            let mut found = false;
            if let Some(b) = &f.body {
                ast::visit(b, &mut |s| found |= matches!(s, Statement::Inst(i) if i.opcode.text == "mapa"));
            }
            found
        }),
        cluster_access: false,
        private_memory: m.items.iter().any(|i| {
            let Item::Function(f) = i else { return false };
            let mut found = false;
            if let Some(b) = &f.body {
                ast::visit(b, &mut |s| {
                    found |= matches!(s, Statement::Var(v) if v.space == Space::Local)
                        || matches!(s, Statement::Inst(i) if i.opcode.text == "alloca");
                });
            }
            found
        }),
    };
    let (scope, _) = Scope::module(m);
    // Each function's checked IR gives its instructions' decoded forms: the lowering decodes nothing.
    let mut checker = ptx_front::check::Checker::new(
        m,
        &ptx_front::check::Options {
            no_lints: true,
            ..Default::default()
        },
    );
    if let Err(e) = l.declare_module(m) {
        l.fail(e);
    }
    let mut kernels = vec![];
    if l.diags.is_empty() {
        for item in &m.items {
            if let Item::Function(f) = item {
                let unreached = reached.as_ref().is_some_and(|r| !r.contains(f.name.text));
                if f.body.is_some() && !unreached {
                    match l.function(f, &scope, &mut checker) {
                        Ok(Some(k)) => kernels.push(k),
                        Ok(None) => {}
                        Err(e) => l.fail(e),
                    }
                }
            }
        }
    }
    // Functions out of reach were declared (internal, like every module-local function) but not
    // lowered: nothing uses them, and a body-less internal function is not valid IR.
    if let Some(reached) = &reached {
        for item in &m.items {
            if let Item::Function(f) = item {
                if f.body.is_some() && !reached.contains(f.name.text) {
                    if let Some(decl) = l.funcs.remove(f.name.text) {
                        if decl.as_global_value().as_pointer_value().get_first_use().is_none() {
                            unsafe { decl.delete() };
                        }
                    }
                }
            }
        }
    }
    if !l.diags.is_empty() {
        return Err(l.diags);
    }
    let globals = module_lifetime_vars(m)
        .filter(|(v, _)| matches!(v.space, Space::Global | Space::Const))
        .map(|(v, _)| (v.name.text.to_string(), v.size_bytes()))
        .collect();
    Ok(Lowered {
        module: l.module,
        kernels,
        globals,
        inline_asm: l.asm_used,
    })
}

struct Lowerer<'ctx> {
    ctx: &'ctx Context,
    module: Module<'ctx>,
    b: Builder<'ctx>,
    flavour: Flavour,
    target: Target,
    globals: HashMap<String, GlobalValue<'ctx>>,
    /// Host flavour: offset of each `.shared` variable in the CTA's shared window.
    shared_offsets: HashMap<String, u64>,
    shared_size: u64,
    /// Bytes the static `.shared` variables take, before the padding that aligns dynamic shared memory.
    shared_used: u64,
    /// Bytes of the module's `.const` variables (its user constant bank).
    const_size: u64,
    funcs: HashMap<String, FunctionValue<'ctx>>,
    /// Names that `.alias` directives define as another function (`funcs` maps them to it).
    aliases: std::collections::HashSet<String>,
    diags: Vec<Diagnostic>,
    /// Nvvm: instructions (by span start) lowered through inline PTX.
    asm_used: Vec<u32>,
    /// Nvvm: 64-bit module variables whose initializers hold addresses, filled once functions exist.
    symbol_inits: Vec<(String, Vec<asm::InitElem>)>,
    env_ty: Option<inkwell::types::StructType<'ctx>>,
    /// Functions that synchronise threads, in their own body or through calls.
    syncing: std::collections::HashSet<String>,
    options: Options,
    /// Checked mode: bounds-check memory accesses.
    checked: bool,
    /// The byte offset of the instruction being lowered, which checked code passes to the runtime
    /// before a barrier or warp collective (`builtin::ACCESS_SITE`), and whether that instruction is
    /// a barrier all threads must reach at the same place.
    site: u32,
    aligned: bool,
    /// Checked mode: the instruction being lowered is a load no race can involve, which racecheck
    /// need not see (`builtin::ACCESS_UNRACED`).
    unraced: bool,
    /// Some function traps (or fails an assertion): callers must stop when a callee did.
    may_trap: bool,
    /// Some function maps addresses to other CTAs of its cluster (`mapa`): `.shared::cluster`
    /// accesses decode the CTA rank `abi::cluster_address` puts in them. Without `mapa` no address
    /// names another CTA, and no access pays for the decoding.
    maps_cluster: bool,
    /// The instruction being lowered accesses `.shared::cluster` in a module that `maps_cluster`.
    cluster_access: bool,
    /// Some function declares `.local` memory or uses `alloca`: thread-private memory that lives in
    /// stack slots the inliner may share between a thread loop's iterations.
    private_memory: bool,
}

/// The module's variables in source order, each with whether it is declared at module scope: every
/// module-scope one, and the function-scope `.shared`, `.global` and `.const` ones, which live as long
/// as the module, under their own names.
fn module_lifetime_vars<'m, 'a>(m: &'m ast::Module<'a>) -> impl Iterator<Item = (&'m VarDecl<'a>, bool)> {
    m.items.iter().flat_map(|item| {
        let mut vs: Vec<(&'m VarDecl<'a>, bool)> = vec![];
        match item {
            Item::Var(v) => vs.push((v, true)),
            Item::Function(Function { body: Some(b), .. }) => ast::visit(b, &mut |s| {
                if let Statement::Var(v) = s {
                    if matches!(v.space, Space::Shared | Space::Global | Space::Const) {
                        vs.push((v, false));
                    }
                }
            }),
            _ => {}
        }
        vs
    })
}

/// Whether a body synchronises threads itself (barriers, warp collectives, and shared accesses a
/// warp's lanes make in step: `collective::Kind::Lockstep`), or reaches another CTA of its cluster
/// (`mapa`: only the fiber scheduler gives a CTA its cluster's table of windows).
fn needs_fibers(body: &[Statement<'_>]) -> bool {
    let mut found = false;
    ast::visit(body, &mut |s| {
        found |= matches!(s, Statement::Inst(i) if matches!(
            i.opcode.text,
            "bar" | "barrier" | "shfl" | "vote" | "match" | "redux" | "activemask" | "elect" | "mbarrier" | "mma"
                | "ldmatrix" | "stmatrix" | "movmatrix" | "wmma" | "wgmma" | "mapa"
        ) || lockstep_access(i, &[]));
    });
    found || !ptx_front::in_step::accesses(body).is_empty()
}

/// Whether a body has warp collectives (`shfl`, `vote`, `match`, `redux`).
fn has_warp_collective(body: &[Statement<'_>]) -> bool {
    let mut found = false;
    ast::visit(body, &mut |s| {
        found |= matches!(s, Statement::Inst(i) if matches!(i.opcode.text, "shfl" | "vote" | "match" | "redux"));
    });
    found
}

/// Whether the host's warp lanes make access `i` together (`collective::Kind::Lockstep`): a
/// `volatile` shared-memory access, or one of its body's warp-synchronous accesses `in_step`
/// ([`ptx_front::in_step::accesses`]). What the lowering of `ld`/`st` and [`needs_fibers`] both ask.
fn lockstep_access(i: &Instruction<'_>, in_step: &[u32]) -> bool {
    matches!(i.opcode.text, "ld" | "st")
        && (in_step.binary_search(&i.span.start).is_ok()
            || i.mods.iter().any(|m| m.text == ".volatile")
                && i.mods.iter().any(|m| Space::from_dot(m.text) == Some(Space::Shared)))
}

/// Whether a body works with the other CTAs of its cluster (`barrier.cluster`, `mapa`, multicast
/// copies): its CTAs must run together, which only the fiber scheduler does (a cluster's threads on
/// one scheduler); regions run one CTA at a time.
fn cluster_scoped(body: &[Statement<'_>]) -> bool {
    let mut found = false;
    ast::visit(body, &mut |s| {
        found |= matches!(s, Statement::Inst(i) if i.opcode.text == "mapa"
            || (i.opcode.text == "barrier" && i.mods.first().is_some_and(|m| m.text == ".cluster"))
            || i.mods.iter().any(|m| m.text == ".multicast::cluster"));
    });
    found
}

/// The functions that call a synchronising function (`None`: an indirect call, which may reach any).
fn callees<'a>(body: &[Statement<'a>]) -> Vec<Option<&'a str>> {
    let mut out = vec![];
    ast::visit(body, &mut |s| {
        if let Statement::Inst(i) = s {
            if i.opcode.text == "call" {
                out.push(i.callee().map(|n| n.text));
            }
        }
    });
    out
}

/// The functions kernel `kernel` can reach: itself, those it names (calls, addresses taken), and
/// transitively theirs, plus those module variables' initializers name (their address may be loaded
/// and called). Other kernels are reached only by name, like any function. With `.alias` anywhere,
/// every function (an alias names its target only in the directive).
fn reachable<'a>(m: &ast::Module<'a>, kernel: &str) -> std::collections::HashSet<&'a str> {
    let bodies: HashMap<&'a str, &[Statement<'a>]> = m
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Function(f) => f.body.as_deref().map(|b| (f.name.text, b)),
            _ => None,
        })
        .collect();
    if m.items
        .iter()
        .any(|i| matches!(i, Item::Directive(ast::Directive::Alias { .. })))
    {
        return bodies.keys().copied().collect();
    }
    let mut todo: Vec<&'a str> = vec![];
    let mut note = |n: &ast::Name<'a>| {
        if bodies.contains_key(n.text) {
            todo.push(n.text);
        }
    };
    for i in &m.items {
        if let Item::Var(ast::VarDecl { init: Some(init), .. }) = i {
            init.names(&mut note);
        }
    }
    if let Some((name, _)) = bodies.get_key_value(kernel) {
        todo.push(name);
    }
    let mut reached = std::collections::HashSet::new();
    while let Some(f) = todo.pop() {
        if !reached.insert(f) {
            continue;
        }
        ast::visit(bodies[f], &mut |s| {
            if let Statement::Inst(i) = s {
                i.operands.iter().for_each(|o| {
                    o.names(&mut |n| {
                        if bodies.contains_key(n.text) && !reached.contains(n.text) {
                            todo.push(n.text);
                        }
                    })
                });
            }
        });
    }
    reached
}

/// Names of the functions that synchronise threads, directly or through (possibly indirect) calls.
fn syncing_functions(
    m: &ast::Module<'_>,
    reached: Option<&std::collections::HashSet<&str>>,
) -> std::collections::HashSet<String> {
    // Only the functions being lowered (a kernel lowered alone reaches every function an indirect
    // call of it can name: their addresses are taken in what it reaches).
    let funcs: Vec<(&str, bool, Vec<Option<&str>>)> = m
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Function(f) if reached.is_none_or(|r| r.contains(f.name.text)) => {
                f.body.as_deref().map(|b| (f.name.text, needs_fibers(b), callees(b)))
            }
            _ => None,
        })
        .collect();
    let mut syncing: std::collections::HashSet<String> =
        funcs.iter().filter(|f| f.1).map(|f| f.0.to_string()).collect();
    loop {
        let before = syncing.len();
        for (name, _, calls) in &funcs {
            if calls.iter().any(|c| match c {
                Some(c) => syncing.contains(*c),
                None => !syncing.is_empty(),
            }) {
                syncing.insert(name.to_string());
            }
        }
        if syncing.len() == before {
            return syncing;
        }
    }
}

fn align_up(v: u64, a: u64) -> u64 {
    v.div_ceil(a.max(1)) * a.max(1)
}

/// Where a function's parameters live.
#[derive(Clone, Copy)]
enum ParamHome<'ctx> {
    /// Host kernels: an offset into the launch's argument buffer.
    Buffer(u64),
    /// Nvvm kernels and all device functions: a local copy.
    Slot(PointerValue<'ctx>),
}

struct Fn<'ctx, 'm, 'a> {
    func: FunctionValue<'ctx>,
    env: Option<PointerValue<'ctx>>,
    regs: HashMap<u32, PointerValue<'ctx>>,
    params: HashMap<&'a str, ParamHome<'ctx>>,
    /// Function-local `.param`/`.local` variables (by declaration address, since blocks may shadow names).
    locals: HashMap<*const VarDecl<'a>, PointerValue<'ctx>>,
    /// The body's labels (nested blocks scope them), and the block of each, by its place in the text.
    labels: Labels<'m, 'a>,
    blocks: HashMap<u32, BasicBlock<'ctx>>,
    is_kernel: bool,
    /// Result slots of a device function.
    ret: Vec<(PointerValue<'ctx>, BasicTypeEnum<'ctx>)>,
    /// `.callprototype`s of the body by the label that names them: (results, parameters).
    protos: HashMap<&'a str, (&'m [VarDecl<'a>], &'m [VarDecl<'a>])>,
    /// `.branchtargets` lists by the label that names them.
    targets: HashMap<&'a str, &'m [Name<'a>]>,
    /// The condition-code carry flag (CC.CF) of `.cc` arithmetic, made on first use.
    carry: Option<PointerValue<'ctx>>,
    alloca_at: Builder<'ctx>,
    /// The function's checked IR.
    checked: Option<ptx_front::ir::Function<'m, 'a>>,
    /// Checked mode: by instruction index, the loads no race can involve.
    unraced: Vec<bool>,
    /// Counters: by instruction index, whether a counted block starts there (`ptx_front::mix`).
    block_starts: Vec<bool>,
    /// Host: the places of the body's shared accesses a warp's lanes make in step, ascending
    /// ([`ptx_front::in_step::accesses`]).
    in_step: Vec<u32>,
}

impl<'ctx> Lowerer<'ctx> {
    /// An instruction the host flavour runs but the NVPTX lowering does not have yet.
    fn host_only(&self, span: Span, name: &str) -> R<()> {
        if self.flavour == Flavour::Host {
            Ok(())
        } else {
            Err(unsupported(span, format!("`{name}` is not supported for NVPTX yet")))
        }
    }

    fn fail(&mut self, e: Fail) {
        match e {
            Fail::Diag(d) => self.diags.push(*d),
            Fail::Llvm(e) => self.diags.push(Diagnostic::error(
                Code::P0401,
                Span::default(),
                format!("LLVM builder error: {e}"),
            )),
        }
    }

    fn int(&self, bits: u32) -> IntType<'ctx> {
        self.ctx
            .custom_width_int_type(std::num::NonZeroU32::new(bits.max(1)).expect("nonzero"))
            .expect("valid int width")
    }
    fn i32(&self) -> IntType<'ctx> {
        self.ctx.i32_type()
    }
    fn i64(&self) -> IntType<'ctx> {
        self.ctx.i64_type()
    }
    fn addr_ty(&self) -> IntType<'ctx> {
        self.int(self.target.address_bits)
    }
    fn ptr(&self, space: u16) -> inkwell::types::PointerType<'ctx> {
        self.ctx.ptr_type(AddressSpace::from(space))
    }

    /// The LLVM type a PTX value of this type computes in.
    fn value_ty(&self, t: Type) -> BasicTypeEnum<'ctx> {
        match t {
            Type::F32 => self.ctx.f32_type().into(),
            Type::F64 => self.ctx.f64_type().into(),
            Type::F16 | Type::Bf16 => self.ctx.i16_type().into(),
            other => self.int(other.bits()).into(),
        }
    }

    fn llvm_space(&self, s: Space) -> u16 {
        match (self.flavour, s) {
            (Flavour::Host, _) => 0,
            (_, Space::Global) => 1,
            (_, Space::Shared) => 3,
            (_, Space::Const) => 4,
            (_, Space::Local) => 5,
            _ => 0,
        }
    }

    fn function<'m, 'a>(
        &mut self,
        f: &'m Function<'a>,
        mscope: &Scope<'m, 'a>,
        checker: &mut ptx_front::check::Checker<'m, 'a>,
    ) -> R<Option<KernelInfo>> {
        let fv = self.funcs[f.name.text];
        if fv.count_basic_blocks() > 0 {
            return Ok(None); // a second definition was already reported by the checker
        }
        // The module was checked before it was lowered: the diagnostics are known already.
        let checked = checker.function(f, &mut vec![], ptx_front::check::Detail::Decoded);
        let unraced = match &checked {
            Some(c) if self.checked => ptx_front::intervals::unraced_loads(c),
            _ => vec![],
        };
        let is_kernel = f.kind == FnKind::Entry;
        // Host kernels: the thread body is its own function, inlined into the block loop.
        let body = f.body.as_ref().expect("function has a body");
        // Kernels whose own body synchronises, and nothing they call: candidates for regions. Their
        // thread body is `i32 (env, state)`: it starts at the region numbered `state` and returns the
        // next one (see `regions.rs`); run as a fiber it is called with 0 and runs to the end.
        let own_sync = is_kernel
            && self.flavour == Flavour::Host
            && self.syncing.contains(f.name.text)
            && callees(body)
                .iter()
                .all(|c| c.is_some_and(|c| !self.syncing.contains(c)));
        let (body_fn, info) = if is_kernel && self.flavour == Flavour::Host {
            let ty = if own_sync {
                self.i32().fn_type(&[self.ptr(0).into(), self.i32().into()], false)
            } else {
                self.ctx.void_type().fn_type(&[self.ptr(0).into()], false)
            };
            let tf = self
                .module
                .add_function(&format!("{}.thread", f.name.text), ty, Some(LlLinkage::Internal));
            // Regions' thread bodies are inlined where the state is a constant (see `regions_block_fn`).
            if !own_sync {
                let inl = self
                    .ctx
                    .create_enum_attribute(Attribute::get_named_enum_kind_id("alwaysinline"), 0);
                tf.add_attribute(AttributeLoc::Function, inl);
            }
            (tf, Some(self.kernel_info(f)))
        } else if is_kernel {
            (fv, Some(self.kernel_info(f)))
        } else {
            (fv, None)
        };
        // Allocas go in their own first block, which jumps to the body once everything is lowered.
        let entry = self.ctx.append_basic_block(body_fn, "allocas");
        let start = self.ctx.append_basic_block(body_fn, "start");
        let alloca_at = self.ctx.create_builder();
        alloca_at.position_at_end(entry);
        self.b.position_at_end(start);
        let mut st = Fn {
            func: body_fn,
            env: None,
            regs: HashMap::new(),
            params: HashMap::new(),
            locals: HashMap::new(),
            labels: Labels::of(body),
            blocks: HashMap::new(),
            is_kernel,
            ret: vec![],
            protos: HashMap::new(),
            targets: HashMap::new(),
            carry: None,
            alloca_at,
            block_starts: match &checked {
                Some(c) if self.checked && self.options.counters => ptx_front::mix::block_starts(c),
                _ => vec![],
            },
            checked,
            unraced,
            // A kernel with warp collectives cut into regions runs its warps' lanes in step already
            // (lane-vectorised regions, in every tier), and a lockstep wait would send it to fibers.
            in_step: match self.flavour {
                Flavour::Host
                    if !(own_sync && self.options.regions && !cluster_scoped(body) && has_warp_collective(body)) =>
                {
                    ptx_front::in_step::accesses_with(body, &|f| self.syncing.contains(f))
                }
                _ => vec![],
            },
        };
        // Parameters.
        let mut arg_index = 0;
        if self.flavour == Flavour::Host {
            st.env = Some(body_fn.get_nth_param(0).expect("env").into_pointer_value());
            arg_index = 1;
        }
        if let Some(k) = &info {
            for (p, pi) in f.params.iter().zip(&k.params) {
                let home = match self.flavour {
                    Flavour::Host => ParamHome::Buffer(pi.offset),
                    Flavour::Nvvm => {
                        let arg = body_fn.get_nth_param(arg_index).expect("kernel arg");
                        arg_index += 1;
                        if nvvm_byval(p) {
                            ParamHome::Slot(arg.into_pointer_value())
                        } else {
                            let slot = st.alloca_at.build_alloca(self.param_ty(p)?, p.name.text)?;
                            self.b.build_store(slot, arg)?;
                            ParamHome::Slot(slot)
                        }
                    }
                };
                st.params.insert(p.name.text, home);
            }
        } else {
            for p in &f.params {
                let ty = self.param_ty(p)?;
                let slot = st.alloca_at.build_alloca(ty, p.name.text)?;
                let arg = body_fn.get_nth_param(arg_index).expect("func arg");
                self.b.build_store(slot, arg)?;
                arg_index += 1;
                st.params.insert(p.name.text, ParamHome::Slot(slot));
            }
            for r in &f.returns {
                let ty = self.param_ty(r)?;
                let slot = st.alloca_at.build_alloca(ty, r.name.text)?;
                self.b.build_store(slot, ty.const_zero())?;
                st.params.insert(r.name.text, ParamHome::Slot(slot));
                st.ret.push((slot, ty));
            }
        }
        // Prototypes are named by the label right before them.
        let mut pending = None;
        ast::visit(body, &mut |s| match s {
            Statement::Label(n) => pending = Some(n.text),
            Statement::Directive(ast::Directive::Prototype { returns, params, .. }) => {
                if let Some(l) = pending.take() {
                    st.protos.insert(l, (&returns[..], &params[..]));
                }
            }
            Statement::Directive(ast::Directive::Targets { targets, .. }) => {
                if let Some(l) = pending.take() {
                    st.targets.insert(l, &targets[..]);
                }
            }
            _ => pending = None,
        });
        // Labels become blocks, in source order so the output is deterministic.
        for n in &st.labels.defs {
            st.blocks
                .entry(n.span.start)
                .or_insert_with(|| self.ctx.append_basic_block(body_fn, n.text));
        }
        let mut scope = Scope::module_child(mscope);
        scope.push();
        for p in f.params.iter().chain(&f.returns) {
            // `.reg` parameters (`.func (.reg .b64 out) f(.reg .b64 x)`) are registers whose storage is
            // the parameter's own slot, so reads see the argument and `ret` sees the writes.
            if let (Ok(Entry::Reg { id, .. }), Some(ParamHome::Slot(slot))) =
                (scope.declare(p), st.params.get(p.name.text))
            {
                st.regs.insert(id, *slot);
            }
        }
        self.block(&mut st, body, &mut scope)?;
        // Falling off the end returns.
        self.emit_return(&st)?;
        st.alloca_at.build_unconditional_branch(start)?;
        let mut info = info;
        if let Some(k) = info.as_mut().filter(|_| self.flavour == Flavour::Host) {
            k.exec = if !self.syncing.contains(f.name.text) {
                Exec::Loop
            } else if own_sync && self.options.regions && !cluster_scoped(body) {
                match self.split_regions(body_fn)? {
                    Some(plan) => {
                        let lanes = self.regions_block_fn(fv, body_fn, &plan)?;
                        let exec = Exec::Regions {
                            frame_bytes: plan.frame_bytes,
                            lanes,
                            warp: plan.states.iter().any(|&s| s & crate::regions::WARP != 0),
                        };
                        return Ok(Some(KernelInfo { exec, ..k.clone() }));
                    }
                    None => Exec::Fibers,
                }
            } else {
                Exec::Fibers
            };
            if k.exec == Exec::Loop && self.calls_collective(body_fn) {
                return Err(unsupported(
                    f.name.span,
                    "internal error: this kernel synchronises threads through an instruction the execution model does not know synchronises (see `needs_fibers`)",
                ));
            }
            self.host_block_loop(fv, body_fn, k.exec)?;
        }
        Ok(info)
    }

    fn kernel_info(&self, f: &Function<'_>) -> KernelInfo {
        let mut off = 0;
        let params = f
            .params
            .iter()
            .map(|p| {
                let align = p.alignment();
                off = align_up(off, align);
                let pi = ParamInfo {
                    name: p.name.text.to_string(),
                    offset: off,
                    size: p.size_bytes(),
                    align,
                };
                off += pi.size;
                pi
            })
            .collect();
        let mut local_bytes = 0u64;
        if let Some(body) = &f.body {
            ast::visit(body, &mut |s| {
                if let Statement::Var(v) = s {
                    if v.space == Space::Local {
                        local_bytes = align_up(local_bytes, v.alignment()).saturating_add(v.size_bytes());
                    }
                }
            });
        }
        let directive = |want: &str| {
            f.perf.iter().find_map(|d| match d {
                ast::PerfDirective::Value { name, values } if name.text == want => Some(values.clone()),
                _ => None,
            })
        };
        let dims = |v: Vec<u64>| -> [u32; 3] { std::array::from_fn(|k| v.get(k).map_or(1, |&x| x as u32)) };
        KernelInfo {
            name: f.name.text.to_string(),
            params,
            param_bytes: off,
            static_shared: self.shared_size,
            shared_bytes: self.shared_used,
            const_bytes: self.const_size,
            local_bytes,
            exec: Exec::Loop,
            max_threads: directive(".maxntid").map(|v| v.iter().product()),
            required_block: directive(".reqntid").map(dims),
            cluster: directive(".reqnctapercluster").map(dims),
            explicit_cluster: directive(".explicitcluster").is_some(),
            target_sm: self.target.sm,
        }
    }

    fn block<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        body: &'m [Statement<'a>],
        scope: &mut Scope<'m, 'a>,
    ) -> R<()> {
        for s in body {
            match s {
                Statement::Var(v) => {
                    let _ = scope.declare(v);
                    match v.space {
                        Space::Reg | Space::Shared | Space::Global | Space::Const => {}
                        Space::Param | Space::Local => {
                            let ty = if v.dims.is_empty() && v.vector.is_none() {
                                self.int(v.ty.bits().max(8)).as_basic_type_enum()
                            } else {
                                self.ctx.i8_type().array_type(v.size_bytes() as u32).into()
                            };
                            let p = st.alloca_at.build_alloca(ty, v.name.text)?;
                            if let Some(i) = st.alloca_at.get_insert_block().and_then(|b| b.get_last_instruction()) {
                                let _ = i.set_alignment(v.alignment() as u32);
                            }
                            st.locals.insert(v as *const _, p);
                        }
                        _ => {
                            return Err(unsupported(
                                v.span,
                                format!("`{}` variables inside functions are not supported yet", v.space.name()),
                            ))
                        }
                    }
                }
                Statement::Label(n) => {
                    let bb = st.blocks[&n.span.start];
                    if self.b.get_insert_block().and_then(|b| b.get_terminator()).is_none() {
                        self.b.build_unconditional_branch(bb)?;
                    }
                    self.b.position_at_end(bb);
                }
                Statement::Block(b, _) => {
                    scope.push();
                    self.block(st, b, scope)?;
                    scope.pop();
                }
                Statement::Inst(i) => self.guarded(st, i, scope)?,
                Statement::Directive(_) => {}
            }
        }
        Ok(())
    }

    fn ensure_open_block(&mut self, st: &Fn<'ctx, '_, '_>) {
        if self.b.get_insert_block().and_then(|b| b.get_terminator()).is_some() {
            let bb = self.ctx.append_basic_block(st.func, "dead");
            self.b.position_at_end(bb);
        }
    }

    fn guarded<'m, 'a>(&mut self, st: &mut Fn<'ctx, 'm, 'a>, i: &'m Instruction<'a>, scope: &Scope<'m, 'a>) -> R<()> {
        self.ensure_open_block(st);
        self.site = i.span.start;
        self.aligned = false;
        let at = st.checked.as_ref().and_then(|c| c.index_at(i.span.start));
        self.unraced = at.is_some_and(|k| st.unraced.get(k) == Some(&true));
        let d = at
            .and_then(|k| st.checked.as_ref()?.insts[k].decoded.clone())
            .ok_or_else(|| unsupported(i.opcode.span, format!("`{}` is not supported yet", i.opcode.text)))?;
        if at.is_some_and(|k| st.block_starts.get(k) == Some(&true)) {
            self.note_site(st, 0, crate::builtin::ACCESS_BLOCK)?;
        }
        let Some(g) = &i.guard else {
            return self.inst_or_asm(st, i, &d, scope);
        };
        let p = self.reg_load(st, &g.pred, Type::Pred, scope)?.into_int_value();
        if d.spec.name == "bra" {
            if self.checked && self.options.counters {
                let taken = if g.negated { self.b.build_not(p, "taken")? } else { p };
                let taken = self.b.build_int_z_extend(taken, self.i64(), "taken")?;
                let null = self.ptr(0).const_null();
                self.call_check(st, null, taken, i.span.start as u64, crate::builtin::ACCESS_BRANCH)?;
            }
            let target = self.label(st, i)?;
            let fall = self.ctx.append_basic_block(st.func, "fall");
            let (t, e) = if g.negated { (fall, target) } else { (target, fall) };
            self.b.build_conditional_branch(p, t, e)?;
            self.b.position_at_end(fall);
            return Ok(());
        }
        let then = self.ctx.append_basic_block(st.func, "then");
        let join = self.ctx.append_basic_block(st.func, "join");
        let (t, e) = if g.negated { (join, then) } else { (then, join) };
        self.b.build_conditional_branch(p, t, e)?;
        self.b.position_at_end(then);
        self.inst_or_asm(st, i, &d, scope)?;
        if self.b.get_insert_block().and_then(|b| b.get_terminator()).is_none() {
            self.b.build_unconditional_branch(join)?;
        }
        self.b.position_at_end(join);
        Ok(())
    }

    fn label(&self, st: &Fn<'ctx, '_, '_>, i: &Instruction<'_>) -> R<BasicBlock<'ctx>> {
        match i.operands.first() {
            Some(Operand::Sym { name, .. }) => st
                .labels
                .resolve(name)
                .and_then(|l| st.blocks.get(&l.span.start).copied())
                .ok_or_else(|| unsupported(name.span, "branch target is not a label")),
            _ => Err(unsupported(i.span, "indirect branches are not supported yet")),
        }
    }

    /// `brx.idx index, tlist`: a switch over the labels of a `.branchtargets` list.
    fn branch_indexed<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let [index, Operand::Sym { name: list, .. }] = i.operands.as_slice() else {
            return Err(unsupported(i.span, "`brx.idx` takes an index and a target list"));
        };
        let targets = st
            .targets
            .get(list.text)
            .copied()
            .ok_or_else(|| unsupported(list.span, "not a `.branchtargets` list"))?;
        let blocks = targets
            .iter()
            .map(|t| {
                st.labels
                    .resolve(t)
                    .and_then(|l| st.blocks.get(&l.span.start).copied())
                    .ok_or_else(|| unsupported(t.span, "not a label"))
            })
            .collect::<R<Vec<_>>>()?;
        let Some(&first) = blocks.first() else {
            return Err(unsupported(list.span, "empty target list"));
        };
        let idx = self.read(st, index, Type::U32, scope)?.into_int_value();
        // An index past the list is undefined behaviour; it goes to the first target.
        let cases: Vec<_> = blocks
            .iter()
            .enumerate()
            .map(|(k, b)| (self.i32().const_int(k as u64, false), *b))
            .collect();
        self.b.build_switch(idx, first, &cases)?;
        Ok(())
    }

    fn emit_return(&mut self, st: &Fn<'ctx, '_, '_>) -> R<()> {
        if self.b.get_insert_block().and_then(|b| b.get_terminator()).is_some() {
            return Ok(());
        }
        let vals = st
            .ret
            .iter()
            .map(|(slot, ty)| self.b.build_load(*ty, *slot, "ret"))
            .collect::<Result<Vec<_>, _>>()?;
        match vals.as_slice() {
            // A thread body cut into regions returns where it stopped: here, at its end.
            [] if st.func.get_type().get_return_type().is_some() => self
                .b
                .build_return(Some(&self.i32().const_int(crate::regions::DONE as u64, false)))?,
            [] => self.b.build_return(None)?,
            [v] => self.b.build_return(Some(v))?,
            many => {
                let tys: Vec<BasicTypeEnum> = many.iter().map(|v| v.get_type()).collect();
                let mut agg = self.ctx.struct_type(&tys, false).get_undef();
                for (k, v) in many.iter().enumerate() {
                    agg = self.b.build_insert_value(agg, *v, k as u32, "ret")?.into_struct_value();
                }
                self.b.build_return(Some(&agg))?
            }
        };
        Ok(())
    }

    // ---- registers and operands ----
}

/// Nvvm kernel parameters passed by `byval` pointer: arrays and vectors.
fn nvvm_byval(p: &VarDecl<'_>) -> bool {
    !(p.dims.is_empty() && p.vector.is_none())
}

/// The bit-size type of a width (for the parts of a packed `mov`).
fn bits_type(bits: u32) -> Type {
    match bits {
        8 => Type::B8,
        16 => Type::B16,
        32 => Type::B32,
        64 => Type::B64,
        _ => Type::B128,
    }
}

fn widen(t: Type) -> Type {
    match t {
        Type::U16 => Type::U32,
        Type::S16 => Type::S32,
        Type::U32 => Type::U64,
        Type::S32 => Type::S64,
        Type::B32 => Type::B64,
        other => other,
    }
}

/// Evaluates an initializer element to the bits of type `t`.
fn const_eval(e: &Expr<'_>, t: Type) -> Option<u64> {
    use ptx_front::consteval::{eval, Const};
    // A `0f` literal keeps its exact single-precision value.
    if let (Expr::Imm(Imm::F32(b), _), Type::F32) = (e, t) {
        return Some(*b as u64);
    }
    match (eval(e).ok()?, t) {
        (Const::Float(f), Type::F32) => Some((f as f32).to_bits() as u64),
        (Const::Float(f), Type::F64) => Some(f.to_bits()),
        (Const::Int(v, true), Type::F32) => Some((v as f32).to_bits() as u64),
        (Const::Int(v, false), Type::F32) => Some((v as i64 as f32).to_bits() as u64),
        (Const::Int(v, true), Type::F64) => Some((v as f64).to_bits()),
        (Const::Int(v, false), Type::F64) => Some((v as i64 as f64).to_bits()),
        (Const::Int(v, _), t) if t.kind() != Kind::Float => Some(v),
        _ => None,
    }
}
