//! The compile cache on disk (`ptx_jit::jit::cache`), through the CLI as a user meets it: each run is
//! a process of its own, as the cache is read once per process.

use std::path::Path;
use std::process::Command;

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/demo/kernels.ptx");

/// `ptx-jit run` of the demo's vecadd (its quick tier: 4 threads), with the cache at `dir`; its
/// output, which names the result.
fn vecadd(dir: &Path, extra_env: &[(&str, &str)]) -> String {
    vecadd_on(dir, extra_env, "1")
}

/// [`vecadd`] on `grid` blocks of 4 threads (of which the first 4 add).
fn vecadd_on(dir: &Path, extra_env: &[(&str, &str)], grid: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ptx-jit"))
        .args(["run", DEMO, "--kernel", "vecadd", "--grid", grid, "--block", "4"])
        .args([
            "--arg", "f32*4=1", "--arg", "f32*4=2", "--arg", "f32*4", "--arg", "u32:4",
        ])
        .env("CUDA_CACHE_PATH", dir)
        .env_remove("CUDA_CACHE_DISABLE")
        .envs(extra_env.iter().copied())
        .output()
        .expect("ptx-jit runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("arg2 F32[4] = [3.0, 3.0, 3.0, 3.0]"), "{text}");
    text
}

fn entries(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).collect();
    v.sort();
    v
}

#[test]
fn a_second_process_runs_the_cached_code() {
    let dir = tempfile::tempdir().unwrap();
    vecadd(dir.path(), &[]);
    // What preparing the kernel learnt, and the tier it ran.
    let made = entries(dir.path());
    assert_eq!(made.len(), 2, "{made:?}");
    let first: Vec<Vec<u8>> = made.iter().map(|p| std::fs::read(p).unwrap()).collect();
    // The second run finds them and writes nothing: a rewrite would replace each file (a new inode).
    let inodes = |paths: &[std::path::PathBuf]| -> Vec<u64> {
        use std::os::unix::fs::MetadataExt;
        paths.iter().map(|p| std::fs::metadata(p).unwrap().ino()).collect()
    };
    let before = inodes(&made);
    vecadd(dir.path(), &[]);
    assert_eq!(entries(dir.path()), made);
    assert_eq!(inodes(&made), before, "an entry was written again");
    let again: Vec<Vec<u8>> = made.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert_eq!(again, first);
}

/// A kernel whose optimised code is in the cache runs it from its first launch, however small: the
/// quick tier is for cold starts.
#[test]
fn a_cached_optimised_tier_is_used_from_the_first_launch() {
    let dir = tempfile::tempdir().unwrap();
    // 2^16 threads: a launch too large for the quick tier compiles the optimised one.
    vecadd_on(dir.path(), &[], "16384");
    let made = entries(dir.path());
    assert_eq!(made.len(), 2, "the preparation and the optimised tier: {made:?}");
    vecadd(dir.path(), &[]);
    assert_eq!(entries(dir.path()), made, "a quick tier was compiled");
}

#[test]
fn a_corrupt_or_truncated_entry_is_compiled_again() {
    let dir = tempfile::tempdir().unwrap();
    vecadd(dir.path(), &[]);
    for path in entries(dir.path()) {
        let good = std::fs::read(&path).unwrap();
        // A flipped byte near the end (in the code, for the tier): loading it could run anything.
        let mut bad = good.clone();
        let at = bad.len() - 10;
        bad[at] ^= 0x40;
        std::fs::write(&path, &bad).unwrap();
        vecadd(dir.path(), &[]);
        assert_eq!(std::fs::read(&path).unwrap(), good, "rewritten whole");
        std::fs::write(&path, &good[..good.len() / 2]).unwrap();
        vecadd(dir.path(), &[]);
        assert_eq!(std::fs::read(&path).unwrap(), good, "rewritten whole");
    }
}

#[test]
fn options_that_change_code_have_entries_of_their_own_and_disable_keeps_none() {
    let dir = tempfile::tempdir().unwrap();
    vecadd(dir.path(), &[]);
    vecadd(dir.path(), &[("PTXJIT_CHECKED", "1")]);
    assert_eq!(entries(dir.path()).len(), 4);
    let off = tempfile::tempdir().unwrap();
    vecadd(off.path(), &[("CUDA_CACHE_DISABLE", "1")]);
    assert!(entries(off.path()).is_empty());
}

#[test]
fn processes_compiling_the_same_kernel_at_once_agree() {
    let dir = tempfile::tempdir().unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| vecadd(dir.path(), &[]));
        }
    });
    assert_eq!(entries(dir.path()).len(), 2, "no temporary file left behind");
    vecadd(dir.path(), &[]);
}
