//! Matmul + ReLU, stage 4s: stage 4 with its partial last wave's tiles **split along
//! K** (or, with fewer tiles than SMs, every tile), one segment per block, in one
//! ordinary (non-persistent) launch.
//!
//! Stage 4 ([`matmul_relu_warptiled()`](crate::matmul_warptiled::matmul_relu_warptiled()))
//! runs two 256-thread blocks per SM, one 128x128 tile of C each. At 4096^3 that is
//! 1024 tiles on the 264 blocks an H100 or H200 holds at once: three full waves,
//! then a fourth in which 232 blocks work and 32 slots stay empty, and the whole
//! wave costs as much as a full one (3.88 waves of work in 4). Stage 4k
//! ([`crate::matmul_warptiled_streamk`]) evens the work out with stream-K, but its
//! persistent K loop runs 18% slower per wave than stage 4's, which costs more than
//! the tail saves on most shapes.
//!
//! Here every block runs stage 4's own K loop ([`k_steps`]) over one contiguous range
//! of K steps of one tile, so the loop and its registers are stage 4's. The grid is
//! 1-D, `dp_tiles + parts · split_tiles` blocks:
//! * blocks `0 .. dp_tiles` take the first tiles (in stage 4's row-by-row order)
//!   whole: the whole waves;
//! * the last `split_tiles` tiles are cut along K into `parts` segments
//!   ([`tail_segment`]): part 0 is the first `cut` K steps, parts `1 .. parts` share
//!   the rest evenly. Block `dp_tiles + p · split_tiles + j` takes part `p` of split
//!   tile `j`: all first parts come first in the grid, so the hardware, which hands
//!   out blocks in order as slots free up, starts the long parts first and fills the
//!   remaining slots with the short ones.
//!
//! The host picks `parts` and `cut` (`tail_plan` in the host crate). Where more tiles
//! are left than SMs (some SM would run two of them), three parts: the first 5/8 of
//! the K steps, then two of 3/16 (4096^3 on 132 SMs: 232 tiles, parts of 320, 96 and
//! 96 steps). Where fewer are left (each SM would run one, which runs about twice as
//! fast alone), equal parts, as many as one wave holds (3072^3: 48 tiles, 5 parts).
//! With fewer tiles than SMs and no whole wave, every tile is cut into equal parts, as
//! many as one wave holds (1024x1024x2048: 64 tiles, 4 parts), `dp_tiles` being 0.
//! Which plan is fastest was measured, not derived: the blocks of the whole waves do
//! not end together, and a model of slots freed all at once ranked the plans wrongly
//! (docs/PERFORMANCE.md, session 26).
//!
//! **The fix-up is a second launch.** A part writes its raw sums to its own slot of a
//! workspace, a 128x128 row-major tile, with stage 4's own C stores (a different base
//! and row length); [`matmul_tail_reduce()`] then adds each split tile's slots in part
//! order and writes C with the epilogue. No block ever waits for another, so the
//! product needs no co-residency (no cooperative launch), and the sum is `((p_0 +
//! p_1) + p_2) + …` on every run: the result differs from stage 4's in the last bits
//! where a tile is split, as stage 4k's does, and is the same on every run.
//!
//! Why not in the same launch (the last part to finish adding the others' slots, as
//! stage 4k's tails do): any such code after the K loop, inlined or called, changed
//! how ptxas allocated the loop's registers for every tile. Compiled for sm_90 the
//! loop spilled, or put 50-70 of its 512 FFMAs on three same-bank sources against
//! stage 4's 6-8 (the count that predicted stage 4's dispatch stalls, sessions 24 and
//! 25 of docs/PERFORMANCE.md). Only the store's base, row length and epilogue differ
//! between a whole tile and a part here, and the loop is stage 4's, FFMA for FFMA.
use crate::config::{MM4K_PARTIAL_FLOATS, MM_BK, MM_BM, MM_BN, MM_THREADS};
use crate::matmul_tiled::{TM, TN};
use crate::matmul_warptiled::{k_steps, WarpTiling, STAGE};
use crate::params::MatmulParamsTail4;
use simt_std::memory::{is_aligned16, load4_first, opaque_u32, store4_first, F32x4};
use simt_std::thread::{block_idx, thread_idx};
use simt_std::{kernel, shared_array, unroll};

const _: () = assert!(MM4K_PARTIAL_FLOATS == MM_BM * MM_BN);

/// The most parts a split tile is cut into (the host's plans stay within it).
pub const TAIL_MAX_PARTS: u32 = 16;

