//! Names this build for the disk cache (`src/jit/cache.rs`): a new id whenever the sources of the
//! front end, the lowering or the JIT change, so code from another build is never loaded.

fn main() {
    for dir in ["src", "../ptx-llvm/src", "../ptx-front/src"] {
        println!("cargo:rerun-if-changed={dir}");
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    println!("cargo:rustc-env=PTXJIT_BUILD_ID={now:x}");
}
