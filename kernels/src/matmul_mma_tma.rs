//! Matmul + ReLU, stage 6t: stage 6's `mma.sync` warps, fed by TMA through an
//! mbarrier ring instead of `cp.async` (sm_90a only).
//!
//! Stage 6 ([`matmul_mma_pipelined`](crate::matmul_mma_pipelined)) spends about a
//! quarter of its instructions on copies: every thread issues 16 `cp.async` of 16
//! bytes per K step, each with its own source and destination address, and on the
//! H200 14% of its stall samples are waits to overwrite the address registers of
//! copies still queued (docs/PERFORMANCE.md, session 13). Here the copies leave the
//! multiplying warps entirely:
//! * **One thread moves the tiles.** Warp 0's first thread issues one TMA copy of A's `128 x 64` box and two of B's `64 x 64` boxes per K step
//!   ([`simt_std::tma`]): the copy engine computes the addresses, zero-fills past the
//!   matrix edges and writes the 128-byte swizzle. That swizzle is stage 6's own
//!   [`swz_a`]: 16-byte chunk `c` of row `r` lands at chunk `c ^ (r % 8)` of its
//!   128-byte row, so A's `ldmatrix` addressing is unchanged and conflict-free; B
//!   arrives as two boxes of 128-byte k-rows, swizzled the same way ([`b_offset`]).
//! * **Barriers per stage, not per block.** Each stage has a *full* mbarrier (warp 0
//!   announces its bytes, the copies complete it) and an *empty* one (each warp
//!   arrives once it has read the stage). Warps 1-3 wait only for their data; warp 0
//!   also waits, before each refill, until all have read the stage. No
//!   `sync_threads` in the K loop. For TF32 warp 0 refills after its first k8 step
//!   rather than before it, by when the others have most likely released the stage
//!   ([`TF32_REFILL_AT`]).
//! * **No producer warp.** A fifth warp would cost registers: 10 warps on an SM's 4
//!   sub-partitions put 3 on some, and ptxas then caps every thread at 168 registers
//!   (against stage 6's 245): 440 bytes of spills.
//! * **TF32 without rounding in the loop.** Both operands arrive rounded to TF32
//!   (nearest even): an aligned A is read where it is, through a TF32 tensor map
//!   whose loads round it in the TMA unit (`simt::TensorMap::tiled_tf32`); the host
//!   first writes `Bᵀ` rounded ([`crate::tf32_prep`], as for stage 7, read through a
//!   plain f32 map), so both are K-major with 128-byte rows of 32 f32 and B's
//!   fragments come from `ldmatrix` like A's (an 8x8 matrix of
//!   16-bit elements is an 8x4 matrix of f32: rows of `Bᵀ` are columns of B, and lane
//!   `(g, t)` gets `B[k = t][n = g]`, the TF32 B fragment). Stage 6 reads B as 16
//!   scalar words and rounds every element per use, twice (two warps share each
//!   element).
//!
//! * **TF32 on 128x256 tiles.** A TF32 `mma` needs twice the bytes of a bf16 one, so
//!   the TF32 kernel takes blocks of 8 warps ([`TC6T_TF32_BN`]), one per SM, with a
//!   4-stage ring of 48 KiB: a quarter fewer bytes copied into shared memory and read
//!   from L2 per `mma` (ncu at 8192^3 on the H200: L2 busy 56% instead of 77%, waits
//!   for data a third). It ran 2-4% faster than on 128x128 tiles; bf16 did not
//!   (docs/PERFORMANCE.md, session 19), and keeps two blocks of 4 warps per SM.
//!
//! Phases (`S` stages): stage `s = kt % S` is filled for the `kt / S`-th time at K
//! step `kt`; the multiplying warps wait for parity `(kt / S) % 2` of `full[s]`, and
//! the producer, before refilling it, for parity `(kt / S - 1) % 2` of `empty[s]`.
//!
//! As `simt_std::mbarrier`'s rule 4 asks, warp 0 is converged whenever it waits: all
//! its lanes wait for the empty barrier, lane 0 issues, the warp reconverges, then all
//! wait for the full one.
//!
//! The host sends only problems whose rows of A and B start 16-byte aligned (TMA), on
//! compute capability 9.0, with an f32 C.
use crate::config::{
    TC6T_B_BOX_COLS, TC6T_SMEM_BYTES, TC6T_TF32_BN, TC6T_TF32_SMEM_BYTES, TC6T_TF32_STAGES,
    TC6T_TF32_STAGE_BYTES, TC6T_TF32_THREADS, TC6_BK, TC6_BK_TF32, TC6_THREADS, TC6_WARP_N, TC_BM,
    TC_BN, TC_STAGES, TC_STAGE_BYTES, TC_WARP_M,
};
use crate::matmul_mma::write_c;
use crate::matmul_mma_pipelined::{
    a_frags, block_origin_n, mma_tile, store_staged, swz_a, A_BYTES, A_ROW, BF16, F16, KSTEPS, NT,
    STAGE_LD, TF32,
};
use crate::params::MatmulParamsTma;
use simt_std::mbarrier;
use simt_std::mma::{ldmatrix_row_addr, ldmatrix_x4, ldmatrix_x4_trans};
use simt_std::shared::Smem;
use simt_std::thread::{sync_threads, thread_idx};
use simt_std::tma;
use simt_std::warp::{lane_id, warp_id};
use simt_std::{kernel, unroll};

