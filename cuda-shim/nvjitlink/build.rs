fn main() {
    // Clients load "libnvJitLink.so.13", and programs linked with -lnvJitLink record this name.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnvJitLink.so.13");
}
