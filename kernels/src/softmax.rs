//! Softmax over the rows of a matrix, for rows that fit in one block.
//!
//! `y[r, c] = exp(x[r, c] - max_r) / Σ_c' exp(x[r, c'] - max_r)`: subtracting the
//! row maximum keeps every exponent ≤ 0, so nothing overflows for any finite input
//! (rows near ±1e4 included), `-inf` entries give 0, and a row of only `-inf` gives
//! NaN, as `torch.softmax` does.
//!
//! **Naive** (PyTorch eager): five kernels (`row_max`, `rows_sub`, `ew_exp`,
//! `row_sum`, `rows_div`) reading 5MN + 2M floats and writing 3MN + 2M.
//! **Fused** ([`softmax_fused()`]): one block per row, the row read once into shared
//! memory, max and sum by warp shuffles plus one shared slot per warp, the result
//! written once: MN reads and MN writes, the floor for this function.
use crate::config::{
    ELEMENTWISE_THREADS, ROW_REDUCE_THREADS, SOFTMAX_THREADS, WARP_ROWS_THREADS, WARP_SIZE,
};
use simt_std::kernel;
use simt_std::math::{exp, rcp};
use simt_std::memory::{is_aligned16, load4, load4_first, store4, store4_or_scalar};
use simt_std::shared::dynamic_shared;
use simt_std::shared_array;
use simt_std::thread::{block_idx, global_index_x, thread_idx};
use simt_std::warp::{block_max, block_sum, max_nan};

kernel! {
    /// Fused, numerically stable row softmax: one block per row, row kept on chip.
    ///
    /// # Safety
    /// `x` readable at `x[r*ld_x + c]`, `y` writable at `y[r*ld_y + c]` for
    /// `r < rows, c < cols`; the launch gives `cols*4` bytes of dynamic shared
    /// memory (`cols <= SOFTMAX_MAX_COLS`) and `SOFTMAX_THREADS` threads per block.
    ///
    /// # Parameters
    /// * `x`: `[rows, cols]` row-major, row stride `ld_x` (elements).
    /// * `y`: `[rows, cols]` row-major, row stride `ld_y`. May be `x` (in place).
    ///
    /// # Thread Mapping
    /// `grid.x = rows`, block = `SOFTMAX_THREADS` (1-D). Thread `t` handles columns
    /// `4t, 4t+1, 4t+2, 4t+3` of every `4·SOFTMAX_THREADS`-wide chunk (16-byte
    /// vectors when the row is aligned), so each warp's access is one contiguous
    /// 512-byte span.
    ///
    /// # Tiling
    /// The row lives in dynamic shared memory `s[0..cols]`: read from HBM once,
    /// then max, exp-and-sum and the final scale read it on chip.
    #[launch(threads = SOFTMAX_THREADS, shared = cols as u64 * 4)]
    pub unsafe fn softmax_fused(x: *const f32, y: *mut f32, rows: u32, cols: u32, ld_x: u32, ld_y: u32) {
        let scratch = shared_array!(SOFTMAX_SCRATCH, f32, 32);
        // Per-thread scratch (each thread re-reads only what it wrote): generic pointer,
        // see `Smem::generic`.
        let s = dynamic_shared::<f32>().generic();
        let r = block_idx().x as usize;
        let t = thread_idx().x as usize;
        let n = cols as usize;
        // The grid is one block per row; checked on the emulator (debug builds).
        debug_assert!(r < rows as usize, "softmax_fused: grid.x must be rows");
        // SAFETY: r < rows (grid.x = rows), offsets stay in the row.
        let (xr, yr) = unsafe { (x.add(r * ld_x as usize), y.add(r * ld_y as usize)) };
        let lanes = SOFTMAX_THREADS as usize;
        // SAFETY (all three passes): row r is readable/writable for `cols` and `s` holds
        // `cols` floats (launch contract); each thread touches only its own columns.
        let m = unsafe { stage_row(xr, s, n, t, lanes) };
        // SAFETY: scratch is this kernel's own 32-float shared array.
        let m = unsafe { block_max(m, scratch) };
        let sum = unsafe { exp_in_place(s, n, t, lanes, m) };
        let inv = rcp(unsafe { block_sum(sum, scratch) });
        unsafe { write_scaled(s, yr, n, t, lanes, inv) };
    }
}

/// Softmax pass 1: copies a row into the scratch `s`, returning the lane's maximum.
/// Lane `lane` of `lanes` takes the 4-float groups `4·lane, 4·lane + 4·lanes, ...`
/// (16-byte loads when the row is aligned), then the tail floats `n4 + lane, ...`.
///
/// # Safety
/// `xr[0..n]` readable, `s[0..n]` writable and 16-byte aligned.
#[inline(always)]
unsafe fn stage_row(xr: *const f32, s: *mut f32, n: usize, lane: usize, lanes: usize) -> f32 {
    let (n4, vec) = (n & !3, is_aligned16(xr));
    let mut m = f32::NEG_INFINITY;
    let mut c = 4 * lane;
    while c < n4 {
        // SAFETY: c + 4 <= n4 <= n; `s + c` is 16-aligned (c % 4 == 0).
        let v = unsafe { load4_first(xr.add(c), 4, vec) };
        unsafe { store4(s.add(c), v) };
        m = max_nan(max_nan(m, v.x), max_nan(v.y, max_nan(v.z, v.w)));
        c += 4 * lanes;
    }
    let mut c = n4 + lane;
    while c < n {
        // SAFETY: c < n.
        let v = unsafe { *xr.add(c) };
        unsafe { *s.add(c) = v };
        m = max_nan(m, v);
        c += lanes;
    }
    m
}

