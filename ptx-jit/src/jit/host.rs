//! The host flavour: LLVM O3 for this CPU, compiled to object files that one process-wide ORC LLJIT
//! links. Every module gets a symbol prefix of its own (named by its text, so a kernel's code is named
//! alike in every process and its tiers can come from the disk cache, `crate::jit::cache`) and a
//! resource tracker, so it can be unloaded.

use inkwell::context::Context;
use inkwell::llvm_sys::core::*;
use inkwell::llvm_sys::core::{LLVMContextCreate, LLVMContextDispose};
use inkwell::llvm_sys::error::{LLVMDisposeErrorMessage, LLVMErrorRef, LLVMGetErrorMessage};
use inkwell::llvm_sys::orc2::lljit::*;
use inkwell::llvm_sys::orc2::*;
use inkwell::llvm_sys::prelude::{LLVMModuleRef, LLVMValueRef};
use inkwell::module::Linkage;
use inkwell::targets::{CodeModel, InitializationConfig, RelocMode, Target, TargetMachine, TargetTriple};
use inkwell::OptimizationLevel;
use once_cell::sync::Lazy;
use ptx_front::ast::Module;
use ptx_front::outline::Outline;
use ptx_front::span::Span;
use ptx_front::{Code, Diagnostic};
use ptx_llvm::{Flavour, KernelInfo};
use std::ffi::{CStr, CString};
use std::mem::ManuallyDrop;
use std::time::{Duration, Instant};

struct Jit(LLVMOrcLLJITRef);
// SAFETY: LLJIT is documented as thread-safe for adding modules and looking up symbols.
unsafe impl Send for Jit {}
unsafe impl Sync for Jit {}

fn take_error(e: LLVMErrorRef) -> Result<(), String> {
    if e.is_null() {
        return Ok(());
    }
    unsafe {
        let m = LLVMGetErrorMessage(e);
        let s = CStr::from_ptr(m).to_string_lossy().into_owned();
        LLVMDisposeErrorMessage(m);
        Err(s)
    }
}

static JIT: Lazy<Result<Jit, String>> = Lazy::new(|| unsafe {
    llvm_args_from_env();
    Target::initialize_native(&InitializationConfig::default()).map_err(|e| format!("native target: {e}"))?;
    let builder = LLVMOrcCreateLLJITBuilder();
    let mut jtmb = std::ptr::null_mut();
    take_error(LLVMOrcJITTargetMachineBuilderDetectHost(&mut jtmb))?;
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, jtmb);
    let mut jit = std::ptr::null_mut();
    take_error(LLVMOrcCreateLLJIT(&mut jit, builder))?;
    // Let JIT'd code call libm and libc (LLVM may turn intrinsics into calls such as `fmaf`).
    let mut gen = std::ptr::null_mut();
    take_error(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
        &mut gen,
        LLVMOrcLLJITGetGlobalPrefix(jit),
        None,
        std::ptr::null_mut(),
    ))?;
    LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(jit), gen);
    define_builtins(jit)?;
    Ok(Jit(jit))
});

/// Starts LLVM's JIT (target set-up, the JIT's own objects: some milliseconds) on a thread of its
/// own, as a driver does in `cuInit`, so the first module load does not wait for it. Later calls
/// do nothing; a load that comes first waits for the set-up in progress.
pub fn warm_up() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        WARMED_IN.store(std::process::id(), std::sync::atomic::Ordering::Relaxed);
        // SAFETY: `atexit` takes a plain function; registering it twice is not possible here (once).
        unsafe { libc::atexit(quiesce_llvm_at_exit) };
        std::thread::spawn(|| {
            Lazy::force(&JIT);
        });
    });
}

/// The process that started the JIT's warm-up (and registered [`quiesce_llvm_at_exit`]).
static WARMED_IN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// LLVM's global objects are destroyed at process exit (C++ static destructors) while another thread
/// may still use them: the warm-up thread building the JIT after `cuInit`, or a compile on a stream's
/// worker. A program that returned from `main` right after `cuInit` died about one time in ten with
/// "pure virtual method called". This exit handler, registered after LLVM's destructors were (so it
/// runs before them), waits for the JIT to be built and for the compile in progress, and stops the
/// background compiler ([`tier_up`]). It does not keep the lock: the CUDA runtime's own exit handler,
/// which runs after it, unloads modules (and so takes the lock) before LLVM is torn down.
extern "C" fn quiesce_llvm_at_exit() {
    // A forked child has none of its parent's threads: what they were doing never finishes there.
    if WARMED_IN.load(std::sync::atomic::Ordering::Relaxed) != std::process::id() {
        return;
    }
    Lazy::force(&JIT);
    tier_up::stop();
    drop(CODEGEN.lock());
}

/// LLVM options the JIT always sets. `-disable-post-ra` leaves out the post-register-allocation list
/// scheduler, which LLVM runs for some x86 models (Zen among them): its dependence graph grows with
/// the square of the flag-setting instructions it sees, half of the compile time of a kernel that is
/// one 60,000-instruction chain, and on out-of-order cores it gains nothing measurable (the reference
/// kernels' times stay within noise without it).
const LLVM_ARGS: &[&str] = &["-disable-post-ra"];

/// Sets [`LLVM_ARGS`] and `PTXJIT_LLVM_ARGS`, LLVM's own command-line options (e.g.
/// `-force-vector-interleave=1`) for performance work on the generated code; parsed once, before the
/// JIT exists. An option given in both is taken from the environment (LLVM refuses one given twice).
fn llvm_args_from_env() {
    let from_env = std::env::var("PTXJIT_LLVM_ARGS").unwrap_or_default();
    let env_args: Vec<&str> = from_env.split_whitespace().collect();
    let name = |a: &str| {
        a.trim_start_matches('-')
            .split('=')
            .next()
            .unwrap_or_default()
            .to_string()
    };
    let owned: Vec<CString> = std::iter::once("ptx-jit")
        .chain(
            LLVM_ARGS
                .iter()
                .copied()
                .filter(|d| !env_args.iter().any(|e| name(e) == name(d))),
        )
        .chain(env_args.iter().copied())
        .filter_map(|a| CString::new(a).ok())
        .collect();
    let argv: Vec<*const std::ffi::c_char> = owned.iter().map(|a| a.as_ptr()).collect();
    unsafe {
        inkwell::llvm_sys::support::LLVMParseCommandLineOptions(argv.len() as i32, argv.as_ptr(), std::ptr::null())
    };
}

/// The runtime's entry points generated code calls ([`crate::runtime_symbols`]) by absolute address:
/// they live in this binary, whose symbols the process search generator cannot see unless it was
/// linked with `-rdynamic`.
unsafe fn define_builtins(jit: LLVMOrcLLJITRef) -> Result<(), String> {
    let fns = crate::runtime_symbols();
    let mut pairs: Vec<LLVMOrcCSymbolMapPair> = fns
        .iter()
        .map(|(name, addr)| {
            let c = CString::new(*name).expect("no NUL");
            LLVMOrcCSymbolMapPair {
                Name: unsafe { LLVMOrcLLJITMangleAndIntern(jit, c.as_ptr()) },
                Sym: LLVMJITEvaluatedSymbol {
                    Address: *addr,
                    Flags: LLVMJITSymbolFlags {
                        GenericFlags: LLVMJITSymbolGenericFlags::LLVMJITSymbolGenericFlagsExported as u8
                            | LLVMJITSymbolGenericFlags::LLVMJITSymbolGenericFlagsCallable as u8,
                        TargetFlags: 0,
                    },
                },
            }
        })
        .collect();
    let mu = unsafe { LLVMOrcAbsoluteSymbols(pairs.as_mut_ptr(), pairs.len()) };
    take_error(unsafe { LLVMOrcJITDylibDefine(LLVMOrcLLJITGetMainJITDylib(jit), mu) })
}

