//! The manual's instruction sections, the section of a decoded instruction, and the descriptions
//! `ptx-jit explain` prints.

use super::*;

/// The `explain OPCODE` text, generated from the table entry. For an opcode's primary entry it also lists
/// the opcode's other forms.
pub fn describe(spec: &'static OpSpec) -> String {
    let title = SECTIONS
        .iter()
        .find(|s| s.number == spec.section)
        .map_or("", |s| s.title);
    let mut s = format!(
        "{} — {}\n  syntax:   {}\n  manual:   PTX ISA 8.5 section {} ({})\n  requires: PTX {}.{}, sm_{}{}\n  operands: {}\n",
        spec.form(),
        spec.summary,
        spec.syntax,
        spec.section,
        title,
        spec.ptx.0,
        spec.ptx.1,
        spec.sm,
        if spec.arch { "a (architecture-specific)" } else { "" },
        if spec.operands.0 == spec.operands.1 {
            spec.operands.0.to_string()
        } else {
            format!("{} to {}", spec.operands.0, spec.operands.1)
        }
    );
    if spec.types.1 > 1 {
        s.push_str(&format!(
            "  types:    {} type modifiers\n",
            if spec.types.0 == spec.types.1 {
                spec.types.0.to_string()
            } else {
                format!("{} to {}", spec.types.0, spec.types.1)
            }
        ));
    }
    if !spec.sub.is_empty() {
        s.push_str(&format!("  {:<11} {}  (leading)\n", "sub:", spec.sub.join(" ")));
    }
    for g in spec.groups {
        s.push_str(&format!(
            "  {:<11} {}{}\n",
            format!("{:?}:", g.kind).to_lowercase(),
            g.values.join(" "),
            if g.required { "  (required)" } else { "" }
        ));
    }
    for r in spec.reqs {
        s.push_str(&format!(
            "  {:<11} {} needs PTX {}.{}, sm_{}\n",
            "needs:", r.value, r.ptx.0, r.ptx.1, r.sm
        ));
    }
    if spec.is_primary() {
        let others: Vec<_> = lookup_all(spec.name).filter(|o| !std::ptr::eq(*o, spec)).collect();
        if !others.is_empty() {
            s.push_str(&format!(
                "  other forms of `{}` (explain one by the name shown):\n",
                spec.name
            ));
            for o in others {
                s.push_str(&format!("    {:<34} {} [{}]\n", explain_key(o), o.summary, o.section));
            }
        }
    }
    s
}

/// A dotted name that [`lookup`] resolves to this entry: its form, the title of its manual section, its
/// form with a modifier the opcode's primary entry does not take (`fma.f16`, `min.NaN`), or its base form.
pub fn explain_key(spec: &'static OpSpec) -> String {
    let hits = |k: &str| lookup(k).is_some_and(|s| std::ptr::eq(s, spec));
    let form = spec.form();
    if hits(&form) {
        return form;
    }
    let title = SECTIONS
        .iter()
        .find(|s| s.number == spec.section)
        .map_or("", |s| s.title);
    if hits(title) {
        return title.to_string();
    }
    let primary = lookup(spec.name);
    let in_primary = |v: &str| primary.is_some_and(|p| p.groups.iter().any(|g| g.values.contains(&v)));
    spec.groups
        .iter()
        .flat_map(|g| g.values.iter())
        .filter(|v| !in_primary(v))
        .map(|v| format!("{form}{v}"))
        .find(|k| hits(k))
        .unwrap_or_else(|| {
            let mut base = form.clone();
            for g in spec.groups {
                let n = if g.kind == G::Type {
                    spec.types.0 as usize
                } else {
                    usize::from(g.required)
                };
                for _ in 0..n {
                    base.push_str(g.values[0]);
                }
            }
            base
        })
}

/// Headings of chapter 9.7 that name no instruction: the `{}` and `@` syntax sections and two overviews.
/// Every other `9.7.x.y… Instructions: NAME` heading of the manual is in [`SECTIONS`]. (The headings
/// without an instruction name, such as "9.7.10.1. Cache Operators", "9.7.15.1. Matrix Shape" or
/// "9.7.14.15.4. Phase of the mbarrier object", are overviews too.)
pub const EXCLUDED_SECTIONS: &[(&str, &str)] = &[
    ("9.7.10.24", "Asynchronous copy"),
    ("9.7.13.1", "{}"),
    ("9.7.13.2", "@"),
    ("9.7.14.15", "mbarrier"),
];

