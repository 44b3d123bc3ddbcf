//! The walk over a function's statements: each instruction decoded against the ISA table, its operands
//! kinds, types and names, and the type each operand must have.

use super::*;

impl<'c, 'm, 'a> FnChecker<'c, 'm, 'a> {
    pub(super) fn block(&mut self, body: &'m [Statement<'a>], scope: &mut Scope<'m, 'a>) {
        for s in body {
            let label = self.pending_label.take();
            match s {
                Statement::Var(v) => match scope.declare(v) {
                    Ok(e) => self.declared(v, e, false),
                    Err(prev) if !self.fragment => self.diags.push(duplicate(&v.name, prev)),
                    Err(_) => {}
                },
                Statement::Block(b, _) => {
                    scope.push();
                    self.depth += 1;
                    self.block(b, scope);
                    self.depth -= 1;
                    scope.pop();
                }
                Statement::Inst(i) => {
                    let names = &mut self.names;
                    names.clear();
                    let mut add = |n: &Name<'a>| names.push((n.span.start, scope.lookup(n.text)));
                    i.guard.iter().for_each(|g| add(&g.pred));
                    i.operands.iter().for_each(|op| op.names(&mut add));
                    let decoded = self.instruction(i, scope);
                    let (names, labels, detail) = (&self.names, &self.labels, self.detail);
                    if let Some(f) = &mut self.ir {
                        let uses = (detail == Detail::Resolved).then_some(&mut f.uses);
                        let inst = resolve(i, decoded, |n| lookup(names, n, scope), labels, uses);
                        f.insts.push(inst);
                    }
                }
                Statement::Label(n) => {
                    if let Some(f) = &mut self.ir {
                        f.labels.push((*n, f.insts.len()));
                    }
                    self.pending_label = Some(n.text);
                }
                Statement::Directive(Directive::Targets { kind, targets, .. }) => {
                    if let Some(f) = &mut self.ir {
                        if let (Some(l), ".branchtargets") = (label, kind.text) {
                            f.branch_targets.push((l, targets));
                        }
                        f.listed.extend(targets.iter().map(|t| t.text));
                    }
                }
                Statement::Directive(_) => {}
            }
        }
    }

    /// What a name of the instruction being checked stands for: resolved once per instruction.
    pub(super) fn lookup(&self, n: &Name<'_>, scope: &Scope<'m, 'a>) -> Option<Entry<'m, 'a>> {
        lookup(&self.names, n, scope)
    }

    /// Records a declaration the scope accepted in the function's IR.
    pub(super) fn declared(&mut self, v: &VarDecl<'a>, e: Entry<'m, 'a>, param: bool) {
        if let (Some(f), Entry::Reg { id, .. }) = (&mut self.ir, e) {
            f.declare_reg(v, id, param, self.depth > 0);
        }
    }

    /// Checks one instruction; returns its decoded form when its opcode and modifiers are valid.
    pub(super) fn instruction(&mut self, i: &'m Instruction<'a>, scope: &Scope<'m, 'a>) -> Option<Decoded> {
        if let Some(g) = &i.guard {
            self.expect_reg(&g.pred, None, Some(Type::Pred), scope);
        }
        let key: smallvec::SmallVec<[&'a str; 8]> = std::iter::once(i.opcode.text)
            .chain(i.mods.iter().map(|m| m.text))
            .collect();
        // The cache leaves `self` while the checks borrow it.
        let mut heads = std::mem::take(self.heads);
        if !heads.contains_key(&key) {
            match isa::decode(i.opcode.text, &key[1..]) {
                Ok(d) => {
                    let head = Head {
                        requires: d.requires(),
                        types: operand_types(&d),
                        d,
                    };
                    heads.insert(key.clone(), head);
                }
                Err(e) => {
                    *self.heads = heads;
                    self.decode_error(i, e);
                    return None;
                }
            }
        }
        let head = &heads[&key];
        self.decoded(i, head, scope);
        let d = head.d.clone();
        *self.heads = heads;
        Some(d)
    }

    /// The checks of an instruction whose opcode and modifiers decoded.
    fn decoded(&mut self, i: &'m Instruction<'a>, head: &Head, scope: &Scope<'m, 'a>) {
        let d = &head.d;
        let spec = d.spec;
        let n = i.operands.len();
        if n < spec.operands.0 as usize || n > spec.operands.1 as usize {
            let want = if spec.operands.0 == spec.operands.1 {
                format!("{}", spec.operands.0)
            } else {
                format!("{} to {}", spec.operands.0, spec.operands.1)
            };
            let span = i.operands.last().map_or(i.opcode.span, |o| o.span());
            self.diags.push(
                Diagnostic::error(
                    Code::P0104,
                    span,
                    format!(
                        "`{}` takes {want} operand{}, found {n}",
                        spec.name,
                        if want == "1" { "" } else { "s" }
                    ),
                )
                .label(if n < spec.operands.0 as usize {
                    "missing operands after this"
                } else {
                    "too many operands"
                })
                .secondary(i.opcode.span, "instruction")
                .note(format!("syntax: {}", spec.syntax)),
            );
            return;
        }
        // Without a `.version` (already reported) there is nothing to gate against; without a
        // `.target`, only the version is checked.
        let known = self.target.version != (0, 0);
        let (ptx, sm) = head.requires;
        let sm_low = self.target.sm != 0 && self.target.sm < sm;
        let form = || spec.form();
        if known && (self.target.version < ptx || sm_low) {
            let targets = if self.target.sm == 0 {
                "no target".to_string()
            } else {
                format!("sm_{}", self.target.sm)
            };
            let (v, to) = (self.target.version.max(ptx), self.target.sm.max(sm));
            self.diags.push(
                Diagnostic::error(
                    Code::P0301,
                    i.opcode.span,
                    format!(
                        "`{}` requires sm_{sm} and PTX {}.{}; {} {targets} / PTX {}.{}",
                        form(),
                        ptx.0,
                        ptx.1,
                        self.against,
                        self.target.version.0,
                        self.target.version.1
                    ),
                )
                .label("not available for this target")
                .help(format!(
                    "raise the module header to `.version {}.{}` and `.target sm_{to}{}` or later",
                    v.0,
                    v.1,
                    if spec.arch { "a" } else { "" }
                )),
            );
        } else if known && spec.arch && self.target.sm != 0 && self.target.suffix != Some('a') {
            self.diags.push(
                Diagnostic::error(
                    Code::P0301,
                    i.opcode.span,
                    format!(
                        "`{}` needs an architecture-specific target such as `sm_{}a`; {} sm_{}",
                        form(),
                        self.target.sm,
                        self.against,
                        self.target.sm
                    ),
                )
                .label("only on `sm_XXa` targets")
                .help(format!("use `.target sm_{}a`", self.target.sm)),
            );
        }
        if spec.name == "cvt" && d.is_primary() {
            self.cvt_rounding(i, d);
        }
        self.form_rules(i, d, scope);
        self.part_selectors(i, d, scope);
        self.tensormap_replace(i, d);
        for (k, op) in i.operands.iter().enumerate() {
            let want = head.types.get(k).copied().flatten();
            self.operand(i, d, k, op, want, scope);
        }
    }

    pub(super) fn decode_error(&mut self, i: &Instruction<'a>, e: DecodeError<'_>) {
        let d = match e {
            DecodeError::UnknownOpcode => {
                let s = nearest(i.opcode.text, isa::TABLE.iter().map(|s| s.name));
                let d = Diagnostic::error(
                    Code::P0101,
                    i.opcode.span,
                    format!("unknown instruction `{}`", i.opcode.text),
                )
                .label("not a PTX instruction ptx-jit knows");
                match s {
                    Some(s) => d.help(format!("did you mean `{s}`?")),
                    None => d,
                }
            }
            DecodeError::BadModifier {
                index,
                text,
                suggestion,
            } => {
                let d = Diagnostic::error(
                    Code::P0102,
                    i.mods[index].span,
                    format!("`{text}` is not a valid modifier of `{}`", i.opcode.text),
                )
                .label("invalid modifier")
                .note(format!(
                    "syntax: {}",
                    isa::lookup(i.opcode.text).map_or("", |s| s.syntax)
                ));
                match suggestion {
                    Some(s) => d.help(format!("did you mean `{s}`?")),
                    None => d,
                }
            }
            DecodeError::Repeated { index, text } => Diagnostic::error(
                Code::P0102,
                i.mods[index].span,
                format!("`{text}` conflicts with an earlier modifier of the same kind"),
            )
            .label("second modifier of this kind"),
            DecodeError::Missing { group, values } => {
                let shown: Vec<_> = values.iter().take(8).copied().collect();
                Diagnostic::error(
                    Code::P0103,
                    i.opcode.span.to(i.mods.last().map_or(i.opcode.span, |m| m.span)),
                    format!(
                        "`{}` needs {}",
                        i.opcode.text,
                        match group {
                            G::Sub => "a sub-instruction (such as `.async`)".to_string(),
                            G::Type => "a type modifier".to_string(),
                            g => format!("a {} modifier", format!("{g:?}").to_lowercase()),
                        }
                    ),
                )
                .label("modifier missing here")
                .help(format!("add one of {}", shown.join(" ")))
            }
        };
        self.diags.push(d);
    }

    pub(super) fn operand(
        &mut self,
        i: &Instruction<'a>,
        d: &Decoded,
        k: usize,
        op: &Operand<'a>,
        want: Option<Type>,
        scope: &Scope<'m, 'a>,
    ) {
        let name = d.spec.name;
        match op {
            Operand::Sym { name: n, component } => {
                if n.text == "WARP_SZ" {
                    // A predefined integer constant: an immediate of any integer type.
                    if k == 0 && isa::first_operand_is_destination(d.spec) {
                        self.diags.push(
                            Diagnostic::error(Code::P0105, n.span, "`WARP_SZ` is a constant, not a destination")
                                .label("needs a register"),
                        );
                    }
                    return;
                }
                if (name == "bra" && k == 0) || (name == "call" && k <= 1) {
                    return self.label_or_func(name, n, scope);
                }
                if let Some(sreg) = special_register(n.text) {
                    let whole = d.get(G::Vec).is_some();
                    let bad = match (sreg.vector, component) {
                        (true, None) => (!whole).then_some("needs a component .x, .y or .z (or a `.v4` move)"),
                        (true, Some(c)) => (!matches!(c.text, ".x" | ".y" | ".z" | ".w"))
                            .then_some("has only the components .x, .y, .z and .w"),
                        (false, Some(_)) => Some("takes no component"),
                        (false, None) => None,
                    };
                    if let Some(why) = bad {
                        self.diags.push(
                            Diagnostic::error(Code::P0105, op.span(), format!("special register `{}` {why}", n.text))
                                .label("special register"),
                        );
                    } else if let Some(w) = want.filter(|_| !whole) {
                        let low_bits =
                            sreg.narrow && matches!(name, "mov" | "cvt") && w.bits() < sreg.ty.bits() && !w.is_float();
                        if !sreg.ty.compatible_with(w) && !low_bits {
                            self.diags.push(
                                Diagnostic::error(
                                    Code::P0204,
                                    op.span(),
                                    format!(
                                        "`{}` has type `{}`, but `{}` needs `{}` here",
                                        n.text,
                                        sreg.ty.name(),
                                        name,
                                        w.name()
                                    ),
                                )
                                .label(format!("`{}` special register", sreg.ty.name()))
                                .help(format!("use `{}{}`", name, sreg.ty.name())),
                            );
                        }
                    }
                    if k == 0 && isa::first_operand_is_destination(d.spec) {
                        self.diags.push(
                            Diagnostic::error(
                                Code::P0105,
                                n.span,
                                format!("special register `{}` is read-only", n.text),
                            )
                            .label("cannot be a destination"),
                        );
                    }
                    return;
                }
                if (name == "call" && k >= 2 && k + 1 == i.operands.len()) || (name == "brx" && k == 1) {
                    // The prototype or `.calltargets` of an indirect call, the `.branchtargets` of brx.idx.
                    return self.target_list(n);
                }
                if d.is_primary() && isa::address_operands(d.spec).first() == Some(&k) {
                    self.diags.push(
                        Diagnostic::error(
                            Code::P0105,
                            n.span,
                            format!("`{name}` needs an address in brackets here"),
                        )
                        .label("not an address")
                        .help(format!("write `[{}]`", n.text)),
                    );
                    return;
                }
                match self.lookup(n, scope) {
                    Some(Entry::Reg {
                        vector: Some(len),
                        ty,
                        decl,
                        ..
                    }) if component.is_none() => {
                        // A whole vector register: element by element in a `.v2`/`.v4` instruction,
                        // else one packed value (`mov.b32 r, v2b16`).
                        let bits = ty.bits() * len;
                        let fits = |w: Type| match d.get(G::Vec) {
                            Some(v) => v[2..].parse() == Ok(len) && ty.compatible_with(w),
                            None => w.bits() == bits,
                        };
                        if let Some(w) = want.filter(|&w| !fits(w)) {
                            self.diags.push(
                                Diagnostic::error(
                                    Code::P0204,
                                    n.span,
                                    format!(
                                        "`{}` is a {bits}-bit vector register, but `{name}` needs `{}` here",
                                        n.text,
                                        w.name()
                                    ),
                                )
                                .label(format!("`.v{len} {}` register", ty.name()))
                                .secondary(decl.span, "declared here"),
                            );
                        }
                    }
                    Some(Entry::Reg { .. }) => self.expect_reg(n, Some(i), want, scope),
                    Some(Entry::Var(v)) if k > 0 && name == "cvta" => {
                        // `cvta.space` takes the address of a variable of that space; `cvta.to.space`
                        // converts a generic address held in a register.
                        let space = d.get(G::Space).and_then(Space::from_dot);
                        if d.get(G::To).is_some() {
                            self.diags.push(
                                Diagnostic::error(
                                    Code::P0105,
                                    n.span,
                                    format!(
                                        "`cvta.to` converts a generic address in a register, not the variable `{}`",
                                        n.text
                                    ),
                                )
                                .label("variable")
                                .help(format!(
                                    "use `cvta{}` to get the generic address of `{}`",
                                    space.map_or("", |s| s.name()),
                                    n.text
                                )),
                            );
                        } else if space.is_some_and(|s| s != v.space) {
                            self.diags.push(
                                Diagnostic::error(
                                    Code::P0205,
                                    n.span,
                                    format!(
                                        "`{}` is in `{}`, but `cvta{}` converts `{}` addresses",
                                        n.text,
                                        v.space.name(),
                                        space.map_or("", |s| s.name()),
                                        space.map_or("", |s| s.name())
                                    ),
                                )
                                .label(format!("a {} variable", v.space.name()))
                                .secondary(v.span, "declared here")
                                .help(format!("use `cvta{}`", v.space.name())),
                            );
                        }
                    }
                    Some(Entry::Var(_)) | Some(Entry::Func(_)) if k > 0 && matches!(name, "mov" | "cvta") => {}
                    Some(Entry::Var(v)) if name == "mov" || name == "cvta" || k > 0 => self.diags.push(
                        Diagnostic::error(
                            Code::P0105,
                            n.span,
                            format!("`{}` is a variable, not a register", n.text),
                        )
                        .label("variable used as a value")
                        .help(format!(
                            "load it with `ld{}` and a `[{}]` address",
                            v.space.name(),
                            n.text
                        )),
                    ),
                    Some(_) => self.diags.push(
                        Diagnostic::error(
                            Code::P0105,
                            n.span,
                            format!("`{}` cannot be used as this operand", n.text),
                        )
                        .label("not a register"),
                    ),
                    None => self.undefined(n, scope),
                }
            }
            Operand::Addr(a) => {
                // The entry's syntax shows which operands are written in brackets.
                let misplaced = !isa::address_operands(d.spec).contains(&k);
                if misplaced {
                    self.diags.push(
                        Diagnostic::error(
                            Code::P0105,
                            a.span,
                            format!("`{name}` does not take an address operand here"),
                        )
                        .label("unexpected address"),
                    );
                    return;
                }
                let Some(base) = &a.base else { return };
                match self.lookup(base, scope) {
                    Some(Entry::Reg { ty, decl, .. }) => {
                        if !(matches!(
                            ty,
                            Type::B32 | Type::U32 | Type::S32 | Type::B64 | Type::U64 | Type::S64
                        )) {
                            self.diags.push(
                                Diagnostic::error(
                                    Code::P0204,
                                    base.span,
                                    format!("`{}` is `{}`, which cannot hold an address", base.text, ty.name()),
                                )
                                .label("address register")
                                .secondary(decl.span, "declared here"),
                            );
                        }
                    }
                    Some(Entry::Var(v)) => {
                        let nth = isa::address_operands(d.spec).iter().position(|&j| j == k).unwrap_or(0);
                        let space = d.space_of_address(nth).and_then(Space::from_dot);
                        if let Some(space) = space {
                            if space != v.space {
                                self.diags.push(
                                    Diagnostic::error(
                                        Code::P0205,
                                        base.span,
                                        format!(
                                            "`{}` is in `{}` but is accessed with `{}{}`",
                                            base.text,
                                            v.space.name(),
                                            name,
                                            space.name()
                                        ),
                                    )
                                    .label(format!("this is a {} variable", v.space.name()))
                                    .secondary(v.span, "declared here")
                                    .help(format!(
                                        "use `{}{}`",
                                        name,
                                        v.space.name()
                                    )),
                                );
                            }
                        }
                        if matches!(name, "st" | "atom" | "red") && v.space == Space::Const {
                            self.diags.push(
                                Diagnostic::error(Code::P0205, base.span, "`.const` memory is read-only")
                                    .label("store to a constant")
                                    .secondary(v.span, "declared here"),
                            );
                        }
                    }
                    Some(Entry::Func(_)) => self.diags.push(
                        Diagnostic::error(Code::P0105, base.span, "a function is not an address").label("function"),
                    ),
                    None => self.undefined(base, scope),
                }
            }
            Operand::Vector(v, _) => {
                // In `mov` a vector packs or unpacks parts of the instruction type; ld/st move whole elements.
                let elem = if matches!(name, "ld" | "st") { want } else { None };
                for x in v {
                    self.operand(i, d, k, x, elem, scope);
                }
                let need = match d.get(G::Vec) {
                    Some(".v2") => 2,
                    Some(".v4") => 4,
                    Some(".v8") => 8,
                    _ => 0,
                };
                if need != v.len() && matches!(name, "ld" | "st") {
                    self.diags.push(
                        Diagnostic::error(
                            Code::P0105,
                            op.span(),
                            format!(
                                "vector operand has {} elements but the instruction moves {need}",
                                v.len()
                            ),
                        )
                        .label("vector size mismatch")
                        .help(if need == 0 {
                            "add `.v2` or `.v4` to the instruction".to_string()
                        } else {
                            format!("give exactly {need} registers")
                        }),
                    );
                }
            }
            Operand::Not(x, s) => {
                if want.is_some_and(|t| t != Type::Pred) {
                    self.diags.push(
                        Diagnostic::error(Code::P0105, *s, "`!` negates predicates only")
                            .label(format!(
                                "`{name}` needs a `{}` value here",
                                want.map_or("", |t| t.name())
                            ))
                            .help("use `not` for a bitwise complement"),
                    );
                }
                self.operand(i, d, k, x, want, scope)
            }
            Operand::Neg(x, _) => self.operand(i, d, k, x, want, scope),
            Operand::Pair(a, b, _) => {
                // `p|q` of setp (both predicates) or `d|p` of shfl (a value and its predicate).
                self.operand(i, d, k, a, want, scope);
                self.operand(i, d, k, b, Some(Type::Pred), scope);
            }
            Operand::List(v, _) | Operand::Bracket(v, _) => v.iter().for_each(|x| self.resolve_names(x, scope)),
            Operand::Imm(imm, s) => {
                if k == 0 && isa::first_operand_is_destination(d.spec) {
                    self.diags.push(
                        Diagnostic::error(Code::P0105, *s, "the destination cannot be an immediate")
                            .label("needs a register"),
                    );
                } else if let Some(w) = want {
                    // Float literals only for floating-point (or bit-size) operands, integer literals only
                    // for integer (or bit-size, or predicate) ones.
                    let float_literal = !matches!(imm, Imm::Int(_));
                    if let (Imm::Int(v), true) = (
                        imm,
                        matches!(
                            w.kind(),
                            crate::types::Kind::Signed | crate::types::Kind::Unsigned | crate::types::Kind::Bits
                        ) && w.bits() < 64,
                    ) {
                        // Either reading of the bits is fine: `-1` is a valid `.u16`, `0xFFFF` a valid `.s16`.
                        let bits = w.bits();
                        let fits = *v >= -(1i64 << (bits - 1)) && *v < (1i64 << bits);
                        if !fits {
                            self.diags.push(
                                Diagnostic::warning(Code::P0508, *s, format!("`{v}` does not fit in `{}`", w.name()))
                                    .label(format!("more than {bits} bits; only the low {bits} are kept"))
                                    .help(format!(
                                        "use a value between {} and {}",
                                        -(1i64 << (bits - 1)),
                                        (1i64 << bits) - 1
                                    )),
                            );
                        }
                    }
                    let bad = match w.kind() {
                        crate::types::Kind::Float => !float_literal,
                        // Bit-size operands take float literals of their own size only (`0f…` for 32 bits).
                        crate::types::Kind::Bits => match imm {
                            Imm::F32(_) => w.bits() != 32,
                            Imm::F64(_) => w.bits() != 64,
                            Imm::Int(_) => false,
                        },
                        crate::types::Kind::Signed | crate::types::Kind::Unsigned | crate::types::Kind::Pred => {
                            float_literal
                        }
                        _ => false,
                    };
                    if bad {
                        let (what, fix) = if float_literal {
                            ("a floating-point literal", "write an integer")
                        } else {
                            (
                                "an integer literal",
                                "write a floating-point literal such as `1.0` or `0f3F800000`",
                            )
                        };
                        self.diags.push(
                            Diagnostic::error(
                                Code::P0204,
                                *s,
                                format!("{what} cannot be a `{}` operand of `{name}`", w.name()),
                            )
                            .label(format!("needs a `{}` value", w.name()))
                            .help(fix),
                        );
                    }
                }
            }
            Operand::Sink(_) => {}
            Operand::Offset(n, _, s) | Operand::Element(n, _, s) => match self.lookup(n, scope) {
                Some(Entry::Var(_)) => {}
                // `r + 4` as a source value: the register's value plus the offset (ptxas takes it).
                Some(Entry::Reg { ty, .. })
                    if matches!(op, Operand::Offset(..)) && k > 0 && !ty.is_float() && ty != Type::Pred =>
                {
                    self.expect_reg(n, Some(i), want, scope)
                }
                Some(_) => self.diags.push(
                    Diagnostic::error(
                        Code::P0105,
                        *s,
                        format!("`{}` is not a variable, so it has no address", n.text),
                    )
                    .label("address arithmetic on a non-variable")
                    .help("add the offset with `add` instead"),
                ),
                None => self.undefined(n, scope),
            },
        }
    }

    /// Reports the undefined names anywhere inside a call's argument list or a texture operand.
    pub(super) fn resolve_names(&mut self, op: &Operand<'a>, scope: &Scope<'m, 'a>) {
        match op {
            Operand::Sym { name: n, .. }
                if special_register(n.text).is_none() && n.text != "WARP_SZ" && self.lookup(n, scope).is_none() =>
            {
                self.undefined(n, scope);
            }
            Operand::Vector(v, _) | Operand::List(v, _) | Operand::Bracket(v, _) => {
                v.iter().for_each(|x| self.resolve_names(x, scope))
            }
            Operand::Not(x, _) | Operand::Neg(x, _) => self.resolve_names(x, scope),
            Operand::Pair(a, b, _) => {
                self.resolve_names(a, scope);
                self.resolve_names(b, scope);
            }
            _ => {}
        }
    }

    pub(super) fn target_list(&mut self, n: &Name<'a>) {
        if self.fragment || self.labels.contains_key(n.text) {
            return;
        }
        self.diags.push(
            Diagnostic::error(
                Code::P0203,
                n.span,
                format!(
                    "`{}` is not a `.callprototype`, `.calltargets` or `.branchtargets` label of `{}`",
                    n.text, self.function
                ),
            )
            .label("undefined prototype")
            .help("declare it in the function: `proto: .callprototype (.param .b32 _) _ (.param .b32 _);`"),
        );
    }

    pub(super) fn label_or_func(&mut self, opcode: &str, n: &Name<'a>, scope: &Scope<'m, 'a>) {
        if self.fragment {
            return;
        }
        if opcode == "bra" {
            if !self.labels.contains_key(n.text) {
                let s = nearest(n.text, self.labels.keys().copied());
                let d = Diagnostic::error(
                    Code::P0203,
                    n.span,
                    format!("label `{}` is not defined in `{}`", n.text, self.function),
                )
                .label("undefined label");
                self.diags.push(match s {
                    Some(s) => d.help(format!("did you mean `{s}`?")),
                    None => d,
                });
            } else if !self.label_uses.contains(&n.span.start) {
                let def = self.labels[n.text];
                self.diags.push(
                    Diagnostic::error(
                        Code::P0203,
                        n.span,
                        format!("label `{}` is in a `{{ }}` block this branch is not in", n.text),
                    )
                    .label("not visible here")
                    .secondary(def.span, "defined in another block")
                    .help("a branch sees the labels of its own block and of the blocks around it; move the label out"),
                );
            }
        } else if !matches!(self.lookup(n, scope), Some(Entry::Func(_)) | Some(Entry::Reg { .. })) {
            self.undefined(n, scope);
        }
    }

    pub(super) fn undefined(&mut self, n: &Name<'a>, scope: &Scope<'m, 'a>) {
        if self.fragment || !self.reported.insert(n.text) {
            return;
        }
        let mut d = Diagnostic::error(Code::P0201, n.span, format!("`{}` is not declared", n.text)).label("undefined");
        if let Some((count, decl)) = scope.range_for(n.text) {
            d = d
                .secondary(
                    decl.span,
                    format!(
                        "`{}<{count}>` declares {}0 to {}{}",
                        decl.name.text,
                        decl.name.text,
                        decl.name.text,
                        count.saturating_sub(1)
                    ),
                )
                .help(format!(
                    "raise the range to `{}<{}>`",
                    decl.name.text,
                    crate::scope::split_indexed(n.text).map_or(count, |(_, i)| i + 1)
                ));
        } else if self.reported.len() <= 100 {
            // (Past a hundred undefined names a function is not a typo away from right, and each
            // search is linear in the declared names.)
            let cands = scope.candidates();
            if let Some(s) = nearest(n.text, cands.iter().map(String::as_str)) {
                d = d.help(format!("did you mean `{s}`?"));
            }
        }
        self.diags.push(d);
    }

    pub(super) fn expect_reg(
        &mut self,
        n: &Name<'a>,
        i: Option<&Instruction<'a>>,
        want: Option<Type>,
        scope: &Scope<'m, 'a>,
    ) {
        match self.lookup(n, scope) {
            Some(Entry::Reg { ty, decl, .. }) => {
                if let Some(w) = want {
                    // ld, st and cvt may use registers wider than the instruction type (PTX ISA, Operand Size).
                    let widened = i.is_some_and(|i| matches!(i.opcode.text, "ld" | "st" | "cvt"))
                        && ty.bits() > w.bits()
                        && (ty.kind() == crate::types::Kind::Bits
                            || w.kind() == crate::types::Kind::Bits
                            || (!ty.is_float() && !w.is_float()));
                    if !ty.compatible_with(w) && !widened {
                        let what = i.map_or("guard".to_string(), |i| format!("`{}`", i.opcode.text));
                        self.diags.push(
                            Diagnostic::error(Code::P0204, n.span, format!("`{}` has type `{}`, but {what} needs `{}` here", n.text, ty.name(), w.name()))
                                .label(format!("`{}` register", ty.name()))
                                .secondary(decl.span, "declared here")
                                .note("a register matches an instruction type of the same size when either is a bit-size type or both are integers"),
                        );
                    }
                }
            }
            Some(_) => self.diags.push(
                Diagnostic::error(Code::P0105, n.span, format!("`{}` is not a register", n.text))
                    .label("expected a register"),
            ),
            None => self.undefined(n, scope),
        }
    }
}

