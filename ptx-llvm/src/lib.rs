//! ptx-llvm: a checked PTX module to LLVM IR. One translator, two flavours:
//! - `Flavour::Nvvm`: the nvptx64 triple, address spaces 1/3/4/5, NVVM intrinsics, `ptx_kernel` kernels;
//! - `Flavour::Host`: flat pointers, a per-thread environment argument, one block entry per kernel that
//!   loops over the threads of a CTA.

mod lower;

pub use lower::{lower, lower_with, Exec, KernelInfo, Lowered, Options, ParamInfo, HOST_ENV_FIELDS};

/// What a host kernel asks of the runtime through `env->collective(env->sync, kind, a, b, c)`.
/// These are the operations that need other threads: CTA barriers and warp collectives.
pub mod collective {
    pub const BAR_SYNC: u32 = 0;
    pub const WARP_SYNC: u32 = 1;
    /// `shfl` modes: `SHFL + 0..4` for up, down, bfly, idx; the result is `value | valid << 32`.
    pub const SHFL: u32 = 2;
    /// `vote` modes: `VOTE + 0..4` for all, any, uni, ballot.
    pub const VOTE: u32 = 6;
}

/// The states a thread body cut into regions returns (see `Exec::Regions`): `k | WAIT` when it stopped
/// at stop number k (1-based), with `WARP` when that is a warp collective rather than a CTA barrier;
/// `DONE` when it finished. A region starts from state 0 or a stop's `k | WARP?` value.
pub mod regions {
    pub const DONE: u32 = u32::MAX;
    pub const WAIT: u32 = 1 << 31;
    pub const WARP: u32 = 1 << 30;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    Nvvm,
    Host,
}
