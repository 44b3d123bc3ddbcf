//! Semantic checks over the AST, driven by the ISA table: symbols, modifiers, operand counts, kinds and
//! types, and version/target gating.

use crate::ast::*;
use crate::diag::{nearest, Code, Diagnostic};
use crate::isa::{self, DecodeError, Decoded, G};
use crate::scope::{labels, special_register, Entry, Scope};
use crate::span::Span;
use crate::target::{parse_sm, Target};
use crate::types::{Space, Type};
use rustc_hash::FxHashMap as HashMap;

/// How to check a module.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Fragment mode: instructions may stand outside functions and names are not resolved, so isolated
    /// examples get their opcodes, modifiers, operand counts and operand kinds checked.
    pub fragment: bool,
    /// Check against this `sm_XX` (and suffix) instead of the module's `.target`: "would this run on
    /// sm_75?".
    pub sm: Option<(u32, Option<char>)>,
    /// Check against this PTX version instead of the module's `.version`.
    pub version: Option<(u32, u32)>,
    /// Skip the warnings of [`crate::lints`] (errors only).
    pub no_lints: bool,
}

pub fn check(m: &Module<'_>) -> Vec<Diagnostic> {
    check_with(m, &Options::default())
}

pub fn check_fragment(m: &Module<'_>) -> Vec<Diagnostic> {
    check_with(
        m,
        &Options {
            fragment: true,
            ..Options::default()
        },
    )
}

pub fn check_with(m: &Module<'_>, opts: &Options) -> Vec<Diagnostic> {
    let fragment = opts.fragment;
    let mut diags = vec![];
    let mut target = Target::of(m);
    if let Some((sm, suffix)) = opts.sm {
        target.sm = sm;
        target.suffix = suffix;
    }
    if let Some(v) = opts.version {
        target.version = v;
    }
    let against = if opts.sm.is_some() || opts.version.is_some() {
        "checking against"
    } else {
        "this module targets"
    };
    if !fragment {
        header(m, &target, &mut diags);
        version_fits_target(m, &mut diags);
    }
    for item in &m.items {
        match item {
            Item::Var(v) => declaration(v, &mut diags),
            Item::Function(f) => {
                f.params
                    .iter()
                    .chain(&f.returns)
                    .for_each(|p| declaration(p, &mut diags));
                if let (true, Some(p)) = (f.returns.len() > 1, f.returns.iter().find(|p| p.space != Space::Reg)) {
                    diags.push(
                        Diagnostic::error(
                            Code::P0206,
                            p.span,
                            format!("`{}` has {} return values, so they must be `.reg`", f.name.text, f.returns.len()),
                        )
                        .label("a return value outside `.reg`")
                        .note("ptxas refuses several `.param` return values, and compiles a function with several `.reg` ones without the ABI, so a module that has one cannot recurse")
                        .help("return one `.param .align 8 .b8 name[N]` and store the values into it, or declare each as `.reg`"),
                    );
                }
                if let Some(b) = &f.body {
                    visit(b, &mut |s| {
                        if let Statement::Var(v) = s {
                            declaration(v, &mut diags);
                        }
                    });
                }
            }
            _ => {}
        }
    }
    repeated_directives(m, &mut diags);
    if !fragment {
        crate::limits::check(m, &target, &mut diags);
    }
    let (mut scope, dups) = Scope::module(m);
    // Fragments are collections of examples that may each declare the same registers; module
    // variables and functions are still one per name.
    for (name, prev) in dups {
        if !fragment || !matches!(prev, Entry::Reg { .. }) {
            diags.push(duplicate(name, prev));
        }
    }
    if fragment {
        let mut c = FnChecker {
            target: &target,
            diags: &mut diags,
            labels: HashMap::default(),
            function: "the fragment",
            fragment: true,
            against,
            reported: Default::default(),
            prototypes: HashMap::default(),
        };
        scope.push();
        for item in &m.items {
            if let Item::Statement(s) = item {
                c.block(std::slice::from_ref(s), &mut scope);
            }
        }
        scope.pop();
    }
    for item in &m.items {
        if let Item::Function(f) = item {
            if let Some(body) = &f.body {
                let mut c = FnChecker {
                    target: &target,
                    diags: &mut diags,
                    labels: HashMap::default(),
                    function: f.name.text,
                    fragment,
                    against,
                    reported: Default::default(),
                    prototypes: HashMap::default(),
                };
                let mut label_dups = vec![];
                labels(body, &mut c.labels, &mut label_dups);
                // Prototypes and target lists are named by the label right before them.
                let mut pending = None;
                let mut unnamed = vec![];
                visit(body, &mut |s| match s {
                    Statement::Label(n) => pending = Some(n.text),
                    Statement::Directive(d @ (Directive::Prototype { .. } | Directive::Targets { .. })) => {
                        match (pending.take(), d) {
                            (Some(l), Directive::Prototype { returns, params, .. }) => {
                                c.prototypes.insert(l, (returns.len(), params.len()));
                            }
                            (Some(_), _) => {}
                            (None, d) => unnamed.push(d.span()),
                        }
                    }
                    _ => pending = None,
                });
                for span in unnamed {
                    c.diags.push(
                        Diagnostic::error(Code::P0002, span, "this list has no label, so nothing can refer to it")
                            .label("unnamed")
                            .help("put a label before it: `proto: .callprototype …` or `targets: .branchtargets …`"),
                    );
                }
                for (n, prev) in label_dups {
                    c.diags.push(
                        Diagnostic::error(Code::P0202, n.span, format!("label `{}` is defined twice", n.text))
                            .label("second definition")
                            .secondary(prev.span, "first defined here"),
                    );
                }
                scope.push();
                for p in f.params.iter().chain(&f.returns) {
                    if let Err(prev) = scope.declare(p) {
                        c.diags.push(duplicate(&p.name, prev));
                    }
                }
                c.block(body, &mut scope);
                scope.pop();
            }
        }
    }
    if !fragment && !opts.no_lints {
        diags.extend(crate::lints::lint(m));
    }
    diags
}

