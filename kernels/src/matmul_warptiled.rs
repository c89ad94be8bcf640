//! Matmul + ReLU, stage 4: warp tiling and an unchecked interior path.
//!
//! Stage 3 ([`matmul_relu_tiled_db()`](crate::matmul_tiled_db::matmul_relu_tiled_db()))
//! lays its 16x16 threads out row-major over the 128x128 block tile: a warp is 2
//! thread rows by 16 thread columns, and its outputs are scattered over 8 rows and
//! 128 columns of the tile. Per k, each thread reads 2 A vectors and 2 B vectors of
//! 16 bytes from shared memory. A warp's A loads touch 2 distinct vectors (32 bytes),
//! and its B loads touch 16 (256 bytes).
//!
//! **Warp tiling** gives each warp a compact 32x64 sub-tile instead, its lanes 4
//! rows by 8 columns. A warp's A loads then touch 4 distinct vectors (64 bytes), and
//! its B loads 8 (128 bytes, one full pass of the 32 banks). `tests/device_library.rs`
//! pins these byte counts and checks that the warp tiles cover the block tile
//! exactly once.
//!
//! Why the layout is the gain (the measurements are in `docs/PERFORMANCE.md`): an
//! ablation kernel with this file's code but stage 3's thread layout ran as slowly
//! as stage 3, and ncu counted the same shared-memory wavefronts per 16-byte warp
//! load in both layouts, with no bank conflicts. So the gain is not fewer passes
//! over the banks, as a simple pass model predicts (6 per k vs 4), but fewer
//! distinct bytes per load.
//!
//! Against stage 3, this stage also:
//! * gives blocks whose tile lies wholly inside A, B and C (with aligned rows) an
//!   interior path with no bounds checks: unconditional 16-byte loads and stores.
//!   Edge blocks and a ragged last K step keep the checked path, so any M, N, K works;
//! * computes shared-memory offsets relative to the stage, so all 32 shared loads of
//!   a step use immediate offsets from two base registers;
//! * has a branch-free main loop: the last step "loads" the step past K, which reads
//!   zeros into a stage whose only later read (a fragment load) nothing uses;
//! * loads each k's fragments from shared memory during the k before, across the
//!   barrier too ([`k_steps`]), in the FMA order measured best ([`fmas`]).
//!
//! K steps of 16 instead of 8 (`MM_BK`) were measured at 3.07 ms against 2.93.
//! The bigger loop body raised the dispatch stalls from 9% to 15% of ncu's samples.
use crate::config::{MM_BK, MM_BM, MM_BN, MM_THREADS, WARP_SIZE};
use crate::matmul_tiled::{TM, TN};
use crate::params::MatmulParams;
use simt_std::memory::{is_aligned16, load4, load4_first, store4, store4_first, F32x4};
use simt_std::shared::Smem;
use simt_std::swizzle;
use simt_std::thread::{block_idx, sync_threads, thread_idx};
use simt_std::{kernel, shared_array, unroll};

/// Rows of C per warp.
pub const WARP_M: u32 = 32;
/// Columns of C per warp.
pub const WARP_N: u32 = 64;
/// Lanes across a warp tile's columns (so `32 / LANES_N = 4` lanes down its rows).
pub const LANES_N: u32 = 8;
const LANES_M: u32 = WARP_SIZE / LANES_N;
const WARPS_N: u32 = MM_BN / WARP_N;
const _: () = assert!(
    (MM_BM / WARP_M) * (MM_BN / WARP_N) * WARP_SIZE == MM_THREADS
        && WARP_M == 2 * 4 * LANES_M
        && WARP_N == 2 * 4 * LANES_N
        && TM == 8
        && TN == 8
        && MM_BK == 8
);

/// Floats per shared stage of A (and of B): `MM_BK x 128`.
pub(crate) const STAGE: usize = (MM_BK * MM_BM) as usize;

