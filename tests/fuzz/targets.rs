//! The `parse`, `lower` and `fatbin` targets: one input each, `Err` for a broken invariant (a panic is
//! caught by the caller).

use cuda::errors::*;
use cuda::fatbin::{self, image, FLAG_LZ4, FLAG_ZSTD, KIND_ELF, KIND_PTX};
use ptx_front::printer::shape;
use std::ffi::c_void;
use std::ptr::null_mut;

/// Diagnostics rendered per input: past a few hundred, rendering only costs time.
const RENDERED: usize = 200;

/// Parse, check, render diagnostics every way, and the `fmt` round trip. `Ok(true)`: checked clean.
pub fn parse(data: &[u8]) -> Result<bool, String> {
    let src = String::from_utf8_lossy(data);
    let (_, diags) = ptx_front::parse_and_check(&src);
    let shown = &diags[..diags.len().min(RENDERED)];
    let idx = ptx_front::span::LineIndex::new(&src);
    for d in shown {
        let _ = d.render("fuzz.ptx", &src, false);
        let _ = d.one_line("fuzz.ptx", &src);
        let _ = ptx_front::report::json(d, "fuzz.ptx", &idx).to_string();
    }
    let _ = ptx_front::Diagnostic::render_all(shown, "fuzz.ptx", &src, true);
    let _ = ptx_front::report::sarif(&[("fuzz.ptx".into(), src.to_string(), shown.to_vec())]).to_string();
    let clean = !diags.iter().any(|d| d.is_error());
    let (_, fragment) = ptx_front::parse_and_check_fragment(&src);
    for d in fragment.iter().take(RENDERED) {
        let _ = d.render("fuzz.ptx", &src, false);
    }
    round_trip(&src, false)?;
    round_trip(&src, true)?;
    outline(&src, clean)?;
    Ok(clean)
}

/// Lazy loading's outline: any text outlines; a text the checker accepts has a complete outline that
/// finds its kernels, and its variables' part and each kernel's part are accepted too.
fn outline(src: &str, clean: bool) -> Result<(), String> {
    let o = ptx_front::outline::Outline::new(src);
    if !clean {
        return Ok(());
    }
    if !o.complete {
        return Err("the outline of a text the checker accepts is incomplete".into());
    }
    let (m, _) = ptx_front::parse(src);
    let entries = m.items.iter().filter(|i| {
        matches!(i, ptx_front::ast::Item::Function(f) if f.kind == ptx_front::ast::FnKind::Entry && f.body.is_some())
    });
    if entries.count() != o.kernels(src).count() {
        return Err("the outline's kernels are not the module's".into());
    }
    let (_, d) = ptx_front::parse_and_check_parts(src, &o.variables_part(src), &Default::default());
    if let Some(e) = d.iter().find(|d| d.is_error()) {
        return Err(format!("the variables' part: {}", e.one_line("fuzz.ptx", src)));
    }
    for (item, name) in o.kernels(src) {
        let parts = o.part(src, [item]);
        let (_, d) = ptx_front::parse_and_check_parts(src, &parts, &Default::default());
        if let Some(e) = d.iter().find(|d| d.is_error()) {
            return Err(format!("kernel `{name}`'s part: {}", e.one_line("fuzz.ptx", src)));
        }
    }
    Ok(())
}

/// `ptx-jit fmt`: text that parses without a diagnostic prints to text that parses to the same tree
/// and prints the same again.
fn round_trip(src: &str, fragment: bool) -> Result<(), String> {
    let parse = if fragment {
        ptx_front::parse_fragment
    } else {
        ptx_front::parse
    };
    let mode = if fragment { "fmt --fragment" } else { "fmt" };
    let (m, d) = parse(src);
    if !d.is_empty() {
        return Ok(());
    }
    let printed = ptx_front::print(&m);
    let (again, d2) = parse(&printed);
    if let Some(e) = d2.first() {
        return Err(format!(
            "{mode} output does not parse: {}",
            e.one_line("printed", &printed)
        ));
    }
    if shape(&again) != shape(&m) {
        return Err(format!("{mode} output parses to a different tree"));
    }
    if ptx_front::print(&again) != printed {
        return Err(format!("{mode} is not idempotent"));
    }
    Ok(())
}

/// Targets for the NVPTX back end (each validated before LLVM sees it).
const ARCHS: &[(&str, Option<&str>)] = &[
    ("sm_52", None),
    ("sm_70", None),
    ("sm_80", None),
    ("sm_90", None),
    ("sm_90a", None),
    ("sm_80", Some("7.0")),
    ("sm_75", Some("8.5")),
];

