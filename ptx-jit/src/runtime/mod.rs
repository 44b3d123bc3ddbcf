//! The CPU runtime: runs a grid of CTAs over every core. One CTA runs on one OS thread at a time;
//! the block entry loops over the CTA's threads.

pub mod checked;
pub mod counters;
pub(crate) mod device_libs;
mod fibers;
pub(crate) mod memops;
pub mod profile;
mod regions;
pub mod sanitize;
pub mod tensor;
pub mod texture;
pub mod trap;
pub(crate) mod watchdog;

use crate::device::{MAX_BLOCK_DIM, MAX_GRID_DIM, MAX_THREADS_PER_BLOCK};
use crate::jit::host::HostKernel;
use ptx_llvm::Exec;
use rayon::prelude::*;

/// The environment generated code receives, defined once with the rest of the ABI.
pub use ptx_llvm::abi::{Collective, Env};

static GRIDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

use std::ffi::c_void;

/// The linear index of `env`'s thread in its CTA (x fastest), as warps group threads.
pub(crate) fn thread_index(env: &Env) -> u32 {
    env.tid[0] + env.ntid[0] * (env.tid[1] + env.ntid[1] * env.tid[2])
}

/// The environment of thread (0, 0, 0) of CTA number `cta` (x fastest), with its shared window.
pub fn env_for_cta(l: &Launch<'_>, cta: u64, shared: &mut [u64], collective: Collective) -> Env {
    Env {
        params: l.params.as_ptr(),
        shared: shared.as_mut_ptr() as *mut u8,
        tid: [0; 3],
        ntid: l.block,
        ctaid: cta_index(cta, l.grid),
        nctaid: l.grid,
        sync: std::ptr::null_mut(),
        collective,
        dynamic_shared: l.dynamic_shared as u32,
        smid: (rayon::current_thread_index().unwrap_or(0) as u32) % l.sms,
        nsmid: l.sms,
        gridid: l.gridid,
        fault: std::ptr::null(),
        ctas: 1,
        written: std::ptr::null_mut(),
        grid_workspace: l.grid_workspace,
        cluster: l.cluster as u32,
        cluster_dim: l.cluster_dim,
        cluster_shared: NO_CLUSTER.as_ptr() as *const *mut u8,
    }
}

/// The cluster table of a CTA that runs alone (loop and region kernels, which make no `mapa`): its
/// own addresses need none of it, and any other rank finds a null window and faults.
static NO_CLUSTER: [usize; 2 * ptx_llvm::abi::CLUSTER_TABLE] = [0; 2 * ptx_llvm::abi::CLUSTER_TABLE];

/// How a CTA's shared window is aligned: the most any `.align` of a shared variable gets in absolute
/// addresses (offsets in the window honour every `.align`). Code that swizzles by address bits, as
/// TMA's 128-byte swizzle does over 1,024-byte tiles, sees the bits a GPU gives.
pub const SHARED_ALIGN: usize = 1024;

#[derive(Clone, Copy)]
#[repr(C, align(1024))]
struct SharedLine([u64; SHARED_ALIGN / 8]);

/// A CTA's shared window (static, then dynamic shared memory), zeroed and aligned to [`SHARED_ALIGN`].
pub struct SharedWindow(Vec<SharedLine>);

impl SharedWindow {
    /// The window kernel `k` needs for launch `l`.
    pub fn for_launch(k: &HostKernel, l: &Launch<'_>) -> SharedWindow {
        let bytes = (k.info.static_shared + l.dynamic_shared).max(16) as usize;
        SharedWindow(vec![SharedLine([0; SHARED_ALIGN / 8]); bytes.div_ceil(SHARED_ALIGN)])
    }

