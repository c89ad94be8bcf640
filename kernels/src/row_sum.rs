//! Row sum when a row does not fit in a block: tiles, warp shuffles, shared memory.
//!
//! Each block owns one chunk of one row. Its threads walk the chunk in tiles of
//! `4·ROW_REDUCE_THREADS` floats (16-byte loads, two tiles in flight), each keeping
//! a private partial sum in registers; a warp folds its 32 partials with 5
//! xor-shuffles, warp leaders drop them into 32 shared slots, and one more
//! shuffle round gives the block's total. With one chunk per row
//! (`splits = 1`) the block writes the row's sum; with more (few, long rows, so
//! the grid still fills the GPU), each block writes its chunk's sum to a scratch
//! slot and counts itself in, and the row's last block adds the slots in part order
//! ([`finish_row`]): one launch, and the same bits on every run. (Until session 29
//! blocks added their sums into the output with float atomics, after a launch that
//! zeroed it: the order of the additions, and so the last bits, changed between
//! runs.)
use crate::config::{ROW_REDUCE_THREADS, WARP_ROWS_THREADS};
use crate::softmax::reduce_range;
use simt_std::atomic::{atomic_add_acq_rel_u32, atomic_store_relaxed_u32};
use simt_std::kernel;
use simt_std::shared::Smem;
use simt_std::shared_array;
use simt_std::thread::{block_dim, block_idx, sync_threads, thread_idx};
use simt_std::warp::block_sum;

/// Writes `out[r]`, the sum of row `r` over its `splits` parts, from this block's
/// part `part` (its sum `total`, the same in every thread). One part: written at
/// once. More: thread 0 stores `total` in slot `r·splits + part` of `partials` and
/// counts the part in (`counts[r]`, acquire-release); the block that completes the
/// count resets it and adds the row's slots, thread `t` slots `t, t + blockDim, …`
/// and then [`block_sum`]: a fixed order, whichever block comes last.
///
/// # Safety
/// Every thread of the block calls it (barriers inside; `part` and `splits` are
/// block-uniform); `out[r]` is writable; with `splits > 1`, `partials` holds
/// `rows·splits` floats written by nothing else during the launch, `counts[r]` is
/// 0 at the launch and touched only here, each part of the row calls it once,
/// `partials` and `counts` overlap neither `out` nor the kernel's input, and `last`
/// (1 float) and `scratch` (32 floats) are this block's shared memory, reserved for
/// the call.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn finish_row(
    total: f32,
    out: *mut f32,
    r: usize,
    part: usize,
    splits: usize,
    partials: *mut f32,
    counts: *mut u32,
    last: Smem<f32>,
    scratch: Smem<f32>,
) {
    let t = thread_idx().x as usize;
    if splits == 1 {
        if t == 0 {
            // SAFETY: out[r] is writable (the contract).
            unsafe { *out.add(r) = total };
        }
        return;
    }
    if t == 0 {
        // SAFETY: slot r·splits + part exists and only this block writes it; the
        // count's acquire-release add publishes it (and acquires every earlier
        // part's) before the last block reads the slots; `last` is this block's own
        // shared float (the contract), read by its threads after the barrier below.
        unsafe {
            *partials.add(r * splits + part) = total;
            let done = atomic_add_acq_rel_u32(counts.add(r), 1) + 1;
            if done as usize == splits {
                // The row's last part: no other block touches the count again.
                atomic_store_relaxed_u32(counts.add(r), 0);
            }
            last.write(if done as usize == splits { 1.0 } else { 0.0 });
        }
    }
    sync_threads();
    // SAFETY: written by thread 0 before the barrier; block-uniform.
    if unsafe { last.read() } == 1.0 {
        let mut s = 0.0f32;
        let mut j = t;
        while j < splits {
            // SAFETY: slot r·splits + j < rows·splits, written and released by its
            // block before the count that thread 0 acquired (ordered before this
            // load by the barrier).
            s += unsafe { *partials.add(r * splits + j) };
            j += block_dim().x as usize;
        }
        // SAFETY: scratch is reserved for the call; every thread of the block is here
        // (the condition is block-uniform).
        let s = unsafe { block_sum(s, scratch) };
        if t == 0 {
            // SAFETY: out[r] is writable.
            unsafe { *out.add(r) = s };
        }
    }
}

