//! Softmax of long rows with each chunk brought on chip by one bulk copy, in
//! warp-specialised blocks (Hopper): DRAM reads, the exchange of row statistics and
//! the writes all overlap.
//!
//! `y[r, c] = exp(x[r, c] - M_r) / S_r`, `M_r = max_c x[r, c]`,
//! `S_r = Σ_c exp(x[r, c] - M_r)`.
//!
//! A long row is cut into chunks of 8192 columns (32 KiB) spread over a persistent
//! grid of one block per SM: block `b` takes chunks `b, b + grid, …`. A chunk can be
//! written only once its whole row is known, so every softmax that splits rows has
//! a dependency between blocks, and the earlier kernels paid for it with idle
//! DRAM: a block that loads, reduces, waits for its row and writes has nothing in
//! flight while it waits (docs/PERFORMANCE.md, sessions 13, 15-20).
//!
//! Here nothing waits in line. The **TMA engine** copies a whole chunk from global
//! to shared memory in one instruction (`cp.async.bulk`, [`tma::bulk_load`]),
//! signalling an **mbarrier** with the bytes when it lands, so one thread keeps a
//! ring of [`SOFTMAX_BULK_STAGES`] chunks (224 KiB) in flight with no registers
//! held. The block's warps each have one job and meet only at mbarriers:
//!
//! | warps | job, per chunk `j` of the block |
//! |---|---|
//! | 8 stats warps | wait until chunk `j` landed; reduce its eighth to `(m, Σ exp(x - m))`; arrive on `sdone[j]` |
//! | 1 publisher | combine the 8 pairs; publish the chunk's pair to global memory, tagged with the launch's epoch |
//! | 1 resolver | load the pairs of chunk `j`'s row (4 a lane in flight) until all carry the epoch; combine them into `(M, 1/S)`; arrive on `rdy[j]` |
//! | 8 write warps | wait for `rdy[j]`; write `exp(x - M) / S` from the stage, streaming stores; arrive on `empty[j]` |
//! | 1 producer | wait for `empty[j - STAGES]` (the write warps and the publisher done with the stage) and for chunk `j -` [`SOFTMAX_BULK_IN_FLIGHT`] to land; copy chunk `j` into its stage |
//!
//! The stats warps run as far ahead of the writes as the ring allows, so the
//! round trips of the row exchange (a store to L2 and the other blocks' loads of
//! it, microseconds when DRAM is saturated) overlap the loads of later chunks
//! instead of stalling them. A pair is published as two 64-bit words that each
//! carry the epoch ([`simt_std::flag::publish_pair`]): no release fence, and a reader needs
//! one load, not a flag and then the data.
//!
//! The H200's numbers (docs/PERFORMANCE.md, sessions 33 and 34; L2 flushed by a
//! write before each run): at 64 x 262144 and 256 x 65536 (64 MiB in, 64 MiB out)
//! this kernel runs 0.0379-0.0398 ms, 79-83% of the 1 GiB copy rate and 89-93% of
//! `torch`'s copy of the same 64 MiB in the same call; the earlier kernels' best 0.0437-0.0490. A
//! timeline of the CUDA probe of this design (`scripts/probes/softmax_bulk.cu`) shows
//! each chunk 6-11 us in shared memory between landing and its write, 2.5-7 of them
//! waiting for its row's pairs behind the grid's loads: hence at most
//! [`SOFTMAX_BULK_IN_FLIGHT`] chunks in flight, and every role working out its next
//! chunk before it waits (`Walk`).
//!
//! **Why this cannot deadlock.** The launch is cooperative (every block resident).
//! Chunk `u` is published once its block's stats warps reach it, which needs its
//! stage, freed by the write of chunk `u - STAGES·grid`, which needs that chunk's
//! row published. With `splits <= STAGES·grid` every chunk of that row has an index
//! below `u`; so the chunk of smallest index not yet published can always be, and
//! all are. The host keeps to that bound. The producer's other wait, for a chunk
//! of its own to land, needs nothing from another block.
//!
//! Rows start 16-byte aligned and have a multiple of 4 columns (the bulk copies
//! move 16-byte units); the last chunk of a row may be short. Columns past a row's
//! end are never read or written. A chunk of only `-inf` contributes `(-inf, 0)`;
//! a row of only `-inf` gives NaN, as `torch.softmax` does.
use crate::config::{
    SOFTMAX_BULK_CHUNK, SOFTMAX_BULK_IN_FLIGHT, SOFTMAX_BULK_SMEM_BYTES, SOFTMAX_BULK_STAGES,
    SOFTMAX_BULK_STATS_WARPS, SOFTMAX_BULK_THREADS, SOFTMAX_BULK_WRITE_WARPS,
};
use crate::params::SoftmaxBulkParams;
use crate::softmax_parts::{combine, warp_combine, warp_combine_lanes};
use simt_std::flag::{load_pair, pair_ready, pair_values, publish_pair, wait_pair};
use simt_std::kernel;
use simt_std::math::{exp, rcp};
use simt_std::mbarrier;
use simt_std::memory::{is_aligned16, store4_cs, F32x4};
use simt_std::shared::{dynamic_shared, Smem};
use simt_std::shared_array;
use simt_std::thread::{block_idx, grid_dim, sync_threads, thread_idx};
use simt_std::tma;
use simt_std::warp::{lane_id, max_nan, sync as warp_sync, warp_max, warp_sum};

