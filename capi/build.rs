//! Gives the shared library its SONAME, `libidemkit.so.<ABI>`, so that programs linked against
//! it load an ABI-compatible library (and not a later, incompatible one) at run time.

/// The ABI version: raise it with any change to `include/idemkit.h` that breaks a program
/// compiled against the earlier header (a changed signature or struct layout, a removed
/// function). Adding functions, or fields at the end of a struct that carries its size,
/// does not break one.
const ABI_VERSION: u32 = 0;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" || os == "android" || os.ends_with("bsd") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libidemkit.so.{ABI_VERSION}");
    }
}
