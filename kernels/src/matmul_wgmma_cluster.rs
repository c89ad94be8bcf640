//! Matmul + ReLU, stage 8: stage 7 ([`matmul_wgmma`](crate::matmul_wgmma)) with a
//! **TMA-store epilogue**, **`wgmma` groups in flight across K steps**, and
//! clusters of two blocks that share the tile of B through **TMA multicast**
//! (sm_90a only).
//!
//! What each change bought on the H100 (docs/PERFORMANCE.md has the runs): the
//! epilogue nearly all of it. Stage 7's time per tile grows by 40 us from K = 4096
//! to K = 8192 but is 57 us at 4096: some 17 us of every tile went outside the K
//! loop, mostly into plain 8-byte stores of C, 8 rows apart in a warp, while the
//! tensor cores idled. Staging C in shared memory and storing it with TMA
//! ([`store_tile_tma`]) took bf16 from 600 to 725 TFLOP/s at 4096^3. Multicast and
//! the groups in flight each measured within 1% alone; they stay, because they
//! remove traffic and bubbles that the faster epilogue leaves exposed.
//!
//! **Multicast.** A 128x256 tile reads `(128 + 256) · 2` bytes of A and B per element of K
//! for `2 · 128 · 256` FLOPs, 85 FLOPs per byte. At 600 TFLOP/s that is 7 TB/s from
//! L2 into the SMs, about what the H100's L2 delivers: stage 7 is fed by L2, not
//! limited by its tensor cores. The two blocks of a cluster take vertically
//! adjacent tiles `(2i, j)` and `(2i + 1, j)`, which need the same 256 columns of B.
//! Each block loads its own A box and *half* of B's, and multicasts that half
//! ([`simt_std::tma::load_2d_multicast`]) into the same offset of both blocks'
//! stage: L2 delivers each byte of B once per cluster, and a block asks it for
//! `(128 + 128) · 2` bytes per K element, 128 FLOPs per byte (-33% traffic).
//!
//! What sharing costs, in barriers (the first version arrived on the partner with
//! `release.cluster` semantics, which cost 40%: a cluster-scope release waits for
//! the thread's earlier global stores; the arrival needs no ordering of memory, only
//! of the `wgmma` reads before it, which `wait_group` already gives):
//! * **full[s]** still expects one arrival (the block's own producer, announcing
//!   the whole 48 KiB stage) but its bytes now come from two producers: the
//!   block's own A and B half, and the partner's B half. The partner's copy may
//!   land before this block's producer announced the phase; the count only goes
//!   negative for a while, as the hardware allows.
//! * **empty[s]** expects four arrivals: a stage may be refilled only when the
//!   consumers of *both* blocks are done with it, since each producer writes into
//!   both. Each consumer arrives on its own block's barrier and on the partner's
//!   ([`simt_std::mbarrier::arrive_cluster`]).
//! * **Start and end.** Barriers are initialised, then a cluster barrier, before
//!   any remote arrival or multicast. At the end each producer waits for the last
//!   release of every stage, so no arrival of the partner's consumers comes after
//!   its block is gone (the emulator refuses a block that exits with a remote
//!   arrival on one of its barriers that none of its threads waited for).
//!
//! **Groups in flight.** Stage 7 ends each K step's `wgmma` region with
//! `wait_group 0`, so each warpgroup's tensor work drains before its next step is
//! issued. Here a step's region is committed without waiting
//! ([`simt_std::wgmma::mma_bf16_n256_async`]), then `wait_n256::<1>` lets it run on
//! while the previous step's group completes, and the previous stage is released.
//! The accumulators pass from one asm statement to the next untouched; ptxas would
//! report (C7515) and the builder refuse any instruction that touched them in
//! between.
//!
//! **Registers.** 384 threads at one block per SM get 168 registers each, and the
//! consumers need more (the epilogue's addresses spilled): the producer warpgroup
//! gives its registers back (`setmaxnreg`: 40 for it, 232 for the consumers).
//!
//! Tiles go to clusters in the grouped order of stage 7, over pairs of tile-rows.
//! With an odd number of tile-rows, the last pair's lower tile lies below C: its
//! block still loads (A from row 0, so the copy stays inside the matrix), multiplies
//! and multicasts its half of B for its partner, and stores nothing.
use crate::config::{
    WG8_SMEM_BYTES, WG_BK, WG_BM, WG_BN, WG_B_BOX_COLS, WG_CLUSTER, WG_C_BOX_COLS, WG_C_BOX_ROWS,
    WG_C_STAGE_BYTES, WG_STAGES, WG_STAGE_BYTES, WG_THREADS,
};
use crate::matmul_wgmma::{
    multiply_stage, pack16, store_tile, Acc, WgRing, A_BYTES, BF16, B_BOX_BYTES, F16, GROUP_M, TF32,
};
use crate::params::MatmulParamsTma;
use simt_std::shared::Smem;
use simt_std::thread::{block_idx, grid_dim, grouped_tile, thread_idx};
use simt_std::wgmma::acc_coords;
use simt_std::{cluster, mbarrier, tma, warp, wgmma};
use simt_std::{kernel, unroll};

