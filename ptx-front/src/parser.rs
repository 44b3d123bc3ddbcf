//! Recursive-descent parser over the logos token vector. Hand-written for speed (every token is looked at
//! once, nothing backtracks further than one token) and for precise recovery: a bad statement is skipped
//! to its `;` (or over its balanced `{ }`), a bad item to the next `;` or past its body, so one run
//! reports every syntax error once.

use crate::ast::*;
use crate::diag::{Code, Diagnostic};
use crate::lexer::{lex, lex_parts, Tok};
use crate::span::Span;
use crate::types::{Space, Type};

/// Parses PTX text. The module is returned even when there are errors (with the failed parts left out),
/// so checks can still run on what parsed.
pub fn parse(src: &str) -> (Module<'_>, Vec<Diagnostic>) {
    Parser::new(src, lex(src), false).module()
}

/// Parses the given parts of the text only, in order, as one module (see `crate::outline`); spans are
/// those of the whole text.
pub fn parse_parts<'a>(src: &'a str, parts: &[Span]) -> (Module<'a>, Vec<Diagnostic>) {
    Parser::new(src, lex_parts(src, parts), false).module()
}

/// Fragment mode: instructions, labels and blocks may stand outside any function (as `Item::Statement`),
/// for checking isolated examples.
pub fn parse_fragment(src: &str) -> (Module<'_>, Vec<Diagnostic>) {
    Parser::new(src, lex(src), true).module()
}

