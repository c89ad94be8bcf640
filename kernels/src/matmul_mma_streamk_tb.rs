//! Matmul + ReLU, stage 6kb: stage 6k (TF32 `mma.sync`, stream-K tail) with `Bᵀ`
//! written under the product by a few **dedicated blocks** (sm_90a only).
//!
//! **Why.** A TF32 `mma` wants both operands K-major and `ldmatrix` cannot
//! transpose 32-bit elements, so stages 6t and 6k read `Bᵀ`, which the host makes
//! with a rounding copy first: 33 us of 0.55 ms at 4096^3 on the H200, during which
//! the tensor cores idle, while the product itself keeps DRAM only 19% busy.
//! Stage 6kt (session 21, reverted) had three extra warps in every block transpose
//! B: the multiplying warps, squeezed to 232 registers by `setmaxnreg`, spilled, and
//! it lost 5-16%.
//!
//! **Blocks, not warps.** Here blocks `0 .. T` of the cooperative grid transpose
//! (`T` = [`tc6kb_blocks`](crate::config::tc6kb_blocks), 4 on the H100 and H200)
//! and the other blocks run stage 6k's code with two changes, on `grid - T` blocks
//! (128: the 512 tiles of 4096^3 are then four whole waves). The multiplying blocks walk
//! the tiles strip by strip (a strip: the `TC6T_TF32_BN` columns of C one tile
//! wide, all tile-rows down), so the first wave needs only the first few strips of
//! `Bᵀ`. The host's copy makes those strips before the launch, at the whole GPU's
//! bandwidth (a quarter of the copy at 4096^3: 9 us instead of 33); the transposing
//! blocks make the others, strip by strip, while the first waves multiply. One wave
//! takes 130 us at 4096^3 and needs 16 MiB of new `Bᵀ` (4 strips): four SMs keep up
//! with that, two do not (the product then took 1.5x as long, H200). Before the
//! first copy of a segment whose strip is not the host's, the copying thread waits
//! for the strip's flag ([`simt_std::flag`]). The price: `T` SMs that do not
//! multiply (3% of 132), against three quarters of the copy, no longer run alone:
//! the trade pays where m is small enough (the copy's share of the product shrinks
//! as m grows) and each wave spans few strips (the host's `plan_6k` says which).
//!
//! **An item** is one K step of one strip: a box of B of 32 k-rows x 256 columns
//! (32 KiB). The TMA copies it in through a TF32 tensor map (rounded to nearest even,
//! as the host's copy rounds; zeros past `k` and `n`), unswizzled, [`TC6KB_DEPTH`]
//! items in flight per block. Every warp of the block takes 32 of its columns: lane
//! `l` reads column `l` down the 32 k-rows (the warp reads 32 consecutive words per
//! row, one per bank), writes it as row `l` of the warp's transposed part (16-byte
//! chunks at the 128-byte swizzle, conflict-free too), and one TMA store puts that
//! 32 x 32 part into `Bᵀ` (clipped at `n` and `k`). The blocks take items round-robin,
//! strip by strip. A warp releases its parts of a strip once, after its last one: it
//! waits for its stores, then adds how many it made to the strip's acquire-release
//! count; the warp that completes the count resets it to zero (for the next launch)
//! and publishes the strip's flag.
//!
//! **What a transposing SM does** (H200, 2026-11-25, session 22): about 35-50 GB/s
//! of B in and as much of `Bᵀ` out, whatever the boxes (32x32 or whole strips) and
//! however many are in flight (two or four per warp); with its loads alone, 48 GB/s.
//! Hence four of them for a product whose waves each need 4 new strips (16 MiB per
//! 130 us at 4096^3). (Earlier versions: docs/PERFORMANCE.md, session 22.)
//!
//! **Proxies.** The transposed box is written by ordinary shared-memory stores and
//! read by the TMA store: each lane fences (`fence.proxy.async.shared::cta`) before
//! the warp's store is issued. `Bᵀ` is written by TMA stores and read by TMA copies
//! in other blocks, with an ordinary flag between them: the storing thread waits for
//! its stores to complete and fences (`fence.proxy.async.global`) before its
//! release, and the copying thread fences after its acquire, before its copies.
//!
//! **Why this cannot deadlock.** Transposing blocks wait only for their own copies;
//! multiplying blocks wait for strips and for stage 6k's heads, which never wait for
//! them. The launch is cooperative: every block is resident.
use crate::config::{
    TC6KB_DEPTH, TC6KB_ITEM, TC6T_TF32_BN, TC6T_TF32_SMEM_BYTES, TC6T_TF32_STAGES,
    TC6T_TF32_STAGE_BYTES, TC6T_TF32_THREADS, TC6_BK_TF32,
};
use crate::matmul_mma_streamk::{body, Transposed};
use crate::matmul_wgmma::Ring;
use crate::params::MatmulParamsStreamKTb;
use simt_std::atomic::{atomic_add_acq_rel_u32, atomic_store_relaxed_u32};
use simt_std::flag::publish;
use simt_std::mbarrier;
use simt_std::memory::F32x4;
use simt_std::shared::Smem;
use simt_std::thread::{block_idx, grid_dim, sync_threads, thread_idx};
use simt_std::tma::{self, fence_proxy_async, fence_proxy_async_global};
use simt_std::warp::{self, lane_id, warp_id};
use simt_std::{kernel, unroll};