/// Bytes of one B box: `TC6_BK` k-rows of 128 bytes (`TC6T_B_BOX_COLS` 16-bit columns).
const B_BOX_BYTES: u32 = TC6_BK * TC6T_B_BOX_COLS * 2;
const _: () = assert!(
    A_ROW == 128
        && TC6T_B_BOX_COLS * 2 == 128
        && A_BYTES % 1024 == 0
        && B_BOX_BYTES % 1024 == 0
        && TC_STAGE_BYTES == A_BYTES + (TC_BN / TC6T_B_BOX_COLS) * B_BOX_BYTES
        // TF32: Bᵀ's tile is TC_BN rows of 128 bytes, as big as A's.
        && TC_BN * A_ROW == A_BYTES
        && TC6T_SMEM_BYTES == TC_STAGES * TC_STAGE_BYTES + 8 * 2 * TC_STAGES + 1024
);

/// Byte offset, inside a stage's B (16-bit inputs), of 16-byte chunk `c` (0..16, 8
/// columns each) of k-row `kr`: box `c / 8`, row `kr` of 128 bytes, chunk `c % 8`
/// XOR `kr % 8` (the TMA's 128-byte swizzle; the box starts 1024-byte aligned). The
/// 8 rows an `ldmatrix` reads at one chunk use 8 distinct 16-byte bank groups.
#[inline(always)]
pub const fn b_offset(kr: u32, c: u32) -> u32 {
    (c / 8) * B_BOX_BYTES + kr * 128 + ((c % 8) ^ (kr & 7)) * 16
}

/// Stage 6t's ring: `S` stages of `SB` bytes, each A `[128][128 bytes]`, then B's
/// boxes (or `Bᵀ`'s tile for TF32), and a full and an empty barrier per stage.
pub(crate) type Ring<const S: u32, const SB: u32> = crate::matmul_wgmma::Ring<S, SB>;

