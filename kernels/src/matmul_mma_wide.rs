//! Matmul + ReLU, stage 6b: stage 6 with 128x256 block tiles, one block of 8 warps
//! per SM.
//!
//! Against stage 6 ([`matmul_mma_pipelined`](crate::matmul_mma_pipelined)), which runs
//! two 128x128 blocks of 4 warps per SM: the same 8 warps of 64x64 per SM, the same
//! fragments, `ldmatrix` loads and `mma`s per warp, but **a quarter less traffic from
//! L2**. A K step of a `bm x bn` tile copies `(bm + bn)` rows of 128 bytes for
//! `bm·bn` outputs: 256 rows per 16384 outputs for 128x128, 384 per 32768 for
//! 128x256. At stage 6's speed on an H100 or H200 (400 TFLOP/s of bf16) the 128x128
//! tiles pull 6.4 TB/s out of L2, and TF32, whose operands are twice the bytes per
//! FLOP, 7.5 TB/s at the 240 TFLOP/s issue 10 asks of it: around what the L2 can
//! deliver at all.
//!
//! The cost: a barrier per K step now stops all 8 warps of the SM together (two
//! blocks interleave theirs), and 3 stages of 48 KiB (144 KiB, an A100's 163 KiB
//! allows no fourth) where stage 6 keeps 2 x 3 of 32.
//!
//! The host sends only aligned problems here (as stage 6).
use crate::config::{
    TC6W4_SMEM_BYTES, TC6W4_SMEM_BYTES_TF32, TC6W_BN, TC6W_SMEM_BYTES, TC6W_SMEM_BYTES_TF32,
    TC6W_STAGES, TC6W_THREADS,
};
use crate::matmul_mma_pipelined::{body, problem_of, BF16, F16, TF32};
use crate::params::{MatmulParams, MatmulParams16};
use simt_std::kernel;

kernel! {
    /// `C = epilogue(A · B)` on tensor cores, bf16 inputs, f32 accumulation and output:
    /// stage 6 with 128x256 block tiles.
    ///
    /// # Safety
    /// As [`matmul_mma_pipelined_bf16()`](crate::matmul_mma_pipelined::matmul_mma_pipelined_bf16()).
    ///
    /// # Parameters
    /// One [`MatmulParams16`]: `a`: `[m, k]`, `b`: `[k, n]` row-major bf16 bits;
    /// `c`: `[m, n]` row-major f32; `epilogue: Relu` fuses the ReLU.
    ///
    /// # Tiling
    /// Block tile 128x256, K steps of 64, 3 shared stages of 48 KiB (A `[128][64]`,
    /// B `[64][256]`, 16-byte chunks XOR-swizzled); warp tile 64x64 = 4x8
    /// `mma.m16n8k16` (128 f32 accumulators per lane), fragments by `ldmatrix.x4` (A)
    /// and `ldmatrix.x4.trans` (B).
    ///
    /// # Thread Mapping
    /// 256 threads = 8 warps, warp `w` at rows `64·(w/4)`, columns `64·(w%4)`; each
    /// thread issues 4 copies of A and 8 of B per step; `grid = (ceil(n/256), ceil(m/128))`,
    /// visited in grouped order ([`GROUP_M`](crate::matmul_mma_pipelined::GROUP_M)).
    #[launch(threads = TC6W_THREADS, min_blocks = 1, shared = TC6W_SMEM_BYTES)]
    pub unsafe fn matmul_mma_wide_bf16(p: MatmulParams16) {
        // SAFETY: forwarded; the launch's shape is the body's.
        unsafe { body::<BF16, TC6W_BN, TC6W_THREADS, TC6W_STAGES, 0>(problem_of!(p)) }
    }
}

kernel! {
    /// As [`matmul_mma_wide_bf16()`], f16 inputs.
    ///
    /// # Safety
    /// As [`matmul_mma_wide_bf16()`].
    #[launch(threads = TC6W_THREADS, min_blocks = 1, shared = TC6W_SMEM_BYTES)]
    pub unsafe fn matmul_mma_wide_f16(p: MatmulParams16) {
        // SAFETY: forwarded; the launch's shape is the body's.
        unsafe { body::<F16, TC6W_BN, TC6W_THREADS, TC6W_STAGES, 0>(problem_of!(p)) }
    }
}

kernel! {
    /// As [`matmul_mma_wide_bf16()`] in TF32: f32 inputs rounded to TF32 (`cvt.rna`),
    /// K steps of 32 and `mma.m16n8k8`, B's k-rows padded (147 KiB of stages).
    ///
    /// # Safety
    /// As [`matmul_mma_wide_bf16()`], with `lda` and `ldb` multiples of 4.
    ///
    /// # Parameters
    /// One [`MatmulParams`] (f32 `a`, `b`, `c`).
    #[launch(threads = TC6W_THREADS, min_blocks = 1, shared = TC6W_SMEM_BYTES_TF32)]
    pub unsafe fn matmul_mma_wide_tf32(p: MatmulParams) {
        // SAFETY: forwarded; the launch's shape is the body's.
        unsafe { body::<TF32, TC6W_BN, TC6W_THREADS, TC6W_STAGES, 0>(problem_of!(p)) }
    }
}

kernel! {
    /// Trial: [`matmul_mma_wide_bf16()`] with 4 stages.
    ///
    /// # Safety
    /// As [`matmul_mma_wide_bf16()`].
    #[launch(threads = TC6W_THREADS, min_blocks = 1, shared = TC6W4_SMEM_BYTES)]
    pub unsafe fn matmul_mma_wide4_bf16(p: MatmulParams16) {
        // SAFETY: forwarded; the launch's shape is the body's.
        unsafe { body::<BF16, TC6W_BN, TC6W_THREADS, 4, 0>(problem_of!(p)) }
    }
}

kernel! {
    /// Trial: [`matmul_mma_wide_tf32()`] with 4 stages.
    ///
    /// # Safety
    /// As [`matmul_mma_wide_tf32()`].
    #[launch(threads = TC6W_THREADS, min_blocks = 1, shared = TC6W4_SMEM_BYTES_TF32)]
    pub unsafe fn matmul_mma_wide4_tf32(p: MatmulParams) {
        // SAFETY: forwarded; the launch's shape is the body's.
        unsafe { body::<TF32, TC6W_BN, TC6W_THREADS, 4, 0>(problem_of!(p)) }
    }
}
