//! ptx-front: PTX text to a checked syntax tree, with rich diagnostics. No LLVM here.

pub mod ast;
pub mod check;
pub mod consteval;
pub mod diag;
pub mod in_step;
pub mod intervals;
pub mod ir;
pub mod isa;
pub mod lexer;
pub mod limits;
pub mod lints;
pub mod mix;
pub mod outline;
pub mod parser;
pub mod printer;
pub mod report;
pub mod scope;
pub mod span;
pub mod target;
pub mod types;

pub use diag::{Code, Diagnostic, Severity};
pub use parser::{parse, parse_fragment, parse_parts};
pub use printer::print;
use span::Span;
pub use target::Target;

/// One stage of the front end, run on a module's text.
pub type Stage = fn(&str);

/// The front end's stages as the benchmarks measure them, one definition for `ptx-jit bench parse`
/// and the criterion benchmark (`benches/parse.rs`): parsing; parsing and checking for errors;
/// and all that `ptx-jit lint` does (errors and warnings).
pub const STAGES: [(&str, Stage); 3] = [
    ("parse", |s| drop(std::hint::black_box(parse(s)))),
    ("parse + check", |s| {
        let errors_only = check::Options {
            no_lints: true,
            ..Default::default()
        };
        drop(std::hint::black_box(parse_and_check_with(s, &errors_only)))
    }),
    ("lint", |s| drop(std::hint::black_box(parse_and_check(s)))),
];

/// Parses and checks. The module is returned even with errors so callers can show all diagnostics.
pub fn parse_and_check(src: &str) -> (ast::Module<'_>, Vec<Diagnostic>) {
    parse_and_check_with(src, &check::Options::default())
}

/// Fragment mode (`ptx-jit lint --fragment`): statements may stand outside functions and names are not
/// resolved.
pub fn parse_and_check_fragment(src: &str) -> (ast::Module<'_>, Vec<Diagnostic>) {
    parse_and_check_with(
        src,
        &check::Options {
            fragment: true,
            ..check::Options::default()
        },
    )
}

pub fn parse_and_check_with<'a>(src: &'a str, opts: &check::Options) -> (ast::Module<'a>, Vec<Diagnostic>) {
    let whole = [Span::new(0, src.len())];
    let (m, diags) = if opts.fragment {
        parser::parse_fragment(src)
    } else {
        parser::parse(src)
    };
    check_parsed(src, &whole, m, diags, opts)
}

/// Parses and checks the parts of `src` an [`outline::Outline`] gave (one kernel and what it needs),
/// with the spans of the whole text.
pub fn parse_and_check_parts<'a>(
    src: &'a str,
    parts: &[Span],
    opts: &check::Options,
) -> (ast::Module<'a>, Vec<Diagnostic>) {
    let (m, diags) = parser::parse_parts(src, parts);
    check_parsed(src, parts, m, diags, opts)
}

/// Checks `m`, parsed from `parts` of `src` with syntax errors `diags` (as [`parse_parts`] gives
/// them): [`parse_and_check_parts`] in two steps, for callers that time them apart.
pub fn check_parsed<'a>(
    src: &'a str,
    parts: &[Span],
    m: ast::Module<'a>,
    mut diags: Vec<Diagnostic>,
    opts: &check::Options,
) -> (ast::Module<'a>, Vec<Diagnostic>) {
    // When nothing parsed, module-level checks would only pile onto the syntax errors.
    if !(diags.iter().any(Diagnostic::is_error) && m.items.is_empty() && m.directives.is_empty()) {
        diags.extend(check::check_with(&m, opts));
    }
    let flagged: Vec<Span> = diags.iter().map(|d| d.span).collect();
    diags.extend(
        parts
            .iter()
            .flat_map(|p| {
                non_ascii(&src[p.range()])
                    .map(move |s| Span::new((p.start + s.start) as usize, (p.start + s.end) as usize))
            })
            .filter(|s| !flagged.iter().any(|f| f.start <= s.start && s.start < f.end))
            .map(|s| {
                Diagnostic::warning(Code::P0509, s, "non-ASCII text: NVIDIA's driver JIT refuses the module")
                    .label("not ASCII")
                    .note("ptxas accepts it, but `cuModuleLoadData` on a GPU fails")
                    .help("spell it in ASCII, or remove it")
            }),
    );
    diags.sort_by_key(|d| (d.span.start, d.span.end));
    (m, diags)
}

/// The first run of non-ASCII characters on each line that has one.
fn non_ascii(src: &str) -> impl Iterator<Item = Span> + '_ {
    // Nearly all PTX is ASCII, which `is_ascii` confirms a word at a time; only other text is split
    // into lines. Byte positions are char boundaries here: a run of non-ASCII bytes starts and ends
    // at one.
    let text = if src.is_ascii() { "" } else { src };
    let mut at = 0;
    text.split_inclusive('\n').filter_map(move |line| {
        let start = at;
        at += line.len();
        let bytes = line.as_bytes();
        let first = bytes.iter().position(|b| !b.is_ascii())?;
        let len = bytes[first..]
            .iter()
            .position(u8::is_ascii)
            .unwrap_or(bytes.len() - first);
        Some(Span::new(start + first, start + first + len))
    })
}
