//! Prints a syntax tree back to PTX text. The output is canonical (one statement per line, modifiers
//! and operands as stored), and parsing it gives back an equal tree, spans aside.

use crate::ast::*;
use crate::types::Type;
use std::fmt::Write;

pub fn print(m: &Module<'_>) -> String {
    let mut p = Printer {
        out: String::with_capacity(4096),
        depth: 0,
    };
    for d in &m.directives {
        match d {
            ModuleDirective::Version { major, minor, .. } => p.line(format_args!(".version {major}.{minor}")),
            ModuleDirective::Target { targets, .. } => {
                let t: Vec<_> = targets.iter().map(|n| n.text).collect();
                p.line(format_args!(".target {}", t.join(", ")))
            }
            ModuleDirective::AddressSize { bits, .. } => p.line(format_args!(".address_size {bits}")),
        }
    }
    for item in &m.items {
        match item {
            Item::Function(f) => p.function(f),
            Item::Var(v) => {
                p.indent();
                p.var(v);
                p.out.push_str(";\n");
            }
            Item::Directive(d) => p.directive(d),
            Item::Statement(s) => p.statement(s),
        }
    }
    p.out
}

/// The tree's `Debug` form with every span removed: two texts have the same syntax tree exactly when
/// their shapes are equal. Used to check that `parse(print(parse(x)))` equals `parse(x)`.
pub fn shape(m: &Module<'_>) -> String {
    let full = format!("{m:?}");
    let b = full.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut k = 0;
    while k < b.len() {
        // A span prints as `@digits..digits`; `@` appears nowhere else outside string contents, and a
        // string would have to contain that exact pattern to be affected.
        if b[k] == b'@' {
            let mut j = k + 1;
            let d1 = j;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if j > d1 && b[j..].starts_with(b"..") {
                let d2 = j + 2;
                let mut e = d2;
                while e < b.len() && b[e].is_ascii_digit() {
                    e += 1;
                }
                if e > d2 {
                    k = e;
                    continue;
                }
            }
        }
        out.push(b[k]);
        k += 1;
    }
    String::from_utf8(out).expect("only ASCII removed")
}

struct Printer {
    out: String,
    depth: usize,
}

fn linkage(l: Linkage) -> &'static str {
    match l {
        Linkage::Visible => ".visible ",
        Linkage::Extern => ".extern ",
        Linkage::Weak => ".weak ",
        Linkage::Common => ".common ",
    }
}

fn join<T>(items: &[T], mut f: impl FnMut(&mut String, &T)) -> String {
    let mut s = String::new();
    for (k, x) in items.iter().enumerate() {
        if k > 0 {
            s.push_str(", ");
        }
        f(&mut s, x);
    }
    s
}

impl Printer {
    fn indent(&mut self) {
        for _ in 0..self.depth {
            self.out.push('\t');
        }
    }
    fn line(&mut self, args: std::fmt::Arguments<'_>) {
        self.indent();
        self.out.write_fmt(args).expect("write to String");
        self.out.push('\n');
    }

    fn function(&mut self, f: &Function<'_>) {
        if let Some(l) = f.linkage {
            self.out.push_str(linkage(l));
        }
        match f.kind {
            FnKind::Entry => self.out.push_str(".entry "),
            FnKind::Func => {
                self.out.push_str(".func ");
                if !f.returns.is_empty() {
                    self.params(&f.returns);
                    self.out.push(' ');
                }
            }
        }
        self.out.push_str(f.name.text);
        // An empty list and no list are the same function.
        if !f.params.is_empty() {
            self.params(&f.params);
        }
        for d in &f.perf {
            self.out.push('\n');
            match d {
                PerfDirective::Value { name, values } => {
                    self.out.push_str(name.text);
                    if !values.is_empty() {
                        let v: Vec<_> = values.iter().map(u64::to_string).collect();
                        write!(self.out, " {}", v.join(", ")).expect("write to String");
                    }
                }
                PerfDirective::Pragma(strings, _) => {
                    write!(self.out, ".pragma {};", strings.join(", ")).expect("write")
                }
            }
        }
        match &f.body {
            None => self.out.push_str(";\n"),
            Some(body) => {
                self.out.push_str("\n{\n");
                self.depth += 1;
                for s in body {
                    self.statement(s);
                }
                self.depth -= 1;
                self.out.push_str("}\n");
            }
        }
    }

