//! Rules between an instruction's modifiers and operands that the ISA table's groups cannot express,
//! and `cvt`'s rounding rules.

use super::*;

impl<'c, 'm, 'a> FnChecker<'c, 'm, 'a> {
    /// Rules between an instruction's modifiers and operands that the table's groups cannot express.
    pub(super) fn form_rules(&mut self, i: &Instruction<'a>, d: &Decoded, scope: &Scope<'m, 'a>) {
        let name = d.spec.name;
        // (Not in fragments: the manual's own examples write `mad.u32` without a mode once.)
        if matches!(name, "mul" | "mad") && d.is_primary() && !self.fragment {
            if let Some(t) = d.ty().filter(|t| !t.is_float()) {
                if d.get(G::Mode).is_none() {
                    self.diags.push(
                        Diagnostic::error(
                            Code::P0103,
                            i.opcode.span,
                            format!("integer `{name}{}` needs `.lo`, `.hi` or `.wide`", t.name()),
                        )
                        .label("which half of the product?")
                        .help(format!("write `{name}.lo{}` for the low half", t.name())),
                    );
                }
            }
        }
        let modifier = |text: &str| i.mods.iter().find(|m| m.text == text).map(|m| m.span);
        let bad = |diags: &mut Vec<Diagnostic>, span: Span, msg: String, help: &str| {
            diags.push(
                Diagnostic::error(Code::P0102, span, msg)
                    .label("not allowed here")
                    .help(help.to_string()),
            );
        };
        let ty = d.ty();
        // Arithmetic: rounding, flushing and approximation are for floats; high/low/wide halves and
        // carries for integers; integers saturate only in add/sub.s32 and mad.hi.s32.
        if name == "div"
            && d.is_primary()
            && d.ty().is_some_and(Type::is_float)
            && d.get(G::Round).is_none()
            && d.get(G::Approx).is_none()
        {
            self.diags.push(
                Diagnostic::error(
                    Code::P0103,
                    i.opcode.span,
                    "floating-point `div` needs `.approx`, `.full` or a rounding modifier",
                )
                .label("how should it divide?")
                .help("write `div.rn` for an IEEE division (or `div.approx` / `div.full` for `.f32`)"),
            );
        }
        // `setp`/`set` take a fourth operand exactly when a boolean operation combines it (ptxas:
        // "Arguments mismatch").
        if matches!(name, "setp" | "set") {
            let ops = i.operands.len();
            match (d.get(G::BoolOp), ops) {
                (None, 4) => self.diags.push(
                    Diagnostic::error(
                        Code::P0104,
                        i.operands[3].span(),
                        format!("`{name}` has no boolean operation to combine this predicate with"),
                    )
                    .label("extra operand")
                    .help("add `.and`, `.or` or `.xor` after the comparison, or drop the operand".to_string()),
                ),
                (Some(op), 3) => self.diags.push(
                    Diagnostic::error(
                        Code::P0104,
                        i.span,
                        format!("`{op}` needs a predicate operand to combine with"),
                    )
                    .label("missing operand")
                    .help("add the predicate as the last operand, e.g. `, %p1`"),
                ),
                _ => {}
            }
        }
        // Which comparisons a type has: bit types compare for equality only, the unsigned-only names
        // (`.lo` …) and the unordered ones (`.equ` …) belong to unsigned and float types.
        if matches!(name, "setp" | "set") && d.is_primary() {
            if let (Some(cmp), Some(t)) = (d.get(G::Cmp), d.types().last()) {
                let ok = match t.kind() {
                    crate::types::Kind::Bits => matches!(cmp, ".eq" | ".ne"),
                    crate::types::Kind::Signed => matches!(cmp, ".eq" | ".ne" | ".lt" | ".le" | ".gt" | ".ge"),
                    crate::types::Kind::Unsigned => !matches!(
                        cmp,
                        ".equ" | ".neu" | ".ltu" | ".leu" | ".gtu" | ".geu" | ".num" | ".nan"
                    ),
                    _ => !matches!(cmp, ".lo" | ".ls" | ".hi" | ".hs"),
                };
                if !ok {
                    bad(
                        self.diags,
                        modifier(cmp).expect("written"),
                        format!("`{cmp}` is not a comparison of `{}` values", t.name()),
                        "bit types compare with .eq/.ne; use a signed, unsigned or float type to order",
                    );
                }
            }
        }
        // The types each atomic operation takes (ptxas 13's rules, beyond what the table's groups say).
        if matches!(name, "atom" | "red") && d.spec.sub.is_empty() {
            if let (Some(op), Some(t)) = (d.get(G::Op), d.ty()) {
                use Type::*;
                let half = matches!(t, F16 | Bf16 | F16x2 | Bf16x2);
                let vec = d.get(G::Vec).is_some();
                let ok = match op {
                    ".add" => matches!(t, U32 | S32 | U64 | F32 | F64) || half,
                    ".inc" | ".dec" => t == U32,
                    // Half-precision min and max exist only as vectors.
                    ".min" | ".max" => matches!(t, U32 | S32 | U64 | S64) || (half && vec),
                    ".and" | ".or" | ".xor" => matches!(t, B32 | B64),
                    ".exch" => matches!(t, B32 | B64 | B128),
                    ".cas" => matches!(t, B16 | B32 | B64 | B128),
                    _ => true,
                };
                let written = modifier(t.name()).unwrap_or(i.opcode.span);
                if !ok {
                    bad(
                        self.diags,
                        written,
                        format!("`{name}{op}` does not take `{}`", t.name()),
                        "add: .u32 .s32 .u64 .f32 .f64 and (.noftz) .f16 .bf16 .f16x2 .bf16x2; inc/dec: .u32; min/max: .u32 .s32 .u64 .s64 (half-precision as vectors); and/or/xor: .b32 .b64; exch: .b32 .b64 .b128; cas: .b16 .b32 .b64 .b128",
                    );
                } else if vec && !(half || t == F32) {
                    bad(
                        self.diags,
                        written,
                        format!("`{name}` has no vectors of `{}`", t.name()),
                        "vector atomics are of .f32, .f16, .bf16, .f16x2 or .bf16x2",
                    );
                } else if vec && !matches!(d.get(G::Space), None | Some(".global")) {
                    let sp = d.get(G::Space).expect("matched");
                    bad(
                        self.diags,
                        modifier(sp).expect("written"),
                        format!("vector `{name}` is not for `{sp}`"),
                        "vector atomics work on .global (or generic) addresses",
                    );
                } else if half && !d.has(".noftz") {
                    bad(
                        self.diags,
                        written,
                        format!("`{name}` on `{}` needs `.noftz`", t.name()),
                        "write `.noftz`: half-precision atomics keep subnormals",
                    );
                } else if d.get(G::Vec) == Some(".v8") && !matches!(t, F16 | Bf16) {
                    bad(
                        self.diags,
                        modifier(".v8").expect("written"),
                        format!(
                            "`{name}.v8` is for `.f16` and `.bf16`; `{}` takes `.v2` or `.v4`",
                            t.name()
                        ),
                        "use .v4 (or .v2)",
                    );
                } else if d.has(".noftz") && !(half || (t == F32 && self.target.version >= (9, 4))) {
                    bad(
                        self.diags,
                        modifier(".noftz").expect("written"),
                        format!(
                            "`.noftz` is for half-precision types{}",
                            if t == F32 { " (and `.f32` from PTX 9.4)" } else { "" }
                        ),
                        "remove `.noftz`",
                    );
                }
            }
        }
        // A predicate result written `d|p`: `elect.sync` and `lop3.BoolOp` need one (d may be `_`), plain
        // `lop3` takes none (ptxas: "Predicate output expected" / "not allowed").
        let wants_pair = match name {
            "elect" => Some(true),
            "lop3" => Some(d.get(G::BoolOp).is_some()),
            _ => None,
        };
        if let (Some(want), Some(first)) = (wants_pair, i.operands.first()) {
            let has = matches!(first, Operand::Pair(_, p, _) if !matches!(**p, Operand::Sink(_)));
            if want != has {
                let (msg, label, help) = if want {
                    (
                        format!("`{name}` writes a predicate: its destination is `d|p`"),
                        "no predicate result",
                        "write `%r1|%p1` (or `_|%p1` when d is not needed)",
                    )
                } else {
                    (
                        format!("`{name}` without `.and`/`.or` writes no predicate"),
                        "predicate result not allowed",
                        "drop `|p`, or add `.or`/`.and` and the predicate to combine with",
                    )
                };
                self.diags.push(
                    Diagnostic::error(Code::P0105, first.span(), msg)
                        .label(label)
                        .help(help),
                );
            }
        }
        // `.xorsign` and `.abs` of min/max come together: the result's sign is the XOR of the inputs'
        // and its magnitude the min or max of their absolute values.
        if matches!(name, "min" | "max") && d.has(".xorsign") != d.has(".abs") {
            let (have, lacks) = if d.has(".abs") {
                (".abs", ".xorsign")
            } else {
                (".xorsign", ".abs")
            };
            bad(
                self.diags,
                modifier(have).expect("written"),
                format!("`{have}` needs `{lacks}`"),
                "write both: `.xorsign.abs`",
            );
        }
        // Conversions with the narrow floats of PTX 8.6 and later: which exist, from which version, and
        // only on architecture-specific targets (ptxas 13.5).
        if name == "cvt" && d.spec.sub.is_empty() {
            let types: Vec<&str> = d.type_names().collect();
            if let [dst, src] = types.as_slice() {
                let sat = d.get(G::Sat) == Some(".satfinite");
                match isa::narrow_cvt(dst, src, d.get(G::Round), sat, d.has(".relu")) {
                    Some(Err(why)) => self.diags.push(
                        Diagnostic::error(
                            Code::P0102,
                            i.opcode.span.to(i.mods.last().map_or(i.opcode.span, |m| m.span)),
                            format!("not a form of `cvt`: {why}"),
                        )
                        .label("no such conversion")
                        .help("see `ptx-jit explain cvt` for the narrow-float conversions"),
                    ),
                    Some(Ok(ptx)) => {
                        let want = isa::narrow_cvt_operands(dst, src);
                        if i.operands.len() != want {
                            self.diags.push(
                                Diagnostic::error(
                                    Code::P0104,
                                    i.span,
                                    format!("`cvt{dst}{src}` takes {want} operands, not {}", i.operands.len()),
                                )
                                .label("wrong number of operands")
                                .help(if want == 3 {
                                    "write `d, a, b`: a goes to the upper lane, b to the lower"
                                } else {
                                    "write `d, a`"
                                }),
                            );
                        }
                        // The version and target the entry asks for are checked with every instruction;
                        // this adds the later versions and the architecture- or family-specific target.
                        let (entry_ptx, entry_sm) = d.requires();
                        let known = self.target.version != (0, 0) && self.target.sm != 0;
                        let reported = self.target.version < entry_ptx || self.target.sm < entry_sm;
                        let specific = self.target.sm >= 100 && matches!(self.target.suffix, Some('a') | Some('f'));
                        if known && !reported && (self.target.version < ptx || !specific) {
                            let v = ptx.max(self.target.version);
                            self.diags.push(
                                Diagnostic::error(
                                    Code::P0301,
                                    i.opcode.span,
                                    format!(
                                        "`cvt{dst}{src}` requires PTX {}.{} and an architecture- or family-specific target (sm_100a, sm_100f or later); {} sm_{}{} / PTX {}.{}",
                                        ptx.0,
                                        ptx.1,
                                        self.against,
                                        self.target.sm,
                                        self.target.suffix.map_or(String::new(), String::from),
                                        self.target.version.0,
                                        self.target.version.1
                                    ),
                                )
                                .label("not available for this target")
                                .help(format!(
                                    "raise the module header to `.version {}.{}` and `.target sm_{}a`",
                                    v.0,
                                    v.1,
                                    self.target.sm.max(100)
                                )),
                            );
                        }
                    }
                    None => {}
                }
            }
        }
        if d.spec.sub == [".reduce", ".async", ".bulk"] {
            // The destination decides the completion mechanism and the types.
            let dst = d.get(G::Space).unwrap_or(".global");
            let completion = d.get(G::Completion).unwrap_or("");
            let wants = if dst == ".global" {
                ".bulk_group"
            } else {
                ".mbarrier::complete_tx::bytes"
            };
            if completion != wants {
                bad(
                    self.diags,
                    modifier(completion).unwrap_or(i.opcode.span),
                    format!("`cp.reduce.async.bulk{dst}` completes with `{wants}`"),
                    "into .global: .bulk_group; into .shared::cluster: .mbarrier::complete_tx::bytes and an mbarrier operand",
                );
            }
            if let (Some(op), Some(ty)) = (d.get(G::Op), d.get(G::Type)) {
                if !isa::bulk_reduce_takes(dst, op, ty, d.has(".noftz")) {
                    bad(
                        self.diags,
                        modifier(ty).unwrap_or(i.opcode.span),
                        format!("`cp.reduce.async.bulk{dst}{op}` does not take `{}{ty}`", if d.has(".noftz") { ".noftz" } else { "" }),
                        "into .global: add .u32 .s32 .u64 .f32 .f64, .noftz.f16 .noftz.bf16; min/max .u32 .s32 .u64 .s64 .f16 .bf16; inc/dec .u32; and/or/xor .b32 .b64. Into .shared::cluster: add .u32 .s32 .u64; min/max .u32 .s32; inc/dec .u32; and/or/xor .b32",
                    );
                }
            }
        }
        // red.async's operations and types, st.async's 128 bits at most (ptxas 13.5).
        if d.spec.sub == [".async"] && name == "red" {
            if let (Some(op), Some(t)) = (d.get(G::Op), d.get(G::Type)) {
                let ok = match op {
                    ".add" => matches!(t, ".u32" | ".s32" | ".u64" | ".s64"),
                    ".min" | ".max" => matches!(t, ".u32" | ".s32"),
                    ".inc" | ".dec" => t == ".u32",
                    _ => t == ".b32",
                };
                if !ok {
                    bad(
                        self.diags,
                        modifier(t).unwrap_or(i.opcode.span),
                        format!("`red.async{op}` does not take `{t}`"),
                        "add: .u32 .s32 .u64 .s64; min/max: .u32 .s32; inc/dec: .u32; and/or/xor: .b32",
                    );
                }
            }
        }
        if d.spec.sub == [".async"] && name == "st" {
            if let (Some(v), Some(t)) = (d.get(G::Vec), d.ty()) {
                let n: u32 = v[2..].parse().unwrap_or(1);
                if n * t.bits() > 128 {
                    bad(
                        self.diags,
                        modifier(v).expect("written"),
                        format!(
                            "`st.async{v}{}` moves {} bits; it moves 128 at most",
                            t.name(),
                            n * t.bits()
                        ),
                        "split the store, or use .v2 of 64-bit values",
                    );
                }
            }
        }
        if name == "sured" {
            if let (Some(op @ (".min" | ".max")), Some(t)) = (d.get(G::Op), d.ty()) {
                if t.bits() == 64 && self.target.version != (0, 0) && self.target.version < (8, 1) {
                    self.diags.push(
                        Diagnostic::error(
                            Code::P0301,
                            i.opcode.span,
                            format!(
                                "64-bit `sured{op}` requires PTX 8.1 (sm_50); the module declares PTX {}.{}",
                                self.target.version.0, self.target.version.1
                            ),
                        )
                        .label("not available for this version")
                        .help("raise the module header to `.version 8.1` or later"),
                    );
                }
            }
            if let (Some(class), Some(op), Some(ty)) = (d.get(G::Class), d.get(G::Op), d.get(G::Type)) {
                if !isa::sured_takes(class, op, ty) {
                    bad(
                        self.diags,
                        modifier(ty).unwrap_or(i.opcode.span),
                        format!("`sured{class}{op}` does not take `{ty}`"),
                        "sured.b: add .u32 .u64 .s32; min/max .u32 .u64 .s32 .s64; and/or .b32. sured.p: .b32, and .b64 for min/max",
                    );
                }
            }
        }
        // Packed types with no register type of their own take registers declared with exactly their
        // bit type (ptxas 13.5: not `.u8` for `.e2m1x2`, not `.u64` for `.f32x2`).
        let exact = |m: &str| match m {
            ".e2m1x2" => Some(Type::B8),
            ".e2m3x2" | ".e3m2x2" | ".ue8m0x2" | ".e4m3x2" | ".e5m2x2" => Some(Type::B16),
            ".f32x2" => Some(Type::B64),
            _ => None,
        };
        let packed: Vec<Option<Type>> = d.type_names().map(exact).collect();
        if packed.iter().any(Option::is_some) {
            for (k, op) in i.operands.iter().enumerate() {
                // cvt: the destination is the first type, the sources the second; otherwise one type.
                let want = if name == "cvt" {
                    packed.get(k.min(1)).copied().flatten()
                } else {
                    packed[0]
                };
                let (
                    Some(want),
                    Operand::Sym {
                        name: n,
                        component: None,
                    },
                ) = (want, op)
                else {
                    continue;
                };
                if let Some(Entry::Reg {
                    ty, vector: None, decl, ..
                }) = self.lookup(n, scope)
                {
                    if ty != want {
                        self.diags.push(
                            Diagnostic::error(
                                Code::P0204,
                                n.span,
                                format!(
                                    "`{}` is `{}`, but this operand takes a `{}` register",
                                    n.text,
                                    ty.name(),
                                    want.name()
                                ),
                            )
                            .label(format!("`{}` register", ty.name()))
                            .secondary(decl.span, "declared here")
                            .help(format!("declare it `.reg {}`", want.name())),
                        );
                    }
                }
            }
        }
        // cvt.pack's type combinations.
        if name == "cvt" && d.spec.sub == [".pack"] {
            // As written: `.u4`, `.s2` … are no register types.
            let types: Vec<&str> = d.type_names().collect();
            let ok = isa::CVT_PACK_TYPES.contains(&types.as_slice());
            if !ok {
                bad(
                    self.diags,
                    modifier(types.last().copied().unwrap_or("")).unwrap_or(i.opcode.span),
                    format!("`cvt.pack` does not convert `{}`", types.concat()),
                    "write `cvt.pack.sat.u16.s32 d, a, b` (or .s16), or `cvt.pack.sat.u8.s32.b32 d, a, b, c` (or .s8 .u4 .s4 .u2 .s2)",
                );
            }
        }
        // Which shapes take which types, layouts and modifiers: more than the table's groups say.
        if name == "mma" && d.get(G::Sparse).is_none() {
            let mods: Vec<&str> = i.mods.iter().map(|m| m.text).collect();
            let form = isa::mma_form(&mods);
            // The f64 shapes beyond m8n8k4 came with PTX 7.8 and sm_90 (ptxas 13.5).
            if let Ok(f) = &form {
                let known = self.target.version != (0, 0) && self.target.sm != 0;
                if f.a == isa::MmaType::F64
                    && f.m == 16
                    && known
                    && (self.target.version < (7, 8) || self.target.sm < 90)
                {
                    self.diags.push(
                        Diagnostic::error(
                            Code::P0301,
                            i.opcode.span,
                            format!(
                                "f64 `mma.m16n8k{}` requires sm_90 and PTX 7.8; {} sm_{} / PTX {}.{}",
                                f.k, self.against, self.target.sm, self.target.version.0, self.target.version.1
                            ),
                        )
                        .label("not available for this target")
                        .help("use `.m8n8k4` for sm_80, or raise the header to `.version 7.8` and `.target sm_90`"),
                    );
                }
            }
            if let Err(why) = form {
                let span = i.opcode.span.to(i.mods.last().map_or(i.opcode.span, |m| m.span));
                self.diags.push(
                    Diagnostic::error(Code::P0102, span, format!("not a form of `mma`: {why}"))
                        .label("no such form")
                        .help(
                            "the forms are listed in the PTX ISA manual, section 9.7.15.4.14 (`ptx-jit explain mma`)",
                        ),
                );
            }
        }
        if name == "wgmma" && d.spec.sub == [".mma_async"] {
            self.wgmma(i);
        }
        if matches!(name, "ld" | "st")
            && d.get(G::Sem) == Some(".volatile")
            && matches!(d.get(G::Space), Some(s) if s.starts_with(".param"))
        {
            bad(
                self.diags,
                modifier(".volatile").expect("written"),
                "`.volatile` does not apply to `.param`".into(),
                "remove `.volatile`",
            );
        }
        // Bit positions and lengths, and truth tables, are 8-bit immediates.
        let byte_operands: &[usize] = match name {
            "bfe" => &[2, 3],
            "bfi" => &[3, 4],
            "lop3" => &[4],
            _ => &[],
        };
        for &k in byte_operands {
            if let Some(Operand::Imm(Imm::Int(v), span)) = i.operands.get(k) {
                if !(0..=255).contains(v) {
                    self.diags.push(
                        Diagnostic::error(
                            Code::P0105,
                            *span,
                            format!("`{v}` is out of range for this operand of `{name}`"),
                        )
                        .label("expected 0 to 255"),
                    );
                }
            }
        }
        // The deprecated non-`.sync` warp shuffles and votes: NVIDIA's tools refuse them for sm_70 and
        // later from PTX 6.4 on. ptx-jit still runs them with their pre-Volta meaning, so this warns.
        if matches!(name, "shfl" | "vote") && !d.has(".sync") && self.target.sm >= 70 && self.target.version >= (6, 4) {
            self.diags.push(
                Diagnostic::warning(
                    Code::P0507,
                    i.opcode.span,
                    format!("`{name}` without `.sync` is refused by ptxas for sm_70 and later (PTX 6.4 and later); {} sm_{}", self.against, self.target.sm),
                )
                .label("deprecated form")
                .note("ptx-jit runs it on the CPU as if the whole warp were converged")
                .help(format!("write `{name}.sync` and add a member mask operand such as `0xffffffff`")),
            );
        }
        // Queries of texture and surface objects beyond their size, which NVIDIA's driver refuses.
        if matches!(name, "txq" | "suq") {
            let query = i.mods.iter().find(|m| !matches!(m.text, ".b32" | ".level"));
            let handle = match i.operands.get(1) {
                Some(Operand::Addr(a)) => a.base.as_ref(),
                Some(Operand::Bracket(items, _)) => match items.first() {
                    Some(Operand::Sym { name, .. }) => Some(name),
                    _ => None,
                },
                _ => None,
            };
            let object = handle.is_some_and(|h| matches!(self.lookup(h, scope), Some(Entry::Reg { .. })));
            if let Some(q) = query.filter(|q| object && !matches!(q.text, ".width" | ".height" | ".depth")) {
                let fails = if name == "txq" {
                    "the kernel's lookup fails with CUDA_ERROR_NOT_FOUND"
                } else {
                    "the module's load fails with CUDA_ERROR_NOT_SUPPORTED"
                };
                self.diags.push(
                    Diagnostic::warning(
                        Code::P0510,
                        q.span,
                        format!("NVIDIA's driver refuses `{name}{}` of an object: {fails}", q.text),
                    )
                    .label("refused by the driver on a GPU")
                    .note("ptx-jit runs it on the CPU, with the manual's meaning")
                    .help("pass what the kernel needs to know about the texture or surface as a parameter"),
                );
            }
        }
        // A direct call passes as many arguments, and takes as many results, as the callee declares.
        if name == "call" {
            let (rets, callee, args) = match i.operands.as_slice() {
                [Operand::List(r, _), Operand::Sym { name: f, .. }, rest @ ..] => (Some(r), f, rest.first()),
                [Operand::Sym { name: f, .. }, rest @ ..] => (None, f, rest.first()),
                _ => {
                    let span = i.operands.first().map_or(i.opcode.span, Operand::span);
                    self.diags.push(
                        Diagnostic::error(
                            Code::P0105,
                            span,
                            "`call` needs the function (or a register holding its address) here",
                        )
                        .label("expected a callee")
                        .help("write `call (results), f, (arguments);`"),
                    );
                    return;
                }
            };
            let nargs = match args {
                Some(Operand::List(a, _)) => a.len(),
                _ => 0,
            };
            let nrets = rets.map_or(0, |r| r.len());
            // An indirect call through a register names its prototype last.
            if let (Some(Entry::Reg { .. }), Some(Operand::Sym { name: proto, .. })) =
                (self.lookup(callee, scope), i.operands.last())
            {
                if let Some(&(want_rets, want_args)) = self.prototypes.get(proto.text) {
                    if (nrets, nargs) != (want_rets, want_args) {
                        self.diags.push(
                            Diagnostic::error(
                                Code::P0104,
                                callee.span,
                                format!("prototype `{}` has {want_rets} result(s) and {want_args} argument(s); this call has {nrets} and {nargs}", proto.text),
                            )
                            .label("indirect call")
                            .secondary(proto.span, "prototype"),
                        );
                    }
                }
            }
            if let Some(Entry::Func(f)) = self.lookup(callee, scope) {
                for (what, got, want, span) in [
                    (
                        "arguments",
                        nargs,
                        f.params.len(),
                        args.map_or(callee.span, |a| a.span()),
                    ),
                    ("results", nrets, f.returns.len(), i.operands[0].span()),
                ] {
                    if got != want {
                        self.diags.push(
                            Diagnostic::error(
                                Code::P0104,
                                span,
                                format!(
                                    "`{}` takes {want} {}, but this call passes {got}",
                                    callee.text,
                                    if want == 1 { &what[..what.len() - 1] } else { what }
                                ),
                            )
                            .label(format!("{got} {what}"))
                            .secondary(f.name.span, "declared here"),
                        );
                    }
                }
            }
        }
        if name == "atom" && d.is_primary() && i.operands.len() == 4 && d.get(G::Op) != Some(".cas") {
            self.diags.push(
                Diagnostic::error(
                    Code::P0104,
                    i.operands[3].span(),
                    "only `atom.cas` takes a fourth operand",
                )
                .label("extra operand"),
            );
        }
        if matches!(name, "setp" | "set" | "cvt") && d.is_primary() {
            let any_f32 = d.types().any(|t| t == Type::F32);
            if let Some(ftz) = modifier(".ftz").filter(|_| !any_f32) {
                bad(
                    self.diags,
                    ftz,
                    format!("`.ftz` does not apply to `{name}` without `.f32`"),
                    "remove it: it flushes `.f32` subnormals",
                );
            }
        }
        if matches!(
            name,
            "add" | "sub" | "mul" | "mad" | "div" | "min" | "max" | "neg" | "abs"
        ) && d.is_primary()
        {
            if let Some(t) = ty {
                let float = t.is_float();
                for m in &i.mods {
                    let wrong = match m.text {
                        ".rn" | ".rz" | ".rm" | ".rp" | ".ftz" | ".approx" | ".full" => !float,
                        ".hi" | ".lo" | ".wide" | ".cc" => float,
                        ".sat" => {
                            // Floats saturate; of the integers only s32 add/sub and mad.hi do.
                            let int_sat = t == Type::S32
                                && (matches!(name, "add" | "sub") || name == "mad" && d.get(G::Mode) == Some(".hi"));
                            !(float || int_sat)
                        }
                        _ => false,
                    };
                    if wrong {
                        bad(
                            self.diags,
                            m.span,
                            format!("`{}` does not apply to `{name}{}`", m.text, t.name()),
                            if float {
                                "remove it: it applies to integer types"
                            } else {
                                "remove it: it applies to floating-point types"
                            },
                        );
                    }
                }
            }
        }
        if matches!(name, "ld" | "st") {
            let sem = d.get(G::Sem);
            let scope_mod = d.get(G::Scope);
            match (sem, scope_mod) {
                (Some(".relaxed" | ".acquire" | ".release"), None) => bad(
                    self.diags,
                    modifier(sem.expect("sem")).expect("written"),
                    format!("`{}` needs a scope", sem.expect("sem")),
                    "add `.cta`, `.cluster`, `.gpu` or `.sys`",
                ),
                (None | Some(".weak" | ".volatile"), Some(sc)) => bad(
                    self.diags,
                    modifier(sc).expect("written"),
                    format!(
                        "the scope `{sc}` needs a memory order{}",
                        sem.map_or(String::new(), |s| format!(", not `{s}`"))
                    ),
                    "add `.relaxed` (or `.acquire` for `ld`, `.release` for `st`)",
                ),
                _ => {}
            }
            // (A store into a `.const` variable by name is reported with the variable.)
            let to_const_var = matches!(i.operands.first(), Some(Operand::Addr(Address { base: Some(b), .. }))
                if matches!(self.lookup(b, scope), Some(Entry::Var(v)) if v.space == Space::Const));
            if name == "st" && d.get(G::Space) == Some(".param::entry") {
                bad(
                    self.diags,
                    modifier(".param::entry").expect("written"),
                    "kernel parameters are read-only".into(),
                    "store to `.param` (a call's argument) or to memory instead",
                );
            }
            if name == "st" && d.get(G::Space) == Some(".const") && !to_const_var {
                bad(
                    self.diags,
                    modifier(".const").expect("written"),
                    "`.const` memory is read-only".into(),
                    "store to `.global` memory instead",
                );
            }
            if let Some(nc) = modifier(".nc").filter(|_| d.get(G::Space) != Some(".global")) {
                bad(
                    self.diags,
                    nc,
                    "`.nc` loads only from `.global`".into(),
                    "write `ld.global.nc`",
                );
            }
        }
        if matches!(name, "ld" | "st" | "mov") {
            let data = i.operands.get(if name == "st" { 1 } else { 0 });
            // A whole vector register (`.reg .v2 .u32 v`) is a vector operand too.
            let vector_reg = |op: &Operand<'a>| match op {
                Operand::Sym {
                    name: n,
                    component: None,
                } => {
                    matches!(self.lookup(n, scope), Some(Entry::Reg { vector: Some(_), .. }))
                }
                _ => false,
            };
            if let (Some(v), Some(op)) = (d.get(G::Vec), data) {
                if !matches!(op, Operand::Vector(..)) && !vector_reg(op) {
                    self.diags.push(
                        Diagnostic::error(
                            Code::P0105,
                            op.span(),
                            format!("`{name}{v}` moves a vector, but this is one value"),
                        )
                        .label("expected `{a, b, …}`")
                        .help(format!("list the registers in braces, or remove `{v}`")),
                    );
                }
            }
        }
        if matches!(name, "ld" | "st" | "atom" | "red") {
            // Immediate addresses exist only in `.local`; generic addresses of `.const` and `.param`
            // variables do not exist.
            if let Some(Operand::Addr(a)) = isa::address_operand(name).and_then(|k| i.operands.get(k)) {
                let space = d.get(G::Space);
                match &a.base {
                    None if space != Some(".local") => self.diags.push(
                        Diagnostic::error(Code::P0205, a.span, "an immediate address is only valid in `.local`")
                            .label("immediate address")
                            .help("address the variable by name, or put the address in a register"),
                    ),
                    Some(b) if space.is_none() => {
                        if let Some(Entry::Var(v)) = self.lookup(b, scope) {
                            if matches!(v.space, Space::Const | Space::Param) {
                                self.diags.push(
                                    Diagnostic::error(
                                        Code::P0205,
                                        b.span,
                                        format!(
                                            "`{}` is in `{}`, which has no generic address",
                                            b.text,
                                            v.space.name()
                                        ),
                                    )
                                    .label("generic access")
                                    .secondary(v.span, "declared here")
                                    .help(format!("use `{name}{}`", v.space.name())),
                                );
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        if name == "cvt" && d.is_primary() && i.operands.len() == 3 && !matches!(ty, Some(Type::F16x2 | Type::Bf16x2)) {
            self.diags.push(
                Diagnostic::error(
                    Code::P0104,
                    i.operands[2].span(),
                    "`cvt` takes two sources only when it packs into `.f16x2` or `.bf16x2`",
                )
                .label("extra operand"),
            );
        }
        // wmma fragments: A and B hold the multiplicands' types, C the accumulator's.
        if name == "wmma" && d.has(".load") {
            let (frag, ty) = (if d.has(".c") { "c" } else { "ab" }, d.ty());
            let ok = ty.is_none_or(|t| match frag {
                "c" => matches!(t, Type::F16 | Type::F32 | Type::S32 | Type::F64),
                _ => {
                    !matches!(t, Type::F32 | Type::S32 | Type::U32 | Type::F64) || (t == Type::F64 && d.has(".m8n8k4"))
                }
            });
            if !ok {
                let t = ty.expect("typed");
                bad(
                    self.diags,
                    modifier(t.name()).unwrap_or(i.opcode.span),
                    format!(
                        "a wmma `{}` fragment does not hold `{}`",
                        if frag == "c" { "c" } else { "a`/`b" },
                        t.name()
                    ),
                    "a and b hold .f16 .bf16 .tf32 .s8 .u8 .s4 .u4 .b1 (or .f64); c holds .f16 .f32 .s32 (or .f64)",
                );
            }
        }
        // `mov` packs or unpacks a vector (only with a bit-size type) whose parts add up to the type.
        if name == "mov" && d.is_primary() && d.get(G::Vec).is_none() {
            if let (Some(t), Some(Operand::Vector(v, span))) =
                (ty, i.operands.iter().find(|o| matches!(o, Operand::Vector(..))))
            {
                if t.kind() != crate::types::Kind::Bits {
                    self.diags.push(
                        Diagnostic::error(
                            Code::P0105,
                            *span,
                            format!("`mov{}` does not pack or unpack vectors", t.name()),
                        )
                        .label("vector operand")
                        .help(format!("use the bit-size type `mov.b{}`", t.bits())),
                    );
                } else {
                    let part_bits: Option<u32> = v
                        .iter()
                        .map(|x| match x {
                            Operand::Sym { name: n, .. } => match self.lookup(n, scope) {
                                Some(Entry::Reg { ty, vector: None, .. }) => Some(ty.bits()),
                                _ => None,
                            },
                            _ => None,
                        })
                        .sum();
                    if part_bits.is_some_and(|b| b != t.bits()) || !matches!(v.len(), 2 | 4) {
                        self.diags.push(
                            Diagnostic::error(
                                Code::P0105,
                                *span,
                                format!("the parts of this vector do not make up a `{}` value", t.name()),
                            )
                            .label(format!("{} part(s)", v.len()))
                            .help("give two or four registers whose sizes add up to the instruction type"),
                        );
                    }
                }
            }
        }
    }

    /// `cvt` must say how to round when the value can change: to a narrower float, from an integer to a
    /// float (`.rn` …), and from a float to an integer (`.rni` …).
    pub(super) fn cvt_rounding(&mut self, i: &Instruction<'a>, d: &Decoded) {
        let types: Vec<Type> = d.types().collect();
        let [dst, src] = types[..] else { return };
        let round = d.get(G::Round);
        let float_round = matches!(round, Some(".rn" | ".rz" | ".rm" | ".rp"));
        let int_round = matches!(round, Some(".rni" | ".rzi" | ".rmi" | ".rpi"));
        // Between two float formats of the same size (`.f16` and `.bf16`) the value can change too.
        let narrowing = dst.bits() < src.bits() || (dst.bits() == src.bits() && dst != src);
        let need = match (dst.is_float(), src.is_float()) {
            (true, true) if narrowing && !float_round => Some(".rn, .rz, .rm or .rp"),
            (true, false) if !float_round => Some(".rn, .rz, .rm or .rp"),
            (false, true) if !int_round => Some(".rni, .rzi, .rmi or .rpi"),
            _ => None,
        };
        // Packed and tf32/fp8 conversions have their own rounding rules (`.rna`, `.satfinite`).
        if matches!(dst, Type::F16x2 | Type::Bf16x2 | Type::Tf32) || d.has(".rna") || d.has(".relu") {
            return;
        }
        // A rounding modifier where the conversion cannot use it: between integers, when widening a
        // float, or of the wrong kind (float rounding to an integer, integer rounding across floats of
        // different sizes).
        let illegal = round.is_some()
            && match (dst.is_float(), src.is_float()) {
                (false, false) => true,
                (true, true) if dst.bits() > src.bits() => true,
                (true, true) if dst == src => float_round,
                (true, true) => int_round,
                (false, true) => float_round,
                (true, false) => int_round,
            };
        if illegal && need.is_none() {
            let m = i.mods.iter().find(|m| Some(m.text) == round).expect("written");
            self.diags.push(
                Diagnostic::error(
                    Code::P0102,
                    m.span,
                    format!(
                        "`{}` is not a rounding that `cvt{}{}` can use",
                        m.text,
                        dst.name(),
                        src.name()
                    ),
                )
                .label("invalid rounding for this conversion")
                .help(match (dst.is_float(), src.is_float()) {
                    (false, false) => "remove it: integer conversions do not round",
                    (true, true) if dst.bits() > src.bits() => "remove it: widening a float is exact",
                    (true, true) => "use `.rni`, `.rzi`, `.rmi` or `.rpi` to round to an integral value",
                    (false, true) => "use `.rni`, `.rzi`, `.rmi` or `.rpi`",
                    _ => "use `.rn`, `.rz`, `.rm` or `.rp`",
                }),
            );
            return;
        }
        if let Some(options) = need {
            self.diags.push(
                Diagnostic::error(
                    Code::P0103,
                    i.opcode.span.to(i.mods.last().map_or(i.opcode.span, |m| m.span)),
                    format!("`cvt{}{}` needs a rounding modifier", dst.name(), src.name()),
                )
                .label(if round.is_some() {
                    "this rounding does not apply to the conversion"
                } else {
                    "rounding modifier missing"
                })
                .help(format!("add one of {options}")),
            );
        }
    }
}
