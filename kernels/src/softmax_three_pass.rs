//! Softmax as `torch.compile` generates it for rows too long for its persistent
//! reduction: a block per row and three loops over the row.
//!
//! `y[r, c] = exp(x[r, c] - m_r) / s_r`, `m_r = max_c x[r, c]`,
//! `s_r = Σ_c exp(x[r, c] - m_r)`.
//!
//! What Inductor (torch 2.11) ran at 4096 x 16384 on an H100 (2026-12-08,
//! docs/PERFORMANCE.md session 38, `scripts/probes/inductor_code.py`): one program
//! of 1024 threads (32 registers, two blocks an SM) per row, and three loops, each
//! one vector a thread a step: the maximum, with loads that ask L2 to keep the row
//! (`evict_last`); the sum of `exp(x - m)`, the same loads again, now from L2; the
//! write of `exp(x - m) / s`, its loads marked as the row's last use
//! (`evict_first`). DRAM reads each row once as long as the rows in flight (two an
//! SM, 17 MiB at 16384 columns on an H100) stay in L2. It was 0.9-1.6% ahead of the
//! register rows ([`crate::softmax_regs`]) there in every in-process round of
//! sessions 36-37; this kernel is the same loops in Rust, for a like-for-like
//! comparison (the looped kernel, [`crate::softmax_looped`], is an online variant
//! at 512 threads, 4% behind).
//!
//! Rows not 16-byte aligned and a row's last partial vector read one float at a
//! time; any length. In the `sm_90a` module: the L2 cache policy of the first two
//! loops ([`simt_std::memory::load4_keep`]) needs PTX ISA 7.4. A row of only `-inf`, or holding a NaN, gives NaN, as
//! `torch.softmax` does.
use crate::config::{SOFTMAX_THREE_PASS_MIN_BLOCKS, SOFTMAX_THREE_PASS_THREADS};
use crate::softmax_parts::write_span;
use simt_std::kernel;
use simt_std::math::{exp, rcp};
use simt_std::memory::{is_aligned16, load4_first, load4_keep};
use simt_std::shared_array;
use simt_std::thread::{block_idx, thread_idx};
use simt_std::warp::{block_reduce_once, max_nan};

/// Threads of a block.
const T: usize = SOFTMAX_THREE_PASS_THREADS as usize;

/// Folds `f` over this thread's floats of `row[0..n]`: the 16-byte vectors `t,
/// t + T, …`, whole vectors by [`load4_keep`] where `vec`, the rest (the row's last
/// partial vector, or every vector of a row not 16-byte aligned) masked.
///
/// # Safety
/// `row[0..n]` readable global memory; `vec` only when `row` is 16-byte aligned.
#[inline(always)]
unsafe fn fold_row(row: *const f32, n: usize, t: usize, vec: bool, init: f32, f: impl Fn(f32, f32) -> f32) -> f32 {
    let step = 4 * T;
    let mut acc = init;
    let mut c = 4 * t;
    while vec && c + 4 <= n {
        // SAFETY: columns c..c+4 are in the row; aligned (vec, c % 4 == 0); global.
        let a = unsafe { load4_keep(row.add(c)) };
        acc = f(f(acc, a.x), a.y);
        acc = f(f(acc, a.z), a.w);
        c += step;
    }
    while c < n {
        let valid = (n - c).min(4);
        // SAFETY: columns c..c+valid are in the row.
        let a = unsafe { load4_first(row.add(c), valid as u32, vec) }.to_array();
        for &v in &a[..valid] {
            acc = f(acc, v);
        }
        c += step;
    }
    acc
}

kernel! {
    /// Softmax of each row in three loops over it (see the module doc): any row
    /// length, one block per row, no scratch memory.
    ///
    /// # Safety
    /// `x` readable at `x[r*ld_x + c]`, `y` writable at `y[r*ld_y + c]` for
    /// `r < rows, c < cols`; `y` is `x` with `ld_y = ld_x` (in place) or does not
    /// overlap it; both in global memory; `grid.x = rows`.
    ///
    /// # Parameters
    /// * `x`, `y`: `[rows, cols]` row-major, row strides `ld_x`, `ld_y` (elements).
    ///
    /// # Thread Mapping
    /// Block `r` takes row `r`; thread `t` of `SOFTMAX_THREE_PASS_THREADS` takes the
    /// 16-byte vectors `t, t + T, …` of the row in each loop; the maximum and the
    /// sum by warp shuffles and one shared slot per warp.
    #[launch(threads = SOFTMAX_THREE_PASS_THREADS, min_blocks = SOFTMAX_THREE_PASS_MIN_BLOCKS, target = "sm_90a")]
    pub unsafe fn softmax_three_pass(x: *const f32, y: *mut f32, rows: u32, cols: u32, ld_x: u32, ld_y: u32) {
        let scratch = shared_array!(SOFTMAX_THREE_PASS_SCRATCH, f32, 64);
        let r = block_idx().x as usize;
        debug_assert!(r < rows as usize, "softmax_three_pass: grid.x must be rows");
        let (t, n) = (thread_idx().x as usize, cols as usize);
        // SAFETY: r < rows (grid.x = rows).
        let (xr, yr) = unsafe { (x.add(r * ld_x as usize), y.add(r * ld_y as usize)) };
        let vec = is_aligned16(xr);
        // SAFETY (both loops): row r of x holds `cols` readable floats in global
        // memory (contract). Every thread of the block reaches both reductions;
        // scratch holds the max in its first 32 floats and the sum in the next 32,
        // each written once (one row a block).
        let m = unsafe { fold_row(xr, n, t, vec, f32::NEG_INFINITY, max_nan) };
        let m = unsafe { block_reduce_once(m, scratch, max_nan, f32::NEG_INFINITY) };
        let s = unsafe { fold_row(xr, n, t, vec, 0.0, |acc, v| acc + exp(v - m)) };
        let s = unsafe { block_reduce_once(s, scratch.add(32), |a, b| a + b, 0.0) };
        // SAFETY: row r readable in x and writable in y, in global memory (contract);
        // every read of the first two loops came before the barrier in the second
        // reduction, and each thread's third loop reads only the vectors it writes,
        // so an in-place write overwrites nothing another thread has yet to read.
        unsafe { write_span::<true>(xr, yr, 0, n, t, T, m, rcp(s)) };
    }
}
