//! Compiles `kernels/` to PTX (`$OUT_DIR/kernels.ptx`) and writes the typed module
//! `src/lib.rs` includes (`$OUT_DIR/kernels.rs`). All of it is simt-builder's.
fn main() {
    let built = simt_builder::Builder::new("kernels")
        .build()
        .unwrap_or_else(|e| panic!("\n{e}\n"));
    println!("cargo:rustc-env=SIMT_DEVICE_TOOLCHAIN={}", built.toolchain);
}
