//! Softmax of long rows split over several blocks, each chunk held in registers:
//! one read and one write per element, with a single row spread over the whole GPU.
//!
//! A row of 2^20 floats does not fit in one block (the register-resident kernels of
//! [`crate::softmax_regs`] stop at 16384 columns), and one block per row would leave
//! all but 8 SMs idle at 8 rows. So row `r` is cut into `splits` chunks of
//! `SOFTMAX_SPLIT_CHUNK` (8192) columns, one block each:
//!
//! 1. the block loads its chunk into registers (16 floats a thread) and reduces it
//!    to a pair `(m_j, s_j)`: its maximum and `Σ exp(x - m_j)`;
//! 2. it writes the pair and **publishes** it ([`simt_std::flag`]);
//! 3. it **waits** for the row's other `splits - 1` pairs, combines all of them
//!    into `(M, S)` ([`crate::softmax_parts::combine`]) and writes
//!    `exp(x - m_j) · exp(m_j - M) / S` from its registers.
//!
//! Step 3 needs every block of the row resident at once, so the kernel is
//! cooperative: the grid is at most what the device holds
//! (`Gpu::max_resident_blocks`), rounded down to whole rows, and the blocks loop
//! over the rows in waves (block `b` takes chunks `b, b + grid, b + 2·grid, …`).
//! A wave never waits on another wave: each row lies inside one wave, so every
//! chunk of it is resident when its blocks wait. Rows longer than a wave holds
//! (`grid · 8192` columns) take the two-pass online softmax instead.
//!
//! Why 8192 and not the 16384 of the largest register-resident kernel: 16 floats a
//! thread need about 40 registers, so three 512-thread blocks share an SM, and
//! while one waits for its row's flags the others load and store. 32 floats a
//! thread need 72 registers (one block per SM, every wait idles the SM), and
//! capping them at 64 spills.
//!
//! Flags compare equal to the launch's `epoch` (see [`simt_std::flag`]): a flag
//! buffer zeroed once serves every later launch.
use crate::config::{SOFTMAX_ROW_CONFIGS, SOFTMAX_SPLIT_CHUNK};
use crate::params::SoftmaxSplitParams;
use crate::softmax_online::row_pair;
use crate::softmax_parts::Slice;
use simt_std::flag::{publish, wait_eq};
use simt_std::kernel;
use simt_std::math::{exp, rcp};
use simt_std::memory::{is_aligned16, F32x4};
use simt_std::shared::Smem;
use simt_std::shared_array;
use simt_std::thread::sync_threads;
use simt_std::thread::{block_dim, block_idx, grid_dim, thread_idx};
use simt_std::warp::{block_max, block_sum, lane_id};

/// 16-byte vectors per thread of a chunk.
const V: usize = SOFTMAX_ROW_CONFIGS[2].1 as usize;

