//! Softmax as one block per row that reads the row twice: an online `(max, sum)`
//! pass, then a pass that re-reads the row (from L2) and writes it.
//!
//! `y[r, c] = exp(x[r, c] - m_r) / s_r`, `m_r = max_c x[r, c]`,
//! `s_r = Σ_c exp(x[r, c] - m_r)`.
//!
//! The register kernels ([`crate::softmax_regs`]) read a row once and hold all of
//! it: at 16384 columns 32 floats a thread, 512 threads a row, two rows an SM, and
//! each row's store starts only after its whole load and two block reductions.
//! This kernel holds nothing between its passes except the pair:
//!
//! * **pass 1**: each thread folds its 16-byte vectors (4 loads in flight) into a
//!   running pair (`m' = max(m, x)`, `s' = s·exp(m - m') + exp(x - m')`,
//!   [`crate::softmax_online`]), and the block combines the threads' pairs;
//! * **pass 2**: each thread re-reads its vectors and writes `exp(x - m)/s`; where
//!   x and y are 16-byte aligned, the whole groups of 4 vectors are read as their
//!   last use (evict-first in L2), the row's last partial group and unaligned rows
//!   with ordinary loads.
//!
//! DRAM sees one read and one write per element as long as a row stays in L2
//! between its passes: rows in flight (a few a SM) times the row's bytes must stay
//! well under L2's 50 MiB (an H100 at 16384 columns: about 400 rows of 64 KiB, 26
//! MiB). This is the loop `torch.compile` generates for a softmax whose row is too
//! long for its persistent reduction (the first loop's loads kept in L2, the
//! second's evicted first); it fills the GPU with more, smaller blocks, and any row
//! length runs with no scratch memory and one launch.
//!
//! A row of only `-inf`, or holding a NaN, gives NaN, as `torch.softmax` does.
use crate::config::SOFTMAX_LOOPED_THREADS;
use crate::softmax_online::{block_combine, fold_span};
use crate::softmax_parts::write_span;
use simt_std::kernel;
use simt_std::math::rcp;
use simt_std::memory::is_aligned16;
use simt_std::shared_array;
use simt_std::thread::{block_dim, block_idx, thread_idx};

kernel! {
    /// Softmax of each row in two passes over it (see the module doc): any row
    /// length, one block per row, no scratch memory.
    ///
    /// # Safety
    /// `x` readable at `x[r*ld_x + c]`, `y` writable at `y[r*ld_y + c]` for
    /// `r < rows, c < cols`; `y` is `x` (in place) or does not overlap it; both in
    /// global memory; `grid.x = rows`.
    ///
    /// # Parameters
    /// * `x`, `y`: `[rows, cols]` row-major, row strides `ld_x`, `ld_y` (elements).
    ///
    /// # Thread Mapping
    /// Block `r` takes row `r`; thread `t` of `SOFTMAX_LOOPED_THREADS` takes the
    /// 16-byte vectors `t, t + T, t + 2T, …` of the row in both passes (4 loads in
    /// flight), their pairs combined by warp shuffles and one shared slot per warp.
    #[launch(threads = SOFTMAX_LOOPED_THREADS)]
    pub unsafe fn softmax_looped(x: *const f32, y: *mut f32, rows: u32, cols: u32, ld_x: u32, ld_y: u32) {
        let scratch = shared_array!(SOFTMAX_LOOPED_SCRATCH, f32, 64);
        let r = block_idx().x as usize;
        debug_assert!(r < rows as usize, "softmax_looped: grid.x must be rows");
        let (t, lanes, n) = (thread_idx().x as usize, block_dim().x as usize, cols as usize);
        // SAFETY: r < rows (grid.x = rows).
        let (xr, yr) = unsafe { (x.add(r * ld_x as usize), y.add(r * ld_y as usize)) };
        // SAFETY: row r of x holds `cols` readable floats (contract).
        let (m, s) = unsafe { fold_span(xr, 0, n, t, lanes, is_aligned16(xr)) };
        // SAFETY: every thread of the block calls it; scratch is this kernel's own.
        let (m, s) = unsafe { block_combine(m, s, scratch) };
        // SAFETY: row r readable in x and writable in y, in global memory (contract);
        // every thread's reads of pass 1 came before the barrier in block_combine, so
        // an in-place write here overwrites nothing another thread has yet to read.
        unsafe { write_span::<true>(xr, yr, 0, n, t, lanes, m, rcp(s)) };
    }
}