    /// The window as 8-byte words.
    pub fn words(&mut self) -> &mut [u64] {
        let n = self.0.len() * (SHARED_ALIGN / 8);
        // SAFETY: `SharedLine` is `repr(C)` over `u64`s with no padding (its size is its alignment).
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr() as *mut u64, n) }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    #[error("invalid launch configuration: {0}")]
    InvalidConfig(String),
    #[error("kernel arguments: {0}")]
    InvalidArgs(String),
    #[error("out of resources: {0}")]
    OutOfResources(String),
    #[error("launch failed: {0}")]
    Failed(String),
    #[error("illegal address: {0}")]
    IllegalAddress(String),
    #[error("misaligned address: {0}")]
    MisalignedAddress(String),
    #[error("device-side assertion: {0}")]
    Assert(String),
    #[error("launch timed out: {0}")]
    Timeout(String),
    #[error("illegal instruction: {0}")]
    IllegalInstruction(String),
    #[error("invalid cluster size: {0}")]
    InvalidClusterSize(String),
    #[error("not supported: {0}")]
    NotSupported(String),
}

pub struct Launch<'p> {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_shared: u64,
    /// The argument buffer, laid out as `KernelInfo::params` says.
    pub params: &'p [u8],
    /// Set by [`Launch::new`]: a number unique to this launch.
    pub gridid: u64,
    /// When set (by the launch's owner, e.g. the driver destroying its context), the launch ends with
    /// its CTAs where they are (`crate::runtime::watchdog`).
    pub cancel: Option<std::sync::Arc<crate::runtime::watchdog::Cancel>>,
    /// The sanitizers to run under (`PTXJIT_SANITIZE` by default); they see a kernel's accesses only
    /// when its module was loaded in checked mode.
    pub sanitize: crate::runtime::sanitize::Tools,
    /// A cooperative launch (`cuLaunchCooperativeKernel`): every CTA runs at once, on a thread of its
    /// own, and the kernel gets a grid workspace for cooperative groups' grid barrier.
    pub cooperative: bool,
    /// The grid workspace's address (`Env::grid_workspace`): 0, which a cooperative launch replaces
    /// with its own.
    pub grid_workspace: u64,
    /// The SMs the device presents (`%nsmid`; `%smid` is the worker's index modulo this), taken when
    /// the launch is made: a cooperative launch runs on more threads than that.
    pub sms: u32,
    /// A cluster launch: the driver was given cluster dimensions, or the kernel declares
    /// `.reqnctapercluster` ([`launch_sanitized`] sets it then).
    pub cluster: bool,
    /// The cluster's shape in CTAs (1, 1, 1 outside cluster launches). The CTAs of a cluster of more
    /// than one run together on one worker, their threads on fibers of one scheduler.
    pub cluster_dim: [u32; 3],
    /// Which tier runs (the quick tier for a small first launch by default).
    pub tier: crate::jit::host::Tier,
    /// Where the launch adds its counts, for a kernel built with counters (`counters`): it then runs
    /// under no sanitizer.
    pub counters: Option<std::sync::Arc<counters::Counters>>,
}

impl<'p> Launch<'p> {
    /// Threads in the whole grid.
    pub fn threads(&self) -> u64 {
        self.grid.iter().chain(&self.block).map(|&d| d as u64).product()
    }

    pub fn new(grid: [u32; 3], block: [u32; 3], dynamic_shared: u64, params: &'p [u8]) -> Self {
        Launch {
            grid,
            block,
            dynamic_shared,
            params,
            gridid: GRIDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            cancel: None,
            sanitize: crate::runtime::sanitize::Tools::from_env(),
            cooperative: false,
            grid_workspace: 0,
            sms: crate::device::sm_count(),
            cluster: false,
            cluster_dim: [1; 3],
            tier: Default::default(),
            counters: None,
        }
    }
}

