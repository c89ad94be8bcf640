//! Row sums of rows of any length. No rows: nothing to write, no launch; rows of
//! no columns sum to 0 (as `torch.sum`), written by a fill.
use kernels::config::{
    ROW_REDUCE_THREADS, ROW_STREAM_BLOCKS_PER_SM, ROW_STREAM_THREADS, ROW_STREAM_UNROLL,
    WARP_ROWS_THREADS, WARP_ROW_MAX_COLS, WARP_SIZE,
};
use kernels::{row_sum as k, row_sum_stream as ks, row_sum_tiny as kt, row_sum_wide as kw, util};
use simt::{dim3, Buffer, Gpu, LaunchConfig, MatrixRef, Result, SimtError};

use super::check_ref;
use crate::ptx;

/// The row-sum kernels, for [`row_sum_with`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowSumKernel {
    /// By shape ([`auto_kernel`]): `Warp` up to `WARP_ROW_MAX_COLS` columns
    /// (`WarpWide` instead from [`WIDE_MIN_COLS`] columns where [`wide_takes`] the
    /// view; `Tiny` for at least 2^16 rows of 1-3 columns where [`tiny_takes`] it),
    /// `Stream` for at most [`STREAM_MAX_ROWS`] rows of at least 2^24 floats in all
    /// (where it was measured ahead of `Blocks`), else `Blocks`. `Warp`, `WarpWide`,
    /// `Stream` and `Tiny` read the input as its last use up to
    /// [`ROW_SUM_LAST_USE_MAX_BYTES`].
    Auto,
    /// A group of 1-32 lanes per row (`row_sum_warp`): rows up to
    /// `WARP_ROW_MAX_COLS` columns.
    Warp,
    /// Blocks per row, each a contiguous chunk ([`plan`], `row_sum`): any row.
    Blocks,
    /// Blocks striding over few, long rows, read-only loads (`row_sum_stream`):
    /// any row.
    Stream,
    /// A warp per row, up to four 16-byte loads a lane in flight
    /// (`row_sum_warp_wide`): rows up to `WARP_ROW_MAX_COLS` columns that start
    /// 16-byte aligned ([`wide_takes`]).
    WarpWide,
    /// Rows of 1 to 3 columns, four rows per thread, 16-byte loads and stores
    /// (`row_sum_tiny_*`): contiguous rows (row stride = columns) of a 16-byte
    /// aligned matrix.
    Tiny,
}

/// How [`row_sum`] splits the work: `(splits per row, columns per split)`.
///
/// Enough blocks to give every SM at least 4 (so few, long rows still fill the
/// GPU), but no split shorter than 16 vectors per thread, which would spend more
/// on combining the parts and the reduction than on reading.
pub fn plan(gpu: &Gpu, rows: usize, cols: usize) -> (u32, u32) {
    let want_blocks = 4 * gpu.props().sms.max(1) as usize;
    let min_chunk = 16 * 4 * ROW_REDUCE_THREADS as usize;
    let by_occupancy = want_blocks.div_ceil(rows.max(1));
    let by_length = cols.div_ceil(min_chunk).max(1);
    let splits = by_occupancy.min(by_length).clamp(1, 65535);
    let chunk = cols.div_ceil(splits).next_multiple_of(4);
    let splits = cols.div_ceil(chunk.max(1)).max(1);
    (splits as u32, chunk as u32)
}

/// Lanes that `row_sum_warp` gives each row of `cols <= WARP_ROW_MAX_COLS` columns:
/// about one per 16-byte vector, a power of two from 1 to 32.
pub fn lanes_per_row(cols: usize) -> u32 {
    cols.div_ceil(4)
        .next_power_of_two()
        .clamp(1, WARP_SIZE as usize) as u32
}

/// Blocks per row of `row_sum_stream`: `ROW_STREAM_BLOCKS_PER_SM` per SM in all,
/// split over the rows, and no more than the row has tiles.
pub fn stream_splits(gpu: &Gpu, rows: usize, cols: usize) -> u32 {
    let want = ROW_STREAM_BLOCKS_PER_SM as usize * gpu.props().sms.max(1) as usize;
    let tile = 4 * (ROW_STREAM_THREADS * ROW_STREAM_UNROLL) as usize;
    want.div_ceil(rows.max(1))
        .min(cols.div_ceil(tile))
        .clamp(1, 65535) as u32
}

