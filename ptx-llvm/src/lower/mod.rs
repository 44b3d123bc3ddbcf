//! The translator. Registers become allocas (mem2reg turns them into SSA), labels become basic blocks,
//! and every instruction is lowered from its ISA-table decoding. This file holds the module and
//! function structure and the instruction dispatch; the submodules hold one concern each.

mod arith;
mod asm;
mod calls;
mod convert;
mod memory;
mod sync;
mod values;

use crate::Flavour;
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::builder::{Builder, BuilderError};
use inkwell::context::Context;
use inkwell::module::{Linkage as LlLinkage, Module};
use inkwell::types::{AnyType, BasicType, BasicTypeEnum, IntType};
use inkwell::values::{
    BasicMetadataValueEnum, BasicValue, BasicValueEnum, FunctionValue, GlobalValue, IntValue, PointerValue,
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

/// Field order of the host environment struct
/// `{ params, shared, tid[3], ntid[3], ctaid[3], nctaid[3], sync, collective }`; ptx-jit's runtime mirrors
/// it with a `#[repr(C)]` struct. `collective(sync, kind, a, b, c)` (see `crate::collective`) is called by
/// kernels that run as fibers, at barriers and warp collectives.
pub const HOST_ENV_FIELDS: [&str; 8] = [
    "params",
    "shared",
    "tid",
    "ntid",
    "ctaid",
    "nctaid",
    "sync",
    "collective",
];

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
    /// Host flavour: the kernel synchronises threads (CTA barriers or warp collectives), so its entry
    /// runs one thread (on a fiber) and calls the environment's `collective`; otherwise the entry loops
    /// over all threads of the CTA.
    pub fibers: bool,
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
    Diag(Diagnostic),
    Llvm(BuilderError),
}
impl From<BuilderError> for Fail {
    fn from(e: BuilderError) -> Self {
        Fail::Llvm(e)
    }
}
type R<T> = Result<T, Fail>;

fn unsupported(span: Span, what: impl Into<String>) -> Fail {
    Fail::Diag(
        Diagnostic::error(Code::P0401, span, what.into())
            .label("not supported yet")
            .help("see the README's list of what works today"),
    )
}

/// Lowers a module that has passed `ptx_front::check` without errors.
pub fn lower<'ctx>(
    ctx: &'ctx Context,
    m: &ast::Module<'_>,
    flavour: Flavour,
    name: &str,
) -> Result<Lowered<'ctx>, Vec<Diagnostic>> {
    // The nvvm flavour lowers again, with inline PTX for what the first pass could not lower natively.
    let asm_at = match lower_pass(ctx, m, flavour, name, Default::default()) {
        Ok(Pass::Done(l)) => return Ok(l),
        Ok(Pass::Again(at)) => at,
        Err(d) => return Err(d),
    };
    match lower_pass(ctx, m, flavour, name, asm_at)? {
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
        fibers: m
            .items
            .iter()
            .any(|i| matches!(i, Item::Function(f) if f.body.as_deref().is_some_and(needs_fibers))),
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
    let globals = m
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Var(v) if matches!(v.space, Space::Global | Space::Const) => {
                Some((v.name.text.to_string(), v.size_bytes()))
            }
            _ => None,
        })
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
    /// Some function of the module synchronises a CTA (conservative: any function, called or not).
    fibers: bool,
}