const WARPS: u32 = TC6T_TF32_THREADS / 32;
/// Bytes of one item: a box of B, 32 k-rows of a whole strip.
const BOX_BYTES: u32 = TC6KB_ITEM * TC6T_TF32_BN * 4;
/// Bytes of one warp's transposed part of an item: 32 columns x 32 k.
const OUT_BYTES: u32 = TC6KB_ITEM * TC6KB_ITEM * 4;
const _: () = assert!(
    TC6KB_ITEM == TC6_BK_TF32
        && TC6T_TF32_BN == WARPS * TC6KB_ITEM
        && BOX_BYTES % 1024 == 0
        && OUT_BYTES % 1024 == 0
);

/// The smem stage 6t's ring would use, from its first 1024-byte boundary: the
/// transposing blocks' buffers (the 128-byte swizzle's period is 1024 bytes).
#[inline(always)]
fn base() -> Smem<u8> {
    Ring::<TC6T_TF32_STAGES, TC6T_TF32_STAGE_BYTES>::new().stage(0)
}

/// Buffer `d` (`< DEPTH`) for boxes of B.
#[inline(always)]
fn buf(d: u32) -> Smem<u8> {
    base().add((d * BOX_BYTES) as usize)
}

/// Warp `w`'s buffer for its transposed part.
#[inline(always)]
fn out(w: u32) -> Smem<u8> {
    base().add((TC6KB_DEPTH * BOX_BYTES + w * OUT_BYTES) as usize)
}

/// Buffer `d`'s barrier: `full` (its box landed) or not (every warp read it).
#[inline(always)]
fn bar(d: u32, full: bool) -> Smem<u64> {
    base()
        .add((TC6KB_DEPTH * BOX_BYTES + WARPS * OUT_BYTES) as usize)
        .cast::<u64>()
        .add((d + if full { 0 } else { TC6KB_DEPTH }) as usize)
}

