//! Matmul + ReLU, stage 4w: stage 4 with a 16x8 thread tile, one block per SM.
//!
//! Stage 4 ([`matmul_relu_warptiled()`](crate::matmul_warptiled::matmul_relu_warptiled()))
//! runs two blocks of 256 threads per SM, each thread an 8x8 tile of C, so ptxas
//! has 128 registers a thread. cuBLAS's FP32 kernel at 2048^3 (CUTLASS's SIMT
//! `256x128_8x4`) runs one block of 256 threads per SM with 254 registers, each
//! thread a 16x8 tile. Per FMA that halves the barriers (one per 1024 FMAs of a
//! warp instead of 512) and cuts the shared loads by a quarter (6 of 16 bytes per
//! 128 FMAs against 4 per 64).
//!
//! This stage runs stage 4's loop itself ([`k_steps`], register-staged global loads one
//! K step ahead, two shared stages, one barrier per step, each k's fragments loaded
//! during the k before, across the barrier too) and its warp layout (lanes 4 down by 8 across,
//! groups of 4x4 outputs 16 rows and 32 columns apart), with warp tiles of 64x64:
//! a thread owns rows `rm + 16g` (g < 4) and columns `cn + 32h` (h < 2), four
//! values each.
use crate::config::{MM_BK, MM_THREADS, MM_WIDE_BM, MM_WIDE_BN, WARP_SIZE};
use crate::matmul_warptiled::{k_steps, pairs_at, KLoop};
use crate::params::MatmulParams;
use simt_std::memory::{is_aligned16, load4, load4_first, store4, store4_first, F32x4};
use simt_std::shared::Smem;
use simt_std::swizzle;
use simt_std::thread::{block_idx, thread_idx};
use simt_std::{kernel, shared_array, unroll};

/// Rows of C per thread.
pub const TM: usize = 16;
/// Columns of C per thread.
pub const TN: usize = 8;
/// Rows of C per warp.
pub const WARP_M: u32 = 64;
/// Columns of C per warp.
pub const WARP_N: u32 = 64;
const LANES_N: u32 = 8;
const LANES_M: u32 = WARP_SIZE / LANES_N;
const WARPS_N: u32 = MM_WIDE_BN / WARP_N;
const BM: u32 = MM_WIDE_BM;
const BN: u32 = MM_WIDE_BN;
const _: () = assert!(
    (BM / WARP_M) * (BN / WARP_N) * WARP_SIZE == MM_THREADS
        && WARP_M == 4 * 4 * LANES_M
        && WARP_N == 2 * 4 * LANES_N
        && MM_BK == 8
        && BM == 2 * (MM_THREADS / 2)
        && BN == 4 * WARP_SIZE
);

/// Floats per shared stage of A (`MM_BK x BM`, transposed) and of B (`MM_BK x BN`).
pub(crate) const A_STAGE: usize = (MM_BK * BM) as usize;
pub(crate) const B_STAGE: usize = (MM_BK * BN) as usize;

/// One thread's view of the problem.
#[derive(Clone, Copy)]
pub(crate) struct WideTiling {
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
    /// Loads: A rows `la_row` and `la_row + BM/2`, columns `k0 + la_k ..+4`; B row
    /// `k0 + lb_k`, columns `lb_col ..+4`.
    la_row: u32,
    la_k: u32,
    lb_k: u32,
    lb_col: u32,
    /// The thread's first output row and column in the block tile.
    rm: u32,
    cn: u32,
}

/// One K step's share of a thread: two vectors of A, one of B.
type Share = (F32x4, F32x4, F32x4);

