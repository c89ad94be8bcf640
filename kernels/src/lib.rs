//! # The lecture's kernels
//!
//! GeLU, softmax, row sum and matmul + ReLU in SIMT style, one family per file and
//! one optimisation stage per file, written against [`simt_std`] exactly as a
//! user's own kernels crate would be. The host crate (`rust-simt`) compiles this
//! crate to PTX with `simt-builder` and runs the same source on the emulator.
//!
//! | module | kernels |
//! |---|---|
//! | [`gelu`] | naive (7 elementwise stages) and fused GeLU, exact (erf) GeLU |
//! | [`gelu_wide`] | fused GeLU with 2 or 4 16-byte vectors a thread (all loads in flight before the first store), and with evict-first loads |
//! | [`softmax`] | naive (5 kernels), fused (a block per row, the row in shared memory), warp per row |
//! | [`softmax_regs`] | the row in registers: a warp per row (up to 1024 columns), a block per row (up to 16384) |
//! | [`softmax_split`] | long rows over several cooperating blocks, chunks in registers (one read) |
//! | [`softmax_split_async`] | long rows over cooperating blocks, chunks staged by `cp.async` (one read, DRAM busy through the waits) |
//! | [`softmax_stream`] | long rows of any length as one stream of chunk reads and chunk writes, L2 holding each chunk between its two touches (DRAM reads and writes overlap) |
//! | [`softmax_split_wide`] | long rows over cooperating blocks, chunks of 128 KiB half in registers and half staged in shared memory (8 rows of 2^20 floats in one wave on an H100) |
//! | [`softmax_bulk`] | long rows in chunks of 8192 brought on chip by bulk copies into a ring, reduced, exchanged (epoch-tagged pairs) and written by specialised warps (Hopper, sm_90a module) |
//! | [`softmax_row_bulk`] | a block per row, the row brought into shared memory by bulk copies (no row in registers: three 16384-column rows an SM; Hopper, sm_90a module) |
//! | [`softmax_cluster`] | long rows over a thread-block cluster: chunks in registers, `(max, sum)` pairs over distributed shared memory (Hopper, sm_90a module) |
//! | [`softmax_online`] | rows of any length: two-pass online softmax with `(max, sum)` pairs |
//! | [`softmax_looped`] | rows of any length, a block per row reading it twice (online pair, then the write; the second read from L2): `torch.compile`'s loop |
//! | [`softmax_three_pass`] | rows of any length, a block of 1024 per row and three loops (max, sum, write; the later two from L2): the kernel `torch.compile` runs at 4096 x 16384 (L2 cache policies: sm_90a module) |
//! | [`row_sum`] | blocks per row (the row's last block adds their sums in order), lane groups per row |
//! | [`row_sum_wide`] | rows of 129-1024 columns: a warp per row, four 16-byte loads a lane in flight |
//! | [`row_sum_tiny`] | millions of rows of 1-3 columns: four rows per thread, 16-byte loads and stores |
//! | [`row_sum_stream`] | few, very long rows: striding blocks, 4 read-only loads in flight per thread |
//! | [`matmul_naive`] … [`matmul_warptiled`] | matmul + ReLU, FP32 SIMT, stages 1 to 4 |
//! | [`matmul_warptiled_streamk`] | stage 4 on persistent blocks with a stream-K tail (stage 4k) |
//! | [`matmul_warptiled_wide`] | stage 4 with 256x128 block tiles and a 16x8 thread tile, one block per SM (stage 4w) |
//! | [`matmul_warptiled_wide_tail`] | stage 4w with its partial last wave's tiles split along K, the idle SMs running the short parts (stage 4ws) |
//! | [`matmul_warptiled_tail`] | stage 4 with its partial last wave's tiles split along K, one segment per block (stage 4s) |
//! | [`streamk`] | stream-K schedules (stages 4k and 6k) |
//! | [`matmul_tiles`] | stage 4 with the block tile as a parameter (128x128 to 32x32) and split K: the autotuner's FP32 kernels |
//! | [`matmul_tiles_async`] | the same tiles fed by a 3-stage `cp.async` pipeline, K steps of 32: small products |
//! | [`matmul_cluster_splitk`] | the tile kernels with K split over a thread-block cluster, the slices added through distributed shared memory in one launch (Hopper, sm_90a module) |
//! | [`matmul_gemv`] | a row times a matrix, a matrix times a column: memory-bound products at copy bandwidth |
//! | [`matmul_mma`], [`matmul_mma_pipelined`] | matmul + ReLU on tensor cores (bf16, f16, tf32), stages 5 and 6 |
//! | [`matmul_mma_tma`] | stage 6's `mma.sync` warps fed by TMA through an mbarrier ring, the copies issued by one thread of warp 0 (Hopper, sm_90a module): stage 6t |
//! | [`matmul_wgmma`] | matmul + ReLU with `wgmma` and TMA (bf16, f16; Hopper, sm_90a module), stage 7 |
//! | [`tf32_prep`] | TF32 rounding copy (and transpose) of f32 operands, for the Hopper TF32 matmul |
//! | [`util`] | fills (poisoning, zeroing, L2 flushes) |
//! | [`matmul_wgmma_cluster`] | stage 8: stage 7 in clusters of two blocks that share B's tile through TMA multicast (Hopper, sm_90a module) |
//! | [`hopper_probes`] | probes of the Hopper primitives (TMA through an mbarrier, one wgmma region) |
//! | [`selftest`] | probes of every device-library primitive, for the tests |
//! | [`config`] | block and tile sizes shared with the host (one source of truth) |
#![cfg_attr(
    target_arch = "nvptx64",
    no_std,
    feature(abi_ptx, asm_experimental_arch)
)]
#![allow(clippy::missing_safety_doc)] // each kernel's `# Safety` lives in its doc template

