//! Matmul + ReLU, stage 6w: stage 6t's TF32 `mma.sync` warps with `B` read where it
//! lies, transposed inside the kernel by a producer warpgroup (sm_90a only).
//!
//! **Why.** TF32 fragments need both operands K-major: `ldmatrix` moves 16-bit
//! elements and cannot transpose 32-bit ones, and the `B` of `A · B` is row-major,
//! N-major. Stage 6t ([`crate::matmul_mma_tma`]) therefore copies `Bᵀ`, rounded, before
//! every product ([`crate::tf32_prep`]): a pass over 2·k·n·4 bytes of DRAM, 5% of a
//! 4096^3 product on the H200 (docs/PERFORMANCE.md, session 19). Reading B's
//! fragments as single words instead costs the multiplying warps more than the copy
//! (session 18), and so did a producer warpgroup that loaded B into registers and
//! stored it transposed (session 20: 40 registers a thread hold too few bytes in
//! flight to hide L2's latency).
//!
//! **How.** The TMA brings each K step's `32 x 256` tile of B as it lies, through a
//! TF32 map (rounded on the way, as A), into a ring of *raw* slots. A producer warpgroup
//! (warps 8-11) transposes it, shared memory to shared memory, into the stage the
//! multiplying warps read, where stage 6t's TMA put `Bᵀ`: rows of 128 bytes (32 k) per
//! column of C, 16-byte chunk `c` of row `n` at `c ^ (n % 8)`. The multiplying warps
//! are stage 6t's, unchanged: `ldmatrix` of A and of `Bᵀ`.
//! * **Conflict-free both ways.** A unit is 4 k of one column: lane `l` reads
//!   `raw[4·q + e][n]` for `e` in 0..4 (32 consecutive columns of one row: 32 banks)
//!   and writes them as one 16-byte store to `Bᵀ[n][4·q ..]`, chunk `q ^ (n % 8)`
//!   (each quarter-warp's 8 stores meet 8 different chunks) ([`raw_offset`],
//!   [`bt_offset`], pinned by a test).
//! * **Registers.** 384 threads launch with 168 registers each; `setmaxnreg` lowers the
//!   producers to [`TC6W_PRODUCER_REGS`] and raises the multiplying warps to
//!   [`TC6W_CONSUMER_REGS`] (stage 6t's kernel needs 235 without a cap).
//! * **The price is shared-memory bandwidth:** each byte of B is written twice and read
//!   twice in shared memory instead of written once and read once by `ldmatrix`.
//!
//! Barriers: per stage, *full* (one arrival with A's bytes from the thread that issues
//! its TMA, one per producer warp once its stores are done) and *empty* (one per
//! multiplying warp); per raw slot, *raw full* (the TMA's bytes) and *raw empty* (one
//! per producer warp once it has read the slot).
use crate::config::{
    TC6T_TF32_BN, TC6T_TF32_STAGE_BYTES, TC6T_TF32_THREADS, TC6W_CONSUMER_REGS,
    TC6W_PRODUCER_REGS, TC6W_RAW_BYTES, TC6W_RAW_SLOTS, TC6W_SMEM_BYTES, TC6W_STAGES,
    TC6W_THREADS, TC6_BK_TF32, TC6_WARP_N, TC_BM, TC_WARP_M,
};
use crate::matmul_mma::write_c;
use crate::matmul_mma_pipelined::{
    a_frags, block_origin_n, mma_tile, store_staged, A_BYTES, A_ROW, KSTEPS, NT, STAGE_LD, TF32,
};
use crate::matmul_mma_tma::b_frags;
use crate::params::MatmulParamsTma;
use simt_std::memory::F32x4;
use simt_std::shared::{dynamic_shared, Smem};
use simt_std::thread::{sync_threads, thread_idx};
use simt_std::warp::{lane_id, warp_id};
use simt_std::{kernel, mbarrier, tma, unroll, wgmma};