/// Columns of a chunk.
const CHUNK: usize = SOFTMAX_BULK_CHUNK as usize;
/// Stages of the ring.
const ST: u32 = SOFTMAX_BULK_STAGES;
/// Stats warps and write warps.
const NS: u32 = SOFTMAX_BULK_STATS_WARPS;
const NW: u32 = SOFTMAX_BULK_WRITE_WARPS;
/// 16-byte vectors per lane of a stats warp's and a write warp's share of a chunk.
const VS: usize = CHUNK / (4 * 32 * NS as usize);
const VW: usize = CHUNK / (4 * 32 * NW as usize);
/// The control warps, after the stats and write warps.
const PUBLISHER: u32 = NS + NW;
const PRODUCER: u32 = NS + NW + 1;
const RESOLVER: u32 = NS + NW + 2;
const _: () = assert!(
    SOFTMAX_BULK_THREADS == 32 * (RESOLVER + 1)
        && VS * 4 * 32 * NS as usize == CHUNK
        && VW * 4 * 32 * NW as usize == CHUNK
        && NS <= 32
        && NS.is_power_of_two()
        && SOFTMAX_BULK_SMEM_BYTES as usize == ST as usize * CHUNK * 4
        && SOFTMAX_BULK_IN_FLIGHT >= 1
        && SOFTMAX_BULK_IN_FLIGHT <= ST
);

/// The block's barriers and the slots they guard, in static shared memory; the
/// ring of stages is the dynamic shared memory.
#[derive(Clone, Copy)]
struct Shared {
    bars: Smem<u64>,
    /// `2·NS` floats per stage: the stats warps' pairs.
    parts: Smem<f32>,
    /// 2 floats per stage: the row's `M` and `1/S`.
    row: Smem<f32>,
    ring: Smem<f32>,
}

impl Shared {
    /// Stage `s` landed (one arrival: the producer's, with the bytes).
    fn full(self, s: u32) -> Smem<u64> {
        self.bars.add(s as usize)
    }
    /// Stage `s` and its `parts` slots are free: the write warps are done with the
    /// chunk and the publisher with its pairs (`NW + 1` arrivals).
    fn empty(self, s: u32) -> Smem<u64> {
        self.bars.add((ST + s) as usize)
    }
    /// The stats warps' pairs of stage `s` are in `parts` (`NS` arrivals).
    fn sdone(self, s: u32) -> Smem<u64> {
        self.bars.add((2 * ST + s) as usize)
    }
    /// The row of stage `s`'s chunk is in `row` (one arrival: the resolver's).
    fn rdy(self, s: u32) -> Smem<u64> {
        self.bars.add((3 * ST + s) as usize)
    }
    fn stage(self, s: u32) -> Smem<f32> {
        self.ring.add(s as usize * CHUNK)
    }
}

