//! Shared helpers for ptx-jit's file-driven tests.
//!
//! Directives live in `//` comments of a `.ptx` file:
//! - `// run: kernel=NAME grid=X[,Y,Z] block=X[,Y,Z] [shared=BYTES] args=A;B;…` launches the kernel on
//!   the CPU backend with arguments in `ptx_jit::cli::args` syntax;
//! - `// out: argN=TYPE[v,…]` is the expected content of buffer argument N after the run;
//! - `// error: CODE line=L` expects an error diagnostic with that code on that line (and no others);
//! - `// warning: CODE line=L` likewise for warnings (files without one do not check warnings);
//! - `// exec: lanes|regions|fibers|loop` is how the kernel must run by default (`ptx_llvm::Exec`). Kernels
//!   that synchronise are also run with regions disabled (on fibers), which must give the same buffers;
//! - `// sanitize: TOOLS` runs the `run:` launch under those sanitizers (`ptx_jit::runtime::sanitize`), and
//!   `// report: KIND line=A [line=B]` is one finding it must report (kind as `sanitize::Kind::name`,
//!   the lines of its accesses in order); a file with `sanitize:` and no `report:` must be clean. Its
//!   `out:` lines, if any, are checked as without `sanitize:`; the launch under `all` sanitizers that
//!   every other `run:` test gets (it must find nothing) is left out.

use ptx_jit::cli::args::{Arg, Elem, ElemExt};
use std::path::{Path, PathBuf};

#[derive(Debug, Default)]
pub struct Directives {
    pub run: Option<Run>,
    pub outs: Vec<(usize, Elem, Vec<u8>)>,
    pub errors: Vec<(String, usize)>,
    pub warnings: Vec<(String, usize)>,
    pub exec: Option<String>,
    pub sanitize: Option<String>,
    pub reports: Vec<(String, Vec<usize>)>,
}

#[derive(Debug)]
pub struct Run {
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared: u64,
    pub args: Vec<Arg>,
}

fn dims(s: &str) -> Result<[u32; 3], String> {
    let v: Vec<u32> = s
        .split(',')
        .map(|x| x.parse().map_err(|_| format!("bad dims `{s}`")))
        .collect::<Result<_, _>>()?;
    Ok([v[0], *v.get(1).unwrap_or(&1), *v.get(2).unwrap_or(&1)])
}

pub fn directives(src: &str) -> Result<Directives, String> {
    let mut d = Directives::default();
    for line in src.lines() {
        let Some(c) = line.trim_start().strip_prefix("//") else {
            continue;
        };
        let c = c.trim();
        if let Some(r) = c.strip_prefix("run:") {
            let mut run = Run {
                kernel: String::new(),
                grid: [1; 3],
                block: [1; 3],
                shared: 0,
                args: vec![],
            };
            for kv in r.split_whitespace() {
                let (k, v) = kv.split_once('=').ok_or_else(|| format!("bad run field `{kv}`"))?;
                match k {
                    "kernel" => run.kernel = v.to_string(),
                    "grid" => run.grid = dims(v)?,
                    "block" => run.block = dims(v)?,
                    "shared" => run.shared = v.parse().map_err(|_| format!("bad shared `{v}`"))?,
                    "args" => run.args = v.split(';').map(Arg::parse).collect::<Result<_, _>>()?,
                    _ => return Err(format!("unknown run field `{k}`")),
                }
            }
            d.run = Some(run);
        } else if let Some(t) = c.strip_prefix("sanitize:") {
            d.sanitize = Some(t.trim().to_string());
        } else if let Some(r) = c.strip_prefix("report:") {
            let mut it = r.split_whitespace();
            let kind = it.next().ok_or("report: needs a kind")?.to_string();
            let lines = it
                .map(|l| {
                    l.strip_prefix("line=")
                        .and_then(|l| l.parse().ok())
                        .ok_or(format!("bad report field `{l}`"))
                })
                .collect::<Result<Vec<usize>, String>>()?;
            d.reports.push((kind, lines));
        } else if let Some(e) = c.strip_prefix("exec:") {
            d.exec = Some(e.trim().to_string());
        } else if let Some(o) = c.strip_prefix("out:") {
            let (k, v) = o.trim().split_once('=').ok_or_else(|| format!("bad out `{o}`"))?;
            let n: usize = k
                .trim()
                .strip_prefix("arg")
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("bad out target `{k}`"))?;
            match Arg::parse(v)? {
                Arg::Buffer(e, b) => d.outs.push((n, e, b)),
                Arg::Scalar(..) => return Err("`out:` takes a buffer".into()),
            }
        } else if let Some((kind, e)) = c.split_once(':').filter(|(k, _)| matches!(*k, "error" | "warning")) {
            let mut it = e.split_whitespace();
            let code = it.next().ok_or("error:/warning: needs a code")?.to_string();
            let line = it
                .next()
                .and_then(|l| l.strip_prefix("line="))
                .and_then(|l| l.parse().ok())
                .ok_or("error:/warning: needs line=N")?;
            if kind == "error" {
                d.errors.push((code, line));
            } else {
                d.warnings.push((code, line));
            }
        }
    }
    Ok(d)
}

/// Runs the `run:` directive and returns the buffers afterwards.
pub fn run(src: &str, r: &Run) -> Result<Vec<Vec<u8>>, String> {
    run_with(src, r, ptx_jit::Options::default()).map(|(b, _)| b)
}

