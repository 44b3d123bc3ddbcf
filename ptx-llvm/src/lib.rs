//! ptx-llvm: a checked PTX module to LLVM IR. One translator, two flavours:
//! - `Flavour::Nvvm`: the nvptx64 triple, address spaces 1/3/4/5, NVVM intrinsics, `ptx_kernel` kernels;
//! - `Flavour::Host`: flat pointers, a per-thread environment argument, one block entry per kernel that
//!   loops over the threads of a CTA.

pub mod abi;
pub mod ir;
mod lower;

pub use abi::{builtin, collective, regions, TID_METADATA};

pub use lower::{lower, lower_kernel, lower_with, undefined_function, Exec, KernelInfo, Lowered, Options, ParamInfo};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    Nvvm,
    Host,
}
