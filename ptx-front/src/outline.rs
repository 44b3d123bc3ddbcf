//! A module's outline: where each top-level item (directive, variable, function) starts and ends and
//! which names it declares, found in one pass of the lexer that keeps no tokens and builds no tree.
//! Lazy loading keeps a module's outline and parses only the part a kernel needs
//! ([`Outline::part`]): the module's directives, the kernel, and the variables and functions it
//! names, transitively. Spans stay those of the whole text, so diagnostics and lines are the same as
//! for a parse of the whole module.

use crate::lexer::Tok;
use crate::span::Span;
use logos::Logos;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `.version`, `.target`, `.address_size`, `.file`, `.loc`, `.pragma`, and anything else that is
    /// not a declaration (the parser reports what it cannot parse): part of every part.
    Common,
    /// `.section` and `@@DWARF` debug data: part of none (nothing that runs refers to it).
    Debug,
    /// A variable declaration (one or more names).
    Var,
    /// `.alias alias, aliasee;`, named by its alias.
    Alias,
    Function {
        entry: bool,
        /// The body's braces, for a definition.
        body: Option<Span>,
        /// The body declares `.global` or `.const` variables, which live as long as the module.
        statics: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    pub span: Span,
    pub kind: Kind,
    /// The first name the item declares (a function's or alias's only one); empty if none.
    pub name: Span,
}

#[derive(Debug, Default)]
pub struct Outline {
    pub items: Vec<Item>,
    /// Every name an item declares, with the item's index, sorted by name.
    names: Vec<(Span, u32)>,
    /// Every brace closed, every item ended and every character lexed: an outline of broken text may
    /// have missed items, so a caller checks such text whole.
    pub complete: bool,
}

/// The item being scanned.
struct Open {
    start: u32,
    kind: Kind,
    /// `.version`, `.target`, `.address_size` and `.file` end without a `;`: at the next directive.
    unterminated: bool,
    braces: i32,
    parens: i32,
    brackets: i32,
    /// An initializer started (`=`): names after it are uses, not declarations (until the next
    /// declarator, after a `,`).
    initializer: bool,
    /// A function header's `.pragma` (`.entry k .pragma "nounroll"; { … }`): its `;` does not end
    /// the function.
    pragma: bool,
    names_from: usize,
}

impl Open {
    /// Whether the item ended before token `t`, with no `;`: a directive that takes none, or (in
    /// Open64-era PTX, as the parser accepts it) a function prototype followed by another item or
    /// by the end of the text.
    fn ends_before(&self, t: Tok<'_>) -> bool {
        let prototype = matches!(self.kind, Kind::Function { body: None, .. })
            && self.braces == 0
            && self.parens == 0
            && match t {
                Tok::Dwarf(_) | Tok::Eof => true,
                Tok::Dot(d) => crate::parser::starts_item(d),
                _ => false,
            };
        prototype || (self.unterminated && matches!(t, Tok::Dot(_) | Tok::Dwarf(_)))
    }
}