/// Where thread `t` of a block sits in its block tile: the first of its two 4-row
/// groups (the second is `WARP_M / 2` = 16 rows lower) and the first of its two
/// 4-column groups (the second `WARP_N / 2` = 32 columns right).
#[inline(always)]
pub const fn warp_tile_origin(t: u32) -> (u32, u32) {
    let (warp, lane) = (t / WARP_SIZE, t % WARP_SIZE);
    let (wm, wn) = (warp / WARPS_N, warp % WARPS_N);
    let (ly, lx) = (lane / LANES_N, lane % LANES_N);
    (wm * WARP_M + 4 * ly, wn * WARP_N + 4 * lx)
}

/// One thread's view of the problem: operands, the block's origin, its load and
/// compute mapping. Stage 4k ([`crate::matmul_warptiled_streamk`]) builds one per
/// tile it visits ([`WarpTiling::at`]).
#[derive(Clone, Copy)]
pub(crate) struct WarpTiling {
    a: *const f32,
    b: *const f32,
    m: u32,
    n: u32,
    k: u32,
    lda: u32,
    ldb: u32,
    row0: u32,
    col0: u32,
    /// The block tile lies inside A, B and C and all rows are 16-byte aligned.
    interior: bool,
    la_row: u32,
    la_k: u32,
    lb_k: u32,
    lb_col: u32,
    rm: u32,
    cn: u32,
}

/// The order in which [`fmas`] hands ptxas a k's 64 FMAs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum FmaOrder {
    /// Row by row: `acc[0][0..8]`, `acc[1][0..8]`, ...
    Rows,
    /// 2x2 blocks, the shape in which cuBLAS's FP32 kernel issues its FFMAs: the four
    /// column pairs in turn, each pair's 8 rows down or up (alternating, so that the row
    /// at a turn is used twice running), both columns of a row in turn. From the left
    /// and down first ([`pairs_at`]); `mirrored` starts at the bottom right instead
    /// (row `i` becomes `7 - i`, column `j` becomes `7 - j`).
    Pairs { mirrored: bool },
}

/// Place `x` (0 .. `8 · rows`) of [`FmaOrder::Pairs`] in a thread tile of `rows` rows
/// and 8 columns: `(row, column)`. Stage 4 has 8 rows, stage 4w
/// ([`crate::matmul_warptiled_wide`]) 16.
#[inline(always)]
pub(crate) const fn pairs_at(x: usize, rows: usize, mirrored: bool) -> (usize, usize) {
    let (jp, ii, jj) = (x / (2 * rows), x % (2 * rows) / 2, x % 2);
    let i = if jp % 2 == 0 { ii } else { rows - 1 - ii };
    let j = 2 * jp + jj;
    if mirrored {
        (rows - 1 - i, TN - 1 - j)
    } else {
        (i, j)
    }
}

// Both pair orders visit each accumulator exactly once, for 8 and 16 rows.
const _: () = {
    let mut c = 0;
    while c < 4 {
        let (rows, mirrored) = (8 * (1 + c / 2), c % 2 == 1);
        let mut seen = 0u128;
        let mut x = 0;
        while x < rows * TN {
            let (i, j) = pairs_at(x, rows, mirrored);
            seen |= 1u128 << (i * TN + j);
            x += 1;
        }
        assert!(seen == u128::MAX >> (128 - rows * TN));
        c += 1;
    }
};

