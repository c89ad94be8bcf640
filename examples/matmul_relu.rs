//! The lecture's `matmul` section: `cargo run --release --example matmul_relu`.
//! Runs on the GPU when there is one, on the CPU SIMT emulator otherwise
//! (`SIMT_BACKEND=emulator` forces it).
fn main() {
    let run = || -> rust_simt::Result<()> {
        let gpu = rust_simt::Gpu::new()?;
        println!("{}", gpu.describe());
        rust_simt::demo::Demo::new(&gpu)?.matmul()
    };
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
