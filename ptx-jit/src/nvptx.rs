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

/// What LLVM's instruction selection needs beyond the ISA table: the `.sync` warp intrinsics are only
/// selectable from PTX 6.0 and sm_30. LLVM aborts the process when it cannot select, so these are
/// checked before LLVM sees the module.
fn nvptx_min(i: &ptx_front::ast::Instruction<'_>) -> (u32, u32) {
    let warp_sync = matches!(i.opcode.text, "shfl" | "vote" | "barrier") || i.mods.iter().any(|m| m.text == ".warp");
    if warp_sync {
        (60, 30)
    } else {
        (0, 0)
    }
}

/// The PTX version (×10) of the output: the requested one, or the lowest that the target and every
/// instruction allow (instructions may be emitted as inline PTX, whose text needs its own version).
/// Instructions the target or that version cannot express get the checker's gating diagnostic (P0301),
/// so the ISA table stays the one source of the requirements.
fn requirements(m: &Module<'_>, arch: &Arch) -> Result<u32, Vec<Diagnostic>> {
    // Unless asked to lower it, the output keeps the source's version (as far as LLVM can emit it):
    // requirements the ISA table does not record (ptxas knows more) then stay met.
    let (maj, min) = ptx_front::Target::of(m).version;
    let mut need = arch.min_ptx().max(maj * 10 + min);
    let mut diags = vec![];
    for item in &m.items {
        if let ptx_front::ast::Item::Function(f) = item {
            // ptxas: kernel parameters beyond 4352 bytes need PTX 8.1.
            let bytes: u64 = f.params.iter().map(|p| p.size_bytes().next_multiple_of(p.alignment().max(1))).sum();
            if f.kind == ptx_front::ast::FnKind::Entry && bytes > 4352 {
                need = need.max(81);
            }
            if let Some(b) = &f.body {
                ptx_front::ast::visit(b, &mut |s| {
                    if let ptx_front::ast::Statement::Inst(i) = s {
                        let mods: Vec<&str> = i.mods.iter().map(|m| m.text).collect();
                        let ((maj, min), _) = ptx_front::isa::decode(i.opcode.text, &mods)
                            .map_or(((0, 0), 0), |d| d.requires());
                        let (llvm_ptx, llvm_sm) = nvptx_min(i);
                        need = need.max(maj * 10 + min).max(llvm_ptx);
                        if arch.sm < llvm_sm {
                            diags.push(
                                Diagnostic::error(
                                    ptx_front::Code::P0301,
                                    i.opcode.span,
                                    format!("`{}` needs sm_{llvm_sm} or later in LLVM's NVPTX backend; the requested target is {}", i.opcode.text, arch.cpu()),
                                )
                                .label("not available for this target"),
                            );
                        }
                    }
                });
            }
        }
    }
    let last = *crate::arch::PTX_VERSIONS.last().expect("versions");
    let version = match arch.ptx {
        Some(v) => v,
        None => crate::arch::PTX_VERSIONS.iter().copied().find(|&v| v >= need).unwrap_or(last),
    };
    let opts = ptx_front::check::Options {
        sm: Some((arch.sm, arch.suffix)),
        version: Some((version / 10, version % 10)),
        no_lints: true,
        ..Default::default()
    };
    diags.extend(
        ptx_front::check::check_with(m, &opts)
            .into_iter()
            .filter(|d| d.code == ptx_front::Code::P0301),
    );
    if diags.is_empty() {
        Ok(version)
    } else {
        Err(diags)
    }
}

/// Lowers a checked module for NVPTX and prints it as PTX (or as LLVM IR).
pub fn emit(m: &Module<'_>, arch: &Arch, opt: u8, what: Emit) -> Result<String, Vec<Diagnostic>> {
    init();
    let version = requirements(m, arch)?;
    let arch = &Arch { ptx: Some(version), ..arch.clone() };
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