/// The types [`operand_types`] gives, inline (every instruction asks).
pub type OperandTypes = smallvec::SmallVec<[Option<Type>; 5]>;

/// The type each operand must be compatible with, from the instruction's decoded modifiers.
/// `None` means the operand is not type-checked (addresses, labels, or forms with free sizes).
pub fn operand_types(d: &Decoded) -> OperandTypes {
    let t = d.ty();
    // Extension entries share their primary's operand shape only where they take one type (half
    // precision `add.f16`, `fma.bf16x2`); others (`cvt.pack`, `ld` with cache hints) are typed by
    // their own rules, which the table does not describe yet, so they are left unchecked. (`ld`/`st` with
    // cache hints keep the plain shape.)
    if !d.is_primary() && (d.spec.types.1 != 1 || matches!(d.spec.name, "atom" | "red" | "mov")) {
        return OperandTypes::new();
    }
    let wide = |t: Option<Type>| {
        t.map(|t| match t {
            Type::U16 => Type::U32,
            Type::S16 => Type::S32,
            Type::U32 => Type::U64,
            Type::S32 => Type::S64,
            other => other,
        })
    };
    match d.spec.name {
        "add" | "sub" | "div" | "rem" | "min" | "max" | "and" | "or" | "xor" | "copysign" | "addc" | "subc" => {
            smallvec::smallvec![t, t, t]
        }
        "madc" => smallvec::smallvec![t, t, t, t],
        "mul" if d.get(G::Mode) == Some(".wide") => smallvec::smallvec![wide(t), t, t],
        "mad" if d.get(G::Mode) == Some(".wide") => smallvec::smallvec![wide(t), t, t, wide(t)],
        "mul" => smallvec::smallvec![t, t, t],
        "mad" | "fma" => smallvec::smallvec![t, t, t, t],
        "neg" | "abs" | "not" | "mov" | "brev" | "sqrt" | "rcp" | "rsqrt" | "sin" | "cos" | "lg2" | "ex2" => {
            smallvec::smallvec![t, t]
        }
        "popc" | "clz" => smallvec::smallvec![Some(Type::U32), t],
        "shl" | "shr" => smallvec::smallvec![t, t, Some(Type::U32)],
        "setp" => smallvec::smallvec![Some(Type::Pred), t, t, Some(Type::Pred)],
        "set" => {
            let mut ts = d.types();
            let (dt, st) = (ts.next(), ts.next());
            smallvec::smallvec![dt, st, st, Some(Type::Pred)]
        }
        "prmt" => smallvec::smallvec![t, t, t, t],
        "selp" => smallvec::smallvec![t, t, t, Some(Type::Pred)],
        "cvt" => {
            // The packed form `cvt.rn.f16x2.f32 d, a, b` takes two sources.
            let mut ts = d.types();
            let (dt, st) = (ts.next(), ts.next());
            smallvec::smallvec![dt, st, st]
        }
        "cvta" => smallvec::smallvec![t, t],
        "ld" => smallvec::smallvec![t, None],
        "st" => smallvec::smallvec![None, t],
        "atom" => smallvec::smallvec![t, None, t, t],
        "shf" => smallvec::smallvec![t, t, t, Some(Type::U32)],
        "shfl" => smallvec::smallvec![t, t, Some(Type::B32), Some(Type::B32), Some(Type::B32)],
        "vote" => smallvec::smallvec![t, Some(Type::Pred), Some(Type::B32)],
        "lop3" => smallvec::smallvec![t, t, t, t, Some(Type::B32)],
        "bfe" => smallvec::smallvec![t, t, Some(Type::U32), Some(Type::U32)],
        "bfi" => smallvec::smallvec![t, t, t, Some(Type::U32), Some(Type::U32)],
        "red" => smallvec::smallvec![None, t],
        _ => smallvec::smallvec![],
    }
}

