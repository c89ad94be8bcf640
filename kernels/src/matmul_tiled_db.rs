//! Matmul + ReLU, stage 3: the tiled kernel with double buffering.
//!
//! Stage 2 ([`matmul_relu_tiled()`](crate::matmul_tiled::matmul_relu_tiled())) waits
//! for each K step's global loads before it can compute (ncu's largest stall there:
//! waiting on global loads), and at ~100 registers per thread only 16 warps fit on an
//! SM, too few to hide that latency by switching warps.
//! Here each thread issues the *next* step's global loads into registers, computes
//! the current step from shared memory while they are in flight, then stores them
//! into the *other* of two shared stages: the load latency hides behind 512 FMAs
//! per thread, and one barrier per K step suffices instead of two.
use crate::config::MM_THREADS;
use crate::config::{MM_BK, MM_BM, MM_BN};
use crate::matmul_tiled::{Tiling, TM, TN};
use crate::params::MatmulParams;
use simt_std::kernel;
use simt_std::shared_array;
use simt_std::thread::{block_idx, sync_threads, thread_idx};

const STAGE: usize = (MM_BK * MM_BM) as usize;
const _: () = assert!(MM_BK * MM_BN == MM_BK * MM_BM);

// Two 256-thread blocks per SM need <= 128 registers per thread. The first version
// needed 129; with 32-bit indexing and `Smem` it needs 123 (sm_80) / 128 (sm_90), so the
// bound now guards the two blocks against future growth instead of forcing them.
kernel! {
    /// `C = relu?(A · B)`, tiled and double-buffered. Same formula, contract,
    /// parameters and thread mapping as
    /// [`matmul_relu_tiled()`](crate::matmul_tiled::matmul_relu_tiled()).
    ///
    /// # Safety
    /// As `matmul_relu_tiled`.
    ///
    /// # Tiling
    /// As stage 2, with two shared stages of `As[8][128]` and `Bs[8][128]` (16 KiB).
    /// Step `s` computes from stage `s % 2` while step `s+1` is loaded to registers,
    /// then stored to stage `(s+1) % 2`; one barrier per step.
    #[launch(threads = MM_THREADS, min_blocks = 2)]
    pub unsafe fn matmul_relu_tiled_db(p: MatmulParams) {
        let (a, b, c, m, n, k, lda, ldb, ldc, relu) = p.unpack();
        let a_s = shared_array!(MM_DB_A_TILES, f32, 2 * STAGE);
        let b_s = shared_array!(MM_DB_B_TILES, f32, 2 * STAGE);
        let tl = Tiling::new(a, b, m, n, k, lda, ldb, block_idx().y * MM_BM, block_idx().x * MM_BN, thread_idx().x);
        let mut acc = [[0.0f32; TN]; TM];
        let steps = tl.k.div_ceil(MM_BK);
        // SAFETY (all blocks below): kernel contract; the tiles are this kernel's own
        // shared arrays, stage offsets stay inside them.
        unsafe {
            let (av, bv) = tl.load(0);
            tl.store(a_s, b_s, av, bv);
        }
        sync_threads();
        let mut s = 0u32;
        while s < steps {
            let cur = (s as usize % 2) * STAGE;
            let nxt = STAGE - cur;
            let more = s + 1 < steps;
            // 1. issue the next step's global loads (registers; no one waits on them yet)
            let next = if more { unsafe { tl.load((s + 1) * MM_BK) } } else { Default::default() };
            // 2. compute this step from shared memory
            unsafe { tl.compute_unrolled(a_s.add(cur), b_s.add(cur), &mut acc) };
            // 3. store the next step into the other stage: its last readers finished
            //    step s-1, before the barrier that ended it
            if more {
                unsafe { tl.store(a_s.add(nxt), b_s.add(nxt), next.0, next.1) };
            }
            sync_threads();
            s += 1;
        }
        unsafe { tl.write(c, ldc, relu, &acc) };
    }
}
