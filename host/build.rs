//! Compiles the CUDA backend in when this machine has the NVIDIA driver (or
//! `SIMT_CUDA=1`); without it the runtime runs everything on the emulator and does
//! not link `libcuda`.
fn main() {
    let cuda = simt_builder::cuda_backend();
    println!("cargo:rustc-env=SIMT_BUILT_WITH_CUDA={}", cuda as u8);
}
