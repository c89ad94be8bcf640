//! Matmul + ReLU, stage 4t: stage 4's warp tiles, fed by TMA through an mbarrier
//! ring instead of through registers (FP32 SIMT; sm_90a only).
//!
//! Stage 4 ([`matmul_relu_warptiled()`](crate::matmul_warptiled::matmul_relu_warptiled()))
//! keeps the FMA pipe busy about 73% of the time on an H200, with an instruction
//! issued on 82% of cycles (ncu at 4096^3, docs/PERFORMANCE.md session 17): about one
//! issue slot in nine carries no FMA. Per K step of 8 each of its threads issues two
//! global loads, five shared stores (A is transposed on the way), a block barrier
//! and the loop's bookkeeping, next to 512 FMAs and 32 shared loads. Here all of the
//! copying leaves the threads:
//! * **One thread moves the tiles.** Warp 0's first thread issues one TMA copy of A's
//!   `128 x 32` box and one of B's `32 x 128` per K step of 32 ([`simt_std::tma`]).
//!   The copy engine computes the addresses and zero-fills past the matrix edges, so
//!   the kernel has no bounds checks on its loads and any M, N, K works.
//! * **A stays row-major.** TMA cannot transpose, so a thread reads A along K: one
//!   16-byte shared load gives 4 consecutive k of one row, and per 4 k a thread loads
//!   8 rows of A (8 loads) and 4 rows of B (8 loads) for 256 FMAs, the same 16 loads
//!   per 256 FMAs as stage 4. A's box arrives with the 128-byte swizzle: 16-byte
//!   chunk `c` of row `r` lands at chunk `c ^ (r % 8)` of its 128-byte row.
//! * **Rows 4 apart.** A thread owns rows `r, r + 4, ..., r + 28` of its warp tile
//!   (stage 4: two groups of 4 adjacent rows). The 4 lanes of a column share a load of
//!   4 consecutive rows, whose `r % 8` differ, so their chunks lie in 4 different
//!   bank groups: no conflicts ([`a_chunk`], pinned by a test). With adjacent rows,
//!   rows 8 apart would meet in one bank group.
//! * **Barriers per stage, not per block.** Each stage has a *full* mbarrier (warp 0
//!   announces its bytes, the copies complete it) and an *empty* one (each warp
//!   arrives once it has read the stage). No `sync_threads` in the K loop. Warp 0
//!   refills the stage the previous K step used after its first 4 k, by when the
//!   other warps have most likely released it.
//!
//! Phases (`S` stages): stage `s = kt % S` is filled for the `kt / S`-th time at K
//! step `kt`; the warps wait for parity `(kt / S) % 2` of `full[s]`, and warp 0,
//! before refilling it, for parity `(kt / S - 1) % 2` of `empty[s]`. As
//! `simt_std::mbarrier`'s rule 4 asks, warp 0 is converged whenever it waits.
//!
//! The host sends only problems whose A and B start 16-byte aligned with rows a
//! multiple of 16 bytes long (TMA), on compute capability 9.0.
use crate::config::{
    MM4T_BK, MM4T_SMEM_BYTES, MM4T_STAGES, MM4T_STAGE_BYTES, MM_BM, MM_BN, MM_LANES_N as LANES_N,
    MM_THREADS, MM_WARP_M as WARP_M, MM_WARP_N as WARP_N, WARP_SIZE,
};
use crate::matmul_mma_pipelined::block_origin_n;
use crate::matmul_wgmma::Ring;
use crate::params::MatmulParamsTma;
use simt_std::mbarrier;
use simt_std::memory::{compiler_barrier, opaque_u32, store4, store4_first, F32x4};
use simt_std::shared::Smem;
use simt_std::thread::{sync_threads, thread_idx};
use simt_std::tma;
use simt_std::warp::{lane_id, warp_id};
use simt_std::{kernel, unroll};

