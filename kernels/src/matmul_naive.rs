//! Matmul + ReLU, naive: one thread per output, the K loop straight from global memory.
//!
//! Each output reads a row of A and a column of B: 2K loads for 2K FLOPs, an
//! arithmetic intensity of 0.25 FLOP/byte before caches. Threads of a warp share
//! their row of A (broadcast) and read consecutive columns of B (coalesced), so L1
//! and L2 absorb much of the re-reading, but every FMA still waits on a load.
use crate::config::NAIVE_TILE;
use crate::params::MatmulParams;
use simt_std::kernel;
use simt_std::math::fma;
use simt_std::thread::{block_dim, block_idx, thread_idx};

kernel! {
    /// `C = epilogue(A · B)`: `c[i, j] = max(0, Σ_p a[i, p]·b[p, j])` with
    /// [`Epilogue::Relu`](crate::params::Epilogue), the plain sum with `None`.
    ///
    /// # Safety
    /// `a` readable at `a[i*lda + p]`, `b` at `b[p*ldb + j]`, `c` writable at
    /// `c[i*ldc + j]` for `i < m, j < n, p < k`; `c` does not overlap `a` or `b`.
    ///
    /// # Parameters
    /// One [`MatmulParams`], with `m = a.rows`, `k = a.cols`, `n = b.cols`:
    /// * `p.a`: `[m, k]` row-major, row stride `lda = p.a.ld`.
    /// * `p.b`: `[k, n]` row-major, row stride `ldb = p.b.ld`.
    /// * `p.c`: `[m, n]` row-major, row stride `ldc = p.c.ld`.
    /// * `p.epilogue`: `Relu` fuses the ReLU.
    ///
    /// # Thread Mapping
    /// Block `NAIVE_TILE x NAIVE_TILE`; `threadIdx.x` walks columns `j` (coalesced
    /// B and C), `threadIdx.y` rows `i`; `grid = (ceil(n/16), ceil(m/16))`.
    #[launch(block = (NAIVE_TILE, NAIVE_TILE, 1))]
    pub unsafe fn matmul_relu_naive(p: MatmulParams) {
        let (a, b, c, m, n, k, lda, ldb, ldc, relu) = p.unpack();
        let j = (block_idx().x * block_dim().x + thread_idx().x) as usize;
        let i = (block_idx().y * block_dim().y + thread_idx().y) as usize;
        if i < m as usize && j < n as usize {
            let mut acc = 0.0f32;
            let mut p = 0usize;
            while p < k as usize {
                // SAFETY: i < m, j < n, p < k.
                acc = fma(unsafe { *a.add(i * lda as usize + p) }, unsafe { *b.add(p * ldb as usize + j) }, acc);
                p += 1;
            }
            if relu != 0 && acc < 0.0 {
                acc = 0.0;
            }
            // SAFETY: i < m, j < n.
            unsafe { *c.add(i * ldc as usize + j) = acc };
        }
    }
}
