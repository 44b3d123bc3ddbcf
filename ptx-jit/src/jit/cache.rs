//! The compile cache on disk: a kernel tier's machine code, kept between processes as NVIDIA's driver
//! keeps its compute cache.
//!
//! - Where: `CUDA_CACHE_PATH`, else `$XDG_CACHE_HOME/ptx-jit`, else `~/.cache/ptx-jit`; off with
//!   `CUDA_CACHE_DISABLE=1`. At most `CUDA_CACHE_MAXSIZE` bytes (default 1 GiB); the entries used
//!   least recently go first.
//! - What: one file per tier of a kernel (its object file), and one per kernel for what preparing it
//!   learnt (how it runs, its parameters), each named by a 128-bit hash ([`Key`]) of everything it
//!   depends on: the kernel's PTX and what it reaches, its symbol (which names the module's variables
//!   it refers to), the tier and lowering options, the host CPU and its features, LLVM options and
//!   the build of ptx-jit itself (a rebuild never meets the code of another).
//! - Safe with concurrent processes and crashes: an entry is written to a temporary file and renamed
//!   into place, and carries its length and checksum; one that does not match (truncated, corrupt,
//!   from another format) is ignored, and the tier compiled and written again.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use twox_hash::XxHash3_128;

/// The first bytes of an entry, with the format's version.
const MAGIC: &[u8; 8] = b"PTXJITC1";
/// Magic, the checksum (16 bytes) and the payload's length (8).
const HEADER: usize = 8 + 16 + 8;
const DEFAULT_MAX: u64 = 1 << 30;

/// What an entry is named by: a hash of its inputs, fed one after another.
pub struct Key(XxHash3_128);

impl Key {
    /// A key that already holds what every entry of this process depends on.
    pub fn start() -> Key {
        let mut h = XxHash3_128::new();
        h.write(build_identity().as_bytes());
        Key(h)
    }
    /// Adds one input; each is length-prefixed, so inputs cannot run into each other.
    pub fn add(&mut self, bytes: &[u8]) -> &mut Key {
        self.0.write(&(bytes.len() as u64).to_le_bytes());
        self.0.write(bytes);
        self
    }
    fn name(&self) -> String {
        format!("{:032x}", self.0.finish_128())
    }
}

static CACHE: std::sync::OnceLock<Option<Cache>> = std::sync::OnceLock::new();

/// The cache, if it is on and its directory can be made.
pub fn get() -> Option<&'static Cache> {
    CACHE.get_or_init(Cache::from_env).as_ref()
}

/// Turns the cache off for this process (`bench kernel` times compiles, not cache reads); false if it
/// was already in use.
pub fn disable() -> bool {
    CACHE.set(None).is_ok() || CACHE.get().is_some_and(Option::is_none)
}

pub struct Cache {
    dir: PathBuf,
    max: u64,
    /// Bytes this process has written, to pace eviction.
    written: AtomicU64,
}

impl Cache {
    fn from_env() -> Option<Cache> {
        if std::env::var("CUDA_CACHE_DISABLE").is_ok_and(|v| v.trim() == "1") {
            return None;
        }
        let dir = match std::env::var_os("CUDA_CACHE_PATH").filter(|p| !p.is_empty()) {
            Some(p) => PathBuf::from(p),
            None => std::env::var_os("XDG_CACHE_HOME")
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?
                .join("ptx-jit"),
        };
        let max = std::env::var("CUDA_CACHE_MAXSIZE")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(DEFAULT_MAX);
        Cache::at(dir, max)
    }

    /// A cache in `dir` of at most `max` bytes (0: nothing is kept).
    pub fn at(dir: PathBuf, max: u64) -> Option<Cache> {
        std::fs::create_dir_all(&dir).ok()?;
        Some(Cache {
            dir,
            max,
            written: AtomicU64::new(0),
        })
    }

    fn path(&self, key: &Key) -> PathBuf {
        self.dir.join(key.name())
    }

    /// The entry for `key`, if one is there whole.
    pub fn load(&self, key: &Key) -> Option<Vec<u8>> {
        let path = self.path(key);
        let bytes = std::fs::read(&path).ok()?;
        let entry = decode(&bytes)?;
        // Used now: eviction goes by modification time.
        if let Ok(f) = std::fs::File::options().append(true).open(&path) {
            let _ = f.set_modified(std::time::SystemTime::now());
        }
        Some(entry)
    }

    /// Whether an entry for `key` is there (whole or not: [`Cache::load`] says).
    pub fn contains(&self, key: &Key) -> bool {
        self.path(key).is_file()
    }

    /// Writes the entry for `key` (a failure to write only costs the next process a compile).
    pub fn store(&self, key: &Key, e: &[u8]) {
        if self.max == 0 {
            return;
        }
        let path = self.path(key);
        let Ok(mut tmp) = tempfile::NamedTempFile::new_in(&self.dir) else {
            return;
        };
        if tmp.write_all(&encode(e)).is_err() || tmp.persist(&path).is_err() {
            return;
        }
        // The directory is listed at the first store and then once per sixteenth of the size
        // written, not at every store.
        let n = (HEADER + e.len()) as u64;
        let step = (self.max / 16).max(1);
        let before = self.written.fetch_add(n, Ordering::Relaxed);
        if before == 0 || before / step != (before + n) / step {
            self.evict();
        }
    }

