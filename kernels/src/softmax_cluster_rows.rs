//! Softmax of long rows over a thread-block cluster that stays resident and walks
//! the rows, copying its next two rows into shared memory while it finishes the
//! current one (Hopper).
//!
//! `y[r, c] = exp(x[r, c] - M_r) / S_r`, `M_r = max_c x[r, c]`,
//! `S_r = Σ_c exp(x[r, c] - M_r)`.
//!
//! The one-row clusters of [`crate::softmax_cluster`] read and write each element
//! once, yet stay below a copy's bandwidth (ncu on the H200: DRAM busy 54% of the
//! time at 256 x 65536): each block's life is a burst of loads, two block
//! reductions and two cluster barriers with nothing in flight, then a burst of
//! stores. DRAM only stays busy if some other block happens to be loading
//! meanwhile. Here a cluster is persistent: cluster `q` of `Q` takes rows `q`,
//! `q + Q`, `q + 2Q`, … and keeps the next two in flight as `cp.async` copies into
//! a ring of three shared-memory stages (64 KiB each, one block per SM). While a
//! block reduces, exchanges and stores one row, 128 KiB of reads per SM are on
//! their way, in no register. (Holding the next row in registers instead, 64 KiB
//! in flight, ran 256 x 65536 in 0.0486 ms against the one-row clusters' 0.0439.)
//!
//! Per row, as the one-row cluster (block rank `k` holds columns
//! `[16384·k, 16384·(k+1))` as one [`Slice`]):
//! 1. issue the copies of the row two ahead (into the stage the previous row used);
//!    wait for this thread's copies of the current row and read them;
//! 2. reduce the chunk to `(m_k, s_k)`; thread 0 writes the pair to this block's
//!    shared memory; [`cluster::sync`];
//! 3. warp 0 combines the `C` pairs (lane `j` reads rank `j`'s) into `(M, S)`;
//!    [`cluster::sync`];
//! 4. write `exp(x - m_k) · exp(m_k - M) / S`.
//!
//! Each thread copies, and later reads, only its own vectors, so the ring needs no
//! block barrier: a thread's own `cp.async` wait orders its copy before its read,
//! and its read before the next copy into that slot. Reusing the shared words from
//! row to row is safe too: a block writes its pair for row `i + 1` only after the
//! second barrier of row `i`, by which every block has read it, and `row` only
//! after the first barrier of row `i + 1`, which every thread passes after reading
//! it for row `i`. No cluster waits on another, so the grid may hold more clusters
//! than the device does at once (they then run in turn); the host launches as many
//! as it holds. Rows must start 16-byte aligned (16-byte copies).
//!
//! Columns past the row's end read as `-inf`; a chunk of only `-inf` contributes
//! the pair `(-inf, 0)`; a row of only `-inf` gives NaN, as `torch.softmax` does.
use crate::config::{
    SOFTMAX_CLUSTER_ROWS_SIZES, SOFTMAX_CLUSTER_ROWS_SMEM_BYTES, SOFTMAX_CLUSTER_ROWS_STAGES,
    SOFTMAX_CLUSTER_SLICE, SOFTMAX_CLUSTER_THREADS, SOFTMAX_CLUSTER_VECS,
};
use crate::softmax_parts::warp_combine;
use crate::softmax_parts::{stage_async, Slice};
use simt_std::cluster;
use simt_std::kernel;
use simt_std::math::{exp, rcp};
use simt_std::memory::is_aligned16;
use simt_std::pipeline::{commit, wait};
use simt_std::shared::{dynamic_shared, Smem};
use simt_std::shared_array;
use simt_std::thread::{block_dim, block_idx, grid_dim, thread_idx};
use simt_std::warp::{block_reduce_once, lane_id, max_nan};

/// 16-byte vectors per thread: one slice of 16384 columns per 512-thread block.
const V: usize = SOFTMAX_CLUSTER_VECS as usize;
/// Threads per block.
const T: usize = SOFTMAX_CLUSTER_THREADS as usize;
/// Shared-memory stages of a block's ring (one slice of a row each).
const S: usize = SOFTMAX_CLUSTER_ROWS_STAGES as usize;
/// Floats of one stage.
const SLICE: usize = SOFTMAX_CLUSTER_SLICE as usize;
const _: () = assert!(
    S == 3 && SOFTMAX_CLUSTER_ROWS_SMEM_BYTES as usize == S * SLICE * 4 && SLICE == 4 * T * V
);

