//! Row sum of few, very long rows at the read bandwidth (the lecture's 4 x 2^26
//! case): blocks stride over the row, 4 loads in flight per thread on the
//! read-only path, and the blocks' sums added in part order by the row's last
//! block ([`crate::row_sum::finish_row`]).
//!
//! `out[r] = Σ_c x[r, c]`.
//!
//! [`crate::row_sum`] gives each block one contiguous chunk of a row and keeps 2
//! loads in flight per thread: 1.06x behind `torch.sum` on 4 x 2^26 (H100,
//! 2026-11-22). A CUDA C++ probe of the design space (H100, 2026-11-23: 256 or 512
//! threads, 2 to 8 loads in flight, 132 to 2112 blocks per row, contiguous chunks
//! or striding blocks, `.cs` or `.nc` loads) found three things that each pay:
//!
//! * **the read-only path** (`ld.global.nc`, [`simt_std::memory::load4_nc`]): 0.3667 -> 0.3600 ms
//!   with contiguous chunks, 0.3651 -> 0.3520 with striding blocks;
//! * **4 16-byte loads in flight** per thread of 512 (32 KiB per block in flight);
//! * **blocks that stride** over the row in tiles of `512·4` vectors (block `j` of
//!   `S` takes tiles `j, j + S, …`), so that at every moment the blocks read one
//!   region of the row together, rather than `S` distant streams.
//!
//! Together: 0.3520 ms = 3051 GB/s of reads on 1 GiB, against `torch.sum`'s 0.3651
//! in the same run (3.7% faster). This kernel, in its sweep (H100, 2026-11-23, commit
//! 12a7cf9): 0.3537 ms against `torch.sum`'s 0.3644, 1.03x faster; its first version,
//! with an address computed per load instead of one base and immediate offsets, ran
//! 0.4005. The host gives the kernel `ROW_STREAM_BLOCKS_PER_SM` blocks per SM, split
//! evenly over the rows.
//!
//! The host asks for the loads as the data's last use (`ld.global.cs.nc`, evict-first
//! lines, as [`crate::row_sum_wide`] reads) only for inputs up to
//! `ROW_SUM_LAST_USE_MAX_BYTES`: on the H200 (2026-11-26, docs/PERFORMANCE.md session
//! 29), under the write flush, the hint took 4 x 2^22 (64 MiB) from 0.0274 to 0.0230
//! ms and 4 x 2^24 (256 MiB) from 0.0734 to 0.0718, but 4 x 2^26 (1 GiB) from 0.2484
//! to 0.2588.
//!
//! A row whose start is not 16-byte aligned (a row stride that is not a multiple of
//! 4 floats) sums its first 1-3 floats apart; the rest of it is aligned and streams
//! the same way.
use crate::config::{ROW_STREAM_THREADS, ROW_STREAM_UNROLL};
use simt_std::memory::{is_aligned16, load4_nc_last_if, F32x4};
use simt_std::shared_array;
use simt_std::thread::{block_idx, thread_idx};
use simt_std::warp::block_sum;
use simt_std::{kernel, unroll};

const T: usize = ROW_STREAM_THREADS as usize;
const U: usize = ROW_STREAM_UNROLL as usize;
const _: () = assert!(U == 4, "row_sum_stream unrolls exactly 4 loads");

