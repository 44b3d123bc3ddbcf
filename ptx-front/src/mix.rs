//! The instruction mix, for `ptx-jit bench kernel --counters`: the class of every instruction, and a
//! function's straight-line blocks as the counters count them.
//!
//! A counted block starts at a function's first instruction, at the first instruction after a label,
//! and after an instruction that may leave it (a branch, a call, `ret`, `exit`, `trap`); every thread that
//! enters a block passes each of its instructions, so counting block entries at run time and
//! multiplying by each block's static mix gives exact per-class instruction counts. An instruction
//! a predicate turns off is still passed (NVIDIA's `inst_executed` counts it too).

use crate::ast;
use crate::ir;
use crate::isa::{Decoded, G};
use crate::types::Type;

/// What an instruction does, for the mix. Every instruction has exactly one class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// Arithmetic, comparison and math on `.f16`/`.bf16` and their pairs.
    Fp16,
    Fp32,
    Fp64,
    /// Integer, bit and predicate arithmetic, comparison and logic.
    Integer,
    /// `cvt`, `cvta`, `cvt.pack`.
    Conversion,
    /// `mov` and the other moves of data between registers.
    Move,
    /// Branches, calls, returns, `exit`, `trap`.
    Control,
    /// Loads, stores and prefetches by state space (the space the instruction names; `Generic` when
    /// it names none).
    Global,
    Shared,
    Local,
    Param,
    Const,
    Generic,
    /// `atom`, `red` and the asynchronous reductions.
    Atomic,
    /// Texture and surface instructions.
    Texture,
    /// Matrix instructions (`mma`, `wmma`, `wgmma`, `ldmatrix` …).
    Tensor,
    /// Barriers, fences and `mbarrier`.
    Sync,
    /// Warp collectives (`shfl`, `vote`, `match`, `redux`, `activemask`, `elect`).
    Warp,
    /// Everything else.
    Other,
}

impl Class {
    pub const COUNT: usize = 19;
    pub const ALL: [Class; Class::COUNT] = [
        Class::Fp16,
        Class::Fp32,
        Class::Fp64,
        Class::Integer,
        Class::Conversion,
        Class::Move,
        Class::Control,
        Class::Global,
        Class::Shared,
        Class::Local,
        Class::Param,
        Class::Const,
        Class::Generic,
        Class::Atomic,
        Class::Texture,
        Class::Tensor,
        Class::Sync,
        Class::Warp,
        Class::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Class::Fp16 => "fp16",
            Class::Fp32 => "fp32",
            Class::Fp64 => "fp64",
            Class::Integer => "integer",
            Class::Conversion => "conversion",
            Class::Move => "move",
            Class::Control => "control",
            Class::Global => "memory.global",
            Class::Shared => "memory.shared",
            Class::Local => "memory.local",
            Class::Param => "memory.param",
            Class::Const => "memory.const",
            Class::Generic => "memory.generic",
            Class::Atomic => "atomic",
            Class::Texture => "texture",
            Class::Tensor => "tensor",
            Class::Sync => "sync",
            Class::Warp => "warp",
            Class::Other => "other",
        }
    }

    /// The class of a decoded instruction (`None`, an instruction the checker refused: `Other`).
    pub fn of(d: Option<&Decoded>) -> Class {
        let Some(d) = d else { return Class::Other };
        let sub = |m: &str| d.spec.sub.contains(&m);
        match d.spec.name {
            "bra" | "brx" | "call" | "ret" | "exit" | "trap" | "brkpt" | "pmevent" | "nanosleep" => Class::Control,
            "bar" | "barrier" | "membar" | "fence" | "mbarrier" | "griddepcontrol" | "setmaxnreg" => Class::Sync,
            "shfl" | "vote" | "match" | "redux" | "activemask" | "elect" => Class::Warp,
            "mma" | "wmma" | "wgmma" | "ldmatrix" | "stmatrix" | "movmatrix" => Class::Tensor,
            "atom" | "red" => Class::Atomic,
            "tex" | "tld4" | "txq" | "suld" | "sust" | "sured" | "suq" | "istypep" => Class::Texture,
            "cvt" | "cvta" => Class::Conversion,
            "mov" | "selp" => Class::Move,
            // `cp.reduce.async.bulk` reduces into memory; the groups and waits of `cp.async` order
            // copies; the copies themselves count where their global side is (or in shared memory).
            "cp" if sub(".reduce") => Class::Atomic,
            "cp" if sub(".commit_group") || sub(".wait_group") || sub(".wait_all") || sub(".mbarrier") => Class::Sync,
            "cp" if d.spaces().any(|s| s == ".global") => Class::Global,
            "cp" => Class::Shared,
            "ld" | "st" | "ldu" | "prefetch" | "prefetchu" => match d.get(G::Space) {
                Some(".global") => Class::Global,
                Some(s) if s.starts_with(".shared") => Class::Shared,
                Some(".local") => Class::Local,
                Some(s) if s.starts_with(".param") => Class::Param,
                Some(".const") => Class::Const,
                _ => Class::Generic,
            },
            _ => match d.types().find(|t| *t != Type::Pred).or(d.ty()) {
                Some(Type::F16 | Type::F16x2 | Type::Bf16 | Type::Bf16x2) => Class::Fp16,
                Some(Type::F32 | Type::Tf32) => Class::Fp32,
                Some(Type::F64) => Class::Fp64,
                Some(_) => Class::Integer,
                None => Class::Other,
            },
        }
    }
}

