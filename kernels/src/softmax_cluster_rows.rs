//! Softmax of long rows over a thread-block cluster that stays resident and walks
//! the rows, loading its next row while it finishes the current one (Hopper).
//!
//! `y[r, c] = exp(x[r, c] - M_r) / S_r`, `M_r = max_c x[r, c]`,
//! `S_r = Σ_c exp(x[r, c] - M_r)`.
//!
//! The one-row clusters of [`crate::softmax_cluster`] read and write each element
//! once, yet stay below a copy's bandwidth (73% of it at 256 x 65536 on the H200,
//! docs/PERFORMANCE.md): each block's life is a burst of loads, two block
//! reductions and two cluster barriers with nothing in flight, then a burst of
//! stores. DRAM only stays busy if some other block happens to be loading
//! meanwhile. Here a cluster is persistent: cluster `q` of `Q` takes rows `q`,
//! `q + Q`, `q + 2Q`, … and, as soon as it starts on one row, issues the loads of
//! its next one into a second register chunk. Those 64 KiB per block are in flight
//! through the reductions, the exchange of `(max, sum)` pairs and the stores of the
//! current row, so every SM always has a row's worth of reads outstanding.
//!
//! Per row, as the one-row cluster (block rank `k` holds columns
//! `[16384·k, 16384·(k+1))` as one [`Slice`]):
//! 1. issue the next row's loads (if the cluster has one);
//! 2. reduce the current chunk to `(m_k, s_k)`; thread 0 writes the pair to this
//!    block's shared memory; [`cluster::sync`];
//! 3. warp 0 combines the `C` pairs (lane `j` reads rank `j`'s) into `(M, S)`;
//!    [`cluster::sync`];
//! 4. write `exp(x - m_k) · exp(m_k - M) / S`; the next chunk becomes the current.
//!
//! The two registers chunks (64 floats a thread) allow one block of 512 threads per
//! SM. Reusing the shared words from row to row is safe: a block writes its pair
//! for row `i + 1` only after the second barrier of row `i`, by which every block
//! has read it, and `row` only after the first barrier of row `i + 1`, which every
//! thread passes after reading it for row `i`. No cluster waits on another, so the
//! grid may hold more clusters than the device does at once (they then run in
//! turn); the host launches as many as it holds.
//!
//! Columns past the row's end read as `-inf`; a chunk of only `-inf` contributes
//! the pair `(-inf, 0)`; a row of only `-inf` gives NaN, as `torch.softmax` does.
use crate::config::{
    SOFTMAX_CLUSTER_ROWS_SIZES, SOFTMAX_CLUSTER_SLICE, SOFTMAX_CLUSTER_THREADS,
    SOFTMAX_CLUSTER_VECS,
};
use crate::softmax_parts::warp_combine;
use crate::softmax_parts::Slice;
use simt_std::cluster;
use simt_std::kernel;
use simt_std::math::{exp, rcp};
use simt_std::memory::{is_aligned16, F32x4};
use simt_std::shared::Smem;
use simt_std::shared_array;
use simt_std::thread::{block_dim, block_idx, grid_dim, thread_idx};
use simt_std::warp::{block_reduce_once, lane_id, max_nan};

/// 16-byte vectors per thread: one slice of 16384 columns per 512-thread block.
const V: usize = SOFTMAX_CLUSTER_VECS as usize;
/// Threads per block.
const T: usize = SOFTMAX_CLUSTER_THREADS as usize;