    /// Removes the entry for `key` (one the JIT could not use).
    pub fn remove(&self, key: &Key) {
        let _ = std::fs::remove_file(self.path(key));
    }

    /// Removes the least recently used entries until the cache fits its size, and temporary files
    /// a crashed writer left (older than an hour).
    fn evict(&self) {
        let Ok(dir) = std::fs::read_dir(&self.dir) else { return };
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let mut entries: Vec<(std::time::SystemTime, u64, PathBuf)> = dir
            .flatten()
            .filter_map(|e| {
                let m = e.metadata().ok()?;
                let modified = m.modified().ok()?;
                if !is_entry_name(&e.file_name().to_string_lossy()) {
                    if e.file_name().to_string_lossy().starts_with(".tmp") && modified < hour_ago {
                        let _ = std::fs::remove_file(e.path());
                    }
                    return None;
                }
                Some((modified, m.len(), e.path()))
            })
            .collect();
        let mut total: u64 = entries.iter().map(|e| e.1).sum();
        if total <= self.max {
            return;
        }
        entries.sort();
        for (_, len, path) in entries {
            if total <= self.max {
                break;
            }
            if std::fs::remove_file(path).is_ok() {
                total -= len;
            }
        }
    }
}

fn is_entry_name(n: &str) -> bool {
    n.len() == 32 && n.bytes().all(|b| b.is_ascii_hexdigit())
}

fn encode(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&XxHash3_128::oneshot(payload).to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// An entry's payload, if its header, length and checksum agree.
fn decode(bytes: &[u8]) -> Option<Vec<u8>> {
    let (head, payload) = (bytes.get(..HEADER)?, bytes.get(HEADER..)?);
    let sum = u128::from_le_bytes(head[8..24].try_into().ok()?);
    let len = u64::from_le_bytes(head[24..32].try_into().ok()?);
    (&head[..8] == MAGIC && len == payload.len() as u64 && XxHash3_128::oneshot(payload) == sum)
        .then(|| payload.to_vec())
}

/// What names this build of ptx-jit: an id `build.rs` makes whenever the sources of the front end,
/// the lowering or the JIT change (code lowered by another build may differ, so a rebuild starts from
/// an empty cache), with the version.
fn build_identity() -> &'static str {
    concat!(env!("CARGO_PKG_VERSION"), " ", env!("PTXJIT_BUILD_ID"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> Key {
        let mut k = Key::start();
        k.add(s.as_bytes());
        k
    }

    #[test]
    fn an_entry_comes_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::at(dir.path().to_path_buf(), 1 << 20).unwrap();
        assert!(c.load(&key("a")).is_none());
        c.store(&key("a"), &[1, 2, 3]);
        assert_eq!(c.load(&key("a")).expect("stored"), [1, 2, 3]);
        assert!(c.load(&key("b")).is_none());
    }

    #[test]
    fn a_truncated_or_corrupt_entry_is_not_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::at(dir.path().to_path_buf(), 1 << 20).unwrap();
        c.store(&key("t"), &[9; 100]);
        let path = c.path(&key("t"));
        let whole = std::fs::read(&path).unwrap();
        std::fs::write(&path, &whole[..whole.len() - 1]).unwrap();
        assert!(c.load(&key("t")).is_none(), "truncated");
        let mut flipped = whole.clone();
        flipped[HEADER + 50] ^= 1;
        std::fs::write(&path, &flipped).unwrap();
        assert!(c.load(&key("t")).is_none(), "corrupt");
        std::fs::write(&path, &whole).unwrap();
        assert!(c.load(&key("t")).is_some(), "whole again");
    }

    #[test]
    fn the_least_recently_used_entries_go_first() {
        let dir = tempfile::tempdir().unwrap();
        // Room for two entries of 100 bytes.
        let c = Cache::at(dir.path().to_path_buf(), 2 * (HEADER as u64 + 100)).unwrap();
        let e = [0; 100];
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(100);
        c.store(&key("1"), &e);
        c.store(&key("2"), &e);
        for (k, age) in [("1", 20), ("2", 10)] {
            let f = std::fs::File::options().append(true).open(c.path(&key(k))).unwrap();
            f.set_modified(old + std::time::Duration::from_secs(age)).unwrap();
        }
        // "1" is used, so "2" is now the older one.
        assert!(c.load(&key("1")).is_some());
        c.store(&key("3"), &e);
        assert!(c.load(&key("1")).is_some());
        assert!(c.load(&key("2")).is_none());
        assert!(c.load(&key("3")).is_some());
    }

    #[test]
    fn inputs_do_not_run_into_each_other() {
        let (mut a, mut b) = (Key::start(), Key::start());
        a.add(b"ab").add(b"c");
        b.add(b"a").add(b"bc");
        assert_ne!(a.name(), b.name());
    }
}