/// A role's walk over its block's chunks `b, b + g, …`: chunk `c` is part
/// `c % splits` of row `c / splits`, stepped without a division, so that a role
/// works out its next chunk before it waits for it and nothing but the wait lies
/// between two hand-offs (H200, session 34: the divisions after each wait cost the
/// kernel about 3% against the CUDA probe of the same design).
#[derive(Clone, Copy)]
struct Walk {
    row: u32,
    part: u32,
    row_step: u32,
    part_step: u32,
    splits: u32,
    cols: u32,
}

impl Walk {
    #[inline(always)]
    fn new(p: &SoftmaxBulkParams, b: usize, g: usize) -> Self {
        let (b, g, splits) = (b as u32, g as u32, p.splits);
        Walk {
            row: b / splits,
            part: b % splits,
            row_step: g / splits,
            part_step: g % splits,
            splits,
            cols: p.x.cols,
        }
    }

    /// The chunk's row, first column and length in columns (a positive multiple of 4,
    /// at most [`CHUNK`]).
    #[inline(always)]
    fn chunk(&self) -> (usize, usize, usize) {
        let start = self.part as usize * CHUNK;
        (
            self.row as usize,
            start,
            (self.cols as usize - start).min(CHUNK),
        )
    }

    /// On to the block's next chunk (`c + g`).
    #[inline(always)]
    fn next(&mut self) {
        self.part += self.part_step;
        self.row += self.row_step;
        if self.part >= self.splits {
            self.part -= self.splits;
            self.row += 1;
        }
    }
}

/// What every role of a block starts from: the launch's parameters, the block's
/// shared memory and its chunks (`mine` of them: `b, b + g, …`).
#[derive(Clone, Copy)]
struct Block<'a> {
    p: &'a SoftmaxBulkParams,
    sh: Shared,
    mine: u32,
    b: usize,
    g: usize,
}

kernel! {
    /// Softmax of long rows: chunks of [`SOFTMAX_BULK_CHUNK`] columns copied into a
    /// shared-memory ring by bulk copies, reduced, exchanged and written by
    /// specialised warps (see the module doc).
    ///
    /// # Safety
    /// `p.x` readable and `p.y` writable as `[rows, cols]` (strides `ld`; `y` is `x` or
    /// does not overlap it); `x`'s rows start 16-byte aligned (`x.ptr` and `x.ld`) and
    /// `cols` is a positive multiple of 4; `splits = ceil(cols / SOFTMAX_BULK_CHUNK)`;
    /// `rows · splits < 2^31`; `p.pairs` is 16-byte aligned and holds `2·rows·splits`
    /// u64 of which none holds `epoch` in its high half before the launch; the grid is
    /// at most `rows · splits` blocks and at least `ceil(splits / SOFTMAX_BULK_STAGES)` (`splits <= STAGES · grid`);
    /// the launch is cooperative (every block resident) with
    /// [`SOFTMAX_BULK_SMEM_BYTES`] of dynamic shared memory.
    ///
    /// # Parameters
    /// One [`SoftmaxBulkParams`]: `x`, `y`: `[rows, cols]`; `splits`; `pairs`; `epoch`;
    /// `evict_first`.
    ///
    /// # Thread Mapping
    /// [`SOFTMAX_BULK_THREADS`] = 19 warps: 8 stats warps (warp `w` reduces the
    /// 16-byte vectors `w·256 + 32·k + lane` of each chunk, `k < 8`), 8 write warps
    /// (likewise), the publisher, the producer (lane 0) and the resolver. Block `b` of
    /// `grid` (one per SM) takes chunks `b, b + grid, …` (chunk `i` is row
    /// `i / splits`, columns `(i % splits)·8192 ..`).
    #[launch(threads = SOFTMAX_BULK_THREADS, min_blocks = 1, shared = SOFTMAX_BULK_SMEM_BYTES, cooperative = true, target = "sm_90a")]
    pub unsafe fn softmax_bulk(p: SoftmaxBulkParams) {
        let sh = Shared {
            bars: shared_array!(SMX_BULK_BARS, u64, 4 * ST as usize),
            parts: shared_array!(SMX_BULK_PARTS, f32, 2 * (ST * NS) as usize),
            row: shared_array!(SMX_BULK_ROW, f32, 2 * ST as usize),
            ring: dynamic_shared::<f32>(),
        };
        let t = thread_idx().x;
        if t == 0 {
            let mut s = 0;
            while s < ST {
                // SAFETY: thread 0 alone, before the barrier below; 8-byte aligned
                // slots of this block's static shared memory.
                unsafe {
                    mbarrier::init(sh.full(s), 1);
                    mbarrier::init(sh.empty(s), NW + 1);
                    mbarrier::init(sh.sdone(s), NS);
                    mbarrier::init(sh.rdy(s), 1);
                }
                s += 1;
            }
            mbarrier::fence_init();
        }
        sync_threads();
        let (g, b) = (grid_dim().x as usize, block_idx().x as usize);
        let n = p.x.rows as usize * p.splits as usize;
        // This block's chunks: b < n (the grid is at most n blocks).
        let mine = (n - b).div_ceil(g) as u32;
        let (w, lane) = (t / 32, lane_id());
        let k = Block {
            p: &p,
            sh,
            mine,
            b,
            g,
        };
        // SAFETY (each role): the contract; every role walks the block's chunks in
        // order and meets the others only at the barriers initialised above.
        unsafe {
            if w < NS {
                stats(k, w, lane);
            } else if w < NS + NW {
                write(k, w - NS, lane);
            } else if w == PUBLISHER {
                publisher(k, lane);
            } else if w == PRODUCER {
                if lane == 0 {
                    producer(k);
                }
            } else {
                resolver(k, lane);
            }
        }
    }
}