/// A thread's view of a block tile whose K loop is [`k_steps`]: stage 4's
/// ([`WarpTiling`]) and stage 4w's. The loop is written once; each tiling says how it
/// loads a K step, stores it into a shared stage, reads one k's fragments and runs
/// their FMAs.
pub(crate) trait KLoop {
    /// Floats of one shared stage of A and of B.
    const A_STAGE: usize;
    const B_STAGE: usize;
    /// One K step's share of global memory, held in registers during the step before.
    type Share: Copy;
    /// One k's fragments of A and B.
    type Frag: Copy;
    /// The thread's accumulators.
    type Acc;
    /// This thread's share of the K step at `k0`; zeros outside the matrices.
    ///
    /// # Safety
    /// The kernel's contract (A and B readable as it describes).
    unsafe fn load(&self, k0: u32) -> Self::Share;
    /// Stores a share into one stage.
    ///
    /// # Safety
    /// `a_s` and `b_s` are stages of `A_STAGE` and `B_STAGE` floats, 16-byte aligned,
    /// that no thread reads until a barrier.
    unsafe fn store(&self, a_s: Smem<f32>, b_s: Smem<f32>, share: Self::Share);
    /// Fragments of k `kk` of one stage.
    ///
    /// # Safety
    /// The stage holds a fully stored K step (a barrier separates the stores from this).
    unsafe fn fragments(&self, a_s: Smem<f32>, b_s: Smem<f32>, kk: u32) -> Self::Frag;
    /// One k's FMAs into the accumulators, in the tiling's measured order.
    fn fmas(acc: &mut Self::Acc, f: &Self::Frag);
}

