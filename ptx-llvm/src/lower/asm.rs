//! The nvvm flavour's inline-PTX fallback. An instruction the native lowering does not cover (no NVVM
//! intrinsic, a modifier LLVM does not model) is emitted as an `asm` call that carries the instruction's
//! own text, so its semantics are exactly the source's. Registers travel as asm operands: `h`/`r`/`l`/`q`
//! by width; predicates, for which LLVM has no constraint, as 32-bit values turned into a scoped
//! predicate register by `setp` (inputs) or back by `selp` (outputs). Variables in address operands
//! travel as their address, so LLVM keeps the objects and their names.
//!
//! Lowering tries the native path first; when it cannot lower an instruction, what that attempt built
//! (instructions, blocks, declarations) is removed and the instruction goes through here, in the same
//! pass.

use super::*;
use inkwell::types::BasicMetadataTypeEnum;
use inkwell::values::InstructionValue;
use std::collections::HashMap as Map;
use std::sync::LazyLock;

/// `$0`, `$1`, …: inline-asm operand placeholders.
static PLACEHOLDERS: LazyLock<Vec<String>> = LazyLock::new(|| (0..256).map(|k| format!("${k}")).collect());

/// How the operands of one instruction enter and leave its asm statement.
#[derive(Default)]
struct Plan<'ctx> {
    /// (constraint, type, register slot, register bits, predicate) for each output, in order.
    outs: Vec<(String, BasicTypeEnum<'ctx>, PointerValue<'ctx>, u32, bool)>,
    ins: Vec<(String, BasicValueEnum<'ctx>)>,
    /// Text for each operand node (by address) that is replaced in the printed instruction.
    text: Map<*const (), String>,
    /// Declarations and `setp`s before the instruction, `selp`s after it.
    pre: String,
    post: String,
    /// Scoped temporary registers made so far (predicates and bytes).
    preds: usize,
}

/// Opcodes whose result depends on which threads execute them together.
fn sees_converged_threads(name: &str) -> bool {
    matches!(
        name,
        "activemask" | "vote" | "shfl" | "match" | "redux" | "elect" | "bar" | "barrier" | "wgmma" | "mma" | "wmma"
    )
}

/// Opcodes whose destination is also read (the accumulator of `wgmma.mma_async`).
fn reads_destination(name: &str) -> bool {
    name == "wgmma"
}

/// Where lowering stood before a native attempt at an instruction: the block being filled and its last
/// instruction, the function's last block and the module's last function.
struct Mark<'ctx> {
    block: BasicBlock<'ctx>,
    last: Option<InstructionValue<'ctx>>,
    last_block: Option<BasicBlock<'ctx>>,
    last_function: Option<FunctionValue<'ctx>>,
}

impl<'ctx> Mark<'ctx> {
    fn take(l: &Lowerer<'ctx>, st: &Fn<'ctx, '_, '_>) -> Self {
        let block = l.b.get_insert_block().expect("lowering inside a block");
        Mark {
            block,
            last: block.get_last_instruction(),
            last_block: st.func.get_last_basic_block(),
            last_function: l.module.get_last_function(),
        }
    }

