//! Kernel launches (queued on their stream, the argument buffer copied at the call, as CUDA does),
//! function attributes and the occupancy calculator.
//!
//! Occupancy follows the device `device.rs` presents: threads and blocks per multiprocessor and
//! shared memory per multiprocessor limit how many blocks are resident; registers are not a limit
//! on the CPU.

use crate::device;
use crate::errors::*;
use crate::state::*;
use crate::{init_check, out, Handle};
use once_cell::sync::Lazy;
use parking_lot::Mutex;
use ptx_jit::device as dev;
use ptx_jit::runtime as rt;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::sync::Arc;

/// What `cuFuncSetAttribute` and friends change, per function handle.
#[derive(Clone)]
struct FuncAttrs {
    max_dynamic_shared: u64,
    carveout: c_int,
    cache: c_int,
    /// Cluster launch hints: whether clusters past the portable 8 CTAs may be asked for, and the
    /// scheduling policy. Launches of clusters of more than one CTA fail before either matters.
    non_portable_clusters: c_int,
    cluster_policy: c_int,
    name: Option<Arc<CString>>,
}

static ATTRS: Lazy<Mutex<HashMap<usize, FuncAttrs>>> = Lazy::new(|| Mutex::new(HashMap::new()));

fn attrs(h: usize, k: &ptx_jit::KernelInfo) -> FuncAttrs {
    ATTRS.lock().get(&h).cloned().unwrap_or_else(|| default_attrs(k))
}

/// A function's attributes before any are set (takes no lock: callers may hold `ATTRS`).
fn default_attrs(k: &ptx_jit::KernelInfo) -> FuncAttrs {
    FuncAttrs {
        // Without an opt-in, static plus dynamic shared memory stays within the 48 KiB default.
        max_dynamic_shared: dev::MAX_SHARED_PER_BLOCK.saturating_sub(k.shared_bytes),
        carveout: -1,
        cache: 0,
        non_portable_clusters: 0,
        cluster_policy: 0,
        name: None,
    }
}

fn func(f: Handle) -> Result<(usize, Arc<FuncObj>), CUresult> {
    init_check()?;
    let h = f as usize;
    Ok((h, FUNCTIONS.get(h)?))
}

/// The function's kernel, prepared on first use (a handle from an enumeration is not prepared yet).
fn kernel(f: &FuncObj) -> Result<&ptx_jit::HostKernel, CUresult> {
    crate::module::prepare(&f.module_obj, f.kernel)
}

/// Blocks of `threads` threads using `shared` bytes each that fit on one multiprocessor.
fn blocks_per_sm(threads: u64, shared: u64) -> u64 {
    if threads == 0 || threads > dev::MAX_THREADS_PER_BLOCK as u64 {
        return 0;
    }
    // Threads are scheduled in whole warps.
    let warps = threads.div_ceil(32) * 32;
    let by_threads = device::max_threads_per_sm() / warps;
    let by_shared = device::max_shared_per_sm().checked_div(shared).unwrap_or(u64::MAX);
    by_threads.min(by_shared).min(device::max_blocks_per_sm())
}

/// `CUlaunchAttribute` (cuda.h): an id, padding, and a 64-byte value.
#[repr(C)]
pub struct LaunchAttribute {
    id: c_uint,
    pad: [u8; 4],
    value: [u32; 16],
}

/// `CUlaunchConfig` (cuda.h).
#[repr(C)]
pub struct LaunchConfig {
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared: c_uint,
    stream: Handle,
    attrs: *mut LaunchAttribute,
    num_attrs: c_uint,
}

/// How a launch runs beyond its shape: cooperatively (`cuLaunchCooperativeKernel`, or the attribute),
/// as a cluster launch (the cluster-dimension attribute).
#[derive(Clone, Copy, Default)]
pub(crate) struct Kind {
    pub cooperative: bool,
    pub cluster: bool,
    /// The cluster's shape, where cluster dimensions were given.
    pub cluster_dim: Option<[c_uint; 3]>,
}

impl Kind {
    /// The cluster shape a launch passes on: the one given (zeros included, which the launch's
    /// validation refuses), or clusters of one CTA.
    fn cluster_dim(&self) -> [u32; 3] {
        self.cluster_dim.unwrap_or([1; 3])
    }
}

