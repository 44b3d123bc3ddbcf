//! Tokens of PTX text. Logos does the scanning; the recursive-descent parser reads the token vector.

use crate::span::Span;
use logos::Logos;

#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[logos(skip r"[ \t\r\n\f]+")]
#[logos(skip r"//[^\n]*")]
pub enum Tok<'a> {
    /// `/* … */`, skipped; an unterminated one is an error token.
    #[token("/*", block_comment)]
    BlockComment,
    /// `.u32`, `.shared::cta`, `.entry`: directives and modifiers share one shape.
    /// `.1d`…`.5d` and `.2dms` are texture and tensor dimensions.
    #[regex(r"\.[A-Za-z_][A-Za-z0-9_$]*(::[A-Za-z0-9_$]+)*")]
    #[regex(r"\.[1-5]d(ms)?")]
    Dot(&'a str),
    /// `@@DWARF …` (and other `@@` lines such as `@@debug_info`): a line of debug data in old nvcc
    /// output, kept verbatim.
    #[regex(r"@@[A-Za-z_][^\n]*")]
    Dwarf(&'a str),
    #[regex(r"[A-Za-z_$][A-Za-z0-9_$]*")]
    #[regex(r"%[A-Za-z0-9_$]+")]
    Ident(&'a str),
    #[regex(r"0[fF][0-9A-Fa-f]{8}")]
    HexF32(&'a str),
    #[regex(r"0[dD][0-9A-Fa-f]{16}")]
    HexF64(&'a str),
    /// Decimal, octal (leading 0), hex (`0x`) or binary (`0b`), with an optional `U` suffix.
    #[regex(r"[0-9]+U?")]
    #[regex(r"0[xX][0-9A-Fa-f]+U?")]
    #[regex(r"0[bB][01]+U?")]
    Int(&'a str),
    #[regex(r"[0-9]+\.[0-9]*([eE][+-]?[0-9]+)?")]
    #[regex(r"\.[0-9]+([eE][+-]?[0-9]+)?")]
    #[regex(r"[0-9]+[eE][+-]?[0-9]+")]
    Float(&'a str),
    #[regex(r#""([^"\\\n]|\\.)*""#)]
    Str(&'a str),
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("<<")]
    Shl,
    #[token(">>")]
    Shr,
    #[token("<=")]
    Le,
    #[token(">=")]
    Ge,
    #[token("==")]
    EqEq,
    #[token("!=")]
    Ne,
    #[token("&&")]
    AndAnd,
    #[token("||")]
    OrOr,
    #[token("%")]
    Percent,
    #[token("<")]
    Lt,
    #[token(">")]
    Gt,
    #[token(",")]
    Comma,
    #[token(";")]
    Semi,
    #[token(":")]
    Colon,
    #[token("@")]
    At,
    #[token("!")]
    Bang,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("=")]
    Eq,
    #[token("|")]
    Pipe,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("~")]
    Tilde,
    #[token("&")]
    Amp,
    #[token("^")]
    Caret,
    #[token("?")]
    Question,
    /// Anything the lexer does not know; the parser reports it with its span.
    Error,
    /// Appended once after the last token so the parser never runs off the end.
    Eof,
}

impl std::fmt::Display for Tok<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            Tok::Dot(s) | Tok::Ident(s) | Tok::HexF32(s) | Tok::HexF64(s) | Tok::Int(s) | Tok::Dwarf(s) => s,
            Tok::Float(s) | Tok::Str(s) => s,
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::Shl => "<<",
            Tok::Shr => ">>",
            Tok::Le => "<=",
            Tok::Ge => ">=",
            Tok::EqEq => "==",
            Tok::Ne => "!=",
            Tok::AndAnd => "&&",
            Tok::OrOr => "||",
            Tok::Percent => "%",
            Tok::Lt => "<",
            Tok::Gt => ">",
            Tok::Comma => ",",
            Tok::Semi => ";",
            Tok::Colon => ":",
            Tok::At => "@",
            Tok::Bang => "!",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Eq => "=",
            Tok::Pipe => "|",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::Tilde => "~",
            Tok::Amp => "&",
            Tok::Caret => "^",
            Tok::Question => "?",
            Tok::Error => "<invalid character>",
            Tok::BlockComment => "/* */",
            Tok::Eof => "end of input",
        };
        f.write_str(s)
    }
}

fn block_comment<'a>(lex: &mut logos::Lexer<'a, Tok<'a>>) -> logos::FilterResult<(), ()> {
    match lex.remainder().find("*/") {
        Some(end) => {
            lex.bump(end + 2);
            logos::FilterResult::Skip
        }
        None => {
            lex.bump(lex.remainder().len());
            logos::FilterResult::Error(())
        }
    }
}