/// Every block of the cluster: the multicast mask.
const ALL: u16 = (1 << WG_CLUSTER) - 1;
/// B boxes (64 columns each) a block loads per K step: half of the tile's four.
const B_BOXES_OWN: u32 = WG_BN / WG_B_BOX_COLS / WG_CLUSTER;
/// TF32: rows of Bᵀ (columns of C) a block loads per K step, as one box.
pub const TF32_B_BOX_ROWS: u32 = WG_BN / WG_CLUSTER;
/// Bytes of one epilogue box (16 rows of 128 bytes).
const C_BOX_BYTES: u32 = WG_C_BOX_ROWS * WG_C_BOX_COLS * 4;
const _: () = assert!(
    WG_CLUSTER == 2
        && B_BOXES_OWN == 2
        && TF32_B_BOX_ROWS == 128
        && WG_C_BOX_ROWS == 16
        && WG_C_BOX_COLS * 4 == 128
        && C_BOX_BYTES % 1024 == 0
        && WG_C_STAGE_BYTES == 8 * 2 * C_BOX_BYTES
);

/// Stores consumer warpgroup's 64x256 accumulators (rows `row0 ..`, columns
/// `col0 ..` of C) through shared memory and TMA, with the ReLU if asked, as
/// `p.c_type`.
///
/// Why: the plain stores of stage 7 write 8-byte pairs, 8 rows apart in a warp, so
/// each store instruction touches 8 lines of C; they cost more than 10 us per tile
/// at 4096^3 (docs/PERFORMANCE.md), time in which this warpgroup multiplies nothing.
/// Here each warp writes its 16 rows, 128 bytes of C at a time (32 f32 or 64
/// 16-bit columns), into a 2 KiB box in shared memory in the 128-byte swizzled
/// layout (8 rows of a store land in 8 different banks groups), and lane 0 hands
/// the box to the copy engine ([`tma::store_2d`]): whole lines of C, clipped at C's
/// edges by the engine, while the warp goes on. Two boxes per warp alternate;
/// before refilling one, lane 0 waits until the store before last has read it
/// ([`tma::store_wait_read`]). A 16-bit C is half the boxes: 4 per warp and tile.
///
/// # Safety
/// `p.c_map` is a map of C as [`MatmulParamsTma::c_map`] says, prefetched by lane 0
/// of each warp; `bufs` is this warpgroup's 16 KiB of 1024-byte aligned staging
/// boxes, used by nothing else.
#[inline(always)]
unsafe fn store_tile_tma(
    acc: &Acc,
    p: &MatmulParamsTma,
    bufs: Smem<u8>,
    row0: u32,
    col0: u32,
    t: u32,
) {
    // SAFETY (all three): forwarded.
    unsafe {
        match p.c_type as u32 {
            0 => store_tile_tma_as::<0>(acc, p, bufs, row0, col0, t),
            1 => store_tile_tma_as::<1>(acc, p, bufs, row0, col0, t),
            _ => store_tile_tma_as::<2>(acc, p, bufs, row0, col0, t),
        }
    }
}