/// A transposing block: its share of the items of strips `first_strip ..`.
///
/// # Safety
/// Blocks `0 .. q.blocks`, every thread; the kernel's contract.
#[inline(always)]
unsafe fn transpose(q: &MatmulParamsStreamKTb) {
    let sp = &q.sk;
    let (t, w, lane) = (thread_idx().x, warp_id(), lane_id());
    if t == 0 {
        let mut d = 0;
        while d < TC6KB_DEPTH {
            // SAFETY: 8-byte aligned slots inside the dynamic shared memory (the
            // assertion in config.rs), used by no thread before the barrier below.
            unsafe {
                mbarrier::init(bar(d, true), 1);
                mbarrier::init(bar(d, false), WARPS);
            }
            d += 1;
        }
        mbarrier::fence_init();
        // SAFETY: the host made the maps (64-byte aligned, in global memory).
        unsafe {
            tma::prefetch(q.b_src);
            tma::prefetch(q.bt_map);
        }
    }
    sync_threads();
    let ktiles = sp.mm.k.div_ceil(TC6_BK_TF32);
    let strips = sp.mm.n.div_ceil(TC6T_TF32_BN);
    // Counted in warps' parts: WARPS per item.
    let per_strip = ktiles * WARPS;
    let items = (strips - q.first_strip) * ktiles;
    let strip_flags = sp.flags.wrapping_add(grid_dim().x as usize);
    let stride = q.blocks;
    // Item i: K step i % ktiles of strip first_strip + i / ktiles.
    let at = |item: u32| (q.first_strip + item / ktiles, item % ktiles);
    // Thread 0 copies item `item` into buffer d.
    let issue = |item: u32, d: u32| {
        let (s, kt) = at(item);
        // SAFETY: an initialised barrier of buffer d, which no warp reads any more
        // (the caller); the box is BOX_BYTES, announced (columns past n arrive as
        // zeros, and count).
        unsafe {
            mbarrier::arrive_expect_tx(bar(d, true), BOX_BYTES);
            tma::load_2d(
                buf(d),
                q.b_src,
                (s * TC6T_TF32_BN) as i32,
                (kt * TC6KB_ITEM) as i32,
                bar(d, true),
            );
        }
    };
    let first = block_idx().x;
    if t == 0 {
        let mut d = 0;
        while d < TC6KB_DEPTH {
            if first + d * stride < items {
                issue(first + d * stride, d);
            }
            d += 1;
        }
    }
    let mine = out(w);
    // This warp's parts of the current strip stored since its last release.
    let mut batch = 0;
    let mut item = first;
    let mut j = 0;
    while item < items {
        let (d, phase) = (j % TC6KB_DEPTH, (j / TC6KB_DEPTH) & 1);
        // SAFETY: buffer d's full barrier, its (j / DEPTH)-th phase: item j's box.
        unsafe { mbarrier::wait(bar(d, true), phase) };
        let (s, kt) = at(item);
        let src = buf(d).cast::<f32>();
        let mut v = [0f32; TC6KB_ITEM as usize];
        unroll!(8, V => {
            unroll!(4, E => {
                let k = (4 * V + E) as u32;
                // SAFETY: inside the landed box (32 rows of TC6T_TF32_BN floats): row
                // k, this warp's column w·32 + lane; the warp reads 32 consecutive
                // words, one per bank.
                v[4 * V + E] = unsafe { src.add((k * TC6T_TF32_BN + w * TC6KB_ITEM + lane) as usize).read() };
            });
        });
        // This lane's reads of buffer d, then the warp's release of it.
        fence_proxy_async();
        warp::sync();
        if lane == 0 {
            // SAFETY: buffer d's empty barrier, one arrival per warp per phase.
            unsafe { mbarrier::arrive(bar(d, false)) };
            // The previous item's store has read this warp's transposed buffer.
            tma::store_wait_read::<0>();
        }
        warp::sync();
        unroll!(8, V => {
            // SAFETY: row `lane` of the warp's transposed part, chunk V at its
            // swizzled place (the 128-byte swizzle of the store's map): 16-byte
            // aligned, in the warp's own buffer, which no store reads any more (the
            // wait above).
            unsafe {
                mine.cast::<f32>()
                    .add((lane * TC6KB_ITEM + ((V as u32) ^ (lane % 8)) * 4) as usize)
                    .store4(F32x4::from_array([v[4 * V], v[4 * V + 1], v[4 * V + 2], v[4 * V + 3]]))
            };
        });
        // This lane's writes of the transposed part before the store reads them.
        fence_proxy_async();
        warp::sync();
        batch += 1;
        let next = item + stride;
        let last_of_strip = next >= items || at(next).0 != s;
        if lane == 0 {
            // SAFETY: the map of Bᵀ (prefetched), a 1024-byte aligned buffer of the
            // box's size, written and fenced above; rows past n and columns past k
            // are clipped by the map.
            unsafe {
                tma::store_2d(
                    mine,
                    q.bt_map,
                    (kt * TC6KB_ITEM) as i32,
                    (s * TC6T_TF32_BN + w * TC6KB_ITEM) as i32,
                )
            };
            tma::store_commit();
            if last_of_strip {
                // The warp's stores of this strip done, then released with the count.
                tma::store_wait::<0>();
                fence_proxy_async_global();
                let count = q.counts.wrapping_add(s as usize);
                // SAFETY: count s exists (one per strip) and is accessed atomically
                // only; this thread's stores completed above.
                let done = unsafe { atomic_add_acq_rel_u32(count, batch) } + batch;
                if done == per_strip {
                    // The strip's last batch: every batch's stores are acquired (the
                    // count's acquire-release chain). Reset the count for the next
                    // launch, then publish the strip.
                    // SAFETY: no other part of strip s is left to touch the count;
                    // the strip's flag exists and only this thread publishes it.
                    unsafe {
                        atomic_store_relaxed_u32(count, 0);
                        publish(strip_flags.add(s as usize), sp.epoch);
                    }
                }
            }
        }
        if last_of_strip {
            batch = 0;
        }
        let ahead = item + TC6KB_DEPTH * stride;
        if t == 0 && ahead < items {
            // Buffer d again, once every warp has read item j from it.
            // SAFETY: buffer d's empty barrier, its (j / DEPTH)-th phase.
            unsafe { mbarrier::wait(bar(d, false), phase) };
            issue(ahead, d);
        }
        warp::sync();
        item = next;
        j += 1;
    }
    if lane == 0 {
        // Nothing left in flight that reads this block's shared memory.
        tma::store_wait::<0>();
    }
}