impl Outline {
    pub fn new(src: &str) -> Outline {
        let mut out = Outline {
            complete: true,
            ..Outline::default()
        };
        let mut lx = Tok::lexer(src);
        let mut open: Option<Open> = None;
        // The previous token, to tell a declaration inside a body from a modifier (`ld.global`).
        let mut prev = Tok::Semi;
        let mut prev_end = 0u32;
        while let Some(t) = lx.next() {
            let r = lx.span();
            let s = Span::new(r.start, r.end);
            let t = t.unwrap_or(Tok::Error);
            if t == Tok::Error {
                out.complete = false;
            }
            if open.as_ref().is_some_and(|o| o.ends_before(t)) {
                out.close(open.take().expect("open"), prev_end);
            }
            let o = match &mut open {
                Some(o) => o,
                None => {
                    let (kind, unterminated) = match t {
                        Tok::Dwarf(_) => {
                            out.items.push(Item {
                                span: s,
                                kind: Kind::Debug,
                                name: Span::default(),
                            });
                            prev = t;
                            prev_end = s.end;
                            continue;
                        }
                        Tok::Dot(".version" | ".target" | ".address_size" | ".file" | ".loc") => (Kind::Common, true),
                        Tok::Dot(".section") => (Kind::Debug, false),
                        Tok::Dot(".alias") => (Kind::Alias, false),
                        Tok::Dot(d) if crate::parser::is_var_space(d) || d == ".entry" || d == ".func" => {
                            (Kind::Var, false)
                        }
                        Tok::Dot(".visible" | ".extern" | ".weak" | ".common") => (Kind::Var, false),
                        _ => (Kind::Common, false),
                    };
                    open.insert(Open {
                        start: s.start,
                        kind,
                        unterminated,
                        braces: 0,
                        parens: 0,
                        brackets: 0,
                        initializer: false,
                        pragma: false,
                        names_from: out.names.len(),
                    })
                }
            };
            let top = o.braces == 0 && o.parens == 0 && o.brackets == 0;
            let mut ends = false;
            match t {
                Tok::LBrace => {
                    if top {
                        if let Kind::Function { body, .. } = &mut o.kind {
                            *body = Some(Span::new(s.start as usize, s.end as usize));
                        }
                    }
                    o.braces += 1;
                }
                Tok::RBrace => {
                    o.braces -= 1;
                    if o.braces == 0 && o.parens == 0 && o.brackets == 0 {
                        match &mut o.kind {
                            Kind::Function { body: Some(b), .. } => {
                                b.end = s.end;
                                ends = true;
                            }
                            Kind::Debug | Kind::Common => ends = true,
                            _ => {}
                        }
                    } else if o.braces < 0 {
                        out.complete = false;
                        ends = true;
                    }
                }
                Tok::LParen => o.parens += 1,
                Tok::RParen => o.parens -= 1,
                Tok::LBracket => o.brackets += 1,
                Tok::RBracket => o.brackets -= 1,
                Tok::Semi if top => {
                    ends = !o.pragma;
                    o.pragma = false;
                }
                Tok::Eq if top => o.initializer = true,
                Tok::Comma if top => o.initializer = false,
                Tok::Dot(".pragma") if top && matches!(o.kind, Kind::Function { .. }) => o.pragma = true,
                Tok::Dot(".entry" | ".func") if top && o.kind == Kind::Var => {
                    o.kind = Kind::Function {
                        entry: matches!(t, Tok::Dot(".entry")),
                        body: None,
                        statics: false,
                    };
                }
                // A declaration, not a modifier (`ld.global` follows its opcode or another modifier).
                Tok::Dot(".global" | ".const") if o.braces > 0 && !matches!(prev, Tok::Ident(_) | Tok::Dot(_)) => {
                    if let Kind::Function { statics, .. } = &mut o.kind {
                        *statics = true;
                    }
                }
                Tok::Ident(_) if top && !o.initializer => {
                    let first = out.names.len() == o.names_from;
                    if first || o.kind == Kind::Var {
                        out.names.push((s, out.items.len() as u32));
                    }
                }
                _ => {}
            }
            prev = t;
            prev_end = s.end;
            if ends {
                out.close(open.take().expect("open"), s.end);
            }
        }
        if let Some(o) = open {
            out.complete &= o.unterminated || o.ends_before(Tok::Eof);
            out.close(o, prev_end);
        }
        out.names
            .sort_unstable_by(|a, b| src[a.0.range()].cmp(&src[b.0.range()]));
        out
    }

    fn close(&mut self, o: Open, end: u32) {
        let index = self.items.len() as u32;
        let name = self.names[o.names_from..]
            .first()
            .filter(|n| n.1 == index)
            .map_or(Span::default(), |n| n.0);
        self.items.push(Item {
            span: Span { start: o.start, end },
            kind: o.kind,
            name,
        });
    }

