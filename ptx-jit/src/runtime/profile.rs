//! `PTXJIT_PROFILE=DIR`: what a process did with the JIT, for `ptx-jit bench program`. Every module
//! load (its time, size and kernels) and every launch (its kernel, its run time apart from the JIT
//! time it paid) is counted, and when the process exits (`exit`, not `_exit`) it writes
//! `DIR/profile-PID.json` (one file per process, so a program that starts others is profiled whole;
//! a forked child, which cannot use the driver, writes nothing). Modules are named by process and
//! symbol prefix. Off, it costs one load of a flag per launch.

use crate::jit::host::HostKernel;
use std::collections::HashMap;
use std::time::Duration;

/// A module load.
#[derive(serde::Serialize, serde::Deserialize, Clone)]
pub struct ModuleRecord {
    pub id: String,
    pub bytes: usize,
    pub kernels: usize,
    pub load_ms: f64,
}

/// A kernel's launches.
#[derive(serde::Serialize, serde::Deserialize, Default, Clone)]
pub struct KernelRecord {
    pub module: String,
    pub name: String,
    pub launches: u64,
    pub failed: u64,
    pub threads: u64,
    /// Preparing the kernel and compiling its tiers, as far as its launches needed them.
    pub jit_ms: f64,
    /// The launches' time less the JIT time they paid.
    pub exec_ms: f64,
    /// Whether its preparation, and how many of its tiers, came from the disk cache.
    pub prepared_from_cache: bool,
    pub tiers_from_cache: u32,
    pub tiers_compiled: u32,
}

/// What one process wrote.
#[derive(serde::Serialize, serde::Deserialize, Default)]
pub struct Profile {
    pub pid: u32,
    pub modules: Vec<ModuleRecord>,
    pub kernels: Vec<KernelRecord>,
}

struct State {
    dir: std::path::PathBuf,
    /// The process that records (a forked child has another id).
    pid: u32,
    records: parking_lot::Mutex<Records>,
}

#[derive(Default)]
struct Records {
    modules: Vec<ModuleRecord>,
    /// By module and kernel name.
    kernels: HashMap<String, KernelRecord>,
}

fn state() -> Option<&'static State> {
    static STATE: std::sync::OnceLock<Option<State>> = std::sync::OnceLock::new();
    STATE
        .get_or_init(|| {
            let dir = std::path::PathBuf::from(std::env::var_os("PTXJIT_PROFILE").filter(|d| !d.is_empty())?);
            // Made and resolved now: the program may change its directory before it exits.
            let _ = std::fs::create_dir_all(&dir);
            let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
            // SAFETY: `write_at_exit` is an `extern "C" fn()` that does not unwind.
            unsafe { libc::atexit(write_at_exit) };
            Some(State {
                dir,
                pid: std::process::id(),
                records: Default::default(),
            })
        })
        .as_ref()
}

/// Whether this process is profiled.
pub fn enabled() -> bool {
    state().is_some()
}

/// Counts a module load of `bytes` of PTX with `kernels` kernels that took `took`.
pub fn module_loaded(id: &str, bytes: usize, kernels: usize, took: Duration) {
    if let Some(s) = state() {
        s.records.lock().modules.push(ModuleRecord {
            id: format!("{}:{id}", s.pid),
            bytes,
            kernels,
            load_ms: took.as_secs_f64() * 1e3,
        });
    }
}

/// Counts a launch of `k` over `threads` threads that took `took`, of which `jit` compiling.
pub fn launched(k: &HostKernel, threads: u64, took: Duration, jit: Duration, ok: bool) {
    let Some(s) = state() else { return };
    let tiers = k.tier_times();
    let mut records = s.records.lock();
    let first = !k.profiled.swap(true, std::sync::atomic::Ordering::Relaxed);
    let module = format!("{}:{}", s.pid, k.module_id());
    let r = records
        .kernels
        .entry(format!("{module}{}", k.info.name))
        .or_insert_with(|| KernelRecord {
            module,
            name: k.info.name.clone(),
            ..Default::default()
        });
    r.launches += 1;
    r.failed += u64::from(!ok);
    r.threads += threads;
    // A module loaded again reuses its prefix: its kernels add up under one record.
    let prepared = if first { k.prepared_in.total() } else { Duration::ZERO };
    r.jit_ms += (prepared + jit).as_secs_f64() * 1e3;
    r.exec_ms += took.saturating_sub(jit).as_secs_f64() * 1e3;
    r.prepared_from_cache = k.prepared_in.cached;
    r.tiers_from_cache = tiers.iter().flatten().filter(|t| t.cached).count() as u32;
    r.tiers_compiled = tiers.iter().flatten().filter(|t| !t.cached).count() as u32;
}

extern "C" fn write_at_exit() {
    let Some(s) = state().filter(|s| s.pid == std::process::id()) else {
        return;
    };
    // A launch still running on another thread may hold the lock for as long as it records.
    let Some(records) = s.records.try_lock_for(Duration::from_millis(200)) else {
        return;
    };
    let mut kernels: Vec<KernelRecord> = records.kernels.values().cloned().collect();
    kernels.sort_by(|a, b| (&a.module, &a.name).cmp(&(&b.module, &b.name)));
    let profile = Profile {
        pid: s.pid,
        modules: records.modules.clone(),
        kernels,
    };
    drop(records);
    // Written whole, then named: a reader never sees half a file.
    if let Ok(text) = serde_json::to_string(&profile) {
        let path = s.dir.join(format!("profile-{}.json", profile.pid));
        let temp = path.with_extension("json.part");
        if std::fs::write(&temp, text).is_ok() {
            let _ = std::fs::rename(&temp, &path);
        }
    }
}