kernel! {
    /// `C = epilogue(A · B)` in TF32 on tensor cores with `mma.sync`, as
    /// [`matmul_mma_streamk_tf32()`](crate::matmul_mma_streamk::matmul_mma_streamk_tf32)
    /// on blocks `q.blocks ..`, while blocks `0 .. q.blocks` write the strips of `Bᵀ`
    /// from `q.first_strip` on (module docs).
    ///
    /// # Safety
    /// `q.sk` as for `matmul_mma_streamk_tf32` with the grid counted from block
    /// `q.blocks` on (`0 < q.blocks <` the grid), and with `q.sk.flags` holding one
    /// flag per block of the grid, then one per strip of `TC6T_TF32_BN` columns of
    /// C, none holding `q.sk.epoch`; `q.first_strip` at most the number of strips;
    /// `q.b_src` a TF32 map of B (`k x n`, boxes of 32 rows x 256 columns,
    /// unswizzled); `q.bt_map` a map of the memory
    /// `q.sk.mm.b_map` describes (`Bᵀ`, `n x k`, rows of whole 16-byte chunks; boxes
    /// of 32 x 32, 128-byte swizzled), holding `Bᵀ` rounded to TF32 in its strips
    /// before `q.first_strip` and read by no one else during the launch; `q.counts`
    /// one zero per strip, accessed by no other launch at the same time; the launch
    /// is cooperative.
    ///
    /// # Parameters
    /// One [`MatmulParamsStreamKTb`]: stage 6k's parameters, the maps of B and `Bᵀ`,
    /// the per-strip counts, the transposing blocks, the first strip they write.
    ///
    /// # Tiling
    /// As stage 6k: block tile 128x256, K steps of 32, 4 stages of 48 KiB; warp tile
    /// 64x64 = 4x8 `mma.m16n8k8`; tiles in column-major order. Transposition items:
    /// 32 k x 256 columns of B (a strip's K step), `TC6KB_DEPTH` 32 KiB buffers per
    /// block, a 4 KiB transposed part per warp.
    ///
    /// # Thread Mapping
    /// 256 threads = 8 warps. Multiplying blocks: warp `w` at rows `64·(w/4)`,
    /// columns `64·(w%4)` of each tile; warp 0's first thread also issues the
    /// copies. Transposing block `b`: items `b`, then every `q.blocks`-th, its first
    /// thread copying them in, warp `w` transposing columns `32·w ..` of each. A 1-D
    /// grid of at most one block per SM.
    #[launch(threads = TC6T_TF32_THREADS, min_blocks = 1, shared = TC6T_TF32_SMEM_BYTES, target = "sm_90a", cooperative = true)]
    pub unsafe fn matmul_mma_streamk_tb_tf32(q: MatmulParamsStreamKTb) {
        if block_idx().x < q.blocks {
            // SAFETY: a transposing block, every thread; forwarded.
            unsafe { transpose(&q) };
            return;
        }
        let tb = Transposed {
            blocks: q.blocks,
            first_strip: q.first_strip,
            strip_flags: q.sk.flags.wrapping_add(grid_dim().x as usize),
        };
        // SAFETY: a multiplying block; forwarded.
        unsafe { body::<true>(q.sk, tb) }
    }
}
