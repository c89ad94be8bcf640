//! Matmul + ReLU, stage 4d: split K over a thread-block cluster, the slices added
//! through distributed shared memory, in one launch (Hopper, sm_90a module).
//!
//! A product with few output tiles leaves SMs idle: 1024^3 has 128 tiles of 64x128
//! for 132 SMs that each hold three such blocks. Split K ([`crate::matmul_tiles`])
//! fills them by cutting K into slices, but each slice writes a whole `m x n` tile of
//! partial sums to global memory, and a second kernel reads them back and adds them:
//! at 1024^3 with 4 slices that is 16 MiB written, 16 MiB read and one more launch,
//! several microseconds of a 60-microsecond product.
//!
//! Here the `S` slices of one tile are the `S` blocks of one cluster (`S` = 2 to 8),
//! which Hopper schedules together on one GPC. After its K loop (the tile kernels'
//! own, [`tile_main`] or [`async_main`]) each block
//! 1. writes its `bm x bn` sums to its own shared memory (the stages are free by
//!    then), then a cluster barrier;
//! 2. adds the slices of `bm / S` rows of the tile, reading the `S` blocks' sums
//!    through distributed shared memory in rank order `0, 1, …, S-1`, applies the
//!    epilogue and writes C;
//! 3. a second cluster barrier, so that no block exits while another reads its
//!    shared memory ([`simt_std::cluster`]'s rule 2).
//!
//! The sum is `((0 + s_0) + s_1) + …`, the order of `matmul_splitk_reduce` over the
//! same slices, so the result is bit-identical to the two-launch split of the same
//! tile and slice count (`tests/matmul.rs` checks it) and to itself run to run. No
//! partials touch global memory, and there is no second launch.
//!
//! The grid is `(ceil(n/bn) · S, ceil(m/bm))`: clusters run along x, so block `x`
//! computes tile column `x / S` and K slice `x % S`, its cluster rank.
use crate::config::{MmLoop, MM_ASYNC_TILES, MM_CLUSTER_CONFIGS, MM_TILES};
use crate::matmul_tiles::{tile_main, Place, Sums};
use crate::matmul_tiles_async::async_main;
use crate::params::MatmulSplitParams;
use simt_std::cluster;
use simt_std::kernel;
use simt_std::memory::{is_aligned16, store4, store4_first, F32x4};
use simt_std::shared::dynamic_shared;
use simt_std::thread::{block_idx, sync_threads, thread_idx};

/// This block's tile and K slice: tile column `blockIdx.x / S`, row `blockIdx.y`,
/// slice `rank` of `p.k_chunk` (empty when past K).
#[inline(always)]
fn cluster_place<const BM: u32, const BN: u32, const S: u32>(p: &MatmulSplitParams) -> Place {
    let k = p.mm.a.cols;
    let k_begin = (cluster::rank() * p.k_chunk).min(k);
    let k_end = if k - k_begin > p.k_chunk {
        k_begin + p.k_chunk
    } else {
        k
    };
    Place {
        row0: block_idx().y * BM,
        col0: (block_idx().x / S) * BN,
        k_begin,
        k_end,
    }
}

/// Steps 1 to 3 of the module docs: the block's sums to its shared memory, the
/// cluster's slices of rows `rank · BM/S ..+BM/S` added in rank order, the epilogue,
/// C written.
///
/// # Safety
/// The kernel's contract; `BM · BN` floats of dynamic shared memory; every thread of
/// every block of the cluster calls it once, after its K loop.
#[inline(always)]
unsafe fn reduce_store<
    const BM: u32,
    const BN: u32,
    const TM: usize,
    const TN: usize,
    const S: u32,
    const T: u32,
