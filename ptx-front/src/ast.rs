//! The syntax tree. Every node keeps its span; names borrow from the source text.

use crate::span::Span;
use crate::types::{Space, Type};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Name<'a> {
    pub text: &'a str,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Module<'a> {
    pub directives: Vec<ModuleDirective<'a>>,
    pub items: Vec<Item<'a>>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ModuleDirective<'a> {
    Version { major: u32, minor: u32, span: Span },
    Target { targets: Vec<Name<'a>>, span: Span },
    AddressSize { bits: u32, span: Span },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item<'a> {
    Function(Function<'a>),
    Var(VarDecl<'a>),
    /// `.file`, `.section`, `.pragma` at module level: kept for printing, no semantics yet.
    Other {
        span: Span,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FnKind {
    Entry,
    Func,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Linkage {
    Visible,
    Extern,
    Weak,
    Common,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Function<'a> {
    pub kind: FnKind,
    pub linkage: Option<Linkage>,
    pub name: Name<'a>,
    pub returns: Vec<VarDecl<'a>>,
    pub params: Vec<VarDecl<'a>>,
    /// `.maxntid 128, 1, 1` and friends, in source order.
    pub perf: Vec<PerfDirective<'a>>,
    pub body: Option<Vec<Statement<'a>>>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PerfDirective<'a> {
    pub name: Name<'a>,
    pub values: Vec<u64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct VarDecl<'a> {
    pub linkage: Option<Linkage>,
    pub space: Space,
    pub align: Option<u32>,
    /// `.v2`/`.v4` element count.
    pub vector: Option<u32>,
    pub ty: Type,
    pub name: Name<'a>,
    /// `%r<100>`: declares `%r0` … `%r99`.
    pub range: Option<u32>,
    /// Array dimensions; `None` for `[]` (size from the initializer or, for `extern .shared`, at launch).
    pub dims: Vec<Option<u64>>,
    pub init: Option<Init<'a>>,
    pub span: Span,
}

impl VarDecl<'_> {
    /// Bytes the variable occupies (0 for an unsized array).
    pub fn size_bytes(&self) -> u64 {
        let elem = self.ty.bytes() as u64 * self.vector.unwrap_or(1) as u64;
        self.dims.iter().fold(elem, |acc, d| acc * d.unwrap_or(0))
    }
    pub fn alignment(&self) -> u64 {
        self.align
            .map(u64::from)
            .unwrap_or(self.ty.bytes() as u64 * self.vector.unwrap_or(1) as u64)
            .max(1)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Init<'a> {
    Scalar(Expr<'a>),
    List(Vec<Init<'a>>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Statement<'a> {
    Var(VarDecl<'a>),
    Label(Name<'a>),
    Inst(Instruction<'a>),
    Block(Vec<Statement<'a>>, Span),
    /// A directive inside a body that has no semantics yet (`.loc`, `.pragma`).
    Other {
        span: Span,
    },
}

/// Calls `f` on every statement of a body in source order, descending into `{ }` blocks (the blocks
/// themselves are not passed).
pub fn visit<'m, 'a>(body: &'m [Statement<'a>], f: &mut impl FnMut(&'m Statement<'a>)) {
    for s in body {
        match s {
            Statement::Block(b, _) => visit(b, f),
            other => f(other),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Guard<'a> {
    pub negated: bool,
    pub pred: Name<'a>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Instruction<'a> {
    pub guard: Option<Guard<'a>>,
    pub opcode: Name<'a>,
    pub mods: Vec<Name<'a>>,
    pub operands: Vec<Operand<'a>>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Operand<'a> {
    /// A register, variable, label or special register, with an optional `.x`-style component.
    Sym {
        name: Name<'a>,
        component: Option<Name<'a>>,
    },
    Imm(Imm, Span),
    Addr(Address<'a>),
    Vector(Vec<Operand<'a>>, Span),
    /// `!%p`
    Not(Box<Operand<'a>>, Span),
    /// `-%f1` (only meaningful for a few legacy forms)
    Neg(Box<Operand<'a>>, Span),
    /// `%p|%q`
    Pair(Box<Operand<'a>>, Box<Operand<'a>>, Span),
    /// `(a, b)` argument and return lists of `call`.
    List(Vec<Operand<'a>>, Span),
    /// `_`
    Sink(Span),
}

impl Operand<'_> {
    pub fn span(&self) -> Span {
        match self {
            Operand::Sym { name, component } => component.map_or(name.span, |c| name.span.to(c.span)),
            Operand::Imm(_, s)
            | Operand::Vector(_, s)
            | Operand::Not(_, s)
            | Operand::Neg(_, s)
            | Operand::Pair(_, _, s)
            | Operand::List(_, s)
            | Operand::Sink(s) => *s,
            Operand::Addr(a) => a.span,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Address<'a> {
    pub base: Option<Name<'a>>,
    pub offset: i64,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Imm {
    Int(i64),
    /// Bits of a `0f` literal or a decimal float rounded to f32.
    F32(u32),
    F64(u64),
}

/// Constant expressions in initializers.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr<'a> {
    Imm(Imm, Span),
    Sym(Name<'a>),
    Neg(Box<Expr<'a>>, Span),
    Add(Box<Expr<'a>>, Box<Expr<'a>>, Span),
    Sub(Box<Expr<'a>>, Box<Expr<'a>>, Span),
    Mul(Box<Expr<'a>>, Box<Expr<'a>>, Span),
}