/// Issues the copies of K step `kt` of the tile at `(row0, col0)`, `BN` columns wide,
/// as the block's ring step `g`: into stage `g % S`, after the stage's readers of step
/// `g - S` released it (a refill). Stage 6t's blocks have one tile, so `g = kt`; the
/// stream-K blocks of stage 6k ([`crate::matmul_mma_streamk`]) run the ring on across
/// their tiles. Warp 0 calls it, converged; its lane 0 issues.
///
/// # Safety
/// Warp 0, all lanes, after the barriers' initialisation, with the kernel's maps;
/// `kt < ceil(k / bk)`; every ring step before `g` was issued, and is or will be
/// released by every warp.
#[inline(always)]
pub(crate) unsafe fn refill<const KIND: u32, const BN: u32, const S: u32, const SB: u32>(
    p: &MatmulParamsTma,
    ring: Ring<S, SB>,
    g: u32,
    kt: u32,
    row0: u32,
    col0: u32,
) {
    let bk = if KIND == TF32 { TC6_BK_TF32 } else { TC6_BK };
    let (s, round) = (g % S, g / S);
    let (st, full) = (ring.stage(s), ring.full(s));
    if round > 0 {
        // SAFETY: an initialised barrier; its phase completes once every warp has read
        // ring step g - S (each arrives once).
        unsafe { mbarrier::wait(ring.empty(s), (round - 1) & 1) };
    }
    if lane_id() == 0 {
        // SAFETY (all below): initialised barriers; the destinations are 1024-byte
        // aligned boxes inside stage s, which no warp reads any more (the wait above);
        // the announced bytes are exactly the boxes' (elements past the matrix arrive
        // as zeros and count).
        unsafe {
            mbarrier::arrive_expect_tx(full, SB);
            let k0 = (kt * bk) as i32;
            tma::load_2d(st, p.a_map, k0, row0 as i32, full);
            if KIND == TF32 {
                // Bᵀ: one box of BN rows (columns of C) x 32 k.
                tma::load_2d(st.add(A_BYTES as usize), p.b_map, k0, col0 as i32, full);
            } else {
                unroll!(4, J => {
                    let j = J as u32;
                    if j < BN / TC6T_B_BOX_COLS {
                        tma::load_2d(st.add((A_BYTES + j * B_BOX_BYTES) as usize), p.b_map, (col0 + j * TC6T_B_BOX_COLS) as i32, k0, full);
                    }
                });
            }
        }
    }
    simt_std::warp::sync();
}

/// A warp's B fragments of one k16 step (k8 for TF32) of a stage: the NT n8 tiles at
/// columns `wn ..`, two per `ldmatrix.x4`. 16-bit: `.trans` from B's k-major boxes;
/// TF32: plain, from `Bᵀ`'s rows (pre-rounded).
///
/// # Safety
/// `st` is a stage whose copies landed and were published to this warp (its full
/// barrier); the whole warp calls it.
#[inline(always)]
pub(crate) unsafe fn b_frags<const KIND: u32>(st: Smem<u8>, wn: u32, kk: u32) -> [[u32; 2]; NT] {
    let (lr, lc) = ldmatrix_row_addr(lane_id());
    let b = st.add(A_BYTES as usize);
    let mut bf = [[0u32; 2]; NT];
    unroll!(4, NJ => {
        if NJ < NT / 2 {
            if KIND == TF32 {
                // Matrices (rows = columns of C, 4 k each) in the order (n 0-7, k 0-3),
                // (n 0-7, k 4-7), (n 8-15, k 0-3), (n 8-15, k 4-7): b0 and b1 of one n8
                // tile, then of the next, so each pair is two adjacent registers as
                // the `mma` wants them (A's order, (n 8-15, k 0-3) second, cost 264
                // register moves per K step).
                let row = wn + NJ as u32 * 16 + (lane_id() / 16) * 8 + lane_id() % 8;
                let c = kk * 2 + (lane_id() / 8) % 2;
                // SAFETY: inside the stage's Bᵀ tile, 16-byte aligned (caller's contract).
                let r = unsafe { ldmatrix_x4(b.add((row * A_ROW + swz_a(row, c) * 16) as usize)) };
                bf[2 * NJ] = [r[0], r[1]];
                bf[2 * NJ + 1] = [r[2], r[3]];
            } else {
                let kr = kk * 16 + lr;
                let c = (wn + NJ as u32 * 16 + lc) / 8;
                // SAFETY: inside the stage's B boxes, 16-byte aligned (caller's contract).
                let r = unsafe { ldmatrix_x4_trans(b.add(b_offset(kr, c) as usize)) };
                bf[2 * NJ] = [r[0], r[1]];
                bf[2 * NJ + 1] = [r[2], r[3]];
            }
        }
    });
    bf
}

