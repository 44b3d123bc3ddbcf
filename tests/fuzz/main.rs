//! Fuzzing on the stable toolchain (no libFuzzer): mutated inputs go through four targets, and any
//! panic, crash, hang or broken invariant is a finding.
//!
//! - `parse`: parse, check (with lints), human, one-line, JSON and SARIF diagnostics, fragment mode,
//!   and the `fmt` round trip (the printed text re-parses to the same tree, and printing is idempotent);
//! - `lower`: inputs that check clean are lowered for the host (IR, sometimes optimised or compiled to
//!   machine code) and for NVPTX, for a target validated by `ptx_jit::nvptx::arch::validate` first;
//! - `fatbin`: cuda-shim's fat binary reader on forged images, directly and through `cuModuleLoadData`,
//!   `cuModuleLoadFatBinary` and `cuLibraryLoadData`;
//! - `driver`: sequences of driver API calls decoded from the input bytes, with forged, stale, null
//!   and out-of-range arguments (`driver.rs`).
//!
//! Each run first replays the regression corpus (`tests/fuzz/corpus/TARGET`), then mutates seeds
//! (the test kernels and, when present, the shared corpora) for `FUZZ_SECONDS` per target (default 0:
//! the corpus only, which is what `cargo test` does) or `FUZZ_ITERS` mutants. Input `i` depends only
//! on the seed (`FUZZ_SEED`) and `i`, so a supervisor can rebuild whatever input a crashed or hung
//! child process was running: each target runs in a child process that writes the index of its
//! current input to a file before running it. Panics, including those the driver API catches and
//! turns into `CUDA_ERROR_UNKNOWN`, are seen by a panic hook. Findings are saved under
//! `target/fuzz/findings/`; `FUZZ_REPLAY=FILE` runs one of them in-process (`FUZZ_BACKTRACE=1` prints
//! where each panic came from).
//!
//! `cargo test --release -p ptx-jit-tests --test fuzz -- [parse|lower|fatbin|driver …]`

mod driver;
mod targets;

use ptx_jit_tests::Rng;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Target {
    Parse,
    Lower,
    Fatbin,
    Driver,
}

impl Target {
    const ALL: [Target; 4] = [Target::Parse, Target::Lower, Target::Fatbin, Target::Driver];
    fn name(self) -> &'static str {
        match self {
            Target::Parse => "parse",
            Target::Lower => "lower",
            Target::Fatbin => "fatbin",
            Target::Driver => "driver",
        }
    }
    fn from_name(s: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == s)
    }
    /// The extension of saved inputs.
    fn ext(self) -> &'static str {
        match self {
            Target::Parse | Target::Lower => "ptx",
            Target::Fatbin | Target::Driver => "bin",
        }
    }
    /// Runs one input; `Ok` carries whether it got past the first gate (checked clean, loaded, …).
    fn exec(self, data: &[u8]) -> Result<bool, String> {
        match self {
            Target::Parse => targets::parse(data),
            Target::Lower => targets::lower(data),
            Target::Fatbin => targets::fatbin(data),
            Target::Driver => driver::run(data),
        }
    }
    /// A seed too large makes every mutant slow; LLVM time grows with the input.
    fn max_seed(self) -> usize {
        match self {
            Target::Parse => 64 << 10,
            Target::Lower => 24 << 10,
            Target::Fatbin | Target::Driver => 64 << 10,
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// `target/` of this build (the test binary lives in `target/PROFILE/deps`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("own path");
    exe.ancestors()
        .nth(3)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| root().join("../target"))
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else { return vec![] };
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .flat_map(|p| if p.is_dir() { files_in(&p) } else { vec![p] })
        .filter(|p| p.file_name().is_some_and(|n| !n.to_string_lossy().starts_with('.')))
        .collect();
    v.sort();
    v
}

/// What a target's inputs are made from.
struct Inputs {
    target: Target,
    corpus: Vec<(PathBuf, Vec<u8>)>,
    seeds: Vec<Vec<u8>>,
    seed: u64,
}

