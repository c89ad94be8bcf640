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

/// Split-row softmax with wide chunks (`softmax_split_wide`): threads per block,
/// and 16-byte vectors per thread held in registers and staged in shared memory. A
/// chunk is 32768 columns (128 KiB): the first 16384 in registers (32 floats a
/// thread, as `softmax_row_16k`), the next 16384 staged in 64 KiB of shared
/// memory. Two blocks per SM (at most 64 registers a thread) hold 256 KiB: an H100
/// holds 264 chunks, 33 MiB, at once. (Fewer floats in registers and more staged
/// spilled more, not less: 24 and 40 spilled 20 bytes on sm_80 and sm_90, 32 and 32
/// none on sm_80 and 4 on sm_90.)
pub const SOFTMAX_WIDE_THREADS: u32 = 512;
/// See [`SOFTMAX_WIDE_THREADS`].
pub const SOFTMAX_WIDE_REG_VECS: u32 = 8;
/// See [`SOFTMAX_WIDE_THREADS`].
pub const SOFTMAX_WIDE_SMEM_VECS: u32 = 8;
/// Columns of a `softmax_split_wide` chunk held in registers (the first ones).
pub const SOFTMAX_WIDE_REG_COLS: u32 = 4 * SOFTMAX_WIDE_THREADS * SOFTMAX_WIDE_REG_VECS;
/// Columns of a `softmax_split_wide` chunk.
pub const SOFTMAX_WIDE_CHUNK: u32 =
    4 * SOFTMAX_WIDE_THREADS * (SOFTMAX_WIDE_REG_VECS + SOFTMAX_WIDE_SMEM_VECS);
/// Dynamic shared memory of `softmax_split_wide`: the staged part of a chunk.
pub const SOFTMAX_WIDE_SMEM_BYTES: u32 = 16 * SOFTMAX_WIDE_THREADS * SOFTMAX_WIDE_SMEM_VECS;
/// Blocks per SM `softmax_split_wide` is compiled for (launch bounds).
pub const SOFTMAX_WIDE_MIN_BLOCKS: u32 = 2;

/// Softmax of long rows as a stream of chunk reads and writes through L2
/// (`softmax_stream`): threads per block, 16-byte vectors per thread of a chunk
/// (16384 columns, 64 KiB, as `softmax_row_16k`), and blocks per SM (launch
/// bounds: 64 registers a thread). Nothing is held between a chunk's read and its
/// write, so the chunk is only as large as one load of all of it in flight.
pub const SOFTMAX_STREAM_THREADS: u32 = 512;
/// See [`SOFTMAX_STREAM_THREADS`].
pub const SOFTMAX_STREAM_VECS: u32 = 8;
/// See [`SOFTMAX_STREAM_THREADS`].
pub const SOFTMAX_STREAM_MIN_BLOCKS: u32 = 2;
/// Columns of one `softmax_stream` chunk.
pub const SOFTMAX_STREAM_CHUNK: u32 = 4 * SOFTMAX_STREAM_THREADS * SOFTMAX_STREAM_VECS;

/// Softmax of long rows by bulk copies (`softmax_bulk`, Hopper): columns of one
/// chunk (32 KiB).
pub const SOFTMAX_BULK_CHUNK: u32 = 8192;
/// Chunks a `softmax_bulk` block holds in shared memory at once (its ring):
/// 7 x 32 KiB = 224 KiB, one block per SM.
pub const SOFTMAX_BULK_STAGES: u32 = 7;
/// Chunks a `softmax_bulk` producer keeps in flight (copied, not yet landed): chunk
/// `j` is copied only once chunk `j - IN_FLIGHT` landed, though the ring has room for
/// more. The grid's loads queue ahead of the row exchange's loads and stores, so the
/// fewer bytes in flight, the sooner a row's pairs come back; two chunks a block
/// still keep DRAM busy (H200, session 34's sweeps of the Rust kernel: 1-6% faster
/// than the whole ring at 64 x 262144, up to 3% at 256 x 65536, 5-10% at 8 x 2^20).
pub const SOFTMAX_BULK_IN_FLIGHT: u32 = 2;
/// Warps of a `softmax_bulk` block that reduce chunks to `(max, sum)` pairs.
pub const SOFTMAX_BULK_STATS_WARPS: u32 = 8;
/// Warps of a `softmax_bulk` block that write chunks.
pub const SOFTMAX_BULK_WRITE_WARPS: u32 = 8;
/// Threads of a `softmax_bulk` block: the stats and write warps, then one warp each
/// that publishes pairs, keeps the ring full, and resolves rows.
pub const SOFTMAX_BULK_THREADS: u32 =
    32 * (SOFTMAX_BULK_STATS_WARPS + SOFTMAX_BULK_WRITE_WARPS + 3);