    /// The kernels (entries with a body): their items' indices and names, in order.
    pub fn kernels<'s>(&'s self, src: &'s str) -> impl Iterator<Item = (u32, &'s str)> + 's {
        self.items
            .iter()
            .enumerate()
            .filter_map(move |(i, item)| match item.kind {
                Kind::Function {
                    entry: true,
                    body: Some(_),
                    ..
                } => Some((i as u32, &src[item.name.range()])),
                _ => None,
            })
    }

    /// The items that declare `name`.
    fn declaring<'o>(&'o self, src: &str, name: &str) -> impl Iterator<Item = u32> + 'o {
        let from = self.names.partition_point(|n| &src[n.0.range()] < name);
        let to = from + self.names[from..].partition_point(|n| &src[n.0.range()] == name);
        self.names[from..to].iter().map(|n| n.1)
    }

    /// The text ranges (in order, adjacent items joined) of what items `roots` need: the common items,
    /// the roots, and every variable, function and alias they name, transitively. A name that is also
    /// a register or label only brings in more than needed.
    pub fn part(&self, src: &str, roots: impl IntoIterator<Item = u32>) -> Vec<Span> {
        let mut todo: Vec<u32> = roots.into_iter().collect();
        todo.extend(
            self.items
                .iter()
                .enumerate()
                .filter(|(_, i)| i.kind == Kind::Common)
                .map(|(k, _)| k as u32),
        );
        let mut included = std::collections::BTreeSet::new();
        while let Some(i) = todo.pop() {
            if !included.insert(i) {
                continue;
            }
            let span = self.items[i as usize].span;
            for t in Tok::lexer(&src[span.range()]) {
                if let Ok(Tok::Ident(name)) = t {
                    todo.extend(self.declaring(src, name).filter(|d| !included.contains(d)));
                }
            }
        }
        let mut parts: Vec<Span> = vec![];
        let mut last = None;
        for i in included {
            let span = self.items[i as usize].span;
            match parts.last_mut() {
                Some(p) if last == Some(i - 1) => p.end = span.end,
                _ => parts.push(span),
            }
            last = Some(i);
        }
        parts
    }

    /// The part that defines the module's variables: every variable declaration, the functions that
    /// declare `.global` or `.const` variables in their bodies, and what those name.
    pub fn variables_part(&self, src: &str) -> Vec<Span> {
        self.part(
            src,
            self.items.iter().enumerate().filter_map(|(k, i)| {
                let vars = matches!(i.kind, Kind::Var | Kind::Function { statics: true, .. });
                vars.then_some(k as u32)
            }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = r#"
.version 8.0
.target sm_80
.address_size 64
.file 1 "a.cu"
.global .u32 g[2] = {1, 2};
.shared .align 4 .b8 tile_a[64], tile_b[64];
.shared .align 4 .b8 other[16];
.section .debug_info { .b32 1 }
.func (.param .b32 r) helper(.param .b32 x);
.visible .entry a(.param .u64 p) .maxntid 64, 1, 1
{
    .reg .b32 %r<3>;
    ld.global.u32 %r1, [g];
    st.shared.u32 [tile_a], %r1;
    call (%r2), helper, (%r1);
}
.func (.param .b32 r) helper(.param .b32 x)
{
    .global .u32 counter;
    ret;
}
.visible .entry b()
{
    st.shared.u32 [other], 1;
    ret;
}
"#;

    fn texts<'s>(src: &'s str, parts: &[Span]) -> Vec<&'s str> {
        parts.iter().map(|p| &src[p.range()]).collect()
    }

    #[test]
    fn items_and_names() {
        let o = Outline::new(SRC);
        assert!(o.complete);
        let kinds: Vec<(&str, Kind)> = o.items.iter().map(|i| (&SRC[i.name.range()], i.kind)).collect();
        assert_eq!(kinds.len(), 12);
        assert_eq!(kinds[4].0, "g");
        assert_eq!(kinds[5].0, "tile_a");
        assert_eq!(kinds[7].1, Kind::Debug);
        assert!(matches!(
            kinds[8],
            (
                "helper",
                Kind::Function {
                    entry: false,
                    body: None,
                    ..
                }
            )
        ));
        assert!(matches!(
            kinds[10],
            (
                "helper",
                Kind::Function {
                    statics: true,
                    body: Some(_),
                    ..
                }
            )
        ));
        assert_eq!(o.declaring(SRC, "tile_b").collect::<Vec<_>>(), vec![5]);
        assert_eq!(o.declaring(SRC, "helper").collect::<Vec<_>>(), vec![8, 10]);
        let kernels: Vec<_> = o.kernels(SRC).collect();
        assert_eq!(kernels, vec![(9, "a"), (11, "b")]);
    }

    #[test]
    fn a_kernels_part_is_what_it_names() {
        let o = Outline::new(SRC);
        let a = o.part(SRC, [9]);
        let t = texts(SRC, &a);
        // The directives, `g`, the tile declaration, the helper's declaration, `a` and the helper.
        assert_eq!(t.len(), 2);
        assert!(
            t[0].starts_with(".version 8.0") && t[0].ends_with("tile_b[64];"),
            "{t:?}"
        );
        assert!(t[1].starts_with(".func (.param .b32 r) helper(.param .b32 x);") && t[1].ends_with("ret;\n}"));
        let b = texts(SRC, &o.part(SRC, [11]));
        assert_eq!(b.len(), 3);
        assert_eq!(b[1], ".shared .align 4 .b8 other[16];");
        assert!(b[2].starts_with(".visible .entry b()"));
        let vars = texts(SRC, &o.variables_part(SRC));
        assert!(vars.iter().any(|t| t.contains(".global .u32 counter")), "{vars:?}");
        assert!(!vars.iter().any(|t| t.contains(".entry")), "{vars:?}");
    }

    /// Forms the parser accepts that once cut items in the wrong place (found in review).
    #[test]
    fn pragmas_loc_declarators_and_statics() {
        let src = ".version 8.0\n.target sm_80\n.global .u32 a = 1, b = 2;\n.loc 1 2 3\n\
                   .entry k .pragma \"nounroll\";\n{\n.loc 1 5 1\n.global .u32 s;\nld.global.u32 %r1, [b];\nret;\n}\n";
        let o = Outline::new(src);
        assert!(o.complete);
        assert_eq!(o.kernels(src).map(|k| k.1).collect::<Vec<_>>(), vec!["k"]);
        assert_eq!(o.declaring(src, "b").collect::<Vec<_>>(), vec![2]);
        let k = o.items.iter().find(|i| &src[i.name.range()] == "k").expect("k");
        assert!(
            matches!(
                k.kind,
                Kind::Function {
                    statics: true,
                    body: Some(_),
                    ..
                }
            ),
            "{k:?}"
        );
        let part = texts(src, &o.part(src, [4]));
        assert!(
            part.concat().contains("b = 2") && part.concat().contains("ret;"),
            "{part:?}"
        );
    }

    #[test]
    fn broken_text_is_incomplete() {
        assert!(!Outline::new(".version 8.0\n.entry k() { ret;").complete);
        assert!(!Outline::new(".version 8.0\n.entry k() { ret; } }").complete);
        assert!(!Outline::new(".version 8.0\n.entry k() { ret; # }").complete);
        assert!(Outline::new(".version 8.0\n.target sm_80").complete);
        // An Open64-era prototype may end the text (the parser accepts it).
        assert!(Outline::new(".version 2.1\n.target sm_20\n.visible .func f (.param .u64 p)").complete);
        assert!(!Outline::new(".version 2.1\n.target sm_20\n.visible .func f (.param .u64 p").complete);
    }
}
