//! Matmul + ReLU, stage 6k: stage 6t's TF32 kernel with a **stream-K** tail
//! (sm_90a only).
//!
//! **Wave quantisation.** Stage 6t runs one block of 8 warps per SM, one 128x256
//! tile of C each. At 4096^3 that is 512 tiles on 132 SMs: three full waves, then a
//! fourth in which 116 SMs work and 16 wait, so the GPU spends 4 tile-times on 3.88
//! tile-times of work (3% idle); 8192^3 is 15.52 waves in 16 (3%). Smaller tiles do
//! not help: the last wave's fraction stays whatever `tiles % SMs` makes it.
//!
//! **Stream-K** (Osama, Merrill, Cecka, Garland, Owens, PPoPP 2023) cuts the work
//! finer than a tile: along K. One persistent block per SM; the tiles are counted in
//! [`grouped_tile`] order and split in two parts by [`streamk_split`]:
//! * the first `dp_tiles` (a whole number of waves) are **data-parallel**: block `b`
//!   takes tiles `b, b + grid, …` whole, as stage 6t would;
//! * the last `sk_tiles` (the partial wave plus one full wave, so that every block's
//!   share is at least one tile and a tile is split between at most two blocks) form
//!   one line of `sk_tiles · ceil(k / 32)` K steps ("iterations"), and block `b`
//!   takes iterations `[⌊b·I/grid⌋, ⌊(b+1)·I/grid⌋)` ([`sk_start`]): every block the
//!   same work to within one K step.
//!
//! A block's range cuts its tiles into *segments*: a **tail** (the last K steps of
//! the tile where the range starts, unless it starts a tile), whole tiles, and a
//! **head** (the first K steps of the tile where it ends, unless it ends one). As
//! every share is at least one tile, a tile is either whole in one block, or a head
//! in block `b - 1` and a tail in block `b`. A block writes at most one partial, its
//! head's, into its own slot of the workspace (`grid x` [`TC6K_PARTIAL_FLOATS`]
//! floats), and publishes its flag ([`simt_std::flag`]); the tail's block waits for
//! it, adds it and writes `epilogue(C)`. At 4096^3 on 132 SMs: 264 data-parallel
//! tiles (two waves) and 248 tiles as 31744 iterations, 240 or 241 per block.
//!
//! **The order keeps the blocks in step along K.** A block runs its whole tiles
//! first (the data-parallel ones, then its stream-K ones), then its head, then its
//! tail. Whole tiles and heads start at K step 0 at the same moment in every block,
//! so the blocks read the same slabs of A and `Bᵀ` at about the same time and share
//! them in L2, as stage 6t's waves do; the tails all start `-q mod kt` K steps ahead
//! of that (a share of `q` K steps, `kt` per tile), in step with each other. Walked
//! in range order, the blocks' K offsets were spread over the whole of K: on the
//! H200 the stream-K part then missed L2 (DRAM 50% busy against stage 6t's 17%) and
//! the kernel ran 8% slower than stage 6t at 4096^3 (docs/PERFORMANCE.md, session 21).
//!
//! **Why this cannot deadlock.** A block publishes its head before it waits for
//! anything (the tail comes last), and waits only for block `b - 1`'s head. The
//! launch is cooperative, so every block is resident.
//!
//! **The partial in fragment order.** Writer and reader of a slot are the same
//! thread of two blocks with the same warp layout, so the slot holds each thread's
//! 128 accumulators as 32 vectors of 16 bytes, vector `j` of all 256 threads
//! consecutive: every store and load is coalesced and no shuffle is needed.
//!
//! **The ring runs on.** The blocks keep one TMA/mbarrier ring (stage 6t's) for all
//! their segments: ring step `g` counts every K step the block issued, so stage `g %
//! S` and its parities stay consistent across tiles, and warp 0 primes a segment's
//! first stages while the other warps may still finish the previous one.
//!
//! The host sends only what stage 6t takes (TF32, A and `Bᵀ` as maps, compute
//! capability 9.0, f32 C), and only products with more tiles than the grid that are
//! not a whole number of waves, with fewer than 2^32 stream-K K steps; the others run
//! stage 6t itself, as does everything when `SIMT_STREAMK=0`. The grid is as many
//! blocks as the device holds at once, one per SM on the H100 and H200.
//!
//! Stage 6kb ([`crate::matmul_mma_streamk_tb`]) runs this code ([`body`] with `TB`)
//! on all but its transposing blocks, also for whole waves (`sk_tiles = 0`), with
//! the tiles in column-major order instead of grouped, and a wait for each strip of
//! `Bᵀ` its blocks write.
use crate::config::{
    TC6K_PARTIAL_FLOATS, TC6T_TF32_BN, TC6T_TF32_SMEM_BYTES, TC6T_TF32_STAGES,
    TC6T_TF32_STAGE_BYTES, TC6T_TF32_THREADS, TC6_BK_TF32, TC6_WARP_N, TC_BM, TC_WARP_M,
};
use crate::matmul_mma::write_c;
use crate::matmul_mma_pipelined::{a_frags, mma_tile, GROUP_M, KSTEPS, NT, TF32};
use crate::matmul_mma_tma::{b_frags, refill, Ring, TF32_REFILL_AT};
use crate::params::{MatmulParamsStreamK, MatmulParamsTma};
use simt_std::flag::{publish, wait_eq};
use simt_std::mbarrier;
use simt_std::memory::{load4, store4, F32x4};
use simt_std::shared::Smem;
use simt_std::thread::{block_idx, grid_dim, grouped_tile, sync_threads, thread_idx};
use simt_std::tma::{self, fence_proxy_async_global};
use simt_std::warp::{lane_id, warp_id};
use simt_std::{kernel, unroll};

