//! PTX to host code: the loader and its two tiers on LLVM's ORC JIT (`host`), the IR passes it runs
//! on each kernel's lowered module, in the order `pipeline` lists them, and the compile cache on disk
//! (`cache`).

mod addressing;
pub mod cache;
mod guards;
pub mod host;
pub mod large;
mod nan;
pub mod pipeline;
