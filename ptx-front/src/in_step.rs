//! Warp-synchronous code: which shared-memory accesses a warp's lanes must make in step.
//!
//! Code written for GPUs before `__syncwarp` exchanges values between the lanes of a warp through
//! shared memory with nothing between a lane's store and another lane's load: a warp executes each
//! instruction for all its converged lanes before the next, so every lane's store is done when any
//! lane loads. HeCBench's romberg sums columns with 17 lanes and lets lane 0 read the sums at once;
//! reductions and scans unrolled over a warp do the same step after step. Threads that run one after
//! another (the host's thread loops) read their neighbours' old values instead.
//!
//! A body needs this when, between barriers and in program order, a shared load can read what a
//! shared store of another lane of the warp wrote: a read after a write that only lockstep orders.
//! Addresses are compared lane by lane, as functions of the lane's `%tid.x` over values the same for
//! the whole warp ([`Lanes`]: `s + 4 * tid` and `s + 4 * tid - 8` meet for lanes two apart; a load
//! of `s` reads the word lane 0 stored). A lane reading back its own words, words no two lanes of a
//! warp can share, addresses the analysis cannot relate, and a read after a write only around a loop
//! (a lane updating its own elements, one per iteration) do not count: such bodies run as before. A block reduction that loads, stores and then
//! waits at `__syncthreads()` has no such pair either. In a body that has one, every shared access
//! that some other shared access can precede without a barrier between them is made in step: the
//! warp's lanes that reach it wait for each other there, so all of them have made the access before
//! (whatever its address) when any makes this one, as on a GPU. The first access after a barrier
//! needs no wait: the next one orders it.
//!
//! What counts as a barrier here is what already makes a warp's lanes meet on the host: CTA barriers,
//! `bar.warp.sync` (`__syncwarp`) and the warp collectives (`shfl`, `vote`, `match`, `redux`, and the
//! matrix instructions), and, in the lowering, a call to a function that synchronises. Another `call`
//! is not one: the analysis looks at one body, and more waits only cost time. Accesses through
//! generic addresses are not seen, and `%tid.y` and `%tid.z` count as the same for a whole warp (so
//! lanes of a block narrower than 32 threads are not told apart).

use crate::ast::{visit, Instruction, Operand, Statement};
use crate::scope::Labels;
use crate::types::Space;

