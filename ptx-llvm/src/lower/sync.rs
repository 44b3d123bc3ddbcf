//! Barriers and warp collectives: runtime calls on the host, NVVM intrinsics for NVPTX.

use super::*;
use crate::collective::{Kind, Reduction};

impl<'ctx> Lowerer<'ctx> {
    /// The low and high 32 bits of a 64-bit value, as collectives take a pointer or a 64-bit operand.
    pub(super) fn halves(&self, v: IntValue<'ctx>) -> R<(IntValue<'ctx>, IntValue<'ctx>)> {
        let (i32t, i64t) = (self.i32(), self.i64());
        let lo = self.b.build_int_truncate(v, i32t, "lo")?;
        let hi = self.b.build_right_shift(v, i64t.const_int(32, false), false, "hi")?;
        Ok((lo, self.b.build_int_truncate(hi, i32t, "hi")?))
    }

    /// `env->collective(env->sync, kind, a, b, c, mask)`; the result is an i64.
    pub(super) fn collective(
        &mut self,
        st: &Fn<'ctx, '_, '_>,
        kind: Kind,
        args: [Option<IntValue<'ctx>>; 4],
    ) -> R<IntValue<'ctx>> {
        if self.checked {
            // The runtime learns where each thread synchronises, for synccheck's reports.
            self.note_site(st, self.aligned as u64, crate::builtin::ACCESS_SITE)?;
        }
        let env = st.env.expect("env");
        let sp = self.env_ptr(env, EnvField::Sync)?;
        let sync = self.b.build_load(self.ptr(0), sp, "sync")?;
        let fp = self.env_ptr(env, EnvField::Collective)?;
        let f = self.b.build_load(self.ptr(0), fp, "collective")?.into_pointer_value();
        let i32t = self.i32();
        let fty = self.i64().fn_type(
            &[
                self.ptr(0).into(),
                i32t.into(),
                i32t.into(),
                i32t.into(),
                i32t.into(),
                i32t.into(),
            ],
            false,
        );
        let mut call_args: Vec<BasicMetadataValueEnum> = vec![sync.into(), i32t.const_int(kind as u64, false).into()];
        for a in args {
            let v = match a {
                Some(v) => self.b.build_int_z_extend_or_bit_cast(v, i32t, "arg")?,
                None => i32t.const_zero(),
            };
            call_args.push(v.into());
        }
        let r = self.b.build_indirect_call(fty, f, &call_args, "coll")?;
        match r.try_as_basic_value() {
            inkwell::values::ValueKind::Basic(v) => Ok(v.into_int_value()),
            _ => Err(unsupported(Span::default(), "internal error: collective result")),
        }
    }