/// Module prefixes in use: by hash of a module's text, the numbers of its loads that are alive.
static PREFIXES: parking_lot::Mutex<rustc_hash::FxHashMap<u64, std::collections::BTreeSet<u32>>> =
    parking_lot::Mutex::new(rustc_hash::FxHashMap::with_hasher(rustc_hash::FxBuildHasher));

/// The prefix of a module's symbols: the hash of its text, and the lowest number no other live load
/// of the same text has. A module's code is named alike in every process that loads it, so its
/// compiled tiers can come from the disk cache (`crate::jit::cache`).
fn claim_prefix(text: &str) -> (String, Claim) {
    let hash = twox_hash::XxHash3_64::oneshot(text.as_bytes());
    let mut live = PREFIXES.lock();
    let taken = live.entry(hash).or_default();
    let n = (0..).find(|n| !taken.contains(n)).expect("fewer than 2^32 loads");
    taken.insert(n);
    (format!("ptxjit.{hash:016x}.{n}."), Claim(hash, n))
}

/// A prefix in use, given back when dropped (with its module, or on a failed load).
struct Claim(u64, u32);

impl Drop for Claim {
    fn drop(&mut self) {
        let mut live = PREFIXES.lock();
        if let Some(taken) = live.get_mut(&self.0) {
            taken.remove(&self.1);
            if taken.is_empty() {
                live.remove(&self.0);
            }
        }
    }
}

/// The target machines are shared, and LLJIT links and materialises inside lookups: optimisation,
/// code generation and adding and looking up code are serialised.
static CODEGEN: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

pub use ptx_llvm::abi::BlockFn;

mod tier_up;

/// Kernels compile in two tiers. A kernel's first launches, if they are small, run code optimised for
/// compile time (`pipeline::QUICK_PASSES`: a tenth of O3's time, no vectorisation), so a module is quick from
/// `cuModuleLoadData` to its first result. A kernel launched again gets its fully optimised code (O3
/// for this CPU), compiled in the background in the driver ([`tier_up`]) while its launches go on
/// running the quick tier, else at that launch. Modules of the quick tier are named with this suffix.
const TIER0_SUFFIX: &str = ".tier0";

/// Launches of at least this many threads never run the quick tier: the kernel's run time, not its
/// compile time, is what such a launch waits for.
const TIER0_MAX_THREADS: u64 = 1 << 16;

pub struct HostKernel {
    pub info: KernelInfo,
    code: std::sync::Arc<Tiers>,
    /// What preparing the kernel cost.
    pub prepared_in: PrepareTimes,
    /// Whether `PTXJIT_PROFILE` has counted that cost (`crate::runtime::profile`).
    pub(crate) profiled: std::sync::atomic::AtomicBool,
    /// Where the lines of the PTX text start, to name the line of a fault or `trap` (when known).
    pub lines: Option<std::sync::Arc<[u32]>>,
    /// Registers the kernel's body reads where no path has written them (the linter's P0504): the
    /// read's byte offset and the register's name, which initcheck reports at every launch.
    pub unwritten_registers: Vec<(u32, String)>,
}

/// A kernel's code in its two tiers, each compiled when first needed; shared with the background
/// compiler, which holds it only while it works on it.
struct Tiers {
    source: std::sync::Arc<Source>,
    /// The block entry's JIT symbol (the quick tier's adds `TIER0_SUFFIX`).
    symbol: String,
    /// The module text's parts the kernel is parsed from (see `ptx_front::outline`).
    parts: Vec<Span>,
    /// Whether the kernel is cut into regions, which the optimised tier may lane-vectorise.
    regions: bool,
    quick: std::sync::OnceLock<Result<Full, String>>,
    full: std::sync::OnceLock<Result<Full, String>>,
    /// Launches that ran the quick tier: the second asks for the optimised tier in the background.
    quick_launches: std::sync::atomic::AtomicU32,
    /// The background compile failed: the next launch compiles the optimised tier itself.
    background_failed: std::sync::atomic::AtomicBool,
}

impl Tiers {
    fn full(&self) -> &Result<Full, String> {
        self.full
            .get_or_init(|| self.source.compile(&self.symbol, &self.parts, false, self.regions))
    }

    fn quick(&self) -> &Result<Full, String> {
        self.quick
            .get_or_init(|| self.source.compile(&self.symbol, &self.parts, true, false))
    }
}

/// A tier's code: its address, how many of its regions run lane-vectorised (none in the quick tier),
/// and what compiling it cost.
#[derive(Clone, Copy)]
struct Full {
    address: usize,
    lanes: u32,
    times: TierTimes,
}

/// What compiling one tier of a kernel cost, phase by phase. A tier taken from the disk cache spends
/// only `link`.
#[derive(Clone, Copy, Default, Debug)]
pub struct TierTimes {
    pub cached: bool,
    /// Parsing the kernel's part of the text (the checker passed it when the kernel was prepared).
    pub parse: Duration,
    pub lower: Duration,
    /// Each pass of `crate::jit::pipeline`, in its order (zero for a pass the tier skips).
    pub passes: [Duration; crate::jit::pipeline::PASS_COUNT],
    /// Machine code generation for this CPU, to an object file.
    pub codegen: Duration,
    /// Adding the object file to the JIT and resolving the entry.
    pub link: Duration,
}

impl TierTimes {
    pub fn total(&self) -> Duration {
        self.parse + self.lower + self.passes.iter().sum::<Duration>() + self.codegen + self.link
    }
}

/// What preparing a kernel (checking it and lowering it once to learn how it runs) cost. A kernel
/// whose preparation came from the disk cache spends none of it.
#[derive(Clone, Copy, Default, Debug)]
pub struct PrepareTimes {
    pub cached: bool,
    pub parse: Duration,
    pub check: Duration,
    pub lower: Duration,
}

impl PrepareTimes {
    pub fn total(&self) -> Duration {
        self.parse + self.check + self.lower
    }
}

/// Which tier a launch runs.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub enum Tier {
    /// The quick tier for small launches until the optimised code is there, else the optimised one
    /// ([`HostKernel::entry_for`]).
    #[default]
    Auto,
    Quick,
    Optimised,
}

impl HostKernel {
    /// The fully optimised block entry, compiled on first use (or waited for while it is linked).
    pub fn entry(&self) -> Result<BlockFn, String> {
        Self::address(self.code.full())
    }

    /// The module's PTX text, when it was loaded from text (to name lines in reports).
    pub fn text(&self) -> Option<SharedText> {
        let source = &self.code.source;
        source.text.get().ok().filter(|_| source.original)
    }

    /// How the kernel runs; for a kernel cut into regions, the count of lane-vectorised ones is known
    /// once its optimised code is (the quick tier runs none).
    pub fn exec(&self) -> ptx_llvm::Exec {
        match (self.info.exec, self.code.full.get()) {
            (ptx_llvm::Exec::Regions { frame_bytes, warp, .. }, Some(Ok(f))) => ptx_llvm::Exec::Regions {
                frame_bytes,
                lanes: f.lanes,
                warp,
            },
            (e, _) => e,
        }
    }