pub fn validate(k: &HostKernel, l: &Launch<'_>) -> Result<(), LaunchError> {
    for d in 0..3 {
        if l.grid[d] == 0 || l.block[d] == 0 {
            return Err(LaunchError::InvalidConfig(
                "grid and block dimensions must be at least 1".into(),
            ));
        }
        if l.block[d] > MAX_BLOCK_DIM[d] {
            return Err(LaunchError::InvalidConfig(format!(
                "block dimension {} is {} (max {})",
                "xyz".as_bytes()[d] as char,
                l.block[d],
                MAX_BLOCK_DIM[d]
            )));
        }
        if l.grid[d] > MAX_GRID_DIM[d] {
            return Err(LaunchError::InvalidConfig(format!(
                "grid dimension {} is {} (max {})",
                "xyz".as_bytes()[d] as char,
                l.grid[d],
                MAX_GRID_DIM[d]
            )));
        }
    }
    let threads: u64 = l.block.iter().map(|&x| x as u64).product();
    if threads > MAX_THREADS_PER_BLOCK as u64 {
        return Err(LaunchError::InvalidConfig(format!(
            "{threads} threads per block (max {MAX_THREADS_PER_BLOCK})"
        )));
    }
    // As an H100 answers (tests/gpu/probes_c/launch_limits.c): `.maxntid` bounds the block's threads,
    // `.reqntid` fixes its shape exactly.
    if let Some(max) = k.info.max_threads.filter(|&m| threads > m) {
        return Err(LaunchError::InvalidConfig(format!(
            "{threads} threads per block, but `{}` declares `.maxntid` for {max}",
            k.info.name
        )));
    }
    if let Some(req) = k.info.required_block.filter(|&r| r != l.block) {
        return Err(LaunchError::InvalidConfig(format!(
            "a block of {}x{}x{}, but `{}` declares `.reqntid {}, {}, {}`",
            l.block[0], l.block[1], l.block[2], k.info.name, req[0], req[1], req[2]
        )));
    }
    // As an H200 answers (tests/faults/faults.c): `.explicitcluster` without cluster dimensions from
    // the kernel or the launch is refused at the launch.
    if k.info.explicit_cluster && k.info.cluster.is_none() && !l.cluster {
        return Err(LaunchError::InvalidClusterSize(format!(
            "`{}` declares `.explicitcluster` but has no `.reqnctapercluster` and was launched without cluster dimensions",
            k.info.name
        )));
    }
    if let Some(c) = k
        .info
        .cluster
        .filter(|&c| l.cluster && l.cluster_dim != [1; 3] && c != l.cluster_dim)
    {
        return Err(LaunchError::InvalidClusterSize(format!(
            "clusters of {}x{}x{}, but `{}` declares `.reqnctapercluster {}, {}, {}`",
            l.cluster_dim[0], l.cluster_dim[1], l.cluster_dim[2], k.info.name, c[0], c[1], c[2]
        )));
    }
    let dim = k
        .info
        .cluster
        .filter(|_| !l.cluster || l.cluster_dim == [1; 3])
        .unwrap_or(l.cluster_dim);
    let size: u64 = dim.iter().map(|&d| d as u64).product();
    if dim.contains(&0)
        || size > ptx_llvm::abi::CLUSTER_TABLE as u64
        || (0..3).any(|d| !l.grid[d].is_multiple_of(dim[d]))
    {
        return Err(LaunchError::InvalidClusterSize(format!(
            "clusters of {}x{}x{} CTAs for a grid of {}x{}x{} (at most {} CTAs, dividing the grid)",
            dim[0],
            dim[1],
            dim[2],
            l.grid[0],
            l.grid[1],
            l.grid[2],
            ptx_llvm::abi::CLUSTER_TABLE
        )));
    }
    let max_shared = crate::device::profile().shared_per_block_optin;
    // The limit counts the variables' bytes, as CUDA's attributes do, not the padding this backend
    // puts before dynamic shared memory.
    if k.info.shared_bytes + l.dynamic_shared > max_shared {
        return Err(LaunchError::OutOfResources(format!(
            "{} bytes of shared memory per block (max {max_shared})",
            k.info.shared_bytes + l.dynamic_shared
        )));
    }
    if (l.params.len() as u64) < k.info.param_bytes {
        return Err(LaunchError::InvalidArgs(format!(
            "`{}` takes {} bytes of arguments, {} given",
            k.info.name,
            k.info.param_bytes,
            l.params.len()
        )));
    }
    Ok(())
}

/// The loop path's `collective`: the lowering runs every kernel that synchronises threads as regions or
/// fibers, so only `nanosleep`'s yield gets here, with no other thread to wait for.
unsafe extern "C" fn no_collective(_: *mut c_void, _: u32, _: u32, _: u32, _: u32, _: u32) -> u64 {
    0
}