/// Whether a body synchronises threads (barriers or warp collectives), so its kernels run as fibers.
fn needs_fibers(body: &[Statement<'_>]) -> bool {
    let mut found = false;
    ast::visit(body, &mut |s| {
        found |= matches!(s, Statement::Inst(i) if matches!(i.opcode.text, "bar" | "barrier" | "shfl" | "vote"));
    });
    found
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
    ret: Option<(PointerValue<'ctx>, BasicTypeEnum<'ctx>)>,
    /// The condition-code carry flag (CC.CF) of `.cc` arithmetic, made on first use.
    carry: Option<PointerValue<'ctx>>,
    alloca_at: Builder<'ctx>,
    _m: std::marker::PhantomData<&'m ()>,
}

impl<'ctx> Lowerer<'ctx> {
    fn fail(&mut self, e: Fail) {
        match e {
            Fail::Diag(d) => self.diags.push(d),
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

    fn env_ty(&mut self) -> inkwell::types::StructType<'ctx> {
        if let Some(t) = self.env_ty {
            return t;
        }
        let p = self.ptr(0);
        let a3 = self.i32().array_type(3);
        let t = self.ctx.struct_type(
            &[
                p.into(),
                p.into(),
                a3.into(),
                a3.into(),
                a3.into(),
                a3.into(),
                p.into(),
                p.into(),
            ],
            false,
        );
        self.env_ty = Some(t);
        t
    }

    fn declare_module(&mut self, m: &ast::Module<'_>) -> R<()> {
        // Shared variables anywhere in the module get one layout (host) or one addrspace(3) global (nvvm).
        let mut shared: Vec<&VarDecl<'_>> = vec![];
        for item in &m.items {
            match item {
                Item::Var(v) if v.space == Space::Shared => shared.push(v),
                Item::Var(v) if matches!(v.space, Space::Global | Space::Const) => self.module_var(v)?,
                Item::Var(v) => {
                    return Err(unsupported(
                        v.span,
                        format!("module-scope `{}` variables are not supported yet", v.space.name()),
                    ))
                }
                Item::Function(f) => {
                    if let Some(b) = &f.body {
                        ast::visit(b, &mut |s| {
                            if let Statement::Var(v) = s {
                                if v.space == Space::Shared {
                                    shared.push(v);
                                }
                            }
                        });
                    }
                }
                Item::Directive(_) | Item::Statement(_) => {}
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
        // Functions are declared before any body so calls may go forward.
        for item in &m.items {
            if let Item::Function(f) = item {
                if !self.funcs.contains_key(f.name.text) {
                    let fv = self.declare_function(f)?;
                    self.funcs.insert(f.name.text.to_string(), fv);
                }
            }
        }
        self.fill_symbol_inits()?;
        Ok(())
    }

    fn module_var(&mut self, v: &VarDecl<'_>) -> R<()> {
        let size = v.size_bytes();
        if size == 0 {
            return Err(unsupported(
                v.span,
                "module variables without a size are not supported yet",
            ));
        }
        let bytes = match self.init_bytes(v) {
            // Addresses of functions and variables (`.u64 vtable[4] = {0, f, generic(g)+8}`).
            Err(_) if self.flavour == Flavour::Nvvm && v.ty.bits() == 64 && asm::has_symbols(v) => {
                return self.nvvm_symbol_var(v)
            }
            r => r?,
        };
        let ty = self.ctx.i8_type().array_type(size as u32);
        let g = self
            .module
            .add_global(ty, Some(AddressSpace::from(self.llvm_space(v.space))), v.name.text);
        g.set_alignment(v.alignment() as u32);
        let vals: Vec<_> = bytes
            .iter()
            .map(|&b| self.ctx.i8_type().const_int(b as u64, false))
            .collect();
        g.set_initializer(&self.ctx.i8_type().const_array(&vals));
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

    /// Flattens an initializer into little-endian bytes.
    fn init_bytes(&self, v: &VarDecl<'_>) -> R<Vec<u8>> {
        let size = v.size_bytes() as usize;
        let mut out = Vec::with_capacity(size);
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
                return Err(unsupported(v.span, "texture and sampler initializers are not supported yet"));
            }
        }
        let eb = v.ty.bytes() as usize;
        for e in elems {
            let bits = const_eval(e, v.ty)
                .ok_or_else(|| unsupported(v.span, "this initializer expression is not supported yet"))?;
            out.extend_from_slice(&bits.to_le_bytes()[..eb]);
        }
        out.resize(size, 0);
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
                    args.push(if nvvm_byval(p) { self.ptr(0).into() } else { self.param_ty(p)?.into() });
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
                let mut args: Vec<inkwell::types::BasicMetadataTypeEnum> = vec![];
                if self.flavour == Flavour::Host {
                    args.push(self.ptr(0).into());
                }
                for p in &f.params {
                    args.push(self.param_ty(p)?.into());
                }
                let ty = match f.returns.as_slice() {
                    [] => self.ctx.void_type().fn_type(&args, false),
                    [r] => self.param_ty(r)?.fn_type(&args, false),
                    _ => {
                        return Err(unsupported(
                            f.name.span,
                            "functions with several return values are not supported yet",
                        ))
                    }
                };
                let fv = self.module.add_function(f.name.text, ty, None);
                if f.linkage != Some(ast::Linkage::Visible) && f.linkage != Some(ast::Linkage::Extern) {
                    fv.set_linkage(LlLinkage::Internal);
                }
                fv
            }
        };
        Ok(fv)
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
        let (body_fn, info) = if is_kernel && self.flavour == Flavour::Host {
            let ty = self.ctx.void_type().fn_type(&[self.ptr(0).into()], false);
            let tf = self
                .module
                .add_function(&format!("{}.thread", f.name.text), ty, Some(LlLinkage::Internal));
            let inl = self
                .ctx
                .create_enum_attribute(Attribute::get_named_enum_kind_id("alwaysinline"), 0);
            tf.add_attribute(AttributeLoc::Function, inl);
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
            ret: None,
            carry: None,
            alloca_at,
            _m: std::marker::PhantomData,
        };
        let body = f.body.as_ref().expect("function has a body");
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
            if let [r] = f.returns.as_slice() {
                let ty = self.param_ty(r)?;
                let slot = st.alloca_at.build_alloca(ty, r.name.text)?;
                self.b.build_store(slot, ty.const_zero())?;
                st.params.insert(r.name.text, ParamHome::Slot(slot));
                st.ret = Some((slot, ty));
            }
        }
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
        if is_kernel && self.flavour == Flavour::Host {
            self.host_block_loop(fv, body_fn)?;
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
        KernelInfo {
            name: f.name.text.to_string(),
            params,
            param_bytes: off,
            static_shared: self.shared_size,
            fibers: self.fibers && self.flavour == Flavour::Host,
        }
    }

    /// `void kernel(Env*)`: copies the environment, then runs the thread body for every thread of the CTA.
    fn host_block_loop(&mut self, block_fn: FunctionValue<'ctx>, thread_fn: FunctionValue<'ctx>) -> R<()> {
        let env_ty = self.env_ty();
        let i32t = self.i32();
        let entry = self.ctx.append_basic_block(block_fn, "entry");
        self.b.position_at_end(entry);
        let src = block_fn.get_nth_param(0).expect("env").into_pointer_value();
        let params = block_fn.get_nth_param(1).expect("params").into_pointer_value();
        let env = self.b.build_alloca(env_ty, "env")?;
        let whole = self.b.build_load(env_ty, src, "env.in")?;
        self.b.build_store(env, whole)?;
        let pp = self.b.build_struct_gep(env_ty, env, 0, "params")?;
        self.b.build_store(pp, params)?;
        if self.fibers {
            // One thread per call; the runtime gives each thread a fiber and its own environment.
            self.b.build_call(thread_fn, &[env.into()], "")?;
            self.b.build_return(None)?;
            return Ok(());
        }
        let field = |b: &Builder<'ctx>, f: u32, d: u32| -> R<PointerValue<'ctx>> {
            let p = b.build_struct_gep(env_ty, env, f, "f")?;
            Ok(unsafe {
                b.build_in_bounds_gep(
                    i32t.array_type(3),
                    p,
                    &[i32t.const_zero(), i32t.const_int(d as u64, false)],
                    "d",
                )?
            })
        };
        let ntid: Vec<IntValue> = (0..3)
            .map(|d| -> R<IntValue> { Ok(self.b.build_load(i32t, field(&self.b, 3, d)?, "n")?.into_int_value()) })
            .collect::<R<_>>()?;
        // Nested loops z, y, x; x innermost so consecutive threads are consecutive iterations.
        let mut exits = vec![];
        let mut ivs = vec![];
        for d in [2u32, 1, 0] {
            let pre = self.b.get_insert_block().expect("block");
            let head = self.ctx.append_basic_block(block_fn, "loop");
            let exit = self.ctx.append_basic_block(block_fn, "done");
            self.b.build_unconditional_branch(head)?;
            self.b.position_at_end(head);
            let phi = self.b.build_phi(i32t, "t")?;
            phi.add_incoming(&[(&i32t.const_zero(), pre)]);
            self.b.build_store(field(&self.b, 2, d)?, phi.as_basic_value())?;
            ivs.push((phi, head, d));
            exits.push(exit);
        }
        self.b.build_call(thread_fn, &[env.into()], "")?;
        for ((phi, head, d), exit) in ivs.into_iter().rev().zip(exits.into_iter().rev()) {
            let next = self
                .b
                .build_int_add(phi.as_basic_value().into_int_value(), i32t.const_int(1, false), "next")?;
            let latch = self.b.get_insert_block().expect("block");
            phi.add_incoming(&[(&next, latch)]);
            let more = self
                .b
                .build_int_compare(IntPredicate::ULT, next, ntid[d as usize], "more")?;
            self.b.build_conditional_branch(more, head, exit)?;
            self.b.position_at_end(exit);
        }
        self.b.build_return(None)?;
        Ok(())
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
                        Space::Reg | Space::Shared => {}
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
        let mods: Vec<&str> = i.mods.iter().map(|m| m.text).collect();
        let d = isa::decode(i.opcode.text, &mods)
            .map_err(|_| unsupported(i.opcode.span, format!("`{}` is not supported yet", i.opcode.text)))?;
        // The lowering implements the forms of each opcode's primary ISA-table entry; the other entries
        // (half precision, sub-instructions such as st.async, new modifiers) are recognised, not lowered.
        if !d.is_primary() && self.flavour != Flavour::Nvvm {
            let form = format!("{}{}", i.opcode.text, mods.concat());
            return Err(unsupported(i.span, format!("`{form}` is not supported yet")));
        }
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

    fn emit_return(&mut self, st: &Fn<'ctx, '_, '_>) -> R<()> {
        if self.b.get_insert_block().and_then(|b| b.get_terminator()).is_some() {
            return Ok(());
        }
        match st.ret {
            Some((slot, ty)) => {
                let v = self.b.build_load(ty, slot, "ret")?;
                self.b.build_return(Some(&v))?;
            }
            None => {
                self.b.build_return(None)?;
            }
        }
        Ok(())
    }

    // ---- registers and operands ----

    fn inst<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let ops = &i.operands;
        let name = d.spec.name;
        let t = d.ty();
        let need_ty = || t.ok_or_else(|| unsupported(i.span, "missing type"));
        match name {
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
                    let c = self.read(st, &ops[3], t, scope)?;
                    let (a, b, c) = (self.ftz(d, a)?, self.ftz(d, b)?, self.ftz(d, c)?);
                    let v = self.call_intrinsic("llvm.fma", &[self.value_ty(t)], &[a, b, c])?;
                    let v = self.ftz(d, v)?;
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
                        let env_ty = self.env_ty();
                        let bp = self.b.build_struct_gep(env_ty, st.env.expect("env"), 1, "win")?;
                        let base = self.b.build_load(self.ptr(0), bp, "base")?.into_pointer_value();
                        let base = self.b.build_ptr_to_int(base, self.int(t.bits()), "b")?;
                        if to {
                            self.b.build_int_sub(a, base, "cvta")?
                        } else {
                            self.b.build_int_add(a, base, "cvta")?
                        }
                    }
                    (Flavour::Host, Space::Param) => {
                        return Err(unsupported(i.span, "`cvta.param` is not supported yet"))
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
            "ld" | "st" => self.memory(st, i, d, scope),
            "atom" | "red" => self.atomic(st, i, d, scope),
            "bra" => {
                let target = self.label(st, i)?;
                self.b.build_unconditional_branch(target)?;
                Ok(())
            }
            "ret" | "exit" => self.emit_return(st),
            "call" => self.call(st, i, scope),
            "bar" | "barrier" => match self.flavour {
                Flavour::Nvvm if d.has(".warp") => {
                    let mask = self.read(st, &ops[0], Type::B32, scope)?;
                    self.call_intrinsic_void("llvm.nvvm.bar.warp.sync", &[mask])
                }
                Flavour::Nvvm => {
                    let id = self.read(st, &ops[0], Type::U32, scope)?;
                    if d.get(G::Sync) != Some(".sync") || ops.len() > 1 {
                        return Err(unsupported(i.span, "only `bar.sync a` is supported yet"));
                    }
                    let f = if name == "bar" {
                        "llvm.nvvm.barrier.cta.sync.aligned.all"
                    } else {
                        "llvm.nvvm.barrier.cta.sync.all"
                    };
                    self.call_intrinsic_void(f, &[id])
                }
                Flavour::Host => {
                    if d.has(".warp") {
                        self.collective(st, crate::collective::WARP_SYNC, [None; 3])?;
                        return Ok(());
                    }
                    if d.get(G::Sync) != Some(".sync") || ops.len() > 1 {
                        return Err(unsupported(
                            i.span,
                            "only `bar.sync a` (all threads of the CTA) is supported yet",
                        ));
                    }
                    self.collective(st, crate::collective::BAR_SYNC, [None; 3])?;
                    Ok(())
                }
            },
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
