//! Softmax with the row in registers: read once from DRAM, written once, never
//! staged through shared memory.
//!
//! `y[r, c] = exp(x[r, c] - m_r) / Σ_c' exp(x[r, c'] - m_r)`, `m_r = max_c x[r, c]`.
//!
//! The fused kernels of [`crate::softmax`] copy the row into shared memory and read
//! it back twice (max, then exp-and-sum, then scale): three passes over on-chip
//! memory, each with its own load latency. Here each thread keeps its part of the
//! row as `V` 16-byte vectors in registers (`4·V` floats): the max, the exponentials
//! and the scaled output all work on those registers, the row's only memory traffic
//! is one 16-byte load and one 16-byte store per vector, and every load is issued
//! before the first one is needed (`V` loads in flight per thread). This is what
//! Triton's tutorial softmax compiles to.
//!
//! The cost is registers: `4·V` per thread for the row. The kernels come in fixed
//! sizes (`kernels::config`): a warp per row with `V` = 1, 2, 4, 8 (rows up to 128,
//! 256, 512, 1024 columns) and a block per row of `(threads, V)` = (128, 4),
//! (256, 4), (512, 4), (512, 8) (rows up to 2048, 4096, 8192, 16384). At 16384
//! columns a thread holds 32 floats of row; the host picks the smallest that fits.
//!
//! Columns past the row's end read as `-inf` (they add nothing to the max, and
//! `exp(-inf - m) = 0` to the sum) and are never stored. A row of only `-inf` gives
//! NaN, as `torch.softmax` does; so does a row holding a NaN.
use crate::config::{SOFTMAX_ROW_CONFIGS, SOFTMAX_WARP_VECS, WARP_ROWS_THREADS, WARP_SIZE};
use crate::softmax_parts::Slice;
use simt_std::kernel;
use simt_std::math::rcp;
use simt_std::memory::is_aligned16;
use simt_std::shared::Smem;
use simt_std::shared_array;
use simt_std::thread::{block_dim, block_idx, thread_idx};
use simt_std::warp::{block_reduce_once, lane_id, max_nan, warp_id, warp_max, warp_sum};

/// A warp per row, `V` vectors per lane: the body of `softmax_warp_*`.
///
/// # Safety
/// As the kernels': rows `r < rows` of `x` readable and of `y` writable for `cols`
/// columns, `cols <= 128·V`, blocks of `WARP_ROWS_THREADS` threads.
#[inline(always)]
unsafe fn warp_row<const V: usize>(
    x: *const f32,
    y: *mut f32,
    rows: u32,
    cols: u32,
    ld_x: u32,
    ld_y: u32,
) {
    let r = block_idx().x as usize * (block_dim().x / WARP_SIZE) as usize + warp_id() as usize;
    if r >= rows as usize {
        return; // the whole warp (same r): no shuffle is left half-reached
    }
    let (lane, n) = (lane_id() as usize, cols as usize);
    // SAFETY: r < rows.
    let (xr, yr) = unsafe { (x.add(r * ld_x as usize), y.add(r * ld_y as usize)) };
    // SAFETY: row r holds `cols` floats (contract).
    let mut s = unsafe { Slice::<V>::load(xr, 0, n, lane, 32, is_aligned16(xr)) };
    let m = warp_max(s.max());
    let inv = rcp(warp_sum(s.exp_sum(m)));
    // SAFETY: as the load.
    unsafe { s.store_scaled(yr, 0, n, lane, 32, is_aligned16(yr), inv) };
}

/// A block per row of `T` threads, `V` vectors per thread: the body of
/// `softmax_row_*`. (`T` a constant rather than `blockDim.x`: the vectors' offsets
/// become immediates, and fewer registers stay live across the loads.)
///
/// # Safety
/// As the kernels': row `blockIdx.x < rows` of `x` readable and of `y` writable for
/// `cols <= 4·blockDim.x·V` columns; `scratch` is 64 floats of this kernel's shared
/// memory.
#[inline(always)]
unsafe fn block_row<const T: usize, const V: usize>(
    x: *const f32,
    y: *mut f32,
    rows: u32,
    cols: u32,
    ld_x: u32,
    ld_y: u32,
    scratch: Smem<f32>,
) {
    let r = block_idx().x as usize;
    debug_assert!(r < rows as usize, "softmax_row: grid.x must be rows");
    debug_assert!(
        block_dim().x as usize == T,
        "softmax_row: the block is the kernel's contract"
    );
    let (t, lanes, n) = (thread_idx().x as usize, T, cols as usize);
    // SAFETY: r < rows (grid.x = rows).
    let (xr, yr) = unsafe { (x.add(r * ld_x as usize), y.add(r * ld_y as usize)) };
    // SAFETY: row r holds `cols` floats (contract).
    let mut s = unsafe { Slice::<V>::load(xr, 0, n, t, lanes, is_aligned16(xr)) };
    // SAFETY: scratch is reserved for these reductions (contract): the max in its
    // first 32 floats, the sum in the next 32, each written once (one row per block).
    let m = unsafe { block_reduce_once(s.max(), scratch, max_nan, f32::NEG_INFINITY) };
    let sum = unsafe { block_reduce_once(s.exp_sum(m), scratch.add(32), |a, b| a + b, 0.0) };
    let inv = rcp(sum);
    // SAFETY: as the load.
    unsafe { s.store_scaled(yr, 0, n, t, lanes, is_aligned16(yr), inv) };
}