/// After which k step of a K step warp 0 refills the stage the previous K step used,
/// for TF32 (0: before the first). Later, warp 0 no longer waits, with no `mma` in
/// flight, for the slowest warp to release the stage. H200, 2026-11-25
/// (docs/PERFORMANCE.md session 16): after the first or the second, 4096^3 and
/// 8192^3 ran 1-2% faster than before the first, after the third 2-5% slower; bf16
/// after its second k16 step ran level with before the first, so it keeps 0.
pub(crate) const TF32_REFILL_AT: u32 = 1;

/// The kernel for `KIND` ([`BF16`], [`F16`] or [`TF32`]) on blocks of `128 x BN`
/// (`BN / 32` warps of 64x64) with an `S`-stage ring of `SB`-byte stages, warp 0
/// refilling after k step `REFILL_AT` of each K step (0: before the first).
///
/// # Safety
/// As [`matmul_mma_tma_bf16()`], launched with `BN / 32` warps per block and at least
/// `S · SB + 16 · S + 1024` bytes of dynamic shared memory.
#[inline(always)]
unsafe fn body<
    const KIND: u32,
    const REFILL_AT: u32,
    const BN: u32,
    const S: u32,
    const SB: u32,
>(
    p: MatmulParamsTma,
) {
    // What a stage holds, and room for the epilogue's staging tiles.
    const {
        assert!(
            SB == A_BYTES + BN * A_ROW
                && BN % TC6_WARP_N == 0
                && BN <= 256
                && (BN / 32) * TC_WARP_M * STAGE_LD * 4 <= S * SB
        )
    };
    let warps_n = BN / TC6_WARP_N;
    let warps = (TC_BM / TC_WARP_M) * warps_n;
    let ring = Ring::<S, SB>::new();
    if thread_idx().x == 0 {
        // SAFETY: thread 0 alone, before the barrier below; the launch's bytes count
        // the barriers.
        unsafe { ring.init_barriers(warps) };
    }
    sync_threads();
    let (row0, col0) = block_origin_n(BN);
    let (w, lane) = (warp_id(), lane_id());
    let bk = if KIND == TF32 { TC6_BK_TF32 } else { TC6_BK };
    let ktiles = p.k.div_ceil(bk);
    if w == 0 {
        if lane == 0 {
            // SAFETY: the host made both maps (64-byte aligned, in global memory).
            unsafe {
                tma::prefetch(p.a_map);
                tma::prefetch(p.b_map);
            }
        }
        let mut kt = 0;
        while kt < S - 1 && kt < ktiles {
            // SAFETY: warp 0, converged, barriers initialised; kt < ktiles.
            unsafe { refill::<KIND, BN, S, SB>(&p, ring, kt, kt, row0, col0) };
            kt += 1;
        }
    }
    let (wm, wn) = (w / warps_n * TC_WARP_M, w % warps_n * TC6_WARP_N);
    let mut acc = [[[0f32; 4]; NT]; 4];
    // One k16 (k8) step's fragments of stage `st`.
    // SAFETY (all three closures): the stage landed and was published to this warp by
    // its full barrier; the whole warp calls them; barriers initialised.
    let frags = |st: Smem<u8>, kk: u32| unsafe {
        (a_frags(st, wm, kk, false), b_frags::<KIND>(st, wn, kk))
    };
    let wait_full = |kt: u32| unsafe { mbarrier::wait(ring.full(kt % S), (kt / S) & 1) };
    // Every lane's reads of step kt's stage were issued (their values go to registers)
    // before lane 0 releases it for the next copy.
    let release = |kt: u32| {
        simt_std::warp::sync();
        if lane == 0 {
            // SAFETY: an initialised barrier expecting one arrival per warp.
            unsafe { mbarrier::arrive(ring.empty(kt % S)) };
        }
    };
    // Fragments run one k step ahead of the `mma`s, across K steps too: the next
    // stage's first fragments load while this stage's last `mma`s issue, so no K step
    // starts with the tensor cores waiting for `ldmatrix`.
    wait_full(0);
    let mut cur = frags(ring.stage(0), 0);
    let mut kt = 0;
    while kt < ktiles {
        let next = kt + S - 1;
        if REFILL_AT == 0 && w == 0 && next < ktiles {
            // Into the stage step kt - 1 used: warp 0 waits until all warps read it.
            // SAFETY: warp 0, converged; next < ktiles.
            unsafe { refill::<KIND, BN, S, SB>(&p, ring, next, next, row0, col0) };
        }
        let st = ring.stage(kt % S);
        unroll!(4, KK => {
            if (KK as u32) + 1 < KSTEPS {
                let nxt = frags(st, KK as u32 + 1);
                // SAFETY: the whole warp is here, converged.
                unsafe { mma_tile::<KIND>(&mut acc, &cur.0, &cur.1) };
                cur = nxt;
                if REFILL_AT == KK as u32 + 1 && w == 0 && next < ktiles {
                    // Later in the K step: by then the other warps have most likely
                    // released the stage, so warp 0 does not wait for the slowest.
                    // SAFETY: warp 0, converged; next < ktiles.
                    unsafe { refill::<KIND, BN, S, SB>(&p, ring, next, next, row0, col0) };
                }
            }
        });
        release(kt);
        let last = cur;
        if kt + 1 < ktiles {
            wait_full(kt + 1);
            cur = frags(ring.stage((kt + 1) % S), 0);
        }
        // SAFETY: as above.
        unsafe { mma_tile::<KIND>(&mut acc, &last.0, &last.1) };
        kt += 1;
    }
    let interior = row0 + TC_BM <= p.m && col0 + BN <= p.n;
    let (c, ldc) = (p.c.ptr, p.c.ld);
    if interior && ldc % 4 == 0 && c as usize % 16 == 0 {
        // Every copy landed (each was waited for); once all warps have read their last
        // fragments, the stages may hold the staging tiles. Every thread of the block
        // takes this branch (`interior` is the block's).
        sync_threads();
        // SAFETY: the tile is inside C, rows 16-byte aligned (checked); the stages are
        // free (above). The staging tiles start at the dynamic shared memory, below the
        // ring's 1 KiB alignment slack plus its stages: `warps` tiles of 64 x STAGE_LD
        // floats fit in them (the assertion above).
        unsafe { store_staged(warps_n, &acc, c, ldc, row0, col0, p.epilogue as u32 != 0) };
        return;
    }
    // SAFETY: the kernel's contract for C.
    unsafe {
        write_c(
            &acc,
            c,
            p.m as usize,
            p.n as usize,
            ldc as usize,
            (row0 + wm) as usize,
            (col0 + wn) as usize,
            lane,
            p.epilogue as u32 != 0,
        )
    };
}

