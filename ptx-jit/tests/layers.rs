//! The layers of `ptx-jit/src` (README, "Architecture"), checked on the source: a file of one layer
//! names (`crate::…`) only its own layer and those below it. Comments are left out; `use super::*`
//! stays within a folder, so `crate::` paths are the only way across.

use std::path::{Path, PathBuf};

/// Each layer and the layers it may use besides itself. The crate root (`lib.rs`) wires them together
/// and may use all; `main.rs` only calls the CLI.
const LAYERS: &[(&str, &[&str])] = &[
    ("base", &[]),
    ("emu", &["base"]),
    ("jit", &["base", "emu", "root"]),
    ("nvptx", &["base", "root"]),
    ("runtime", &["base", "emu", "jit", "root"]),
    ("cli", &["base", "emu", "jit", "nvptx", "runtime", "root"]),
];

/// The layer of a file, by its folder (`device.rs` and `memory_map.rs` are the base).
fn layer_of(rel: &Path) -> &'static str {
    match rel.components().next().and_then(|c| c.as_os_str().to_str()) {
        Some("emu") => "emu",
        Some("jit") => "jit",
        Some("nvptx") => "nvptx",
        Some("runtime") => "runtime",
        Some("cli") => "cli",
        Some("device.rs" | "memory_map.rs") => "base",
        _ => "root",
    }
}

/// The layer a `crate::NAME` path goes to.
fn layer_named(name: &str) -> &'static str {
    match name {
        "emu" => "emu",
        "jit" => "jit",
        "nvptx" => "nvptx",
        "runtime" => "runtime",
        "cli" => "cli",
        "device" | "memory_map" => "base",
        _ => "root",
    }
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("source folder") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn each_layer_uses_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = vec![];
    files(&src, &mut all);
    assert!(all.len() > 20, "found {} source files", all.len());
    let mut wrong = vec![];
    for f in &all {
        let rel = f.strip_prefix(&src).expect("under src");
        let from = layer_of(rel);
        if from == "root" {
            continue;
        }
        let allowed = LAYERS.iter().find(|l| l.0 == from).map(|l| l.1).unwrap_or(&[]);
        let text = std::fs::read_to_string(f).expect("readable");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for (k, _) in code.match_indices("crate::") {
                let name: String = code[k + 7..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let to = layer_named(&name);
                if to != from && !allowed.contains(&to) {
                    wrong.push(format!("{}:{}: {from} uses {to} (crate::{name})", rel.display(), n + 1));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));
}

#[test]
fn the_check_sees_a_wrong_edge() {
    // The classifier itself: a JIT file naming the runtime is the edge the layering forbids.
    assert_eq!(layer_of(Path::new("jit/host.rs")), "jit");
    assert_eq!(layer_named("runtime"), "runtime");
    let jit = LAYERS.iter().find(|l| l.0 == "jit").expect("jit layer");
    assert!(!jit.1.contains(&"runtime"));
}