/// Dynamic shared memory of a `softmax_bulk` block: the ring.
pub const SOFTMAX_BULK_SMEM_BYTES: u32 = SOFTMAX_BULK_STAGES * SOFTMAX_BULK_CHUNK * 4;

/// Softmax of long rows over a thread-block cluster (`softmax_cluster_32k` …
/// `_256k`, Hopper): threads per block.
pub const SOFTMAX_CLUSTER_THREADS: u32 = 512;
/// 16-byte vectors per thread of one slice of a cluster softmax block: a slice is
/// `4·512·8 = 16384` columns, 32 floats a thread, as `softmax_row_16k`.
pub const SOFTMAX_CLUSTER_VECS: u32 = 8;
/// `(blocks per cluster, slices per block)` of `softmax_cluster_32k`, `_64k`,
/// `_128k`, `_256k`: a row of at most `16384·H·C` columns. Two slices (64 floats a
/// thread) allow one block per SM, one slice two. Clusters stop at 8 blocks, the
/// portable size.
pub const SOFTMAX_CLUSTER_CONFIGS: [(u32, u32); 4] = [(2, 1), (4, 1), (8, 1), (8, 2)];
/// Columns of one slice of a cluster softmax block.
pub const SOFTMAX_CLUSTER_SLICE: u32 = 4 * SOFTMAX_CLUSTER_THREADS * SOFTMAX_CLUSTER_VECS;
/// The longest row of a cluster kernel: the last of `SOFTMAX_CLUSTER_CONFIGS`.
pub const SOFTMAX_CLUSTER_MAX_COLS: u32 =
    SOFTMAX_CLUSTER_SLICE * SOFTMAX_CLUSTER_CONFIGS[3].0 * SOFTMAX_CLUSTER_CONFIGS[3].1;

/// Threads per block of the two-pass online softmax (rows longer than the device
/// holds on chip).
pub const SOFTMAX_ONLINE_THREADS: u32 = 512;
/// Threads per block of the looped softmax (`softmax_looped`: a block per row, two
/// passes over it, 4 vectors in flight a thread): 8192 columns a group of loads.
pub const SOFTMAX_LOOPED_THREADS: u32 = 512;

/// Threads per block of the bulk-copied row softmax (`softmax_row_bulk`: a block per
/// row, the row in shared memory) and 16-byte vectors a thread: rows up to
/// `4·512·8 = 16384` columns, the register kernels' longest.
pub const SOFTMAX_ROW_BULK_THREADS: u32 = 512;
pub const SOFTMAX_ROW_BULK_VECS: u32 = 8;
/// Blocks an SM `softmax_row_bulk` is compiled for (`.minnctapersm`): three
/// 16384-column rows (3 x 64 KiB of shared memory), so at most 42 registers a thread.
pub const SOFTMAX_ROW_BULK_MIN_BLOCKS: u32 = 3;
/// The longest row of `softmax_row_bulk` (64 KiB of shared memory a block).
pub const SOFTMAX_ROW_BULK_MAX_COLS: u32 = 4 * SOFTMAX_ROW_BULK_THREADS * SOFTMAX_ROW_BULK_VECS;
/// Columns a bulk copy of `softmax_row_bulk` moves (32 KiB, the size the long-row
/// bulk kernel copies): a 16384-column row is two copies.
pub const SOFTMAX_ROW_BULK_PIECE: u32 = 8192;

