//! Matmul + ReLU, stage 5: the first tensor-core kernel. `mma.sync` on bf16 or f16
//! inputs with f32 accumulation, fed from plain shared-memory tiles: no pipeline,
//! no `ldmatrix`, any strides and alignment.
//!
//! What changes against the FP32 stages is the unit of work: a warp no longer has
//! each lane compute its own outputs with FMAs, it multiplies 16x8x16 tiles as one
//! instruction whose operands are spread over the 32 lanes in fixed fragments
//! (`simt_std::mma`'s table). A block computes a 128x128 tile of C with 8 warps as
//! 2 x 4, each warp a 64x32 sub-tile: 4 `m16` by 4 `n8` accumulator tiles, 64 f32
//! registers per lane. Per 32-deep K step the block stages A (128x32) and B (32x128)
//! in shared memory, element by element with bounds checks (zeros outside), and each
//! warp runs 2 x 16 `mma`s, reading its fragments with 32-bit (A) and 16-bit (B)
//! shared loads at the fragment coordinates.
//!
//! Rows are padded (A by 8 elements, B by 8) so that a warp's fragment loads fall
//! in distinct banks. Stage 6 replaces the element-wise staging with 16-byte
//! `cp.async` copies in a 4-deep pipeline and the fragment loads with `ldmatrix`.
// The Hopper module reuses the fragment and epilogue code (stage 6t) but not the kernels.
#![cfg_attr(
    all(target_arch = "nvptx64", simt_target = "sm_90a"),
    allow(dead_code, unused_imports)
)]
use crate::config::{TC_BK, TC_BM, TC_BN, TC_THREADS, TC_WARP_M, TC_WARP_N};
use crate::params::MatmulParams16;
use simt_std::memory::store2;
use simt_std::mma::{a_coords, b_coords, c_coords, mma_bf16, mma_f16, MmaKind};
use simt_std::thread::{block_idx, sync_threads, thread_idx};
use simt_std::warp::{lane_id, warp_id};
use simt_std::{kernel, shared_array, unroll};

const BM: usize = TC_BM as usize;
const BN: usize = TC_BN as usize;
const BK: usize = TC_BK as usize;
/// Row pitch of the A tile in elements (32 + 8 padding).
const A_LD: usize = BK + 8;
/// Row pitch of the B tile in elements (128 + 8 padding).
const B_LD: usize = BN + 8;
const _: () = assert!(
    TC_THREADS == 256 && TC_WARP_M == 64 && TC_WARP_N == 32 && BM == 2 * 64 && BN == 4 * 32
);

