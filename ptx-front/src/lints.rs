//! Warnings beyond what ptxas reports, from a control-flow graph of each function: unused registers
//! and labels, unreachable code, reads of registers no path has written, CTA barriers under
//! thread-dependent control flow, and warp collectives whose member mask differs between threads.

use crate::ast::{self, *};
use crate::diag::{Code, Diagnostic};
use crate::ir;
use crate::isa::{Decoded, G};
use crate::span::Span;

/// What the lints need from the whole module: labels that debug sections name, and whether the module
/// has debug information. Each function is then linted from its checked IR ([`Module::function`]).
pub struct Module<'a> {
    section_refs: rustc_hash::FxHashSet<&'a str>,
    debug: bool,
}

impl<'a> Module<'a> {
    pub fn new(m: &ast::Module<'a>) -> Self {
        // Labels named by debug sections (`.b64 $L__tmp3`) count as used.
        let mut section_refs = rustc_hash::FxHashSet::default();
        for item in &m.items {
            if let Item::Directive(Directive::Section { entries, .. }) = item {
                for e in entries {
                    if let SectionEntry::Data { values, .. } = e {
                        values.iter().for_each(|v| expr_names(v, &mut section_refs));
                    }
                }
            }
        }
        // With debug information, labels are anchors for the debugger (`$L__tmp0`, Open64's `$LDWbegin`)
        // whether or not anything in the text refers to them.
        let debug = m.items.iter().any(|i| match i {
            Item::Directive(Directive::Section { .. } | Directive::Loc { .. } | Directive::File { .. }) => true,
            Item::Function(f) => f.body.as_ref().is_some_and(|b| {
                b.iter()
                    .any(|s| matches!(s, Statement::Directive(Directive::Loc { .. })))
            }),
            _ => false,
        });
        Module { section_refs, debug }
    }

    /// The warnings of one checked function.
    pub fn function(&self, f: &ir::Function<'_, 'a>, out: &mut Vec<Diagnostic>) {
        Func::build(f).run(&self.section_refs, self.debug, out);
    }
}

fn expr_names<'a>(e: &Expr<'a>, out: &mut rustc_hash::FxHashSet<&'a str>) {
    match e {
        Expr::Sym(n) | Expr::Generic(n, _) => {
            out.insert(n.text);
        }
        Expr::Unary(_, x, _) | Expr::Cast(_, x, _) | Expr::Mask(_, x, _) => expr_names(x, out),
        Expr::Binary(_, a, b, _) => {
            expr_names(a, out);
            expr_names(b, out);
        }
        Expr::Cond(a, b, c, _) => {
            expr_names(a, out);
            expr_names(b, out);
            expr_names(c, out);
        }
        Expr::Imm(..) => {}
    }
}

/// Registers a function may have for the flow analyses (their bit sets grow with registers × blocks).
const MAX_REGS: u64 = 1 << 22;

/// Where a thread-dependent value comes from, for the warnings' secondary labels.
#[derive(Clone, Copy)]
struct Origin(Span);

/// An instruction as the flow analyses see it.
struct Inst<'f, 'a> {
    i: &'f Instruction<'a>,
    d: Option<&'f Decoded>,
    /// Registers read, with the name as written (for messages).
    reads: smallvec::SmallVec<[(u32, Name<'a>); 4]>,
    writes: smallvec::SmallVec<[u32; 2]>,
    /// Reads `%tid`, `%laneid` or a lane mask directly.
    thread_special: Option<Span>,
    /// Computes a warp-wide result, the same in every lane (`vote`, `redux`, `activemask`, …).
    uniform: bool,
    /// Returns a per-thread value from memory that other threads race on (`atom`).
    atomic: bool,
}

struct Func<'f, 'm, 'a> {
    ir: &'f ir::Function<'m, 'a>,
    reg_count: u32,
    insts: Vec<Inst<'f, 'a>>,
    /// Names used as operands other than registers (labels, functions, prototypes).
    referenced: rustc_hash::FxHashSet<&'a str>,
}

/// The member-mask operand of a warp collective.
fn mask_operand(d: &Decoded, n: usize) -> Option<usize> {
    match d.spec.name {
        "shfl" | "vote" | "match" | "redux" if d.has(".sync") && n > 0 => Some(n - 1),
        "bar" if d.get(G::Scope) == Some(".warp") => Some(0),
        _ => None,
    }
}

impl<'f, 'm, 'a> Func<'f, 'm, 'a> {
    fn build(f: &'f ir::Function<'m, 'a>) -> Self {
        let mut referenced: rustc_hash::FxHashSet<&'a str> = f.listed.iter().copied().collect();
        let insts = f
            .insts
            .iter()
            .map(|x| {
                let i = x.ast;
                let mut thread_special = None;
                for u in f.uses_of(x) {
                    match u.sym {
                        ir::Sym::Reg(_) => {}
                        ir::Sym::Special(_)
                            if matches!(u.name.text, "%tid" | "%laneid") || u.name.text.starts_with("%lanemask_") =>
                        {
                            thread_special.get_or_insert(u.name.span);
                        }
                        _ => {
                            referenced.insert(u.name.text);
                        }
                    }
                }
                Inst {
                    i,
                    d: x.decoded.as_ref(),
                    reads: f.reads(x).collect(),
                    writes: f.writes(x).collect(),
                    thread_special,
                    uniform: matches!(
                        i.opcode.text,
                        "vote" | "redux" | "activemask" | "bar" | "barrier" | "elect"
                    ),
                    atomic: i.opcode.text == "atom",
                }
            })
            .collect();
        Func {
            ir: f,
            reg_count: f.reg_count.min(MAX_REGS + 1) as u32,
            insts,
            referenced,
        }
    }

