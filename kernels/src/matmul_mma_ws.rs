//! Matmul + ReLU, stage 6w: stage 6t's TF32 `mma.sync` warps with `B` read where it
//! lies, transposed inside the kernel by a producer warpgroup (sm_90a only).
//!
//! **Why.** TF32 fragments need both operands K-major: `ldmatrix` moves 16-bit
//! elements and cannot transpose 32-bit ones, and the `B` of `A · B` is row-major,
//! N-major. Stage 6t ([`crate::matmul_mma_tma`]) therefore copies `Bᵀ`, rounded, before
//! every product ([`crate::tf32_prep`]): a pass over 2·k·n·4 bytes of DRAM, 5% of a
//! 4096^3 product on the H200 (docs/PERFORMANCE.md, session 19). Reading B's
//! fragments as single words instead costs the multiplying warps more than the copy
//! (session 18: 16 scalar loads per k8 step against 4 `ldmatrix.x4`).
//!
//! **How.** A fourth and fifth pair of hands: a producer warpgroup (warps 8-11) loads
//! each K step's `32 x 256` tile of B from global memory into registers (16-byte loads,
//! 16 per thread), rounds every element to TF32 (`cvt.rn`, ties to even, as the TMA's
//! TF32 maps and cuBLAS) and stores it transposed into the stage, where stage 6t's TMA
//! put `Bᵀ`: rows of 128 bytes (32 k) per column of C, 16-byte chunk `c` of row `n` at
//! `c ^ (n % 8)`. The multiplying warps are stage 6t's, unchanged: `ldmatrix` of A and
//! of `Bᵀ`. A still arrives by TMA (one thread of the producers issues it), rounded by
//! its TF32 map.
//! * **Registers.** 384 threads launch with 168 registers each; `setmaxnreg` lowers the
//!   producers to [`TC6W_PRODUCER_REGS`] and raises the multiplying warps to
//!   [`TC6W_CONSUMER_REGS`] (stage 6t's kernel needs 235 without a cap).
//! * **Shared memory traffic is stage 6t's.** The producers' stores write the bytes the
//!   TMA wrote: no staging of raw B, no second pass through shared memory.
//! * **Conflict-free transposed stores.** Lane `(kq, h, c)` = `(lane % 8, lane / 8 % 2,
//!   lane / 16)` of a unit loads row `16·kp + 8·h + kq` of the K step, columns `8·u +
//!   4·c ..+4`, and stores its element `j` at `Bᵀ` row `n = 8·u + 4·c + j`, column
//!   `k`. The 16-byte chunk is `(k / 4) ^ (n % 8)` = `(4·kp + 2·h + kq / 4) ^ (4·c +
//!   j)`: its bits are `kq / 4 ^ j₀`, `h ^ j₁` and `kp ^ c`, 8 different chunks across
//!   the lanes for every `j`, and `kq % 4` picks the word: 32 banks, one wavefront per
//!   store ([`b_store_offset`], pinned by a test).
//!
//! Barriers per stage: *full* expects one arrival with A's bytes (the producer thread
//! that issues its TMA) and one per producer warp once its stores are done (all lanes
//! synchronised first); *empty* one per multiplying warp, as in stage 6t.
use crate::config::{
    TC6T_TF32_BN, TC6T_TF32_SMEM_BYTES, TC6T_TF32_STAGES, TC6T_TF32_STAGE_BYTES,
    TC6T_TF32_THREADS, TC6W_CONSUMER_REGS, TC6W_PRODUCER_REGS, TC6W_THREADS, TC6_BK_TF32,
    TC6_WARP_N, TC_BM, TC_WARP_M,
};
use crate::matmul_mma::write_c;
use crate::matmul_mma_pipelined::{
    a_frags, block_origin_n, mma_tile, store_staged, A_BYTES, A_ROW, KSTEPS, NT, STAGE_LD, TF32,
};
use crate::matmul_mma_tma::b_frags;
use crate::params::MatmulParamsTmaA;
use simt_std::memory::{is_aligned16, load4_first, load4_nc, load4_nc_na, prefetch_l2, F32x4};
use simt_std::mma::to_tf32_rne;
use simt_std::shared::Smem;
use simt_std::thread::{sync_threads, thread_idx};
use simt_std::warp::{lane_id, warp_id};
use simt_std::{kernel, mbarrier, tma, unroll, wgmma};

