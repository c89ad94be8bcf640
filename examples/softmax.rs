//! The lecture's softmax section through the API: `cargo run --release --example softmax`.
//!
//! Matrix views over buffers, the naive composition (5 kernels) against the fused
//! kernel, a strided view, float64 checks and timings; then long rows (default
//! 8 x 2^20 on a GPU, or `-- ROWSxCOLS`), with each kernel that takes them. GPU if
//! present, else the emulator.
use rust_simt::ops::softmax::{
    auto_kernel, softmax, softmax_naive, softmax_with, split_async_max_cols, split_max_cols,
    split_wide_max_cols, SoftmaxKernel,
};
use rust_simt::{reference, Layout, Result};

fn main() -> Result<()> {
    let gpu = rust_simt::gpu()?;
    println!("{}", gpu.describe());
    let (rows, cols) = if rust_simt::full_size(&gpu) {
        (4096, 4096)
    } else {
        (64, 1000)
    };
    let x: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 7919) % 8001) as f32 / 1000.0 - 4.0)
        .collect();
    let xb = gpu.upload(&x)?;
    let mut y = gpu.upload(&vec![f32::NAN; rows * cols])?;
    let mut tmp = gpu.alloc::<f32>(rows)?;
    let want = reference::softmax(&x, rows, cols);

    // A view is a buffer plus shape and row stride, checked when made.
    softmax(&gpu, xb.matrix(rows, cols)?, y.matrix_mut(rows, cols)?)?;
    let fused_err = reference::rel_err(&gpu.download(&y)?, &want);
    softmax_naive(
        &gpu,
        xb.matrix(rows, cols)?,
        y.matrix_mut(rows, cols)?,
        &mut tmp,
    )?;
    let naive_err = reference::rel_err(&gpu.download(&y)?, &want);
    println!("{rows} x {cols}: fused rel. error {fused_err:.1e}, naive {naive_err:.1e}");
    assert!(
        fused_err < 1e-5 && naive_err < 1e-5,
        "softmax mismatch against float64"
    );

    // The same op on a strided view: the left half of every row.
    let half = Layout::strided(rows, cols / 2, cols);
    let mut yh = gpu.alloc::<f32>(rows * (cols / 2))?;
    softmax(
        &gpu,
        xb.matrix_strided(half)?,
        yh.matrix_mut(rows, cols / 2)?,
    )?;
    let left: Vec<f32> = (0..rows)
        .flat_map(|r| x[r * cols..r * cols + cols / 2].to_vec())
        .collect();
    let half_err = reference::rel_err(
        &gpu.download(&yh)?,
        &reference::softmax(&left, rows, cols / 2),
    );
    println!(
        "strided view {rows} x {} (ld {cols}): rel. error {half_err:.1e}",
        cols / 2
    );
    assert!(half_err < 1e-5);

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
    let tn = median(&mut || {
        softmax_naive(
            &gpu,
            xb.matrix(rows, cols)?,
            y.matrix_mut(rows, cols)?,
            &mut tmp,
        )
    })?;
    let tf = median(&mut || softmax(&gpu, xb.matrix(rows, cols)?, y.matrix_mut(rows, cols)?))?;
    println!(
        "naive {tn:.4} ms, fused {tf:.4} ms ({:.0} GB/s): fused is {:.1}x faster",
        8.0 * (rows * cols) as f64 / tf / 1e6,
        tn / tf
    );

    // Long rows: one row spread over many blocks.
    let (rows, cols) = match std::env::args().nth(1) {
        Some(s) => {
            let d: Vec<usize> = s.split('x').filter_map(|v| v.parse().ok()).collect();
            match d.as_slice() {
                [r, c] => (*r, *c),
                _ => {
                    eprintln!("usage: softmax [ROWSxCOLS]  (e.g. 8x1048576)");
                    std::process::exit(2)
                }
            }
        }
        None if rust_simt::full_size(&gpu) => (8, 1 << 20),
        None => (2, 30_000),
    };
    let x: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 7919) % 8001) as f32 / 500.0 - 8.0)
        .collect();
    let want = reference::softmax(&x, rows, cols);
    let xb = gpu.upload(&x)?;
    let mut y = gpu.upload(&vec![f32::NAN; rows * cols])?;
    println!(
        "\n{rows} x {cols}: softmax picks {:?} (split kernels take rows up to {} / {} / {} columns here)",
        // Dense rows from a fresh buffer: 16-byte aligned when cols % 4 == 0.
        auto_kernel(&gpu, rows, cols, cols % 4 == 0)?,
        split_wide_max_cols(&gpu)?,
        split_async_max_cols(&gpu)?,
        split_max_cols(&gpu)?
    );
    for k in [
        SoftmaxKernel::Cluster,
        SoftmaxKernel::SplitWide,
        SoftmaxKernel::SplitAsync,
        SoftmaxKernel::Split,
        SoftmaxKernel::Online,
        SoftmaxKernel::Looped,
        SoftmaxKernel::ThreePass,
        SoftmaxKernel::Stream,
        SoftmaxKernel::Bulk,
    ] {
        if let Err(e) = softmax_with(&gpu, k, xb.matrix(rows, cols)?, y.matrix_mut(rows, cols)?) {
            println!("  {k:?}: {e}");
            continue;
        }
        let err = reference::rel_err(&gpu.download(&y)?, &want);
        assert!(err < 1e-5, "{k:?}: rel. error {err:e}");
        let t = median(&mut || {
            softmax_with(&gpu, k, xb.matrix(rows, cols)?, y.matrix_mut(rows, cols)?)
        })?;
        println!(
            "  {k:?}: {t:.4} ms ({:.0} GB/s), rel. error {err:.1e}",
            8.0 * (rows * cols) as f64 / t / 1e6
        );
    }
    Ok(())
}