impl WarpTiling {
    /// Thread `t`'s view of the tile at `(row0, col0)` of C.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn at(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: u32,
        n: u32,
        k: u32,
        lda: u32,
        ldb: u32,
        ldc: u32,
        t: u32,
        (row0, col0): (u32, u32),
    ) -> Self {
        let vec_a = is_aligned16(a) && lda % 4 == 0;
        let vec_b = is_aligned16(b) && ldb % 4 == 0;
        let vec_c = is_aligned16(c) && ldc % 4 == 0;
        let (rm, cn) = warp_tile_origin(t);
        WarpTiling {
            a,
            b,
            m,
            n,
            k,
            lda,
            ldb,
            row0,
            col0,
            interior: vec_a && vec_b && vec_c && row0 + MM_BM <= m && col0 + MM_BN <= n,
            la_row: t / 2,
            la_k: 4 * (t % 2),
            lb_k: t / 32,
            lb_col: 4 * (t % 32),
            rm,
            cn,
        }
    }

    /// This thread's share of the K step at `k0`: 4 values of A (row `la_row`,
    /// columns `k0 + la_k ..+4`) and 4 of B (row `k0 + lb_k`, columns `lb_col ..+4`);
    /// zeros outside the matrices.
    ///
    /// # Safety
    /// The kernel's contract (A and B readable as described).
    #[inline(always)]
    pub(crate) unsafe fn load(&self, k0: u32) -> (F32x4, F32x4) {
        let (gr, gc) = (self.row0 + self.la_row, self.col0 + self.lb_col);
        let (ka, kb) = (k0 + self.la_k, k0 + self.lb_k);
        // One interior test for both operands: with a test per operand, ptxas emitted
        // two branchy regions and the kernel ran 14% slower (docs/PERFORMANCE.md).
        if self.interior && k0 + MM_BK <= self.k {
            // SAFETY: interior block and a whole K step: every index is in range, and
            // rows are 16-byte aligned.
            unsafe {
                (
                    load4(self.a.add((gr * self.lda + ka) as usize)),
                    load4(self.b.add((kb * self.ldb + gc) as usize)),
                )
            }
        } else {
            let mut av = F32x4::default();
            let mut bv = F32x4::default();
            if gr < self.m && ka < self.k {
                let vec_a = is_aligned16(self.a) && self.lda % 4 == 0;
                // SAFETY: row gr < m; columns ka.. of which min(4, k - ka) exist.
                av = unsafe {
                    load4_first(
                        self.a.add((gr * self.lda + ka) as usize),
                        self.k - ka,
                        vec_a,
                    )
                };
            }
            if kb < self.k && gc < self.n {
                let vec_b = is_aligned16(self.b) && self.ldb % 4 == 0;
                // SAFETY: row kb < k; columns gc.. of which min(4, n - gc) exist.
                bv = unsafe {
                    load4_first(
                        self.b.add((kb * self.ldb + gc) as usize),
                        self.n - gc,
                        vec_b,
                    )
                };
            }
            (av, bv)
        }
    }

    /// Stores a loaded share into one stage: A transposed and swizzled, B as is.
    ///
    /// # Safety
    /// `a_s` and `b_s` are stages of `STAGE` floats, 16-byte aligned, that no thread
    /// reads until a barrier.
    #[inline(always)]
    pub(crate) unsafe fn store(&self, a_s: Smem<f32>, b_s: Smem<f32>, (av, bv): (F32x4, F32x4)) {
        // The swizzle depends on bit 2 of the stage row only, which `la_k + J` (J < 4)
        // shares with `la_k` (0 or 4): one swizzled column for all four stores.
        let col = swizzle::matmul_a(self.la_k, self.la_row);
        let a4 = av.to_array();
        unroll!(4, J => {
            // SAFETY: row la_k + J < 8, swizzled column < 128: inside the A stage.
            unsafe { a_s.add(((self.la_k + J as u32) * MM_BM + col) as usize).write(a4[J]) };
        });
        // SAFETY: row lb_k < 8, lb_col + 4 <= 128, 16-aligned.
        unsafe {
            b_s.add((self.lb_k * MM_BN + self.lb_col) as usize)
                .store4(bv)
        };
    }

    /// Fragments of k `kk` of one stage: the thread's 8 values of A (its rows) and 8 of
    /// B (its columns), by 4 shared loads of 16 bytes.
    ///
    /// # Safety
    /// The stage holds a fully stored K step (a barrier separates the stores from this).
    #[inline(always)]
    pub(crate) unsafe fn fragments(
        &self,
        a_s: Smem<f32>,
        b_s: Smem<f32>,
        kk: u32,
    ) -> ([f32; 8], [f32; 8]) {
        // SAFETY: offsets inside the stage; the swizzle flips bit 4 only, so 4-aligned
        // groups stay contiguous and 16-byte aligned. Every offset is a constant plus
        // `rm` or `cn`.
        let (a_lo, a_hi, b_lo, b_hi) = unsafe {
            (
                a_s.add((kk * MM_BM + swizzle::matmul_a(kk, self.rm)) as usize)
                    .load4(),
                a_s.add((kk * MM_BM + swizzle::matmul_a(kk, self.rm + WARP_M / 2)) as usize)
                    .load4(),
                b_s.add((kk * MM_BN + self.cn) as usize).load4(),
                b_s.add((kk * MM_BN + self.cn + WARP_N / 2) as usize)
                    .load4(),
            )
        };
        (
            [
                a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w,
            ],
            [
                b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w,
            ],
        )
    }

    /// The 8 rank-1 updates of one stage into the thread's 8x8 accumulators: per k,
    /// 4 shared loads of 16 bytes ([`WarpTiling::fragments`]) and 64 FMAs
    /// ([`fmas`]), in the order `order` gives them to the compiler.
    ///
    /// # Safety
    /// The stage holds a fully stored K step (a barrier separates the stores from this).
    #[inline(always)]
    pub(crate) unsafe fn compute(
        &self,
        a_s: Smem<f32>,
        b_s: Smem<f32>,
        acc: &mut [[f32; TN]; TM],
        order: FmaOrder,
    ) {
        unroll!(8, KK => {
            // SAFETY: the caller's contract.
            let (af, bf) = unsafe { self.fragments(a_s, b_s, KK as u32) };
            fmas(acc, &af, &bf, order);
        });
    }

    /// Epilogue: optional ReLU, then the 8x8 tile to C (unchecked 16-byte stores in
    /// interior blocks, checked ones at the edges).
    ///
    /// # Safety
    /// The kernel's contract (C writable as described).
    #[inline(always)]
    pub(crate) unsafe fn write(&self, c: *mut f32, ldc: u32, relu: u32, acc: &[[f32; TN]; TM]) {
        let vec_c = is_aligned16(c) && ldc % 4 == 0;
        unroll!(8, I => {
            let r = self.row0 + self.rm + (I as u32 % 4) + if I < 4 { 0 } else { WARP_M / 2 };
            unroll!(2, H => {
                let c0 = self.col0 + self.cn + H as u32 * (WARP_N / 2);
                let mut v = F32x4 { x: acc[I][4 * H], y: acc[I][4 * H + 1], z: acc[I][4 * H + 2], w: acc[I][4 * H + 3] };
                if relu != 0 {
                    v = v.map(|x| if x > 0.0 { x } else { 0.0 });
                }
                let p = c.wrapping_add((r * ldc + c0) as usize);
                if self.interior {
                    // SAFETY: interior block: (r, c0..c0+4) inside C, row aligned.
                    unsafe { store4(p, v) };
                } else if r < self.m {
                    // SAFETY: r < m; of the columns c0.., those below n are written.
                    unsafe { store4_first(p, v, self.n.saturating_sub(c0), vec_c) };
                }
            });
        });
    }
}

