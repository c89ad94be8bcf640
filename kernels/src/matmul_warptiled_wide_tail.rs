//! Matmul + ReLU, stage 4ws: stage 4w with its partial last wave evened out by
//! splitting the last tiles along K, one segment per block, in one ordinary launch.
//!
//! Stage 4w ([`matmul_relu_warptiled_wide()`](crate::matmul_warptiled_wide::matmul_relu_warptiled_wide()))
//! runs one 256x128 tile per SM at a time. At 4096^3 that is 512 tiles on 132 SMs: three
//! full waves, then 116 tiles with 16 SMs idle for a whole wave; at 8192^3 the last
//! wave has 68 tiles and 64 SMs idle. Stage 4s
//! ([`crate::matmul_warptiled_tail`]) cuts stage 4's last tiles into a long first part
//! and short later ones; with one block per SM the cut is different. Every SM that
//! would run a last tile keeps its first `cut` K steps (part 0), and the SMs that
//! would idle run the short later parts, several one after another, in about the time
//! of a part 0: at 4096^3 part 0 is 459 of 512 K steps and part 1 the other 53, seven
//! or eight of which run back to back on each of the 16 idle SMs (the host's `wide_tail_plan`
//! picks the parts and the cut).
//!
//! With fewer tiles than SMs there is no whole wave: every tile is cut into equal parts
//! that fill the SMs, one block each (1024^3: 32 tiles in 4 parts of 32 K steps, 128
//! blocks), as stage 4s does with split K on stage 4's loop.
//!
//! The schedule is stage 4s's ([`tail_segment`]: the whole tiles first, then part 0 of
//! every split tile, then part 1 of every split tile, ...), over 256x128 tiles counted
//! row by row as stage 4w's grid counts them. Every block runs stage 4's K loop
//! ([`k_steps`]) with stage 4w's tiling over its range of K steps; a part writes its
//! raw sums to its own slot of a workspace (a 256x128 row-major tile) with stage 4w's
//! C stores, and [`matmul_wide_tail_reduce()`] adds each split tile's slots in part
//! order and writes C with the epilogue. The result differs from stage 4w's in the last
//! bits where a tile is split and is the same on every run.
//!
//! **Two copies of the loop.** Whole tiles run stage 4w's code as it is (K steps from
//! 0 on A and B), parts a copy of their own over steps `s0..s1`. ptxas schedules the
//! loop differently in every context here (no version's FFMAs matched stage 4w's), and
//! on the H200 (docs/PERFORMANCE.md, session 32) one shared loop over parts counted
//! from step 0 on shifted A and B, as stage 4s does, ran 3.6% more SM cycles than
//! stage 4w for the same work (1.3% slower than stage 4w at 4096^3 in all); the same
//! with the whole tiles in their own copy was 0.5-0.6% slower than this version, which
//! ran 4096^3 1.3-1.6% faster than stage 4w and 0.9% faster than stage 4s.
use crate::config::{MM_BK, MM_BN, MM_THREADS, MM_WIDE_BM, MM_WIDE_BN};
use crate::matmul_warptiled::k_steps;
use crate::matmul_warptiled_tail::{slot_base_of, tail_reduce, tail_segment};
use crate::matmul_warptiled_wide::{WideTiling, A_STAGE, B_STAGE, TM, TN};
use crate::params::MatmulParamsTail4;
use simt_std::memory::opaque_u32;
use simt_std::thread::{block_idx, thread_idx};
use simt_std::{kernel, shared_array};

/// Floats in one slot of the workspace: a 256x128 tile.
pub const WIDE_PARTIAL_FLOATS: u32 = MM_WIDE_BM * MM_WIDE_BN;
/// Blocks of [`matmul_wide_tail_reduce()`] per split tile (each a band of 16 rows).
pub const WIDE_TAIL_REDUCE_BLOCKS: u32 = MM_WIDE_BM / 16;
// The reduce's slots are rows of 128, as C's tiles.
const _: () = assert!(MM_WIDE_BN == MM_BN);

