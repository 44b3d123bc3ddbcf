//! Finding an instruction's entry and decoding its modifiers against it.

use super::table::SUBS;
use super::*;

/// The positions of an entry's `[address]` operands, read from its syntax: the operands written in
/// brackets, optional ones included (`st.async [a], b, [mbar]` gives 0 and 2).
pub fn address_operands(spec: &'static OpSpec) -> &'static [usize] {
    &facts(spec).address_operands
}

/// What the checker asks of an entry for every instruction, derived from the table once.
struct Facts {
    address_operands: Vec<usize>,
    /// [`OpSpec::is_primary`].
    primary: bool,
}

fn facts(spec: &'static OpSpec) -> &'static Facts {
    static CACHE: std::sync::OnceLock<Vec<Facts>> = std::sync::OnceLock::new();
    let all = CACHE.get_or_init(|| {
        TABLE
            .iter()
            .map(|s| Facts {
                address_operands: bracketed_operands(s),
                primary: entries(s.name).first().is_some_and(|p| std::ptr::eq(*p, s)),
            })
            .collect()
    });
    &all[index_of(spec)]
}

/// Whether `spec` is the first entry of its opcode.
pub(super) fn is_primary(spec: &'static OpSpec) -> bool {
    facts(spec).primary
}

/// The position of an entry in [`TABLE`].
fn index_of(spec: &'static OpSpec) -> usize {
    (spec as *const OpSpec as usize - TABLE.as_ptr() as usize) / std::mem::size_of::<OpSpec>()
}

/// The entries of an opcode token, in table order (primary first), from an index built once: the
/// checker decodes every instruction, so this must not scan the table.
pub fn entries(opcode: &str) -> &'static [&'static OpSpec] {
    static INDEX: std::sync::OnceLock<rustc_hash::FxHashMap<&'static str, Vec<&'static OpSpec>>> =
        std::sync::OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut m = rustc_hash::FxHashMap::<&'static str, Vec<&'static OpSpec>>::default();
        for s in TABLE {
            m.entry(s.name).or_default().push(s);
        }
        m
    });
    index.get(opcode).map_or(&[], Vec::as_slice)
}

fn bracketed_operands(spec: &OpSpec) -> Vec<usize> {
    let mut out = vec![];
    for stmt in spec.syntax.split(';') {
        let mut words = stmt.split_whitespace().skip_while(|w| w.starts_with('@'));
        match words.next() {
            Some(w) if !w.starts_with('.') => {}
            _ => continue,
        }
        let rest: Vec<&str> = words.collect();
        let rest = rest.join(" ");
        // Optional parts `{, x}` become plain operands; brackets keep their commas.
        let (mut depth, mut piece, mut k) = (0, String::new(), 0);
        let mut flush = |piece: &mut String, k: &mut usize| {
            let p = piece.trim();
            if !p.is_empty() {
                if p.starts_with('[') && !out.contains(k) {
                    out.push(*k);
                }
                *k += 1;
            }
            piece.clear();
        };
        for c in rest.chars() {
            match c {
                '[' => {
                    depth += 1;
                    piece.push(c);
                }
                ']' => {
                    depth -= 1;
                    piece.push(c);
                }
                '{' | '}' if depth == 0 => {}
                ',' if depth == 0 => flush(&mut piece, &mut k),
                _ => piece.push(c),
            }
        }
        flush(&mut piece, &mut k);
    }
    out.sort_unstable();
    out
}

/// Which operand of a memory instruction is its `[address]`: the first address operand of the opcode's
/// primary entry.
pub fn address_operand(opcode: &str) -> Option<usize> {
    let spec = entries(opcode).first()?;
    address_operands(spec).first().copied()
}

/// Whether an entry's first operand is written. It is not for stores, reductions without a result,
/// barriers, fences, waits with a count (`cp.async.wait_group N`), prefetches, and the instructions that
/// take only inputs (`nanosleep t`, `pmevent a`, `setmaxnreg n`, `stackrestore a`).
pub fn first_operand_is_destination(spec: &OpSpec) -> bool {
    if spec.operands.1 == 0 || matches!(spec.name, "cp" | "wgmma" | "brx" | "bra" | "ret" | "exit") {
        return false;
    }
    match (spec.name, spec.sub) {
        ("bar" | "barrier", _) => spec.groups.iter().any(|g| g.kind == G::Type),
        ("mbarrier", [m]) => !matches!(*m, ".init" | ".inval" | ".expect_tx" | ".complete_tx"),
        ("multimem", [m]) => *m == ".ld_reduce",
        ("tensormap", [m]) => *m == ".load",
        // `wmma.mma` writes its `d` fragment as `wmma.load` does; only `wmma.store` has none.
        ("wmma", [m]) => *m != ".store",
        (
            "st" | "red" | "sust" | "sured" | "stmatrix" | "prefetch" | "prefetchu" | "applypriority" | "discard"
            | "stackrestore" | "nanosleep" | "pmevent" | "setmaxnreg",
            _,
        ) => false,
        _ => true,
    }
}

