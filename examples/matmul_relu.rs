//! The lecture's matmul + ReLU section through the API:
//! `cargo run --release --example matmul_relu`.
//!
//! Every stage (naive, tiled, double-buffered, warp-tiled) on the same inputs,
//! checked against float64 on sampled rows and timed. GPU if present, else the emulator.
use rust_simt::ops::matmul::{matmul, Dims, Epilogue, MatmulKernel};
use rust_simt::{reference, Result};

fn main() -> Result<()> {
    let gpu = rust_simt::gpu()?;
    println!("{}", gpu.describe());
    let n = if rust_simt::full_size(&gpu) {
        4096
    } else {
        256
    };
    let d = Dims { m: n, n, k: n };
    let a: Vec<f32> = (0..n * n)
        .map(|i| ((i * 7919) % 2001) as f32 / 1000.0 - 1.0)
        .collect();
    let b: Vec<f32> = (0..n * n)
        .map(|i| ((i * 104729) % 2001) as f32 / 1000.0 - 1.0)
        .collect();
    let (ab, bb) = (gpu.upload(&a)?, gpu.upload(&b)?);
    let mut c = gpu.alloc::<f32>(n * n)?;
    // float64 reference of 8 sampled rows (the full one is 2n^3 CPU FLOPs).
    let rows: Vec<usize> = (0..8).map(|i| (i * 2654435761usize) % n).collect();
    let a_rows: Vec<f32> = rows
        .iter()
        .flat_map(|&r| a[r * n..(r + 1) * n].to_vec())
        .collect();
    let want = reference::matmul(&a_rows, &b, rows.len(), n, n, n, n, true);
    let mut base = None;
    for kernel in MatmulKernel::ALL {
        gpu.write(&mut c, &vec![f32::NAN; n * n])?;
        matmul(
            &gpu,
            kernel,
            ab.matrix(n, n)?,
            bb.matrix(n, n)?,
            c.matrix_mut(n, n)?,
            Epilogue::Relu,
        )?;
        let got = gpu.download(&c)?;
        let sampled: Vec<f32> = rows
            .iter()
            .flat_map(|&r| got[r * n..(r + 1) * n].to_vec())
            .collect();
        let err = reference::rel_err(&sampled, &want);
        assert!(
            err < 1e-5 && got.iter().all(|v| !v.is_nan()),
            "{kernel:?}: rel. error {err:e}"
        );
        let mut t = (0..5)
            .map(|_| {
                gpu.time_ms(|| {
                    matmul(
                        &gpu,
                        kernel,
                        ab.matrix(n, n)?,
                        bb.matrix(n, n)?,
                        c.matrix_mut(n, n)?,
                        Epilogue::Relu,
                    )
                })
            })
            .collect::<Result<Vec<f64>>>()?;
        t.sort_by(f64::total_cmp);
        let ms = t[t.len() / 2];
        let speedup = base.get_or_insert(ms).to_owned() / ms;
        println!(
            "{:<10} {n}^3: {ms:9.3} ms {:7.2} TFLOP/s  rel. error {err:.1e}  {speedup:5.1}x naive",
            kernel.name(),
            d.flops() / ms / 1e9
        );
    }
    Ok(())
}