/// Stats warp `w`: for each chunk, its vectors' maximum and `Σ exp(x - m)`, reduced
/// over the warp into `parts`, then one arrival on `sdone`.
///
/// # Safety
/// The kernel's contract; called by the whole warp.
#[inline(always)]
unsafe fn stats(k: Block, w: u32, lane: u32) {
    let Block { p, sh, mine, b, g } = k;
    let first = 4 * (w as usize * 32 * VS + lane as usize);
    let mut walk = Walk::new(p, b, g);
    let mut j = 0;
    while j < mine {
        let s = j % ST;
        let (_, _, len) = walk.chunk();
        let stage = sh.stage(s);
        // SAFETY: initialised; the producer copies chunk j into stage s and its phase
        // (j / ST) completes when the bytes land.
        unsafe { mbarrier::wait(sh.full(s), (j / ST) & 1) };
        let mut v = [F32x4::splat(f32::NEG_INFINITY); VS];
        if len == CHUNK {
            let mut k = 0;
            while k < VS {
                // SAFETY: inside the stage (first + 128k + 4 <= CHUNK), landed.
                v[k] = unsafe { stage.add(first + 128 * k).load4() };
                k += 1;
            }
        } else {
            let mut k = 0;
            while k < VS {
                let c = first + 128 * k;
                if c < len {
                    // SAFETY: as above; columns c..c+4 of the chunk (len % 4 == 0).
                    v[k] = unsafe { stage.add(c).load4() };
                }
                k += 1;
            }
        }
        let mut m = f32::NEG_INFINITY;
        let mut k = 0;
        while k < VS {
            let a = v[k];
            m = max_nan(m, max_nan(max_nan(a.x, a.y), max_nan(a.z, a.w)));
            k += 1;
        }
        let m = warp_max(m);
        let mut sum = 0.0f32;
        if m != f32::NEG_INFINITY {
            let mut k = 0;
            while k < VS {
                let e = v[k].map(|x| exp(x - m));
                sum += (e.x + e.y) + (e.z + e.w);
                k += 1;
            }
        }
        let sum = warp_sum(sum);
        warp_sync();
        if lane == 0 {
            let slot = sh.parts.add(2 * (s * NS + w) as usize);
            // SAFETY: this warp's slot of stage s; the publisher read its previous use
            // (chunk j - ST) and arrived on `empty` before this stage was refilled.
            unsafe {
                slot.write(m);
                slot.add(1).write(sum);
                mbarrier::arrive(sh.sdone(s));
            }
        }
        walk.next();
        j += 1;
    }
}

