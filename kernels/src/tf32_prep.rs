//! TF32 operand preparation for the TMA-fed matmuls (stages 6t, 7 and 8): `Bᵀ`, and
//! `A` where its rows cannot be a TMA source, copied into scratch buffers that a
//! TF32 tensor map then reads.
//!
//! Why a copy at all: `wgmma` reads TF32 operands K-major only (PTX allows no
//! transpose for tf32), and `ldmatrix` moves 16-bit elements, so a 32-bit operand
//! must also lie K-major for stage 6t's fragments; the `B` of `A · B` is row-major,
//! N-major. `A` is K-major already: where its rows start 16-byte aligned (TMA's
//! rule) the kernels read it where it is, and it is copied only otherwise.
//!
//! Nothing here rounds. The rounding to TF32 happens in the TMA unit: a load through
//! a `TFLOAT32` tensor map (`simt::TensorMap::tiled_tf32`) rounds each element to
//! nearest even on its way into shared memory, as cuBLAS's TF32 does (measured bit
//! for bit on an H200, 2026-11-25, `scripts/probes/tma_tf32.cu`). Until session 16
//! this copy rounded both operands (`cvt.rna`), and `A`'s copy alone cost about 5%
//! of a 4096^3 product; rounding in the product's loop instead lost 8-13% twice
//! (docs/PERFORMANCE.md, sessions 14, 16 and 17).
use crate::params::Tf32CopyParams;
use simt_std::memory::{is_aligned16, load4_first, store4_first, F32x4};
use simt_std::thread::{block_idx, sync_threads, thread_idx};
use simt_std::{kernel, shared_array, unroll};

/// Side of the square tile a block moves.
pub const TILE: u32 = 32;

kernel! {
    /// Up to two copies in one launch, `p0` (`blockIdx.z = 0`) and `p1` (`1`; a
    /// grid of depth 1 runs `p0` alone): each `dst = src` or `dst = srcᵀ`, bit for
    /// bit (the TF32 map that reads `dst` rounds).
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
    /// columns `32·bx` of copy `z`'s `src`, 4 floats a thread (16-byte accesses where
    /// the rows are aligned), transposed through a padded shared tile (33 columns:
    /// conflict-free both ways); `grid = (ceil(max cols/32), ceil(max rows/32), copies)`,
    /// a block past its copy's edges exiting at once.
    #[launch(block = (32, 8, 1))]
    pub unsafe fn tf32_operand_copy(p0: Tf32CopyParams, p1: Tf32CopyParams) {
        let tile = shared_array!(TF32_TILE, f32, (TILE * (TILE + 1)) as usize).generic();
        let p = if block_idx().z == 0 { p0 } else { p1 };
        let (r0, c0) = (block_idx().y * TILE, block_idx().x * TILE);
        let (rows, cols) = (p.src.rows, p.src.cols);
        if r0 >= rows || c0 >= cols {
            // The whole block (before its barrier): a tile past this copy's edges.
            return;
        }
        // Thread `i` of 256 moves the 4 floats at row i / 8, columns 4(i % 8) ..+4 of
        // the tile: one 16-byte load and one 16-byte store where the rows allow (a
        // quarter of the requests of 4-byte accesses; the copy was at 88% of L2's
        // throughput and 70% of DRAM's with those, docs/PERFORMANCE.md).
        let i = thread_idx().y * 32 + thread_idx().x;
        let (r, c) = (i / 8, 4 * (i % 8));
        let src_vec = is_aligned16(p.src.ptr) && p.src.ld % 4 == 0;
        let dst_vec = is_aligned16(p.dst) && p.ld_dst % 4 == 0;
        let (gr, gc) = (r0 + r, c0 + c);
        // How many of this thread's 4 columns lie inside the matrix (0 past its edge:
        // then no address in it is even formed).
        let valid = cols.saturating_sub(gc).min(4);
        let v0 = if gr < rows && valid > 0 {
            // SAFETY: row gr < rows of src, its first `valid` columns from gc below cols
            // (contract); 16-byte aligned when src_vec (gc % 4 == 0).
            unsafe { load4_first(p.src.ptr.add((gr * p.src.ld + gc) as usize), valid, src_vec) }
        } else {
            F32x4::splat(0.0)
        };
        // TRIAL (session 17): bit 1 of `transpose` rounds to nearest even here.
        let v = if p.transpose & 2 != 0 { v0.map(|x| f32::from_bits(simt_std::mma::to_tf32_rne(x))) } else { v0 };
        if p.transpose & 1 == 0 {
            if gr < rows && valid > 0 {
                // SAFETY: inside dst (contract): row gr, `valid` columns from gc; 16-byte
                // aligned when dst_vec.
                unsafe { store4_first(p.dst.add((gr * p.ld_dst + gc) as usize), v, valid, dst_vec) };
            }
            return;
        }
        let v = v.to_array();
        // Transposed: through the padded tile (row r at r·33). Writes: bank (r + c + j)
        // mod 32, reads below: bank (q + 4·(i % 8) + i / 8) mod 32, both distinct
        // across a warp.
        unroll!(4, J => {
            // SAFETY: inside the tile (r < 32, c + J < 32).
            unsafe { *tile.add((r * (TILE + 1) + c + J as u32) as usize) = v[J] };
        });
        sync_threads();
        // Thread i writes dst row c0 + i / 8 (src column), columns r0 + 4(i % 8) ..+4
        // (src rows): tile column i / 8, rows 4(i % 8) ..+4.
        let (j, q) = (i / 8, 4 * (i % 8));
        let (dr, dc) = (c0 + j, r0 + q);
        if dr < cols && dc < rows {
            let mut o = [0f32; 4];
            unroll!(4, J => {
                // SAFETY: inside the tile; written above (rows past src's hold zeros and
                // are never stored).
                o[J] = unsafe { *tile.add(((q + J as u32) * (TILE + 1) + j) as usize) };
            });
            // SAFETY: inside dst (contract): row dr < cols, the columns from dc below rows;
            // 16-byte aligned when dst_vec (dc % 4 == 0).
            unsafe {
                let d = p.dst.add((dr * p.ld_dst + dc) as usize);
                store4_first(d, F32x4::from_array(o), rows.saturating_sub(dc).min(4), dst_vec)
            };
        }
    }
}
