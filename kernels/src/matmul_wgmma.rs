//! Matmul + ReLU, stage 7: Hopper's `wgmma` fed by TMA through an mbarrier ring,
//! with a producer warpgroup and two consumer warpgroups (sm_90a only).
//!
//! Against stage 6 ([`matmul_mma_pipelined`](crate::matmul_mma_pipelined), `mma.sync`):
//! * **Operands never enter registers.** `wgmma` reads A and B from shared memory
//!   through descriptors ([`simt_std::wgmma`]): no `ldmatrix`, no fragment registers,
//!   and one `m64n256k16` per warpgroup does the work of 32 `mma.sync` m16n8k16.
//! * **One thread moves the tiles.** The producer warpgroup's first thread issues
//!   one TMA copy of A's `128 x 64` box and four of B's `64 x 64` boxes per K step
//!   ([`simt_std::tma`]); the copy engine computes the addresses, zero-fills past the
//!   matrix edges, and writes the 128-byte swizzle `wgmma` reads. Stage 6's 256
//!   threads spent ~130 instructions per K step and warp on copy addresses.
//! * **Barriers per stage, not per block.** Each of the `WG_STAGES` stages has a
//!   *full* mbarrier (the producer announces the stage's bytes; the copies complete
//!   it) and an *empty* one (each consumer warpgroup arrives once it has multiplied
//!   the stage). Nobody waits at `sync_threads` inside the K loop: the producer runs
//!   up to `WG_STAGES` steps ahead, and each consumer waits only for its data.
//! * **Warp specialization.** The two consumer warpgroups (rows 0-63 and 64-127 of
//!   the block tile, 128 f32 accumulators per thread) take turns on the tensor cores:
//!   while one waits at the end of its `wgmma` region, the other issues.
//!
//! Phases: stage `s = kt % WG_STAGES` is used for the `kt / WG_STAGES`-th time at K
//! step `kt`, so the consumers wait for parity `(kt / WG_STAGES) % 2` of `full[s]`,
//! and the producer, before refilling it, for parity `(kt / WG_STAGES - 1) % 2` of
//! `empty[s]`.
//!
//! The host sends only problems whose rows of A and B are 16-byte aligned (TMA),
//! on compute capability 9.0; others take stage 5.
use crate::config::{
    WG_BK, WG_BM, WG_BN, WG_B_BOX_COLS, WG_SMEM_BYTES, WG_STAGES, WG_STAGE_BYTES, WG_THREADS,
};
use crate::params::MatmulParamsTma;
use simt_std::convert::{pack_bf16x2_rne, pack_f16x2_rne};
use simt_std::mbarrier;
use simt_std::memory::{store2, store_u32};
use simt_std::shared::{dynamic_shared, Smem};
use simt_std::thread::{block_idx, grid_dim, grouped_tile, sync_threads, thread_idx};
use simt_std::tma;
use simt_std::wgmma::{self, acc_coords, desc_k_major, desc_n_major};
use simt_std::{kernel, unroll};

/// Bytes of A in a stage; B's boxes follow.
pub(crate) const A_BYTES: u32 = WG_BM * WG_BK * 2;
/// Bytes of one B box (`WG_BK` k-rows of 128 bytes).
pub(crate) const B_BOX_BYTES: u32 = WG_BK * WG_B_BOX_COLS * 2;
const _: () = assert!(
    WG_BM == 128
        && WG_BN == 256
        && WG_BK * 2 == 128
        && WG_B_BOX_COLS * 2 == 128
        && WG_THREADS == 384
        && WG_STAGE_BYTES == A_BYTES + (WG_BN / WG_B_BOX_COLS) * B_BOX_BYTES
        && A_BYTES % 1024 == 0
        && B_BOX_BYTES % 1024 == 0
);

/// Tile-rows that consecutive tiles walk down before moving right (L2 reuse).
pub const GROUP_M: u32 = 8;

pub(crate) const BF16: u32 = 0;
pub(crate) const F16: u32 = 1;
/// f32 operands rounded to TF32 on their way to shared memory (a TF32 tensor map) or
/// before (a copy by [`crate::tf32_prep`]), A `[m][k]` and `Bᵀ` `[n][k]`, both
/// K-major (`wgmma` has no transpose for tf32).
pub(crate) const TF32: u32 = 2;