/// Threads per block of the three-loop softmax (`softmax_three_pass`: what
/// `torch.compile` runs at 4096 x 16384 on an H100, one program of 32 warps a row)
/// and the blocks an SM it is compiled for (two: at most 32 registers a thread).
pub const SOFTMAX_THREE_PASS_THREADS: u32 = 1024;
pub const SOFTMAX_THREE_PASS_MIN_BLOCKS: u32 = 2;

/// The fused GeLU's block shapes, `(threads, 16-byte vectors per thread)`:
/// `gelu_fused` (one vector a thread, the first), `gelu_fused_v2` (Triton's
/// pointwise shape for large tensors: 1024 elements a block of 4 warps) and
/// `gelu_fused_v4`. Vector `k` of thread `t` is the block tile's vector `t + k·threads`,
/// so each warp-wide load is 512 contiguous bytes.
pub const GELU_CONFIGS: [(u32, u32); 3] = [(ELEMENTWISE_THREADS, 1), (128, 2), (128, 4)];

/// Threads per block of the row reductions (row max, row sum).
pub const ROW_REDUCE_THREADS: u32 = 256;

/// Row sum of few, very long rows (`row_sum_stream`): threads per block, and
/// 16-byte loads in flight per thread (one tile of a block is
/// `ROW_STREAM_THREADS·ROW_STREAM_UNROLL` vectors). Measured best of 2-8 loads and
/// 256-512 threads in a CUDA C++ probe on the H100 (2026-11-23).
pub const ROW_STREAM_THREADS: u32 = 512;
/// See [`ROW_STREAM_THREADS`] (the kernel unrolls exactly 4).
pub const ROW_STREAM_UNROLL: u32 = 4;
/// Blocks per SM the host gives `row_sum_stream` in all (split over the rows).
pub const ROW_STREAM_BLOCKS_PER_SM: u32 = 8;

/// Naive matmul: a `NAIVE_TILE x NAIVE_TILE` block, one thread per output.
pub const NAIVE_TILE: u32 = 16;

/// Tiled matmul block tile: rows of C per block.
pub const MM_BM: u32 = 128;
/// Tiled matmul block tile: columns of C per block.
pub const MM_BN: u32 = 128;
/// Tiled matmul block tile: depth of one K step.
pub const MM_BK: u32 = 8;
/// Stage 4w's block tile (`matmul_warptiled_wide`): rows of C per block.
pub const MM_WIDE_BM: u32 = 256;
/// Stage 4w's block tile: columns of C per block.
pub const MM_WIDE_BN: u32 = 128;
/// Tiled matmul thread tile: each thread owns `MM_TM x MM_TN` outputs.
pub const MM_TM: u32 = 8;
/// See [`MM_TM`].
pub const MM_TN: u32 = 8;
/// Threads per block of the tiled matmul: (128/8) x (128/8) = 256.
pub const MM_THREADS: u32 = (MM_BM / MM_TM) * (MM_BN / MM_TN);

/// Stages 4k (stage 4 with a stream-K tail) and 4s (its last wave split along K):
/// floats of one partial tile in their workspaces.
pub const MM4K_PARTIAL_FLOATS: u32 = MM_BM * MM_BN;

/// Warp width (the device library's).
pub use simt_std::WARP_SIZE;

/// Threads per block of the barrier-free row kernels (8 warps).
pub const WARP_ROWS_THREADS: u32 = 256;
/// Rows up to this length take the barrier-free kernels: `softmax_warp` (a warp per
/// row), `row_sum_warp` (1 to 32 lanes per row) and `row_sum_warp_wide` (a warp per
/// row, from 129 columns). Longer rows take a block per row.
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