impl WideTiling {
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
        let (warp, lane) = (t / WARP_SIZE, t % WARP_SIZE);
        let (wm, wn) = (warp / WARPS_N, warp % WARPS_N);
        WideTiling {
            a,
            b,
            m,
            n,
            k,
            lda,
            ldb,
            row0,
            col0,
            interior: vec_a && vec_b && vec_c && row0 + BM <= m && col0 + BN <= n,
            la_row: t / 2,
            la_k: 4 * (t % 2),
            lb_k: t / WARP_SIZE,
            lb_col: 4 * (t % WARP_SIZE),
            rm: wm * WARP_M + 4 * (lane / LANES_N),
            cn: wn * WARP_N + 4 * (lane % LANES_N),
        }
    }

    /// A's vector at row `r` of the block, columns `ka..`, zeros outside A.
    ///
    /// # Safety
    /// The kernel's contract.
    #[inline(always)]
    unsafe fn load_a_checked(&self, r: u32, ka: u32) -> F32x4 {
        let gr = self.row0 + r;
        if gr < self.m && ka < self.k {
            let vec_a = is_aligned16(self.a) && self.lda % 4 == 0;
            // SAFETY: row gr < m; columns ka.. of which min(4, k - ka) exist.
            unsafe {
                load4_first(
                    self.a.add((gr * self.lda + ka) as usize),
                    self.k - ka,
                    vec_a,
                )
            }
        } else {
            F32x4::default()
        }
    }

    /// This thread's share of the K step at `k0`; zeros outside the matrices.
    ///
    /// # Safety
    /// The kernel's contract (A and B readable as described).
    #[inline(always)]
    unsafe fn load(&self, k0: u32) -> Share {
        let (gr, gc) = (self.row0 + self.la_row, self.col0 + self.lb_col);
        let (ka, kb) = (k0 + self.la_k, k0 + self.lb_k);
        // One interior test for all three loads, as stage 4 (a test per operand made
        // two branchy regions there).
        if self.interior && k0 + MM_BK <= self.k {
            // SAFETY: interior block and a whole K step: every index is in range, and
            // rows are 16-byte aligned.
            unsafe {
                (
                    load4(self.a.add((gr * self.lda + ka) as usize)),
                    load4(self.a.add(((gr + BM / 2) * self.lda + ka) as usize)),
                    load4(self.b.add((kb * self.ldb + gc) as usize)),
                )
            }
        } else {
            // SAFETY: checked loads (zeros outside A).
            let (a0, a1) = unsafe {
                (
                    self.load_a_checked(self.la_row, ka),
                    self.load_a_checked(self.la_row + BM / 2, ka),
                )
            };
            let mut bv = F32x4::default();
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
            (a0, a1, bv)
        }
    }

    /// Stores a loaded share into one stage: A transposed and swizzled, B as is.
    ///
    /// # Safety
    /// `a_s` and `b_s` are stages of `A_STAGE` and `B_STAGE` floats, 16-byte aligned,
    /// that no thread reads until a barrier.
    #[inline(always)]
    unsafe fn store(&self, a_s: Smem<f32>, b_s: Smem<f32>, (a0, a1, bv): Share) {
        // The swizzle flips bit 4 of the row from bit 2 of the stage row, which
        // `la_k + J` shares with `la_k`; the second row (BM/2 lower) keeps bit 4.
        let col = swizzle::matmul_a(self.la_k, self.la_row);
        let (x0, x1) = (a0.to_array(), a1.to_array());
        unroll!(4, J => {
            let row = (self.la_k + J as u32) * BM;
            // SAFETY: stage row < 8, swizzled columns < BM: inside the A stage.
            unsafe {
                a_s.add((row + col) as usize).write(x0[J]);
                a_s.add((row + col + BM / 2) as usize).write(x1[J]);
            }
        });
        // SAFETY: row lb_k < 8, lb_col + 4 <= BN, 16-aligned.
        unsafe { b_s.add((self.lb_k * BN + self.lb_col) as usize).store4(bv) };
    }

    /// Fragments of k `kk` of one stage: the thread's 16 values of A (4 shared loads
    /// of 16 bytes) and 8 of B (2 loads).
    ///
    /// # Safety
    /// The stage holds a fully stored K step.
    #[inline(always)]
    unsafe fn fragments(&self, a_s: Smem<f32>, b_s: Smem<f32>, kk: u32) -> ([f32; TM], [f32; TN]) {
        let mut af = [0.0f32; TM];
        let mut bf = [0.0f32; TN];
        unroll!(4, G => {
            // SAFETY: inside the stage; the swizzle flips bit 4 only, so 4-aligned
            // groups stay contiguous and 16-byte aligned.
            let v = unsafe {
                a_s.add((kk * BM + swizzle::matmul_a(kk, self.rm + 16 * G as u32)) as usize)
                    .load4()
            };
            af[4 * G] = v.x;
            af[4 * G + 1] = v.y;
            af[4 * G + 2] = v.z;
            af[4 * G + 3] = v.w;
        });
        unroll!(2, H => {
            // SAFETY: inside the stage, 16-byte aligned.
            let v = unsafe { b_s.add((kk * BN + self.cn + 32 * H as u32) as usize).load4() };
            bf[4 * H] = v.x;
            bf[4 * H + 1] = v.y;
            bf[4 * H + 2] = v.z;
            bf[4 * H + 3] = v.w;
        });
        (af, bf)
    }

    /// Epilogue: optional ReLU, then the 16x8 tile to C.
    ///
    /// # Safety
    /// The kernel's contract (C writable as described).
    #[inline(always)]
    pub(crate) unsafe fn write(&self, c: *mut f32, ldc: u32, relu: u32, acc: &[[f32; TN]; TM]) {
        let vec_c = is_aligned16(c) && ldc % 4 == 0;
        unroll!(16, I => {
            let r = self.row0 + self.rm + (I as u32 % 4) + 16 * (I as u32 / 4);
            unroll!(2, H => {
                let c0 = self.col0 + self.cn + H as u32 * 32;
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

/// Stage 4w's K loop is stage 4's ([`k_steps`]), over this tiling.
impl KLoop for WideTiling {
    const A_STAGE: usize = A_STAGE;
    const B_STAGE: usize = B_STAGE;
    type Share = Share;
    type Frag = ([f32; TM], [f32; TN]);
    type Acc = [[f32; TN]; TM];
    #[inline(always)]
    unsafe fn load(&self, k0: u32) -> Share {
        // SAFETY: the caller's contract.
        unsafe { WideTiling::load(self, k0) }
    }
    #[inline(always)]
    unsafe fn store(&self, a_s: Smem<f32>, b_s: Smem<f32>, share: Share) {
        // SAFETY: the caller's contract.
        unsafe { WideTiling::store(self, a_s, b_s, share) }
    }
    #[inline(always)]
    unsafe fn fragments(&self, a_s: Smem<f32>, b_s: Smem<f32>, kk: u32) -> Self::Frag {
        // SAFETY: the caller's contract.
        unsafe { WideTiling::fragments(self, a_s, b_s, kk) }
    }
    /// One k's 128 FMAs, `acc[i][j] += af[i] · bf[j]`, in stage 4's order over 16 rows
    /// ([`pairs_at`], mirrored). Row by row instead ran 0.1-0.6% slower (H200, session
    /// 31), and ptxas took 239 registers against 232.
    #[inline(always)]
    fn fmas(acc: &mut Self::Acc, (af, bf): &Self::Frag) {
        unroll!(16, A => {
            unroll!(8, B => {
                let (i, j) = pairs_at(8 * A + B, TM, true);
                acc[i][j] = simt_std::math::fma(af[i], bf[j], acc[i][j]);
            });
        });
    }
}

kernel! {
    /// `C = relu?(A · B)`, stage 4 with 256x128 block tiles and a 16x8 thread tile.
    /// Same formula, contract and parameters as
    /// [`matmul_relu_tiled()`](crate::matmul_tiled::matmul_relu_tiled()).
    ///
    /// # Safety
    /// As `matmul_relu_tiled`.
    ///
    /// # Tiling
    /// Block tile 256x128 of C, K steps of 8, two shared stages of `As[8][256]`
    /// (transposed, swizzled) and `Bs[8][128]` (24 KiB). Warp tile 64x64 (8 warps:
    /// 4 down, 2 across); thread tile 16x8 as 4x2 groups of 4x4, 16 rows and 32
    /// columns apart. One barrier per step, as stage 4.
    ///
    /// # Thread Mapping
    /// `grid = (ceil(n/128), ceil(m/256))`, 256 threads. Loading: thread `t` loads A
    /// rows `t/2` and `128 + t/2`, columns `4(t%2)..+4`, and B row `t/32`, columns
    /// `4(t%32)..+4`. Computing: warp `w = t/32` owns rows `64(w/2)..+64` and columns
    /// `64(w%2)..+64`; its lane `(ly, lx) = (l/8, l%8)` owns rows `4ly + 16g ..+4`
    /// (g < 4) and columns `4lx + 32h ..+4` (h < 2) of the warp tile.
    #[launch(threads = MM_THREADS, min_blocks = 1)]
    pub unsafe fn matmul_relu_warptiled_wide(p: MatmulParams) {
        let (a, b, c, m, n, k, lda, ldb, ldc, relu) = p.unpack();
        let a_s = shared_array!(MM_WW_A, f32, 2 * A_STAGE);
        let b_s = shared_array!(MM_WW_B, f32, 2 * B_STAGE);
        let origin = (block_idx().y * BM, block_idx().x * BN);
        let tl = WideTiling::at(a, b, c, m, n, k, lda, ldb, ldc, thread_idx().x, origin);
        let mut acc = [[0.0f32; TN]; TM];
        // SAFETY (both): kernel contract; the two stages of each operand lie in this
        // kernel's own shared arrays.
        unsafe { k_steps(&tl, a_s, b_s, &mut acc, 0, k.div_ceil(MM_BK)) };
        unsafe { tl.write(c, ldc, relu, &acc) };
    }
}