    fn run(&self, section_refs: &rustc_hash::FxHashSet<&'a str>, debug: bool, out: &mut Vec<Diagnostic>) {
        self.unused(section_refs, debug, out);
        if self.insts.is_empty() {
            return;
        }
        let (blocks, succ) = self.ir.blocks();
        let reachable = reach(&succ, blocks.len());
        self.unreachable(&blocks, &reachable, out);
        // The flow analyses need decoded instructions (after errors they would only add noise) and
        // bit sets of registers × blocks that fit in memory.
        let words = (self.reg_count as u64).div_ceil(64);
        if self.ir.reg_count > MAX_REGS
            || words * blocks.len() as u64 > 1 << 24
            || self.insts.iter().any(|i| i.d.is_none())
        {
            return;
        }
        self.uninitialised(&blocks, &succ, &reachable, out);
        self.divergence(&blocks, &succ, out);
    }

    fn unused(&self, section_refs: &rustc_hash::FxHashSet<&'a str>, debug: bool, out: &mut Vec<Diagnostic>) {
        // Past the limit, registers are not tracked (see `run`); labels still are.
        let regs = if self.ir.reg_count > MAX_REGS {
            &[][..]
        } else {
            &self.ir.regs[..]
        };
        let mut used = vec![false; if regs.is_empty() { 0 } else { self.reg_count as usize }];
        for inst in self.insts.iter().filter(|_| !regs.is_empty()) {
            for &(r, _) in &inst.reads {
                used[r as usize] = true;
            }
            for &r in &inst.writes {
                used[r as usize] = true;
            }
        }
        for &ir::RegDecl {
            name,
            first,
            count: n,
            param,
            nested,
            ..
        } in regs
        {
            // nvcc and LLVM declare the frame's stack pointers as a pair wherever a function has a
            // local depot, whether or not the code uses both: nothing a user could remove.
            let frame_pointer = matches!(name.text, "%SP" | "%SPL");
            if !param && !nested && !frame_pointer && !used[first as usize..(first + n) as usize].iter().any(|&u| u) {
                out.push(
                    Diagnostic::warning(
                        Code::P0501,
                        name.span,
                        format!("register `{}` is never used", name.text),
                    )
                    .label(if n > 1 {
                        "none of these registers is used"
                    } else {
                        "declared here, never used"
                    })
                    .help("remove the declaration"),
                );
            }
        }
        for &(label, _) in self.ir.labels.iter().filter(|_| !debug) {
            if !self.referenced.contains(label.text) && !section_refs.contains(label.text) {
                out.push(
                    Diagnostic::warning(Code::P0502, label.span, format!("label `{}` is never used", label.text))
                        .label("no branch targets this label")
                        .help("remove the label, or branch to it"),
                );
            }
        }
    }

