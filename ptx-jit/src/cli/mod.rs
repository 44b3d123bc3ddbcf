//! The library side of the CLI: argument forms shared with tests (`args`), the benchmarks (`bench`)
//! and the ISA coverage table (`coverage`).

pub mod args;
pub mod bench;
pub mod coverage;