    /// Removes what was built since the mark and puts the builder back where it was.
    fn roll_back(self, l: &mut Lowerer<'ctx>, st: &Fn<'ctx, '_, '_>) {
        // The blocks the attempt appended, and every instruction it built.
        let first_added = match self.last_block {
            Some(last) => last.get_next_basic_block(),
            None => st.func.get_first_basic_block(),
        };
        let added: Vec<BasicBlock<'ctx>> = std::iter::successors(first_added, |b| b.get_next_basic_block()).collect();
        let tail = match self.last {
            Some(last) => last.get_next_instruction(),
            None => self.block.get_first_instruction(),
        };
        let in_block = |first| std::iter::successors(first, |i: &InstructionValue<'ctx>| i.get_next_instruction());
        let built: Vec<InstructionValue<'ctx>> = in_block(tail)
            .chain(added.iter().flat_map(|b| in_block(b.get_first_instruction())))
            .collect();
        // They may use each other in any order: uses become poison first, then each goes.
        for &x in &built {
            let v = x.as_value_ref();
            // SAFETY: `v` is a live instruction; poison of its own type replaces its uses.
            unsafe {
                use inkwell::llvm_sys::core::*;
                let ty = LLVMTypeOf(v);
                if LLVMGetTypeKind(ty) != inkwell::llvm_sys::LLVMTypeKind::LLVMVoidTypeKind {
                    LLVMReplaceAllUsesWith(v, LLVMGetPoison(ty));
                }
            }
        }
        for x in built {
            x.erase_from_basic_block();
        }
        for x in added {
            // SAFETY: emptied above; the branches to it are gone.
            let _ = unsafe { x.delete() };
        }
        // Declarations the attempt added and nothing uses now.
        let mut f = match self.last_function {
            Some(last) => last.get_next_function(),
            None => l.module.get_first_function(),
        };
        while let Some(x) = f {
            f = x.get_next_function();
            if x.count_basic_blocks() == 0 && x.as_global_value().as_pointer_value().get_first_use().is_none() {
                // SAFETY: a declaration without uses.
                unsafe { x.delete() };
            }
        }
        l.b.position_at_end(self.block);
    }
}

impl<'ctx> Lowerer<'ctx> {
    /// Lowers natively, or through inline PTX where the native path cannot (nvvm flavour only).
    pub(super) fn inst_or_asm<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        if self.flavour != Flavour::Nvvm {
            return self.inst(st, i, d, scope);
        }
        // Forms the native lowering was not written for would be misread; they go out as inline PTX.
        if !self.native(d) {
            return self.inline_asm(st, i, d, scope);
        }
        let mark = Mark::take(self, st);
        match self.inst(st, i, d, scope) {
            Err(Fail::Diag(e)) if e.code == Code::P0401 => {
                mark.roll_back(self, st);
                self.inline_asm(st, i, d, scope)
            }
            other => other,
        }
    }

