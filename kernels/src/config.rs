//! Launch and tile constants shared by the kernels and the host: the single source
//! of truth for every number both sides need.

/// Threads per block for elementwise kernels (GeLU stages, fills).
pub const ELEMENTWISE_THREADS: u32 = 256;
/// Elements each elementwise thread handles (one 16-byte vector).
pub const ELEMENTWISE_VEC: u32 = 4;

/// Threads per block of the fused softmax (one block per row).
pub const SOFTMAX_THREADS: u32 = 256;
/// Longest row the fused softmax keeps on chip: the row lives in dynamic shared
/// memory (4 bytes per element). 16384 floats = 64 KiB, under the 227 KiB opt-in
/// limit of sm_80/sm_90, so two blocks still fit on one SM.
pub const SOFTMAX_MAX_COLS: u32 = 16384;

/// Register-resident softmax, a warp per row: 16-byte vectors per lane of each
/// kernel, `softmax_warp_128` … `softmax_warp_1k` (a row of at most `128·V` columns).
pub const SOFTMAX_WARP_VECS: [u32; 4] = [1, 2, 4, 8];
/// Register-resident softmax, a block per row: `(threads, 16-byte vectors per
/// thread)` of `softmax_row_2k` … `softmax_row_16k` (a row of at most `4·threads·V`
/// columns). 16 floats a thread up to 8192 columns and 32 at 16384: the warps per
/// row of Triton's tutorial kernel (4, 8, 16, 16), so that a row needs at most 512
/// threads.
pub const SOFTMAX_ROW_CONFIGS: [(u32, u32); 4] = [(128, 4), (256, 4), (512, 4), (512, 8)];
/// Columns of one block's chunk in the split-row softmax (`softmax_split`), whose
/// blocks are shaped as `SOFTMAX_ROW_CONFIGS[2]` (512 threads, 4 vectors each).
pub const SOFTMAX_SPLIT_CHUNK: u32 = 4 * SOFTMAX_ROW_CONFIGS[2].0 * SOFTMAX_ROW_CONFIGS[2].1;
/// Split-row softmax through shared memory (`softmax_split_async`): threads per
/// block, 16-byte vectors per thread of a chunk, and chunks in flight per block.
/// A chunk is 16384 columns (64 KiB); two of them fill 128 KiB of shared memory,
/// one block per SM: the next chunk's `cp.async` copies stream while this one is
/// reduced, waits for its row and is written.
pub const SOFTMAX_ASYNC_THREADS: u32 = 512;
/// See [`SOFTMAX_ASYNC_THREADS`].
pub const SOFTMAX_ASYNC_VECS: u32 = 8;
/// See [`SOFTMAX_ASYNC_THREADS`].
pub const SOFTMAX_ASYNC_CHUNK: u32 = 4 * SOFTMAX_ASYNC_THREADS * SOFTMAX_ASYNC_VECS;
/// See [`SOFTMAX_ASYNC_THREADS`].
pub const SOFTMAX_ASYNC_STAGES: u32 = 2;
/// Dynamic shared memory of `softmax_split_async`.
pub const SOFTMAX_ASYNC_SMEM_BYTES: u32 = SOFTMAX_ASYNC_STAGES * SOFTMAX_ASYNC_CHUNK * 4;

/// Threads per block of the two-pass online softmax (rows longer than the device
/// holds on chip).
pub const SOFTMAX_ONLINE_THREADS: u32 = 512;

/// Threads per block of the row reductions (row max, row sum).
pub const ROW_REDUCE_THREADS: u32 = 256;

/// Naive matmul: a `NAIVE_TILE x NAIVE_TILE` block, one thread per output.
pub const NAIVE_TILE: u32 = 16;

/// Tiled matmul block tile: rows of C per block.
pub const MM_BM: u32 = 128;
/// Tiled matmul block tile: columns of C per block.
pub const MM_BN: u32 = 128;
/// Tiled matmul block tile: depth of one K step.
pub const MM_BK: u32 = 8;
/// Tiled matmul thread tile: each thread owns `MM_TM x MM_TN` outputs.
pub const MM_TM: u32 = 8;
/// See [`MM_TM`].
pub const MM_TN: u32 = 8;
/// Threads per block of the tiled matmul: (128/8) x (128/8) = 256.
pub const MM_THREADS: u32 = (MM_BM / MM_TM) * (MM_BN / MM_TN);

/// Warp width (the device library's).
pub use simt_std::WARP_SIZE;