kernel! {
    /// Split-row softmax: `splits` blocks per row, each chunk in registers, pairs
    /// exchanged through published flags (see the module doc).
    ///
    /// # Safety
    /// `p.x` readable and `p.y` writable as `[rows, cols]` (strides `ld`; `y` is `x`
    /// or does not overlap it); `splits = ceil(cols / SOFTMAX_SPLIT_CHUNK)`;
    /// `p.partials` holds `2·rows·splits` floats and `p.flags` `rows·splits` u32, none
    /// of which holds `epoch` before the launch; `grid.x` is a positive multiple of
    /// `splits`, and the launch is cooperative (every block resident).
    ///
    /// # Parameters
    /// * `p.x`, `p.y`: `[rows, cols]`; `p.splits`: chunks per row.
    /// * `p.partials`: `[rows·splits, 2]` scratch; `p.flags`: `[rows·splits]`; `p.epoch`.
    ///
    /// # Thread Mapping
    /// Block `b` takes chunk `i = b + w·grid.x` in wave `w` (row `i / splits`,
    /// columns `(i % splits)·8192 ..+8192`); thread `t` of 512 holds the 4 vectors
    /// at columns `4(t + 512k)` of the chunk; warp 0's lanes wait for the row's flags.
    #[launch(threads = SOFTMAX_ROW_CONFIGS[2].0, cooperative = true)]
    pub unsafe fn softmax_split(p: SoftmaxSplitParams) {
        let scratch = shared_array!(SOFTMAX_SPLIT_SCRATCH, f32, 32);
        let row_mm = shared_array!(SOFTMAX_SPLIT_ROW, f32, 2);
        let (t, lanes) = (thread_idx().x as usize, block_dim().x as usize);
        let splits = p.splits as usize;
        let items = p.x.rows as usize * splits;
        let grid = grid_dim().x as usize;
        debug_assert!(grid % splits == 0, "softmax_split: grid.x must be a multiple of splits");
        // Two chunks in flight: chunk `i` is loaded and reduced while chunk `i - grid`
        // (the previous wave's) waits for its row; then the previous one is written.
        // A block publishes wave w's pair before it waits for anything of wave w, so
        // every wait is for a pair that a resident block publishes without waiting.
        let mut i = block_idx().x as usize;
        // SAFETY: the chunk of item i (if any) is inside its row.
        let mut cur = unsafe { load_chunk(&p, i, t, lanes) };
        let mut prev: Option<Pending> = None;
        let mut prev_slice = Slice::<V> { v: [F32x4::splat(0.0); V] };
        loop {
            let mut pending = None;
            if i < items {
                // The chunk after this one streams into L2 meanwhile.
                // SAFETY: item i + grid's chunk is inside its row.
                unsafe { prefetch_chunk(&p, i + grid, t, lanes) };
                // SAFETY: scratch is this kernel's own; every thread calls.
                let m = unsafe { block_max(cur.max(), scratch) };
                // A chunk of only -inf: its exponentials are 0 (not exp(-inf + inf) = NaN).
                let m_safe = if m == f32::NEG_INFINITY { 0.0 } else { m };
                let sum = unsafe { block_sum(cur.exp_sum(m_safe), scratch) };
                // SAFETY: i < rows·splits.
                unsafe { publish_pair(&p, i, m, sum, t) };
                pending = Some(Pending { i, m });
            }
            if let Some(w) = prev {
                // SAFETY: `w` was published by this block and its row's blocks are resident.
                unsafe { finish(&p, w, &prev_slice, row_mm, t, lanes) };
            }
            let Some(w) = pending else { break };
            prev = Some(w);
            prev_slice = cur;
            i += grid;
            // SAFETY: as the first load.
            cur = unsafe { load_chunk(&p, i, t, lanes) };
        }
    }
}

/// A chunk whose pair is published and whose output is still to be written.
#[derive(Clone, Copy)]
struct Pending {
    /// The item (`row·splits + chunk`).
    i: usize,
    /// The chunk's maximum.
    m: f32,
}

/// The columns `[start, end)` of item `i`'s chunk, and its row.
#[inline(always)]
fn chunk_cols(p: &SoftmaxSplitParams, i: usize) -> (usize, usize, usize) {
    let splits = p.splits as usize;
    let (r, j) = (i / splits, i % splits);
    let start = j * SOFTMAX_SPLIT_CHUNK as usize;
    (
        r,
        start,
        (start + SOFTMAX_SPLIT_CHUNK as usize).min(p.x.cols as usize),
    )
}

/// Loads item `i`'s chunk into registers (nothing past the last item).
///
/// # Safety
/// `p` satisfies the kernel's contract.
#[inline(always)]
unsafe fn load_chunk(p: &SoftmaxSplitParams, i: usize, t: usize, lanes: usize) -> Slice<V> {
    if i >= p.x.rows as usize * p.splits as usize {
        return Slice {
            v: [F32x4::splat(0.0); V],
        };
    }
    let (r, start, end) = chunk_cols(p, i);
    // SAFETY: r < rows; [start, end) is inside row r.
    unsafe {
        let xr = p.x.ptr.add(r * p.x.ld as usize);
        Slice::<V>::load(xr, start, end, t, lanes, is_aligned16(xr))
    }
}