/// Softmax pass 2: `s = exp(s - m)` over the lane's columns (as [`stage_row`]),
/// returning the lane's sum.
///
/// # Safety
/// `s[0..n]` readable and writable, 16-byte aligned, written by this lane in pass 1.
#[inline(always)]
unsafe fn exp_in_place(s: *mut f32, n: usize, lane: usize, lanes: usize, m: f32) -> f32 {
    let n4 = n & !3;
    let mut sum = 0.0f32;
    let mut c = 4 * lane;
    while c < n4 {
        // SAFETY: as `stage_row`.
        let e = unsafe { load4(s.add(c)) }.map(|v| exp(v - m));
        unsafe { store4(s.add(c), e) };
        sum += (e.x + e.y) + (e.z + e.w);
        c += 4 * lanes;
    }
    let mut c = n4 + lane;
    while c < n {
        // SAFETY: c < n.
        let e = exp(unsafe { *s.add(c) } - m);
        unsafe { *s.add(c) = e };
        sum += e;
        c += lanes;
    }
    sum
}

/// Softmax pass 3: `y = s · inv` over the lane's columns (as [`stage_row`]).
///
/// # Safety
/// `s[0..n]` as in pass 2, `yr[0..n]` writable.
#[inline(always)]
unsafe fn write_scaled(s: *const f32, yr: *mut f32, n: usize, lane: usize, lanes: usize, inv: f32) {
    let (n4, vec) = (n & !3, is_aligned16(yr));
    let mut c = 4 * lane;
    while c < n4 {
        // SAFETY: as `stage_row`.
        let o = unsafe { load4(s.add(c)) }.map(|v| v * inv);
        unsafe { store4_or_scalar(yr.add(c), o, vec) };
        c += 4 * lanes;
    }
    let mut c = n4 + lane;
    while c < n {
        // SAFETY: c < n.
        unsafe { *yr.add(c) = *s.add(c) * inv };
        c += lanes;
    }
}

/// Shared body of [`row_max()`] and [`row_sum`](crate::row_sum::row_sum()):
/// one block reduces `cols` elements of row `r` from `start` to `end`.
///
/// # Safety
/// The row range is readable; called by every thread of the block.
#[inline(always)]
pub(crate) unsafe fn reduce_range(
    xr: *const f32,
    start: usize,
    end: usize,
    threads: usize,
    identity: f32,
    op: fn(f32, f32) -> f32,
) -> f32 {
    let t = thread_idx().x as usize;
    let mut acc = identity;
    let mut acc2 = identity;
    // SAFETY: pointer arithmetic inside the row.
    let vec = is_aligned16(unsafe { xr.add(start) });
    let len = end - start;
    let len4 = if vec { len & !3 } else { 0 };
    let step = 4 * threads;
    let mut c = 4 * t;
    // Two independent accumulators: two loads in flight per thread per iteration.
    while c + step < len4 {
        // SAFETY: c + step + 4 <= len4 <= len.
        let (a, b) = unsafe { (load4(xr.add(start + c)), load4(xr.add(start + c + step))) };
        acc = op(acc, op(op(a.x, a.y), op(a.z, a.w)));
        acc2 = op(acc2, op(op(b.x, b.y), op(b.z, b.w)));
        c += 2 * step;
    }
    if c < len4 {
        // SAFETY: c + 4 <= len4.
        let a = unsafe { load4(xr.add(start + c)) };
        acc = op(acc, op(op(a.x, a.y), op(a.z, a.w)));
    }
    let mut c = len4 + t;
    while c < len {
        // SAFETY: c < len.
        acc = op(acc, unsafe { *xr.add(start + c) });
        c += threads;
    }
    op(acc, acc2)
}

kernel! {
    /// Naive softmax stage 1: `out[r] = max_c x[r, c]`, one block per row.
    ///
    /// # Safety
    /// `x` readable at `x[r*ld + c]` for `r < rows, c < cols`; `out` writable for
    /// `rows` floats; `ROW_REDUCE_THREADS` threads per block.
    ///
    /// # Thread Mapping
    /// `grid.x = rows`; threads stride over the row 4 columns at a time.
    #[launch(threads = ROW_REDUCE_THREADS)]
    pub unsafe fn row_max(x: *const f32, out: *mut f32, rows: u32, cols: u32, ld: u32) {
        let scratch = shared_array!(ROW_MAX_SCRATCH, f32, 32);
        let r = block_idx().x as usize;
        debug_assert!(r < rows as usize, "row_max: grid.x must be rows");
        // SAFETY: r < rows; the reduction reads only [0, cols) of row r.
        let m = unsafe { reduce_range(x.add(r * ld as usize), 0, cols as usize, crate::config::ROW_REDUCE_THREADS as usize, f32::NEG_INFINITY, max_nan) };
        let m = unsafe { block_max(m, scratch) };
        if thread_idx().x == 0 {
            // SAFETY: r < rows.
            unsafe { *out.add(r) = m };
        }
    }
}

