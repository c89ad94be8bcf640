//! Matmul + ReLU, stage 4k: stage 4's warp tiles on persistent blocks with a
//! **stream-K** tail ([`crate::streamk`]).
//!
//! Stage 4 ([`matmul_relu_warptiled()`](crate::matmul_warptiled::matmul_relu_warptiled()))
//! runs two 256-thread blocks per SM, one 128x128 tile of C each. At 4096^3 that is
//! 1024 tiles on the 264 blocks an H100 or H200 holds at once: three full waves,
//! then a fourth in which 232 blocks work and 32 wait (3.88 waves in 4); 8192^3 is
//! 15.52 waves in 16. Here the grid is exactly the resident blocks, the first whole
//! waves of tiles are taken whole, and the rest are cut along K into equal shares
//! ([`Share`]): every block does the same number of K steps to within one.
//!
//! Each segment (a whole tile, a head or a tail) runs stage 4's K loop, counting down
//! ([`k_steps_down`](crate::matmul_warptiled::k_steps_down)), on the tile's 128x128
//! origin, then:
//! * a whole tile: `epilogue(acc)` to C, as stage 4;
//! * a head (the tile's first K steps, the rest in block `b + 1`): the raw sums to the
//!   block's slot of the workspace, then its flag;
//! * a tail: wait for block `b - 1`'s flag, add its slot, then `epilogue` to C.
//!
//! The slot holds each thread's 64 accumulators as 16 vectors of 16 bytes, vector `j`
//! of all 256 threads consecutive: the writer and the reader of an element are the
//! same thread of two blocks with the same layout, every access is a coalesced 16-byte
//! one, and no shuffle is needed.
//!
//! Sums are exact K-order sums per segment, and a tail adds the head's partial to its
//! own: the result differs from stage 4's in the last bits where a tile is split, and
//! is the same on every run (the split depends only on the shape and the grid).
//!
//! **Where it pays.** The same work runs about 18% slower per wave here than in
//! stage 4: in the persistent kernel ptxas allocates the 128 registers differently,
//! and ncu counts more dispatch stalls (0.76 against 0.45 warps per issue cycle at
//! 4096^3 on the H200, session 23), and stage 4's own loop has since gained a
//! fragment prefetch and an FMA order that do not carry over (session 25: compiled
//! here they spilled, or left 39-60 FFMAs on same-bank sources against stage 4's 6).
//! So stage 4k wins only where stage 4's last wave costs more than that: on the H200
//! (2026-11-25, session 25) 2560^3 ran 0.778 ms against stage 4's 0.864, while 3072^3
//! ran 1.332 against 1.299, and 3584^3 and 6144^3 lost 17% and 15%
//! (docs/PERFORMANCE.md). Stage 4s ([`crate::matmul_warptiled_tail`]) then split the
//! last wave's tiles with stage 4's own loop, one part per block, and beat this stage
//! on every shape timed (2560^3: 0.724 ms against 0.778, session 26), so
//! `MatmulKernel::Auto` takes stage 4s without tuning; the tuner still times this one.
//!
//! The tiles are counted row by row, as stage 4's grid runs them. The host sends only
//! products whose tiles are not a whole number of waves and more than one, with
//! fewer than 2^32 stream-K K steps; the others run stage 4.
use crate::config::{MM4K_PARTIAL_FLOATS, MM_BK, MM_BM, MM_BN, MM_THREADS};
use crate::matmul_tiled::{TM, TN};
use crate::matmul_warptiled::{k_steps_down, WarpTiling, STAGE};
use crate::params::MatmulParamsStreamK4;
use crate::streamk::Share;
use simt_std::flag::{publish, wait_eq};
use simt_std::memory::{load4, opaque_u32, store4, F32x4};
use simt_std::thread::{block_idx, grid_dim, sync_threads, thread_idx};
use simt_std::{kernel, shared_array, unroll};

const _: () = assert!(MM4K_PARTIAL_FLOATS == MM_THREADS * (TM * TN) as u32 && TN == 8);

/// Where thread `t`'s vector `j` (0..16: row `j / 2`, column half `j % 2` of its
/// 8x8) of block `b`'s partial lies: slot `b`, then vector `j` of every thread.
#[inline(always)]
fn partial_at(partials: *mut f32, b: u32, j: u32, t: u32) -> *mut f32 {
    partials.wrapping_add((b * MM4K_PARTIAL_FLOATS + (j * MM_THREADS + t) * 4) as usize)
}