/// Whether control may leave a block after this instruction, or come back from elsewhere (a call,
/// whose callee counts its own blocks), so that the next instruction starts a block.
pub fn ends_block(d: Option<&Decoded>) -> bool {
    d.is_some_and(|d| matches!(d.spec.name, "bra" | "brx" | "call" | "ret" | "exit" | "trap"))
}

/// For each instruction of `f`, whether a counted block starts at it.
pub fn block_starts(f: &ir::Function<'_, '_>) -> Vec<bool> {
    let mut starts = vec![false; f.insts.len()];
    if let Some(s) = starts.first_mut() {
        *s = true;
    }
    for &(_, k) in &f.labels {
        if let Some(s) = starts.get_mut(k) {
            *s = true;
        }
    }
    for (k, i) in f.insts.iter().enumerate() {
        if ends_block(i.decoded.as_ref()) {
            if let Some(s) = starts.get_mut(k + 1) {
                *s = true;
            }
        }
    }
    starts
}

/// One counted block: where it starts (its first instruction's byte offset, the site the counters
/// report it by), how many instructions of each class it holds, and its CTA barriers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    pub site: u32,
    pub classes: [u32; Class::COUNT],
    pub barriers: u32,
}

impl Block {
    pub fn len(&self) -> u32 {
        self.classes.iter().sum()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The counted blocks of `f`, in order.
pub fn blocks(f: &ir::Function<'_, '_>) -> Vec<Block> {
    let starts = block_starts(f);
    let mut out: Vec<Block> = vec![];
    for (i, start) in f.insts.iter().zip(starts) {
        if start || out.is_empty() {
            out.push(Block {
                site: i.ast.span.start,
                classes: [0; Class::COUNT],
                barriers: 0,
            });
        }
        let b = out.last_mut().expect("pushed above");
        let d = i.decoded.as_ref();
        b.classes[Class::ALL
            .iter()
            .position(|c| *c == Class::of(d))
            .expect("every class is listed")] += 1;
        b.barriers += u32::from(d.is_some_and(Decoded::is_cta_barrier));
    }
    out
}

/// The counted blocks of every function body of a checked module.
pub fn module_blocks(m: &ast::Module<'_>) -> Vec<Block> {
    let mut checker = crate::check::Checker::new(m, &Default::default());
    let mut out = vec![];
    for item in &m.items {
        if let ast::Item::Function(f) = item {
            if let Some(ir) = checker.function(f, &mut vec![], crate::check::Detail::Decoded) {
                out.extend(blocks(&ir));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each block's line, its classes with their counts, and its barriers.
    type Mix = Vec<(u32, Vec<(&'static str, u32)>, u32)>;

    fn mix(src: &str) -> Mix {
        let (m, d) = crate::parse(src);
        assert!(d.is_empty(), "{d:?}");
        module_blocks(&m)
            .into_iter()
            .map(|b| {
                let classes = Class::ALL
                    .iter()
                    .zip(b.classes)
                    .filter(|(_, n)| *n > 0)
                    .map(|(c, n)| (c.name(), n))
                    .collect();
                let line = src[..b.site as usize].lines().count() as u32 + 1;
                (line, classes, b.barriers)
            })
            .collect()
    }

    #[test]
    fn copies_and_parameter_spaces_have_their_classes() {
        let src = ".version 8.0\n.target sm_80\n.address_size 64\n\
            .visible .entry k(.param .u64 p)\n{\n\
            .reg .b64 %rd<3>; .reg .b32 %r;\n\
            .shared .align 16 .b8 s[16];\n\
            ld.param::entry.u64 %rd1, [p];\n\
            mov.u32 %r, s;\n\
            cp.async.ca.shared.global [%r], [%rd1], 16;\n\
            cp.async.commit_group;\n\
            cp.async.wait_all;\n\
            ld.u64 %rd2, [%rd1];\n\
            }\n";
        assert_eq!(
            mix(src),
            [(
                8,
                vec![
                    ("move", 1),
                    ("memory.global", 1),
                    ("memory.param", 1),
                    ("memory.generic", 1),
                    ("sync", 2)
                ],
                0
            )]
        );
    }

    #[test]
    fn blocks_start_at_labels_and_after_branches() {
        let src = ".version 8.0\n.target sm_80\n.address_size 64\n\
            .visible .entry k(.param .u64 p)\n{\n\
            .reg .b32 %r<4>; .reg .f32 %f<3>; .reg .pred %p; .reg .b64 %rd;\n\
            ld.param.u64 %rd, [p];\n\
            mov.u32 %r1, %tid.x;\n\
            setp.lt.u32 %p, %r1, 4;\n\
            @%p bra DONE;\n\
            ld.global.f32 %f1, [%rd];\n\
            add.f32 %f2, %f1, %f1;\n\
            cvt.rzi.s32.f32 %r3, %f2;\n\
            bar.sync 0;\n\
            DONE:\n\
            atom.global.add.u32 %r2, [%rd], 1;\n\
            ret;\n}\n";
        assert_eq!(
            mix(src),
            [
                (
                    7,
                    vec![("integer", 1), ("move", 1), ("control", 1), ("memory.param", 1)],
                    0
                ),
                (
                    11,
                    vec![("fp32", 1), ("conversion", 1), ("memory.global", 1), ("sync", 1)],
                    1
                ),
                (16, vec![("control", 1), ("atomic", 1)], 0),
            ]
        );
    }
}