impl Inputs {
    fn load(target: Target, seed: u64, quiet: bool) -> Inputs {
        let corpus: Vec<(PathBuf, Vec<u8>)> = files_in(&root().join("fuzz/corpus").join(target.name()))
            .into_iter()
            .map(|p| {
                let b = std::fs::read(&p).expect("readable corpus file");
                (p, b)
            })
            .collect();
        let mut seeds: Vec<Vec<u8>> = corpus.iter().map(|(_, b)| b.clone()).collect();
        let ptx = ptx_seeds(target.max_seed(), quiet);
        match target {
            Target::Parse | Target::Lower => seeds.extend(ptx),
            Target::Fatbin => seeds.extend(targets::fatbin_seeds(&ptx)),
            Target::Driver => {
                let mut rng = Rng(seed ^ 0xd1);
                seeds.extend((0..64).map(|_| {
                    (0..64 + rng.below(448))
                        .map(|_| rng.next_u64() as u8)
                        .collect::<Vec<u8>>()
                }))
            }
        }
        seeds.retain(|s| !s.is_empty());
        Inputs {
            target,
            corpus,
            seeds,
            seed,
        }
    }

    /// Input `i`: the corpus first, then mutants.
    fn get(&self, i: u64) -> Vec<u8> {
        if (i as usize) < self.corpus.len() {
            return self.corpus[i as usize].1.clone();
        }
        let mut rng = Rng(splitmix(self.seed ^ splitmix(i)) | 1);
        let binary = matches!(self.target, Target::Fatbin | Target::Driver);
        mutate(&self.seeds, binary, &mut rng)
    }
}

/// The test kernels and the shared corpora, each file up to `max` bytes.
fn ptx_seeds(max: usize, quiet: bool) -> Vec<Vec<u8>> {
    let mut files = vec![];
    for dir in ["ptx", "ptx-host", "ptx-errors", "sanitize"] {
        files.extend(ptx_jit_tests::ptx_files(dir));
    }
    let shared = root().join("../../shared/corpus");
    if shared.is_dir() {
        files.extend(
            files_in(&shared)
                .into_iter()
                .filter(|p| p.extension().is_some_and(|x| x == "ptx")),
        );
    } else if !quiet {
        eprintln!("fuzz: {} is absent; seeds are the test kernels only", shared.display());
    }
    files
        .iter()
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() as usize <= max))
        .filter_map(|p| std::fs::read(p).ok())
        .collect()
}

pub fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// PTX punctuation, keywords and troublemakers, for text mutations.
const TOKENS: &[&str] = &[
    "{",
    "}",
    ";",
    ",",
    "[",
    "]",
    "(",
    ")",
    "<",
    ">",
    "@",
    "!",
    "%r",
    "%rd",
    "%p",
    "%f",
    ".u32",
    ".b64",
    ".f32",
    ".pred",
    ".global",
    ".shared",
    ".param",
    ".local",
    ".const",
    ".reg",
    ".entry",
    ".func",
    ".visible",
    ".extern",
    ".align 8",
    ".version 8.5",
    ".target sm_90",
    ".address_size 64",
    ".maxntid 1024",
    "0x",
    "0f",
    "0d",
    "-",
    "+",
    "*",
    "/",
    "::",
    ".",
    "_",
    "$",
    "%tid.x",
    "%ctaid.x",
    "bar.sync 0;",
    "ret;",
    "exit;",
    "trap;",
    "bra L;",
    "L:",
    "call",
    "é",
    "\"",
    "/*",
    "*/",
    "// ",
    "\n",
    "\t",
    "\0",
    "4294967296",
    "18446744073709551616",
    "-2147483648",
    "1e400",
    "0fFFFFFFFF",
    ".v4",
    ".v2",
    ".sat",
    ".rn",
    ".ftz",
    ".approx",
    ".wide",
    ".lo",
    ".hi",
    ".cta",
    ".gpu",
    ".sys",
    ".relaxed",
    ".acquire",
    "mov.u32 %r1, 0;",
    "ld.global.u32 %r1, [%rd1];",
    "st.shared.u32 [%r1], %r1;",
    ".reg .b32 %r<99999>;",
    "atom.global.add.u32",
    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
    "wmma.load.a.sync.aligned.row.m16n16k16",
    "tex.2d.v4.f32.f32",
    "cp.async.ca.shared.global",
    "shfl.sync.bfly.b32",
    "vote.sync.ballot.b32",
    "setp.lt.s32",
    "selp.b32",
    "cvt.rn.f32.s32",
    "prmt.b32",
    "bfe.u32",
    "brev.b32",
    "dp4a.u32.u32",
    "vadd.u32.u32.u32",
    "red.global.add",
];

