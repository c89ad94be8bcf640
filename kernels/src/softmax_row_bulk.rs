//! Softmax with a block per row and the row brought into shared memory by bulk
//! copies (Hopper's TMA engine): one thread issues the row's loads, no register
//! holds them in flight.
//!
//! `y[r, c] = exp(x[r, c] - m_r) / s_r`, `m_r = max_c x[r, c]`,
//! `s_r = Σ_c exp(x[r, c] - m_r)`.
//!
//! The register kernel ([`crate::softmax_regs`]) at 16384 columns holds 32 floats
//! of row a thread in 63 registers: 512 threads a row, two rows an SM (264 on an
//! H100), so each SM has one or two rows' loads in flight and none while both its
//! rows reduce and store. Here the row lands in dynamic shared memory by
//! `cp.async.bulk` ([`simt_std::tma::bulk_load`], in pieces of
//! [`SOFTMAX_ROW_BULK_PIECE`] columns, all completing one mbarrier phase); the
//! threads hold no row in registers, so shared memory sets the occupancy: at 16384
//! columns 64 KiB a block, three rows an SM (396 on an H100), each one instruction's
//! worth of loads. Then, from shared memory, as the staged split kernels do
//! ([`crate::softmax_parts`]): each thread's maximum, a block reduction; each
//! thread's `exp(x - m)` written back in place and summed, a block reduction; each
//! thread's elements times `1/s` stored to `y` (16-byte stores where `y`'s row is
//! aligned). A thread reads back only the vectors it wrote, so the two block
//! reductions are the only barriers after the copy lands.
//!
//! Bulk copies move 16-byte units from 16-byte aligned addresses: the host launches
//! this kernel only for rows that start 16-byte aligned (`x` and its row stride)
//! with a multiple of 4 columns, at most [`SOFTMAX_ROW_BULK_MAX_COLS`]. A row of only
//! `-inf`, or holding a NaN, gives NaN, as `torch.softmax` does.
use crate::config::{
    SOFTMAX_ROW_BULK_MAX_COLS, SOFTMAX_ROW_BULK_MIN_BLOCKS, SOFTMAX_ROW_BULK_PIECE,
    SOFTMAX_ROW_BULK_THREADS, SOFTMAX_ROW_BULK_VECS,
};
use crate::softmax_parts::{staged_exp_sum, staged_max, staged_store_scaled};
use simt_std::kernel;
use simt_std::math::rcp;
use simt_std::mbarrier;
use simt_std::memory::is_aligned16;
use simt_std::shared::dynamic_shared;
use simt_std::shared_array;
use simt_std::thread::{block_idx, sync_threads, thread_idx};
use simt_std::tma;
use simt_std::warp::{block_reduce_once, max_nan};

/// Threads of a block and 16-byte vectors a thread.
const T: usize = SOFTMAX_ROW_BULK_THREADS as usize;
const V: usize = SOFTMAX_ROW_BULK_VECS as usize;
const _: () = assert!(
    SOFTMAX_ROW_BULK_MAX_COLS as usize == 4 * T * V
        && SOFTMAX_ROW_BULK_PIECE % 4 == 0
        && SOFTMAX_ROW_BULK_PIECE > 0
);

