//! Row sum when a row does not fit in a block: tiles, warp shuffles, shared memory.
//!
//! Each block owns one chunk of one row. Its threads walk the chunk in tiles of
//! `4·ROW_REDUCE_THREADS` floats (16-byte loads, two tiles in flight), each keeping
//! a private partial sum in registers; a warp folds its 32 partials with 5
//! xor-shuffles, warp leaders drop them into 32 shared slots, and one more
//! shuffle round gives the block's total. With one chunk per row
//! (`splits = 1`) the block writes the row's sum; with more (few, long rows, so
//! the grid still fills the GPU), blocks `atomic_add` their chunk into a zeroed
//! output.
use crate::atomic::atomic_add_f32;
use crate::config::ROW_REDUCE_THREADS;
use crate::kernel;
use crate::shared_array;
use crate::softmax::reduce_range;
use crate::thread::{block_idx, thread_idx};
use crate::warp::block_sum;

kernel! {
    /// `out[r] = Σ_c x[r, c]`.
    ///
    /// # Safety
    /// `x` readable at `x[r*ld + c]` for `r < rows, c < cols`; `out` writable for
    /// `rows` floats and, when `splits > 1`, zeroed before the launch;
    /// `ROW_REDUCE_THREADS` threads per block; `grid.x = rows * splits`.
    ///
    /// # Parameters
    /// * `x`: `[rows, cols]` row-major, row stride `ld` (elements). * `out`: `[rows]`.
    /// * `chunk`: columns per split, a multiple of 4 (keeps every chunk 16-aligned).
    ///
    /// # Thread Mapping
    /// Block `b` reduces row `b / splits`, columns `[(b % splits)·chunk, +chunk)`.
    pub unsafe fn row_sum(x: *const f32, out: *mut f32, rows: u32, cols: u32, ld: u32, splits: u32, chunk: u32) {
        let scratch = shared_array!(ROW_SUM_SCRATCH, f32, 32);
        let _ = rows;
        let b = block_idx().x as usize;
        let r = b / splits as usize;
        let part = b % splits as usize;
        let start = (part * chunk as usize).min(cols as usize);
        let end = (start + chunk as usize).min(cols as usize);
        // SAFETY: r < rows; the reduction reads only [start, end) of row r.
        let s = unsafe { reduce_range(x.add(r * ld as usize), start, end, ROW_REDUCE_THREADS as usize, 0.0, |a, b| a + b) };
        let s = unsafe { block_sum(s, scratch) };
        if thread_idx().x == 0 {
            // SAFETY: r < rows; with splits > 1 every access to out[r] is atomic.
            unsafe {
                if splits == 1 { *out.add(r) = s } else { atomic_add_f32(out.add(r), s); }
            }
        }
    }
}

kernel! {
    /// `out[r] = Σ_c x[r, c]` for short rows: one warp per row, no barriers.
    ///
    /// A block per row wastes a 256-thread block and two barriers on a 16-float row;
    /// here each warp owns a row, its lanes stride over it (16-byte loads when the
    /// row is aligned) and 5 xor-shuffles finish the sum.
    ///
    /// # Safety
    /// `x` readable at `x[r*ld + c]` for `r < rows, c < cols`; `out` writable for
    /// `rows` floats; the block has a multiple of 32 threads.
    ///
    /// # Thread Mapping
    /// Warp `w` of block `b` takes row `b·(blockDim.x/32) + w`;
    /// `grid.x = ceil(rows / (WARP_ROWS_THREADS/32))`.
    pub unsafe fn row_sum_warp(x: *const f32, out: *mut f32, rows: u32, cols: u32, ld: u32) {
        let r = (block_idx().x * (crate::thread::block_dim().x / 32) + crate::warp::warp_id()) as usize;
        // The whole warp leaves together (same r): no shuffle is left half-reached.
        if r >= rows as usize {
            return;
        }
        // SAFETY: r < rows; the loop reads only [0, cols) of row r.
        let s = unsafe { warp_range_sum(x.add(r * ld as usize), cols as usize) };
        let s = crate::warp::warp_sum(s);
        if crate::warp::lane_id() == 0 {
            // SAFETY: r < rows.
            unsafe { *out.add(r) = s };
        }
    }
}

/// One lane's partial sum of a row of `len` floats, lanes striding 4 floats apart.
///
/// # Safety
/// `row[0..len]` is readable.
#[inline(always)]
unsafe fn warp_range_sum(row: *const f32, len: usize) -> f32 {
    let lane = crate::warp::lane_id() as usize;
    let mut acc = 0.0f32;
    let len4 = if crate::memory::is_aligned16(row) { len & !3 } else { 0 };
    let mut c = 4 * lane;
    while c < len4 {
        // SAFETY: c + 4 <= len4 <= len, aligned.
        let v = unsafe { crate::memory::load4(row.add(c)) };
        acc += (v.x + v.y) + (v.z + v.w);
        c += 128;
    }
    let mut c = len4 + lane;
    while c < len {
        // SAFETY: c < len.
        acc += unsafe { *row.add(c) };
        c += 32;
    }
    acc
}