impl KLoop for WarpTiling {
    const A_STAGE: usize = STAGE;
    const B_STAGE: usize = STAGE;
    type Share = (F32x4, F32x4);
    type Frag = ([f32; 8], [f32; 8]);
    type Acc = [[f32; TN]; TM];
    #[inline(always)]
    unsafe fn load(&self, k0: u32) -> Self::Share {
        // SAFETY: the caller's contract.
        unsafe { WarpTiling::load(self, k0) }
    }
    #[inline(always)]
    unsafe fn store(&self, a_s: Smem<f32>, b_s: Smem<f32>, share: Self::Share) {
        // SAFETY: the caller's contract.
        unsafe { WarpTiling::store(self, a_s, b_s, share) }
    }
    #[inline(always)]
    unsafe fn fragments(&self, a_s: Smem<f32>, b_s: Smem<f32>, kk: u32) -> Self::Frag {
        // SAFETY: the caller's contract.
        unsafe { WarpTiling::fragments(self, a_s, b_s, kk) }
    }
    #[inline(always)]
    fn fmas(acc: &mut Self::Acc, f: &Self::Frag) {
        fmas(acc, &f.0, &f.1, STAGE4_ORDER);
    }
}

/// One k's 64 FMAs, `acc[i][j] += af[i] · bf[j]`, in the order `order` gives them to
/// the compiler.
///
/// The order does not change a single bit of the result (each accumulator still takes
/// its k in turn), only the code ptxas makes of it. ptxas reorders the FMAs and
/// allocates their registers itself, and which order reaches it decides how often an
/// FMA waits at dispatch: an FFMA whose three source registers share a parity (one of
/// the two register banks) waits a cycle. Counted in the SASS, one order gives a K
/// loop 3 such FFMAs and another 45, and ncu's dispatch stalls follow the count (H200,
/// `docs/PERFORMANCE.md`, sessions 24 and 25). The count sorts the bad orders out; the
/// GPU picks among the rest, and each K loop takes the order measured best for it.
#[inline(always)]
pub(crate) fn fmas(acc: &mut [[f32; TN]; TM], af: &[f32; 8], bf: &[f32; 8], order: FmaOrder) {
    let mut fma = |i: usize, j: usize| acc[i][j] = simt_std::math::fma(af[i], bf[j], acc[i][j]);
    match order {
        FmaOrder::Rows => unroll!(8, I => {
            unroll!(8, J => { fma(I, J); });
        }),
        FmaOrder::Pairs { mirrored } => unroll!(8, A => {
            unroll!(8, B => {
                let (i, j) = pairs_at(8 * A + B, TM, mirrored);
                fma(i, j);
            });
        }),
    }
}

