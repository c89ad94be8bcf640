//! Row softmax: fused (one block per row, row on chip) and naive (5 kernels).
use kernels::config::{ELEMENTWISE_THREADS, ROW_REDUCE_THREADS, SOFTMAX_MAX_COLS, SOFTMAX_THREADS, WARP_ROWS_THREADS, WARP_ROW_MAX_COLS};
use kernels::{row_sum as rs, softmax as k};

use super::{check_matrix, fits_u32, Layout};
use crate::error::{Result, SimtError};
use crate::gpu::{dim3, Buffer, Gpu, LaunchConfig};

/// The longest row [`softmax`] accepts on this device: `SOFTMAX_MAX_COLS`, and no
/// more than the device's shared memory per block holds.
pub fn max_cols(gpu: &Gpu) -> usize {
    (SOFTMAX_MAX_COLS as usize).min(gpu.props().smem_per_block_optin as usize / 4)
}

/// `y = softmax(x)` over each row, fused: a warp per row up to `WARP_ROW_MAX_COLS`
/// columns, a block per row beyond. `x` and `y` are `rows x cols` views with their
/// own row strides; `cols` at most [`max_cols`].
pub fn softmax_strided(gpu: &Gpu, x: &Buffer<f32>, lx: Layout, y: &mut Buffer<f32>, ly: Layout) -> Result<()> {
    let op = "softmax";
    check_matrix(op, "x", lx, x)?;
    check_matrix(op, "y", ly, y)?;
    if (lx.rows, lx.cols) != (ly.rows, ly.cols) {
        return Err(SimtError::Shape { op, detail: format!("x is {}x{}, y is {}x{}", lx.rows, lx.cols, ly.rows, ly.cols) });
    }
    if lx.cols > max_cols(gpu) {
        return Err(SimtError::TooLarge {
            op,
            detail: format!("rows of {} columns; the fused kernel keeps a row on chip and takes at most {} (use softmax_naive)", lx.cols, max_cols(gpu)),
        });
    }
    let rows = fits_u32(op, "rows", lx.rows)?;
    if rows > i32::MAX as u32 {
        return Err(SimtError::TooLarge { op, detail: "more than 2^31-1 rows".into() });
    }
    let args = (x.ptr(), y.ptr_mut(), rows, lx.cols as u32, lx.ld as u32, ly.ld as u32);
    if lx.cols <= WARP_ROW_MAX_COLS as usize {
        // Short rows: a warp per row, no barriers.
        let warps = WARP_ROWS_THREADS / 32;
        let cfg = LaunchConfig {
            grid: dim3(rows.div_ceil(warps), 1, 1),
            block: dim3(WARP_ROWS_THREADS, 1, 1),
            shared_bytes: warps * (lx.cols.next_multiple_of(4) * 4) as u32,
        };
        // SAFETY: views checked; a warp per row with its ceil4(cols) floats of shared memory.
        return unsafe { gpu.launch::<k::softmax_warp>(cfg, args) };
    }
    let cfg = LaunchConfig { grid: dim3(rows, 1, 1), block: dim3(SOFTMAX_THREADS, 1, 1), shared_bytes: (lx.cols * 4) as u32 };
    // SAFETY: both views checked against their buffers; one block per row with
    // cols*4 bytes of dynamic shared memory, as the kernel requires.
    unsafe { gpu.launch::<k::softmax_fused>(cfg, args) }
}

/// Contiguous [`softmax_strided`].
pub fn softmax(gpu: &Gpu, x: &Buffer<f32>, y: &mut Buffer<f32>, rows: usize, cols: usize) -> Result<()> {
    let l = Layout::contiguous(rows, cols);
    softmax_strided(gpu, x, l, y, l)
}

/// Softmax as PyTorch eager composes it: row max, subtract, exp, row sum, divide;
/// five kernels, contiguous `rows x cols`, any row length. `tmp` holds `rows` floats.
pub fn softmax_naive(gpu: &Gpu, x: &Buffer<f32>, y: &mut Buffer<f32>, rows: usize, cols: usize, tmp: &mut Buffer<f32>) -> Result<()> {
    let op = "softmax_naive";
    let l = Layout::contiguous(rows, cols);
    check_matrix(op, "x", l, x)?;
    check_matrix(op, "y", l, y)?;
    if tmp.len() < rows {
        return Err(SimtError::Shape { op, detail: format!("tmp has {} elements, needs {rows}", tmp.len()) });
    }
    let n = fits_u32(op, "rows*cols", rows * cols)?;
    let (r, c) = (rows as u32, cols as u32);
    let per_row = LaunchConfig { grid: dim3(r, 1, 1), block: dim3(ROW_REDUCE_THREADS, 1, 1), shared_bytes: 0 };
    let ew = LaunchConfig::linear(n as usize, ELEMENTWISE_THREADS)?;
    let (xp, yp, v) = (x.ptr(), y.ptr_mut(), tmp.ptr_mut());
    // SAFETY: x, y hold rows*cols floats, tmp at least rows; mappings per the docs;
    // elementwise stages may run in place.
    unsafe {
        gpu.launch::<k::row_max>(per_row, (xp, v, r, c, c))?;
        gpu.launch::<k::rows_sub>(ew, (xp, v as *const f32, yp, r, c))?;
        gpu.launch::<k::ew_exp>(ew, (yp as *const f32, yp, n))?;
        gpu.launch::<rs::row_sum>(per_row, (yp as *const f32, v, r, c, c, 1, c.next_multiple_of(4)))?;
        gpu.launch::<k::rows_div>(ew, (yp as *const f32, v as *const f32, yp, r, c))?;
    }
    Ok(())
}

/// Host-slice convenience for [`softmax`].
pub fn softmax_host(gpu: &Gpu, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
    let xb = gpu.upload(x)?;
    let mut yb = gpu.alloc::<f32>(x.len())?;
    softmax(gpu, &xb, &mut yb, rows, cols)?;
    gpu.download(&yb)
}
