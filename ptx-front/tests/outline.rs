//! Lazy loading's outline as a property over real PTX: for the repository's test files and the shared
//! corpora (`../shared/corpus`, see its README; skipped with a message when absent), the outline finds
//! the module's kernels, every kernel's part (`Outline::part`) parses to the same function as the
//! whole text does, and the checker's errors in a part (a kernel's, or the variables') are errors the
//! whole text has, at the same places. A text the checker accepts has a complete outline.

use ptx_front::ast::{FnKind, Item, Module};
use ptx_front::outline::Outline;
mod common;

use common::ptx_files_under;
use std::path::Path;

fn function<'m, 'a>(m: &'m Module<'a>, name: &str) -> Option<&'m ptx_front::ast::Function<'a>> {
    m.items.iter().find_map(|i| match i {
        Item::Function(f) if f.name.text == name && f.body.is_some() => Some(f),
        _ => None,
    })
}

/// One line per broken rule, and the number of kernels looked at.
fn sweep(root: &Path) -> (usize, usize, Vec<String>) {
    let files = ptx_files_under(root);
    let (mut kernels, mut failures) = (0, vec![]);
    let opts = ptx_front::check::Options::default();
    for f in &files {
        let src = String::from_utf8_lossy(&std::fs::read(f).expect("readable file")).into_owned();
        let name = f.strip_prefix(root).unwrap_or(f).display().to_string();
        let (whole, diags) = ptx_front::parse_and_check(&src);
        let errors: Vec<_> = diags
            .iter()
            .filter(|d| d.is_error())
            .map(|d| (d.code, d.span))
            .collect();
        let outline = Outline::new(&src);
        if errors.is_empty() && !outline.complete {
            failures.push(format!("{name}: the outline of a correct text is incomplete"));
            continue;
        }
        if !outline.complete {
            continue;
        }
        let entries: Vec<&str> = whole
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Function(f) if f.kind == FnKind::Entry && f.body.is_some() => Some(f.name.text),
                _ => None,
            })
            .collect();
        if outline.kernels(&src).map(|k| k.1).collect::<Vec<_>>() != entries {
            failures.push(format!("{name}: the outline's kernels are not the module's"));
            continue;
        }
        let (_, d) = ptx_front::parse_and_check_parts(&src, &outline.variables_part(&src), &opts);
        if let Some(e) = d.iter().find(|d| d.is_error() && !errors.contains(&(d.code, d.span))) {
            failures.push(format!("{name}: the variables' part: {}", e.one_line(&name, &src)));
        }
        for (item, kernel) in outline.kernels(&src) {
            kernels += 1;
            let parts = outline.part(&src, [item]);
            let (m, d) = ptx_front::parse_and_check_parts(&src, &parts, &opts);
            if let Some(e) = d.iter().find(|d| d.is_error() && !errors.contains(&(d.code, d.span))) {
                failures.push(format!("{name}: `{kernel}`'s part: {}", e.one_line(&name, &src)));
            } else if errors.is_empty() && function(&m, kernel) != function(&whole, kernel) {
                failures.push(format!("{name}: `{kernel}`'s part parses to another function"));
            }
        }
    }
    (files.len(), kernels, failures)
}

fn assert_parts_agree(root: &Path, min_kernels: usize) {
    let (n, kernels, failures) = sweep(root);
    assert!(
        kernels >= min_kernels,
        "only {kernels} kernels in {n} files under {}",
        root.display()
    );
    assert!(
        failures.is_empty(),
        "{} failures in {n} files under {}:\n{}",
        failures.len(),
        root.display(),
        failures.join("\n")
    );
}

#[test]
fn test_files_parts_agree() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests");
    for dir in ["ptx", "ptx-host", "ptx-errors", "sanitize"] {
        assert_parts_agree(&tests.join(dir), 5);
    }
}

#[test]
fn corpus_parts_agree() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus");
    if !corpus.is_dir() {
        eprintln!("skipped: {} is absent", corpus.display());
        return;
    }
    assert_parts_agree(&corpus, 1000);
}