pub mod config;
pub mod params;
pub mod softmax_parts;
pub mod spill_allowance;
// Stream-K schedules: stage 6k (sm_90a) and stage 4k (portable) share them.
pub mod streamk;
// The tile kernels' K loops serve both modules: their kernels are portable (each
// declaration is gated), and the cluster split-K kernels of sm_90a reuse the loops.
pub mod matmul_tiles;
pub mod matmul_tiles_async;
// Likewise the mma.sync stages' fragment and epilogue code serves stage 6t (sm_90a).
pub mod matmul_mma;
pub mod matmul_mma_pipelined;

/// Declares modules that are compiled for the host (the emulator) and for every PTX
/// target except `sm_90a`, whose module holds only the Hopper kernels.
macro_rules! portable {
    ($($m:ident),* $(,)?) => {$(
        #[cfg(any(not(target_arch = "nvptx64"), not(simt_target = "sm_90a")))]
        pub mod $m;
    )*};
}
/// Declares modules of Hopper-only kernels (wgmma, TMA, mbarriers): compiled for the
/// host and for `sm_90a`.
macro_rules! hopper {
    ($($m:ident),* $(,)?) => {$(
        #[cfg(any(not(target_arch = "nvptx64"), simt_target = "sm_90a"))]
        pub mod $m;
    )*};
}

portable!(
    convert,
    gelu,
    gelu_wide,
    matmul_gemv,
    matmul_naive,
    matmul_tiled,
    matmul_tiled_db,
    matmul_warptiled,
    matmul_warptiled_streamk,
    matmul_warptiled_tail,
    matmul_warptiled_wide,
    matmul_warptiled_wide_tail,
    row_sum,
    row_sum_stream,
    row_sum_tiny,
    row_sum_wide,
    selftest,
    softmax,
    softmax_looped,
    softmax_online,
    softmax_regs,
    softmax_split,
    softmax_split_async,
    softmax_split_wide,
    softmax_stream,
    tf32_prep,
    util,
);
hopper!(
    hopper_probes,
    matmul_cluster_splitk,
    matmul_mma_streamk,
    matmul_mma_streamk_tb,
    matmul_mma_tma,
    matmul_wgmma,
    matmul_wgmma_cluster,
    softmax_bulk,
    softmax_cluster,
    softmax_row_bulk,
    softmax_three_pass
);

pub use simt_std;