/// Values that break size and offset fields of binary formats.
const INTERESTING: &[u64] = &[
    0,
    1,
    2,
    7,
    8,
    15,
    16,
    17,
    63,
    64,
    65,
    0x7f,
    0x80,
    0xff,
    0x100,
    0x101,
    0x1000,
    0x2000,
    0x8000,
    0x7fff,
    0xffff,
    0x10000,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0x1_0000_0000,
    1 << 30,
    256 << 20,
    (256 << 20) + 1,
    0x7fff_ffff_ffff_ffff,
    0x8000_0000_0000_0000,
    u64::MAX,
    u64::MAX - 15,
];

/// One to eight random edits of one seed: byte changes, insertions of tokens or interesting values,
/// deletions, duplications, splices with another seed, truncation.
fn mutate(seeds: &[Vec<u8>], binary: bool, rng: &mut Rng) -> Vec<u8> {
    let mut s = seeds[rng.below(seeds.len())].clone();
    let many = rng.below(4) == 0;
    let edits = 1 + rng.below(if many { 8 } else { 2 });
    for _ in 0..edits {
        let at = rng.below(s.len() + 1);
        match rng.below(if binary { 9 } else { 8 }) {
            0 if !s.is_empty() => {
                let at = at.min(s.len() - 1);
                s[at] = if binary {
                    rng.next_u64() as u8
                } else {
                    b" .;,{}[]()%<>0123456789abcdefxyz_\n"[rng.below(34)]
                };
            }
            1 if !s.is_empty() => {
                let at = at.min(s.len() - 1);
                s[at] ^= 1 << rng.below(8);
            }
            2 => {
                let long = rng.below(8) == 0;
                let n = 1 + rng.below(if long { 256 } else { 8 });
                s.drain(at..(at + n).min(s.len()));
            }
            3 => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                s.splice(at..at, t.iter().copied());
            }
            4 => {
                // Duplicate a slice (repeats a statement, an entry, a block).
                let from = rng.below(s.len() + 1);
                let n = rng.below(64.min(s.len() - from) + 1);
                let dup: Vec<u8> = s[from..from + n].to_vec();
                s.splice(at..at, dup);
            }
            5 => {
                // Splice a piece of another seed.
                let o = &seeds[rng.below(seeds.len())];
                let from = rng.below(o.len() + 1);
                let n = rng.below(256.min(o.len() - from) + 1);
                let end = (at + rng.below(64)).min(s.len());
                s.splice(at..end, o[from..from + n].iter().copied());
            }
            6 if rng.below(4) == 0 => s.truncate(at),
            7 | 8 => {
                // A field-sized interesting value at an aligned offset (binary), or a number (text).
                let v = INTERESTING[rng.below(INTERESTING.len())];
                if binary {
                    let w = [1usize, 2, 4, 8][rng.below(4)];
                    let at = at / w * w;
                    if at + w <= s.len() {
                        s[at..at + w].copy_from_slice(&v.to_le_bytes()[..w]);
                    }
                } else {
                    s.splice(at..at, v.to_string().into_bytes());
                }
            }
            _ => {}
        }
    }
    s.truncate(256 << 10);
    s
}

/// Panics seen by the hook since the last `take_panics` (the driver API catches its own).
static PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn install_hook() {
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info.location().map(|l| l.to_string()).unwrap_or_default();
        if std::env::var_os("FUZZ_BACKTRACE").is_some() {
            eprintln!("panic at {at}: {msg}\n{}", std::backtrace::Backtrace::force_capture());
        }
        if let Ok(mut p) = PANICS.lock() {
            p.push(format!("panic at {at}: {msg}"));
        }
    }));
}

fn take_panics() -> Vec<String> {
    std::mem::take(&mut *PANICS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// Runs one input in this process: a panic (caught here or inside the target) or a failed invariant.
fn exec_caught(t: Target, data: &[u8]) -> Result<bool, String> {
    take_panics();
    let r = std::panic::catch_unwind(|| t.exec(data));
    let panics = take_panics();
    match r {
        Err(_) => Err(panics.into_iter().next().unwrap_or_else(|| "panic".into())),
        Ok(_) if !panics.is_empty() => Err(format!("{} (caught inside the target)", panics[0])),
        Ok(r) => r,
    }
}

fn findings_dir() -> PathBuf {
    target_dir().join("fuzz/findings")
}

/// Saves a finding's input; returns its path.
fn save(t: Target, i: u64, data: &[u8]) -> PathBuf {
    let dir = findings_dir();
    std::fs::create_dir_all(&dir).expect("findings directory");
    let p = dir.join(format!(
        "{}-{i}-{:016x}.{}",
        t.name(),
        splitmix(data.len() as u64 ^ fnv(data)),
        t.ext()
    ));
    std::fs::write(&p, data).expect("finding written");
    p
}

fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x100_0000_01b3)
    })
}