/// Tensor-core matmul, stage 6t (`mma.sync` fed by TMA, sm_90a): columns of B per TMA box of the 16-bit kernels (128
/// bytes, the 128-byte swizzle's span); a K step's B is `TC_BN / TC6T_B_BOX_COLS` boxes.
pub const TC6T_B_BOX_COLS: u32 = 64;
/// Tensor-core matmul, stage 6t: dynamic shared memory: stage 6's stages, a full and
/// an empty mbarrier per stage, and 1 KiB of slack to align the stages to 1024 bytes
/// (the TMA swizzle's period). Two blocks per SM.
pub const TC6T_SMEM_BYTES: u32 = TC_STAGES * TC_STAGE_BYTES + 8 * 2 * TC_STAGES + 1024;
const _: () = assert!(2 * (TC6T_SMEM_BYTES + 1024) <= 228 * 1024);

/// Stage 6t in TF32: columns of C per block, 8 warps of 64x64 as 2 x 4 and one block
/// per SM. A quarter fewer bytes copied into shared memory per `mma` than 128x128
/// tiles: TF32 moves twice the bytes of bf16 per `mma`, and ran 2-4% faster on these
/// tiles on the H200 where bf16 did not (docs/PERFORMANCE.md, session 19). A stage
/// holds `TC_BM + TC6T_TF32_BN` rows of 128 bytes (A, then `Bᵀ`), as stage 7's.
pub const TC6T_TF32_BN: u32 = 256;
/// Stage 6t in TF32: threads per block.
pub const TC6T_TF32_THREADS: u32 = (TC_BM / TC_WARP_M) * (TC6T_TF32_BN / TC6_WARP_N) * 32;
/// Stage 6t in TF32: stages of the TMA ring.
pub const TC6T_TF32_STAGES: u32 = 4;
/// Stage 6t in TF32: bytes of one stage.
pub const TC6T_TF32_STAGE_BYTES: u32 = (TC_BM + TC6T_TF32_BN) * TC6_A_ROW_BYTES;
/// Stage 6t in TF32: dynamic shared memory (the stages, a full and an empty mbarrier
/// per stage, 1 KiB of alignment slack).
pub const TC6T_TF32_SMEM_BYTES: u32 =
    TC6T_TF32_STAGES * TC6T_TF32_STAGE_BYTES + 8 * 2 * TC6T_TF32_STAGES + 1024;
const _: () = assert!(TC6T_TF32_SMEM_BYTES + 1024 <= 228 * 1024);

/// Stage 6k (stage 6t's TF32 kernel with a stream-K tail): floats of one block's
/// partial tile in the workspace, the `TC_BM x TC6T_TF32_BN` accumulators of a tile
/// whose K steps it shares with the block that finishes the tile. The host allocates
/// one per block of the launch.
pub const TC6K_PARTIAL_FLOATS: u32 = TC_BM * TC6T_TF32_BN;

/// Stage 6kb (stage 6k with `Bᵀ` written by dedicated blocks): the k-rows of one
/// transposition item (one K step: a box of B of `TC6KB_ITEM` k-rows x a strip's
/// `TC6T_TF32_BN` columns), and the columns each warp transposes of it (f32: rows of
/// 128 bytes in `Bᵀ`, the 128-byte swizzle's width).
pub const TC6KB_ITEM: u32 = 32;
/// Stage 6kb: boxes of B in flight per transposing block, each 32 k-rows of a
/// whole strip (32 KiB), plus one 4 KiB buffer per warp for its transposed part.
pub const TC6KB_DEPTH: u32 = 4;
/// Stage 6kb: transposing blocks per launch on a device of 128 SMs or more (fewer on
/// smaller ones: [`tc6kb_blocks`]). Four leave 128 of the H100's and H200's 132 SMs
/// to multiply: the 128x256 tiles of a 4096^3 or 8192^3 product are then whole waves.
pub const TC6KB_BLOCKS: u32 = 4;
/// Stage 6kb: the most tile-rows (of `TC_BM`) of C it runs; larger products run stage
/// 6k (the SMs that transpose cost the product a share that grows with m, the copy
/// they save does not; measured on the H200: `matmul_tc`'s `plan_6k`).
pub const TC6KB_MAX_TILE_ROWS: u32 = 48;
/// Stage 6kb: the transposing blocks for a grid of `sms` blocks: one per 32 SMs, at
/// least one, at most [`TC6KB_BLOCKS`].
pub const fn tc6kb_blocks(sms: u32) -> u32 {
    let t = sms / 32;
    if t < 1 {
        1
    } else if t > TC6KB_BLOCKS {
        TC6KB_BLOCKS
    } else {
        t
    }
}
// The transposing warps' buffers and barriers fit in stage 6t's ring (they reuse it).
const _: () = assert!(
    TC6KB_DEPTH * (TC6KB_ITEM * TC6T_TF32_BN * 4 + 16)
        + (TC6T_TF32_THREADS / 32) * TC6KB_ITEM * TC6KB_ITEM * 4
        <= TC6T_TF32_STAGES * TC6T_TF32_STAGE_BYTES
);

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