/// The primary entry of an opcode token (`cp`, `ld`). A dotted form (`cp.async.bulk`, `ld.global.nc`,
/// `mbarrier.try_wait`) picks the entry that documents it: the entry of the manual section with that
/// title, else the entry with the longest matching `sub` prefix that accepts the modifiers, or knows most
/// of them.
pub fn lookup(opcode: &str) -> Option<&'static OpSpec> {
    let Some((name, rest)) = opcode.split_once('.') else {
        return entries(opcode).first().copied();
    };
    if let Some(sec) = SECTIONS
        .iter()
        .find(|s| s.title.split(['/', ',']).any(|t| t.trim() == opcode))
    {
        let in_sec = || TABLE.iter().filter(|s| s.section == sec.number);
        if let Some(s) = in_sec().find(|s| s.form() == opcode).or_else(|| in_sec().next()) {
            return Some(s);
        }
        if let Some(s) = TABLE.iter().find(|s| sec.opcodes.contains(&s.form().as_str())) {
            return Some(s);
        }
    }
    let mods: Vec<String> = rest.split('.').map(|m| format!(".{m}")).collect();
    let mut best: Option<(&'static OpSpec, (usize, bool, usize))> = None;
    for s in lookup_all(name) {
        if s.sub.len() > mods.len() || !s.sub.iter().zip(&mods).all(|(a, b)| a == b) {
            continue;
        }
        let known = mods[s.sub.len()..]
            .iter()
            .filter(|m| s.groups.iter().any(|g| g.values.contains(&m.as_str())))
            .count();
        let all: Vec<&str> = mods.iter().map(String::as_str).collect();
        let score = (s.sub.len(), decode_with(s, &all).is_ok(), known);
        if best.is_none_or(|(_, b)| score > b) {
            best = Some((s, score));
        }
    }
    best.map(|(s, _)| s)
}

/// Every entry of an opcode token, in table order (the primary entry first).
pub fn lookup_all(opcode: &str) -> impl Iterator<Item = &'static OpSpec> + '_ {
    entries(opcode).iter().copied()
}

/// An instruction's modifiers, each placed in its group.
///
/// A modifier is kept as two indices into its entry: the group and the value within the group (the
/// `sub` prefix counts as group [`SUB`]). Decoding allocates nothing, and a decoded instruction is small
/// enough for the checked IR to keep one per instruction.
#[derive(Clone, Debug)]
pub struct Decoded {
    pub spec: &'static OpSpec,
    slots: smallvec::SmallVec<[(u8, u8); 8]>,
}

/// The group index of a `sub` prefix modifier in [`Decoded`]'s slots.
const SUB: u8 = u8::MAX;