/// Threads per block of the barrier-free row kernels (8 warps).
pub const WARP_ROWS_THREADS: u32 = 256;
/// Rows up to this length take the barrier-free kernels: `softmax_warp` (a warp per
/// row) and `row_sum_warp` (1 to 32 lanes per row). Longer rows take a block per row.
pub const WARP_ROW_MAX_COLS: u32 = 1024;

/// Tensor-core matmul (stages 5 and 6): rows of C per block.
pub const TC_BM: u32 = 128;
/// Tensor-core matmul: columns of C per block.
pub const TC_BN: u32 = 128;
/// Tensor-core matmul, stage 5: depth of one K step (two `mma` k16 steps).
pub const TC_BK: u32 = 32;
/// Tensor-core matmul, stage 5: threads per block, 8 warps as 2 (rows) x 4 (columns).
pub const TC_THREADS: u32 = 256;
/// Tensor-core matmul, stages 5 and 6: rows of C per warp (4 `m16` tiles).
pub const TC_WARP_M: u32 = 64;
/// Tensor-core matmul, stage 5: columns of C per warp (4 `n8` tiles).
pub const TC_WARP_N: u32 = 32;
/// Tensor-core matmul, stage 6: threads per block, 4 warps as 2 x 2.
pub const TC6_THREADS: u32 = 128;
/// Tensor-core matmul, stage 6: columns of C per warp (8 `n8` tiles); rows as
/// [`TC_WARP_M`]. A 64x64 warp tile loads 8 fragments (4 of A, 4 of B) per 32
/// `mma`s, against 6 per 16 for stage 5's 64x32.
pub const TC6_WARP_N: u32 = 64;
/// Tensor-core matmul, stage 6: bytes per row of A in a stage (the K step: 64
/// 16-bit or 32 f32 elements). 128 bytes halve the barriers per FLOP against 64.
pub const TC6_A_ROW_BYTES: u32 = 128;
/// Tensor-core matmul, stage 6: K step of the 16-bit kernels (4 `mma` k16 steps).
pub const TC6_BK: u32 = TC6_A_ROW_BYTES / 2;
/// Tensor-core matmul, stage 6: K step of the TF32 kernel (4 `mma` k8 steps).
pub const TC6_BK_TF32: u32 = TC6_A_ROW_BYTES / 4;
/// Tensor-core matmul, stage 6: shared-memory stages of the `cp.async` pipeline.
pub const TC_STAGES: u32 = 3;
/// Bytes of one stage: `TC_BM` rows of A of `TC6_A_ROW_BYTES`, and B's K-step rows of
/// `TC_BN` elements, the same bytes in total as a `TC_BN`-row A:
/// `(TC_BM + TC_BN) · TC6_A_ROW_BYTES`.
pub const TC_STAGE_BYTES: u32 = (TC_BM + TC_BN) * TC6_A_ROW_BYTES;
/// Dynamic shared memory of the pipelined tensor-core kernels (96 KiB: two blocks per SM).
pub const TC_SMEM_BYTES: u32 = TC_STAGES * TC_STAGE_BYTES;

/// Hopper matmul (stage 7, `wgmma` + TMA): rows of C per tile (two consumer
/// warpgroups of 64 rows).
pub const WG_BM: u32 = 128;
/// Hopper matmul: columns of C per tile (one `m64n256k16` per consumer and k16
/// step). 128-column tiles measured 12-30% slower (docs/PERFORMANCE.md).
pub const WG_BN: u32 = 256;
/// Hopper matmul: depth of one K step in elements of 16 bits: one 128-byte row of A,
/// the 128-byte swizzle's span, and 4 `wgmma` k16 steps.
pub const WG_BK: u32 = 64;
/// Hopper matmul: columns of B per TMA box (128 bytes of bf16 / f16).
pub const WG_B_BOX_COLS: u32 = 64;
/// Hopper matmul: threads per block: a producer warpgroup (one thread issues the TMA
/// copies) and two consumer warpgroups.
pub const WG_THREADS: u32 = 384;
/// Hopper matmul: bytes of one stage (A `[128][64]`, then B as 4 boxes `[64][64]`).
pub const WG_STAGE_BYTES: u32 = (WG_BM + WG_BN) * WG_BK * 2;
/// Hopper matmul: shared-memory stages of the TMA ring (4 x 48 KiB).
pub const WG_STAGES: u32 = 4;
/// Hopper matmul: dynamic shared memory: the stages, a full and an empty mbarrier
/// per stage, and 1 KiB of slack to align the stages to 1024 bytes (the swizzle).
pub const WG_SMEM_BYTES: u32 = WG_STAGES * WG_STAGE_BYTES + 16 * WG_STAGES + 1024;