/// Rows up to which [`RowSumKernel::Auto`] takes the striding kernel (with at
/// least 2^24 floats in all): few enough that every row gets many blocks.
pub const STREAM_MAX_ROWS: usize = 128;

/// Whether [`RowSumKernel::Tiny`] takes `x`: 1 to 3 columns, contiguous rows, the
/// matrix 16-byte aligned.
pub fn tiny_takes(x: &MatrixRef<'_, f32>) -> bool {
    (1..=3).contains(&x.cols())
        && x.layout().ld == x.cols()
        && (x.ptr() as usize).is_multiple_of(16)
}

/// Inputs (bytes read) up to which the row-sum kernels that read on the read-only
/// path (`Warp`, `WarpWide`, `Stream`, `Tiny`) read them as their last use
/// (`ld.global.cs.nc`: evict-first lines). Where L2 holds dirty lines (another
/// kernel's output, or the benchmarks' write flush), a stream of evict-first lines
/// evicts itself before them, and the kernel writes none of them back. H200,
/// 2026-11-26 (docs/PERFORMANCE.md session 29), under the write flush: 64 MiB of rows
/// of 16 to 1024 columns 1.13-1.25x faster, 4 x 2^22 (64 MiB, `Stream`) 1.19x, 4 x
/// 2^24 (256 MiB) 1.02x, but 4 x 2^26 (1 GiB) 4% slower: past this size the loads
/// stay unhinted.
pub const ROW_SUM_LAST_USE_MAX_BYTES: usize = 256 << 20;

/// Whether the row-sum kernels read `rows x cols` floats as their last use
/// ([`ROW_SUM_LAST_USE_MAX_BYTES`]).
pub fn last_use(rows: usize, cols: usize) -> bool {
    rows.saturating_mul(cols).saturating_mul(4) <= ROW_SUM_LAST_USE_MAX_BYTES
}

/// Columns from which [`RowSumKernel::Auto`] takes `WarpWide` over `Warp`: rows past
/// one 16-byte vector a lane of a warp (below, `Warp`'s lane groups give each lane
/// at most one, and its kernel is the faster: H200, session 29).
pub const WIDE_MIN_COLS: usize = 4 * WARP_SIZE as usize + 1;

/// Whether [`RowSumKernel::WarpWide`] takes `x`: rows of at most `WARP_ROW_MAX_COLS`
/// columns, each starting 16-byte aligned.
pub fn wide_takes(x: &MatrixRef<'_, f32>) -> bool {
    x.cols() <= WARP_ROW_MAX_COLS as usize
        && (x.ptr() as usize).is_multiple_of(16)
        && x.layout().ld.is_multiple_of(4)
}

/// The kernel [`RowSumKernel::Auto`] runs for this shape. [`row_sum_with`] refines
/// it by the view: `Tiny` where [`tiny_takes`] it and there are at least 2^16 rows,
/// `WarpWide` for `Warp`'s rows from [`WIDE_MIN_COLS`] columns where [`wide_takes`]
/// it.
pub fn auto_kernel(rows: usize, cols: usize) -> RowSumKernel {
    if cols <= WARP_ROW_MAX_COLS as usize {
        RowSumKernel::Warp
    } else if rows * cols >= 1 << 24 && rows <= STREAM_MAX_ROWS {
        RowSumKernel::Stream
    } else {
        RowSumKernel::Blocks
    }
}

/// The kernel [`RowSumKernel::Auto`] runs for the view `x` into `out`: [`auto_kernel`]
/// refined by the view (`Tiny` for at least 2^16 rows where [`tiny_takes`] it and
/// `out` is 16-byte aligned; `WarpWide` for `Warp`'s rows from [`WIDE_MIN_COLS`]
/// columns where [`wide_takes`] it).
pub fn auto_kernel_for(x: &MatrixRef<'_, f32>, out: &Buffer<f32>) -> RowSumKernel {
    let (rows, cols) = (x.rows(), x.cols());
    if rows >= 1 << 16 && tiny_takes(x) && (out.ptr() as usize).is_multiple_of(16) {
        RowSumKernel::Tiny
    } else if cols >= WIDE_MIN_COLS
        && auto_kernel(rows, cols) == RowSumKernel::Warp
        && wide_takes(x)
    {
        RowSumKernel::WarpWide
    } else {
        auto_kernel(rows, cols)
    }
}