const BN: u32 = TC6T_TF32_BN;
const S: u32 = TC6T_TF32_STAGES;
const SB: u32 = TC6T_TF32_STAGE_BYTES;
/// The multiplying warps (stage 6t's 8).
const CONSUMER_WARPS: u32 = TC6T_TF32_THREADS / 32;
/// The producer warpgroup's warps.
const PRODUCER_WARPS: u32 = (TC6W_THREADS - TC6T_TF32_THREADS) / 32;
/// 16-byte vectors of B each producer thread moves per K step.
const UNITS: u32 = TC6_BK_TF32 * BN / 4 / (32 * PRODUCER_WARPS);
/// Vectors of one batch: one row of the K step, 8 columns apart. Each vector is stored
/// and its registers reloaded with the next batch's vector at once, so about a batch
/// of loads is always in flight (8 KiB of a K step's 32 KiB per block) with a batch of
/// registers.
const BATCH: u32 = 8;
const BATCHES: u32 = UNITS / BATCH;
/// K steps ahead whose tile of B the producers ask L2 for.
const PREFETCH: u32 = 3;
const _: () = assert!(
    PRODUCER_WARPS == 4
        && UNITS == 16
        && BATCHES == 2
        && TC6_BK_TF32 == 32
        && A_ROW == 128
        && SB == A_BYTES + BN * A_ROW
        && A_BYTES % 1024 == 0
        && SB % 1024 == 0
        // The staging tiles of the epilogue fit in the stages.
        && CONSUMER_WARPS * TC_WARP_M * STAGE_LD * 4 <= S * SB
);

type Ring = crate::matmul_wgmma::Ring<S, SB>;

/// Byte offset inside a stage of `Bᵀ`'s element `(n, k)` (column `n` of C, `k` of the
/// K step), stage 6t's layout: row `n` of 128 bytes after A's tile, 16-byte chunk
/// `(k / 4) ^ (n % 8)`, word `k % 4`.
#[inline(always)]
pub const fn b_store_offset(n: u32, k: u32) -> u32 {
    A_BYTES + n * A_ROW + (((k / 4) ^ (n % 8)) * 16) + (k % 4) * 4
}

/// Where producer lane `lane` of warp `pw` (0..4) reads in batch `b` (0..2) of a K
/// step: the row of the K step, and the column of the block's tile of its first
/// vector (vector `i` is `8·i` columns further).
#[inline(always)]
pub const fn producer_unit(pw: u32, lane: u32, b: u32) -> (u32, u32) {
    let (kq, h, c) = (lane % 8, (lane / 8) % 2, lane / 16);
    (16 * b + 8 * h + kq, 64 * pw + 4 * c)
}

