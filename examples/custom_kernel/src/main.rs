//! `cargo run --release` (in `examples/custom_kernel/`): a new kernel (fused bias + GeLU) written,
//! built and launched from outside the lecture, on the GPU or the emulator.
use custom_kernel::{bias_gelu, reference};

fn main() -> simt::Result<()> {
    let gpu = simt::Gpu::from_env()?;
    println!("{}", gpu.describe());
    let (rows, cols) = (512, 1000);
    let x: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 7919) % 2001) as f32 / 250.0 - 4.0)
        .collect();
    let bias: Vec<f32> = (0..cols).map(|c| (c as f32 / cols as f32) - 0.5).collect();
    let (xb, bb) = (gpu.upload(&x)?, gpu.upload(&bias)?);
    let mut yb = gpu.upload(&vec![f32::NAN; rows * cols])?; // poisoned: every element must be written
    let ms = gpu.time_ms(|| {
        bias_gelu(
            &gpu,
            xb.matrix(rows, cols)?,
            &bb,
            yb.matrix_mut(rows, cols)?,
        )
    })?;
    let y = gpu.download(&yb)?;
    let want = reference(&x, &bias, cols);
    let err = y
        .iter()
        .zip(&want)
        .map(|(&a, &b)| (a as f64 - b).abs())
        .fold(0.0, f64::max);
    println!("bias_gelu {rows}x{cols}: max abs error {err:.1e} against float64, {ms:.3} ms");
    if !(err < 1e-5) {
        eprintln!("MISMATCH");
        std::process::exit(1);
    }
    Ok(())
}