// One 256-thread block per SM, as stage 4w.
kernel! {
    /// `C = relu?(A · B)` as [`matmul_relu_warptiled_wide()`](crate::matmul_warptiled_wide::matmul_relu_warptiled_wide()),
    /// the tiles of its partial last wave split along K (module docs).
    ///
    /// # Safety
    /// `p.mm` as for `matmul_relu_warptiled_wide` (A, B readable, C writable, C not
    /// overlapping them, fewer than 2^32 elements each, `k <= 2^31`, `k >= 1`);
    /// `p.dp_tiles + p.split_tiles` is the number of 256x128 tiles of C; where
    /// `p.split_tiles > 0`, `2 <= p.parts <= TAIL_MAX_PARTS` and `1 <= p.cut` with
    /// every part at least one K step (`part_start` increasing up to `ceil(k / 8)`);
    /// `p.partials` holds `parts · split_tiles · WIDE_PARTIAL_FLOATS` floats, 16-byte
    /// aligned, used by no other launch running at the same time, and
    /// `(m + 256) · 128 + n + 128 < 2^32` (a slot's rows are addressed as C's, 128
    /// long, its columns as C's); the
    /// grid `dp_tiles + parts · split_tiles < 2^31` blocks.
    ///
    /// # Parameters
    /// One [`MatmulParamsTail4`]: `mm` (A `[m, k]`, B `[k, n]`, C `[m, n]`, row-major
    /// with their strides, and the epilogue), `dp_tiles`, `split_tiles`, `parts` and
    /// `cut`, the workspace `partials`.
    ///
    /// # Tiling
    /// As stage 4w: block tile 256x128, K steps of 8, two shared stages; warp tile
    /// 64x64; thread tile 16x8. One segment (a whole tile or one part) per block; a
    /// part's sums go to its slot, and [`matmul_wide_tail_reduce()`] finishes its tile.
    ///
    /// # Thread Mapping
    /// As stage 4w within a tile. A 1-D grid of `dp_tiles + parts · split_tiles`
    /// blocks of 256 threads; block `b` takes [`tail_segment`]`(b, ..)`, tile `t`
    /// being rows `256·(t / ceil(n/128))..` and columns `128·(t % ceil(n/128))..`.
    #[launch(threads = MM_THREADS, min_blocks = 1)]
    pub unsafe fn matmul_relu_warptiled_wide_tail(sp: MatmulParamsTail4) {
        let (a, b, c, m, n, k, lda, ldb, ldc, relu) = sp.mm.unpack();
        let a_s = shared_array!(MM_WWS_A, f32, 2 * A_STAGE);
        let b_s = shared_array!(MM_WWS_B, f32, 2 * B_STAGE);
        let ksteps = k.div_ceil(MM_BK);
        let (tile, s0, s1, part) = tail_segment(block_idx().x, sp.dp_tiles, sp.split_tiles, sp.parts, sp.cut, ksteps);
        let tiles_n = n.div_ceil(MM_WIDE_BN);
        let origin = ((tile / tiles_n) * MM_WIDE_BM, (tile % tiles_n) * MM_WIDE_BN);
        // Whole tiles and parts run separate copies of the loop (module docs: one shared
        // copy, or parts counted from step 0 on shifted A and B, ran 1-4% slower).
        if part.is_none() {
            let tl = WideTiling::at(a, b, c, m, n, k, lda, ldb, ldc, thread_idx().x, origin);
            let mut acc = [[0.0f32; TN]; TM];
            // SAFETY (both): kernel contract; the stages are this kernel's own shared
            // arrays, two of each operand.
            unsafe { k_steps(&tl, a_s, b_s, &mut acc, 0, k.div_ceil(MM_BK)) };
            unsafe { tl.write(c, ldc, relu, &acc) };
            return;
        }
        let tl = WideTiling::at(a, b, c, m, n, k, lda, ldb, ldc, thread_idx().x, origin);
        let mut acc = [[0.0f32; TN]; TM];
        // SAFETY: kernel contract; the shared stages as above; s0 < s1 <= ceil(k / 8)
        // (the contract's parts), and the loads of the step past s1, which nothing
        // uses, read the next part's K steps inside A and B or zeros past K.
        unsafe { k_steps(&tl, a_s, b_s, &mut acc, s0, s1) };
        // The slot from the launch's constants again (`opaque_u32`), so that none of the
        // schedule stays live through the loop. This block is a part: `part` is Some.
        let blk = opaque_u32(block_idx().x);
        let ksteps = opaque_u32(k).div_ceil(MM_BK);
        let (_, _, _, part) = tail_segment(blk, sp.dp_tiles, sp.split_tiles, sp.parts, sp.cut, ksteps);
        let p = part.unwrap_or(0);
        let j = (blk - sp.dp_tiles) % sp.split_tiles;
        let slot = slot_base_of(sp.partials, p * sp.split_tiles + j, MM_WIDE_BM);
        // The part's raw sums to its slot, C's address arithmetic landing in it from a
        // base `origin` elements before it.
        let (cw, ldw, reluw) = (slot.wrapping_sub((origin.0 * MM_WIDE_BN + origin.1) as usize), MM_WIDE_BN, 0);
        // SAFETY: the kernel's contract for the workspace: the part's slot holds the
        // tile's 256x128 sums in rows of 128, and the stores touch its elements of C's
        // rows and columns only, at local row r - row0 < 256 and column c0 - col0 <
        // 128. The u32 offset r·128 + c0 stays below 2^32: r < m + 256, c0 < n + 128
        // and (m + 256)·128 + n + 128 < 2^32 (the contract). The base is 16-byte
        // aligned as the slot is (row0·128 + col0 is a multiple of 4).
        unsafe { tl.write(cw, ldw, reluw, &acc) };
    }
}

kernel! {
    /// `C[tile] = epilogue(Σ_p slot(p, tile))` for stage 4ws's split tiles, as
    /// [`matmul_tail_reduce()`](crate::matmul_warptiled_tail::matmul_tail_reduce())
    /// with 256x128 tiles and slots.
    ///
    /// # Safety
    /// After [`matmul_relu_warptiled_wide_tail()`] with the same `sp`, in queue order:
    /// every slot holds its part's sums for the tile's elements inside C; C writable
    /// with its stride, not overlapping the workspace; a 1-D grid of
    /// [`WIDE_TAIL_REDUCE_BLOCKS`]` · split_tiles` blocks of 256 threads.
    ///
    /// # Parameters
    /// The [`MatmulParamsTail4`] of the product.
    ///
    /// # Thread Mapping
    /// [`WIDE_TAIL_REDUCE_BLOCKS`] (16) blocks per split tile: block `b` takes split
    /// tile `dp_tiles + b / 16`, its rows `16·(b % 16) ..+16`; thread `t` of 256 its 2
    /// groups of 4 floats `t` and `t + 256` there, the slots of 4 parts loaded at once.
    #[launch(threads = MM_THREADS)]
    pub unsafe fn matmul_wide_tail_reduce(sp: MatmulParamsTail4) {
        // SAFETY: the kernel's contract, with 256-row tiles.
        unsafe { tail_reduce::<MM_WIDE_BM>(sp) }
    }
}
