//! Matmul + ReLU, tiled: shared-memory tiles of A and B, 8x8 outputs per thread,
//! a swizzled A tile, the ReLU fused into the epilogue.
//!
//! A block computes a `MM_BM x MM_BN` (128x128) tile of C. For each `MM_BK` (8)
//! deep step it stages a 128x8 slice of A and an 8x128 slice of B in shared memory
//! (8 KiB), then every thread multiplies an 8-row strip of A by an 8-column strip
//! of B into its 64 register accumulators: per step a thread does 8 shared loads of
//! 16 bytes (4 of A, 4 of B) for 512 FMAs' worth of data reuse... 64 FMAs per k.
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
use crate::kernel;
use crate::math::fma;
use crate::memory::{is_aligned16, load4, store4, F32x4};
use crate::shared_array;
use crate::swizzle;
use crate::thread::{block_idx, sync_threads, thread_idx};
use crate::unroll;

const BM: usize = MM_BM as usize;
const BN: usize = MM_BN as usize;
const BK: usize = MM_BK as usize;
const TM: usize = MM_TM as usize;
const TN: usize = MM_TN as usize;
const _: () = assert!(MM_THREADS == 256 && BK == 8 && BM == 128 && BN == 128 && TM == 8 && TN == 8);

/// Loads 4 floats `p[0..4]` of which the first `valid` exist; 16-byte when possible.
#[inline(always)]
unsafe fn load4_partial(p: *const f32, valid: usize, vec_ok: bool) -> F32x4 {
    if valid >= 4 && vec_ok {
        // SAFETY: caller: 4 readable floats, aligned when vec_ok.
        unsafe { load4(p) }
    } else {
        // SAFETY: caller: `valid` readable floats.
        let g = |j: usize| if j < valid { unsafe { *p.add(j) } } else { 0.0 };
        F32x4 { x: g(0), y: g(1), z: g(2), w: g(3) }
    }
}

