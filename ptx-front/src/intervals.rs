//! Barrier intervals: which loads of a kernel can never take part in a race, so racecheck need not
//! record them.
//!
//! Racecheck reports two threads of a CTA touching one byte between the same two barriers, one of
//! them writing. When every barrier is an aligned barrier of the whole CTA (`bar.sync 0`,
//! `__syncthreads()`), all threads of an epoch start it at the same barrier instruction, so what they
//! can do in it is what the code reachable from that barrier (or from the kernel's entry) without
//! crossing another barrier can do: the barrier's *interval*. A load whose every interval holds no
//! write to its state space can race with nothing. In a tiled kernel that is the inner loop, most of
//! its accesses (sgemm's shared-memory reads).
//!
//! Conservative by construction: a call may write anything; any instruction with an address operand
//! that is not a known load writes; a kernel with any other kind of synchronisation whose completion
//! racecheck counts as an epoch (barriers with a thread count, `bar.arrive`, unaligned
//! `barrier.sync`, `mbarrier`, cluster barriers) gets no answer, nor does a `.func` (its caller's epoch
//! runs on inside it).

use crate::ast::{FnKind, Operand};
use crate::ir;
use crate::isa::{Decoded, G};

/// Which memory an access may touch, for racecheck: shared, global, or both (generic addresses).
const SHARED: u8 = 1;
const GLOBAL: u8 = 2;

/// Intervals × instructions visited beyond which the analysis gives up (every load is then
/// recorded): a bound on its time for kernels with thousands of barriers.
const BUDGET: usize = 1 << 26;

/// For each instruction of `f` (by index), whether it is a load that no race can involve. All false
/// for a `.func`, for a kernel that synchronises other than by aligned CTA barriers, or when an
/// instruction is not decoded.
pub fn unraced_loads(f: &ir::Function<'_, '_>) -> Vec<bool> {
    let n = f.insts.len();
    let none = vec![false; n];
    if f.ast.kind != FnKind::Entry || n == 0 {
        return none;
    }
    let mut barrier = vec![false; n];
    for (k, i) in f.insts.iter().enumerate() {
        let Some(d) = &i.decoded else { return none };
        match sync_kind(d, i.ast.operands.len()) {
            Sync::None => {}
            Sync::Barrier => barrier[k] = i.ast.guard.is_none(),
            Sync::Other => return none,
        }
    }
    let (blocks, succ) = f.blocks();
    let block_of = |k: usize| blocks.partition_point(|&(s, _)| s <= k) - 1;
    let effects: Vec<Effect> = f.insts.iter().map(effect).collect();
    // Interval starts: the entry, and the instruction after each barrier (a guarded barrier may be
    // skipped, so it starts an interval without ending one).
    let starts = std::iter::once(0).chain(
        f.insts
            .iter()
            .enumerate()
            .filter(|(_, i)| i.decoded.as_ref().is_some_and(Decoded::is_cta_barrier))
            .map(|(k, _)| k + 1)
            .filter(|&k| k < n),
    );
    // Per instruction: the spaces written in some interval that holds it.
    let mut written_around = vec![0u8; n];
    let mut seen = vec![false; blocks.len()];
    let mut visited: Vec<usize> = vec![];
    let mut work = 0usize;
    for start in starts {
        // Instructions reachable from `start` without crossing an unguarded barrier: from `start` to
        // the end of its block, then whole blocks from their first instruction.
        visited.clear();
        seen.fill(false);
        let mut stack = vec![(start, block_of(start))];
        let mut writes = 0u8;
        while let Some((from, b)) = stack.pop() {
            let end = blocks[b].1;
            let mut k = from;
            while k < end {
                visited.push(k);
                writes |= effects[k].writes;
                if barrier[k] {
                    break;
                }
                k += 1;
            }
            work += k - from + 1;
            if work > BUDGET {
                return none;
            }
            if k < end {
                continue; // stopped at a barrier
            }
            for &s in &succ[b] {
                if s < blocks.len() && !seen[s] {
                    seen[s] = true;
                    stack.push((blocks[s].0, s));
                }
            }
        }
        for &k in &visited {
            written_around[k] |= writes;
        }
    }
    (0..n)
        .map(|k| effects[k].loads != 0 && effects[k].loads & written_around[k] == 0)
        .collect()
}

enum Sync {
    None,
    /// An unconditional-arrival aligned barrier of the whole CTA: `bar.sync a`, `bar.red … a, c`,
    /// `barrier.sync.aligned a` (no thread count).
    Barrier,
    /// Synchronisation the intervals cannot follow.
    Other,
}

fn sync_kind(d: &Decoded, operands: usize) -> Sync {
    match d.spec.name {
        "bar" | "barrier" if d.get(G::Scope) == Some(".warp") => Sync::None,
        "bar" | "barrier" => {
            let aligned = d.spec.name == "bar" || d.has(".aligned");
            // `bar.sync a` and `bar.red.op d, a, c` name no thread count.
            let counted = match d.get(G::Sync) {
                Some(".sync") => operands > 1,
                Some(".red") => operands > 3,
                _ => true, // `.arrive`
            };
            if d.is_cta_barrier() && aligned && !counted {
                Sync::Barrier
            } else {
                Sync::Other
            }
        }
        // Asynchronous copies that complete on an mbarrier come with `mbarrier` instructions too.
        "mbarrier" => Sync::Other,
        _ => Sync::None,
    }
}

/// What an instruction may do to racecheck's memory: the spaces it loads from and writes to.
#[derive(Clone, Copy, Default)]
struct Effect {
    loads: u8,
    writes: u8,
}

fn space_bits(space: Option<&str>) -> u8 {
    match space {
        Some(s) if s.starts_with(".shared") => SHARED,
        Some(".global") => GLOBAL,
        Some(".local" | ".param" | ".const") => 0,
        _ => SHARED | GLOBAL,
    }
}

fn effect(i: &ir::Inst<'_, '_>) -> Effect {
    let Some(d) = &i.decoded else {
        return Effect {
            loads: 0,
            writes: SHARED | GLOBAL,
        };
    };
    let name = d.spec.name;
    if name == "call" {
        return Effect {
            loads: 0,
            writes: SHARED | GLOBAL,
        };
    }
    let addressed = i
        .ast
        .operands
        .iter()
        .any(|o| matches!(o, Operand::Addr(_) | Operand::Bracket(..)));
    if !addressed {
        return Effect::default();
    }
    match name {
        "ld" | "ldu" => Effect {
            loads: space_bits(d.get(G::Space)),
            writes: 0,
        },
        "ldmatrix" => Effect {
            loads: SHARED,
            writes: 0,
        },
        "wmma" if d.has(".load") => Effect {
            loads: space_bits(d.get(G::Space)),
            writes: 0,
        },
        // Texture and surface reads, cache hints: nothing racecheck sees as a write.
        "tex" | "tld4" | "suld" | "txq" | "suq" | "prefetch" | "prefetchu" | "applypriority" => Effect::default(),
        "st" | "atom" | "red" => Effect {
            loads: 0,
            writes: space_bits(d.get(G::Space)),
        },
        _ => Effect {
            loads: 0,
            writes: SHARED | GLOBAL,
        },
    }
}