/// Blocks of [`matmul_tail_reduce()`] per split tile (each a band of 16 of its rows).
pub const TAIL_REDUCE_BLOCKS: u32 = 8;
/// Groups of 4 floats each thread of [`matmul_tail_reduce()`] adds.
const TAIL_BATCH: usize = 2;
/// Parts whose slots a thread of [`matmul_tail_reduce()`] loads at once: with its
/// [`TAIL_BATCH`] groups, 8 loads of 16 bytes in flight.
const TAIL_PARTS_AT_ONCE: u32 = 4;
// The reduce unrolls its batch by 2 and its parts by 4, and its blocks' batches cover
// the tile exactly.
const _: () = assert!(
    TAIL_BATCH == 2
        && TAIL_PARTS_AT_ONCE == 4
        && MM4K_PARTIAL_FLOATS / 4 == TAIL_REDUCE_BLOCKS * TAIL_BATCH as u32 * MM_THREADS
);

/// The first K step of part `p` of a split tile of `ksteps` steps: part 0 is
/// `[0, cut)`, parts `1 .. parts` share `[cut, ksteps)` evenly (the remainder to the
/// later parts). `part_start(parts, ..) == ksteps`.
#[inline(always)]
pub const fn part_start(p: u32, parts: u32, cut: u32, ksteps: u32) -> u32 {
    if p == 0 {
        0
    } else {
        cut + ((ksteps - cut) as u64 * (p - 1) as u64 / (parts - 1) as u64) as u32
    }
}

/// Block `blk`'s segment: `(tile, s0, s1, part)`, K steps `[s0, s1)` of tile `tile`
/// (counted row by row), `part` `None` for a whole tile. `dp_tiles` whole tiles first,
/// then part 0 of each of the `split_tiles` last tiles, then part 1 of each, and so on
/// (module docs).
#[inline(always)]
pub const fn tail_segment(
    blk: u32,
    dp_tiles: u32,
    split_tiles: u32,
    parts: u32,
    cut: u32,
    ksteps: u32,
) -> (u32, u32, u32, Option<u32>) {
    if blk < dp_tiles || split_tiles == 0 {
        return (blk, 0, ksteps, None);
    }
    let j = blk - dp_tiles;
    let (p, t) = (j / split_tiles, j % split_tiles);
    (
        dp_tiles + t,
        part_start(p, parts, cut, ksteps),
        part_start(p + 1, parts, cut, ksteps),
        Some(p),
    )
}

/// Slot `s` of the workspace: a 128x128 row-major tile of raw sums (the offset in
/// `usize`: slots times 16384 floats can pass 2^32).
#[inline(always)]
fn slot_base(partials: *mut f32, s: u32) -> *mut f32 {
    slot_base_of(partials, s, MM_BM)
}

/// Slot `s` of a workspace of `rows x 128` row-major slots.
#[inline(always)]
pub(crate) fn slot_base_of(partials: *mut f32, s: u32, rows: u32) -> *mut f32 {
    partials.wrapping_add(s as usize * (rows * MM_BN) as usize)
}

