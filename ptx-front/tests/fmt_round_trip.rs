//! `ptx-jit fmt` as a property over real PTX: for the repository's test files and the shared corpora
//! (`../shared/corpus`, see its README; skipped with a message when absent), the printed text parses
//! without errors to the same tree, the checker finds the same problems in it (files up to 64 KiB),
//! and printing it again changes nothing. Files with syntax errors (which `fmt` refuses) are held to
//! the same rules for the statements that did parse.

use ptx_front::printer::shape;
mod common;

use common::ptx_files_under;
use std::path::Path;

/// Files up to this size are also checked, twice; the larger ones (a sixth of the corpus's files, most of
/// its bytes) would make this test minutes long in a debug build.
const CHECKED_BYTES: usize = 64 * 1024;

/// The codes and messages of the checker's errors and warnings, in order; positions aside.
fn findings(src: &str) -> Vec<(ptx_front::Code, String)> {
    ptx_front::parse_and_check(src)
        .1
        .into_iter()
        .map(|d| (d.code, d.message))
        .collect()
}

/// One line for each file whose printed form breaks a rule, and the number of files looked at.
fn sweep(root: &Path) -> (usize, Vec<String>) {
    let files = ptx_files_under(root);
    let mut failures = vec![];
    for f in &files {
        let src = String::from_utf8_lossy(&std::fs::read(f).expect("readable file")).into_owned();
        let name = f.strip_prefix(root).unwrap_or(f).display().to_string();
        let (m, diags) = ptx_front::parse(&src);
        let printed = ptx_front::print(&m);
        let (again, d2) = ptx_front::parse(&printed);
        if let Some(e) = d2.first() {
            failures.push(format!(
                "{name}: the printed text does not parse: {}",
                e.one_line("printed", &printed)
            ));
            continue;
        }
        if shape(&again) != shape(&m) {
            failures.push(format!("{name}: the printed text parses to another tree"));
        } else if ptx_front::print(&again) != printed {
            failures.push(format!("{name}: printing the printed text changes it"));
        } else if diags.is_empty() && src.len() <= CHECKED_BYTES && findings(&printed) != findings(&src) {
            failures.push(format!("{name}: the checker judges the printed text differently"));
        }
    }
    (files.len(), failures)
}

fn assert_round_trips(root: &Path, min_files: usize) {
    let (n, failures) = sweep(root);
    assert!(n >= min_files, "only {n} files under {}", root.display());
    assert!(
        failures.is_empty(),
        "{} of {n} files under {} fail:\n{}",
        failures.len(),
        root.display(),
        failures.join("\n")
    );
}

#[test]
fn test_files_round_trip() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests");
    assert_round_trips(&tests.join("ptx"), 20);
    assert_round_trips(&tests.join("ptx-host"), 5);
    assert_round_trips(&tests.join("ptx-errors"), 10);
}

#[test]
fn corpus_round_trips() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus");
    if !corpus.is_dir() {
        eprintln!("skipped: {} is absent", corpus.display());
        return;
    }
    assert_round_trips(&corpus, 800);
}

/// xorshift64: the same cases on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
    fn pick<'s>(&mut self, v: &[&'s str]) -> &'s str {
        v[self.below(v.len())]
    }
}

