//! The translator. Registers become allocas (mem2reg turns them into SSA), labels become basic blocks,
//! and every instruction is lowered from its ISA-table decoding.

use crate::Flavour;
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::basic_block::BasicBlock;
use inkwell::builder::{Builder, BuilderError};
use inkwell::context::Context;
use inkwell::module::{Linkage as LlLinkage, Module};
use inkwell::types::{BasicType, BasicTypeEnum, IntType};
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
    pub barriers: bool,
}

pub struct Lowered<'ctx> {
    pub module: Module<'ctx>,
    pub kernels: Vec<KernelInfo>,
    /// Module-scope `.global`/`.const` variables: (name, size in bytes).
    pub globals: Vec<(String, u64)>,
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
        env_ty: None,
        barriers: m
            .items
            .iter()
            .any(|i| matches!(i, Item::Function(f) if f.body.as_deref().is_some_and(has_barrier))),
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
    Ok(Lowered {
        module: l.module,
        kernels,
        globals,
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
    funcs: HashMap<String, FunctionValue<'ctx>>,
    diags: Vec<Diagnostic>,
    env_ty: Option<inkwell::types::StructType<'ctx>>,
    /// Some function of the module synchronises a CTA (conservative: any function, called or not).
    barriers: bool,
}

fn has_barrier(body: &[Statement<'_>]) -> bool {
    body.iter().any(|s| match s {
        Statement::Inst(i) => matches!(i.opcode.text, "bar" | "barrier" | "shfl" | "vote"),
        Statement::Block(b, _) => has_barrier(b),
        _ => false,
    })
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
        fn walk<'m, 'a>(b: &'m [Statement<'a>], out: &mut Vec<&'m VarDecl<'a>>) {
            for s in b {
                match s {
                    Statement::Var(v) if v.space == Space::Shared => out.push(v),
                    Statement::Block(b, _) => walk(b, out),
                    _ => {}
                }
            }
        }
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
                        walk(b, &mut shared);
                    }
                }
                Item::Other { .. } => {}
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
        let bytes = self.init_bytes(v)?;
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
        fn flat<'i, 'a>(i: &'i Init<'a>, out: &mut Vec<&'i Expr<'a>>) {
            match i {
                Init::Scalar(e) => out.push(e),
                Init::List(l) => l.iter().for_each(|x| flat(x, out)),
            }
        }
        let mut elems = vec![];
        if let Some(i) = &v.init {
            flat(i, &mut elems);
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
                let mut args = vec![];
                for p in &f.params {
                    args.push(self.param_ty(p)?.into());
                }
                let ty = self.ctx.void_type().fn_type(&args, false);
                let fv = self.module.add_function(f.name.text, ty, None);
                fv.set_call_conventions(71); // ptx_kernel
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
                        let ty = self.param_ty(p)?;
                        let slot = st.alloca_at.build_alloca(ty, p.name.text)?;
                        let arg = body_fn.get_nth_param(arg_index).expect("kernel arg");
                        self.b.build_store(slot, arg)?;
                        arg_index += 1;
                        ParamHome::Slot(slot)
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
            barriers: self.barriers && self.flavour == Flavour::Host,
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
        if self.barriers {
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
                Statement::Other { .. } => {}
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
        let Some(g) = &i.guard else {
            return self.inst(st, i, &d, scope);
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
        self.inst(st, i, &d, scope)?;
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

    fn reg_slot<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        n: &Name<'a>,
        scope: &Scope<'m, 'a>,
    ) -> R<(PointerValue<'ctx>, Type)> {
        match scope.lookup(n.text) {
            Some(Entry::Reg {
                ty, vector: None, id, ..
            }) => {
                if let Some(p) = st.regs.get(&id) {
                    return Ok((*p, ty));
                }
                let p = st.alloca_at.build_alloca(self.int(ty.bits()), n.text)?;
                st.regs.insert(id, p);
                Ok((p, ty))
            }
            Some(Entry::Reg { .. }) => Err(unsupported(n.span, "vector registers are not supported yet")),
            _ => Err(unsupported(n.span, format!("`{}` is not a register", n.text))),
        }
    }

    /// Reads a register as a value of type `want` (size-adapted, bit-cast for floats).
    fn reg_load<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        n: &Name<'a>,
        want: Type,
        scope: &Scope<'m, 'a>,
    ) -> R<BasicValueEnum<'ctx>> {
        let (slot, ty) = self.reg_slot(st, n, scope)?;
        let raw = self.b.build_load(self.int(ty.bits()), slot, n.text)?.into_int_value();
        self.from_bits(raw, want, ty.is_signed())
    }

    /// Truncates or extends an integer to `bits` (sign-extending when `signed`).
    fn resize(&self, i: IntValue<'ctx>, bits: u32, signed: bool) -> R<IntValue<'ctx>> {
        let have = i.get_type().get_bit_width();
        Ok(match have.cmp(&bits) {
            std::cmp::Ordering::Greater => self.b.build_int_truncate(i, self.int(bits), "tr")?,
            std::cmp::Ordering::Less if signed => self.b.build_int_s_extend(i, self.int(bits), "sx")?,
            std::cmp::Ordering::Less => self.b.build_int_z_extend(i, self.int(bits), "zx")?,
            std::cmp::Ordering::Equal => i,
        })
    }

    /// Converts raw register bits to a value of type `want`.
    fn from_bits(&self, raw: IntValue<'ctx>, want: Type, signed: bool) -> R<BasicValueEnum<'ctx>> {
        let v = self.resize(raw, want.bits(), signed)?;
        Ok(match want {
            Type::F32 | Type::F64 => self.b.build_bit_cast(v, self.value_ty(want), "f")?,
            _ => v.into(),
        })
    }

    /// Converts a value to `bits` wide register storage; `signed` picks sign extension when widening.
    fn to_bits(&self, v: BasicValueEnum<'ctx>, bits: u32, signed: bool) -> R<IntValue<'ctx>> {
        let i = match v {
            BasicValueEnum::FloatValue(f) => {
                let w = f.get_type().get_bit_width();
                self.b.build_bit_cast(f, self.int(w), "b")?.into_int_value()
            }
            BasicValueEnum::IntValue(i) => i,
            other => {
                return Err(unsupported(
                    Span::default(),
                    format!("internal error: unexpected value {other:?}"),
                ))
            }
        };
        self.resize(i, bits, signed)
    }

    fn write<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        op: &Operand<'a>,
        v: BasicValueEnum<'ctx>,
        signed: bool,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        match op {
            Operand::Sym { name, .. } => {
                let (slot, ty) = self.reg_slot(st, name, scope)?;
                let bits = self.to_bits(v, ty.bits(), signed)?;
                self.b.build_store(slot, bits)?;
                Ok(())
            }
            Operand::Sink(_) => Ok(()),
            other => Err(unsupported(
                other.span(),
                "this destination operand is not supported yet",
            )),
        }
    }

    fn read<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        op: &Operand<'a>,
        want: Type,
        scope: &Scope<'m, 'a>,
    ) -> R<BasicValueEnum<'ctx>> {
        match op {
            Operand::Sym { name, component } => {
                if let Some(c) = component {
                    let v = self.special(st, name, c)?;
                    return self.from_bits(v, want, false);
                }
                match scope.lookup(name.text) {
                    Some(Entry::Reg { .. }) => self.reg_load(st, name, want, scope),
                    Some(Entry::Var(_)) | None => {
                        let a = self.var_address(st, name, scope)?;
                        self.from_bits(a, want, false)
                    }
                    Some(Entry::Func(_)) => Err(unsupported(name.span, "function addresses are not supported yet")),
                }
            }
            Operand::Imm(imm, span) => self.imm(*imm, want, *span),
            Operand::Not(x, s) => match self.read(st, x, want, scope)? {
                BasicValueEnum::IntValue(v) => Ok(self.b.build_not(v, "not")?.into()),
                _ => Err(unsupported(*s, "`!` applies to predicates only")),
            },
            Operand::Neg(x, _) => {
                let v = self.read(st, x, want, scope)?;
                Ok(match v {
                    BasicValueEnum::FloatValue(f) => self.b.build_float_neg(f, "neg")?.into(),
                    other => self.b.build_int_neg(other.into_int_value(), "neg")?.into(),
                })
            }
            other => Err(unsupported(other.span(), "this operand form is not supported yet")),
        }
    }

    fn imm(&self, imm: Imm, want: Type, span: Span) -> R<BasicValueEnum<'ctx>> {
        let f32t = self.ctx.f32_type();
        let f64t = self.ctx.f64_type();
        Ok(match (imm, want) {
            (Imm::Int(i), Type::F32) => f32t.const_float(i as f64).into(),
            (Imm::Int(i), Type::F64) => f64t.const_float(i as f64).into(),
            (Imm::Int(i), t) => self.int(t.bits()).const_int(i as u64, false).into(),
            (Imm::F32(b), Type::F32) => f32t.const_float(f32::from_bits(b) as f64).into(),
            (Imm::F32(b), Type::F64) => f64t.const_float(f32::from_bits(b) as f64).into(),
            (Imm::F64(b), Type::F32) => f32t.const_float(f64::from_bits(b) as f32 as f64).into(),
            (Imm::F64(b), Type::F64) => f64t.const_float(f64::from_bits(b)).into(),
            (Imm::F32(b), t) if t.bits() == 32 => self.i32().const_int(b as u64, false).into(),
            (Imm::F64(b), t) if t.bits() == 64 => self.i64().const_int(b, false).into(),
            _ => {
                return Err(unsupported(
                    span,
                    format!("a float literal cannot be used as `{}`", want.name()),
                ))
            }
        })
    }

    fn special<'a>(&mut self, st: &Fn<'ctx, '_, 'a>, n: &Name<'a>, c: &Name<'a>) -> R<IntValue<'ctx>> {
        let dim = match c.text {
            ".x" => 0,
            ".y" => 1,
            ".z" => 2,
            _ => return Err(unsupported(c.span, format!("component `{}` is not supported", c.text))),
        };
        let field = match n.text {
            "%tid" => 2,
            "%ntid" => 3,
            "%ctaid" => 4,
            "%nctaid" => 5,
            _ => {
                return Err(unsupported(
                    n.span,
                    format!("special register `{}` is not supported yet", n.text),
                ))
            }
        };
        match self.flavour {
            Flavour::Host => {
                let env_ty = self.env_ty();
                let env = st.env.expect("host functions take an env");
                let p = self.b.build_struct_gep(env_ty, env, field, "sreg")?;
                let p = unsafe {
                    self.b.build_in_bounds_gep(
                        self.i32().array_type(3),
                        p,
                        &[self.i32().const_zero(), self.i32().const_int(dim, false)],
                        "d",
                    )?
                };
                Ok(self.b.build_load(self.i32(), p, n.text)?.into_int_value())
            }
            Flavour::Nvvm => {
                let name = format!("llvm.nvvm.read.ptx.sreg.{}.{}", &n.text[1..], &c.text[1..]);
                let f = self.intrinsic(&name, &[])?;
                Ok(self
                    .b
                    .build_call(f, &[], "sreg")?
                    .try_as_basic_value()
                    .basic()
                    .expect("sreg value")
                    .into_int_value())
            }
        }
    }

    fn intrinsic(&self, name: &str, tys: &[BasicTypeEnum<'ctx>]) -> R<FunctionValue<'ctx>> {
        inkwell::intrinsics::Intrinsic::find(name)
            .and_then(|i| i.get_declaration(&self.module, tys))
            .ok_or_else(|| unsupported(Span::default(), format!("LLVM intrinsic `{name}` is missing")))
    }

    fn call_intrinsic(
        &self,
        name: &str,
        tys: &[BasicTypeEnum<'ctx>],
        args: &[BasicValueEnum<'ctx>],
    ) -> R<BasicValueEnum<'ctx>> {
        let f = self.intrinsic(name, tys)?;
        let args: Vec<BasicMetadataValueEnum> = args.iter().map(|a| (*a).into()).collect();
        Ok(self
            .b
            .build_call(f, &args, "i")?
            .try_as_basic_value()
            .basic()
            .expect("intrinsic value"))
    }

    /// The address of a variable in its own state space, as an integer of the module's address size
    /// (shared addresses are offsets into the CTA's window on the host).
    fn var_address<'m, 'a>(&mut self, st: &Fn<'ctx, 'm, 'a>, n: &Name<'a>, scope: &Scope<'m, 'a>) -> R<IntValue<'ctx>> {
        let at = self.addr_ty();
        if let Some(off) = self.shared_offsets.get(n.text) {
            return Ok(at.const_int(*off, false));
        }
        if let Some(ParamHome::Buffer(off)) = st.params.get(n.text) {
            return Ok(at.const_int(*off, false));
        }
        if let Some(g) = self.globals.get(n.text) {
            return Ok(self.b.build_ptr_to_int(g.as_pointer_value(), at, "addr")?);
        }
        if let Some(Entry::Var(v)) = scope.lookup(n.text) {
            if let Some(p) = st.locals.get(&(v as *const _)) {
                return Ok(self.b.build_ptr_to_int(*p, at, "addr")?);
            }
        }
        Err(unsupported(
            n.span,
            format!("cannot take the address of `{}` yet", n.text),
        ))
    }

    /// A pointer for `[addr]` in state space `space`.
    fn address<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        a: &ast::Address<'a>,
        space: Space,
        scope: &Scope<'m, 'a>,
    ) -> R<PointerValue<'ctx>> {
        let i8t = self.ctx.i8_type();
        let p = self.ptr(self.llvm_space(space));
        let off = self.i64().const_int(a.offset as u64, true);
        // Direct variable references keep their pointer so LLVM sees the object.
        if let Some(base) = &a.base {
            let direct = match scope.lookup(base.text) {
                Some(Entry::Var(v)) => st
                    .locals
                    .get(&(v as *const _))
                    .copied()
                    .or_else(|| self.globals.get(base.text).map(|g| g.as_pointer_value())),
                None => match st.params.get(base.text) {
                    Some(ParamHome::Slot(s)) => Some(*s),
                    _ => self.globals.get(base.text).map(|g| g.as_pointer_value()),
                },
                _ => None,
            }
            .or_else(|| match st.params.get(base.text) {
                Some(ParamHome::Slot(s)) => Some(*s),
                _ => None,
            });
            if let Some(ptr) = direct {
                return Ok(unsafe { self.b.build_in_bounds_gep(i8t, ptr, &[off], "p")? });
            }
        }
        let base_int = match &a.base {
            None => self.i64().const_zero(),
            Some(n) => match scope.lookup(n.text) {
                Some(Entry::Reg { ty, .. }) => {
                    let v = self
                        .reg_load(st, n, if ty.bits() == 32 { Type::U32 } else { Type::U64 }, scope)?
                        .into_int_value();
                    self.b.build_int_z_extend_or_bit_cast(v, self.i64(), "a")?
                }
                _ => {
                    let v = self.var_address(st, n, scope)?;
                    self.b.build_int_z_extend_or_bit_cast(v, self.i64(), "a")?
                }
            },
        };
        let addr = self.b.build_int_add(base_int, off, "addr")?;
        match (self.flavour, space) {
            (Flavour::Host, Space::Shared) | (Flavour::Host, Space::Param) => {
                let env_ty = self.env_ty();
                let env = st.env.expect("env");
                let f = if space == Space::Shared { 1 } else { 0 };
                if space == Space::Param && !st.is_kernel {
                    return Err(unsupported(
                        a.span,
                        "`ld.param` through a register address in a device function is not supported yet",
                    ));
                }
                let bp = self.b.build_struct_gep(env_ty, env, f, "win")?;
                let base = self.b.build_load(self.ptr(0), bp, "base")?.into_pointer_value();
                Ok(unsafe { self.b.build_in_bounds_gep(i8t, base, &[addr], "p")? })
            }
            // inttoptr, not `null + address`: LLVM gives a GEP on null no provenance, so accesses
            // through it are undefined even under "null-pointer-is-valid" (it turned stores into poison).
            _ => Ok(self.b.build_int_to_ptr(addr, p, "p")?),
        }
    }

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
                let v = self.read(st, &ops[1], t, scope)?;
                self.write(st, &ops[0], v, false, scope)
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

    /// sqrt, rcp, rsqrt and the `.approx` transcendental functions. Correctly rounded results stand in for
    /// `.approx` ones on the host (they are within the manual's bounds); NVPTX gets the approx intrinsics.
    fn float_unary<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let name = d.spec.name;
        let t = d.ty().expect("typed");
        self.rounding_supported(d, i.span)?;
        let a = self.read(st, &i.operands[1], t, scope)?;
        let a = self.ftz(d, a)?;
        let ty = self.value_ty(t);
        let one = ty.into_float_type().const_float(1.0);
        let nvvm = self.flavour == Flavour::Nvvm;
        let ftz = if d.has(".ftz") { "ftz." } else { "" };
        let v: BasicValueEnum = match name {
            "sqrt" => self.call_intrinsic("llvm.sqrt", &[ty], &[a])?,
            "rcp" => self.b.build_float_div(one, a.into_float_value(), "rcp")?.into(),
            "rsqrt" if nvvm => {
                let suffix = if t == Type::F64 { "d" } else { "f" };
                self.call_intrinsic(&format!("llvm.nvvm.rsqrt.approx.{ftz}{suffix}"), &[], &[a])?
            }
            "rsqrt" => {
                let s = self.call_intrinsic("llvm.sqrt", &[ty], &[a])?;
                self.b.build_float_div(one, s.into_float_value(), "rsqrt")?.into()
            }
            "ex2" if nvvm => self.call_intrinsic(
                &format!("llvm.nvvm.ex2.approx{}", if ftz.is_empty() { "" } else { ".ftz" }),
                &[ty],
                &[a],
            )?,
            "sin" | "cos" | "lg2" if nvvm => {
                self.call_intrinsic(&format!("llvm.nvvm.{name}.approx.{ftz}f"), &[], &[a])?
            }
            "ex2" => self.call_intrinsic("llvm.exp2", &[ty], &[a])?,
            "lg2" => self.call_intrinsic("llvm.log2", &[ty], &[a])?,
            "sin" => self.call_intrinsic("llvm.sin", &[ty], &[a])?,
            _ => self.call_intrinsic("llvm.cos", &[ty], &[a])?,
        };
        let v = self.ftz(d, v)?;
        self.write(st, &i.operands[0], v, false, scope)
    }

    /// `env->collective(env->sync, kind, a, b, c)`; the result is an i64.
    fn collective(&mut self, st: &Fn<'ctx, '_, '_>, kind: u32, args: [Option<IntValue<'ctx>>; 3]) -> R<IntValue<'ctx>> {
        let env_ty = self.env_ty();
        let env = st.env.expect("env");
        let sp = self.b.build_struct_gep(env_ty, env, 6, "sync")?;
        let sync = self.b.build_load(self.ptr(0), sp, "sync")?;
        let fp = self.b.build_struct_gep(env_ty, env, 7, "collective")?;
        let f = self.b.build_load(self.ptr(0), fp, "collective")?.into_pointer_value();
        let i32t = self.i32();
        let fty = self.i64().fn_type(
            &[self.ptr(0).into(), i32t.into(), i32t.into(), i32t.into(), i32t.into()],
            false,
        );
        let mut call_args: Vec<BasicMetadataValueEnum> = vec![sync.into(), i32t.const_int(kind as u64, false).into()];
        call_args.extend(
            args.iter()
                .map(|a| BasicMetadataValueEnum::from(a.unwrap_or(i32t.const_zero()))),
        );
        let r = self.b.build_indirect_call(fty, f, &call_args, "coll")?;
        match r.try_as_basic_value() {
            inkwell::values::ValueKind::Basic(v) => Ok(v.into_int_value()),
            _ => Err(unsupported(Span::default(), "internal error: collective result")),
        }
    }

    /// `shfl` and `vote`. On the host they go through the runtime, which exchanges values between the
    /// fibers of a warp; NVPTX gets the native instructions.
    fn warp_collective<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let ops = &i.operands;
        let i32t = self.i32();
        let mode = d.get(G::Dir).expect("mode");
        if self.flavour == Flavour::Nvvm {
            return self.nvvm_warp_collective(st, i, d, mode, scope);
        }
        if d.spec.name == "shfl" {
            let kind = crate::collective::SHFL
                + [".up", ".down", ".bfly", ".idx"]
                    .iter()
                    .position(|m| *m == mode)
                    .expect("shfl mode") as u32;
            let a = self.read(st, &ops[1], Type::B32, scope)?.into_int_value();
            let b = self.read(st, &ops[2], Type::B32, scope)?.into_int_value();
            let c = self.read(st, &ops[3], Type::B32, scope)?.into_int_value();
            let r = self.collective(st, kind, [Some(a), Some(b), Some(c)])?;
            let v = self.b.build_int_truncate(r, i32t, "shfl")?;
            let top = self
                .b
                .build_right_shift(r, self.i64().const_int(32, false), false, "p")?;
            let p = self.b.build_int_truncate(top, self.ctx.bool_type(), "p")?;
            return match &ops[0] {
                Operand::Pair(dv, dp, _) => {
                    self.write(st, dv, v.into(), false, scope)?;
                    self.write(st, dp, p.into(), false, scope)
                }
                dst => self.write(st, dst, v.into(), false, scope),
            };
        }
        let kind = crate::collective::VOTE
            + [".all", ".any", ".uni", ".ballot"]
                .iter()
                .position(|m| *m == mode)
                .expect("vote mode") as u32;
        let p = self.read(st, &ops[1], Type::Pred, scope)?.into_int_value();
        let p = self.b.build_int_z_extend(p, i32t, "p")?;
        let r = self.collective(st, kind, [Some(p), None, None])?;
        let v = self.b.build_int_truncate(r, i32t, "vote")?;
        if mode == ".ballot" {
            self.write(st, &ops[0], v.into(), false, scope)
        } else {
            let b = self
                .b
                .build_int_compare(IntPredicate::NE, v, i32t.const_zero(), "vote")?;
            self.write(st, &ops[0], b.into(), false, scope)
        }
    }

    /// The `.sync` NVVM intrinsics; the legacy forms without a member mask use the full warp.
    fn nvvm_warp_collective<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        mode: &str,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let ops = &i.operands;
        let i32t = self.i32();
        let m = &mode[1..];
        if d.spec.name == "shfl" {
            let mask = match ops.get(4) {
                Some(o) => self.read(st, o, Type::B32, scope)?,
                None => i32t.const_all_ones().into(),
            };
            let a = self.read(st, &ops[1], Type::B32, scope)?;
            let b = self.read(st, &ops[2], Type::B32, scope)?;
            let c = self.read(st, &ops[3], Type::B32, scope)?;
            let r = self
                .call_intrinsic(&format!("llvm.nvvm.shfl.sync.{m}.i32p"), &[], &[mask, a, b, c])?
                .into_struct_value();
            let v = self.b.build_extract_value(r, 0, "v")?;
            let p = self.b.build_extract_value(r, 1, "p")?;
            return match &ops[0] {
                Operand::Pair(dv, dp, _) => {
                    self.write(st, dv, v, false, scope)?;
                    self.write(st, dp, p, false, scope)
                }
                dst => self.write(st, dst, v, false, scope),
            };
        }
        let mask = match ops.get(2) {
            Some(o) => self.read(st, o, Type::B32, scope)?,
            None => i32t.const_all_ones().into(),
        };
        let p = self.read(st, &ops[1], Type::Pred, scope)?;
        let v = self.call_intrinsic(&format!("llvm.nvvm.vote.{m}.sync"), &[], &[mask, p])?;
        self.write(st, &ops[0], v, false, scope)
    }

    fn call_intrinsic_void(&self, name: &str, args: &[BasicValueEnum<'ctx>]) -> R<()> {
        let f = self.intrinsic(name, &[])?;
        let args: Vec<BasicMetadataValueEnum> = args.iter().map(|a| (*a).into()).collect();
        self.b.build_call(f, &args, "")?;
        Ok(())
    }

    /// `.ftz`: f32 subnormals become zero of the same sign (inputs and results, as the manual says).
    fn ftz(&self, d: &Decoded, v: BasicValueEnum<'ctx>) -> R<BasicValueEnum<'ctx>> {
        let BasicValueEnum::FloatValue(f) = v else { return Ok(v) };
        if !d.has(".ftz") || f.get_type() != self.ctx.f32_type() {
            return Ok(v);
        }
        let abs = self
            .call_intrinsic("llvm.fabs", &[f.get_type().into()], &[v])?
            .into_float_value();
        let tiny = self.b.build_float_compare(
            FloatPredicate::OLT,
            abs,
            f.get_type().const_float(f32::MIN_POSITIVE as f64),
            "tiny",
        )?;
        let zero = self.call_intrinsic(
            "llvm.copysign",
            &[f.get_type().into()],
            &[f.get_type().const_zero().into(), v],
        )?;
        Ok(self.b.build_select(tiny, zero, v, "ftz")?)
    }

    fn rounding_supported(&self, d: &Decoded, span: Span) -> R<()> {
        match d.get(G::Round) {
            None | Some(".rn") => Ok(()),
            Some(r) => Err(unsupported(
                span,
                format!("float rounding mode `{r}` is not supported yet (only `.rn`)"),
            )),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn binary(
        &self,
        name: &str,
        d: &Decoded,
        t: Type,
        mode: Option<&str>,
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
        span: Span,
    ) -> R<BasicValueEnum<'ctx>> {
        if t.is_float() {
            self.rounding_supported(d, span)?;
            if d.has(".sat") {
                return Err(unsupported(span, "`.sat` on floats is not supported yet"));
            }
            let (a, b) = (self.ftz(d, a)?, self.ftz(d, b)?);
            let (x, y) = (a.into_float_value(), b.into_float_value());
            let r: BasicValueEnum = match name {
                "add" => self.b.build_float_add(x, y, "add")?.into(),
                "sub" => self.b.build_float_sub(x, y, "sub")?.into(),
                "mul" => self.b.build_float_mul(x, y, "mul")?.into(),
                "div" => self.b.build_float_div(x, y, "div")?.into(),
                "min" => self.call_intrinsic("llvm.minnum", &[x.get_type().into()], &[a, b])?,
                "max" => self.call_intrinsic("llvm.maxnum", &[x.get_type().into()], &[a, b])?,
                _ => return Err(unsupported(span, format!("`{name}` of a float type is not supported"))),
            };
            return self.ftz(d, r);
        }
        let (x, y) = (a.into_int_value(), b.into_int_value());
        let signed = t.is_signed();
        let bits = t.bits();
        if d.has(".cc") || (d.has(".sat") && !(bits == 32 && signed && matches!(name, "add" | "sub"))) {
            return Err(unsupported(
                span,
                format!("`{name}` with these modifiers is not supported yet"),
            ));
        }
        Ok(match name {
            "add" if d.has(".sat") => self.call_intrinsic("llvm.sadd.sat", &[x.get_type().into()], &[a, b])?,
            "sub" if d.has(".sat") => self.call_intrinsic("llvm.ssub.sat", &[x.get_type().into()], &[a, b])?,
            "add" => self.b.build_int_add(x, y, "add")?.into(),
            "sub" => self.b.build_int_sub(x, y, "sub")?.into(),
            "mul" => match mode {
                None | Some(".lo") => self.b.build_int_mul(x, y, "mul")?.into(),
                Some(m) => {
                    let wt = self.int(bits * 2);
                    let (xw, yw) = if signed {
                        (
                            self.b.build_int_s_extend(x, wt, "x")?,
                            self.b.build_int_s_extend(y, wt, "y")?,
                        )
                    } else {
                        (
                            self.b.build_int_z_extend(x, wt, "x")?,
                            self.b.build_int_z_extend(y, wt, "y")?,
                        )
                    };
                    let p = self.b.build_int_mul(xw, yw, "wide")?;
                    if m == ".wide" {
                        p.into()
                    } else {
                        let hi = self
                            .b
                            .build_right_shift(p, wt.const_int(bits as u64, false), false, "hi")?;
                        self.b.build_int_truncate(hi, self.int(bits), "hi")?.into()
                    }
                }
            },
            "div" | "rem" => {
                // x86 traps on division by zero and on MIN / -1; PTX does not. Divide by 1 instead and
                // patch the result: x / 0 is all ones (as the GPU gives for unsigned), x % 0 is x.
                let it = x.get_type();
                let zero = self.b.build_int_compare(IntPredicate::EQ, y, it.const_zero(), "z")?;
                let mut bad = zero;
                if signed {
                    let min = it.const_int(1u64 << (bits - 1), false);
                    let m1 = self.b.build_int_compare(IntPredicate::EQ, x, min, "min")?;
                    let n1 = self
                        .b
                        .build_int_compare(IntPredicate::EQ, y, it.const_all_ones(), "n1")?;
                    let ovf = self.b.build_and(m1, n1, "ovf")?;
                    bad = self.b.build_or(zero, ovf, "bad")?;
                }
                let safe = self
                    .b
                    .build_select(bad, it.const_int(1, false), y, "safe")?
                    .into_int_value();
                let q = match (name, signed) {
                    ("div", true) => self.b.build_int_signed_div(x, safe, "q")?,
                    ("div", false) => self.b.build_int_unsigned_div(x, safe, "q")?,
                    (_, true) => self.b.build_int_signed_rem(x, safe, "r")?,
                    (_, false) => self.b.build_int_unsigned_rem(x, safe, "r")?,
                };
                // MIN / -1 wraps to MIN (what `x / 1 * -1` gives) and MIN % -1 is 0.
                let special = if name == "div" {
                    let ovf_val = self.b.build_int_neg(x, "wrap")?;
                    self.b
                        .build_select(zero, it.const_all_ones(), ovf_val, "sp")?
                        .into_int_value()
                } else {
                    self.b.build_select(zero, x, it.const_zero(), "sp")?.into_int_value()
                };
                self.b.build_select(bad, special, q, name)?
            }
            "min" | "max" => {
                let f = match (name, signed) {
                    ("min", true) => "llvm.smin",
                    ("min", false) => "llvm.umin",
                    ("max", true) => "llvm.smax",
                    _ => "llvm.umax",
                };
                self.call_intrinsic(f, &[x.get_type().into()], &[a, b])?
            }
            "and" => self.b.build_and(x, y, "and")?.into(),
            "or" => self.b.build_or(x, y, "or")?.into(),
            "xor" => self.b.build_xor(x, y, "xor")?.into(),
            "shl" | "shr" => {
                // Shift amounts past the width saturate in PTX (LLVM would make them poison).
                let it = x.get_type();
                let amt = self.b.build_int_z_extend_or_bit_cast(y, self.i32(), "amt")?;
                let amt = if bits < 32 { amt } else { amt };
                let maxs = self.i32().const_int(bits as u64 - 1, false);
                let over = self.b.build_int_compare(IntPredicate::UGT, amt, maxs, "over")?;
                let clamped = self.b.build_select(over, maxs, amt, "c")?.into_int_value();
                let sh = self.b.build_int_cast_sign_flag(clamped, it, false, "s")?;
                if name == "shl" {
                    let v = self.b.build_left_shift(x, sh, "shl")?;
                    self.b.build_select(over, it.const_zero(), v, "shl")?
                } else if signed {
                    self.b.build_right_shift(x, sh, true, "shr")?.into()
                } else {
                    let v = self.b.build_right_shift(x, sh, false, "shr")?;
                    self.b.build_select(over, it.const_zero(), v, "shr")?
                }
            }
            _ => return Err(unsupported(span, format!("`{name}` is not supported yet"))),
        })
    }

    fn setp<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        // setp.cmp.type; set.cmp.dtype.stype compares in its second (source) type.
        let t = d.types().last().expect("setp has a type");
        let ops = &i.operands;
        let a = self.read(st, &ops[1], t, scope)?;
        let a = self.ftz(d, a)?;
        let b = self.read(st, &ops[2], t, scope)?;
        let b = self.ftz(d, b)?;
        let cmp = d.get(G::Cmp).expect("setp has a comparison");
        let r = if t.is_float() {
            use FloatPredicate::*;
            let p = match cmp {
                ".eq" => OEQ,
                ".ne" => ONE,
                ".lt" => OLT,
                ".le" => OLE,
                ".gt" => OGT,
                ".ge" => OGE,
                ".equ" => UEQ,
                ".neu" => UNE,
                ".ltu" => ULT,
                ".leu" => ULE,
                ".gtu" => UGT,
                ".geu" => UGE,
                ".num" => ORD,
                ".nan" => UNO,
                other => return Err(unsupported(i.span, format!("`{other}` does not apply to floats"))),
            };
            self.b
                .build_float_compare(p, a.into_float_value(), b.into_float_value(), "cmp")?
        } else {
            use IntPredicate::*;
            let s = t.is_signed();
            let p = match cmp {
                ".eq" => EQ,
                ".ne" => NE,
                ".lt" if s => SLT,
                ".le" if s => SLE,
                ".gt" if s => SGT,
                ".ge" if s => SGE,
                ".lt" | ".lo" => ULT,
                ".le" | ".ls" => ULE,
                ".gt" | ".hi" => UGT,
                ".ge" | ".hs" => UGE,
                other => return Err(unsupported(i.span, format!("`{other}` does not apply to integers"))),
            };
            self.b
                .build_int_compare(p, a.into_int_value(), b.into_int_value(), "cmp")?
        };
        let (p, q) = match (d.get(G::BoolOp), ops.get(3)) {
            (Some(op), Some(c)) => {
                let c = self.read(st, c, Type::Pred, scope)?.into_int_value();
                let nr = self.b.build_not(r, "nr")?;
                let comb = |x: IntValue<'ctx>| -> R<IntValue<'ctx>> {
                    Ok(match op {
                        ".and" => self.b.build_and(x, c, "and")?,
                        ".or" => self.b.build_or(x, c, "or")?,
                        _ => self.b.build_xor(x, c, "xor")?,
                    })
                };
                (comb(r)?, comb(nr)?)
            }
            (None, None) => (r, self.b.build_not(r, "nr")?),
            _ => return Err(unsupported(i.span, "a boolean operation needs a predicate operand `c`")),
        };
        if d.spec.name == "set" {
            // All ones for integer destinations, 1.0f for f32; 0 otherwise.
            let dt = d.ty().expect("set has a destination type");
            let yes = if dt == Type::F32 {
                1f32.to_bits() as u64
            } else {
                u32::MAX as u64
            };
            let v = self
                .b
                .build_select(p, self.i32().const_int(yes, false), self.i32().const_zero(), "set")?;
            return self.write(st, &ops[0], v, false, scope);
        }
        match &ops[0] {
            Operand::Pair(dp, dq, _) => {
                self.write(st, dp, p.into(), false, scope)?;
                self.write(st, dq, q.into(), false, scope)
            }
            dst => self.write(st, dst, p.into(), false, scope),
        }
    }

    fn cvt<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let mut ts = d.types();
        let (dt, s) = (ts.next().expect("cvt dtype"), ts.next().expect("cvt atype"));
        let small = |t: Type| matches!(t, Type::F16 | Type::Bf16 | Type::F16x2 | Type::Bf16x2 | Type::Tf32);
        if small(dt) || small(s) || i.operands.len() != 2 {
            return self.cvt_half(st, i, d, dt, s, scope);
        }
        let a = self.read(st, &i.operands[1], s, scope)?;
        let a = self.ftz(d, a)?;
        let rnd = d.get(G::Round);
        if d.has(".sat") && dt.is_float() {
            return Err(unsupported(i.span, "`cvt.sat` to a float type is not supported yet"));
        }
        let v: BasicValueEnum = match (dt.is_float(), s.is_float()) {
            (false, false) => {
                let x = a.into_int_value();
                if d.has(".sat") && (dt.bits() < s.bits() || dt.is_signed() != s.is_signed()) {
                    return Err(unsupported(i.span, "saturating integer `cvt` is not supported yet"));
                }
                self.b
                    .build_int_cast_sign_flag(x, self.int(dt.bits()), s.is_signed(), "cvt")?
                    .into()
            }
            (true, false) => {
                if !matches!(rnd, None | Some(".rn")) {
                    return Err(unsupported(
                        i.span,
                        "int-to-float rounding other than `.rn` is not supported yet",
                    ));
                }
                let ft = self.value_ty(dt).into_float_type();
                if s.is_signed() {
                    self.b.build_signed_int_to_float(a.into_int_value(), ft, "cvt")?.into()
                } else {
                    self.b
                        .build_unsigned_int_to_float(a.into_int_value(), ft, "cvt")?
                        .into()
                }
            }
            (false, true) => {
                // PTX float-to-int conversions saturate and map NaN to 0, exactly like fptosi.sat.
                let r = match rnd {
                    Some(".rni") => Some("llvm.roundeven"),
                    Some(".rmi") => Some("llvm.floor"),
                    Some(".rpi") => Some("llvm.ceil"),
                    Some(".rzi") | None => None,
                    Some(other) => {
                        return Err(unsupported(
                            i.span,
                            format!("`{other}` is not valid for float-to-int cvt"),
                        ))
                    }
                };
                let x = match r {
                    Some(f) => self.call_intrinsic(f, &[a.get_type()], &[a])?,
                    None => a,
                };
                let f = if dt.is_signed() {
                    "llvm.fptosi.sat"
                } else {
                    "llvm.fptoui.sat"
                };
                self.call_intrinsic(f, &[self.int(dt.bits()).into(), x.get_type()], &[x])?
            }
            (true, true) => {
                let ft = self.value_ty(dt).into_float_type();
                let x = a.into_float_value();
                let x: BasicValueEnum = match dt.bits().cmp(&s.bits()) {
                    std::cmp::Ordering::Greater => self.b.build_float_ext(x, ft, "ext")?.into(),
                    std::cmp::Ordering::Less => {
                        if !matches!(rnd, None | Some(".rn")) {
                            return Err(unsupported(
                                i.span,
                                "narrowing float rounding other than `.rn` is not supported yet",
                            ));
                        }
                        self.b.build_float_trunc(x, ft, "trunc")?.into()
                    }
                    std::cmp::Ordering::Equal => x.into(),
                };
                match rnd {
                    Some(".rni") => self.call_intrinsic("llvm.roundeven", &[ft.into()], &[x])?,
                    Some(".rmi") => self.call_intrinsic("llvm.floor", &[ft.into()], &[x])?,
                    Some(".rpi") => self.call_intrinsic("llvm.ceil", &[ft.into()], &[x])?,
                    Some(".rzi") => self.call_intrinsic("llvm.trunc", &[ft.into()], &[x])?,
                    _ => x,
                }
            }
        };
        let v = self.ftz(d, v)?;
        self.write(st, &i.operands[0], v, dt.is_signed(), scope)
    }

    /// Conversions between f32 and the 16-bit float types. f16 uses LLVM's `half` (round to nearest
    /// even); bf16 is done on the bits, so neither flavour depends on a runtime routine or on sm_80.
    fn cvt_half<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        dt: Type,
        s: Type,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let (i16t, i32t, f32t) = (self.ctx.i16_type(), self.i32(), self.ctx.f32_type());
        let narrowing = s == Type::F32;
        if i.operands.len() != 2
            || !(narrowing && matches!(dt, Type::F16 | Type::Bf16)
                || dt == Type::F32 && matches!(s, Type::F16 | Type::Bf16))
            || (narrowing && d.get(G::Round) != Some(".rn"))
            || d.has(".sat")
            || d.has(".relu")
        {
            return Err(unsupported(
                i.span,
                format!(
                    "`cvt{}{}` with these modifiers is not supported yet",
                    dt.name(),
                    s.name()
                ),
            ));
        }
        let a = self.read(st, &i.operands[1], s, scope)?;
        let a = self.ftz(d, a)?;
        let v: BasicValueEnum = match (dt, s) {
            (Type::F32, Type::F16) => {
                let h = self.b.build_bit_cast(a, self.ctx.f16_type(), "h")?.into_float_value();
                self.b.build_float_ext(h, f32t, "f")?.into()
            }
            (Type::F16, _) => {
                let h = self
                    .b
                    .build_float_trunc(a.into_float_value(), self.ctx.f16_type(), "h")?;
                self.b.build_bit_cast(h, i16t, "h")?
            }
            (Type::F32, _) => {
                let w = self.b.build_int_z_extend(a.into_int_value(), i32t, "w")?;
                let w = self.b.build_left_shift(w, i32t.const_int(16, false), "w")?;
                self.b.build_bit_cast(w, f32t, "f")?
            }
            _ => {
                // Round to nearest even on the upper half; NaN stays a quiet NaN of the same sign.
                let bits = self.b.build_bit_cast(a, i32t, "bits")?.into_int_value();
                let odd = self.b.build_and(
                    self.b.build_right_shift(bits, i32t.const_int(16, false), false, "u")?,
                    i32t.const_int(1, false),
                    "odd",
                )?;
                let bias = self.b.build_int_add(odd, i32t.const_int(0x7fff, false), "bias")?;
                let rounded = self.b.build_right_shift(
                    self.b.build_int_add(bits, bias, "r")?,
                    i32t.const_int(16, false),
                    false,
                    "r",
                )?;
                let nan = self.b.build_float_compare(
                    FloatPredicate::UNO,
                    a.into_float_value(),
                    a.into_float_value(),
                    "nan",
                )?;
                let quiet = self.b.build_or(
                    self.b.build_right_shift(bits, i32t.const_int(16, false), false, "q")?,
                    i32t.const_int(0x40, false),
                    "q",
                )?;
                let r = self.b.build_select(nan, quiet, rounded, "bf16")?.into_int_value();
                self.b.build_int_truncate(r, i16t, "bf16")?.into()
            }
        };
        let v = self.ftz(d, v)?;
        self.write(st, &i.operands[0], v, false, scope)
    }

    fn memory<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let t = d.ty().expect("ld/st type");
        let space = d.get(G::Space).and_then(Space::from_dot).unwrap_or(Space::Generic);
        if t == Type::B128 {
            return Err(unsupported(i.span, "128-bit loads and stores are not supported yet"));
        }
        let is_ld = d.spec.name == "ld";
        let (data, addr) = if is_ld {
            (&i.operands[0], &i.operands[1])
        } else {
            (&i.operands[1], &i.operands[0])
        };
        let Operand::Addr(a) = addr else {
            return Err(unsupported(addr.span(), "expected an address"));
        };
        let base = self.address(st, a, space, scope)?;
        let elems: Vec<&Operand<'a>> = match data {
            Operand::Vector(v, _) => v.iter().collect(),
            other => vec![other],
        };
        let mem_ty = self.value_ty(t);
        let align = t.bytes() * elems.len() as u32;
        for (k, e) in elems.into_iter().enumerate() {
            let p = if k == 0 {
                base
            } else {
                unsafe {
                    self.b.build_in_bounds_gep(
                        self.ctx.i8_type(),
                        base,
                        &[self.i64().const_int((k as u32 * t.bytes()) as u64, false)],
                        "e",
                    )?
                }
            };
            let a = if k == 0 { align } else { t.bytes() };
            if is_ld {
                let v = self.b.build_load(mem_ty, p, "ld")?;
                if let Some(inst) = v.as_instruction_value() {
                    let _ = inst.set_alignment(a);
                }
                self.write(st, e, v, t.is_signed(), scope)?;
            } else {
                let v = self.read(st, e, t, scope)?;
                let s = self.b.build_store(p, v)?;
                let _ = s.set_alignment(a);
            }
        }
        Ok(())
    }

    /// Extended-precision arithmetic through the carry flag: `add.cc`, `addc`, `sub.cc`, `subc`,
    /// `mad.cc`, `madc`. Sums are formed at twice the width so the carry (or borrow) is the bit above.
    fn carry_arith<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let name = d.spec.name;
        let t = d.ty().expect("typed");
        let ops = &i.operands;
        let bits = t.bits();
        let (it, wt) = (self.int(bits), self.int(bits * 2));
        let flag = match st.carry {
            Some(p) => p,
            None => {
                let p = st.alloca_at.build_alloca(self.ctx.bool_type(), "cc.cf")?;
                st.alloca_at.build_store(p, self.ctx.bool_type().const_zero())?;
                st.carry = Some(p);
                p
            }
        };
        let a = self.read(st, &ops[1], t, scope)?.into_int_value();
        let b = self.read(st, &ops[2], t, scope)?.into_int_value();
        let carry_in = if matches!(name, "addc" | "subc" | "madc") {
            let c = self.b.build_load(self.ctx.bool_type(), flag, "cf")?.into_int_value();
            self.b.build_int_z_extend(c, wt, "cin")?
        } else {
            wt.const_zero()
        };
        let (x, y) = if matches!(name, "mad" | "madc") {
            // The product's low or high half, then the addend.
            let mode = d.get(G::Mode).unwrap_or(".lo");
            if mode == ".wide" {
                return Err(unsupported(i.span, "`mad.wide.cc` is not valid PTX"));
            }
            let ext = |v: IntValue<'ctx>| {
                if t.is_signed() {
                    self.b.build_int_s_extend(v, wt, "e")
                } else {
                    self.b.build_int_z_extend(v, wt, "e")
                }
            };
            let full = self.b.build_int_mul(ext(a)?, ext(b)?, "prod")?;
            let half = if mode == ".hi" {
                self.b
                    .build_right_shift(full, wt.const_int(bits as u64, false), false, "hi")?
            } else {
                full
            };
            let p = self.b.build_int_truncate(half, it, "p")?;
            let c = self.read(st, &ops[3], t, scope)?.into_int_value();
            (p, c)
        } else {
            (a, b)
        };
        let (xw, yw) = (
            self.b.build_int_z_extend(x, wt, "x")?,
            self.b.build_int_z_extend(y, wt, "y")?,
        );
        let wide = if matches!(name, "sub" | "subc") {
            let s = self.b.build_int_sub(xw, yw, "s")?;
            self.b.build_int_sub(s, carry_in, "s")?
        } else {
            let s = self.b.build_int_add(xw, yw, "s")?;
            self.b.build_int_add(s, carry_in, "s")?
        };
        let result = self.b.build_int_truncate(wide, it, "r")?;
        if d.has(".cc") {
            let top = self
                .b
                .build_right_shift(wide, wt.const_int(bits as u64, false), false, "top")?;
            let out = self.b.build_int_truncate(top, self.ctx.bool_type(), "cout")?;
            self.b.build_store(flag, out)?;
        }
        self.write(st, &ops[0], result.into(), t.is_signed(), scope)
    }

    /// shf, lop3, bfe and bfi, with the manual's clamping of positions and lengths.
    fn bit_field<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let t = d.ty().expect("typed");
        let ops = &i.operands;
        let it = self.int(t.bits());
        let w = t.bits() as u64;
        let int = |v: BasicValueEnum<'ctx>| v.into_int_value();
        let a = int(self.read(st, &ops[1], t, scope)?);
        let u32t = self.i32();
        let v: IntValue = match d.spec.name {
            "shf" => {
                let b = int(self.read(st, &ops[2], t, scope)?);
                let c = int(self.read(st, &ops[3], Type::U32, scope)?);
                let left = d.get(G::Dir) == Some(".l");
                let f = if left { "llvm.fshl" } else { "llvm.fshr" };
                // The intrinsics shift by c mod 32 (the .wrap mode); .clamp saturates at 32, where the
                // result is the other word whole.
                let shifted = int(self.call_intrinsic(f, &[it.into()], &[b.into(), a.into(), c.into()])?);
                if d.get(G::Mode2) == Some(".clamp") {
                    let full = self
                        .b
                        .build_int_compare(IntPredicate::UGE, c, u32t.const_int(32, false), "full")?;
                    self.b
                        .build_select(full, if left { a } else { b }, shifted, "shf")?
                        .into_int_value()
                } else {
                    shifted
                }
            }
            "lop3" => {
                let b = int(self.read(st, &ops[2], t, scope)?);
                let c = int(self.read(st, &ops[3], t, scope)?);
                let Operand::Imm(Imm::Int(lut), _) = &ops[4] else {
                    return Err(unsupported(ops[4].span(), "`lop3` needs an immediate truth table"));
                };
                // Bit k of the table is the result for a = k>>2 & 1, b = k>>1 & 1, c = k & 1.
                let mut acc = it.const_zero();
                for k in 0..8 {
                    if lut >> k & 1 == 0 {
                        continue;
                    }
                    let pick = |x: IntValue<'ctx>, bit: i32| -> R<IntValue<'ctx>> {
                        Ok(if k >> bit & 1 == 1 {
                            x
                        } else {
                            self.b.build_not(x, "n")?
                        })
                    };
                    let term = self.b.build_and(pick(a, 2)?, pick(b, 1)?, "t")?;
                    let term = self.b.build_and(term, pick(c, 0)?, "t")?;
                    acc = self.b.build_or(acc, term, "lop3")?;
                }
                acc
            }
            "bfe" => {
                let pos = int(self.read(st, &ops[2], Type::U32, scope)?);
                let len = int(self.read(st, &ops[3], Type::U32, scope)?);
                let m = u32t.const_int(0xff, false);
                let pos = self.b.build_and(pos, m, "pos")?;
                let len = self.b.build_and(len, m, "len")?;
                let signed = t.is_signed();
                let wv = u32t.const_int(w, false);
                let out = self.b.build_int_compare(IntPredicate::UGE, pos, wv, "out")?;
                let p = self.b.build_int_z_extend_or_bit_cast(
                    self.b
                        .build_select(out, u32t.const_int(w - 1, false), pos, "p")?
                        .into_int_value(),
                    it,
                    "p",
                )?;
                let x = self.b.build_right_shift(a, p, signed, "x")?;
                // Past the top, unsigned fields read zeros (signed ones keep the replicated sign bit).
                let x = if signed {
                    x
                } else {
                    self.b.build_select(out, it.const_zero(), x, "x")?.into_int_value()
                };
                let short = self.b.build_int_compare(IntPredicate::ULT, len, wv, "short")?;
                let keep = self
                    .b
                    .build_int_z_extend_or_bit_cast(self.b.build_int_sub(wv, len, "k")?, it, "k")?;
                let keep = self.b.build_select(short, keep, it.const_zero(), "k")?.into_int_value();
                let up = self.b.build_left_shift(x, keep, "up")?;
                let field = self.b.build_right_shift(up, keep, signed, "field")?;
                let zero = self
                    .b
                    .build_int_compare(IntPredicate::EQ, len, u32t.const_zero(), "zero")?;
                self.b
                    .build_select(zero, it.const_zero(), field, "bfe")?
                    .into_int_value()
            }
            _ => {
                let b = int(self.read(st, &ops[2], t, scope)?);
                let pos = int(self.read(st, &ops[3], Type::U32, scope)?);
                let len = int(self.read(st, &ops[4], Type::U32, scope)?);
                let m = u32t.const_int(0xff, false);
                let pos = self.b.build_and(pos, m, "pos")?;
                let len = self.b.build_and(len, m, "len")?;
                let wv = u32t.const_int(w, false);
                let nothing = self.b.build_or(
                    self.b
                        .build_int_compare(IntPredicate::EQ, len, u32t.const_zero(), "z")?,
                    self.b.build_int_compare(IntPredicate::UGE, pos, wv, "o")?,
                    "nothing",
                )?;
                let short = self.b.build_int_compare(IntPredicate::ULT, len, wv, "short")?;
                let l = self.b.build_int_z_extend_or_bit_cast(
                    self.b
                        .build_select(short, len, u32t.const_zero(), "l")?
                        .into_int_value(),
                    it,
                    "l",
                )?;
                let ones = self.b.build_int_sub(
                    self.b.build_left_shift(it.const_int(1, false), l, "b")?,
                    it.const_int(1, false),
                    "ones",
                )?;
                let ones = self
                    .b
                    .build_select(short, ones, it.const_all_ones(), "ones")?
                    .into_int_value();
                let p = self.b.build_int_z_extend_or_bit_cast(
                    self.b
                        .build_select(nothing, u32t.const_zero(), pos, "p")?
                        .into_int_value(),
                    it,
                    "p",
                )?;
                let mask = self.b.build_left_shift(ones, p, "mask")?;
                let ins = self.b.build_and(self.b.build_left_shift(a, p, "ins")?, mask, "ins")?;
                let kept = self.b.build_and(b, self.b.build_not(mask, "nm")?, "kept")?;
                let f = self.b.build_or(kept, ins, "bfi")?;
                self.b.build_select(nothing, b, f, "bfi")?.into_int_value()
            }
        };
        self.write(st, &ops[0], v.into(), t.is_signed(), scope)
    }

    /// `atom`/`red` as LLVM atomics: they are real host atomics, since CTAs run in parallel.
    fn atomic<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        use inkwell::llvm_sys::core::{LLVMBuildAtomicCmpXchg, LLVMBuildAtomicRMW, LLVMBuildExtractValue};
        use inkwell::llvm_sys::{LLVMAtomicOrdering as O, LLVMAtomicRMWBinOp as B};
        use inkwell::values::AsValueRef;
        let t = d.ty().expect("typed");
        let is_atom = d.spec.name == "atom";
        let ops = &i.operands;
        let space = d.get(G::Space).and_then(Space::from_dot).unwrap_or(Space::Generic);
        let Operand::Addr(a) = &ops[usize::from(is_atom)] else {
            return Err(unsupported(i.span, "expected an address"));
        };
        let ptr = self.address(st, a, space, scope)?;
        let b = self.read(st, &ops[usize::from(is_atom) + 1], t, scope)?;
        let ordering = match d.get(G::Sem) {
            None | Some(".relaxed") => O::LLVMAtomicOrderingMonotonic,
            _ => O::LLVMAtomicOrderingAcquireRelease,
        };
        let op = d.get(G::Op).expect("atom has an op");
        let (float, signed) = (t.is_float(), t.is_signed());
        let raw = unsafe {
            if op == ".cas" {
                let c = self.read(
                    st,
                    ops.get(3)
                        .ok_or_else(|| unsupported(i.span, "`atom.cas` needs a new value"))?,
                    t,
                    scope,
                )?;
                if float {
                    return Err(unsupported(i.span, "`atom.cas` on a float type is not valid"));
                }
                let pair = LLVMBuildAtomicCmpXchg(
                    self.b.as_mut_ptr(),
                    ptr.as_value_ref(),
                    b.as_value_ref(),
                    c.as_value_ref(),
                    ordering,
                    O::LLVMAtomicOrderingMonotonic,
                    0,
                );
                LLVMBuildExtractValue(self.b.as_mut_ptr(), pair, 0, c"old".as_ptr())
            } else {
                let bin = match (op, float, signed) {
                    (".exch", _, _) => B::LLVMAtomicRMWBinOpXchg,
                    (".add", true, _) => B::LLVMAtomicRMWBinOpFAdd,
                    (".add", false, _) => B::LLVMAtomicRMWBinOpAdd,
                    (".and", false, _) => B::LLVMAtomicRMWBinOpAnd,
                    (".or", false, _) => B::LLVMAtomicRMWBinOpOr,
                    (".xor", false, _) => B::LLVMAtomicRMWBinOpXor,
                    // inc/dec wrap at b exactly as PTX defines them.
                    (".inc", false, false) => B::LLVMAtomicRMWBinOpUIncWrap,
                    (".dec", false, false) => B::LLVMAtomicRMWBinOpUDecWrap,
                    (".min", false, true) => B::LLVMAtomicRMWBinOpMin,
                    (".max", false, true) => B::LLVMAtomicRMWBinOpMax,
                    (".min", false, false) => B::LLVMAtomicRMWBinOpUMin,
                    (".max", false, false) => B::LLVMAtomicRMWBinOpUMax,
                    _ => {
                        return Err(unsupported(
                            i.span,
                            format!("`{}{op}{}` is not supported yet", d.spec.name, t.name()),
                        ))
                    }
                };
                LLVMBuildAtomicRMW(
                    self.b.as_mut_ptr(),
                    bin,
                    ptr.as_value_ref(),
                    b.as_value_ref(),
                    ordering,
                    0,
                )
            }
        };
        if is_atom {
            let old = BasicValueEnum::try_from(unsafe { inkwell::values::AnyValueEnum::new(raw) })
                .map_err(|_| unsupported(i.span, "internal error: atomic result"))?;
            self.write(st, &ops[0], old, signed, scope)?;
        }
        Ok(())
    }

    fn call<'m, 'a>(&mut self, st: &mut Fn<'ctx, 'm, 'a>, i: &'m Instruction<'a>, scope: &Scope<'m, 'a>) -> R<()> {
        let (rets, callee, args): (&[Operand], &Operand, &[Operand]) = match i.operands.as_slice() {
            [Operand::List(r, _), f, Operand::List(a, _)] => (r, f, a),
            [Operand::List(r, _), f] => (r, f, &[]),
            [f, Operand::List(a, _)] => (&[], f, a),
            [f] => (&[], f, &[]),
            _ => return Err(unsupported(i.span, "this form of `call` is not supported yet")),
        };
        let Operand::Sym { name: fname, .. } = callee else {
            return Err(unsupported(callee.span(), "indirect calls are not supported yet"));
        };
        let Some(fv) = self.funcs.get(fname.text).copied() else {
            return Err(unsupported(fname.span, "unknown function"));
        };
        let Some(Entry::Func(fdecl)) = scope.lookup(fname.text) else {
            return Err(unsupported(fname.span, "unknown function"));
        };
        let mut vals: Vec<BasicMetadataValueEnum> = vec![];
        if let Some(env) = st.env {
            vals.push(env.into());
        }
        if args.len() != fdecl.params.len() || rets.len() != fdecl.returns.len() {
            return Err(unsupported(
                i.span,
                format!(
                    "`{}` takes {} arguments and {} results",
                    fname.text,
                    fdecl.params.len(),
                    fdecl.returns.len()
                ),
            ));
        }
        for (arg, p) in args.iter().zip(&fdecl.params) {
            let ty = self.param_ty(p)?;
            let v = match arg {
                Operand::Sym { name, .. } => match scope.lookup(name.text) {
                    Some(Entry::Var(v)) if v.space == Space::Param => {
                        let slot = st.locals[&(v as *const _)];
                        self.b.build_load(ty, slot, "arg")?
                    }
                    Some(Entry::Reg { .. }) => {
                        let t = if p.dims.is_empty() {
                            p.ty
                        } else {
                            return Err(unsupported(arg.span(), "array argument from a register"));
                        };
                        let v = self.reg_load(st, name, t, scope)?;
                        self.to_bits(v, ty.into_int_type().get_bit_width(), false)?.into()
                    }
                    _ => return Err(unsupported(arg.span(), "unsupported call argument")),
                },
                Operand::Imm(imm, s) if p.dims.is_empty() => {
                    let v = self.imm(*imm, p.ty, *s)?;
                    self.to_bits(v, ty.into_int_type().get_bit_width(), false)?.into()
                }
                other => return Err(unsupported(other.span(), "unsupported call argument")),
            };
            vals.push(v.into());
        }
        let r = self.b.build_call(fv, &vals, "call")?;
        if let Some(Operand::Sym { name, .. }) = rets.first() {
            let v = r.try_as_basic_value().basic().expect("call returns a value");
            match scope.lookup(name.text) {
                Some(Entry::Var(var)) if var.space == Space::Param => {
                    self.b.build_store(st.locals[&(var as *const _)], v)?;
                }
                Some(Entry::Reg { .. }) => {
                    let ret_ty = fdecl.returns[0].ty;
                    let v = self.from_bits(v.into_int_value(), ret_ty, false)?;
                    self.write(st, &rets[0], v, false, scope)?;
                }
                _ => return Err(unsupported(name.span, "unsupported call result")),
            }
        }
        Ok(())
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
    fn int(e: &Expr<'_>) -> Option<i64> {
        match e {
            Expr::Imm(Imm::Int(i), _) => Some(*i),
            Expr::Neg(x, _) => int(x).map(i64::wrapping_neg),
            Expr::Add(a, b, _) => Some(int(a)?.wrapping_add(int(b)?)),
            Expr::Sub(a, b, _) => Some(int(a)?.wrapping_sub(int(b)?)),
            Expr::Mul(a, b, _) => Some(int(a)?.wrapping_mul(int(b)?)),
            _ => None,
        }
    }
    match (e, t) {
        (Expr::Imm(Imm::F32(b), _), Type::F32) => Some(*b as u64),
        (Expr::Imm(Imm::F64(b), _), Type::F64) => Some(*b),
        (Expr::Imm(Imm::F64(b), _), Type::F32) => Some((f64::from_bits(*b) as f32).to_bits() as u64),
        (Expr::Imm(Imm::F32(b), _), Type::F64) => Some((f32::from_bits(*b) as f64).to_bits()),
        (e, Type::F32) => int(e).map(|i| (i as f32).to_bits() as u64),
        (e, Type::F64) => int(e).map(|i| (i as f64).to_bits()),
        (e, t) if t.kind() != Kind::Float => int(e).map(|i| i as u64),
        _ => None,
    }
}
