//! Row sums of rows of 129 to [`WARP_ROW_MAX_COLS`] columns: a warp per row, up to
//! four 16-byte loads a lane in flight.
//!
//! `out[r] = Σ_c x[r, c]`.
//!
//! [`crate::row_sum`]'s `row_sum_warp` serves every short row with lane groups, one
//! 16-byte load a step: at 256 columns (two vectors a lane) a lane waits a full DRAM
//! latency per vector, since ptxas does not move a load past the loop's back edge.
//! Here each lane issues its vectors `lane, lane + 32, lane + 64, lane + 96` before
//! adding any (then pairs, then one), on the read-only path and, where the host asks
//! (inputs up to `ROW_SUM_LAST_USE_MAX_BYTES`), as their last use (evict-first lines:
//! [`load4_nc_last_if`]), and the warp's sum is 5 xor-shuffles. A kernel
//! of its own, so that the unrolled loads' registers do not weigh on the short rows'
//! kernel: unrolled inside `row_sum_warp` they cost rows of 16 and 64 columns 2-3%
//! (H200, 2026-11-26, docs/PERFORMANCE.md session 29).
use crate::config::{WARP_ROWS_THREADS, WARP_ROW_MAX_COLS, WARP_SIZE};
use simt_std::kernel;
use simt_std::memory::load4_nc_last_if;
use simt_std::thread::block_idx;
use simt_std::warp::{lane_id, warp_id, warp_sum};

/// One lane's partial sum of a row of `len` floats whose start is 16-byte aligned:
/// vectors `lane + 32·j`, up to four loads before the first add (as their last use
/// where `last`); the last `len % 4` floats by lanes 0-2.
///
/// # Safety
/// `row[0..len]` is readable, in global memory, unwritten during the kernel, and
/// `row` is 16-byte aligned.
#[inline(always)]
unsafe fn lane_sum(row: *const f32, len: usize, lane: usize, last: bool) -> f32 {
    const STEP: usize = 4 * WARP_SIZE as usize;
    let len4 = len & !3;
    let mut acc = 0.0f32;
    let mut c = 4 * lane;
    while c + 3 * STEP < len4 {
        // SAFETY: c + 3·STEP + 4 <= len4 <= len, every vector aligned (row is, c % 4 == 0).
        let v = unsafe {
            [
                load4_nc_last_if(row.add(c), last),
                load4_nc_last_if(row.add(c + STEP), last),
                load4_nc_last_if(row.add(c + 2 * STEP), last),
                load4_nc_last_if(row.add(c + 3 * STEP), last),
            ]
        };
        acc += (v[0].sum() + v[1].sum()) + (v[2].sum() + v[3].sum());
        c += 4 * STEP;
    }
    if c + STEP < len4 {
        // SAFETY: c + STEP + 4 <= len4 <= len, aligned.
        let v = unsafe {
            [
                load4_nc_last_if(row.add(c), last),
                load4_nc_last_if(row.add(c + STEP), last),
            ]
        };
        acc += v[0].sum() + v[1].sum();
        c += 2 * STEP;
    }
    if c < len4 {
        // SAFETY: c + 4 <= len4 <= len, aligned.
        acc += unsafe { load4_nc_last_if(row.add(c), last) }.sum();
    }
    if len4 + lane < len {
        // SAFETY: len4 + lane < len.
        acc += unsafe { *row.add(len4 + lane) };
    }
    acc
}

kernel! {
    /// `out[r] = Σ_c x[r, c]` for rows of up to `WARP_ROW_MAX_COLS` columns that start
    /// 16-byte aligned: a warp per row (see the module doc).
    ///
    /// # Safety
    /// `x` readable at `x[r*ld + c]` for `r < rows, c < cols`, with `x` 16-byte
    /// aligned and `ld` a multiple of 4; `out` writable for `rows` floats, not
    /// overlapping `x` (`x` is read through the read-only path).
    ///
    /// # Parameters
    /// * `x`: `[rows, cols]` row-major, row stride `ld` (elements). * `out`: `[rows]`.
    /// * `last`: nonzero to read `x` as its last use (evict-first lines; the host's
    ///   choice by size: `ROW_SUM_LAST_USE_MAX_BYTES`).
    ///
    /// # Thread Mapping
    /// Warp `w` of block `b` sums row `b·(WARP_ROWS_THREADS/32) + w`, lane `l` its
    /// vectors `l + 32·j`; `grid.x = ceil(rows / (WARP_ROWS_THREADS/32))`.
    #[launch(threads = WARP_ROWS_THREADS)]
    pub unsafe fn row_sum_warp_wide(x: *const f32, out: *mut f32, rows: u32, cols: u32, ld: u32, last: u32) {
        debug_assert!(cols <= WARP_ROW_MAX_COLS, "row_sum_warp_wide: rows of at most WARP_ROW_MAX_COLS columns");
        debug_assert!(simt_std::memory::is_aligned16(x) && ld % 4 == 0, "row_sum_warp_wide: rows must start 16-byte aligned");
        let r = (block_idx().x * (WARP_ROWS_THREADS / WARP_SIZE) + warp_id()) as usize;
        let lane = lane_id() as usize;
        let mut s = 0.0f32;
        if r < rows as usize {
            // SAFETY: r < rows; the row starts aligned and nothing writes it (the
            // contract); the sum reads only [0, cols) of it.
            s = unsafe { lane_sum(x.add(r * ld as usize), cols as usize, lane, last != 0) };
        }
        // Every lane takes part (the row test is warp-uniform).
        let s = warp_sum(s);
        if lane == 0 && r < rows as usize {
            // SAFETY: r < rows.
            unsafe { *out.add(r) = s };
        }
    }
}
