//! The ABI's LLVM structs, laid out by LLVM for this host, against `offset_of!` of the `repr(C)`
//! structs the runtime uses: one field list, and proof that both sides read it alike.

use super::abi_struct;
use crate::abi::{Env, EnvField, Steps, StepsField};
use inkwell::context::Context;
use inkwell::targets::{InitializationConfig, Target, TargetMachine};
use std::mem::{offset_of, size_of};

fn host_layout() -> inkwell::targets::TargetData {
    Target::initialize_native(&InitializationConfig::default()).expect("native target");
    let triple = TargetMachine::get_default_triple();
    let target = Target::from_triple(&triple).expect("host target");
    let tm = target
        .create_target_machine(
            &triple,
            "generic",
            "",
            inkwell::OptimizationLevel::None,
            inkwell::targets::RelocMode::Default,
            inkwell::targets::CodeModel::Default,
        )
        .expect("target machine");
    tm.get_target_data()
}

#[test]
fn env_fields_match_the_runtime_struct() {
    let ctx = Context::create();
    let t = abi_struct(&ctx, EnvField::ALL.iter().map(|&(_, t)| t));
    let td = host_layout();
    let rust = [
        offset_of!(Env, params),
        offset_of!(Env, shared),
        offset_of!(Env, tid),
        offset_of!(Env, ntid),
        offset_of!(Env, ctaid),
        offset_of!(Env, nctaid),
        offset_of!(Env, sync),
        offset_of!(Env, collective),
        offset_of!(Env, dynamic_shared),
        offset_of!(Env, smid),
        offset_of!(Env, nsmid),
        offset_of!(Env, gridid),
        offset_of!(Env, fault),
        offset_of!(Env, ctas),
        offset_of!(Env, written),
        offset_of!(Env, grid_workspace),
        offset_of!(Env, cluster),
        offset_of!(Env, cluster_dim),
        offset_of!(Env, cluster_shared),
    ];
    for (i, &(f, _)) in EnvField::ALL.iter().enumerate() {
        assert_eq!(f.index() as usize, i, "{f:?} out of order");
        assert_eq!(td.offset_of_element(&t, f.index()), Some(rust[i] as u64), "{f:?}");
    }
    assert_eq!(td.get_abi_size(&t), size_of::<Env>() as u64);
}

#[test]
fn steps_fields_match_the_runtime_struct() {
    let ctx = Context::create();
    let t = abi_struct(&ctx, StepsField::ALL.iter().map(|&(_, t)| t));
    let td = host_layout();
    let rust = [
        offset_of!(Steps, states),
        offset_of!(Steps, frames),
        offset_of!(Steps, state),
        offset_of!(Steps, masked),
        offset_of!(Steps, or),
        offset_of!(Steps, and),
        offset_of!(Steps, cur),
        offset_of!(Steps, slots),
        offset_of!(Steps, args),
        offset_of!(Steps, parity),
    ];
    for (i, &(f, _)) in StepsField::ALL.iter().enumerate() {
        assert_eq!(f.index() as usize, i, "{f:?} out of order");
        assert_eq!(td.offset_of_element(&t, f.index()), Some(rust[i] as u64), "{f:?}");
    }
    assert_eq!(td.get_abi_size(&t), size_of::<Steps>() as u64);
}

#[test]
fn tensor_args_words_match_the_runtime_struct() {
    use crate::abi::TensorArgs as T;
    assert_eq!(offset_of!(T, shared), 8 * T::SHARED as usize);
    assert_eq!(offset_of!(T, map), 8 * T::MAP as usize);
    assert_eq!(offset_of!(T, mbar), 8 * T::MBAR as usize);
    assert_eq!(offset_of!(T, window), 8 * T::WINDOW as usize);
    assert_eq!(offset_of!(T, coords), 8 * T::COORDS as usize);
    assert_eq!(offset_of!(T, multicast), 8 * T::MULTICAST as usize);
    assert_eq!(size_of::<T>(), 8 * T::WORDS as usize);
}

#[test]
fn wgmma_head_words_match_the_runtime_struct() {
    use crate::abi::WgmmaHead as T;
    assert_eq!(offset_of!(T, form), 8 * T::FORM as usize);
    assert_eq!(offset_of!(T, env), 8 * T::ENV as usize);
    assert_eq!(offset_of!(T, a_desc), 8 * T::A_DESC as usize);
    assert_eq!(offset_of!(T, b_desc), 8 * T::B_DESC as usize);
    assert_eq!(offset_of!(T, window), 8 * T::WINDOW as usize);
    assert_eq!(offset_of!(T, flags), 8 * T::FLAGS as usize);
    assert_eq!(offset_of!(T, rank), 8 * T::RANK as usize);
    assert_eq!(offset_of!(T, site), 8 * T::SITE as usize);
    assert_eq!(size_of::<T>(), 8 * T::WORDS as usize);
}