const BN: u32 = TC6T_TF32_BN;
const S: u32 = TC6T_TF32_STAGES;
const SB: u32 = TC6T_TF32_STAGE_BYTES;
const THREADS: u32 = TC6T_TF32_THREADS;
const _: () = assert!(
    TC6K_PARTIAL_FLOATS == THREADS * 4 * NT as u32 * 4 && TC_BM == 2 * TC_WARP_M && NT == 8
);

type Acc = [[[f32; 4]; NT]; 4];

pub use crate::streamk::{sk_start, streamk_split};

/// K steps `kt0 .. kt1` (`kt0 < kt1`) of the tile at `(row0, col0)`, as the block's
/// ring steps `g0 ..`: warp 0 issues the copies (the first `S - 1` now, the others
/// as stage 6t does, after the first k8 step of the K step that frees their stage),
/// every warp multiplies its 64x64 part. Returns this thread's accumulators.
///
/// # Safety
/// Every thread of the block calls it with the same arguments, after the ring's
/// barriers were initialised; `kt1 <= ceil(k / 32)`; the block issued ring steps
/// `0 .. g0` before, and every warp has released them or will (warp 0's refills wait
/// for that: another warp may still be in the block's previous segment).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn k_range(
    p: &MatmulParamsTma,
    ring: Ring<S, SB>,
    g0: u32,
    kt0: u32,
    kt1: u32,
    row0: u32,
    col0: u32,
    (wm, wn): (u32, u32),
) -> Acc {
    let (w, lane) = (warp_id(), lane_id());
    let len = kt1 - kt0;
    if w == 0 {
        let mut j = 0;
        while j < S - 1 && j < len {
            // SAFETY: warp 0, converged; K step kt0 + j < kt1 exists; ring steps
            // before g0 + j were issued (earlier segments, the loop).
            unsafe { refill::<TF32, BN, S, SB>(p, ring, g0 + j, kt0 + j, row0, col0) };
            j += 1;
        }
    }
    // SAFETY (the three closures): the stage landed and was published to this warp
    // by its full barrier; the whole warp calls them; barriers initialised.
    let frags = |st: Smem<u8>, kk: u32| unsafe {
        (a_frags(st, wm, kk, false), b_frags::<TF32>(st, wn, kk))
    };
    let wait_full = |g: u32| unsafe { mbarrier::wait(ring.full(g % S), (g / S) & 1) };
    let release = |g: u32| {
        simt_std::warp::sync();
        if lane == 0 {
            // SAFETY: an initialised barrier expecting one arrival per warp.
            unsafe { mbarrier::arrive(ring.empty(g % S)) };
        }
    };
    let mut acc = [[[0f32; 4]; NT]; 4];
    wait_full(g0);
    let mut cur = frags(ring.stage(g0 % S), 0);
    let mut j = 0;
    while j < len {
        let g = g0 + j;
        let next = j + S - 1;
        let st = ring.stage(g % S);
        unroll!(4, KK => {
            if (KK as u32) + 1 < KSTEPS {
                let nxt = frags(st, KK as u32 + 1);
                // SAFETY: the whole warp is here, converged.
                unsafe { mma_tile::<TF32>(&mut acc, &cur.0, &cur.1) };
                cur = nxt;
                if TF32_REFILL_AT == KK as u32 + 1 && w == 0 && next < len {
                    // Into the stage ring step g - 1 used (its warps most likely
                    // released it by now; refill waits for the slowest).
                    // SAFETY: warp 0, converged; K step kt0 + next < kt1.
                    unsafe { refill::<TF32, BN, S, SB>(p, ring, g0 + next, kt0 + next, row0, col0) };
                }
            }
        });
        release(g);
        let last = cur;
        if j + 1 < len {
            wait_full(g + 1);
            cur = frags(ring.stage((g + 1) % S), 0);
        }
        // SAFETY: as above.
        unsafe { mma_tile::<TF32>(&mut acc, &last.0, &last.1) };
        j += 1;
    }
    acc
}