    /// The quick tier's block entry, compiled on first use.
    pub fn entry_quick(&self) -> Result<BlockFn, String> {
        Self::address(self.code.quick())
    }

    /// The block entry for a launch of `threads` threads in `tier`. [`Tier::Auto`] runs the
    /// optimised code when it is there, when the launch is large, or when the disk cache has it (a
    /// warm process runs optimised code from the start). Otherwise it runs the quick tier; the second
    /// such launch asks the background compiler for the optimised code ([`tier_up`]) and, where
    /// there is none, compiles it.
    pub fn entry_for(&self, threads: u64, tier: Tier) -> Result<BlockFn, String> {
        match tier {
            Tier::Quick => return self.entry_quick(),
            Tier::Optimised => return self.entry(),
            Tier::Auto => {}
        }
        let code = &self.code;
        if let Some(full) = code.full.get() {
            return Self::address(full);
        }
        // The quick tier runs regions thread by thread, which code counting on a warp in step (see
        // `Exec::Regions`) cannot take.
        let warp = matches!(self.info.exec, ptx_llvm::Exec::Regions { warp: true, .. });
        let quick = threads < TIER0_MAX_THREADS
            && !warp
            && !code.background_failed.load(std::sync::atomic::Ordering::Relaxed)
            && (code.quick.get().is_some() || !code.source.optimised_cached(&code.symbol, &code.parts, code.regions));
        if quick {
            if let Ok(q) = code.quick() {
                let launch = code.quick_launches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if launch != 1 || tier_up::ask(code) {
                    return Self::address(&Ok(*q));
                }
            }
        }
        self.entry()
    }

    /// The module the kernel belongs to (its symbol prefix, unique among the modules loaded).
    pub fn module_id(&self) -> &str {
        &self.code.source.prefix
    }

    /// What compiling each tier (quick, optimised) cost, for the tiers compiled so far.
    pub fn tier_times(&self) -> [Option<TierTimes>; 2] {
        let times =
            |t: &std::sync::OnceLock<Result<Full, String>>| t.get().and_then(|f| f.as_ref().ok()).map(|f| f.times);
        [times(&self.code.quick), times(&self.code.full)]
    }

    /// The JIT time this kernel has cost so far: its preparation and the tiers compiled.
    pub fn jit_time(&self) -> Duration {
        self.prepared_in.total()
            + self
                .tier_times()
                .iter()
                .flatten()
                .map(TierTimes::total)
                .sum::<Duration>()
    }

    fn address(r: &Result<Full, String>) -> Result<BlockFn, String> {
        match r {
            // SAFETY: the symbol is the block entry the host flavour defines as `void(env, params)`.
            Ok(f) => Ok(unsafe { std::mem::transmute::<usize, BlockFn>(f.address) }),
            Err(e) => Err(e.clone()),
        }
    }
}

/// How a loaded module keeps its PTX text for the kernels it prepares and compiles later.
pub enum Retain {
    /// A copy of the text.
    Copy,
    /// Nothing but a way to make the text again (decompressing the fat binary entry it came from,
    /// which the caller keeps): a module then costs its compressed form until a kernel is used, and
    /// the text lives while a kernel of it is prepared or compiled, and a while after it was loaded
    /// or last made (see `RECENT_TEXT_BYTES`).
    Again(Box<dyn Fn() -> Result<String, String> + Send + Sync>),
}

/// A module's text, shared. Boxed so that a `Weak` to it (which keeps the `Arc`'s own allocation)
/// does not keep the text's bytes once the last holder is gone.
pub type SharedText = std::sync::Arc<Box<str>>;

/// A module's text as `Retain` keeps it.
enum Text {
    Kept(SharedText),
    Again {
        again: Box<dyn Fn() -> Result<String, String> + Send + Sync>,
        /// The text made again, while someone holds it.
        made: parking_lot::Mutex<Option<std::sync::Weak<Box<str>>>>,
        len: usize,
    },
}

/// Texts loaded or made again are kept alive a while, up to this many bytes in all: a kernel's first
/// use makes its module's text for preparing, for the disk cache's key and for compiling, one after
/// another, often right after the load, and decompressing a fat binary's PTX each time cost a warm
/// process most of its first cuBLAS call.
const RECENT_TEXT_BYTES: usize = 32 << 20;

static RECENT: parking_lot::Mutex<std::collections::VecDeque<SharedText>> =
    parking_lot::Mutex::new(std::collections::VecDeque::new());

/// Keeps `t` among the texts made most recently (see [`RECENT_TEXT_BYTES`]).
fn keep_recent(t: &SharedText) {
    if t.len() > RECENT_TEXT_BYTES {
        return;
    }
    let mut recent = RECENT.lock();
    recent.push_back(t.clone());
    // At most a few dozen texts: summing them is cheaper than the text just made.
    let mut bytes: usize = recent.iter().map(|t| t.len()).sum();
    while bytes > RECENT_TEXT_BYTES {
        bytes -= recent.pop_front().map_or(0, |t| t.len());
    }
}

/// Lets go of the texts kept for reuse (see [`RECENT_TEXT_BYTES`]): a module that keeps no text makes
/// it again when next needed.
pub fn forget_recent_texts() {
    RECENT.lock().clear();
}