/// [`store_tile_tma`] for C's element type `OUT` (0: f32, 1: bf16, 2: f16).
///
/// # Safety
/// As [`store_tile_tma`].
#[inline(always)]
unsafe fn store_tile_tma_as<const OUT: u32>(
    acc: &Acc,
    p: &MatmulParamsTma,
    bufs: Smem<u8>,
    row0: u32,
    col0: u32,
    t: u32,
) {
    let relu = p.epilogue as u32 != 0;
    let f = |v: f32| if relu && v < 0.0 { 0.0 } else { v };
    let (w, lane) = (t / 32, t % 32);
    let mine = bufs.add((w * 2 * C_BOX_BYTES) as usize);
    // Bytes per element; columns per box (a 128-byte box row); the accumulators'
    // 8-column blocks per box (32 per tile row of 256).
    let eb = if OUT == 0 { 4 } else { 2 };
    let box_cols = 128 / eb;
    let per_box = box_cols / 8;
    unroll!(8, X => {
        unroll!(4, Y => {
            {
                // Block `bl` of 8 columns lies in box `j`.
                let bl = (4 * X + Y) as u32;
                let j = bl / per_box;
                let buf = mine.add((j % 2 * C_BOX_BYTES) as usize);
                if bl % per_box == 0 {
                    if lane == 0 {
                        // The store before last read this box.
                        tma::store_wait_read::<1>();
                    }
                    warp::sync();
                }
                unroll!(2, H => {
                    {
                        let i = 4 * (4 * X + Y) + 2 * H;
                        let (r, c) = acc_coords(t, i as u32);
                        let lin = (r - 16 * w) * 128 + (c - box_cols * j) * eb;
                        let (v0, v1) = (f(acc[i / 4][i % 4]), f(acc[i / 4][i % 4 + 1]));
                        let at = buf.add(tma::swizzle_128b(lin) as usize);
                        // SAFETY: inside this warp's box (16 rows of 128 bytes, 1024-byte
                        // aligned, so the swizzle is a function of the offset); 8-byte
                        // (f32 pair) or 4-byte (16-bit pair) aligned, as c is even; no
                        // store reads it (the wait above).
                        unsafe {
                            if OUT == 0 {
                                at.cast::<f32>().store2(v0, v1)
                            } else {
                                at.cast::<u32>().write(pack16::<OUT>(v0, v1))
                            }
                        };
                    }
                });
                if bl % per_box == per_box - 1 {
                    tma::fence_proxy_async();
                    warp::sync();
                    if lane == 0 {
                        // SAFETY: the caller's map, prefetched; the box was written and
                        // fenced by the whole warp (the barrier above) and is not written
                        // again until a wait covers this store.
                        unsafe {
                            tma::store_2d(
                                buf,
                                p.c_map,
                                (col0 + box_cols * j) as i32,
                                (row0 + WG_C_BOX_ROWS * w) as i32,
                            )
                        };
                        tma::store_commit();
                    }
                }
            }
        });
    });
}