/// Inputs that check clean: host IR (sometimes optimised, sometimes compiled to machine code) and
/// NVPTX code. Which variants run depends on the input's hash, so a replay does the same.
pub fn lower(data: &[u8]) -> Result<bool, String> {
    let src = String::from_utf8_lossy(data);
    let Ok((m, _)) = ptx_jit::front(&src) else {
        return Ok(false);
    };
    let h = crate::splitmix(crate::fnv(data));
    let _ = ptx_jit::jit::host::host_ir(&m, h & 1 != 0);
    if h & 6 == 0 {
        let _ = ptx_jit::jit::host::compile(&m);
    }
    let (arch, version) = ARCHS[(h >> 3) as usize % ARCHS.len()];
    if let Ok(arch) = ptx_jit::nvptx::arch::validate(arch, version) {
        // Code generation to PTX text: where LLVM aborts on what it cannot select or print.
        let _ = ptx_jit::nvptx::emit(&m, &arch, ((h >> 9) % 4) as u8, ptx_jit::nvptx::Emit::Ptx);
    }
    Ok(true)
}

// ---- fat binaries --------------------------------------------------------------------------------

/// Seed images from small PTX files: plain, LZ4 and zstd entries, several sms, cubins beside PTX.
pub fn fatbin_seeds(ptx: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut small: Vec<&Vec<u8>> = ptx.iter().filter(|p| p.len() < 4096).collect();
    small.sort_by_key(|p| p.len());
    small.truncate(12);
    let mut out = vec![];
    for p in small {
        let mut text = p.clone();
        text.push(0);
        let lz4 = lz4_flex::block::compress(&text);
        let zstd = zstd::bulk::compress(&text[..], 1).expect("compresses");
        let n = text.len() as u64;
        out.push(image(&[(KIND_PTX, 52, 0x11, &text, 0)]));
        out.push(image(&[(KIND_PTX, 75, 0x11 | FLAG_LZ4, &lz4, n)]));
        out.push(image(&[(KIND_PTX, 80, 0x11 | FLAG_ZSTD, &zstd, n)]));
        out.push(image(&[
            (KIND_ELF, 75, 0x11, b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0", 0),
            (KIND_PTX, 70, 0x11 | FLAG_LZ4, &lz4, n),
            (KIND_PTX, 90, 0x11, &text, 0),
        ]));
    }
    out
}

/// The device context the `fatbin` target loads modules in (made once per process).
fn context() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| unsafe {
        assert_eq!(cuda::cuInit(0), CUDA_SUCCESS);
        let mut ctx = null_mut();
        assert_eq!(cuda::cuCtxCreate_v2(&mut ctx, 0, 0), CUDA_SUCCESS);
    });
}

/// The reader on the bytes (entries, every payload, the best PTX for several devices), then, when the
/// header's extent lies inside the input, the driver's loaders on it (which trust that extent: an
/// image has no length). `Ok(true)`: some PTX came out.
pub fn fatbin(data: &[u8]) -> Result<bool, String> {
    if let Ok(all) = fatbin::entries(data) {
        for e in all.iter().take(64) {
            let _ = fatbin::payload(data, e);
        }
    }
    let mut found = false;
    for sm in [0, 52, 75, 86, 90, u32::MAX] {
        found |= fatbin::best_ptx(data, sm).is_ok();
    }
    let field = |o: usize, n: usize| data[o..o + n].iter().rev().fold(0u64, |v, &b| v << 8 | b as u64);
    let fits = data.len() >= 16
        && field(0, 4) == fatbin::FATBIN_MAGIC as u64
        && field(6, 2)
            .checked_add(field(8, 8))
            .is_some_and(|e| e <= data.len() as u64);
    if fits {
        context();
        // 8-aligned, with a NUL-padded tail.
        let mut buf = vec![0u64; data.len().div_ceil(8) + 8];
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf.as_mut_ptr() as *mut u8, data.len()) };
        let image = buf.as_ptr() as *const c_void;
        unsafe {
            let mut m = null_mut();
            let r = cuda::cuModuleLoadData(&mut m, image);
            check(r, "cuModuleLoadData")?;
            if r == CUDA_SUCCESS {
                cuda::cuModuleUnload(m);
            }
            let r = cuda::library::cuModuleLoadFatBinary(&mut m, image);
            check(r, "cuModuleLoadFatBinary")?;
            if r == CUDA_SUCCESS {
                cuda::cuModuleUnload(m);
            }
            let mut lib = null_mut();
            let r =
                cuda::library::cuLibraryLoadData(&mut lib, image, null_mut(), null_mut(), 0, null_mut(), null_mut(), 0);
            check(r, "cuLibraryLoadData")?;
            if r == CUDA_SUCCESS {
                cuda::library::cuLibraryUnload(lib);
            }
        }
    }
    Ok(found)
}

/// `CUDA_ERROR_UNKNOWN` is what the driver API returns for a panic it caught.
pub fn check(r: CUresult, call: &str) -> Result<(), String> {
    if r == CUDA_ERROR_UNKNOWN {
        Err(format!("{call} returned CUDA_ERROR_UNKNOWN"))
    } else {
        Ok(())
    }
}
