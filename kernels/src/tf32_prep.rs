//! TF32 operand preparation for the TMA-fed matmuls (stages 6t, 7 and 8): `Bᵀ`, and
//! `A` where its rows cannot be a TMA source, copied rounded to TF32 into scratch
//! buffers that plain f32 tensor maps then read.
//!
//! Why a copy at all: `wgmma` reads TF32 operands K-major only (PTX allows no
//! transpose for tf32), and `ldmatrix` moves 16-bit elements, so a 32-bit operand
//! must also lie K-major for stage 6t's fragments; the `B` of `A · B` is row-major,
//! N-major. `A` is K-major already: where its rows start 16-byte aligned (TMA's
//! rule) the kernels read it where it is, and it is copied only otherwise.
//!
//! Rounding: to nearest, ties to even, as cuBLAS's TF32. `A` read in place is
//! rounded by the TMA unit: a load through a `TFLOAT32` tensor map
//! (`simt::TensorMap::tiled_tf32`) rounds each element on its way into shared memory
//! (measured bit for bit on an H200, 2026-11-25, `scripts/probes/tma_tf32.cu`). The
//! copies round as they copy, bit-exact against the TMA's rounding
//! ([`simt_std::convert::tf32_rne_bits`]): the copy is memory-bound, so the integer
//! rounding is free there, while loading through a TF32 map costs the product about
//! 1% (H200, ncu, docs/PERFORMANCE.md session 17). Until session 16 both operands
//! were copied (rounded with `cvt.rna`), `A`'s copy alone about 5% of a 4096^3
//! product; rounding in the product's loop instead lost 8-13% twice (sessions 14
//! and 16).
use crate::params::Tf32CopyParams;
use simt_std::convert::tf32_rne_bits;
use simt_std::memory::{is_aligned16, load4_first, store4_first_vec, F32x4};
use simt_std::thread::{block_idx, sync_threads, thread_idx};
use simt_std::{kernel, shared_array, unroll};

/// Side of the square sub-tile a block moves at once through shared memory.
pub const TILE: u32 = 32;
/// Side of the square region a block moves: 2x2 sub-tiles, all four loaded before
/// any is stored (16 KiB in flight per block; one 32x32 tile a block left the lone
/// `Bᵀ` copy at 55% of DRAM peak, ncu, H200).
pub const REGION: u32 = 2 * TILE;
/// Floats of one padded sub-tile in shared memory.
const SUB: usize = (TILE * (TILE + 1)) as usize;