/// Accumulators of a 64x256 consumer tile: 128 f32 per thread as `[f32; 4]` groups
/// (a flat `[f32; 128]` stayed in local memory: LLVM's SROA does not split it).
pub(crate) type Acc = [[f32; 4]; 32];

/// A ring of `STAGES` TMA stages of `STAGE_BYTES` each in dynamic shared memory: the
/// stages from the first 1024-byte boundary (the 128-byte swizzle is a function of
/// address bits 7-9; the launch asks for 1 KiB of slack), then `STAGES` full and
/// `STAGES` empty mbarriers. Stages 7 and 8 use [`WgRing`]; stage 6t
/// ([`crate::matmul_mma_tma`]) its own sizes.
#[derive(Clone, Copy)]
pub(crate) struct Ring<const STAGES: u32, const STAGE_BYTES: u32> {
    smem: Smem<u8>,
}

/// Stages 7 and 8's ring: `WG_STAGES` stages of A `[128][64]`, then B's boxes.
pub(crate) type WgRing = Ring<WG_STAGES, WG_STAGE_BYTES>;

impl<const STAGES: u32, const STAGE_BYTES: u32> Ring<STAGES, STAGE_BYTES> {
    #[inline(always)]
    pub(crate) fn new() -> Self {
        let raw = dynamic_shared::<u8>();
        let pad = (1024 - raw.window_addr() % 1024) % 1024;
        Ring {
            smem: raw.add(pad as usize),
        }
    }
    /// Stage `s`.
    #[inline(always)]
    pub(crate) fn stage(self, s: u32) -> Smem<u8> {
        self.smem.add((s * STAGE_BYTES) as usize)
    }
    /// The barrier the copies of stage `s` complete.
    #[inline(always)]
    pub(crate) fn full(self, s: u32) -> Smem<u64> {
        self.stage(STAGES).cast::<u64>().add(s as usize)
    }
    /// The barrier the consumers release stage `s` on.
    #[inline(always)]
    pub(crate) fn empty(self, s: u32) -> Smem<u64> {
        self.stage(STAGES).cast::<u64>().add((STAGES + s) as usize)
    }
    /// Initialises every stage's barriers, a full one for one arrival (the copying
    /// thread's, with the copies' bytes) and an empty one for `readers` (one per
    /// warp that reads the stage), then fences them for the asynchronous proxy.
    ///
    /// # Safety
    /// One thread of the block, before any thread uses the barriers (a block
    /// barrier after it), with the launch's dynamic shared memory counting them.
    #[inline(always)]
    pub(crate) unsafe fn init_barriers(self, readers: u32) {
        let mut s = 0;
        while s < STAGES {
            // SAFETY: 8-byte aligned barrier slots inside the dynamic shared memory,
            // used by no thread yet (the caller's contract).
            unsafe {
                mbarrier::init(self.full(s), 1);
                mbarrier::init(self.empty(s), readers);
            }
            s += 1;
        }
        mbarrier::fence_init();
    }
}

/// Multiplies one stage into consumer `c`'s accumulators: rows `64·c ..` of A's
/// `[128][64]` box times the stage's B, as one `wgmma` region of 4 K steps (ending
/// with `wait_group 0`, so the stage may be released on return). `ASYNC`: the
/// region ends at its commit instead (a group left in flight: see
/// [`wgmma::wait_n256`]).
///
/// # Safety
/// The whole warpgroup calls it, converged, after the stage's full barrier; with
/// `ASYNC`, as `mma_*_async`.
#[inline(always)]
pub(crate) unsafe fn multiply_stage<const KIND: u32, const ASYNC: bool>(
    acc: Acc,
    st: Smem<u8>,
    c: u32,
) -> Acc {
    let a_tile = st.add((c * 64 * 128) as usize);
    let b_tile = st.add(A_BYTES as usize);
    // Step i of the region: 16 more elements of K: 32 bytes along A's rows,
    // 16 k-rows (two 8-row atoms) down B's boxes.
    let da = [0, 1, 2, 3].map(|i| desc_k_major(a_tile, 32 * i));
    // TF32: Bᵀ is K-major like A (8 more k = 32 more bytes per step).
    let db = if KIND == TF32 {
        [0, 1, 2, 3].map(|i| desc_k_major(b_tile, 32 * i))
    } else {
        [0, 1, 2, 3].map(|i| desc_n_major(b_tile, WG_BK, 16 * i))
    };
    // SAFETY: the caller's contract; the descriptors describe the TMA boxes' layout.
    unsafe {
        match (KIND, ASYNC) {
            (BF16, false) => wgmma::mma_bf16_n256::<true>(acc, da, db),
            (F16, false) => wgmma::mma_f16_n256::<true>(acc, da, db),
            (_, false) => wgmma::mma_tf32_n256::<false>(acc, da, db),
            (BF16, true) => wgmma::mma_bf16_n256_async::<true>(acc, da, db),
            (F16, true) => wgmma::mma_f16_n256_async::<true>(acc, da, db),
            (_, true) => wgmma::mma_tf32_n256_async::<false>(acc, da, db),
        }
    }
}