/// The places (span starts, ascending) of the shared-memory loads and stores of `body` that a warp's
/// lanes make in step; empty for a body with no read after a write between barriers.
pub fn accesses(body: &[Statement<'_>]) -> Vec<u32> {
    accesses_with(body, &|_| false)
}

/// [`accesses`], where a call to a function `meets` names (one that synchronises the threads, such as
/// a barrier in a device function) counts as a barrier. Fewer barriers only ever add accesses.
pub fn accesses_with(body: &[Statement<'_>], meets: &dyn Fn(&str) -> bool) -> Vec<u32> {
    let mut insts: Vec<&Instruction<'_>> = vec![];
    // Each label's definition (by its place) and the instruction it stands before.
    let mut label_at = rustc_hash::FxHashMap::default();
    visit(body, &mut |s| match s {
        Statement::Inst(i) => insts.push(i),
        Statement::Label(n) => {
            label_at.insert(n.span.start, insts.len());
        }
        _ => {}
    });
    let kinds: Vec<Kind> = insts.iter().map(|i| kind(i, meets)).collect();
    if !kinds.contains(&Kind::Store) || !kinds.contains(&Kind::Load) {
        return vec![];
    }
    let labels = Labels::of(body);
    let n = insts.len();
    let all_labels: Vec<usize> = label_at.values().copied().collect();
    // Successors: `n` stands for leaving the body.
    let successors = |k: usize| -> Vec<usize> {
        let i = insts[k];
        let fall = (i.guard.is_some() || !matches!(i.opcode.text, "bra" | "brx" | "ret" | "exit")).then_some(k + 1);
        let jumps = match i.opcode.text {
            "bra" => match i.operands.first() {
                Some(Operand::Sym { name, .. }) => {
                    let to = labels.resolve(name).and_then(|l| label_at.get(&l.span.start));
                    vec![to.copied().unwrap_or(n)]
                }
                _ => vec![n],
            },
            // An indirect branch may go to any label.
            "brx" => all_labels.clone(),
            _ => vec![],
        };
        jumps.into_iter().chain(fall).collect()
    };
    let succ: Vec<Vec<usize>> = (0..n).map(successors).collect();
    // A shared store that reaches a shared load in program order, without going round a loop: a
    // loop that loads and stores in each iteration (a lane updating its own elements) has a read
    // after a write only through its back edge, and is left as it is.
    let forward = flow(&kinds, &succ, |from, to| to > from);
    let read_after_write = (0..n).any(|k| kinds[k] == Kind::Load && forward[k] & STORED != 0);
    if !read_after_write {
        return vec![];
    }
    // Where basic blocks start: at labels, and after an instruction that may go elsewhere than on.
    let mut starts = vec![false; n];
    for &at in label_at.values().filter(|&&at| at < n) {
        starts[at] = true;
    }
    for k in 0..n.saturating_sub(1) {
        starts[k + 1] |= succ[k] != [k + 1];
    }
    if !exchanges(&insts, &starts, &kinds, &succ, &forward) {
        return vec![];
    }
    let reach = flow(&kinds, &succ, |_, _| true);
    (0..n)
        .filter(|&k| matches!(kinds[k], Kind::Load | Kind::Store) && reach[k] & ACCESSED != 0)
        .map(|k| insts[k].span.start)
        .collect()
}

/// Per instruction (and one past the last), which kinds of shared access reach it without crossing a
/// barrier, along the edges `follow` keeps.
fn flow(kinds: &[Kind], succ: &[Vec<usize>], follow: impl Fn(usize, usize) -> bool) -> Vec<u8> {
    let n = kinds.len();
    let mut reach = vec![0u8; n + 1];
    let mut work: Vec<usize> = (0..n).rev().collect();
    let mut queued = vec![true; n];
    while let Some(k) = work.pop() {
        queued[k] = false;
        let out = match kinds[k] {
            Kind::Barrier => 0,
            Kind::Store => reach[k] | STORED | ACCESSED,
            Kind::Load => reach[k] | ACCESSED,
            Kind::Other => reach[k],
        };
        for &s in succ[k].iter().filter(|&&s| follow(k, s)) {
            if reach[s] | out != reach[s] {
                reach[s] |= out;
                if s < n && !queued[s] {
                    queued[s] = true;
                    work.push(s);
                }
            }
        }
    }
    reach
}

/// Whether some shared store reaches, in program order and with no barrier between, a shared load
/// that may read what the store of another lane of the warp wrote: their addresses differ from lane
/// to lane over the same other values ([`Lanes`]), and for some two lanes of a warp the bytes they
/// touch meet. Addresses the analysis cannot relate (two arrays a runtime value apart) do not count,
/// nor does a lane reading back its own words.
fn exchanges<'m, 'a>(
    insts: &[&'m Instruction<'a>],
    starts: &[bool],
    kinds: &[Kind],
    succ: &[Vec<usize>],
    forward: &[u8],
) -> bool {
    let mut values = Values::new(insts, starts);
    // Each access's address and width, worked out once.
    let mut addresses: Vec<Option<Option<(Lanes, i64)>>> = vec![None; insts.len()];
    let mut access = |k: usize| -> Option<(Lanes, i64)> {
        addresses[k]
            .get_or_insert_with(|| {
                let at = crate::isa::address_operand(insts[k].opcode.text)?;
                let Some(Operand::Addr(a)) = insts[k].operands.get(at) else {
                    return None;
                };
                let base = a
                    .base
                    .as_ref()
                    .map_or_else(|| Lanes::constant(0), |b| values.name(b.text, k));
                Some((base.plus(&Lanes::constant(a.offset), 1), bytes(insts[k])))
            })
            .clone()
    };
    let mut work = 0usize;
    // The store whose search last visited each instruction (one past its index; 0: none).
    let mut seen = vec![0usize; insts.len()];
    for store in (0..insts.len()).filter(|&k| kinds[k] == Kind::Store) {
        let Some((to, width)) = access(store) else {
            continue;
        };
        // The loads this store reaches in program order without a barrier.
        let mut stack: Vec<usize> = succ[store].iter().copied().filter(|&s| s > store).collect();
        while let Some(k) = stack.pop() {
            if k >= insts.len() || seen[k] == store + 1 || kinds[k] == Kind::Barrier {
                continue;
            }
            seen[k] = store + 1;
            work += 1;
            if kinds[k] == Kind::Load && forward[k] & STORED != 0 {
                // Comparing two addresses lane by lane costs about as much as 32 visits.
                work += 32;
                if access(k).is_some_and(|(from, read)| to.meets(width, &from, read)) {
                    return true;
                }
            }
            if work > BUDGET {
                return false;
            }
            stack.extend(succ[k].iter().copied().filter(|&s| s > k));
        }
    }
    false
}

/// Instructions visited (a comparison of two addresses counting 32) beyond which [`exchanges`] gives
/// up, and the body runs as before: a bound of some tens of milliseconds on a huge body.
const BUDGET: usize = 1 << 22;

/// The bytes a load or store moves: its type's size times its vector's length.
fn bytes(i: &Instruction<'_>) -> i64 {
    let mut size = 4;
    let mut count = 1;
    for m in &i.mods {
        if let Some(t) = crate::types::Type::from_dot(m.text) {
            size = t.bytes() as i64;
        }
        if let Some(n) = m.text.strip_prefix(".v").and_then(|n| n.parse::<i64>().ok()) {
            count = n;
        }
    }
    size * count
}

/// A value as the lanes of a warp see it: a part that depends on the lane (`at[l]` for the lane
/// whose `%tid.x` is `l`), plus a sum of values the analysis treats as the same for every lane of the
/// warp (`opaque`: registers it does not follow, variables' addresses, other special registers, each
/// with its factor).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Lanes {
    at: [i64; 32],
    opaque: Vec<(String, i64)>,
}

impl Lanes {
    fn constant(k: i64) -> Lanes {
        Lanes {
            at: [k; 32],
            opaque: vec![],
        }
    }

    fn lane() -> Lanes {
        Lanes {
            at: std::array::from_fn(|l| l as i64),
            opaque: vec![],
        }
    }

    fn opaque(name: &str) -> Lanes {
        Lanes {
            at: [0; 32],
            opaque: vec![(name.to_string(), 1)],
        }
    }

    /// The constant this is, if it is one.
    fn known(&self) -> Option<i64> {
        (self.opaque.is_empty() && self.at.iter().all(|&v| v == self.at[0])).then_some(self.at[0])
    }

    fn plus(mut self, other: &Lanes, sign: i64) -> Lanes {
        for (a, b) in self.at.iter_mut().zip(other.at) {
            *a = a.wrapping_add(b.wrapping_mul(sign));
        }
        for (name, f) in &other.opaque {
            match self.opaque.binary_search_by(|(n, _)| n.as_str().cmp(name)) {
                Ok(at) => self.opaque[at].1 = self.opaque[at].1.wrapping_add(f.wrapping_mul(sign)),
                Err(at) => self.opaque.insert(at, (name.clone(), f.wrapping_mul(sign))),
            }
        }
        self.opaque.retain(|&(_, f)| f != 0);
        self
    }

    fn times(mut self, k: i64) -> Lanes {
        self.at.iter_mut().for_each(|a| *a = a.wrapping_mul(k));
        self.opaque.iter_mut().for_each(|(_, f)| *f = f.wrapping_mul(k));
        self.opaque.retain(|&(_, f)| f != 0);
        self
    }

    /// `op` lane by lane, for a value that depends on the lane alone.
    fn map(self, op: impl Fn(i64) -> Option<i64>) -> Option<Lanes> {
        if !self.opaque.is_empty() {
            return None;
        }
        let mut at = [0; 32];
        for (a, v) in at.iter_mut().zip(self.at) {
            *a = op(v)?;
        }
        Some(Lanes { at, opaque: vec![] })
    }

    /// Whether `width` bytes here for some lane and `read` bytes at `other` for another lane of the
    /// warp overlap. Values with different opaque parts are not compared: such a body runs as before.
    fn meets(&self, width: i64, other: &Lanes, read: i64) -> bool {
        self.opaque == other.opaque
            && self.at.iter().enumerate().any(|(j, &start)| {
                other
                    .at
                    .iter()
                    .enumerate()
                    .any(|(k, &from)| j != k && from < start.wrapping_add(width) && start < from.wrapping_add(read))
            })
    }
}

/// The values of a body's registers as [`Lanes`], worked out on demand: a register with one
/// definition by `mov`, `cvt`, `cvta`, `add`, `sub`, a multiplication, shift or `mad` by a constant,
/// or a bitwise or division operation with a constant on a value that depends on the lane alone, is
/// followed; any other is opaque.
struct Values<'s, 'm, 'a> {
    insts: &'s [&'m Instruction<'a>],
    /// Each register's definitions, by instruction index, ascending.
    defs: rustc_hash::FxHashMap<&'a str, Vec<usize>>,
    /// The first instruction of each instruction's basic block.
    block: Vec<usize>,
    /// The value each followed definition gives, by its index.
    known: rustc_hash::FxHashMap<usize, Lanes>,
}

