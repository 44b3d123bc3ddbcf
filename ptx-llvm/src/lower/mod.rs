//! The translator. Registers become allocas (mem2reg turns them into SSA), labels become basic blocks,
//! and every instruction is lowered from its ISA-table decoding. This file holds the module and
//! function structure and the instruction dispatch; the submodules hold one concern each.

mod arith;
mod asm;
mod async_copy;
mod builtin;
mod calls;
mod convert;
mod lanes;
mod memory;
mod regions;
mod sync;
mod values;
mod video;

#[cfg(test)]
mod abi_layout;

use crate::abi::{EnvField, FieldType, StepsField};
use crate::Flavour;
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
use ptx_front::scope::{label_order, Entry, Scope};
use ptx_front::span::Span;
use ptx_front::types::{Kind, Space, Type};
use ptx_front::Target;
use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    pub name: String,
    pub offset: u64,
    pub size: u64,
    pub align: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelInfo {
    pub name: String,
    pub params: Vec<ParamInfo>,
    /// Size of the argument buffer, laid out with natural alignment as the CUDA driver does.
    pub param_bytes: u64,
    /// Bytes of static `.shared` memory; dynamic shared memory starts at this offset, aligned to 16.
    pub static_shared: u64,
    /// Bytes of the kernel's own `.local` variables, per thread (its callees' come on top).
    pub local_bytes: u64,
    /// Host flavour: how the runtime runs the kernel's CTAs.
    pub exec: Exec,
}

/// How a host kernel runs a CTA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exec {
    /// No thread synchronises: the entry loops over the CTA's threads around the inlined thread body.
    Loop,
    /// Barriers and warp collectives sit only in the kernel's own body: the body is cut at them into
    /// regions, and one call of the entry runs one region for the CTA's threads (see `regions.rs`).
    /// Each thread keeps its registers in a frame of `frame_bytes` between regions. `lanes` of the
    /// regions run for groups of threads at once (see `lanes.rs`).
    Regions { frame_bytes: u64, lanes: u32 },
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
}

impl Default for Options {
    fn default() -> Self {
        Options {
            regions: true,
            checked: false,
            lanes: true,
        }
    }
}

/// An LLVM struct of the ABI's field types (`crate::abi`), in order.
fn abi_struct(ctx: &Context, fields: impl Iterator<Item = FieldType>) -> inkwell::types::StructType<'_> {
    let p = ctx.ptr_type(AddressSpace::default());
    let types: Vec<BasicTypeEnum> = fields
        .map(|t| match t {
            FieldType::Ptr => p.into(),
            FieldType::I32 => ctx.i32_type().into(),
            FieldType::I64 => ctx.i64_type().into(),
            FieldType::I32x3 => ctx.i32_type().array_type(3).into(),
        })
        .collect();
    ctx.struct_type(&types, false)
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
    // The nvvm flavour lowers again, with inline PTX for what the first pass could not lower natively.
    let asm_at = match lower_pass(ctx, m, flavour, name, options, Default::default()) {
        Ok(Pass::Done(l)) => return Ok(l),
        Ok(Pass::Again(at)) => at,
        Err(d) => return Err(d),
    };
    match lower_pass(ctx, m, flavour, name, options, asm_at)? {
        Pass::Done(l) => Ok(l),
        Pass::Again(_) => Err(vec![Diagnostic::error(
            Code::P0401,
            Span::default(),
            "internal error: inline-assembly fallback requested twice",
        )]),
    }
}

enum Pass<'ctx> {
    Done(Lowered<'ctx>),
    /// Instructions (by span start) to lower through inline PTX.
    Again(std::collections::HashSet<u32>),
}

fn lower_pass<'ctx>(
    ctx: &'ctx Context,
    m: &ast::Module<'_>,
    flavour: Flavour,
    name: &str,
    options: Options,
    asm_at: std::collections::HashSet<u32>,
) -> Result<Pass<'ctx>, Vec<Diagnostic>> {
    let module = ctx.create_module(name);
    if flavour == Flavour::Nvvm {
        module.set_triple(&inkwell::targets::TargetTriple::create("nvptx64-nvidia-cuda"));
    }
    let target = Target::of(m);
    let mut l = Lowerer {
        ctx,
        module,
        b: ctx.create_builder(),
        flavour,
        target,
        globals: HashMap::new(),
        shared_offsets: HashMap::new(),
        shared_size: 0,
        funcs: HashMap::new(),
        diags: vec![],
        asm_at,
        asm_wanted: vec![],
        asm_used: vec![],
        symbol_inits: vec![],
        env_ty: None,
        syncing: syncing_functions(m),
        options,
        checked: options.checked && flavour == Flavour::Host,
        site: 0,
        aligned: false,
        may_trap: m.items.iter().any(|i| {
            let Item::Function(f) = i else { return false };
            let mut found = false;
            if let Some(b) = &f.body {
                ast::visit(b, &mut |s| {
                    found |= matches!(s, Statement::Inst(i) if i.opcode.text == "trap"
                        || (i.opcode.text == "call" && i.operands.iter().any(|o| matches!(o, Operand::Sym { name, .. } if name.text == "__assertfail"))));
                });
            }
            found
        }),
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
    if let Err(e) = l.declare_module(m) {
        l.fail(e);
    }
    let mut kernels = vec![];
    if l.diags.is_empty() {
        for item in &m.items {
            if let Item::Function(f) = item {
                if f.body.is_some() {
                    match l.function(f, &scope) {
                        Ok(Some(k)) => kernels.push(k),
                        Ok(None) => {}
                        Err(e) => l.fail(e),
                    }
                }
            }
        }
    }
    if !l.diags.is_empty() {
        return Err(l.diags);
    }
    if !l.asm_wanted.is_empty() {
        return Ok(Pass::Again(l.asm_wanted.into_iter().chain(l.asm_at).collect()));
    }
    let globals = module_lifetime_vars(m)
        .filter(|(v, _)| matches!(v.space, Space::Global | Space::Const))
        .map(|(v, _)| (v.name.text.to_string(), v.size_bytes()))
        .collect();
    Ok(Pass::Done(Lowered {
        module: l.module,
        kernels,
        globals,
        inline_asm: l.asm_used,
    }))
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
    funcs: HashMap<String, FunctionValue<'ctx>>,
    diags: Vec<Diagnostic>,
    /// Nvvm: instructions (by span start) lowered through inline PTX, and those found in this pass to need it.
    asm_at: std::collections::HashSet<u32>,
    asm_wanted: Vec<u32>,
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
    /// Some function traps (or fails an assertion): callers must stop when a callee did.
    may_trap: bool,
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

/// Whether a body synchronises threads itself (barriers or warp collectives).
fn needs_fibers(body: &[Statement<'_>]) -> bool {
    let mut found = false;
    ast::visit(body, &mut |s| {
        found |= matches!(s, Statement::Inst(i) if matches!(
            i.opcode.text,
            "bar" | "barrier" | "shfl" | "vote" | "match" | "redux" | "activemask" | "elect" | "mbarrier" | "mma"
                | "ldmatrix" | "stmatrix" | "movmatrix" | "wmma"
        ));
    });
    found
}

/// The functions that call a synchronising function (`None`: an indirect call, which may reach any).
fn callees<'a>(body: &[Statement<'a>]) -> Vec<Option<&'a str>> {
    let mut out = vec![];
    ast::visit(body, &mut |s| {
        if let Statement::Inst(i) = s {
            if i.opcode.text == "call" {
                let callee = i.operands.iter().find(|o| !matches!(o, Operand::List(..)));
                out.push(match callee {
                    Some(Operand::Sym { name, .. }) => Some(name.text),
                    _ => None,
                });
            }
        }
    });
    out
}

