//! Row sums of rows of any length.
use kernels::config::{ROW_REDUCE_THREADS, WARP_ROWS_THREADS, WARP_ROW_MAX_COLS};
use kernels::{row_sum as k, util};

use super::{check_matrix, Layout};
use crate::error::{Result, SimtError};
use crate::gpu::{dim3, Buffer, Gpu, LaunchConfig};

/// How [`row_sum`] splits the work: `(splits per row, columns per split)`.
///
/// Enough blocks to give every SM at least 4 (so few, long rows still fill the
/// GPU), but no split shorter than 16 vectors per thread, which would spend more
/// on the atomic and the reduction than on reading.
pub fn plan(gpu: &Gpu, rows: usize, cols: usize) -> (u32, u32) {
    let want_blocks = 4 * gpu.props().sms.max(1) as usize;
    let min_chunk = 16 * 4 * ROW_REDUCE_THREADS as usize;
    let by_occupancy = want_blocks.div_ceil(rows);
    let by_length = cols.div_ceil(min_chunk).max(1);
    let splits = by_occupancy.min(by_length).clamp(1, 65535);
    let chunk = cols.div_ceil(splits).next_multiple_of(4);
    let splits = cols.div_ceil(chunk).max(1);
    (splits as u32, chunk as u32)
}

/// `out[r] = Σ_c x[r, c]` for a `rows x cols` view with row stride `ld`: up to
/// `WARP_ROW_MAX_COLS` columns a group of 1-32 lanes per row (`row_sum_warp`), else
/// blocks per row as [`plan`] says.
pub fn row_sum_strided(gpu: &Gpu, x: &Buffer<f32>, l: Layout, out: &mut Buffer<f32>) -> Result<()> {
    let op = "row_sum";
    check_matrix(op, "x", l, x)?;
    if out.len() != l.rows {
        return Err(SimtError::Shape { op, detail: format!("out has {} elements for {} rows", out.len(), l.rows) });
    }
    if l.cols <= WARP_ROW_MAX_COLS as usize {
        // Short rows: a group of lanes per row (about one lane per 16-byte vector,
        // 1 to 32), no barriers.
        let group = lanes_per_row(l.cols);
        let rows_per_block = (WARP_ROWS_THREADS / 32) as usize * (32 / group) as usize;
        let rows = l.rows as u32;
        let cfg = LaunchConfig { grid: dim3(l.rows.div_ceil(rows_per_block) as u32, 1, 1), block: dim3(WARP_ROWS_THREADS, 1, 1), shared_bytes: 0 };
        // SAFETY: view checked; out holds rows floats; group is a power of two <= 32.
        return unsafe { gpu.launch::<k::row_sum_warp>(cfg, (x.ptr(), out.ptr_mut(), rows, l.cols as u32, l.ld as u32, group)) };
    }
    let (splits, chunk) = plan(gpu, l.rows, l.cols);
    let blocks = l.rows as u64 * splits as u64;
    if blocks > i32::MAX as u64 {
        return Err(SimtError::TooLarge { op, detail: format!("{blocks} blocks") });
    }
    let rows = l.rows as u32;
    if splits > 1 {
        // SAFETY: out holds `rows` floats.
        unsafe { gpu.launch::<util::fill_f32>(LaunchConfig::linear(l.rows, 256)?, (out.ptr_mut(), rows, 0.0))? };
    }
    let cfg = LaunchConfig { grid: dim3(blocks as u32, 1, 1), block: dim3(ROW_REDUCE_THREADS, 1, 1), shared_bytes: 0 };
    // SAFETY: view checked; out holds rows floats, zeroed above when splits > 1.
    unsafe { gpu.launch::<k::row_sum>(cfg, (x.ptr(), out.ptr_mut(), rows, l.cols as u32, l.ld as u32, splits, chunk)) }
}

/// Lanes that `row_sum_warp` gives each row of `cols <= WARP_ROW_MAX_COLS` columns:
/// about one per 16-byte vector, a power of two from 1 to 32.
pub fn lanes_per_row(cols: usize) -> u32 {
    cols.div_ceil(4).next_power_of_two().clamp(1, 32) as u32
}

/// Contiguous [`row_sum_strided`].
pub fn row_sum(gpu: &Gpu, x: &Buffer<f32>, rows: usize, cols: usize, out: &mut Buffer<f32>) -> Result<()> {
    row_sum_strided(gpu, x, Layout::contiguous(rows, cols), out)
}

/// Host-slice convenience for [`row_sum`].
pub fn row_sum_host(gpu: &Gpu, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
    let xb = gpu.upload(x)?;
    let mut o = gpu.alloc::<f32>(rows)?;
    row_sum(gpu, &xb, rows, cols, &mut o)?;
    gpu.download(&o)
}
