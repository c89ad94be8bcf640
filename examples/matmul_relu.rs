//! The lecture's `matmul` section: `cargo run --release --example matmul_relu`.
//! Runs on the GPU when there is one, on the CPU SIMT emulator otherwise
//! (`SIMT_BACKEND=emulator` forces it).
fn main() {
    rust_simt::demo::run_section(|d| d.matmul());
}