kernel! {
    /// `C = relu?(A · B)`, tiled. Same formula, safety contract and parameters as
    /// [`matmul_relu_naive()`](crate::matmul_naive::matmul_relu_naive()).
    ///
    /// # Safety
    /// As `matmul_relu_naive`; the launch uses `MM_THREADS` (256) threads, 1-D.
    ///
    /// # Parameters
    /// * `a`: `[m, k]`, `b`: `[k, n]`, `c`: `[m, n]`, row-major with row strides
    ///   `lda`, `ldb`, `ldc`; `relu` nonzero fuses the ReLU.
    ///
    /// # Tiling
    /// Block tile 128x128 of C, K steps of 8; shared `As[8][128]` (transposed,
    /// swizzled) and `Bs[8][128]`; thread tile 8x8 in registers.
    ///
    /// # Thread Mapping
    /// `grid = (ceil(n/128), ceil(m/128))`. Loading: thread `t` loads A row `t/2`,
    /// columns `4(t%2)..+4`, and B row `t/32`, columns `4(t%32)..+4`. Computing:
    /// thread `(ty, tx) = (t/16, t%16)` owns rows `{4ty.., 64+4ty..}` and columns
    /// `{4tx.., 64+4tx..}` (4 each) of the block tile.
    pub unsafe fn matmul_relu_tiled(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, relu: u32) {
        let a_s = shared_array!(MM_A_TILE, f32, BK * BM);
        let b_s = shared_array!(MM_B_TILE, f32, BK * BN);
        let (m, n, k) = (m as usize, n as usize, k as usize);
        let (lda, ldb, ldc) = (lda as usize, ldb as usize, ldc as usize);
        let t = thread_idx().x as usize;
        let row0 = block_idx().y as usize * BM;
        let col0 = block_idx().x as usize * BN;

        // Which 16-byte global accesses are legal: every row start must be aligned.
        let vec_a = is_aligned16(a) && lda % 4 == 0;
        let vec_b = is_aligned16(b) && ldb % 4 == 0;
        let vec_c = is_aligned16(c) && ldc % 4 == 0;

        let (la_row, la_k) = (t / 2, 4 * (t % 2));
        let (lb_k, lb_col) = (t / 32, 4 * (t % 32));
        let (ty, tx) = (t / 16, t % 16);

        let mut acc = [[0.0f32; TN]; TM];
        let mut k0 = 0usize;
        while k0 < k {
            // ---- stage A (transposed, swizzled) and B into shared memory ----
            let gr = row0 + la_row;
            let gk = k0 + la_k;
            let av = if gr < m && gk < k {
                // SAFETY: row gr < m, columns gk.. of which min(4, k-gk) exist.
                unsafe { load4_partial(a.add(gr * lda + gk), k - gk, vec_a) }
            } else {
                F32x4::splat(0.0)
            };
            let av = av.to_array();
            let mut j = 0;
            while j < 4 {
                let kk = la_k + j;
                // SAFETY: kk < 8, column < 128: inside As.
                unsafe { *a_s.add(kk * BM + swizzle::matmul_a(kk as u32, la_row as u32) as usize) = av[j] };
                j += 1;
            }
            let gk = k0 + lb_k;
            let gc = col0 + lb_col;
            let bv = if gk < k && gc < n {
                // SAFETY: row gk < k, columns gc.. of which min(4, n-gc) exist.
                unsafe { load4_partial(b.add(gk * ldb + gc), n - gc, vec_b) }
            } else {
                F32x4::splat(0.0)
            };
            // SAFETY: lb_k < 8, lb_col + 4 <= 128, 16-aligned.
            unsafe { store4(b_s.add(lb_k * BN + lb_col), bv) };
            sync_threads();

            // ---- 8 rank-1 updates of the 8x8 register tile from shared memory ----
            let mut kk = 0;
            while kk < BK {
                let ak = kk as u32;
                // SAFETY: all offsets are inside the 8x128 tiles and 16-aligned
                // (the swizzle flips bit 4 only, keeping groups of 4 contiguous).
                let (a_lo, a_hi, b_lo, b_hi) = unsafe {
                    (
                        load4(a_s.add(kk * BM + swizzle::matmul_a(ak, 4 * ty as u32) as usize)),
                        load4(a_s.add(kk * BM + swizzle::matmul_a(ak, (64 + 4 * ty) as u32) as usize)),
                        load4(b_s.add(kk * BN + 4 * tx)),
                        load4(b_s.add(kk * BN + 64 + 4 * tx)),
                    )
                };
                let af = [a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w];
                let bf = [b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w];
                unroll!(8, I => {
                    unroll!(8, J => {
                        acc[I][J] = fma(af[I], bf[J], acc[I][J]);
                    });
                });
                kk += 1;
            }
            sync_threads();
            k0 += BK;
        }

        // ---- epilogue: fused ReLU, bounds-checked (vector) stores ----
        unroll!(8, I => {
            let r = row0 + if I < 4 { 4 * ty + I } else { 64 + 4 * ty + (I - 4) };
            if r < m {
                unroll!(2, H => {
                    let c0 = col0 + 64 * H + 4 * tx;
                    let mut v = F32x4 { x: acc[I][4 * H], y: acc[I][4 * H + 1], z: acc[I][4 * H + 2], w: acc[I][4 * H + 3] };
                    if relu != 0 {
                        v = v.map(|x| if x > 0.0 { x } else { 0.0 });
                    }
                    // SAFETY: r < m; columns c0.. checked against n below.
                    unsafe {
                        let p = c.add(r * ldc + c0);
                        if c0 + 4 <= n && vec_c {
                            store4(p, v);
                        } else {
                            let vs = v.to_array();
                            for (j, x) in vs.iter().enumerate() {
                                if c0 + j < n {
                                    *p.add(j) = *x;
                                }
                            }
                        }
                    }
                });
            }
        });
    }
}