// Two 256-thread blocks per SM, as stage 4: at most 128 registers per thread.
kernel! {
    /// `C = relu?(A · B)` as [`matmul_relu_warptiled()`](crate::matmul_warptiled::matmul_relu_warptiled()),
    /// the tiles of its partial last wave (or every tile) split along K (module docs).
    ///
    /// # Safety
    /// `p.mm` as for `matmul_relu_warptiled` (A, B readable, C writable, C not
    /// overlapping them, fewer than 2^32 elements each, `k <= 2^31`, `k >= 1`);
    /// `p.dp_tiles + p.split_tiles` is the number of 128x128 tiles of C; where
    /// `p.split_tiles > 0`, `2 <= p.parts <= TAIL_MAX_PARTS` and `1 <= p.cut` with
    /// every part at least one K step (`part_start` increasing up to `ceil(k / 8)`);
    /// `p.partials` holds `parts · split_tiles · MM4K_PARTIAL_FLOATS` floats, 16-byte
    /// aligned, used by no other launch running at the same time, and
    /// `(m + 128) · 128 + n + 128 < 2^32` (a slot's rows are addressed as C's, 128
    /// long, its columns as C's); the grid
    /// `dp_tiles + parts · split_tiles < 2^31` blocks.
    ///
    /// # Parameters
    /// One [`MatmulParamsTail4`]: `mm` (A `[m, k]`, B `[k, n]`, C `[m, n]`, row-major
    /// with their strides, and the epilogue), `dp_tiles`, `split_tiles`, `parts` and
    /// `cut`, the workspace `partials`.
    ///
    /// # Tiling
    /// As stage 4: block tile 128x128, K steps of 8, two shared stages; warp tile
    /// 32x64; thread tile 8x8. One segment (a whole tile or one part) per block; a
    /// part's sums go to its slot, and [`matmul_tail_reduce()`] finishes its tile.
    ///
    /// # Thread Mapping
    /// As stage 4 within a tile. A 1-D grid of `dp_tiles + parts · split_tiles`
    /// blocks of 256 threads; block `b` takes [`tail_segment`]`(b, ..)`.
    #[launch(threads = MM_THREADS, min_blocks = 2)]
    pub unsafe fn matmul_relu_warptiled_tail(sp: MatmulParamsTail4) {
        let (a, b, c, m, n, k, lda, ldb, ldc, relu) = sp.mm.unpack();
        let a_s = shared_array!(MM_WS_A, f32, 2 * STAGE);
        let b_s = shared_array!(MM_WS_B, f32, 2 * STAGE);
        let t = thread_idx().x;
        let ksteps = k.div_ceil(MM_BK);
        let (tile, s0, s1, _) = tail_segment(block_idx().x, sp.dp_tiles, sp.split_tiles, sp.parts, sp.cut, ksteps);
        let tiles_n = n.div_ceil(MM_BN);
        let origin = ((tile / tiles_n) * MM_BM, (tile % tiles_n) * MM_BN);
        // The segment as a product of its own: A's columns and B's rows from K step
        // s0 on, so that the loop counts from 0 as stage 4's does (with s0 live in
        // it, ptxas spilled and put 64-70 FFMAs on same-bank sources). Its bounds stay
        // the matrices' (k - off); the loads of the step past s1, which nothing
        // uses, read the next part's K steps inside them.
        let off = s0 * MM_BK;
        let (a_seg, b_seg) = (a.wrapping_add(off as usize), b.wrapping_add(off as usize * ldb as usize));
        let tl = WarpTiling::at(a_seg, b_seg, c, m, n, k - off, lda, ldb, ldc, t, origin);
        let mut acc = [[0.0f32; TN]; TM];
        // SAFETY: kernel contract (A from column off and B from row off, with k - off
        // columns and rows left, are inside them: off < k); the tiles are this
        // kernel's own shared arrays, two stages each; s0 < s1 <= ceil(k / 8) (the
        // contract's parts).
        unsafe { k_steps(&tl, a_s, b_s, &mut acc, 0, s1 - s0) };
        // The schedule again, from the launch's constants (`opaque_u32`): nothing of it
        // stays live through the K loop, whose registers are stage 4's.
        let blk = opaque_u32(block_idx().x);
        let ksteps = opaque_u32(k).div_ceil(MM_BK);
        let (_, _, _, part) = tail_segment(blk, sp.dp_tiles, sp.split_tiles, sp.parts, sp.cut, ksteps);
        // A whole tile to C with the epilogue; a part's raw sums to its slot, C's
        // address arithmetic landing in it from a base `origin` elements before it.
        let (cw, ldw, reluw) = match part {
            None => (c, ldc, relu),
            Some(p) => {
                let slot = slot_base(sp.partials, p * sp.split_tiles + (blk - sp.dp_tiles) % sp.split_tiles);
                (slot.wrapping_sub((origin.0 * MM_BN + origin.1) as usize), MM_BN, 0)
            }
        };
        // SAFETY: the kernel's contract for C, or for the workspace: the part's slot
        // holds the tile's 128x128 sums in rows of 128, and the stores touch its
        // elements of C's rows and columns only, at local row r - row0 < 128 and column
        // c0 - col0 < 128. The u32 offset r·128 + c0 stays below 2^32: r < m + 128,
        // c0 < n + 128 and (m + 128)·128 + n + 128 < 2^32 (the contract). The base is
        // 16-byte aligned as the slot is (row0·128 + col0 is a multiple of 4).
        unsafe { tl.write(cw, ldw, reluw, &acc) };
    }
}