/// Stores a consumer's 64x256 accumulators at rows `row0 ..` and columns `col0 ..`
/// of C (rows and columns past C's edges skipped), with the ReLU if asked, as
/// `p.c_type`. Pairs `(i, i + 1)` are adjacent columns of one row. Plain stores:
/// they drain while the warpgroup multiplies its next tile. Unrolled, so every
/// index into `acc` is a constant (a loop put them on the stack).
///
/// # Safety
/// `p.c` is writable at `c[i*ld + j]` for `i < p.m`, `j < p.n` (the kernels' contract),
/// with elements of `p.c_type`.
#[inline(always)]
pub(crate) unsafe fn store_tile(acc: &Acc, p: &MatmulParamsTma, row0: u32, col0: u32, t: u32) {
    // SAFETY (all three): forwarded.
    unsafe {
        match p.c_type as u32 {
            0 => store_tile_as::<0>(acc, p, row0, col0, t),
            1 => store_tile_as::<1>(acc, p, row0, col0, t),
            _ => store_tile_as::<2>(acc, p, row0, col0, t),
        }
    }
}

/// Two adjacent outputs, after the epilogue, as C's 16-bit elements packed in a
/// `u32` (`OUT` 1: bf16, 2: f16; [`OutType`](crate::params::OutType)'s numbers).
#[inline(always)]
pub(crate) fn pack16<const OUT: u32>(v0: f32, v1: f32) -> u32 {
    if OUT == 1 {
        pack_bf16x2_rne(v0, v1)
    } else {
        pack_f16x2_rne(v0, v1)
    }
}

/// [`store_tile`] for C's element type `OUT` (0: f32, 1: bf16, 2: f16).
///
/// # Safety
/// As [`store_tile`].
#[inline(always)]
unsafe fn store_tile_as<const OUT: u32>(
    acc: &Acc,
    p: &MatmulParamsTma,
    row0: u32,
    col0: u32,
    t: u32,
) {
    let relu = p.epilogue as u32 != 0;
    let ldc = p.c.ld;
    let (c32, c16) = (p.c.ptr, p.c.ptr as *mut u16);
    // Pairs go out as one 8-byte (f32) or 4-byte (16-bit) store when C's start and
    // row stride keep every pair aligned.
    let vec = ldc % 2 == 0 && c32 as usize % if OUT == 0 { 8 } else { 4 } == 0;
    unroll!(8, I => {
        unroll!(8, J => {
            {
                let i = 2 * (8 * I + J);
                let (r, cc) = acc_coords(t, i as u32);
                let (row, col) = (row0 + r, col0 + cc);
                let f = |v: f32| if relu && v < 0.0 { 0.0 } else { v };
                let (v0, v1) = (f(acc[i / 4][i % 4]), f(acc[i / 4][i % 4 + 1]));
                if row < p.m {
                    // In usize, and wrapping: a column past n (the tile's right edge)
                    // may point past C, and is never dereferenced.
                    let at = row as usize * ldc as usize + col as usize;
                    // SAFETY: dereferenced only where row < m and the column < n
                    // (checked), so inside C (the kernel's contract); `vec` makes the
                    // pair 8-byte (f32) or 4-byte (16-bit) aligned (col is even).
                    unsafe {
                        if OUT == 0 {
                            let q = c32.wrapping_add(at);
                            if vec && col + 1 < p.n {
                                store2(q, v0, v1);
                            } else {
                                if col < p.n {
                                    *q = v0;
                                }
                                if col + 1 < p.n {
                                    *q.add(1) = v1;
                                }
                            }
                        } else {
                            let q = c16.wrapping_add(at);
                            let w = pack16::<OUT>(v0, v1);
                            if vec && col + 1 < p.n {
                                store_u32(q as *mut u32, w);
                            } else {
                                if col < p.n {
                                    *q = w as u16;
                                }
                                if col + 1 < p.n {
                                    *q.add(1) = (w >> 16) as u16;
                                }
                            }
                        }
                    }
                }
            }
        });
    });
}

