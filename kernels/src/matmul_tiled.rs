//! Matmul + ReLU, tiled: shared-memory tiles of A and B, 8x8 outputs per thread,
//! a swizzled A tile, the ReLU fused into the epilogue.
//!
//! A block computes a `MM_BM x MM_BN` (128x128) tile of C. For each `MM_BK` (8)
//! deep step it stages a 128x8 slice of A and an 8x128 slice of B in shared memory
//! (8 KiB), then every thread multiplies an 8-row strip of A by an 8-column strip
//! of B into its 64 register accumulators: per K step a thread does 32 shared loads
//! of 16 bytes (4 per k, 2 of A and 2 of B) and 512 FMAs (64 per k).
//! Each value loaded from HBM is reused 128 times inside the block, which moves the
//! kernel from the memory roof towards the FP32 roof.
//!
//! Layout choices, each for a measured reason:
//! * A is stored transposed (`As[k][m]`), so a thread reads its 8 A values as two
//!   16-byte vectors. The transposing store is column-wise: threads `2r` and `2r+1`
//!   store `(k, r)` and `(k+4, r)` in the same instruction, both in bank `r % 32`
//!   unswizzled (2-way conflict). [`swizzle::matmul_a`] flips bit 4 of `m` for
//!   `k % 8 >= 4`, which puts them 16 banks apart (1-way): see
//!   `tests/device_library.rs` for the counted banks.
//! * A thread's 8 rows and 8 columns are two groups of 4, 64 apart
//!   (`4t..4t+4` and `64+4t..64+4t+4`), so the 8 threads of each quarter-warp read
//!   128 contiguous bytes of `Bs` per 16-byte load: no conflicts.
//! * Any M, N, K: out-of-range loads read 0 and out-of-range stores are skipped;
//!   16-byte global accesses are used where the address is aligned, scalars elsewhere.
use crate::config::{MM_BK, MM_BM, MM_BN, MM_THREADS, MM_TM, MM_TN};
use crate::params::MatmulParams;
use simt_std::kernel;
use simt_std::math::fma;
use simt_std::memory::{is_aligned16, load4_first, store4_first, F32x4};
use simt_std::shared::Smem;
use simt_std::shared_array;
use simt_std::swizzle;
use simt_std::thread::{block_idx, sync_threads, thread_idx};
use simt_std::unroll;

pub(crate) const BM: usize = MM_BM as usize;
pub(crate) const BN: usize = MM_BN as usize;
pub(crate) const BK: usize = MM_BK as usize;
pub(crate) const TM: usize = MM_TM as usize;
pub(crate) const TN: usize = MM_TN as usize;
const _: () = assert!(MM_THREADS == 256 && BK == 8 && BM == 128 && BN == 128 && TM == 8 && TN == 8);

/// What one thread needs to stage and compute tiles: problem, block origin, mapping.
///
/// Index arithmetic is 32-bit (the host rejects matrices of 2^32 or more elements
/// for the tiled kernels): 64-bit offsets cost two registers each, and registers
/// decide how many blocks fit on an SM.
#[derive(Clone, Copy)]
pub(crate) struct Tiling {
    a: *const f32,
    b: *const f32,
    m: u32,
    n: u32,
    pub k: u32,
    lda: u32,
    ldb: u32,
    row0: u32,
    col0: u32,
    vec_a: bool,
    vec_b: bool,
    la_row: u32,
    la_k: u32,
    lb_k: u32,
    lb_col: u32,
    ty: u32,
    tx: u32,
}