/// Floats of one stage's A box (`MM_BM` rows of `MM4T_BK`); B's box follows it.
const A_FLOATS: u32 = MM_BM * MM4T_BK;
/// Rows of the warp tile one thread owns, and the distance between them.
const ROWS: u32 = 8;
const ROW_STEP: u32 = WARP_M / ROWS;
const LANES_M: u32 = WARP_SIZE / LANES_N;
const WARPS_N: u32 = MM_BN / WARP_N;
const _: () = assert!(
    MM4T_BK * 4 == 128
        && MM4T_STAGE_BYTES == 2 * A_FLOATS * 4
        && MM_BM * MM4T_BK == MM4T_BK * MM_BN
        && A_FLOATS * 4 % 1024 == 0
        && ROW_STEP == LANES_M
        && (MM_BM / WARP_M) * WARPS_N * WARP_SIZE == MM_THREADS
        // A thread's first row r has r % 8 < 4 (`compute`'s chunk arithmetic).
        && WARP_M % 8 == 0
        && LANES_M <= 4
        && WARP_N == 2 * 4 * LANES_N
);

type Ring4t = Ring<MM4T_STAGES, MM4T_STAGE_BYTES>;

/// Where thread `t` sits in the block tile: its first row (the others are
/// [`ROW_STEP`] = 4 apart) and the first of its two 4-column groups (the second
/// `WARP_N / 2` = 32 columns right). Warp `w` owns rows `32(w/2)..+32` and columns
/// `64(w%2)..+64`; its lane `(ly, lx) = (l/8, l%8)` rows `ly, ly + 4, ..` and columns
/// `4lx..+4, 32+4lx..+4` of the warp tile.
#[inline(always)]
pub const fn thread_origin(t: u32) -> (u32, u32) {
    let (warp, lane) = (t / WARP_SIZE, t % WARP_SIZE);
    let (wm, wn) = (warp / WARPS_N, warp % WARPS_N);
    let (ly, lx) = (lane / LANES_N, lane % LANES_N);
    (wm * WARP_M + ly, wn * WARP_N + 4 * lx)
}

/// The 16-byte chunk of A's 128-byte stage row `r` that holds k `4c..4c+4`: chunk
/// `c ^ (r % 8)`, the TMA's 128-byte swizzle (the box starts 1024-byte aligned).
#[inline(always)]
pub const fn a_chunk(r: u32, c: u32) -> u32 {
    c ^ (r % 8)
}

/// Issues the copies of K step `kt` into stage `kt % S`, after every warp released
/// the stage's previous K step (a refill). Warp 0 calls it, converged; lane 0 issues.
///
/// # Safety
/// Warp 0, all lanes, after the barriers' initialisation, with the kernel's maps;
/// `kt < ceil(k / MM4T_BK)`; every K step before `kt` was issued, and is or will be
/// released by every warp.
#[inline(always)]
unsafe fn refill(p: &MatmulParamsTma, ring: Ring4t, kt: u32, row0: u32, col0: u32) {
    let (s, round) = (kt % MM4T_STAGES, kt / MM4T_STAGES);
    let (st, full) = (ring.stage(s), ring.full(s));
    if round > 0 {
        // SAFETY: an initialised barrier; its phase completes once every warp has read
        // K step kt - S (each arrives once).
        unsafe { mbarrier::wait(ring.empty(s), (round - 1) & 1) };
    }
    if lane_id() == 0 {
        // SAFETY: initialised barriers; both destinations are boxes inside stage s
        // (A's 1024-byte aligned for its swizzle), which no warp reads any more (the
        // wait above); the announced bytes are exactly the two boxes' (elements past
        // the matrices arrive as zeros and count).
        unsafe {
            mbarrier::arrive_expect_tx(full, MM4T_STAGE_BYTES);
            let k0 = (kt * MM4T_BK) as i32;
            tma::load_2d(st, p.a_map, k0, row0 as i32, full);
            tma::load_2d(
                st.add((A_FLOATS * 4) as usize),
                p.b_map,
                col0 as i32,
                k0,
                full,
            );
        }
    }
    simt_std::warp::sync();
}