/// `out[r] = Σ_c x[r, c]`, the kernel chosen by shape ([`RowSumKernel::Auto`]).
/// `out` holds `x.rows()` floats.
pub fn row_sum(gpu: &Gpu, x: MatrixRef<'_, f32>, out: &mut Buffer<f32>) -> Result<()> {
    row_sum_with(gpu, RowSumKernel::Auto, x, out)
}

/// [`row_sum`] with a chosen kernel. [`RowSumKernel::Warp`] on rows longer than
/// `WARP_ROW_MAX_COLS` is a `TooLarge` error; `WarpWide` or `Tiny` on a view they do
/// not take ([`wide_takes`], [`tiny_takes`]) is a `Shape` error. Each names `Auto` as
/// the way out.
pub fn row_sum_with(
    gpu: &Gpu,
    kernel: RowSumKernel,
    x: MatrixRef<'_, f32>,
    out: &mut Buffer<f32>,
) -> Result<()> {
    let op = "row_sum";
    let (rows, cols, ld) = check_ref(gpu, op, "x", &x)?;
    gpu.check(op, "out", out)?;
    if out.len() != x.rows() {
        return Err(SimtError::Shape {
            op,
            detail: format!("out has {} elements for {} rows", out.len(), x.rows()),
        });
    }
    if rows == 0 {
        return Ok(());
    }
    ptx::load(gpu)?;
    if cols == 0 {
        // SAFETY: out holds `rows` floats on this Gpu.
        return unsafe {
            gpu.launch::<util::fill_f32>(
                LaunchConfig::linear::<util::fill_f32>(rows as usize)?,
                (out.ptr_mut(), rows, 0.0),
            )
        };
    }
    let kernel = match kernel {
        RowSumKernel::Auto => auto_kernel_for(&x, out),
        k => k,
    };
    let last = last_use(rows as usize, cols as usize) as u32;
    if kernel == RowSumKernel::WarpWide {
        if !wide_takes(&x) {
            return Err(SimtError::Shape {
                op,
                detail: format!(
                    "RowSumKernel::WarpWide takes rows of at most {WARP_ROW_MAX_COLS} columns that start 16-byte aligned; this view is {}x{} with row stride {}; use RowSumKernel::Auto",
                    x.rows(),
                    x.cols(),
                    x.layout().ld
                ),
            });
        }
        let per_block = WARP_ROWS_THREADS / WARP_SIZE;
        let cfg =
            LaunchConfig::for_kernel::<kw::row_sum_warp_wide>(dim3(rows.div_ceil(per_block), 1, 1));
        // SAFETY: view checked on this Gpu, its rows aligned (wide_takes); out holds
        // rows floats; x and out are different buffers (a shared view and a `&mut` buffer), both device
        // global memory, and nothing writes x during the launch (the read-only path); a warp per row, as the grid gives.
        return unsafe {
            gpu.launch::<kw::row_sum_warp_wide>(cfg, (x.ptr(), out.ptr_mut(), rows, cols, ld, last))
        };
    }
    if kernel == RowSumKernel::Tiny {
        if !tiny_takes(&x) || !(out.ptr_mut() as usize).is_multiple_of(16) {
            return Err(SimtError::Shape {
                op,
                detail: format!(
                    "RowSumKernel::Tiny takes contiguous rows of 1 to 3 columns of a 16-byte aligned matrix; this view is {}x{} with row stride {}; use RowSumKernel::Auto",
                    x.rows(),
                    x.cols(),
                    x.layout().ld
                ),
            });
        }
        let threads = (rows as usize).div_ceil(4);
        // SAFETY (each launch): x holds rows·cols contiguous floats, 16-byte aligned
        // (tiny_takes); out holds rows floats and, a whole buffer, is 256-byte aligned;
        // x and out are different buffers (a shared view and a `&mut` buffer), both device
        // global memory, and nothing writes x during the launch (the read-only path); one thread per 4 rows.
        return unsafe {
            match cols {
                1 => gpu.launch::<kt::row_sum_tiny_1>(
                    LaunchConfig::linear::<kt::row_sum_tiny_1>(threads)?,
                    (x.ptr(), out.ptr_mut(), rows, last),
                ),
                2 => gpu.launch::<kt::row_sum_tiny_2>(
                    LaunchConfig::linear::<kt::row_sum_tiny_2>(threads)?,
                    (x.ptr(), out.ptr_mut(), rows, last),
                ),
                _ => gpu.launch::<kt::row_sum_tiny_3>(
                    LaunchConfig::linear::<kt::row_sum_tiny_3>(threads)?,
                    (x.ptr(), out.ptr_mut(), rows, last),
                ),
            }
        };
    }
    if kernel == RowSumKernel::Warp && cols > WARP_ROW_MAX_COLS {
        return Err(SimtError::TooLarge {
            op,
            detail: format!("rows of {cols} columns; RowSumKernel::Warp takes at most {WARP_ROW_MAX_COLS}; use RowSumKernel::Auto"),
        });
    }
    if kernel == RowSumKernel::Warp {
        // Short rows: a group of lanes per row (about one lane per 16-byte vector,
        // 1 to 32), no barriers.
        let group = lanes_per_row(cols as usize);
        let rows_per_block = (WARP_ROWS_THREADS / WARP_SIZE) * (WARP_SIZE / group);
        let cfg =
            LaunchConfig::for_kernel::<k::row_sum_warp>(dim3(rows.div_ceil(rows_per_block), 1, 1));
        // SAFETY: view checked on this Gpu; out holds rows floats; group is a power of
        // two <= 32; x and out are different buffers (a shared view and a `&mut` buffer), both device
        // global memory, and nothing writes x during the launch (the read-only path).
        return unsafe {
            gpu.launch::<k::row_sum_warp>(
                cfg,
                (x.ptr(), out.ptr_mut(), rows, cols, ld, group, last),
            )
        };
    }
    let (splits, chunk) = match kernel {
        RowSumKernel::Stream => (stream_splits(gpu, x.rows(), x.cols()), 0),
        _ => plan(gpu, x.rows(), x.cols()),
    };
    let blocks = rows as u64 * splits as u64;
    if blocks > i32::MAX as u64 {
        return Err(SimtError::TooLarge {
            op,
            detail: format!("{blocks} blocks; split the rows into several calls"),
        });
    }
    // Split rows: each part's sum in a scratch slot, a count per row (left at zero by
    // the kernel), the row's last part adds the slots in part order.
    let (partials, counts) = if splits > 1 {
        (
            Some(gpu.scratch_f32(super::SCRATCH_ROW_PARTS, blocks as usize)?),
            Some(gpu.zero_counts(rows as usize)?),
        )
    } else {
        (None, None)
    };
    let partials_ptr = partials
        .as_ref()
        .map_or(std::ptr::null_mut(), |b| b.ptr() as *mut f32);
    let counts_ptr = counts
        .as_ref()
        .map_or(std::ptr::null_mut(), |b| b.ptr() as *mut u32);
    let grid = dim3(blocks as u32, 1, 1);
    // SAFETY: view checked; out holds rows floats; x and out are different buffers
    // (a shared view and a `&mut` buffer) and x is not written by this launch (the
    // stream kernel's read-only loads); grid = rows · splits; with splits > 1,
    // partials holds rows·splits floats of this Gpu's scratch slot SCRATCH_ROW_PARTS
    // (its own buffer: not x, which is borrowed from a user's buffer, and not out;
    // no other launch in flight uses it: launches run in order) and counts rows
    // counts at zero (Gpu::zero_counts; the kernel leaves them at zero).
    let r = unsafe {
        if kernel == RowSumKernel::Stream {
            let cfg = LaunchConfig::for_kernel::<ks::row_sum_stream>(grid);
            gpu.launch::<ks::row_sum_stream>(
                cfg,
                (
                    x.ptr(),
                    out.ptr_mut(),
                    rows,
                    cols,
                    ld,
                    splits,
                    partials_ptr,
                    counts_ptr,
                    last,
                ),
            )
        } else {
            let cfg = LaunchConfig::for_kernel::<k::row_sum>(grid);
            gpu.launch::<k::row_sum>(
                cfg,
                (
                    x.ptr(),
                    out.ptr_mut(),
                    rows,
                    cols,
                    ld,
                    splits,
                    chunk,
                    partials_ptr,
                    counts_ptr,
                ),
            )
        }
    };
    if r.is_err() && counts.is_some() {
        // It may have stopped with some counts not back at zero.
        gpu.discard_counts();
    }
    r
}

/// Host-slice convenience: sums of a contiguous `rows x cols` matrix.
pub fn row_sum_host(gpu: &Gpu, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
    let xb = gpu.upload(x)?;
    let mut o = gpu.alloc::<f32>(rows)?;
    row_sum(gpu, xb.matrix(rows, cols)?, &mut o)?;
    gpu.download(&o)
}