    fn unreachable(&self, blocks: &[(usize, usize)], reachable: &[bool], out: &mut Vec<Diagnostic>) {
        for (b, &(start, _)) in blocks.iter().enumerate() {
            // One warning per unreachable stretch: at its first block.
            if reachable[b] || (b > 0 && !reachable[b - 1]) {
                continue;
            }
            let i = self.insts[start].i;
            let prev = self.insts[start - 1].i;
            out.push(
                Diagnostic::warning(Code::P0503, i.span, "unreachable instruction")
                    .label("no path reaches this")
                    .secondary(prev.span, "control never falls through this")
                    .help("remove the dead code, or add a label and branch to it"),
            );
        }
    }

    /// A may-analysis of written registers: a read is reported when no path from the entry writes the
    /// register first.
    fn uninitialised(
        &self,
        blocks: &[(usize, usize)],
        succ: &[Vec<usize>],
        reachable: &[bool],
        out: &mut Vec<Diagnostic>,
    ) {
        let words = (self.reg_count as usize).div_ceil(64);
        if words == 0 {
            return;
        }
        let mut entry = vec![0u64; words];
        for d in &self.ir.regs {
            if d.param {
                for r in d.first..d.first + d.count {
                    set(&mut entry, r);
                }
            }
        }
        let inn = forward(blocks, succ, &entry, |b, bits| {
            for inst in &self.insts[blocks[b].0..blocks[b].1] {
                for &r in &inst.writes {
                    set(bits, r);
                }
            }
        });
        let mut reported = vec![false; self.reg_count as usize];
        for (b, &(s, e)) in blocks.iter().enumerate() {
            if !reachable[b] {
                continue;
            }
            let mut live = inn[b].clone();
            for inst in &self.insts[s..e] {
                for &(r, name) in &inst.reads {
                    if !get(&live, r) && !reported[r as usize] {
                        reported[r as usize] = true;
                        let decl = self
                            .ir
                            .regs
                            .iter()
                            .find(|d| d.first <= r && r - d.first < d.count)
                            .map(|d| d.span);
                        let mut d = Diagnostic::warning(
                            Code::P0504,
                            name.span,
                            format!("`{}` is read before any path writes it", name.text),
                        )
                        .label("its value is undefined here")
                        .help("initialise the register first (e.g. `mov` a value into it)");
                        if let Some(decl) = decl {
                            d = d.secondary(decl, "declared here");
                        }
                        out.push(d);
                    }
                }
                for &r in &inst.writes {
                    set(&mut live, r);
                }
            }
        }
    }