    fn params(&mut self, ps: &[VarDecl<'_>]) {
        self.out.push('(');
        for (k, p) in ps.iter().enumerate() {
            if k > 0 {
                self.out.push_str(", ");
            }
            self.var(p);
        }
        self.out.push(')');
    }

    fn var(&mut self, v: &VarDecl<'_>) {
        let o = &mut self.out;
        if let Some(l) = v.linkage {
            o.push_str(linkage(l));
        }
        o.push_str(v.space.name());
        if v.managed {
            o.push_str(" .attribute(.managed)");
        }
        if let Some(a) = v.align {
            write!(o, " .align {a}").expect("write");
        }
        if let Some(n) = v.vector {
            write!(o, " .v{n}").expect("write");
        }
        write!(o, " {}", v.ty.name()).expect("write");
        if let Some(p) = v.ptr {
            o.push_str(" .ptr");
            if let Some(s) = p.space {
                write!(o, " {}", s.name()).expect("write");
            }
            if let Some(a) = p.align {
                write!(o, " .align {a}").expect("write");
            }
        }
        write!(o, " {}", v.name.text).expect("write");
        if let Some(r) = v.range {
            write!(o, "<{r}>").expect("write");
        }
        for d in &v.dims {
            match d {
                Some(n) => write!(o, "[{n}]").expect("write"),
                None => o.push_str("[]"),
            }
        }
        if let Some(i) = &v.init {
            o.push_str(" = ");
            init(o, i);
        }
    }

    fn statement(&mut self, s: &Statement<'_>) {
        match s {
            Statement::Var(v) => {
                self.indent();
                self.var(v);
                self.out.push_str(";\n");
            }
            Statement::Label(n) => {
                let _ = writeln!(self.out, "{}:", n.text);
            }
            Statement::Inst(i) => {
                self.indent();
                instruction(&mut self.out, i);
                self.out.push('\n');
            }
            Statement::Block(b, _) => {
                self.line(format_args!("{{"));
                self.depth += 1;
                for s in b {
                    self.statement(s);
                }
                self.depth -= 1;
                self.line(format_args!("}}"));
            }
            Statement::Directive(d) => self.directive(d),
        }
    }

    fn directive(&mut self, d: &Directive<'_>) {
        self.indent();
        let o = &mut self.out;
        match d {
            Directive::File { index, path, extra, .. } => {
                write!(o, ".file {index} {path}").expect("write");
                for e in extra {
                    write!(o, ", {e}").expect("write");
                }
            }
            Directive::Loc {
                file,
                line,
                column,
                inlined,
                ..
            } => {
                write!(o, ".loc {file} {line}").expect("write");
                if let Some(c) = column {
                    write!(o, " {c}").expect("write");
                }
                if let Some(i) = inlined {
                    write!(o, ", function_name {}", i.function.text).expect("write");
                    if let Some(off) = i.offset {
                        write!(o, "+{off}").expect("write");
                    }
                    write!(o, ", inlined_at {} {} {}", i.file, i.line, i.column).expect("write");
                }
            }
            Directive::Section { name, entries, .. } => {
                writeln!(o, ".section {}\n{{", name.text).expect("write");
                for e in entries {
                    match e {
                        SectionEntry::Data { width, values } => {
                            let v = join(values, |s, x| expr(s, x));
                            writeln!(o, "{} {v}", width.text).expect("write");
                        }
                        SectionEntry::Label(n) => writeln!(o, "{}:", n.text).expect("write"),
                    }
                }
                o.push('}');
            }
            Directive::Dwarf(text, _) => o.push_str(text),
            Directive::Pragma(strings, _) => write!(o, ".pragma {};", strings.join(", ")).expect("write"),
            Directive::Alias { alias, aliasee, .. } => {
                write!(o, ".alias {}, {};", alias.text, aliasee.text).expect("write")
            }
            Directive::Targets { kind, targets, .. } => {
                let t: Vec<_> = targets.iter().map(|n| n.text).collect();
                write!(o, "{} {};", kind.text, t.join(", ")).expect("write");
            }
            Directive::Prototype {
                returns,
                params,
                noreturn,
                ..
            } => {
                self.out.push_str(".callprototype ");
                if !returns.is_empty() {
                    self.params(returns);
                    self.out.push(' ');
                }
                self.out.push_str("_ ");
                self.params(params);
                if *noreturn {
                    self.out.push_str(" .noreturn");
                }
                self.out.push(';');
            }
        }
        self.out.push('\n');
    }
}

pub fn instruction(o: &mut String, i: &Instruction<'_>) {
    instruction_with(o, i, &mut |_| None);
}

/// Prints an instruction whose operands (at any nesting depth) `subst` may replace with its own text;
/// the NVPTX backend uses it to turn registers into inline-assembly placeholders.
pub fn instruction_with(o: &mut String, i: &Instruction<'_>, subst: &mut dyn FnMut(&Operand<'_>) -> Option<String>) {
    if let Some(g) = &i.guard {
        write!(o, "@{}{} ", if g.negated { "!" } else { "" }, g.pred.text).expect("write");
    }
    o.push_str(i.opcode.text);
    for m in &i.mods {
        o.push_str(m.text);
    }
    if !i.operands.is_empty() {
        o.push(' ');
        o.push_str(&join(&i.operands, |s, x| operand(s, x, subst)));
    }
    o.push(';');
}