/// Hopper matmul, stage 8: blocks per cluster. The two blocks of a cluster compute
/// vertically adjacent tiles (the same columns of B); each loads half of the B tile
/// and multicasts it to both.
pub const WG_CLUSTER: u32 = 2;
/// Hopper matmul, stage 8: rows of C per TMA store of the epilogue (one consumer
/// warp's rows of its `m64n256` tile).
pub const WG_C_BOX_ROWS: u32 = 16;
/// Hopper matmul, stage 8: columns of an f32 C per TMA store (128 bytes: the
/// 128-byte swizzle's span; a 16-bit C stores twice as many).
pub const WG_C_BOX_COLS: u32 = 32;
/// Hopper matmul, stage 8: the epilogue's staging buffers: two boxes per consumer
/// warp (8 warps), so one is filled while the last one's store reads the other.
pub const WG_C_STAGE_BYTES: u32 = 8 * 2 * WG_C_BOX_ROWS * WG_C_BOX_COLS * 4;
/// Hopper matmul, stage 8: dynamic shared memory: the stages, 1 KiB for the
/// barriers, the epilogue's buffers, and 1 KiB of alignment slack (226 KiB of the
/// 227 KiB a block may have).
pub const WG8_SMEM_BYTES: u32 = WG_STAGES * WG_STAGE_BYTES + 1024 + WG_C_STAGE_BYTES + 1024;
const _: () = assert!(WG8_SMEM_BYTES <= 227 * 1024);

/// One configuration of the configurable FP32 matmul ([`crate::matmul_tiles`]): a
/// `bm x bn` block tile of C split into `wm x wn` warp tiles, K steps of
/// [`MM_BK`]. A warp's lanes sit 4 down by 8 across its tile, so each thread owns
/// `wm/4 x wn/8` outputs, as groups of 4x4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmTile {
    /// Rows of C per block (a multiple of 32: the A tile's swizzle flips bit 4).
    pub bm: u32,
    /// Columns of C per block.
    pub bn: u32,
    /// Rows of C per warp (a multiple of 16).
    pub wm: u32,
    /// Columns of C per warp (a multiple of 32).
    pub wn: u32,
    /// Launch bounds: blocks per SM that ptxas plans registers for.
    pub min_blocks: u32,
    /// Shared-memory stages of the `cp.async` variant (3 or 4; the register-staged
    /// kernel always has 2).
    pub stages: u32,
    /// Warp groups that share each K step of the `cp.async` variant (1 or 2: sliced
    /// K). Each group computes the whole tile over its part of every step, and the
    /// groups' sums are added in shared memory at the end; the register-staged kernel
    /// always has 1.
    pub kslices: u32,
}

