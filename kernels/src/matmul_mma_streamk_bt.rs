//! Matmul + ReLU, stage 6kt: stage 6k (TF32 `mma.sync`, stream-K tail) with `Bᵀ`
//! written by the kernel itself, under the product (sm_90a only).
//!
//! **Why.** A TF32 `mma` wants both operands K-major, and `ldmatrix` cannot
//! transpose 32-bit elements, so stages 6t and 6k read `Bᵀ`, which the host makes
//! with a rounding copy before the product: 33 us of 0.55 ms at 4096^3 on the H200,
//! in which the tensor cores idle. Sessions 18 and 20 moved the transposition into
//! the kernel *per tile* and lost: every tile-row of C transposes its own copy of a
//! B panel, 32 times the work of one copy, through the multiplying warps' registers
//! or shared memory (docs/PERFORMANCE.md).
//!
//! **Once, K step by K step.** Here the blocks transpose B *once*, cooperatively,
//! into the same global `Bᵀ` the copy would write, while they multiply. The work
//! is cut into *items*: a box of B of 32 k-rows x 32 columns, one K step of one
//! column block. Items are ordered K step first (all of K step 0's, then K step
//! 1's, …) and dealt round-robin to the three transposing warps of every block, so
//! `Bᵀ`'s K steps become ready in order, at about 3 per microsecond on the H200
//! (396 warps, two boxes of 4 KiB in flight each), while the multiplying warps
//! consume about one per microsecond: after the first K step they never wait.
//! When a K step's last item is written its flag is published
//! ([`simt_std::flag`]; the count of finished items is an acquire-release atomic,
//! and the item that completes it resets it to zero for the next launch), and the
//! warp that issues the ring's copies waits for that flag before its first copy of
//! the K step.
//!
//! **An item.** The TMA copies the box in through a TF32 tensor map (rounded to
//! nearest even, as the copy rounds; zeros past `k` and `n`), 128-byte swizzled:
//! lane `l` then reads column `l` down the 32 k-rows, 32 words in 32 distinct banks
//! per row across the warp (chunk `l / 4` of row `k` lies at chunk `l / 4 ^ k % 8`),
//! and writes them as one 128-byte row segment of `Bᵀ` (8 stores of 16 bytes).
//!
//! **Warp roles** (384 threads, three warpgroups, `setmaxnreg`): warps 0-7 multiply
//! (stage 6k's 64x64 warp tiles, 232 registers), warp 8 issues the ring's TMA
//! copies (A and `Bᵀ`, one K step per stage), warps 9-11 transpose (40 registers
//! for the whole producer warpgroup). Stage 6k's block barriers around its partial
//! tiles become per-warp flags: warp `w` of the tail's block reads only what warp `w`
//! of the head's block wrote.
//!
//! **Proxies.** `Bᵀ` is written by ordinary stores and read by TMA copies in other
//! blocks: each transposing lane fences its stores to the asynchronous proxy
//! (`fence.proxy.async.global`) before the release, and the copying thread fences
//! after its acquire, before its first copy of that K step.
//!
//! **Why this cannot deadlock.** Transposing warps wait only for their own copies.
//! The copying warp waits for K-step flags (transposers) and for the multiplying
//! warps to release stages; those wait for the copies, and (a tail) for block `b -
//! 1`'s head, which that block's warps publish before they wait for anything. The
//! launch is cooperative: every block is resident.
//!
//! The host sends what stage 6k takes, with B's rows 16-byte aligned (TMA).
use crate::config::{
    TC6KT_CONSUMER_REGS, TC6KT_ITEM, TC6KT_PRODUCER_REGS, TC6KT_SMEM_BYTES, TC6KT_THREADS,
    TC6KT_TRANSPOSERS, TC6T_TF32_BN, TC6T_TF32_STAGES, TC6T_TF32_STAGE_BYTES, TC6T_TF32_THREADS,
    TC6_BK_TF32, TC6_WARP_N, TC_BM, TC_WARP_M,
};
use crate::matmul_mma::write_c;
use crate::matmul_mma_pipelined::{A_BYTES, GROUP_M, NT};
use crate::matmul_mma_streamk::{k_range, slot_at, Plan, SLOT_VEC};
use crate::matmul_mma_tma::Ring;
use crate::params::MatmulParamsStreamKBt;
use simt_std::atomic::{atomic_add_acq_rel_u32, atomic_store_relaxed_u32};
use simt_std::flag::{publish, wait_eq};
use simt_std::mbarrier;
use simt_std::memory::{compiler_barrier, load4, store4, F32x4};
use simt_std::shared::Smem;
use simt_std::thread::{block_idx, grid_dim, grouped_tile, sync_threads, thread_idx};
use simt_std::tma::{self, fence_proxy_async, fence_proxy_async_global};
use simt_std::warp::{self, lane_id, warp_id};
use simt_std::wgmma::set_max_registers;
use simt_std::{kernel, unroll};