/// The body of the tail reduces: adds the `parts` slots of each split tile of `ROWS`
/// rows (128 for stage 4s, 256 for stage 4ws), in part order, then applies the
/// epilogue. Blocks of 256 threads, `ROWS / 16` per split tile, each a band of 16 rows
/// ([`matmul_tail_reduce()`]'s Thread Mapping).
///
/// # Safety
/// As [`matmul_tail_reduce()`], with slots of `ROWS x 128` floats and a 1-D grid of
/// `ROWS / 16 · split_tiles` blocks of 256 threads.
#[inline(always)]
pub(crate) unsafe fn tail_reduce<const ROWS: u32>(sp: MatmulParamsTail4) {
    // A band is 16 rows of 128: 512 groups of 4 floats.
    const { assert!(ROWS % 16 == 0 && MM4K_PARTIAL_FLOATS / 4 / TAIL_REDUCE_BLOCKS * 4 == 16 * MM_BN) };
    let bands = ROWS / 16;
    let (c, m, n, ldc) = (sp.mm.c.ptr, sp.mm.c.rows, sp.mm.c.cols, sp.mm.c.ld);
    let relu = sp.mm.epilogue as u32 != 0;
    let act = |x: f32| if relu && !(x > 0.0) { 0.0 } else { x };
    let (j, band) = (block_idx().x / bands, block_idx().x % bands);
    let tile = sp.dp_tiles + j;
    let tiles_n = n.div_ceil(MM_BN);
    let (row0, col0) = ((tile / tiles_n) * ROWS, (tile % tiles_n) * MM_BN);
    let vec_c = is_aligned16(c) && ldc % 4 == 0;
    // Every thread has few groups and many blocks share a tile, and each load
    // round covers 4 parts: with every tile split (fewer tiles than SMs), a
    // thread waits out one load latency per 4 parts (docs/PERFORMANCE.md, session
    // 28). The sums stay in part order.
    let g0 = band * (MM4K_PARTIAL_FLOATS / 4 / TAIL_REDUCE_BLOCKS) + thread_idx().x;
    // Group u: element (r, c0..c0 + 4) of the tile, `valid` of its columns inside C
    // (the ones the parts wrote), `inside` its row and first column inside C.
    let place = |u: usize| {
        let g = g0 + u as u32 * MM_THREADS;
        let (r, c0) = ((4 * g) / MM_BN, (4 * g) % MM_BN);
        let inside = row0 + r < m && col0 + c0 < n;
        (r, c0, inside, if inside { n - col0 - c0 } else { 0 })
    };
    let at = |p: u32, u: usize| {
        let (r, c0, _, valid) = place(u);
        // SAFETY (callers: `inside` and p < parts only): slot p·split + j (the
        // contract's workspace), elements (r, c0..c0 + min(4, valid)) of its
        // ROWSx128 tile, written by part p (inside C); 16-byte aligned (c0 a
        // multiple of 4).
        unsafe {
            load4_first(
                slot_base_of(sp.partials, p * sp.split_tiles + j, ROWS)
                    .add((r * MM_BN + c0) as usize),
                valid,
                true,
            )
        }
    };
    let mut s = [F32x4::default(); TAIL_BATCH];
    let mut p0 = 0;
    while p0 < sp.parts {
        let mut v = [[F32x4::default(); TAIL_BATCH]; TAIL_PARTS_AT_ONCE as usize];
        unroll!(4, Q => {
            if p0 + (Q as u32) < sp.parts {
                unroll!(2, U => {
                    if place(U).2 {
                        v[Q][U] = at(p0 + Q as u32, U);
                    }
                });
            }
        });
        unroll!(4, Q => {
            if p0 + (Q as u32) < sp.parts {
                unroll!(2, U => {
                    // Part 0 starts the sum (adding it to 0.0 would turn -0.0 into
                    // 0.0); the others add in order.
                    s[U] = if p0 + Q as u32 == 0 {
                        v[Q][U]
                    } else {
                        let (a, b) = (s[U], v[Q][U]);
                        F32x4 { x: a.x + b.x, y: a.y + b.y, z: a.z + b.z, w: a.w + b.w }
                    };
                });
            }
        });
        p0 += TAIL_PARTS_AT_ONCE;
    }
    unroll!(2, U => {
        let (r, c0, inside, valid) = place(U);
        if inside {
            // SAFETY: row row0 + r < m; of the columns col0 + c0.., those below n
            // are written (the contract for C).
            unsafe { store4_first(c.add(((row0 + r) * ldc + col0 + c0) as usize), s[U].map(act), valid, vec_c) };
        }
    });
}

kernel! {
    /// `C[tile] = epilogue(Σ_p slot(p, tile))` for stage 4s's split tiles: adds the
    /// `parts` slots of each of the `split_tiles` last tiles in part order `p = 0, 1,
    /// …` (every run rounds the same way), then applies the epilogue.
    ///
    /// # Safety
    /// After [`matmul_relu_warptiled_tail()`] with the same `sp`, in queue order: every
    /// slot holds its part's sums for the tile's elements inside C; C writable with
    /// its stride, not overlapping the workspace; a 1-D grid of
    /// [`TAIL_REDUCE_BLOCKS`]` · split_tiles` blocks of 256 threads.
    ///
    /// # Parameters
    /// The [`MatmulParamsTail4`] of the product.
    ///
    /// # Thread Mapping
    /// [`TAIL_REDUCE_BLOCKS`] (8) blocks per split tile: block `b` takes split tile
    /// `dp_tiles + b / 8`, its rows `16·(b % 8) ..+16` (16-byte groups `512·(b % 8)
    /// ..+512` of the 128x128 tile, row-major); thread `t` of 256 its 2 groups `t`
    /// and `t + 256` there, the slots of 4 parts loaded at once (8 loads in flight).
    #[launch(threads = MM_THREADS)]
    pub unsafe fn matmul_tail_reduce(sp: MatmulParamsTail4) {
        // SAFETY: the kernel's contract, with 128-row tiles.
        unsafe { tail_reduce::<MM_BM>(sp) }
    }
}
