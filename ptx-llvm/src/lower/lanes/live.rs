//! Which writes of the thread body's registers need not reach the register's vector in memory: no
//! later block reads them. A group skips storing them: their lanes' vectors would be built only to
//! be dropped, and building them in the main path would also keep LLVM from sinking the vectors an
//! access rebuilds on its fallback path (see `Lanes::rebuild`).

use crate::ir::instructions;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::prelude::*;
use inkwell::llvm_sys::LLVMOpcode;
use std::collections::{HashMap, HashSet};

/// The register an instruction loads or stores: the alloca it reads, or writes (as the address).
fn register(i: LLVMValueRef) -> Option<(LLVMValueRef, bool)> {
    unsafe {
        let (p, write) = match LLVMGetInstructionOpcode(i) {
            LLVMOpcode::LLVMLoad => (LLVMGetOperand(i, 0), false),
            LLVMOpcode::LLVMStore => (LLVMGetOperand(i, 1), true),
            _ => return None,
        };
        (!LLVMIsAAllocaInst(p).is_null()).then_some((p, write))
    }
}

/// The stores to registers in `blocks` that no read in a later block sees: on every path through
/// `succs` (within `blocks`) the register is written again first or never read. Leaving the blocks
/// ends a group's run, and the thread body saves what lives on before it leaves, with loads these
/// blocks contain.
pub(super) fn dead_writes(
    blocks: &[LLVMBasicBlockRef],
    succs: &dyn Fn(LLVMBasicBlockRef) -> Option<Vec<LLVMBasicBlockRef>>,
) -> HashSet<LLVMValueRef> {
    let inside: HashSet<LLVMBasicBlockRef> = blocks.iter().copied().collect();
    let next: HashMap<LLVMBasicBlockRef, Vec<LLVMBasicBlockRef>> = blocks
        .iter()
        .map(|&b| {
            (
                b,
                succs(b)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|s| inside.contains(s))
                    .collect(),
            )
        })
        .collect();
    // Registers read before any write in each block (`reads`), and written in it (`writes`).
    let mut reads: HashMap<LLVMBasicBlockRef, HashSet<LLVMValueRef>> = HashMap::new();
    let mut writes: HashMap<LLVMBasicBlockRef, HashSet<LLVMValueRef>> = HashMap::new();
    for &b in blocks {
        let (r, w) = (reads.entry(b).or_default(), writes.entry(b).or_default());
        for (reg, write) in unsafe { instructions(b) }.into_iter().filter_map(register) {
            if write {
                w.insert(reg);
            } else if !w.contains(&reg) {
                r.insert(reg);
            }
        }
    }
    let mut live_in: HashMap<LLVMBasicBlockRef, HashSet<LLVMValueRef>> =
        blocks.iter().map(|&b| (b, HashSet::new())).collect();
    let live_out = |live_in: &HashMap<LLVMBasicBlockRef, HashSet<LLVMValueRef>>, b: LLVMBasicBlockRef| {
        next[&b]
            .iter()
            .flat_map(|s| live_in[s].iter().copied())
            .collect::<HashSet<_>>()
    };
    let mut changed = true;
    while changed {
        changed = false;
        for &b in blocks.iter().rev() {
            let mut l = live_out(&live_in, b);
            l.retain(|r| !writes[&b].contains(r));
            l.extend(reads[&b].iter().copied());
            if l != live_in[&b] {
                live_in.insert(b, l);
                changed = true;
            }
        }
    }
    // Reads after a write in its block take the written lanes directly (see `Lanes::instruction`):
    // only a block's last write of a register that lives on needs storing.
    let mut dead = HashSet::new();
    for &b in blocks {
        let live = live_out(&live_in, b);
        let mut later = HashSet::new();
        for i in unsafe { instructions(b) }.into_iter().rev() {
            if let Some((reg, true)) = register(i) {
                if !later.insert(reg) || !live.contains(&reg) {
                    dead.insert(i);
                }
            }
        }
    }
    dead
}
