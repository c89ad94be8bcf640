//! Split-row softmax with the chunks staged by `cp.async`: the next chunk streams
//! from DRAM into shared memory while this one is reduced, waits for its row and
//! is written.
//!
//! [`crate::softmax_split`] holds its chunk in registers: a thread can keep only a
//! few 16-byte loads in flight (4 per 512-thread block, one or two blocks per SM),
//! so between its load burst and its stores an SM's share of DRAM bandwidth idles
//! while the block reduces and waits for the other blocks of its row. On the H100
//! that kernel moved long rows at 55-60% of copy bandwidth.
//!
//! Here a block owns two 64 KiB buffers of shared memory (one block per SM). Each
//! thread issues its 8 `cp.async` 16-byte copies of chunk `i + grid` into one
//! buffer, then waits only for its own copies of chunk `i` in the other (issued one
//! wave earlier, so usually landed), reads them into registers and goes on as the
//! register kernel does: block max and sum, publish the pair, wait for the row's
//! pairs, combine, write. Every thread reads back only the vectors it copied itself,
//! so the buffers need no barrier: a thread's `wait` makes its own copies visible
//! to it.
//!
//! Each row lies inside one wave (the grid is a multiple of `splits`), and every
//! block publishes a chunk's pair before waiting on anything, so with all blocks
//! resident (a cooperative launch) no wait is for a block that cannot run.
//!
//! `cp.async` needs 16-byte aligned sources: the host takes this kernel for rows
//! whose start and stride are multiples of 4 floats, and the register kernel
//! otherwise.
use crate::config::{
    SOFTMAX_ASYNC_CHUNK, SOFTMAX_ASYNC_SMEM_BYTES, SOFTMAX_ASYNC_THREADS, SOFTMAX_ASYNC_VECS,
};
use crate::params::SoftmaxSplitParams;
use crate::softmax_parts::{stage_async, Slice};
use crate::softmax_split::{publish_pair, wait_row};
use simt_std::kernel;
use simt_std::math::{exp, rcp};
use simt_std::memory::is_aligned16;
use simt_std::pipeline::{commit, wait};
use simt_std::shared::{dynamic_shared, Smem};
use simt_std::shared_array;
use simt_std::thread::{block_dim, block_idx, grid_dim, sync_threads, thread_idx};
use simt_std::warp::{block_max, block_sum};

/// 16-byte vectors per thread of a chunk.
const V: usize = SOFTMAX_ASYNC_VECS as usize;