/// The publisher: each chunk's `NS` pairs combined and published to `p.pairs`.
///
/// # Safety
/// The kernel's contract; called by the whole warp.
#[inline(always)]
unsafe fn publisher(k: Block, lane: u32) {
    let Block { p, sh, mine, b, g } = k;
    let mut j = 0;
    while j < mine {
        let s = j % ST;
        let c = b + j as usize * g;
        // SAFETY: initialised; the stats warps arrive once each per chunk.
        unsafe { mbarrier::wait(sh.sdone(s), (j / ST) & 1) };
        let (m, sum) = if lane < NS {
            let slot = sh.parts.add(2 * (s * NS + lane) as usize);
            // SAFETY: written by stats warp `lane` before its arrival.
            unsafe { (slot.read(), slot.add(1).read()) }
        } else {
            (f32::NEG_INFINITY, 0.0)
        };
        // NS is a power of two (asserted above): lane 0 gets lanes 0..NS's pair.
        let (m, sum) = warp_combine_lanes(m, sum, NS);
        if lane == 0 {
            // SAFETY: pair slot c < rows·splits, 16-byte aligned (the contract); the
            // stage's `parts` were read above (the shuffles consumed them), so the
            // arrival may free them for chunk j + ST.
            unsafe {
                publish_pair(p.pairs.add(2 * c), m, sum, p.epoch);
                mbarrier::arrive(sh.empty(s));
            }
        }
        j += 1;
    }
}

/// The producer (one thread): chunk `j` into stage `j % ST` once the writes of
/// chunk `j - ST` are done.
///
/// # Safety
/// The kernel's contract.
#[inline(always)]
unsafe fn producer(k: Block) {
    let Block { p, sh, mine, b, g } = k;
    let mut walk = Walk::new(p, b, g);
    let mut j = 0;
    while j < mine {
        let s = j % ST;
        let (r, start, len) = walk.chunk();
        let bytes = 4 * len as u32;
        // In bounds: the row's columns start..start+len (the contract).
        let src = p.x.ptr.wrapping_add(r * p.x.ld as usize + start);
        if j >= ST {
            // SAFETY: initialised; the write warps arrive once each per chunk.
            unsafe { mbarrier::wait(sh.empty(s), (j / ST - 1) & 1) };
        }
        if j >= SOFTMAX_BULK_IN_FLIGHT {
            // At most IN_FLIGHT chunks in flight (its doc says why).
            let i = j - SOFTMAX_BULK_IN_FLIGHT;
            // SAFETY: initialised; chunk i's phase of its stage completes when it lands,
            // and that stage's next phase needs chunk i + ST, not yet copied (i + ST > j).
            unsafe { mbarrier::wait(sh.full(i % ST), (i / ST) & 1) };
        }
        // SAFETY: the row's columns start..start+len, 16-byte aligned (aligned rows,
        // start % 4 == 0), a multiple of 16 bytes; the stage is free (above) and holds
        // CHUNK floats; the arrival announces exactly these bytes.
        unsafe {
            mbarrier::arrive_expect_tx(sh.full(s), bytes);
            tma::bulk_load(sh.stage(s), src, bytes, sh.full(s), p.evict_first != 0);
        }
        walk.next();
        j += 1;
    }
}