kernel! {
    /// Up to two copies in one launch, `p0` (`blockIdx.z = 0`) and `p1` (`1`; a
    /// grid of depth 1 runs `p0` alone): each `dst = tf32(src)` or `dst = tf32(src)ᵀ`,
    /// every element rounded to TF32 to nearest even (as the TMA's TF32 maps and
    /// cuBLAS), kept as f32.
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
    /// Block `(32, 8)`; block `(bx, by, z)` moves the 64x64 region at rows `64·by`,
    /// columns `64·bx` of copy `z`'s `src` as 2x2 sub-tiles of 32x32, 4 floats a
    /// thread in each (16-byte accesses where the rows are aligned), transposed
    /// through padded shared tiles (33 columns: conflict-free both ways);
    /// `grid = (ceil(max cols/64), ceil(max rows/64), copies)`, a block past its
    /// copy's edges exiting at once.
    #[launch(block = (32, 8, 1))]
    pub unsafe fn tf32_operand_copy(p0: Tf32CopyParams, p1: Tf32CopyParams) {
        let tiles = shared_array!(TF32_TILES, f32, 4 * SUB).generic();
        let p = if block_idx().z == 0 { p0 } else { p1 };
        let (r0, c0) = (block_idx().y * REGION, block_idx().x * REGION);
        let (rows, cols) = (p.src.rows, p.src.cols);
        if r0 >= rows || c0 >= cols {
            // The whole block (before its barrier): a region past this copy's edges.
            return;
        }
        // Thread `i` of 256 moves the 4 floats at row i / 8, columns 4(i % 8) ..+4 of
        // each sub-tile: one 16-byte load and one 16-byte store where the rows allow
        // (a quarter of the requests of 4-byte accesses, docs/PERFORMANCE.md).
        let i = thread_idx().y * 32 + thread_idx().x;
        let (r, c) = (i / 8, 4 * (i % 8));
        let src_vec = is_aligned16(p.src.ptr) && p.src.ld % 4 == 0;
        let dst_vec = is_aligned16(p.dst) && p.ld_dst % 4 == 0;
        // Sub-tile s at rows r0 + 32(s / 2), columns c0 + 32(s % 2). All four loads
        // first: the stores below may alias nothing the loads read (contract), but
        // through generic pointers LLVM cannot know it and would keep each load
        // behind the previous store.
        // This thread's row and first column of sub-tile s in src, and how many of its
        // 4 columns lie inside the matrix (0 past its edge: then no address in it is
        // even formed).
        let at = |s: u32| {
            let (gr, gc) = (r0 + TILE * (s / 2) + r, c0 + TILE * (s % 2) + c);
            (gr, gc, if gr < rows { cols.saturating_sub(gc).min(4) } else { 0 })
        };
        let mut v = [F32x4::splat(0.0); 4];
        unroll!(4, S => {
            let (gr, gc, valid) = at(S as u32);
            if valid > 0 {
                // SAFETY: row gr < rows of src, its first `valid` columns from gc below
                // cols (contract); 16-byte aligned when src_vec (gc % 4 == 0).
                v[S] = unsafe { load4_first(p.src.ptr.add((gr * p.src.ld + gc) as usize), valid, src_vec) };
            }
        });
        unroll!(4, S => { v[S] = v[S].map(|x| f32::from_bits(tf32_rne_bits(x))); });
        if p.transpose == 0 {
            unroll!(4, S => {
                let (gr, gc, valid) = at(S as u32);
                if valid > 0 {
                    // SAFETY: inside dst (contract): row gr, `valid` columns from gc;
                    // 16-byte aligned when dst_vec.
                    unsafe { store4_first_vec(p.dst.add((gr * p.ld_dst + gc) as usize), v[S], valid, dst_vec) };
                }
            });
            return;
        }
        // Transposed: through the padded tiles (row r of sub-tile s at s·SUB + r·33).
        // Writes: bank (r + c + j) mod 32, reads below: bank (q + 4·(i % 8) + i / 8)
        // mod 32, both distinct across a warp.
        unroll!(4, S => {
            let w = v[S].to_array();
            unroll!(4, J => {
                // SAFETY: inside sub-tile S (r < 32, c + J < 32).
                unsafe { *tiles.add(S * SUB + (r * (TILE + 1) + c + J as u32) as usize) = w[J] };
            });
        });
        sync_threads();
        // Thread i writes dst row (a src column) c0 + 32(s % 2) + i / 8, columns (src
        // rows) r0 + 32(s / 2) + 4(i % 8) ..+4: sub-tile column i / 8, rows 4(i % 8) ..+4.
        let (j, q) = (i / 8, 4 * (i % 8));
        unroll!(4, S => {
            let (dr, dc) = (c0 + TILE * (S as u32 % 2) + j, r0 + TILE * (S as u32 / 2) + q);
            if dr < cols && dc < rows {
                let mut o = [0f32; 4];
                unroll!(4, J => {
                    // SAFETY: inside sub-tile S; written above (rows past src's hold
                    // zeros and are never stored).
                    o[J] = unsafe { *tiles.add(S * SUB + ((q + J as u32) * (TILE + 1) + j) as usize) };
                });
                // SAFETY: inside dst (contract): row dr < cols, the columns from dc below
                // rows; 16-byte aligned when dst_vec (dc % 4 == 0).
                unsafe {
                    let d = p.dst.add((dr * p.ld_dst + dc) as usize);
                    store4_first_vec(d, F32x4::from_array(o), rows.saturating_sub(dc).min(4), dst_vec)
                };
            }
        });
    }
}
