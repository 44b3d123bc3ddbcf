//! The checked IR of one function: what the checker learned about each instruction, kept so that no
//! later stage decodes a modifier or resolves a name again.
//!
//! The checker builds one [`Function`] per function body while it checks that body, hands it to its
//! consumer (the lints, the lowering, the retargeter's requirements) and drops it before the next
//! function: a module's checked IR is never whole in memory, so it costs memory in proportion to the
//! largest function, not to the module. An instruction is 64 bytes; the names of all its operands sit
//! in one array per function.
//!
//! Registers are numbered densely per function, one number per register (`%r<100>` takes 100), as the
//! checker's scope numbers them: a register declared again in a nested block gets its own numbers.

use crate::ast::{self, Instruction, Name, Operand, VarDecl};
use crate::isa::{self, Decoded};
use crate::scope::{Labels, Sreg};
use crate::span::Span;

/// A register's number within its function.
pub type RegId = u32;

/// What a name in an operand stands for.
#[derive(Clone, Copy, Debug)]
pub enum Sym<'m, 'a> {
    /// The register with this number (an element of a `%r<N>` range has its own number).
    Reg(RegId),
    Var(&'m VarDecl<'a>),
    Func(&'m ast::Function<'a>),
    /// A label of the function (branch targets, `.branchtargets` and `.callprototype` labels).
    Label,
    Special(Sreg),
    /// A name the checker reported as undefined, or a constant such as `WARP_SZ`.
    Unresolved,
}

/// One name an operand mentions, resolved.
#[derive(Clone, Copy, Debug)]
pub struct Use<'m, 'a> {
    pub name: Name<'a>,
    /// The operand it appears in.
    pub operand: u8,
    pub sym: Sym<'m, 'a>,
}

/// One instruction: its syntax, its decoded form and what each name it mentions stands for.
#[derive(Debug)]
pub struct Inst<'m, 'a> {
    pub ast: &'m Instruction<'a>,
    /// `None` when the opcode or a modifier is wrong (the checker reported it).
    pub decoded: Option<Decoded>,
    /// The guard predicate's register, when it is one.
    pub guard: Option<RegId>,
    /// Where its names are in [`Function::uses`] ([`Function::uses_of`]).
    uses: (u32, u32),
}

impl<'m, 'a> Inst<'m, 'a> {
    pub(crate) fn new(
        ast: &'m Instruction<'a>,
        decoded: Option<Decoded>,
        guard: Option<RegId>,
        uses: (u32, u32),
    ) -> Self {
        Inst {
            ast,
            decoded,
            guard,
            uses,
        }
    }

    /// Whether the first operand is written: the ISA table's rule, plus the result list of a `call`, and
    /// the accumulators of matrix instructions, which are read and written.
    pub fn writes_first_operand(&self) -> bool {
        let i = self.ast;
        match i.opcode.text {
            "call" => i.operands.len() >= 2 && matches!(i.operands[0], ast::Operand::List(..)),
            "wgmma" | "mma" | "wmma" => true,
            _ => self
                .decoded
                .as_ref()
                .is_some_and(|d| isa::first_operand_is_destination(d.spec)),
        }
    }
}

/// A `.reg` declaration of the function (parameters included).
#[derive(Clone, Copy, Debug)]
pub struct RegDecl<'a> {
    pub name: Name<'a>,
    /// The whole declaration.
    pub span: Span,
    /// Its first number and how many it declares.
    pub first: RegId,
    pub count: u32,
    pub param: bool,
    /// Declared inside a nested `{ }` block.
    pub nested: bool,
}

