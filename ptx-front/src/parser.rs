//! Chumsky parser over the logos token slice. Recovery happens at statement and item boundaries so one
//! run reports every syntax error.

use crate::ast::*;
use crate::diag::{Code, Diagnostic};
use crate::lexer::{lex, Tok};
use crate::span::Span;
use crate::types::{Space, Type};
use chumsky::input::{Input as _, ValueInput};
use chumsky::prelude::*;

type Err<'t, 'a> = extra::Err<Rich<'t, Tok<'a>, SimpleSpan>>;

fn sp(s: SimpleSpan) -> Span {
    Span::new(s.start, s.end)
}

/// Parses PTX text. The module is returned even when there are errors (with the failed parts left out),
/// so checks can still run on what parsed.
pub fn parse(src: &str) -> (Module<'_>, Vec<Diagnostic>) {
    let (m, d) = parse_module(src);
    (
        m.unwrap_or(Module {
            directives: vec![],
            items: vec![],
        }),
        d,
    )
}

/// Like `parse`, but `None` when nothing could be recovered (so checks do not pile up on an empty module).
pub fn parse_module(src: &str) -> (Option<Module<'_>>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let tokens: Vec<(Tok<'_>, SimpleSpan)> = lex(src)
        .into_iter()
        .map(|(t, s)| (t, SimpleSpan::from(s.range())))
        .collect();
    for (t, s) in &tokens {
        if *t == Tok::Error {
            let text = &src[s.start..s.end];
            let d = if text.starts_with("/*") {
                Diagnostic::error(
                    Code::P0001,
                    sp(SimpleSpan::from(s.start..s.start + 2)),
                    "unterminated block comment",
                )
                .label("this comment never ends")
                .help("close it with `*/`")
            } else {
                Diagnostic::error(Code::P0001, sp(*s), format!("unexpected character `{text}`"))
                    .label("not valid in PTX")
            };
            diags.push(d);
        }
    }
    let eoi = SimpleSpan::from(src.len()..src.len());
    let input = tokens.as_slice().map(eoi, |(t, s)| (t, s));
    let (module, errs) = module_parser().parse(input).into_output_errors();
    for e in errs {
        if matches!(e.found(), Some(Tok::Error)) {
            continue; // already reported by the lexer pass above
        }
        diags.push(syntax_error(&e));
    }
    (module, diags)
}