/// The producer warpgroup: every K step, B's `32 x BN` tile into the stage as `Bᵀ`,
/// rounded to TF32, and A's box by TMA (thread 0 of the warpgroup).
///
/// # Safety
/// All 128 threads of the warpgroup, after the barriers' initialisation; the kernel's
/// contract for `p`.
#[inline(always)]
unsafe fn produce<const VAR: u32>(p: &MatmulParamsTmaA, ring: Ring, ktiles: u32, row0: u32, col0: u32) {
    let pt = thread_idx().x - TC6T_TF32_THREADS;
    let (pw, lane) = (pt / 32, lane_id());
    if pt == 0 {
        // SAFETY: the host made the map (64-byte aligned, in global memory).
        unsafe { tma::prefetch(p.a_map) };
    }
    let (b, k, n) = (p.b, p.k, p.n);
    let vec_ok = is_aligned16(b.ptr) && b.ld % 4 == 0;
    // Batch `bi` of K step `kt`: where this lane's vectors start, and whether all of
    // them lie inside B with aligned rows (then 16-byte loads without checks).
    let at_batch = |kt: u32, bi: u32| {
        let (r, c) = producer_unit(pw, lane, bi);
        let (row, col) = (kt * TC6_BK_TF32 + r, col0 + c);
        let fast = vec_ok && row < k && col + 8 * (BATCH - 1) + 4 <= n;
        (b.ptr.wrapping_add((row * b.ld + col) as usize), row, col, fast)
    };
    // Vector `i` of a batch at an edge of B (zeros past it).
    let load_edge = |(src, row, col, _): (*const f32, u32, u32, bool), i: u32| -> F32x4 {
        let c = col + 8 * i;
        if row < k && c < n {
            // SAFETY: row < k; the first min(4, n - c) floats from column c exist;
            // 16-byte aligned when vec_ok.
            unsafe { load4_first(src.add(8 * i as usize), n - c, vec_ok) }
        } else {
            F32x4::splat(0.0)
        }
    };
    // L2 prefetch of K step `kt`'s tile: 32 rows of BN floats, 256 lines of 128 bytes,
    // two per thread (rows pt / 8 and pt / 8 + 16, line pt % 8). The loads of a K step
    // then wait for L2, not DRAM: a batch in flight per thread hides L2's latency.
    let prefetch = |kt: u32| {
        let (r, c) = (pt / 8, col0 + 32 * (pt % 8));
        unroll!(2, H => {
            let row = kt * TC6_BK_TF32 + r + 16 * H as u32;
            if row < k && c < n {
                // SAFETY: row < k, column c < n: inside B's allocation.
                unsafe { prefetch_l2(b.ptr.wrapping_add((row * b.ld + c) as usize)) };
            }
        });
    };
    let mut f = 0;
    while VAR != 1 && f < PREFETCH && f < ktiles {
        prefetch(f);
        f += 1;
    }
    // This lane's store offsets: element j of vector i of batch b lands at
    // b_store_offset(n, k) with n = nl + 8·i + j and k = r0 + 16·b; only the XOR with
    // (j ^ 4·b) in the chunk bits and a row multiple of 128 bytes change, so a base
    // per (j, b) plus immediates addresses all 64 stores.
    let (r0, nl) = producer_unit(pw, lane, 0);
    let base = b_store_offset(nl, r0);
    let mut cur = [F32x4::splat(0.0); BATCH as usize];
    let first = at_batch(0, 0);
    unroll!(8, I => {
        cur[I] = if first.3 {
            // SAFETY: as the fast loads below.
            unsafe { load4_nc(first.0.add(8 * I)) }
        } else {
            load_edge(first, I as u32)
        };
    });
    let mut kt = 0;
    while kt < ktiles {
        let s = kt % S;
        let st = ring.stage(s);
        if VAR != 1 && kt + PREFETCH < ktiles {
            prefetch(kt + PREFETCH);
        }
        unroll!(2, BI => {
            let bi = BI as u32;
            let (next, more) = if bi + 1 < BATCHES {
                (at_batch(kt, bi + 1), true)
            } else {
                (at_batch(kt + 1, 0), kt + 1 < ktiles)
            };
            if bi == 0 {
                if kt >= S {
                    // SAFETY: an initialised barrier; its phase completes once every
                    // multiplying warp has read step kt - S.
                    unsafe { mbarrier::wait(ring.empty(s), (kt / S - 1) & 1) };
                }
                if pt == 0 {
                    // SAFETY: initialised barrier; the stage is free (above); A's box is
                    // 1024-byte aligned at the stage's start; the announced bytes are
                    // the box's (past the matrix: zeros, counted).
                    unsafe {
                        mbarrier::arrive_expect_tx(ring.full(s), A_BYTES);
                        tma::load_2d(st, p.a_map, (kt * TC6_BK_TF32) as i32, row0 as i32, ring.full(s));
                    }
                }
                simt_std::warp::sync();
            }
            let at = [0u32, 1, 2, 3].map(|j| st.add((base ^ ((j ^ (4 * bi)) << 4)) as usize));
            // Vector I's 4 elements into the stage, rounded.
            let put = |v: F32x4, i: u32| {
                let v = v.to_array();
                unroll!(4, J => {
                    // SAFETY: inside the stage's Bᵀ tile (b_store_offset of an n < BN,
                    // k < 32), 4-byte aligned; the stage is free (the empty wait).
                    unsafe { at[J].add(((8 * i + J as u32) * A_ROW) as usize).cast::<u32>().write(to_tf32_rne(v[J])) };
                });
            };
            // Each vector's registers take the next batch's vector as soon as it is stored.
            if VAR == 3 {
                // Diagnostic only: no B at all (wrong results), the consumers' own speed.
            } else if more && next.3 {
                unroll!(8, I => {
                    put(cur[I], I as u32);
                    // SAFETY: row < k and the vector's 4 columns below n (`fast`), 16-byte
                    // aligned (vec_ok, the column a multiple of 4); B is not written
                    // during the kernel.
                    cur[I] = unsafe { if VAR == 2 { load4_nc_na(next.0.add(8 * I)) } else { load4_nc(next.0.add(8 * I)) } };
                });
            } else if more {
                unroll!(8, I => {
                    put(cur[I], I as u32);
                    cur[I] = load_edge(next, I as u32);
                });
            } else {
                unroll!(8, I => { put(cur[I], I as u32); });
            }
        });
        // Every lane's stores were issued before lane 0 publishes the stage.
        simt_std::warp::sync();
        if lane == 0 {
            // SAFETY: an initialised barrier expecting one arrival per producer warp and
            // the TMA's.
            unsafe { mbarrier::arrive(ring.full(s)) };
        }
        kt += 1;
    }
}