    fn inline_asm<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        self.asm_used.push(i.opcode.span.start);
        // Operands are keyed by address, so the plan is made on the copy that is printed.
        let mut bare = i.clone();
        bare.guard = None;
        let i = &bare;
        let mut plan = Plan::default();
        let first_out = isa::first_operand_is_destination(d.spec);
        let rw = reads_destination(d.spec.name);
        // Outputs are numbered first, as LLVM wants them.
        if let Some(op) = i.operands.first().filter(|_| first_out) {
            self.plan_operand(st, &mut plan, op, true, d, scope)?;
        }
        if rw {
            // The accumulator is read too: each output is tied to an input holding its current value.
            for k in 0..plan.outs.len() {
                let (_, ty, slot, bits, _) = plan.outs[k].clone();
                let v = self.b.build_load(self.int(bits), slot, "acc")?.into_int_value();
                let v = self.resize(v, ty.into_int_type().get_bit_width(), false)?;
                plan.ins.push((k.to_string(), v.into()));
            }
        }
        for op in i.operands.iter().skip(usize::from(first_out)) {
            self.plan_operand(st, &mut plan, op, false, d, scope)?;
        }
        let n = plan.outs.len() + plan.ins.len();
        if n > PLACEHOLDERS.len() {
            return Err(unsupported(
                i.span,
                format!("`{}` has too many register operands for inline assembly", i.opcode.text),
            ));
        }
        // Placeholders were written as `@k` for input k; now that the outputs are counted they get their
        // final numbers.
        let outs = plan.outs.len();
        let fix = |t: &str| -> String {
            let mut out = String::with_capacity(t.len());
            let mut chars = t.chars().peekable();
            while let Some(c) = chars.next() {
                if c == '@' && chars.peek().is_some_and(char::is_ascii_digit) {
                    let mut k = 0usize;
                    while let Some(dg) = chars.peek().and_then(|c| c.to_digit(10)) {
                        k = k * 10 + dg as usize;
                        chars.next();
                    }
                    out.push_str(&PLACEHOLDERS[outs + k]);
                } else {
                    out.push(c);
                }
            }
            out
        };
        let mut body = String::new();
        ptx_front::printer::instruction_with(&mut body, i, &mut |op| {
            plan.text.get(&(op as *const Operand<'_> as *const ())).map(|t| fix(t))
        });
        let mut text = if plan.pre.is_empty() && plan.post.is_empty() {
            body
        } else {
            format!("{{ {}{body} {}}}", fix(&plan.pre), fix(&plan.post))
        };
        if sees_converged_threads(d.spec.name) {
            // LLVM takes two asm calls with the same text and operands for one computation, and hoists
            // them out of an if/else or sinks them below it, which changes the threads they see
            // (`activemask` in both arms of a divergent branch, checked on an H100 by
            // tests/ptx-host/warp_partial.ptx). A site number makes each statement's text its own.
            text = format!("{text} // site {}", self.asm_used.len());
        }
        let mut constraints: Vec<String> = plan.outs.iter().map(|o| o.0.clone()).collect();
        constraints.extend(plan.ins.iter().map(|x| x.0.clone()));
        constraints.push("~{memory}".into());
        let arg_tys: Vec<BasicMetadataTypeEnum> = plan.ins.iter().map(|x| x.1.get_type().into()).collect();
        let fn_ty = match plan.outs.as_slice() {
            [] => self.ctx.void_type().fn_type(&arg_tys, false),
            [o] => o.1.fn_type(&arg_tys, false),
            many => {
                let tys: Vec<BasicTypeEnum> = many.iter().map(|o| o.1).collect();
                self.ctx.struct_type(&tys, false).fn_type(&arg_tys, false)
            }
        };
        // Side effects and a memory clobber: the text may load, store, synchronise or read clocks.
        let asm = self
            .ctx
            .create_inline_asm(fn_ty, text, constraints.join(","), true, false, None, false);
        let args: Vec<BasicMetadataValueEnum> = plan.ins.iter().map(|x| x.1.into()).collect();
        let call = self.b.build_indirect_call(fn_ty, asm, &args, "asm")?;
        let result = call.try_as_basic_value().basic();
        for (k, (_, _, slot, bits, pred)) in plan.outs.iter().enumerate() {
            let v = match (plan.outs.len(), result) {
                (1, Some(v)) => v,
                (_, Some(BasicValueEnum::StructValue(s))) => self.b.build_extract_value(s, k as u32, "out")?,
                _ => {
                    return Err(unsupported(
                        i.span,
                        "internal error: inline assembly without its results",
                    ))
                }
            };
            let v = v.into_int_value();
            let stored = if *pred {
                self.b
                    .build_int_compare(IntPredicate::NE, v, v.get_type().const_zero(), "p")?
            } else {
                self.resize(v, *bits, false)?
            };
            self.b.build_store(*slot, stored)?;
        }
        Ok(())
    }

    /// Registers, variables and addresses of one operand (recursively) become asm operands.
    fn plan_operand<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        plan: &mut Plan<'ctx>,
        op: &Operand<'a>,
        out: bool,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let key = op as *const Operand<'_> as *const ();
        match op {
            // A scalar register with a part selector (`%r1.b2` in video instructions) keeps the selector.
            Operand::Sym {
                name,
                component: Some(c),
            } if matches!(scope.lookup(name.text), Some(Entry::Reg { vector: None, .. })) => {
                let t = self.register_operand(st, plan, name, out, scope)?;
                plan.text.insert(key, format!("{t}.{}", c.text.trim_start_matches('.')));
                Ok(())
            }
            Operand::Sym { name, component: None } => match scope.lookup(name.text) {
                Some(Entry::Reg { .. }) => {
                    let t = self.register_operand(st, plan, name, out, scope)?;
                    plan.text.insert(key, t);
                    Ok(())
                }
                // Special registers and `WARP_SZ` are written as they are.
                _ if ptx_front::scope::special_register(name.text).is_some() || name.text == "WARP_SZ" => Ok(()),
                Some(Entry::Var(_)) | None if !out => {
                    let a = self.asm_address(st, name, d, scope)?;
                    let t = self.address_input(plan, a);
                    plan.text.insert(key, t);
                    Ok(())
                }
                _ => Err(unsupported(
                    name.span,
                    format!(
                        "`{}` cannot be an operand of inline assembly (labels and functions are not)",
                        name.text
                    ),
                )),
            },
            Operand::Sym { .. } | Operand::Imm(..) | Operand::Sink(_) => Ok(()),
            Operand::Addr(a) => {
                let base = match &a.base {
                    None => return Ok(()),
                    Some(b) => b,
                };
                let v = match scope.lookup(base.text) {
                    Some(Entry::Reg { ty, .. }) => {
                        let want = if ty.bits() == 32 { Type::U32 } else { Type::U64 };
                        self.reg_load(st, base, want, scope)?.into_int_value()
                    }
                    _ => self.asm_address(st, base, d, scope)?,
                };
                let p = self.address_input(plan, v);
                let t = if a.offset != 0 {
                    format!("[{p}{:+}]", a.offset)
                } else {
                    format!("[{p}]")
                };
                plan.text.insert(key, t);
                Ok(())
            }
            Operand::Offset(n, off, _) => {
                let a = self.asm_address(st, n, d, scope)?;
                let a = self
                    .b
                    .build_int_add(a, a.get_type().const_int(*off as u64, true), "a")?;
                let t = self.address_input(plan, a);
                plan.text.insert(key, t);
                Ok(())
            }
            Operand::Element(n, k, s) => {
                let v = self.var_decl(n, scope).ok_or_else(|| unsupported(*s, "not an array"))?;
                let a = self.asm_address(st, n, d, scope)?;
                let a = self
                    .b
                    .build_int_add(a, a.get_type().const_int(k * v.ty.bytes() as u64, false), "a")?;
                let t = self.address_input(plan, a);
                plan.text.insert(key, t);
                Ok(())
            }
            Operand::Vector(v, _) | Operand::Bracket(v, _) => {
                for x in v {
                    self.plan_operand(st, plan, x, out, d, scope)?;
                }
                Ok(())
            }
            Operand::Pair(a, b, _) => {
                self.plan_operand(st, plan, a, out, d, scope)?;
                self.plan_operand(st, plan, b, out, d, scope)
            }
            Operand::Not(x, _) | Operand::Neg(x, _) => self.plan_operand(st, plan, x, out, d, scope),
            Operand::List(_, s) => Err(unsupported(*s, "argument lists cannot go through inline assembly")),
        }
    }

