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

/// How tightly a printed expression holds together: as the operand of something that binds tighter, it
/// needs parentheses. Binary operators bind by their precedence (1 to 10), `?:` least, prefix operators
/// and casts more, literals and names most.
fn binding(e: &Expr<'_>) -> u8 {
    match e {
        Expr::Cond(..) => 0,
        Expr::Binary(op, ..) => op.precedence(),
        Expr::Cast(Type::U64, x, _) if matches!(**x, Expr::Imm(Imm::Int(_), _)) => ATOM,
        Expr::Unary(..) | Expr::Cast(..) => PREFIX,
        // `-5` reads back as one literal wherever a prefix operator may stand, which is everywhere.
        Expr::Imm(..) | Expr::Sym(_) | Expr::Generic(..) | Expr::Mask(..) => ATOM,
    }
}
const PREFIX: u8 = 11;
const ATOM: u8 = 12;

/// Parenthesised only where the parser would otherwise build another tree: operators of one precedence
/// group to the left (`1 + 1 + 1`, not `((1 + 1) + 1)`, whose nesting grows with its length and, past
/// the parser's depth limit, no longer parses), so only a right operand of the same precedence keeps its
/// parentheses.
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
            sub(o, x, PREFIX);
        }
        Expr::Binary(op, a, b, _) => {
            sub(o, a, op.precedence());
            write!(o, " {} ", op.text()).expect("write");
            sub(o, b, op.precedence() + 1);
        }
        Expr::Cond(c, a, b, _) => {
            // The parser reads whole expressions after `?` and `:` (`a ? b : c ? d : e` nests right).
            sub(o, c, 1);
            o.push_str(" ? ");
            expr(o, a);
            o.push_str(" : ");
            expr(o, b);
        }
        Expr::Cast(t, x, _) => match (t, &**x) {
            // An unsigned literal, as written: `5U`, `0x8000000000000000` (which parses the same).
            (Type::U64, Expr::Imm(Imm::Int(v), _)) => write!(o, "{}U", *v as u64).expect("write"),
            _ => {
                o.push_str(if *t == Type::U64 { "(.u64)" } else { "(.s64)" });
                sub(o, x, PREFIX);
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

/// `e` as an operand that must bind at least as tightly as `min`.
fn sub(o: &mut String, e: &Expr<'_>, min: u8) {
    if binding(e) >= min {
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

    /// `print` of the text, which must parse cleanly, after checking that printing is idempotent and
    /// that the printed text parses to the same tree.
    fn fmt(src: &str) -> String {
        let (m, d) = crate::parse(src);
        assert!(d.is_empty(), "{src}: {d:?}");
        let printed = print(&m);
        let (again, d) = crate::parse(&printed);
        assert!(d.is_empty(), "{printed}: {d:?}");
        assert_eq!(shape(&again), shape(&m), "{printed}");
        assert_eq!(print(&again), printed);
        drop(again);
        printed
    }

    const HEADER: &str = ".version 8.5\n.target sm_80\n.address_size 64\n";

    #[test]
    fn an_immediate_in_many_parentheses_prints_bare() {
        let src = format!(
            "{HEADER}.entry k\n{{\n.reg .b32 %r1;\nmov.u32 %r1, {}1{};\n}}\n",
            "(".repeat(100),
            ")".repeat(100)
        );
        assert!(fmt(&src).contains("\tmov.u32 %r1, 1;\n"));
    }

    #[test]
    fn long_sums_print_without_parentheses() {
        for n in [100, 1000] {
            let sum = vec!["1"; n].join("+");
            let printed = fmt(&format!("{HEADER}.global .u32 a = {sum};\n"));
            assert!(printed.ends_with(&format!(".global .u32 a = {};\n", vec!["1"; n].join(" + "))));
        }
    }

    #[test]
    fn parentheses_only_where_precedence_needs_them() {
        let cases = [
            ("(a + 1) * 2", "(a + 1) * 2"),
            ("((a - b) - c)", "a - b - c"),
            ("a - (b - c)", "a - (b - c)"),
            ("a * (b / c)", "a * (b / c)"),
            ("a + b * c", "a + b * c"),
            ("a << 1 + 2", "a << 1 + 2"),
            ("(a << 1) + 2", "(a << 1) + 2"),
            ("-(a + 1)", "-(a + 1)"),
            ("~-5 + - -a", "~-5 + --a"),
            ("a * -1", "a * -1"),
            ("(.s64)(a + 1)", "(.s64)(a + 1)"),
            ("(.u64)-1", "18446744073709551615U"),
            ("a ? b : c ? d : e", "a ? b : c ? d : e"),
            ("(a ? b : c) ? d : (e)", "(a ? b : c) ? d : e"),
            ("(a ? b : c) + 1", "(a ? b : c) + 1"),
            ("0xff(a + 1) * generic(a)", "0xff(a + 1) * generic(a)"),
            ("a && (b || c)", "a && (b || c)"),
        ];
        for (src, want) in cases {
            let printed = fmt(&format!("{HEADER}.global .u64 p = {src};\n"));
            assert_eq!(
                printed.lines().last(),
                Some(format!(".global .u64 p = {want};").as_str()),
                "{src}"
            );
        }
    }

    #[test]
    fn constant_addresses_print_as_addresses() {
        for (src, want) in [("[~0]", "[-1]"), ("[+(.u64)8]", "[8]"), ("[%rd2+~1]", "[%rd2-2]")] {
            let printed = fmt(&format!(
                "{HEADER}.entry k\n{{\n.reg .b64 %rd<3>;\nld.global.u64 %rd1, {src};\n}}\n"
            ));
            assert!(
                printed.contains(&format!("\tld.global.u64 %rd1, {want};\n")),
                "{printed}"
            );
        }
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
