//! Compiles the CUDA backend in when this machine has the NVIDIA driver (or
//! `SIMT_CUDA=1`); without it the runtime runs everything on the emulator and does
//! not link `libcuda`.
fn main() {
    simt_builder::cuda_backend();
}