macro_rules! warp_kernel {
    ($name:ident, $i:expr, $cols:literal) => {
        kernel! {
            #[doc = concat!("Register-resident softmax of rows of at most ", $cols, " columns: a warp per row, `SOFTMAX_WARP_VECS[", $i, "]` 16-byte vectors per lane (see the module doc).")]
            ///
            /// # Safety
            /// `x` readable at `x[r*ld_x + c]`, `y` writable at `y[r*ld_y + c]` for
            /// `r < rows, c < cols`; `y` is `x` (in place) or does not overlap it.
            ///
            /// # Parameters
            /// * `x`, `y`: `[rows, cols]` row-major, row strides `ld_x`, `ld_y` (elements).
            ///
            /// # Thread Mapping
            /// Warp `w` of block `b` takes row `8b + w` (`grid.x = ceil(rows / 8)`);
            /// lane `l` holds columns `4(l + 32k) ..+4` for each vector `k`.
            #[launch(threads = WARP_ROWS_THREADS)]
            pub unsafe fn $name(x: *const f32, y: *mut f32, rows: u32, cols: u32, ld_x: u32, ld_y: u32) {
                // SAFETY: the kernel's contract, forwarded.
                unsafe { warp_row::<{ SOFTMAX_WARP_VECS[$i] as usize }>(x, y, rows, cols, ld_x, ld_y) }
            }
        }
    };
}

warp_kernel!(softmax_warp_128, 0, "128");
warp_kernel!(softmax_warp_256, 1, "256");
warp_kernel!(softmax_warp_512, 2, "512");
warp_kernel!(softmax_warp_1k, 3, "1024");

macro_rules! row_kernel {
    ($name:ident, $i:expr, $cols:literal, $scratch:ident) => {
        row_kernel!($name, $i, $cols, $scratch, 1);
    };
    ($name:ident, $i:expr, $cols:literal, $scratch:ident, $min_blocks:literal) => {
        kernel! {
            #[doc = concat!("Register-resident softmax of rows of at most ", $cols, " columns: a block of `SOFTMAX_ROW_CONFIGS[", $i, "].0` threads per row, `.1` 16-byte vectors per thread (see the module doc).")]
            ///
            /// # Safety
            /// As the warp-per-row kernels.
            ///
            /// # Parameters
            /// * `x`, `y`: `[rows, cols]` row-major, row strides `ld_x`, `ld_y` (elements).
            ///
            /// # Thread Mapping
            /// `grid.x = rows`; thread `t` of `T` holds columns `4(t + T·k) ..+4` for
            /// each vector `k`; max and sum by warp shuffles and one shared slot per warp.
            #[launch(threads = SOFTMAX_ROW_CONFIGS[$i].0, min_blocks = $min_blocks)]
            pub unsafe fn $name(x: *const f32, y: *mut f32, rows: u32, cols: u32, ld_x: u32, ld_y: u32) {
                let scratch = shared_array!($scratch, f32, 64);
                // SAFETY: the kernel's contract, forwarded; scratch is this kernel's own.
                unsafe { block_row::<{ SOFTMAX_ROW_CONFIGS[$i].0 as usize }, { SOFTMAX_ROW_CONFIGS[$i].1 as usize }>(x, y, rows, cols, ld_x, ld_y, scratch) }
            }
        }
    };
}

row_kernel!(softmax_row_2k, 0, "2048", SOFTMAX_ROW_2K_SCRATCH);
row_kernel!(softmax_row_4k, 1, "4096", SOFTMAX_ROW_4K_SCRATCH);
row_kernel!(softmax_row_8k, 2, "8192", SOFTMAX_ROW_8K_SCRATCH, 4);
row_kernel!(softmax_row_16k, 3, "16384", SOFTMAX_ROW_16K_SCRATCH);
