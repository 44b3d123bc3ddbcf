fn main() {
    // Clients dlopen "libcuda.so.1"; the linker records this name in programs linked with -lcuda.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so.1");
}