fn decl_span(e: Entry<'_, '_>) -> Span {
    match e {
        Entry::Reg { decl, .. } | Entry::Var(decl) => decl.span,
        Entry::Func(f) => f.name.span,
    }
}

fn duplicate(name: &Name<'_>, prev: Entry<'_, '_>) -> Diagnostic {
    Diagnostic::error(
        Code::P0202,
        name.span,
        format!("`{}` is declared twice in the same scope", name.text),
    )
    .label("declared again here")
    .secondary(decl_span(prev), "first declared here")
    .help("rename one of them, or remove the second declaration")
}

/// A module has one `.version`, one `.target` and at most one `.address_size`.
fn repeated_directives(m: &Module<'_>, diags: &mut Vec<Diagnostic>) {
    let mut first: [Option<Span>; 3] = [None; 3];
    for d in &m.directives {
        let (k, span, what) = match d {
            ModuleDirective::Version { span, .. } => (0, *span, ".version"),
            ModuleDirective::Target { span, .. } => (1, *span, ".target"),
            ModuleDirective::AddressSize { span, .. } => (2, *span, ".address_size"),
        };
        match first[k] {
            None => first[k] = Some(span),
            Some(prev) => diags.push(
                Diagnostic::error(Code::P0302, span, format!("a module has one `{what}` directive"))
                    .label("second one")
                    .secondary(prev, "first one here")
                    .help("keep one of them"),
            ),
        }
    }
}

/// Rules of a single declaration: power-of-two alignment, vectors of at most 128 bits, initializers no
/// longer than their arrays.
fn declaration(v: &VarDecl<'_>, diags: &mut Vec<Diagnostic>) {
    let err = |msg: String, label: &str, help: String| {
        Diagnostic::error(Code::P0206, v.name.span, msg)
            .label(label.to_string())
            .secondary(v.span, "declaration")
            .help(help)
    };
    if let Some(a) = v.align.filter(|a| !a.is_power_of_two()) {
        diags.push(err(
            format!("`.align {a}` is not a power of two"),
            "misaligned declaration",
            format!("use `.align {}`", a.next_power_of_two()),
        ));
    }
    if let Some(n) = v.vector {
        let bits = v.ty.bits() * n;
        if bits > 128 {
            diags.push(err(
                format!("`.v{n} {}` is {bits} bits; vectors hold at most 128", v.ty.name()),
                "vector too wide",
                "use fewer or narrower elements".into(),
            ));
        }
    }
    if let (Some(Some(len)), Some(Init::List(items))) = (v.dims.first(), &v.init) {
        if items.len() as u64 > *len {
            diags.push(err(
                format!("`{}` has {len} elements but {} initializers", v.name.text, items.len()),
                "initializer too long",
                format!("declare `{}[{}]`, or drop initializers", v.name.text, items.len()),
            ));
        }
    }
}

