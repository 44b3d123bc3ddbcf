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

/// Lowers a checked module for NVPTX and prints it as PTX (or as LLVM IR).
pub fn emit(m: &Module<'_>, arch: &Arch, opt: u8, what: Emit) -> Result<String, Vec<Diagnostic>> {
    init();
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
