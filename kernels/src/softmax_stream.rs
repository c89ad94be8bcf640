//! Softmax of long rows as one stream of chunk reads and chunk writes, with L2 as
//! the buffer between them: DRAM reads and writes overlap for the whole launch.
//!
//! The split kernels hold a chunk on chip from its read to its write, so a block
//! reads, reduces, waits for its row and writes, and the DRAM sits idle between
//! those phases (on the H200 the wide split kernel keeps DRAM busy a third of its
//! time: docs/PERFORMANCE.md, session 13). Here nothing is held. A chunk is touched
//! twice, by two independent pieces of work:
//!
//! * **stats** `S(i)`: read chunk `i` from DRAM (it stays in L2), reduce it to its
//!   pair `(m_i, s_i)` (maximum and `Σ exp(x - m_i)`), publish the pair;
//! * **write** `W(i)`: wait for the pairs of `i`'s row, combine them into `(M, S)`,
//!   read chunk `i` again (an L2 hit) and write `exp(x - M) / S`.
//!
//! The blocks walk one fixed order of all `2·n` pieces (`n = rows·splits` chunks):
//! first `S(0) … S(L-1)`, then pairs `S(L + q), W(q)`, then the last writes, where
//! the **lag** `L` is the grid (and at least `splits`). So about `L` chunks, 16 MiB
//! for 256 blocks of 64 KiB, wait in L2 between their read and their write, and at
//! every moment half of the blocks read new chunks while the other half write old
//! ones: a copy's traffic, read once and written once, with no phase in which the
//! DRAM has nothing to do. Within a pair the two pieces swap places every other
//! round of the grid, so each block alternates reading and writing.
//!
//! **Why this cannot deadlock.** Block `b` takes positions `b, b + grid, …` of the
//! order, in order, and the launch is cooperative (every block resident). A write
//! waits only for stats of its row, and those sit at earlier positions: with
//! `L >= splits`, the last chunk of `W(q)`'s row is at most `S(q + splits - 1)`, at
//! or before the pair before `W(q)`'s. Take the waiting block with the smallest
//! position: every stats piece it waits for is at a smaller position, so the block
//! holding it is not waiting, and it publishes.
//!
//! Rows that do not start 16-byte aligned are read as aligned rows up to 3 floats
//! longer, as by [`crate::softmax_split_wide`] (the head masked to `-inf`, never
//! written); the host then counts `splits` over `cols + 3` columns.
use crate::config::{
    SOFTMAX_STREAM_CHUNK, SOFTMAX_STREAM_MIN_BLOCKS, SOFTMAX_STREAM_THREADS, SOFTMAX_STREAM_VECS,
};
use crate::params::SoftmaxSplitParams;
use crate::softmax_parts::Slice;
use crate::softmax_split::{publish_pair, wait_row};
use simt_std::kernel;
use simt_std::math::rcp;
use simt_std::memory::is_aligned16;
use simt_std::shared_array;
use simt_std::thread::{block_idx, grid_dim, thread_idx};
use simt_std::warp::{block_reduce_once, max_nan};

/// 16-byte vectors per thread of a chunk.
const V: usize = SOFTMAX_STREAM_VECS as usize;
/// Threads per block: a constant, so the vectors' offsets are immediates.
const T: usize = SOFTMAX_STREAM_THREADS as usize;
/// Columns of a chunk.
const CHUNK: usize = SOFTMAX_STREAM_CHUNK as usize;

/// The lag of a launch of `grid` blocks over `n` chunks, `splits` per row: the grid,
/// at least `splits` (no write before its row's stats), at most `n`.
#[inline(always)]
pub const fn lag(grid: usize, splits: usize, n: usize) -> usize {
    let l = if grid > splits { grid } else { splits };
    if l < n {
        l
    } else {
        n
    }
}

/// The piece at position `pos` (`< 2n`) of the order over `n` chunks with lag `lag`
/// and `grid` blocks: `(true, i)` for `S(i)`, `(false, i)` for `W(i)`.
#[inline(always)]
pub const fn piece(pos: usize, n: usize, lag: usize, grid: usize) -> (bool, usize) {
    if pos < lag {
        return (true, pos);
    }
    if pos >= 2 * n - lag {
        return (false, pos - n);
    }
    let q = pos - lag;
    // The second of each pair is the write, except where the pair starts in an odd
    // round of the grid: each block then alternates between the two kinds. (One
    // round per pair, so a pair that straddles two rounds stays a pair.)
    let write = (q % 2 == 1) != (((q - q % 2) / grid) % 2 == 1);
    if write {
        (false, q / 2)
    } else {
        (true, lag + q / 2)
    }
}

/// Where chunk `i` lies: its row `r`, the row read as an aligned one from `xv` (`a`
/// floats before the row's first element), and the columns `[start, end)` of that
/// aligned row, the row's own from `lo`.
#[inline(always)]
fn chunk(p: &SoftmaxSplitParams, i: usize) -> (usize, *const f32, usize, usize, usize, usize) {
    let splits = p.splits as usize;
    // The row by a 32-bit division (rows·splits < 2^31, the contract).
    let r = (i as u32 / splits as u32) as usize;
    let j = i - r * splits;
    let xr = p.x.ptr.wrapping_add(r * p.x.ld as usize);
    let a = (xr as usize % 16) / 4;
    let start = j * CHUNK;
    let end = (start + CHUNK).min(p.x.cols as usize + a).max(start);
    (
        r,
        xr.wrapping_sub(a),
        a,
        start,
        if j == 0 { a } else { start },
        end,
    )
}