impl Text {
    fn new(text: &str, retain: Retain) -> Text {
        match retain {
            Retain::Copy => Text::Kept(SharedText::new(text.into())),
            Retain::Again(again) => {
                // A kernel is often used right after its module is loaded (libraries load lazily):
                // the loaded text counts as made, when it is small enough to keep.
                let made = (text.len() <= RECENT_TEXT_BYTES).then(|| {
                    let t = SharedText::new(text.into());
                    keep_recent(&t);
                    std::sync::Arc::downgrade(&t)
                });
                Text::Again {
                    again,
                    made: parking_lot::Mutex::new(made),
                    len: text.len(),
                }
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Text::Kept(t) => t.len(),
            Text::Again { len, .. } => *len,
        }
    }

    fn get(&self) -> Result<SharedText, String> {
        match self {
            Text::Kept(t) => Ok(t.clone()),
            Text::Again { again, made, len } => {
                let mut made = made.lock();
                if let Some(t) = made.as_ref().and_then(std::sync::Weak::upgrade) {
                    return Ok(t);
                }
                let t = SharedText::new(again()?.into_boxed_str());
                if t.len() != *len {
                    return Err("the module's text changed since it was loaded".into());
                }
                *made = Some(std::sync::Arc::downgrade(&t));
                keep_recent(&t);
                Ok(t)
            }
        }
    }
}

/// What a module's kernels compile from, on demand: the module's PTX text (or a way to make it again,
/// [`Retain`]) and its outline, from which a kernel's part (the kernel and what it names) is parsed
/// and lowered again at each compile (a tier of a kernel costs that kernel and what it reaches, and a
/// loaded module holds no syntax tree or IR), the context its IR lives in, and the resource tracker that owns the module's
/// code. The LLVM objects are used only under `CODEGEN`. Lowering is deterministic, so every lowering
/// of a kernel names and lays out its code alike.
struct Source {
    tsc: LLVMOrcThreadSafeContextRef,
    /// `tsc`'s context, which the kernels' modules are lowered in.
    ctx: inkwell::llvm_sys::prelude::LLVMContextRef,
    tracker: LLVMOrcResourceTrackerRef,
    kernels: Vec<String>,
    text: Text,
    outline: Outline,
    /// Whether `text` is what the module was loaded from (else it is the printed syntax tree, whose
    /// lines name nothing the user wrote).
    original: bool,
    /// Where the text's lines start, found when a kernel is first prepared.
    lines: std::sync::OnceLock<std::sync::Arc<[u32]>>,
    /// Lane-vectorised regions (`ptx_llvm`'s `lanes`) are part of the optimised tier only: building
    /// them takes most of a kernel's lowering time, which the quick tier, there to make a module's
    /// first launch quick, should not pay.
    options: ptx_llvm::Options,
    prefix: String,
    /// The prefix's claim ([`claim_prefix`]), given back when the module is unloaded (after the
    /// code that the prefix names is gone: fields drop after `Drop::drop`).
    _claim: Claim,
}

// SAFETY: every use of the LLVM objects is under the CODEGEN lock.
unsafe impl Send for Source {}
unsafe impl Sync for Source {}

/// A tier's disk-cache entry (see [`Source::tier_key`]): its lane count and object file.
type Keyed = Option<(&'static crate::jit::cache::Cache, crate::jit::cache::Key)>;

/// The tier `keyed` names, from the disk cache: the entry is its lane count, then its object file.
fn cached_tier(keyed: &Keyed) -> Option<(u32, Vec<u8>)> {
    let (c, k) = keyed.as_ref()?;
    let b = c.load(k)?;
    Some((u32::from_le_bytes(b.get(..4)?.try_into().ok()?), b[4..].to_vec()))
}

/// Stores a tier in the disk cache (see [`cached_tier`]).
fn store_tier(keyed: &Keyed, lanes: u32, object: &[u8]) {
    if let Some((c, k)) = keyed {
        c.store(k, &[&lanes.to_le_bytes()[..], object].concat());
    }
}

/// A tier's JIT symbol (the quick tier's adds `TIER0_SUFFIX`) and whether its regions are
/// lane-vectorised (only the optimised tier's are, where the kernel's `lanes` allow).
fn tier_name(symbol: &str, quick: bool, lanes: bool) -> (String, bool) {
    let mut name = symbol.to_string();
    if quick {
        name.push_str(TIER0_SUFFIX);
    }
    (name, lanes && !quick)
}

impl Source {
    /// Compiles kernel `symbol`'s block entry (its quick tier if `quick`; with lane-vectorised
    /// regions if the kernel is cut into `regions` and the tier is the optimised one).
    fn compile(&self, symbol: &str, parts: &[Span], quick: bool, regions: bool) -> Result<Full, String> {
        // LLVM's analyses recurse along chains of dependent values (a loop-invariance query follows
        // operands one call per link), so a kernel of long straight-line chains needs a stack in
        // proportion to its size: a 16 MB kernel overflowed the main thread's 8 MiB, and a driver's
        // stream threads have less. The compile runs on a thread of its own whose stack grows with
        // the text; untouched stack costs address space, not memory.
        self.on_compile_stack(|| self.compile_here(symbol, parts, quick, regions))
    }

    /// Runs `f` on a thread whose stack grows with the text (see [`Source::compile`]).
    fn on_compile_stack<T: Send>(&self, f: impl FnOnce() -> Result<T, String> + Send) -> Result<T, String> {
        let stack = (256 << 20) + 16 * self.text.len();
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("ptx-jit-compile".into())
                .stack_size(stack)
                .spawn_scoped(scope, f)
                .map_err(|e| format!("cannot start a compile thread: {e}"))?
                .join()
                .map_err(|_| "the compile thread panicked".to_string())?
        })
    }

    fn compile_here(&self, symbol: &str, parts: &[Span], quick: bool, regions: bool) -> Result<Full, String> {
        // This thread allocates from a malloc arena of its own, which cannot reuse what the loading
        // thread freed (the module's syntax tree, the load's lowering): hand that back to the system
        // first, or a 4 MB kernel's first launch peaks 150 MB higher.
        #[cfg(target_env = "gnu")]
        unsafe {
            libc::malloc_trim(0);
        }
        // Without a JIT there is nothing to compile for.
        JIT.as_ref().map_err(|e| e.clone())?;
        let what = |e: String| {
            format!(
                "JIT compilation of `{}`: {e}",
                symbol.rsplit('.').next().unwrap_or(symbol)
            )
        };
        // The text (made again when the module keeps it packed) and the parse need no lock; other
        // compiles go on meanwhile. The parts passed the checker when the kernel was prepared.
        let text = self.text.get().map_err(what)?;
        let (name, lanes) = tier_name(symbol, quick, regions && self.options.lanes);
        let keyed = self.tier_key(&text, &name, parts, lanes);
        if let Some((lanes, object)) = cached_tier(&keyed) {
            let cached = TierTimes {
                cached: true,
                ..Default::default()
            };
            match self.link_tier(&name, lanes, &object, cached) {
                Ok(full) => return Ok(full),
                // An entry the JIT cannot link (whatever made it) is compiled again and replaced.
                Err(_) => keyed.iter().for_each(|(c, k)| c.remove(k)),
            }
        }
        let mut times = TierTimes::default();
        let t = Instant::now();
        let (m, _) = ptx_front::parse_parts(&text, parts);
        times.parse = t.elapsed();
        let (lanes, object) = {
            let _codegen = CODEGEN.lock();
            self.object(&m, symbol, &name, lanes, quick, &mut times).map_err(what)?
        };
        store_tier(&keyed, lanes, &object);
        self.link_tier(&name, lanes, &object, times).map_err(what)
    }

    /// A tier's code: `object` linked into the JIT, with the compile's `times` and the link's.
    fn link_tier(&self, name: &str, lanes: u32, object: &[u8], times: TierTimes) -> Result<Full, String> {
        let jit = JIT.as_ref().map_err(|e| e.clone())?;
        let t = Instant::now();
        let address = self.link(jit, name, object)?;
        let times = TierTimes {
            link: t.elapsed(),
            ..times
        };
        Ok(Full { address, lanes, times })
    }

    /// The disk cache and the key of the tier named `name` (lane-vectorised if `lanes`) of the kernel
    /// made of `parts` of `text`; None when the cache is off (or the IR is to be printed, which needs
    /// the pipeline to run).
    fn tier_key(&self, text: &str, name: &str, parts: &[Span], lanes: bool) -> Keyed {
        let cache = crate::jit::cache::get().filter(|_| !crate::jit::pipeline::dumping())?;
        let mut k = crate::jit::cache::Key::start();
        let llvm_args = std::env::var("PTXJIT_LLVM_ARGS").unwrap_or_default();
        k.add(name.as_bytes()).add(
            format!(
                "{:?} lanes={lanes} cpu={} llvm={LLVM_ARGS:?} {llvm_args}",
                self.options,
                host_cpu()
            )
            .as_bytes(),
        );
        for p in parts {
            k.add(text[p.range()].as_bytes());
        }
        Some((cache, k))
    }