/// Checks the launch at the call (configuration errors are returned at once), then queues it.
#[allow(clippy::too_many_arguments)]
unsafe fn launch(
    f: Handle,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared: c_uint,
    stream: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    kind: Kind,
) -> Result<(), CUresult> {
    let (_, job) = prepare_launch(f, grid, block, shared, params, extra, Some(stream), kind)?;
    if kind.cooperative {
        // Every block of a cooperative grid must be resident at once.
        let (_, fo) = func(f)?;
        let static_shared = kernel(&fo)?.info.static_shared;
        let threads: u64 = block.iter().map(|&b| b as u64).product();
        let resident = blocks_per_sm(threads, static_shared + shared as u64) * device::sm_count() as u64;
        if grid.iter().map(|&g| g as u64).product::<u64>() > resident {
            return Err(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
        }
    }
    crate::stream::run_async(stream, Some(crate::graph::NodeType::Kernel), move || job())
}

/// Checks a launch of `f` and copies its arguments: the argument buffer, and the job that runs the
/// launch (on a stream's worker, or as a graph's kernel node, as often as that runs). `stream` is
/// the launch's stream, for its context's cancellation; `None` for a graph node. A cooperative launch
/// runs every CTA at once and gives the kernel a grid workspace (`ptx_jit::Launch::cooperative`).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn prepare_launch(
    f: Handle,
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared: c_uint,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    stream: Option<Handle>,
    kind: Kind,
) -> Result<(Arc<Vec<u8>>, crate::graph::NodeJob), CUresult> {
    let (h, fo) = func(f)?;
    let cancel = match stream {
        Some(s) => Some(crate::stream::resolve(s)?.0.cancel.clone()),
        None => None,
    };
    // A library's module belongs to no context (ctx 0) and runs in the current one.
    let owner = fo.module_obj.ctx;
    if owner != 0 && CONTEXTS.get(owner).is_err() {
        return Err(CUDA_ERROR_CONTEXT_IS_DESTROYED);
    }
    let k = kernel(&fo)?;
    let buf = Arc::new(param_buffer(&k.info, params, extra)?);
    let l = ptx_jit::Launch {
        cluster: kind.cluster,
        cluster_dim: kind.cluster_dim(),
        ..launch_of(grid, block, shared, &buf)
    };
    rt::validate(k, &l).map_err(|e| launch_error(&k.info.name, e))?;
    // Past 8 CTAs a cluster is non-portable, and needs the function's leave to be one.
    if kind.cluster_dim().iter().map(|&d| d as u64).product::<u64>() > 8 && attrs(h, &k.info).non_portable_clusters == 0
    {
        return Err(CUDA_ERROR_INVALID_CLUSTER_SIZE);
    }
    if shared as u64 > attrs(h, &k.info).max_dynamic_shared {
        return Err(CUDA_ERROR_INVALID_VALUE); // over 48 KiB needs CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    }
    let args = buf.clone();
    let job = move || {
        let k = kernel(&fo)?;
        let l = ptx_jit::Launch {
            cancel: cancel.clone(),
            cooperative: kind.cooperative,
            cluster: kind.cluster,
            cluster_dim: kind.cluster_dim(),
            ..launch_of(grid, block, shared, &buf)
        };
        ptx_jit::launch(k, &l).map_err(|e| launch_error(&k.info.name, e))
    };
    Ok((args, Arc::new(job)))
}

/// Where each of kernel `f`'s parameters lies in its argument buffer.
pub(crate) fn param_offsets(f: Handle) -> Result<Vec<usize>, CUresult> {
    let (_, fo) = func(f)?;
    Ok(kernel(&fo)?.info.params.iter().map(|p| p.offset as usize).collect())
}

/// The name of kernel `f`, for graph dumps.
pub(crate) fn kernel_name(f: Handle) -> Option<String> {
    let (_, fo) = func(f).ok()?;
    Some(kernel(&fo).ok()?.info.name.clone())
}

fn launch_of(grid: [c_uint; 3], block: [c_uint; 3], shared: c_uint, params: &[u8]) -> ptx_jit::Launch<'_> {
    ptx_jit::Launch::new(grid, block, shared as u64, params)
}