/// The kernel. A write piece loads its chunk before it waits for the row's pairs,
/// so the two latencies overlap, and the shared scratch alternates between two sets
/// by piece, so no barrier closes a piece. Warp-level pieces (each warp of a write
/// piece waiting for its row itself, no barrier) were slower: 16 warps poll the
/// flags instead of one (measurements in docs/PERFORMANCE.md, session 15).
///
/// # Safety
/// As [`softmax_stream()`].
#[inline(always)]
unsafe fn body(p: SoftmaxSplitParams) {
    // Two sets of (max scratch, sum scratch, row pair): piece k uses set k % 2. A warp
    // reaches piece k + 2's first write to a set only after every warp passed a
    // barrier of piece k + 1, so after every read of piece k's.
    let scratch = shared_array!(SOFTMAX_STREAM_SCRATCH, f32, 128);
    let row_mm = shared_array!(SOFTMAX_STREAM_ROW, f32, 4);
    let t = thread_idx().x as usize;
    let splits = p.splits as usize;
    let n = p.x.rows as usize * splits;
    let grid = grid_dim().x as usize;
    let l = lag(grid, splits, n);
    let mut pos = block_idx().x as usize;
    let mut set = 0;
    while pos < 2 * n {
        let (stats, i) = piece(pos, n, l, grid);
        let (r, xv, a, start, lo, end) = chunk(&p, i);
        let (sc, mm_slot) = (scratch.add(64 * set), row_mm.add(2 * set));
        if stats {
            // SAFETY: [lo, end) is inside row r, [start, lo) the bytes before it in x's
            // 16-byte aligned allocation (contract); xv is aligned.
            let mut s =
                unsafe { Slice::<V>::load_from::<true, false>(xv, start, lo, end, t, T, true) };
            // SAFETY: sc[0..32] and [32..64] are each reduced into once per piece; the
            // set alternates before they are written again.
            let m = unsafe { block_reduce_once(s.max(), sc, max_nan, f32::NEG_INFINITY) };
            // A chunk of only -inf: its exponentials are 0 (not exp(-inf + inf) = NaN).
            let m_safe = if m == f32::NEG_INFINITY { 0.0 } else { m };
            let part = s.exp_sum(m_safe);
            let sum = unsafe { block_reduce_once(part, sc.add(32), |a, b| a + b, 0.0) };
            // SAFETY: i < rows·splits.
            unsafe { publish_pair(&p, i, m, sum, t) };
        } else {
            // The chunk again, from L2 (its stats piece read it about a grid of pieces
            // ago), as its last use: evict-first, so L2 keeps the chunks still waiting.
            // SAFETY: as the stats load; x is in global memory.
            let mut s =
                unsafe { Slice::<V>::load_from::<true, true>(xv, start, lo, end, t, T, true) };
            // SAFETY: every stats piece of row r sits at an earlier position, held by a
            // resident block that publishes without waiting on this one (the module
            // doc); mm_slot is read again only after another piece's barrier.
            let (mm, ss) = unsafe { wait_row(&p, r, mm_slot, t) };
            // exp(x - M) with the row's own maximum; a row of only -inf (M = -inf)
            // comes out NaN, as PyTorch's.
            s.exp_sum(mm);
            // SAFETY: r < rows; [lo, end) of y's row read as x's (y's row `a` floats
            // on, aligned or not); nothing before lo is written; y is global memory.
            // Streaming stores: y is not read again here.
            unsafe {
                let yv = p.y.ptr.add(r * p.y.ld as usize).wrapping_sub(a);
                s.store_scaled_from::<true, true>(
                    yv,
                    start,
                    lo,
                    end,
                    t,
                    T,
                    is_aligned16(yv),
                    rcp(ss),
                );
            }
        }
        set ^= 1;
        pos += grid;
    }
}

kernel! {
    /// Softmax of rows of any length as a stream of chunk reads and writes through
    /// L2 (see the module doc).
    ///
    /// # Safety
    /// `p.x` readable and `p.y` writable as `[rows, cols]` (strides `ld`; `y` is `x`
    /// or does not overlap it); `x` lies in an allocation that starts 16-byte
    /// aligned; `splits = ceil(cols / SOFTMAX_STREAM_CHUNK)` when `x`'s rows are
    /// 16-byte aligned (`x.ptr` aligned, `x.ld % 4 == 0`) and `ceil((cols + 3) /
    /// SOFTMAX_STREAM_CHUNK)` otherwise; `p.partials` holds `2·rows·splits` floats
    /// and `p.flags` `rows·splits` u32, none of which holds `epoch` before the launch;
    /// `rows·splits < 2^31`; the launch is cooperative (every block resident), 512
    /// threads a block.
    ///
    /// # Parameters
    /// * `p.x`, `p.y`: `[rows, cols]`; `p.splits`: chunks per row.
    /// * `p.partials`: `[rows·splits, 2]` scratch; `p.flags`: `[rows·splits]`; `p.epoch`.
    ///
    /// # Thread Mapping
    /// Block `b` takes the positions `b, b + grid.x, …` of the order ([`piece`]);
    /// chunk `i` is row `i / splits`, columns `(i % splits)·16384 - a ..+16384` for a
    /// row `a` floats past a 16-byte boundary; thread `t` of 512 holds the 8 vectors
    /// at columns `4(t + 512k)` of the chunk; warp 0's lanes wait for a row's flags.
    #[launch(threads = SOFTMAX_STREAM_THREADS, min_blocks = SOFTMAX_STREAM_MIN_BLOCKS, cooperative = true)]
    pub unsafe fn softmax_stream(p: SoftmaxSplitParams) {
        // SAFETY: forwarded.
        unsafe { body(p) }
    }
}