const BN: u32 = TC6T_TF32_BN;
const S: u32 = TC6W_STAGES;
const SB: u32 = TC6T_TF32_STAGE_BYTES;
const R: u32 = TC6W_RAW_SLOTS;
/// The multiplying warps (stage 6t's 8).
const CONSUMER_WARPS: u32 = TC6T_TF32_THREADS / 32;
/// The producer warpgroup's warps.
const PRODUCER_WARPS: u32 = (TC6W_THREADS - TC6T_TF32_THREADS) / 32;
/// Units (4 k of one column) each producer thread moves per K step.
const UNITS: u32 = TC6_BK_TF32 / 4 * BN / (32 * PRODUCER_WARPS);
const _: () = assert!(
    PRODUCER_WARPS == 4
        && UNITS == 16
        && TC6_BK_TF32 == 32
        && A_ROW == 128
        && SB == A_BYTES + BN * A_ROW
        && TC6W_RAW_BYTES == TC6_BK_TF32 * BN * 4
        && A_BYTES % 1024 == 0
        && SB % 1024 == 0
        && TC6W_SMEM_BYTES >= S * SB + R * TC6W_RAW_BYTES + 16 * (S + R) + 1023
        // The epilogue's staging tiles (from the start of the dynamic shared memory)
        // end before the barriers.
        && CONSUMER_WARPS * TC_WARP_M * STAGE_LD * 4 <= S * SB + R * TC6W_RAW_BYTES
);

/// Byte offset of `raw[k][n]` in a raw slot: B's tile as it lies, rows of `BN` f32.
#[inline(always)]
pub const fn raw_offset(k: u32, n: u32) -> u32 {
    (k * BN + n) * 4
}

/// Byte offset inside a stage of `Bᵀ`'s 16-byte chunk of column `n`, k `4·q ..+4`:
/// stage 6t's layout, row `n` of 128 bytes after A's tile, chunk `q ^ (n % 8)`.
#[inline(always)]
pub const fn bt_offset(n: u32, q: u32) -> u32 {
    A_BYTES + n * A_ROW + ((q ^ (n % 8)) * 16)
}

/// Unit `u` (0..16) of producer lane `lane` of warp `pw`: its column `n` and k group
/// `q` (k `4·q ..+4`). Warp `pw` moves k groups `2·pw` and `2·pw + 1` of all columns.
#[inline(always)]
pub const fn producer_unit(pw: u32, lane: u32, u: u32) -> (u32, u32) {
    (32 * (u % 8) + lane, 2 * pw + u / 8)
}

/// The shared memory: `S` stages, `R` raw slots, then the barriers, from a
/// 1024-byte aligned base.
#[derive(Clone, Copy)]
struct Rings {
    base: Smem<u8>,
}

impl Rings {
    #[inline(always)]
    fn new() -> Self {
        let raw = dynamic_shared::<u8>();
        let pad = (1024 - raw.window_addr() % 1024) % 1024;
        Rings {
            base: raw.add(pad as usize),
        }
    }
    #[inline(always)]
    fn stage(self, s: u32) -> Smem<u8> {
        self.base.add((s * SB) as usize)
    }
    #[inline(always)]
    fn raw(self, r: u32) -> Smem<u8> {
        self.base.add((S * SB + r * TC6W_RAW_BYTES) as usize)
    }
    #[inline(always)]
    fn bar(self, i: u32) -> Smem<u64> {
        self.base
            .add((S * SB + R * TC6W_RAW_BYTES) as usize)
            .cast::<u64>()
            .add(i as usize)
    }
    /// Stage `s` holds A's box and the producers' `Bᵀ`.
    #[inline(always)]
    fn full(self, s: u32) -> Smem<u64> {
        self.bar(s)
    }
    /// Every multiplying warp has read stage `s`.
    #[inline(always)]
    fn empty(self, s: u32) -> Smem<u64> {
        self.bar(S + s)
    }
    /// Raw slot `r` holds B's tile.
    #[inline(always)]
    fn raw_full(self, r: u32) -> Smem<u64> {
        self.bar(2 * S + r)
    }
    /// Every producer warp has read raw slot `r`.
    #[inline(always)]
    fn raw_empty(self, r: u32) -> Smem<u64> {
        self.bar(2 * S + R + r)
    }
}