fn launch_error(name: &str, e: ptx_jit::LaunchError) -> CUresult {
    // Checked mode's report (and a `trap`'s) is what the user needs; other errors only when logging.
    use ptx_jit::LaunchError as E;
    if crate::log_enabled()
        || matches!(
            e,
            E::IllegalAddress(_) | E::MisalignedAddress(_) | E::Failed(_) | E::Timeout(_) | E::IllegalInstruction(_)
        )
    {
        eprintln!("ptx-jit: launch of {name}: {e}");
    }
    match e {
        ptx_jit::LaunchError::InvalidConfig(_) | ptx_jit::LaunchError::InvalidArgs(_) => CUDA_ERROR_INVALID_VALUE,
        ptx_jit::LaunchError::OutOfResources(_) => CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
        ptx_jit::LaunchError::Failed(_) => CUDA_ERROR_LAUNCH_FAILED,
        ptx_jit::LaunchError::IllegalAddress(_) => CUDA_ERROR_ILLEGAL_ADDRESS,
        ptx_jit::LaunchError::MisalignedAddress(_) => CUDA_ERROR_MISALIGNED_ADDRESS,
        ptx_jit::LaunchError::Assert(_) => CUDA_ERROR_ASSERT,
        ptx_jit::LaunchError::Timeout(_) => CUDA_ERROR_LAUNCH_TIMEOUT,
        ptx_jit::LaunchError::IllegalInstruction(_) => CUDA_ERROR_ILLEGAL_INSTRUCTION,
        ptx_jit::LaunchError::InvalidClusterSize(_) => CUDA_ERROR_INVALID_CLUSTER_SIZE,
        ptx_jit::LaunchError::NotSupported(_) => CUDA_ERROR_NOT_SUPPORTED,
    }
}

/// The most threads a block of the kernel may have: the device's limit, or `.maxntid`'s if lower (as a
/// GPU reports it).
fn max_threads(k: &ptx_jit::KernelInfo) -> u64 {
    let device = dev::MAX_THREADS_PER_BLOCK as u64;
    k.max_threads.map_or(device, |m| m.min(device))
}

type B2DSize = unsafe extern "C" fn(c_int) -> usize;

unsafe fn max_potential_block_size(
    min_grid: *mut c_int,
    block_size: *mut c_int,
    f: Handle,
    b2d: *mut c_void,
    dynamic: usize,
    limit: c_int,
) -> Result<(), CUresult> {
    let (_, fo) = func(f)?;
    if min_grid.is_null() || block_size.is_null() || limit < 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let b2d: Option<B2DSize> = if b2d.is_null() {
        None
    } else {
        Some(std::mem::transmute::<*mut c_void, B2DSize>(b2d))
    };
    let info = &kernel(&fo)?.info;
    let static_shared = info.static_shared;
    let kernel_max = max_threads(info);
    let max = if limit == 0 {
        kernel_max as c_int
    } else {
        limit.min(kernel_max as c_int)
    };
    // The block size (a multiple of the warp size, largest first) with the most resident threads.
    let (mut best_threads, mut best_blocks, mut best_size) = (0u64, 0u64, 0 as c_int);
    let mut size = max - max % 32;
    if size == 0 {
        size = max;
    }
    while size > 0 {
        let dyn_shared = match b2d {
            Some(cb) => cb(size) as u64,
            None => dynamic as u64,
        };
        let blocks = blocks_per_sm(size as u64, static_shared + dyn_shared);
        if blocks * size as u64 > best_threads {
            (best_threads, best_blocks, best_size) = (blocks * size as u64, blocks, size);
        }
        size -= 32.min(size);
    }
    *block_size = best_size;
    *min_grid = (best_blocks * device::sm_count() as u64) as c_int;
    Ok(())
}

unsafe fn max_active_blocks(n: *mut c_int, f: Handle, block: c_int, dynamic: usize) -> Result<(), CUresult> {
    let (_, fo) = func(f)?;
    if block <= 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    out(
        n,
        blocks_per_sm(block as u64, kernel(&fo)?.info.static_shared + dynamic as u64) as c_int,
    )
}