impl Decoded {
    /// Each modifier with its group, in the order written (the `sub` prefix first).
    pub fn mods(&self) -> impl Iterator<Item = (G, &'static str)> + '_ {
        let spec = self.spec;
        self.slots.iter().map(move |&(g, v)| match g {
            SUB => (G::Sub, spec.sub[v as usize]),
            g => {
                let g = &spec.groups[g as usize];
                (g.kind, g.values[v as usize])
            }
        })
    }
    pub fn get(&self, g: G) -> Option<&'static str> {
        self.mods().find(|&(k, _)| k == g).map(|(_, v)| v)
    }
    pub fn has(&self, m: &str) -> bool {
        self.mods().any(|(_, v)| v == m)
    }
    /// A barrier of the whole CTA (`bar.sync`, `bar.red`, `barrier.sync`, `barrier.red`; not the warp's
    /// or the cluster's).
    pub fn is_cta_barrier(&self) -> bool {
        matches!(self.spec.name, "bar" | "barrier")
            && matches!(self.get(G::Sync), Some(".sync") | Some(".red"))
            && self.get(G::Scope) != Some(".warp")
            && !self.has(".cluster")
    }
    /// The state space of the instruction's `k`-th address operand (counting address operands only):
    /// `cp.async.ca.shared.global [d], [s]` names the destination's space, then the source's; an
    /// instruction with one space names it for all of them.
    pub fn space_of_address(&self, k: usize) -> Option<&'static str> {
        self.spaces().nth(k).or_else(|| self.spaces().next())
    }
    /// The state spaces the instruction names, in the order written (destination, then source).
    pub fn spaces(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.mods()
            .filter(|(g, _)| matches!(g, G::Space | G::SrcSpace))
            .map(|(_, v)| v)
    }
    /// Types in the order written: for `cvt.f32.s32` that is destination, source. Packed types that have
    /// no [`Type`] of their own stand for the bit-size type of their register (`.e4m3x2` is `.b16`, `.e2m1x2` `.b8`,
    /// `.u16x2` is `.b32`); other such names (`.e4m3`, `.s4`, `.b1` of matrix instructions) are skipped.
    pub fn types(&self) -> impl Iterator<Item = Type> + '_ {
        self.mods()
            .filter(|(k, _)| *k == G::Type || *k == G::Size)
            .filter_map(|(_, v)| {
                Type::from_dot(v).or(match v {
                    ".e4m3x2" | ".e5m2x2" | ".e2m3x2" | ".e3m2x2" | ".ue8m0x2" => Some(Type::B16),
                    ".e2m1x2" => Some(Type::B8),
                    ".u16x2" | ".s16x2" => Some(Type::B32),
                    ".f32x2" => Some(Type::B64),
                    _ => None,
                })
            })
    }
    /// The type modifiers as written, in order (`.e2m1x2`, `.u4` … included).
    pub fn type_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.mods().filter(|&(g, _)| g == G::Type).map(|(_, v)| v)
    }
    pub fn ty(&self) -> Option<Type> {
        self.types().next()
    }
    /// Whether the instruction decoded to its opcode's primary entry (the forms the lowering was written
    /// for); forms that only an extension entry accepts answer false.
    pub fn is_primary(&self) -> bool {
        self.spec.is_primary()
    }
    /// The `.version` and `sm_XX` this instruction needs: its entry's base requirement raised by the
    /// modifiers it uses.
    pub fn requires(&self) -> ((u32, u32), u32) {
        let (mut ptx, mut sm) = (self.spec.ptx, self.spec.sm);
        for r in self.spec.reqs.iter().filter(|r| self.has(r.value)) {
            ptx = ptx.max(r.ptx);
            sm = sm.max(r.sm);
        }
        // Requirements of combinations, which per-modifier entries cannot state (ptxas agrees with each):
        // `cvt` between `.bf16` and anything but `.f32` came with sm_90 and PTX 7.8; `.satfinite` into
        // the 16-bit float types and `.rna` tf32 came with PTX 8.1, and into tf32 with any other
        // rounding with PTX 8.6 and sm_100 (fp8 destinations keep the entry's own requirement).
        if self.spec.name == "cvt" {
            let ts: Vec<Type> = self.types().collect();
            if self.spec.is_primary()
                && ts.contains(&Type::Bf16)
                && ts.iter().any(|t| !matches!(t, Type::Bf16 | Type::F32))
            {
                ptx = ptx.max((7, 8));
                sm = sm.max(90);
            }
            if self.has(".satfinite") {
                match ts.first() {
                    Some(Type::F16 | Type::Bf16 | Type::F16x2 | Type::Bf16x2) => ptx = ptx.max((8, 1)),
                    Some(Type::Tf32) if self.get(G::Round) == Some(".rna") => ptx = ptx.max((8, 1)),
                    Some(Type::Tf32) => {
                        ptx = ptx.max((8, 6));
                        sm = sm.max(100);
                    }
                    _ => {}
                }
            }
        }
        (ptx, sm)
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum DecodeError<'m> {
    UnknownOpcode,
    /// The modifier at this index is not valid here; `suggestion` is the nearest valid one.
    BadModifier {
        index: usize,
        text: &'m str,
        suggestion: Option<&'static str>,
    },
    Repeated {
        index: usize,
        text: &'m str,
    },
    Missing {
        group: G,
        values: &'static [&'static str],
    },
}

impl DecodeError<'_> {
    /// How far decoding got: errors further along describe the intended form better.
    fn progress(&self, n: usize) -> usize {
        match self {
            DecodeError::UnknownOpcode => 0,
            DecodeError::BadModifier { index, .. } | DecodeError::Repeated { index, .. } => *index,
            DecodeError::Missing { .. } => n,
        }
    }
}