kernel! {
    /// Softmax of rows of at most [`SOFTMAX_ROW_BULK_MAX_COLS`] columns, a block per
    /// row, each row copied into shared memory by bulk copies (see the module doc).
    ///
    /// # Safety
    /// `x` readable at `x[r*ld_x + c]`, `y` writable at `y[r*ld_y + c]` for
    /// `r < rows, c < cols`; `y` is `x` with `ld_y = ld_x` (in place) or does not
    /// overlap it; `x` and
    /// `ld_x` 16-byte aligned (`x as usize % 16 == 0`, `ld_x % 4 == 0`); `cols` a
    /// positive multiple of 4, at most `SOFTMAX_ROW_BULK_MAX_COLS`; `grid.x = rows`;
    /// `cols·4` bytes of dynamic shared memory (the launch gives them).
    ///
    /// # Parameters
    /// * `x`, `y`: `[rows, cols]` row-major, row strides `ld_x`, `ld_y` (elements).
    ///
    /// # Thread Mapping
    /// Block `r` takes row `r`; thread 0 initialises the barrier and issues the
    /// copies; thread `t` of `SOFTMAX_ROW_BULK_THREADS` then takes the 16-byte
    /// vectors `t, t + T, …, t + (V-1)·T` of the staged row (columns
    /// `4(t + T·k) ..+4`), max and sum by warp shuffles and one shared slot per warp.
    ///
    /// # Tiling
    /// The row lives in dynamic shared memory `s[0..cols]`, column `c` at `s[c]`:
    /// pieces of `SOFTMAX_ROW_BULK_PIECE` columns, one bulk copy each.
    #[launch(threads = SOFTMAX_ROW_BULK_THREADS, min_blocks = SOFTMAX_ROW_BULK_MIN_BLOCKS, shared = cols as u64 * 4, target = "sm_90a")]
    pub unsafe fn softmax_row_bulk(x: *const f32, y: *mut f32, rows: u32, cols: u32, ld_x: u32, ld_y: u32) {
        let bar = shared_array!(SOFTMAX_ROW_BULK_BAR, u64, 1);
        let scratch = shared_array!(SOFTMAX_ROW_BULK_SCRATCH, f32, 64);
        let row = dynamic_shared::<f32>();
        let r = block_idx().x as usize;
        debug_assert!(r < rows as usize, "softmax_row_bulk: grid.x must be rows");
        let (t, n) = (thread_idx().x as usize, cols as usize);
        // SAFETY: r < rows (grid.x = rows).
        let (xr, yr) = unsafe { (x.add(r * ld_x as usize), y.add(r * ld_y as usize)) };
        // One region of thread 0 and then one block barrier. (Written as two regions,
        // `if t == 0 { init } sync_threads(); if t == 0 { issue }`, the compiler merged
        // the two branches and gave thread 0 a `bar.sync` of its own apart from the
        // other threads' one: an aligned barrier reached at two places by a divergent
        // warp, which hung on the H100 (2026-12-08). tests/ptx.rs now refuses it.)
        if t == 0 {
            // SAFETY: thread 0 alone; this kernel's own 8-byte aligned slot of static
            // shared memory. The fences make the initialisation visible to the
            // asynchronous proxy (the copies below complete on it) and, with the block
            // barrier after this region, to the other threads before they wait.
            unsafe { mbarrier::init(bar, 1) };
            mbarrier::fence_init();
            tma::fence_proxy_async();
            // SAFETY: the barrier is initialised (above) and its phase 0 announces the
            // row's 4·cols bytes, which the pieces below copy exactly; each piece's
            // source is inside row r of x, 16-byte aligned (x, ld_x aligned and the
            // piece starts at a multiple of 4 columns) and a multiple of 16 bytes long
            // (cols % 4 == 0); its destination is the same columns of the launch's
            // cols·4 bytes of dynamic shared memory, read only after the phase
            // completes; nothing writes x's row r before then (in place, y's row r is
            // x's, ld_y = ld_x, written only after the wait below; other rows are
            // other blocks').
            unsafe {
                mbarrier::arrive_expect_tx(bar, 4 * cols);
                let mut c = 0;
                while c < n {
                    let len = (n - c).min(SOFTMAX_ROW_BULK_PIECE as usize);
                    tma::bulk_load(row.add(c), xr.add(c), 4 * len as u32, bar, true);
                    c += len;
                }
            }
        }
        // Every thread, warp 0 reconverged, sees the initialised barrier.
        sync_threads();
        // SAFETY: initialised; phase 0 completes when every piece has landed.
        unsafe { mbarrier::wait(bar, 0) };
        // SAFETY (the three passes): the row landed; each thread reads and writes only
        // its own vectors of it (the Slice layout, start 0: column c at row[c]); scratch
        // holds the max in its first 32 floats and the sum in the next 32, each written
        // once (one row a block); y's row r is writable for cols columns, and in place
        // it is written only after every read of x (the copy landed before the wait).
        let m = unsafe { block_reduce_once(staged_max::<V>(row, 0, n, t, T), scratch, max_nan, f32::NEG_INFINITY) };
        let s = unsafe { staged_exp_sum::<V>(row, 0, n, t, T, m) };
        let s = unsafe { block_reduce_once(s, scratch.add(32), |a, b| a + b, 0.0) };
        unsafe { staged_store_scaled::<V>(row, yr, 0, n, t, T, is_aligned16(yr), rcp(s)) };
    }
}