/// Stage 4's FMA order: the pairs from the bottom right. Timed on the H200 against 28
/// other orders of the same loop (session 25), it ran 2048^3 to 8192^3 0.4-0.7% faster
/// than the next best, and 11-12% faster than the unmirrored pairs.
const STAGE4_ORDER: FmaOrder = FmaOrder::Pairs { mirrored: true };

/// K steps `s0 .. s1` (of `MM_BK`) of `tl`'s tile into `acc`, double-buffered through
/// the two stages of `a_s` and `b_s`, one barrier per step: the K loop of stages 4,
/// 4s and 4w (any [`KLoop`]).
///
/// Each k's fragments are loaded from shared memory while the k before computes, and
/// the barrier that ends a step comes before its last k: the next step's first
/// fragments load while the last k's 64 FMAs run. Without that, every warp met the
/// shared loads' latency right after each barrier. ncu at 4096^3 (H200, session 25):
/// short-scoreboard stall samples 70.8 k before and 35.6 k after, issue active 83.5%
/// and 88.3%, 2.87 and 2.74 ms. The structure alone gained nothing: with the FMA order
/// stage 4 had before, its new register allocation put 45 FFMAs on three same-parity
/// sources instead of 3, and the kernel ran 6% slower; the order had to be found again
/// ([`STAGE4_ORDER`]).
///
/// # Safety
/// Every thread of the block calls it with its own `tl` of the same tile and the same
/// arguments; `a_s` and `b_s` hold two stages each (of `T::A_STAGE` and `T::B_STAGE`), used by nothing else while this
/// runs and **still read when it returns** (the fragments for a step past the last):
/// a caller that writes them afterwards needs a barrier first. The kernel's contract
/// for A and B.
#[inline(always)]
pub(crate) unsafe fn k_steps<T: KLoop>(
    tl: &T,
    a_s: Smem<f32>,
    b_s: Smem<f32>,
    acc: &mut T::Acc,
    s0: u32,
    s1: u32,
) {
    // SAFETY (all blocks below): the caller's contract; stage offsets stay inside the
    // arrays.
    unsafe { tl.store(a_s, b_s, tl.load(s0 * MM_BK)) };
    sync_threads();
    let mut f = unsafe { tl.fragments(a_s, b_s, 0) };
    let mut s = s0;
    while s < s1 {
        let half = (s - s0) as usize % 2;
        let (cur_a, cur_b) = (half * T::A_STAGE, half * T::B_STAGE);
        let (nxt_a, nxt_b) = (T::A_STAGE - cur_a, T::B_STAGE - cur_b);
        // 1. issue step s+1's global loads (registers; past K they read zeros)
        let next = unsafe { tl.load((s + 1) * MM_BK) };
        // 2. compute k = 0..7 of step s from shared memory while they fly, each k's
        //    fragments loaded during the one before
        unroll!(8, KK => {
            if KK < 7 {
                let f_next = unsafe { tl.fragments(a_s.add(cur_a), b_s.add(cur_b), KK as u32 + 1) };
                T::fmas(acc, &f);
                f = f_next;
            }
        });
        // 3. store them into the other stage: every read of it (step s-1's, its last
        //    k's fragments included) was issued before the last barrier
        unsafe { tl.store(a_s.add(nxt_a), b_s.add(nxt_b), next) };
        sync_threads();
        // 4. the last k of step s, while step s+1's first fragments load (past the
        //    last step, the zeros its loads stored)
        let f_next = unsafe { tl.fragments(a_s.add(nxt_a), b_s.add(nxt_b), 0) };
        T::fmas(acc, &f);
        f = f_next;
        s += 1;
    }
}