macro_rules! sec {
    ($n:literal, $t:literal, [$($o:literal),+ $(,)?]) => {
        Section {
            number: $n,
            title: $t,
            opcodes: &[$($o),+],
        }
    };
}

/// Every instruction section of chapter 9.7 of the PTX ISA 8.5 manual, in order.
pub static SECTIONS: &[Section] = &[
    sec!("9.7.1.1", "add", ["add"]),
    sec!("9.7.1.2", "sub", ["sub"]),
    sec!("9.7.1.3", "mul", ["mul"]),
    sec!("9.7.1.4", "mad", ["mad"]),
    sec!("9.7.1.5", "mul24", ["mul24"]),
    sec!("9.7.1.6", "mad24", ["mad24"]),
    sec!("9.7.1.7", "sad", ["sad"]),
    sec!("9.7.1.8", "div", ["div"]),
    sec!("9.7.1.9", "rem", ["rem"]),
    sec!("9.7.1.10", "abs", ["abs"]),
    sec!("9.7.1.11", "neg", ["neg"]),
    sec!("9.7.1.12", "min", ["min"]),
    sec!("9.7.1.13", "max", ["max"]),
    sec!("9.7.1.14", "popc", ["popc"]),
    sec!("9.7.1.15", "clz", ["clz"]),
    sec!("9.7.1.16", "bfind", ["bfind"]),
    sec!("9.7.1.17", "fns", ["fns"]),
    sec!("9.7.1.18", "brev", ["brev"]),
    sec!("9.7.1.19", "bfe", ["bfe"]),
    sec!("9.7.1.20", "bfi", ["bfi"]),
    sec!("9.7.1.21", "szext", ["szext"]),
    sec!("9.7.1.22", "bmsk", ["bmsk"]),
    sec!("9.7.1.23", "dp4a", ["dp4a"]),
    sec!("9.7.1.24", "dp2a", ["dp2a"]),
    sec!("9.7.2.1", "add.cc", ["add"]),
    sec!("9.7.2.2", "addc", ["addc"]),
    sec!("9.7.2.3", "sub.cc", ["sub"]),
    sec!("9.7.2.4", "subc", ["subc"]),
    sec!("9.7.2.5", "mad.cc", ["mad"]),
    sec!("9.7.2.6", "madc", ["madc"]),
    sec!("9.7.3.1", "testp", ["testp"]),
    sec!("9.7.3.2", "copysign", ["copysign"]),
    sec!("9.7.3.3", "add", ["add"]),
    sec!("9.7.3.4", "sub", ["sub"]),
    sec!("9.7.3.5", "mul", ["mul"]),
    sec!("9.7.3.6", "fma", ["fma"]),
    sec!("9.7.3.7", "mad", ["mad"]),
    sec!("9.7.3.8", "div", ["div"]),
    sec!("9.7.3.9", "abs", ["abs"]),
    sec!("9.7.3.10", "neg", ["neg"]),
    sec!("9.7.3.11", "min", ["min"]),
    sec!("9.7.3.12", "max", ["max"]),
    sec!("9.7.3.13", "rcp", ["rcp"]),
    sec!("9.7.3.14", "rcp.approx.ftz.f64", ["rcp"]),
    sec!("9.7.3.15", "sqrt", ["sqrt"]),
    sec!("9.7.3.16", "rsqrt", ["rsqrt"]),
    sec!("9.7.3.17", "rsqrt.approx.ftz.f64", ["rsqrt"]),
    sec!("9.7.3.18", "sin", ["sin"]),
    sec!("9.7.3.19", "cos", ["cos"]),
    sec!("9.7.3.20", "lg2", ["lg2"]),
    sec!("9.7.3.21", "ex2", ["ex2"]),
    sec!("9.7.3.22", "tanh", ["tanh"]),
    sec!("9.7.4.1", "add", ["add"]),
    sec!("9.7.4.2", "sub", ["sub"]),
    sec!("9.7.4.3", "mul", ["mul"]),
    sec!("9.7.4.4", "fma", ["fma"]),
    sec!("9.7.4.5", "neg", ["neg"]),
    sec!("9.7.4.6", "abs", ["abs"]),
    sec!("9.7.4.7", "min", ["min"]),
    sec!("9.7.4.8", "max", ["max"]),
    sec!("9.7.4.9", "tanh", ["tanh"]),
    sec!("9.7.4.10", "ex2", ["ex2"]),
    sec!("9.7.7.1", "set", ["set"]),
    sec!("9.7.7.2", "setp", ["setp"]),
    sec!("9.7.7.3", "selp", ["selp"]),
    sec!("9.7.7.4", "slct", ["slct"]),
    sec!("9.7.8.1", "set", ["set"]),
    sec!("9.7.8.2", "setp", ["setp"]),
    sec!("9.7.9.1", "and", ["and"]),
    sec!("9.7.9.2", "or", ["or"]),
    sec!("9.7.9.3", "xor", ["xor"]),
    sec!("9.7.9.4", "not", ["not"]),
    sec!("9.7.9.5", "cnot", ["cnot"]),
    sec!("9.7.9.6", "lop3", ["lop3"]),
    sec!("9.7.9.7", "shf", ["shf"]),
    sec!("9.7.9.8", "shl", ["shl"]),
    sec!("9.7.9.9", "shr", ["shr"]),
    sec!("9.7.10.3", "mov", ["mov"]),
    sec!("9.7.10.4", "mov", ["mov"]),
    sec!("9.7.10.5", "shfl (deprecated)", ["shfl"]),
    sec!("9.7.10.6", "shfl.sync", ["shfl"]),
    sec!("9.7.10.7", "prmt", ["prmt"]),
    sec!("9.7.10.8", "ld", ["ld"]),
    sec!("9.7.10.9", "ld.global.nc", ["ld"]),
    sec!("9.7.10.10", "ldu", ["ldu"]),
    sec!("9.7.10.11", "st", ["st"]),
    sec!("9.7.10.12", "st.async", ["st.async"]),
    sec!(
        "9.7.10.13",
        "multimem.ld_reduce, multimem.st, multimem.red",
        ["multimem.ld_reduce", "multimem.st", "multimem.red"]
    ),
    sec!("9.7.10.14", "prefetch, prefetchu", ["prefetch", "prefetchu"]),
    sec!("9.7.10.15", "applypriority", ["applypriority"]),
    sec!("9.7.10.16", "discard", ["discard"]),
    sec!(
        "9.7.10.17",
        "createpolicy",
        ["createpolicy.range", "createpolicy.fractional", "createpolicy.cvt"]
    ),
    sec!("9.7.10.18", "isspacep", ["isspacep"]),
    sec!("9.7.10.19", "cvta", ["cvta"]),
    sec!("9.7.10.20", "cvt", ["cvt"]),
    sec!("9.7.10.21", "cvt.pack", ["cvt.pack"]),
    sec!("9.7.10.22", "mapa", ["mapa"]),
    sec!("9.7.10.23", "getctarank", ["getctarank"]),
    sec!("9.7.10.24.3", "cp.async", ["cp.async"]),
    sec!("9.7.10.24.4", "cp.async.commit_group", ["cp.async.commit_group"]),
    sec!(
        "9.7.10.24.5",
        "cp.async.wait_group / cp.async.wait_all",
        ["cp.async.wait_group", "cp.async.wait_all"]
    ),
    sec!("9.7.10.24.6", "cp.async.bulk", ["cp.async.bulk"]),
    sec!("9.7.10.24.7", "cp.reduce.async.bulk", ["cp.reduce.async.bulk"]),
    sec!("9.7.10.24.8", "cp.async.bulk.prefetch", ["cp.async.bulk.prefetch"]),
    sec!("9.7.10.24.9", "cp.async.bulk.tensor", ["cp.async.bulk.tensor"]),
    sec!(
        "9.7.10.24.10",
        "cp.reduce.async.bulk.tensor",
        ["cp.reduce.async.bulk.tensor"]
    ),
    sec!(
        "9.7.10.24.11",
        "cp.async.bulk.prefetch.tensor",
        ["cp.async.bulk.prefetch.tensor"]
    ),
    sec!(
        "9.7.10.24.12",
        "cp.async.bulk.commit_group",
        ["cp.async.bulk.commit_group"]
    ),
    sec!("9.7.10.24.13", "cp.async.bulk.wait_group", ["cp.async.bulk.wait_group"]),
    sec!("9.7.10.25", "tensormap.replace", ["tensormap.replace"]),
    sec!("9.7.11.3", "tex", ["tex"]),
    sec!("9.7.11.4", "tld4", ["tld4"]),
    sec!("9.7.11.5", "txq", ["txq"]),
    sec!("9.7.11.6", "istypep", ["istypep"]),
    sec!("9.7.12.1", "suld", ["suld"]),
    sec!("9.7.12.2", "sust", ["sust"]),
    sec!("9.7.12.3", "sured", ["sured"]),
    sec!("9.7.12.4", "suq", ["suq"]),
    sec!("9.7.13.3", "bra", ["bra"]),
    sec!("9.7.13.4", "brx.idx", ["brx"]),
    sec!("9.7.13.5", "call", ["call"]),
    sec!("9.7.13.6", "ret", ["ret"]),
    sec!("9.7.13.7", "exit", ["exit"]),
    sec!("9.7.14.1", "bar, barrier", ["bar", "barrier"]),
    sec!("9.7.14.2", "bar.warp.sync", ["bar"]),
    sec!("9.7.14.3", "barrier.cluster", ["barrier.cluster"]),
    sec!(
        "9.7.14.4",
        "membar/fence",
        ["membar", "fence", "fence.proxy", "fence.mbarrier_init", "membar.proxy"]
    ),
    sec!("9.7.14.5", "atom", ["atom"]),
    sec!("9.7.14.6", "red", ["red"]),
    sec!("9.7.14.7", "red.async", ["red.async"]),
    sec!("9.7.14.8", "vote (deprecated)", ["vote"]),
    sec!("9.7.14.9", "vote.sync", ["vote"]),
    sec!("9.7.14.10", "match.sync", ["match"]),
    sec!("9.7.14.11", "activemask", ["activemask"]),
    sec!("9.7.14.12", "redux.sync", ["redux"]),
    sec!("9.7.14.13", "griddepcontrol", ["griddepcontrol"]),
    sec!("9.7.14.14", "elect.sync", ["elect"]),
    sec!("9.7.14.15.9", "mbarrier.init", ["mbarrier.init"]),
    sec!("9.7.14.15.10", "mbarrier.inval", ["mbarrier.inval"]),
    sec!("9.7.14.15.11", "mbarrier.expect_tx", ["mbarrier.expect_tx"]),
    sec!("9.7.14.15.12", "mbarrier.complete_tx", ["mbarrier.complete_tx"]),
    sec!("9.7.14.15.13", "mbarrier.arrive", ["mbarrier.arrive"]),
    sec!("9.7.14.15.14", "mbarrier.arrive_drop", ["mbarrier.arrive_drop"]),
    sec!("9.7.14.15.15", "cp.async.mbarrier.arrive", ["cp.async.mbarrier.arrive"]),
    sec!(
        "9.7.14.15.16",
        "mbarrier.test_wait/mbarrier.try_wait",
        ["mbarrier.test_wait", "mbarrier.try_wait"]
    ),
    sec!("9.7.14.15.17", "mbarrier.pending_count", ["mbarrier.pending_count"]),
    sec!("9.7.14.16", "tensormap.cp_fenceproxy", ["tensormap.cp_fenceproxy"]),
    sec!("9.7.15.3.3", "wmma.load", ["wmma.load"]),
    sec!("9.7.15.3.4", "wmma.store", ["wmma.store"]),
    sec!("9.7.15.3.5", "wmma.mma", ["wmma.mma"]),
    sec!("9.7.15.4.14", "mma", ["mma"]),
    sec!("9.7.15.4.15", "ldmatrix", ["ldmatrix"]),
    sec!("9.7.15.4.16", "stmatrix", ["stmatrix"]),
    sec!("9.7.15.4.17", "movmatrix", ["movmatrix"]),
    sec!("9.7.15.5.3", "mma.sp/mma.sp::ordered_metadata", ["mma"]),
    sec!("9.7.16.5.2", "wgmma.mma_async", ["wgmma.mma_async"]),
    sec!("9.7.16.6.4", "wgmma.mma_async.sp", ["wgmma.mma_async.sp"]),
    sec!("9.7.16.7.1", "wgmma.fence", ["wgmma.fence"]),
    sec!("9.7.16.7.2", "wgmma.commit_group", ["wgmma.commit_group"]),
    sec!("9.7.16.7.3", "wgmma.wait_group", ["wgmma.wait_group"]),
    sec!("9.7.17.1", "stacksave", ["stacksave"]),
    sec!("9.7.17.2", "stackrestore", ["stackrestore"]),
    sec!("9.7.17.3", "alloca", ["alloca"]),
    sec!(
        "9.7.18.1.1",
        "vadd, vsub, vabsdiff, vmin, vmax",
        ["vadd", "vsub", "vabsdiff", "vmin", "vmax"]
    ),
    sec!("9.7.18.1.2", "vshl, vshr", ["vshl", "vshr"]),
    sec!("9.7.18.1.3", "vmad", ["vmad"]),
    sec!("9.7.18.1.4", "vset", ["vset"]),
    sec!(
        "9.7.18.2.1",
        "vadd2, vsub2, vavrg2, vabsdiff2, vmin2, vmax2",
        ["vadd2", "vsub2", "vavrg2", "vabsdiff2", "vmin2", "vmax2"]
    ),
    sec!("9.7.18.2.2", "vset2", ["vset2"]),
    sec!(
        "9.7.18.2.3",
        "vadd4, vsub4, vavrg4, vabsdiff4, vmin4, vmax4",
        ["vadd4", "vsub4", "vavrg4", "vabsdiff4", "vmin4", "vmax4"]
    ),
    sec!("9.7.18.2.4", "vset4", ["vset4"]),
    sec!("9.7.19.1", "brkpt", ["brkpt"]),
    sec!("9.7.19.2", "nanosleep", ["nanosleep"]),
    sec!("9.7.19.3", "pmevent", ["pmevent"]),
    sec!("9.7.19.4", "trap", ["trap"]),
    sec!("9.7.19.5", "setmaxnreg", ["setmaxnreg"]),
];