/// Runs the whole grid and returns when every CTA has finished, or ends it at the first fault. The
/// sanitizers' findings are reported (stderr, `PTXJIT_SANITIZE_LOG`).
pub fn launch(k: &HostKernel, l: &Launch<'_>) -> Result<(), LaunchError> {
    let profiled = profile::enabled().then(|| (std::time::Instant::now(), k.jit_time()));
    let (r, findings) = launch_sanitized(k, l);
    if let Some((start, jit)) = profiled {
        profile::launched(
            k,
            l.threads(),
            start.elapsed(),
            k.jit_time().saturating_sub(jit),
            r.is_ok(),
        );
    }
    if !findings.is_empty() {
        let text = k.text();
        crate::runtime::sanitize::report(
            &findings,
            &crate::runtime::sanitize::Source {
                kernel: &k.info.name,
                text: text.as_deref().map(|t| &**t),
            },
        );
    }
    r
}

/// [`launch`], returning the sanitizers' findings instead of reporting them.
pub fn launch_sanitized(
    k: &HostKernel,
    l: &Launch<'_>,
) -> (Result<(), LaunchError>, Vec<crate::runtime::sanitize::Finding>) {
    if let Err(e) = validate(k, l) {
        return (Err(e), vec![]);
    }
    // Compiles the kernel on its first launch (see `HostKernel::entry_for` for which code runs).
    let entry = match k.entry_for(l.threads(), l.tier) {
        Ok(e) => e,
        Err(e) => return (Err(LaunchError::Failed(e)), vec![]),
    };
    // A kernel that declares its cluster shape is launched as clusters however the driver was called.
    let clustered;
    let l = match k.info.cluster {
        Some(dim) if !l.cluster || l.cluster_dim != dim => {
            clustered = Launch {
                cluster: true,
                cluster_dim: dim,
                cancel: l.cancel.clone(),
                counters: l.counters.clone(),
                ..*l
            };
            &clustered
        }
        _ => l,
    };
    let shared = k.info.static_shared + l.dynamic_shared;
    let cell = match &l.counters {
        Some(c) => crate::runtime::checked::FaultCell::counting(shared, c.clone()),
        None => crate::runtime::checked::FaultCell::new(shared, l.sanitize),
    };
    let watch = crate::runtime::watchdog::watch(&cell, l.cancel.clone(), l.cooperative);
    let r = if l.cooperative {
        cooperative(k, l, entry, &cell)
    } else {
        run(k, l, entry, &cell as *const _ as *const c_void)
    };
    drop(watch);
    let mut findings = std::mem::take(&mut *cell.findings.lock());
    if l.sanitize.has(crate::runtime::sanitize::Tools::INITCHECK) {
        findings.extend(
            k.unwritten_registers
                .iter()
                .map(|(site, reg)| crate::runtime::sanitize::Finding {
                    accesses: vec![crate::runtime::sanitize::Access {
                        site: Some(*site),
                        tid: None,
                        how: crate::runtime::sanitize::How::Read,
                    }],
                    ..crate::runtime::sanitize::Finding::plain(
                        crate::runtime::sanitize::Kind::UninitializedRegister,
                        0,
                        0,
                        reg.clone(),
                    )
                }),
        );
    }
    let r = match cell.take() {
        Some(f) => {
            if l.sanitize.has(crate::runtime::sanitize::Tools::MEMCHECK) {
                findings.extend(memcheck_finding(&f));
            }
            Err(fault_error(k, &f))
        }
        None => r,
    };
    (r, findings)
}

/// A cooperative launch: its grid workspace (the driver's `{ size, barrier }`, zeroed), and a thread
/// for every CTA, so that a CTA spinning at a grid barrier (cooperative groups' `grid.sync()`) never
/// keeps another from running to it.
fn cooperative(
    k: &HostKernel,
    l: &Launch<'_>,
    entry: ptx_llvm::abi::BlockFn,
    cell: &crate::runtime::checked::FaultCell,
) -> Result<(), LaunchError> {
    let mut workspace = [0u32; 4];
    workspace[0] = std::mem::size_of_val(&workspace) as u32;
    let l = Launch {
        grid_workspace: workspace.as_mut_ptr() as u64,
        cancel: l.cancel.clone(),
        counters: l.counters.clone(),
        ..*l
    };
    let ctas = l.grid.iter().map(|&g| g as usize).product::<usize>();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(ctas)
        .thread_name(|i| format!("ptx-jit CTA {i}"))
        .build()
        .map_err(|e| LaunchError::OutOfResources(format!("a thread for each of {ctas} CTAs: {e}")))?;
    let fault = cell as *const _ as usize;
    pool.install(|| run(k, &l, entry, fault as *const c_void))
}

