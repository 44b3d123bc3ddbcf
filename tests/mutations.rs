//! Single-point corruptions of valid PTX must be reported as errors on the corrupted line: a misspelt
//! modifier, a register of the wrong type, an undefined register or label, a missing operand, and an
//! instruction above the module's target. Valid inputs are the test kernels and, when present, a
//! sample of the shared nvcc and ZLUDA corpora. With `PTXAS` set, every corruption ptxas rejects must
//! be rejected by us too, on ptxas's line.

use ptx_front::ast::{Instruction, Item, Operand, Statement};
use ptx_front::span::line_col;
use ptx_front::types::Type;
use ptx_jit_tests::{ptx_files, Rng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Modifier,
    OperandType,
    UndefinedRegister,
    UndefinedLabel,
    MissingOperand,
    AboveTarget,
}

struct Corruption {
    kind: Kind,
    text: String,
    /// 1-based line of the corrupted statement.
    line: usize,
}

fn inputs() -> Vec<PathBuf> {
    let mut v = ptx_files("ptx");
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus");
    for (dir, every) in [("nvcc", 12), ("zluda-run", 3)] {
        let Ok(rd) = std::fs::read_dir(shared.join(dir)) else {
            eprintln!(
                "note: {} is absent; using the test kernels only",
                shared.join(dir).display()
            );
            continue;
        };
        let mut files: Vec<PathBuf> = rd
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
            .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() < 400_000))
            .collect();
        files.sort();
        v.extend(files.into_iter().step_by(every));
    }
    v
}

fn instructions<'m, 'a>(m: &'m ptx_front::ast::Module<'a>) -> Vec<&'m Instruction<'a>> {
    let mut out = vec![];
    for item in &m.items {
        if let Item::Function(f) = item {
            if let Some(b) = &f.body {
                ptx_front::ast::visit(b, &mut |s| {
                    if let Statement::Inst(i) = s {
                        out.push(i);
                    }
                });
            }
        }
    }
    out
}

fn replace(src: &str, start: u32, end: u32, with: &str) -> String {
    format!("{}{}{}", &src[..start as usize], with, &src[end as usize..])
}

/// A modifier with one letter changed so that it is no modifier of this instruction.
fn misspell(i: &Instruction<'_>, rng: &mut Rng) -> Option<(u32, u32, String)> {
    let k = rng.below(i.mods.len().max(1));
    let m = i.mods.get(k)?;
    let mut chars: Vec<char> = m.text.chars().collect();
    if chars.len() < 3 {
        return None;
    }
    let at = 1 + rng.below(chars.len() - 1);
    let swap = ['q', 'z', 'x', 'k', 'j'][rng.below(5)];
    if chars[at] == swap || chars[at] == ':' {
        return None;
    }
    chars[at] = swap;
    let new: String = chars.into_iter().collect();
    let mut mods: Vec<&str> = i.mods.iter().map(|m| m.text).collect();
    mods[k] = &new;
    ptx_front::isa::decode(i.opcode.text, &mods)
        .is_err()
        .then(|| (m.span.start, m.span.end, new.clone()))
}

fn corruptions(src: &str, rng: &mut Rng) -> Vec<Corruption> {
    let (m, d) = ptx_front::parse_and_check(src);
    if d.iter().any(|d| d.is_error()) {
        return vec![];
    }
    let target = ptx_front::Target::of(&m);
    let insts = instructions(&m);
    if insts.is_empty() {
        return vec![];
    }
    // Registers by declared type, to pick an incompatible one.
    let mut regs: BTreeMap<&str, Type> = BTreeMap::new();
    for item in &m.items {
        if let Item::Function(f) = item {
            if let Some(b) = &f.body {
                ptx_front::ast::visit(b, &mut |s| {
                    if let Statement::Var(v) = s {
                        if v.space == ptx_front::types::Space::Reg && v.vector.is_none() {
                            let name = if v.range.is_some() {
                                format!("{}1", v.name.text)
                            } else {
                                v.name.text.to_string()
                            };
                            regs.insert(Box::leak(name.into_boxed_str()), v.ty);
                        }
                    }
                });
            }
        }
    }
    let line = |at: u32| line_col(src, at).0;
    let mut out = vec![];
    for kind in [
        Kind::Modifier,
        Kind::OperandType,
        Kind::UndefinedRegister,
        Kind::UndefinedLabel,
        Kind::MissingOperand,
        Kind::AboveTarget,
    ] {
        for _attempt in 0..20 {
            let i = insts[rng.below(insts.len())];
            let mods: Vec<&str> = i.mods.iter().map(|m| m.text).collect();
            let Ok(dec) = ptx_front::isa::decode(i.opcode.text, &mods) else {
                continue;
            };
            let edit = match kind {
                Kind::Modifier => misspell(i, rng),
                Kind::OperandType => {
                    let want = ptx_front::check::operand_types(&dec);
                    let k = rng.below(i.operands.len().max(1));
                    match (i.operands.get(k), want.get(k).copied().flatten()) {
                        (Some(Operand::Sym { name, component: None }), Some(w)) if regs.contains_key(name.text) => {
                            // Another declared register whose type cannot stand for `w`: narrower for
                            // ld/st/cvt (which take wider registers), of another size elsewhere.
                            let wider_ok = matches!(i.opcode.text, "ld" | "st" | "cvt");
                            let bad = regs.iter().find(|(_, t)| {
                                **t != Type::Pred
                                    && w != Type::Pred
                                    && !t.compatible_with(w)
                                    && if wider_ok {
                                        t.bits() < w.bits()
                                    } else {
                                        t.bits() != w.bits()
                                    }
                            });
                            bad.map(|(n, _)| (name.span.start, name.span.end, n.to_string()))
                        }
                        _ => None,
                    }
                }
                Kind::UndefinedRegister => i.operands.iter().find_map(|o| match o {
                    Operand::Sym { name, component: None }
                        if regs.contains_key(name.text) || name.text.starts_with('%') =>
                    {
                        (!matches!(i.opcode.text, "bra" | "call"))
                            .then(|| (name.span.start, name.span.end, "%undefined_reg".to_string()))
                    }
                    _ => None,
                }),
                Kind::UndefinedLabel => match (i.opcode.text, i.operands.first()) {
                    ("bra", Some(Operand::Sym { name, .. })) => {
                        Some((name.span.start, name.span.end, "$L__no_such_label".to_string()))
                    }
                    _ => None,
                },
                Kind::MissingOperand => {
                    let n = i.operands.len();
                    let (lo, hi) = dec.spec.operands;
                    // Only where one fewer operand is no form of the instruction.
                    (n >= 2 && n as u8 == lo && lo == hi).then(|| {
                        let (a, b) = (i.operands[n - 2].span().end, i.operands[n - 1].span().end);
                        (a, b, String::new())
                    })
                }
                Kind::AboveTarget => {
                    // An instruction the module's target cannot run, in place of this one.
                    let (new, needs) = if target.sm < 90 {
                        ("fence.proxy.async;", 90)
                    } else if target.suffix != Some('a') {
                        ("wgmma.fence.sync.aligned;", 90)
                    } else {
                        continue;
                    };
                    (target.sm <= needs).then(|| (i.span.start, i.span.end, new.to_string()))
                }
            };
            if let Some((a, b, with)) = edit {
                out.push(Corruption {
                    kind,
                    text: replace(src, a, b, &with),
                    line: line(i.span.start),
                });
                break;
            }
        }
    }
    out
}