/// The 32 rank-1 updates of one stage into the thread's 8x8 accumulators. Per 4 k:
/// 8 loads of A (4 k of each of the thread's rows), then per k 2 loads of B and 64
/// FMAs. Warp 0 refills the ring after the first 4 k (`refill_next`).
///
/// # Safety
/// `st` is a stage whose copies landed and were published to this warp (its full
/// barrier); `a_off[c]` is the float offset of k chunk `c` (0..4) of the thread's
/// first row of A ([`a_chunk`]) and `b_off` of its first column in B's rows.
#[inline(always)]
unsafe fn compute(
    st: Smem<f32>,
    a_off: &[u32; 4],
    b_off: u32,
    acc: &mut [[f32; 8]; ROWS as usize],
    mut refill_next: impl FnMut(),
) {
    let b = st.add(A_FLOATS as usize);
    unroll!(8, KQ => {
        let mut af = [F32x4::default(); ROWS as usize];
        unroll!(8, I => {
            // Row r + 4I has r % 8 + 4 (I % 2) for its swizzle: chunk KQ of it lies at
            // chunk c ^ (r % 8) of row r + 4I, with c = KQ ^ 4 (I % 2). As r % 8 < 4,
            // that is `a_off[c % 4]` plus c's bit 2 (4 floats each).
            let c = (KQ as u32) ^ (4 * (I as u32 % 2));
            let off = a_off[(c % 4) as usize] + 4 * (c & 4) + I as u32 * ROW_STEP * MM4T_BK;
            // SAFETY: row r + 4I < 128 of the stage's A box, a whole 16-byte chunk.
            af[I] = unsafe { st.add(off as usize).load4() };
        });
        unroll!(4, KK => {
            let kr = (KQ * 4 + KK) as u32 * MM_BN;
            // SAFETY: k-row < 32 of B's box, columns b_off..+4 and +32..+4 < 128.
            let (b_lo, b_hi) = unsafe {
                (
                    b.add((kr + b_off) as usize).load4(),
                    b.add((kr + b_off + WARP_N / 2) as usize).load4(),
                )
            };
            let bf = [b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w];
            unroll!(8, I => {
                let a = af[I].to_array()[KK];
                unroll!(8, J => {
                    acc[I][J] = simt_std::math::fma(a, bf[J], acc[I][J]);
                });
            });
        });
        if KQ == 0 {
            refill_next();
        }
        // Keeps LLVM from hoisting the next 4 k's loads above these FMAs (registers).
        compiler_barrier();
    });
}