/// memcheck's finding for checked mode's fault, if it is a bad access.
fn memcheck_finding(f: &crate::runtime::checked::Fault) -> Option<crate::runtime::sanitize::Finding> {
    use crate::runtime::checked::FaultKind;
    use crate::runtime::sanitize::{Access, Finding, How, Kind};
    let kind = match f.kind {
        FaultKind::Access => Kind::InvalidAccess,
        FaultKind::Misaligned => Kind::Misaligned,
        _ => return None,
    };
    let how = How::of_access(f.space);
    Some(Finding {
        kind,
        ctaid: f.ctaid,
        addr: f.addr,
        bytes: f.bytes,
        space: f.space & ptx_llvm::builtin::SPACE_MASK,
        accesses: vec![Access {
            site: f.site,
            tid: f.tid,
            how,
        }],
        detail: String::new(),
    })
}

/// The launch error a fault ends a launch with, and its message: kernel, PTX line, thread and block
/// where known.
fn fault_error(k: &HostKernel, f: &crate::runtime::checked::Fault) -> LaunchError {
    use crate::runtime::checked::FaultKind;
    use crate::runtime::trap::Trap;
    let mut at = format!("`{}`", k.info.name);
    match (f.site, &k.lines) {
        (Some(site), Some(lines)) => at += &format!(", line {}", ptx_front::span::line_of(lines, site)),
        (Some(site), None) => at += &format!(", byte {site} of the PTX"),
        (None, _) => {}
    }
    let block = |c: [u32; 3]| format!("block ({}, {}, {})", c[0], c[1], c[2]);
    let place = match (f.tid, f.ctaid) {
        (Some(t), Some(c)) => format!("thread ({}, {}, {}) of {}", t[0], t[1], t[2], block(c)),
        (None, Some(c)) if f.blocks > 1 => {
            format!(
                "a thread of blocks ({}, {}, {}) to ({}, {}, {})",
                c[0],
                c[1],
                c[2],
                c[0] + f.blocks - 1,
                c[1],
                c[2]
            )
        }
        (None, Some(c)) => format!("a thread of {}", block(c)),
        _ => String::new(),
    };
    if !place.is_empty() {
        at += &format!(": {place}");
    }
    // Default mode knows the faulting block, not the instruction: checked mode finds both.
    let hint = "; run with PTXJIT_CHECKED=1 for its PTX line and thread";
    match f.kind {
        FaultKind::Assert => LaunchError::Assert(format!("{at} failed an assertion")),
        FaultKind::Trap => LaunchError::Failed(format!("{at} executed `trap`")),
        FaultKind::Misaligned => LaunchError::MisalignedAddress(format!(
            "{at} accessed {} bytes of {} memory at {:#x}, which is not a multiple of {}",
            f.bytes,
            f.space_name(),
            f.addr,
            f.bytes
        )),
        FaultKind::Access => LaunchError::IllegalAddress(format!(
            "{at} accessed {} byte(s) of {} memory at {:#x}, outside every allocation",
            f.bytes,
            f.space_name(),
            f.addr
        )),
        FaultKind::Signal(Trap::Access { addr, misaligned: true }) => {
            LaunchError::MisalignedAddress(format!("{at} accessed misaligned address {addr:#x}{hint}"))
        }
        FaultKind::Signal(Trap::Access { addr, .. }) => LaunchError::IllegalAddress(format!(
            "{at} accessed address {addr:#x}, which is not mapped (or not canonical){hint}"
        )),
        // An H100 (driver 580) ends a launch whose stack overflows with an illegal address too.
        FaultKind::Signal(Trap::StackOverflow) => LaunchError::IllegalAddress(format!(
            "{at} overflowed its stack (`.func` calls nested too deeply, or `.local` arrays too large)"
        )),
        FaultKind::Signal(Trap::Arithmetic) => {
            LaunchError::Failed(format!("{at} raised an arithmetic exception{hint}"))
        }
        FaultKind::Signal(Trap::IllegalInstruction) => {
            LaunchError::Failed(format!("{at} reached an illegal instruction{hint}"))
        }
        FaultKind::Signal(Trap::NoStack) => {
            LaunchError::OutOfResources(format!("{at}: no stack could be mapped to run it"))
        }
        FaultKind::Signal(Trap::Interrupted) => LaunchError::Failed(format!("{at} was interrupted")),
        FaultKind::BarrierCount {
            barrier,
            counts: [a, b],
        } => LaunchError::IllegalInstruction(format!(
            "{at} met barrier {barrier} for {b} threads where others met it for {a}"
        )),
        FaultKind::Timeout => LaunchError::Timeout(format!("{at} ran longer than PTXJIT_LAUNCH_TIMEOUT allows")),
        FaultKind::Cancelled => LaunchError::Failed(format!("{at} was cancelled: its context was destroyed")),
        FaultKind::Illegal(what) => LaunchError::IllegalInstruction(format!("{at} {what}")),
        FaultKind::Texture(what) | FaultKind::Heap(what) | FaultKind::Shared(what) => {
            LaunchError::IllegalAddress(format!("{at} {what}: {:#x}", f.addr))
        }
    }
}