/// Where this thread's vector `j` (0..32) of a block's partial lies: slot `b`, then
/// vector `j` of every thread, consecutive.
#[inline(always)]
fn partial_at(partials: *mut f32, b: u32, j: u32, t: u32) -> *mut f32 {
    partials.wrapping_add((b * TC6K_PARTIAL_FLOATS + (j * THREADS + t) * 4) as usize)
}

/// What stage 6kb ([`crate::matmul_mma_streamk_tb`]) changes in the multiplying
/// blocks: they follow `blocks` transposing blocks in the grid, walk the tiles
/// column strip by column strip (so the first waves need few strips of `Bᵀ`), and
/// before a segment of a strip from `first_strip` on, the copying thread waits for
/// the strip's flag (its rows of `Bᵀ` written).
#[derive(Clone, Copy)]
pub(crate) struct Transposed {
    pub(crate) blocks: u32,
    pub(crate) first_strip: u32,
    pub(crate) strip_flags: *const u32,
}

impl Transposed {
    /// Stage 6k: no transposing blocks.
    pub(crate) const NONE: Transposed = Transposed {
        blocks: 0,
        first_strip: u32::MAX,
        strip_flags: core::ptr::null(),
    };
}

/// The multiplying blocks' kernel: stage 6k's, or with `TB` stage 6kb's (`tb`).
///
/// # Safety
/// As [`matmul_mma_streamk_tf32()`]; with `TB`, as
/// [`matmul_mma_streamk_tb_tf32()`](crate::matmul_mma_streamk_tb::matmul_mma_streamk_tb_tf32)
/// on a block from `tb.blocks` on, the grid and block index counted from there.
#[inline(always)]
pub(crate) unsafe fn body<const TB: bool>(sp: MatmulParamsStreamK, tb: Transposed) {
    let p = sp.mm;
    let warps = THREADS / 32;
    let ring = Ring::<S, SB>::new();
    let t = thread_idx().x;
    if t == 0 {
        // SAFETY: thread 0 alone, before the barrier below; the launch's bytes count
        // the barriers.
        unsafe { ring.init_barriers(warps) };
        // SAFETY: the host made both maps (64-byte aligned, in global memory).
        unsafe {
            tma::prefetch(p.a_map);
            tma::prefetch(p.b_map);
        }
    }
    sync_threads();
    let (w, lane) = (warp_id(), lane_id());
    let warps_n = BN / TC6_WARP_N;
    let wtile = (w / warps_n * TC_WARP_M, w % warps_n * TC6_WARP_N);
    let ktiles = p.k.div_ceil(TC6_BK_TF32);
    let (tiles_m, tiles_n) = (p.m.div_ceil(TC_BM), p.n.div_ceil(BN));
    let (b, grid) = if TB {
        (block_idx().x - tb.blocks, grid_dim().x - tb.blocks)
    } else {
        (block_idx().x, grid_dim().x)
    };
    let origin = |tile: u32| {
        let (pm, pn) = if TB {
            // Stage 6kb: every tile-row of a strip before the next strip.
            (tile % tiles_m, tile / tiles_m)
        } else {
            grouped_tile(tile, tiles_m, tiles_n, GROUP_M)
        };
        (pm * TC_BM, pn * BN)
    };
    let (c, ldc) = (p.c.ptr, p.c.ld);
    let relu = p.epilogue as u32 != 0;
    // SAFETY: the kernel's contract for C; the warp's part of the tile at `o`.
    let store = |acc: &Acc, o: (u32, u32)| unsafe {
        write_c(
            acc,
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
    // This block's stream-K iterations [lo, hi) of the last sk_tiles tiles: a tail
    // [lo, first_end) of the tile where lo falls (unless lo starts a tile), whole
    // tiles up to head_lo, a head [head_lo, hi) (unless hi ends a tile). A share of
    // at least one tile (the contract) keeps them in that order.
    let kt = ktiles;
    let iters = sp.sk_tiles * kt;
    let (lo, hi) = (sk_start(b, iters, grid), sk_start(b + 1, iters, grid));
    let first_end = lo.div_ceil(kt) * kt;
    let head_lo = hi / kt * kt;
    let dp_mine = sp.dp_tiles / grid;
    let whole = dp_mine + (head_lo - first_end) / kt;
    let has_head = head_lo < hi;
    let segments = whole + has_head as u32 + (lo < first_end) as u32;
    // Whole tiles (the data-parallel ones first), the head, the tail: module docs.
    let mut g = 0;
    let mut i = 0;
    while i < segments {
        let (tile, kt0, kt1) = if i < dp_mine {
            (b + i * grid, 0, ktiles)
        } else {
            let (s0, s1) = if i < whole {
                let s0 = first_end + (i - dp_mine) * kt;
                (s0, s0 + kt)
            } else if i == whole && has_head {
                (head_lo, hi)
            } else {
                (lo, first_end)
            };
            let sk_tile = s0 / kt;
            let t0 = sk_tile * kt;
            (
                sp.dp_tiles + sk_tile as u32,
                (s0 - t0) as u32,
                (s1 - t0) as u32,
            )
        };
        let o = origin(tile);
        if TB && w == 0 && o.1 / BN >= tb.first_strip {
            if lane == 0 {
                // SAFETY: the strip's flag exists (one per strip); the transposing
                // blocks publish it without waiting for anything (cooperative launch).
                unsafe { wait_eq(tb.strip_flags.add((o.1 / BN) as usize), sp.epoch) };
                // The acquired stores of Bᵀ, before this thread's copies read them.
                fence_proxy_async_global();
            }
            simt_std::warp::sync();
        }
        // SAFETY: every thread, same arguments; ring steps 0..g issued (and released,
        // or about to be, by every warp);
        // kt0 < kt1 <= ktiles.
        let mut acc = unsafe { k_range(&p, ring, g, kt0, kt1, o.0, o.1, wtile) };
        g += kt1 - kt0;
        if kt0 == 0 && kt1 < ktiles {
            // A head: its partial goes to slot b, then the flag (every thread's
            // stores before the barrier, then thread 0's release).
            unroll!(4, MI => {
                unroll!(8, NJ => {
                    let j = (MI * NT + NJ) as u32;
                    // SAFETY: slot b of the workspace (grid slots, the contract),
                    // 16-byte aligned (its start is, and every vector is 16 bytes).
                    unsafe { store4(partial_at(sp.partials, b, j, t), F32x4::from_array(acc[MI][NJ])) };
                });
            });
            sync_threads();
            if t == 0 {
                // SAFETY: flag b exists (grid flags); no block publishes it but this one.
                unsafe { publish(sp.flags.add(b as usize), sp.epoch) };
            }
        } else {
            if kt0 > 0 {
                // A tail: block b - 1 (b > 0: block 0 starts at 0) holds the tile's
                // first kt0 K steps as its head.
                if t == 0 {
                    // SAFETY: flag b - 1 exists; its block is resident (cooperative
                    // launch) and publishes it before it waits for anything.
                    unsafe { wait_eq(sp.flags.add(b as usize - 1), sp.epoch) };
                }
                // Thread 0's acquire, then the barrier: every thread's loads below
                // see the partial.
                sync_threads();
                unroll!(4, MI => {
                    unroll!(8, NJ => {
                        let j = (MI * NT + NJ) as u32;
                        // SAFETY: slot b - 1, written and published before its flag,
                        // acquired above.
                        let v = unsafe { load4(partial_at(sp.partials, b - 1, j, t)) }.to_array();
                        unroll!(4, E => { acc[MI][NJ][E] += v[E]; });
                    });
                });
            }
            store(&acc, o);
        }
        i += 1;
    }
}

kernel! {
    /// `C = epilogue(A · B)` in TF32 on tensor cores with `mma.sync`, as
    /// [`matmul_mma_tma_tf32()`](crate::matmul_mma_tma::matmul_mma_tma_tf32), its
    /// tiles split over persistent blocks by stream-K (module docs).
    ///
    /// # Safety
    /// `p.mm` as for `matmul_mma_tma_tf32` (`a_map`: A `m x k`, boxes of 128 rows x 32
    /// columns; `b_map`: `Bᵀ` `n x k`, boxes of 256 rows x 32 columns; both f32 rounded
    /// to TF32, 128-byte swizzled; C f32 not overlapping them); `p.dp_tiles +
    /// p.sk_tiles` is the number of 128x256 tiles of C, `p.dp_tiles` a multiple of the
    /// grid, `p.sk_tiles` zero or at least the grid (every block's share at least one
    /// tile: [`streamk_split`]) and `p.sk_tiles · ceil(k / 32) < 2^32`; `p.k >= 1`, and
    /// a block's K steps in all (its data-parallel tiles' and its share) below 2^32;
    /// `p.partials` holds `grid x TC6K_PARTIAL_FLOATS` floats,
    /// 16-byte aligned, and `p.flags` `grid` flags, none holding `p.epoch`, both used
    /// by no other launch running at the same time; the launch is cooperative (every
    /// block resident).
    ///
    /// # Parameters
    /// One [`MatmulParamsStreamK`]: `mm` (the maps, `c`: `[m, n]` row-major f32, the
    /// sizes, `epilogue`), `dp_tiles` and `sk_tiles` ([`streamk_split`]), the
    /// workspace `partials`, `flags` and this launch's `epoch` ([`simt_std::flag`]).
    ///
    /// # Tiling
    /// As `matmul_mma_tma_tf32`: block tile 128x256, K steps of 32, 4 stages of 48
    /// KiB; warp tile 64x64 = 4x8 `mma.m16n8k8`. A block walks its data-parallel
    /// tiles, then its stream-K segments, one ring for all.
    ///
    /// # Thread Mapping
    /// 256 threads = 8 warps, warp `w` at rows `64·(w/4)`, columns `64·(w%4)` of each
    /// tile; warp 0's first thread also issues the copies. A 1-D grid of at most one
    /// block per SM.
    #[launch(threads = TC6T_TF32_THREADS, min_blocks = 1, shared = TC6T_TF32_SMEM_BYTES, target = "sm_90a", cooperative = true)]
    pub unsafe fn matmul_mma_streamk_tf32(p: MatmulParamsStreamK) {
        // SAFETY: forwarded.
        unsafe { body::<false>(p, Transposed::NONE) }
    }
}