    /// Whether the disk cache holds kernel `symbol`'s optimised tier. Not asked of a text too large to
    /// keep at hand (see [`RECENT_TEXT_BYTES`]): making it again only for the question would cost a
    /// cold launch of such a module one more decompression.
    fn optimised_cached(&self, symbol: &str, parts: &[Span], regions: bool) -> bool {
        if matches!(self.text, Text::Again { len, .. } if len > RECENT_TEXT_BYTES) {
            return false;
        }
        let Ok(text) = self.text.get() else { return false };
        let (name, lanes) = tier_name(symbol, false, regions && self.options.lanes);
        self.tier_key(&text, &name, parts, lanes)
            .is_some_and(|(c, k)| c.contains(&k))
    }

    /// Adds a tier's object file to the JIT and gives the address of `name` in it.
    fn link(&self, jit: &Jit, name: &str, object: &[u8]) -> Result<usize, String> {
        let _codegen = CODEGEN.lock();
        // SAFETY: the buffer is copied by LLVM; the tracker belongs to this source.
        unsafe {
            let buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(
                object.as_ptr() as *const _,
                object.len(),
                c"kernel".as_ptr(),
            );
            take_error(LLVMOrcLLJITAddObjectFileWithRT(jit.0, self.tracker, buf))?;
            let c = CString::new(name).map_err(|_| "symbol name with NUL".to_string())?;
            let mut addr = 0;
            take_error(LLVMOrcLLJITLookup(jit.0, &mut addr, c.as_ptr()))?;
            Ok(addr as usize)
        }
    }

    /// Kernel `symbol`'s tier compiled to an object file defining `name`: lowered from `m`, its part
    /// of the text, optimised by the tier's passes and compiled for this CPU (under `CODEGEN`); with
    /// how many of its regions run lane-vectorised. The phases' times go to `times`.
    fn object(
        &self,
        m: &Module<'_>,
        symbol: &str,
        name: &str,
        lanes: bool,
        quick: bool,
        times: &mut TierTimes,
    ) -> Result<(u32, Vec<u8>), String> {
        let t = Instant::now();
        let (part, lanes) = self.lower(m, symbol, lanes)?;
        times.lower = t.elapsed();
        // SAFETY: `part` was just lowered in this source's context, which outlives the call, and is
        // disposed of below (inkwell's Module owns it from here).
        let module = unsafe { inkwell::module::Module::new(part) };
        if quick {
            let f = module
                .get_function(symbol)
                .ok_or_else(|| "kernel missing from its module".to_string())?;
            f.as_global_value().set_name(name);
        }
        let triple = module.get_triple().as_str().to_string_lossy().into_owned();
        let object = with_tm(Purpose::Optimise, &triple, |tm| {
            crate::jit::pipeline::run(&module, tm, quick, &mut times.passes)
        })
        .and_then(|()| {
            let t = Instant::now();
            let object = with_tm(Purpose::Codegen, &triple, |tm| {
                tm.write_to_memory_buffer(&module, inkwell::targets::FileType::Object)
                    .map(|b| b.as_slice().to_vec())
                    .map_err(|e| e.to_string())
            });
            times.codegen = t.elapsed();
            object
        });
        // The context is the source's: dispose of the module only.
        drop(module);
        Ok((lanes, object?))
    }

    /// Kernel `symbol`, lowered from `m`, its part of the text (with lane-vectorised regions if
    /// `lanes`), and how many of its regions run lane-vectorised.
    fn lower(&self, m: &Module<'_>, symbol: &str, lanes: bool) -> Result<(LLVMModuleRef, u32), String> {
        let kernel = symbol.strip_prefix(&self.prefix).unwrap_or(symbol);
        // The context belongs to `tsc`; ManuallyDrop keeps inkwell from disposing it.
        let ctx = ManuallyDrop::new(unsafe { Context::new(self.ctx) });
        let options = ptx_llvm::Options { lanes, ..self.options };
        let lowered = lower_prepared(&ctx, m, options, Some(kernel), &self.prefix).map_err(|d| {
            d.first()
                .map_or_else(|| "lowering failed".to_string(), |d| d.message.clone())
        })?;
        let lanes = lowered
            .kernels
            .iter()
            .map(|k| match k.exec {
                ptx_llvm::Exec::Regions { lanes, .. } => lanes,
                _ => 0,
            })
            .sum();
        let raw_module = lowered.module.as_mut_ptr();
        std::mem::forget(lowered.module);
        kernel_part(raw_module, symbol, &self.kernels);
        Ok((raw_module, lanes))
    }
}

impl Drop for Source {
    fn drop(&mut self) {
        let _codegen = CODEGEN.lock();
        unsafe {
            let _ = take_error(LLVMOrcResourceTrackerRemove(self.tracker));
            LLVMOrcReleaseResourceTracker(self.tracker);
            LLVMOrcDisposeThreadSafeContext(self.tsc);
        }
    }
}

/// A module loaded for this CPU: its variables placed, its kernels prepared (checked and lowered
/// once, to learn how each runs) when first asked for, or all at load when eager, and compiled at
/// their first launch. Dropping it frees the code.
pub struct HostModule {
    kernels: Vec<LazyKernel>,
    /// Module-scope variables: name → (address, size).
    pub globals: Vec<(String, u64, u64)>,
    /// The module's texture and surface references (`.texref`, `.surfref`; true for a surface), each
    /// 8 bytes among `globals` holding the handle of the object bound to it.
    pub references: Vec<(String, bool)>,
    /// The module-scope variables declared `.attribute(.managed)` (`__managed__`), which the host
    /// reads and writes at their device address (`cuLibraryGetManaged`).
    pub managed: Vec<String>,
    source: std::sync::Arc<Source>,
}

struct LazyKernel {
    name: String,
    /// Its item in the module's outline.
    item: u32,
    prepared: std::sync::OnceLock<Result<HostKernel, Vec<Diagnostic>>>,
}

impl Drop for HostModule {
    fn drop(&mut self) {
        for (_, addr, _) in &self.globals {
            crate::memory_map::unregister(*addr);
        }
    }
}

impl HostModule {
    /// The module's id (its symbol prefix, unique among the modules loaded).
    pub fn id(&self) -> &str {
        &self.source.prefix
    }

    /// The kernels' names, in the module's order.
    pub fn kernel_names(&self) -> impl Iterator<Item = &str> {
        self.kernels.iter().map(|k| k.name.as_str())
    }

    /// The PTX text the module was loaded from (or its printed syntax tree), which its diagnostics'
    /// spans index.
    pub fn text(&self) -> Result<SharedText, String> {
        self.source.text.get()
    }

    /// The index of kernel `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.kernels.iter().position(|k| k.name == name)
    }

    /// Kernel `k`, prepared on first use: its part of the module parsed and checked (the errors are
    /// those a check of the whole module reports there) and lowered once to learn how it runs.
    pub fn prepare(&self, k: usize) -> Result<&HostKernel, &[Diagnostic]> {
        let lazy = &self.kernels[k];
        lazy.prepared
            .get_or_init(|| prepare(&self.source, &lazy.name, lazy.item))
            .as_ref()
            .map_err(|d| d.as_slice())
    }

    /// Whether kernel `k` has been prepared (successfully or not).
    pub fn prepared(&self, k: usize) -> bool {
        self.kernels[k].prepared.get().is_some()
    }

    /// Kernel `name`, prepared; `None` if there is none or it fails to prepare.
    pub fn kernel(&self, name: &str) -> Option<&HostKernel> {
        self.prepare(self.find(name)?).ok()
    }
}