/// The whole kernel, for bf16 (`F16 = false`) or f16 inputs.
///
/// # Safety
/// As [`matmul_mma_bf16()`].
#[inline(always)]
unsafe fn body<const F16: bool>(p: MatmulParams16) {
    let a_s = shared_array!(MMA5_A, u16, BM * A_LD).generic();
    let b_s = shared_array!(MMA5_B, u16, BK * B_LD).generic();
    let (m, n, k) = (p.a.rows as usize, p.b.cols as usize, p.a.cols as usize);
    let (lda, ldb, ldc) = (p.a.ld as usize, p.b.ld as usize, p.c.ld as usize);
    let (row0, col0) = (block_idx().y as usize * BM, block_idx().x as usize * BN);
    let t = thread_idx().x as usize;
    let (w, lane) = (warp_id() as usize, lane_id());
    let (wm, wn) = (w / 4 * TC_WARP_M as usize, w % 4 * TC_WARP_N as usize);
    let kind = if F16 { MmaKind::F16 } else { MmaKind::Bf16 };
    let mut acc = [[[0f32; 4]; 4]; 4];
    let mut k0 = 0;
    while k0 < k {
        // Stage A (128x32) and B (32x128): each thread 16 elements of each, zeros
        // outside the matrices.
        let mut i = t;
        while i < BM * BK {
            let (r, c) = (i / BK, i % BK);
            let (gr, gc) = (row0 + r, k0 + c);
            // SAFETY: gr < m, gc < k: inside A (the kernel's contract); the tile index is in bounds.
            unsafe {
                *a_s.add(r * A_LD + c) = if gr < m && gc < k {
                    *p.a.ptr.add(gr * lda + gc)
                } else {
                    0
                }
            };
            i += TC_THREADS as usize;
        }
        let mut i = t;
        while i < BK * BN {
            let (r, c) = (i / BN, i % BN);
            let (gr, gc) = (k0 + r, col0 + c);
            // SAFETY: as above, inside B.
            unsafe {
                *b_s.add(r * B_LD + c) = if gr < k && gc < n {
                    *p.b.ptr.add(gr * ldb + gc)
                } else {
                    0
                }
            };
            i += TC_THREADS as usize;
        }
        sync_threads();
        unroll!(2, KK => {
            let kk = KK * 16;
            // B fragments of the warp's 4 n8 tiles: (2t, g) and (2t+1, g) per register.
            let mut bf = [[0u32; 2]; 4];
            unroll!(4, NJ => {
                unroll!(2, R => {
                    let [(r0, c0), (r1, c1)] = b_coords(kind, lane, R);
                    let col = wn + NJ * 8 + c0 as usize;
                    debug_assert_eq!(c0, c1);
                    // SAFETY: rows kk + r < 32, columns < 128: inside the B tile.
                    let (lo, hi) = unsafe { (*b_s.add((kk + r0 as usize) * B_LD + col), *b_s.add((kk + r1 as usize) * B_LD + col)) };
                    bf[NJ][R] = lo as u32 | (hi as u32) << 16;
                });
            });
            unroll!(4, MI => {
                let mut af = [0u32; 4];
                unroll!(4, R => {
                    let [(r, c), _] = a_coords(kind, lane, R);
                    // SAFETY: inside the A tile; (r, c) has c even, so the pair is one aligned u32.
                    af[R] = unsafe { *(a_s.add((wm + MI * 16 + r as usize) * A_LD + kk + c as usize) as *const u32) };
                });
                unroll!(4, NJ => {
                    // SAFETY: the whole warp executes every mma (no divergence above).
                    acc[MI][NJ] = unsafe { if F16 { mma_f16(af, bf[NJ], acc[MI][NJ]) } else { mma_bf16(af, bf[NJ], acc[MI][NJ]) } };
                });
            });
        });
        sync_threads();
        k0 += BK;
    }
    // SAFETY: the kernel's contract for C.
    unsafe {
        write_c(
            &acc,
            p.c.ptr,
            m,
            n,
            ldc,
            row0 + wm,
            col0 + wn,
            lane,
            p.epilogue as u32 != 0,
        )
    };
}

