//! Loads, stores and atomics.

use super::*;

impl<'ctx> Lowerer<'ctx> {
    pub(super) fn memory<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let t = d.ty().expect("ld/st type");
        let space = access_space(d);
        let is_ld = d.spec.name != "st";
        if self.flavour == Flavour::Host && lockstep_access(i, &st.in_step) {
            // The warp's lanes make this access together (see `collective::Kind::Lockstep`).
            let site = self.i32().const_int(i.span.start as u64, false);
            self.collective(st, crate::collective::Kind::Lockstep, [None, None, Some(site), None])?;
        }
        let at = isa::address_operand(d.spec.name).expect("ld and st take an address");
        let (data, addr) = (&i.operands[1 - at], &i.operands[at]);
        let Operand::Addr(a) = addr else {
            return Err(unsupported(addr.span(), "expected an address"));
        };
        let base = self.address(st, a, space, scope)?;
        let expanded = self.expand_vector(data, scope);
        let elems: Vec<&Operand<'a>> = match (data, &expanded) {
            (_, Some(parts)) => parts.iter().collect(),
            (Operand::Vector(v, _), _) => v.iter().collect(),
            (other, _) => vec![other],
        };
        let ordered = d.has(".volatile") || d.get(G::Sem).is_some_and(|s| s != ".weak");
        let access = if is_ld { 0 } else { crate::builtin::ACCESS_WRITE }
            | if ordered { crate::builtin::ACCESS_ORDERED } else { 0 }
            | release_acquire(d);
        self.check_access(st, base, t.bytes() as u64 * elems.len() as u64, space, access, i.span)?;
        // The host moves floats as their bits: a float store would let LLVM turn a canonical-NaN
        // select back into a float select, whose NaN it may then replace by any other (sqrt of a
        // negative stored x86's default NaN; tests/gpu/probes/approx_special.ptx).
        let t = if self.flavour == Flavour::Host && t.is_float() {
            bits_type(t.bits())
        } else {
            t
        };
        let mem_ty = self.value_ty(t);
        let align = t.bytes() * elems.len() as u32;
        // On the host, `.volatile`, `.relaxed`, `.acquire` and `.release` accesses are atomic ones of
        // that order, element by element: a loop polling a flag another thread or CTA sets (a
        // cooperative grid barrier) must read memory every time, not once before the loop.
        let order = (self.flavour == Flavour::Host && ordered && t.bytes() <= 8).then(|| match d.get(G::Sem) {
            Some(".acquire") if is_ld => inkwell::AtomicOrdering::Acquire,
            Some(".release") if !is_ld => inkwell::AtomicOrdering::Release,
            _ => inkwell::AtomicOrdering::Monotonic,
        });
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
                    if let Some(o) = order {
                        let _ = inst.set_atomic_ordering(o);
                    }
                }
                self.write(st, e, v, t.is_signed(), scope)?;
            } else {
                let v = self.read(st, e, t, scope)?;
                let s = self.b.build_store(p, v)?;
                let _ = s.set_alignment(a);
                if let Some(o) = order {
                    let _ = s.set_atomic_ordering(o);
                }
            }
        }
        Ok(())
    }

    /// `atom`/`red` as LLVM atomics: they are real host atomics, since CTAs run in parallel.
    pub(super) fn atomic<'m, 'a>(
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
        let space = access_space(d);
        let at = isa::address_operand(d.spec.name).expect("atom and red take an address");
        let Operand::Addr(a) = &ops[at] else {
            return Err(unsupported(i.span, "expected an address"));
        };
        let ptr = self.address(st, a, space, scope)?;
        // A vector atomic is one access of all its elements, aligned to its whole size.
        let elems = d.get(G::Vec).map_or(1, |v| v[2..].parse::<u64>().unwrap_or(1));
        let bytes = t.bytes() as u64 * elems;
        self.check_access(
            st,
            ptr,
            bytes,
            space,
            crate::builtin::ACCESS_ATOMIC | release_acquire(d),
            i.span,
        )?;
        let ordering = match d.get(G::Sem) {
            None | Some(".relaxed") => O::LLVMAtomicOrderingMonotonic,
            _ => O::LLVMAtomicOrderingAcquireRelease,
        };
        if d.get(G::Vec).is_some() {
            return self.vector_atomic(st, i, d, (ptr, space), ordering, scope);
        }
        let b = self.read(st, &ops[at + 1], t, scope)?;
        let op = d.get(G::Op).expect("atom has an op");
        let (float, signed) = (t.is_float(), t.is_signed());
        if self.flavour == Flavour::Host && t == Type::F32 && op == ".add" {
            let old = self.f32_atomic_add(st, ptr, space, b.into_float_value(), ordering)?;
            if is_atom {
                self.write(st, &ops[0], old.into(), false, scope)?;
            }
            return Ok(());
        }
        if self.flavour == Flavour::Host && matches!(t, Type::F16 | Type::Bf16 | Type::F16x2 | Type::Bf16x2) {
            // 16-bit floats (and pairs): a compare-and-swap loop in the runtime around exact arithmetic.
            let fop = match op {
                ".add" => crate::builtin::ADD,
                ".min" => crate::builtin::MIN,
                ".max" => crate::builtin::MAX,
                _ => {
                    return Err(unsupported(
                        i.span,
                        format!("`{}{op}{}` is not valid", d.spec.name, t.name()),
                    ))
                }
            };
            let ty = super::builtin::code_of(t.name()).expect("a 16-bit float type has a builtin code");
            let code = crate::builtin::code(fop, ty, ty, crate::builtin::RN, 0);
            let addr = self.b.build_ptr_to_int(ptr, self.i64(), "addr")?;
            let bits = self.to_bits(b, t.bits(), false)?;
            let code = self.i64().const_int(code as u64, false);
            let old = self.mem_call(st, crate::builtin::Mem::AtomicFp, addr, bits, code)?;
            if is_atom {
                let old = self.b.build_int_truncate(old, self.int(t.bits()), "old")?;
                self.write(st, &ops[0], old.into(), false, scope)?;
            }
            return Ok(());
        }
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

    /// `atom.add.f32` on the host: a compare-and-swap loop around the add, as an H200 computes it
    /// (tests/ptx-host/atom_f32_subnormal.ptx): in global memory subnormal inputs and results flush to
    /// signed zero, in shared memory they stay (a generic address decides at run time), and a NaN
    /// result is 0x7fffffff. The loop is a function of its own that LLVM inlines later: a loop in the
    /// thread body would keep a kernel with barriers from being cut into regions. Returns the old value.
    fn f32_atomic_add(
        &mut self,
        st: &Fn<'ctx, '_, '_>,
        ptr: PointerValue<'ctx>,
        space: Space,
        b: inkwell::values::FloatValue<'ctx>,
        ordering: inkwell::llvm_sys::LLVMAtomicOrdering,
    ) -> R<inkwell::values::FloatValue<'ctx>> {
        let flush = match space {
            Space::Shared => self.ctx.bool_type().const_zero(),
            Space::Generic => {
                let addr = self.b.build_ptr_to_int(ptr, self.i64(), "addr")?;
                let (off, window) = self.shared_offset(st, addr)?;
                self.b.build_int_compare(IntPredicate::UGE, off, window, "flush")?
            }
            _ => self.ctx.bool_type().const_all_ones(),
        };
        let f = self.f32_atomic_add_fn(ordering)?;
        let old = self
            .b
            .build_call(f, &[ptr.into(), b.into(), flush.into()], "old")?
            .try_as_basic_value()
            .basic()
            .expect("the helper returns the old value");
        Ok(self
            .b
            .build_bit_cast(old, self.ctx.f32_type(), "old")?
            .into_float_value())
    }

    /// `ptxjit.fadd32.<ordering>(ptr, b, flush) -> i32`, the loop of [`Self::f32_atomic_add`].
    fn f32_atomic_add_fn(
        &mut self,
        ordering: inkwell::llvm_sys::LLVMAtomicOrdering,
    ) -> R<inkwell::values::FunctionValue<'ctx>> {
        use inkwell::attributes::{Attribute, AttributeLoc};
        use inkwell::llvm_sys::core::{LLVMBuildAtomicCmpXchg, LLVMBuildExtractValue};
        use inkwell::llvm_sys::LLVMAtomicOrdering as O;
        use inkwell::values::AsValueRef;
        let name = format!("ptxjit.fadd32.{}", ordering as u32);
        if let Some(f) = self.module.get_function(&name) {
            return Ok(f);
        }
        let (i32t, f32t, i1t) = (self.i32(), self.ctx.f32_type(), self.ctx.bool_type());
        let ty = i32t.fn_type(&[self.ptr(0).into(), f32t.into(), i1t.into()], false);
        let f = self
            .module
            .add_function(&name, ty, Some(inkwell::module::Linkage::Internal));
        let inline = self
            .ctx
            .create_enum_attribute(Attribute::get_named_enum_kind_id("alwaysinline"), 0);
        f.add_attribute(AttributeLoc::Function, inline);
        let caller = self.b.get_insert_block();
        let entry = self.ctx.append_basic_block(f, "entry");
        let (lp, done) = (
            self.ctx.append_basic_block(f, "loop"),
            self.ctx.append_basic_block(f, "done"),
        );
        self.b.position_at_end(entry);
        let param = |k: u32| f.get_nth_param(k).expect("declared above");
        let ptr = param(0).into_pointer_value();
        let flush = param(2).into_int_value();
        let k = |v: u64| i32t.const_int(v, false);
        // A subnormal (exponent 0) becomes its sign when flushing.
        let ftz = |l: &Self, v: IntValue<'ctx>| -> R<IntValue<'ctx>> {
            let e = l.b.build_and(v, k(0x7f80_0000), "exp")?;
            let tiny = l.b.build_int_compare(IntPredicate::EQ, e, k(0), "tiny")?;
            let tiny = l.b.build_and(tiny, flush, "flush_it")?;
            let sign = l.b.build_and(v, k(0x8000_0000), "sign")?;
            Ok(l.b.build_select(tiny, sign, v, "ftz")?.into_int_value())
        };
        let b_bits = self.b.build_bit_cast(param(1), i32t, "b_bits")?.into_int_value();
        let b = ftz(self, b_bits)?;
        let b = self.b.build_bit_cast(b, f32t, "b")?.into_float_value();
        let init = self.b.build_load(i32t, ptr, "init")?.into_int_value();
        let inst = init.as_instruction_value().expect("a load");
        inst.set_alignment(4).expect("a load takes an alignment");
        inst.set_atomic_ordering(inkwell::AtomicOrdering::Monotonic)
            .expect("a load takes an ordering");
        self.b.build_unconditional_branch(lp)?;
        self.b.position_at_end(lp);
        let old = self.b.build_phi(i32t, "old")?;
        let o = old.as_basic_value().into_int_value();
        let a = ftz(self, o)?;
        let a = self.b.build_bit_cast(a, f32t, "a")?.into_float_value();
        let sum = self.b.build_float_add(a, b, "sum")?;
        let bits = self.b.build_bit_cast(sum, i32t, "sum_bits")?.into_int_value();
        let bits = ftz(self, bits)?;
        let nan = self.b.build_float_compare(FloatPredicate::UNO, sum, sum, "nan")?;
        let new = self.b.build_select(nan, k(0x7fff_ffff), bits, "new")?.into_int_value();
        // SAFETY: the builder sits in `lp`; the values are of the types cmpxchg takes.
        let (seen, ok) = unsafe {
            let pair = LLVMBuildAtomicCmpXchg(
                self.b.as_mut_ptr(),
                ptr.as_value_ref(),
                o.as_value_ref(),
                new.as_value_ref(),
                ordering,
                O::LLVMAtomicOrderingMonotonic,
                0,
            );
            (
                IntValue::new(LLVMBuildExtractValue(self.b.as_mut_ptr(), pair, 0, c"seen".as_ptr())),
                IntValue::new(LLVMBuildExtractValue(self.b.as_mut_ptr(), pair, 1, c"ok".as_ptr())),
            )
        };
        old.add_incoming(&[(&init, entry), (&seen, lp)]);
        self.b.build_conditional_branch(ok, done, lp)?;
        self.b.position_at_end(done);
        self.b.build_return(Some(&o))?;
        if let Some(c) = caller {
            self.b.position_at_end(c);
        }
        Ok(f)
    }

    /// `access` with `ACCESS_UNRACED` added when it is a load (neither a write nor an atomic) of
    /// the instruction being lowered and that instruction is proved race-free.
    fn mark_unraced(&self, access: u32) -> u32 {
        use crate::builtin as bi;
        // Strong loads stay followed: racecheck's acquire patterns read them.
        let loads = access & (bi::ACCESS_WRITE | bi::ACCESS_ATOMIC | bi::ACCESS_ORDERED) == 0;
        if self.unraced && loads {
            access | bi::ACCESS_UNRACED
        } else {
            access
        }
    }

    /// Checked mode: asks the runtime whether `bytes` at `p` lie in memory of `space`; if not, the
    /// thread stops here. `access` (a `builtin::ACCESS_*`) says how the instruction touches them.
    pub(super) fn check_access(
        &mut self,
        st: &Fn<'ctx, '_, '_>,
        p: PointerValue<'ctx>,
        bytes: u64,
        space: Space,
        access: u32,
        span: Span,
    ) -> R<()> {
        if self.checked && space == Space::Shared && access & !crate::builtin::ACCESS_WRITE == 0 {
            return self.check_shared(st, p, bytes, access, span);
        }
        let bytes = self.i64().const_int(bytes, false);
        self.check_range(st, p, bytes, space, access, span)
    }

    /// A generic address's offset in the CTA's shared window and the window's size, both as i64: the
    /// address is shared memory when `off < window` (unsigned).
    pub(super) fn shared_offset(
        &mut self,
        st: &Fn<'ctx, '_, '_>,
        addr: IntValue<'ctx>,
    ) -> R<(IntValue<'ctx>, IntValue<'ctx>)> {
        let (i32t, i64t) = (self.i32(), self.i64());
        let base = self.env_field(st, EnvField::Shared, i64t)?;
        let dynamic = self.env_field(st, EnvField::DynamicShared, i32t)?;
        let window = self.b.build_int_z_extend(dynamic, i64t, "window")?;
        let window = self
            .b
            .build_int_add(window, i64t.const_int(self.shared_size, false), "window")?;
        Ok((self.b.build_int_sub(addr, base, "off")?, window))
    }

    /// [`Self::check_access`] for a plain `.shared` load or store. Generated code decides an aligned
    /// access inside the window itself and calls the runtime only for the rest, or when a sanitizer
    /// follows the access (the launch's watch word, `builtin::WATCH_*`): racecheck every access but
    /// the loads no race can involve, initcheck the loads whose bytes `Env::written` does not show
    /// written (stores mark them).
    /// Most accesses of a tiled kernel are of this kind, and the call cost more than the rest of
    /// checked mode.
    fn check_shared(
        &mut self,
        st: &Fn<'ctx, '_, '_>,
        p: PointerValue<'ctx>,
        bytes: u64,
        access: u32,
        span: Span,
    ) -> R<()> {
        use crate::builtin as bi;
        let (i32t, i64t) = (self.i32(), self.i64());
        let loads = access & bi::ACCESS_WRITE == 0;
        let access = self.mark_unraced(access);
        // The sanitizers that need this access to call the runtime.
        let race = bi::race_bit(access);
        // An aligned access of up to 16 bytes covers bits of one word of the written-bytes map.
        let mapped = matches!(bytes, 1 | 2 | 4 | 8 | 16);
        let init = if mapped { 0 } else { bi::WATCH_INIT };
        // The launch's watch word, the first field of its fault record.
        let record = self.env_field(st, EnvField::Fault, i64t)?;
        let record = self.b.build_int_to_ptr(record, self.ptr(0), "record")?;
        let watch = self.b.build_load(i32t, record, "watch")?.into_int_value();
        let calls = self
            .b
            .build_and(watch, i32t.const_int((race | init) as u64, false), "calls")?;
        let quiet = self
            .b
            .build_int_compare(IntPredicate::EQ, calls, i32t.const_zero(), "quiet")?;
        let addr = self.b.build_ptr_to_int(p, i64t, "addr")?;
        let (off, window) = self.shared_offset(st, addr)?;
        // off < window and off + bytes <= window (off + bytes cannot wrap once off < window).
        let inside = self.b.build_int_compare(IntPredicate::ULT, off, window, "inside")?;
        let end = self.b.build_int_add(off, i64t.const_int(bytes, false), "end")?;
        let fits = self.b.build_int_compare(IntPredicate::ULE, end, window, "fits")?;
        let mut ok = self.b.build_and(inside, fits, "ok")?;
        if matches!(bytes, 2 | 4 | 8 | 16) {
            let low = self.b.build_and(addr, i64t.const_int(bytes - 1, false), "low")?;
            let aligned = self
                .b
                .build_int_compare(IntPredicate::EQ, low, i64t.const_zero(), "aligned")?;
            ok = self.b.build_and(ok, aligned, "ok")?;
        }
        ok = self.b.build_and(ok, quiet, "ok")?;
        let slow = self.ctx.append_basic_block(st.func, "check");
        let go = self.ctx.append_basic_block(st.func, "checked");
        if mapped {
            // initcheck's written-bytes map, when the launch runs it.
            let map = self.ctx.append_basic_block(st.func, "written");
            let fine = self.ctx.prepend_basic_block(go, "inbounds");
            self.b.build_conditional_branch(ok, fine, slow)?;
            self.b.position_at_end(fine);
            let init_on = self
                .b
                .build_and(watch, i32t.const_int(bi::WATCH_INIT as u64, false), "init")?;
            let init_on = self
                .b
                .build_int_compare(IntPredicate::NE, init_on, i32t.const_zero(), "init")?;
            self.b.build_conditional_branch(init_on, map, go)?;
            self.b.position_at_end(map);
            let bits = self.env_field(st, EnvField::Written, i64t)?;
            let none = self
                .b
                .build_int_compare(IntPredicate::EQ, bits, i64t.const_zero(), "nomap")?;
            let have = self.ctx.prepend_basic_block(go, "map");
            self.b.build_conditional_branch(none, slow, have)?;
            self.b.position_at_end(have);
            let bits = self.b.build_int_to_ptr(bits, self.ptr(0), "map")?;
            let word = self.b.build_right_shift(off, i64t.const_int(6, false), false, "word")?;
            // SAFETY of the index: off < window, and the map has a bit per byte of the window.
            let wp = unsafe { self.b.build_gep(i64t, bits, &[word], "wordp")? };
            let w = self.b.build_load(i64t, wp, "bits")?.into_int_value();
            let shift = self.b.build_and(off, i64t.const_int(63, false), "bit")?;
            let ones = i64t.const_int((1u64 << bytes) - 1, false);
            let mask = self.b.build_left_shift(ones, shift, "mask")?;
            if loads {
                let has = self.b.build_and(w, mask, "has")?;
                let all = self.b.build_int_compare(IntPredicate::EQ, has, mask, "written")?;
                self.b.build_conditional_branch(all, go, slow)?;
            } else {
                let w = self.b.build_or(w, mask, "bits")?;
                self.b.build_store(wp, w)?;
                self.b.build_unconditional_branch(go)?;
            }
        } else {
            self.b.build_conditional_branch(ok, go, slow)?;
        }
        self.b.position_at_end(slow);
        let r = self.call_check(
            st,
            p,
            i64t.const_int(bytes, false),
            span.start as u64,
            space_code(Space::Shared) | access,
        )?;
        self.stop_if_faulted(st, Some(r))?;
        self.b.build_unconditional_branch(go)?;
        self.b.position_at_end(go);
        Ok(())
    }

    /// [`Self::check_access`] for a size known only when the code runs (`cp.async` copies).
    pub(super) fn check_range(
        &mut self,
        st: &Fn<'ctx, '_, '_>,
        p: PointerValue<'ctx>,
        bytes: IntValue<'ctx>,
        space: Space,
        access: u32,
        span: Span,
    ) -> R<()> {
        if !self.checked || matches!(space, Space::Param) {
            return Ok(());
        }
        let access = self.mark_unraced(access);
        let r = self.call_check(st, p, bytes, span.start as u64, space_code(space) | access)?;
        self.stop_if_faulted(st, Some(r))
    }

    /// Returns from the current function when `status` (or, after a call, the launch's fault flag)
    /// says the launch has faulted: in checked mode, and after calls in modules that can trap.
    pub(super) fn stop_if_faulted(&mut self, st: &Fn<'ctx, '_, '_>, status: Option<IntValue<'ctx>>) -> R<()> {
        if self.flavour != Flavour::Host || !(self.checked || (status.is_none() && self.may_trap)) {
            return Ok(());
        }
        let status = match status {
            Some(s) => s,
            None => {
                let null = self.ptr(0).const_null();
                self.call_check(st, null, self.i64().const_zero(), 0, 0)?
            }
        };
        let bad = self
            .b
            .build_int_compare(IntPredicate::NE, status, self.i32().const_zero(), "faulted")?;
        self.return_if(st, bad)
    }

    /// The thread returns here when `stop` (an i1) holds, as when its launch has faulted.
    pub(super) fn return_if(&mut self, st: &Fn<'ctx, '_, '_>, stop: IntValue<'ctx>) -> R<()> {
        let (end, go) = (
            self.ctx.append_basic_block(st.func, "stop"),
            self.ctx.append_basic_block(st.func, "go"),
        );
        self.b.build_conditional_branch(stop, end, go)?;
        self.b.position_at_end(end);
        self.emit_return(st)?;
        self.b.position_at_end(go);
        Ok(())
    }

    /// Checked mode's call that carries no access but tells the runtime about the instruction being
    /// lowered (`builtin::ACCESS_SITE`, `ACCESS_BLOCK`, `ACCESS_FENCE`), with `bytes` as that code's
    /// argument.
    pub(super) fn note_site(&mut self, st: &Fn<'ctx, '_, '_>, bytes: u64, code: u32) -> R<()> {
        let null = self.ptr(0).const_null();
        self.call_check(st, null, self.i64().const_int(bytes, false), self.site as u64, code)?;
        Ok(())
    }

    /// `ptxjit_check(env, p, bytes, site, space)`; with a null `p` it only reports whether the launch
    /// has faulted.
    pub(super) fn call_check(
        &mut self,
        st: &Fn<'ctx, '_, '_>,
        p: PointerValue<'ctx>,
        bytes: IntValue<'ctx>,
        site: u64,
        space: u32,
    ) -> R<IntValue<'ctx>> {
        use crate::builtin as bi;
        let (i32t, i64t, pt) = (self.i32(), self.i64(), self.ptr(0));
        let f = self.module.get_function(bi::CHECK).unwrap_or_else(|| {
            let ty = i32t.fn_type(&[pt.into(), pt.into(), i64t.into(), i32t.into(), i32t.into()], false);
            self.module.add_function(bi::CHECK, ty, None)
        });
        Ok(self
            .b
            .build_call(
                f,
                &[
                    st.env.expect("env").into(),
                    p.into(),
                    bytes.into(),
                    i32t.const_int(site, false).into(),
                    i32t.const_int(space as u64, false).into(),
                ],
                "check",
            )?
            .try_as_basic_value()
            .basic()
            .expect("check result")
            .into_int_value())
    }

    /// `isspacep.space p, a` for generic addresses on the host.
    pub(super) fn isspacep<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        use crate::builtin as bi;
        self.host_only(i.span, "isspacep")?;
        let space = d.get(G::Space).and_then(Space::from_dot).unwrap_or(Space::Generic);
        let code = space_code(space);
        let (i32t, i64t) = (self.i32(), self.i64());
        if matches!(space, Space::Param) {
            // Parameter addresses never become generic addresses on the host.
            return self.write(
                st,
                &i.operands[0],
                self.ctx.bool_type().const_zero().into(),
                false,
                scope,
            );
        }
        let a = self.read(st, &i.operands[1], Type::U64, scope)?.into_int_value();
        let dynamic = self.env_field(st, EnvField::DynamicShared, i32t)?;
        let window = self
            .b
            .build_int_add(dynamic, i32t.const_int(self.shared_size, false), "window")?;
        let window = self.b.build_int_z_extend(window, i64t, "window")?;
        let r = self.mem_call(st, bi::Mem::Isspacep, a, i64t.const_int(code as u64, false), window)?;
        let p = self.b.build_int_truncate(r, self.ctx.bool_type(), "isspacep")?;
        self.write(st, &i.operands[0], p.into(), false, scope)
    }

    /// `alloca`, `stacksave` and `stackrestore`: the thread's own stack on the host.
    pub(super) fn stack<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        self.host_only(i.span, d.spec.name)?;
        let t = d.ty().unwrap_or(Type::U64);
        let it = self.int(t.bits());
        let ops = &i.operands;
        match d.spec.name {
            "stacksave" => {
                let p = self
                    .call_intrinsic("llvm.stacksave", &[self.ptr(0).into()], &[])?
                    .into_pointer_value();
                let v = self.b.build_ptr_to_int(p, it, "sp")?;
                self.write(st, &ops[0], v.into(), false, scope)
            }
            "stackrestore" => {
                let v = self.read(st, &ops[0], t, scope)?.into_int_value();
                let p = self.b.build_int_to_ptr(v, self.ptr(0), "sp")?;
                let f = self.intrinsic("llvm.stackrestore", &[self.ptr(0).into()])?;
                self.b.build_call(f, &[p.into()], "")?;
                Ok(())
            }
            _ => {
                let size = self.read(st, &ops[1], t, scope)?.into_int_value();
                let p = self.b.build_array_alloca(self.ctx.i8_type(), size, "alloca")?;
                let align = match ops.get(2) {
                    Some(Operand::Imm(Imm::Int(a), _)) => *a as u32,
                    _ => 8,
                };
                if let Some(inst) = p.as_instruction() {
                    let _ = inst.set_alignment(align.max(1));
                }
                let v = self.b.build_ptr_to_int(p, it, "alloca")?;
                self.write(st, &ops[0], v.into(), false, scope)
            }
        }
    }

    /// `atom`/`red` on `.v2`/`.v4`/`.v8` of floats: each element is its own atomic operation.
    fn vector_atomic<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        (ptr, space): (PointerValue<'ctx>, Space),
        ordering: inkwell::llvm_sys::LLVMAtomicOrdering,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        use crate::builtin as bi;
        let t = d.ty().expect("typed");
        let ops = &i.operands;
        let is_atom = d.spec.name == "atom";
        let at = isa::address_operand(d.spec.name).expect("atom and red take an address");
        let list = |o: &'m Operand<'a>| -> Vec<&'m Operand<'a>> {
            match o {
                Operand::Vector(v, _) => v.iter().collect(),
                o => vec![o],
            }
        };
        let (dst, src) = (is_atom.then(|| list(&ops[0])), list(&ops[at + 1]));
        let fop = match d.get(G::Op) {
            Some(".add") => bi::ADD,
            Some(".min") => bi::MIN,
            Some(".max") => bi::MAX,
            other => {
                return Err(unsupported(
                    i.span,
                    format!("vector `{}{}` is not valid", d.spec.name, other.unwrap_or("")),
                ))
            }
        };
        let ty = match super::builtin::code_of(t.name()) {
            Some(c @ (bi::F16 | bi::BF16 | bi::F16X2 | bi::BF16X2 | bi::F32)) => c,
            _ => {
                return Err(unsupported(
                    i.span,
                    format!("vector atomics on `{}` are not supported yet", t.name()),
                ))
            }
        };
        let code = self.i64().const_int(bi::code(fop, ty, ty, bi::RN, 0) as u64, false);
        let base = self.b.build_ptr_to_int(ptr, self.i64(), "addr")?;
        for (k, b) in src.iter().enumerate() {
            let addr = self
                .b
                .build_int_add(base, self.i64().const_int(k as u64 * t.bytes() as u64, false), "e")?;
            if ty == bi::F32 && fop == bi::ADD {
                // Each element as the scalar add (its flushing included).
                let p = self.b.build_int_to_ptr(addr, self.ptr(0), "e")?;
                let v = self.read(st, b, Type::F32, scope)?.into_float_value();
                let old = self.f32_atomic_add(st, p, space, v, ordering)?;
                if let Some(dst) = &dst {
                    self.write(st, dst[k], old.into(), false, scope)?;
                }
                continue;
            }
            let v = self.read(st, b, bits_type(t.bits()), scope)?.into_int_value();
            let old = self.mem_call(st, bi::Mem::AtomicFp, addr, v, code)?;
            if let Some(dst) = &dst {
                let old = self.b.build_int_truncate(old, self.int(t.bits()), "old")?;
                self.write(st, dst[k], old.into(), false, scope)?;
            }
        }
        Ok(())
    }
}

