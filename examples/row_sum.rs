//! The lecture's row-sum section through the API: `cargo run --release --example row_sum`.
//!
//! Few long rows (blocks per row, the row's last block adding their sums in order)
//! and many short rows (lane groups, or a warp, per row), each checked against
//! float64 and timed. GPU if present, else the
//! emulator. `-- ROWSxCOLS` (e.g. `4x67108864`) times every kernel that takes the
//! shape side by side.
use rust_simt::ops::row_sum::{auto_kernel_for, plan, row_sum_with, RowSumKernel};
use rust_simt::{reference, Result};

fn main() -> Result<()> {
    let gpu = rust_simt::gpu()?;
    println!("{}", gpu.describe());
    let big = rust_simt::full_size(&gpu);
    let arg: Option<(usize, usize)> = std::env::args().nth(1).map(|s| {
        let d: Vec<usize> = s.split('x').filter_map(|v| v.parse().ok()).collect();
        match d[..] {
            [r, c] if r > 0 && c > 0 => (r, c),
            _ => {
                eprintln!("usage: row_sum [ROWSxCOLS]  (e.g. 4x67108864)");
                std::process::exit(2)
            }
        }
    });
    let shapes: Vec<(usize, usize)> = match arg {
        Some(s) => vec![s],
        None if big => vec![(8, 1 << 22), (65536, 256)],
        None => vec![(4, 1 << 16), (4096, 64)],
    };
    for (rows, cols) in shapes {
        // Values in [0, 1): sums far from 0, so the relative error measures accumulation.
        let x: Vec<f32> = (0..rows * cols)
            .map(|i| ((i * 2654435761usize) % 1000) as f32 / 1000.0)
            .collect();
        let want = reference::row_sum(&x, rows, cols, cols);
        let xb = gpu.upload(&x)?;
        let mut out = gpu.upload(&vec![f32::NAN; rows])?;
        let (splits, _) = plan(&gpu, rows, cols);
        println!(
            "{rows} x {cols}: Auto picks {:?} ({splits} block(s) per row for Blocks)",
            auto_kernel_for(&xb.matrix(rows, cols)?, &out)
        );
        let kernels: &[RowSumKernel] = if arg.is_some() {
            &[
                RowSumKernel::Auto,
                RowSumKernel::Warp,
                RowSumKernel::WarpWide,
                RowSumKernel::Blocks,
                RowSumKernel::Stream,
            ]
        } else {
            &[RowSumKernel::Auto]
        };
        for &k in kernels {
            if row_sum_with(&gpu, k, xb.matrix(rows, cols)?, &mut out).is_err() {
                continue; // Warp on long rows
            }
            let err = reference::rel_err(&gpu.download(&out)?, &want);
            // 20 samples of 10 back-to-back calls (device events around each batch).
            let mut batch = || {
                gpu.time_ms(|| {
                    (0..10)
                        .try_for_each(|_| row_sum_with(&gpu, k, xb.matrix(rows, cols)?, &mut out))
                })
                .map(|ms| ms / 10.0)
            };
            let mut t = (0..20).map(|_| batch()).collect::<Result<Vec<f64>>>()?;
            t.sort_by(f64::total_cmp);
            let ms = t[t.len() / 2];
            println!(
                "  {k:?}: rel. error {err:.1e}, {ms:.4} ms ({:.0} GB/s)",
                4.0 * (rows * cols) as f64 / ms / 1e6
            );
            assert!(err < 1e-5, "{k:?}: row sum mismatch against float64");
        }
    }
    Ok(())
}
