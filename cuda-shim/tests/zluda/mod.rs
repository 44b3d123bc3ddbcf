//! ZLUDA's execution cases (`../shared/corpus/zluda-run`), run through this driver API exactly as the
//! corpus README describes ZLUDA's harness: zeroed output, input copied in, two pointer parameters,
//! one CTA of `block_x` threads, 1024 bytes of dynamic shared memory, bit-exact comparison (floats as
//! IEEE values). Shared by the tests that run them plainly and under the sanitizers.

use cuda::errors::*;
use cuda::*;
use std::ffi::{c_void, CString};
use std::ptr::null_mut;

fn buffer(v: &serde_json::Value) -> (String, Vec<u8>) {
    let ty = v["type"].as_str().unwrap().to_string();
    let bytes = v["bits"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|b| {
            let h = b.as_str().unwrap().trim_start_matches("0x");
            let n = u64::from_str_radix(h, 16).unwrap();
            n.to_le_bytes()[..h.len() / 2].to_vec()
        })
        .collect();
    (ty, bytes)
}

fn same(ty: &str, got: &[u8], want: &[u8]) -> bool {
    match ty {
        "f32" => got.chunks(4).zip(want.chunks(4)).all(|(g, w)| {
            f32::from_le_bytes(g.try_into().unwrap()) == f32::from_le_bytes(w.try_into().unwrap()) || g == w
        }),
        "f64" => got.chunks(8).zip(want.chunks(8)).all(|(g, w)| {
            f64::from_le_bytes(g.try_into().unwrap()) == f64::from_le_bytes(w.try_into().unwrap()) || g == w
        }),
        // f16 compares as IEEE too; with no NaN in the corpus only ±0 differ from a byte compare.
        "f16" => got
            .chunks(2)
            .zip(want.chunks(2))
            .all(|(g, w)| g == w || (g[0] == 0 && w[0] == 0 && (g[1] | w[1]) == 0x80)),
        _ => got == want,
    }
}

/// The corpus's cases, or `None` (and a message) when the corpus is not beside the checkout.
pub fn corpus() -> Option<(std::path::PathBuf, Vec<serde_json::Value>)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/zluda-run");
    let Ok(json) = std::fs::read_to_string(root.join("cases.json")) else {
        eprintln!("SKIPPED: {} is not here", root.display());
        return None;
    };
    let cases: serde_json::Value = serde_json::from_str(&json).unwrap();
    Some((root, cases.as_array().unwrap().clone()))
}

/// How one case went.
pub enum Outcome {
    /// `cuModuleLoadData` refused the module as not supported.
    Rejected,
    /// The launch's result and whether the output is the expected one.
    Ran(CUresult, bool),
}

/// Runs case `c` from the PTX file `ptx` in the current context as ZLUDA's harness does.
pub unsafe fn run_case(root: &std::path::Path, c: &serde_json::Value, ptx: &str) -> Outcome {
    let name = c["name"].as_str().unwrap();
    let text = std::fs::read_to_string(root.join(ptx)).unwrap();
    let text = CString::new(text).unwrap();
    let mut m = null_mut();
    match cuModuleLoadData(&mut m, text.as_ptr() as *const c_void) {
        CUDA_SUCCESS => {}
        CUDA_ERROR_NOT_SUPPORTED => return Outcome::Rejected,
        e => panic!("{name}: cuModuleLoadData returned {e} for valid PTX"),
    }
    let mut f = null_mut();
    let kname = CString::new(c["kernel"].as_str().unwrap()).unwrap();
    assert_eq!(cuModuleGetFunction(&mut f, m, kname.as_ptr()), CUDA_SUCCESS, "{name}");
    let (ty, want) = buffer(&c["output"]);
    let mut dout = 0u64;
    assert_eq!(cuMemAlloc_v2(&mut dout, want.len()), CUDA_SUCCESS);
    assert_eq!(cuMemsetD8_v2(dout, 0, want.len()), CUDA_SUCCESS);
    let mut din = dout;
    if !c["input"].is_null() {
        let (_, input) = buffer(&c["input"]);
        assert_eq!(cuMemAlloc_v2(&mut din, input.len()), CUDA_SUCCESS);
        assert_eq!(
            cuMemcpyHtoD_v2(din, input.as_ptr() as *const c_void, input.len()),
            CUDA_SUCCESS
        );
    }
    // Two pointer parameters; a 32-bit variant's `.u32` parameters take each pointer's low half.
    let mut args = [
        &mut din as *mut u64 as *mut c_void,
        &mut dout as *mut u64 as *mut c_void,
    ];
    let block = c["block_x"].as_u64().unwrap() as u32;
    let r = cuLaunchKernel(f, 1, 1, 1, block, 1, 1, 1024, null_mut(), args.as_mut_ptr(), null_mut());
    let r = if r == CUDA_SUCCESS { cuCtxSynchronize() } else { r };
    let mut got = vec![0u8; want.len()];
    let copied = cuMemcpyDtoH_v2(got.as_mut_ptr() as *mut c_void, dout, got.len());
    let right = copied == CUDA_SUCCESS && same(&ty, &got, &want);
    cuMemFree_v2(dout);
    if din != dout {
        cuMemFree_v2(din);
    }
    cuModuleUnload(m);
    Outcome::Ran(r, right)
}