    /// Thread-dependent values (from `%tid`, `%laneid`, lane masks, atomics' results) flow through data
    /// dependences; a branch on one makes the code up to its join point divergent.
    fn divergence(&self, blocks: &[(usize, usize)], succ: &[Vec<usize>], out: &mut Vec<Diagnostic>) {
        // Where each register's thread dependence comes from (first found), for the labels.
        let mut origin: Vec<Option<Origin>> = vec![None; self.reg_count as usize];
        let words = (self.reg_count as usize).div_ceil(64);
        // Flow-sensitive: a register is thread-dependent after an instruction that computes it from a
        // thread-dependent source, and uniform again after one that does not.
        let step = |inst: &Inst<'_, '_>, bits: &mut Vec<u64>, origin: &mut Vec<Option<Origin>>| {
            let src = if inst.uniform {
                None
            } else {
                inst.thread_special
                    .map(Origin)
                    .or_else(|| {
                        inst.reads
                            .iter()
                            .find(|&&(r, _)| get(bits, r))
                            .map(|&(r, n)| origin[r as usize].unwrap_or(Origin(n.span)))
                    })
                    .or_else(|| inst.atomic.then_some(Origin(inst.i.opcode.span)))
            };
            for &w in &inst.writes {
                match src {
                    Some(o) => {
                        set(bits, w);
                        origin[w as usize].get_or_insert(o);
                    }
                    // A guarded write keeps the old value in some threads.
                    None if inst.i.guard.is_none() => clear(bits, w),
                    None => {}
                }
            }
        };
        let inn = forward(blocks, succ, &vec![0u64; words], |b, bits| {
            for inst in &self.insts[blocks[b].0..blocks[b].1] {
                step(inst, bits, &mut origin);
            }
        });
        // Per instruction: whether its guard, and its member mask, are thread-dependent.
        let n = self.insts.len();
        let mut guard_dep: Vec<Option<(Span, Origin)>> = vec![None; n];
        let mut mask_dep: Vec<Option<(Span, Origin)>> = vec![None; n];
        for (b, &(s, e)) in blocks.iter().enumerate() {
            let mut bits = inn[b].clone();
            for (k, inst) in self.insts[s..e].iter().enumerate().map(|(j, x)| (s + j, x)) {
                let dependent = |r: u32, name: &Name<'_>| {
                    get(&bits, r)
                        .then(|| origin[r as usize])
                        .flatten()
                        .map(|o| (name.span, o))
                };
                let x = &self.ir.insts[k];
                guard_dep[k] = x
                    .guard
                    .zip(inst.i.guard.as_ref())
                    .and_then(|(r, g)| dependent(r, &g.pred));
                let mask = inst.d.and_then(|d| mask_operand(d, inst.i.operands.len()));
                if let (Some(m), Some(Operand::Sym { .. })) = (mask, mask.and_then(|m| inst.i.operands.get(m))) {
                    let reg = self.ir.uses_of(x).iter().find_map(|u| match u.sym {
                        ir::Sym::Reg(r) if usize::from(u.operand) == m => Some((r, u.name)),
                        _ => None,
                    });
                    mask_dep[k] = reg.and_then(|(r, name)| dependent(r, &name));
                }
                step(inst, &mut bits, &mut origin);
            }
        }
        // Blocks under a thread-dependent branch, with the branch that made them so.
        let nb = blocks.len();
        let ipdom = post_dominators(succ, nb);
        // Whether a CTA barrier can still be reached from each block. Threads that skip a barrier and
        // then only exit do not hold the others up (exited threads count as arrived); threads that skip
        // it and meet another barrier later do.
        let mut barrier_ahead: Vec<bool> = blocks
            .iter()
            .map(|&(s, e)| {
                self.insts[s..e]
                    .iter()
                    .any(|i| i.d.is_some_and(Decoded::is_cta_barrier))
            })
            .collect();
        let mut grew = true;
        while grew {
            grew = false;
            for b in (0..nb).rev() {
                if !barrier_ahead[b] && succ[b].iter().any(|&x| x < nb && barrier_ahead[x]) {
                    barrier_ahead[b] = true;
                    grew = true;
                }
            }
        }
        let mut under: Vec<Option<(Span, Origin)>> = vec![None; nb];
        // Visit marks stamped with the branch being explored, so one array serves every branch.
        let mut seen = vec![usize::MAX; nb];
        for (b, &(_, e)) in blocks.iter().enumerate() {
            let last = &self.insts[e - 1];
            if !matches!(last.i.opcode.text, "bra" | "brx" | "ret" | "exit") {
                continue;
            }
            let Some((at, o)) = guard_dep[e - 1] else { continue };
            let join = ipdom[b];
            if join >= nb || !barrier_ahead[join] {
                continue;
            }
            let mut stack: Vec<usize> = succ[b].iter().copied().filter(|&s| s < nb && s != join).collect();
            while let Some(x) = stack.pop() {
                if seen[x] == b {
                    continue;
                }
                seen[x] = b;
                under[x].get_or_insert((at, o));
                stack.extend(succ[x].iter().copied().filter(|&s| s < nb && s != join));
            }
        }
        for (b, &(s, e)) in blocks.iter().enumerate() {
            for (k, inst) in self.insts[s..e].iter().enumerate().map(|(j, x)| (s + j, x)) {
                let Some(d) = &inst.d else { continue };
                if d.is_cta_barrier() {
                    let cause = guard_dep[k].or(under[b]);
                    if let Some((at, Origin(src))) = cause {
                        out.push(
                            Diagnostic::warning(
                                Code::P0505,
                                inst.i.span,
                                format!("`{}` may be reached by only some threads of the CTA", spelled(inst.i)),
                            )
                            .label("barrier under thread-dependent control flow")
                            .secondary(at, "this predicate differs between threads")
                            .secondary(src, "because it is computed from this")
                            .note("threads that skip the barrier leave the others waiting: a deadlock or undefined behaviour")
                            .help("move the barrier out of the conditional code so every thread of the CTA reaches it"),
                        );
                    }
                }
                if let Some((at, Origin(src))) = mask_dep[k] {
                    out.push(
                        Diagnostic::warning(
                            Code::P0506,
                            at,
                            format!("the member mask of `{}` differs between threads", spelled(inst.i)),
                        )
                        .label("thread-dependent member mask")
                        .secondary(src, "it is computed from this")
                        .note("every thread named in the mask must execute the instruction with the same mask; masks that split the warp into disjoint groups (tiled partitions) are fine")
                        .help("use a mask that is the same in every participating lane, e.g. from `activemask` or a constant"),
                    );
                }
            }
        }
    }
}