    fn var_decl<'m, 'a>(&self, n: &Name<'a>, scope: &Scope<'m, 'a>) -> Option<&'m VarDecl<'a>> {
        match scope.lookup(n.text) {
            Some(Entry::Var(v)) => Some(v),
            _ => None,
        }
    }

    /// One register as an asm operand: its placeholder text (`@k` for inputs until the outputs are
    /// counted), or for a predicate the name of the scoped predicate register that stands for it.
    fn register_operand<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        plan: &mut Plan<'ctx>,
        name: &Name<'a>,
        out: bool,
        scope: &Scope<'m, 'a>,
    ) -> R<String> {
        let (slot, ty) = self.reg_slot(st, name, scope)?;
        let bits = ty.bits();
        if ty == Type::Pred {
            let p = format!("%asm_p{}", plan.preds);
            plan.preds += 1;
            plan.pre.push_str(&format!(".reg .pred {p}; "));
            if out {
                let k = plan.outs.len();
                plan.outs.push(("=r".into(), self.i32().into(), slot, 1, true));
                plan.post
                    .push_str(&format!("selp.u32 {}, 1, 0, {p}; ", PLACEHOLDERS[k]));
            } else {
                let v = self
                    .b
                    .build_load(self.ctx.bool_type(), slot, name.text)?
                    .into_int_value();
                let v = self.b.build_int_z_extend(v, self.i32(), "p")?;
                let k = plan.ins.len();
                plan.ins.push(("r".into(), v.into()));
                plan.pre.push_str(&format!("setp.ne.u32 {p}, @{k}, 0; "));
            }
            return Ok(p);
        }
        if bits == 8 {
            // LLVM has no 8-bit registers; a scoped `.b8` register keeps the instruction's operand types.
            let b = format!("%asm_b{}", plan.preds);
            plan.preds += 1;
            plan.pre.push_str(&format!(".reg .b8 {b}; "));
            if out {
                let k = plan.outs.len();
                plan.outs
                    .push(("=h".into(), self.ctx.i16_type().into(), slot, 8, false));
                plan.post
                    .push_str(&format!("mov.b16 {}, {{{b}, 0}}; ", PLACEHOLDERS[k]));
            } else {
                let v = self.b.build_load(self.int(8), slot, name.text)?.into_int_value();
                let v = self.resize(v, 16, false)?;
                let k = plan.ins.len();
                plan.ins.push(("h".into(), v.into()));
                plan.pre.push_str(&format!("mov.b16 {{{b}, _}}, @{k}; "));
            }
            return Ok(b);
        }
        let (c, w) = match bits {
            0..=16 => ("h", 16),
            17..=32 => ("r", 32),
            33..=64 => ("l", 64),
            _ => ("q", 128),
        };
        if out {
            let k = plan.outs.len();
            plan.outs.push((format!("={c}"), self.int(w).into(), slot, bits, false));
            return Ok(PLACEHOLDERS[k].clone());
        }
        let v = self.b.build_load(self.int(bits), slot, name.text)?.into_int_value();
        let v = self.resize(v, w, false)?;
        let k = plan.ins.len();
        plan.ins.push((c.into(), v.into()));
        Ok(format!("@{k}"))
    }

    fn address_input(&self, plan: &mut Plan<'ctx>, v: IntValue<'ctx>) -> String {
        let c = if v.get_type().get_bit_width() == 32 { "r" } else { "l" };
        let k = plan.ins.len();
        plan.ins.push((c.into(), v.into()));
        format!("@{k}")
    }

    /// A variable's address as the instruction sees it: in the instruction's state space, or generic when
    /// it names none (a shared or local variable in a generic access is its generic address).
    fn asm_address<'m, 'a>(
        &mut self,
        st: &Fn<'ctx, 'm, 'a>,
        n: &Name<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<IntValue<'ctx>> {
        let at = self.addr_ty();
        // Of the instruction's spaces (`cp.async.ca.shared.global` names two), the variable's own;
        // else the first.
        let own_space = self.var_decl(n, scope).map(|v| v.space);
        let space = d
            .spaces()
            .filter_map(Space::from_dot)
            .find(|s| Some(*s) == own_space)
            .or_else(|| d.get(G::Space).and_then(Space::from_dot))
            .unwrap_or(Space::Generic);
        let ptr = match self.var_decl(n, scope) {
            Some(v) => st.locals.get(&(v as *const _)).copied(),
            None => None,
        }
        .or_else(|| self.globals.get(n.text).map(|g| g.as_pointer_value()));
        let Some(ptr) = ptr else {
            return Err(unsupported(
                n.span,
                format!(
                    "`{}` cannot be used by address in inline assembly (parameters and texture references cannot)",
                    n.text
                ),
            ));
        };
        let own = ptr.get_type().get_address_space();
        let want = if space == Space::Generic {
            AddressSpace::from(0u16)
        } else {
            AddressSpace::from(self.llvm_space(space))
        };
        let p = if own == want {
            ptr
        } else {
            self.b.build_address_space_cast(ptr, self.ctx.ptr_type(want), "as")?
        };
        Ok(self.b.build_ptr_to_int(p, at, "addr")?)
    }

    /// Special registers that the nvvm flavour reads without a component (`%laneid`, `%clock64`,
    /// `%lanemask_lt`, …) and `WARP_SZ`: an NVVM intrinsic where LLVM has one, else a `mov` in inline PTX.
    pub(super) fn nvvm_scalar_sreg(&mut self, n: &Name<'_>) -> R<Option<IntValue<'ctx>>> {
        if n.text == "WARP_SZ" {
            return Ok(Some(self.i32().const_int(32, false)));
        }
        let Some(sreg) = ptx_front::scope::special_register(n.text) else {
            return Ok(None);
        };
        if sreg.vector {
            return Err(unsupported(
                n.span,
                format!("`{}` is read by component (`{}.x`)", n.text, n.text),
            ));
        }
        // LLVM spells the lane masks `lanemask.lt`.
        let intrinsic = format!(
            "llvm.nvvm.read.ptx.sreg.{}",
            n.text[1..].replace("lanemask_", "lanemask.")
        );
        if let Ok(f) = self.intrinsic(&intrinsic, &[]) {
            let v = self.b.build_call(f, &[], "sreg")?.try_as_basic_value().basic();
            let v = v.ok_or_else(|| unsupported(n.span, "internal error: special register without a value"))?;
            let v = v.into_int_value();
            return Ok(Some(if v.get_type().get_bit_width() == 1 {
                self.b.build_int_z_extend(v, self.i32(), "p")?
            } else {
                v
            }));
        }
        let (c, w) = match sreg.ty.bits() {
            64 => ("l", 64),
            32 => ("r", 32),
            _ => {
                return Err(unsupported(
                    n.span,
                    format!("special register `{}` is not supported yet", n.text),
                ))
            }
        };
        let ty = self.int(w);
        let fn_ty = ty.fn_type(&[], false);
        let asm = self.ctx.create_inline_asm(
            fn_ty,
            format!("mov.b{w} $0, {};", n.text),
            format!("={c}"),
            true,
            false,
            None,
            false,
        );
        let v = self
            .b
            .build_indirect_call(fn_ty, asm, &[], "sreg")?
            .try_as_basic_value()
            .basic();
        Ok(v.map(|v| v.into_int_value()))
    }

    /// A kernel's performance directives as the NVPTX backend's function attributes, which it prints
    /// back as the same directives.
    pub(super) fn launch_bounds(&self, f: &Function<'_>, fv: FunctionValue<'ctx>) {
        for d in &f.perf {
            let ast::PerfDirective::Value { name, values } = d else {
                continue;
            };
            let attr = match name.text {
                ".maxntid" => "nvvm.maxntid",
                ".reqntid" => "nvvm.reqntid",
                ".minnctapersm" => "nvvm.minctasm",
                ".maxnreg" => "nvvm.maxnreg",
                ".maxclusterrank" => "nvvm.maxclusterrank",
                ".reqnctapercluster" => "nvvm.cluster_dim",
                _ => continue,
            };
            let v: Vec<String> = values.iter().map(u64::to_string).collect();
            fv.add_attribute(
                AttributeLoc::Function,
                self.ctx.create_string_attribute(attr, &v.join(",")),
            );
        }
    }

    /// A 64-bit module variable whose initializer holds addresses: `[n x i64]`, filled by
    /// [`Self::fill_symbol_inits`] once every function is declared.
    pub(super) fn symbol_var(&mut self, v: &VarDecl<'_>) -> R<()> {
        if v.linkage == Some(ast::Linkage::Extern) {
            return Err(unsupported(
                v.span,
                "`.extern` variables need a linker, which is not supported yet",
            ));
        }
        let mut elems = vec![];
        flatten(v.init.as_ref().expect("has an initializer"), &mut elems);
        let elems = elems
            .into_iter()
            .map(|e| {
                init_elem(e).ok_or_else(|| unsupported(v.span, "this initializer expression is not supported yet"))
            })
            .collect::<R<Vec<_>>>()?;
        let n = (v.size_bytes() / 8) as u32;
        let ty = self.i64().array_type(n);
        let g = self
            .module
            .add_global(ty, Some(AddressSpace::from(self.llvm_space(v.space))), v.name.text);
        g.set_alignment(v.alignment() as u32);
        g.set_initializer(&ty.const_zero());
        g.set_linkage(LlLinkage::External);
        self.globals.insert(v.name.text.to_string(), g);
        self.symbol_inits.push((v.name.text.to_string(), elems));
        Ok(())
    }

    /// Fills the initializers that hold addresses, once every function of module `m` is declared.
    pub(super) fn fill_symbol_inits(&mut self, m: &ast::Module<'_>) -> R<()> {
        let with_body: std::collections::HashSet<&str> = m
            .items
            .iter()
            .filter_map(|i| match i {
                ast::Item::Function(f) if f.body.is_some() => Some(f.name.text),
                _ => None,
            })
            .collect();
        let defined = |name: &str| with_body.contains(name);
        let i64t = self.i64();
        for (name, elems) in std::mem::take(&mut self.symbol_inits) {
            let g = self.globals[&name];
            let mut vals = vec![];
            for e in &elems {
                vals.push(match e {
                    InitElem::Bits(b) => i64t.const_int(*b, false),
                    InitElem::Addr { sym, generic, off } => {
                        let p = match (self.funcs.get(sym), self.globals.get(sym)) {
                            // A function declared and defined nowhere would bind to the C library's
                            // namesake on the host, as a call would (`Lowerer::defined_somewhere`).
                            (Some(_), _)
                                if self.flavour == Flavour::Host
                                    && !defined(sym)
                                    && !self.aliases.contains(sym.as_str())
                                    && !crate::builtin::DEVICE_FUNCTIONS.contains(&sym.as_str()) =>
                            {
                                return Err(Fail::Diag(Box::new(super::undefined_function(&Name {
                                    text: sym,
                                    span: Span::default(),
                                }))));
                            }
                            (Some(f), _) => f.as_global_value().as_pointer_value(),
                            (None, Some(v)) if *generic => v.as_pointer_value().const_address_space_cast(self.ptr(0)),
                            (None, Some(v)) => v.as_pointer_value(),
                            _ => {
                                return Err(unsupported(
                                    Span::default(),
                                    format!("`{sym}` in an initializer is not supported yet"),
                                ))
                            }
                        };
                        let p = unsafe { p.const_gep(self.ctx.i8_type(), &[i64t.const_int(*off as u64, true)]) };
                        p.const_to_int(i64t)
                    }
                });
            }
            let n = g.get_value_type().into_array_type().len() as usize;
            vals.resize(n, i64t.const_zero());
            g.set_initializer(&i64t.const_array(&vals));
        }
        Ok(())
    }
}