kernel! {
    /// `C = epilogue(A · B)` on tensor cores with `mma.sync`, bf16 inputs, f32
    /// accumulation and output, fed by TMA through a 3-stage mbarrier ring.
    ///
    /// # Safety
    /// `p.a_map` and `p.b_map` are tensor maps (in global memory) of the bf16 matrices
    /// `A: m x k` (boxes of 128 rows x 64 columns) and `B: k x n` (boxes of 64 x 64),
    /// 128-byte swizzled; `p.c` is an f32 matrix writable at `c[i*ld + j]` for `i < m,
    /// j < n` that does not overlap A or B, with fewer than 2^32 elements.
    ///
    /// # Parameters
    /// One [`MatmulParamsTma`]: the two maps, `c`: `[m, n]` row-major f32, the sizes,
    /// and `epilogue: Relu` to fuse the ReLU (`c_map` and `c_type` are not read).
    ///
    /// # Tiling
    /// Block tile 128x128, K steps of 64, 3 stages of 32 KiB (A `[128][64]`, B as two
    /// boxes `[64][64]`, 128-byte swizzled); warp tile 64x64 = 4x8 `mma.m16n8k16`
    /// (128 f32 accumulators per lane), fragments by `ldmatrix.x4` (A) and
    /// `ldmatrix.x4.trans` (B), as stage 6.
    ///
    /// # Thread Mapping
    /// 128 threads = 4 warps, warp `w` at rows `64·(w/2)`, columns `64·(w%2)`; warp
    /// 0's first thread also issues the copies. `grid = (ceil(n/128),
    /// ceil(m/128))`, visited in grouped order (stage 6's `GROUP_M`), two blocks per SM.
    #[launch(threads = TC6_THREADS, min_blocks = 2, shared = TC6T_SMEM_BYTES, target = "sm_90a")]
    pub unsafe fn matmul_mma_tma_bf16(p: MatmulParamsTma) {
        // SAFETY: forwarded.
        unsafe { body::<BF16, 0, TC_BN, TC_STAGES, TC_STAGE_BYTES>(p) }
    }
}

