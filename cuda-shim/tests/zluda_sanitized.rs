//! ZLUDA's execution cases under every sanitizer (memcheck, racecheck, initcheck, synccheck): correct
//! kernels, so no finding but the one real bug among them, and still the expected output. (A process
//! of its own: the sanitizers are chosen once per process, from `PTXJIT_SANITIZE`.)

mod zluda;

use cuda::errors::*;
use cuda::*;
use std::ptr::null_mut;
use zluda::{corpus, run_case, Outcome};

#[test]
fn zluda_run_cases_are_clean_under_every_sanitizer() {
    let Some((root, cases)) = corpus() else { return };
    let log = std::env::temp_dir().join(format!("ptx-jit-zluda-sanitized-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&log);
    // Before the first launch reads them; this test is the process's only one.
    std::env::set_var("PTXJIT_SANITIZE", "all");
    std::env::set_var("PTXJIT_SANITIZE_LOG", &log);
    let mut results = vec![];
    unsafe {
        assert_eq!(cuInit(0), CUDA_SUCCESS);
        for c in &cases {
            // Its own context each: a memcheck finding ends its launch, and the error is sticky.
            let mut ctx = null_mut();
            assert_eq!(cuCtxCreate_v2(&mut ctx, 0, 0), CUDA_SUCCESS);
            let outcome = run_case(&root, c, c["ptx"].as_str().unwrap());
            cuCtxDestroy_v2(ctx);
            results.push((c["name"].as_str().unwrap().to_string(), outcome));
        }
    }
    let findings: Vec<(String, String)> = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["kernel"].as_str().unwrap_or("").to_string(),
                v["code"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let _ = std::fs::remove_file(&log);
    // The two real bugs: `block` adds 1 to a register of a nested block that nothing wrote (the
    // linter's P0504), and the 64 threads of `mma_…_2x` each store 32 bytes into a 1,024-byte output.
    let overrun = "mma_m16n8k16_f32_bf16_bf16_f32_2x";
    assert_eq!(
        findings,
        [
            ("block".to_string(), "S0202".to_string()),
            (overrun.to_string(), "S0401".to_string())
        ]
    );
    // memcheck's finding ends that launch; every other case gives its expected output.
    let failed: Vec<&str> = results
        .iter()
        .filter(|(_, o)| !matches!(o, Outcome::Ran(CUDA_SUCCESS, true)))
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(failed, [overrun]);
}