/// Prepares kernel `name` (outline item `item`) of `source`: see [`HostModule::prepare`].
fn prepare(source: &std::sync::Arc<Source>, name: &str, item: u32) -> Result<HostKernel, Vec<Diagnostic>> {
    let text = source.text.get().map_err(internal)?;
    let text = &*text;
    let parts = source.outline.part(text, [item]);
    // What a kernel's preparation learns depends on its text and options alone, so a kernel this
    // build prepared before, in any process, is not parsed, checked and lowered again.
    let cache = crate::jit::cache::get();
    let key = cache.map(|_| {
        let mut k = crate::jit::cache::Key::start();
        k.add(b"prepared")
            .add(format!("{}{name} {:?}", source.prefix, source.options).as_bytes());
        for p in &parts {
            k.add(text[p.range()].as_bytes());
        }
        k
    });
    let cached: Option<Prepared> = cache
        .zip(key.as_ref())
        .and_then(|(c, k)| c.load(k))
        .and_then(|b| serde_json::from_slice(&b).ok());
    let mut prepared_in = PrepareTimes {
        cached: cached.is_some(),
        ..Default::default()
    };
    let prepared = match cached {
        Some(p) => p,
        None => {
            let p = prepare_here(source, text, &parts, name, item, &mut prepared_in)?;
            if let (Some(c), Some(k)) = (cache, &key) {
                if let Ok(b) = serde_json::to_vec(&p) {
                    c.store(k, &b);
                }
            }
            p
        }
    };
    let lines = source.original.then(|| {
        source
            .lines
            .get_or_init(|| ptx_front::span::line_starts(text).into())
            .clone()
    });
    let regions = matches!(prepared.info.exec, ptx_llvm::Exec::Regions { .. });
    Ok(HostKernel {
        info: prepared.info,
        code: std::sync::Arc::new(Tiers {
            source: source.clone(),
            symbol: format!("{}{name}", source.prefix),
            parts,
            regions,
            quick: std::sync::OnceLock::new(),
            full: std::sync::OnceLock::new(),
            quick_launches: Default::default(),
            background_failed: Default::default(),
        }),
        prepared_in,
        profiled: Default::default(),
        lines,
        unwritten_registers: prepared.unwritten_registers,
    })
}

/// What preparing a kernel learns, which the disk cache keeps.
#[derive(serde::Serialize, serde::Deserialize)]
struct Prepared {
    info: KernelInfo,
    unwritten_registers: Vec<(u32, String)>,
}

/// Parses and checks kernel `name`'s `parts` of `text`, and lowers it once to learn how it runs; the
/// phases' times go to `times`.
fn prepare_here(
    source: &Source,
    text: &str,
    parts: &[Span],
    name: &str,
    item: u32,
    times: &mut PrepareTimes,
) -> Result<Prepared, Vec<Diagnostic>> {
    let t = Instant::now();
    let (m, diags) = ptx_front::parse_parts(text, parts);
    times.parse = t.elapsed();
    let t = Instant::now();
    let (m, diags) = ptx_front::check_parsed(text, parts, m, diags, &Default::default());
    times.check = t.elapsed();
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    // Lowered once, alone and in a context of its own dropped right after, so that preparing
    // reports what the lowering refuses and learns how the kernel runs, while holding one kernel's
    // IR at a time. Its code is lowered again when a tier of it is compiled (`Source::compile`).
    let t = Instant::now();
    let info = {
        let _llvm = crate::LLVM_USE.read_recursive();
        let scratch = Context::create();
        let mut lowered = lower_prepared(&scratch, &m, without_lanes(source.options), Some(name), &source.prefix)?;
        lowered
            .kernels
            .pop()
            .ok_or_else(|| internal(format!("kernel `{name}` did not lower")))?
    };
    times.lower = t.elapsed();
    // initcheck's registers: the linter's reads before any write, inside the kernel's body.
    let span = source.outline.items[item as usize].span;
    let unwritten_registers = diags
        .iter()
        .filter(|d| d.code == Code::P0504 && span.start <= d.span.start && d.span.end <= span.end)
        .map(|d| (d.span.start, text[d.span.range()].to_string()))
        .collect();
    Ok(Prepared {
        info,
        unwritten_registers,
    })
}

/// Lowering options for what is not a tier's compile (a kernel's preparation, the module's variables):
/// lane-vectorised regions belong to the optimised tier's compile alone.
fn without_lanes(options: ptx_llvm::Options) -> ptx_llvm::Options {
    ptx_llvm::Options {
        lanes: false,
        ..options
    }
}

fn internal(msg: String) -> Vec<Diagnostic> {
    vec![Diagnostic::error(Code::P0401, Default::default(), msg)]
}

/// What a host target machine is for.
#[derive(Clone, Copy)]
enum Purpose {
    /// The IR passes: this CPU's features, so LLVM vectorises for it.
    Optimise = 0,
    /// Compiling a tier's optimised IR to an object file, at LLJIT's own code-generation settings
    /// (position-independent, small code model), so the object links into the JIT as LLJIT's own
    /// would.
    Codegen = 1,
}

/// Runs `f` with the host target machine for `purpose`, made once (making one takes milliseconds).
/// It runs under `CODEGEN`, so one machine of each purpose serves every module.
fn with_tm<T>(
    purpose: Purpose,
    triple: &str,
    f: impl FnOnce(&TargetMachine) -> Result<T, String>,
) -> Result<T, String> {
    struct Tm(TargetMachine);
    // SAFETY: a machine is only used under its mutex.
    unsafe impl Send for Tm {}
    static TMS: [parking_lot::Mutex<Option<(String, Tm)>>; 2] =
        [parking_lot::Mutex::new(None), parking_lot::Mutex::new(None)];
    let mut tm = TMS[purpose as usize].lock();
    if tm.as_ref().is_none_or(|(t, _)| t != triple) {
        *tm = Some((triple.to_string(), Tm(host_tm(purpose, triple)?)));
    }
    f(&tm.as_ref().expect("just made").1 .0)
}

/// This CPU and its features, which compiled code depends on.
pub fn host_cpu() -> String {
    format!(
        "{} {}",
        TargetMachine::get_host_cpu_name(),
        TargetMachine::get_host_cpu_features()
    )
}

/// A target machine for this CPU and its features, for `purpose`.
fn host_tm(purpose: Purpose, triple: &str) -> Result<TargetMachine, String> {
    let triple = TargetTriple::create(triple);
    let target = Target::from_triple(&triple).map_err(|e| e.to_string())?;
    let (level, reloc, model) = match purpose {
        Purpose::Optimise => (OptimizationLevel::Aggressive, RelocMode::Default, CodeModel::JITDefault),
        Purpose::Codegen => (OptimizationLevel::Default, RelocMode::PIC, CodeModel::Small),
    };
    target
        .create_target_machine(
            &triple,
            &TargetMachine::get_host_cpu_name().to_string(),
            &TargetMachine::get_host_cpu_features().to_string(),
            level,
            reloc,
            model,
        )
        .ok_or_else(|| "cannot create the host target machine".to_string())
}

/// Emits the optimised host-flavour IR as text (for `--emit llvm --arch host` and snapshot tests).
pub fn host_ir(m: &Module<'_>, optimise: bool) -> Result<String, Vec<Diagnostic>> {
    host_module_ir(m, optimise, None)
}