/// The kernel for `KIND` ([`BF16`], [`F16`] or [`TF32`]).
///
/// # Safety
/// As [`matmul_wgmma_bf16()`].
#[inline(always)]
unsafe fn body<const KIND: u32>(p: MatmulParamsTma) {
    const BN: u32 = WG_BN;
    let (stages, stage_bytes) = (WG_STAGES, WG_STAGE_BYTES);
    let ring = WgRing::new();
    let (stage, full, empty) = (|s| ring.stage(s), |s| ring.full(s), |s| ring.empty(s));
    let tid = thread_idx().x;
    if tid == 0 {
        let mut s = 0;
        while s < stages {
            // SAFETY: 8-byte aligned barrier slots inside the dynamic shared memory,
            // used by no thread before the barrier below.
            unsafe {
                mbarrier::init(full(s), 1);
                mbarrier::init(empty(s), 2);
            }
            s += 1;
        }
        mbarrier::fence_init();
    }
    sync_threads();

    // Persistent: block b takes tiles b, b + grid, b + 2·grid, ... in grouped order;
    // the stage ring's position `it` runs on across tiles, so the producer loads the
    // next tile while the consumers store this one.
    let (tiles_m, tiles_n) = (p.m.div_ceil(WG_BM), p.n.div_ceil(BN));
    let tiles = tiles_m * tiles_n;
    let origin = |tile: u32| {
        let (pm, pn) = grouped_tile(tile, tiles_m, tiles_n, GROUP_M);
        (pm * WG_BM, pn * BN)
    };
    // A K step is one 128-byte row of A: 64 16-bit elements or 32 f32.
    let bk = if KIND == TF32 { WG_BK / 2 } else { WG_BK };
    let ktiles = p.k.div_ceil(bk);
    let (first, step) = (block_idx().x, grid_dim().x);
    let wg = tid / 128;

    if wg == 0 {
        // The producer: one thread issues every copy; its warp-mates leave (see
        // `mbarrier`'s rule 4).
        if tid != 0 {
            return;
        }
        // SAFETY: the host made both maps (64-byte aligned, in global memory).
        unsafe {
            tma::prefetch(p.a_map);
            tma::prefetch(p.b_map);
        }
        let mut it = 0;
        let mut tile = first;
        while tile < tiles {
            let (row0, col0) = origin(tile);
            let mut kt = 0;
            while kt < ktiles {
                let s = it % stages;
                let round = it / stages;
                // SAFETY (all below): initialised barriers; the stage's destinations are
                // 1024-byte aligned boxes inside the dynamic shared memory; the consumers
                // released the stage (the empty wait) before it is overwritten; the
                // announced bytes are exactly the boxes' (out-of-bounds elements are
                // delivered as zeros and count).
                unsafe {
                    if round > 0 {
                        mbarrier::wait(empty(s), (round - 1) & 1);
                    }
                    mbarrier::arrive_expect_tx(full(s), stage_bytes);
                    let (k0, st) = ((kt * bk) as i32, stage(s));
                    tma::load_2d(st, p.a_map, k0, row0 as i32, full(s));
                    if KIND == TF32 {
                        // Bᵀ: one box of 256 rows (columns of C) x 32 k.
                        tma::load_2d(st.add(A_BYTES as usize), p.b_map, k0, col0 as i32, full(s));
                    }
                    let mut j = 0;
                    while KIND != TF32 && j < BN / WG_B_BOX_COLS {
                        tma::load_2d(
                            st.add((A_BYTES + j * B_BOX_BYTES) as usize),
                            p.b_map,
                            (col0 + j * WG_B_BOX_COLS) as i32,
                            k0,
                            full(s),
                        );
                        j += 1;
                    }
                }
                kt += 1;
                it += 1;
            }
            tile += step;
        }
        return;
    }

    // A consumer: rows 64·(wg - 1) .. + 64 of each tile, all BN columns.
    let c = wg - 1;
    let t = tid % 128;
    let mut it = 0;
    let mut tile = first;
    while tile < tiles {
        let (row0, col0) = origin(tile);
        let mut acc: Acc = [[0f32; 4]; 32];
        let mut kt = 0;
        while kt < ktiles {
            let s = it % stages;
            // SAFETY: an initialised barrier; waiting makes the stage's copies visible.
            unsafe { mbarrier::wait(full(s), (it / stages) & 1) };
            // SAFETY: the whole warpgroup is here, converged; the stage has landed.
            acc = unsafe { multiply_stage::<KIND, false>(acc, stage(s), c) };
            // The region ended with `wait_group 0`: this warpgroup is done reading it.
            if t == 0 {
                // SAFETY: an initialised barrier expecting one arrival per consumer.
                unsafe { mbarrier::arrive(empty(s)) };
            }
            kt += 1;
            it += 1;
        }
        // SAFETY: p.c is C as the kernel's contract says.
        unsafe { store_tile(&acc, &p, row0 + 64 * c, col0, t) };
        tile += step;
    }
}