const BN: u32 = TC6T_TF32_BN;
const S: u32 = TC6T_TF32_STAGES;
const SB: u32 = TC6T_TF32_STAGE_BYTES;
/// Multiplying warps.
const CWARPS: u32 = TC6T_TF32_THREADS / 32;
/// Bytes of one item's box.
const ITEM_BYTES: u32 = TC6KT_ITEM * TC6KT_ITEM * 4;
const _: () = assert!(
    TC6KT_ITEM == TC6_BK_TF32
        && TC6KT_THREADS == (CWARPS + 1 + TC6KT_TRANSPOSERS) * 32
        && (S * SB) % 1024 == 0
        && ITEM_BYTES % 1024 == 0
);

/// Transposing warp `tl`'s item buffer `slot` (0 or 1): after the ring's stages and
/// the KiB that holds their barriers, 1024-byte aligned (the swizzle's period).
#[inline(always)]
fn item_buf(ring: Ring<S, SB>, tl: u32, slot: u32) -> Smem<u8> {
    ring.stage(S)
        .add((1024 + (tl * 2 + slot) * ITEM_BYTES) as usize)
}

/// The barrier item buffer `slot` of transposing warp `tl` is filled on.
#[inline(always)]
fn item_bar(ring: Ring<S, SB>, tl: u32, slot: u32) -> Smem<u64> {
    ring.stage(S)
        .add((1024 + TC6KT_TRANSPOSERS * 2 * ITEM_BYTES) as usize)
        .cast::<u64>()
        .add((tl * 2 + slot) as usize)
}

/// Warp 8: issues every ring step of the block's segments, in the multiplying warps'
/// order, each after the stage's release and its K step's flag.
///
/// # Safety
/// Warp 8, converged, barriers initialised; the kernel's contract.
#[inline(always)]
unsafe fn produce(
    q: &MatmulParamsStreamKBt,
    ring: Ring<S, SB>,
    plan: &Plan,
    origin: impl Fn(u32) -> (u32, u32),
) {
    let (sp, lane) = (&q.sk, lane_id());
    let p = &sp.mm;
    let k_flags = sp.flags.wrapping_add((grid_dim().x * CWARPS) as usize);
    // K steps below `ready` were seen written (their flags acquired, then fenced).
    let mut ready = 0;
    let mut g = 0;
    let mut i = 0;
    while i < plan.segments {
        let (tile, kt0, kt1) = plan.segment(i);
        let (row0, col0) = origin(tile);
        let mut kt = kt0;
        while kt < kt1 {
            let (s, round) = (g % S, g / S);
            if round > 0 {
                // SAFETY: an initialised barrier; its phase completes once every
                // multiplying warp has read ring step g - S.
                unsafe { mbarrier::wait(ring.empty(s), (round - 1) & 1) };
            }
            if lane == 0 {
                if kt >= ready {
                    // SAFETY: flag kt exists (one per K step after the warps'); the
                    // transposing warps publish it without waiting on this block.
                    unsafe { wait_eq(k_flags.add(kt as usize), sp.epoch) };
                    if kt == ready {
                        ready = kt + 1;
                    }
                    // The acquired stores of Bᵀ, before this thread's copies.
                    fence_proxy_async_global();
                }
                let (st, full) = (ring.stage(s), ring.full(s));
                // SAFETY: initialised barriers; the destinations are 1024-byte aligned
                // boxes inside stage s, which no warp reads any more (the wait above);
                // the announced bytes are exactly the boxes'.
                unsafe {
                    mbarrier::arrive_expect_tx(full, SB);
                    let k0 = (kt * TC6_BK_TF32) as i32;
                    tma::load_2d(st, p.a_map, k0, row0 as i32, full);
                    tma::load_2d(st.add(A_BYTES as usize), p.b_map, k0, col0 as i32, full);
                }
            }
            warp::sync();
            g += 1;
            kt += 1;
        }
        i += 1;
    }
}