fn operand(o: &mut String, x: &Operand<'_>, subst: &mut dyn FnMut(&Operand<'_>) -> Option<String>) {
    if let Some(t) = subst(x) {
        o.push_str(&t);
        return;
    }
    match x {
        Operand::Sym { name, component } => {
            o.push_str(name.text);
            if let Some(c) = component {
                o.push_str(c.text);
            }
        }
        Operand::Imm(i, _) => imm(o, *i),
        Operand::Addr(a) => {
            o.push('[');
            match a.base {
                Some(b) => {
                    o.push_str(b.text);
                    if a.offset != 0 {
                        write!(o, "{:+}", a.offset).expect("write");
                    }
                }
                None => write!(o, "{}", a.offset).expect("write"),
            }
            o.push(']');
        }
        Operand::Vector(v, _) => write!(o, "{{{}}}", join(v, |s, x| operand(s, x, subst))).expect("write"),
        Operand::List(v, _) => write!(o, "({})", join(v, |s, x| operand(s, x, subst))).expect("write"),
        Operand::Bracket(v, _) => write!(o, "[{}]", join(v, |s, x| operand(s, x, subst))).expect("write"),
        Operand::Not(x, _) => {
            o.push('!');
            operand(o, x, subst);
        }
        Operand::Neg(x, _) => {
            o.push('-');
            operand(o, x, subst);
        }
        Operand::Pair(a, b, _) => {
            operand(o, a, subst);
            o.push('|');
            operand(o, b, subst);
        }
        Operand::Sink(_) => o.push('_'),
        Operand::Offset(n, off, _) => write!(o, "{}{off:+}", n.text).expect("write"),
        Operand::Element(n, i, _) => write!(o, "{}[{i}]", n.text).expect("write"),
    }
}

/// Integers in decimal; floats as exact `0f`/`0d` bit patterns so nothing is lost to rounding.
fn imm(o: &mut String, i: Imm) {
    match i {
        Imm::Int(v) => write!(o, "{v}").expect("write"),
        Imm::F32(b) => write!(o, "0f{b:08X}").expect("write"),
        Imm::F64(b) => write!(o, "0d{b:016X}").expect("write"),
    }
}

fn init(o: &mut String, i: &Init<'_>) {
    match i {
        Init::Scalar(e) => expr(o, e),
        Init::List(v) => write!(o, "{{{}}}", join(v, |s, x| init(s, x))).expect("write"),
        Init::Field(n, e) => {
            write!(o, "{} = ", n.text).expect("write");
            expr(o, e);
        }
    }
}