/// The kernel for `KIND` (stage 7's BF16, F16 or TF32).
///
/// # Safety
/// As [`matmul_wgmma_cluster_bf16()`].
#[inline(always)]
unsafe fn body<const KIND: u32>(p: MatmulParamsTma) {
    const BN: u32 = WG_BN;
    let stages = WG_STAGES;
    let ring = WgRing::new();
    let (stage, full, empty) = (|s| ring.stage(s), |s| ring.full(s), |s| ring.empty(s));
    let tid = thread_idx().x;
    let rank = cluster::rank();
    let partner = rank ^ 1;
    if tid == 0 {
        let mut s = 0;
        while s < stages {
            // SAFETY: 8-byte aligned barrier slots inside the dynamic shared memory,
            // used by no thread (here or in the partner) before the cluster barrier.
            unsafe {
                mbarrier::init(full(s), 1);
                mbarrier::init(empty(s), 2 * WG_CLUSTER);
            }
            s += 1;
        }
        mbarrier::fence_init();
    }
    // Both blocks' barriers exist before either multicasts or arrives remotely.
    cluster::sync();

    // Cluster q of Q takes pairs of tiles q, q + Q, ... in grouped order; rank r
    // computes tile-row 2·pm + r of pair (pm, pn).
    let (tiles_m, tiles_n) = (p.m.div_ceil(WG_BM), p.n.div_ceil(BN));
    let pairs_m = tiles_m.div_ceil(WG_CLUSTER);
    let pairs = pairs_m * tiles_n;
    let origin = |pair: u32| {
        let (pm, pn) = grouped_tile(pair, pairs_m, tiles_n, GROUP_M / WG_CLUSTER);
        ((WG_CLUSTER * pm + rank) * WG_BM, pn * BN)
    };
    let bk = if KIND == TF32 { WG_BK / 2 } else { WG_BK };
    let ktiles = p.k.div_ceil(bk);
    let (first, step) = (block_idx().x / WG_CLUSTER, grid_dim().x / WG_CLUSTER);
    let wg = tid / 128;

    if wg == 0 {
        // The producer needs few registers: it hands them to the consumers, whose
        // 128 accumulators and the epilogue's addresses need more than the 168 an
        // even split of 384 threads gives. Increases draw only on what decreases
        // release: 128·(168 - 40) = 256·(232 - 168) (the emulator keeps these books).
        // SAFETY: the whole warpgroup, converged (nothing diverged yet).
        unsafe { wgmma::set_max_registers::<40, false>() };
        // The producer: one thread; its warp-mates leave (`mbarrier`'s rule 4).
        if tid != 0 {
            return;
        }
        // SAFETY: the host made both maps (64-byte aligned, in global memory).
        unsafe {
            tma::prefetch(p.a_map);
            tma::prefetch(p.b_map);
        }
        let mut it = 0;
        let mut pair = first;
        while pair < pairs {
            let (row0, col0) = origin(pair);
            // A tile below C (odd tile-rows): any rows of A will do, never stored.
            let arow = if row0 < p.m { row0 } else { 0 };
            let mut kt = 0;
            while kt < ktiles {
                let s = it % stages;
                let round = it / stages;
                // SAFETY (all below): initialised barriers (in both blocks, before
                // the cluster barrier); the destinations are 1024-byte aligned boxes
                // in the dynamic shared memory, at the same offsets in both blocks;
                // the consumers of both blocks released the stage (the empty wait)
                // before it is overwritten; full[s] announces the stage's bytes, which
                // this block's and the partner's copies deliver exactly.
                unsafe {
                    if round > 0 {
                        mbarrier::wait(empty(s), (round - 1) & 1);
                    }
                    mbarrier::arrive_expect_tx(full(s), WG_STAGE_BYTES);
                    let (k0, st) = ((kt * bk) as i32, stage(s));
                    tma::load_2d(st, p.a_map, k0, arow as i32, full(s));
                    if KIND == TF32 {
                        // Rows 128·rank .. of Bᵀ's 256-row tile.
                        tma::load_2d_multicast(
                            st.add((A_BYTES + rank * TF32_B_BOX_ROWS * 128) as usize),
                            p.b_map,
                            k0,
                            (col0 + rank * TF32_B_BOX_ROWS) as i32,
                            full(s),
                            ALL,
                        );
                    }
                    let mut j = 0;
                    while KIND != TF32 && j < B_BOXES_OWN {
                        let box_ = rank * B_BOXES_OWN + j;
                        tma::load_2d_multicast(
                            st.add((A_BYTES + box_ * B_BOX_BYTES) as usize),
                            p.b_map,
                            (col0 + box_ * WG_B_BOX_COLS) as i32,
                            k0,
                            full(s),
                            ALL,
                        );
                        j += 1;
                    }
                }
                kt += 1;
                it += 1;
            }
            pair += step;
        }
        // The last release of every stage: after it, no consumer of the cluster
        // arrives on this block's barriers any more, and the block may exit.
        let end = it + stages;
        while it < end {
            let round = it / stages;
            if round > 0 {
                // SAFETY: an initialised barrier of this block.
                unsafe { mbarrier::wait(empty(it % stages), (round - 1) & 1) };
            }
            it += 1;
        }
        return;
    }

    // SAFETY: the whole warpgroup, converged; see the producer's decrease.
    unsafe { wgmma::set_max_registers::<232, true>() };
    // A consumer: rows 64·(wg - 1) .. + 64 of its block's tile of each pair.
    let c = wg - 1;
    let t = tid % 128;
    let tma_c = !p.c_map.is_null();
    let bufs = stage(WG_STAGES).add((1024 + c * WG_C_STAGE_BYTES / 2) as usize);
    if tma_c && t % 32 == 0 {
        // SAFETY: the host made the map (64-byte aligned, in global memory).
        unsafe { tma::prefetch(p.c_map) };
    }
    // Stage `s` is free in this block: both producers may refill it once the
    // partner's consumers are done with it too.
    let release = |s: u32| {
        if t == 0 {
            // SAFETY: initialised barriers expecting one arrival per consumer of the
            // cluster; the partner waits for this phase before it exits.
            unsafe {
                mbarrier::arrive(empty(s));
                mbarrier::arrive_cluster(empty(s), partner);
            }
        }
    };
    let mut it = 0;
    let mut pair = first;
    while pair < pairs {
        let (row0, col0) = origin(pair);
        let mut acc: Acc = [[0f32; 4]; 32];
        let mut kt = 0;
        while kt < ktiles {
            let s = it % stages;
            // SAFETY: an initialised barrier; waiting makes the stage's copies (this
            // block's and the partner's) visible.
            unsafe { mbarrier::wait(full(s), (it / stages) & 1) };
            // One group in flight across K steps: this step's wgmmas queue behind the
            // last step's, so the tensor cores never drain between steps.
            // SAFETY: the whole warpgroup is here, converged; the stage has landed;
            // `acc` is the last region's, untouched, and is only passed on.
            acc = unsafe { multiply_stage::<KIND, true>(acc, stage(s), c) };
            // SAFETY: as above. After it, only this step's group may be in flight:
            // the previous step's stage is read.
            acc = unsafe { wgmma::wait_n256::<1>(acc) };
            if kt > 0 {
                release((it + stages - 1) % stages);
            }
            kt += 1;
            it += 1;
        }
        // SAFETY: as above; the sums are final after it.
        acc = unsafe { wgmma::wait_n256::<0>(acc) };
        if ktiles > 0 {
            release((it + stages - 1) % stages);
        }
        if tma_c {
            // SAFETY: a map of C (non-null), prefetched above; this warpgroup's buffers.
            unsafe { store_tile_tma(&acc, &p, bufs, row0 + 64 * c, col0, t) };
        } else {
            // SAFETY: p.c is C as the kernel's contract says.
            unsafe { store_tile(&acc, &p, row0 + 64 * c, col0, t) };
        }
        pair += step;
    }
    if tma_c && t % 32 == 0 {
        // The block's shared memory must outlive the stores' reads; their writes are
        // done before the kernel is.
        tma::store_wait::<0>();
    }
}

