//! Declarations: module variables (with their initial bytes) and function signatures.

use super::*;

impl<'ctx> Lowerer<'ctx> {
    pub(super) fn declare_module(&mut self, m: &ast::Module<'_>) -> R<()> {
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
        self.shared_used = self.shared_size;
        // Dynamic shared memory starts 16-aligned, or as its declarations' `.align` asks.
        let dynamic_align = dynamic.iter().map(|v| v.alignment()).max().unwrap_or(1).max(16);
        self.shared_size = align_up(self.shared_size, dynamic_align);
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
        // `.alias alias, aliasee;`: the alias's declaration stands for the aliasee's function.
        for item in &m.items {
            if let Item::Directive(ast::Directive::Alias { alias, aliasee, .. }) = item {
                if let Some(&fv) = self.funcs.get(aliasee.text) {
                    self.funcs.insert(alias.text.to_string(), fv);
                    self.aliases.insert(alias.text.to_string());
                }
            }
        }
        // Variables come after functions: their initializers may hold function addresses.
        for v in &vars {
            self.module_var(v)?;
        }
        self.fill_symbol_inits(m)?;
        Ok(())
    }

    pub(super) fn module_var(&mut self, v: &VarDecl<'_>) -> R<()> {
        // A texture or surface reference is 8 bytes holding the handle of the object the driver binds
        // to it (`cuTexRefSetArray` and kin; 0 until then), which is what the instructions and a
        // `mov` of its name read. Samplers (independent mode), fields initialised in the PTX and the
        // NVPTX flavour are not supported.
        let reference = matches!(v.ty, Type::Texref | Type::Surfref);
        if matches!(v.ty, Type::Texref | Type::Samplerref | Type::Surfref)
            && (!reference || v.init.is_some() || self.flavour != Flavour::Host)
        {
            return Err(unsupported(
                v.span,
                format!(
                    "this `{}` (a sampler, initialised fields, or for NVPTX) is not supported yet",
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
        if v.space == Space::Const && v.linkage != Some(ast::Linkage::Extern) {
            self.const_size += size;
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
    pub(super) fn byte_image(&self, size: u64, init: &[u8]) -> (BasicTypeEnum<'ctx>, BasicValueEnum<'ctx>) {
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
    pub(super) fn init_bytes(&self, v: &VarDecl<'_>) -> R<Vec<u8>> {
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

    pub(super) fn declare_function(&mut self, f: &Function<'_>) -> R<FunctionValue<'ctx>> {
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
    pub(super) fn func_type(
        &self,
        returns: &[VarDecl<'_>],
        params: &[VarDecl<'_>],
    ) -> R<inkwell::types::FunctionType<'ctx>> {
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

    pub(super) fn param_ty(&self, p: &VarDecl<'_>) -> R<BasicTypeEnum<'ctx>> {
        if p.dims.is_empty() && p.vector.is_none() {
            Ok(self.int(p.ty.bits().max(8)).into())
        } else if p.size_bytes() > 0 {
            Ok(self.ctx.i8_type().array_type(p.size_bytes() as u32).into())
        } else {
            Err(unsupported(p.span, "unsized parameter arrays are not supported"))
        }
    }
}
