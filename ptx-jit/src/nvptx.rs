//! The nvvm flavour through LLVM's NVPTX backend: PTX out for a chosen sm_XX and .version.

use crate::arch::Arch;
use inkwell::context::Context;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetTriple};
use inkwell::OptimizationLevel;
use ptx_front::ast::Module;
use ptx_front::Diagnostic;
use std::sync::Once;

fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| Target::initialize_nvptx(&InitializationConfig::default()));
}

pub enum Emit {
    Ptx,
    Llvm,
}

/// What LLVM's instruction selection needs beyond the ISA table's minimum sm: the `.sync` warp
/// intrinsics are only selectable from PTX 6.0. LLVM aborts the process when it cannot select, so
/// every instruction is checked against the target before LLVM sees the module.
fn nvptx_min_ptx(i: &ptx_front::ast::Instruction<'_>) -> u32 {
    let warp_sync = matches!(i.opcode.text, "shfl" | "vote" | "barrier") || i.mods.iter().any(|m| m.text == ".warp");
    if warp_sync {
        60
    } else {
        0
    }
}

/// The PTX version (×10) the module needs from the backend, or a diagnostic per instruction that the
/// target cannot run.
fn requirements(m: &Module<'_>, arch: &Arch) -> Result<u32, Vec<Diagnostic>> {
    let mut insts = vec![];
    for item in &m.items {
        if let ptx_front::ast::Item::Function(f) = item {
            if let Some(b) = &f.body {
                ptx_front::ast::visit(b, &mut |s| {
                    if let ptx_front::ast::Statement::Inst(i) = s {
                        insts.push(i);
                    }
                });
            }
        }
    }
    let mut need = 0;
    let mut diags = vec![];
    for i in insts {
        // The base requirement of the entry this form decodes to. Modifier-level requirements do not
        // bind the output: LLVM emulates what the target lacks where it can (bf16 conversions on
        // sm_75), and what it cannot select is caught by `nvptx_min_ptx`.
        let mods: Vec<&str> = i.mods.iter().map(|m| m.text).collect();
        let decoded = ptx_front::isa::decode(i.opcode.text, &mods).ok();
        let sm = decoded.as_ref().map_or(0, |d| d.spec.sm);
        let ptx = nvptx_min_ptx(i);
        if decoded.is_some_and(|d| d.spec.arch) && arch.suffix != Some('a') {
            diags.push(
                Diagnostic::error(
                    ptx_front::Code::P0402,
                    i.opcode.span,
                    format!("`{}` needs an architecture-specific target such as sm_{}a; the requested target is {}", i.opcode.text, arch.sm.max(sm), arch.cpu()),
                )
                .label("not available on the requested target"),
            );
            continue;
        }
        if arch.sm < sm || arch.sm < 30 && ptx >= 60 {
            diags.push(
                Diagnostic::error(
                    ptx_front::Code::P0402,
                    i.opcode.span,
                    format!(
                        "`{}` needs sm_{} or later; the requested target is {}",
                        i.opcode.text,
                        sm.max(if ptx >= 60 { 30 } else { 0 }),
                        arch.cpu()
                    ),
                )
                .label("not available on the requested target"),
            );
        }
        if let Some(v) = arch.ptx {
            if v < ptx {
                diags.push(
                    Diagnostic::error(
                        ptx_front::Code::P0402,
                        i.opcode.span,
                        format!(
                            "`{}` needs PTX {}.{} or later; PTX {}.{} was requested",
                            i.opcode.text,
                            ptx / 10,
                            ptx % 10,
                            v / 10,
                            v % 10
                        ),
                    )
                    .label("not available in the requested PTX version"),
                );
            }
        }
        need = need.max(ptx);
    }
    if diags.is_empty() {
        Ok(need)
    } else {
        Err(diags)
    }
}

/// Lowers a checked module for NVPTX and prints it as PTX (or as LLVM IR).
pub fn emit(m: &Module<'_>, arch: &Arch, opt: u8, what: Emit) -> Result<String, Vec<Diagnostic>> {
    init();
    let need = requirements(m, arch)?;
    let mut arch = arch.clone();
    if arch.ptx.is_none() && need > arch.min_ptx() {
        // Raise the output version just enough for what the module uses.
        arch.ptx = crate::arch::PTX_VERSIONS.iter().copied().find(|&v| v >= need);
    }
    let arch = &arch;
    let ctx = Context::create();
    let lowered = ptx_llvm::lower(&ctx, m, ptx_llvm::Flavour::Nvvm, "ptx-jit")?;
    let module = lowered.module;
    let fail = |msg: String| vec![Diagnostic::error(ptx_front::Code::P0401, Default::default(), msg)];
    let triple = TargetTriple::create("nvptx64-nvidia-cuda");
    let target = Target::from_triple(&triple).map_err(|e| fail(format!("NVPTX target: {e}")))?;
    let level = match opt {
        0 => OptimizationLevel::None,
        1 => OptimizationLevel::Less,
        2 => OptimizationLevel::Default,
        _ => OptimizationLevel::Aggressive,
    };
    let tm = target
        .create_target_machine(
            &triple,
            &arch.cpu(),
            &arch.features(),
            level,
            RelocMode::Default,
            CodeModel::Default,
        )
        .ok_or_else(|| fail(format!("cannot create an NVPTX target machine for {}", arch.cpu())))?;
    module.set_data_layout(&tm.get_target_data().get_data_layout());
    module
        .verify()
        .map_err(|e| fail(format!("internal error: invalid LLVM IR: {e}")))?;
    let passes = format!("default<O{}>", opt.min(3));
    module
        .run_passes(&passes, &tm, PassBuilderOptions::create())
        .map_err(|e| fail(format!("LLVM passes: {e}")))?;
    match what {
        Emit::Llvm => Ok(module.print_to_string().to_string()),
        Emit::Ptx => {
            let buf = tm
                .write_to_memory_buffer(&module, FileType::Assembly)
                .map_err(|e| fail(format!("NVPTX codegen: {e}")))?;
            Ok(String::from_utf8_lossy(buf.as_slice())
                .trim_end_matches('\0')
                .to_string())
        }
    }
}