/// One function body, checked.
#[derive(Debug)]
pub struct Function<'m, 'a> {
    pub ast: &'m ast::Function<'a>,
    pub regs: Vec<RegDecl<'a>>,
    /// One past the highest register number (saturating: a declaration of 2^32 registers says so).
    pub reg_count: u64,
    pub insts: Vec<Inst<'m, 'a>>,
    /// The names of every instruction's operands, in order (empty when the checker was asked for
    /// decoded forms only, [`crate::check::Detail::Decoded`]).
    pub uses: Vec<Use<'m, 'a>>,
    /// Each label, with the index of the first instruction after it, in source order.
    pub labels: Vec<(Name<'a>, usize)>,
    /// Which label each name of a branch or target list stands for (nested blocks scope labels).
    pub scopes: Labels<'m, 'a>,
    /// `.branchtargets` lists, by the label that names them.
    pub branch_targets: Vec<(&'a str, &'m [Name<'a>])>,
    /// Names listed by `.branchtargets` and `.calltargets` (they count as uses of those labels and
    /// functions).
    pub listed: Vec<&'a str>,
}

impl<'m, 'a> Function<'m, 'a> {
    /// The IR of `ast`, whose registers are numbered from `first_register` on: registers declared at
    /// module scope (legacy PTX and code compiled without the ABI may declare them, and fragments do)
    /// take the numbers below, and a body may name them, so they count towards `reg_count` too.
    pub fn new(ast: &'m ast::Function<'a>, first_register: u32) -> Self {
        Function {
            ast,
            regs: vec![],
            reg_count: first_register as u64,
            insts: vec![],
            uses: vec![],
            labels: vec![],
            scopes: ast.body.as_deref().map_or_else(Labels::default, Labels::of),
            branch_targets: vec![],
            listed: vec![],
        }
    }

    pub(crate) fn declare_reg(&mut self, v: &VarDecl<'a>, first: RegId, param: bool, nested: bool) {
        let count = v.range.unwrap_or(1);
        self.reg_count = self.reg_count.max(first as u64 + count as u64);
        self.regs.push(RegDecl {
            name: v.name,
            span: v.span,
            first,
            count,
            param,
            nested,
        });
    }

    /// Basic blocks as instruction ranges, and each block's successors. Block `n` (one past the last)
    /// is the exit.
    pub fn blocks(&self) -> (Vec<(usize, usize)>, Vec<Vec<usize>>) {
        let n = self.insts.len();
        let mut starts = vec![false; n + 1];
        starts[0] = true;
        for &(_, at) in &self.labels {
            starts[at] = true;
        }
        for (k, inst) in self.insts.iter().enumerate() {
            if matches!(inst.ast.opcode.text, "bra" | "brx" | "ret" | "exit") {
                starts[k + 1] = true;
            }
        }
        let mut blocks = vec![];
        let mut begin = 0;
        for (k, &start) in starts.iter().enumerate().skip(1) {
            if start || k == n {
                if k > begin {
                    blocks.push((begin, k));
                }
                begin = k;
            }
        }
        let block_of = |inst: usize| blocks.partition_point(|&(s, _)| s <= inst).saturating_sub(1);
        let exit = blocks.len();
        let labels: rustc_hash::FxHashMap<u32, usize> = self.labels.iter().map(|&(l, at)| (l.span.start, at)).collect();
        let targets: rustc_hash::FxHashMap<&str, &[Name<'a>]> = self.branch_targets.iter().copied().collect();
        let target_block = |label: &Name<'_>| -> usize {
            match self.scopes.resolve(label).and_then(|l| labels.get(&l.span.start)) {
                Some(&at) if at < n => block_of(at),
                _ => exit,
            }
        };
        let mut succ = vec![vec![]; blocks.len()];
        for (b, &(_, end)) in blocks.iter().enumerate() {
            let last = self.insts[end - 1].ast;
            let guarded = last.guard.is_some();
            let fall = if end < n { block_of(end) } else { exit };
            match last.opcode.text {
                "bra" => {
                    if let Some(Operand::Sym { name, .. }) = last.operands.first() {
                        succ[b].push(target_block(name));
                    }
                    if guarded {
                        succ[b].push(fall);
                    }
                }
                "brx" => {
                    if let Some(Operand::Sym { name, .. }) = last.operands.get(1) {
                        for t in targets.get(name.text).copied().into_iter().flatten() {
                            succ[b].push(target_block(t));
                        }
                    }
                    if guarded {
                        succ[b].push(fall);
                    }
                }
                "ret" | "exit" => {
                    succ[b].push(exit);
                    if guarded {
                        succ[b].push(fall);
                    }
                }
                _ => succ[b].push(fall),
            }
            succ[b].dedup();
        }
        (blocks, succ)
    }

    /// The checked form of the instruction that starts at byte `at` of the text (instructions are kept
    /// in source order).
    pub fn inst_at(&self, at: u32) -> Option<&Inst<'m, 'a>> {
        self.index_at(at).map(|k| &self.insts[k])
    }

    /// The index of the instruction that starts at byte `at` of the text.
    pub fn index_at(&self, at: u32) -> Option<usize> {
        let k = self.insts.partition_point(|i| i.ast.span.start < at);
        self.insts.get(k).filter(|i| i.ast.span.start == at).map(|_| k)
    }

    /// The names of an instruction's operands, resolved, in the order written.
    pub fn uses_of(&self, i: &Inst<'m, 'a>) -> &[Use<'m, 'a>] {
        &self.uses[i.uses.0 as usize..i.uses.1 as usize]
    }

    /// Registers an instruction reads: its guard and every register outside the written operand, with
    /// the name as written.
    pub fn reads<'s>(&'s self, i: &'s Inst<'m, 'a>) -> impl Iterator<Item = (RegId, Name<'a>)> + use<'s, 'm, 'a> {
        let written = i.writes_first_operand();
        let guard = i.guard.zip(i.ast.guard.as_ref()).map(|(r, g)| (r, g.pred));
        guard
            .into_iter()
            .chain(self.uses_of(i).iter().filter_map(move |u| match u.sym {
                Sym::Reg(r) if !(written && u.operand == 0) => Some((r, u.name)),
                _ => None,
            }))
    }

    /// Registers an instruction writes.
    pub fn writes<'s>(&'s self, i: &'s Inst<'m, 'a>) -> impl Iterator<Item = RegId> + use<'s, 'm, 'a> {
        let written = i.writes_first_operand();
        self.uses_of(i).iter().filter_map(move |u| match u.sym {
            Sym::Reg(r) if written && u.operand == 0 => Some(r),
            _ => None,
        })
    }
}