impl<'s, 'm, 'a> Values<'s, 'm, 'a> {
    fn new(insts: &'s [&'m Instruction<'a>], starts: &[bool]) -> Self {
        let mut defs: rustc_hash::FxHashMap<&'a str, Vec<usize>> = Default::default();
        for (k, i) in insts.iter().enumerate() {
            let mut define = |name: &'a str| defs.entry(name).or_default().push(k);
            match i.operands.first() {
                Some(Operand::Sym { name, .. }) => define(name.text),
                Some(Operand::Vector(v, _)) => v.iter().for_each(|o| {
                    if let Operand::Sym { name, .. } = o {
                        define(name.text)
                    }
                }),
                _ => {}
            }
        }
        let mut block = vec![0; insts.len()];
        for k in 1..insts.len() {
            block[k] = if starts[k] { k } else { block[k - 1] };
        }
        Values {
            insts,
            defs,
            block,
            known: Default::default(),
        }
    }

    /// The value of register (or variable) `name` where instruction `at` reads it.
    fn name(&mut self, name: &'a str, at: usize) -> Lanes {
        self.named(name, at, 0)
    }

    /// The definition of `name` that instruction `at` reads: the last one before it in its block,
    /// else the register's only one; `None` when that is not known.
    fn reaching(&self, name: &str, at: usize) -> Option<usize> {
        let defs = self.defs.get(name)?;
        let before = defs.partition_point(|&d| d < at);
        match before.checked_sub(1).map(|b| defs[b]) {
            Some(d) if d >= self.block[at] => Some(d),
            _ if defs.len() == 1 => Some(defs[0]),
            _ => None,
        }
    }