/// The kernel (see [`matmul_mma_ws_tf32()`]).
///
/// # Safety
/// As [`matmul_mma_ws_tf32()`].
#[inline(always)]
unsafe fn body<const VAR: u32>(p: MatmulParamsTmaA) {
    let warps_n = BN / TC6_WARP_N;
    let ring = Ring::new();
    let tid = thread_idx().x;
    if tid == 0 {
        let mut s = 0;
        while s < S {
            // SAFETY: 8-byte aligned barrier slots inside the dynamic shared memory
            // (the launch's bytes count them), used by no thread before the barrier below.
            unsafe {
                mbarrier::init(ring.full(s), 1 + PRODUCER_WARPS);
                mbarrier::init(ring.empty(s), CONSUMER_WARPS);
            }
            s += 1;
        }
        mbarrier::fence_init();
    }
    sync_threads();
    let (row0, col0) = block_origin_n(BN);
    let ktiles = p.k.div_ceil(TC6_BK_TF32);
    let interior = row0 + TC_BM <= p.m && col0 + BN <= p.n;
    let (c, ldc) = (p.c.ptr, p.c.ld);
    let staged = interior && ldc % 4 == 0 && c as usize % 16 == 0;
    if tid >= TC6T_TF32_THREADS {
        // SAFETY: the whole warpgroup, converged; ptxas fits its code in the budget
        // (ptxas plans for the budget).
        unsafe { wgmma::set_max_registers::<TC6W_PRODUCER_REGS, false>() };
        // SAFETY: the warpgroup, after the initialisation; the kernel's contract.
        unsafe { produce::<VAR>(&p, ring, ktiles, row0, col0) };
        if staged {
            // The epilogue's barrier (block-wide, the multiplying warps wait there).
            sync_threads();
        }
        return;
    }
    // SAFETY: both multiplying warpgroups, converged.
    unsafe { wgmma::set_max_registers::<TC6W_CONSUMER_REGS, true>() };
    let (w, lane) = (warp_id(), lane_id());
    let (wm, wn) = (w / warps_n * TC_WARP_M, w % warps_n * TC6_WARP_N);
    let mut acc = [[[0f32; 4]; NT]; 4];
    // SAFETY (all three closures): the stage landed and was published to this warp by
    // its full barrier; the whole warp calls them; barriers initialised.
    let frags = |st: Smem<u8>, kk: u32| unsafe {
        (a_frags(st, wm, kk, false), b_frags::<TF32>(st, wn, kk))
    };
    let wait_full = |kt: u32| unsafe { mbarrier::wait(ring.full(kt % S), (kt / S) & 1) };
    let release = |kt: u32| {
        simt_std::warp::sync();
        if lane == 0 {
            // SAFETY: an initialised barrier expecting one arrival per multiplying warp.
            unsafe { mbarrier::arrive(ring.empty(kt % S)) };
        }
    };
    // As stage 6t: fragments one k step ahead of the `mma`s, across K steps too.
    wait_full(0);
    let mut cur = frags(ring.stage(0), 0);
    let mut kt = 0;
    while kt < ktiles {
        let st = ring.stage(kt % S);
        unroll!(4, KK => {
            if (KK as u32) + 1 < KSTEPS {
                let nxt = frags(st, KK as u32 + 1);
                // SAFETY: the whole warp is here, converged.
                unsafe { mma_tile::<TF32>(&mut acc, &cur.0, &cur.1) };
                cur = nxt;
            }
        });
        release(kt);
        let last = cur;
        if kt + 1 < ktiles {
            wait_full(kt + 1);
            cur = frags(ring.stage((kt + 1) % S), 0);
        }
        // SAFETY: as above.
        unsafe { mma_tile::<TF32>(&mut acc, &last.0, &last.1) };
        kt += 1;
    }
    if staged {
        // Every stage was waited for (the A copies landed, the producers' stores were
        // published); once all warps have read their last fragments the stages may hold
        // the staging tiles. The whole block takes this branch (`staged` is the
        // block's), the producers after their last stage.
        sync_threads();
        // SAFETY: the tile is inside C, rows 16-byte aligned (checked); the stages are
        // free (above); the staging tiles fit in them (the module's assertion).
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
    /// `C = epilogue(A · B)` on tensor cores with `mma.sync.m16n8k8` in TF32, f32
    /// accumulation and output: stage 6t's multiplying warps, A by TMA (rounded by
    /// its TF32 map), B read where it lies and transposed into the stages by a producer
    /// warpgroup.
    ///
    /// # Safety
    /// `p.a_map` is a TF32 tensor map (in global memory) of the f32 matrix `A: m x k`
    /// with boxes of 128 rows x 32 columns, 128-byte swizzled; `p.b` is readable at
    /// `b[i*ld + j]` for `i < k, j < n` and not written during the kernel; `p.c` is an
    /// f32 matrix writable at `c[i*ld + j]` for `i < m, j < n` that does not overlap A
    /// or B; B and C have fewer than 2^32 elements.
    ///
    /// # Parameters
    /// One [`MatmulParamsTmaA`]: the map of A, `b`: `[k, n]` row-major f32 (any
    /// stride and alignment), `c`: `[m, n]` row-major f32, the sizes, and `epilogue:
    /// Relu` to fuse the ReLU.
    ///
    /// # Tiling
    /// Block tile 128x256, K steps of 32, 4 stages of 48 KiB (A `[128][32]` by TMA,
    /// `Bᵀ` `[256][32]` by the producers, both 128-byte swizzled); warp tile 64x64 =
    /// 4x8 `mma.m16n8k8`, both operands by `ldmatrix.x4`.
    ///
    /// # Thread Mapping
    /// 384 threads: warps 0-7 multiply (warp `w` at rows `64·(w/4)`, columns
    /// `64·(w%4)`), warps 8-11 produce (16 vectors of B a thread per K step; thread 256
    /// also issues A's copies). `grid = (ceil(n/256), ceil(m/128))` in grouped order,
    /// one block per SM.
    #[launch(threads = TC6W_THREADS, min_blocks = 1, shared = TC6T_TF32_SMEM_BYTES, target = "sm_90a")]
    pub unsafe fn matmul_mma_ws_tf32(p: MatmulParamsTmaA) {
        // SAFETY: forwarded.
        unsafe { body::<0>(p) }
    }
}

kernel! {
    /// Trial variant 1: no L2 prefetch.
    ///
    /// # Safety
    /// As [`matmul_mma_ws_tf32()`].
    #[launch(threads = TC6W_THREADS, min_blocks = 1, shared = TC6T_TF32_SMEM_BYTES, target = "sm_90a")]
    pub unsafe fn matmul_mma_ws_tf32_v1(p: MatmulParamsTmaA) {
        // SAFETY: forwarded.
        unsafe { body::<1>(p) }
    }
}

kernel! {
    /// Trial variant 2: B's loads bypass L1.
    ///
    /// # Safety
    /// As [`matmul_mma_ws_tf32()`].
    #[launch(threads = TC6W_THREADS, min_blocks = 1, shared = TC6T_TF32_SMEM_BYTES, target = "sm_90a")]
    pub unsafe fn matmul_mma_ws_tf32_v2(p: MatmulParamsTmaA) {
        // SAFETY: forwarded.
        unsafe { body::<2>(p) }
    }
}

kernel! {
    /// Trial variant 3 (diagnostic, wrong results): no B stores at all.
    ///
    /// # Safety
    /// As [`matmul_mma_ws_tf32()`].
    #[launch(threads = TC6W_THREADS, min_blocks = 1, shared = TC6T_TF32_SMEM_BYTES, target = "sm_90a")]
    pub unsafe fn matmul_mma_ws_tf32_v3(p: MatmulParamsTmaA) {
        // SAFETY: forwarded.
        unsafe { body::<3>(p) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every store step of every batch of a producer warp meets 32 different banks, and
    /// a K step's 4 warps x 16 vectors x 4 elements cover `Bᵀ`'s tile exactly once.
    #[test]
    fn transposed_stores_are_conflict_free_and_cover_the_tile() {
        let mut seen = vec![0u8; (BN * 32) as usize];
        for pw in 0..PRODUCER_WARPS {
            for b in 0..BATCHES {
                for i in 0..BATCH {
                    for j in 0..4 {
                        let mut banks = [false; 32];
                        for lane in 0..32 {
                            let (r, c) = producer_unit(pw, lane, b);
                            let n = c + 8 * i + j;
                            let off = b_store_offset(n, r);
                            let bank = ((off / 4) % 32) as usize;
                            assert!(!banks[bank], "warp {pw} batch {b} vector {i} element {j}: lane {lane} meets bank {bank} twice");
                            banks[bank] = true;
                            seen[(n * 32 + r) as usize] += 1;
                            // The XOR form the kernel addresses with.
                            let (r0, nl) = producer_unit(pw, lane, 0);
                            let at = b_store_offset(nl, r0) ^ ((j ^ (4 * b)) << 4);
                            assert_eq!(at + (8 * i + j) * A_ROW, off);
                        }
                    }
                }
            }
        }
        assert!(seen.iter().all(|&x| x == 1));
    }
}
