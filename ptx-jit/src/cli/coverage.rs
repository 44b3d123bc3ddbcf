//! What the toolchain covers, measured rather than declared: every form the ISA table allows (each
//! modifier value on top of the required ones) is written out as a small kernel and pushed through
//! the checker, the host lowering and NVPTX code generation. `ptx-jit coverage` prints the counts per
//! instruction section of the manual; the robustness tests use the same forms.

use crate::nvptx::arch::Arch;
use ptx_front::isa::{self, OpSpec, G};
use ptx_front::types::Type;
use std::process::ExitCode;

/// One instruction form as a complete kernel.
pub struct Form {
    pub spec: &'static OpSpec,
    /// The manual section that documents this form.
    pub section: &'static str,
    pub mods: Vec<&'static str>,
    pub kernel: String,
    /// The kernel's `.target`, which NVPTX code generation is asked for too.
    pub target: &'static str,
}

/// The modifier lists of an entry: its sub-instruction prefix, then the first value of each required
/// group (the `Type` group as often as the entry needs types); then each value of each group in turn
/// on top of that.
fn variants(spec: &'static OpSpec) -> Vec<Vec<&'static str>> {
    let need = |k: usize| {
        let g = &spec.groups[k];
        if g.kind == G::Type {
            spec.types.0.max(1) as usize
        } else {
            usize::from(g.required)
        }
    };
    let with = |skip: Option<usize>| -> Vec<&'static str> {
        let mut m: Vec<&'static str> = spec.sub.to_vec();
        for (k, g) in spec.groups.iter().enumerate() {
            if Some(k) != skip {
                m.extend(std::iter::repeat_n(g.values[0], need(k)));
            }
        }
        m
    };
    let mut out = vec![with(None)];
    for (k, g) in spec.groups.iter().enumerate() {
        for &v in g.values {
            let mut m = with(Some(k));
            m.extend(std::iter::repeat_n(v, need(k).max(1)));
            out.push(m);
        }
    }
    // Each type with the first rounding, and with the first mode: float `div` needs a rounding and
    // integer `mad` a half, which single-group variants never give.
    if let Some(tk) = spec.groups.iter().position(|g| g.kind == G::Type) {
        for &t in spec.groups[tk].values {
            for extra in [G::Round, G::Mode] {
                let Some(ek) = spec.groups.iter().position(|g| g.kind == extra && !g.required) else {
                    continue;
                };
                let mut m = with(Some(tk));
                m.push(spec.groups[ek].values[0]);
                m.extend(std::iter::repeat_n(t, need(tk).max(1)));
                out.push(m);
            }
        }
    }
    // The combination a section title names (`rcp.approx.ftz.f64`), on top of the required groups it
    // does not mention.
    for s in isa::SECTIONS
        .iter()
        .filter(|s| s.opcodes.iter().any(|o| o.split('.').next() == Some(spec.name)))
    {
        let title = isa::title_modifiers(s.title);
        let named: Vec<&'static str> = spec
            .groups
            .iter()
            .flat_map(|g| g.values.iter().copied())
            .filter(|v| title.iter().any(|t| t == v) && !spec.sub.contains(v))
            .collect();
        if named.is_empty() {
            continue;
        }
        let mut m: Vec<&'static str> = spec.sub.to_vec();
        for (k, g) in spec.groups.iter().enumerate() {
            match g.values.iter().find(|v| named.contains(v)) {
                Some(&v) => m.extend(std::iter::repeat_n(v, need(k).max(1))),
                None => m.extend(std::iter::repeat_n(g.values[0], need(k))),
            }
        }
        // With a mode too (`mad.cc` is an integer `mad`, which needs `.lo` or `.hi`).
        if let Some(g) = spec.groups.iter().find(|g| g.kind == G::Mode && !g.required) {
            let mut with_mode = m.clone();
            with_mode.insert(spec.sub.len(), g.values[0]);
            out.push(with_mode);
        }
        out.push(m);
    }
    out
}