fn syntax_error(e: &Rich<'_, Tok<'_>, SimpleSpan>) -> Diagnostic {
    let found = match e.found() {
        Some(t) => format!("`{t}`"),
        None => "end of input".to_string(),
    };
    let mut expected: Vec<String> = e
        .expected()
        .filter(|x| !matches!(x, chumsky::error::RichPattern::SomethingElse))
        .map(|x| match x {
            chumsky::error::RichPattern::Label(l) => l.to_string(),
            chumsky::error::RichPattern::EndOfInput => "end of input".to_string(),
            other => format!("`{}`", other.to_string().trim_matches('\'')),
        })
        .collect();
    expected.sort();
    expected.dedup();
    let (msg, label) = match e.reason() {
        chumsky::error::RichReason::Custom(m) => (m.clone(), m.clone()),
        _ => {
            let exp = if expected.is_empty() {
                "something else".to_string()
            } else if expected.len() <= 6 {
                expected.join(", ")
            } else {
                format!("{}, …", expected[..6].join(", "))
            };
            (format!("unexpected {found}"), format!("expected {exp}"))
        }
    };
    let mut d = Diagnostic::error(Code::P0002, sp(*e.span()), msg).label(label);
    if let Some(ctx) = e.contexts().last() {
        d = d.secondary(sp(*ctx.1), format!("while parsing this {}", ctx.0));
    }
    d
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

fn is_var_space(d: &str) -> bool {
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

/// A word between the state space and the name of a declaration.
#[derive(Clone, Debug)]
enum DeclWord<'a> {
    Dot(Name<'a>),
    Align(u32),
    Attribute,
}

fn build_decl<'t, 'a>(
    linkage: Option<Linkage>,
    space: Name<'a>,
    words: Vec<DeclWord<'a>>,
    name: Name<'a>,
    range: Option<u32>,
    dims: Vec<Option<u64>>,
    init: Option<Init<'a>>,
    span: Span,
) -> Result<VarDecl<'a>, Rich<'t, Tok<'a>, SimpleSpan>> {
    let space_v = Space::from_dot(space.text).ok_or_else(|| {
        Rich::custom(
            space.span.range().into(),
            format!("`{}` is not a state space", space.text),
        )
    })?;
    let (mut ty, mut vector, mut align) = (None, None, None);
    for w in words {
        match w {
            DeclWord::Align(n) => align = Some(n),
            DeclWord::Attribute => {}
            DeclWord::Dot(d) => {
                if let Some(t) = Type::from_dot(d.text) {
                    if ty.replace(t).is_some() {
                        return Err(Rich::custom(d.span.range().into(), "a declaration takes one type"));
                    }
                } else {
                    match d.text {
                        ".v2" => vector = Some(2),
                        ".v4" => vector = Some(4),
                        ".v8" => vector = Some(8),
                        // Parameter attributes (`.ptr .global .align 16`) and texture types.
                        ".ptr" | ".global" | ".shared" | ".const" | ".local" | ".texref" | ".samplerref"
                        | ".surfref" => {}
                        _ => {
                            return Err(Rich::custom(
                                d.span.range().into(),
                                format!("`{}` is not valid in a variable declaration", d.text),
                            ))
                        }
                    }
                }
            }
        }
    }
    let ty = ty.ok_or_else(|| {
        Rich::custom(
            name.span.range().into(),
            format!("`{}` is declared without a type", name.text),
        )
    })?;
    Ok(VarDecl {
        linkage,
        space: space_v,
        align,
        vector,
        ty,
        name,
        range,
        dims,
        init,
        span,
    })
}

fn module_parser<'t, 'a: 't, I>() -> impl Parser<'t, I, Module<'a>, Err<'t, 'a>>
where
    I: ValueInput<'t, Token = Tok<'a>, Span = SimpleSpan>,
{
    let name = select! { Tok::Ident(s) = e => Name { text: s, span: sp(e.span()) } }.labelled("name");
    let dot_any = select! { Tok::Dot(s) = e => Name { text: s, span: sp(e.span()) } };
    let dot = |d: &'static str| just(Tok::Dot(d));
    let uint = select! { Tok::Int(s) => s }
        .try_map(|s, span| {
            parse_int(s).ok_or_else(|| Rich::custom(span, format!("integer `{s}` does not fit in 64 bits")))
        })
        .labelled("integer");
    let uint32 =
        uint.try_map(|v, span| u32::try_from(v).map_err(|_| Rich::custom(span, "value does not fit in 32 bits")));

    let imm = {
        let int = select! { Tok::Int(s) => s }.try_map(|s, span| {
            parse_int(s)
                .map(|v| Imm::Int(v as i64))
                .ok_or_else(|| Rich::custom(span, format!("integer `{s}` does not fit in 64 bits")))
        });
        let f32h = select! { Tok::HexF32(s) => Imm::F32(u32::from_str_radix(&s[2..], 16).unwrap_or(0)) };
        let f64h = select! { Tok::HexF64(s) => Imm::F64(u64::from_str_radix(&s[2..], 16).unwrap_or(0)) };
        let fdec = select! { Tok::Float(s) => s }.try_map(|s, span| {
            s.parse::<f64>()
                .map(|f| Imm::F64(f.to_bits()))
                .map_err(|_| Rich::custom(span, "bad float literal"))
        });
        let pos = choice((int, f32h, f64h, fdec));
        just(Tok::Minus)
            .or_not()
            .then(pos)
            .map(|(neg, v)| match (neg.is_some(), v) {
                (false, v) => v,
                (true, Imm::Int(i)) => Imm::Int(i.wrapping_neg()),
                (true, Imm::F32(b)) => Imm::F32(b ^ 0x8000_0000),
                (true, Imm::F64(b)) => Imm::F64(b ^ (1 << 63)),
            })
    }
    .labelled("immediate")
    .boxed();

    // Constant expressions for initializers: + - * over integers and symbols.
    let expr = recursive(|expr| {
        let atom = choice((
            imm.clone().map_with(|v, e| Expr::Imm(v, sp(e.span()))),
            name.map(Expr::Sym),
            expr.clone().delimited_by(just(Tok::LParen), just(Tok::RParen)),
        ));
        let product = atom
            .clone()
            .foldl_with(just(Tok::Star).ignore_then(atom).repeated(), |a, b, e| {
                Expr::Mul(Box::new(a), Box::new(b), sp(e.span()))
            });
        product.clone().foldl_with(
            choice((just(Tok::Plus).to(true), just(Tok::Minus).to(false)))
                .then(product)
                .repeated(),
            |a, (add, b), e| {
                if add {
                    Expr::Add(Box::new(a), Box::new(b), sp(e.span()))
                } else {
                    Expr::Sub(Box::new(a), Box::new(b), sp(e.span()))
                }
            },
        )
    });
    let init = recursive(|init| {
        choice((
            init.separated_by(just(Tok::Comma))
                .allow_trailing()
                .collect::<Vec<_>>()
                .delimited_by(just(Tok::LBrace), just(Tok::RBrace))
                .map(Init::List),
            expr.clone().map(Init::Scalar),
        ))
    });

    let linkage = choice((
        dot(".visible").to(Linkage::Visible),
        dot(".extern").to(Linkage::Extern),
        dot(".weak").to(Linkage::Weak),
        dot(".common").to(Linkage::Common),
    ));
    let space = dot_any.filter(|n: &Name| is_var_space(n.text)).labelled("state space");
    let decl_word = choice((
        dot(".align").ignore_then(uint32).map(DeclWord::Align),
        dot(".attribute")
            .ignore_then(dot_any.delimited_by(just(Tok::LParen), just(Tok::RParen)))
            .to(DeclWord::Attribute),
        dot_any
            .filter(|n: &Name| {
                !is_var_space(n.text)
                    || n.text == ".global"
                    || n.text == ".shared"
                    || n.text == ".const"
                    || n.text == ".local"
            })
            .map(DeclWord::Dot),
    ));
    // One declaration line may name several variables: `.reg .b32 a, b<4>, c[2];`.
    let declarator = name
        .then(uint32.delimited_by(just(Tok::Lt), just(Tok::Gt)).or_not())
        .then(
            uint.or_not()
                .delimited_by(just(Tok::LBracket), just(Tok::RBracket))
                .repeated()
                .collect::<Vec<_>>(),
        )
        .then(just(Tok::Eq).ignore_then(init).or_not())
        .map_with(|(((nm, range), dims), init), e| (nm, range, dims, init, sp(e.span())));
    let var_decls = linkage
        .or_not()
        .then(space)
        .then(decl_word.repeated().collect::<Vec<_>>())
        .then(
            declarator
                .separated_by(just(Tok::Comma))
                .at_least(1)
                .collect::<Vec<_>>(),
        )
        .try_map(|(((lk, sp_), words), decls), span: SimpleSpan| {
            let n = decls.len();
            decls
                .into_iter()
                .map(|(nm, range, dims, init, dspan)| {
                    // A single declarator owns the whole line's span; in a list, each owns its own.
                    let s = if n == 1 { sp(span) } else { dspan };
                    build_decl(lk, sp_, words.clone(), nm, range, dims, init, s)
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .labelled("declaration")
        .boxed();
    let var_decl = var_decls.clone().try_map(|mut v, span| {
        if v.len() == 1 {
            Ok(v.pop().expect("one declaration"))
        } else {
            Err(Rich::custom(span, "a parameter declares one name"))
        }
    });

    // Operands.
    let operand = recursive(|operand| {
        let sym = name
            .then(
                dot_any
                    .filter(|n: &Name| matches!(n.text, ".x" | ".y" | ".z" | ".w" | ".r" | ".g" | ".b" | ".a"))
                    .or_not(),
            )
            .map(|(name, component)| {
                if name.text == "_" {
                    Operand::Sink(name.span)
                } else {
                    Operand::Sym { name, component }
                }
            });
        let offset = choice((
            just(Tok::Plus)
                .ignore_then(just(Tok::Minus).or_not())
                .then(uint)
                .map(|(neg, v)| {
                    if neg.is_some() {
                        (v as i64).wrapping_neg()
                    } else {
                        v as i64
                    }
                }),
            just(Tok::Minus).ignore_then(uint).map(|v| (v as i64).wrapping_neg()),
        ));
        let address = choice((
            name.then(offset.or_not()).map(|(b, o)| (Some(b), o.unwrap_or(0))),
            uint.map(|v| (None, v as i64)),
        ))
        .delimited_by(just(Tok::LBracket), just(Tok::RBracket))
        .map_with(|(base, offset), e| {
            Operand::Addr(Address {
                base,
                offset,
                span: sp(e.span()),
            })
        })
        .labelled("address");
        let vector = operand
            .clone()
            .separated_by(just(Tok::Comma))
            .at_least(1)
            .collect::<Vec<_>>()
            .delimited_by(just(Tok::LBrace), just(Tok::RBrace))
            .map_with(|v, e| Operand::Vector(v, sp(e.span())));
        let list = operand
            .clone()
            .separated_by(just(Tok::Comma))
            .collect::<Vec<_>>()
            .delimited_by(just(Tok::LParen), just(Tok::RParen))
            .map_with(|v, e| Operand::List(v, sp(e.span())));
        let atom = choice((
            sym.clone(),
            imm.map_with(|v, e| Operand::Imm(v, sp(e.span()))),
            address,
            vector,
            list,
            just(Tok::Bang)
                .ignore_then(sym.clone())
                .map_with(|o, e| Operand::Not(Box::new(o), sp(e.span()))),
            just(Tok::Minus)
                .ignore_then(sym)
                .map_with(|o, e| Operand::Neg(Box::new(o), sp(e.span()))),
        ));
        atom.clone()
            .then(just(Tok::Pipe).ignore_then(atom).or_not())
            .map_with(|(a, b), e| match b {
                Some(b) => Operand::Pair(Box::new(a), Box::new(b), sp(e.span())),
                None => a,
            })
    })
    .labelled("operand")
    .boxed();

    let guard = just(Tok::At)
        .ignore_then(just(Tok::Bang).or_not())
        .then(name)
        .map(|(neg, pred)| Guard {
            negated: neg.is_some(),
            pred,
        });
    let instruction = guard
        .or_not()
        .then(name.labelled("opcode"))
        .then(dot_any.repeated().collect::<Vec<_>>())
        .then(operand.separated_by(just(Tok::Comma)).collect::<Vec<_>>())
        .then_ignore(just(Tok::Semi))
        .map_with(|(((guard, opcode), mods), operands), e| Instruction {
            guard,
            opcode,
            mods,
            operands,
            span: sp(e.span()),
        })
        .labelled("instruction")
        .boxed();

    // Debug and pragma directives. `.file` and `.loc` end at the line break, so their arity is spelled out.
    let loc = dot(".loc")
        .ignore_then(uint.repeated().at_least(2).at_most(3))
        .then(
            just(Tok::Comma)
                .then(name)
                .then(name.then(just(Tok::Plus).then(uint).or_not()))
                .then(just(Tok::Comma))
                .then(name)
                .then(uint.repeated().at_least(2).at_most(3))
                .or_not(),
        )
        .ignored();
    let file = dot(".file")
        .ignore_then(uint)
        .then(select! { Tok::Str(_) => () })
        .then(just(Tok::Comma).ignore_then(uint).repeated().at_most(2))
        .ignored();
    let pragma = dot(".pragma")
        .ignore_then(select! { Tok::Str(_) => () }.separated_by(just(Tok::Comma)))
        .then_ignore(just(Tok::Semi));
    let section = dot(".section")
        .ignore_then(dot_any)
        .then(
            any()
                .and_is(just(Tok::RBrace).not())
                .repeated()
                .delimited_by(just(Tok::LBrace), just(Tok::RBrace)),
        )
        .ignored();
    let other = choice((loc, file, pragma.clone(), section)).boxed();

    // `{ … }` with nesting, as one unit: recovery must never split a block.
    let balanced = recursive(|b| {
        choice((
            b,
            any()
                .and_is(choice((just(Tok::LBrace), just(Tok::RBrace))).not())
                .ignored(),
        ))
        .repeated()
        .delimited_by(just(Tok::LBrace), just(Tok::RBrace))
        .ignored()
    });
    let statement_end = choice((just(Tok::Semi), just(Tok::RBrace)));
    let skip_statement = choice((
        balanced.clone(),
        any()
            .and_is(statement_end.clone().not())
            .and_is(just(Tok::LBrace).not())
            .ignored(),
    ))
    .repeated()
    .then(just(Tok::Semi).ignored().or(balanced.clone()))
    .map_with(|_, e| Statement::Other { span: sp(e.span()) });

    let statements = recursive(|statements| {
        let block = statements
            .delimited_by(just(Tok::LBrace), just(Tok::RBrace))
            .map_with(|b, e| Statement::Block(b, sp(e.span())));
        let label = name.then_ignore(just(Tok::Colon)).map(Statement::Label);
        // `proto: .callprototype (…) _ (…);` declares a call signature for indirect calls.
        let prototype = dot(".callprototype")
            .then(any().and_is(just(Tok::Semi).not()).repeated())
            .then(just(Tok::Semi))
            .ignored();
        let other_stmt = choice((other.clone(), prototype)).map_with(|_, e| Statement::Other { span: sp(e.span()) });
        let stmt = choice((
            block.map(|b| vec![b]),
            other_stmt.map(|s| vec![s]),
            var_decls
                .clone()
                .then_ignore(just(Tok::Semi))
                .map(|v| v.into_iter().map(Statement::Var).collect()),
            label.map(|l| vec![l]),
            instruction.map(|i| vec![Statement::Inst(i)]),
        ))
        .recover_with(via_parser(skip_statement.map(|s| vec![s])));
        stmt.repeated()
            .collect::<Vec<Vec<Statement>>>()
            .map(|v| v.into_iter().flatten().collect::<Vec<_>>())
    });

    let perf = dot_any
        .filter(|n: &Name| {
            matches!(
                n.text,
                ".maxntid"
                    | ".reqntid"
                    | ".minnctapersm"
                    | ".maxnctapersm"
                    | ".maxnreg"
                    | ".noreturn"
                    | ".reqnctapercluster"
                    | ".explicitcluster"
                    | ".maxclusterrank"
                    | ".blocksareclusters"
            )
        })
        .then(uint.separated_by(just(Tok::Comma)).collect::<Vec<_>>())
        .map(|(name, values)| PerfDirective { name, values })
        .or(pragma.clone().map_with(|_, e| PerfDirective {
            name: Name {
                text: ".pragma",
                span: sp(e.span()),
            },
            values: vec![],
        }));
    let param_list = var_decl
        .clone()
        .separated_by(just(Tok::Comma))
        .collect::<Vec<_>>()
        .delimited_by(just(Tok::LParen), just(Tok::RParen));
    let body = choice((
        statements.delimited_by(just(Tok::LBrace), just(Tok::RBrace)).map(Some),
        just(Tok::Semi).to(None),
    ));
    let entry = dot(".entry")
        .ignore_then(name)
        .then(param_list.clone().or_not())
        .then(perf.clone().repeated().collect::<Vec<_>>())
        .then(body.clone())
        .map(|(((name, params), perf), body)| (FnKind::Entry, vec![], name, params.unwrap_or_default(), perf, body));
    let func = dot(".func")
        .ignore_then(param_list.clone().or_not())
        .then(name)
        .then(param_list.or_not())
        .then(perf.repeated().collect::<Vec<_>>())
        .then(body)
        .map(|((((rets, name), params), perf), body)| {
            (
                FnKind::Func,
                rets.unwrap_or_default(),
                name,
                params.unwrap_or_default(),
                perf,
                body,
            )
        });
    let function = linkage
        .or_not()
        .then(choice((entry, func)))
        .map_with(|(linkage, (kind, returns, name, params, perf, body)), e| {
            Item::Function(Function {
                kind,
                linkage,
                name,
                returns,
                params,
                perf,
                body,
                span: sp(e.span()),
            })
        })
        .labelled("function")
        .boxed();

    let item_other = other.map_with(|_, e| Item::Other { span: sp(e.span()) });
    let item = choice((
        function.map(|f| vec![f]),
        var_decls
            .then_ignore(just(Tok::Semi))
            .map(|v| v.into_iter().map(Item::Var).collect()),
        item_other.map(|i| vec![i]),
    ))
    .recover_with(via_parser(
        // Skip to the next `;` at this level, or past the next balanced `{ … }` (a function body).
        choice((
            balanced.clone().map(|_| true),
            any()
                .and_is(choice((just(Tok::Semi), just(Tok::LBrace))).not())
                .to(false),
        ))
        .repeated()
        .at_least(1)
        .collect::<Vec<bool>>()
        .then(just(Tok::Semi).or_not())
        .map_with(|_, e| vec![Item::Other { span: sp(e.span()) }]),
    ));

    let version = dot(".version")
        .ignore_then(select! { Tok::Float(s) => s, Tok::Int(s) => s })
        .try_map(|s, span| {
            let (a, b) = s.split_once('.').unwrap_or((s, "0"));
            match (a.parse(), b.parse()) {
                (Ok(major), Ok(minor)) => Ok((major, minor)),
                _ => Err(Rich::custom(
                    span,
                    format!("`{s}` is not a PTX version (expected e.g. 8.5)"),
                )),
            }
        })
        .map_with(|(major, minor), e| ModuleDirective::Version {
            major,
            minor,
            span: sp(e.span()),
        });
    let target = dot(".target")
        .ignore_then(name.separated_by(just(Tok::Comma)).at_least(1).collect::<Vec<_>>())
        .map_with(|targets, e| ModuleDirective::Target {
            targets,
            span: sp(e.span()),
        });
    let address_size = dot(".address_size")
        .ignore_then(uint32)
        .map_with(|bits, e| ModuleDirective::AddressSize {
            bits,
            span: sp(e.span()),
        });
    let directive = choice((version, target, address_size));

    enum Top<'a> {
        D(ModuleDirective<'a>),
        I(Vec<Item<'a>>),
    }
    choice((directive.map(Top::D), item.map(Top::I)))
        .repeated()
        .collect::<Vec<_>>()
        .then_ignore(end())
        .map(|tops| {
            let mut m = Module {
                directives: vec![],
                items: vec![],
            };
            for t in tops {
                match t {
                    Top::D(d) => m.directives.push(d),
                    Top::I(i) => m.items.extend(i),
                }
            }
            m
        })
}
