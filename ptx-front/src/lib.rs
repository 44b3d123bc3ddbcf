//! ptx-front: PTX text to a checked syntax tree, with rich diagnostics. No LLVM here.

pub mod ast;
pub mod check;
pub mod diag;
pub mod isa;
pub mod lexer;
pub mod parser;
pub mod scope;
pub mod span;
pub mod target;
pub mod types;

pub use diag::{Code, Diagnostic, Severity};
pub use parser::parse;
pub use target::Target;

/// Parses and checks. The module is returned even with errors so callers can show all diagnostics.
pub fn parse_and_check(src: &str) -> (ast::Module<'_>, Vec<Diagnostic>) {
    let (m, mut diags) = parser::parse_module(src);
    let m = match m {
        Some(m) => {
            diags.extend(check::check(&m));
            m
        }
        None => ast::Module {
            directives: vec![],
            items: vec![],
        },
    };
    diags.sort_by_key(|d| (d.span.start, d.span.end));
    (m, diags)
}