api! {
    exports = launch_exports;

    fn cuLaunchKernel[cuLaunchKernel_ptsz](f: Handle, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shared: c_uint, stream: Handle, params: *mut *mut c_void, extra: *mut *mut c_void) {
        launch(f, [gx, gy, gz], [bx, by, bz], shared, stream, params, extra, Kind::default())
    }
    fn cuLaunchCooperativeKernel[cuLaunchCooperativeKernel_ptsz](f: Handle, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shared: c_uint, stream: Handle, params: *mut *mut c_void) {
        let kind = Kind { cooperative: true, ..Kind::default() };
        launch(f, [gx, gy, gz], [bx, by, bz], shared, stream, params, std::ptr::null_mut(), kind)
    }
    fn cuLaunchKernelEx[cuLaunchKernelEx_ptsz](config: *const LaunchConfig, f: Handle, params: *mut *mut c_void, extra: *mut *mut c_void) {
        init_check()?;
        let c = config.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        if c.num_attrs > 0 && c.attrs.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let mut kind = Kind::default();
        for i in 0..c.num_attrs as usize {
            let a = &*c.attrs.add(i);
            match a.id {
                0 => {}                                     // IGNORE
                1 | 3 | 8 | 9 | 10 | 14 | 16 => {}          // hints: access policy, sync policy, priority, memory sync domains, carveout, NVLink
                2 => kind.cooperative = a.value[0] != 0,    // COOPERATIVE
                4 => {
                    // CLUSTER_DIMENSION: a cluster launch of this shape
                    kind.cluster = true;
                    kind.cluster_dim = Some([a.value[0], a.value[1], a.value[2]]);
                }
                // PREFERRED_CLUSTER_DIMENSION: a hint; the required shape (or clusters of one) runs.
                11 => kind.cluster = true,
                5 | 17 | 18 => {}                          // cluster scheduling / portability / shared memory mode
                6 => {}                                     // PROGRAMMATIC_STREAM_SERIALIZATION: full serialisation satisfies it
                _ => return Err(CUDA_ERROR_NOT_SUPPORTED), // events on launch, device-updatable nodes
            }
        }
        launch(f, c.grid, c.block, c.shared, c.stream, params, extra, kind)
    }

    fn cuFuncGetAttribute(v: *mut c_int, attr: c_int, f: Handle) {
        let (h, fo) = func(f)?;
        let k = &kernel(&fo)?.info;
        let a = attrs(h, k);
        out(v, match attr {
            0 => max_threads(k) as c_int,                       // MAX_THREADS_PER_BLOCK
            1 => k.shared_bytes as c_int,                       // SHARED_SIZE_BYTES
            2 => k.const_bytes.min(c_int::MAX as u64) as c_int, // CONST_SIZE_BYTES: the `.const` bank it reaches
            3 => k.local_bytes.min(c_int::MAX as u64) as c_int, // LOCAL_SIZE_BYTES: the kernel's own `.local`
            4 => device::registers_per_thread() as c_int,       // NUM_REGS (see there)
            5 => k.target_sm as c_int,                          // PTX_VERSION: the PTX's own target
            6 => device::sm() as c_int,                         // BINARY_VERSION: the target it was compiled for
            7 => 0,                                             // CACHE_MODE_CA
            8 => a.max_dynamic_shared as c_int,                 // MAX_DYNAMIC_SHARED_SIZE_BYTES
            9 => a.carveout,                                    // PREFERRED_SHARED_MEMORY_CARVEOUT
            10 => k.explicit_cluster as c_int,                  // CLUSTER_SIZE_MUST_BE_SET
            11..=13 => k.cluster.map_or(0, |c| c[attr as usize - 11] as c_int), // REQUIRED_CLUSTER_WIDTH/HEIGHT/DEPTH
            14 => a.non_portable_clusters,                      // NON_PORTABLE_CLUSTER_SIZE_ALLOWED
            15 => a.cluster_policy,                             // CLUSTER_SCHEDULING_POLICY_PREFERENCE
            16 => 0,                                            // DEVICE_NODE_UPDATE_SUPPORTED
            17 => 0,                                            // SHARED_MEMORY_MODE
            _ => return Err(CUDA_ERROR_INVALID_VALUE),
        })
    }
    fn cuFuncSetAttribute(f: Handle, attr: c_int, v: c_int) {
        let (h, fo) = func(f)?;
        let k = &kernel(&fo)?.info;
        let mut a = attrs(h, k);
        match attr {
            8 => {
                if v < 0 || k.shared_bytes + v as u64 > device::max_shared_per_block_optin() {
                    return Err(CUDA_ERROR_INVALID_VALUE);
                }
                a.max_dynamic_shared = v as u64;
            }
            9 => {
                if !(-1..=100).contains(&v) {
                    return Err(CUDA_ERROR_INVALID_VALUE);
                }
                a.carveout = v;
            }
            // Hints for cluster launches (CUTLASS sets the first before every launch).
            14 if (0..=1).contains(&v) => a.non_portable_clusters = v,
            15 if (0..=2).contains(&v) => a.cluster_policy = v,
            14 | 15 => return Err(CUDA_ERROR_INVALID_VALUE),
            10..=13 => return Err(CUDA_ERROR_NOT_SUPPORTED), // thread block clusters
            _ => return Err(CUDA_ERROR_INVALID_VALUE),
        }
        ATTRS.lock().insert(h, a);
        Ok(())
    }
    fn cuFuncSetCacheConfig(f: Handle, cfg: c_int) {
        let (h, fo) = func(f)?;
        if !(0..=4).contains(&cfg) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let mut a = attrs(h, &kernel(&fo)?.info);
        a.cache = cfg;
        ATTRS.lock().insert(h, a);
        Ok(())
    }
    fn cuFuncSetSharedMemConfig(f: Handle, cfg: c_int) {
        func(f)?;
        if !(0..=2).contains(&cfg) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        Ok(())
    }
    fn cuFuncGetModule(m: *mut Handle, f: Handle) {
        let (_, fo) = func(f)?;
        out(m, fo.module as Handle)
    }
    fn cuFuncGetName(name: *mut *const c_char, f: Handle) {
        let (h, fo) = func(f)?;
        if name.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let mut map = ATTRS.lock();
        let k = &kernel(&fo)?.info;
        let a = map.entry(h).or_insert_with(|| default_attrs(k));
        // Kept for the handle's life, as the driver promises.
        let s = a.name.get_or_insert_with(|| Arc::new(CString::new(k.name.clone()).unwrap_or_default()));
        *name = s.as_ptr();
        Ok(())
    }
    fn cuFuncGetParamInfo(f: Handle, index: usize, offset: *mut usize, size: *mut usize) {
        let (_, fo) = func(f)?;
        let p = kernel(&fo)?.info.params.get(index).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        // cuda.h: the offset is required, the size optional.
        out(offset, p.offset as usize)?;
        if !size.is_null() {
            *size = p.size as usize;
        }
        Ok(())
    }
    fn cuFuncGetParamCount(f: Handle, n: *mut usize) {
        let (_, fo) = func(f)?;
        out(n, kernel(&fo)?.info.params.len())
    }
    fn cuFuncIsLoaded(state: *mut c_int, f: Handle) {
        let (_, fo) = func(f)?;
        // CU_FUNCTION_LOADING_STATE_LOADED (1) once prepared, else _UNLOADED (0).
        out(state, fo.module_obj.host.prepared(fo.kernel) as c_int)
    }
    fn cuFuncLoad(f: Handle) {
        let (_, fo) = func(f)?;
        kernel(&fo).map(drop)
    }

    fn cuOccupancyMaxPotentialClusterSize(size: *mut c_int, f: Handle, config: *const LaunchConfig) {
        let (h, fo) = func(f)?;
        let c = config.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let k = &kernel(&fo)?.info;
        let threads: u64 = c.block.iter().map(|&b| b as u64).product();
        // A cluster's CTAs are resident together; the kernel's own shape if it declares one, else
        // the portable 8 (16 where the function allows non-portable sizes).
        let most = match k.cluster {
            Some(d) => d.iter().product::<u32>() as c_int,
            None if attrs(h, k).non_portable_clusters != 0 => 16,
            None => 8,
        };
        let fits = blocks_per_sm(threads, k.static_shared + c.shared as u64) > 0;
        out(size, if fits { most } else { 0 })
    }
    fn cuOccupancyMaxActiveClusters(n: *mut c_int, f: Handle, config: *const LaunchConfig) {
        let (_, fo) = func(f)?;
        let c = config.as_ref().ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let k = &kernel(&fo)?.info;
        let given = (0..c.num_attrs as usize)
            .map(|i| &*c.attrs.add(i))
            .find(|a| a.id == 4)
            .map(|a| [a.value[0], a.value[1], a.value[2]]);
        // The cluster shape: the kernel's, which one given must match, or the one given.
        let dim = match (k.cluster, given) {
            (Some(d), Some(g)) if d != g => return Err(CUDA_ERROR_INVALID_CLUSTER_SIZE),
            (Some(d), _) | (None, Some(d)) => d,
            (None, None) => return Err(CUDA_ERROR_INVALID_CLUSTER_SIZE),
        };
        let size = dim.iter().map(|&d| d as u64).product::<u64>();
        if size == 0 || size > ptx_jit::CLUSTER_TABLE as u64 {
            return Err(CUDA_ERROR_INVALID_CLUSTER_SIZE);
        }
        let threads: u64 = c.block.iter().map(|&b| b as u64).product();
        let blocks = blocks_per_sm(threads, k.static_shared + c.shared as u64) * device::sm_count() as u64;
        out(n, (blocks / size).min(c_int::MAX as u64) as c_int)
    }
    fn cuOccupancyMaxActiveBlocksPerMultiprocessor(n: *mut c_int, f: Handle, block: c_int, dynamic: usize) {
        max_active_blocks(n, f, block, dynamic)
    }
    fn cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(n: *mut c_int, f: Handle, block: c_int, dynamic: usize, flags: c_uint) {
        if flags > 1 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        max_active_blocks(n, f, block, dynamic)
    }
    fn cuOccupancyMaxPotentialBlockSize(min_grid: *mut c_int, block: *mut c_int, f: Handle, b2d: *mut c_void, dynamic: usize, limit: c_int) {
        max_potential_block_size(min_grid, block, f, b2d, dynamic, limit)
    }
    fn cuOccupancyMaxPotentialBlockSizeWithFlags(min_grid: *mut c_int, block: *mut c_int, f: Handle, b2d: *mut c_void, dynamic: usize, limit: c_int, flags: c_uint) {
        if flags > 1 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        max_potential_block_size(min_grid, block, f, b2d, dynamic, limit)
    }
    fn cuOccupancyAvailableDynamicSMemPerBlock(size: *mut usize, f: Handle, blocks: c_int, block: c_int) {
        let (_, fo) = func(f)?;
        if blocks <= 0 || block <= 0 || blocks_per_sm(block as u64, 0) < blocks as u64 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let per_block = (device::max_shared_per_sm() / blocks as u64).min(device::max_shared_per_block_optin());
        out(size, per_block.saturating_sub(kernel(&fo)?.info.shared_bytes) as usize)
    }
}

