//! Softmax of long rows over a thread-block cluster: each block holds a chunk of
//! the row in registers, and the blocks combine their `(max, sum)` pairs through
//! distributed shared memory (Hopper, [`simt_std::cluster`]).
//!
//! `y[r, c] = exp(x[r, c] - M_r) / S_r`, `M_r = max_c x[r, c]`,
//! `S_r = Σ_c exp(x[r, c] - M_r)`.
//!
//! A row of 65536 floats (256 KiB) is more than one block can hold on chip. The
//! split kernels of [`crate::softmax_split`] cut it over blocks that publish their
//! pairs through global flags: every block of a row must be resident at once (a
//! cooperative launch of a persistent grid that walks the rows in waves), and a
//! block waits on the others through L2. A cluster gives exactly the guarantee
//! that needs, in hardware: the `C` blocks of a cluster are scheduled together, so
//! the grid is simply `rows · C` blocks, and the exchange is a store to shared
//! memory, a cluster barrier and `C` remote loads.
//!
//! Row `r` is cluster `r` (blocks `C·r .. C·r + C`); block rank `k` holds columns
//! `[k·chunk, (k+1)·chunk)`, `chunk = 16384·H`, as `H` slices of 16384 columns,
//! 8 16-byte vectors per thread each ([`Slice`], the layout of
//! `softmax_row_16k`):
//!
//! 1. load the chunk (all `V` loads in flight), reduce it to `(m_k, s_k)`: its
//!    maximum and `Σ exp(x - m_k)` (two block reductions);
//! 2. thread 0 writes the pair to this block's shared memory; [`cluster::sync`];
//! 3. warp 0 reads the `C` pairs (lane `j` from rank `j`, [`cluster::map`]) and
//!    combines them into `(M, S)` with shuffles; [`cluster::sync`] again, which
//!    also keeps every block alive until the others have read its pair;
//! 4. write `exp(x - m_k) · exp(m_k - M) / S` from the registers.
//!
//! One read and one write of each element; no scratch buffers, no flags, no
//! residency arithmetic on the host. Columns past the row's end read as `-inf`;
//! a chunk of only `-inf` contributes the pair `(-inf, 0)`; a row of only `-inf`
//! gives NaN, as `torch.softmax` does.
use crate::config::{SOFTMAX_CLUSTER_CONFIGS, SOFTMAX_CLUSTER_THREADS, SOFTMAX_CLUSTER_VECS};
use crate::softmax_parts::warp_combine;
use crate::softmax_parts::Slice;
use simt_std::cluster;
use simt_std::kernel;
use simt_std::math::{exp, rcp};
use simt_std::memory::is_aligned16;
use simt_std::shared::Smem;
use simt_std::shared_array;
use simt_std::thread::{block_dim, block_idx, thread_idx};
use simt_std::warp::{block_reduce_once, lane_id, max_nan};

/// 16-byte vectors per thread of one [`Slice`]: 16384 columns per 512-thread block.
const V: usize = SOFTMAX_CLUSTER_VECS as usize;
/// Threads per block.
const T: usize = SOFTMAX_CLUSTER_THREADS as usize;

/// A block's chunk in registers: one slice of 16384 columns, or two.
///
/// (Two named slices rather than `[Slice; H]` or one slice of 16 vectors: LLVM
/// did not unroll those loops fully, which put the row in local memory.)
trait Chunk: Sized {
    /// Slices of 16384 columns.
    const SLICES: usize;
    /// Loads `row[first..first + 16384·SLICES]` clipped to `n` (`-inf` past it).
    ///
    /// # Safety
    /// `row[0..n]` readable.
    unsafe fn load(
        row: *const f32,
        first: usize,
        n: usize,
        t: usize,
        lanes: usize,
        vec: bool,
    ) -> Self;
    fn max(&self) -> f32;
    fn exp_sum(&mut self, m: f32) -> f32;
    /// # Safety
    /// `row[0..n]` writable.
    unsafe fn store_scaled(
        &self,
        row: *mut f32,
        first: usize,
        n: usize,
        t: usize,
        lanes: usize,
        vec: bool,
        f: f32,
    );
}

/// `[first + 16384·h, +16384)` clipped to `n`.
#[inline(always)]
fn bounds(first: usize, h: usize, n: usize, lanes: usize) -> (usize, usize) {
    let start = (first + h * 4 * lanes * V).min(n);
    (start, (start + 4 * lanes * V).min(n))
}