impl Tiling {
    /// The mapping of thread `t` of the block at (`row0`, `col0`).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        a: *const f32,
        b: *const f32,
        m: u32,
        n: u32,
        k: u32,
        lda: u32,
        ldb: u32,
        row0: u32,
        col0: u32,
        t: u32,
    ) -> Self {
        Tiling {
            a,
            b,
            m,
            n,
            k,
            lda,
            ldb,
            row0,
            col0,
            // 16-byte global loads are legal when every row start is aligned.
            vec_a: is_aligned16(a) && lda % 4 == 0,
            vec_b: is_aligned16(b) && ldb % 4 == 0,
            la_row: t / 2,
            la_k: 4 * (t % 2),
            lb_k: t / 32,
            lb_col: 4 * (t % 32),
            ty: t / 16,
            tx: t % 16,
        }
    }

    /// This thread's share of the K step at `k0`: 4 values of A and 4 of B, zeros
    /// outside the matrices.
    ///
    /// # Safety
    /// The kernel's contract (A and B readable as described).
    #[inline(always)]
    pub unsafe fn load(&self, k0: u32) -> (F32x4, F32x4) {
        let (gr, gk) = (self.row0 + self.la_row, k0 + self.la_k);
        let av = if gr < self.m && gk < self.k {
            // SAFETY: row gr < m, columns gk.. of which min(4, k-gk) exist.
            unsafe {
                load4_first(
                    self.a.add((gr * self.lda + gk) as usize),
                    self.k - gk,
                    self.vec_a,
                )
            }
        } else {
            F32x4::splat(0.0)
        };
        let (gk, gc) = (k0 + self.lb_k, self.col0 + self.lb_col);
        let bv = if gk < self.k && gc < self.n {
            // SAFETY: row gk < k, columns gc.. of which min(4, n-gc) exist.
            unsafe {
                load4_first(
                    self.b.add((gk * self.ldb + gc) as usize),
                    self.n - gc,
                    self.vec_b,
                )
            }
        } else {
            F32x4::splat(0.0)
        };
        (av, bv)
    }

    /// Stores a loaded share into the shared tiles: A transposed and swizzled, B as is.
    ///
    /// # Safety
    /// `a_s` and `b_s` are 8x128-float shared tiles (16-byte aligned).
    #[inline(always)]
    pub unsafe fn store(&self, a_s: Smem<f32>, b_s: Smem<f32>, av: F32x4, bv: F32x4) {
        let av = av.to_array();
        unroll!(4, J => {
            let kk = self.la_k + J as u32;
            // SAFETY: kk < 8, swizzled column < 128: inside As.
            unsafe { a_s.add((kk * MM_BM + swizzle::matmul_a(kk, self.la_row)) as usize).write(av[J]) };
        });
        // SAFETY: lb_k < 8, lb_col + 4 <= 128, 16-aligned.
        unsafe {
            b_s.add((self.lb_k * MM_BN + self.lb_col) as usize)
                .store4(bv)
        };
    }

    /// One K step `kk` (0..8) of the block tile: 4 shared loads of 16 bytes and 64 FMAs
    /// into the thread's 8x8 accumulators.
    ///
    /// # Safety
    /// The tiles hold a fully stored K step (a barrier separates the stores from this).
    #[inline(always)]
    unsafe fn step(&self, a_s: Smem<f32>, b_s: Smem<f32>, kk: u32, acc: &mut [[f32; TN]; TM]) {
        let (ty, tx) = (self.ty, self.tx);
        // SAFETY: offsets inside the 8x128 tiles and 16-aligned (the swizzle flips bit 4
        // only, keeping groups of 4 contiguous).
        let (a_lo, a_hi, b_lo, b_hi) = unsafe {
            (
                a_s.add((kk * MM_BM + swizzle::matmul_a(kk, 4 * ty)) as usize)
                    .load4(),
                a_s.add((kk * MM_BM + swizzle::matmul_a(kk, 64 + 4 * ty)) as usize)
                    .load4(),
                b_s.add((kk * MM_BN + 4 * tx) as usize).load4(),
                b_s.add((kk * MM_BN + 64 + 4 * tx) as usize).load4(),
            )
        };
        let af = [
            a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w,
        ];
        let bf = [
            b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w,
        ];
        unroll!(8, I => {
            unroll!(8, J => {
                acc[I][J] = fma(af[I], bf[J], acc[I][J]);
            });
        });
    }

    /// 8 rank-1 updates of the thread's 8x8 accumulators from the shared tiles, as a
    /// rolled loop (fully unrolled, the stage-2 kernel would hoist all 32 shared loads
    /// of a step and need more registers than two blocks per SM allow).
    ///
    /// # Safety
    /// The tiles hold a fully stored K step (a barrier separates the stores from this).
    #[inline(always)]
    pub unsafe fn compute(&self, a_s: Smem<f32>, b_s: Smem<f32>, acc: &mut [[f32; TN]; TM]) {
        let mut kk = 0u32;
        while kk < MM_BK {
            // SAFETY: forwarded.
            unsafe { self.step(a_s, b_s, kk, acc) };
            kk += 1;
        }
    }

    /// [`Tiling::compute`] with the 8 steps unrolled, so the compiler can issue step
    /// `kk+1`'s shared loads under step `kk`'s FMAs. Affordable (120-128 registers, no
    /// spills) since shared accesses use 32-bit [`Smem`] addresses; with generic
    /// 64-bit pointers it needed more than 128 and spilled (the measured steps are in
    /// docs/PERFORMANCE.md).
    ///
    /// # Safety
    /// As [`Tiling::compute`].
    #[inline(always)]
    pub unsafe fn compute_unrolled(
        &self,
        a_s: Smem<f32>,
        b_s: Smem<f32>,
        acc: &mut [[f32; TN]; TM],
    ) {
        unroll!(8, KK => {
            // SAFETY: forwarded.
            unsafe { self.step(a_s, b_s, KK as u32, acc) };
        });
    }

    /// Epilogue: optional ReLU, bounds-checked (vector) stores of the 8x8 tile into C.
    ///
    /// # Safety
    /// The kernel's contract (C writable as described).
    #[inline(always)]
    pub unsafe fn write(&self, c: *mut f32, ldc: u32, relu: u32, acc: &[[f32; TN]; TM]) {
        let vec_c = is_aligned16(c) && ldc % 4 == 0;
        unroll!(8, I => {
            let r = self.row0 + if I < 4 { 4 * self.ty + I as u32 } else { 64 + 4 * self.ty + (I as u32 - 4) };
            if r < self.m {
                unroll!(2, H => {
                    let c0 = self.col0 + 64 * H as u32 + 4 * self.tx;
                    let mut v = F32x4 { x: acc[I][4 * H], y: acc[I][4 * H + 1], z: acc[I][4 * H + 2], w: acc[I][4 * H + 3] };
                    if relu != 0 {
                        v = v.map(|x| if x > 0.0 { x } else { 0.0 });
                    }
                    // SAFETY: r < m; of the columns c0.., those below n are written.
                    unsafe { store4_first(c.add((r * ldc + c0) as usize), v, self.n.saturating_sub(c0), vec_c) };
                });
            }
        });
    }
}