/// Names of the functions that synchronise threads, directly or through (possibly indirect) calls.
fn syncing_functions(m: &ast::Module<'_>) -> std::collections::HashSet<String> {
    let funcs: Vec<(&str, bool, Vec<Option<&str>>)> = m
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Function(f) => f.body.as_deref().map(|b| (f.name.text, needs_fibers(b), callees(b))),
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
    blocks: HashMap<&'a str, BasicBlock<'ctx>>,
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
    _m: std::marker::PhantomData<&'m ()>,
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

    /// The host environment's LLVM struct (`crate::abi::Env`).
    fn env_ty(&mut self) -> inkwell::types::StructType<'ctx> {
        if let Some(t) = self.env_ty {
            return t;
        }
        let t = abi_struct(self.ctx, EnvField::ALL.iter().map(|&(_, t)| t));
        self.env_ty = Some(t);
        t
    }

    /// Where field `f` of the environment at `env` is.
    fn env_ptr(&mut self, env: PointerValue<'ctx>, f: EnvField) -> R<PointerValue<'ctx>> {
        let env_ty = self.env_ty();
        Ok(self.b.build_struct_gep(env_ty, env, f.index(), f.name())?)
    }

    fn declare_module(&mut self, m: &ast::Module<'_>) -> R<()> {
        // Shared variables anywhere in the module get one layout (host) or one addrspace(3) global (nvvm).
        let mut shared: Vec<&VarDecl<'_>> = vec![];
        let mut vars: Vec<&VarDecl<'_>> = vec![];
        for (v, module_scope) in module_lifetime_vars(m) {
            match v.space {
                Space::Shared => shared.push(v),
                Space::Global | Space::Const => vars.push(v),
                _ if module_scope => {
                    return Err(unsupported(
                        v.span,
                        format!("module-scope `{}` variables are not supported yet", v.space.name()),
                    ))
                }
                _ => {}
            }
        }
        let mut dynamic = vec![];
        for v in shared {
            if v.dims.first() == Some(&None) || v.linkage == Some(ast::Linkage::Extern) {
                dynamic.push(v);
                continue;
            }
            match self.flavour {
                Flavour::Host => {
                    let off = align_up(self.shared_size, v.alignment());
                    self.shared_offsets.insert(v.name.text.to_string(), off);
                    self.shared_size = off + v.size_bytes();
                }
                Flavour::Nvvm => {
                    let ty = self.ctx.i8_type().array_type(v.size_bytes() as u32);
                    let g = self.module.add_global(ty, Some(AddressSpace::from(3u16)), v.name.text);
                    g.set_alignment(v.alignment() as u32);
                    g.set_initializer(&ty.get_undef());
                    g.set_linkage(LlLinkage::Internal);
                    self.globals.insert(v.name.text.to_string(), g);
                }
            }
        }
        self.shared_size = align_up(self.shared_size, 16);
        for v in dynamic {
            match self.flavour {
                Flavour::Host => {
                    self.shared_offsets.insert(v.name.text.to_string(), self.shared_size);
                }
                Flavour::Nvvm => {
                    let ty = self.ctx.i8_type().array_type(0);
                    let g = self.module.add_global(ty, Some(AddressSpace::from(3u16)), v.name.text);
                    g.set_alignment(v.alignment().max(16) as u32);
                    g.set_linkage(LlLinkage::External);
                    self.globals.insert(v.name.text.to_string(), g);
                }
            }
        }
        // Functions are declared before any body so calls may go forward, and before variables, whose
        // initializers may hold function addresses.
        for item in &m.items {
            if let Item::Function(f) = item {
                if !self.funcs.contains_key(f.name.text) {
                    let fv = self.declare_function(f)?;
                    self.funcs.insert(f.name.text.to_string(), fv);
                }
            }
        }
        // Variables come after functions: their initializers may hold function addresses.
        for v in &vars {
            self.module_var(v)?;
        }
        self.fill_symbol_inits()?;
        Ok(())
    }

    fn module_var(&mut self, v: &VarDecl<'_>) -> R<()> {
        if matches!(v.ty, Type::Texref | Type::Samplerref | Type::Surfref) {
            // Opaque handles bound by the driver (`cuTexRefSetArray`); as plain memory they would
            // compile and then read garbage.
            return Err(unsupported(
                v.span,
                format!(
                    "texture, sampler and surface references (`{}`) are not supported yet",
                    v.ty.name()
                ),
            ));
        }
        let size = v.size_bytes();
        if size == 0 {
            return Err(unsupported(
                v.span,
                "module variables without a size are not supported yet",
            ));
        }
        if self.globals.contains_key(v.name.text) {
            return Err(unsupported(
                v.span,
                format!(
                    "a second `{}` variable named `{}` (in another function) is not supported yet",
                    v.space.name(),
                    v.name.text
                ),
            ));
        }
        let bytes = match self.init_bytes(v) {
            // Addresses of functions and variables (`.u64 vtable[4] = {0, f, generic(g)+8}`).
            Err(_) if v.ty.bits() == 64 && asm::has_symbols(v) => return self.symbol_var(v),
            r => r?,
        };
        let (ty, image) = self.byte_image(size, &bytes);
        let g = self
            .module
            .add_global(ty, Some(AddressSpace::from(self.llvm_space(v.space))), v.name.text);
        g.set_alignment(v.alignment() as u32);
        g.set_initializer(&image);
        if v.linkage == Some(ast::Linkage::Extern) {
            return Err(unsupported(
                v.span,
                "`.extern` variables need a linker, which is not supported yet",
            ));
        }
        g.set_linkage(LlLinkage::External);
        g.set_constant(false);
        self.globals.insert(v.name.text.to_string(), g);
        Ok(())
    }

    /// The type and value of a variable of `size` bytes whose first bytes are `init` and the rest
    /// zero. The zeros are a `zeroinitializer`, never materialised: a large array costs nothing until
    /// it is touched (and LLVM arrays count their elements in 32 bits, so larger ones are nested).
    fn byte_image(&self, size: u64, init: &[u8]) -> (BasicTypeEnum<'ctx>, BasicValueEnum<'ctx>) {
        let i8t = self.ctx.i8_type();
        let zeros = |n: u64| -> BasicTypeEnum<'ctx> {
            const CHUNK: u64 = 1 << 31;
            if n < 1 << 32 {
                i8t.array_type(n as u32).into()
            } else {
                let parts = [
                    i8t.array_type(CHUNK as u32).array_type((n / CHUNK) as u32).into(),
                    i8t.array_type((n % CHUNK) as u32).into(),
                ];
                self.ctx.struct_type(&parts, true).into()
            }
        };
        let tail = size.saturating_sub(init.len() as u64);
        if init.is_empty() {
            let ty = zeros(size);
            return (ty, ty.const_zero());
        }
        let vals: Vec<_> = init.iter().map(|&b| i8t.const_int(b as u64, false)).collect();
        let head = i8t.const_array(&vals);
        if tail == 0 {
            return (head.get_type().into(), head.into());
        }
        let rest = zeros(tail);
        let value = self.ctx.const_struct(&[head.into(), rest.const_zero()], true);
        (value.get_type().into(), value.into())
    }

    /// Flattens an initializer into little-endian bytes: as many as it gives (the rest is zero).
    fn init_bytes(&self, v: &VarDecl<'_>) -> R<Vec<u8>> {
        let mut out = Vec::new();
        fn flat<'i, 'a>(i: &'i Init<'a>, out: &mut Vec<&'i Expr<'a>>) -> bool {
            match i {
                Init::Scalar(e) => out.push(e),
                Init::List(l) => return l.iter().all(|x| flat(x, out)),
                Init::Field(..) => return false,
            }
            true
        }
        let mut elems = vec![];
        if let Some(i) = &v.init {
            if !flat(i, &mut elems) {
                return Err(unsupported(
                    v.span,
                    "texture and sampler initializers are not supported yet",
                ));
            }
        }
        let eb = v.ty.bytes() as usize;
        for e in elems {
            let bits = const_eval(e, v.ty)
                .ok_or_else(|| unsupported(v.span, "this initializer expression is not supported yet"))?;
            out.extend_from_slice(&bits.to_le_bytes()[..eb]);
        }
        Ok(out)
    }

    fn declare_function(&mut self, f: &Function<'_>) -> R<FunctionValue<'ctx>> {
        let fv = match (f.kind, self.flavour) {
            (FnKind::Entry, Flavour::Host) => {
                // `void kernel(Env*, const u8* params)`: the argument buffer is its own parameter so LLVM
                // knows it is read-only, unaliased and dereferenceable, and can hoist parameter loads.
                let ty = self
                    .ctx
                    .void_type()
                    .fn_type(&[self.ptr(0).into(), self.ptr(0).into()], false);
                let fv = self.module.add_function(f.name.text, ty, None);
                let bytes = self.kernel_info(f).param_bytes;
                for (attr, v) in [
                    ("noalias", 0),
                    ("readonly", 0),
                    ("align", 8),
                    ("dereferenceable", bytes),
                ] {
                    if attr == "dereferenceable" && v == 0 {
                        continue;
                    }
                    let a = self
                        .ctx
                        .create_enum_attribute(Attribute::get_named_enum_kind_id(attr), v);
                    fv.add_attribute(AttributeLoc::Param(1), a);
                }
                fv
            }
            (FnKind::Entry, Flavour::Nvvm) => {
                // Aggregates go by `byval` pointer, which NVPTX prints as `.param .align A .b8 p[N]`: the
                // layout and alignment stay those of the source, and nothing is copied.
                let mut args = vec![];
                for p in &f.params {
                    args.push(if nvvm_byval(p) {
                        self.ptr(0).into()
                    } else {
                        self.param_ty(p)?.into()
                    });
                }
                let ty = self.ctx.void_type().fn_type(&args, false);
                let fv = self.module.add_function(f.name.text, ty, None);
                fv.set_call_conventions(71); // ptx_kernel
                for (k, p) in f.params.iter().enumerate().filter(|(_, p)| nvvm_byval(p)) {
                    let byval = self.ctx.create_type_attribute(
                        Attribute::get_named_enum_kind_id("byval"),
                        self.param_ty(p)?.as_any_type_enum(),
                    );
                    fv.add_attribute(AttributeLoc::Param(k as u32), byval);
                    let align = self
                        .ctx
                        .create_enum_attribute(Attribute::get_named_enum_kind_id("align"), p.alignment());
                    fv.add_attribute(AttributeLoc::Param(k as u32), align);
                }
                self.launch_bounds(f, fv);
                fv
            }
            (FnKind::Func, _) => {
                let ty = self.func_type(&f.returns, &f.params)?;
                let fv = self.module.add_function(f.name.text, ty, None);
                if f.linkage != Some(ast::Linkage::Visible) && f.linkage != Some(ast::Linkage::Extern) {
                    fv.set_linkage(LlLinkage::Internal);
                }
                fv
            }
        };
        Ok(fv)
    }

    /// The LLVM type of a device function (or of a `.callprototype`): host functions take the
    /// environment first; several results come back as a struct.
    fn func_type(&self, returns: &[VarDecl<'_>], params: &[VarDecl<'_>]) -> R<inkwell::types::FunctionType<'ctx>> {
        let mut args: Vec<inkwell::types::BasicMetadataTypeEnum> = vec![];
        if self.flavour == Flavour::Host {
            args.push(self.ptr(0).into());
        }
        for p in params {
            args.push(self.param_ty(p)?.into());
        }
        Ok(match returns {
            [] => self.ctx.void_type().fn_type(&args, false),
            [r] => self.param_ty(r)?.fn_type(&args, false),
            many => {
                let tys = many.iter().map(|r| self.param_ty(r)).collect::<R<Vec<_>>>()?;
                self.ctx.struct_type(&tys, false).fn_type(&args, false)
            }
        })
    }

    fn param_ty(&self, p: &VarDecl<'_>) -> R<BasicTypeEnum<'ctx>> {
        if p.dims.is_empty() && p.vector.is_none() {
            Ok(self.int(p.ty.bits().max(8)).into())
        } else if p.size_bytes() > 0 {
            Ok(self.ctx.i8_type().array_type(p.size_bytes() as u32).into())
        } else {
            Err(unsupported(p.span, "unsized parameter arrays are not supported"))
        }
    }

    fn function<'m, 'a>(&mut self, f: &'m Function<'a>, mscope: &Scope<'m, 'a>) -> R<Option<KernelInfo>> {
        let fv = self.funcs[f.name.text];
        if fv.count_basic_blocks() > 0 {
            return Ok(None); // a second definition was already reported by the checker
        }
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
            blocks: HashMap::new(),
            is_kernel,
            ret: vec![],
            protos: HashMap::new(),
            targets: HashMap::new(),
            carry: None,
            alloca_at,
            _m: std::marker::PhantomData,
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
        let mut lbls = vec![];
        label_order(body, &mut lbls);
        for name in lbls {
            st.blocks
                .entry(name)
                .or_insert_with(|| self.ctx.append_basic_block(body_fn, name));
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
            } else if own_sync && self.options.regions {
                match self.split_regions(body_fn)? {
                    Some(plan) => {
                        let lanes = self.regions_block_fn(fv, body_fn, &plan)?;
                        let exec = Exec::Regions {
                            frame_bytes: plan.frame_bytes,
                            lanes,
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
        KernelInfo {
            name: f.name.text.to_string(),
            params,
            param_bytes: off,
            static_shared: self.shared_size,
            local_bytes,
            exec: Exec::Loop,
        }
    }

    /// The entry block of a block function: a private copy of the environment, with the argument buffer.
    /// Leaves the builder at the end of the entry block.
    fn block_env(&mut self, block_fn: FunctionValue<'ctx>) -> R<PointerValue<'ctx>> {
        let env_ty = self.env_ty();
        let entry = self.ctx.append_basic_block(block_fn, "entry");
        self.b.position_at_end(entry);
        let src = block_fn.get_nth_param(0).expect("env").into_pointer_value();
        let params = block_fn.get_nth_param(1).expect("params").into_pointer_value();
        let env = self.b.build_alloca(env_ty, "env")?;
        let whole = self.b.build_load(env_ty, src, "env.in")?;
        self.b.build_store(env, whole)?;
        let pp = self.env_ptr(env, EnvField::Params)?;
        self.b.build_store(pp, params)?;
        Ok(env)
    }

    /// `void kernel(Env*, params)` of a `Loop` kernel (the thread body for every thread of the CTA) or a
    /// `Fibers` kernel (one thread per call; the runtime gives each its own fiber and environment).
    fn host_block_loop(&mut self, block_fn: FunctionValue<'ctx>, thread_fn: FunctionValue<'ctx>, exec: Exec) -> R<()> {
        let env = self.block_env(block_fn)?;
        let mut args: Vec<BasicMetadataValueEnum> = vec![env.into()];
        if thread_fn.count_params() == 2 {
            args.push(self.i32().const_zero().into());
        }
        if exec == Exec::Fibers {
            self.b.build_call(thread_fn, &args, "")?;
        } else {
            // CTAs ctaid.x .. ctaid.x + ctas, one after the other.
            let i32t = self.i32();
            let cp = self.env_ptr(env, EnvField::Ctas)?;
            let count = self.b.build_load(i32t, cp, "ctas")?.into_int_value();
            let xp = self.env_ptr(env, EnvField::Ctaid)?;
            let x0 = self.b.build_load(i32t, xp, "x0")?.into_int_value();
            let pre = self.b.get_insert_block().expect("block");
            let head = self.ctx.append_basic_block(block_fn, "cta");
            let done = self.ctx.append_basic_block(block_fn, "ctas.done");
            self.b.build_unconditional_branch(head)?;
            self.b.position_at_end(head);
            let c = self.b.build_phi(i32t, "c")?;
            c.add_incoming(&[(&i32t.const_zero(), pre)]);
            let cv = c.as_basic_value().into_int_value();
            self.b.build_store(xp, self.b.build_int_add(x0, cv, "x")?)?;
            self.thread_loops(block_fn, env, |this, _| {
                let c = this.b.build_call(thread_fn, &args, "")?;
                // Inlining hoists a thread's `.local` arrays out of the loop, so every thread would share
                // them: only kernels without such memory may claim independent iterations.
                if !this.private_memory {
                    this.parallel(Some(unsafe {
                        inkwell::values::InstructionValue::new(c.as_value_ref())
                    }));
                }
                Ok(())
            })?;
            let next = self.b.build_int_add(cv, i32t.const_int(1, false), "c")?;
            c.add_incoming(&[(&next, self.b.get_insert_block().expect("block"))]);
            let more = self.b.build_int_compare(IntPredicate::ULT, next, count, "more")?;
            self.b.build_conditional_branch(more, head, done)?;
            self.b.position_at_end(done);
        }
        self.b.build_return(None)?;
        Ok(())
    }

    /// Loops z, y, x over the CTA's threads from the builder's position, setting `env.tid`; `body` gets the
    /// linear thread index (i64) and leaves the builder where the iteration ends. x is innermost, so
    /// consecutive threads are consecutive iterations. Leaves the builder after the loops.
    fn thread_loops(
        &mut self,
        block_fn: FunctionValue<'ctx>,
        env: PointerValue<'ctx>,
        mut body: impl FnMut(&mut Self, IntValue<'ctx>) -> R<()>,
    ) -> R<()> {
        let i64t = self.i64();
        let ntid = self.ntid_values(env)?;
        let mut exits = vec![];
        let mut ivs = vec![];
        let mut linear = i64t.const_zero();
        for d in [2u32, 1, 0] {
            let (phi, exit) = self.open_tid_loop(block_fn, env, d, "loop", Some("done"))?;
            let exit = exit.expect("asked for");
            let n = self.b.build_int_z_extend(ntid[d as usize], i64t, "n")?;
            let i = self
                .b
                .build_int_z_extend(phi.as_basic_value().into_int_value(), i64t, "i")?;
            linear = self
                .b
                .build_int_nuw_add(self.b.build_int_nuw_mul(linear, n, "l")?, i, "l")?;
            ivs.push((phi, d));
            exits.push(exit);
        }
        body(self, linear)?;
        for ((phi, d), exit) in ivs.into_iter().rev().zip(exits.into_iter().rev()) {
            let br = self.close_tid_loop(phi, ntid[d as usize], exit)?;
            if d == 0 {
                self.mark_parallel_loop(br);
            }
        }
        Ok(())
    }

    /// `ntid` from the environment, per dimension.
    fn ntid_values(&mut self, env: PointerValue<'ctx>) -> R<Vec<IntValue<'ctx>>> {
        let i32t = self.i32();
        (0..3)
            .map(|d| -> R<IntValue> {
                let p = self.env_dim_ptr(env, EnvField::Ntid, d)?;
                Ok(self.b.build_load(i32t, p, "n")?.into_int_value())
            })
            .collect()
    }

    /// Opens a loop over `tid[d]` from 0 at the builder's position: a head block `head` whose counter
    /// is stored to the environment's `tid[d]`, and (when `exit` names one) the block after the loop,
    /// made now so blocks keep their order. Leaves the builder in the head.
    fn open_tid_loop(
        &mut self,
        block_fn: FunctionValue<'ctx>,
        env: PointerValue<'ctx>,
        d: u32,
        head: &str,
        exit: Option<&str>,
    ) -> R<(PhiValue<'ctx>, Option<BasicBlock<'ctx>>)> {
        let i32t = self.i32();
        let pre = self.b.get_insert_block().expect("block");
        let head = self.ctx.append_basic_block(block_fn, head);
        let exit = exit.map(|name| self.ctx.append_basic_block(block_fn, name));
        self.b.build_unconditional_branch(head)?;
        self.b.position_at_end(head);
        let phi = self.b.build_phi(i32t, "t")?;
        phi.add_incoming(&[(&i32t.const_zero(), pre)]);
        let p = self.env_dim_ptr(env, EnvField::Tid, d as u64)?;
        self.b.build_store(p, phi.as_basic_value())?;
        Ok((phi, exit))
    }

    /// Closes the loop of counter `phi` at the builder's position: the next count goes round while it
    /// is below `n`, then on to `exit`, where the builder is left. Returns the loop's branch.
    fn close_tid_loop(
        &mut self,
        phi: PhiValue<'ctx>,
        n: IntValue<'ctx>,
        exit: BasicBlock<'ctx>,
    ) -> R<inkwell::values::InstructionValue<'ctx>> {
        let i32t = self.i32();
        let next = self
            .b
            .build_int_add(phi.as_basic_value().into_int_value(), i32t.const_int(1, false), "next")?;
        let latch = self.b.get_insert_block().expect("block");
        let head = phi.as_instruction().get_parent().expect("head");
        phi.add_incoming(&[(&next, latch)]);
        let more = self.b.build_int_compare(IntPredicate::ULT, next, n, "more")?;
        let br = self.b.build_conditional_branch(more, head, exit)?;
        self.b.position_at_end(exit);
        Ok(br)
    }

    /// The access group of the thread loops' bodies (one for the module: a loop's claim covers only
    /// the accesses inside it).
    fn access_group(&self) -> inkwell::llvm_sys::prelude::LLVMMetadataRef {
        unsafe { inkwell::llvm_sys::core::LLVMMDNodeInContext2(self.ctx.raw(), std::ptr::null_mut(), 0) }
    }

    /// Puts an instruction of a thread loop's body (a call of the thread body, whose inlined accesses
    /// inherit it) in the thread loops' access group.
    fn parallel(&self, i: Option<inkwell::values::InstructionValue<'ctx>>) {
        use inkwell::llvm_sys::core::{LLVMGetMDKindIDInContext, LLVMMetadataAsValue, LLVMSetMetadata};
        if let Some(i) = i {
            unsafe {
                let kind = LLVMGetMDKindIDInContext(self.ctx.raw(), c"llvm.access.group".as_ptr(), 17);
                LLVMSetMetadata(
                    i.as_value_ref(),
                    kind,
                    LLVMMetadataAsValue(self.ctx.raw(), self.access_group()),
                );
            }
        }
    }

    /// Marks the innermost thread loop parallel: between synchronisation points a CTA's threads are
    /// independent (communication without a barrier is a race on a GPU too), so LLVM may vectorise
    /// across threads even where it cannot prove independence, e.g. through addresses in registers.
    fn mark_parallel_loop(&self, latch: inkwell::values::InstructionValue<'ctx>) {
        use inkwell::llvm_sys::core::*;
        use inkwell::llvm_sys::debuginfo::{
            LLVMDisposeTemporaryMDNode, LLVMMetadataReplaceAllUsesWith, LLVMTemporaryMDNode,
        };
        unsafe {
            let c = self.ctx.raw();
            let name = LLVMMDStringInContext2(c, c"llvm.loop.parallel_accesses".as_ptr(), 27);
            let mut pa = [name, self.access_group()];
            let pa = LLVMMDNodeInContext2(c, pa.as_mut_ptr(), 2);
            let tmp = LLVMTemporaryMDNode(c, std::ptr::null_mut(), 0);
            let mut ops = [tmp, pa];
            let id = LLVMMDNodeInContext2(c, ops.as_mut_ptr(), 2);
            LLVMMetadataReplaceAllUsesWith(tmp, id);
            let _ = LLVMDisposeTemporaryMDNode;
            let kind = LLVMGetMDKindIDInContext(c, c"llvm.loop".as_ptr(), 9);
            LLVMSetMetadata(latch.as_value_ref(), kind, LLVMMetadataAsValue(c, id));
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
                    let bb = st.blocks[n.text];
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
        let mods: Vec<&str> = i.mods.iter().map(|m| m.text).collect();
        let d = isa::decode(i.opcode.text, &mods)
            .map_err(|_| unsupported(i.opcode.span, format!("`{}` is not supported yet", i.opcode.text)))?;
        let Some(g) = &i.guard else {
            return self.inst_or_asm(st, i, &d, scope);
        };
        let p = self.reg_load(st, &g.pred, Type::Pred, scope)?.into_int_value();
        if d.spec.name == "bra" {
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
                .blocks
                .get(name.text)
                .copied()
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
                st.blocks
                    .get(t.text)
                    .copied()
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

    /// Whether the lowering implements this decoded form itself: every form of an opcode's primary
    /// ISA entry; vector moves; and on the host, extension entries that only add cache and eviction
    /// hints, 128-bit moves, `bar.red`, atomics on more types, and the sub-instructions with handlers
    /// of their own. NVPTX gets no others natively: LLVM aborts on some (a 16-bit cmpxchg, say), so
    /// they go out as inline PTX.
    pub(super) fn native(&self, d: &Decoded) -> bool {
        if d.is_primary() || (d.spec.name == "mov" && d.get(G::Vec).is_some()) {
            return true;
        }
        self.flavour == Flavour::Host
            && match d.spec.name {
                "ld" | "st" | "ldu" | "mov" | "bfe" | "atom" | "red" | "createpolicy" | "prefetch" => {
                    d.spec.sub.is_empty()
                }
                "bar" | "barrier" => {
                    (d.get(G::Sync) == Some(".red") && d.spec.sub.is_empty()) || d.spec.sub == [".cluster"]
                }
                "cp" | "mbarrier" | "stmatrix" | "movmatrix" | "wmma" => true,
                _ => false,
            }
    }

    fn inst<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        if self.try_builtin(st, i, d, scope)? {
            return Ok(());
        }
        // The inline lowering implements the forms of each opcode's primary ISA-table entry; the other
        // entries (sub-instructions such as st.async, new modifiers) are recognised, not lowered,
        // unless a builtin took them above.
        if !self.native(d) {
            let mods: String = i.mods.iter().map(|m| m.text).collect();
            return Err(unsupported(
                i.span,
                format!("`{}{mods}` is not supported yet", i.opcode.text),
            ));
        }
        let ops = &i.operands;
        let name = d.spec.name;
        let t = d.ty();
        let need_ty = || t.ok_or_else(|| unsupported(i.span, "missing type"));
        match name {
            "mov" if d.get(G::Vec).is_some() => {
                // mov.v2/.v4: element by element between vector registers and brace lists.
                let t = need_ty()?;
                let parts = |op: &'m Operand<'a>, l: &Self| -> Vec<Operand<'a>> {
                    match (op, l.expand_vector(op, scope)) {
                        (_, Some(p)) => p,
                        (Operand::Vector(v, _), None) => v.clone(),
                        (o, None) => vec![o.clone()],
                    }
                };
                let (dst, src) = (parts(&ops[0], self), parts(&ops[1], self));
                // Read every source before writing, so `mov.v2 {a, b}, {b, a}` swaps.
                let vals = src.iter().map(|o| self.read(st, o, t, scope)).collect::<R<Vec<_>>>()?;
                for (o, v) in dst.iter().zip(vals) {
                    self.write(st, o, v, t.is_signed(), scope)?;
                }
                Ok(())
            }
            "mov" => {
                let t = need_ty()?;
                match (&ops[0], &ops[1]) {
                    // Pack `mov.b64 %rd, {%r1, %r2}` and unpack `mov.b64 {%r1, %r2}, %rd`: the first
                    // element is the lowest part.
                    (dst, Operand::Vector(parts, _)) => {
                        let n = parts.len() as u32;
                        let (w, part_t) = (t.bits(), bits_type(t.bits() / n.max(1)));
                        let wt = self.int(w);
                        let mut acc = wt.const_zero();
                        for (k, p) in parts.iter().enumerate() {
                            let v = self.read(st, p, part_t, scope)?.into_int_value();
                            let v = self.b.build_int_z_extend(v, wt, "part")?;
                            let v =
                                self.b
                                    .build_left_shift(v, wt.const_int(k as u64 * (w / n) as u64, false), "part")?;
                            acc = self.b.build_or(acc, v, "pack")?;
                        }
                        self.write(st, dst, acc.into(), false, scope)
                    }
                    (Operand::Vector(parts, _), src) => {
                        let n = parts.len() as u32;
                        let w = t.bits();
                        let wt = self.int(w);
                        let whole = self.read(st, src, bits_type(w), scope)?.into_int_value();
                        for (k, p) in parts.iter().enumerate() {
                            let v = self.b.build_right_shift(
                                whole,
                                wt.const_int(k as u64 * (w / n) as u64, false),
                                false,
                                "part",
                            )?;
                            let v = self.b.build_int_truncate(v, self.int(w / n), "part")?;
                            self.write(st, p, v.into(), false, scope)?;
                        }
                        Ok(())
                    }
                    (dst, src) => {
                        let v = self.read(st, src, t, scope)?;
                        self.write(st, dst, v, false, scope)
                    }
                }
            }
            "popc" | "clz" | "brev" => {
                let t = need_ty()?;
                let a = self.read(st, &ops[1], t, scope)?;
                let ty = self.value_ty(t);
                let v = match name {
                    "popc" => self.call_intrinsic("llvm.ctpop", &[ty], &[a])?,
                    "clz" => self.call_intrinsic("llvm.ctlz", &[ty], &[a, self.ctx.bool_type().const_zero().into()])?,
                    _ => self.call_intrinsic("llvm.bitreverse", &[ty], &[a])?,
                };
                self.write(st, &ops[0], v, false, scope)
            }
            "sqrt" | "rcp" | "rsqrt" | "sin" | "cos" | "lg2" | "ex2" => self.float_unary(st, i, d, scope),
            "shf" | "lop3" | "bfe" | "bfi" => self.bit_field(st, i, d, scope),
            "membar" | "fence" => {
                // Every PTX fence is at least as strong as the host needs; seq_cst covers them all.
                self.b
                    .build_fence(inkwell::AtomicOrdering::SequentiallyConsistent, false, "")?;
                Ok(())
            }
            "copysign" => {
                let t = need_ty()?;
                let a = self.read(st, &ops[1], t, scope)?;
                let b = self.read(st, &ops[2], t, scope)?;
                // PTX puts the sign source first: d = |b| with a's sign.
                let v = self.call_intrinsic("llvm.copysign", &[self.value_ty(t)], &[b, a])?;
                self.write(st, &ops[0], v, false, scope)
            }
            "add" | "sub" | "mad" if d.has(".cc") => self.carry_arith(st, i, d, scope),
            "addc" | "subc" | "madc" => self.carry_arith(st, i, d, scope),
            "add" | "sub" | "mul" | "div" | "rem" | "min" | "max" | "and" | "or" | "xor" | "shl" | "shr" => {
                let t = need_ty()?;
                let mode = d.get(G::Mode);
                let src_t = t;
                let a = self.read(st, &ops[1], src_t, scope)?;
                let bt = if matches!(name, "shl" | "shr") {
                    Type::U32
                } else {
                    src_t
                };
                let b = self.read(st, &ops[2], bt, scope)?;
                let v = self.binary(name, d, t, mode, a, b, i.span)?;
                self.write(st, &ops[0], v, t.is_signed(), scope)
            }
            "mad" | "fma" => {
                let t = need_ty()?;
                let a = self.read(st, &ops[1], t, scope)?;
                let b = self.read(st, &ops[2], t, scope)?;
                if t.is_float() {
                    self.rounding_supported(d, i.span)?;
                    if d.has(".sat") {
                        // The host takes `.sat` through a builtin; NVPTX gets the instruction as inline PTX.
                        return Err(unsupported(i.span, "`.sat` on floats is not supported yet"));
                    }
                    let c = self.read(st, &ops[3], t, scope)?;
                    let (a, b, c) = (self.ftz(d, a)?, self.ftz(d, b)?, self.ftz(d, c)?);
                    let v = self.call_intrinsic("llvm.fma", &[self.value_ty(t)], &[a, b, c])?;
                    let v = self.ftz(d, v)?;
                    let v = self.canon(v)?;
                    return self.write(st, &ops[0], v, false, scope);
                }
                let mode = d.get(G::Mode);
                let ct = if mode == Some(".wide") { widen(t) } else { t };
                let c = self.read(st, &ops[3], ct, scope)?;
                let p = self.binary("mul", d, t, mode, a, b, i.span)?.into_int_value();
                if d.has(".sat") {
                    return Err(unsupported(i.span, "`mad.sat` is not supported yet"));
                }
                let v = self.b.build_int_add(p, c.into_int_value(), "mad")?;
                self.write(st, &ops[0], v.into(), t.is_signed(), scope)
            }
            "neg" | "abs" | "not" => {
                let t = need_ty()?;
                let a = self.read(st, &ops[1], t, scope)?;
                let a = self.ftz(d, a)?;
                let v: BasicValueEnum = match (name, a) {
                    ("neg", BasicValueEnum::FloatValue(f)) => self.b.build_float_neg(f, "neg")?.into(),
                    ("abs", BasicValueEnum::FloatValue(_)) => {
                        self.call_intrinsic("llvm.fabs", &[self.value_ty(t)], &[a])?
                    }
                    ("neg", BasicValueEnum::IntValue(x)) => self.b.build_int_neg(x, "neg")?.into(),
                    ("abs", BasicValueEnum::IntValue(_)) => self.call_intrinsic(
                        "llvm.abs",
                        &[self.value_ty(t)],
                        &[a, self.ctx.bool_type().const_zero().into()],
                    )?,
                    ("not", BasicValueEnum::IntValue(x)) => self.b.build_not(x, "not")?.into(),
                    _ => {
                        return Err(unsupported(
                            i.span,
                            format!("`{name}` of this type is not supported yet"),
                        ))
                    }
                };
                let v = match (v, a) {
                    (BasicValueEnum::FloatValue(_), BasicValueEnum::FloatValue(x)) => self.sign_op_nan(x, v)?,
                    _ => v,
                };
                self.write(st, &ops[0], v, t.is_signed(), scope)
            }
            "setp" | "set" => self.setp(st, i, d, scope),
            "griddepcontrol" => match self.flavour {
                // Launches complete in order on the CPU, so there is never a prerequisite grid to wait for.
                Flavour::Host => Ok(()),
                // LLVM aborts if it cannot select the intrinsic for the requested target, and lowering
                // does not know that target yet; refuse rather than risk it.
                Flavour::Nvvm => Err(unsupported(
                    i.span,
                    "`griddepcontrol` is not supported for NVPTX output yet",
                )),
            },
            "prmt" => {
                let t = need_ty()?;
                if d.get(G::Dir).is_some() {
                    return Err(unsupported(
                        i.span,
                        "`prmt` modes other than the default are not supported yet",
                    ));
                }
                let a = self.read(st, &ops[1], t, scope)?.into_int_value();
                let b = self.read(st, &ops[2], t, scope)?.into_int_value();
                let c = self.read(st, &ops[3], t, scope)?.into_int_value();
                // Result byte k is byte (c >> 4k) & 7 of b:a, or that byte's sign replicated when bit 3 is set.
                let i64t = self.i64();
                let lo = self.b.build_int_z_extend(a, i64t, "lo")?;
                let hi = self.b.build_left_shift(
                    self.b.build_int_z_extend(b, i64t, "hi")?,
                    i64t.const_int(32, false),
                    "hi",
                )?;
                let x = self.b.build_or(lo, hi, "x")?;
                let c64 = self.b.build_int_z_extend(c, i64t, "c")?;
                let mut acc = i64t.const_zero();
                for k in 0..4u64 {
                    let sel = self
                        .b
                        .build_right_shift(c64, i64t.const_int(4 * k, false), false, "sel")?;
                    let idx = self.b.build_and(sel, i64t.const_int(7, false), "idx")?;
                    let sh = self.b.build_int_mul(idx, i64t.const_int(8, false), "sh")?;
                    let byte = self.b.build_and(
                        self.b.build_right_shift(x, sh, false, "b")?,
                        i64t.const_int(0xff, false),
                        "byte",
                    )?;
                    let msb = self.b.build_int_compare(
                        IntPredicate::NE,
                        self.b.build_and(byte, i64t.const_int(0x80, false), "m")?,
                        i64t.const_zero(),
                        "msb",
                    )?;
                    let rep = self
                        .b
                        .build_select(msb, i64t.const_int(0xff, false), i64t.const_zero(), "rep")?
                        .into_int_value();
                    let signed = self.b.build_int_compare(
                        IntPredicate::NE,
                        self.b.build_and(sel, i64t.const_int(8, false), "s")?,
                        i64t.const_zero(),
                        "signed",
                    )?;
                    let byte = self.b.build_select(signed, rep, byte, "byte")?.into_int_value();
                    acc = self.b.build_or(
                        acc,
                        self.b.build_left_shift(byte, i64t.const_int(8 * k, false), "pos")?,
                        "prmt",
                    )?;
                }
                let v = self.b.build_int_truncate(acc, self.i32(), "prmt")?;
                self.write(st, &ops[0], v.into(), false, scope)
            }
            "selp" => {
                let t = need_ty()?;
                let a = self.read(st, &ops[1], t, scope)?;
                let b = self.read(st, &ops[2], t, scope)?;
                let c = self.read(st, &ops[3], Type::Pred, scope)?.into_int_value();
                let v = self.b.build_select(c, a, b, "selp")?;
                self.write(st, &ops[0], v, false, scope)
            }
            "cvt" => self.cvt(st, i, d, scope),
            "cvta" => {
                let t = need_ty()?;
                let space = d.get(G::Space).and_then(Space::from_dot).unwrap_or(Space::Generic);
                let a = self.read(st, &ops[1], t, scope)?.into_int_value();
                let to = d.has(".to");
                let v = match (self.flavour, space) {
                    (Flavour::Host, Space::Shared) => {
                        let bp = self.env_ptr(st.env.expect("env"), EnvField::Shared)?;
                        let base = self.b.build_load(self.ptr(0), bp, "base")?.into_pointer_value();
                        let base = self.b.build_ptr_to_int(base, self.int(t.bits()), "b")?;
                        if to {
                            self.b.build_int_sub(a, base, "cvta")?
                        } else {
                            self.b.build_int_add(a, base, "cvta")?
                        }
                    }
                    (Flavour::Host, Space::Param) if st.is_kernel => {
                        // Kernel parameters live in the launch's argument buffer.
                        let bp = self.env_ptr(st.env.expect("env"), EnvField::Params)?;
                        let base = self.b.build_load(self.ptr(0), bp, "base")?.into_pointer_value();
                        let base = self.b.build_ptr_to_int(base, self.int(t.bits()), "b")?;
                        if to {
                            self.b.build_int_sub(a, base, "cvta")?
                        } else {
                            self.b.build_int_add(a, base, "cvta")?
                        }
                    }
                    (Flavour::Host, Space::Param) => {
                        return Err(unsupported(
                            i.span,
                            "`cvta.param` in a device function is not supported yet",
                        ))
                    }
                    (Flavour::Host, _) => a,
                    (Flavour::Nvvm, s) => {
                        let from_sp = if to { 0 } else { self.llvm_space(s) };
                        let to_sp = if to { self.llvm_space(s) } else { 0 };
                        let p = self.b.build_int_to_ptr(a, self.ptr(from_sp), "p")?;
                        let c = self.b.build_address_space_cast(p, self.ptr(to_sp), "c")?;
                        self.b.build_ptr_to_int(c, self.int(t.bits()), "cvta")?
                    }
                };
                self.write(st, &ops[0], v.into(), false, scope)
            }
            "ld" | "st" | "ldu" => self.memory(st, i, d, scope),
            // Cache hints, register budgets, profiler events and debugger stops: no effect on any value.
            "prefetch" | "prefetchu" | "applypriority" | "discard" | "setmaxnreg" | "pmevent" | "brkpt" => Ok(()),
            // A CTA is its own cluster of one: rank 0, and every shared address is already its own.
            "getctarank" => self.write(st, &ops[0], self.i32().const_zero().into(), false, scope),
            "mapa" => {
                let t = need_ty()?;
                let a = self.read(st, &ops[1], t, scope)?;
                self.write(st, &ops[0], a, false, scope)
            }
            // An opaque L2 policy; the loads that take one ignore it.
            "createpolicy" => self.write(st, &ops[0], self.i64().const_zero().into(), false, scope),
            "isspacep" => self.isspacep(st, i, d, scope),
            "alloca" | "stacksave" | "stackrestore" => self.stack(st, i, d, scope),
            "cp" => self.async_copy(st, i, d, scope),
            "mbarrier" => self.mbarrier(st, i, d, scope),
            "slct" | "cnot" => self.select_not(st, i, d, scope),
            "brx" => self.branch_indexed(st, i, scope),
            "trap" => {
                if self.flavour == Flavour::Nvvm {
                    return self.call_intrinsic_void("llvm.trap", &[]);
                }
                let i64t = self.i64();
                let site = i64t.const_int(i.span.start as u64, false);
                self.mem_call(st, crate::builtin::MEM_TRAP, i64t.const_zero(), site, i64t.const_zero())?;
                self.emit_return(st)
            }
            "atom" | "red" => self.atomic(st, i, d, scope),
            "bra" => {
                let target = self.label(st, i)?;
                self.b.build_unconditional_branch(target)?;
                Ok(())
            }
            "ret" => self.emit_return(st),
            "call" => {
                self.call(st, i, scope)?;
                self.stop_if_faulted(st, None)
            }
            "exit" => self.emit_return(st),
            "bar" | "barrier" => self.barrier(st, i, d, scope),
            "activemask" | "redux" | "match" | "elect" | "nanosleep" => self.warp_other(st, i, d, scope),
            "mma" | "ldmatrix" | "stmatrix" | "movmatrix" => self.warp_matrix(st, i, d, scope),
            "wmma" => self.wmma(st, i, d, scope),
            "shfl" | "vote" => self.warp_collective(st, i, d, scope),
            other => Err(unsupported(i.opcode.span, format!("`{other}` is not supported yet"))),
        }
    }
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