    fn named(&mut self, name: &'a str, at: usize, depth: u32) -> Lanes {
        if name == "%laneid" {
            return Lanes::lane();
        }
        let Some(d) = self.reaching(name, at).filter(|_| depth < 64) else {
            return Lanes::opaque(name);
        };
        if let Some(v) = self.known.get(&d) {
            return v.clone();
        }
        let v = self.defined(d, depth + 1).unwrap_or_else(|| Lanes::opaque(name));
        self.known.insert(d, v.clone());
        v
    }

    fn operand(&mut self, o: &Operand<'a>, at: usize, depth: u32) -> Option<Lanes> {
        Some(match o {
            Operand::Sym { name, component } => match (name.text, component.map(|c| c.text)) {
                ("%tid", Some(".x")) => Lanes::lane(),
                (n, Some(c)) => Lanes::opaque(&format!("{n}{c}")),
                (n, None) => self.named(n, at, depth),
            },
            Operand::Imm(crate::ast::Imm::Int(v), _) => Lanes::constant(*v),
            Operand::Offset(name, off, _) => Lanes::opaque(name.text).plus(&Lanes::constant(*off), 1),
            _ => return None,
        })
    }

    /// The value instruction `d` writes, if it is one the analysis follows.
    fn defined(&mut self, d: usize, depth: u32) -> Option<Lanes> {
        let i = self.insts[d];
        let ops = &i.operands;
        // A guarded definition may not happen, and one of several destinations (`mov.b64 {a, b}, x`)
        // is a part of the source: neither is followed.
        if i.guard.is_some() || !matches!(ops.first(), Some(Operand::Sym { .. })) {
            return None;
        }
        let low = i.mods.iter().any(|m| m.text == ".lo" || m.text == ".wide");
        let mut arg = |k: usize| ops.get(k).and_then(|o| self.operand(o, d, depth));
        match (i.opcode.text, ops.len()) {
            ("mov" | "cvt" | "cvta", 2) => arg(1),
            ("add", 3) => Some(arg(1)?.plus(&arg(2)?, 1)),
            ("sub", 3) => Some(arg(1)?.plus(&arg(2)?, -1)),
            ("mul", 3) if low => product(arg(1)?, arg(2)?),
            ("mad", 4) if low => Some(product(arg(1)?, arg(2)?)?.plus(&arg(3)?, 1)),
            ("shl", 3) => {
                let by = arg(2)?.known().filter(|b| (0..32).contains(b))?;
                Some(arg(1)?.times(1 << by))
            }
            ("shr" | "and" | "or" | "xor" | "rem" | "div", 3) => {
                let k = arg(2)?.known()?;
                let op = i.opcode.text;
                // In the instruction's own width and signedness (`.b`/`.u` are unsigned).
                let ty = i.mods.iter().find_map(|m| crate::types::Type::from_dot(m.text))?;
                let bits = ty.bits();
                let signed = ty.is_signed();
                let wrap = |v: i64| match (bits, signed) {
                    (32, true) => v as i32 as i64,
                    (32, false) => v as u32 as i64,
                    (64, _) => v,
                    _ => v & ((1i64 << bits.min(62)) - 1),
                };
                arg(1)?.map(|v| {
                    let (v, k) = (wrap(v), wrap(k));
                    let unsigned = |f: fn(u64, u64) -> Option<u64>| f(v as u64, k as u64).map(|r| wrap(r as i64));
                    match op {
                        "shr" if signed => (0..64).contains(&k).then(|| v >> k),
                        "shr" => (0..64).contains(&k).then(|| wrap(((v as u64) >> k) as i64)),
                        "and" => Some(wrap(v & k)),
                        "or" => Some(wrap(v | k)),
                        "xor" => Some(wrap(v ^ k)),
                        "rem" if signed => v.checked_rem(k),
                        "rem" => unsigned(u64::checked_rem),
                        _ if signed => v.checked_div(k),
                        _ => unsigned(u64::checked_div),
                    }
                })
            }
            _ => None,
        }
    }
}

