//! PTX to host code: the loader and its two tiers on LLVM's ORC JIT (`host`), and the IR passes it runs
//! on the lowered module (`addressing`, `guards`, `nan`).

mod addressing;
mod guards;
pub mod host;
mod nan;