    /// A member-mask operand, or the full warp for the legacy forms without one.
    fn member_mask<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        op: Option<&Operand<'a>>,
        scope: &Scope<'m, 'a>,
    ) -> R<IntValue<'ctx>> {
        match op {
            Some(o) => Ok(self.read(st, o, Type::B32, scope)?.into_int_value()),
            None => Ok(self.i32().const_all_ones()),
        }
    }

    /// CTA barriers: `bar`/`barrier` `.sync`, `.arrive` and `.red`, named, with thread counts.
    pub(super) fn barrier<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let ops = &i.operands;
        let i32t = self.i32();
        if d.has(".warp") {
            let mask = self.member_mask(st, ops.first(), scope)?;
            if self.flavour == Flavour::Nvvm {
                return self.call_intrinsic_void("llvm.nvvm.bar.warp.sync", &[mask.into()]);
            }
            self.collective(st, Kind::WarpSync, [None, None, None, Some(mask)])?;
            return Ok(());
        }
        let sync = d.get(G::Sync).unwrap_or(".sync");
        if d.spec.sub == [".cluster"] && self.flavour == Flavour::Host {
            // A cluster of one CTA: arrive counts on the cluster barrier, wait waits for every thread.
            let id = Some(i32t.const_int(crate::collective::CLUSTER_BARRIER as u64, false));
            let kind = if sync == ".arrive" {
                Kind::BarArrive
            } else {
                Kind::BarWait
            };
            self.collective(st, kind, [id, None, None, None])?;
            return Ok(());
        }
        if self.flavour == Flavour::Nvvm {
            let id = self.read(st, &ops[0], Type::U32, scope)?;
            if sync != ".sync" || ops.len() > 1 {
                return Err(unsupported(i.span, "only `bar.sync a` is supported for NVPTX yet"));
            }
            let f = if d.spec.name == "bar" {
                "llvm.nvvm.barrier.cta.sync.aligned.all"
            } else {
                "llvm.nvvm.barrier.cta.sync.all"
            };
            return self.call_intrinsic_void(f, &[id]);
        }
        // bar.red d, a{, b}, c: the destination comes first.
        let (dst, rest) = if sync == ".red" {
            (Some(&ops[0]), &ops[1..])
        } else {
            (None, &ops[..])
        };
        let id = self.read(st, &rest[0], Type::U32, scope)?.into_int_value();
        let (count, pred) = match (sync, rest.len()) {
            (".red", 3) => (Some(&rest[1]), Some(&rest[2])),
            (".red", _) => (None, rest.get(1)),
            (_, _) => (rest.get(1), None),
        };
        let count = match count {
            Some(c) => Some(self.read(st, c, Type::U32, scope)?.into_int_value()),
            None => None,
        };
        let pred = match pred {
            Some(p) => Some(self.read(st, p, Type::Pred, scope)?.into_int_value()),
            None => None,
        };
        let op = match (sync, d.get(G::Op)) {
            (".red", Some(".popc")) => Reduction::Popc,
            (".red", Some(".and")) => Reduction::And,
            (".red", Some(".or")) => Reduction::Or,
            _ => Reduction::None,
        };
        let kind = if sync == ".arrive" {
            Kind::BarArrive
        } else {
            Kind::BarSync
        };
        // `bar` is `barrier.aligned`; before sm_70 every barrier is.
        self.aligned = d.spec.name == "bar" || d.has(".aligned") || self.target.sm < 70;
        let r = self.collective(
            st,
            kind,
            [Some(id), count, Some(i32t.const_int(op as u64, false)), pred],
        )?;
        if let Some(dst) = dst {
            let v: BasicValueEnum = if op == Reduction::Popc {
                self.b.build_int_truncate(r, i32t, "popc")?.into()
            } else {
                self.b.build_int_truncate(r, self.ctx.bool_type(), "red")?.into()
            };
            self.write(st, dst, v, false, scope)?;
        }
        Ok(())
    }

    /// `activemask`, `redux.sync`, `match.sync`, `elect.sync` and `nanosleep` on the host.
    pub(super) fn warp_other<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let ops = &i.operands;
        let (i32t, i64t) = (self.i32(), self.i64());
        self.host_only(i.span, d.spec.name)?;
        match d.spec.name {
            "activemask" => {
                // The site tells lanes that reached this instruction from lanes waiting elsewhere.
                let site = i32t.const_int(i.span.start as u64, false);
                let r = self.collective(st, Kind::Activemask, [None, None, Some(site), None])?;
                let v = self.b.build_int_truncate(r, i32t, "active")?;
                self.write(st, &ops[0], v.into(), false, scope)
            }
            "nanosleep" => {
                self.collective(st, Kind::Yield, [None; 4])?;
                Ok(())
            }
            "redux" => {
                let t = d.ty().unwrap_or(Type::B32);
                let a = self.read(st, &ops[1], Type::B32, scope)?.into_int_value();
                let mask = self.member_mask(st, ops.get(2), scope)?;
                let kind = match d.get(G::Op) {
                    Some(".min") => Kind::ReduxMin,
                    Some(".max") => Kind::ReduxMax,
                    Some(".and") => Kind::ReduxAnd,
                    Some(".or") => Kind::ReduxOr,
                    Some(".xor") => Kind::ReduxXor,
                    _ => Kind::ReduxAdd,
                };
                let signed = i32t.const_int(t.is_signed() as u64, false);
                let r = self.collective(st, kind, [Some(a), Some(signed), None, Some(mask)])?;
                let v = self.b.build_int_truncate(r, i32t, "redux")?;
                self.write(st, &ops[0], v.into(), false, scope)
            }
            "match" => {
                let t = d.ty().unwrap_or(Type::B32);
                let a = self.read(st, &ops[1], bits_type(t.bits()), scope)?.into_int_value();
                let a = self.b.build_int_z_extend_or_bit_cast(a, i64t, "a")?;
                let (lo, hi) = self.halves(a)?;
                let mask = self.member_mask(st, ops.get(2), scope)?;
                let kind = if d.get(G::Mode) == Some(".all") {
                    Kind::MatchAll
                } else {
                    Kind::MatchAny
                };
                let r = self.collective(st, kind, [Some(lo), Some(hi), None, Some(mask)])?;
                let m = self.b.build_int_truncate(r, i32t, "match")?;
                let p = self.b.build_int_truncate(
                    self.b.build_right_shift(r, i64t.const_int(32, false), false, "p")?,
                    self.ctx.bool_type(),
                    "p",
                )?;
                match &ops[0] {
                    Operand::Pair(dm, dp, _) => {
                        self.write(st, dm, m.into(), false, scope)?;
                        self.write(st, dp, p.into(), false, scope)
                    }
                    dst => self.write(st, dst, m.into(), false, scope),
                }
            }
            _ => {
                // elect.sync d|p, mask: the lowest lane of the mask leads.
                let mask = self.member_mask(st, ops.get(1), scope)?;
                let leader = self
                    .call_intrinsic(
                        "llvm.cttz",
                        &[i32t.into()],
                        &[mask.into(), self.ctx.bool_type().const_zero().into()],
                    )?
                    .into_int_value();
                let Operand::Pair(dl, dp, _) = &ops[0] else {
                    return Err(unsupported(ops[0].span(), "`elect.sync` writes `d|p`"));
                };
                let lane = self.lane_id(st, i.span)?;
                let me = self.b.build_int_compare(IntPredicate::EQ, lane, leader, "elected")?;
                self.write(st, dl, leader.into(), false, scope)?;
                self.write(st, dp, me.into(), false, scope)
            }
        }
    }

    /// `shfl` and `vote`. On the host they go through the runtime, which exchanges values between the
    /// fibers of a warp; NVPTX gets the native instructions.
    pub(super) fn warp_collective<'m, 'a>(
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
            let kind = match mode {
                ".up" => Kind::ShflUp,
                ".down" => Kind::ShflDown,
                ".bfly" => Kind::ShflBfly,
                ".idx" => Kind::ShflIdx,
                other => return Err(unsupported(i.span, format!("`shfl{other}` is not a `shfl` mode"))),
            };
            let a = self.read(st, &ops[1], Type::B32, scope)?.into_int_value();
            let b = self.read(st, &ops[2], Type::B32, scope)?.into_int_value();
            let c = self.read(st, &ops[3], Type::B32, scope)?.into_int_value();
            let mask = self.member_mask(st, ops.get(4), scope)?;
            let r = self.collective(st, kind, [Some(a), Some(b), Some(c), Some(mask)])?;
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
        let kind = match mode {
            ".all" => Kind::VoteAll,
            ".any" => Kind::VoteAny,
            ".uni" => Kind::VoteUni,
            ".ballot" => Kind::VoteBallot,
            other => return Err(unsupported(i.span, format!("`vote{other}` is not a `vote` mode"))),
        };
        let p = self.read(st, &ops[1], Type::Pred, scope)?.into_int_value();
        let p = self.b.build_int_z_extend(p, i32t, "p")?;
        let mask = self.member_mask(st, ops.get(2), scope)?;
        let r = self.collective(st, kind, [Some(p), None, None, Some(mask)])?;
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
    pub(super) fn nvvm_warp_collective<'m, 'a>(
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

    /// The registers of a brace list (or one register), each with its width in 32-bit words: the
    /// layout of a lane's buffer for the warp matrix instructions.
    pub(super) fn fragment<'m, 'a>(&self, op: &'m Operand<'a>, scope: &Scope<'m, 'a>) -> Vec<(&'m Operand<'a>, u32)> {
        let elems: Vec<&'m Operand<'a>> = match op {
            Operand::Vector(v, _) => v.iter().collect(),
            o => vec![o],
        };
        elems
            .into_iter()
            .map(|e| {
                let bits = match e {
                    Operand::Sym { name, .. } => match scope.lookup(name.text) {
                        Some(Entry::Reg { ty, .. }) => ty.bits(),
                        _ => 32,
                    },
                    _ => 32,
                };
                (e, bits.div_ceil(32))
            })
            .collect()
    }

    /// The address of word `k` of a lane buffer.
    pub(super) fn buf_word(&self, buf: PointerValue<'ctx>, k: u32) -> R<PointerValue<'ctx>> {
        let i32t = self.i32();
        Ok(unsafe {
            self.b
                .build_in_bounds_gep(i32t, buf, &[i32t.const_int(k as u64, false)], "w")?
        })
    }

    /// Stores the registers of `list` into the buffer from word `at`; returns the word after them.
    pub(super) fn store_fragment<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        buf: PointerValue<'ctx>,
        at: u32,
        list: &[(&'m Operand<'a>, u32)],
        scope: &Scope<'m, 'a>,
    ) -> R<u32> {
        let mut k = at;
        for (op, w) in list {
            let v = self.read(st, op, if *w == 2 { Type::B64 } else { Type::B32 }, scope)?;
            let v = self.to_bits(v, 32 * w, false)?;
            self.b.build_store(self.buf_word(buf, k)?, v)?;
            k += w;
        }
        Ok(k)
    }

    /// Loads the registers of `list` from the buffer, from word `at`.
    pub(super) fn load_fragment<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        buf: PointerValue<'ctx>,
        at: u32,
        list: &[(&'m Operand<'a>, u32)],
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let mut k = at;
        for (op, w) in list {
            let v = self.b.build_load(self.int(32 * w), self.buf_word(buf, k)?, "r")?;
            self.write(st, op, v, false, scope)?;
            k += w;
        }
        Ok(())
    }

    /// Warp matrix instructions on the host (`mma`, `ldmatrix`, `stmatrix`, `movmatrix`): each lane
    /// writes its operands into a buffer of 32-bit words, the runtime computes every lane's part from
    /// all 32 buffers, and the lane reads its result back (see `crate::collective::Kind::Mma`).
    pub(super) fn warp_matrix<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        self.host_only(i.span, d.spec.name)?;
        let ops = &i.operands;
        let (i32t, i64t) = (self.i32(), self.i64());
        let full = Some(i32t.const_all_ones());
        if d.spec.name == "movmatrix" {
            let a = self.read(st, &ops[1], Type::B32, scope)?.into_int_value();
            let r = self.collective(st, Kind::Movmatrix, [Some(a), None, None, full])?;
            let v = self.b.build_int_truncate(r, i32t, "movmatrix")?;
            return self.write(st, &ops[0], v.into(), false, scope);
        }
        type Fragments<'m, 'a> = Vec<(&'m Operand<'a>, u32)>;
        let (inputs, outputs, addr_op): (Fragments<'m, 'a>, Fragments<'m, 'a>, Option<&'m Operand<'a>>) =
            match d.spec.name {
                "mma" => {
                    let mut ins = self.fragment(&ops[1], scope);
                    ins.extend(self.fragment(&ops[2], scope));
                    ins.extend(self.fragment(&ops[3], scope));
                    (ins, self.fragment(&ops[0], scope), None)
                }
                "ldmatrix" => (vec![], self.fragment(&ops[0], scope), Some(&ops[1])),
                _ => (self.fragment(&ops[1], scope), vec![], Some(&ops[0])),
            };
        let words_in: u32 = inputs.iter().map(|(_, w)| w).sum();
        let words_out: u32 = outputs.iter().map(|(_, w)| w).sum();
        let buf_ty = i32t.array_type(2 + words_in + words_out);
        let buf = st.alloca_at.build_alloca(buf_ty, "lane.buf")?;
        // ldmatrix/stmatrix: how many 8x8 matrices (`.x1`, `.x2`, `.x4`).
        let num = match d.get(G::Num) {
            Some(".x2") => 2,
            Some(".x4") => 4,
            _ => 1,
        };
        // Header: the form's code (mma) or this lane's row address (ldmatrix/stmatrix).
        let head: IntValue<'ctx> = match addr_op {
            None => {
                let mods: Vec<&str> = d.mods().map(|(_, m)| m).collect();
                let form = isa::mma_form(&mods).map_err(|why| not_on_cpu(i, d, why))?;
                i64t.const_int(form.code(), false)
            }
            Some(Operand::Addr(a)) => {
                let space = d.get(G::Space).and_then(Space::from_dot).unwrap_or(Space::Generic);
                let p = self.address(st, a, space, scope)?;
                self.check_matrix_row(st, i, d, num, p, space)?;
                self.b.build_ptr_to_int(p, i64t, "row")?
            }
            Some(o) => return Err(unsupported(o.span(), "expected an address")),
        };
        self.b.build_store(self.buf_word(buf, 0)?, head)?;
        self.store_fragment(st, buf, 2, &inputs, scope)?;
        let ptr = self.b.build_ptr_to_int(buf, i64t, "buf")?;
        let (lo, hi) = self.halves(ptr)?;
        let kind = match d.spec.name {
            "mma" => Kind::Mma,
            "ldmatrix" => Kind::Ldmatrix,
            _ => Kind::Stmatrix,
        };
        let c = i32t.const_int(num | (d.has(".trans") as u64) << 8, false);
        self.collective(st, kind, [Some(lo), Some(hi), Some(c), full])?;
        self.load_fragment(
            st,
            buf,
            if kind == Kind::Mma { 2 + words_in } else { 2 },
            &outputs,
            scope,
        )
    }

    /// `%laneid` of the running thread.
    fn lane_id(&mut self, st: &Fn<'ctx, '_, '_>, span: Span) -> R<IntValue<'ctx>> {
        self.special_scalar(st, &Name { text: "%laneid", span })
    }

    /// Checked mode: the row of eight 16-bit elements (16 bytes) that this lane's address names for
    /// `ldmatrix` (read) or `stmatrix` (written), as any access (bounds and the sanitizers). Only
    /// lanes `0..8 × num` give a row address (`.x1`: 8, `.x2`: 16, `.x4`: all); the others' is not
    /// used and not checked. Each row counts as an access of the lane that names it.
    fn check_matrix_row(
        &mut self,
        st: &Fn<'ctx, '_, '_>,
        i: &Instruction<'_>,
        d: &Decoded,
        num: u64,
        row: inkwell::values::PointerValue<'ctx>,
        space: Space,
    ) -> R<()> {
        if !self.checked {
            return Ok(());
        }
        let access = if d.spec.name == "ldmatrix" {
            0
        } else {
            crate::builtin::ACCESS_WRITE
        };
        let lanes = 8 * num;
        if lanes == 32 {
            return self.check_access(st, row, 16, space, access, i.span);
        }
        let lane = self.lane_id(st, i.span)?;
        let gives =
            self.b
                .build_int_compare(IntPredicate::ULT, lane, self.i32().const_int(lanes, false), "gives.row")?;
        let check = self.ctx.append_basic_block(st.func, "row.check");
        let done = self.ctx.append_basic_block(st.func, "row.checked");
        self.b.build_conditional_branch(gives, check, done)?;
        self.b.position_at_end(check);
        self.check_access(st, row, 16, space, access, i.span)?;
        self.b.build_unconditional_branch(done)?;
        self.b.position_at_end(done);
        Ok(())
    }

    /// `wmma.load`, `wmma.store` and `wmma.mma` on the host (layouts in ptx-jit's `wmma` module):
    /// loads and stores touch only the lane's own fragment; `wmma.mma` reads the whole warp's.
    pub(super) fn wmma<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        use crate::builtin as bi;
        self.host_only(i.span, "wmma")?;
        let ops = &i.operands;
        let (i32t, i64t) = (self.i32(), self.i64());
        let sub = d.spec.sub.first().copied().unwrap_or("");
        let mods: Vec<&str> = d.mods().map(|(_, m)| m).collect();
        let form = isa::wmma_form(sub, &mods).map_err(|why| not_on_cpu(i, d, why))?;
        let desc = i64t.const_int(form.code(), false);
        let words = |list: &[(&'m Operand<'a>, u32)]| list.iter().map(|(_, w)| w).sum::<u32>();
        let put = |l: &mut Self, buf: PointerValue<'ctx>, k: u64, v: IntValue<'ctx>| -> R<()> {
            l.b.build_store(l.buf_word(buf, k as u32)?, v)?;
            Ok(())
        };
        match form.op {
            isa::WmmaOp::Load | isa::WmmaOp::Store => {
                let load = form.op == isa::WmmaOp::Load;
                let (list, addr_op, stride_op) = if load {
                    (self.fragment(&ops[0], scope), &ops[1], ops.get(2))
                } else {
                    (self.fragment(&ops[1], scope), &ops[0], ops.get(2))
                };
                let n = words(&list);
                let buf = st.alloca_at.build_alloca(i32t.array_type(3 + n), "wmma.buf")?;
                put(self, buf, 0, desc)?;
                put(self, buf, 2, i32t.const_int(n as u64, false))?;
                let Operand::Addr(a) = addr_op else {
                    return Err(unsupported(addr_op.span(), "expected an address"));
                };
                let space = d.get(G::Space).and_then(Space::from_dot).unwrap_or(Space::Generic);
                let p = self.address(st, a, space, scope)?;
                let p = self.b.build_ptr_to_int(p, i64t, "p")?;
                let stride = match stride_op {
                    Some(o) => {
                        let v = self.read(st, o, Type::U32, scope)?.into_int_value();
                        self.b.build_int_z_extend(v, i64t, "stride")?
                    }
                    None => i64t.const_zero(),
                };
                if !load {
                    self.store_fragment(st, buf, 3, &list, scope)?;
                }
                let bp = self.b.build_ptr_to_int(buf, i64t, "buf")?;
                let code = if load { bi::Mem::WmmaLoad } else { bi::Mem::WmmaStore };
                self.mem_call(st, code, p, bp, stride)?;
                if load {
                    self.load_fragment(st, buf, 3, &list, scope)?;
                }
                Ok(())
            }
            isa::WmmaOp::Mma => {
                let (dl, al, bl, cl) = (
                    self.fragment(&ops[0], scope),
                    self.fragment(&ops[1], scope),
                    self.fragment(&ops[2], scope),
                    self.fragment(&ops[3], scope),
                );
                let (nd, na, nb, nc) = (words(&dl), words(&al), words(&bl), words(&cl));
                let buf = st
                    .alloca_at
                    .build_alloca(i32t.array_type(6 + na + nb + nc + nd), "wmma.buf")?;
                put(self, buf, 0, desc)?;
                for (k, n) in [na, nb, nc, nd].iter().enumerate() {
                    put(self, buf, 2 + k as u64, i32t.const_int(*n as u64, false))?;
                }
                let k = self.store_fragment(st, buf, 6, &al, scope)?;
                let k = self.store_fragment(st, buf, k, &bl, scope)?;
                let k = self.store_fragment(st, buf, k, &cl, scope)?;
                let ptr = self.b.build_ptr_to_int(buf, i64t, "buf")?;
                let (lo, hi) = self.halves(ptr)?;
                self.collective(st, Kind::Wmma, [Some(lo), Some(hi), None, Some(i32t.const_all_ones())])?;
                self.load_fragment(st, buf, k, &dl, scope)
            }
        }
    }
}

/// The refusal of a matrix form the CPU's emulation has no layout for (the sparse `mma.sp`; sub-byte
/// `wmma`), saying why.
fn not_on_cpu(i: &Instruction<'_>, d: &Decoded, why: String) -> Fail {
    let mods: String = d.spec.sub.iter().copied().chain(d.mods().map(|(_, m)| m)).collect();
    unsupported(
        i.span,
        format!("`{}{mods}` is not supported on the CPU yet: {why}", d.spec.name),
    )
}
