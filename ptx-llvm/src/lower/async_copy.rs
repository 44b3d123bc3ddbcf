//! `cp.async` copies and the `mbarrier` objects that track them, for one CTA on the host. A copy is
//! done when the instruction is: it completes before any later wait, as every wait requires, so the
//! commit and wait instructions have nothing left to do.

use super::*;
use crate::abi::TensorArgs;
use crate::builtin as bi;

impl<'ctx> Lowerer<'ctx> {
    fn mem_address<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        op: &Operand<'a>,
        space: Space,
        scope: &Scope<'m, 'a>,
    ) -> R<IntValue<'ctx>> {
        let Operand::Addr(a) = op else {
            return Err(unsupported(op.span(), "expected an address"));
        };
        let p = self.address(st, a, space, scope)?;
        Ok(self.b.build_ptr_to_int(p, self.i64(), "addr")?)
    }

    pub(super) fn async_copy<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        self.host_only(i.span, "cp.async")?;
        let ops = &i.operands;
        let i64t = self.i64();
        let sub = d.spec.sub;
        match sub {
            [".async", ".commit_group"]
            | [".async", ".wait_group"]
            | [".async", ".wait_all"]
            | [".async", ".bulk", ".commit_group"]
            | [".async", ".bulk", ".wait_group"]
            | [".async", ".bulk", ".prefetch"]
            | [".async", ".bulk", ".prefetch", ".tensor"] => Ok(()),
            [".async", ".bulk", ".tensor"] | [".reduce", ".async", ".bulk", ".tensor"] => {
                self.tensor_copy(st, i, d, scope)
            }
            [".async", ".mbarrier", ".arrive"] => {
                // Without .noinc the pending count is raised before the copies' arrival lowers it:
                // with the copies already complete, nothing changes.
                if d.has(".noinc") {
                    let addr = self.mem_address(st, &ops[0], Space::Shared, scope)?;
                    let one = i64t.const_int(1, false);
                    self.mem_call(st, bi::Mem::MbarArrive, addr, one, i64t.const_zero())?;
                }
                Ok(())
            }
            [".async"] => {
                // cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size}{, cache-policy}
                let dst = self.mem_address(st, &ops[0], Space::Shared, scope)?;
                let src = self.mem_address(st, &ops[1], Space::Global, scope)?;
                let size = self.read(st, &ops[2], Type::U32, scope)?.into_int_value();
                let from_src = match ops.get(3) {
                    Some(o @ (Operand::Imm(..) | Operand::Sym { .. })) if self.is_value(o, scope) => {
                        self.read(st, o, Type::U32, scope)?.into_int_value()
                    }
                    _ => size,
                };
                self.copy(st, (dst, Space::Shared), (src, Space::Global), size, from_src, i.span)
            }
            [".async", ".bulk"] => {
                // cp.async.bulk.dst.src.completion [dst], [src], size{, [mbar]}{, ctaMask}{, policy}
                let (ds, ss) = if d.has(".global") && d.mods().any(|(_, m)| m.starts_with(".shared")) {
                    // The first space named is the destination.
                    let first_global = d.mods().position(|(_, m)| m == ".global");
                    let first_shared = d.mods().position(|(_, m)| m.starts_with(".shared"));
                    if first_global < first_shared {
                        (Space::Global, Space::Shared)
                    } else {
                        (Space::Shared, Space::Global)
                    }
                } else {
                    (Space::Shared, Space::Shared)
                };
                let dst = self.mem_address(st, &ops[0], ds, scope)?;
                let src = self.mem_address(st, &ops[1], ss, scope)?;
                let size = self.read(st, &ops[2], Type::U32, scope)?.into_int_value();
                self.copy(st, (dst, ds), (src, ss), size, size, i.span)?;
                if let Some(m @ Operand::Addr(_)) = ops.get(3) {
                    let mbar = self.mem_address(st, m, Space::Shared, scope)?;
                    let n = self.b.build_int_z_extend(size, i64t, "n")?;
                    self.mem_call(st, bi::Mem::MbarCompleteTx, mbar, n, i64t.const_zero())?;
                }
                Ok(())
            }
            [".reduce", ".async", ".bulk"] => {
                // cp.reduce.async.bulk.dst.src.completion.op.type [dst], [src], size{, [mbar]}{, policy}
                let ds = if d.has(".global") { Space::Global } else { Space::Shared };
                let dst = self.mem_address(st, &ops[0], ds, scope)?;
                let src = self.mem_address(st, &ops[1], Space::Shared, scope)?;
                let size = self.read(st, &ops[2], Type::U32, scope)?.into_int_value();
                let size = self.b.build_int_z_extend(size, i64t, "size")?;
                if self.checked {
                    let p = self.b.build_int_to_ptr(src, self.ptr(0), "src")?;
                    self.check_range(st, p, size, Space::Shared, 0, i.span)?;
                    // Read and written atomically per element: no race with other reductions.
                    let p = self.b.build_int_to_ptr(dst, self.ptr(0), "dst")?;
                    self.check_range(st, p, size, ds, crate::builtin::ACCESS_ATOMIC, i.span)?;
                }
                let op = d.get(G::Op).and_then(|o| bi::BULK_OPS.iter().position(|&b| b == o));
                let ty = d.get(G::Type).and_then(super::builtin::code_of);
                let (Some(op), Some(ty)) = (op, ty) else {
                    return Err(unsupported(
                        i.span,
                        "`cp.reduce.async.bulk` needs an operation and a type",
                    ));
                };
                let code = i64t.const_int(((op as u64) | (ty as u64) << 8) << 32, false);
                let packed = self.b.build_or(size, code, "sz")?;
                self.mem_call(st, bi::Mem::BulkReduce, dst, src, packed)?;
                if let Some(m @ Operand::Addr(_)) = ops.get(3) {
                    let mbar = self.mem_address(st, m, Space::Shared, scope)?;
                    self.mem_call(st, bi::Mem::MbarCompleteTx, mbar, size, i64t.const_zero())?;
                }
                Ok(())
            }
            _ => Err(unsupported(
                i.span,
                format!("`cp{}` is not supported yet", sub.concat()),
            )),
        }
    }

    /// `tensormap.cp_fenceproxy`: a tensor map copied from shared to global memory; the fence is the
    /// copy's completion, as for every copy here.
    pub(super) fn tensormap_copy<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        self.host_only(i.span, "tensormap.cp_fenceproxy")?;
        let ops = &i.operands;
        let dst = self.mem_address(st, &ops[0], Space::Global, scope)?;
        let src = self.mem_address(st, &ops[1], Space::Shared, scope)?;
        let size = self.read(st, &ops[2], Type::U32, scope)?.into_int_value();
        self.copy(st, (dst, Space::Global), (src, Space::Shared), size, size, i.span)
    }

    /// `tensormap.replace`: the runtime patches the map (`Mem::TensormapReplace`).
    pub(super) fn tensormap_replace<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        self.host_only(i.span, "tensormap.replace")?;
        let ops = &i.operands;
        let space = match d.get(G::Space) {
            Some(".global") => Space::Global,
            Some(_) => Space::Shared,
            None => Space::Generic,
        };
        let map = self.mem_address(st, &ops[0], space, scope)?;
        if self.checked {
            let p = self.b.build_int_to_ptr(map, self.ptr(0), "map")?;
            self.check_access(st, p, 128, space, bi::ACCESS_WRITE, i.span)?;
        }
        let field = d
            .get(G::Field)
            .and_then(|f| bi::TENSORMAP_FIELDS.iter().position(|&x| x == f));
        let field = field.expect("the checker requires a field") as u64;
        let ord = match ops.len() {
            3 => match &ops[1] {
                // The runtime marks the map invalid for an ordinal past the field's dimensions.
                Operand::Imm(ast::Imm::Int(k), _) => (*k).clamp(0, 255) as u64,
                o => return Err(unsupported(o.span(), "the ordinal must be an immediate")),
            },
            _ => 0,
        };
        let t = d.ty().expect("typed");
        let v = self
            .read(st, ops.last().expect("a new value"), t, scope)?
            .into_int_value();
        let i64t = self.i64();
        let v = self.b.build_int_z_extend_or_bit_cast(v, i64t, "new")?;
        let code = i64t.const_int(field | ord << 8, false);
        self.mem_call(st, bi::Mem::TensormapReplace, map, v, code)?;
        Ok(())
    }

    /// `cp.async.bulk.tensor` (tile mode, global to shared or shared to global) and
    /// `cp.reduce.async.bulk.tensor`: the runtime moves the box (`Mem::Tensor`).
    fn tensor_copy<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let ops = &i.operands;
        if d.get(G::LoadMode).is_some_and(|m| m != ".tile") {
            return Err(unsupported(i.span, "im2col tensor copies are not supported yet"));
        }
        let dims = isa::tensor_dims(d) as u64;
        let load = d.has(".shared::cluster");
        let (map_at, shared_at) = if load { (1, 0) } else { (0, 1) };
        let Operand::Bracket(items, _) = &ops[map_at] else {
            return Err(unsupported(ops[map_at].span(), "expected `[tensorMap, {coordinates}]`"));
        };
        let i64t = self.i64();
        let buf = st
            .alloca_at
            .build_alloca(i64t.array_type(TensorArgs::WORDS), "tensor.args")?;
        let put = |l: &mut Self, k: u32, v: IntValue<'ctx>| -> R<()> {
            let p = unsafe {
                l.b.build_in_bounds_gep(i64t, buf, &[i64t.const_int(k as u64, false)], "w")?
            };
            l.b.build_store(p, v)?;
            Ok(())
        };
        let shared = self.mem_address(st, &ops[shared_at], Space::Shared, scope)?;
        put(self, TensorArgs::SHARED, shared)?;
        let map = self.generic_address(st, &items[0], scope)?;
        put(self, TensorArgs::MAP, map)?;
        let mbar = match ops.get(2) {
            Some(m @ Operand::Addr(_)) if load => self.mem_address(st, m, Space::Shared, scope)?,
            _ => i64t.const_zero(),
        };
        put(self, TensorArgs::MBAR, mbar)?;
        let (_, window) = self.shared_offset(st, shared)?;
        put(self, TensorArgs::WINDOW, window)?;
        let coords = items.get(1).map(|c| self.vector_elements(c, scope)).unwrap_or_default();
        for k in 0..5 {
            let v = match coords.get(k) {
                Some(c) => {
                    let v = self.read(st, c, Type::S32, scope)?.into_int_value();
                    self.b.build_int_s_extend(v, i64t, "coord")?
                }
                None => i64t.const_zero(),
            };
            put(self, TensorArgs::COORDS + k as u32, v)?;
        }
        // The multicast mask comes after the mbarrier, and the im2col offsets when there are some.
        let multicast = if d.has(".multicast::cluster") {
            let at = 3 + usize::from(d.has(".im2col"));
            let mask = ops
                .get(at)
                .ok_or_else(|| unsupported(i.span, "a multicast copy needs a CTA mask"))?;
            let mask = self.read(st, mask, Type::B16, scope)?.into_int_value();
            let mask = self.b.build_int_z_extend(mask, i64t, "mask")?;
            self.b
                .build_or(mask, i64t.const_int(TensorArgs::MULTICAST_BIT, false), "multicast")?
        } else {
            i64t.const_zero()
        };
        put(self, TensorArgs::MULTICAST, multicast)?;
        let op = if d.spec.sub[0] == ".reduce" {
            let k = d.get(G::Op).and_then(|o| bi::BULK_OPS.iter().position(|&b| b == o));
            let k = k.ok_or_else(|| unsupported(i.span, "`cp.reduce.async.bulk.tensor` needs an operation"))?;
            bi::TENSOR_REDUCE | k as u32
        } else if load {
            bi::TENSOR_LOAD
        } else {
            bi::TENSOR_STORE
        };
        let op = if self.checked { op | bi::TENSOR_CHECKED } else { op };
        let args = self.b.build_ptr_to_int(buf, i64t, "args")?;
        let a = i64t.const_int(op as u64 | dims << 16, false);
        let site = i64t.const_int(i.span.start as u64, false);
        let faulted = self.mem_call(st, bi::Mem::Tensor, args, a, site)?;
        // A bad tensor map or box ends the launch: this thread stops here.
        let faulted = self
            .b
            .build_int_compare(IntPredicate::NE, faulted, i64t.const_zero(), "faulted")?;
        self.return_if(st, faulted)
    }

    /// The generic address an operand names: a variable's (a kernel parameter's lies in the launch's
    /// argument buffer), or a register's value.
    fn generic_address<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        op: &Operand<'a>,
        scope: &Scope<'m, 'a>,
    ) -> R<IntValue<'ctx>> {
        if let Operand::Sym { name, component: None } = op {
            if let Some(Entry::Var(v)) = scope.lookup(name.text) {
                let a = ast::Address {
                    base: Some(*name),
                    offset: 0,
                    span: name.span,
                };
                let p = self.address(st, &a, v.space, scope)?;
                return Ok(self.b.build_ptr_to_int(p, self.i64(), "generic")?);
            }
        }
        Ok(self.read(st, op, Type::U64, scope)?.into_int_value())
    }

    /// `st.async` and `red.async`: a store or reduction into shared memory of a CTA of the cluster (a
    /// cluster is one CTA here, so the CTA's own), which counts its bytes on the mbarrier named last.
    /// Without a state space the address is still a `.shared::cluster` one, as ptxas reads it (it
    /// takes 32-bit addresses there), though the 8.5 manual speaks of generic addressing.
    pub(super) fn async_store<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        if self.flavour == Flavour::Host {
            // An H200 ends a launch that is not a cluster launch here with an illegal instruction, even
            // for the CTA's own shared memory (tests/faults/faults.c).
            let i32t = self.i32();
            let cluster = self.env_field(st, EnvField::Cluster, i32t)?;
            let none = self
                .b
                .build_int_compare(IntPredicate::EQ, cluster, i32t.const_zero(), "no_cluster")?;
            let (stop, go) = (
                self.ctx.append_basic_block(st.func, "no_cluster"),
                self.ctx.append_basic_block(st.func, "cluster"),
            );
            self.b.build_conditional_branch(none, stop, go)?;
            self.b.position_at_end(stop);
            let i64t = self.i64();
            let site = i64t.const_int(i.span.start as u64, false);
            let why = i64t.const_int(bi::TRAP_NO_CLUSTER as u64, false);
            self.mem_call(st, bi::Mem::Trap, i64t.const_zero(), site, why)?;
            self.emit_return(st)?;
            self.b.position_at_end(go);
        }
        if d.spec.name == "st" {
            self.memory(st, i, d, scope)?;
        } else {
            self.atomic(st, i, d, scope)?;
        }
        let t = d.ty().expect("typed");
        let n = d.get(G::Vec).map_or(1, |v| v[2..].parse().unwrap_or(1));
        let i64t = self.i64();
        let bytes = i64t.const_int(t.bytes() as u64 * n, false);
        let mbar = self.mem_address(st, &i.operands[2], Space::Shared, scope)?;
        self.mem_call(st, bi::Mem::MbarCompleteTx, mbar, bytes, i64t.const_zero())?;
        Ok(())
    }

    /// Whether an operand is a value (an immediate or a register), not a cache policy.
    fn is_value(&self, o: &Operand<'_>, scope: &Scope<'_, '_>) -> bool {
        match o {
            Operand::Imm(..) => true,
            Operand::Sym { name, .. } => {
                matches!(scope.lookup(name.text), Some(Entry::Reg { ty, .. }) if ty.bits() == 32)
            }
            _ => false,
        }
    }

    /// Copies `size` bytes to `dst`, the first `from_src` of them from `src` and the rest zeros. Checked
    /// mode and the sanitizers see it as a read of the source and a write of the destination, at the
    /// copy's line, before it happens.
    fn copy(
        &mut self,
        st: &Fn<'ctx, '_, '_>,
        (dst, dst_space): (IntValue<'ctx>, Space),
        (src, src_space): (IntValue<'ctx>, Space),
        size: IntValue<'ctx>,
        from_src: IntValue<'ctx>,
        span: Span,
    ) -> R<()> {
        let i64t = self.i64();
        let size = self.b.build_int_z_extend(size, i64t, "size")?;
        let from = self.b.build_int_z_extend(from_src, i64t, "from")?;
        if self.checked {
            let read = self.b.build_select(
                self.b.build_int_compare(IntPredicate::ULT, from, size, "partial")?,
                from,
                size,
                "read",
            )?;
            let p = self.b.build_int_to_ptr(src, self.ptr(0), "src")?;
            self.check_range(st, p, read.into_int_value(), src_space, 0, span)?;
            let p = self.b.build_int_to_ptr(dst, self.ptr(0), "dst")?;
            self.check_range(st, p, size, dst_space, crate::builtin::ACCESS_WRITE, span)?;
        }
        let packed = self.b.build_or(
            size,
            self.b.build_left_shift(from, i64t.const_int(32, false), "f")?,
            "sz",
        )?;
        self.mem_call(st, bi::Mem::Copy, dst, src, packed)?;
        Ok(())
    }

    /// `mbarrier.*` of one CTA; waits that find the phase incomplete let the other threads run.
    pub(super) fn mbarrier<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        self.host_only(i.span, "mbarrier")?;
        let ops = &i.operands;
        let i64t = self.i64();
        let zero = i64t.const_zero();
        let sub = d.spec.sub.first().copied().unwrap_or("");
        let arg = |l: &mut Self, st: &mut Fn<'ctx, 'm, 'a>, k: usize, default: u64| -> R<IntValue<'ctx>> {
            match ops.get(k) {
                Some(o) => {
                    let v = l.read(st, o, Type::U64, scope)?.into_int_value();
                    Ok(l.b.build_int_z_extend_or_bit_cast(v, i64t, "v")?)
                }
                None => Ok(i64t.const_int(default, false)),
            }
        };
        match sub {
            ".init" => {
                let addr = self.mem_address(st, &ops[0], Space::Shared, scope)?;
                let count = arg(self, st, 1, 1)?;
                self.mem_call(st, bi::Mem::MbarInit, addr, count, zero)?;
                Ok(())
            }
            ".inval" => {
                let addr = self.mem_address(st, &ops[0], Space::Shared, scope)?;
                self.mem_call(st, bi::Mem::MbarInval, addr, zero, zero)?;
                Ok(())
            }
            ".expect_tx" | ".complete_tx" => {
                let addr = self.mem_address(st, &ops[0], Space::Shared, scope)?;
                let n = arg(self, st, 1, 0)?;
                let code = if sub == ".expect_tx" {
                    bi::Mem::MbarExpectTx
                } else {
                    bi::Mem::MbarCompleteTx
                };
                self.mem_call(st, code, addr, n, zero)?;
                Ok(())
            }
            ".arrive" | ".arrive_drop" => {
                // mbarrier.arrive{.expect_tx}… state, [addr]{, count | txCount}; `_` may stand for state.
                let (state, at) = match &ops[0] {
                    Operand::Addr(_) => (None, 0),
                    s => (Some(s), 1),
                };
                let addr = self.mem_address(st, &ops[at], Space::Shared, scope)?;
                let drop = i64t.const_int(if sub == ".arrive_drop" { bi::MBAR_DROP as u64 } else { 0 }, false);
                let count = if d.has(".expect_tx") {
                    let tx = arg(self, st, at + 1, 0)?;
                    self.mem_call(st, bi::Mem::MbarExpectTx, addr, tx, zero)?;
                    i64t.const_int(1, false)
                } else {
                    arg(self, st, at + 1, 1)?
                };
                let old = self.mem_call(st, bi::Mem::MbarArrive, addr, count, drop)?;
                if let Some(s) = state {
                    self.write(st, s, old.into(), false, scope)?;
                }
                Ok(())
            }
            ".test_wait" | ".try_wait" => {
                let addr = self.mem_address(st, &ops[1], Space::Shared, scope)?;
                let state = arg(self, st, 2, 0)?;
                let parity = i64t.const_int(d.has(".parity") as u64, false);
                let done = self.mem_call(st, bi::Mem::MbarTest, addr, state, parity)?;
                let done = self.b.build_int_compare(IntPredicate::NE, done, zero, "done")?;
                // Not complete: let the other threads run (they may be the ones to arrive), then
                // look once more; the caller's loop retries after that.
                let wait = self.ctx.append_basic_block(st.func, "mbar.wait");
                let join = self.ctx.append_basic_block(st.func, "mbar.join");
                let here = self.b.get_insert_block().expect("block");
                self.b.build_conditional_branch(done, join, wait)?;
                self.b.position_at_end(wait);
                self.collective(st, crate::collective::Kind::Yield, [None; 4])?;
                let again = self.mem_call(st, bi::Mem::MbarTest, addr, state, parity)?;
                let again = self.b.build_int_compare(IntPredicate::NE, again, zero, "done")?;
                let wait_end = self.b.get_insert_block().expect("block");
                self.b.build_unconditional_branch(join)?;
                self.b.position_at_end(join);
                let phi = self.b.build_phi(self.ctx.bool_type(), "complete")?;
                phi.add_incoming(&[(&done, here), (&again, wait_end)]);
                self.write(st, &ops[0], phi.as_basic_value(), false, scope)
            }
            ".pending_count" => {
                let s = arg(self, st, 1, 0)?;
                let v = self
                    .b
                    .build_and(s, i64t.const_int(bi::MBAR_PENDING_MASK, false), "pending")?;
                let v = self.b.build_int_truncate(v, self.i32(), "pending")?;
                self.write(st, &ops[0], v.into(), false, scope)
            }
            _ => Err(unsupported(i.span, format!("`mbarrier{sub}` is not supported yet"))),
        }
    }
}