/// The host flavour's IR one kernel at a time, as the JIT compiles it: `each` receives one module per
/// kernel (the module's variables and device functions, and that kernel), so memory is the largest
/// kernel's rather than the module's.
pub fn host_ir_each(
    m: &Module<'_>,
    optimise: bool,
    each: &mut dyn FnMut(String) -> Result<(), Vec<Diagnostic>>,
) -> Result<(), Vec<Diagnostic>> {
    let kernels = kernel_names(m);
    if kernels.is_empty() {
        return each(host_module_ir(m, optimise, None)?);
    }
    for k in kernels {
        each(host_module_ir(m, optimise, Some(k))?)?;
    }
    Ok(())
}

/// The names of the module's kernels (entries with a body), in order.
fn kernel_names<'a>(m: &Module<'a>) -> Vec<&'a str> {
    m.items
        .iter()
        .filter_map(|i| match i {
            ptx_front::ast::Item::Function(f) if f.kind == ptx_front::ast::FnKind::Entry && f.body.is_some() => {
                Some(f.name.text)
            }
            _ => None,
        })
        .collect()
}

/// The IR of the whole module, or of its kernel `only` (with the module's declarations).
fn host_module_ir(m: &Module<'_>, optimise: bool, only: Option<&str>) -> Result<String, Vec<Diagnostic>> {
    let _llvm = crate::LLVM_USE.read_recursive();
    let ctx = Context::create();
    let lowered = match only {
        Some(k) => ptx_llvm::lower_kernel(&ctx, m, Flavour::Host, options(), k)?,
        None => ptx_llvm::lower_with(&ctx, m, Flavour::Host, "ptx-jit", options())?,
    };
    lowered
        .module
        .verify()
        .map_err(|e| internal(format!("internal error: invalid LLVM IR: {e}")))?;
    if optimise {
        let jit = JIT.as_ref().map_err(|e| internal(e.clone()))?;
        let triple = unsafe { CStr::from_ptr(LLVMOrcLLJITGetTripleString(jit.0)) }
            .to_string_lossy()
            .into_owned();
        let tm = host_tm(Purpose::Optimise, &triple).map_err(internal)?;
        lowered.module.set_triple(&tm.get_triple());
        lowered.module.set_data_layout(&tm.get_target_data().get_data_layout());
        crate::jit::pipeline::run(&lowered.module, &tm, false, &mut Default::default()).map_err(internal)?;
    }
    Ok(lowered.module.print_to_string().to_string())
}

/// Lowering options for the host; `PTXJIT_REGIONS=0` in the environment runs every synchronising kernel
/// on fibers, `PTXJIT_LANES=0` every region thread by thread (to compare the execution models).
pub fn options() -> ptx_llvm::Options {
    let on = |var: &str| std::env::var(var).map_or(true, |v| v != "0");
    ptx_llvm::Options {
        regions: on("PTXJIT_REGIONS"),
        checked: false,
        lanes: on("PTXJIT_LANES"),
        counters: false,
    }
}

/// Compiles a checked syntax tree (printed to text, which its kernels compile from), every kernel
/// prepared now.
pub fn compile(m: &Module<'_>) -> Result<HostModule, Vec<Diagnostic>> {
    load_text(&ptx_front::print(m), Retain::Copy, false, options(), Loading::Eager)
}

/// When a module's kernels are prepared (see [`HostModule::prepare`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loading {
    /// At first use, as NVIDIA's driver does by default since CUDA 12.2: a load indexes the kernels
    /// and places the variables, and a kernel's errors surface when it is first asked for.
    Lazy,
    /// All at load: a load fails on any error in the module.
    Eager,
}

impl Loading {
    /// `CUDA_MODULE_LOADING=EAGER` asks for eager loading, anything else (or nothing) lazy loading,
    /// as with NVIDIA's driver.
    pub fn from_env() -> Loading {
        match std::env::var("CUDA_MODULE_LOADING") {
            Ok(v) if v.eq_ignore_ascii_case("EAGER") => Loading::Eager,
            _ => Loading::Lazy,
        }
    }
}

/// Module variables (`.global` and `.const`, at module or function scope) live as long as the module
/// and take device memory: more than the device has is refused before anything is allocated.
fn module_memory(m: &Module<'_>) -> Result<(), Vec<Diagnostic>> {
    use ptx_front::ast::{Item, Statement};
    use ptx_front::types::Space;
    let mut vars = vec![];
    for item in &m.items {
        match item {
            Item::Var(v) => vars.push(v),
            Item::Function(f) => {
                if let Some(body) = &f.body {
                    ptx_front::ast::visit(body, &mut |s| {
                        if let Statement::Var(v) = s {
                            vars.push(v);
                        }
                    });
                }
            }
            _ => {}
        }
    }
    let vars: Vec<_> = vars
        .into_iter()
        .filter(|v| matches!(v.space, Space::Global | Space::Const))
        .collect();
    let total = vars.iter().fold(0u64, |t, v| t.saturating_add(v.size_bytes()));
    let limit = crate::device::device_memory();
    match vars.iter().max_by_key(|v| v.size_bytes()) {
        Some(v) if total > limit => Err(vec![Diagnostic::error(
            Code::P0403,
            v.name.span,
            format!("the module's variables take {total} bytes, more than the device's {limit} bytes of memory"),
        )
        .label("the largest")]),
        _ => Ok(()),
    }
}

/// Functions with a body.
fn definitions(m: LLVMModuleRef) -> Vec<LLVMValueRef> {
    let mut out = vec![];
    unsafe {
        let mut f = LLVMGetFirstFunction(m);
        while !f.is_null() {
            if LLVMCountBasicBlocks(f) > 0 {
                out.push(f);
            }
            f = LLVMGetNextFunction(f);
        }
    }
    out
}

/// Deletes unused function definitions that `removable` allows, until none is left.
fn delete_unused(m: LLVMModuleRef, removable: impl Fn(LLVMValueRef) -> bool) {
    loop {
        let dead: Vec<LLVMValueRef> = definitions(m)
            .into_iter()
            .filter(|&f| unsafe { LLVMGetFirstUse(f).is_null() } && removable(f))
            .collect();
        if dead.is_empty() {
            return;
        }
        for f in dead {
            unsafe { LLVMDeleteFunction(f) };
        }
    }
}

/// Cuts `k` down to the part that kernel `keep` needs: its block entry and every function it calls
/// (made internal, so each kernel's module has its own copy), with module variables as declarations
/// (defined once, in the module's variables part).
fn kernel_part(k: LLVMModuleRef, keep: &str, kernels: &[String]) {
    unsafe {
        let name = |f: LLVMValueRef| {
            let mut len = 0;
            let p = LLVMGetValueName2(f, &mut len);
            String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len)).into_owned()
        };
        for f in definitions(k) {
            let n = name(f);
            if !kernels.contains(&n) {
                LLVMSetLinkage(f, inkwell::llvm_sys::LLVMLinkage::LLVMInternalLinkage);
            }
        }
        delete_unused(k, |f| name(f) != keep);
        // Module variables are shared: declared here, defined once. The lowering's own constants
        // (internal or private) stay with each copy.
        let mut g = LLVMGetFirstGlobal(k);
        while !g.is_null() {
            use inkwell::llvm_sys::LLVMLinkage::*;
            if !matches!(LLVMGetLinkage(g), LLVMInternalLinkage | LLVMPrivateLinkage) {
                LLVMSetInitializer(g, std::ptr::null_mut());
                LLVMSetLinkage(g, LLVMExternalLinkage);
            }
            g = LLVMGetNextGlobal(g);
        }
    }
}

