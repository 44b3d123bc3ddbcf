//! `ptx-jit bench compile`: per-file latency of retargeting (by phase) next to NVIDIA's ptxas on the
//! same files, single-threaded, as medians over the files.

use crate::nvptx::{self, Emit, Phases};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// One file's times: the best of `iters` runs of each.
pub struct FileTimes {
    pub file: PathBuf,
    pub arch: String,
    pub parse: Duration,
    pub check: Duration,
    pub phases: Phases,
    /// ptxas on the source file for the same target (`None` when it rejects the file).
    pub ptxas: Option<Duration>,
}

impl FileTimes {
    pub fn ours(&self) -> Duration {
        let p = &self.phases;
        self.parse + self.check + p.validate + p.lower + p.optimise + p.codegen + p.recheck
    }
}

/// The `.target` of a PTX text (`sm_90` for `.target sm_90, debug`).
fn target_of(src: &str) -> Option<String> {
    let line = src.lines().find(|l| l.trim_start().starts_with(".target"))?;
    let t = line.trim_start().strip_prefix(".target")?.split(',').next()?.trim();
    Some(t.to_string())
}

/// Times every file; files that do not compile are reported on stderr and skipped.
pub fn compile_latency(
    files: &[PathBuf],
    arch: Option<&str>,
    ptxas: Option<&Path>,
    iters: u32,
    opt: u8,
) -> Vec<FileTimes> {
    let mut out = vec![];
    for f in files {
        let Ok(src) = std::fs::read_to_string(f) else { continue };
        let Some(target) = arch.map(str::to_string).or_else(|| target_of(&src)) else {
            continue;
        };
        let Ok(a) = crate::nvptx::arch::validate(&target, None) else {
            eprintln!("skipped {}: no LLVM target {target}", f.display());
            continue;
        };
        let mut best: Option<FileTimes> = None;
        for _ in 0..iters.max(1) {
            let t0 = Instant::now();
            let (m, _) = ptx_front::parse(&src);
            let parse = t0.elapsed();
            let t0 = Instant::now();
            let opts = ptx_front::check::Options {
                no_lints: true,
                ..Default::default()
            };
            let errors = ptx_front::check::check_with(&m, &opts).iter().any(|d| d.is_error());
            let check = t0.elapsed();
            if errors {
                eprintln!("skipped {}: rejected by the checker", f.display());
                break;
            }
            let mut phases = Phases::default();
            if let Err(d) = nvptx::emit_bytes(&m, &a, opt, Emit::Ptx, &mut phases) {
                eprintln!("skipped {}: {}", f.display(), crate::one_line(&d[..1], "", &src));
                break;
            }
            let t = FileTimes {
                file: f.clone(),
                arch: target.clone(),
                parse,
                check,
                phases,
                ptxas: None,
            };
            if best.as_ref().is_none_or(|b| t.ours() < b.ours()) {
                best = Some(t);
            }
        }
        let Some(mut t) = best else { continue };
        if let Some(p) = ptxas {
            // Sources with `.extern .func` only assemble as relocatable objects.
            let reloc = src.lines().any(|l| l.trim_start().starts_with(".extern .func"));
            for _ in 0..iters.max(1) {
                let t0 = Instant::now();
                let mut c = Command::new(p);
                c.arg(format!("-arch={target}")).arg(f).arg("-o").arg("/dev/null");
                if reloc {
                    c.arg("-c");
                }
                let ok = c.output().is_ok_and(|o| o.status.success());
                let dt = t0.elapsed();
                if !ok {
                    t.ptxas = None;
                    break;
                }
                t.ptxas = Some(t.ptxas.map_or(dt, |b| b.min(dt)));
            }
        }
        out.push(t);
    }
    out
}

pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
