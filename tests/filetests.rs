//! File-driven tests: every `.ptx` under `tests/ptx` and `tests/ptx-errors` is checked against its own
//! directives (see lib.rs). Prints one line per file and fails if any file fails.

use ptx_jit_tests::*;

fn check_file(path: &std::path::Path) -> Result<String, String> {
    let src = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let d = directives(&src)?;
    let (_, diags) = ptx_front::parse_and_check(&src);
    let found = |errors: bool| {
        let mut v: Vec<(String, usize)> = diags
            .iter()
            .filter(|x| x.is_error() == errors)
            .map(|x| (x.code.as_str().to_string(), line_of(&src, x.span.start)))
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let mut what = vec![];
    for (kind, mut want, check) in [
        ("error", d.errors.clone(), true),
        ("warning", d.warnings.clone(), !d.warnings.is_empty()),
    ] {
        if !check {
            continue;
        }
        want.sort();
        let got = found(kind == "error");
        if got != want {
            return Err(format!(
                "{kind}s {got:?}, expected {want:?}\n{}",
                ptx_jit::one_line(&diags, "f", &src)
            ));
        }
        if !want.is_empty() {
            what.push(format!("{} {kind}(s) as expected", want.len()));
        }
    }
    if let (Some(r), Some(tools)) = (&d.run, &d.sanitize) {
        let got = sanitize_run(&src, r, tools)?;
        let mut want: Vec<(String, Vec<usize>)> = d
            .reports
            .iter()
            .map(|(k, l)| {
                (k.clone(), {
                    let mut l = l.clone();
                    l.sort();
                    l
                })
            })
            .collect();
        want.sort();
        if got != want {
            return Err(format!("{tools} reported {got:?}, expected {want:?}"));
        }
        what.push(format!("{tools}: {} finding(s) as expected", want.len()));
    }
    if let Some(r) = &d.run {
        if d.outs.is_empty() {
            if d.sanitize.is_some() {
                return if what.is_empty() {
                    Err("no directives".into())
                } else {
                    Ok(what.join("; "))
                };
            }
            return Err("`run:` without any `out:`".into());
        }
        let (bufs, exec) = run_with(&src, r, ptx_jit::Options::default())?;
        if let Some(want) = &d.exec {
            if exec_name(exec) != want {
                return Err(format!("ran as {}, expected {want}", exec_name(exec)));
            }
        }
        let mut runs = vec![(exec_name(exec), bufs)];
        // A kernel cut into regions must agree with the general fiber execution.
        if matches!(exec, ptx_jit::Exec::Regions { .. }) {
            let (bufs, _) = run_with(
                &src,
                r,
                ptx_jit::Options {
                    regions: false,
                    ..Default::default()
                },
            )?;
            runs.push(("fibers", bufs));
        }
        // Regions run for groups of threads must agree with the same regions run thread by thread.
        if matches!(exec, ptx_jit::Exec::Regions { lanes: 1.., .. }) {
            let (bufs, _) = run_with(
                &src,
                r,
                ptx_jit::Options {
                    lanes: false,
                    ..Default::default()
                },
            )?;
            runs.push(("regions", bufs));
        }
        for (how, bufs) in &runs {
            for (n, e, w) in &d.outs {
                let got = bufs.get(*n).ok_or_else(|| format!("no argument {n}"))?;
                compare(*e, got, w).map_err(|m| format!("arg{n} ({how}): {m}"))?;
            }
        }
        // No sanitizer finds anything in a correct kernel (one with `sanitize:` says what they find).
        if d.sanitize.is_none() {
            let found = sanitize_run(&src, r, "all")?;
            if !found.is_empty() {
                return Err(format!(
                    "sanitizers (all) reported {found:?} in a kernel that should be clean"
                ));
            }
        }
        let hows: Vec<&str> = runs.iter().map(|r| r.0).collect();
        what.push(format!(
            "ran {} ({}), {} buffer(s) verified",
            r.kernel,
            hows.join(" and "),
            d.outs.len()
        ));
    }
    if what.is_empty() {
        return Err("no directives: a test must say what it checks".into());
    }
    Ok(what.join("; "))
}

fn main() {
    let mut failed = 0;
    let mut total = 0;
    // ptx-host holds kernels that only the CPU backend can take (no NVPTX snapshot or ptxas run);
    // gpu/probes holds corner cases whose expected values are an H100's.
    for dir in ["ptx", "ptx-errors", "ptx-host", "gpu/probes", "sanitize"] {
        for p in ptx_files(dir) {
            let name = format!("{dir}/{}", p.file_name().unwrap().to_string_lossy());
            if dir == "gpu/probes" && !std::fs::read_to_string(&p).is_ok_and(|s| s.contains("\n// out:")) {
                // A probe the CPU does not match on purpose (its comments say why) has no expected values.
                println!("skip  {name}: no `out:` (the GPU's answer is recorded in its comments)");
                continue;
            }
            total += 1;
            match check_file(&p) {
                Ok(m) => println!("ok    {name}: {m}"),
                Err(m) => {
                    failed += 1;
                    println!("FAIL  {name}: {m}");
                }
            }
        }
    }
    println!("\n{} of {total} file tests passed", total - failed);
    if failed > 0 || total == 0 {
        std::process::exit(1);
    }
}