/// The body of `softmax_cluster_rows_*`: clusters of `C` blocks of one slice each,
/// cluster `q` of `grid.x / C` taking rows `q, q + grid.x / C, …`.
///
/// # Safety
/// As the kernels': `x` readable and `y` writable for `rows` rows of
/// `cols <= 16384·C` columns; `scratch` is 64 floats, `pair` and `row` 2 floats
/// each of this kernel's shared memory.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn cluster_rows<const C: usize>(
    x: *const f32,
    y: *mut f32,
    rows: u32,
    cols: u32,
    ld_x: u32,
    ld_y: u32,
    scratch: Smem<f32>,
    pair: Smem<f32>,
    row: Smem<f32>,
) {
    debug_assert!(cluster::size() as usize == C && block_dim().x as usize == T);
    let clusters = grid_dim().x as usize / C;
    debug_assert!(clusters * C == grid_dim().x as usize, "softmax_cluster_rows: grid.x must be a multiple of the cluster size");
    let (rows, n, t) = (rows as usize, cols as usize, thread_idx().x as usize);
    let first = (cluster::rank() as usize * SOFTMAX_CLUSTER_SLICE as usize).min(n);
    let end = (first + SOFTMAX_CLUSTER_SLICE as usize).min(n);
    // Every block of a cluster has the same r, so a cluster with no row returns
    // whole, before any cluster barrier.
    let mut r = block_idx().x as usize / C;
    if r >= rows {
        return;
    }
    // The next row is loaded ahead only where this block's slice of every row lies
    // whole in aligned memory (all of it but a ragged last slice, for aligned rows):
    // there its loads need no checks, and the two slices fit in registers. Other
    // blocks load each row when they start it.
    let ahead = first + SOFTMAX_CLUSTER_SLICE as usize <= n && is_aligned16(x) && ld_x % 4 == 0;
    // SAFETY: r < rows, whose `cols` floats are readable (the contract); [first, end)
    // is inside the row.
    let load = |r: usize| unsafe {
        let xr = x.add(r * ld_x as usize);
        Slice::<V>::load(xr, first, end, t, T, is_aligned16(xr))
    };
    let mut cur = load(r);
    loop {
        let next_r = r + clusters;
        // The next row's loads go out now and land during this row's reductions,
        // barriers and stores.
        let next = if ahead && next_r < rows {
            // SAFETY: next_r < rows; the slice lies whole in the row, which starts
            // 16-byte aligned (x aligned, ld_x % 4 == 0); first % 4 == 0.
            unsafe { Slice::<V>::load_whole(x.add(next_r * ld_x as usize), first, t, T) }
        } else {
            Slice { v: [F32x4::splat(f32::NEG_INFINITY); V] }
        };
        // SAFETY: scratch's halves are reduced into once per row; the previous row's
        // readers of them passed both cluster barriers of that row before any thread
        // writes them again here.
        let m = unsafe { block_reduce_once(cur.max(), scratch, max_nan, f32::NEG_INFINITY) };
        // A chunk of only -inf: its exponentials are 0 (not exp(-inf + inf) = NaN).
        let m_safe = if m == f32::NEG_INFINITY { 0.0 } else { m };
        // SAFETY: as the first reduction, on the second half of scratch.
        let sum = unsafe { block_reduce_once(cur.exp_sum(m_safe), scratch.add(32), |a, b| a + b, 0.0) };
        if t == 0 {
            // SAFETY: this kernel's own 2 floats; every block read this row's
            // predecessor's pair before the previous row's second barrier.
            unsafe {
                pair.write(m);
                pair.add(1).write(sum);
            }
        }
        cluster::sync();
        if t < 32 {
            let lane = lane_id();
            let (mut pm, mut ps) = (f32::NEG_INFINITY, 0.0);
            if (lane as usize) < C {
                // SAFETY: rank lane < C; its pair was written before the barrier above
                // and is not written again before the barrier below.
                unsafe {
                    let remote = cluster::map(pair, lane);
                    (pm, ps) = (remote.read(), remote.add(1).read());
                }
            }
            let (mm, ss) = warp_combine(pm, ps);
            if t == 0 {
                // SAFETY: this kernel's own 2 floats; every thread read the previous
                // row's values before the barrier above.
                unsafe {
                    row.write(mm);
                    row.add(1).write(ss);
                }
            }
        }
        // Every block has read the pairs (so they may be overwritten, or the block
        // exit), and `row` is visible to the whole block.
        cluster::sync();
        // SAFETY: written by thread 0 before the barrier.
        let (mm, ss) = unsafe { (row.read(), row.add(1).read()) };
        let factor = exp(m - mm) * rcp(ss);
        // SAFETY: r < rows; [first, end) inside the row (the contract).
        unsafe {
            let yr = y.add(r * ld_y as usize);
            cur.store_scaled(yr, first, end, t, T, is_aligned16(yr), factor);
        }
        if next_r >= rows {
            return;
        }
        r = next_r;
        cur = if ahead { next } else { load(r) };
    }
}

macro_rules! cluster_rows_kernel {
    ($name:ident, $i:expr, $cols:literal, $scratch:ident, $pair:ident, $row:ident) => {
        kernel! {
            #[doc = concat!("Softmax of rows of at most ", $cols, " columns, each over a cluster of `SOFTMAX_CLUSTER_ROWS_SIZES[", $i, "]` blocks that then takes the next row (see the module doc).")]
            ///
            /// # Safety
            /// `x` readable at `x[r*ld_x + c]`, `y` writable at `y[r*ld_y + c]` for
            /// `r < rows, c < cols`; `y` is `x` (in place) or does not overlap it;
            /// `cols <= 16384·C`; `grid.x` a multiple of `C`.
            ///
            /// # Parameters
            /// * `x`, `y`: `[rows, cols]` row-major, row strides `ld_x`, `ld_y` (elements).
            ///
            /// # Thread Mapping
            /// Cluster `q` of `Q = grid.x / C` takes rows `q, q + Q, …`; block rank
            /// `k` its columns `[16384·k, 16384·(k+1))`; thread `t` of 512 holds
            /// columns `16384·k + 4(t + 512j) ..+4`, `j < 8`, of the current row and
            /// of the next.
            #[launch(threads = SOFTMAX_CLUSTER_THREADS, min_blocks = 1, cluster = SOFTMAX_CLUSTER_ROWS_SIZES[$i], target = "sm_90a")]
            pub unsafe fn $name(x: *const f32, y: *mut f32, rows: u32, cols: u32, ld_x: u32, ld_y: u32) {
                let scratch = shared_array!($scratch, f32, 64);
                let pair = shared_array!($pair, f32, 2);
                let row = shared_array!($row, f32, 2);
                // SAFETY: the kernel's contract, forwarded; the arrays are this kernel's own.
                unsafe {
                    cluster_rows::<{ SOFTMAX_CLUSTER_ROWS_SIZES[$i] as usize }>(x, y, rows, cols, ld_x, ld_y, scratch, pair, row)
                }
            }
        }
    };
}

cluster_rows_kernel!(softmax_cluster_rows_32k, 0, "32768", SMR_32K_SCRATCH, SMR_32K_PAIR, SMR_32K_ROW);
cluster_rows_kernel!(softmax_cluster_rows_64k, 1, "65536", SMR_64K_SCRATCH, SMR_64K_PAIR, SMR_64K_ROW);
cluster_rows_kernel!(softmax_cluster_rows_128k, 2, "131072", SMR_128K_SCRATCH, SMR_128K_PAIR, SMR_128K_ROW);
