//! The host IR pipeline, in order. Lowering (`ptx_llvm`) has already cut synchronising kernels into
//! regions and, for the optimised tier, built their lane-vectorised copies (`lower/regions.rs`,
//! `lower/lanes`); from there a kernel's module goes through:
//!
//! 1. `ssa`: registers to SSA (`mem2reg`, `dce`), so the passes below see values, not stack slots;
//! 2. `addressing`: address sums split so the constant part folds into the access
//!    ([`super::addressing`]);
//! 3. `guards`: loops whose body tests the thread index versioned for the threads that pass it
//!    ([`super::guards`]; optimised tier only: it pays through O3's loop unswitching);
//! 4. `nan`: NaN canonicalisations between float operations dropped where only the last one shows
//!    ([`super::nan`]);
//! 5. `large`: loops of modules too large for the loop vectoriser's quadratic planning marked not
//!    to be vectorised ([`super::large`]; optimised tier only);
//! 6. `optimise`: LLVM's O3 for this CPU, or for the quick tier [`QUICK_PASSES`];
//! 7. `blocks`: blocks too long for code generation's per-block passes cut into a chain
//!    ([`super::large`]).
//!
//! `PTXJIT_DUMP_IR=after-all` prints each kernel module's IR to stderr before the pipeline (as
//! `lowered`) and after every pass; `PTXJIT_DUMP_IR=NAME[,NAME…]` only after those named.

use inkwell::module::Module;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::TargetMachine;

/// The quick tier's passes: the inlining the lowering asks for (`alwaysinline`) and local clean-up;
/// a quarter of O1's time.
pub(super) const QUICK_PASSES: &str = "always-inline,function(sroa,instcombine<no-verify-fixpoint>,simplifycfg)";

type PassFn = fn(&Module<'_>, &TargetMachine, bool) -> Result<(), String>;

/// How many passes [`PASSES`] lists.
pub const PASS_COUNT: usize = 7;

/// The passes' names, in order (what `PTXJIT_DUMP_IR` and the benchmarks call them), each with
/// whether the quick tier runs it.
pub fn pass_names() -> [(&'static str, bool); PASS_COUNT] {
    PASSES.map(|(name, quick, _)| (name, quick))
}

/// The passes, in order: name, whether the quick tier runs it, and the pass.
const PASSES: [(&str, bool, PassFn); PASS_COUNT] = [
    ("ssa", true, |m, tm, _| llvm_passes(m, tm, "function(mem2reg,dce)")),
    ("addressing", true, |m, _, _| {
        super::addressing::split_address_sums(m);
        Ok(())
    }),
    ("guards", false, |m, _, _| {
        super::guards::version_thread_guards(m);
        Ok(())
    }),
    ("nan", true, |m, _, _| {
        super::nan::drop_inner_canonicalisations(m);
        Ok(())
    }),
    ("large", false, |m, _, _| {
        super::large::bound_vectorisation(m);
        Ok(())
    }),
    ("optimise", true, |m, tm, quick| {
        llvm_passes(m, tm, if quick { QUICK_PASSES } else { "default<O3>" })
    }),
    ("blocks", true, |m, _, _| {
        super::large::split_long_blocks(m);
        Ok(())
    }),
];

fn llvm_passes(m: &Module<'_>, tm: &TargetMachine, passes: &str) -> Result<(), String> {
    m.run_passes(passes, tm, PassBuilderOptions::create())
        .map_err(|e| e.to_string())
}

/// The passes `PTXJIT_DUMP_IR` asks to see the IR after (`lowered` is before the first).
fn dump_wanted() -> &'static [String] {
    static WANTED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    WANTED.get_or_init(|| {
        std::env::var("PTXJIT_DUMP_IR")
            .map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
            .unwrap_or_default()
    })
}

/// Whether IR is to be printed: tiers are then compiled, not taken from the disk cache.
pub fn dumping() -> bool {
    !dump_wanted().is_empty()
}

fn dump_after(pass: &str) -> bool {
    dump_wanted().iter().any(|w| w == pass || w == "after-all")
}

fn dump(m: &Module<'_>, after: &str) {
    if dump_after(after) {
        eprintln!(
            "; ---- PTXJIT_DUMP_IR: {} after {after} ----\n{}",
            m.get_name().to_string_lossy(),
            m.print_to_string().to_string()
        );
    }
}

/// Runs the pipeline of a tier (`quick`: the quick tier's) on a kernel's module; `times` receives
/// each pass's time, in [`PASSES`]'s order (zero for a pass the tier skips).
pub fn run(
    m: &Module<'_>,
    tm: &TargetMachine,
    quick: bool,
    times: &mut [std::time::Duration; PASS_COUNT],
) -> Result<(), String> {
    dump(m, "lowered");
    for ((name, in_quick, pass), time) in PASSES.into_iter().zip(times) {
        if quick && !in_quick {
            continue;
        }
        let t = std::time::Instant::now();
        pass(m, tm, quick)?;
        *time = t.elapsed();
        dump(m, name);
    }
    Ok(())
}
