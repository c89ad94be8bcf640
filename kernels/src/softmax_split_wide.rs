//! Split-row softmax with wide chunks: half of each chunk in registers, half staged
//! in shared memory, so that a few long rows fit on chip all at once.
//!
//! The split kernels before this one ([`crate::softmax_split`],
//! [`crate::softmax_split_async`]) hold 16-64 KiB per SM at a time. A wave of
//! them is then a row or two of 2^20 floats, and every wave pays the full cycle of
//! load, reduce, wait for the row's other blocks, store, with DRAM idle through the
//! middle of it: on the H100, 8 x 2^20 ran at 51% of copy bandwidth, no faster than
//! the two-pass online softmax.
//!
//! An SM has 256 KiB of registers and 228 KiB of shared memory. This kernel uses
//! half of each: a block of 512 threads holds a chunk of 32768 columns (128 KiB),
//!
//! * the first 16384 columns in registers, 32 floats a thread (the
//!   [`Slice`] of `softmax_row_16k`),
//! * the next 16384 in 64 KiB of shared memory, copied by `cp.async`
//!   ([`stage_async`]) and read back by the thread that copied them,
//!
//! and two blocks share an SM (64 registers a thread at most). The 132 SMs of an
//! H100 hold 264 chunks, 33 MiB: 8 rows of 2^20 floats are **one wave** (read all,
//! one wait, write all), and 64 rows of 262144 two waves, where the second wave's
//! copies go out right behind the first wave's stores.
//!
//! Per chunk, as the other split kernels: reduce it to `(m_j, s_j)` (its maximum
//! and `Σ exp(x - m_j)`, the staged half's exponentials written back in place),
//! publish the pair ([`simt_std::flag`]), wait for the row's others, combine them
//! ([`crate::softmax_online::row_pair`]) and write `exp(x - m_j)·exp(m_j - M)/S`.
//! The launch is cooperative and the grid whole rows per wave, so every block a
//! wait needs is resident and publishes before it waits.
//!
//! `cp.async` needs 16-byte aligned sources. A row that does not start 16-byte
//! aligned (an odd row stride, a view at an odd column) is read as the aligned row
//! that starts `a = 1..3` floats earlier, `a + cols` columns long: its first `a`
//! columns are `-inf` and never written (the head vector of the first chunk is read
//! whole, from inside the same 16-byte aligned allocation, and masked:
//! [`Slice::load_from`]), and every other vector is whole, aligned and copied as the
//! aligned rows' are. Such rows may need one chunk more, so the host passes
//! `splits = ceil((cols + 3) / 32768)` for them; a chunk past a row's end is empty and
//! publishes the identity `(-inf, 0)`. On the H200 the scalar loads that unaligned rows
//! took before (in the other split kernels and the online passes) ran at half the
//! speed (docs/PERFORMANCE.md).
use crate::config::{
    SOFTMAX_WIDE_CHUNK, SOFTMAX_WIDE_MIN_BLOCKS, SOFTMAX_WIDE_REG_COLS, SOFTMAX_WIDE_REG_VECS,
    SOFTMAX_WIDE_SMEM_BYTES, SOFTMAX_WIDE_SMEM_VECS, SOFTMAX_WIDE_THREADS,
};
use crate::params::SoftmaxSplitParams;
use crate::softmax_parts::{stage_async, staged_exp_sum, staged_max, staged_store_scaled, Slice};
use crate::softmax_split::{publish_pair, wait_row};
use simt_std::kernel;
use simt_std::math::{exp, rcp};
use simt_std::memory::{compiler_barrier, is_aligned16};
use simt_std::pipeline::{commit, wait};
use simt_std::shared::dynamic_shared;
use simt_std::shared_array;
use simt_std::thread::{block_idx, grid_dim, sync_threads, thread_idx};
use simt_std::warp::{block_reduce_once, max_nan};

/// 16-byte vectors per thread in registers.
const V: usize = SOFTMAX_WIDE_REG_VECS as usize;
/// 16-byte vectors per thread staged in shared memory.
const W: usize = SOFTMAX_WIDE_SMEM_VECS as usize;
/// Threads per block: a constant, so the vectors' offsets are immediates.
const T: usize = SOFTMAX_WIDE_THREADS as usize;
/// Columns of a chunk held in registers.
const REG_COLS: usize = SOFTMAX_WIDE_REG_COLS as usize;

