//! Pure-Rust emulation of what generated code calls out for: floating point outside the inline forms
//! and conversions (`builtins`), video instructions (`video`), and the warp matrix operations (`mma`,
//! `wmma`, `wgmma`, with `matrix` dispatching the collective's requests), and texture sampling (`texture`). Free of
//! the JIT and the runtime.

pub mod builtins;
pub mod matrix;
pub mod mma;
pub mod texture;
pub mod video;
pub mod wgmma;
pub mod wmma;
