//! ZLUDA's execution cases (`../shared/corpus/zluda-run`, see `zluda/mod.rs` for the harness): every
//! case must load and give exactly the expected output.

mod zluda;

use cuda::errors::*;
use cuda::*;
use std::ptr::null_mut;
use zluda::{corpus, run_case, Outcome};

#[test]
fn zluda_run_cases() {
    let Some((root, cases)) = corpus() else { return };
    let (mut pass, mut rejected, mut wrong) = (0, 0, vec![]);
    unsafe {
        assert_eq!(cuInit(0), CUDA_SUCCESS);
        let mut ctx = null_mut();
        assert_eq!(cuCtxCreate_v2(&mut ctx, 0, 0), CUDA_SUCCESS);
        for c in &cases {
            match run_case(&root, c, c["ptx"].as_str().unwrap()) {
                Outcome::Rejected => rejected += 1,
                Outcome::Ran(CUDA_SUCCESS, true) => pass += 1,
                Outcome::Ran(r, _) => wrong.push(format!("{} (launch {r})", c["name"])),
            }
        }
        cuCtxDestroy_v2(ctx);
    }
    eprintln!(
        "zluda-run: {pass} pass, {rejected} rejected as not supported yet, {} wrong",
        wrong.len()
    );
    assert!(wrong.is_empty(), "accepted but wrong: {wrong:?}");
    assert_eq!(rejected, 0, "every case must run");
}

/// The 32-bit-address variants (`.address_size 32`), given the low halves of 64-bit device pointers
/// as ZLUDA's harness would pass them: device memory here lies above 4 GiB, so a kernel that uses
/// such an address must end its launch with `CUDA_ERROR_ILLEGAL_ADDRESS` (never take the process
/// down), and one that does not must give the expected output. Each runs in its own context, since
/// a fault is sticky; the 64-bit case runs correctly in a fresh context afterwards. (Running them
/// would need device memory and module variables placed below 4 GiB.)
#[test]
fn zluda_run_32_bit_variants() {
    let Some((root, cases)) = corpus() else { return };
    let mut outcomes = vec![];
    unsafe {
        assert_eq!(cuInit(0), CUDA_SUCCESS);
        for c in cases.iter().filter(|c| c["ptx_32"].is_string()) {
            let name = c["name"].as_str().unwrap();
            let mut ctx = null_mut();
            assert_eq!(cuCtxCreate_v2(&mut ctx, 0, 0), CUDA_SUCCESS);
            let outcome = match run_case(&root, c, c["ptx_32"].as_str().unwrap()) {
                Outcome::Rejected => "rejected".to_string(),
                Outcome::Ran(CUDA_SUCCESS, true) => "pass".to_string(),
                Outcome::Ran(CUDA_ERROR_ILLEGAL_ADDRESS, _) => "illegal address".to_string(),
                Outcome::Ran(r, right) => panic!("{name} (32-bit): launch {r}, output right: {right}"),
            };
            assert_eq!(cuCtxDestroy_v2(ctx), CUDA_SUCCESS, "{name}");
            assert_eq!(cuCtxCreate_v2(&mut ctx, 0, 0), CUDA_SUCCESS);
            assert!(
                matches!(
                    run_case(&root, c, c["ptx"].as_str().unwrap()),
                    Outcome::Ran(CUDA_SUCCESS, true)
                ),
                "{name}: the 64-bit case after its 32-bit variant"
            );
            cuCtxDestroy_v2(ctx);
            outcomes.push(format!("{name}: {outcome}"));
        }
    }
    eprintln!("zluda-run, 32-bit variants: {outcomes:?}");
    // Every one of the 8 reads or writes its buffers through the parameters.
    let names = [
        "activemask",
        "add",
        "atom_add",
        "atom_add_float",
        "const",
        "extern_shared",
        "global_array",
        "shared_variable",
    ];
    let want: Vec<String> = names.iter().map(|n| format!("{n}: illegal address")).collect();
    assert_eq!(outcomes, want);
}