>(
    p: &MatmulSplitParams,
    place: Place,
    s: &Sums<TM, TN>,
) {
    const { assert!(BM % S == 0 && BN % 4 == 0) };
    let smem = dynamic_shared::<f32>();
    // Every thread has finished reading the K loop's stages.
    sync_threads();
    for gi in 0..TM / 4 {
        for r in 0..4 {
            let i = 4 * gi + r;
            let row = s.rm + 16 * gi as u32 + r as u32;
            for gj in 0..TN / 4 {
                let col = s.cn + 32 * gj as u32;
                let v = F32x4 {
                    x: s.acc[i][4 * gj],
                    y: s.acc[i][4 * gj + 1],
                    z: s.acc[i][4 * gj + 2],
                    w: s.acc[i][4 * gj + 3],
                };
                // SAFETY: row < BM, col + 4 <= BN: inside the BM x BN sums, aligned.
                unsafe { smem.add((row * BN + col) as usize).store4(v) };
            }
        }
    }
    cluster::sync();
    let (m, n, c, ldc) = (p.mm.c.rows, p.mm.c.cols, p.mm.c.ptr, p.mm.c.ld);
    let relu = p.mm.epilogue as u32 != 0;
    let vec_c = is_aligned16(c) && ldc % 4 == 0;
    let rows = BM / S;
    let r0 = cluster::rank() * rows;
    let interior = vec_c && place.row0 + BM <= m && place.col0 + BN <= n;
    let mut e = thread_idx().x;
    while e < rows * BN / 4 {
        let (rr, cc) = (r0 + e / (BN / 4), 4 * (e % (BN / 4)));
        let off = (rr * BN + cc) as usize;
        let mut v = F32x4::default();
        for q in 0..S {
            // SAFETY: rank q < S, the cluster's size; inside every block's sums (the
            // same layout), written before the cluster barrier above; no block exits
            // before the barrier below. (`mapa` is pure: LLVM hoists the S maps.)
            let x = unsafe { cluster::map(smem, q).add(off).read4() };
            v = F32x4 {
                x: v.x + x.x,
                y: v.y + x.y,
                z: v.z + x.z,
                w: v.w + x.w,
            };
        }
        if relu {
            v = v.map(|x| if x > 0.0 { x } else { 0.0 });
        }
        let (row, col) = (place.row0 + rr, place.col0 + cc);
        if interior {
            // SAFETY: the tile lies inside C, rows aligned.
            unsafe { store4(c.add((row * ldc + col) as usize), v) };
        } else if row < m && col < n {
            // SAFETY: row < m; of columns col.., those below n are written.
            unsafe { store4_first(c.add((row * ldc + col) as usize), v, n - col, vec_c) };
        }
        e += T;
    }
    cluster::sync();
}