/// Places each modifier in a group of the instruction's entry. Among the entries of the opcode whose `sub`
/// prefix the modifiers start with, longer prefixes are tried first, then table order; the first entry
/// that accepts the modifiers wins. When none does, the error of the entry that got furthest is reported.
pub fn decode<'m>(opcode: &str, mods: &[&'m str]) -> Result<Decoded, DecodeError<'m>> {
    let mut cands: [Option<&'static OpSpec>; 32] = [None; 32];
    let (mut n, mut any) = (0, false);
    for &s in entries(opcode) {
        any = true;
        if s.sub.len() <= mods.len() && s.sub.iter().zip(mods).all(|(a, b)| a == b) && n < cands.len() {
            // Insertion keeps table order among equal prefix lengths.
            let at = cands[..n]
                .iter()
                .position(|c| c.is_some_and(|c| c.sub.len() < s.sub.len()))
                .unwrap_or(n);
            cands.copy_within(at..n, at + 1);
            cands[at] = Some(s);
            n += 1;
        }
    }
    if !any {
        return Err(DecodeError::UnknownOpcode);
    }
    if n == 0 {
        return Err(sub_error(opcode, mods));
    }
    let mut best: Option<((usize, bool), DecodeError<'m>)> = None;
    for s in cands[..n].iter().flatten() {
        match decode_with(s, mods) {
            Ok(d) => return Ok(d),
            Err(e) => {
                // Further is better; at equal progress, an error with a suggestion.
                let p = (
                    e.progress(mods.len()),
                    matches!(
                        e,
                        DecodeError::BadModifier {
                            suggestion: Some(_),
                            ..
                        }
                    ),
                );
                if best.as_ref().is_none_or(|(q, _)| p > *q) {
                    best = Some((p, e));
                }
            }
        }
    }
    Err(best.expect("at least one candidate").1)
}

/// No entry's `sub` prefix matches: report the first modifier where the sub-instruction goes wrong.
fn sub_error<'m>(opcode: &str, mods: &[&'m str]) -> DecodeError<'m> {
    let all = || entries(opcode).iter().copied();
    let depth = |s: &OpSpec| s.sub.iter().zip(mods).take_while(|(a, b)| a == b).count();
    let k = all().map(depth).max().unwrap_or(0);
    let next = all().filter(|s| s.sub.len() > k && depth(s) >= k);
    if k < mods.len() {
        return DecodeError::BadModifier {
            index: k,
            text: mods[k],
            suggestion: crate::diag::nearest(mods[k], next.map(|s| s.sub[k])),
        };
    }
    let values = match (k, SUBS.iter().find(|(o, _)| *o == opcode)) {
        (0, Some((_, v))) => v,
        _ => next.map(|s| std::slice::from_ref(&s.sub[k])).next().unwrap_or(&[]),
    };
    DecodeError::Missing { group: G::Sub, values }
}

/// The groups of an entry that list a modifier, in group order, from an index built once (decoding
/// every instruction of a large file must not compare each modifier with every value of every group).
fn groups_of(spec: &'static OpSpec, m: &str) -> &'static [u8] {
    type Index = Vec<rustc_hash::FxHashMap<&'static str, Vec<u8>>>;
    static INDEX: std::sync::OnceLock<Index> = std::sync::OnceLock::new();
    let index = INDEX.get_or_init(|| {
        TABLE
            .iter()
            .map(|s| {
                let mut map = rustc_hash::FxHashMap::<&'static str, Vec<u8>>::default();
                for (k, g) in s.groups.iter().enumerate() {
                    for &v in g.values {
                        let e = map.entry(v).or_default();
                        if e.last() != Some(&(k as u8)) {
                            e.push(k as u8);
                        }
                    }
                }
                map
            })
            .collect()
    });
    index[index_of(spec)].get(m).map_or(&[], Vec::as_slice)
}

fn decode_with<'m>(spec: &'static OpSpec, mods: &[&'m str]) -> Result<Decoded, DecodeError<'m>> {
    let mut out: smallvec::SmallVec<[(u8, u8); 8]> = smallvec::SmallVec::new();
    out.extend((0..spec.sub.len()).map(|j| (SUB, j as u8)));
    let (mut filled, mut types) = (0u64, 0u8);
    for (index, &m) in mods.iter().enumerate().skip(spec.sub.len()) {
        let mut seen = false;
        let mut placed = None;
        for &k in groups_of(spec, m) {
            let g = &spec.groups[k as usize];
            let Some(v) = g.values.iter().position(|&v| v == m) else {
                continue;
            };
            seen = true;
            if g.kind == G::Type {
                if types < spec.types.1 {
                    types += 1;
                    placed = Some((k, v as u8));
                    break;
                }
            } else if filled & (1 << k) == 0 {
                filled |= 1 << k;
                placed = Some((k, v as u8));
                break;
            }
        }
        match placed {
            Some(p) => out.push(p),
            None if seen => return Err(DecodeError::Repeated { index, text: m }),
            None => {
                let all = spec.groups.iter().flat_map(|g| g.values.iter().copied());
                return Err(DecodeError::BadModifier {
                    index,
                    text: m,
                    suggestion: crate::diag::nearest(m, all),
                });
            }
        }
    }
    for (k, g) in spec.groups.iter().enumerate() {
        let missing = if g.kind == G::Type {
            types < spec.types.0
        } else {
            g.required && filled & (1 << k) == 0
        };
        if missing {
            return Err(DecodeError::Missing {
                group: g.kind,
                values: g.values,
            });
        }
    }
    Ok(Decoded { spec, slots: out })
}