// Two 256-thread blocks per SM, as stage 4: at most 128 registers per thread.
kernel! {
    /// `C = relu?(A · B)` as [`matmul_relu_warptiled()`](crate::matmul_warptiled::matmul_relu_warptiled()),
    /// its tiles split over persistent blocks by stream-K (module docs).
    ///
    /// # Safety
    /// `p.mm` as for `matmul_relu_warptiled` (A, B readable, C writable, C not
    /// overlapping them, fewer than 2^32 elements each, `k <= 2^31`, `k >= 1`);
    /// `p.dp_tiles + p.sk_tiles` is the number of 128x128 tiles of C, `p.dp_tiles` a
    /// multiple of the grid, `p.sk_tiles` zero or at least the grid
    /// ([`streamk_split`](crate::streamk::streamk_split)) and `p.sk_tiles ·
    /// ceil(k / 8) < 2^32`; `p.partials` holds `grid x MM4K_PARTIAL_FLOATS` floats,
    /// 16-byte aligned, and `p.flags` `grid` flags, none holding `p.epoch`, both
    /// used by no other launch running at the same time; the launch is cooperative
    /// (every block resident).
    ///
    /// # Parameters
    /// One [`MatmulParamsStreamK4`]: `mm` (A `[m, k]`, B `[k, n]`, C `[m, n]`, row-major
    /// with their strides, and the epilogue), `dp_tiles` and `sk_tiles`, the
    /// workspace `partials`, `flags` and this launch's `epoch` ([`simt_std::flag`]).
    ///
    /// # Tiling
    /// As stage 4: block tile 128x128, K steps of 8, two shared stages; warp tile
    /// 32x64; thread tile 8x8. A block walks its data-parallel tiles, its whole
    /// stream-K tiles, its head and its tail.
    ///
    /// # Thread Mapping
    /// As stage 4 within a tile. A 1-D grid of at most the device's resident blocks
    /// (two per SM).
    #[launch(threads = MM_THREADS, min_blocks = 2, cooperative = true)]
    pub unsafe fn matmul_relu_warptiled_streamk(sp: MatmulParamsStreamK4) {
        let (a, b, c, m, n, k, lda, ldb, ldc, relu) = sp.mm.unpack();
        let a_s = shared_array!(MM_WK_A, f32, 2 * STAGE);
        let b_s = shared_array!(MM_WK_B, f32, 2 * STAGE);
        let t = thread_idx().x;
        let (blk, grid) = (block_idx().x, grid_dim().x);
        // The schedule is recomputed from the launch's constants before and after each
        // K loop (`opaque_u32`), and the segment index kept in local memory, so that
        // nothing of it is live through the loop: with it live, ptxas moved the
        // accumulators between registers and the FMAs met register-bank conflicts
        // (docs/PERFORMANCE.md, session 23).
        let plan = || {
            let ksteps = opaque_u32(k).div_ceil(MM_BK);
            (Share::new(opaque_u32(blk), grid, sp.dp_tiles, sp.sk_tiles, ksteps), ksteps)
        };
        let mut i_mem = 0u32;
        loop {
            // SAFETY: a local variable of this thread.
            let i = unsafe { core::ptr::read_volatile(&i_mem) };
            let (share, _) = plan();
            if i >= share.segments {
                break;
            }
            let (tile, s0, s1) = share.segment(i);
            let tiles_n = opaque_u32(n).div_ceil(MM_BN);
            let origin = ((tile / tiles_n) * MM_BM, (tile % tiles_n) * MM_BN);
            let tl = WarpTiling::at(a, b, c, m, n, k, lda, ldb, ldc, t, origin);
            let mut acc = [[0.0f32; TN]; TM];
            // SAFETY: every thread, the same tile and range; this kernel's own
            // two-stage arrays, which the previous segment's last barrier freed;
            // s0 < s1 <= ceil(k / 8).
            unsafe { k_steps_down(&tl, a_s, b_s, &mut acc, s0, s1 - s0) };
            // SAFETY: a local variable of this thread.
            let i = unsafe { core::ptr::read_volatile(&i_mem) };
            let (share, ksteps) = plan();
            let (_, s0, s1) = share.segment(i);
            if s0 == 0 && s1 < ksteps {
                // A head: its partial to slot blk, then the flag (every thread's stores
                // before the barrier, then thread 0's release).
                unroll!(8, I => {
                    unroll!(2, H => {
                        let v = F32x4 { x: acc[I][4 * H], y: acc[I][4 * H + 1], z: acc[I][4 * H + 2], w: acc[I][4 * H + 3] };
                        // SAFETY: slot blk of the workspace (grid slots, the contract),
                        // 16-byte aligned (its start is, and every vector is 16 bytes).
                        unsafe { store4(partial_at(sp.partials, blk, (2 * I + H) as u32, t), v) };
                    });
                });
                sync_threads();
                if t == 0 {
                    // SAFETY: flag blk exists (grid flags); no block publishes it but this.
                    unsafe { publish(sp.flags.add(blk as usize), sp.epoch) };
                }
            } else {
                if s0 > 0 {
                    // A tail: block blk - 1 (blk > 0: block 0 starts at 0) holds the
                    // tile's first s0 K steps as its head.
                    if t == 0 {
                        // SAFETY: flag blk - 1 exists; its block is resident (cooperative
                        // launch) and publishes it before it waits for anything.
                        unsafe { wait_eq(sp.flags.add(blk as usize - 1), sp.epoch) };
                    }
                    // Thread 0's acquire, then the barrier: every thread's loads below
                    // see the partial.
                    sync_threads();
                    unroll!(8, I => {
                        unroll!(2, H => {
                            // SAFETY: slot blk - 1, written and published before its
                            // flag, acquired above.
                            let v = unsafe { load4(partial_at(sp.partials, blk - 1, (2 * I + H) as u32, t)) }.to_array();
                            unroll!(4, E => { acc[I][4 * H + E] += v[E]; });
                        });
                    });
                }
                // SAFETY: the kernel's contract for C; this thread's part of the tile.
                unsafe { tl.write(c, ldc, relu, &acc) };
            }
            // SAFETY: a local variable of this thread.
            unsafe { core::ptr::write_volatile(&mut i_mem, i + 1) };
        }
    }
}