kernel! {
    /// As [`matmul_mma_tma_bf16()`], f16 inputs.
    ///
    /// # Safety
    /// As [`matmul_mma_tma_bf16()`], with f16 matrices.
    #[launch(threads = TC6_THREADS, min_blocks = 2, shared = TC6T_SMEM_BYTES, target = "sm_90a")]
    pub unsafe fn matmul_mma_tma_f16(p: MatmulParamsTma) {
        // SAFETY: forwarded.
        unsafe { body::<F16, 0, TC_BN, TC_STAGES, TC_STAGE_BYTES>(p) }
    }
}

kernel! {
    /// As [`matmul_mma_tma_bf16()`] in TF32, on wider tiles: `a_map` describes `A: m x
    /// k` (boxes of 128 rows x 32 columns) and `b_map` `Bᵀ: n x k` (boxes of 256 rows x
    /// 32 columns), f32, each rounded to TF32 by its map's loads or already by its copy
    /// ([`crate::tf32_prep`]); `mma.m16n8k8` in K steps of 32, both operands by
    /// `ldmatrix.x4`.
    ///
    /// # Safety
    /// As [`matmul_mma_tma_bf16()`], with f32 matrices A and Bᵀ (`p.n` rows of `p.k`).
    ///
    /// # Tiling
    /// Block tile 128x256 ([`TC6T_TF32_BN`]), K steps of 32, 4 stages of 48 KiB (A
    /// `[128][32]`, `Bᵀ` `[256][32]`, 128-byte swizzled); warp tile 64x64 = 4x8
    /// `mma.m16n8k8`.
    ///
    /// # Thread Mapping
    /// 256 threads = 8 warps, warp `w` at rows `64·(w/4)`, columns `64·(w%4)`; warp 0's
    /// first thread also issues the copies. `grid = (ceil(n/256), ceil(m/128))` in
    /// grouped order, one block per SM.
    #[launch(threads = TC6T_TF32_THREADS, min_blocks = 1, shared = TC6T_TF32_SMEM_BYTES, target = "sm_90a")]
    pub unsafe fn matmul_mma_tma_tf32(p: MatmulParamsTma) {
        // SAFETY: forwarded.
        unsafe {
            body::<TF32, TF32_REFILL_AT, TC6T_TF32_BN, TC6T_TF32_STAGES, TC6T_TF32_STAGE_BYTES>(p)
        }
    }
}