/// The resolver: each chunk's row statistics, from the row's published pairs, into
/// `row`, then one arrival on `rdy`.
///
/// # Safety
/// The kernel's contract; called by the whole warp.
#[inline(always)]
unsafe fn resolver(k: Block, lane: u32) {
    let Block { p, sh, mine, b, g } = k;
    let splits = p.splits as usize;
    // The last row resolved and its (M, 1/S): a block's consecutive chunks share a
    // row when rows are longer than the grid's chunks (splits > grid).
    let (mut last, mut row_m, mut row_inv) = (usize::MAX, 0.0f32, 0.0f32);
    let mut walk = Walk::new(p, b, g);
    let mut j = 0;
    while j < mine {
        let s = j % ST;
        let r = walk.row as usize;
        // Not before this block's own pair of the chunk is under way: the row's other
        // blocks reach it at about the same time.
        // SAFETY: initialised; the stats warps arrive once each per chunk.
        unsafe { mbarrier::wait(sh.sdone(s), (j / ST) & 1) };
        if r != last {
            // SAFETY: row r's pair slots are inside p.pairs (the contract).
            let base = unsafe { p.pairs.add(2 * r * splits) };
            let (mut m, mut sum) = (f32::NEG_INFINITY, 0.0f32);
            let mut q0 = 0;
            while q0 < splits {
                // Four pairs a lane in flight, then the ones not yet published waited for.
                let mut words = [[0u64; 2]; 4];
                let mut u = 0;
                while u < 4 {
                    let q = q0 + 32 * u + lane as usize;
                    if q < splits {
                        // SAFETY: slot q of row r.
                        words[u] = unsafe { load_pair(base.add(2 * q)) };
                    }
                    u += 1;
                }
                let mut u = 0;
                while u < 4 {
                    let q = q0 + 32 * u + lane as usize;
                    if q < splits {
                        let (pm, ps) = if pair_ready(words[u], p.epoch) {
                            pair_values(words[u])
                        } else {
                            // SAFETY: slot q of row r; its block is resident and
                            // publishes it (the module doc's argument).
                            unsafe { wait_pair(base.add(2 * q), p.epoch) }
                        };
                        (m, sum) = combine(m, sum, pm, ps);
                    }
                    u += 1;
                }
                q0 += 128;
            }
            let (m, sum) = warp_combine(m, sum);
            (last, row_m, row_inv) = (r, m, rcp(sum));
        }
        if lane == 0 {
            // SAFETY: the row slots of stage s; the write warps read their previous use
            // (chunk j - ST) before the stage was refilled.
            unsafe {
                sh.row.add(2 * s as usize).write(row_m);
                sh.row.add(2 * s as usize + 1).write(row_inv);
                mbarrier::arrive(sh.rdy(s));
            }
        }
        walk.next();
        j += 1;
    }
}

/// Write warp `w`: for each chunk, once its row is resolved, `exp(x - M) / S` from
/// the stage to `y`, then one arrival on `empty`.
///
/// # Safety
/// The kernel's contract; called by the whole warp.
#[inline(always)]
unsafe fn write(k: Block, w: u32, lane: u32) {
    let Block { p, sh, mine, b, g } = k;
    let first = 4 * (w as usize * 32 * VW + lane as usize);
    let vec = is_aligned16(p.y.ptr) && p.y.ld % 4 == 0;
    let mut walk = Walk::new(p, b, g);
    let mut j = 0;
    while j < mine {
        let s = j % ST;
        let phase = (j / ST) & 1;
        let (r, start, len) = walk.chunk();
        let stage = sh.stage(s);
        // In bounds: row r of y, columns start.. (the contract).
        let dst = p.y.ptr.wrapping_add(r * p.y.ld as usize + start);
        // SAFETY: initialised; the stage landed (full) and its row is resolved (rdy).
        unsafe {
            mbarrier::wait(sh.full(s), phase);
            mbarrier::wait(sh.rdy(s), phase);
        }
        // SAFETY: written by the resolver before its arrival.
        let (m, inv) = unsafe {
            (
                sh.row.add(2 * s as usize).read(),
                sh.row.add(2 * s as usize + 1).read(),
            )
        };
        // One chunk's vector: `exp(x - M) / S` to y.
        // SAFETY (both loops): columns c..c+4 of the landed chunk and of y's row
        // (c + 4 <= len).
        let put = |c: usize| unsafe {
            let e = stage.add(c).load4().map(|x| exp(x - m) * inv);
            if vec {
                store4_cs(dst.add(c), e);
            } else {
                let a = e.to_array();
                let mut i = 0;
                while i < 4 {
                    *dst.add(c + i) = a[i];
                    i += 1;
                }
            }
        };
        let mut k = 0;
        if len == CHUNK {
            // No bounds check between the vectors.
            while k < VW {
                put(first + 128 * k);
                k += 1;
            }
        } else {
            while k < VW {
                let c = first + 128 * k;
                if c < len {
                    put(c);
                }
                k += 1;
            }
        }
        // The stage's values are all used (stored) before the arrival frees it.
        warp_sync();
        if lane == 0 {
            // SAFETY: initialised; one arrival per write warp per chunk.
            unsafe { mbarrier::arrive(sh.empty(s)) };
        }
        walk.next();
        j += 1;
    }
}