/// A target exists only from the PTX version that introduced it (`sm_90` needs `.version 7.8`).
fn version_fits_target(m: &Module<'_>, diags: &mut Vec<Diagnostic>) {
    let version = m.directives.iter().find_map(|d| match d {
        ModuleDirective::Version { major, minor, span } => Some(((*major, *minor), *span)),
        _ => None,
    });
    let Some((v, vspan)) = version else { return };
    for d in &m.directives {
        let ModuleDirective::Target { targets, .. } = d else {
            continue;
        };
        for t in targets {
            let Some((sm, suffix)) = parse_sm(t.text) else { continue };
            if let Some(need) = crate::target::min_ptx(sm, suffix).filter(|&need| v < need) {
                diags.push(
                    Diagnostic::error(
                        Code::P0302,
                        t.span,
                        format!(
                            "`{}` needs PTX {}.{} or later, but the module declares `.version {}.{}`",
                            t.text, need.0, need.1, v.0, v.1
                        ),
                    )
                    .label("target newer than the PTX version")
                    .secondary(vspan, "declared here")
                    .help(format!("raise it to `.version {}.{}`", need.0, need.1)),
                );
            }
        }
    }
}

fn header(m: &Module<'_>, target: &Target, diags: &mut Vec<Diagnostic>) {
    let first = m.directives.first();
    match first {
        Some(ModuleDirective::Version { .. }) => {}
        Some(d) => {
            let span = match d {
                ModuleDirective::Target { span, .. } | ModuleDirective::AddressSize { span, .. } => *span,
                ModuleDirective::Version { span, .. } => *span,
            };
            diags.push(
                Diagnostic::error(Code::P0302, span, "the module must start with `.version`")
                    .label("found before `.version`")
                    .help("add `.version 8.5` (or the version your code needs) as the first directive"),
            )
        }
        None => diags.push(
            Diagnostic::error(Code::P0302, Span::default(), "the module has no `.version` directive")
                .help("start the file with `.version 8.5` and `.target sm_XX`"),
        ),
    }
    for d in &m.directives {
        match d {
            ModuleDirective::Target { targets, .. } => {
                for t in targets {
                    let known = parse_sm(t.text).is_some()
                        || matches!(
                            t.text,
                            "map_f64_to_f32" | "texmode_unified" | "texmode_independent" | "debug"
                        );
                    if !known {
                        diags.push(
                            Diagnostic::error(Code::P0302, t.span, format!("`{}` is not a valid target", t.text))
                                .label("unknown target")
                                .help("targets look like `sm_90`, `sm_90a` or `sm_100f`"),
                        );
                    }
                }
            }
            ModuleDirective::AddressSize { bits: 32, span } if target.sm >= 90 => diags.push(
                Diagnostic::error(
                    Code::P0302,
                    *span,
                    "32-bit addressing is not supported on sm_90 and later",
                )
                .label("32-bit addresses")
                .help("use `.address_size 64`"),
            ),
            ModuleDirective::AddressSize { bits, span } if *bits != 32 && *bits != 64 => diags.push(
                Diagnostic::error(Code::P0302, *span, format!("`.address_size {bits}` is not allowed"))
                    .help("use `.address_size 64` (or 32 for legacy code)"),
            ),
            _ => {}
        }
    }
}

struct FnChecker<'c, 'm, 'a> {
    target: &'c Target,
    diags: &'c mut Vec<Diagnostic>,
    labels: HashMap<&'a str, &'m Name<'a>>,
    function: &'a str,
    fragment: bool,
    /// "this module targets", or "checking against" when the target comes from the command line.
    against: &'static str,
    /// Undefined names already reported: one report per name and function, not one per use.
    reported: rustc_hash::FxHashSet<&'a str>,
    /// `.callprototype` labels: (results, arguments).
    prototypes: HashMap<&'a str, (usize, usize)>,
}