/// Issues the TMA copy of B's tile of K step `kt` into raw slot `kt % R`.
///
/// # Safety
/// One thread; barriers initialised; the slot is free (its previous contents read by
/// every producer warp, or never filled); `p.b_map` is B's map with boxes of `32 x BN`.
#[inline(always)]
unsafe fn load_raw(p: &MatmulParamsTma, rings: Rings, kt: u32, col0: u32) {
    let r = kt % R;
    // SAFETY: caller's contract; the announced bytes are the box's (past B's edges:
    // zeros, counted).
    unsafe {
        mbarrier::arrive_expect_tx(rings.raw_full(r), TC6W_RAW_BYTES);
        tma::load_2d(rings.raw(r), p.b_map, col0 as i32, (kt * TC6_BK_TF32) as i32, rings.raw_full(r));
    }
}

/// The producer warpgroup: every K step, A's box by TMA (thread 0) and B's raw tile
/// transposed into the stage as `Bᵀ`.
///
/// # Safety
/// All 128 threads of the warpgroup, after the barriers' initialisation; the kernel's
/// contract for `p`.
#[inline(always)]
unsafe fn produce(p: &MatmulParamsTma, rings: Rings, ktiles: u32, row0: u32, col0: u32) {
    let pt = thread_idx().x - TC6T_TF32_THREADS;
    let (pw, lane) = (pt / 32, lane_id());
    if pt == 0 {
        // SAFETY: the host made both maps (64-byte aligned, in global memory); the slots
        // were never filled; kt < ktiles.
        unsafe {
            tma::prefetch(p.a_map);
            tma::prefetch(p.b_map);
            let mut kt = 0;
            while kt < R && kt < ktiles {
                load_raw(p, rings, kt, col0);
                kt += 1;
            }
        }
    }
    // This lane's first unit: where it reads (k group 2·pw, column lane) and writes.
    let (n0, q0) = producer_unit(pw, lane, 0);
    let rd = raw_offset(4 * q0, n0);
    let wr = [bt_offset(n0, q0), bt_offset(n0, q0 + 1)];
    let mut kt = 0;
    while kt < ktiles {
        let (s, r) = (kt % S, kt % R);
        let (st, raw) = (rings.stage(s), rings.raw(r));
        if kt >= S {
            // SAFETY: an initialised barrier; its phase completes once every multiplying
            // warp has read step kt - S.
            unsafe { mbarrier::wait(rings.empty(s), (kt / S - 1) & 1) };
        }
        if pt == 0 {
            // SAFETY: initialised barrier; the stage is free (above); A's box is
            // 1024-byte aligned at the stage's start; the announced bytes are the box's.
            unsafe {
                mbarrier::arrive_expect_tx(rings.full(s), A_BYTES);
                tma::load_2d(st, p.a_map, (kt * TC6_BK_TF32) as i32, row0 as i32, rings.full(s));
            }
        }
        simt_std::warp::sync();
        // SAFETY: an initialised barrier; waiting makes the slot's copy visible.
        unsafe { mbarrier::wait(rings.raw_full(r), (kt / R) & 1) };
        unroll!(2, H => {
            unroll!(8, C => {
                let (h, c) = (H as u32, C as u32);
                let mut v = [0f32; 4];
                unroll!(4, E => {
                    // SAFETY: inside the raw slot (k 4·(q0 + h) + E < 32, column 32·c +
                    // lane < BN), 4-byte aligned; the slot's copy landed (the wait above).
                    v[E] = unsafe { raw.add((rd + raw_offset(4 * h + E as u32, 32 * c)) as usize).cast::<f32>().read() };
                });
                // SAFETY: inside the stage's Bᵀ tile (column 32·c + lane, k group q0 +
                // h), 16-byte aligned; the stage is free (the empty wait).
                unsafe { st.add((wr[H] + 32 * c * A_ROW) as usize).cast::<f32>().store4(F32x4::from_array(v)) };
            });
        });
        // Every lane's reads of the slot and stores into the stage were issued before
        // lane 0 releases the one and publishes the other.
        simt_std::warp::sync();
        if lane == 0 {
            // SAFETY: initialised barriers expecting one arrival per producer warp (and,
            // for full, the TMA's).
            unsafe {
                mbarrier::arrive(rings.full(s));
                mbarrier::arrive(rings.raw_empty(r));
            }
        }
        if pt == 0 && kt + R < ktiles {
            // The slot again, for K step kt + R, once all 4 warps have read it.
            // SAFETY: initialised barrier; then the slot is free; kt + R < ktiles.
            unsafe {
                mbarrier::wait(rings.raw_empty(r), (kt / R) & 1);
                load_raw(p, rings, kt + R, col0);
            }
        }
        simt_std::warp::sync();
        kt += 1;
    }
}