/// Fully parenthesised where nesting could change the meaning; literals and names stay bare.
fn expr(o: &mut String, e: &Expr<'_>) {
    match e {
        Expr::Imm(i, _) => imm(o, *i),
        Expr::Sym(n) => o.push_str(n.text),
        Expr::Unary(op, x, _) => {
            o.push_str(match op {
                UnOp::Neg => "-",
                UnOp::Plus => "+",
                UnOp::Not => "!",
                UnOp::BitNot => "~",
            });
            sub(o, x);
        }
        Expr::Binary(op, a, b, _) => {
            sub(o, a);
            write!(o, " {} ", op.text()).expect("write");
            sub(o, b);
        }
        Expr::Cond(c, a, b, _) => {
            sub(o, c);
            o.push_str(" ? ");
            sub(o, a);
            o.push_str(" : ");
            sub(o, b);
        }
        Expr::Cast(t, x, _) => match (t, &**x) {
            // An unsigned literal, as written: `5U`, `0x8000000000000000` (which parses the same).
            (Type::U64, Expr::Imm(Imm::Int(v), _)) => write!(o, "{}U", *v as u64).expect("write"),
            _ => {
                o.push_str(if *t == Type::U64 { "(.u64)" } else { "(.s64)" });
                sub(o, x);
            }
        },
        Expr::Generic(n, _) => write!(o, "generic({})", n.text).expect("write"),
        Expr::Mask(m, x, _) => {
            write!(o, "{m:#x}(").expect("write");
            expr(o, x);
            o.push(')');
        }
    }
}

fn sub(o: &mut String, e: &Expr<'_>) {
    let bare = match e {
        Expr::Sym(_) | Expr::Generic(..) | Expr::Mask(..) => true,
        // A negative literal after a binary operator needs no parentheses, but `- -1` would lex the same.
        Expr::Imm(Imm::Int(v), _) => *v >= 0,
        Expr::Imm(..) => true,
        _ => false,
    };
    if bare {
        expr(o, e);
    } else {
        o.push('(');
        expr(o, e);
        o.push(')');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = r#".version 8.5
.target sm_90
.address_size 64
.global .align 4 .u32 tab[2][2] = {{1, 2}, {3, 0x10U}};
.global .u64 p = generic(tab)+8;
.visible .entry k(.param .u64 .ptr .global .align 16 a) .maxntid 128, 1, 1
{
  .reg .b32 %r<4>; .reg .pred %p;
  .loc 1 7 2
  @!%p ld.global.v2.f32 {%r1, _}, [a+-4];
  setp.lt.s32 %p|%p, %r1, -1;
  add.f32 %r2, %r1, 1.5;
$L1:
  { mov.u32 %r3, %tid.x; }
  @%p bra $L1;
  ret;
}
"#;

    #[test]
    fn canonical_text() {
        let (m, d) = crate::parse(SRC);
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(
            print(&m),
            r#".version 8.5
.target sm_90
.address_size 64
.global .align 4 .u32 tab[2][2] = {{1, 2}, {3, 16U}};
.global .u64 p = generic(tab) + 8;
.visible .entry k(.param .u64 .ptr .global .align 16 a)
.maxntid 128, 1, 1
{
	.reg .b32 %r<4>;
	.reg .pred %p;
	.loc 1 7 2
	@!%p ld.global.v2.f32 {%r1, _}, [a-4];
	setp.lt.s32 %p|%p, %r1, -1;
	add.f32 %r2, %r1, 0d3FF8000000000000;
$L1:
	{
		mov.u32 %r3, %tid.x;
	}
	@%p bra $L1;
	ret;
}
"#
        );
    }

    #[test]
    fn shape_ignores_positions_only() {
        let (a, _) = crate::parse(SRC);
        let spaced = SRC.replace(", ", " ,   ");
        let (b, _) = crate::parse(&spaced);
        assert_eq!(shape(&a), shape(&b));
        let changed = SRC.replace("1.5", "2.5");
        let (c, _) = crate::parse(&changed);
        assert_ne!(shape(&a), shape(&c));
        let printed = print(&a);
        let (again, d) = crate::parse(&printed);
        assert!(d.is_empty());
        assert_eq!(shape(&again), shape(&a));
    }
}
