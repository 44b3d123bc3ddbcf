//! Benchmarks live in the `benches` targets of this package.
