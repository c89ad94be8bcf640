//! TF32 operand preparation for the Hopper matmul: a copy of an f32 matrix, each
//! element rounded to TF32 (`cvt.rna`, as stage 6 rounds its fragments), optionally
//! transposed.
//!
//! Why: `wgmma` reads TF32 operands straight from shared memory, where nothing
//! rounds them (the tensor cores just ignore the low 13 bits: truncation), and it
//! reads them K-major only (PTX allows no transpose for tf32), while the `B` of
//! `A · B` is row-major, N-major. So stage 7's TF32 path first writes `A` rounded and
//! `Bᵀ` rounded into scratch buffers: two memory-bound passes (8 bytes per element
//! each) in front of the product, made by one launch (`blockIdx.z` picks the copy),
//! so the second does not wait for the first one's last wave.
//!
//! Rounding in the product instead (`mma.sync` reads registers, so stage 6t could
//! round A's fragments after `ldmatrix`) was measured twice on the H200 and lost:
//! with `cvt.rna` (SASS: a compare, a predicated add and a mask per element) and with
//! an add of half an ulp that leaves the truncation to the tensor cores (a compare,
//! an add and a select), 8-13% slower than these copies (docs/PERFORMANCE.md,
//! sessions 14 and 16).
use crate::params::Tf32CopyParams;
use simt_std::mma::to_tf32;
use simt_std::thread::{block_idx, sync_threads, thread_idx};
use simt_std::{kernel, shared_array, unroll};

/// Side of the square tile a block moves.
pub const TILE: u32 = 32;
/// Rows of the tile one pass of the block covers (the block is 32 x 8).
const ROWS_PER_PASS: u32 = 8;
/// Passes per tile: elements per thread.
const PASSES: u32 = TILE / ROWS_PER_PASS;
const _: () = assert!(PASSES == 4);

kernel! {
    /// Two copies in one launch, `p0` (`blockIdx.z = 0`) and `p1` (`1`): each
    /// `dst = tf32(src)` or `dst = tf32(src)ᵀ`, every element rounded to TF32 (round
    /// to nearest, ties away), kept as f32.
    ///
    /// # Safety
    /// For each: `src` readable at `src[i*ld + j]` for `i < rows, j < cols`; `dst`
    /// writable at `dst[i*ld_dst + j]` for `i < rows, j < cols` (`i < cols, j < rows`
    /// transposed); no destination overlaps a source or the other destination.
    ///
    /// # Parameters
    /// Two [`Tf32CopyParams`]: `src` (`rows x cols`, row stride `ld`), `dst`, its row
    /// stride, and `transpose` (0 or 1).
    ///
    /// # Thread Mapping
    /// Block `(32, 8)`; block `(bx, by, z)` moves the 32x32 tile at rows `32·by`,
    /// columns `32·bx` of copy `z`'s `src` through a padded shared tile (33 columns:
    /// the transposed reads are conflict-free); `grid = (ceil(max cols/32), ceil(max
    /// rows/32), 2)`, a block past its copy's edges exiting at once.
    #[launch(block = (32, 8, 1))]
    pub unsafe fn tf32_round_copy(p0: Tf32CopyParams, p1: Tf32CopyParams) {
        let tile = shared_array!(TF32_TILE, f32, (TILE * (TILE + 1)) as usize).generic();
        let p = if block_idx().z == 0 { p0 } else { p1 };
        let (tx, ty) = (thread_idx().x, thread_idx().y);
        let (r0, c0) = (block_idx().y * TILE, block_idx().x * TILE);
        let (rows, cols) = (p.src.rows, p.src.cols);
        if r0 >= rows || c0 >= cols {
            // The whole block (before its barrier): a tile past this copy's edges.
            return;
        }
        // All four loads first, then the shared stores: interleaved, each load waited
        // for the store before it (LLVM cannot tell the shared tile's generic pointer
        // from src), four DRAM round trips in a row; the copy ran at 55% of DRAM
        // bandwidth on the H100 (docs/PERFORMANCE.md).
        let mut v = [0f32; PASSES as usize];
        unroll!(4, I => {
            let (gr, gc) = (r0 + ty + ROWS_PER_PASS * I as u32, c0 + tx);
            if gr < rows && gc < cols {
                // SAFETY: inside src (contract).
                v[I] = unsafe { *p.src.ptr.add((gr * p.src.ld + gc) as usize) };
            }
        });
        unroll!(4, I => {
            let r = ty + ROWS_PER_PASS * I as u32;
            // SAFETY: inside the tile (r < 32, tx < 32).
            unsafe { *tile.add((r * (TILE + 1) + tx) as usize) = f32::from_bits(to_tf32(v[I])) };
        });
        sync_threads();
        unroll!(4, I => {
            let r = ty + ROWS_PER_PASS * I as u32;
            // SAFETY (both): inside the tile, written above (elements outside src are
            // never stored); inside dst (contract).
            if p.transpose != 0 {
                // dst row = a column of src: element (c0 + r, r0 + tx) of dst.
                let (dr, dc) = (c0 + r, r0 + tx);
                if dr < cols && dc < rows {
                    unsafe { *p.dst.add((dr * p.ld_dst + dc) as usize) = *tile.add((tx * (TILE + 1) + r) as usize) };
                }
            } else {
                let (dr, dc) = (r0 + r, c0 + tx);
                if dr < rows && dc < cols {
                    unsafe { *p.dst.add((dr * p.ld_dst + dc) as usize) = *tile.add((r * (TILE + 1) + tx) as usize) };
                }
            }
        });
    }
}