/// Warps 9-11: transpose this block's share of the items, two boxes in flight.
///
/// # Safety
/// A transposing warp, converged, barriers initialised; the kernel's contract.
#[inline(always)]
unsafe fn transpose(q: &MatmulParamsStreamKBt, ring: Ring<S, SB>, ktiles: u32) {
    let (sp, lane) = (&q.sk, lane_id());
    let n = sp.mm.n;
    let tl = warp_id() - CWARPS - 1;
    let k_flags = sp.flags.wrapping_add((grid_dim().x * CWARPS) as usize);
    let per_k = n.div_ceil(TC6KT_ITEM);
    let items = ktiles * per_k;
    let stride = grid_dim().x * TC6KT_TRANSPOSERS;
    let issue = |item: u32, slot: u32| {
        if lane == 0 {
            let bar = item_bar(ring, tl, slot);
            // SAFETY: an initialised barrier of this warp's buffer `slot`, which no
            // lane reads any more (the caller); the box is ITEM_BYTES, announced.
            unsafe {
                mbarrier::arrive_expect_tx(bar, ITEM_BYTES);
                let (kt, nb) = (item / per_k, item % per_k);
                tma::load_2d(
                    item_buf(ring, tl, slot),
                    q.b_src,
                    (nb * TC6KT_ITEM) as i32,
                    (kt * TC6KT_ITEM) as i32,
                    bar,
                );
            }
        }
        warp::sync();
    };
    let mut item = block_idx().x * TC6KT_TRANSPOSERS + tl;
    if item < items {
        issue(item, 0);
    }
    let mut j = 0;
    while item < items {
        let next = item + stride;
        if next < items {
            // Into the other buffer, read to the end one item ago (fenced, synced).
            issue(next, (j + 1) % 2);
        }
        // SAFETY: this warp's barrier, its (j / 2)-th phase: item j's box.
        unsafe { mbarrier::wait(item_bar(ring, tl, j % 2), (j / 2) & 1) };
        let (kt, nb) = (item / per_k, item % per_k);
        let col = nb * TC6KT_ITEM + lane;
        if col < n {
            let buf = item_buf(ring, tl, j % 2).cast::<f32>();
            let row =
                q.bt.wrapping_add(col as usize * q.ldbt as usize + (kt * TC6KT_ITEM) as usize);
            unroll!(8, V => {
                let mut v = [0f32; 4];
                unroll!(4, E => {
                    let k = (4 * V + E) as u32;
                    // SAFETY: inside the landed box: row k, 16-byte chunk lane / 4 at
                    // its swizzled place, word lane % 4.
                    v[E] = unsafe { buf.add((k * 32 + ((lane / 4) ^ (k % 8)) * 4 + lane % 4) as usize).read() };
                });
                // Bᵀ's row has ldbt >= k floats (a multiple of 4): the vectors
                // past it are not stored (the map of Bᵀ stops at k anyway).
                if q.ldbt > kt * TC6KT_ITEM + (4 * V) as u32 {
                    // SAFETY: inside row `col` of Bᵀ (n rows of ldbt floats), 16-byte
                    // aligned (the buffer is, ldbt and the offset are multiples of 4).
                    unsafe { store4(row.add(4 * V), F32x4::from_array(v)) };
                }
            });
        }
        // This lane's stores before the release below, for the copies that read them
        // (asynchronous proxy); this lane's reads of the buffer before its next copy.
        fence_proxy_async_global();
        fence_proxy_async();
        warp::sync();
        if lane == 0 {
            let count = q.counts.wrapping_add(kt as usize);
            // SAFETY: count kt exists (one per K step), accessed atomically only; the
            // warp's stores reached the barrier above first, so they are released.
            let done = unsafe { atomic_add_acq_rel_u32(count, 1) } + 1;
            if done == per_k {
                // The last item of K step kt: every item's stores are acquired (the
                // counts' acquire-release chain); reset the count for the next launch
                // and publish the K step.
                // SAFETY: no other item of K step kt is left to touch the count; flag
                // kt exists and only this thread publishes it.
                unsafe {
                    atomic_store_relaxed_u32(count, 0);
                    publish(k_flags.add(kt as usize), sp.epoch);
                }
            }
        }
        warp::sync();
        item = next;
        j += 1;
    }
}