/// Every form of every table entry that decodes, as a kernel for sm_90 (sm_90a where the entry needs
/// it) / PTX 8.5, with registers of the types the checker expects and brackets where the syntax has
/// them. Forms decode to the entry that accepts them, which is not always the one they came from.
pub fn forms() -> Vec<Form> {
    let mut out = vec![];
    let mut seen = std::collections::HashSet::new();
    for spec in isa::TABLE {
        // Dense `mma`'s and `wgmma`'s groups combine into far more forms than exist: count the ones
        // that do. So do cvt.pack's types.
        let dense_mma = spec.name == "mma" && spec.groups.iter().all(|g| g.kind != G::Sparse);
        let narrow = spec.name == "cvt" && spec.groups.iter().any(|g| g.values.contains(&".ue8m0x2"));
        let dense_wgmma = spec.name == "wgmma" && spec.sub == [".mma_async"];
        let forms = if dense_mma {
            isa::mma_forms()
        } else if dense_wgmma {
            isa::wgmma_forms()
        } else if narrow {
            isa::narrow_cvt_forms().into_iter().map(|(mods, _)| mods).collect()
        } else if spec.sub == [".pack"] {
            isa::CVT_PACK_TYPES
                .iter()
                .map(|t| [&[".pack", ".sat"][..], t].concat())
                .collect()
        } else {
            variants(spec)
        };
        for mods in forms {
            let Ok(d) = isa::decode(spec.name, &mods) else { continue };
            if !seen.insert((spec.name, mods.clone())) {
                continue;
            }
            let types = ptx_front::check::operand_types(&d);
            let addresses = isa::address_operands(d.spec);
            let mut decls = String::from(".reg .b64 %addr;\n");
            let mut ops = vec![];
            let mut prelude = "";
            match spec.name {
                "bra" => ops.push("L".to_string()),
                // The list operand names a `.branchtargets` label.
                "brx" => {
                    decls.push_str(".reg .b32 %o0;\nts: .branchtargets L;\n");
                    ops.extend(["%o0".to_string(), "ts".to_string()]);
                }
                "call" => {
                    prelude = ".func callee()\n{\nret;\n}\n";
                    ops.push("callee".to_string());
                }
                // tensormap.replace: an ordinal for the fields across the rank, an immediate code for
                // the enumerated fields, a register value otherwise.
                "tensormap" if spec.sub == [".replace"] => {
                    let field = d.get(G::Field).unwrap_or("");
                    let t = d.ty().unwrap_or(Type::B32);
                    decls.push_str(&format!(".reg {} %v;\n", t.name()));
                    ops.push("[%addr]".to_string());
                    if matches!(field, ".box_dim" | ".global_dim" | ".global_stride" | ".element_stride") {
                        ops.push("0".to_string());
                    }
                    let coded = matches!(
                        field,
                        ".elemtype" | ".interleave_layout" | ".swizzle_mode" | ".fill_mode"
                    );
                    ops.push(if coded { "0" } else { "%v" }.to_string());
                }
                // D's registers, A's and B's descriptors, scale-d, then the immediates the form takes.
                "wgmma" if dense_wgmma => {
                    let f = isa::wgmma_form(&mods).expect("a counted form");
                    let t = if f.d == isa::MmaType::F32 { ".f32" } else { ".b32" };
                    decls.push_str(&format!(".reg {t} %d<{}>;\n", f.d_regs()));
                    let d: Vec<String> = (0..f.d_regs()).map(|k| format!("%d{k}")).collect();
                    ops.push(format!("{{{}}}", d.join(", ")));
                    ops.extend(["%addr", "%addr", "1"].map(String::from));
                    ops.extend(std::iter::repeat_n("1".to_string(), f.operands(false) - 4));
                }
                // Tensor copies name `[tensorMap, {coordinates}]`, then what their modifiers add.
                "cp" if spec.sub.contains(&".tensor") => {
                    let dims = isa::tensor_dims(&d);
                    let list =
                        |name: &str, n: usize| (0..n).map(|k| format!("%{name}{k}")).collect::<Vec<_>>().join(", ");
                    decls.push_str(".reg .b32 %c<5>;\n.reg .b16 %h<3>;\n.reg .b16 %m;\n.reg .b64 %pol;\n");
                    let tensor = format!("[%addr, {{{}}}]", list("c", dims));
                    let load = d.has(".shared::cluster");
                    if load {
                        ops.push("[%addr]".to_string());
                    }
                    ops.push(tensor);
                    // The mbarrier of a load, the shared source of a store; a prefetch names neither.
                    if !spec.sub.contains(&".prefetch") {
                        ops.push("[%addr]".to_string());
                    }
                    if d.has(".im2col") {
                        ops.push(format!("{{{}}}", list("h", dims.saturating_sub(2))));
                    }
                    if d.has(".multicast::cluster") {
                        ops.push("%m".to_string());
                    }
                    if d.get(G::Hint).is_some() {
                        ops.push("%pol".to_string());
                    }
                }
                _ => {
                    // `elect.sync` and `lop3.BoolOp` write a predicate too (`d|p`).
                    let pair = spec.name == "elect" || (spec.name == "lop3" && d.get(G::BoolOp).is_some());
                    let count = match mods.as_slice() {
                        [.., dst, src] if narrow => isa::narrow_cvt_operands(dst, src),
                        _ => d.spec.operands.1 as usize,
                    };
                    for k in 0..count {
                        if k == 0 && pair {
                            let t = types.first().copied().flatten().unwrap_or(Type::B32);
                            decls.push_str(&format!(".reg {} %o0;\n.reg .pred %q0;\n", t.name()));
                            ops.push("%o0|%q0".to_string());
                        } else if addresses.contains(&k) {
                            ops.push("[%addr]".to_string());
                        } else if spec.name == "lop3" && k == 4 {
                            ops.push("0x96".to_string());
                        } else {
                            let t = types.get(k).copied().flatten().unwrap_or(Type::B32);
                            decls.push_str(&format!(".reg {} %o{k};\n", t.name()));
                            ops.push(format!("%o{k}"));
                        }
                    }
                }
            }
            // Forms of PTX 8.6 and later go in a module of the newest version for sm_100a.
            let (version, target) = match (d.requires().0 > (8, 5) || narrow, d.spec.arch) {
                (true, _) => ("9.2", "sm_100a"),
                (false, true) => ("8.5", "sm_90a"),
                (false, false) => ("8.5", "sm_90"),
            };
            let kernel = format!(
                ".version {version}\n.target {target}\n.address_size 64\n{prelude}.visible .entry k(.param .u64 p)\n{{\n{decls}ld.param.u64 %addr, [p];\nL:\n{}{} {};\nret;\n}}\n",
                spec.name,
                mods.concat(),
                ops.join(", ")
            );
            out.push(Form {
                spec: d.spec,
                section: isa::section_of(&d),
                mods,
                kernel,
                target,
            });
        }
    }
    out
}