/// The manual section that documents a decoded instruction. An entry may serve several sections that
/// share its opcode (`add` is documented for integers in 9.7.1, for floats in 9.7.3 and for halves in
/// 9.7.4; `add.cc` in 9.7.2), so the choice goes by the modifiers a section's title names and by the
/// type family of its chapter.
pub fn section_of(d: &Decoded) -> &'static str {
    let form = d.spec.form();
    let candidates = SECTIONS
        .iter()
        .filter(|s| s.opcodes.iter().any(|o| *o == form || *o == d.spec.name));
    let family = |chapter: &str| -> Option<bool> {
        let t = d.ty()?;
        let half = matches!(t, Type::F16 | Type::F16x2 | Type::Bf16 | Type::Bf16x2);
        Some(match chapter {
            "9.7.1" | "9.7.2" => !t.is_float(),
            "9.7.3" => t.is_float() && !half,
            "9.7.4" | "9.7.8" => half,
            "9.7.7" => !half,
            _ => return None,
        })
    };
    let mut best: Option<(i32, &'static str)> = None;
    for s in candidates {
        let mut score = if s.number == d.spec.section { 1 } else { 0 };
        let deprecated = s.title.ends_with(" (deprecated)");
        // Title modifiers (`add.cc`, `rcp.approx.ftz.f64`, `bar.warp.sync`) must all be present.
        for m in title_modifiers(s.title) {
            score += if d.has(&m) || d.spec.sub.contains(&m.as_str()) {
                10
            } else {
                -100
            };
        }
        if deprecated {
            score += if d.has(".sync") { -100 } else { 3 };
        }
        let chapter = s.number.splitn(4, '.').take(3).collect::<Vec<_>>().join(".");
        match family(&chapter) {
            Some(true) => score += 5,
            Some(false) => score -= 5,
            None => {}
        }
        if best.is_none_or(|(b, _)| score > b) {
            best = Some((score, s.number));
        }
    }
    best.map_or(d.spec.section, |(_, n)| n)
}

/// The modifiers a section title spells out: `rcp.approx.ftz.f64` gives `.approx .ftz .f64`; of
/// alternatives (`mma.sp/mma.sp::ordered_metadata`) the first counts.
pub fn title_modifiers(title: &str) -> Vec<String> {
    let first = title.split(['/', ' ', ',']).next().unwrap_or("");
    first.split('.').skip(1).map(|p| format!(".{p}")).collect()
}