impl Chunk for Slice<V> {
    const SLICES: usize = 1;
    #[inline(always)]
    unsafe fn load(
        row: *const f32,
        first: usize,
        n: usize,
        t: usize,
        lanes: usize,
        vec: bool,
    ) -> Self {
        let (s, e) = bounds(first, 0, n, lanes);
        // SAFETY: [s, e) inside row[0..n] (caller).
        unsafe { Slice::<V>::load(row, s, e, t, lanes, vec) }
    }
    #[inline(always)]
    fn max(&self) -> f32 {
        Slice::<V>::max(self)
    }
    #[inline(always)]
    fn exp_sum(&mut self, m: f32) -> f32 {
        Slice::<V>::exp_sum(self, m)
    }
    #[inline(always)]
    unsafe fn store_scaled(
        &self,
        row: *mut f32,
        first: usize,
        n: usize,
        t: usize,
        lanes: usize,
        vec: bool,
        f: f32,
    ) {
        let (s, e) = bounds(first, 0, n, lanes);
        // SAFETY: as the load.
        unsafe { Slice::<V>::store_scaled(self, row, s, e, t, lanes, vec, f) }
    }
}

impl Chunk for (Slice<V>, Slice<V>) {
    const SLICES: usize = 2;
    #[inline(always)]
    unsafe fn load(
        row: *const f32,
        first: usize,
        n: usize,
        t: usize,
        lanes: usize,
        vec: bool,
    ) -> Self {
        let ((s0, e0), (s1, e1)) = (bounds(first, 0, n, lanes), bounds(first, 1, n, lanes));
        // SAFETY: both inside row[0..n] (caller).
        unsafe {
            (
                Slice::<V>::load(row, s0, e0, t, lanes, vec),
                Slice::<V>::load(row, s1, e1, t, lanes, vec),
            )
        }
    }
    #[inline(always)]
    fn max(&self) -> f32 {
        max_nan(self.0.max(), self.1.max())
    }
    #[inline(always)]
    fn exp_sum(&mut self, m: f32) -> f32 {
        self.0.exp_sum(m) + self.1.exp_sum(m)
    }
    #[inline(always)]
    unsafe fn store_scaled(
        &self,
        row: *mut f32,
        first: usize,
        n: usize,
        t: usize,
        lanes: usize,
        vec: bool,
        f: f32,
    ) {
        let ((s0, e0), (s1, e1)) = (bounds(first, 0, n, lanes), bounds(first, 1, n, lanes));
        // SAFETY: as the load.
        unsafe {
            self.0.store_scaled(row, s0, e0, t, lanes, vec, f);
            self.1.store_scaled(row, s1, e1, t, lanes, vec, f);
        }
    }
}

/// The body of `softmax_cluster_*`: a [`Chunk`] of `K::SLICES` slices per block,
/// one cluster per row.
///
/// # Safety
/// As the kernels': row `blockIdx.x / C < rows` of `x` readable and of `y`
/// writable for `cols <= 16384·SLICES·C` columns; `scratch` is 64 floats, `pair`
/// and `row` 2 floats each of this kernel's shared memory.
#[inline(always)]
unsafe fn cluster_row<K: Chunk, const C: usize>(
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
    // The cluster size and the block are the kernel's contract: constants, so no
    // division at run time and immediate offsets for the vectors.
    debug_assert!(cluster::size() as usize == C && block_dim().x as usize == T);
    let c = C;
    let r = block_idx().x as usize / c;
    debug_assert!(
        r < rows as usize,
        "softmax_cluster: grid.x must be rows · cluster size"
    );
    let (t, lanes, n) = (thread_idx().x as usize, T, cols as usize);
    let first = (cluster::rank() as usize * 4 * lanes * V * K::SLICES).min(n);
    // SAFETY: r < rows (grid.x = rows · C).
    let (xr, yr) = unsafe { (x.add(r * ld_x as usize), y.add(r * ld_y as usize)) };
    // SAFETY: row r holds `cols` floats (contract).
    let mut s = unsafe { K::load(xr, first, n, t, lanes, is_aligned16(xr)) };
    // SAFETY: scratch is reserved for these two reductions (contract), each once.
    let m = unsafe { block_reduce_once(s.max(), scratch, max_nan, f32::NEG_INFINITY) };
    // A chunk of only -inf: its exponentials are 0 (not exp(-inf + inf) = NaN).
    let m_safe = if m == f32::NEG_INFINITY { 0.0 } else { m };
    // SAFETY: as the first reduction, on the second half of scratch.
    let sum = unsafe { block_reduce_once(s.exp_sum(m_safe), scratch.add(32), |a, b| a + b, 0.0) };
    if t == 0 {
        // SAFETY: this kernel's own 2 floats, read by the cluster after the sync.
        unsafe {
            pair.write(m);
            pair.add(1).write(sum);
        }
    }
    cluster::sync();
    if t < 32 {
        let lane = lane_id();
        let (mut pm, mut ps) = (f32::NEG_INFINITY, 0.0);
        if (lane as usize) < c {
            // SAFETY: rank lane < C; its pair was written before the sync above, and
            // every block stays alive until the sync below.
            unsafe {
                let remote = cluster::map(pair, lane);
                (pm, ps) = (remote.read(), remote.add(1).read());
            }
        }
        let (mm, ss) = warp_combine(pm, ps);
        if t == 0 {
            // SAFETY: this kernel's own 2 floats, read after the sync below.
            unsafe {
                row.write(mm);
                row.add(1).write(ss);
            }
        }
    }
    // Every block has read the pairs it needs (so may exit after this), and `row`
    // is visible to the whole block.
    cluster::sync();
    // SAFETY: written by thread 0 before the sync.
    let (mm, ss) = unsafe { (row.read(), row.add(1).read()) };
    let factor = exp(m - mm) * rcp(ss);
    // SAFETY: as the load.
    unsafe { s.store_scaled(yr, first, n, t, lanes, is_aligned16(yr), factor) };
}