kernel! {
    /// Split-row softmax with chunks of 32768 columns, half in registers and half
    /// in shared memory (see the module doc).
    ///
    /// # Safety
    /// As `softmax_split`, with `splits = ceil(cols / SOFTMAX_WIDE_CHUNK)` when `x`'s
    /// rows are 16-byte aligned (`x.ptr` aligned, `x.ld % 4 == 0`) and
    /// `ceil((cols + 3) / SOFTMAX_WIDE_CHUNK)` otherwise, 512 threads and
    /// `SOFTMAX_WIDE_SMEM_BYTES` of dynamic shared memory. `x` lies in an
    /// allocation that starts 16-byte aligned (a row's aligned-down start is formed,
    /// never read before the row).
    ///
    /// # Parameters
    /// * `p.x`, `p.y`: `[rows, cols]`; `p.splits`: chunks per row.
    /// * `p.partials`: `[rows·splits, 2]` scratch; `p.flags`: `[rows·splits]`; `p.epoch`.
    ///
    /// # Thread Mapping
    /// Block `b` takes chunk `i = b + w·grid.x` in wave `w` (row `i / splits`,
    /// columns `(i % splits)·32768 - a ..+32768` for a row `a` floats past a 16-byte
    /// boundary); thread `t` of 512 holds in registers
    /// the 8 vectors at columns `4(t + 512k)` of the chunk, and stages in shared
    /// memory the 8 at `16384 + 4(t + 512k)` (its own slots, at `4(t + 512k)` of
    /// the buffer); warp 0's lanes wait for the row's flags.
    #[launch(threads = SOFTMAX_WIDE_THREADS, min_blocks = SOFTMAX_WIDE_MIN_BLOCKS, shared = SOFTMAX_WIDE_SMEM_BYTES, cooperative = true)]
    pub unsafe fn softmax_split_wide(p: SoftmaxSplitParams) {
        let scratch = shared_array!(SOFTMAX_WIDE_SCRATCH, f32, 64);
        let row_mm = shared_array!(SOFTMAX_WIDE_ROW, f32, 2);
        let chunk_m = shared_array!(SOFTMAX_WIDE_CHUNK_MAX, f32, 1);
        let buf = dynamic_shared::<f32>();
        let t = thread_idx().x as usize;
        let splits = p.splits as usize;
        let items = p.x.rows as usize * splits;
        let grid = grid_dim().x as usize;
        debug_assert!(grid % splits == 0, "softmax_split_wide: grid.x must be a multiple of splits");
        let mut i = block_idx().x as usize;
        while i < items {
            // The row by a 32-bit division (rows·splits < 2^32, checked by the host).
            let r = (i as u32 / splits as u32) as usize;
            let j = i - r * splits;
            // SAFETY: r < rows (i < items).
            let xr = unsafe { p.x.ptr.add(r * p.x.ld as usize) };
            // The row as an aligned one: `a` floats of head before its first element.
            let a = (xr as usize % 16) / 4;
            let xv = xr.wrapping_sub(a);
            let start = j * SOFTMAX_WIDE_CHUNK as usize;
            let end = (start + SOFTMAX_WIDE_CHUNK as usize).min(p.x.cols as usize + a).max(start);
            let mid = (start + REG_COLS).min(end);
            let lo = if j == 0 { a } else { start };
            // The staged half's copies first (they hold no registers), then the
            // register half's loads: all 16 vectors of a thread in flight at once.
            // SAFETY: [mid, end) is inside row r (mid >= 16384 > a, or empty) and
            // 16-byte aligned (xv is; mid % 4 == 0); the buffer's slots are this
            // thread's own.
            unsafe { stage_async::<W>(xv, mid, end, buf, t, T) };
            commit();
            // SAFETY: [lo, mid) is inside row r, [start, lo) the bytes before it in x's
            // 16-byte aligned allocation (contract); xv is aligned.
            let mut s = unsafe { Slice::<V>::load_from::<true, false>(xv, start, lo, mid, t, T, true) };
            wait::<0>();
            // SAFETY (the staged calls below): this thread's copies have landed.
            let m = max_nan(s.max(), unsafe { staged_max::<W>(buf, mid, end, t, T) });
            // SAFETY: scratch[0..32] is reduced into once per chunk; the barrier after
            // the flag wait below separates the reads from the next chunk's writes.
            let m = unsafe { block_reduce_once(m, scratch, max_nan, f32::NEG_INFINITY) };
            // A chunk of only -inf: its exponentials are 0 (not exp(-inf + inf) = NaN).
            let m_safe = if m == f32::NEG_INFINITY { 0.0 } else { m };
            if t == 0 {
                // The chunk's maximum waits in shared memory, not in a register of
                // every thread through the row wait (a spill on sm_90); visible after
                // the sum's barrier, rewritten after the chunk's last barrier.
                // SAFETY: this kernel's own float.
                unsafe { chunk_m.write(m) };
            }
            let part = s.exp_sum(m_safe) + unsafe { staged_exp_sum::<W>(buf, mid, end, t, T, m_safe) };
            // SAFETY: as the first reduction, on scratch[32..64].
            let sum = unsafe { block_reduce_once(part, scratch.add(32), |a, b| a + b, 0.0) };
            // SAFETY: i < rows·splits.
            unsafe { publish_pair(&p, i, m, sum, t) };
            // SAFETY: a cooperative launch, whole rows per wave, every block publishes
            // before it waits; row_mm is read again only after the barrier at the end
            // of this chunk.
            let (mm, ss) = unsafe { wait_row(&p, r, row_mm, t) };
            // SAFETY: written by thread 0 before the barriers since.
            let factor = exp(unsafe { chunk_m.read() } - mm) * rcp(ss);
            // SAFETY: r < rows; both halves are inside row r of y, read from the same
            // virtual columns as x's (y's row `a` floats on, aligned or not).
            unsafe {
                let yv = p.y.ptr.add(r * p.y.ld as usize).wrapping_sub(a);
                let vec = is_aligned16(yv);
                s.store_scaled_from::<true, false>(yv, start, lo, mid, t, T, vec, factor);
                // The staged part one vector at a time: without the barrier LLVM hoists
                // its shared loads above the stores above, all live at once (spills).
                compiler_barrier();
                staged_store_scaled::<W>(buf, yv, mid, end, t, T, vec, factor);
            }
            // Nobody overwrites `row_mm` or the scratch (the next chunk) before
            // everyone has read them.
            sync_threads();
            i += grid;
        }
    }
}