kernel! {
    /// `C = relu?(A · B)`, tiled. Same formula, safety contract and parameters as
    /// [`matmul_relu_naive()`](crate::matmul_naive::matmul_relu_naive()).
    ///
    /// # Safety
    /// As `matmul_relu_naive`, and every matrix has fewer than 2^32 elements
    /// (32-bit index arithmetic); the launch uses `MM_THREADS` (256) threads, 1-D.
    ///
    /// # Parameters
    /// One [`MatmulParams`]: `a`: `[m, k]`, `b`: `[k, n]`, `c`: `[m, n]`, row-major
    /// with row strides `lda`, `ldb`, `ldc`; `epilogue: Relu` fuses the ReLU.
    ///
    /// # Tiling
    /// Block tile 128x128 of C, K steps of 8; shared `As[8][128]` (transposed,
    /// swizzled) and `Bs[8][128]`; thread tile 8x8 in registers. Per K step:
    /// load, store, barrier, compute, barrier.
    ///
    /// # Thread Mapping
    /// `grid = (ceil(n/128), ceil(m/128))`. Loading: thread `t` loads A row `t/2`,
    /// columns `4(t%2)..+4`, and B row `t/32`, columns `4(t%32)..+4`. Computing:
    /// thread `(ty, tx) = (t/16, t%16)` owns rows `{4ty.., 64+4ty..}` and columns
    /// `{4tx.., 64+4tx..}` (4 each) of the block tile.
    #[launch(threads = MM_THREADS)]
    pub unsafe fn matmul_relu_tiled(p: MatmulParams) {
        let (a, b, c, m, n, k, lda, ldb, ldc, relu) = p.unpack();
        let a_s = shared_array!(MM_A_TILE, f32, BK * BM);
        let b_s = shared_array!(MM_B_TILE, f32, BK * BN);
        let tl = Tiling::new(a, b, m, n, k, lda, ldb, block_idx().y * MM_BM, block_idx().x * MM_BN, thread_idx().x);
        let mut acc = [[0.0f32; TN]; TM];
        let mut k0 = 0u32;
        while k0 < tl.k {
            // SAFETY: kernel contract; tiles are this kernel's own shared arrays.
            unsafe {
                let (av, bv) = tl.load(k0);
                tl.store(a_s, b_s, av, bv);
                sync_threads();
                tl.compute(a_s, b_s, &mut acc);
            }
            sync_threads();
            k0 += MM_BK;
        }
        // SAFETY: kernel contract.
        unsafe { tl.write(c, ldc, relu, &acc) };
    }
}
