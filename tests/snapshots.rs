//! Snapshot tests (insta): host-flavour LLVM IR and NVPTX output for every runnable test kernel, and the
//! rendered diagnostics of every error test. Review changes with `cargo insta review`.

use ptx_jit_tests::ptx_files;

fn snapshot_name(p: &std::path::Path, what: &str) -> String {
    format!("{}__{what}", p.file_stem().unwrap().to_string_lossy())
}

#[test]
fn host_ir() {
    for p in ptx_files("ptx") {
        let src = std::fs::read_to_string(&p).unwrap();
        let (m, _) = ptx_jit::front(&src).unwrap_or_else(|d| panic!("{}", ptx_jit::one_line(&d, "f", &src)));
        let ir =
            ptx_jit::jit::host::host_ir(&m, false).unwrap_or_else(|d| panic!("{}", ptx_jit::one_line(&d, "f", &src)));
        insta::assert_snapshot!(snapshot_name(&p, "host_ll"), ir);
    }
}

#[test]
fn nvptx_sm80() {
    let arch = ptx_jit::nvptx::arch::validate("sm_80", Some("7.0")).unwrap();
    for p in ptx_files("ptx") {
        let src = std::fs::read_to_string(&p).unwrap();
        let ptx = ptx_jit::retarget(&src, &arch, 3, ptx_jit::nvptx::Emit::Ptx)
            .unwrap_or_else(|d| panic!("{}", ptx_jit::one_line(&d, "f", &src)));
        insta::assert_snapshot!(snapshot_name(&p, "sm80_ptx"), ptx);
    }
}

#[test]
fn diagnostics() {
    for p in ptx_files("ptx-errors") {
        let src = std::fs::read_to_string(&p).unwrap();
        let (_, diags) = ptx_front::parse_and_check(&src);
        let name = format!("ptx-errors/{}", p.file_name().unwrap().to_string_lossy());
        let text: String = diags.iter().map(|d| d.render(&name, &src, false)).collect();
        insta::assert_snapshot!(snapshot_name(&p, "diagnostics"), text);
    }
}

/// `p` retargeted for `sm`; `None` only where the file's own `.target` is newer than `sm` and
/// retargeting refuses (it uses what `sm` lacks, `cp.async` below sm_80, say).
fn retarget_down(p: &std::path::Path, arch: &ptx_jit::nvptx::arch::Arch, sm: &str) -> Option<String> {
    let src = std::fs::read_to_string(p).unwrap();
    let own: u32 = src
        .split(".target sm_")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    match ptx_jit::retarget(&src, arch, 3, ptx_jit::nvptx::Emit::Ptx) {
        Ok(out) => Some(out),
        Err(_) if own > sm[3..].parse().unwrap() => None,
        Err(e) => panic!("{} for {sm}: {e:?}", p.display()),
    }
}

/// Our own NVPTX output must parse and check cleanly with our own front end.
#[test]
fn emitted_ptx_lints_clean() {
    for sm in ["sm_75", "sm_80", "sm_90", "sm_120"] {
        let arch = ptx_jit::nvptx::arch::validate(sm, None).unwrap();
        for p in ptx_files("ptx") {
            let Some(out) = retarget_down(&p, &arch, sm) else {
                continue;
            };
            let (_, d) = ptx_front::parse_and_check(&out);
            assert!(
                d.is_empty(),
                "{} for {sm}:\n{}",
                p.display(),
                ptx_jit::one_line(&d, "out.ptx", &out)
            );
        }
    }
}

/// NVIDIA's ptxas (from the PyPI wheel; `make test` sets PTXAS) accepts what we emit.
#[test]
fn ptxas_accepts_emitted_ptx() {
    let Some(ptxas) = std::env::var_os("PTXAS") else {
        eprintln!("SKIPPED: PTXAS is not set (make test sets it to the venv's ptxas)");
        return;
    };
    let dir = tempfile_dir();
    for sm in ["sm_75", "sm_80", "sm_90", "sm_120"] {
        let arch = ptx_jit::nvptx::arch::validate(sm, None).unwrap();
        for p in ptx_files("ptx") {
            let Some(out) = retarget_down(&p, &arch, sm) else {
                continue;
            };
            let f = dir.join(format!("{}_{sm}.ptx", p.file_stem().unwrap().to_string_lossy()));
            std::fs::write(&f, &out).unwrap();
            let o = std::process::Command::new(&ptxas)
                .arg(format!("-arch={sm}"))
                .arg(&f)
                .arg("-o")
                .arg(f.with_extension("cubin"))
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "ptxas -arch={sm} {}:\n{}",
                p.display(),
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
}

fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("ptx-jit-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The backend's diagnostics, rendered: P0402 for an instruction the requested target cannot run,
/// P0401 for valid PTX the host backend does not lower yet, P0404 for a call nothing defines.
#[test]
fn backend_diagnostics() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(dir.join("ptx/warp_collectives.ptx")).unwrap();
    let arch = ptx_jit::nvptx::arch::validate("sm_20", None).unwrap();
    let diags = ptx_jit::retarget(&src, &arch, 3, ptx_jit::nvptx::Emit::Ptx).unwrap_err();
    let mut text: String = diags
        .iter()
        .take(1)
        .map(|d| d.render("warp_collectives.ptx", &src, false))
        .collect();
    let unsupported = ".version 8.5\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 t)\n{\n\t.reg .b64 %rd<2>;\n\t.reg .pred %p;\n\tld.param.u64 %rd1, [t];\n\tistypep.texref %p, %rd1;\n\tret;\n}\n";
    let (m, _) = ptx_jit::front(unsupported).unwrap();
    let diags = ptx_jit::jit::host::host_ir(&m, false).unwrap_err();
    text.extend(diags.iter().map(|d| d.render("unsupported.ptx", unsupported, false)));
    // A call of a function that no module defines (it would bind to the C library's `abort`).
    let unlinked = ".version 8.5\n.target sm_80\n.address_size 64\n.extern .func abort ();\n.visible .entry k()\n{\n\tcall.uni abort, ();\n\tret;\n}\n";
    let (m, _) = ptx_jit::front(unlinked).unwrap();
    let diags = ptx_jit::jit::host::host_ir(&m, false).unwrap_err();
    text.extend(diags.iter().map(|d| d.render("unlinked.ptx", unlinked, false)));
    // Module variables beyond the device's memory (host-dependent, so the limit is redacted).
    let huge = ".version 8.5\n.target sm_90\n.address_size 64\n.global .align 8 .b8 table[1099511627776];\n";
    let (m, _) = ptx_jit::front(huge).unwrap();
    let diags = ptx_jit::jit::host::compile(&m).err().unwrap();
    let limit = ptx_jit::device::device_memory().to_string();
    text.extend(
        diags
            .iter()
            .map(|d| d.render("huge.ptx", huge, false).replace(&limit, "<device memory>")),
    );
    // An impossible (target, version) pair, as `ptx-jit compile` reports it.
    text.push_str(&format!(
        "error[P0402]: {}\n",
        ptx_jit::nvptx::arch::validate("sm_90", Some("7.0")).unwrap_err()
    ));
    insta::assert_snapshot!("backend__diagnostics", text);
}

/// Every diagnostic code has a rendered example among the snapshots.
#[test]
fn every_code_has_a_snapshot() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots");
    let all: String = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("diagnostics"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let missing: Vec<_> = ptx_front::Code::ALL
        .iter()
        .filter(|c| !all.contains(&format!("[{}]", c.as_str())))
        .collect();
    assert!(missing.is_empty(), "codes without a rendered snapshot: {missing:?}");
}