/// An instruction's entry in the checked IR: what its guard and, unless only decoded forms are wanted,
/// each name of its operands stand for (added to the function's `uses`).
/// What `n` stands for: from the names the instruction being checked resolved (by their offset in the
/// text), else from the scope.
fn lookup<'m, 'a>(
    names: &[(u32, Option<Entry<'m, 'a>>)],
    n: &Name<'_>,
    scope: &Scope<'m, 'a>,
) -> Option<Entry<'m, 'a>> {
    match names.iter().find(|(at, _)| *at == n.span.start) {
        Some(&(_, e)) => e,
        None => scope.lookup(n.text),
    }
}

fn resolve<'m, 'a>(
    i: &'m Instruction<'a>,
    decoded: Option<Decoded>,
    lookup: impl Fn(&Name<'a>) -> Option<Entry<'m, 'a>>,
    labels: &HashMap<&'a str, &'m Name<'a>>,
    uses: Option<&mut Vec<ir::Use<'m, 'a>>>,
) -> ir::Inst<'m, 'a> {
    let sym = |n: &Name<'a>| match lookup(n) {
        Some(Entry::Reg { id, .. }) => ir::Sym::Reg(id),
        Some(Entry::Var(v)) => ir::Sym::Var(v),
        Some(Entry::Func(f)) => ir::Sym::Func(f),
        None => match special_register(n.text) {
            Some(s) => ir::Sym::Special(s),
            None if labels.contains_key(n.text) => ir::Sym::Label,
            None => ir::Sym::Unresolved,
        },
    };
    let guard = i.guard.as_ref().and_then(|g| match sym(&g.pred) {
        ir::Sym::Reg(r) => Some(r),
        _ => None,
    });
    let range = match uses {
        Some(uses) => {
            let start = uses.len() as u32;
            for (k, op) in i.operands.iter().enumerate() {
                op.names(&mut |n| {
                    uses.push(ir::Use {
                        name: *n,
                        operand: k.min(u8::MAX as usize) as u8,
                        sym: sym(n),
                    })
                });
            }
            (start, uses.len() as u32)
        }
        None => (0, 0),
    };
    ir::Inst::new(i, decoded, guard, range)
}