kernel! {
    /// `out[r] = Σ_c x[r, c]`.
    ///
    /// # Safety
    /// `x` readable at `x[r*ld + c]` for `r < rows, c < cols`; `out` writable for
    /// `rows` floats; `ROW_REDUCE_THREADS` threads per block; `grid.x = rows * splits`;
    /// when `splits > 1`, `partials` and `counts` as [`finish_row`] asks (`rows·splits`
    /// floats, `rows` counts at zero).
    ///
    /// # Parameters
    /// * `x`: `[rows, cols]` row-major, row stride `ld` (elements). * `out`: `[rows]`.
    /// * `chunk`: columns per split, a multiple of 4 (keeps every chunk 16-aligned).
    /// * `partials`: `[rows, splits]` scratch. * `counts`: `[rows]`, zero.
    ///
    /// # Thread Mapping
    /// Block `b` reduces row `b / splits`, columns `[(b % splits)·chunk, +chunk)`.
    #[launch(threads = ROW_REDUCE_THREADS)]
    pub unsafe fn row_sum(x: *const f32, out: *mut f32, rows: u32, cols: u32, ld: u32, splits: u32, chunk: u32, partials: *mut f32, counts: *mut u32) {
        let scratch = shared_array!(ROW_SUM_SCRATCH, f32, 32);
        let last = shared_array!(ROW_SUM_LAST, f32, 1);
        let b = block_idx().x as usize;
        let r = b / splits as usize;
        // The grid is rows·splits blocks; checked on the emulator (debug builds).
        debug_assert!(r < rows as usize, "row_sum: grid.x must be rows * splits");
        let part = b % splits as usize;
        let start = (part * chunk as usize).min(cols as usize);
        let end = (start + chunk as usize).min(cols as usize);
        // SAFETY: r < rows; the reduction reads only [start, end) of row r.
        let s = unsafe { reduce_range(x.add(r * ld as usize), start, end, ROW_REDUCE_THREADS as usize, 0.0, |a, b| a + b) };
        let s = unsafe { block_sum(s, scratch) };
        // SAFETY: every thread calls it; r < rows; partials and counts as the kernel's
        // contract; last and scratch are this kernel's own (block_sum is done with
        // scratch: it ends on a barrier).
        unsafe { finish_row(s, out, r, part, splits as usize, partials, counts, last, scratch) };
    }
}

kernel! {
    /// `out[r] = Σ_c x[r, c]` for short rows: `group` lanes per row, no barriers.
    ///
    /// A block per row wastes a 256-thread block and two barriers on a 16-float row,
    /// and even a warp per row leaves 28 of 32 lanes idle there (one 16-byte load
    /// covers 4 floats). So a warp splits into groups of `group` lanes (a power of
    /// two, 1 to 32, chosen by the host as about `cols / 4`): each group owns one row,
    /// its lanes stride over it with 16-byte loads when the row is aligned, and
    /// `log2(group)` xor-shuffles inside the group finish the sum. At 16 columns a
    /// warp sums 8 rows, reading 512 contiguous bytes per load instruction.
    ///
    /// # Safety
    /// `x` readable at `x[r*ld + c]` for `r < rows, c < cols`, global memory that
    /// nothing writes during the launch (read-only loads); `out` writable for `rows`
    /// floats, not overlapping `x`; the block has a multiple of 32 threads; `group` is
    /// a power of two in 1..=32.
    ///
    /// # Parameters
    /// * `last`: nonzero to read `x` as its last use (evict-first lines; the host's
    ///   choice by size: `ROW_SUM_LAST_USE_MAX_BYTES`).
    ///
    /// # Thread Mapping
    /// Warp `w` of block `b` (global warp `W = b·(blockDim.x/32) + w`) takes rows
    /// `W·(32/group) ..+32/group`; lane `l` works on row `W·(32/group) + l/group`
    /// as member `l % group` of its group.
    /// `grid.x = ceil(rows / ((WARP_ROWS_THREADS/32)·(32/group)))`.
    #[launch(threads = WARP_ROWS_THREADS)]
    pub unsafe fn row_sum_warp(x: *const f32, out: *mut f32, rows: u32, cols: u32, ld: u32, group: u32, last: u32) {
        let lane = simt_std::warp::lane_id();
        let per_warp = 32 / group;
        let r = ((block_idx().x * (simt_std::thread::block_dim().x / 32) + simt_std::warp::warp_id()) * per_warp + lane / group) as usize;
        let sub = (lane % group) as usize;
        let mut s = 0.0f32;
        if r < rows as usize {
            // SAFETY: r < rows; the loop reads only [0, cols) of row r.
            s = unsafe { group_range_sum(x.add(r * ld as usize), cols as usize, sub, group as usize, last != 0) };
        }
        // Every lane takes part in every shuffle (the condition is warp-uniform), also
        // lanes past the last row: a full-warp shuffle needs all 32.
        let mut off = 16;
        while off >= 1 {
            if off < group {
                s += simt_std::warp::shfl_xor_f32(s, off);
            }
            off /= 2;
        }
        if sub == 0 && r < rows as usize {
            // SAFETY: r < rows.
            unsafe { *out.add(r) = s };
        }
    }
}

/// One lane's partial sum of a row of `len` floats: member `sub` of a group of
/// `group` lanes, members striding 4 floats apart, on the read-only path; where `last`
/// as their last use (`ld.global.cs.nc`: evict-first lines), as `row_sum_warp_wide`
/// reads them (1.13-1.25x faster under the write flush at 64 MiB: H200, session 29).
///
/// # Safety
/// `row[0..len]` is readable global memory that nothing writes during the kernel.
#[inline(always)]
unsafe fn group_range_sum(
    row: *const f32,
    len: usize,
    sub: usize,
    group: usize,
    last: bool,
) -> f32 {
    let mut acc = 0.0f32;
    let len4 = if simt_std::memory::is_aligned16(row) {
        len & !3
    } else {
        0
    };
    let mut c = 4 * sub;
    while c < len4 {
        // SAFETY: c + 4 <= len4 <= len, aligned; global memory that nothing writes
        // during the kernel (the kernel's contract), read for the last time.
        let v = unsafe { simt_std::memory::load4_nc_last_if(row.add(c), last) };
        acc += v.sum();
        c += 4 * group;
    }
    let mut c = len4 + sub;
    while c < len {
        // SAFETY: c < len.
        acc += unsafe { *row.add(c) };
        c += group;
    }
    acc
}