/// Lexes the whole text, ending with one `Tok::Eof`. Unknown characters become `Tok::Error` so the
/// parser can report them in place.
pub fn lex(src: &str) -> Vec<(Tok<'_>, Span)> {
    lex_parts(src, &[Span::new(0, src.len())])
}

/// Lexes the given parts of the text, in order, as if they were the whole text; spans are those of
/// the whole text, and `Tok::Eof` sits at the end of the last part.
pub fn lex_parts<'a>(src: &'a str, parts: &[Span]) -> Vec<(Tok<'a>, Span)> {
    let len: usize = parts.iter().map(|p| p.range().len()).sum();
    // About one token per four bytes in nvcc output, a third of the files more: reserve for one per
    // three, so the vector is not copied as it grows (pages never written cost nothing).
    let mut out = Vec::with_capacity(len / 3 + 16);
    for p in parts {
        let mut lx = Tok::lexer(&src[p.range()]);
        while let Some(t) = lx.next() {
            let r = lx.span();
            out.push((
                t.unwrap_or(Tok::Error),
                Span::new(p.start as usize + r.start, p.start as usize + r.end),
            ));
        }
    }
    let end = parts.last().map_or(0, |p| p.end);
    out.push((Tok::Eof, Span { start: end, end }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok<'_>> {
        lex(s).into_iter().map(|(t, _)| t).filter(|t| *t != Tok::Eof).collect()
    }

    #[test]
    fn instruction_tokens() {
        assert_eq!(
            toks("ld.global.v2.f32 {%f1, _}, [%rd1+-4]; // c"),
            vec![
                Tok::Ident("ld"),
                Tok::Dot(".global"),
                Tok::Dot(".v2"),
                Tok::Dot(".f32"),
                Tok::LBrace,
                Tok::Ident("%f1"),
                Tok::Comma,
                Tok::Ident("_"),
                Tok::RBrace,
                Tok::Comma,
                Tok::LBracket,
                Tok::Ident("%rd1"),
                Tok::Plus,
                Tok::Minus,
                Tok::Int("4"),
                Tok::RBracket,
                Tok::Semi,
            ]
        );
    }

    #[test]
    fn literals() {
        assert_eq!(
            toks("0f3F800000 0d3FF0000000000000 0x1fU 017 0b101 1.5e3 .5 $L__BB0_1: .shared::cta"),
            vec![
                Tok::HexF32("0f3F800000"),
                Tok::HexF64("0d3FF0000000000000"),
                Tok::Int("0x1fU"),
                Tok::Int("017"),
                Tok::Int("0b101"),
                Tok::Float("1.5e3"),
                Tok::Float(".5"),
                Tok::Ident("$L__BB0_1"),
                Tok::Colon,
                Tok::Dot(".shared::cta"),
            ]
        );
    }

    #[test]
    fn block_comments() {
        assert_eq!(
            toks("a /*x*/ b /* * ** / */ c /**/"),
            vec![Tok::Ident("a"), Tok::Ident("b"), Tok::Ident("c")]
        );
        assert_eq!(toks("a /* never closed"), vec![Tok::Ident("a"), Tok::Error]);
    }

    #[test]
    fn unknown_character_is_an_error_token() {
        assert_eq!(toks("add # x"), vec![Tok::Ident("add"), Tok::Error, Tok::Ident("x")]);
    }
}