/// Builds the kernel's argument buffer from `kernelParams` (one pointer per parameter) or from
/// `extra` (`CU_LAUNCH_PARAM_BUFFER_POINTER`/`_SIZE`).
pub(crate) unsafe fn param_buffer(
    k: &ptx_jit::KernelInfo,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Result<Vec<u8>, CUresult> {
    if !params.is_null() && !extra.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE); // cuda.h: kernelParams and extra are exclusive
    }
    let mut buf = vec![0u8; k.param_bytes as usize];
    if !params.is_null() {
        for (i, p) in k.params.iter().enumerate() {
            let src = *params.add(i);
            if src.is_null() {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
            std::ptr::copy_nonoverlapping(
                src as *const u8,
                buf.as_mut_ptr().add(p.offset as usize),
                p.size as usize,
            );
        }
        return Ok(buf);
    }
    if !extra.is_null() {
        let (mut ptr, mut size): (*const u8, Option<usize>) = (std::ptr::null(), None);
        let mut i = 0;
        loop {
            match *extra.add(i) as usize {
                0 => break,                                // CU_LAUNCH_PARAM_END
                1 => ptr = *extra.add(i + 1) as *const u8, // BUFFER_POINTER
                2 => {
                    // BUFFER_SIZE: a pointer to the size, which a caller may leave null.
                    let p = *extra.add(i + 1) as *const usize;
                    if p.is_null() {
                        return Err(CUDA_ERROR_INVALID_VALUE);
                    }
                    size = Some(p.read_unaligned());
                }
                _ => return Err(CUDA_ERROR_INVALID_VALUE),
            }
            i += 2;
        }
        let size = size.ok_or(CUDA_ERROR_INVALID_VALUE)?;
        if ptr.is_null() || (size as u64) < k.param_bytes {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        std::ptr::copy_nonoverlapping(ptr, buf.as_mut_ptr(), k.param_bytes as usize);
        return Ok(buf);
    }
    if k.params.is_empty() {
        Ok(buf)
    } else {
        Err(CUDA_ERROR_INVALID_VALUE)
    }
}