fn finding_line(t: Target, what: &str, path: &Path) -> String {
    let what: String = what.chars().take(400).collect::<String>().replace('\n', " | ");
    format!(
        "{}: {what}\n    input: {}\n    reproduce: FUZZ_REPLAY={} cargo test --release -p ptx-jit-tests --test fuzz -- {}",
        t.name(),
        path.display(),
        path.display(),
        t.name()
    )
}

// ---- the child: runs inputs start.. until the deadline ------------------------------------------

fn child(t: Target, start: u64, end: u64, ms: u64, dir: &Path, seed: u64) -> ExitCode {
    install_hook();
    let inputs = Inputs::load(t, seed, true);
    let progress = std::fs::File::create(dir.join("progress")).expect("progress file");
    let mut findings = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(dir.join("findings"))
        .expect("findings file");
    let deadline = Instant::now() + Duration::from_millis(ms);
    let corpus = inputs.corpus.len() as u64;
    let (mut i, mut passed) = (start, 0u64);
    while i < end && (i < corpus || Instant::now() < deadline) {
        progress.write_all_at(&i.to_le_bytes(), 0).expect("progress written");
        let data = inputs.get(i);
        match exec_caught(t, &data) {
            Ok(p) => passed += p as u64,
            Err(e) => {
                let path = save(t, i, &data);
                writeln!(findings, "{}", finding_line(t, &e, &path)).expect("finding recorded");
            }
        }
        i += 1;
    }
    std::fs::write(dir.join("done"), format!("{i} {passed}")).expect("done written");
    // The driver target's worker threads may still hold work; leave without running destructors.
    std::process::exit(0)
}

// ---- the supervisor -----------------------------------------------------------------------------

struct Report {
    execs: u64,
    passed: u64,
    corpus: usize,
    secs: f64,
    findings: Vec<String>,
}