/// The name of an execution model, as `// exec:` writes it.
pub fn exec_name(e: ptx_jit::Exec) -> &'static str {
    match e {
        ptx_jit::Exec::Loop => "loop",
        ptx_jit::Exec::Regions { lanes: 0, .. } => "regions",
        ptx_jit::Exec::Regions { .. } => "lanes",
        ptx_jit::Exec::Fibers => "fibers",
    }
}

/// `run` with lowering options; also returns how the kernel ran.
pub fn run_with(src: &str, r: &Run, options: ptx_jit::Options) -> Result<(Vec<Vec<u8>>, ptx_jit::Exec), String> {
    let module = ptx_jit::load_options(src, options).map_err(|d| ptx_jit::one_line(&d, "test.ptx", src))?;
    let k = module
        .kernel(&r.kernel)
        .ok_or_else(|| format!("no kernel `{}`", r.kernel))?;
    // The quick tier and the fully optimised code must give the same buffers. Named, not left to
    // `Tier::Auto`, whose first launch runs the optimised code when the disk cache has it.
    let mut runs = vec![];
    for tier in [ptx_jit::jit::host::Tier::Quick, ptx_jit::jit::host::Tier::Optimised] {
        let b = ptx_jit::cli::run::Buffers::new(&k.info, &r.args)?;
        let launch = ptx_jit::Launch {
            tier,
            ..ptx_jit::Launch::new(r.grid, r.block, r.shared, &b.params)
        };
        ptx_jit::launch(k, &launch).map_err(|e| e.to_string())?;
        runs.push(b.bufs.iter().map(|b| b.to_vec()).collect::<Vec<_>>());
    }
    let full = runs.pop().expect("two runs");
    if let Some(i) = (0..full.len()).find(|&i| full[i] != runs[0][i]) {
        return Err(format!(
            "argument {i} differs between the quick tier and the optimised code"
        ));
    }
    Ok((full, k.exec()))
}

/// Runs the `run:` launch under `tools` (checked mode, buffers registered as valid memory) and returns
/// each finding as its kind and the lines of its accesses, sorted.
pub fn sanitize_run(src: &str, r: &Run, tools: &str) -> Result<Vec<(String, Vec<usize>)>, String> {
    let tools = ptx_jit::runtime::sanitize::Tools::parse(tools)?;
    let options = ptx_jit::Options {
        checked: true,
        ..ptx_jit::Options::default()
    };
    let module = ptx_jit::load_options(src, options).map_err(|d| ptx_jit::one_line(&d, "test.ptx", src))?;
    let k = module
        .kernel(&r.kernel)
        .ok_or_else(|| format!("no kernel `{}`", r.kernel))?;
    let buffers = ptx_jit::cli::run::Buffers::new(&k.info, &r.args)?;
    let launch = ptx_jit::Launch {
        sanitize: tools,
        ..ptx_jit::Launch::new(r.grid, r.block, r.shared, &buffers.params)
    };
    let (result, findings) = ptx_jit::launch_sanitized(k, &launch);
    drop(buffers);
    // memcheck's findings end the launch; the others leave it running.
    if let (Err(e), true) = (&result, findings.is_empty()) {
        return Err(e.to_string());
    }
    let mut out: Vec<(String, Vec<usize>)> = findings
        .iter()
        .map(|f| {
            let mut lines: Vec<usize> = f
                .accesses
                .iter()
                .filter_map(|a| a.site)
                .map(|s| line_of(src, s))
                .collect();
            lines.sort();
            (f.kind.name().to_string(), lines)
        })
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// Compares a buffer with its expectation; floats compare as IEEE values (so NaN never matches NaN
/// unless the bits agree, and +0 equals -0).
pub fn compare(e: Elem, got: &[u8], want: &[u8]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} bytes, expected {}", got.len(), want.len()));
    }
    for (i, (g, w)) in got.chunks(e.size()).zip(want.chunks(e.size())).enumerate() {
        let same = match e {
            Elem::F32 => {
                let (g, w) = (
                    f32::from_le_bytes(g.try_into().unwrap()),
                    f32::from_le_bytes(w.try_into().unwrap()),
                );
                g == w || g.to_bits() == w.to_bits()
            }
            Elem::F64 => {
                let (g, w) = (
                    f64::from_le_bytes(g.try_into().unwrap()),
                    f64::from_le_bytes(w.try_into().unwrap()),
                );
                g == w || g.to_bits() == w.to_bits()
            }
            _ => g == w,
        };
        if !same {
            return Err(format!("element {i} is {}, expected {}", e.format(g), e.format(w)));
        }
    }
    Ok(())
}

/// A directory of the shared corpora (`../shared/corpus/DIR`), or None (with a message) when absent.
pub fn corpus(dir: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/corpus")
        .join(dir);
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("skipped: {} is absent", p.display());
        None
    }
}

/// Every `.ptx` file under `dir`, recursively, sorted.
pub fn ptx_files_under(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("readable corpus directory")
        .map(|e| e.expect("directory entry").path())
        .flat_map(|p| if p.is_dir() { ptx_files_under(&p) } else { vec![p] })
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .collect();
    v.sort();
    v
}

pub fn ptx_files(dir: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .collect();
    v.sort();
    v
}

pub fn line_of(src: &str, offset: u32) -> usize {
    ptx_front::span::line_col(src, offset).0
}

/// A small deterministic generator (xorshift64*), so failures reproduce.
pub struct Rng(pub u64);
impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}