impl MmTile {
    /// `bm x bn` blocks of `wm x wn` warp tiles, launch bounds for `min_blocks` per SM.
    pub const fn new(bm: u32, bn: u32, wm: u32, wn: u32, min_blocks: u32) -> MmTile {
        MmTile {
            bm,
            bn,
            wm,
            wn,
            stages: MM_ASYNC_STAGES,
            min_blocks,
            kslices: 1,
        }
    }
    /// The same tile with `stages` shared-memory stages in the `cp.async` variant.
    pub const fn with_stages(self, stages: u32) -> MmTile {
        MmTile { stages, ..self }
    }
    /// The same tile with `kslices` warp groups sharing each K step (sliced K).
    pub const fn with_kslices(self, kslices: u32) -> MmTile {
        MmTile { kslices, ..self }
    }
    /// Threads per block: a warp per warp tile and K slice.
    pub const fn threads(&self) -> u32 {
        (self.bm / self.wm) * (self.bn / self.wn) * WARP_SIZE * self.kslices
    }
    /// Outputs per thread down (`wm / 4`).
    pub const fn tm(&self) -> u32 {
        self.wm / 4
    }
    /// Outputs per thread across (`wn / 8`).
    pub const fn tn(&self) -> u32 {
        self.wn / 8
    }
    /// 16-byte vectors of A each thread loads per K step (`bm · MM_BK / 4` in all).
    pub const fn a_loads(&self) -> u32 {
        self.bm * MM_BK / 4 / self.threads()
    }
    /// 16-byte vectors of B each thread loads per K step (`MM_BK · bn / 4` in all).
    pub const fn b_loads(&self) -> u32 {
        self.bn * MM_BK / 4 / self.threads()
    }
    /// Dynamic shared memory: two stages of `As[MM_BK][bm]` and `Bs[MM_BK][bn]`.
    pub const fn smem_bytes(&self) -> u32 {
        2 * (self.bm + self.bn) * MM_BK * 4
    }
    /// Dynamic shared memory of the `cp.async` variant (`matmul_tiles_async`):
    /// `stages` stages of `As[bm][MM_ASYNC_BK]` and `Bs[MM_ASYNC_BK][bn]`.
    pub const fn async_smem_bytes(&self) -> u32 {
        self.stages * (self.bm + self.bn) * MM_ASYNC_BK * 4
    }
    /// 16-byte chunks of A each thread copies per step of the `cp.async` variant.
    pub const fn async_a_loads(&self) -> u32 {
        self.bm * MM_ASYNC_BK / 4 / self.threads()
    }
    /// 16-byte chunks of B each thread copies per step of the `cp.async` variant.
    pub const fn async_b_loads(&self) -> u32 {
        self.bn * MM_ASYNC_BK / 4 / self.threads()
    }
    /// Whether warps cover the block and the thread tile is whole 4x4 groups.
    pub const fn is_valid_layout(&self) -> bool {
        self.bm % self.wm == 0
            && self.bn % self.wn == 0
            && self.wm % 16 == 0
            && self.wn % 32 == 0
            && self.threads() <= 1024
    }
    /// Whether the register-staged tile kernel can run it: a valid layout, the A
    /// tile's swizzle (`bm % 32`), the loads split evenly over the threads.
    pub const fn is_valid(&self) -> bool {
        self.is_valid_layout()
            && self.bm % 32 == 0
            && self.kslices == 1
            && (self.bm * MM_BK / 4) % self.threads() == 0
            && (self.bn * MM_BK / 4) % self.threads() == 0
            && self.a_loads() >= 1
            && self.b_loads() >= 1
    }
    /// Whether the `cp.async` variant can run it: a valid layout, 4-row thread tiles,
    /// the copies split evenly over the threads, one or two K slices (each a whole
    /// number of the step's 8 groups of 4 k, and the slices' sums fitting the stages'
    /// shared memory, where they are added).
    pub const fn is_valid_async(&self) -> bool {
        self.is_valid_layout()
            && self.tm() == 4
            && (self.kslices == 1 || self.kslices == 2)
            && (self.kslices == 1
                || self.bm * self.bn <= self.stages * (self.bm + self.bn) * MM_ASYNC_BK)
            && (self.bm * MM_ASYNC_BK / 4) % self.threads() == 0
            && (self.bn * MM_ASYNC_BK / 4) % self.threads() == 0
            && self.async_a_loads() >= 1
            && self.async_b_loads() >= 1
    }
}

