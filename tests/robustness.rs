//! Bad input never panics: thousands of single-point mutations of the test kernels (byte flips,
//! deletions, insertions of PTX punctuation and non-ASCII text, truncations) go through parse, check,
//! diagnostics rendering and, when they still check cleanly, both lowerings.

use ptx_jit_tests::{ptx_files, Rng};

const INSERTS: &[&str] = &[
    "{",
    "}",
    ";",
    ",",
    "[",
    "]",
    "(",
    ")",
    "%r",
    ".u32",
    ".global",
    "@",
    "!",
    "<",
    ">",
    "0x",
    "0f",
    "é",
    "€",
    "\"",
    "/*",
    "// ",
    "\n",
    "-",
    "+",
    "::",
    ".",
    "_",
    "%tid.x",
    "bar.sync 0;",
    "ret;",
];

fn mutate(src: &str, rng: &mut Rng) -> String {
    let mut s = src.as_bytes().to_vec();
    let at = rng.below(s.len());
    match rng.below(4) {
        0 => {
            s[at] = b" .;,{}[]()%<>0123456789abcdefxyz_\n"
                .get(rng.below(35))
                .copied()
                .unwrap_or(b'x');
        }
        1 => {
            let n = 1 + rng.below(8);
            s.drain(at..(at + n).min(s.len()));
        }
        2 => {
            let ins = INSERTS[rng.below(INSERTS.len())].as_bytes();
            s.splice(at..at, ins.iter().copied());
        }
        _ => s.truncate(at),
    }
    String::from_utf8_lossy(&s).into_owned()
}

#[test]
fn mutated_ptx_never_panics() {
    let files: Vec<String> = ptx_files("ptx")
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let seed = std::env::var("ROBUSTNESS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15);
    let mut rng = Rng(seed);
    let arch = ptx_jit::nvptx::arch::validate("sm_80", None).unwrap();
    let (mut rejected, mut lowered) = (0, 0);
    for i in 0..20000 {
        let src = mutate(&files[i % files.len()], &mut rng);
        let (_, diags) = ptx_front::parse_and_check(&src);
        for d in &diags {
            let _ = d.render("mutant.ptx", &src, false);
            let _ = d.one_line("mutant.ptx", &src);
        }
        if diags.iter().any(|d| d.is_error()) {
            rejected += 1;
            continue;
        }
        // Still valid PTX: both lowerings must succeed or explain themselves, never panic.
        let (m, _) = ptx_jit::front(&src).unwrap();
        let _ = ptx_jit::jit::host::host_ir(&m, false);
        let _ = ptx_jit::nvptx::emit(&m, &arch, 0, ptx_jit::nvptx::Emit::Llvm);
        lowered += 1;
    }
    // The mutations must exercise both paths, or this test proves little.
    eprintln!("{rejected} mutants rejected with diagnostics, {lowered} lowered");
    assert!(rejected > 5000, "only {rejected} mutants were rejected");
    assert!(lowered > 100, "only {lowered} mutants still checked cleanly");
}

/// Every form of the ISA table (`ptx_jit::cli::coverage::forms`: each value of each modifier group, operands
/// declared with the types the checker expects): each parses, and whatever checks cleanly must lower
/// for the host and generate NVPTX code for six targets without a panic or an LLVM abort (an
/// unsupported form is a diagnostic). Every manual section has a form that checks.
#[test]
fn every_table_form_lowers_or_explains() {
    let archs: Vec<_> = ["sm_30", "sm_50", "sm_70", "sm_90", "sm_90a", "sm_100a"]
        .iter()
        .map(|a| ptx_jit::nvptx::arch::validate(a, None).unwrap())
        .collect();
    let forms = ptx_jit::cli::coverage::forms();
    let mut checked_sections = std::collections::HashSet::new();
    let mut lowered = 0;
    for f in &forms {
        let (_, d) = ptx_front::parse(&f.kernel);
        assert!(d.is_empty(), "{}: {:?}", f.kernel, d);
        let Ok((m, _)) = ptx_jit::front(&f.kernel) else {
            continue;
        };
        checked_sections.insert(f.section);
        let _ = ptx_jit::jit::host::host_ir(&m, false);
        // Full code generation: LLVM aborts on forms it cannot select, so this proves there are none.
        for arch in &archs {
            let _ = ptx_jit::nvptx::emit(&m, arch, 0, ptx_jit::nvptx::Emit::Ptx);
        }
        lowered += 1;
    }
    assert!(forms.len() > 1500, "only {} forms", forms.len());
    assert!(lowered > 1500, "only {lowered} forms checked cleanly");
    let missing: Vec<_> = ptx_front::isa::SECTIONS
        .iter()
        .filter(|s| !checked_sections.contains(s.number))
        .map(|s| s.number)
        .collect();
    assert!(missing.is_empty(), "sections without a checked form: {missing:?}");
}

/// Inputs built to exhaust the stack or memory get a diagnostic: deep blocks, parentheses, operators
/// and negations, and register ranges in the billions.
#[test]
fn pathological_nesting_and_sizes_are_diagnostics() {
    let head = ".version 8.5\n.target sm_90\n.address_size 64\n";
    let n = 20_000;
    let cases = [
        format!("{head}.entry k {{{}ret;{}}}\n", "{".repeat(n), "}".repeat(n)),
        format!("{head}.global .u64 x = {}1{};\n", "(".repeat(n), ")".repeat(n)),
        format!(
            "{head}.entry k {{ .reg .pred %p; not.pred %p, {}%p; }}\n",
            "!".repeat(n)
        ),
        format!("{head}.global .u64 x = {}1;\n", "1+".repeat(10 * n)),
        format!(
            "{head}.entry k {{ .reg .b32 %r; mov.u32 %r, {}1; }}\n",
            "-".repeat(5 * n)
        ),
        format!("{head}.global .u64 x = {{{}1{}}};\n", "{".repeat(n), "}".repeat(n)),
        format!("{head}.entry k {{ .reg .b32 %r<4000000000>; .reg .b32 %q<4000000000>; ret; }}\n"),
    ];
    for src in &cases {
        let (_, d) = ptx_front::parse_and_check(src);
        assert!(
            d.iter().any(|d| d.is_error()),
            "no error for {}…",
            &src[head.len()..head.len() + 40]
        );
    }
}
