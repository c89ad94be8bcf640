//! The lecture's `row_sum` section: `cargo run --release --example row_sum`.
//! Runs on the GPU when there is one, on the CPU SIMT emulator otherwise
//! (`SIMT_BACKEND=emulator` forces it).
fn main() {
    let run = || -> rust_simt::Result<()> {
        let gpu = rust_simt::Gpu::new()?;
        println!("{}", gpu.describe());
        rust_simt::demo::Demo::new(&gpu)?.row_sum()
    };
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