/// The body of `softmax_cluster_rows_*`: clusters of `C` blocks of one slice each,
/// cluster `q` of `Q = grid.x / C` taking rows `q, q + Q, …`.
///
/// # Safety
/// As the kernels': `x` readable and `y` writable for `rows` rows of
/// `cols <= 16384·C` columns, `x`'s rows 16-byte aligned; `scratch` is 64 floats,
/// `pair` and `row` 2 floats each of this kernel's shared memory, and the dynamic
/// shared memory holds `SOFTMAX_CLUSTER_ROWS_SMEM_BYTES`.
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
    let first = (cluster::rank() as usize * SLICE).min(n);
    let end = (first + SLICE).min(n);
    // Every block of a cluster has the same r, so a cluster with no row returns
    // whole, before any cluster barrier.
    let mut r = block_idx().x as usize / C;
    if r >= rows {
        return;
    }
    let ring = dynamic_shared::<f32>();
    // This thread's copies of its vectors of row `i`'s slice into stage `j`
    // (nothing for a row past the last, whose group then completes at once).
    // SAFETY: a row i < rows is readable and 16-byte aligned, [first, end) inside
    // it, first % 4 == 0; stage j is inside the ring; each thread copies into, and
    // later reads, only its own vectors' slots, so no other thread's access races.
    let issue = |i: usize, j: usize| unsafe {
        if i < rows {
            stage_async::<V>(x.add(i * ld_x as usize), first, end, ring.add((j % S) * SLICE), t, T);
        }
        commit();
    };
    // Rows r and r + Q in flight before the first is needed.
    let mut j = 0;
    while j + 1 < S {
        issue(r + j * clusters, j);
        j += 1;
    }
    let mut i = 0;
    loop {
        // Two rows ahead: into the stage this thread read during the previous row.
        issue(r + (S - 1) * clusters, i + S - 1);
        // This thread's copies of the current row have landed (2 newer groups may fly).
        wait::<{ S as u32 - 1 }>();
        // SAFETY: this thread's own vectors of the current row, waited for above.
        let mut cur = unsafe { Slice::<V>::read_staged(ring.add((i % S) * SLICE), first, end, t, T) };
        // SAFETY: scratch's halves are reduced into once per row; the previous row's
        // readers of them passed both cluster barriers of that row before any thread
        // writes them again here.
        let m = unsafe { block_reduce_once(cur.max(), scratch, max_nan, f32::NEG_INFINITY) };
        // A chunk of only -inf: its exponentials are 0 (not exp(-inf + inf) = NaN).
        let m_safe = if m == f32::NEG_INFINITY { 0.0 } else { m };
        // SAFETY: as the first reduction, on the second half of scratch.
        let sum = unsafe { block_reduce_once(cur.exp_sum(m_safe), scratch.add(32), |a, b| a + b, 0.0) };
        if t == 0 {
            // SAFETY: this kernel's own 2 floats; every block read the previous row's
            // pair before that row's second barrier.
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
        r += clusters;
        i += 1;
        if r >= rows {
            break;
        }
    }
    // Nothing in flight when the block exits (the groups past the last row are empty).
    wait::<0>();
}

macro_rules! cluster_rows_kernel {
    ($name:ident, $i:expr, $cols:literal, $scratch:ident, $pair:ident, $row:ident) => {
        kernel! {
            #[doc = concat!("Softmax of rows of at most ", $cols, " columns, each over a cluster of `SOFTMAX_CLUSTER_ROWS_SIZES[", $i, "]` blocks that then takes the next row (see the module doc).")]
            ///
            /// # Safety
            /// `x` readable at `x[r*ld_x + c]`, `y` writable at `y[r*ld_y + c]` for
            /// `r < rows, c < cols`; `y` is `x` (in place) or does not overlap it;
            /// `x`'s rows start 16-byte aligned; `cols <= 16384·C`; `grid.x` a
            /// multiple of `C`; `SOFTMAX_CLUSTER_ROWS_SMEM_BYTES` of dynamic shared
            /// memory.
            ///
            /// # Parameters
            /// * `x`, `y`: `[rows, cols]` row-major, row strides `ld_x`, `ld_y` (elements).
            ///
            /// # Thread Mapping
            /// Cluster `q` of `Q = grid.x / C` takes rows `q, q + Q, …`; block rank
            /// `k` its columns `[16384·k, 16384·(k+1))`; thread `t` of 512 copies,
            /// reads and writes columns `16384·k + 4(t + 512j) ..+4`, `j < 8`, the
            /// row `i`-th of its cluster in ring stage `i % 3`.
            #[launch(threads = SOFTMAX_CLUSTER_THREADS, min_blocks = 1, shared = SOFTMAX_CLUSTER_ROWS_SMEM_BYTES, cluster = SOFTMAX_CLUSTER_ROWS_SIZES[$i], target = "sm_90a")]
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