fn run(k: &HostKernel, l: &Launch<'_>, entry: ptx_llvm::abi::BlockFn, fault: *const c_void) -> Result<(), LaunchError> {
    match k.info.exec {
        Exec::Loop => {}
        Exec::Regions { frame_bytes, .. } => return crate::runtime::regions::launch(k, l, entry, frame_bytes, fault),
        Exec::Fibers => return crate::runtime::fibers::launch(k, l, entry, fault),
    }
    let fault_addr = fault as usize;
    // Work items: runs of up to CTA_RUN CTAs along x (one entry call each), so small CTAs do not pay
    // a call, an environment and loop set-up apiece.
    let gx = l.grid[0] as u64;
    // A cooperative launch runs each CTA on its own (its CTAs may wait for each other).
    let cta_run = if l.cooperative { 1 } else { CTA_RUN };
    let runs_per_row = gx.div_ceil(cta_run);
    let rows = l.grid[1] as u64 * l.grid[2] as u64;
    let run = |shared: &mut SharedWindow, item: u64| {
        let (row, r) = (item / runs_per_row, item % runs_per_row);
        let x0 = r * cta_run;
        let mut env = crate::runtime::env_for_cta(l, row * gx + x0, shared.words(), no_collective);
        env.ctas = (gx - x0).min(cta_run) as u32;
        env.fault = fault_addr as *const c_void;
        // SAFETY: `fault` is the launch's record, alive until the launch returns.
        let cell = unsafe { &*(fault_addr as *const crate::runtime::checked::FaultCell) };
        if cell.faulted() {
            return; // the launch has failed: no further CTAs start
        }
        // SAFETY: `entry` is JIT code built for this Env layout; the param and shared buffers outlive the call.
        if let Err(t) = unsafe { crate::runtime::trap::call(entry, &env, cell) } {
            cell.record(crate::runtime::checked::Fault {
                ctaid: Some(env.ctaid),
                blocks: env.ctas,
                ..crate::runtime::checked::Fault::of(crate::runtime::checked::FaultKind::Signal(t))
            });
        }
        cell.cta_done();
        crate::runtime::texture::release_cached();
    };
    let items = rows * runs_per_row;
    if items == 1 {
        run(&mut SharedWindow::for_launch(k, l), 0);
    } else {
        (0..items)
            .into_par_iter()
            .for_each_init(|| SharedWindow::for_launch(k, l), run);
    }
    Ok(())
}

/// CTAs along x per entry call of an `Exec::Loop` kernel.
const CTA_RUN: u64 = 16;

/// The (x, y, z) index of the `cta`-th CTA, x fastest.
pub fn cta_index(cta: u64, grid: [u32; 3]) -> [u32; 3] {
    let (gx, gy) = (grid[0] as u64, grid[1] as u64);
    [(cta % gx) as u32, ((cta / gx) % gy) as u32, (cta / (gx * gy)) as u32]
}
