//! Stream-K schedules (Osama, Merrill, Cecka, Garland, Owens, PPoPP 2023) of the
//! stream-K matmul stages: stage 4k ([`crate::matmul_warptiled_streamk`], FP32 SIMT)
//! uses all of it; stage 6k ([`crate::matmul_mma_streamk`], TF32 on tensor cores)
//! uses [`streamk_split`] and [`sk_start`] and walks the same segments in its own code
//! (written first; moving it onto [`Share`] is left until its registers are checked:
//! its spill allowance is measured as it is).
//!
//! **Wave quantisation.** A product of `T` tiles on `G` resident blocks takes
//! `ceil(T / G)` tile-times for `T / G` tile-times of work: 4096^3 in stage 4's
//! 128x128 tiles is 1024 tiles on 264 blocks (two per SM on 132 SMs), 3.88 waves in 4.
//! Stream-K cuts the last tiles finer, along K: one persistent block per resident
//! slot; the tiles, counted in the kernel's order, split in two parts
//! ([`streamk_split`]):
//! * the first `dp_tiles` (a whole number of waves) are **data-parallel**: block `b`
//!   takes tiles `b, b + grid, …` whole;
//! * the last `sk_tiles` (the partial wave plus one full wave, so that every block's
//!   share is at least one tile and a tile is split between at most two blocks) form
//!   one line of `sk_tiles · kt` K steps ("iterations", `kt` per tile), and block `b`
//!   takes iterations `[⌊b·I/grid⌋, ⌊(b+1)·I/grid⌋)` ([`sk_start`]): every block the
//!   same work to within one K step.
//!
//! A block's range cuts its tiles into *segments* ([`Share`]): a **tail** (the last K
//! steps of the tile where the range starts, unless it starts a tile), whole tiles, and
//! a **head** (the first K steps of the tile where it ends, unless it ends one). As
//! every share is at least one tile, a tile is either whole in one block, or a head in
//! block `b - 1` and a tail in block `b`. A block writes its head's partial sums to its
//! own slot of a workspace and publishes a flag; the tail's block waits for it, adds
//! it and writes the tile.
//!
//! **Order.** A block runs its whole tiles first (the data-parallel ones, then its
//! stream-K ones), then its head, then its tail. Whole tiles and heads start at K step
//! 0 in every block at about the same moment, so the blocks read the same slabs of A
//! and B together and share them in L2; walked in range order, the blocks' K offsets
//! spread over all of K and missed L2 (stage 6k on the H200: 8% slower, session 21 of
//! rust-simt's docs/PERFORMANCE.md). It also cannot deadlock: a block publishes its
//! head before it waits for anything (its tail comes last), and waits only for block
//! `b - 1`'s head; the launch is cooperative, so every block is resident.

/// How a product of `tiles` tiles splits over `grid` persistent blocks: `(dp_tiles,
/// sk_tiles)`. No stream-K where the tiles are a whole number of waves or fewer than
/// one (`(tiles, 0)`); otherwise the partial wave plus one full wave, so each block's
/// share is at least one tile (and a tile has at most two segments: one fix-up).
#[inline(always)]
pub const fn streamk_split(tiles: u32, grid: u32) -> (u32, u32) {
    if grid == 0 || tiles <= grid || tiles % grid == 0 {
        return (tiles, 0);
    }
    let sk = tiles % grid + grid;
    (tiles - sk, sk)
}

/// The first stream-K iteration of block `b` of `grid`, over `iters` iterations: the
/// blocks' shares differ by one at most. `sk_start(grid, ..) == iters`.
#[inline(always)]
pub const fn sk_start(b: u32, iters: u32, grid: u32) -> u32 {
    (b as u64 * iters as u64 / grid as u64) as u32
}

/// Block `b`'s segments: its data-parallel tiles, its whole stream-K tiles, its head,
/// its tail, in that order (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    /// How many segments, in all.
    pub segments: u32,
    b: u32,
    grid: u32,
    dp_tiles: u32,
    dp_mine: u32,
    whole: u32,
    has_head: bool,
    kt: u32,
    lo: u32,
    hi: u32,
    first_end: u32,
    head_lo: u32,
}

impl Share {
    /// Block `b` of `grid`, with `dp_tiles` and `sk_tiles` from [`streamk_split`] and
    /// `kt >= 1` K steps per tile; `sk_tiles · kt < 2^32`.
    #[inline(always)]
    pub const fn new(b: u32, grid: u32, dp_tiles: u32, sk_tiles: u32, kt: u32) -> Share {
        let iters = sk_tiles * kt;
        let (lo, hi) = (sk_start(b, iters, grid), sk_start(b + 1, iters, grid));
        let first_end = lo.div_ceil(kt) * kt;
        let head_lo = hi / kt * kt;
        let dp_mine = dp_tiles / grid;
        // A share of at least one tile (the split's contract) keeps first_end <= head_lo.
        let whole = dp_mine + (head_lo - first_end) / kt;
        let has_head = head_lo < hi;
        Share {
            segments: whole + has_head as u32 + (lo < first_end) as u32,
            b,
            grid,
            dp_tiles,
            dp_mine,
            whole,
            has_head,
            kt,
            lo,
            hi,
            first_end,
            head_lo,
        }
    }

    /// Segment `i < segments`: `(tile, kt0, kt1)`, K steps `kt0 .. kt1` of the tile
    /// (`0 .. kt` whole). `kt0 == 0 && kt1 < kt`: a head; `kt0 > 0`: a tail, whose
    /// head is block `b - 1`'s.
    #[inline(always)]
    pub const fn segment(&self, i: u32) -> (u32, u32, u32) {
        if i < self.dp_mine {
            return (self.b + i * self.grid, 0, self.kt);
        }
        let (s0, s1) = if i < self.whole {
            let s0 = self.first_end + (i - self.dp_mine) * self.kt;
            (s0, s0 + self.kt)
        } else if i == self.whole && self.has_head {
            (self.head_lo, self.hi)
        } else {
            (self.lo, self.first_end)
        };
        let t0 = s0 / self.kt * self.kt;
        (self.dp_tiles + s0 / self.kt, s0 - t0, s1 - t0)
    }
}