/// The checked-mode / `isspacep` code of a state space.
fn space_code(space: Space) -> u32 {
    use crate::builtin as bi;
    match space {
        Space::Global => bi::SPACE_GLOBAL,
        Space::Shared => bi::SPACE_SHARED,
        Space::Local => bi::SPACE_LOCAL,
        Space::Const => bi::SPACE_CONST,
        _ => bi::SPACE_GENERIC,
    }
}

/// The state space an access names; without one, generic, except for `st.async` and `red.async`,
/// whose addresses are always in `.shared::cluster`.
fn access_space(d: &Decoded) -> Space {
    match d.get(G::Space).and_then(Space::from_dot) {
        Some(s) => s,
        None if d.spec.sub == [".async"] => Space::Shared,
        None => Space::Generic,
    }
}

/// The checked-access bits of a memory instruction's release or acquire semantics (for racecheck).
fn release_acquire(d: &Decoded) -> u32 {
    use crate::builtin::{ACCESS_ACQUIRE, ACCESS_RELEASE};
    match d.get(G::Sem) {
        Some(".release") => ACCESS_RELEASE,
        Some(".acquire") => ACCESS_ACQUIRE,
        Some(".acq_rel") => ACCESS_RELEASE | ACCESS_ACQUIRE,
        _ => 0,
    }
}
