//! The nvvm flavour through LLVM's NVPTX backend: PTX out for a chosen sm_XX and .version.

pub mod arch;

use arch::Arch;
use inkwell::context::Context;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetTriple};
use inkwell::OptimizationLevel;
use ptx_front::ast::Module;
use ptx_front::Diagnostic;
use std::sync::Once;
use std::time::{Duration, Instant};

fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| Target::initialize_nvptx(&InitializationConfig::default()));
}

pub enum Emit {
    Ptx,
    /// LLVM IR text after optimisation.
    Llvm,
    /// LLVM bitcode after optimisation.
    Bc,
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

/// What the module needs of the output before lowering: the PTX version (×10), the requested one or
/// the lowest that the source, the target and every instruction allow; and the opcode offsets of the
/// instructions whose base form (no modifiers) the target lacks. Instructions that LLVM's backend cannot
/// select get a diagnostic here (LLVM would abort the process).
/// Symbols LLVM's NVPTX backend cannot print. PTX names may contain `%` (`%f30` is a legal global),
/// but LLVM's printer aborts the process on one ("Symbol name with unsupported characters"): the
/// names of functions and of variables that become LLVM globals (global, shared and const ones).
fn unprintable_symbols(m: &Module<'_>) -> Vec<Diagnostic> {
    use ptx_front::ast::{Item, Name, Statement};
    use ptx_front::types::Space;
    let symbol = |v: &ptx_front::ast::VarDecl<'_>| matches!(v.space, Space::Global | Space::Shared | Space::Const);
    let mut bad: Vec<Name<'_>> = vec![];
    for item in &m.items {
        match item {
            Item::Var(v) if symbol(v) => bad.push(v.name),
            Item::Function(f) => {
                bad.push(f.name);
                if let Some(b) = &f.body {
                    ptx_front::ast::visit(b, &mut |s| {
                        if let Statement::Var(v) = s {
                            if symbol(v) {
                                bad.push(v.name);
                            }
                        }
                    });
                }
            }
            _ => {}
        }
    }
    bad.into_iter()
        .filter(|n| n.text.contains('%'))
        .map(|n| {
            Diagnostic::error(
                ptx_front::Code::P0401,
                n.span,
                format!("`{}`: LLVM's NVPTX backend cannot emit a symbol name with `%`", n.text),
            )
            .label("valid PTX, but not a name LLVM can print")
            .help("rename it without `%`")
        })
        .collect()
}

fn requirements(m: &Module<'_>, arch: &Arch) -> (u32, Vec<u32>, Vec<Diagnostic>) {
    // Unless asked to lower it, the output keeps the source's version (as far as LLVM can emit it):
    // requirements the ISA table does not record (ptxas knows more) then stay met.
    let (maj, min) = ptx_front::Target::of(m).version;
    let mut need = arch.min_ptx().max(maj * 10 + min);
    let mut diags = vec![];
    let mut base_unmet = vec![];
    let requested = arch.ptx.unwrap_or(u32::MAX);
    diags.extend(unprintable_symbols(m));
    let mut checker = ptx_front::check::Checker::new(
        m,
        &ptx_front::check::Options {
            no_lints: true,
            ..Default::default()
        },
    );
    for item in &m.items {
        if let ptx_front::ast::Item::Function(f) = item {
            // ptxas: kernel parameters beyond 4352 bytes need PTX 8.1.
            let bytes: u64 = f
                .params
                .iter()
                .map(|p| p.size_bytes().next_multiple_of(p.alignment().max(1)))
                .sum();
            if f.kind == ptx_front::ast::FnKind::Entry && bytes > 4352 {
                need = need.max(81);
                if requested < 81 {
                    diags.push(
                        Diagnostic::error(
                            ptx_front::Code::P0301,
                            f.name.span,
                            format!(
                                "`{}` takes {bytes} bytes of parameters; more than 4352 needs PTX 8.1",
                                f.name.text
                            ),
                        )
                        .label("not expressible in the requested PTX version"),
                    );
                }
            }
            // The checker's IR gives each instruction's decoded form and its special registers.
            if let Some(checked) = checker.function(f, &mut vec![], ptx_front::check::Detail::Resolved) {
                for x in &checked.insts {
                    let i = x.ast;
                    if let Some(d) = &x.decoded {
                        let ((maj, min), _) = d.requires();
                        need = need.max(maj * 10 + min);
                        let base = d.spec.ptx.0 * 10 + d.spec.ptx.1;
                        if arch.sm < d.spec.sm || requested < base || d.spec.arch && arch.suffix != Some('a') {
                            base_unmet.push(i.opcode.span.start);
                        }
                    }
                    let sregs = checked
                        .uses_of(x)
                        .iter()
                        .filter(|u| matches!(u.sym, ptx_front::ir::Sym::Special(_)));
                    for n in sregs.map(|u| &u.name) {
                        let (maj, min) = ptx_front::scope::special_register_ptx(n.text);
                        let v = maj * 10 + min;
                        need = need.max(v);
                        if requested < v {
                            diags.push(
                                Diagnostic::error(
                                    ptx_front::Code::P0301,
                                    n.span,
                                    format!(
                                        "special register `{}` needs PTX {maj}.{min}; PTX {}.{} was requested",
                                        n.text,
                                        requested / 10,
                                        requested % 10
                                    ),
                                )
                                .label("not available in the requested PTX version"),
                            );
                        }
                    }
                    let (llvm_ptx, llvm_sm) = nvptx_min(i);
                    need = need.max(llvm_ptx);
                    if arch.sm < llvm_sm || requested < llvm_ptx {
                        diags.push(
                                Diagnostic::error(
                                    ptx_front::Code::P0301,
                                    i.opcode.span,
                                    format!(
                                        "`{}` needs sm_{llvm_sm} and PTX {}.{} in LLVM's NVPTX backend; the requested target is {}",
                                        i.opcode.text,
                                        llvm_ptx / 10,
                                        llvm_ptx % 10,
                                        arch.cpu()
                                    ),
                                )
                                .label("not available for this target"),
                            );
                    }
                }
            }
        }
    }
    let last = *crate::nvptx::arch::PTX_VERSIONS.last().expect("versions");
    let version = match arch.ptx {
        Some(v) => v,
        None => crate::nvptx::arch::PTX_VERSIONS
            .iter()
            .copied()
            .find(|&v| v >= need)
            .unwrap_or(last),
    };
    (version, base_unmet, diags)
}

/// The checker's gating (P0301, naming the instruction and the sm and PTX version it needs) for the
/// instructions the output cannot express: those emitted as inline PTX, whose text must be valid for the
/// target as written, and those whose base form the target lacks. Natively lowered instructions are
/// otherwise LLVM's to express (it emulates what the target lacks, such as bf16 conversions on sm_75).
fn gate(m: &Module<'_>, arch: &Arch, binding: &[u32]) -> Result<(), Vec<Diagnostic>> {
    if binding.is_empty() {
        return Ok(());
    }
    let version = arch.ptx.unwrap_or(arch.min_ptx());
    let opts = ptx_front::check::Options {
        sm: Some((arch.sm, arch.suffix)),
        version: Some((version / 10, version % 10)),
        no_lints: true,
        ..Default::default()
    };
    let diags: Vec<Diagnostic> = ptx_front::check::check_with(m, &opts)
        .into_iter()
        .filter(|d| d.code == ptx_front::Code::P0301 && binding.binary_search(&d.span.start).is_ok())
        .collect();
    if diags.is_empty() {
        Ok(())
    } else {
        Err(diags)
    }
}

/// Time spent in each phase of one compilation (`ptx-jit bench compile` reports them).
#[derive(Clone, Copy, Debug, Default)]
pub struct Phases {
    /// Gating against the target and PTX version.
    pub validate: Duration,
    pub lower: Duration,
    pub optimise: Duration,
    pub codegen: Duration,
    /// Re-parsing and checking the emitted PTX with our own front end.
    pub recheck: Duration,
}

/// Lowers a checked module for NVPTX and prints it as PTX (or as LLVM IR).
pub fn emit(m: &Module<'_>, arch: &Arch, opt: u8, what: Emit) -> Result<String, Vec<Diagnostic>> {
    let bytes = emit_bytes(m, arch, opt, what, &mut Phases::default())?;
    String::from_utf8(bytes).map_err(|_| fail("bitcode is not text; write it to a file".into()))
}

fn fail(msg: String) -> Vec<Diagnostic> {
    vec![Diagnostic::error(ptx_front::Code::P0401, Default::default(), msg)]
}

/// Like [`emit`], for any output (bitcode included), recording the time of each phase.
pub fn emit_bytes(
    m: &Module<'_>,
    arch: &Arch,
    opt: u8,
    what: Emit,
    t: &mut Phases,
) -> Result<Vec<u8>, Vec<Diagnostic>> {
    init();
    let t0 = Instant::now();
    let (version, mut binding, mut early) = requirements(m, arch);
    let arch = &Arch {
        ptx: Some(version),
        ..arch.clone()
    };
    if !early.is_empty() {
        // Report these with the checker's gating of the rest, in source order.
        binding.sort_unstable();
        if let Err(more) = gate(m, arch, &binding) {
            // The checker's diagnostic (with its help line) replaces ours at the same instruction.
            early.retain(|d| !more.iter().any(|g| g.span.start == d.span.start));
            early.extend(more);
        }
        early.sort_by_key(|d| d.span.start);
        return Err(early);
    }
    t.validate = t0.elapsed();
    let t0 = Instant::now();
    let _llvm = crate::LLVM_USE.read_recursive();
    let ctx = Context::create();
    let lowered = ptx_llvm::lower(&ctx, m, ptx_llvm::Flavour::Nvvm, "ptx-jit")?;
    t.lower = t0.elapsed();
    let t0 = Instant::now();
    binding.extend(&lowered.inline_asm);
    binding.sort_unstable();
    gate(m, arch, &binding)?;
    t.validate += t0.elapsed();
    let t0 = Instant::now();
    let module = lowered.module;
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
    t.lower += t0.elapsed();
    let t0 = Instant::now();
    let passes = format!("default<O{}>", opt.min(3));
    module
        .run_passes(&passes, &tm, PassBuilderOptions::create())
        .map_err(|e| fail(format!("LLVM passes: {e}")))?;
    t.optimise = t0.elapsed();
    let t0 = Instant::now();
    let out = match what {
        Emit::Llvm => module.print_to_string().to_string().into_bytes(),
        Emit::Bc => module.write_bitcode_to_memory().as_slice().to_vec(),
        Emit::Ptx => {
            let buf = tm
                .write_to_memory_buffer(&module, FileType::Assembly)
                .map_err(|e| fail(format!("NVPTX codegen: {e}")))?;
            let text = String::from_utf8_lossy(buf.as_slice())
                .trim_end_matches('\0')
                .to_string();
            t.codegen = t0.elapsed();
            let t0 = Instant::now();
            recheck(&text)?;
            t.recheck = t0.elapsed();
            return Ok(text.into_bytes());
        }
    };
    t.codegen = t0.elapsed();
    Ok(out)
}

/// We never hand out PTX that our own front end rejects: an error there (from LLVM's output or from an
/// inline-PTX fallback) is reported instead of the text.
fn recheck(ptx: &str) -> Result<(), Vec<Diagnostic>> {
    let opts = ptx_front::check::Options {
        no_lints: true,
        ..Default::default()
    };
    let (_, diags) = ptx_front::parse_and_check_with(ptx, &opts);
    let errors: Vec<&Diagnostic> = diags.iter().filter(|d| d.is_error()).collect();
    if errors.is_empty() {
        return Ok(());
    }
    let shown: Vec<String> = errors.iter().take(5).map(|d| d.one_line("emitted.ptx", ptx)).collect();
    Err(fail(format!(
        "internal error: the emitted PTX does not pass our own checker ({} error(s)): {}",
        errors.len(),
        shown.join("; ")
    )))
}