/// The instantiated tiles of `matmul_tiles`, largest first; kernel `i` is
/// `matmul_relu_tile_{bm}x{bn}`. The small ones fill 132 SMs on small products.
/// There is no 128x128 entry: stage 4 is that tile, and this kernel's 128x128
/// instance needed 145 registers on sm_90 against stage 4's 127 (one block per SM
/// instead of two), or spilled under launch bounds for two.
pub const MM_TILES: [MmTile; 5] = [
    MmTile::new(128, 64, 32, 64, 3),
    MmTile::new(64, 128, 32, 64, 3),
    MmTile::new(64, 64, 32, 32, 4),
    MmTile::new(32, 64, 32, 32, 8),
    MmTile::new(32, 32, 16, 32, 8),
];
const _: () = {
    let mut i = 0;
    while i < MM_TILES.len() {
        assert!(MM_TILES[i].is_valid());
        i += 1;
    }
};

/// The tiles of the `cp.async` variant (`matmul_tiles_async`), kernel `i` named
/// `matmul_relu_async_{bm}x{bn}`. Warp tiles 16 rows high (4 rows a thread): the
/// variant holds a thread's 4-k slice of A in registers (`4·tm` floats), which with
/// 8-row thread tiles spilled (so did 64x128 and 128x64 tiles of 16x64 warps, at
/// 128 registers).
///
/// Entries 9 and 10 have 4 warps of 16x64 (8 columns a thread, 12 shared loads per
/// 128 FMAs against 8 per 64): the shape of Triton's best FP32 config at 1024^3 on the
/// H100 (64x64, 4 warps, 3 stages). The last is entry 9 computed by two K slices of 4
/// warps (`kslices`): 16 warps per SM instead of 8 where two blocks fit, each warp half
/// of every step's FMAs, the slices' sums added in shared memory at the end.
pub const MM_ASYNC_TILES: [MmTile; 12] = [
    MmTile::new(64, 64, 16, 32, 2),
    MmTile::new(64, 32, 16, 32, 4),
    MmTile::new(32, 64, 16, 32, 4),
    MmTile::new(32, 32, 16, 32, 8),
    MmTile::new(16, 64, 16, 32, 8),
    MmTile::new(16, 128, 16, 64, 8),
    MmTile::new(16, 64, 16, 32, 8).with_stages(4),
    MmTile::new(32, 64, 16, 32, 4).with_stages(4),
    MmTile::new(64, 64, 16, 32, 2).with_stages(4),
    MmTile::new(64, 64, 16, 64, 2),
    MmTile::new(64, 64, 16, 64, 2).with_stages(4),
    MmTile::new(64, 64, 16, 64, 2).with_kslices(2),
];
const _: () = {
    let mut i = 0;
    while i < MM_ASYNC_TILES.len() {
        assert!(MM_ASYNC_TILES[i].is_valid_async());
        i += 1;
    }
};

/// The `cp.async` variant of the tile kernels (`matmul_tiles_async`): depth of one
/// K step (a 128-byte row of A per tile row: 8 chunks of 16 bytes).
pub const MM_ASYNC_BK: u32 = 32;
/// The `cp.async` variant: shared-memory stages by default (two steps in flight while
/// one is computed); some tiles have 4 (`MmTile::with_stages`), as Triton's best FP32
/// configs for small squares do.
pub const MM_ASYNC_STAGES: u32 = 3;

/// Which K loop a cluster split-K kernel runs ([`MmCluster`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmLoop {
    /// The register-staged loop of `matmul_tiles`, tile `MM_TILES[i]`.
    Tile(usize),
    /// The `cp.async` loop of `matmul_tiles_async`, tile `MM_ASYNC_TILES[i]`.
    Async(usize),
}