/// The kernel.
///
/// # Safety
/// As [`matmul_mma_streamk_bt_tf32()`].
#[inline(always)]
unsafe fn body(q: MatmulParamsStreamKBt) {
    let sp = q.sk;
    let p = sp.mm;
    let ring = Ring::<S, SB>::new();
    let t = thread_idx().x;
    if t == 0 {
        let mut s = 0;
        while s < S {
            // SAFETY: 8-byte aligned barrier slots inside the dynamic shared memory
            // (the launch's bytes count them), used by no thread before the barrier below.
            unsafe {
                mbarrier::init(ring.full(s), 1);
                mbarrier::init(ring.empty(s), CWARPS);
            }
            s += 1;
        }
        let mut s = 0;
        while s < 2 * TC6KT_TRANSPOSERS {
            // SAFETY: as above.
            unsafe { mbarrier::init(item_bar(ring, s / 2, s % 2), 1) };
            s += 1;
        }
        mbarrier::fence_init();
        // SAFETY: the host made the maps (64-byte aligned, in global memory).
        unsafe {
            tma::prefetch(p.a_map);
            tma::prefetch(p.b_map);
            tma::prefetch(q.b_src);
        }
    }
    sync_threads();
    let (w, lane) = (warp_id(), lane_id());
    let ktiles = p.k.div_ceil(TC6_BK_TF32);
    let (b, grid) = (block_idx().x, grid_dim().x);
    let plan = Plan::new(&sp, ktiles, b, grid);
    let (tiles_m, tiles_n) = (p.m.div_ceil(TC_BM), p.n.div_ceil(BN));
    let origin = |tile: u32| {
        let (pm, pn) = grouped_tile(tile, tiles_m, tiles_n, GROUP_M);
        (pm * TC_BM, pn * BN)
    };
    if w >= CWARPS {
        // SAFETY: the whole producer warpgroup (warps 8-11), converged; its code
        // below fits in 40 registers (ptxas plans for it).
        unsafe { set_max_registers::<TC6KT_PRODUCER_REGS, false>() };
        if w == CWARPS {
            // SAFETY: warp 8, converged; barriers initialised.
            unsafe { produce(&q, ring, &plan, origin) };
        } else {
            // SAFETY: warps 9-11, converged; barriers initialised.
            unsafe { transpose(&q, ring, ktiles) };
        }
        return;
    }
    // SAFETY: warpgroups 0 and 1, converged; the producer's decrease fills the pool
    // (128 · (168 - 40) = 256 · (232 - 168)).
    unsafe { set_max_registers::<TC6KT_CONSUMER_REGS, true>() };
    let warps_n = BN / TC6_WARP_N;
    let wtile = (w / warps_n * TC_WARP_M, w % warps_n * TC6_WARP_N);
    let (c, ldc) = (p.c.ptr, p.c.ld);
    let relu = p.epilogue as u32 != 0;
    let my_flag = |blk: u32| sp.flags.wrapping_add((blk * CWARPS + w) as usize);
    let mut g = 0;
    let mut i = 0;
    while i < plan.segments {
        let (tile, kt0, kt1) = plan.segment(i);
        let o = origin(tile);
        // SAFETY: every multiplying thread, same arguments; ring steps 0..g were
        // issued (warp 8) and released; kt0 < kt1 <= ktiles.
        let mut acc = unsafe { k_range::<false>(&p, ring, g, kt0, kt1, o.0, o.1, wtile) };
        g += kt1 - kt0;
        if kt0 == 0 && kt1 < ktiles {
            // A head: this warp's part of the partial into slot b, then its flag.
            let slot = slot_at(sp.partials, b, t);
            unroll!(4, MI => {
                unroll!(8, NJ => {
                    let j = MI * NT + NJ;
                    // SAFETY: slot b of the workspace, 16-byte aligned (stage 6k's layout).
                    unsafe { store4(slot.wrapping_add(j * SLOT_VEC), F32x4::from_array(acc[MI][NJ])) };
                });
            });
            warp::sync();
            if lane == 0 {
                // SAFETY: this warp's flag of block b; only it publishes it.
                unsafe { publish(my_flag(b), sp.epoch) };
            }
        } else {
            if kt0 > 0 {
                // A tail: warp w of block b - 1 (b > 0) wrote this warp's part of the
                // tile's first kt0 K steps.
                if lane == 0 {
                    // SAFETY: the flag exists; its block is resident (cooperative
                    // launch) and publishes it before it waits for anything.
                    unsafe { wait_eq(my_flag(b - 1), sp.epoch) };
                }
                warp::sync();
                let slot = slot_at(sp.partials, b - 1, t);
                unroll!(4, MI => {
                    unroll!(8, NJ => {
                        let j = MI * NT + NJ;
                        // SAFETY: slot b - 1, published before its flag, acquired above.
                        let v = unsafe { load4(slot.wrapping_add(j * SLOT_VEC)) }.to_array();
                        unroll!(4, E => { acc[MI][NJ][E] += v[E]; });
                        // One vector at a time: loaded all at once, 32 vectors
                        // beside the 128 accumulators spilled.
                        compiler_barrier();
                    });
                });
            }
            // SAFETY: the kernel's contract for C; the warp's part of the tile at `o`.
            unsafe {
                write_c(
                    &acc,
                    c,
                    p.m as usize,
                    p.n as usize,
                    ldc as usize,
                    (o.0 + wtile.0) as usize,
                    (o.1 + wtile.1) as usize,
                    lane,
                    relu,
                )
            };
        }
        i += 1;
    }
}