fn ptxas_first_error(ptxas: &str, text: &str, sm: u32) -> Option<usize> {
    let dir = tempfile_dir();
    let path = dir.join(format!("m{}.ptx", std::process::id()));
    std::fs::write(&path, text).ok()?;
    let out = std::process::Command::new(ptxas)
        .args([&format!("-arch=sm_{}", sm.max(75)), path.to_str()?, "-o", "/dev/null"])
        .output()
        .ok()?;
    let err = String::from_utf8_lossy(&out.stderr);
    err.lines()
        .filter(|l| l.contains("error"))
        .find_map(|l| l.split(", line ").nth(1)?.split(';').next()?.trim().parse().ok())
}

fn tempfile_dir() -> PathBuf {
    let d = std::env::temp_dir().join("ptx-jit-mutations");
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn corruptions_are_reported_on_their_line() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let ptxas = std::env::var("PTXAS").ok().filter(|p| Path::new(p).exists());
    let mut stats: BTreeMap<Kind, (usize, usize)> = BTreeMap::new();
    let mut misses = vec![];
    let (mut ptxas_checked, mut ptxas_missed) = (0, vec![]);
    for f in inputs() {
        let src = std::fs::read_to_string(&f).unwrap();
        for c in corruptions(&src, &mut rng) {
            let (_, diags) = ptx_front::parse_and_check(&c.text);
            let hit = diags
                .iter()
                .any(|d| d.is_error() && line_col(&c.text, d.span.start).0 == c.line);
            let e = stats.entry(c.kind).or_default();
            e.0 += 1;
            if hit {
                e.1 += 1;
            } else {
                misses.push(format!(
                    "{:?} {}:{}: {}",
                    c.kind,
                    f.display(),
                    c.line,
                    c.text.lines().nth(c.line - 1).unwrap_or("").trim()
                ));
            }
            if let (Some(px), true) = (&ptxas, ptxas_checked < 150 && c.text.len() < 200_000) {
                let sm = ptx_front::Target::of(&ptx_front::parse(&c.text).0).sm;
                if let Some(l) = ptxas_first_error(px, &c.text, sm) {
                    ptxas_checked += 1;
                    if !diags
                        .iter()
                        .any(|d| d.is_error() && line_col(&c.text, d.span.start).0 == l)
                    {
                        ptxas_missed.push(format!("{:?} {}: ptxas line {l}", c.kind, f.display()));
                    }
                }
            }
        }
    }
    let (total, hits) = stats.values().fold((0, 0), |a, &(t, h)| (a.0 + t, a.1 + h));
    for (k, (t, h)) in &stats {
        eprintln!("{k:?}: {h}/{t} reported on the corrupted line");
    }
    eprintln!(
        "total {hits}/{total}; ptxas rejected {ptxas_checked} corruptions, we missed {} of them",
        ptxas_missed.len()
    );
    assert!(total >= 100, "only {total} corruptions were made");
    assert!(stats.len() == 6, "some kinds were never applied: {stats:?}");
    assert!(
        misses.is_empty(),
        "{} corruptions not reported on their line:\n{}",
        misses.len(),
        misses.join("\n")
    );
    assert!(
        ptxas_missed.is_empty(),
        "errors ptxas reports that we do not:\n{}",
        ptxas_missed.join("\n")
    );
}