/// Lowers `m` (or only its kernel `only`) for the host and readies it for the JIT: verified, with the
/// JIT's triple and data layout, and every name it defines behind `prefix` (two modules may both define
/// `vecadd`).
fn lower_prepared<'ctx>(
    ctx: &'ctx Context,
    m: &Module<'_>,
    options: ptx_llvm::Options,
    only: Option<&str>,
    prefix: &str,
) -> Result<ptx_llvm::Lowered<'ctx>, Vec<Diagnostic>> {
    let jit = JIT
        .as_ref()
        .map_err(|e| internal(format!("LLVM JIT unavailable: {e}")))?;
    let lowered = match only {
        Some(k) => ptx_llvm::lower_kernel(ctx, m, Flavour::Host, options, k)?,
        None => ptx_llvm::lower_with(ctx, m, Flavour::Host, "ptx-jit", options)?,
    };
    let module = &lowered.module;
    module
        .verify()
        .map_err(|e| internal(format!("internal error: invalid LLVM IR: {e}")))?;
    // The JIT's own triple and data layout (creating a target machine here would cost more than the
    // rest of the load).
    unsafe {
        LLVMSetTarget(module.as_mut_ptr(), LLVMOrcLLJITGetTripleString(jit.0));
        LLVMSetDataLayout(module.as_mut_ptr(), LLVMOrcLLJITGetDataLayoutStr(jit.0));
    }
    // Frames larger than a page touch each page as they grow, so they meet the kernel stack's guard
    // page (`crate::runtime::trap`) instead of jumping past it into other memory.
    let probe = ctx.create_string_attribute("probe-stack", "inline-asm");
    for f in module.get_functions() {
        if f.count_basic_blocks() > 0 {
            f.add_attribute(inkwell::attributes::AttributeLoc::Function, probe);
        }
        if f.count_basic_blocks() > 0 && f.get_linkage() != Linkage::Internal {
            let n = format!("{prefix}{}", f.get_name().to_string_lossy());
            f.as_global_value().set_name(&n);
        }
    }
    for g in module.get_globals() {
        let n = format!("{prefix}{}", g.get_name().to_string_lossy());
        g.set_name(&n);
    }
    Ok(lowered)
}

/// Loads a module from its PTX `text` (`original`: as the user wrote it, so faults name its lines):
/// outlines it, checks and places its variables, and prepares its kernels now if `loading` is eager.
/// Text the outline cannot follow (unbalanced braces, stray characters) is checked whole first, so
/// its errors are reported at load. Checked mode (see `crate::runtime::checked`) runs synchronising
/// kernels on fibers: `.local` arrays of regions live in heap frames, which the local-memory check
/// does not know.
pub fn load_text(
    text: &str,
    retain: Retain,
    original: bool,
    options: ptx_llvm::Options,
    loading: Loading,
) -> Result<HostModule, Vec<Diagnostic>> {
    let outline = Outline::new(text);
    if !outline.complete {
        crate::front(text)?;
    }
    let options = ptx_llvm::Options {
        regions: options.regions && !options.checked,
        ..options
    };
    let jit = JIT
        .as_ref()
        .map_err(|e| internal(format!("LLVM JIT unavailable: {e}")))?;
    let (prefix, claim) = claim_prefix(text);
    // The module variables are defined once, in a module without kernels, placed now.
    let parts = outline.variables_part(text);
    let (m, diags) = ptx_front::parse_and_check_parts(text, &parts, &Default::default());
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    module_memory(&m)?;
    let references = m
        .items
        .iter()
        .filter_map(|i| match i {
            ptx_front::ast::Item::Var(v)
                if matches!(v.ty, ptx_front::types::Type::Texref | ptx_front::types::Type::Surfref) =>
            {
                Some((v.name.text.to_string(), v.ty == ptx_front::types::Type::Surfref))
            }
            _ => None,
        })
        .collect();
    let managed = m
        .items
        .iter()
        .filter_map(|i| match i {
            ptx_front::ast::Item::Var(v) if v.managed => Some(v.name.text.to_string()),
            _ => None,
        })
        .collect();
    let llvm = crate::LLVM_USE.read_recursive();
    // The context is handed to ORC below, which then owns (and frees) it.
    let raw_ctx = unsafe { LLVMContextCreate() };
    let ctx = ManuallyDrop::new(unsafe { Context::new(raw_ctx) });
    let lowered = match lower_prepared(&ctx, &m, without_lanes(options), Some(""), &prefix) {
        Ok(l) => l,
        Err(d) => {
            unsafe { LLVMContextDispose(raw_ctx) };
            return Err(d);
        }
    };
    drop(m);
    let kernels: Vec<LazyKernel> = outline
        .kernels(text)
        .map(|(item, name)| LazyKernel {
            name: name.to_string(),
            item,
            prepared: std::sync::OnceLock::new(),
        })
        .collect();
    let symbols: Vec<String> = kernels.iter().map(|k| format!("{prefix}{}", k.name)).collect();
    let globals = lowered.module.as_mut_ptr();
    std::mem::forget(lowered.module);
    let codegen = CODEGEN.lock();
    let (source, added) = unsafe {
        let tsc = LLVMOrcCreateNewThreadSafeContextFromLLVMContext(raw_ctx);
        let tracker = LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(jit.0));
        let added = if lowered.globals.is_empty() {
            LLVMDisposeModule(globals);
            Ok(())
        } else {
            delete_unused(globals, |_| true);
            take_error(LLVMOrcLLJITAddLLVMIRModuleWithRT(
                jit.0,
                tracker,
                LLVMOrcCreateNewThreadSafeModule(globals, tsc),
            ))
        };
        let source = std::sync::Arc::new(Source {
            tsc,
            ctx: raw_ctx,
            tracker,
            kernels: symbols,
            text: Text::new(text, retain),
            outline,
            original,
            lines: std::sync::OnceLock::new(),
            options,
            prefix: prefix.clone(),
            _claim: claim,
        });
        (source, added)
    };
    let mut hm = HostModule {
        kernels,
        globals: vec![],
        references,
        managed,
        source,
    };
    let placed = (|| -> Result<(), Vec<Diagnostic>> {
        added.map_err(|e| internal(format!("JIT: {e}")))?;
        for (name, size) in lowered.globals {
            let c = CString::new(format!("{prefix}{name}")).map_err(|_| internal("symbol name with NUL".into()))?;
            let mut addr = 0;
            take_error(unsafe { LLVMOrcLLJITLookup(jit.0, &mut addr, c.as_ptr()) })
                .map_err(|e| internal(format!("JIT lookup of `{name}`: {e}")))?;
            crate::memory_map::register(addr, size);
            hm.globals.push((name, addr, size));
        }
        Ok(())
    })();
    // Release the lock before `hm` can drop (its source's Drop takes the lock too).
    drop(codegen);
    drop(llvm);
    placed?;
    if loading == Loading::Eager {
        // One text for every kernel (a packed one is made again once, not per kernel).
        let _text = hm.source.text.get().map_err(internal)?;
        for k in 0..hm.kernels.len() {
            hm.prepare(k).map_err(|d| d.to_vec())?;
        }
    }
    Ok(hm)
}