/// `bar.sync`, `vote.sync.any.pred`: the opcode with its modifiers, as written.
fn spelled(i: &Instruction<'_>) -> String {
    let mut s = i.opcode.text.to_string();
    i.mods.iter().for_each(|m| s.push_str(m.text));
    s
}

fn get(bits: &[u64], r: u32) -> bool {
    bits[r as usize / 64] & (1 << (r % 64)) != 0
}
fn set(bits: &mut [u64], r: u32) {
    bits[r as usize / 64] |= 1 << (r % 64);
}
fn clear(bits: &mut [u64], r: u32) {
    bits[r as usize / 64] &= !(1 << (r % 64));
}

/// A forward "may" analysis over the blocks: what holds on entry to each block is the union of what
/// holds at the end of its predecessors (`entry` for the first block), and `transfer` turns a block's
/// entry set into its exit set. Returns the entry sets.
fn forward(
    blocks: &[(usize, usize)],
    succ: &[Vec<usize>],
    entry: &[u64],
    mut transfer: impl FnMut(usize, &mut Vec<u64>),
) -> Vec<Vec<u64>> {
    let nb = blocks.len();
    let mut preds = vec![vec![]; nb];
    for (b, ss) in succ.iter().enumerate() {
        for &s in ss.iter().filter(|&&s| s < nb) {
            preds[s].push(b);
        }
    }
    let mut inn = vec![vec![0u64; entry.len()]; nb];
    let mut outs = vec![vec![0u64; entry.len()]; nb];
    let mut v = vec![0u64; entry.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for b in 0..nb {
            if b == 0 {
                v.copy_from_slice(entry);
            } else {
                v.fill(0);
            }
            for &p in &preds[b] {
                for (x, y) in v.iter_mut().zip(&outs[p]) {
                    *x |= y;
                }
            }
            inn[b].copy_from_slice(&v);
            transfer(b, &mut v);
            if v != outs[b] {
                outs[b].copy_from_slice(&v);
                changed = true;
            }
        }
    }
    inn
}

fn reach(succ: &[Vec<usize>], nb: usize) -> Vec<bool> {
    let mut seen = vec![false; nb];
    let mut stack = vec![0];
    while let Some(b) = stack.pop() {
        if b >= nb || seen[b] {
            continue;
        }
        seen[b] = true;
        stack.extend(&succ[b]);
    }
    seen
}

/// Immediate post-dominators (Cooper, Harvey and Kennedy's iterative algorithm on the reversed graph);
/// node `nb` is the exit. Blocks that cannot reach the exit (infinite loops) get the exit.
fn post_dominators(succ: &[Vec<usize>], nb: usize) -> Vec<usize> {
    let exit = nb;
    let mut preds = vec![vec![]; nb + 1]; // predecessors in the reversed graph = successors
    for (b, ss) in succ.iter().enumerate() {
        for &s in ss {
            preds[s].push(b);
        }
    }
    // Reverse post-order of the reversed graph from the exit.
    let mut order = vec![];
    let mut seen = vec![false; nb + 1];
    let mut stack = vec![(exit, 0usize)];
    seen[exit] = true;
    while let Some((x, k)) = stack.pop() {
        if k < preds[x].len() {
            stack.push((x, k + 1));
            let y = preds[x][k];
            if !seen[y] {
                seen[y] = true;
                stack.push((y, 0));
            }
        } else {
            order.push(x);
        }
    }
    order.reverse();
    let mut rank = vec![usize::MAX; nb + 1];
    for (i, &x) in order.iter().enumerate() {
        rank[x] = i;
    }
    let mut idom = vec![usize::MAX; nb + 1];
    idom[exit] = exit;
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().skip(1) {
            let mut new = usize::MAX;
            for &s in &succ[b] {
                if idom[s] == usize::MAX {
                    continue;
                }
                new = if new == usize::MAX {
                    s
                } else {
                    let (mut x, mut y) = (new, s);
                    while x != y {
                        while rank[x] > rank[y] {
                            x = idom[x];
                        }
                        while rank[y] > rank[x] {
                            y = idom[y];
                        }
                    }
                    x
                };
            }
            if new != usize::MAX && idom[b] != new {
                idom[b] = new;
                changed = true;
            }
        }
    }
    idom.truncate(nb);
    idom.into_iter()
        .map(|d| if d == usize::MAX { exit } else { d })
        .collect()
}
