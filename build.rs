//! Compiles `kernels/` to two PTX modules and writes the typed modules `src/lib.rs`
//! includes: the portable one (`$OUT_DIR/kernels.{ptx,rs}`, sm_80, every GPU since
//! the A100) and the Hopper one (`$OUT_DIR/kernels_sm90a.{ptx,rs}`: the wgmma and TMA
//! kernels, which `cfg(simt_target = "sm_90a")` keeps out of the other). All of it
//! is simt-builder's.
include!("kernels/src/spill_allowance.rs");

fn main() {
    let mut portable = simt_builder::Builder::new("kernels");
    let mut hopper = simt_builder::Builder::new("kernels")
        .name("kernels_sm90a")
        .target_cpu("sm_90a");
    for &(kernel, bytes) in SPILL_ALLOWANCE {
        portable = portable.allow_spills(kernel, bytes);
        hopper = hopper.allow_spills(kernel, bytes);
    }
    let built = portable.build().unwrap_or_else(|e| panic!("\n{e}\n"));
    hopper.build().unwrap_or_else(|e| panic!("\n{e}\n"));
    println!("cargo:rustc-env=SIMT_DEVICE_TOOLCHAIN={}", built.toolchain);
}