/// Stores a warp's 64x32 accumulators at `(r0, c0)` of C, bounds-checked, with the
/// ReLU when `relu`; the warp tile is `64 x 8·NT` (stage 5: NT = 4, stage 6: 8).
///
/// # Safety
/// C is writable at every in-bounds `(row, col)` with row stride `ldc`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn write_c<const NT: usize>(
    acc: &[[[f32; 4]; NT]; 4],
    c: *mut f32,
    m: usize,
    n: usize,
    ldc: usize,
    r0: usize,
    c0: usize,
    lane: u32,
    relu: bool,
) {
    // Pairs (2t, 2t+1) of a row are adjacent: one 8-byte store when C's rows allow it.
    let vec = ldc % 2 == 0 && c as usize % 8 == 0;
    let relu_of = |v: f32| if relu && v < 0.0 { 0.0 } else { v };
    if vec && r0 + 64 <= m && c0 + 8 * NT <= n {
        // The warp's whole tile is inside C (every tile but the ragged edges'): no
        // bounds tests, one branch for all 2·4·NT stores. (Stage 6 sends its aligned
        // interior tiles to `store_staged` instead, but without this path the
        // checked loop alone made its TF32 kernel spill on sm_80: tests/ptx.rs.)
        unroll!(4, MI => {
            unroll!(8, NJ => {
                if NJ < NT {
                    unroll!(2, H => {
                        let (r, cc) = c_coords(lane, 2 * H);
                        let (row, col) = (r0 + MI * 16 + r as usize, c0 + NJ * 8 + cc as usize);
                        // SAFETY: inside C (tested above); col is even and the rows 8-byte
                        // aligned, so the pair is.
                        unsafe {
                            store2(
                                c.add(row * ldc + col),
                                relu_of(acc[MI][NJ][2 * H]),
                                relu_of(acc[MI][NJ][2 * H + 1]),
                            )
                        };
                    });
                }
            });
        });
        return;
    }
    unroll!(4, MI => {
        // Explicitly unrolled (8 covers both stages; `NJ < NT` folds away), so `acc`
        // stays in registers: a loop here put it on the stack (tests/ptx.rs fails on that).
        unroll!(8, NJ => {
            if NJ < NT {
                unroll!(2, H => {
                    let (r, cc) = c_coords(lane, 2 * H);
                    let (row, col) = (r0 + MI * 16 + r as usize, c0 + NJ * 8 + cc as usize);
                    let (v0, v1) = (relu_of(acc[MI][NJ][2 * H]), relu_of(acc[MI][NJ][2 * H + 1]));
                    if row < m {
                        // SAFETY: row < m and each column < n; col is even, so with
                        // `vec` the pair is 8-byte aligned.
                        unsafe {
                            let p = c.add(row * ldc + col);
                            if vec && col + 1 < n {
                                store2(p, v0, v1);
                            } else {
                                if col < n {
                                    *p = v0;
                                }
                                if col + 1 < n {
                                    *p.add(1) = v1;
                                }
                            }
                        }
                    }
                });
            }
        });
    });
}

#[cfg(any(not(target_arch = "nvptx64"), not(simt_target = "sm_90a")))]
kernel! {
    /// `C = epilogue(A · B)` on tensor cores, bf16 inputs, f32 accumulation and output.
    ///
    /// # Safety
    /// `a` readable at `a[i*lda + p]`, `b` at `b[p*ldb + j]`, `c` writable at
    /// `c[i*ldc + j]` for `i < m, j < n, p < k`; `c` does not overlap `a` or `b`.
    ///
    /// # Parameters
    /// One [`MatmulParams16`]: `a`: `[m, k]` and `b`: `[k, n]` row-major bf16 bits, any
    /// row strides; `c`: `[m, n]` row-major f32; `epilogue: Relu` fuses the ReLU.
    ///
    /// # Tiling
    /// Block tile 128x128 of C, K steps of 32; shared A `[128][40]`, B `[32][136]`
    /// (padded); warp tile 64x32 = 4x4 `mma.m16n8k16` tiles, two k16 steps per K step.
    ///
    /// # Thread Mapping
    /// 256 threads = 8 warps, warp `w` at rows `64·(w/4)`, columns `32·(w%4)` of the
    /// block tile; `grid = (ceil(n/128), ceil(m/128))`.
    #[launch(threads = TC_THREADS)]
    pub unsafe fn matmul_mma_bf16(p: MatmulParams16) {
        // SAFETY: forwarded.
        unsafe { body::<false>(p) }
    }
}

#[cfg(any(not(target_arch = "nvptx64"), not(simt_target = "sm_90a")))]
kernel! {
    /// `C = epilogue(A · B)` on tensor cores, f16 inputs. As [`matmul_mma_bf16()`].
    ///
    /// # Safety
    /// As [`matmul_mma_bf16()`].
    #[launch(threads = TC_THREADS)]
    pub unsafe fn matmul_mma_f16(p: MatmulParams16) {
        // SAFETY: forwarded.
        unsafe { body::<true>(p) }
    }
}