macro_rules! cluster_kernel {
    ($name:ident, $i:expr, $chunk:ty, $cols:literal, $min_blocks:literal, $scratch:ident, $pair:ident, $row:ident) => {
        kernel! {
            #[doc = concat!("Softmax of rows of at most ", $cols, " columns over a cluster of `SOFTMAX_CLUSTER_CONFIGS[", $i, "].0` blocks of `.1` slices of 16384 columns (see the module doc).")]
            ///
            /// # Safety
            /// `x` readable at `x[r*ld_x + c]`, `y` writable at `y[r*ld_y + c]` for
            /// `r < rows, c < cols`; `y` is `x` (in place) or does not overlap it;
            /// `cols <= 16384·H·C`; `grid.x = rows·C`.
            ///
            /// # Parameters
            /// * `x`, `y`: `[rows, cols]` row-major, row strides `ld_x`, `ld_y` (elements).
            ///
            /// # Thread Mapping
            /// Cluster `r` (blocks `C·r ..+C`) takes row `r`; block rank `k` its
            /// columns `[k·16384·H, (k+1)·16384·H)`; thread `t` of 512 holds columns
            /// `k·16384·H + 16384·h + 4(t + 512j) ..+4` for each slice `h` and vector `j`.
            #[launch(threads = SOFTMAX_CLUSTER_THREADS, min_blocks = $min_blocks, cluster = SOFTMAX_CLUSTER_CONFIGS[$i].0, target = "sm_90a")]
            pub unsafe fn $name(x: *const f32, y: *mut f32, rows: u32, cols: u32, ld_x: u32, ld_y: u32) {
                let scratch = shared_array!($scratch, f32, 64);
                let pair = shared_array!($pair, f32, 2);
                let row = shared_array!($row, f32, 2);
                // SAFETY: the kernel's contract, forwarded; the arrays are this kernel's own.
                unsafe {
                    cluster_row::<$chunk, { SOFTMAX_CLUSTER_CONFIGS[$i].0 as usize }>(x, y, rows, cols, ld_x, ld_y, scratch, pair, row)
                }
            }
        }
    };
}

cluster_kernel!(
    softmax_cluster_32k,
    0,
    Slice<V>,
    "32768",
    2,
    SMC_32K_SCRATCH,
    SMC_32K_PAIR,
    SMC_32K_ROW
);
cluster_kernel!(
    softmax_cluster_64k,
    1,
    Slice<V>,
    "65536",
    2,
    SMC_64K_SCRATCH,
    SMC_64K_PAIR,
    SMC_64K_ROW
);
cluster_kernel!(
    softmax_cluster_128k,
    2,
    Slice<V>,
    "131072",
    2,
    SMC_128K_SCRATCH,
    SMC_128K_PAIR,
    SMC_128K_ROW
);
cluster_kernel!(
    softmax_cluster_256k,
    3,
    (Slice<V>, Slice<V>),
    "262144",
    1,
    SMC_256K_SCRATCH,
    SMC_256K_PAIR,
    SMC_256K_ROW
);

const _: () = {
    assert!(SOFTMAX_CLUSTER_CONFIGS[0].1 as usize == <Slice<V> as Chunk>::SLICES);
    assert!(SOFTMAX_CLUSTER_CONFIGS[1].1 as usize == <Slice<V> as Chunk>::SLICES);
    assert!(SOFTMAX_CLUSTER_CONFIGS[2].1 as usize == <Slice<V> as Chunk>::SLICES);
    assert!(SOFTMAX_CLUSTER_CONFIGS[3].1 as usize == <(Slice<V>, Slice<V>) as Chunk>::SLICES);
};
