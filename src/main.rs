//! The lecture walk-through: `cargo run --release`.
//!
//! The device, occupancy, then GeLU, softmax, row sum and matmul + ReLU, each
//! checked against float64 and timed, then benchmarking and profiling. Runs on the
//! GPU when there is one, otherwise on the CPU SIMT emulator, and says which.
fn main() {
    let run = || -> rust_simt::Result<()> {
        let gpu = rust_simt::gpu()?;
        println!("rust-simt: GPU kernels written in Rust, SIMT style ({} kernels in one PTX module, built by {} for {})", rust_simt::profile::kernel_names().len(), env!("SIMT_DEVICE_TOOLCHAIN"), rust_simt::ptx::MODULE.target());
        println!("{}\n", gpu.describe());
        let mut d = rust_simt::demo::Demo::new(&gpu)?;
        d.gpu_info()?;
        d.gelu()?;
        d.softmax()?;
        d.row_sum()?;
        d.matmul()?;
        d.tensor_cores()?;
        d.benchmarking()?;
        d.profiling()?;
        if gpu.kind() == rust_simt::BackendKind::Emulator {
            println!("Ran on the CPU SIMT emulator: every kernel above is the real kernel source, checked against float64;");
            println!("timings are CPU times. On a GPU machine, `cargo run --release` (or bundle/bin/rust-simt) runs the same on the GPU.");
        }
        Ok(())
    };
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