kernel! {
    /// `C = epilogue(A · B)` on Hopper tensor cores, bf16 inputs, f32 accumulation,
    /// C in f32, bf16 or f16 (`p.c_type`): `wgmma.m64n256k16` from shared memory, fed
    /// by TMA, persistent.
    ///
    /// # Safety
    /// `p.a_map` and `p.b_map` are tensor maps (in global memory) of the bf16
    /// matrices `A: m x k` (boxes of 128 rows x 64 columns) and `B: k x n` (boxes of
    /// 64 x 64), 128-byte swizzled; `p.c` is writable at `c[i*ld + j]` for `i < m,
    /// j < n` with elements of `p.c_type` and does not overlap A or B; C has fewer
    /// than 2^32 elements.
    ///
    /// # Parameters
    /// One [`MatmulParamsTma`]: the two maps, `c`: `[m, n]` row-major of `c_type`,
    /// the sizes, and `epilogue: Relu` to fuse the ReLU.
    ///
    /// # Tiling
    /// Tiles of 128x256, K steps of 64 (one 128-byte row of A); 4 stages of 48 KiB
    /// (A `[128][64]`, B as 4 boxes `[64][64]`, all 128-byte swizzled), a full and an
    /// empty mbarrier per stage.
    ///
    /// # Thread Mapping
    /// 384 threads = 3 warpgroups: warpgroup 0's thread 0 issues the copies;
    /// warpgroup 1 computes rows 0-63 of each tile and warpgroup 2 rows 64-127, as one
    /// 64x256 `wgmma` tile each (128 accumulators per thread, laid out as
    /// [`acc_coords`]). Any 1-D grid: block `b` takes tiles `b, b + grid, ...` of the
    /// `ceil(m/128) x ceil(n/256)` tiles in grouped order ([`GROUP_M`]); the host
    /// launches one block per SM.
    #[launch(threads = WG_THREADS, min_blocks = 1, shared = WG_SMEM_BYTES, target = "sm_90a")]
    pub unsafe fn matmul_wgmma_bf16(p: MatmulParamsTma) {
        // SAFETY: forwarded.
        unsafe { body::<BF16>(p) }
    }
}

kernel! {
    /// As [`matmul_wgmma_bf16()`], f16 inputs.
    ///
    /// # Safety
    /// As [`matmul_wgmma_bf16()`], with f16 matrices.
    #[launch(threads = WG_THREADS, min_blocks = 1, shared = WG_SMEM_BYTES, target = "sm_90a")]
    pub unsafe fn matmul_wgmma_f16(p: MatmulParamsTma) {
        // SAFETY: forwarded.
        unsafe { body::<F16>(p) }
    }
}

kernel! {
    /// As [`matmul_wgmma_bf16()`] in TF32: `a_map` describes `A: m x k` and `b_map`
    /// `Bᵀ: n x k` (boxes of 256 rows x 32 columns), f32, each rounded to TF32 by its
    /// map's loads or already by its copy ([`crate::tf32_prep`]); `wgmma.m64n256k8.f32.tf32.tf32`, K steps of 32.
    ///
    /// # Safety
    /// As [`matmul_wgmma_bf16()`], with f32 matrices A and Bᵀ (`p.n` rows of `p.k`).
    #[launch(threads = WG_THREADS, min_blocks = 1, shared = WG_SMEM_BYTES, target = "sm_90a")]
    pub unsafe fn matmul_wgmma_tf32(p: MatmulParamsTma) {
        // SAFETY: forwarded.
        unsafe { body::<TF32>(p) }
    }
}