/// Runs target `t` in child processes until its time or iterations are used, restarting after a
/// crash or a hang.
fn supervise(t: Target, seconds: f64, iters: Option<u64>, seed: u64) -> Report {
    let dir = target_dir().join("fuzz/work").join(t.name());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("work directory");
    let hang = Duration::from_secs(
        std::env::var("FUZZ_HANG_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(60),
    );
    let inputs = Inputs::load(t, seed, false);
    let corpus = inputs.corpus.len() as u64;
    let end = iters.map_or(u64::MAX, |n| corpus + n);
    let t0 = Instant::now();
    let budget = Duration::from_secs_f64(seconds);
    let (mut start, mut execs, mut passed, mut findings) = (0u64, 0u64, 0u64, vec![]);
    loop {
        let left = budget.saturating_sub(t0.elapsed()).as_millis() as u64;
        let _ = std::fs::remove_file(dir.join("done"));
        let _ = std::fs::remove_file(dir.join("progress"));
        let mut c = Command::new(std::env::current_exe().expect("own path"))
            .env("FUZZ_CHILD", format!("{} {start} {end} {left} {seed}", t.name()))
            .env("FUZZ_DIR", &dir)
            // Launch errors and JIT logs; the tail goes with a crash.
            .stderr(std::fs::File::create(dir.join("stderr")).expect("stderr file"))
            .spawn()
            .expect("child process");
        let (mut last, mut since) = (u64::MAX, Instant::now());
        let status = loop {
            if let Some(s) = c.try_wait().expect("child status") {
                break Some(s);
            }
            std::thread::sleep(Duration::from_millis(50));
            let now = read_progress(&dir);
            if now != Some(last) {
                last = now.unwrap_or(u64::MAX);
                since = Instant::now();
            } else if since.elapsed() > hang {
                let _ = c.kill();
                let _ = c.wait();
                break None;
            }
        };
        if let Ok(done) = std::fs::read_to_string(dir.join("done")) {
            let mut it = done.split_whitespace().map(|x| x.parse::<u64>().unwrap_or(0));
            let (next, p) = (it.next().unwrap_or(start), it.next().unwrap_or(0));
            execs += next - start;
            passed += p;
            break;
        }
        // Crashed or hung: the input it was running is rebuilt from its index.
        let i = read_progress(&dir).unwrap_or(start);
        let data = inputs.get(i);
        let path = save(t, i, &data);
        let tail = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
        let tail: Vec<&str> = tail.lines().rev().take(3).collect();
        let what = match status {
            Some(s) => format!("the process died: {s}; stderr ends: {}", tail.join(" | ")),
            None => format!("hang: input {i} ran for more than {} s", hang.as_secs()),
        };
        findings.push(finding_line(t, &what, &path));
        execs += i + 1 - start;
        start = i + 1;
        if start >= end || (start >= corpus && t0.elapsed() >= budget) {
            break;
        }
    }
    if let Ok(f) = std::fs::read_to_string(dir.join("findings")) {
        let mut cur = String::new();
        for line in f.lines() {
            if !line.starts_with("    ") && !cur.is_empty() {
                findings.push(std::mem::take(&mut cur));
            }
            if !cur.is_empty() {
                cur.push('\n');
            }
            cur.push_str(line);
        }
        if !cur.is_empty() {
            findings.push(cur);
        }
    }
    Report {
        execs,
        passed,
        corpus: corpus as usize,
        secs: t0.elapsed().as_secs_f64(),
        findings,
    }
}

fn read_progress(dir: &Path) -> Option<u64> {
    let b = std::fs::read(dir.join("progress")).ok()?;
    Some(u64::from_le_bytes(b.get(..8)?.try_into().ok()?))
}

fn env_num<T: std::str::FromStr>(k: &str) -> Option<T> {
    std::env::var(k).ok().and_then(|v| v.parse().ok())
}

fn main() -> ExitCode {
    if let Ok(spec) = std::env::var("FUZZ_CHILD") {
        let f: Vec<&str> = spec.split(' ').collect();
        let t = Target::from_name(f[0]).expect("target name");
        let n = |k: usize| f[k].parse::<u64>().expect("child argument");
        let dir = PathBuf::from(std::env::var("FUZZ_DIR").expect("FUZZ_DIR"));
        return child(t, n(1), n(2), n(3), &dir, n(4));
    }
    // Target names among the arguments; cargo's own test flags are ignored.
    let names: Vec<String> = std::env::args().skip(1).chain(std::env::var("FUZZ_TARGETS")).collect();
    let mut chosen: Vec<Target> = vec![];
    for t in names
        .iter()
        .flat_map(|a| a.split([',', ' ']))
        .filter_map(Target::from_name)
    {
        if !chosen.contains(&t) {
            chosen.push(t);
        }
    }
    if chosen.is_empty() {
        chosen = Target::ALL.to_vec();
    }
    if let Ok(file) = std::env::var("FUZZ_REPLAY") {
        install_hook();
        let data = std::fs::read(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
        let t = chosen[0];
        let r = exec_caught(t, &data);
        println!("{} on {file}: {r:?}", t.name());
        return if r.is_ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let seconds: f64 = env_num("FUZZ_SECONDS").unwrap_or(0.0);
    let iters: Option<u64> = env_num("FUZZ_ITERS");
    let seed: u64 = env_num("FUZZ_SEED").unwrap_or(0x5eed_f00d);
    let iters = if seconds == 0.0 && iters.is_none() {
        Some(0)
    } else {
        iters
    };
    // An iteration count alone is not cut short by time.
    let seconds = if seconds == 0.0 && iters.is_some_and(|n| n > 0) {
        1e9
    } else {
        seconds
    };
    let mut all = vec![];
    println!(
        "fuzz: seed {seed:#x}, {seconds} s per target{}",
        iters.map(|n| format!(", at most {n} mutants")).unwrap_or_default()
    );
    for t in chosen {
        let r = supervise(t, seconds, iters, seed);
        println!(
            "fuzz {:<6}: {} executions ({} corpus) in {:.1} s, {:.0}/s, {} passed the first gate, {} finding(s)",
            t.name(),
            r.execs,
            r.corpus,
            r.secs,
            r.execs as f64 / r.secs.max(1e-9),
            r.passed,
            r.findings.len()
        );
        all.extend(r.findings);
    }
    if all.is_empty() {
        println!("fuzz: no findings");
        return ExitCode::SUCCESS;
    }
    println!("fuzz: {} finding(s)", all.len());
    for f in &all {
        println!("{f}");
    }
    ExitCode::FAILURE
}