kernel! {
    /// `C = epilogue(A · B)` in TF32 on tensor cores with `mma.sync`, as
    /// [`matmul_mma_streamk_tf32()`](crate::matmul_mma_streamk::matmul_mma_streamk_tf32),
    /// `Bᵀ` written by the kernel from B (module docs).
    ///
    /// # Safety
    /// `q.sk` as for `matmul_mma_streamk_tf32`, with `q.sk.flags` holding `grid · 8 +
    /// ceil(k / 32)` flags none of which holds `q.sk.epoch`; `q.b_src` a TF32 map of B
    /// (`k x n`, boxes of 32 x 32, 128-byte swizzled); `q.bt` writable for `n` rows of
    /// `q.ldbt` floats (`ldbt >= k`, a multiple of 4, 16-byte aligned), the memory
    /// `q.sk.mm.b_map` describes, read by no one else during the launch; `q.counts`
    /// `ceil(k / 32)` zeros, accessed by no other launch at the same time; the launch
    /// is cooperative.
    ///
    /// # Parameters
    /// One [`MatmulParamsStreamKBt`]: stage 6k's parameters, B's map, `Bᵀ` and its
    /// row length, the per-K-step counts.
    ///
    /// # Tiling
    /// As stage 6k: block tile 128x256, K steps of 32, 4 stages of 48 KiB; warp tile
    /// 64x64 = 4x8 `mma.m16n8k8`. Transposition items: 32 k x 32 columns of B, two
    /// 4 KiB buffers per transposing warp.
    ///
    /// # Thread Mapping
    /// 384 threads = 12 warps: warps 0-7 multiply, warp `w` at rows `64·(w/4)`,
    /// columns `64·(w%4)` of each tile; warp 8 issues the ring's copies; warps 9-11
    /// transpose items `3·b + (w - 9)`, then every `3 · grid`-th. A 1-D grid of at
    /// most one block per SM.
    #[launch(threads = TC6KT_THREADS, min_blocks = 1, shared = TC6KT_SMEM_BYTES, target = "sm_90a", cooperative = true)]
    pub unsafe fn matmul_mma_streamk_bt_tf32(q: MatmulParamsStreamKBt) {
        // SAFETY: forwarded.
        unsafe { body(q) }
    }
}