kernel! {
    /// `C = epilogue(A · B)` on Hopper tensor cores, bf16 inputs, f32 accumulation,
    /// C in f32, bf16 or f16 (`p.c_type`), in clusters of two blocks that share B's
    /// tile by TMA multicast.
    ///
    /// # Safety
    /// As [`matmul_wgmma_bf16()`](crate::matmul_wgmma::matmul_wgmma_bf16): tensor maps
    /// of `A: m x k` (boxes of 128 x 64) and `B: k x n` (boxes of 64 x 64), 128-byte
    /// swizzled, in global memory; `p.c` writable at `c[i*ld + j]` for `i < m, j < n`,
    /// not overlapping A or B, of elements `p.c_type`; C has fewer than 2^32
    /// elements; `p.k >= 1`. `p.c_map` is null or a map of exactly this C (its
    /// element type, boxes of 16 rows x 128 bytes, 128-byte swizzle) whose rows start
    /// 16-byte aligned and are a whole number of 16-byte chunks (a TMA store writes
    /// the chunk holding the last column whole).
    ///
    /// # Parameters
    /// One [`MatmulParamsTma`], as stage 7.
    ///
    /// # Tiling
    /// Stage 7's: tiles of 128x256, K steps of 64, 4 stages of 48 KiB (A `[128][64]`,
    /// B as 4 boxes `[64][64]`), a full and an empty mbarrier per stage. Rank `r` of a
    /// cluster loads B's boxes `2r` and `2r + 1` into both blocks. The epilogue
    /// stages C in boxes of 16 rows x 128 bytes (32 f32 or 64 16-bit columns), two
    /// per consumer warp, and stores them with TMA (`p.c_map`; plain stores when it
    /// is null).
    ///
    /// # Thread Mapping
    /// 384 threads = 3 warpgroups, as stage 7. A 1-D grid of clusters of two: cluster
    /// `q` takes pairs of tiles `q, q + grid/2, ...` of the `ceil(m/256) x ceil(n/256)`
    /// pairs in grouped order; rank `r` computes the pair's tile-row `2i + r`. The host
    /// launches as many clusters as fit at once.
    #[launch(threads = WG_THREADS, min_blocks = 1, shared = WG8_SMEM_BYTES, cluster = WG_CLUSTER, target = "sm_90a")]
    pub unsafe fn matmul_wgmma_cluster_bf16(p: MatmulParamsTma) {
        // SAFETY: forwarded.
        unsafe { body::<BF16>(p) }
    }
}