/// Declares the cluster kernel of `MM_CLUSTER_CONFIGS[$i]`, whose K loop is
/// `MM_TILES[$t]`'s (`tile`) or `MM_ASYNC_TILES[$t]`'s (`async`).
macro_rules! cluster_kernels {
    ($($name:ident = $i:literal, $kind:ident $t:literal);* $(;)?) => {$(
        kernel! {
            /// `C = relu?(A · B)`, FP32, the K loop of the tile named, K split over the
            /// blocks of a thread-block cluster (see the module docs).
            ///
            /// # Safety
            /// `p.mm` as [`matmul_relu_tile_64x64()`](crate::matmul_tiles::matmul_relu_tile_64x64()):
            /// A `m x k`, B `k x n`, C `m x n` readable / writable with their strides,
            /// C not overlapping A or B, all offsets below 2^32, `k <= 2^31`.
            /// `p.k_chunk` is a positive multiple of 8 with `cluster · k_chunk >= k`;
            /// `p.partials` is unused.
            ///
            /// # Thread Mapping
            /// `grid = (ceil(n/bn) · cluster, ceil(m/bm))`; block `x` computes tile
            /// `(blockIdx.y, x / cluster)` over K slice `x % cluster` (its cluster rank)
            /// with the tile kernel's thread mapping, then adds rows `rank · bm/cluster
            /// ..+bm/cluster` of the tile over the cluster, thread `t` owning 16-byte
            /// groups `t, t + threads, …` of them.
            #[launch(threads = MM_CLUSTER_CONFIGS[$i].tile().threads(), min_blocks = MM_CLUSTER_CONFIGS[$i].tile().min_blocks, shared = MM_CLUSTER_CONFIGS[$i].smem_bytes(), cluster = MM_CLUSTER_CONFIGS[$i].cluster, target = "sm_90a")]
            pub unsafe fn $name(p: MatmulSplitParams) {
                const _: () = assert!(matches!(MM_CLUSTER_CONFIGS[$i].kloop, MmLoop::$kind($t)));
                cluster_kernels!(@body $kind $t $i p);
            }
        }
    )*};
    (@body Tile $t:literal $i:literal $p:ident) => {{
        const BM: u32 = MM_TILES[$t].bm;
        const BN: u32 = MM_TILES[$t].bn;
        const TM: usize = MM_TILES[$t].tm() as usize;
        const TN: usize = MM_TILES[$t].tn() as usize;
        const S: u32 = MM_CLUSTER_CONFIGS[$i].cluster;
        let place = cluster_place::<BM, BN, S>(&$p);
        // SAFETY: kernel contract; the slice lies inside K; the stages fit the
        // dynamic shared memory (`MmCluster::smem_bytes`).
        let (s, _) = unsafe {
            tile_main::<BM, BN, { MM_TILES[$t].wm }, { MM_TILES[$t].wn }, TM, TN,
                { MM_TILES[$t].a_loads() as usize }, { MM_TILES[$t].b_loads() as usize }>(&$p.mm, place, true)
        };
        // SAFETY: kernel contract; every thread of the cluster gets here.
        unsafe { reduce_store::<BM, BN, TM, TN, S, { MM_TILES[$t].threads() }>(&$p, place, &s) };
    }};
    (@body Async $t:literal $i:literal $p:ident) => {{
        const BM: u32 = MM_ASYNC_TILES[$t].bm;
        const BN: u32 = MM_ASYNC_TILES[$t].bn;
        const TM: usize = MM_ASYNC_TILES[$t].tm() as usize;
        const TN: usize = MM_ASYNC_TILES[$t].tn() as usize;
        const S: u32 = MM_CLUSTER_CONFIGS[$i].cluster;
        let place = cluster_place::<BM, BN, S>(&$p);
        // One K slice per block here: the cluster splits K.
        const { assert!(MM_ASYNC_TILES[$t].kslices == 1) };
        // SAFETY: as the tile arm.
        let (s, _, _) = unsafe {
            async_main::<BM, BN, { MM_ASYNC_TILES[$t].wm }, { MM_ASYNC_TILES[$t].wn }, TM, TN,
                { MM_ASYNC_TILES[$t].async_a_loads() }, { MM_ASYNC_TILES[$t].async_b_loads() },
                { MM_ASYNC_TILES[$t].stages }, 1>(&$p.mm, place, true)
        };
        // SAFETY: as the tile arm.
        unsafe { reduce_store::<BM, BN, TM, TN, S, { MM_ASYNC_TILES[$t].threads() }>(&$p, place, &s) };
    }};
}

cluster_kernels!(
    matmul_relu_cluster_tile_64x128_c2 = 0, Tile 1;
    matmul_relu_cluster_tile_64x128_c4 = 1, Tile 1;
    matmul_relu_cluster_tile_64x128_c8 = 2, Tile 1;
    matmul_relu_cluster_tile_128x64_c4 = 3, Tile 0;
    matmul_relu_cluster_tile_64x64_c4 = 4, Tile 2;
    matmul_relu_cluster_async_s4_32x64_c2 = 5, Async 7;
    matmul_relu_cluster_async_s4_32x64_c4 = 6, Async 7;
    matmul_relu_cluster_async_s4_16x64_c2 = 7, Async 6;
    matmul_relu_cluster_async_s4_16x64_c4 = 8, Async 6;
    matmul_relu_cluster_async_s4_64x64_c4 = 9, Async 8;
    matmul_relu_cluster_async_64x64_w4_c2 = 10, Async 9;
);

/// The PTX entry names of the cluster kernels, in [`MM_CLUSTER_CONFIGS`] order.
pub const CLUSTER_KERNEL_NAMES: [&str; MM_CLUSTER_CONFIGS.len()] = [
    "matmul_relu_cluster_tile_64x128_c2",
    "matmul_relu_cluster_tile_64x128_c4",
    "matmul_relu_cluster_tile_64x128_c8",
    "matmul_relu_cluster_tile_128x64_c4",
    "matmul_relu_cluster_tile_64x64_c4",
    "matmul_relu_cluster_async_s4_32x64_c2",
    "matmul_relu_cluster_async_s4_32x64_c4",
    "matmul_relu_cluster_async_s4_16x64_c2",
    "matmul_relu_cluster_async_s4_16x64_c4",
    "matmul_relu_cluster_async_s4_64x64_c4",
    "matmul_relu_cluster_async_64x64_w4_c2",
];