kernel! {
    /// `out[r] = Σ_c x[r, c]` for few, long rows: `splits` blocks per row striding
    /// over it (see the module doc).
    ///
    /// # Safety
    /// `x` readable at `x[r*ld + c]` for `r < rows, c < cols`, and not written
    /// during the launch (read-only loads); `out` writable for `rows` floats;
    /// `grid.x = rows * splits`; when `splits > 1`, `partials` and `counts` as
    /// [`crate::row_sum::finish_row`] asks (`rows·splits` floats, `rows` counts at
    /// zero).
    ///
    /// # Parameters
    /// * `x`: `[rows, cols]` row-major, row stride `ld` (elements). * `out`: `[rows]`.
    /// * `partials`: `[rows, splits]` scratch. * `counts`: `[rows]`, zero.
    /// * `last`: nonzero to read `x` as its last use (evict-first lines; the host's
    ///   choice by size: `ROW_SUM_LAST_USE_MAX_BYTES`).
    ///
    /// # Thread Mapping
    /// Block `b` takes row `b / splits` as member `j = b % splits`: tiles
    /// `j, j + splits, …` of `512·4` vectors (after the 0-3 floats that align the
    /// row); thread `t` reads vectors `t, t + 512, t + 1024, t + 1536` of each tile.
    #[launch(threads = ROW_STREAM_THREADS)]
    pub unsafe fn row_sum_stream(x: *const f32, out: *mut f32, rows: u32, cols: u32, ld: u32, splits: u32, partials: *mut f32, counts: *mut u32, last: u32) {
        let last_use = last != 0;
        let scratch = shared_array!(ROW_STREAM_SCRATCH, f32, 32);
        let last = shared_array!(ROW_STREAM_LAST, f32, 1);
        let s = splits as usize;
        let b = block_idx().x as usize;
        let (r, part) = (b / s, b % s);
        debug_assert!(r < rows as usize, "row_sum_stream: grid.x must be rows * splits");
        let (t, n) = (thread_idx().x as usize, cols as usize);
        // SAFETY: r < rows.
        let row = unsafe { x.add(r * ld as usize) };
        let mut acc = [0.0f32; U];
        let tile = T * U;
        // A row that starts off a 16-byte boundary (a row stride that is not a multiple
        // of 4 floats): its first 1-3 floats go scalar (block 0 of the row), the rest
        // is 16-byte aligned and streams like any other row.
        let head = if row as usize % 4 == 0 {
            ((16 - row as usize % 16) % 16 / 4).min(n)
        } else {
            n // not even 4-byte aligned (never for an f32 slice): all scalar
        };
        if part == 0 && t < head {
            // SAFETY: t < head <= n.
            acc[2] += unsafe { *row.add(t) };
        }
        // SAFETY: head <= n: the aligned body of the row.
        let body = unsafe { row.add(head) };
        let n = n - head;
        debug_assert!(n == 0 || is_aligned16(body));
        let n4 = n / 4;
        let mut i = part * tile;
        // Whole tiles: 4 loads, no checks between them.
        while i + tile <= n4 {
            // One base and immediate offsets (as CUDA C++ compiles it), rather than an
            // address computed per load.
            // SAFETY: vector i + t lies in the body.
            let p = unsafe { body.add(4 * (i + t)) };
            let mut v = [F32x4::default(); U];
            unroll!(4, K => {
                // SAFETY: vector i + K·T + t < n4 lies in the body; aligned.
                v[K] = unsafe { load4_nc_last_if(p.add(4 * K * T), last_use) };
            });
            unroll!(4, K => {
                acc[K] += v[K].sum();
            });
            i += s * tile;
        }
        // The row's last, partial tile (one block has it).
        let mut k = i + t;
        while k < n4 && k < i + tile {
            // SAFETY: k < n4.
            acc[0] += unsafe { load4_nc_last_if(body.add(4 * k), last_use) }.sum();
            k += T;
        }
        // Floats past the last whole vector.
        if part == 0 && 4 * n4 + t < n {
            // SAFETY: inside the body.
            acc[1] += unsafe { *body.add(4 * n4 + t) };
        }
        let total = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        // SAFETY: scratch is this kernel's own; every thread calls.
        let total = unsafe { block_sum(total, scratch) };
        // SAFETY: every thread calls it; r < rows; partials and counts as the kernel's
        // contract; last and scratch are this kernel's own (block_sum ends on a
        // barrier).
        unsafe { crate::row_sum::finish_row(total, out, r, part, s, partials, counts, last, scratch) };
    }
}
