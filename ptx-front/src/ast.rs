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
    Directive(Directive<'a>),
    /// Only in fragment mode: an instruction, label or block outside any function.
    Statement(Statement<'a>),
}

/// Directives that carry no semantics for execution: debug information, pragmas, aliases, and the
/// target lists and prototypes of indirect branches and calls.
#[derive(Clone, Debug, PartialEq)]
pub enum Directive<'a> {
    /// `.file 1 "a.cu", 1700000000, 1234`
    File {
        index: u32,
        /// The string literal with its quotes, as written.
        path: &'a str,
        extra: Vec<u64>,
        span: Span,
    },
    /// `.loc 1 12 3` optionally followed by `, function_name L {+ n}, inlined_at 1 4 5`.
    Loc {
        file: u32,
        line: u32,
        column: Option<u32>,
        inlined: Option<InlinedAt<'a>>,
        span: Span,
    },
    /// `.section .debug_info { .b32 12 .b8 1, 2 … }`
    Section {
        name: Name<'a>,
        entries: Vec<SectionEntry<'a>>,
        span: Span,
    },
    /// `@@DWARF …`, one line, verbatim.
    Dwarf(&'a str, Span),
    /// `.pragma "nounroll";`
    Pragma(Vec<&'a str>, Span),
    /// `.alias alias, aliasee;`
    Alias {
        alias: Name<'a>,
        aliasee: Name<'a>,
        span: Span,
    },
    /// `.branchtargets L1, L2;` or `.calltargets f, g;` (after a label that names the list).
    Targets {
        kind: Name<'a>,
        targets: Vec<Name<'a>>,
        span: Span,
    },
    /// `.callprototype (.param .b32 _) _ (.param .b64 _);` (after a label that names it).
    Prototype {
        returns: Vec<VarDecl<'a>>,
        params: Vec<VarDecl<'a>>,
        noreturn: bool,
        span: Span,
    },
}

impl Directive<'_> {
    pub fn span(&self) -> Span {
        match self {
            Directive::File { span, .. }
            | Directive::Loc { span, .. }
            | Directive::Section { span, .. }
            | Directive::Dwarf(_, span)
            | Directive::Pragma(_, span)
            | Directive::Alias { span, .. }
            | Directive::Targets { span, .. }
            | Directive::Prototype { span, .. } => *span,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct InlinedAt<'a> {
    pub function: Name<'a>,
    pub offset: Option<u64>,
    pub file: u32,
    pub line: u32,
    pub column: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SectionEntry<'a> {
    /// `.b8 1, 2, 3` / `.b64 $L__func_begin0` / `.b32 .debug_abbrev+12`
    Data {
        width: Name<'a>,
        values: Vec<Expr<'a>>,
    },
    Label(Name<'a>),
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
    /// `.maxntid 128, 1, 1`, `.pragma`, `.noreturn` and friends, in source order.
    pub perf: Vec<PerfDirective<'a>>,
    pub body: Option<Vec<Statement<'a>>>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum PerfDirective<'a> {
    /// `.maxntid 256, 1, 1`, `.maxnreg 32`, `.noreturn`, `.explicitcluster`
    Value {
        name: Name<'a>,
        values: Vec<u64>,
    },
    Pragma(Vec<&'a str>, Span),
}

#[derive(Clone, Debug, PartialEq)]
pub struct VarDecl<'a> {
    pub linkage: Option<Linkage>,
    pub space: Space,
    pub align: Option<u32>,
    /// `.attribute(.managed)`
    pub managed: bool,
    /// `.ptr {.space} {.align N}` on a kernel parameter.
    pub ptr: Option<PtrAttr>,
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
        // Saturates: `crate::limits` refuses sizes this large.
        self.dims.iter().fold(elem, |acc, d| acc.saturating_mul(d.unwrap_or(0)))
    }
    pub fn alignment(&self) -> u64 {
        self.align
            .map(u64::from)
            .unwrap_or(self.ty.bytes() as u64 * self.vector.unwrap_or(1) as u64)
            .max(1)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PtrAttr {
    pub space: Option<Space>,
    pub align: Option<u32>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Init<'a> {
    Scalar(Expr<'a>),
    List(Vec<Init<'a>>),
    /// `filter_mode = nearest` in a `.samplerref` initializer.
    Field(Name<'a>, Expr<'a>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Statement<'a> {
    Var(VarDecl<'a>),
    Label(Name<'a>),
    Inst(Instruction<'a>),
    Block(Vec<Statement<'a>>, Span),
    Directive(Directive<'a>),
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
    /// Inline for the usual handful of modifiers: one allocation fewer per instruction.
    pub mods: smallvec::SmallVec<[Name<'a>; 4]>,
    pub operands: Vec<Operand<'a>>,
    pub span: Span,
}

impl<'a> Instruction<'a> {
    /// What a `call` calls: the function's name, or the register of an indirect call (the first
    /// operand that is not a result or argument list); `None` for any other instruction.
    pub fn callee(&self) -> Option<&Name<'a>> {
        if self.opcode.text != "call" {
            return None;
        }
        match self.operands.iter().find(|o| !matches!(o, Operand::List(..))) {
            Some(Operand::Sym { name, .. }) => Some(name),
            _ => None,
        }
    }
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
    /// `[tex, sampler, {x, y}]`: the bracketed operand lists of texture and surface instructions.
    Bracket(Vec<Operand<'a>>, Span),
    /// `_`
    Sink(Span),
    /// `var+4` outside brackets: the address of a variable plus a byte offset (`mov.u64 %rd1, arr+8;`).
    Offset(Name<'a>, i64, Span),
    /// `A[5]` outside brackets: the address of an array element (`mov.u32 ptr, A[5];`).
    Element(Name<'a>, u64, Span),
}

impl<'a> Operand<'a> {
    /// Calls `f` with every name the operand mentions: registers, variables, labels, address bases.
    pub fn names(&self, f: &mut impl FnMut(&Name<'a>)) {
        match self {
            Operand::Sym { name, .. } | Operand::Offset(name, _, _) | Operand::Element(name, _, _) => f(name),
            Operand::Addr(a) => a.base.iter().for_each(f),
            Operand::Vector(v, _) | Operand::List(v, _) | Operand::Bracket(v, _) => v.iter().for_each(|x| x.names(f)),
            Operand::Not(x, _) | Operand::Neg(x, _) => x.names(f),
            Operand::Pair(a, b, _) => {
                a.names(f);
                b.names(f);
            }
            Operand::Imm(..) | Operand::Sink(_) => {}
        }
    }

    pub fn span(&self) -> Span {
        match self {
            Operand::Sym { name, component } => component.map_or(name.span, |c| name.span.to(c.span)),
            Operand::Imm(_, s)
            | Operand::Vector(_, s)
            | Operand::Not(_, s)
            | Operand::Neg(_, s)
            | Operand::Pair(_, _, s)
            | Operand::List(_, s)
            | Operand::Bracket(_, s)
            | Operand::Sink(s)
            | Operand::Offset(_, _, s)
            | Operand::Element(_, _, s) => *s,
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

/// Constant expressions (initializers, address offsets, section data), with the manual's operators.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr<'a> {
    Imm(Imm, Span),
    Sym(Name<'a>),
    Unary(UnOp, Box<Expr<'a>>, Span),
    Binary(BinOp, Box<Expr<'a>>, Box<Expr<'a>>, Span),
    Cond(Box<Expr<'a>>, Box<Expr<'a>>, Box<Expr<'a>>, Span),
    /// `(.u64) e`, `(.s64) e`; an integer literal with a `U` suffix parses as a `.u64` cast.
    Cast(Type, Box<Expr<'a>>, Span),
    /// `generic(var)`: the generic address of a variable.
    Generic(Name<'a>, Span),
    /// `0xff00(e)`: bytes of `e` selected by a mask.
    Mask(u64, Box<Expr<'a>>, Span),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Plus,
    Not,
    BitNot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Mul,
    Div,
    Rem,
    Add,
    Sub,
    Shl,
    Shr,
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
    Ne,
    And,
    Xor,
    Or,
    LogAnd,
    LogOr,
}

impl BinOp {
    /// Binding strength, C's order: higher binds tighter.
    pub fn precedence(self) -> u8 {
        use BinOp::*;
        match self {
            Mul | Div | Rem => 10,
            Add | Sub => 9,
            Shl | Shr => 8,
            Lt | Gt | Le | Ge => 7,
            Eq | Ne => 6,
            And => 5,
            Xor => 4,
            Or => 3,
            LogAnd => 2,
            LogOr => 1,
        }
    }
    pub fn text(self) -> &'static str {
        use BinOp::*;
        match self {
            Mul => "*",
            Div => "/",
            Rem => "%",
            Add => "+",
            Sub => "-",
            Shl => "<<",
            Shr => ">>",
            Lt => "<",
            Gt => ">",
            Le => "<=",
            Ge => ">=",
            Eq => "==",
            Ne => "!=",
            And => "&",
            Xor => "^",
            Or => "|",
            LogAnd => "&&",
            LogOr => "||",
        }
    }
}

impl<'a> Init<'a> {
    /// Calls `f` with every symbol the initializer names (variables and functions whose address it holds).
    pub fn names(&self, f: &mut impl FnMut(&Name<'a>)) {
        match self {
            Init::Scalar(e) | Init::Field(_, e) => e.names(f),
            Init::List(l) => l.iter().for_each(|i| i.names(f)),
        }
    }
}

impl<'a> Expr<'a> {
    /// Calls `f` with every symbol the expression names.
    pub fn names(&self, f: &mut impl FnMut(&Name<'a>)) {
        match self {
            Expr::Sym(n) | Expr::Generic(n, _) => f(n),
            Expr::Imm(..) => {}
            Expr::Unary(_, e, _) | Expr::Cast(_, e, _) | Expr::Mask(_, e, _) => e.names(f),
            Expr::Binary(_, a, b, _) => {
                a.names(f);
                b.names(f);
            }
            Expr::Cond(c, a, b, _) => {
                c.names(f);
                a.names(f);
                b.names(f);
            }
        }
    }
}

impl Expr<'_> {
    pub fn span(&self) -> Span {
        match self {
            Expr::Sym(n) => n.span,
            Expr::Imm(_, s)
            | Expr::Unary(_, _, s)
            | Expr::Binary(_, _, _, s)
            | Expr::Cond(_, _, _, s)
            | Expr::Cast(_, _, s)
            | Expr::Generic(_, s)
            | Expr::Mask(_, _, s) => *s,
        }
    }
}