impl<'c, 'm, 'a> FnChecker<'c, 'm, 'a> {
    fn block(&mut self, body: &'m [Statement<'a>], scope: &mut Scope<'m, 'a>) {
        for s in body {
            match s {
                Statement::Var(v) => {
                    if let Err(prev) = scope.declare(v) {
                        if !self.fragment {
                            self.diags.push(duplicate(&v.name, prev));
                        }
                    }
                }
                Statement::Block(b, _) => {
                    scope.push();
                    self.block(b, scope);
                    scope.pop();
                }
                Statement::Inst(i) => self.instruction(i, scope),
                Statement::Label(_) | Statement::Directive(_) => {}
            }
        }
    }

    fn instruction(&mut self, i: &'m Instruction<'a>, scope: &Scope<'m, 'a>) {
        if let Some(g) = &i.guard {
            self.expect_reg(&g.pred, None, Some(Type::Pred), scope);
        }
        let mods: smallvec::SmallVec<[&str; 8]> = i.mods.iter().map(|m| m.text).collect();
        let d = match isa::decode(i.opcode.text, &mods) {
            Ok(d) => d,
            Err(e) => return self.decode_error(i, e),
        };
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
        let (ptx, sm) = d.requires();
        let sm_low = self.target.sm != 0 && self.target.sm < sm;
        let targets = if self.target.sm == 0 {
            "no target".to_string()
        } else {
            format!("sm_{}", self.target.sm)
        };
        let form = if spec.sub.is_empty() {
            spec.name.to_string()
        } else {
            spec.form()
        };
        if known && (self.target.version < ptx || sm_low) {
            let (v, to) = (self.target.version.max(ptx), self.target.sm.max(sm));
            self.diags.push(
                Diagnostic::error(
                    Code::P0301,
                    i.opcode.span,
                    format!(
                        "`{form}` requires sm_{sm} and PTX {}.{}; {} {targets} / PTX {}.{}",
                        ptx.0, ptx.1, self.against, self.target.version.0, self.target.version.1
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
                        "`{form}` needs an architecture-specific target such as `sm_{}a`; {} sm_{}",
                        self.target.sm, self.against, self.target.sm
                    ),
                )
                .label("only on `sm_XXa` targets")
                .help(format!("use `.target sm_{}a`", self.target.sm)),
            );
        }
        if spec.name == "cvt" && d.is_primary() {
            self.cvt_rounding(i, &d);
        }
        self.form_rules(i, &d, scope);
        let expect = operand_types(&d);
        for (k, op) in i.operands.iter().enumerate() {
            let want = expect.get(k).copied().flatten();
            self.operand(i, &d, k, op, want, scope);
        }
    }

    fn decode_error(&mut self, i: &Instruction<'a>, e: DecodeError<'_>) {
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

    fn operand(
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
                if isa::address_operand(name) == Some(k) && d.is_primary() {
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
                match scope.lookup(n.text) {
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
                match scope.lookup(base.text) {
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
            Operand::Offset(n, _, s) | Operand::Element(n, _, s) => match scope.lookup(n.text) {
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

    /// Rules between an instruction's modifiers and operands that the table's groups cannot express.
    fn form_rules(&mut self, i: &Instruction<'a>, d: &Decoded, scope: &Scope<'m, 'a>) {
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
        // The types each atomic operation takes.
        if matches!(name, "atom" | "red") && d.is_primary() {
            if let (Some(op), Some(t)) = (d.get(G::Op), d.ty()) {
                use Type::*;
                let ok = match op {
                    ".add" => matches!(t, U32 | S32 | U64 | F32 | F64),
                    ".inc" | ".dec" => t == U32,
                    ".min" | ".max" => matches!(t, U32 | S32 | U64 | S64),
                    ".and" | ".or" | ".xor" => matches!(t, B32 | B64),
                    ".exch" | ".cas" => matches!(t, B32 | B64),
                    _ => true,
                };
                if !ok {
                    bad(
                        self.diags,
                        modifier(t.name()).unwrap_or(i.opcode.span),
                        format!("`{name}{op}` does not take `{}`", t.name()),
                        "add: .u32 .s32 .u64 .f32 .f64; inc/dec: .u32; min/max: .u32 .s32 .u64 .s64; and/or/xor/exch/cas: .b32 .b64",
                    );
                }
            }
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
                (scope.lookup(callee.text), i.operands.last())
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
            if let Some(Entry::Func(f)) = scope.lookup(callee.text) {
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
                if matches!(scope.lookup(b.text), Some(Entry::Var(v)) if v.space == Space::Const));
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
                    matches!(scope.lookup(n.text), Some(Entry::Reg { vector: Some(_), .. }))
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
                        if let Some(Entry::Var(v)) = scope.lookup(b.text) {
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
                            Operand::Sym { name: n, .. } => match scope.lookup(n.text) {
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
    fn cvt_rounding(&mut self, i: &Instruction<'a>, d: &Decoded) {
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

    /// Reports the undefined names anywhere inside a call's argument list or a texture operand.
    fn resolve_names(&mut self, op: &Operand<'a>, scope: &Scope<'m, 'a>) {
        match op {
            Operand::Sym { name: n, .. }
                if special_register(n.text).is_none() && n.text != "WARP_SZ" && scope.lookup(n.text).is_none() =>
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

    fn target_list(&mut self, n: &Name<'a>) {
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

    fn label_or_func(&mut self, opcode: &str, n: &Name<'a>, scope: &Scope<'m, 'a>) {
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
            }
        } else if !matches!(scope.lookup(n.text), Some(Entry::Func(_)) | Some(Entry::Reg { .. })) {
            self.undefined(n, scope);
        }
    }

    fn undefined(&mut self, n: &Name<'a>, scope: &Scope<'m, 'a>) {
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

    fn expect_reg(&mut self, n: &Name<'a>, i: Option<&Instruction<'a>>, want: Option<Type>, scope: &Scope<'m, 'a>) {
        match scope.lookup(n.text) {
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

/// The type each operand must be compatible with, from the instruction's decoded modifiers.
/// `None` means the operand is not type-checked (addresses, labels, or forms with free sizes).
pub fn operand_types(d: &Decoded) -> Vec<Option<Type>> {
    let t = d.ty();
    // Extension entries share their primary's operand shape only where they take one type (half
    // precision `add.f16`, `fma.bf16x2`); others (`cvt.pack`, `ld` with cache hints) are typed by
    // their own rules, which the table does not describe yet, so they are left unchecked. (`ld`/`st` with
    // cache hints keep the plain shape.)
    if !d.is_primary() && (d.spec.types.1 != 1 || matches!(d.spec.name, "atom" | "red" | "mov")) {
        return vec![];
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
            vec![t, t, t]
        }
        "madc" => vec![t, t, t, t],
        "mul" if d.get(G::Mode) == Some(".wide") => vec![wide(t), t, t],
        "mad" if d.get(G::Mode) == Some(".wide") => vec![wide(t), t, t, wide(t)],
        "mul" => vec![t, t, t],
        "mad" | "fma" => vec![t, t, t, t],
        "neg" | "abs" | "not" | "mov" | "brev" | "sqrt" | "rcp" | "rsqrt" | "sin" | "cos" | "lg2" | "ex2" => vec![t, t],
        "popc" | "clz" => vec![Some(Type::U32), t],
        "shl" | "shr" => vec![t, t, Some(Type::U32)],
        "setp" => vec![Some(Type::Pred), t, t, Some(Type::Pred)],
        "set" => {
            let mut ts = d.types();
            let (dt, st) = (ts.next(), ts.next());
            vec![dt, st, st, Some(Type::Pred)]
        }
        "prmt" => vec![t, t, t, t],
        "selp" => vec![t, t, t, Some(Type::Pred)],
        "cvt" => {
            // The packed form `cvt.rn.f16x2.f32 d, a, b` takes two sources.
            let mut ts = d.types();
            let (dt, st) = (ts.next(), ts.next());
            vec![dt, st, st]
        }
        "cvta" => vec![t, t],
        "ld" => vec![t, None],
        "st" => vec![None, t],
        "atom" => vec![t, None, t, t],
        "shf" => vec![t, t, t, Some(Type::U32)],
        "shfl" => vec![t, t, Some(Type::B32), Some(Type::B32), Some(Type::B32)],
        "vote" => vec![t, Some(Type::Pred), Some(Type::B32)],
        "lop3" => vec![t, t, t, t, Some(Type::B32)],
        "bfe" => vec![t, t, Some(Type::U32), Some(Type::U32)],
        "bfi" => vec![t, t, t, Some(Type::U32), Some(Type::U32)],
        "red" => vec![None, t],
        _ => vec![],
    }
}