/// `a * b` where one of them is a constant, or both depend on the lane alone.
fn product(a: Lanes, b: Lanes) -> Option<Lanes> {
    match (a.known(), b.known()) {
        (_, Some(k)) => Some(a.times(k)),
        (Some(k), _) => Some(b.times(k)),
        _ if a.opaque.is_empty() && b.opaque.is_empty() => Some(Lanes {
            at: std::array::from_fn(|l| a.at[l].wrapping_mul(b.at[l])),
            opaque: vec![],
        }),
        _ => None,
    }
}

/// A shared store reaches the instruction.
const STORED: u8 = 1;
/// Some shared access reaches the instruction.
const ACCESSED: u8 = 2;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Load,
    Store,
    /// Where the warp's lanes meet (a guarded one may be skipped, so it is not one).
    Barrier,
    Other,
}

fn kind(i: &Instruction<'_>, meets: &dyn Fn(&str) -> bool) -> Kind {
    let shared = || i.mods.iter().any(|m| Space::from_dot(m.text) == Some(Space::Shared));
    match i.opcode.text {
        "ld" if shared() => Kind::Load,
        "st" if shared() => Kind::Store,
        _ if i.guard.is_some() => Kind::Other,
        "bar" | "barrier" if !i.mods.iter().any(|m| m.text == ".arrive") => Kind::Barrier,
        "shfl" | "vote" | "match" | "redux" | "mma" | "wmma" | "ldmatrix" | "stmatrix" | "movmatrix" => Kind::Barrier,
        "call" if i.callee().is_some_and(|f| meets(f.text)) => Kind::Barrier,
        _ => Kind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines (1-based) of `body`'s in-step accesses.
    fn lines(body: &str) -> Vec<usize> {
        let src = format!(".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{{\n{body}\n}}\n");
        let (m, diags) = crate::parse(&src);
        assert!(diags.is_empty(), "{diags:?}");
        let crate::ast::Item::Function(f) = &m.items[0] else {
            panic!()
        };
        accesses(f.body.as_deref().unwrap())
            .into_iter()
            .map(|at| src[..at as usize].lines().count() - 4)
            .collect()
    }

    /// Declarations, and `%r11`: the address of the lane's word of `s` (`s + 4 * %tid.x`); six lines.
    const LANE_WORD: &str = ".reg .b32 %r<20>;\n.reg .pred %p<2>;\n\
        mov.u32 %r8, %tid.x;\n shl.b32 %r9, %r8, 2;\n mov.u32 %r10, s;\n add.u32 %r11, %r10, %r9;";

    #[test]
    fn a_read_after_a_write_puts_the_exchange_in_step() {
        // An unrolled warp reduction: load a neighbour's, store one's own, load again.
        let body = format!(
            "{LANE_WORD}\n\
            ld.shared.u32 %r1, [%r11+64];\n\
            st.shared.u32 [%r11], %r1;\n\
            ld.shared.u32 %r2, [%r11+32];\n\
            add.u32 %r3, %r2, %r1;\n\
            st.shared.u32 [%r11], %r3;\n\
            ret;"
        );
        // The first load needs no wait; everything after it does.
        assert_eq!(lines(&body), vec![8, 9, 11]);
        // A lane reading back its own word, or a word a warp's lanes cannot reach, needs nothing.
        assert!(lines(&body.replace("[%r11+32]", "[%r11]")).is_empty());
        assert!(lines(&body.replace("[%r11+32]", "[%r11+2048]")).is_empty());
    }

    #[test]
    fn lanes_reading_others_results_count() {
        // Romberg's: lanes store their sums, then lane 0 reads them all with no barrier.
        let body = format!(
            "{LANE_WORD}\n\
            st.shared.u32 [%r11], %r1;\n\
            setp.ne.u32 %p1, %r8, 0;\n\
            @%p1 bra $DONE;\n\
            ld.shared.v4.u32 {{%r2, %r3, %r4, %r5}}, [s];\n\
            $DONE:\n\
            ret;"
        );
        // The stores come first after the kernel's start: the load waits for them.
        assert_eq!(lines(&body), vec![10]);
        // Two arrays a value apart the analysis cannot follow (a parameter) are not related.
        let apart = body.replace("[s];", "[%r12];").replace(
            "st.shared",
            "ld.param.u32 %r13, [n];\nadd.u32 %r12, %r11, %r13;\nst.shared",
        );
        assert!(lines(&apart).is_empty(), "{apart}");
    }

    #[test]
    fn a_barrier_between_write_and_read_needs_nothing() {
        let body = format!(
            "{LANE_WORD}\n\
            $L1:\n\
            ld.shared.u32 %r1, [%r11+64];\n\
            st.shared.u32 [%r11], %r1;\n\
            bar.sync 0;\n\
            @%p1 bra $L1;\n\
            ld.shared.u32 %r2, [%r11+4];\n\
            ret;"
        );
        assert_eq!(lines(&body), Vec::<usize>::new());
        assert_eq!(
            lines(&body.replace("bar.sync 0", "add.u32 %r1, %r1, 1")),
            vec![8, 9, 12]
        );
        // `__syncwarp` and a shuffle order the lanes too.
        assert!(lines(&body.replace("bar.sync 0", "bar.warp.sync -1")).is_empty());
        assert!(lines(&body.replace("bar.sync 0", "shfl.sync.bfly.b32 %r5, %r4, 1, 31, -1")).is_empty());
    }

    #[test]
    fn a_write_reaching_a_read_only_around_a_loop_does_not_count() {
        // A lane updating words of its own, one per iteration: the store reaches the next
        // iteration's load only through the back edge.
        let body = format!(
            "{LANE_WORD}\n\
            $L1:\n\
            ld.shared.u32 %r1, [%r11+4];\n\
            st.shared.u32 [%r11], %r1;\n\
            @%p1 bra $L1;\n\
            ret;"
        );
        assert!(lines(&body).is_empty());
    }

    #[test]
    fn a_guarded_barrier_may_be_skipped() {
        let body = format!(
            "{LANE_WORD}\n\
            st.shared.u32 [%r11], %r1;\n\
            @%p1 bar.sync 0;\n\
            ld.shared.u32 %r2, [%r11+4];\n\
            ret;"
        );
        assert_eq!(lines(&body), vec![9]);
    }
}
