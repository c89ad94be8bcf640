//! The lecture's GeLU section through the API: `cargo run --release --example gelu`.
//!
//! Allocate, upload, launch the naive composition (7 kernels) and the fused kernel,
//! check both against float64, count the launches, time both. Runs on the GPU when
//! there is one, on the CPU SIMT emulator otherwise (`SIMT_BACKEND=emulator` forces it).
use rust_simt::ops::gelu::{gelu, gelu_naive};
use rust_simt::{reference, Gpu, Result};

fn main() -> Result<()> {
    let gpu: Gpu = rust_simt::gpu()?; // from the environment, lecture module loaded
    println!("{}", gpu.describe());
    let n = if rust_simt::full_size(&gpu) {
        1 << 24
    } else {
        1 << 16
    };
    let x: Vec<f32> = (0..n)
        .map(|i| ((i * 2654435761usize) % 12001) as f32 / 1000.0 - 6.0)
        .collect();
    let xb = gpu.upload(&x)?;
    let mut y = gpu.upload(&vec![f32::NAN; n])?; // poisoned: an unwritten element fails the check
    let mut tmp = gpu.alloc::<f32>(n)?;
    let want = reference::gelu_tanh(&x);

    let (_, naive_launches) = gpu.profile(|| gelu_naive(&gpu, &xb, &mut y, &mut tmp))?;
    let naive_err = reference::rel_err(&gpu.download(&y)?, &want);
    gpu.write(&mut y, &vec![f32::NAN; n])?;
    let (_, fused_launches) = gpu.profile(|| gelu(&gpu, &xb, &mut y))?;
    let fused_err = reference::rel_err(&gpu.download(&y)?, &want);
    println!(
        "naive: {} launches, rel. error {naive_err:.1e}",
        naive_launches.len()
    );
    println!(
        "fused: {} launch,   rel. error {fused_err:.1e}",
        fused_launches.len()
    );
    assert!(
        naive_err < 1e-5 && fused_err < 1e-5,
        "GeLU mismatch against float64"
    );

    // Median over 20 samples of 10 back-to-back calls each, after a warm-up: device
    // events around the batch, so the host's per-call checks overlap the GPU's work.
    let median = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        f()?;
        let mut batch = || {
            gpu.time_ms(|| (0..10).try_for_each(|_| f()))
                .map(|ms| ms / 10.0)
        };
        let mut t = (0..20).map(|_| batch()).collect::<Result<Vec<f64>>>()?;
        t.sort_by(f64::total_cmp);
        Ok(t[t.len() / 2])
    };
    let tn = median(&mut || gelu_naive(&gpu, &xb, &mut y, &mut tmp))?;
    let tf = median(&mut || gelu(&gpu, &xb, &mut y))?;
    let gbps = |bytes: f64, ms: f64| bytes / ms / 1e6;
    println!("naive {tn:.4} ms ({:.0} GB/s of 64 B/element), fused {tf:.4} ms ({:.0} GB/s of 8 B/element): {:.1}x", gbps(64.0 * n as f64, tn), gbps(8.0 * n as f64, tf), tn / tf);
    Ok(())
}