/// One 64-bit element of an address-holding initializer.
pub(super) enum InitElem {
    Bits(u64),
    Addr { sym: String, generic: bool, off: i64 },
}

fn flatten<'i, 'a>(i: &'i Init<'a>, out: &mut Vec<&'i Expr<'a>>) {
    match i {
        Init::Scalar(e) => out.push(e),
        Init::List(l) => l.iter().for_each(|x| flatten(x, out)),
        Init::Field(_, e) => out.push(e),
    }
}

fn init_elem(e: &Expr<'_>) -> Option<InitElem> {
    let addr = |e: &Expr<'_>, off: i64| match e {
        Expr::Sym(n) => Some(InitElem::Addr {
            sym: n.text.to_string(),
            generic: false,
            off,
        }),
        Expr::Generic(n, _) => Some(InitElem::Addr {
            sym: n.text.to_string(),
            generic: true,
            off,
        }),
        _ => None,
    };
    match e {
        Expr::Sym(_) | Expr::Generic(..) => addr(e, 0),
        Expr::Binary(ast::BinOp::Add, a, b, _) => match (&**a, &**b) {
            (x, Expr::Imm(Imm::Int(k), _)) | (Expr::Imm(Imm::Int(k), _), x) => addr(x, *k),
            _ => None,
        },
        _ => const_eval(e, Type::U64).map(InitElem::Bits),
    }
}

/// Whether an initializer names a function or variable (an address), which only the nvvm flavour keeps.
pub(super) fn has_symbols(v: &VarDecl<'_>) -> bool {
    let mut elems = vec![];
    if let Some(i) = &v.init {
        flatten(i, &mut elems);
    }
    elems
        .iter()
        .any(|e| matches!(init_elem(e), Some(InitElem::Addr { .. })))
}