/// A random constant expression of at most `depth` levels, with names (which keep it from being
/// folded) when `names`.
fn expression(r: &mut Rng, depth: usize, names: bool) -> String {
    if depth == 0 || r.below(4) == 0 {
        if names && r.below(3) == 0 {
            return r.pick(&["a", "b", "generic(a)", "0xff(a)"]).into();
        }
        let literals = [
            "0",
            "7",
            "0x7fU",
            "017",
            "0b101",
            "2.5",
            "0f3F800000",
            "0dBFF0000000000000",
            "9223372036854775807",
            "9223372036854775808",
            "18446744073709551615",
        ];
        return r.pick(&literals).into();
    }
    let mut sub = || expression(r, depth - 1, names);
    let (a, b, c) = (sub(), sub(), sub());
    match r.below(7) {
        0..=2 => {
            let ops = [
                "+", "-", "*", "/", "%", "<<", ">>", "<", ">=", "==", "!=", "&", "^", "|", "&&", "||",
            ];
            format!("{a}{}{b}", r.pick(&ops))
        }
        3 => format!("({a})"),
        4 => format!("{}{a}", r.pick(&["-", "+", "!", "~", "- ", "(.s64)", "(.u64)"])),
        5 => format!("{a}?{b}:{c}"),
        _ => format!("{}{a}{}", "(".repeat(1 + r.below(4)), ")".repeat(1 + r.below(4))),
    }
}

/// Expression-heavy statements, some with a character inserted or removed: whatever parses must print
/// to text that parses to the same tree and prints the same. (This found `[~0]`, a list of one operand
/// that printed as the address `[-1]`.) `FMT_CASES` sets the number of cases.
#[test]
fn random_expressions_round_trip() {
    let cases = std::env::var("FMT_CASES").map_or(20_000, |n| n.parse().expect("FMT_CASES is a number"));
    let header = ".version 8.5\n.target sm_80\n.address_size 64\n.global .u64 a;\n.global .u64 b;\n";
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut parsed, mut failures) = (0, vec![]);
    for _ in 0..cases {
        let depth = 1 + r.below(6);
        let e = expression(&mut r, depth, true);
        let depth = 1 + r.below(6);
        let n = expression(&mut r, depth, false);
        let body = match r.below(10) {
            0 => format!(".global .u64 p = {e};"),
            1 => format!(".global .u32 p[2][2] = {{{{{e}, {n}}}, {{{n}}}}};"),
            2 => format!(".section .debug_info\n{{\n.b64 {e}, {n}\n}}"),
            k => {
                let inst = match k {
                    3 => format!("add.s64 %rd1, %rd2, {n};"),
                    4 => format!("ld.global.u64 %rd1, [%rd2{}{n}];", r.pick(&["+", "-", "+-"])),
                    5 => format!("ld.global.u64 %rd1, [{n}];"),
                    6 => format!("mov.u64 %rd1, a{}{n};", r.pick(&["+", "-"])),
                    7 => format!("call f, ({n}, %rd1);"),
                    8 => format!("mov.b64 {{%rd1, {n}}}, %rd2;"),
                    _ => format!("add.f64 %fd1, %fd2, {n};"),
                };
                format!(".entry k\n{{\n.reg .b64 %rd<3>;\n.reg .f64 %fd<3>;\n{inst}\n}}")
            }
        };
        let mut src = format!("{header}{body}\n");
        for _ in 0..r.below(3) {
            let at = header.len() + r.below(src.len() - header.len());
            if r.below(3) == 0 {
                src.remove(at);
            } else {
                src.insert_str(
                    at,
                    r.pick(&[
                        "(", ")", "-", "+", "~", "!", ",", "U", "0", "(.s64)", "?", ":", "[", "]", "{", "}",
                    ]),
                );
            }
        }
        let (m, d) = ptx_front::parse(&src);
        if !d.is_empty() {
            continue;
        }
        parsed += 1;
        let printed = ptx_front::print(&m);
        let (again, d2) = ptx_front::parse(&printed);
        let why = if let Some(e) = d2.first() {
            e.one_line("printed", &printed)
        } else if shape(&again) != shape(&m) {
            "parses to another tree".into()
        } else if ptx_front::print(&again) != printed {
            "printing it again changes it".into()
        } else {
            continue;
        };
        failures.push(format!("{why}:\n{}", &src[header.len()..]));
    }
    assert!(parsed * 10 > cases, "only {parsed} of {cases} cases parse");
    assert!(
        failures.is_empty(),
        "{} failures, the first:\n{}",
        failures.len(),
        failures[0]
    );
}