/// Prefetches item `i`'s chunk into L2 (nothing past the last item).
///
/// # Safety
/// As [`load_chunk`].
#[inline(always)]
unsafe fn prefetch_chunk(p: &SoftmaxSplitParams, i: usize, t: usize, lanes: usize) {
    if i < p.x.rows as usize * p.splits as usize {
        let (r, start, end) = chunk_cols(p, i);
        // SAFETY: r < rows; [start, end) is inside row r.
        unsafe { Slice::<V>::prefetch(p.x.ptr.add(r * p.x.ld as usize), start, end, t, lanes) };
    }
}

/// Thread 0 writes chunk `i`'s pair `(m, sum)` and publishes it (the split kernels'
/// step 2).
///
/// # Safety
/// `p` satisfies a split kernel's contract and `i < rows·splits`.
#[inline(always)]
pub(crate) unsafe fn publish_pair(p: &SoftmaxSplitParams, i: usize, m: f32, sum: f32, t: usize) {
    if t == 0 {
        // SAFETY: i < rows·splits (caller); the pair is written before the flag is published.
        unsafe {
            *p.partials.add(2 * i) = m;
            *p.partials.add(2 * i + 1) = sum;
            publish(p.flags.add(i), p.epoch);
        }
    }
}

/// Waits for the pairs of row `r` and returns their combination `(M, S)` to every
/// thread of the block (warp 0 waits, lane `l` for chunks `l, l + 32, …`, and passes
/// the result through `row_mm`; one barrier inside). Called by every thread.
///
/// # Safety
/// `p` satisfies a split kernel's contract, `r < rows`, and every block holding a
/// chunk of row `r` is resident and publishes its pair before it waits on anything;
/// `row_mm` is 2 floats of this block's shared memory that no thread reads from an
/// earlier call after this one starts (a barrier between them).
#[inline(always)]
pub(crate) unsafe fn wait_row(
    p: &SoftmaxSplitParams,
    r: usize,
    row_mm: Smem<f32>,
    t: usize,
) -> (f32, f32) {
    let splits = p.splits as usize;
    if t < 32 {
        let mut k = lane_id() as usize;
        while k < splits {
            // SAFETY: flag r·splits + k exists; its block is resident and publishes
            // before it waits (caller).
            unsafe { wait_eq(p.flags.add(r * splits + k), p.epoch) };
            k += 32;
        }
        // SAFETY: every pair of row r is published and acquired above.
        let (mm, ss) = unsafe { row_pair(p.partials, r, splits) };
        if t == 0 {
            // SAFETY: this block's own 2 floats (caller).
            unsafe {
                row_mm.write(mm);
                row_mm.add(1).write(ss);
            }
        }
    }
    sync_threads();
    // SAFETY: written by thread 0 before the barrier.
    unsafe { (row_mm.read(), row_mm.add(1).read()) }
}

/// Waits for the pairs of `w`'s row, combines them and writes `w`'s chunk from `s`.
/// Called by every thread of the block (barriers inside).
///
/// # Safety
/// As [`load_chunk`]; `w` was published by this block.
#[inline(always)]
unsafe fn finish(
    p: &SoftmaxSplitParams,
    w: Pending,
    s: &Slice<V>,
    row_mm: Smem<f32>,
    t: usize,
    lanes: usize,
) {
    let (r, start, end) = chunk_cols(p, w.i);
    // SAFETY: the kernel's contract: whole rows per wave, every block publishes
    // before it waits; row_mm is read again only after the barrier below.
    let (mm, ss) = unsafe { wait_row(p, r, row_mm, t) };
    let factor = exp(w.m - mm) * rcp(ss);
    // SAFETY: r < rows; [start, end) is inside row r of y.
    unsafe {
        let yr = p.y.ptr.add(r * p.y.ld as usize);
        s.store_scaled(yr, start, end, t, lanes, is_aligned16(yr), factor)
    };
    // Nobody overwrites `row_mm` (the next chunk) before everyone has read it.
    sync_threads();
}
