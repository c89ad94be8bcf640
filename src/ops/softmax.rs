//! Row softmax: fused (a warp or a block per row, the row on chip) and naive
//! (5 kernels). An empty input (no rows or no columns) launches nothing and leaves
//! the (empty) output as it is, as `torch.softmax` returns an empty tensor.
use kernels::config::{SOFTMAX_MAX_COLS, WARP_ROWS_THREADS, WARP_ROW_MAX_COLS, WARP_SIZE};
use kernels::{row_sum as rs, softmax as k};
use simt::{dim3, Buffer, Gpu, LaunchConfig, MatrixMut, MatrixRef, Result, SimtError};

use super::{check_mut, check_ref, fits_u32};
use crate::ptx;

/// The longest row [`softmax`] accepts on this device: `SOFTMAX_MAX_COLS`, and no
/// more than the device's shared memory per block holds.
pub fn max_cols(gpu: &Gpu) -> usize {
    (SOFTMAX_MAX_COLS as usize).min(gpu.props().smem_per_block_optin as usize / 4)
}

/// `y = softmax(x)` over each row, fused: a warp per row up to `WARP_ROW_MAX_COLS`
/// columns, a block per row beyond, up to [`max_cols`]. `x` and `y` have the same
/// shape, each with its own row stride; `y` may not alias `x` except exactly.
pub fn softmax(gpu: &Gpu, x: MatrixRef<'_, f32>, mut y: MatrixMut<'_, f32>) -> Result<()> {
    let op = "softmax";
    let (rows, cols, ld_x) = check_ref(gpu, op, "x", &x)?;
    let (_, _, ld_y) = check_mut(gpu, op, "y", &y)?;
    if (x.rows(), x.cols()) != (y.rows(), y.cols()) {
        return Err(SimtError::Shape {
            op,
            detail: format!(
                "x is {}x{}, y is {}x{}",
                x.rows(),
                x.cols(),
                y.rows(),
                y.cols()
            ),
        });
    }
    if x.layout().is_empty() {
        return Ok(());
    }
    if x.cols() > max_cols(gpu) {
        return Err(SimtError::TooLarge {
            op,
            detail: format!("rows of {} columns; the fused kernel keeps a row on chip and takes at most {} (use softmax_naive)", x.cols(), max_cols(gpu)),
        });
    }
    if rows > i32::MAX as u32 {
        return Err(SimtError::TooLarge {
            op,
            detail: "more than 2^31-1 rows".into(),
        });
    }
    ptx::load(gpu)?;
    let args = (x.ptr(), y.ptr_mut(), rows, cols, ld_x, ld_y);
    if cols <= WARP_ROW_MAX_COLS {
        // Short rows: a warp per row, no barriers.
        let cfg = LaunchConfig::for_kernel::<k::softmax_warp>(dim3(
            rows.div_ceil(WARP_ROWS_THREADS / WARP_SIZE),
            1,
            1,
        ));
        // SAFETY: views checked on this Gpu; a warp per row; the contract sizes shared memory.
        return unsafe { gpu.launch::<k::softmax_warp>(cfg, args) };
    }
    let cfg = LaunchConfig::for_kernel::<k::softmax_fused>(dim3(rows, 1, 1));
    // SAFETY: both views checked against their buffers on this Gpu; one block per row;
    // the contract gives cols*4 bytes of dynamic shared memory.
    unsafe { gpu.launch::<k::softmax_fused>(cfg, args) }
}

/// Softmax as PyTorch eager composes it: row max, subtract, exp, row sum, divide;
/// five kernels, any row length. `x` and `y` contiguous; `tmp` holds `rows` floats.
pub fn softmax_naive(
    gpu: &Gpu,
    x: MatrixRef<'_, f32>,
    mut y: MatrixMut<'_, f32>,
    tmp: &mut Buffer<f32>,
) -> Result<()> {
    let op = "softmax_naive";
    let (r, c, _) = check_ref(gpu, op, "x", &x)?;
    check_mut(gpu, op, "y", &y)?;
    gpu.check(op, "tmp", tmp)?;
    if (x.rows(), x.cols()) != (y.rows(), y.cols()) {
        return Err(SimtError::Shape {
            op,
            detail: format!(
                "x is {}x{}, y is {}x{}",
                x.rows(),
                x.cols(),
                y.rows(),
                y.cols()
            ),
        });
    }
    if !x.layout().is_contiguous() || !y.layout().is_contiguous() {
        return Err(SimtError::Shape { op, detail: "the naive composition takes contiguous rows (ld = cols); use softmax for strided views".into() });
    }
    if tmp.len() < x.rows() {
        return Err(SimtError::Shape {
            op,
            detail: format!("tmp has {} elements, needs {r}", tmp.len()),
        });
    }
    if x.layout().is_empty() {
        return Ok(());
    }
    let n = fits_u32(op, "rows*cols", x.rows() * x.cols())?;
    ptx::load(gpu)?;
    let per_row = LaunchConfig::for_kernel::<k::row_max>(dim3(r, 1, 1));
    let ew = LaunchConfig::linear::<k::rows_sub>(n as usize)?;
    let (xp, yp, v) = (x.ptr(), y.ptr_mut(), tmp.ptr_mut());
    // SAFETY: x, y hold rows*cols floats on this Gpu, tmp at least rows; mappings per
    // the docs; elementwise stages may run in place.
    unsafe {
        gpu.launch::<k::row_max>(per_row, (xp, v, r, c, c))?;
        gpu.launch::<k::rows_sub>(ew, (xp, v as *const f32, yp, r, c))?;
        gpu.launch::<k::ew_exp>(ew, (yp as *const f32, yp, n))?;
        gpu.launch::<rs::row_sum>(
            per_row,
            (yp as *const f32, v, r, c, c, 1, c.next_multiple_of(4)),
        )?;
        gpu.launch::<k::rows_div>(ew, (yp as *const f32, v as *const f32, yp, r, c))?;
    }
    Ok(())
}

/// Host-slice convenience: a contiguous `rows x cols` softmax.
pub fn softmax_host(gpu: &Gpu, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
    let xb = gpu.upload(x)?;
    let mut yb = gpu.alloc::<f32>(x.len())?;
    softmax(gpu, xb.matrix(rows, cols)?, yb.matrix_mut(rows, cols)?)?;
    gpu.download(&yb)
}
