//! Semantic checks over the AST, driven by the ISA table: symbols, modifiers, operand counts, kinds and
//! types, and version/target gating.

use crate::ast::*;
use crate::diag::{nearest, Code, Diagnostic};
use crate::ir;
use crate::isa::{self, DecodeError, Decoded, G};
use crate::scope::{special_register, Entry, Labels, Scope};
use crate::span::Span;
use crate::target::{parse_sm, Target};
use crate::types::{Space, Type};
use rustc_hash::FxHashMap as HashMap;

// The walk over a function's statements and each instruction's operands (`walk`), the rules between
// an instruction's modifiers and operands that the ISA table's groups cannot express (`forms`),
// `wgmma.mma_async`'s forms (`warpgroup`), and the video instructions' part selectors (`video`).
mod forms;
mod tensormap;
mod video;
mod walk;
mod warpgroup;

pub use walk::{operand_types, OperandTypes};

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

/// The target to check against (the module's, or what the options name), and how messages call it.
fn target_of(m: &Module<'_>, opts: &Options) -> (Target, &'static str) {
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
    (target, against)
}

pub fn check_with(m: &Module<'_>, opts: &Options) -> Vec<Diagnostic> {
    let fragment = opts.fragment;
    let mut diags = vec![];
    let (target, against) = target_of(m, opts);
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
        let mut heads = Heads::default();
        let mut c = FnChecker::new(&target, against, true, &mut diags, &mut heads, "the fragment");
        scope.push();
        for item in &m.items {
            if let Item::Statement(s) = item {
                c.block(std::slice::from_ref(s), &mut scope);
            }
        }
        scope.pop();
    }
    let lints = (!fragment && !opts.no_lints).then(|| crate::lints::Module::new(m));
    let mut checker = Checker {
        target,
        against,
        fragment,
        scope,
        heads: Heads::default(),
    };
    let detail = if lints.is_some() {
        Detail::Resolved
    } else {
        Detail::Nothing
    };
    for item in &m.items {
        if let Item::Function(f) = item {
            if let Some(func) = checker.function(f, &mut diags, detail) {
                if let Some(l) = &lints {
                    l.function(&func, &mut diags);
                }
            }
        }
    }
    diags
}

/// Checks function bodies one at a time against the module's symbols and target, and gives each
/// one's checked IR ([`ir::Function`]): the checker's own walk and the lowering both use it, so an
/// instruction is decoded and its names resolved by the checker alone.
pub struct Checker<'m, 'a> {
    target: Target,
    against: &'static str,
    fragment: bool,
    scope: Scope<'m, 'a>,
    heads: Heads<'a>,
}

/// The instruction heads (opcode and modifiers) a module has decoded, with what follows from each alone.
/// A module repeats a few hundred heads (`ld.global.nc.f32`, `add.s32`) thousands of times, so each is
/// decoded once.
type Heads<'a> = HashMap<smallvec::SmallVec<[&'a str; 8]>, Head>;

/// What an instruction's opcode and modifiers determine.
pub(super) struct Head {
    pub d: Decoded,
    /// [`Decoded::requires`].
    pub requires: ((u32, u32), u32),
    /// The type each operand must have ([`operand_types`]).
    pub types: OperandTypes,
}

impl<'m, 'a> Checker<'m, 'a> {
    /// A checker of `m`'s functions (module-level rules are [`check_with`]'s).
    pub fn new(m: &'m Module<'a>, opts: &Options) -> Self {
        let (target, against) = target_of(m, opts);
        Checker {
            target,
            against,
            fragment: opts.fragment,
            scope: Scope::module(m).0,
            heads: Heads::default(),
        }
    }

    /// Checks the body of `f` (nothing for a declaration), adding its diagnostics to `diags`; returns
    /// its checked IR with the `detail` asked for.
    pub fn function(
        &mut self,
        f: &'m Function<'a>,
        diags: &mut Vec<Diagnostic>,
        detail: Detail,
    ) -> Option<ir::Function<'m, 'a>> {
        let body = f.body.as_ref()?;
        let scope = &mut self.scope;
        let mut c = FnChecker::new(
            &self.target,
            self.against,
            self.fragment,
            diags,
            &mut self.heads,
            f.name.text,
        );
        let first_register = scope.module_registers();
        c.ir = (detail != Detail::Nothing).then(|| ir::Function::new(f, first_register));
        c.detail = detail;
        // The IR keeps the body's labels (its control flow resolves branches with them).
        let computed;
        let labels = match &c.ir {
            Some(f) => &f.scopes,
            None => {
                computed = Labels::of(body);
                &computed
            }
        };
        for n in &labels.defs {
            c.labels.entry(n.text).or_insert(n);
        }
        c.label_uses = labels.resolved().collect();
        let label_dups = labels.dups.clone();
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
        if let Some(f) = &mut c.ir {
            // Nearly every statement of a body is an instruction.
            f.insts.reserve(body.len());
        }
        scope.push_function();
        for p in f.params.iter().chain(&f.returns) {
            match scope.declare(p) {
                Ok(e) => c.declared(p, e, true),
                Err(prev) => c.diags.push(duplicate(&p.name, prev)),
            }
        }
        c.block(body, scope);
        scope.pop();
        c.ir
    }
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
    heads: &'c mut Heads<'a>,
    labels: HashMap<&'a str, &'m Name<'a>>,
    /// The places of branch and list names that a label in scope answers (nested blocks scope
    /// labels; a name of a label elsewhere in the function is not one of them).
    label_uses: rustc_hash::FxHashSet<u32>,
    function: &'a str,
    fragment: bool,
    /// "this module targets", or "checking against" when the target comes from the command line.
    against: &'static str,
    /// Undefined names already reported: one report per name and function, not one per use.
    reported: rustc_hash::FxHashSet<&'a str>,
    /// `.callprototype` labels: (results, arguments).
    prototypes: HashMap<&'a str, (usize, usize)>,
    /// The checked IR of the function being checked (none for fragments).
    ir: Option<ir::Function<'m, 'a>>,
    /// How deep in nested `{ }` blocks the walk is.
    depth: u32,
    /// The label right before the statement being walked, which names a `.branchtargets` list.
    pending_label: Option<&'a str>,
    /// The names of the instruction being checked (by their offset in the text), resolved once.
    names: smallvec::SmallVec<[(u32, Option<Entry<'m, 'a>>); 8]>,
    /// How much of the checked IR to record.
    detail: Detail,
}

impl<'c, 'm, 'a> FnChecker<'c, 'm, 'a> {
    /// A walk that records no IR (see [`Checker::function`] for one that does).
    fn new(
        target: &'c Target,
        against: &'static str,
        fragment: bool,
        diags: &'c mut Vec<Diagnostic>,
        heads: &'c mut Heads<'a>,
        function: &'a str,
    ) -> Self {
        FnChecker {
            target,
            diags,
            heads,
            labels: HashMap::default(),
            label_uses: Default::default(),
            function,
            fragment,
            against,
            reported: Default::default(),
            prototypes: HashMap::default(),
            ir: None,
            depth: 0,
            pending_label: None,
            names: Default::default(),
            detail: Detail::Nothing,
        }
    }
}

/// How much of a function's checked IR [`Checker::function`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// None: only the diagnostics.
    Nothing,
    /// Each instruction's decoded form and guard register (what the lowering needs).
    Decoded,
    /// Also what every name of every operand stands for (the lints, the retargeter).
    Resolved,
}