kernel! {
    /// Split-row softmax, chunks staged through shared memory by `cp.async` (see the
    /// module doc).
    ///
    /// # Safety
    /// As `softmax_split`, with `splits = ceil(cols / SOFTMAX_ASYNC_CHUNK)`, `x`'s
    /// rows 16-byte aligned (`x.ptr` aligned, `x.ld % 4 == 0`) and
    /// `SOFTMAX_ASYNC_SMEM_BYTES` of dynamic shared memory.
    ///
    /// # Parameters
    /// * `p.x`, `p.y`: `[rows, cols]`; `p.splits`: chunks per row.
    /// * `p.partials`: `[rows·splits, 2]` scratch; `p.flags`: `[rows·splits]`; `p.epoch`.
    ///
    /// # Thread Mapping
    /// Block `b` takes chunk `i = b + w·grid.x` in wave `w` (row `i / splits`,
    /// columns `(i % splits)·16384 ..+16384`); thread `t` of 512 copies, reads and
    /// writes the 8 vectors at columns `4(t + 512k)` of the chunk; buffer `w % 2`.
    #[launch(threads = SOFTMAX_ASYNC_THREADS, shared = SOFTMAX_ASYNC_SMEM_BYTES, cooperative = true)]
    pub unsafe fn softmax_split_async(p: SoftmaxSplitParams) {
        let scratch = shared_array!(SOFTMAX_ASYNC_SCRATCH, f32, 32);
        let row_mm = shared_array!(SOFTMAX_ASYNC_ROW, f32, 2);
        let buf = dynamic_shared::<f32>();
        let (t, lanes) = (thread_idx().x as usize, block_dim().x as usize);
        let splits = p.splits as usize;
        let items = p.x.rows as usize * splits;
        let grid = grid_dim().x as usize;
        debug_assert!(grid % splits == 0, "softmax_split_async: grid.x must be a multiple of splits");
        let mut i = block_idx().x as usize;
        // SAFETY: item i's chunk (if any) is inside its row; buffer 0 is this thread's.
        unsafe { issue(&p, i, buf, t, lanes) };
        commit();
        let mut w = 0usize;
        while i < items {
            let next = i + grid;
            // SAFETY: as above, into the other buffer (an empty group past the last item).
            unsafe { issue(&p, next, buf.add(((w + 1) % 2) * SOFTMAX_ASYNC_CHUNK as usize), t, lanes) };
            commit();
            // This thread's copies of chunk i have landed (the newest group may still fly).
            wait::<1>();
            let (r, start, end) = chunk_cols(&p, i);
            // SAFETY: this thread's own copies of chunk i, waited for above.
            let mut s = unsafe { Slice::<V>::read_staged(buf.add((w % 2) * SOFTMAX_ASYNC_CHUNK as usize), start, end, t, lanes) };
            // SAFETY: scratch is this kernel's own; every thread calls.
            let m = unsafe { block_max(s.max(), scratch) };
            // A chunk of only -inf: its exponentials are 0 (not exp(-inf + inf) = NaN).
            let m_safe = if m == f32::NEG_INFINITY { 0.0 } else { m };
            let sum = unsafe { block_sum(s.exp_sum(m_safe), scratch) };
            // SAFETY: i < rows·splits.
            unsafe { publish_pair(&p, i, m, sum, t) };
            // SAFETY: a cooperative launch, whole rows per wave, every block publishes
            // before it waits; row_mm is read again only after the barrier at the end
            // of this chunk.
            let (mm, ss) = unsafe { wait_row(&p, r, row_mm, t) };
            let factor = exp(m - mm) * rcp(ss);
            // SAFETY: r < rows; [start, end) is inside row r of y.
            unsafe {
                let yr = p.y.ptr.add(r * p.y.ld as usize);
                s.store_scaled(yr, start, end, t, lanes, is_aligned16(yr), factor)
            };
            // Nobody overwrites `row_mm` (the next chunk) before everyone has read it.
            sync_threads();
            i = next;
            w += 1;
        }
        // Nothing may be left in flight when the block exits.
        wait::<0>();
    }
}

/// The row and the columns `[start, end)` of item `i`'s chunk.
#[inline(always)]
fn chunk_cols(p: &SoftmaxSplitParams, i: usize) -> (usize, usize, usize) {
    let splits = p.splits as usize;
    let (r, j) = (i / splits, i % splits);
    let start = j * SOFTMAX_ASYNC_CHUNK as usize;
    (
        r,
        start,
        (start + SOFTMAX_ASYNC_CHUNK as usize).min(p.x.cols as usize),
    )
}

/// Issues this thread's copies of item `i`'s chunk into `dst` (none past the last
/// item; see [`stage_async`]).
///
/// # Safety
/// The kernel's contract; `dst` is this chunk buffer (`SOFTMAX_ASYNC_CHUNK` floats).
#[inline(always)]
unsafe fn issue(p: &SoftmaxSplitParams, i: usize, dst: Smem<f32>, t: usize, lanes: usize) {
    if i >= p.x.rows as usize * p.splits as usize {
        return;
    }
    let (r, start, end) = chunk_cols(p, i);
    // SAFETY: r < rows; [start, end) is inside row r, whose start is 16-byte aligned
    // (contract) as is `start` (a multiple of 16384); the buffer is this chunk's.
    unsafe { stage_async::<V>(p.x.ptr.add(r * p.x.ld as usize), start, end, dst, t, lanes) }
}
