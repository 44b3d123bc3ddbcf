//! Retargeting through LLVM's NVPTX backend over the shared corpora (`../shared/corpus`): every nvcc file
//! for its own target, every nvcc file for sm_80 / PTX 7.0, and ZLUDA's kernels for sm_75, sm_80, sm_90
//! and sm_120. Output goes through NVIDIA's ptxas (`PTXAS`, set by `make test`); an instruction the
//! requested target cannot express must get the gating diagnostic (P0301) instead. Files run two at a
//! time (CI has 2 cores); each test skips with a message when its corpus is absent.

use ptx_jit_tests::{corpus, ptx_files_under};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Valid PTX the nvvm lowering cannot take yet, with the reason (P0401 expected for exactly these;
/// none today).
const NOT_YET: &[(&str, &str)] = &[];

/// Files that pass our gating for sm_80 / PTX 7.0 but that ptxas rejects (none today: the pair rule
/// for `cvt` with `.bf16` closed the last gap).
const TABLE_GAPS_SM80: &[&str] = &[];

fn pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("thread pool")
}

fn target_of(src: &str) -> String {
    let line = src
        .lines()
        .find(|l| l.trim_start().starts_with(".target"))
        .expect(".target");
    line.trim_start()[7..]
        .split(',')
        .next()
        .expect("target")
        .trim()
        .to_string()
}

/// Runs ptxas on `ptx` for `sm`; `Err` carries its first error lines. Modules with `.extern .func`
/// assemble as relocatable objects (`-c`), as their sources do.
fn ptxas(ptxas: &Path, ptx: &str, sm: &str, name: &str) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("ptx-jit-retarget-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let f = dir.join(format!("{name}.{sm}.ptx"));
    std::fs::write(&f, ptx).expect("write");
    let mut c = Command::new(ptxas);
    c.arg(format!("-arch={sm}"))
        .arg(&f)
        .arg("-o")
        .arg(f.with_extension("cubin"));
    if ptx.lines().any(|l| l.starts_with(".extern .func")) {
        c.arg("-c");
    }
    let o = c.output().map_err(|e| format!("cannot run {}: {e}", ptxas.display()))?;
    let _ = std::fs::remove_file(&f);
    let _ = std::fs::remove_file(f.with_extension("cubin"));
    if o.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&o.stderr)
            .lines()
            .take(2)
            .collect::<Vec<_>>()
            .join(" / "))
    }
}

#[derive(Default, Debug)]
struct Tally {
    ok: usize,
    gated: usize,
    not_yet: usize,
    table_gaps: usize,
    failures: Vec<String>,
}

/// Compiles every file for `arch` (its own `.target` when `None`) and checks the outcome: ptxas accepts
/// the output, or (only when `allow_gating`) every diagnostic is the gating one, or the file is in
/// `NOT_YET` and gets P0401.
fn sweep(files: &[PathBuf], arch: Option<&str>, version: Option<&str>, allow_gating: bool, opt: u8) -> Tally {
    let ptxas_path = std::env::var_os("PTXAS").map(PathBuf::from);
    if ptxas_path.is_none() {
        eprintln!("note: PTXAS is not set; compiling without running ptxas");
    }
    let results: Vec<(usize, Option<String>)> = pool().install(|| {
        files
            .par_iter()
            .map(|f| {
                let name = f.file_name().unwrap().to_string_lossy().to_string();
                let src = std::fs::read_to_string(f).unwrap();
                let sm = arch.map(str::to_string).unwrap_or_else(|| target_of(&src));
                let not_yet = NOT_YET.iter().any(|(n, _)| *n == name);
                let a = ptx_jit::nvptx::arch::validate(&sm, version).expect("valid target");
                let gap = version == Some("7.0") && TABLE_GAPS_SM80.contains(&name.as_str());
                match ptx_jit::retarget(&src, &a, opt, ptx_jit::nvptx::Emit::Ptx) {
                    Ok(_) if not_yet => (0, Some(format!("{name}: compiles now; remove it from NOT_YET"))),
                    // Tests run side by side: the file name says which sweep wrote it.
                    Ok(out) => match ptxas_path
                        .as_deref()
                        .map(|p| ptxas(p, &out, &sm, &format!("{name}.{}", version.unwrap_or("src"))))
                    {
                        Some(Err(_)) if gap => (3, None),
                        Some(Ok(())) if gap => (
                            0,
                            Some(format!("{name}: ptxas accepts it now; remove it from TABLE_GAPS_SM80")),
                        ),
                        Some(Err(e)) => (0, Some(format!("{name} for {sm}: ptxas: {e}"))),
                        _ => (0, None),
                    },
                    Err(d) if not_yet && d.iter().all(|d| d.code == ptx_jit::Code::P0401) => (2, None),
                    Err(d) if allow_gating && d.iter().all(|d| d.code == ptx_jit::Code::P0301) => (1, None),
                    Err(d) => (
                        0,
                        Some(format!("{name} for {sm}: {}", ptx_jit::one_line(&d[..1], &name, &src))),
                    ),
                }
            })
            .collect()
    });
    let mut t = Tally::default();
    for (kind, fail) in results {
        match (kind, fail) {
            (_, Some(f)) => t.failures.push(f),
            (0, None) => t.ok += 1,
            (1, None) => t.gated += 1,
            (3, None) => t.table_gaps += 1,
            _ => t.not_yet += 1,
        }
    }
    t
}