/// As [`k_steps`], for `len >= 1` steps from `s0`, counting down: its loop holds a
/// count and a K offset, as stage 4's holds its step and step count, and nothing
/// else (stage 4k's persistent blocks, whose K loop must fit stage 4's registers).
///
/// # Safety
/// As [`k_steps`].
#[inline(always)]
pub(crate) unsafe fn k_steps_down(
    tl: &WarpTiling,
    a_s: Smem<f32>,
    b_s: Smem<f32>,
    acc: &mut [[f32; TN]; TM],
    s0: u32,
    len: u32,
) {
    // Step s0 + j computes from stage (len - j) % 2: the first from stage len % 2.
    let first = (len as usize % 2) * STAGE;
    let mut k0 = s0 * MM_BK;
    // SAFETY (all blocks below): the caller's contract; stage offsets stay inside the
    // arrays.
    unsafe { tl.store(a_s.add(first), b_s.add(first), tl.load(k0)) };
    sync_threads();
    let mut left = len;
    while left > 0 {
        let cur = (left as usize % 2) * STAGE;
        let nxt = STAGE - cur;
        k0 += MM_BK;
        let next = unsafe { tl.load(k0) };
        unsafe { tl.compute(a_s.add(cur), b_s.add(cur), acc, FmaOrder::Rows) };
        unsafe { tl.store(a_s.add(nxt), b_s.add(nxt), next) };
        sync_threads();
        left -= 1;
    }
}

// Two 256-thread blocks per SM: at most 128 registers per thread (ptxas: 125-128,
// no spills, on sm_80 and sm_90; `tests/ptx.rs` checks).
kernel! {
    /// `C = relu?(A · B)`, warp-tiled and double-buffered. Same formula, contract and
    /// parameters as [`matmul_relu_tiled()`](crate::matmul_tiled::matmul_relu_tiled()).
    ///
    /// # Safety
    /// As `matmul_relu_tiled`.
    ///
    /// # Tiling
    /// Block tile 128x128 of C, K steps of 8, two shared stages of `As[8][128]`
    /// (transposed, swizzled) and `Bs[8][128]` (16 KiB). Warp tile 32x64 (8 warps:
    /// 4 down, 2 across); thread tile 8x8 as 2x2 groups of 4x4, 16 rows and 32
    /// columns apart. Step `s` computes from stage `s % 2` while step `s+1`'s global
    /// loads are in flight, then stores them into the other stage; one barrier per step,
    /// before the step's last k, whose FMAs run while step `s+1`'s first fragments load
    /// ([`k_steps`]).
    ///
    /// # Thread Mapping
    /// `grid = (ceil(n/128), ceil(m/128))`, 256 threads. Loading: thread `t` loads A
    /// row `t/2`, columns `4(t%2)..+4`, and B row `t/32`, columns `4(t%32)..+4`.
    /// Computing: warp `w = t/32` owns rows `32(w/2)..+32` and columns `64(w%2)..+64`;
    /// its lane `(ly, lx) = (l/8, l%8)` owns rows `4ly..+4, 16+4ly..+4` and columns
    /// `4lx..+4, 32+4lx..+4` of the warp tile.
    #[launch(threads = MM_THREADS, min_blocks = 2)]
    pub unsafe fn matmul_relu_warptiled(p: MatmulParams) {
        let (a, b, c, m, n, k, lda, ldb, ldc, relu) = p.unpack();
        let a_s = shared_array!(MM_WT_A, f32, 2 * STAGE);
        let b_s = shared_array!(MM_WT_B, f32, 2 * STAGE);
        let origin = (block_idx().y * MM_BM, block_idx().x * MM_BN);
        let tl = WarpTiling::at(a, b, c, m, n, k, lda, ldb, ldc, thread_idx().x, origin);
        let mut acc = [[0.0f32; TN]; TM];
        // SAFETY (both): kernel contract; the tiles are this kernel's own shared
        // arrays, two stages each.
        unsafe { k_steps(&tl, a_s, b_s, &mut acc, 0, k.div_ceil(MM_BK)) };
        unsafe { tl.write(c, ldc, relu, &acc) };
    }
}
