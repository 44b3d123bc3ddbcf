//! The shared corpora (`../shared/corpus`, see its README): every file parses and checks without an
//! error and round-trips through the printer, and every example of the PTX ISA manual is judged as the
//! corpus marks it. Each test skips with a message when the corpus is absent.

use ptx_front::printer::shape;
use ptx_jit_tests::{corpus, ptx_files_under};

/// Files that parse and round-trip but break a rule of the manual, with the error the checker must
/// report for them (file, code, line).
const INVALID: &[(&str, &str, usize)] = &[
    // `sust.b.3d` needs PTX 3.0 (manual, sust: PTX ISA notes); the file declares 2.1.
    ("ptx__synthetic__texture.ptx", "P0301", 37),
    // Calls through Ocelot's intrinsic prototypes: the callee is a prototype label, not a function.
    ("ptx__synthetic__register-calling-convention.ptx", "P0201", 37),
];

/// Parses, checks and round-trips every file; returns one line per failure.
fn sweep(dir: &str) -> Option<(usize, Vec<String>)> {
    let root = corpus(dir)?;
    let files = ptx_files_under(&root);
    let mut failures = vec![];
    for f in &files {
        let bytes = std::fs::read(f).expect("readable file");
        let src = String::from_utf8_lossy(&bytes);
        let name = f.strip_prefix(&root).unwrap_or(f).display().to_string();
        let (m, diags) = ptx_front::parse_and_check(&src);
        let syntax = diags
            .iter()
            .find(|d| matches!(d.code, ptx_front::Code::P0001 | ptx_front::Code::P0002));
        let first = diags.iter().find(|d| d.is_error());
        match (INVALID.iter().find(|x| name.ends_with(x.0)), syntax.or(first)) {
            (_, Some(e)) if syntax.is_some() => failures.push(e.one_line(&name, &src)),
            (Some(&(_, code, line)), Some(e)) => {
                let at = ptx_front::span::line_col(&src, e.span.start).0;
                if e.code.as_str() != code || at != line {
                    failures.push(format!(
                        "{name}: expected {code} on line {line}, got {}",
                        e.one_line(&name, &src)
                    ));
                }
            }
            (Some(&(_, code, line)), None) => {
                failures.push(format!("{name}: expected {code} on line {line}, got none"))
            }
            (None, Some(e)) => failures.push(e.one_line(&name, &src)),
            (None, None) => {}
        }
        let printed = ptx_front::print(&m);
        let (again, d2) = ptx_front::parse(&printed);
        if let Some(e) = d2.first() {
            failures.push(format!(
                "{name}: printed text does not parse: {}",
                e.one_line("printed", &printed)
            ));
        } else if shape(&again) != shape(&m) {
            failures.push(format!("{name}: printed text parses to a different tree"));
        }
    }
    Some((files.len(), failures))
}

fn assert_clean(dir: &str, min_files: usize) {
    let Some((n, failures)) = sweep(dir) else { return };
    assert!(n >= min_files, "only {n} files in {dir}");
    assert!(
        failures.is_empty(),
        "{} of {n} files in {dir} fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn nvcc_corpus_parses_checks_and_round_trips() {
    assert_clean("nvcc", 500);
}

#[test]
fn ocelot_corpus_parses_checks_and_round_trips() {
    assert_clean("ocelot", 100);
}

#[test]
fn zluda_corpus_parses_checks_and_round_trips() {
    assert_clean("zluda-run", 140);
}

/// The manual's examples in fragment mode: the ones the corpus marks suspect (typos, elisions, invalid
/// forms) must get an error, all others none.
#[test]
fn isa_manual_examples_in_fragment_mode() {
    let Some(dir) = corpus("isa-examples") else { return };
    let text = std::fs::read_to_string(dir.join("examples.json")).expect("examples.json");
    let examples: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let examples = examples.as_array().expect("an array of records");
    // The examples ptxas refuses though the corpus does not mark them suspect.
    let refused = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/refused_manual_examples.txt"))
        .expect("tests/refused_manual_examples.txt");
    let refused: Vec<&str> = refused.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(examples.len() >= 200);
    let (mut wrong_errors, mut missed) = (vec![], vec![]);
    for ex in examples {
        let id = ex["id"].as_str().expect("id");
        let code = ex["code"].as_str().expect("code");
        let refused = refused
            .iter()
            .find_map(|l| l.strip_prefix(id).filter(|why| why.starts_with(' ')));
        let suspect = ex["suspect"].as_str().or(refused);
        let (_, diags) = ptx_front::parse_and_check_fragment(code);
        let first = diags.iter().find(|d| d.is_error());
        match (suspect, first) {
            (None, Some(e)) => wrong_errors.push(format!("{id} ({}): {}", ex["section"], e.one_line(id, code))),
            (Some(why), None) => missed.push(format!("{id} ({}): no error, but suspect: {why}", ex["section"])),
            _ => {}
        }
    }
    assert!(
        wrong_errors.is_empty() && missed.is_empty(),
        "{} valid examples rejected:\n{}\n{} suspect examples accepted:\n{}",
        wrong_errors.len(),
        wrong_errors.join("\n"),
        missed.len(),
        missed.join("\n")
    );
}
