//! Texture and surface instructions on the host (`tex`, `tld4`, `txq`, `suld`, `sust`, `sured`, `suq`): the
//! operands go through a small per-thread buffer to the runtime's `ptxjit_tex`, which samples,
//! gathers, queries, loads or stores; the instruction's form is packed into its code
//! ([`crate::builtin::TexOp`]). A handle is a 64-bit texture or surface object, or a `.texref` or
//! `.surfref` variable, which holds the handle of the object bound to it; independent-mode samplers
//! are refused.

use super::*;
use crate::builtin::{self as bi, TexOp};

impl<'ctx> Lowerer<'ctx> {
    pub(super) fn texture<'m, 'a>(
        &mut self,
        st: &mut Fn<'ctx, 'm, 'a>,
        i: &'m Instruction<'a>,
        d: &Decoded,
        scope: &Scope<'m, 'a>,
    ) -> R<()> {
        let name = d.spec.name;
        self.host_only(i.span, name)?;
        let refuse = |what: &str| Err(unsupported(i.span, format!("`{name}` {what} is not supported yet")));
        let index = |list: &[&str], m: Option<&str>| {
            m.and_then(|m| list.iter().position(|&x| x == m.trim_start_matches('.')))
                .map(|k| k as u32)
        };
        let mut op = TexOp {
            geom: index(&bi::TEX_GEOMS, d.get(G::Geom)).unwrap_or(0),
            query: index(&bi::TEX_QUERIES, d.get(G::Query)).unwrap_or(0),
            ..TexOp::default()
        };
        if op.geom >= 7 {
            return refuse("on multi-sample textures");
        }
        let ops = &i.operands;
        // The bracket's handle and coordinates (absent for queries).
        let (bracket, dest, src) = match name {
            "sust" | "sured" => (&ops[0], None, ops.get(1)),
            _ => (&ops[1], Some(&ops[0]), None),
        };
        let items: Vec<&'m Operand<'a>> = match bracket {
            Operand::Bracket(v, _) => v.iter().collect(),
            Operand::Addr(a) if a.offset == 0 && a.base.is_some() => vec![bracket],
            other => return Err(unsupported(other.span(), "expected `[handle, coordinates]`")),
        };
        let handle_op = match items[0] {
            Operand::Addr(a) => Operand::Sym {
                name: a.base.expect("checked above"),
                component: None,
            },
            o => o.clone(),
        };
        // A handle named directly is a register or a module's texture or surface reference.
        if let Operand::Sym { name: n, .. } = &handle_op {
            if let Some(Entry::Var(v)) = scope.lookup(n.text) {
                if !(matches!(v.ty, Type::Texref | Type::Surfref) && v.space == Space::Global) {
                    return refuse("on a variable other than a module's `.texref` or `.surfref`");
                }
            }
        }
        let queries = matches!(name, "txq" | "suq");
        if items.len() > if queries { 1 } else { 2 } {
            return refuse("with an explicit sampler (independent texturing mode)");
        }
        let (i32t, i64t) = (self.i32(), self.i64());
        let buf = st
            .alloca_at
            .build_alloca(i32t.array_type(bi::TEX_BUF_WORDS), "tex.buf")?;
        let put = |l: &mut Self, k: u32, v: IntValue<'ctx>| -> R<()> {
            l.b.build_store(l.buf_word(buf, k)?, v)?;
            Ok(())
        };
        // Up to 4 elements of a vector operand (coordinates, gradients), as 32-bit words from `at`.
        let put_vector = |l: &mut Self, st: &mut Fn<'ctx, 'm, 'a>, o: &Operand<'a>, at: u32| -> R<()> {
            for (k, e) in l.vector_elements(o, scope).iter().take(4).enumerate() {
                let v = l.read(st, e, Type::B32, scope)?.into_int_value();
                put(l, at + k as u32, v)?;
            }
            Ok(())
        };
        if let Some(c) = items.get(1) {
            put_vector(self, st, c, bi::TEX_COORDS)?;
        }
        // The data registers of a load's destination or a store's source.
        let mut dest_regs = dest.map(|o| match o {
            // `d|p`: the predicate says whether the texels were resident, which they always are.
            Operand::Pair(d, p, _) => (self.vector_elements(d, scope), Some((**p).clone())),
            o => (self.vector_elements(o, scope), None),
        });
        match name {
            "tex" | "tld4" => {
                let tys: Vec<Type> = d.types().collect();
                op.kind = if name == "tex" { bi::TEX_SAMPLE } else { bi::TEX_GATHER };
                op.dtype = match tys.first() {
                    Some(Type::U32) => 0,
                    Some(Type::S32) => 1,
                    Some(Type::F32) => 2,
                    _ => return refuse("returning half-precision data"),
                };
                op.float_coords = tys.get(1) != Some(&Type::S32);
                op.comp = index(&["r", "g", "b", "a"], d.get(G::Comp)).unwrap_or(0);
                let extra = ops.len() - 2;
                match d.get(G::Mip) {
                    Some(".grad") => {
                        if extra > 2 {
                            return refuse("with offsets or a depth comparison");
                        }
                        op.grad = true;
                        for (g, o) in ops[2..4.min(ops.len())].iter().enumerate() {
                            put_vector(self, st, o, bi::TEX_GRAD + 4 * g as u32)?;
                        }
                    }
                    Some(".level") => {
                        op.level = true;
                        let lod = self.read(st, &ops[2], Type::B32, scope)?.into_int_value();
                        put(self, bi::TEX_LOD, lod)?;
                        if extra > 1 {
                            return refuse("with offsets or a depth comparison");
                        }
                    }
                    _ if extra > 0 => return refuse("with offsets or a depth comparison"),
                    _ => {}
                }
            }
            "suld" | "sust" | "sured" => {
                let sample = d.get(G::Class) == Some(".p");
                if sample && name != "sured" {
                    return refuse("formatted (`.p`)");
                }
                op.kind = match name {
                    "suld" => bi::SURF_LOAD,
                    "sust" => bi::SURF_STORE,
                    _ => bi::SURF_RED,
                };
                if name == "sured" {
                    let k = bi::BULK_OPS.iter().position(|&o| Some(o) == d.get(G::Op)).unwrap_or(0) as u32;
                    let signed = d.ty().is_some_and(Type::is_signed);
                    op.red =
                        k | if signed { bi::SURF_RED_SIGNED } else { 0 } | if sample { bi::SURF_RED_SAMPLE } else { 0 };
                }
                op.dtype = match d.ty().map(Type::bits) {
                    Some(8) => 0,
                    Some(16) => 1,
                    Some(64) => 3,
                    _ => 2,
                };
                op.vec = match d.get(G::Vec) {
                    Some(".v2") => 2,
                    Some(".v4") => 4,
                    _ => 1,
                };
                if op.vec << op.dtype > 16 {
                    return refuse("of more than 16 bytes");
                }
                op.clamp = match d.get(G::Clamp) {
                    Some(".clamp") => 1,
                    Some(".zero") => 2,
                    _ => 0,
                };
                if let Some(s) = src {
                    let bits: u32 = 8 << op.dtype;
                    for (k, o) in self.vector_elements(s, scope).iter().take(op.vec as usize).enumerate() {
                        let v = self
                            .read(
                                st,
                                o,
                                [Type::B8, Type::B16, Type::B32, Type::B64][op.dtype as usize],
                                scope,
                            )?
                            .into_int_value();
                        let at = bi::TEX_DATA + k as u32 * bits.div_ceil(32);
                        if bits == 64 {
                            let lo = self.b.build_int_truncate(v, i32t, "lo")?;
                            let hi = self.b.build_right_shift(v, i64t.const_int(32, false), false, "hi")?;
                            put(self, at, lo)?;
                            put(self, at + 1, self.b.build_int_truncate(hi, i32t, "hi")?)?;
                        } else {
                            put(self, at, self.b.build_int_z_extend(v, i32t, "el")?)?;
                        }
                    }
                }
            }
            "txq" | "suq" => {
                op.kind = if name == "txq" { bi::TEX_QUERY } else { bi::SURF_QUERY };
                if d.get(G::Mip).is_some() {
                    return refuse("of a mipmap level (`.level`)");
                }
            }
            _ => return refuse("here"),
        }
        let handle = self.read(st, &handle_op, Type::U64, scope)?.into_int_value();
        let f = self.module.get_function(bi::TEX).unwrap_or_else(|| {
            let pt = self.ptr(0);
            let ty = i64t.fn_type(&[i32t.into(), pt.into(), i64t.into(), pt.into()], false);
            self.module.add_function(bi::TEX, ty, None)
        });
        let env = st
            .env
            .ok_or_else(|| unsupported(i.span, "texture instructions need the environment"))?;
        let status = self
            .b
            .build_call(
                f,
                &[
                    i32t.const_int(op.pack() as u64, false).into(),
                    env.into(),
                    handle.into(),
                    buf.into(),
                ],
                "tex",
            )?
            .try_as_basic_value()
            .basic()
            .expect("ptxjit_tex returns i64")
            .into_int_value();
        // The launch faulted (a dead handle, `.trap`): the thread stops here, as on a GPU.
        let bad = self
            .b
            .build_int_compare(IntPredicate::NE, status, i64t.const_zero(), "tex.fault")?;
        self.return_if(st, bad)?;
        let Some((regs, pred)) = dest_regs.take() else {
            return Ok(());
        };
        let (count, bits): (usize, u32) = match op.kind {
            bi::SURF_LOAD => (op.vec as usize, 8 << op.dtype),
            bi::TEX_QUERY | bi::SURF_QUERY => (1, 32),
            _ => (4, 32),
        };
        for (k, o) in regs.iter().take(count).enumerate() {
            let at = bi::TEX_DATA + k as u32 * bits.div_ceil(32);
            let word = |l: &Self, w: u32| -> R<IntValue<'ctx>> {
                let p = l.buf_word(buf, w)?;
                Ok(l.b.build_load(i32t, p, "w")?.into_int_value())
            };
            let v = if bits == 64 {
                let (lo, hi) = (word(self, at)?, word(self, at + 1)?);
                let lo = self.b.build_int_z_extend(lo, i64t, "lo")?;
                let hi = self.b.build_int_z_extend(hi, i64t, "hi")?;
                let hi = self.b.build_left_shift(hi, i64t.const_int(32, false), "hi")?;
                self.b.build_or(lo, hi, "el")?
            } else {
                let w = word(self, at)?;
                self.b.build_int_truncate_or_bit_cast(w, self.int(bits), "el")?
            };
            self.write(st, o, v.into(), false, scope)?;
        }
        if let Some(p) = pred {
            self.write(st, &p, self.ctx.bool_type().const_int(1, false).into(), false, scope)?;
        }
        Ok(())
    }
}