/// What happened to one form.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub parsed: bool,
    pub checked: bool,
    pub host: bool,
    pub nvptx: bool,
}

/// Runs a form through the checker, the host lowering and NVPTX code generation for `arch`.
pub fn try_form(f: &Form, arch: &Arch) -> Outcome {
    let parsed = ptx_front::parse(&f.kernel).1.is_empty();
    let Ok((m, _)) = crate::front(&f.kernel) else {
        return Outcome {
            parsed,
            ..Outcome::default()
        };
    };
    Outcome {
        parsed,
        checked: true,
        host: crate::jit::host::host_ir(&m, false).is_ok(),
        nvptx: crate::nvptx::emit(&m, arch, 0, crate::nvptx::Emit::Ptx).is_ok(),
    }
}

/// The NVPTX targets of the forms' kernels, each at its lowest PTX version.
fn archs() -> Vec<(&'static str, Arch)> {
    ["sm_90", "sm_90a", "sm_100a"]
        .into_iter()
        .map(|t| (t, crate::nvptx::arch::validate(t, None).expect("a valid target")))
        .collect()
}

fn arch_of<'a>(archs: &'a [(&'static str, Arch)], f: &Form) -> &'a Arch {
    &archs.iter().find(|(t, _)| *t == f.target).unwrap_or(&archs[0]).1
}

/// Every form that checks but that the host (or NVPTX) backend refuses: (section, form, first reason).
pub fn missing(host: bool) -> Vec<(&'static str, String, String)> {
    let archs = archs();
    forms()
        .into_iter()
        .filter_map(|f| {
            let (m, _) = crate::front(&f.kernel).ok()?;
            let r = if host {
                crate::jit::host::host_ir(&m, false).map(drop)
            } else {
                crate::nvptx::emit(&m, arch_of(&archs, &f), 0, crate::nvptx::Emit::Ptx).map(drop)
            };
            let diags = r.err()?;
            let why = diags.first().map_or(String::new(), |d| d.message.clone());
            Some((f.section, format!("{}{}", f.spec.name, f.mods.concat()), why))
        })
        .collect()
}

/// Counts for one manual section.
#[derive(Clone, Debug, Default)]
pub struct Row {
    pub number: &'static str,
    pub title: &'static str,
    pub forms: usize,
    pub parsed: usize,
    pub checked: usize,
    pub host: usize,
    pub nvptx: usize,
}

/// Coverage of every instruction section of the manual, in the manual's order.
pub fn report() -> Vec<Row> {
    let archs = archs();
    let mut rows: Vec<Row> = isa::SECTIONS
        .iter()
        .map(|s| Row {
            number: s.number,
            title: s.title,
            ..Row::default()
        })
        .collect();
    for f in forms() {
        let o = try_form(&f, arch_of(&archs, &f));
        if let Some(r) = rows.iter_mut().find(|r| r.number == f.section) {
            r.forms += 1;
            r.parsed += o.parsed as usize;
            r.checked += o.checked as usize;
            r.host += o.host as usize;
            r.nvptx += o.nvptx as usize;
        }
    }
    rows
}

/// The arguments of `ptx-jit coverage`.
#[derive(clap::Args)]
pub struct Coverage {
    /// Print only the summary line.
    #[arg(long)]
    pub summary: bool,
    /// Instead of counts, list every checked form that a backend (`host` or `nvptx`) does not
    /// lower yet, with the reason.
    #[arg(long, value_parser = ["host", "nvptx"])]
    pub missing: Option<String>,
}

/// `ptx-jit coverage`: the table (or its summary), or the forms a backend does not lower yet.
pub fn run(a: Coverage) -> Result<ExitCode, ExitCode> {
    let Coverage { summary, missing } = a;
    if let Some(backend) = missing {
        for (section, form, why) in self::missing(backend == "host") {
            println!("{section:<12} {form:<48} {why}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let rows = report();
    let mut total = Row::default();
    let (mut s_checked, mut s_host, mut s_nvptx) = (0, 0, 0);
    if !summary {
        println!(
            "{:<12} {:<50} {:>6} {:>6} {:>7} {:>6} {:>6}",
            "section", "instruction", "forms", "parsed", "checked", "host", "nvptx"
        );
    }
    for r in &rows {
        if !summary {
            println!(
                "{:<12} {:<50} {:>6} {:>6} {:>7} {:>6} {:>6}",
                r.number, r.title, r.forms, r.parsed, r.checked, r.host, r.nvptx
            );
        }
        total.forms += r.forms;
        total.parsed += r.parsed;
        total.checked += r.checked;
        total.host += r.host;
        total.nvptx += r.nvptx;
        s_checked += usize::from(r.checked > 0);
        s_host += usize::from(r.host > 0);
        s_nvptx += usize::from(r.nvptx > 0);
    }
    println!(
        "{} sections, {} forms: {} parsed, {} checked, {} lowered for the host, {} for NVPTX; sections with at least one form checked {s_checked}, host {s_host}, NVPTX {s_nvptx}",
        rows.len(), total.forms, total.parsed, total.checked, total.host, total.nvptx
    );
    Ok(ExitCode::SUCCESS)
}