// Two 256-thread blocks per SM: at most 128 registers per thread (`tests/ptx.rs`).
kernel! {
    /// `C = relu?(A · B)` in FP32 on the SIMT cores, A and B copied into shared
    /// memory by TMA.
    ///
    /// # Safety
    /// `p.a_map` is a tensor map (in global memory) of the f32 matrix `A: m x k`, boxes
    /// of 128 rows x 32 columns, 128-byte swizzled; `p.b_map` one of `B: k x n`, boxes
    /// of 32 rows x 128 columns, not swizzled. `p.c` is an f32 matrix writable at
    /// `c[i*ld + j]` for `i < m, j < n` that does not overlap A or B, with fewer than
    /// 2^32 elements; `k < 2^31`.
    ///
    /// # Parameters
    /// One [`MatmulParamsTma`]: the two maps, `c`: `[m, n]` row-major f32, the sizes,
    /// and `epilogue: Relu` to fuse the ReLU (`c_map` and `c_type` are not read).
    ///
    /// # Tiling
    /// Block tile 128x128, K steps of 32, 3 stages of 32 KiB (A `[128][32]` swizzled,
    /// B `[32][128]`). Warp tile 32x64 (8 warps: 4 down, 2 across); thread tile 8x8,
    /// rows 4 apart and two groups of 4 columns 32 apart ([`thread_origin`]).
    ///
    /// # Thread Mapping
    /// `grid = (ceil(n/128), ceil(m/128))`, visited in grouped order (stage 6's
    /// `GROUP_M`), 256 threads, two blocks per SM. Warp 0's first thread also issues
    /// the copies.
    #[launch(threads = MM_THREADS, min_blocks = 2, shared = MM4T_SMEM_BYTES, target = "sm_90a")]
    pub unsafe fn matmul_relu_warptiled_tma(p: MatmulParamsTma) {
        let ring = Ring4t::new();
        let warps = MM_THREADS / WARP_SIZE;
        if thread_idx().x == 0 {
            // SAFETY: thread 0 alone, before the barrier below; the launch's bytes
            // count the barriers.
            unsafe { ring.init_barriers(warps) };
        }
        sync_threads();
        let (row0, col0) = block_origin_n(MM_BN);
        let (w, lane) = (warp_id(), lane_id());
        let ktiles = p.k.div_ceil(MM4T_BK);
        if w == 0 {
            if lane == 0 {
                // SAFETY: the host made both maps (64-byte aligned, in global memory).
                unsafe {
                    tma::prefetch(p.a_map);
                    tma::prefetch(p.b_map);
                }
            }
            let mut kt = 0;
            while kt < MM4T_STAGES - 1 && kt < ktiles {
                // SAFETY: warp 0, converged, barriers initialised; kt < ktiles.
                unsafe { refill(&p, ring, kt, row0, col0) };
                kt += 1;
            }
        }
        let (rm, cn) = thread_origin(thread_idx().x);
        // Chunks 0-3 of the thread's first row: chunks 4-7 lie 16 floats further on,
        // as r % 8 < 4 (`compute`). Opaque: LLVM would otherwise see that these and the
        // constant offsets of the other rows and chunks share no bits and OR them,
        // which no shared load can take as an immediate.
        let a_off: [u32; 4] =
            core::array::from_fn(|c| opaque_u32(rm * MM4T_BK + 4 * a_chunk(rm, c as u32)));
        let mut acc = [[0f32; 8]; ROWS as usize];
        let mut kt = 0;
        while kt < ktiles {
            // SAFETY: an initialised barrier; phase kt / S of stage kt % S.
            unsafe { mbarrier::wait(ring.full(kt % MM4T_STAGES), (kt / MM4T_STAGES) & 1) };
            let next = kt + MM4T_STAGES - 1;
            let refill_next = || {
                if w == 0 && next < ktiles {
                    // Into the stage K step kt - 1 used: warp 0 waits until all warps
                    // released it. SAFETY: warp 0, converged; next < ktiles.
                    unsafe { refill(&p, ring, next, row0, col0) };
                }
            };
            // SAFETY: the stage landed and was published by its full barrier; the
            // offsets are the thread's own (`thread_origin`, `a_chunk`).
            unsafe { compute(ring.stage(kt % MM4T_STAGES).cast(), &a_off, cn, &mut acc, refill_next) };
            // Every lane's reads of the stage were issued before lane 0 releases it.
            simt_std::warp::sync();
            if lane == 0 {
                // SAFETY: an initialised barrier expecting one arrival per warp.
                unsafe { mbarrier::arrive(ring.empty(kt % MM4T_STAGES)) };
            }
            kt += 1;
        }
        let (c, ldc) = (p.c.ptr, p.c.ld);
        let vec_c = c as usize % 16 == 0 && ldc % 4 == 0;
        let interior = vec_c && row0 + MM_BM <= p.m && col0 + MM_BN <= p.n;
        let relu = p.epilogue as u32 != 0;
        unroll!(8, I => {
            let r = row0 + rm + I as u32 * ROW_STEP;
            unroll!(2, H => {
                let c0 = col0 + cn + H as u32 * (WARP_N / 2);
                let mut v = F32x4 { x: acc[I][4 * H], y: acc[I][4 * H + 1], z: acc[I][4 * H + 2], w: acc[I][4 * H + 3] };
                if relu {
                    v = v.map(|x| if x > 0.0 { x } else { 0.0 });
                }
                let q = c.wrapping_add((r * ldc + c0) as usize);
                if interior {
                    // SAFETY: interior block: (r, c0..c0+4) inside C, row aligned.
                    unsafe { store4(q, v) };
                } else if r < p.m {
                    // SAFETY: r < m; of the columns c0.., those below n are written.
                    unsafe { store4_first(q, v, p.n.saturating_sub(c0), vec_c) };
                }
            });
        });
    }
}