kernel! {
    /// As [`matmul_wgmma_cluster_bf16()`], f16 inputs.
    ///
    /// # Safety
    /// As [`matmul_wgmma_cluster_bf16()`], with f16 matrices.
    #[launch(threads = WG_THREADS, min_blocks = 1, shared = WG8_SMEM_BYTES, cluster = WG_CLUSTER, target = "sm_90a")]
    pub unsafe fn matmul_wgmma_cluster_f16(p: MatmulParamsTma) {
        // SAFETY: forwarded.
        unsafe { body::<F16>(p) }
    }
}

kernel! {
    /// As [`matmul_wgmma_cluster_bf16()`] in TF32, as
    /// [`matmul_wgmma_tf32()`](crate::matmul_wgmma::matmul_wgmma_tf32): `a_map`
    /// describes `A: m x k` (boxes of 128 x 32) and `b_map` `Bᵀ: n x k` (boxes of
    /// [`TF32_B_BOX_ROWS`] = 128 rows x 32), f32, each rounded to TF32 by its map's
    /// loads or by its copy.
    ///
    /// # Safety
    /// As [`matmul_wgmma_cluster_bf16()`], with f32 matrices A and Bᵀ (`p.n` rows of
    /// `p.k`) and Bᵀ's boxes of 128 rows.
    #[launch(threads = WG_THREADS, min_blocks = 1, shared = WG8_SMEM_BYTES, cluster = WG_CLUSTER, target = "sm_90a")]
    pub unsafe fn matmul_wgmma_cluster_tf32(p: MatmulParamsTma) {
        // SAFETY: forwarded.
        unsafe { body::<TF32>(p) }
    }
}