/// One split-K-over-a-cluster kernel (`matmul_cluster_splitk`): a tile kernel's K
/// loop, K cut into `cluster` slices computed by the blocks of one thread-block
/// cluster, the slices added through distributed shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmCluster {
    pub kloop: MmLoop,
    /// Blocks per cluster (= K slices): 2 to 8, dividing the tile's rows.
    pub cluster: u32,
}

impl MmCluster {
    /// `kloop` with K over a cluster of `cluster` blocks.
    pub const fn new(kloop: MmLoop, cluster: u32) -> MmCluster {
        MmCluster { kloop, cluster }
    }
    /// The tile of the K loop.
    pub const fn tile(&self) -> MmTile {
        match self.kloop {
            MmLoop::Tile(i) => MM_TILES[i],
            MmLoop::Async(i) => MM_ASYNC_TILES[i],
        }
    }
    /// Dynamic shared memory: the K loop's stages, later reused for the block's
    /// `bm x bn` sums that the cluster reads.
    pub const fn smem_bytes(&self) -> u32 {
        let t = self.tile();
        let stages = match self.kloop {
            MmLoop::Tile(_) => t.smem_bytes(),
            MmLoop::Async(_) => t.async_smem_bytes(),
        };
        let sums = t.bm * t.bn * 4;
        if stages > sums {
            stages
        } else {
            sums
        }
    }
}

/// The cluster split-K kernels, kernel `i` named in
/// `matmul_cluster_splitk::CLUSTER_KERNEL_NAMES[i]`: the tiles the H100 tuning runs
/// picked with split K (64x128 at 1000^3-1024^3 and 64x4096x4096, the 4-stage
/// `cp.async` tiles at 256^3-512^3), with 2 to 8 slices.
pub const MM_CLUSTER_CONFIGS: [MmCluster; 11] = [
    MmCluster::new(MmLoop::Tile(1), 2),
    MmCluster::new(MmLoop::Tile(1), 4),
    MmCluster::new(MmLoop::Tile(1), 8),
    MmCluster::new(MmLoop::Tile(0), 4),
    MmCluster::new(MmLoop::Tile(2), 4),
    MmCluster::new(MmLoop::Async(7), 2),
    MmCluster::new(MmLoop::Async(7), 4),
    MmCluster::new(MmLoop::Async(6), 2),
    MmCluster::new(MmLoop::Async(6), 4),
    MmCluster::new(MmLoop::Async(8), 4),
    MmCluster::new(MmLoop::Async(9), 2),
];
const _: () = {
    let mut i = 0;
    while i < MM_CLUSTER_CONFIGS.len() {
        let c = MM_CLUSTER_CONFIGS[i];
        assert!(c.cluster >= 2 && c.cluster <= 8 && c.tile().bm % c.cluster == 0);
        assert!(c.smem_bytes() <= 227 * 1024);
        i += 1;
    }
};

/// Threads per block of the split-K reduction (4 outputs per thread).
pub const SPLITK_REDUCE_THREADS: u32 = 256;
/// Most K slices of a split-K matmul.
pub const SPLITK_MAX: u32 = 32;

/// GEMV, one row times a matrix (`1 x k · k x n`): threads per block, as
/// [`GEMV_ROW_KGROUPS`] groups of 32 lanes, each lane 4 adjacent columns, so a block
/// covers 128 columns and its groups take every 8th row of B.
pub const GEMV_ROW_THREADS: u32 = 256;
/// See [`GEMV_ROW_THREADS`].
pub const GEMV_ROW_KGROUPS: u32 = GEMV_ROW_THREADS / WARP_SIZE;
/// Columns of C per GEMV-row block.
pub const GEMV_ROW_COLS: u32 = 4 * WARP_SIZE;
/// GEMV, a matrix times one column (`m x k · k x 1`): threads per block, a warp per row.
pub const GEMV_COL_THREADS: u32 = 256;
/// Rows of C per GEMV-column block.
pub const GEMV_COL_ROWS: u32 = GEMV_COL_THREADS / WARP_SIZE;