kernel! {
    /// Naive softmax stage 2: `y[r, c] = x[r, c] - v[r]` over a contiguous `[rows, cols]`.
    ///
    /// # Safety
    /// `x`, `y` valid for `rows*cols` floats, `v` for `rows`.
    ///
    /// # Thread Mapping
    /// One element per thread, `grid.x = ceil(rows·cols / ELEMENTWISE_THREADS)`.
    #[launch(threads = ELEMENTWISE_THREADS)]
    pub unsafe fn rows_sub(x: *const f32, v: *const f32, y: *mut f32, rows: u32, cols: u32) {
        let i = global_index_x();
        if i < rows as usize * cols as usize {
            // SAFETY: i < rows*cols, i / cols < rows.
            unsafe { *y.add(i) = *x.add(i) - *v.add(i / cols as usize) };
        }
    }
}

kernel! {
    /// Naive softmax stage 3: `y = exp(x)` elementwise. Same mapping as [`rows_sub()`].
    ///
    /// # Safety
    /// `x`, `y` valid for `n` floats.
    #[launch(threads = ELEMENTWISE_THREADS)]
    pub unsafe fn ew_exp(x: *const f32, y: *mut f32, n: u32) {
        let i = global_index_x();
        if i < n as usize {
            // SAFETY: i < n.
            unsafe { *y.add(i) = exp(*x.add(i)) };
        }
    }
}

kernel! {
    /// Naive softmax stage 5: `y[r, c] = x[r, c] / v[r]`. Same mapping as [`rows_sub()`].
    ///
    /// # Safety
    /// As [`rows_sub()`].
    #[launch(threads = ELEMENTWISE_THREADS)]
    pub unsafe fn rows_div(x: *const f32, v: *const f32, y: *mut f32, rows: u32, cols: u32) {
        let i = global_index_x();
        if i < rows as usize * cols as usize {
            // SAFETY: i < rows*cols.
            unsafe { *y.add(i) = *x.add(i) / *v.add(i / cols as usize) };
        }
    }
}

/// Dynamic shared memory of [`softmax_warp()`]: each of the block's warps holds its
/// row padded to whole 16-byte vectors.
pub const fn softmax_warp_shared_bytes(cols: u32) -> u64 {
    (WARP_ROWS_THREADS / WARP_SIZE) as u64 * (cols as u64).next_multiple_of(4) * 4
}

kernel! {
    /// Row softmax for rows of at most `WARP_ROW_MAX_COLS`: one warp per row, the
    /// row in the warp's slice of dynamic shared memory, max and sum by shuffles,
    /// no barriers (each lane re-reads only what it wrote itself).
    ///
    /// # Safety
    /// As [`softmax_fused()`], with `cols <= WARP_ROW_MAX_COLS`, blocks of
    /// `WARP_ROWS_THREADS` threads and `(WARP_ROWS_THREADS/32) · ceil4(cols) · 4`
    /// bytes of dynamic shared memory.
    ///
    /// # Thread Mapping
    /// Warp `w` of block `b` takes row `b·8 + w`; lane `l` handles columns `4l..4l+4`
    /// of every 128-wide chunk; `grid.x = ceil(rows / 8)`.
    #[launch(threads = WARP_ROWS_THREADS, shared = softmax_warp_shared_bytes(cols))]
    pub unsafe fn softmax_warp(x: *const f32, y: *mut f32, rows: u32, cols: u32, ld_x: u32, ld_y: u32) {
        let w = simt_std::warp::warp_id() as usize;
        let lane = simt_std::warp::lane_id() as usize;
        let r = block_idx().x as usize * (simt_std::thread::block_dim().x as usize / 32) + w;
        if r >= rows as usize {
            return; // the whole warp (same r): no shuffle is left half-reached
        }
        let n = cols as usize;
        let stride = (n + 3) & !3;
        // Per-lane scratch (each lane re-reads only what it wrote): generic pointer, see
        // `Smem::generic`. Warp w's slice of the dynamic shared memory (launch contract).
        let s = dynamic_shared::<f32>().add(w * stride).generic();
        // SAFETY: r < rows.
        let (xr, yr) = unsafe { (x.add(r * ld_x as usize), y.add(r * ld_y as usize)) };
        // SAFETY (all three passes): row r has `cols` floats, the slice `stride >= cols`.
        let m = simt_std::warp::warp_max(unsafe { stage_row(xr, s, n, lane, 32) });
        let sum = unsafe { exp_in_place(s, n, lane, 32, m) };
        let inv = rcp(simt_std::warp::warp_sum(sum));
        unsafe { write_scaled(s, yr, n, lane, 32, inv) };
    }
}