/// `123`, `0x1f`, `017`, `0b101`, optionally with a `U` suffix.
pub fn parse_int(s: &str) -> Option<u64> {
    let s = s.strip_suffix('U').unwrap_or(s);
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if let Some(b) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        u64::from_str_radix(b, 2).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

pub fn is_var_space(d: &str) -> bool {
    matches!(
        d,
        ".reg"
            | ".sreg"
            | ".const"
            | ".global"
            | ".local"
            | ".param"
            | ".shared"
            | ".tex"
            | ".shared::cta"
            | ".shared::cluster"
            | ".param::entry"
            | ".param::func"
    )
}

/// Directives that begin a module-level item (after a prototype that ends with neither a body nor `;`).
pub(crate) fn starts_item(d: &str) -> bool {
    linkage_of(d).is_some() || is_var_space(d) || matches!(d, ".entry" | ".func" | ".file" | ".loc")
}

fn linkage_of(d: &str) -> Option<Linkage> {
    Some(match d {
        ".visible" => Linkage::Visible,
        ".extern" => Linkage::Extern,
        ".weak" => Linkage::Weak,
        ".common" => Linkage::Common,
        _ => return None,
    })
}

const PERF: &[&str] = &[
    ".maxntid",
    ".reqntid",
    ".minnctapersm",
    ".maxnctapersm",
    ".maxnreg",
    ".noreturn",
    ".reqnctapercluster",
    ".explicitcluster",
    ".maxclusterrank",
    ".blocksareclusters",
];

/// A syntax error has been reported; the caller recovers.
struct Fail;
type R<T> = Result<T, Fail>;

struct Parser<'a> {
    src: &'a str,
    toks: Vec<(Tok<'a>, Span)>,
    pos: usize,
    diags: Vec<Diagnostic>,
    fragment: bool,
    legacy: bool,
    in_prototype: bool,
    /// How deep blocks, expressions and operands nest right now; bounded so that no input can
    /// overflow the stack here or in the passes that walk the tree.
    depth: u32,
}

/// Deeper nesting than any real PTX has; the parser reports it instead of recursing further.
const MAX_DEPTH: u32 = 200;
/// Binary operators in one constant expression (their left-deep tree is walked recursively later).
const MAX_OPERATORS: usize = 1000;
/// Registers one `%r<N>` declaration may make (compilers emit a few thousand at most).
const MAX_RANGE: u32 = 1 << 20;

impl<'a> Parser<'a> {
    fn new(src: &'a str, toks: Vec<(Tok<'a>, Span)>, fragment: bool) -> Self {
        let mut diags = Vec::new();
        for &(t, s) in &toks {
            if t == Tok::Error {
                let text = &src[s.range()];
                diags.push(if text.starts_with("/*") {
                    Diagnostic::error(
                        Code::P0001,
                        Span::new(s.start as usize, s.start as usize + 2),
                        "unterminated block comment",
                    )
                    .label("this comment never ends")
                    .help("close it with `*/`")
                } else {
                    Diagnostic::error(Code::P0001, s, format!("unexpected character `{text}`"))
                        .label("not valid in PTX")
                });
            }
        }
        // `.version` comes first in any module; a legacy one is 1.x to 3.x.
        let legacy = matches!(toks.iter().position(|t| t.0 == Tok::Dot(".version")).map(|k| toks[k + 1].0),
            Some(Tok::Float(v)) if v.starts_with(['1', '2', '3']) && v.as_bytes().get(1) == Some(&b'.'));
        Parser {
            src,
            toks,
            pos: 0,
            diags,
            fragment,
            legacy,
            in_prototype: false,
            depth: 0,
        }
    }

    /// The module declares `.version` 1.x to 3.x, whose compilers printed some forms later dropped.
    fn legacy_ptx(&self) -> bool {
        self.legacy
    }

    /// Runs `f` one nesting level deeper, or reports the nesting as too deep.
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> R<T>) -> R<T> {
        if self.depth >= MAX_DEPTH {
            let s = self.span();
            return Err(self.custom(s, "nesting too deep", format!("more than {MAX_DEPTH} levels")));
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    // ---- token access ------------------------------------------------------------------------------

    #[inline]
    fn peek(&self) -> Tok<'a> {
        self.toks[self.pos].0
    }
    #[inline]
    fn peek_at(&self, k: usize) -> Tok<'a> {
        self.toks[(self.pos + k).min(self.toks.len() - 1)].0
    }
    #[inline]
    fn span(&self) -> Span {
        self.toks[self.pos].1
    }
    /// The span of the last token consumed.
    fn prev_span(&self) -> Span {
        self.toks[self.pos.saturating_sub(1)].1
    }
    #[inline]
    fn bump(&mut self) -> (Tok<'a>, Span) {
        let t = self.toks[self.pos];
        if t.0 != Tok::Eof {
            self.pos += 1;
        }
        t
    }
    fn eat(&mut self, t: Tok<'a>) -> bool {
        if self.peek() == t {
            self.bump();
            true
        } else {
            false
        }
    }
    fn since(&self, start: Span) -> Span {
        start.to(self.prev_span())
    }

    /// Reports the current token as unexpected. A lexer error token was already reported.
    fn unexpected<T>(&mut self, expected: &str) -> R<T> {
        let (t, s) = self.toks[self.pos];
        if t != Tok::Error {
            let found = if t == Tok::Eof {
                "end of input".to_string()
            } else {
                format!("`{t}`")
            };
            self.diags.push(
                Diagnostic::error(Code::P0002, s, format!("unexpected {found}")).label(format!("expected {expected}")),
            );
        }
        Err(Fail)
    }
    fn expect(&mut self, t: Tok<'a>, what: &str) -> R<Span> {
        if self.peek() == t {
            Ok(self.bump().1)
        } else {
            self.unexpected(what)
        }
    }
    fn custom(&mut self, span: Span, msg: impl Into<String>, label: impl Into<String>) -> Fail {
        self.diags.push(Diagnostic::error(Code::P0002, span, msg).label(label));
        Fail
    }
    /// `;` ends a statement. When it is missing and the next token starts a new line, the error points
    /// just after the statement and parsing carries on as if it were there.
    fn semi(&mut self) -> R<()> {
        self.semi_or("`;`")
    }
    /// `semi`, naming what else could have come (`` `,` or `;` `` after an operand).
    fn semi_or(&mut self, expected: &str) -> R<()> {
        if self.eat(Tok::Semi) {
            return Ok(());
        }
        let prev = self.prev_span();
        if self.pos > 0 && self.src[prev.end as usize..self.span().start as usize].contains('\n') {
            let at = Span {
                start: prev.end,
                end: prev.end,
            };
            self.diags.push(
                Diagnostic::error(Code::P0002, at, "missing `;`")
                    .label("expected `;` here")
                    .help("PTX statements end with `;`"),
            );
            return Ok(());
        }
        self.unexpected(expected)
    }

    fn name(&mut self, what: &str) -> R<Name<'a>> {
        match self.peek() {
            Tok::Ident(text) => {
                let span = self.bump().1;
                Ok(Name { text, span })
            }
            _ => self.unexpected(what),
        }
    }
    fn uint(&mut self) -> R<u64> {
        match self.peek() {
            Tok::Int(s) => {
                let span = self.bump().1;
                parse_int(s).ok_or_else(|| {
                    let octal = s.len() > 1
                        && s.starts_with('0')
                        && s[1..].trim_end_matches('U').bytes().all(|b| b.is_ascii_digit());
                    if octal && s.bytes().any(|b| b == b'8' || b == b'9') {
                        self.custom(
                            span,
                            format!("`{s}` is not an octal number"),
                            "a leading 0 makes it octal",
                        )
                    } else {
                        self.custom(span, format!("integer `{s}` does not fit in 64 bits"), "too large")
                    }
                })
            }
            _ => self.unexpected("an integer"),
        }
    }
    fn uint32(&mut self) -> R<u32> {
        let span = self.span();
        let v = self.uint()?;
        u32::try_from(v).map_err(|_| self.custom(span, "value does not fit in 32 bits", "too large"))
    }

    // ---- recovery ----------------------------------------------------------------------------------

    /// Skips a balanced `{ … }` starting at the current `{`.
    fn skip_block(&mut self) {
        let mut depth = 0usize;
        loop {
            match self.bump().0 {
                Tok::LBrace => depth += 1,
                Tok::RBrace => {
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                Tok::Eof => return,
                _ => {}
            }
        }
    }
    /// Skips to the end of the current statement: past its `;`, or past a balanced block, or up to (not
    /// over) the `}` that closes the enclosing block.
    fn recover_statement(&mut self, start: usize) {
        if self.pos == start {
            self.bump();
        }
        loop {
            match self.peek() {
                Tok::Semi => {
                    self.bump();
                    return;
                }
                Tok::LBrace => {
                    self.skip_block();
                    return;
                }
                Tok::RBrace | Tok::Eof => return,
                _ => {
                    self.bump();
                }
            }
        }
    }

    /// After an error in a function header: skip its body too (up to the next item if it has none), so
    /// the body's statements are not reported as stray items.
    fn recover_function(&mut self) {
        let mut k = self.pos;
        loop {
            match self.toks[k].0 {
                Tok::LBrace => {
                    self.pos = k;
                    self.skip_block();
                    return;
                }
                Tok::Eof | Tok::Dot(".entry" | ".func" | ".visible" | ".extern" | ".weak" | ".version") => {
                    self.pos = k;
                    return;
                }
                _ => k += 1,
            }
        }
    }

    // ---- module ------------------------------------------------------------------------------------

    fn module(mut self) -> (Module<'a>, Vec<Diagnostic>) {
        let mut m = Module {
            directives: vec![],
            items: vec![],
        };
        while self.peek() != Tok::Eof {
            let start = self.pos;
            let r = match self.peek() {
                Tok::Dot(".version") => self.version().map(|d| m.directives.push(d)),
                Tok::Dot(".target") => self.target().map(|d| m.directives.push(d)),
                Tok::Dot(".address_size") => {
                    let s = self.bump().1;
                    self.uint32().map(|bits| {
                        m.directives.push(ModuleDirective::AddressSize {
                            bits,
                            span: self.since(s),
                        })
                    })
                }
                _ => self.item(&mut m.items),
            };
            if r.is_err() {
                self.recover_statement(start);
            }
        }
        let diags = self.diags;
        (m, diags)
    }

    fn version(&mut self) -> R<ModuleDirective<'a>> {
        let s = self.bump().1;
        let (text, vs) = match self.peek() {
            Tok::Float(t) | Tok::Int(t) => (t, self.bump().1),
            _ => return self.unexpected("a PTX version such as 8.5"),
        };
        let (a, b) = text.split_once('.').unwrap_or((text, "0"));
        match (a.parse(), b.parse()) {
            (Ok(major), Ok(minor)) => Ok(ModuleDirective::Version {
                major,
                minor,
                span: self.since(s),
            }),
            _ => Err(self.custom(vs, format!("`{text}` is not a PTX version"), "expected e.g. 8.5")),
        }
    }

    fn target(&mut self) -> R<ModuleDirective<'a>> {
        let s = self.bump().1;
        let mut targets = vec![self.name("a target such as sm_90")?];
        while self.eat(Tok::Comma) {
            targets.push(self.name("a target option")?);
        }
        Ok(ModuleDirective::Target {
            targets,
            span: self.since(s),
        })
    }

    fn item(&mut self, items: &mut Vec<Item<'a>>) -> R<()> {
        let start = self.span();
        let t = self.peek();
        if let Some(d) = self.directive()? {
            items.push(Item::Directive(d));
            return Ok(());
        }
        let lk = match t {
            Tok::Dot(d) => linkage_of(d),
            _ => None,
        };
        if lk.is_some() {
            self.bump();
        }
        match self.peek() {
            Tok::Dot(".entry") | Tok::Dot(".func") => match self.function(lk, start) {
                Ok(f) => {
                    items.push(Item::Function(f));
                    Ok(())
                }
                Err(Fail) => {
                    self.recover_function();
                    Ok(())
                }
            },
            Tok::Dot(d) if is_var_space(d) => {
                let decls = self.var_decls(lk, start, true)?;
                self.semi()?;
                items.extend(decls.into_iter().map(Item::Var));
                Ok(())
            }
            _ if self.fragment && lk.is_none() => {
                let mut v = Vec::new();
                self.statement(&mut v)?;
                items.extend(v.into_iter().map(Item::Statement));
                Ok(())
            }
            _ if lk.is_some() => self.unexpected("`.entry`, `.func` or a state space"),
            _ => self.unexpected("a directive, function or variable declaration"),
        }
    }

    /// Debug, pragma and alias directives, valid at module level and (most) in bodies.
    fn directive(&mut self) -> R<Option<Directive<'a>>> {
        let s = self.span();
        Ok(Some(match self.peek() {
            Tok::Dwarf(text) => {
                self.bump();
                Directive::Dwarf(text, s)
            }
            Tok::Dot(".file") => {
                self.bump();
                let index = self.uint32()?;
                let path = match self.peek() {
                    Tok::Str(p) => {
                        self.bump();
                        p
                    }
                    _ => return self.unexpected("a file name in quotes"),
                };
                let mut extra = vec![];
                while self.eat(Tok::Comma) {
                    extra.push(self.uint()?);
                }
                Directive::File {
                    index,
                    path,
                    extra,
                    span: self.since(s),
                }
            }
            Tok::Dot(".loc") => {
                self.bump();
                let file = self.uint32()?;
                let line = self.uint32()?;
                let column = if matches!(self.peek(), Tok::Int(_)) {
                    Some(self.uint32()?)
                } else {
                    None
                };
                let mut inlined = None;
                if self.peek() == Tok::Comma && self.peek_at(1) == Tok::Ident("function_name") {
                    self.bump();
                    self.bump();
                    let function = self.name("a label")?;
                    let offset = if self.eat(Tok::Plus) { Some(self.uint()?) } else { None };
                    self.expect(Tok::Comma, "`,`")?;
                    match self.peek() {
                        Tok::Ident("inlined_at") => self.bump(),
                        _ => return self.unexpected("`inlined_at`"),
                    };
                    inlined = Some(InlinedAt {
                        function,
                        offset,
                        file: self.uint32()?,
                        line: self.uint32()?,
                        column: self.uint32()?,
                    });
                }
                Directive::Loc {
                    file,
                    line,
                    column,
                    inlined,
                    span: self.since(s),
                }
            }
            Tok::Dot(".section") => {
                self.bump();
                let name = match self.peek() {
                    Tok::Dot(text) | Tok::Ident(text) => Name {
                        text,
                        span: self.bump().1,
                    },
                    _ => return self.unexpected("a section name"),
                };
                self.expect(Tok::LBrace, "`{`")?;
                let mut entries = vec![];
                loop {
                    match self.peek() {
                        Tok::RBrace => break,
                        Tok::Dot(w) if matches!(w, ".b8" | ".b16" | ".b32" | ".b64") => {
                            let width = Name {
                                text: w,
                                span: self.bump().1,
                            };
                            let mut values = vec![self.expr()?];
                            while self.eat(Tok::Comma) {
                                values.push(self.expr()?);
                            }
                            entries.push(SectionEntry::Data { width, values });
                        }
                        Tok::Ident(_) if self.peek_at(1) == Tok::Colon => {
                            entries.push(SectionEntry::Label(self.name("a label")?));
                            self.bump();
                        }
                        _ => return self.unexpected("`.b8`, `.b16`, `.b32`, `.b64`, a label or `}`"),
                    }
                }
                self.bump();
                Directive::Section {
                    name,
                    entries,
                    span: self.since(s),
                }
            }
            Tok::Dot(".pragma") => {
                let strings = self.pragma()?;
                Directive::Pragma(strings, self.since(s))
            }
            Tok::Dot(".alias") => {
                self.bump();
                let alias = self.name("the alias name")?;
                self.expect(Tok::Comma, "`,`")?;
                let aliasee = self.name("the aliased function")?;
                self.semi()?;
                Directive::Alias {
                    alias,
                    aliasee,
                    span: self.since(s),
                }
            }
            _ => return Ok(None),
        }))
    }

    fn pragma(&mut self) -> R<Vec<&'a str>> {
        self.bump();
        let mut strings = vec![];
        loop {
            match self.peek() {
                Tok::Str(p) => {
                    self.bump();
                    strings.push(p);
                }
                _ => return self.unexpected("a string"),
            }
            if !self.eat(Tok::Comma) {
                break;
            }
        }
        self.semi()?;
        Ok(strings)
    }

    fn function(&mut self, linkage: Option<Linkage>, start: Span) -> R<Function<'a>> {
        let (kind, _) = self.bump();
        let kind = if kind == Tok::Dot(".entry") {
            FnKind::Entry
        } else {
            FnKind::Func
        };
        let mut returns = vec![];
        if kind == FnKind::Func && self.peek() == Tok::LParen {
            returns = self.param_list()?;
        }
        let name = self.name("a function name")?;
        let params = if self.peek() == Tok::LParen {
            self.param_list()?
        } else {
            vec![]
        };
        let mut perf = vec![];
        loop {
            match self.peek() {
                Tok::Dot(".pragma") => {
                    let s = self.span();
                    let strings = self.pragma()?;
                    perf.push(PerfDirective::Pragma(strings, self.since(s)));
                }
                Tok::Dot(d) if PERF.contains(&d) => {
                    let name = Name {
                        text: d,
                        span: self.bump().1,
                    };
                    let mut values = vec![];
                    if matches!(self.peek(), Tok::Int(_)) {
                        values.push(self.uint()?);
                        while self.eat(Tok::Comma) {
                            values.push(self.uint()?);
                        }
                    }
                    perf.push(PerfDirective::Value { name, values });
                }
                _ => break,
            }
        }
        let body = match self.peek() {
            Tok::LBrace => {
                self.bump();
                let b = self.statements_with(self.body_statements());
                self.expect(Tok::RBrace, "`}`")?;
                Some(b)
            }
            Tok::Semi => {
                self.bump();
                None
            }
            // Open64-era nvcc ends prototypes with neither a body nor `;`.
            Tok::Dot(d) if self.legacy_ptx() && starts_item(d) => None,
            Tok::Eof | Tok::Dwarf(_) if self.legacy_ptx() => None,
            _ => return self.unexpected("a body `{` or `;`"),
        };
        Ok(Function {
            kind,
            linkage,
            name,
            returns,
            params,
            perf,
            body,
            span: self.since(start),
        })
    }

    /// `( .param .u64 a, .reg .b32 b )`; `()` is an empty list.
    fn param_list(&mut self) -> R<Vec<VarDecl<'a>>> {
        self.bump();
        let mut out = vec![];
        if self.eat(Tok::RParen) {
            return Ok(out);
        }
        loop {
            let s = self.span();
            let mut v = self.var_decls(None, s, false)?;
            out.push(v.pop().expect("one declaration"));
            if !self.eat(Tok::Comma) {
                break;
            }
        }
        self.expect(Tok::RParen, "`,` or `)`")?;
        Ok(out)
    }

    /// `{linkage} .space {.align N} {.v4} .type name{<N>}{[N]…}{= init}, …` without the `;`.
    /// `several`: a declaration statement may list several names; a parameter declares one.
    fn var_decls(&mut self, linkage: Option<Linkage>, start: Span, several: bool) -> R<Vec<VarDecl<'a>>> {
        let (sp_tok, sp_span) = self.bump();
        let space_text = match sp_tok {
            Tok::Dot(d) => d,
            _ => return self.unexpected("a state space"),
        };
        let Some(space) = Space::from_dot(space_text) else {
            return Err(self.custom(
                sp_span,
                format!("`{space_text}` is not a state space"),
                "expected a state space",
            ));
        };
        let (mut ty, mut vector, mut align, mut managed, mut ptr) = (None, None, None, false, None::<PtrAttr>);
        loop {
            let (t, s) = (self.peek(), self.span());
            let Tok::Dot(d) = t else { break };
            self.bump();
            match d {
                ".align" => {
                    let n = self.uint32()?;
                    match &mut ptr {
                        Some(p) => p.align = Some(n),
                        None => align = Some(n),
                    }
                }
                ".attribute" => {
                    self.expect(Tok::LParen, "`(`")?;
                    match self.peek() {
                        Tok::Dot(".managed") => {
                            self.bump();
                            managed = true;
                        }
                        _ => return self.unexpected("`.managed`"),
                    }
                    self.expect(Tok::RParen, "`)`")?;
                }
                ".v2" | ".v4" | ".v8" => vector = Some(d[2..].parse().expect("digit")),
                ".ptr" => {
                    ptr = Some(PtrAttr {
                        space: None,
                        align: None,
                    })
                }
                _ if ptr.is_some() && matches!(d, ".global" | ".shared" | ".const" | ".local") => {
                    ptr.as_mut().expect("ptr").space = Space::from_dot(d);
                }
                _ => match Type::from_dot(d) {
                    Some(t) if ty.is_none() => ty = Some(t),
                    Some(_) => return Err(self.custom(s, "a declaration takes one type", "second type")),
                    None => {
                        return Err(self.custom(
                            s,
                            format!("`{d}` is not valid in a variable declaration"),
                            "expected a type, `.align`, `.v2`/`.v4` or `.ptr`",
                        ))
                    }
                },
            }
        }
        let mut out = vec![];
        loop {
            // Prototype parameters may be anonymous (`.reg .f64`), which means the same as `_`.
            let name = match self.peek() {
                Tok::Comma | Tok::RParen if self.in_prototype => Name {
                    text: "_",
                    span: self.prev_span(),
                },
                _ => self.name("a variable name")?,
            };
            let Some(ty) = ty else {
                return Err(self.custom(
                    name.span,
                    format!("`{}` is declared without a type", name.text),
                    "needs a type such as `.b32`",
                ));
            };
            let range = if self.eat(Tok::Lt) {
                let at = self.span();
                let n = self.uint32()?;
                if n > MAX_RANGE {
                    return Err(self.custom(
                        at,
                        format!("`{}<{n}>` declares more registers than ptx-jit handles", name.text),
                        format!("at most {MAX_RANGE}"),
                    ));
                }
                self.expect(Tok::Gt, "`>`")?;
                Some(n)
            } else {
                None
            };
            let mut dims = vec![];
            while self.eat(Tok::LBracket) {
                if self.eat(Tok::RBracket) {
                    dims.push(None);
                    continue;
                }
                let e = self.expr()?;
                let n = match crate::consteval::eval(&e) {
                    Ok(c) => c.as_i64().filter(|&n| n >= 0).map(|n| n as u64),
                    Err(_) => None,
                };
                let Some(n) = n else {
                    return Err(self.custom(e.span(), "array size is not a non-negative integer constant", "here"));
                };
                dims.push(Some(n));
                self.expect(Tok::RBracket, "`]`")?;
            }
            let init = if self.eat(Tok::Eq) { Some(self.init()?) } else { None };
            out.push(VarDecl {
                linkage,
                space,
                align,
                managed,
                ptr,
                vector,
                ty,
                name,
                range,
                dims,
                init,
                span: name.span,
            });
            if !several || !self.eat(Tok::Comma) {
                break;
            }
        }
        // A single declarator owns the whole line's span; in a list, each owns its name.
        if out.len() == 1 {
            out[0].span = self.since(start);
        }
        Ok(out)
    }

    fn init(&mut self) -> R<Init<'a>> {
        self.nested(|p| p.init_at())
    }

    fn init_at(&mut self) -> R<Init<'a>> {
        if self.eat(Tok::LBrace) {
            let mut v = vec![];
            while self.peek() != Tok::RBrace {
                v.push(self.init()?);
                if !self.eat(Tok::Comma) {
                    break;
                }
            }
            self.expect(Tok::RBrace, "`,` or `}`")?;
            return Ok(Init::List(v));
        }
        // Fast path for the long integer tables of constant data.
        if let (Tok::Int(text), Tok::Comma | Tok::RBrace) = (self.peek(), self.peek_at(1)) {
            if let Some(v) = parse_int(text).filter(|&v| v <= i64::MAX as u64 && !text.ends_with('U')) {
                let span = self.bump().1;
                return Ok(Init::Scalar(Expr::Imm(Imm::Int(v as i64), span)));
            }
        }
        if let (Tok::Ident(_), Tok::Eq) = (self.peek(), self.peek_at(1)) {
            let n = self.name("a field")?;
            self.bump();
            return Ok(Init::Field(n, self.expr()?));
        }
        Ok(Init::Scalar(self.expr()?))
    }

    // ---- bodies ------------------------------------------------------------------------------------

    /// Statements up to (not including) the closing `}` or the end of input.
    fn statements(&mut self) -> Vec<Statement<'a>> {
        self.statements_with(0)
    }

    /// About how many statements the function body that starts here holds (its `;`s, and an eighth more
    /// for labels), so that its vector is allocated once: a statement is 200 bytes and a kernel can
    /// have a hundred thousand.
    fn body_statements(&self) -> usize {
        let (mut depth, mut semis) = (0usize, 0usize);
        for (t, _) in &self.toks[self.pos..] {
            match t {
                Tok::Semi => semis += 1,
                Tok::LBrace => depth += 1,
                Tok::RBrace if depth == 0 => break,
                Tok::RBrace => depth -= 1,
                _ => {}
            }
        }
        semis + semis / 8
    }

    fn statements_with(&mut self, capacity: usize) -> Vec<Statement<'a>> {
        let mut out = Vec::with_capacity(capacity);
        while !matches!(self.peek(), Tok::RBrace | Tok::Eof) {
            let start = self.pos;
            if self.statement(&mut out).is_err() {
                self.recover_statement(start);
            }
        }
        out
    }

    fn statement(&mut self, out: &mut Vec<Statement<'a>>) -> R<()> {
        self.nested(|p| p.statement_at(out))
    }

    fn statement_at(&mut self, out: &mut Vec<Statement<'a>>) -> R<()> {
        let start = self.span();
        match self.peek() {
            Tok::LBrace => {
                self.bump();
                let b = self.statements();
                self.expect(Tok::RBrace, "`}`")?;
                out.push(Statement::Block(b, self.since(start)));
            }
            Tok::Semi => {
                self.bump();
            }
            Tok::Ident(_) if self.peek_at(1) == Tok::Colon => {
                let n = self.name("a label")?;
                self.bump();
                out.push(Statement::Label(n));
            }
            Tok::Dot(".callprototype") => {
                self.bump();
                self.in_prototype = true;
                let sig = self.prototype_signature();
                self.in_prototype = false;
                let (returns, params) = sig?;
                let noreturn = self.eat(Tok::Dot(".noreturn"));
                self.semi()?;
                out.push(Statement::Directive(Directive::Prototype {
                    returns,
                    params,
                    noreturn,
                    span: self.since(start),
                }));
            }
            Tok::Dot(d @ (".branchtargets" | ".calltargets")) => {
                let kind = Name {
                    text: d,
                    span: self.bump().1,
                };
                let mut targets = vec![self.name("a label")?];
                while self.eat(Tok::Comma) {
                    targets.push(self.name("a label")?);
                }
                self.semi()?;
                out.push(Statement::Directive(Directive::Targets {
                    kind,
                    targets,
                    span: self.since(start),
                }));
            }
            Tok::Dot(d) => {
                if let Some(dir) = self.directive()? {
                    out.push(Statement::Directive(dir));
                } else if is_var_space(d) || linkage_of(d).is_some() {
                    let lk = linkage_of(d);
                    if lk.is_some() {
                        self.bump();
                    }
                    let decls = self.var_decls(lk, start, true)?;
                    self.semi()?;
                    out.extend(decls.into_iter().map(Statement::Var));
                } else {
                    return self.unexpected("an instruction, label, declaration or directive");
                }
            }
            Tok::Dwarf(_) => {
                let d = self.directive()?.expect("dwarf line");
                out.push(Statement::Directive(d));
            }
            Tok::At | Tok::Ident(_) => out.push(Statement::Inst(self.instruction()?)),
            _ => return self.unexpected("an instruction, label, declaration or directive"),
        }
        Ok(())
    }

    /// `(.param .b32 _) _ (.param .b64 _)` or `_ (…)`. The placeholder `_` may be any name (old Ocelot
    /// tests write the function's name there); it is not kept.
    fn prototype_signature(&mut self) -> R<(Vec<VarDecl<'a>>, Vec<VarDecl<'a>>)> {
        let returns = match self.peek() {
            Tok::LParen => self.param_list()?,
            Tok::Ident(_) => {
                self.bump();
                return Ok((vec![], self.param_list_or_none()?));
            }
            _ => return self.unexpected("`(` or `_`"),
        };
        self.name("`_`")?;
        Ok((returns, self.param_list_or_none()?))
    }

    fn param_list_or_none(&mut self) -> R<Vec<VarDecl<'a>>> {
        if self.peek() == Tok::LParen {
            self.param_list()
        } else {
            Ok(vec![])
        }
    }

    fn instruction(&mut self) -> R<Instruction<'a>> {
        let start = self.span();
        let guard = if self.eat(Tok::At) {
            let negated = self.eat(Tok::Bang);
            Some(Guard {
                negated,
                pred: self.name("a predicate")?,
            })
        } else {
            None
        };
        let opcode = self.name("an opcode")?;
        let mut mods = smallvec::SmallVec::new();
        while let Tok::Dot(text) = self.peek() {
            mods.push(Name {
                text,
                span: self.bump().1,
            });
        }
        let mut operands = vec![];
        if !matches!(self.peek(), Tok::Semi) {
            loop {
                operands.push(self.operand()?);
                if !self.eat(Tok::Comma) {
                    break;
                }
            }
        }
        self.semi_or(if operands.is_empty() {
            "an operand or `;`"
        } else {
            "`,` or `;`"
        })?;
        Ok(Instruction {
            guard,
            opcode,
            mods,
            operands,
            span: self.since(start),
        })
    }

    fn operand(&mut self) -> R<Operand<'a>> {
        let start = self.span();
        let a = self.operand_atom()?;
        if self.eat(Tok::Pipe) {
            let b = self.operand_atom()?;
            return Ok(Operand::Pair(Box::new(a), Box::new(b), self.since(start)));
        }
        Ok(a)
    }

    fn operand_list(&mut self, close: Tok<'a>, what: &str) -> R<Vec<Operand<'a>>> {
        let mut v = vec![];
        if self.peek() != close {
            loop {
                v.push(self.operand()?);
                if !self.eat(Tok::Comma) {
                    break;
                }
            }
        }
        self.expect(close, what)?;
        Ok(v)
    }

    fn operand_atom(&mut self) -> R<Operand<'a>> {
        self.nested(|p| p.operand_atom_at())
    }

    fn operand_atom_at(&mut self) -> R<Operand<'a>> {
        let start = self.span();
        match self.peek() {
            Tok::Ident("_") => Ok(Operand::Sink(self.bump().1)),
            Tok::Ident(text) => {
                let name = Name {
                    text,
                    span: self.bump().1,
                };
                let component = match self.peek() {
                    Tok::Dot(c) => Some(Name {
                        text: c,
                        span: self.bump().1,
                    }),
                    _ => None,
                };
                // `A[5]` as a value: the address of an array element.
                if component.is_none() && self.peek() == Tok::LBracket {
                    self.bump();
                    let index = self.uint()?;
                    self.expect(Tok::RBracket, "`]`")?;
                    return Ok(Operand::Element(name, index, self.since(start)));
                }
                // `var+4` as a value: the address of a variable plus a byte offset.
                if component.is_none() && matches!(self.peek(), Tok::Plus | Tok::Minus) {
                    let offset = self.offset()?;
                    return Ok(Operand::Offset(name, offset, self.since(start)));
                }
                Ok(Operand::Sym { name, component })
            }
            Tok::Bang => {
                self.bump();
                let x = self.operand_atom()?;
                Ok(Operand::Not(Box::new(x), self.since(start)))
            }
            Tok::Minus if matches!(self.peek_at(1), Tok::Ident(_)) => {
                self.bump();
                let x = self.operand_atom()?;
                Ok(Operand::Neg(Box::new(x), self.since(start)))
            }
            Tok::LBrace => {
                self.bump();
                let v = self.operand_list(Tok::RBrace, "`,` or `}`")?;
                Ok(Operand::Vector(v, self.since(start)))
            }
            Tok::LParen if !self.paren_starts_expr() => {
                self.bump();
                let v = self.operand_list(Tok::RParen, "`,` or `)`")?;
                Ok(Operand::List(v, self.since(start)))
            }
            Tok::LBracket => self.address(),
            _ => {
                // An immediate, possibly a constant expression folded here.
                let e = self.expr()?;
                Ok(Operand::Imm(self.fold(&e)?, e.span()))
            }
        }
    }

    /// `(` opens a constant expression when, past any further `(`, a literal, cast or operator follows
    /// and no `,` stands before the matching `)`; else it opens an operand list such as a call's `(a, b)`.
    /// (Deciding by the first token alone read `((1))` as a list holding 1, printed `(1)`: a constant.)
    fn paren_starts_expr(&self) -> bool {
        let mut k = 1;
        while self.peek_at(k) == Tok::LParen {
            k += 1;
        }
        self.starts_constant(k) && !self.group_has_comma()
    }

    /// Whether the token `k` ahead starts a constant expression rather than an operand: a literal, a
    /// cast or a prefix operator (`-` only before something other than a name: `-%r1` negates a
    /// register).
    fn starts_constant(&self, k: usize) -> bool {
        matches!(
            self.peek_at(k),
            Tok::Int(_)
                | Tok::Float(_)
                | Tok::HexF32(_)
                | Tok::HexF64(_)
                | Tok::Dot(".s64" | ".u64")
                | Tok::Tilde
                | Tok::Plus
        ) || (self.peek_at(k) == Tok::Minus && !matches!(self.peek_at(k + 1), Tok::Ident(_)))
    }

    /// Whether a `,` comes between the `(` at the cursor and its matching `)`: constant expressions
    /// have none.
    fn group_has_comma(&self) -> bool {
        let mut depth = 0usize;
        for &(t, _) in &self.toks[self.pos..] {
            match t {
                Tok::LParen | Tok::LBracket | Tok::LBrace => depth += 1,
                Tok::RParen | Tok::RBracket | Tok::RBrace => {
                    depth -= 1;
                    if depth == 0 {
                        return false;
                    }
                }
                Tok::Comma => return true,
                Tok::Semi | Tok::Eof => return false,
                _ => {}
            }
        }
        false
    }

    /// A constant expression used as an instruction operand, reduced to one immediate.
    fn fold(&mut self, e: &Expr<'a>) -> R<Imm> {
        use crate::consteval::{eval, Const, EvalError};
        if let Expr::Imm(i, _) = e {
            return Ok(*i);
        }
        match eval(e) {
            Ok(Const::Int(v, _)) => Ok(Imm::Int(v as i64)),
            Ok(Const::Float(f)) => Ok(Imm::F64(f.to_bits())),
            Err(EvalError::DivideByZero) => {
                Err(self.custom(e.span(), "division by zero in a constant expression", "here"))
            }
            Err(EvalError::FloatOperand) => Err(self.custom(
                e.span(),
                "this operator does not take floating-point operands",
                "integer-only operator",
            )),
            Err(EvalError::NotConstant) => {
                Err(self.custom(e.span(), "expected a constant", "not a constant expression"))
            }
        }
    }

    /// `[reg]`, `[reg+imm]`, `[var+imm]`, `[imm]`, or a bracketed operand list `[tex, {x, y}]`.
    fn address(&mut self) -> R<Operand<'a>> {
        let start = self.bump().1;
        match (self.peek(), self.peek_at(1)) {
            (Tok::Ident(_), Tok::RBracket | Tok::Plus | Tok::Minus) => {
                let base = self.name("a register or variable")?;
                let offset = if self.peek() == Tok::RBracket {
                    0
                } else {
                    self.offset()?
                };
                self.expect(Tok::RBracket, "`]`")?;
                Ok(Operand::Addr(Address {
                    base: Some(base),
                    offset,
                    span: self.since(start),
                }))
            }
            (Tok::Float(_) | Tok::HexF32(_) | Tok::HexF64(_), _) => {
                let s = self.span();
                Err(self.custom(s, "an address must be an integer", "not an integer"))
            }
            // Whatever starts a constant: `[~0]` was read as a bracketed list holding -1, which printed
            // as the address `[-1]`.
            (Tok::Int(_) | Tok::LParen | Tok::Minus | Tok::Plus | Tok::Tilde, _) => {
                let e = self.expr()?;
                let Imm::Int(offset) = self.fold(&e)? else {
                    return Err(self.custom(e.span(), "an address must be an integer", "not an integer"));
                };
                self.expect(Tok::RBracket, "`]`")?;
                Ok(Operand::Addr(Address {
                    base: None,
                    offset,
                    span: self.since(start),
                }))
            }
            _ => {
                let v = self.operand_list(Tok::RBracket, "`,` or `]`")?;
                Ok(Operand::Bracket(v, self.since(start)))
            }
        }
    }

    /// `+4`, `-4`, `+-4`, `+(2*8)`: the offset of an address, folded to a constant.
    fn offset(&mut self) -> R<i64> {
        let neg = self.bump().0 == Tok::Minus;
        let mut e = self.unary()?;
        if neg {
            let span = e.span();
            e = Expr::Unary(UnOp::Neg, Box::new(e), span);
        }
        let e = self.binary_rest(e, 9)?;
        match self.fold(&e)? {
            Imm::Int(v) => Ok(v),
            _ => Err(self.custom(e.span(), "an address offset must be an integer", "not an integer")),
        }
    }

    // ---- constant expressions ----------------------------------------------------------------------

    fn expr(&mut self) -> R<Expr<'a>> {
        self.nested(|p| p.expr_at())
    }

    fn expr_at(&mut self) -> R<Expr<'a>> {
        let start = self.span();
        let c = self.unary()?;
        let c = self.binary_rest(c, 1)?;
        if self.eat(Tok::Question) {
            let a = self.expr()?;
            self.expect(Tok::Colon, "`:`")?;
            let b = self.expr()?;
            return Ok(Expr::Cond(Box::new(c), Box::new(a), Box::new(b), self.since(start)));
        }
        Ok(c)
    }

    fn binop(&self) -> Option<BinOp> {
        use BinOp::*;
        Some(match self.peek() {
            Tok::Star => Mul,
            Tok::Slash => Div,
            Tok::Percent => Rem,
            Tok::Plus => Add,
            Tok::Minus => Sub,
            Tok::Shl => Shl,
            Tok::Shr => Shr,
            Tok::Lt => Lt,
            Tok::Gt => Gt,
            Tok::Le => Le,
            Tok::Ge => Ge,
            Tok::EqEq => Eq,
            Tok::Ne => Ne,
            Tok::Amp => And,
            Tok::Caret => Xor,
            Tok::Pipe => Or,
            Tok::AndAnd => LogAnd,
            Tok::OrOr => LogOr,
            _ => return None,
        })
    }

    /// Precedence climbing: folds operators binding at least `min` onto `lhs`.
    fn binary_rest(&mut self, mut lhs: Expr<'a>, min: u8) -> R<Expr<'a>> {
        let mut count = 0;
        while let Some(op) = self.binop().filter(|op| op.precedence() >= min) {
            count += 1;
            if count > MAX_OPERATORS {
                let s = self.span();
                return Err(self.custom(
                    s,
                    "constant expression too long",
                    format!("more than {MAX_OPERATORS} operators"),
                ));
            }
            self.bump();
            let mut rhs = self.unary()?;
            while let Some(next) = self.binop().filter(|n| n.precedence() > op.precedence()) {
                rhs = self.binary_rest(rhs, next.precedence())?;
            }
            let span = lhs.span().to(rhs.span());
            lhs = Expr::Binary(op, Box::new(lhs), Box::new(rhs), span);
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> R<Expr<'a>> {
        self.nested(|p| p.unary_at())
    }

    fn unary_at(&mut self) -> R<Expr<'a>> {
        let start = self.span();
        let op = match self.peek() {
            Tok::Minus => Some(UnOp::Neg),
            Tok::Plus => Some(UnOp::Plus),
            Tok::Bang => Some(UnOp::Not),
            Tok::Tilde => Some(UnOp::BitNot),
            _ => None,
        };
        if let Some(op) = op {
            self.bump();
            let x = self.unary()?;
            // A negative literal is one immediate, as the printer writes it.
            if let (UnOp::Neg, Expr::Imm(i, _)) = (op, &x) {
                let neg = match *i {
                    Imm::Int(v) => Imm::Int(v.wrapping_neg()),
                    Imm::F32(b) => Imm::F32(b ^ 0x8000_0000),
                    Imm::F64(b) => Imm::F64(b ^ (1 << 63)),
                };
                return Ok(Expr::Imm(neg, self.since(start)));
            }
            return Ok(Expr::Unary(op, Box::new(x), self.since(start)));
        }
        if self.peek() == Tok::LParen {
            if let (Tok::Dot(c @ (".s64" | ".u64")), Tok::RParen) = (self.peek_at(1), self.peek_at(2)) {
                self.bump();
                self.bump();
                self.bump();
                let ty = Type::from_dot(c).expect("cast type");
                let x = self.unary()?;
                return Ok(Expr::Cast(ty, Box::new(x), self.since(start)));
            }
        }
        self.primary()
    }

    fn primary(&mut self) -> R<Expr<'a>> {
        let start = self.span();
        match self.peek() {
            Tok::Int(s) => {
                let v = self.uint()?;
                // `0xff(e)`: a mask applied to an expression.
                if self.peek() == Tok::LParen {
                    self.bump();
                    let x = self.expr()?;
                    self.expect(Tok::RParen, "`)`")?;
                    return Ok(Expr::Mask(v, Box::new(x), self.since(start)));
                }
                let imm = Expr::Imm(Imm::Int(v as i64), start);
                // Unsigned by suffix or because it does not fit in .s64.
                Ok(if s.ends_with('U') || v > i64::MAX as u64 {
                    Expr::Cast(Type::U64, Box::new(imm), start)
                } else {
                    imm
                })
            }
            Tok::HexF32(s) => {
                self.bump();
                Ok(Expr::Imm(
                    Imm::F32(u32::from_str_radix(&s[2..], 16).expect("8 hex digits")),
                    start,
                ))
            }
            Tok::HexF64(s) => {
                self.bump();
                Ok(Expr::Imm(
                    Imm::F64(u64::from_str_radix(&s[2..], 16).expect("16 hex digits")),
                    start,
                ))
            }
            Tok::Float(s) => {
                self.bump();
                match s.parse::<f64>() {
                    Ok(f) => Ok(Expr::Imm(Imm::F64(f.to_bits()), start)),
                    Err(_) => Err(self.custom(start, format!("`{s}` is not a valid number"), "bad literal")),
                }
            }
            Tok::Ident("generic") if self.peek_at(1) == Tok::LParen => {
                self.bump();
                self.bump();
                let n = self.name("a variable")?;
                self.expect(Tok::RParen, "`)`")?;
                Ok(Expr::Generic(n, self.since(start)))
            }
            // Section data names other sections: `.b32 .debug_abbrev`.
            Tok::Ident(text) | Tok::Dot(text) => {
                self.bump();
                Ok(Expr::Sym(Name { text, span: start }))
            }
            Tok::LParen => {
                self.bump();
                // One nesting level per parenthesis: `unary` has counted it (counting it twice here
                // made 100 parentheses too deep).
                let e = self.expr_at()?;
                self.expect(Tok::RParen, "`)`")?;
                Ok(e)
            }
            _ => self.unexpected("an operand"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(src: &str) -> Module<'_> {
        let (m, d) = parse(src);
        assert!(d.is_empty(), "{src}: {d:?}");
        m
    }

    fn body<'m, 'a>(m: &'m Module<'a>) -> &'m [Statement<'a>] {
        match &m.items[0] {
            Item::Function(f) => f.body.as_deref().unwrap(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn directives_and_legacy_forms() {
        let m = ok(".version 1.4\n.target sm_10, map_f64_to_f32\n.tex .u32 t;\n.global .texref r;\n");
        assert_eq!(m.directives.len(), 2);
        let Item::Var(v) = &m.items[1] else { panic!() };
        assert_eq!(v.ty, Type::Texref);
        ok("@@DWARF .byte 0x92, 0x01\n.file 1 \"a.cu\", 17, 3\n.section .debug_info { .b32 12 .b8 1, 2 $L1: .b64 .debug_abbrev+4 }\n");
    }

    #[test]
    fn functions_params_and_perf() {
        let m = ok(".visible .entry k(.param .u64 .ptr .global .align 16 p, .param .align 8 .b8 s[16]) .maxntid 128, 1, 1 .pragma \"nounroll\"; { ret; }");
        let Item::Function(f) = &m.items[0] else { panic!() };
        assert_eq!(
            f.params[0].ptr,
            Some(PtrAttr {
                space: Some(Space::Global),
                align: Some(16)
            })
        );
        assert_eq!(f.params[1].align, Some(8));
        assert_eq!(f.perf.len(), 2);
        ok(".func (.param .b32 r) f(.reg .b32 a) .noreturn;\n.alias g, f;\n.extern .func h;");
    }

    #[test]
    fn operands() {
        let m = ok(".entry k { @!%p ld.global.v2.f32 {%f1, _}, [%rd1+-4]; setp.lt.s32 %p|%q, %r1, 0x10U; tex.2d.v4.f32.f32 {a,b,c,d}, [t, s, {x, y}]; mov.u32 %r1, %tid.x; add.s32 %r1, %r1, (1 << 4) - 2; L: brx.idx %r1, ts; ts: .branchtargets L, L; }");
        let b = body(&m);
        let Statement::Inst(i) = &b[0] else { panic!() };
        assert!(i.guard.as_ref().unwrap().negated);
        assert!(matches!(&i.operands[1], Operand::Addr(Address { offset: -4, .. })));
        let Statement::Inst(t) = &b[2] else { panic!() };
        assert_eq!(t.mods[0].text, ".2d");
        assert!(matches!(&t.operands[1], Operand::Bracket(v, _) if v.len() == 3));
        let Statement::Inst(a) = &b[4] else { panic!() };
        assert!(matches!(a.operands[2], Operand::Imm(Imm::Int(14), _)));
        assert!(matches!(&b[8], Statement::Directive(Directive::Targets { targets, .. }) if targets.len() == 2));
    }

    #[test]
    fn parentheses_hold_an_expression_or_an_operand_list() {
        let m = ok(".entry k { mov.u32 %r1, ((((1)))); call f, ((1), %r1); call f, ((%r1)); add.s32 %r1, %r1, ((1) + 2) * 3; }");
        let ops: Vec<&Operand> = body(&m)
            .iter()
            .map(|s| match s {
                Statement::Inst(i) => i.operands.last().unwrap(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(matches!(ops[0], Operand::Imm(Imm::Int(1), _)), "{:?}", ops[0]);
        assert!(
            matches!(ops[1], Operand::List(v, _) if matches!(v[..], [Operand::Imm(Imm::Int(1), _), Operand::Sym { .. }]))
        );
        assert!(matches!(ops[2], Operand::List(v, _) if matches!(&v[..], [Operand::List(w, _)] if w.len() == 1)));
        assert!(matches!(ops[3], Operand::Imm(Imm::Int(9), _)));
    }

    #[test]
    fn a_parenthesis_is_one_nesting_level() {
        let parens = |n: usize| format!(".entry k {{ mov.u32 %r1, 1 + {}1{}; }}", "(".repeat(n), ")".repeat(n));
        ok(&parens(150));
        let (_, d) = parse(&parens(250));
        assert_eq!(d[0].message, "nesting too deep");
    }

    #[test]
    fn loc_with_inlined_at_and_prototypes() {
        ok(".entry k { .loc 1 2 3, function_name $L__info_string0+4, inlined_at 1 7 9\n p: .callprototype (.param .b32 _) _ (.param .b64 _); ret; }");
    }

    #[test]
    fn recovery_reports_each_error_once() {
        let (m, d) = parse(".entry k {\n add.s32 %r1 %r2, 1;\n mov.u32 %r1, 2;\n ld.global [;\n}\n.entry j { ret; }\n");
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(m.items.len(), 2);
        assert_eq!(body(&m).len(), 1);
    }

    #[test]
    fn missing_semicolon_at_line_end_is_one_error() {
        let (m, d) = parse(".entry k {\n mov.u32 %r1, 2\n mov.u32 %r2, 3;\n}");
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].message, "missing `;`");
        assert_eq!(body(&m).len(), 2);
    }

    #[test]
    fn fragment_mode_takes_bare_statements() {
        let (m, d) = parse_fragment("add.s32 r1, r2, r3;\nL: @p bra L;\n.reg .b32 x;");
        assert!(d.is_empty());
        assert_eq!(m.items.len(), 4);
        let (_, d) = parse("add.s32 r1, r2, r3;");
        assert_eq!(d.len(), 1);
    }
}