fn report(what: &str, t: &Tally, start: std::time::Instant) {
    eprintln!(
        "{what}: {} accepted by ptxas, {} gated (P0301), {} not lowered yet (NOT_YET), {} rejected by ptxas as known (TABLE_GAPS_SM80), {} failures, in {:.1} s",
        t.ok,
        t.gated,
        t.not_yet,
        t.table_gaps,
        t.failures.len(),
        start.elapsed().as_secs_f64()
    );
    assert!(t.failures.is_empty(), "{what}:\n{}", t.failures.join("\n"));
}

#[test]
fn nvcc_corpus_for_its_own_target() {
    let Some(dir) = corpus("nvcc") else { return };
    let start = std::time::Instant::now();
    let files = ptx_files_under(&dir);
    // -O3, what `compile` does by default.
    let t = sweep(&files, None, None, false, 3);
    report("nvcc, own target", &t, start);
    assert!(t.ok >= 550, "{t:?}");
}

#[test]
fn nvcc_corpus_for_sm80_ptx70() {
    let Some(dir) = corpus("nvcc") else { return };
    let start = std::time::Instant::now();
    let files = ptx_files_under(&dir);
    // -O3: unoptimised PTX is several times larger, and ptxas then takes longer than we save.
    let t = sweep(&files, Some("sm_80"), Some("7.0"), true, 3);
    report("nvcc, sm_80 / PTX 7.0", &t, start);
    assert!(t.ok > 0 && t.gated > 0, "{t:?}");
}

#[test]
fn zluda_kernels_for_four_targets() {
    let Some(dir) = corpus("zluda-run") else { return };
    let start = std::time::Instant::now();
    let files = ptx_files_under(&dir);
    for sm in ["sm_75", "sm_80", "sm_90", "sm_120"] {
        let t = sweep(&files, Some(sm), None, true, 3);
        report(&format!("zluda-run, {sm}"), &t, start);
        // From sm_90 on, every kernel's instructions exist on the target; only lowering gaps remain.
        if sm != "sm_75" && sm != "sm_80" {
            assert_eq!(t.gated, 0, "{sm}: {t:?}");
        }
    }
}

/// The gating diagnostic names the instruction, its line, and the sm and PTX version it needs.
#[test]
fn gating_diagnostic_snapshot() {
    let src = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<2>; .reg .pred %p1;\n\tld.param.u64 %rd1, [p];\n\tmov.u32 %r1, %cluster_ctarank;\n\telect.sync %r2|%p1, 0xffffffff;\n\tst.global.u32 [%rd1], %r2;\n\tret;\n}\n";
    let a = ptx_jit::nvptx::arch::validate("sm_80", Some("7.0")).unwrap();
    let d = ptx_jit::retarget(src, &a, 3, ptx_jit::nvptx::Emit::Ptx).unwrap_err();
    let text: String = d.iter().map(|d| d.render("gated.ptx", src, false)).collect();
    insta::assert_snapshot!("retarget__gating", text);
}

/// Kernels that exercise the nvvm flavour's inline-PTX fallback (`tests/ptx-nvptx`): the emitted sm_90
/// PTX is snapshotted, passes our own checker, and ptxas accepts it.
#[test]
fn inline_asm_kernels() {
    let a = ptx_jit::nvptx::arch::validate("sm_90", None).unwrap();
    for p in ptx_jit_tests::ptx_files("ptx-nvptx") {
        let src = std::fs::read_to_string(&p).unwrap();
        let out = ptx_jit::retarget(&src, &a, 3, ptx_jit::nvptx::Emit::Ptx)
            .unwrap_or_else(|d| panic!("{}", ptx_jit::one_line(&d, "f", &src)));
        let (_, d) = ptx_front::parse_and_check(&out);
        assert!(
            d.iter().all(|d| !d.is_error()),
            "{}",
            ptx_jit::one_line(&d, "out.ptx", &out)
        );
        let stem = p.file_stem().unwrap().to_string_lossy().to_string();
        insta::assert_snapshot!(format!("retarget__{stem}__sm90_ptx"), out);
        if let Some(x) = std::env::var_os("PTXAS") {
            ptxas(Path::new(&x), &out, "sm_90", &stem).unwrap_or_else(|e| panic!("{stem}: {e}"));
        }
    }
}