/// The kernel (see [`matmul_mma_ws_tf32()`]).
///
/// # Safety
/// As [`matmul_mma_ws_tf32()`].
#[inline(always)]
unsafe fn body(p: MatmulParamsTma) {
    let warps_n = BN / TC6_WARP_N;
    let rings = Rings::new();
    let tid = thread_idx().x;
    if tid == 0 {
        let mut i = 0;
        while i < S {
            // SAFETY: 8-byte aligned barrier slots inside the dynamic shared memory
            // (the launch's bytes count them), used by no thread before the barrier below.
            unsafe {
                mbarrier::init(rings.full(i), 1 + PRODUCER_WARPS);
                mbarrier::init(rings.empty(i), CONSUMER_WARPS);
            }
            i += 1;
        }
        let mut i = 0;
        while i < R {
            // SAFETY: as above.
            unsafe {
                mbarrier::init(rings.raw_full(i), 1);
                mbarrier::init(rings.raw_empty(i), PRODUCER_WARPS);
            }
            i += 1;
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
        // SAFETY: the whole warpgroup, converged; ptxas fits its code in the budget.
        unsafe { wgmma::set_max_registers::<TC6W_PRODUCER_REGS, false>() };
        // SAFETY: the warpgroup, after the initialisation; the kernel's contract.
        unsafe { produce(&p, rings, ktiles, row0, col0) };
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
    let wait_full = |kt: u32| unsafe { mbarrier::wait(rings.full(kt % S), (kt / S) & 1) };
    let release = |kt: u32| {
        simt_std::warp::sync();
        if lane == 0 {
            // SAFETY: an initialised barrier expecting one arrival per multiplying warp.
            unsafe { mbarrier::arrive(rings.empty(kt % S)) };
        }
    };
    // As stage 6t: fragments one k step ahead of the `mma`s, across K steps too.
    wait_full(0);
    let mut cur = frags(rings.stage(0), 0);
    let mut kt = 0;
    while kt < ktiles {
        let st = rings.stage(kt % S);
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
            cur = frags(rings.stage((kt + 1) % S), 0);
        }
        // SAFETY: as above.
        unsafe { mma_tile::<TF32>(&mut acc, &last.0, &last.1) };
        kt += 1;
    }
    if staged {
        // Every stage and slot was waited for; once all warps are done with them (the
        // producers after their last K step) the shared memory may hold the staging
        // tiles. The whole block takes this branch (`staged` is the block's).
        sync_threads();
        // SAFETY: the tile is inside C, rows 16-byte aligned (checked); the stages and
        // slots are free (above); the staging tiles end before the barriers (the
        // module's assertion).
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
    /// accumulation and output: stage 6t's multiplying warps; A by TMA; B as it lies,
    /// by TMA into raw slots, transposed into the stages by a producer warpgroup.
    ///
    /// # Safety
    /// `p.a_map` and `p.b_map` are TF32 tensor maps (in global memory) of the f32
    /// matrices `A: m x k` (boxes of 128 rows x 32 columns, 128-byte swizzled) and
    /// `B: k x n` (boxes of 32 rows x 256 columns, not swizzled); `p.c` is an f32
    /// matrix writable at `c[i*ld + j]` for `i < m, j < n` that does not overlap A or
    /// B, with fewer than 2^32 elements.
    ///
    /// # Parameters
    /// One [`MatmulParamsTma`]: the two maps, `c`: `[m, n]` row-major f32, the sizes,
    /// and `epilogue: Relu` to fuse the ReLU (`c_map` and `c_type` are not read).
    ///
    /// # Tiling
    /// Block tile 128x256, K steps of 32; 3 stages of 48 KiB (A `[128][32]` by TMA,
    /// `Bᵀ` `[256][32]` by the producers, both 128-byte swizzled) and 2 raw slots of
    /// 32 KiB (`B` `[32][256]`); warp tile 64x64 = 4x8 `mma.m16n8k8`, both operands by
    /// `ldmatrix.x4`.
    ///
    /// # Thread Mapping
    /// 384 threads: warps 0-7 multiply (warp `w` at rows `64·(w/4)`, columns
    /// `64·(w%4)`), warps 8-11 transpose (16 units of 4 k a thread per K step; thread
    /// 256 also issues the copies). `grid = (ceil(n/256), ceil(m/128))` in grouped
    /// order, one block per SM.
    #[launch(threads = TC6W_THREADS, min_blocks = 1, shared = TC6W_SMEM_BYTES, target = "sm_90a")]
    pub unsafe fn matmul_mma_ws_tf32(p: MatmulParamsTma) {
        // SAFETY: forwarded.
        unsafe { body(p) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each producer load (one k, 32 consecutive columns) meets 32 banks; each
    /// quarter-warp's 16-byte stores meet 8 different chunks (the 4 wavefronts of a
    /// 512-byte store, none more); a K step's 4 warps x 16 units cover `Bᵀ`'s tile once.
    #[test]
    fn transposition_is_conflict_free_and_covers_the_tile() {
        let mut seen = vec![0u8; (BN * 8) as usize];
        for pw in 0..PRODUCER_WARPS {
            for u in 0..UNITS {
                for e in 0..4 {
                    let mut banks = [false; 32];
                    for lane in 0..32 {
                        let (n, q) = producer_unit(pw, lane, u);
                        let bank = ((raw_offset(4 * q + e, n) / 4) % 32) as usize;
                        assert!(!banks[bank], "load: warp {pw} unit {u} k {e}: lane {lane} meets bank {bank} twice");
                        banks[bank] = true;
                    }
                }
                for quarter in 0..4 {
                    let mut chunks = [false; 8];
                    for lane in 8 * quarter..8 * quarter + 8 {
                        let (n, q) = producer_unit(pw, lane, u);
                        let off = bt_offset(n, q);
                        assert_eq!(off % 16, 0);
                        let chunk = ((off / 16) % 8) as usize;
                        assert!(!chunks[chunk], "store: warp {pw} unit {u}: lane {lane} meets chunk {chunk} twice");
                        chunks[chunk] = true;
                        seen[(n * 8 + q) as usize] += 1;
                        // The kernel's immediates: unit u's offsets from unit 0's.
                        let (n0, q0) = producer_unit(pw, lane, 0);
                        assert_eq!(raw_offset(4 * q, n), raw_offset(4 * q0, n0) + raw_offset(4 * (u / 8), 32 * (u % 8)));
                        assert_eq!(off, bt_offset(n0, q0 + u / 8) + 32 * (u % 8) * A_ROW);
                    }
                }
            }
        }
        assert!(seen.iter().all(|&x| x == 1));
    }
}
