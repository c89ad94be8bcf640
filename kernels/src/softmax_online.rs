//! Online softmax for rows of any length: two passes, partial `(max, sum)` pairs.
//!
//! A row that does not fit on chip cannot be read once: something must know the
//! row's maximum before the first output is written. The online softmax
//! (Milakov & Gimelshein, 2018) needs only one extra pass, not two: a running pair
//! `(m, s)` with `s = Σ exp(x - m)` absorbs a new value `x` as
//!
//! `m' = max(m, x)`, `s' = s·exp(m - m') + exp(x - m')`,
//!
//! and two pairs combine the same way ([`combine`]), in any order. So:
//!
//! * **pass 1** (`softmax_online_partials`): the row is cut into `splits` chunks,
//!   one block each (so a single row still fills the GPU); every thread folds its
//!   vectors into a pair, the block combines its threads' pairs and writes the
//!   chunk's pair;
//! * **pass 2** (`softmax_online_finish`): each block combines the row's `splits`
//!   pairs into `(M, S)` and writes `exp(x - M) / S` over its chunk.
//!
//! Traffic is two reads and one write per element (the second read hits L2 when the
//! input fits there). Rows that fit in the device's registers take the one-read
//! split kernel ([`crate::softmax_split`]) instead; this is the path for longer rows.
//!
//! `-inf` needs care: a pair `(-inf, 0)` (nothing seen, or only `-inf`) must not
//! turn into `exp(-inf - -inf) = NaN`; [`combine`] treats it as the identity, and a
//! row of only `-inf` ends with `M = -inf`, whose `exp(x - M)` is NaN, as
//! `torch.softmax` gives.
use crate::config::SOFTMAX_ONLINE_THREADS;
use crate::params::SoftmaxOnlineParams;
use crate::softmax_parts::{combine, warp_combine, write_span};
use simt_std::math::{exp, rcp};
use simt_std::memory::{is_aligned16, load4, load4_first, F32x4};
use simt_std::shared::Smem;
use simt_std::shared_array;
use simt_std::thread::sync_threads;
use simt_std::thread::{block_dim, block_idx, thread_idx};
use simt_std::warp::{lane_id, max_nan, warp_id};
use simt_std::{kernel, unroll};

/// 16-byte vectors a thread loads before using the first (the `unroll!`s below
/// spell out 4).
const U: usize = 4;

/// Combines the pairs of every thread of the block (every thread gets the result).
///
/// # Safety
/// Called by every thread of the block (barriers inside); `scratch` is 64 floats of
/// shared memory reserved for this call.
#[inline(always)]
pub(crate) unsafe fn block_combine(m: f32, s: f32, scratch: Smem<f32>) -> (f32, f32) {
    let (m, s) = warp_combine(m, s);
    let w = warp_id() as usize;
    if lane_id() == 0 {
        // SAFETY: w < 32 slots of 2 floats.
        unsafe {
            scratch.add(2 * w).write(m);
            scratch.add(2 * w + 1).write(s);
        }
    }
    sync_threads();
    let warps = block_dim().x.div_ceil(32);
    let l = lane_id();
    let (mut m, mut s) = (f32::NEG_INFINITY, 0.0);
    if l < warps {
        // SAFETY: written above before the barrier.
        unsafe {
            (m, s) = (
                scratch.add(2 * l as usize).read(),
                scratch.add(2 * l as usize + 1).read(),
            )
        };
    }
    let r = warp_combine(m, s);
    // Nobody overwrites `scratch` (a next call) before everyone has read it.
    sync_threads();
    r
}

/// The `(M, S)` of row `r` from its `splits` pairs at `partials[2(r·splits + j)..]`,
/// in every thread of the block: the lanes of each warp read pairs `lane, lane+32, …`
/// and combine them with shuffles (every warp does it; no barrier needed).
///
/// # Safety
/// The pairs are readable and complete (written by an earlier kernel, or published
/// and waited for).
#[inline(always)]
pub(crate) unsafe fn row_pair(partials: *const f32, r: usize, splits: usize) -> (f32, f32) {
    let (mut m, mut s) = (f32::NEG_INFINITY, 0.0f32);
    let mut j = lane_id() as usize;
    while j < splits {
        let i = 2 * (r * splits + j);
        // SAFETY: caller: the pair exists. Volatile: written during this launch by
        // another block in the split kernel, so never cached as read-only data.
        let (pm, ps) = unsafe {
            (
                partials.add(i).read_volatile(),
                partials.add(i + 1).read_volatile(),
            )
        };
        (m, s) = combine(m, s, pm, ps);
        j += 32;
    }
    warp_combine(m, s)
}

/// The running pair `(max, sum of exp(x - max))` of this thread's 16-byte vectors of
/// `row[start..end]`: vectors `t, t + lanes, …` counted from column `start`, `U`
/// loads in flight and then one rescale for `4·U` values; the rest one masked vector
/// at a time. `(-inf, 0)` when the thread holds nothing.
///
/// # Safety
/// `row[start..end]` readable; `start % 4 == 0`; `vec` only when `row` is 16-byte
/// aligned.
#[inline(always)]
pub(crate) unsafe fn fold_span(
    row: *const f32,
    start: usize,
    end: usize,
    t: usize,
    lanes: usize,
    vec: bool,
) -> (f32, f32) {
    let (mut m, mut s) = (f32::NEG_INFINITY, 0.0f32);
    let step = 4 * lanes;
    let mut c = start + 4 * t;
    // Whole groups of U vectors: U loads in flight, then one rescale for 4·U values.
    while vec && c + (U - 1) * step + 4 <= end {
        let mut a = [F32x4::splat(0.0); U];
        unroll!(4, K => {
            // SAFETY: the group ends by `end`; aligned (vec, c % 4 == 0).
            a[K] = unsafe { load4(row.add(c + K * step)) };
        });
        let mut vm = f32::NEG_INFINITY;
        unroll!(4, K => {
            vm = max_nan(vm, max_nan(max_nan(a[K].x, a[K].y), max_nan(a[K].z, a[K].w)));
        });
        let mn = max_nan(m, vm);
        if mn != f32::NEG_INFINITY {
            let mut add = 0.0;
            unroll!(4, K => {
                let e = a[K].map(|v| exp(v - mn));
                add += (e.x + e.y) + (e.z + e.w);
            });
            s = s * exp(m - mn) + add;
            m = mn;
        }
        c += U * step;
    }
    // The rest one vector at a time, masked.
    while c < end {
        let valid = (end - c).min(4) as u32;
        // SAFETY: columns c..c+valid are in the span.
        let a = unsafe { load4_first(row.add(c), valid, vec) }.to_array();
        let mut vm = f32::NEG_INFINITY;
        for (j, &v) in a.iter().enumerate() {
            if (j as u32) < valid {
                vm = max_nan(vm, v);
            }
        }
        let mn = max_nan(m, vm);
        if mn != f32::NEG_INFINITY {
            let mut add = 0.0;
            for (j, &v) in a.iter().enumerate() {
                if (j as u32) < valid {
                    add += exp(v - mn);
                }
            }
            s = s * exp(m - mn) + add;
            m = mn;
        }
        c += step;
    }
    (m, s)
}

/// The chunk of block `b`: `(row, first column, end column)`.
#[inline(always)]
fn chunk_of(p: &SoftmaxOnlineParams, b: usize) -> (usize, usize, usize) {
    let (splits, chunk, cols) = (p.splits as usize, p.chunk as usize, p.x.cols as usize);
    let r = b / splits;
    let start = ((b % splits) * chunk).min(cols);
    (r, start, (start + chunk).min(cols))
}

kernel! {
    /// Online softmax, pass 1: the `(max, sum of exp(x - max))` pair of each chunk.
    ///
    /// # Safety
    /// `p.x` readable as `[rows, cols]` with stride `ld`; `p.partials` writable for
    /// `2·rows·splits` floats; `splits·chunk >= cols`, `chunk` a multiple of 4;
    /// `grid.x = rows·splits`.
    ///
    /// # Parameters
    /// * `p.x`: `[rows, cols]`; `p.splits`, `p.chunk`: chunks per row and their width.
    /// * `p.partials`: `[rows·splits, 2]` out.
    ///
    /// # Thread Mapping
    /// Block `b` takes row `b / splits`, columns `[(b % splits)·chunk, +chunk)`;
    /// thread `t` of 512 reads the 16-byte vectors `t, t + 512, …` of the chunk
    /// (two loads in flight) and folds them into its running pair.
    #[launch(threads = SOFTMAX_ONLINE_THREADS)]
    pub unsafe fn softmax_online_partials(p: SoftmaxOnlineParams) {
        let scratch = shared_array!(SOFTMAX_ONLINE_P1, f32, 64);
        let b = block_idx().x as usize;
        let (r, start, end) = chunk_of(&p, b);
        debug_assert!(r < p.x.rows as usize, "softmax_online_partials: grid.x must be rows * splits");
        // SAFETY: r < rows.
        let xr = unsafe { p.x.ptr.add(r * p.x.ld as usize) };
        let vec = is_aligned16(xr);
        let (t, lanes) = (thread_idx().x as usize, block_dim().x as usize);
        // SAFETY: columns [start, end) of row r are readable (contract).
        let (m, s) = unsafe { fold_span(xr, start, end, t, lanes, vec) };
        // SAFETY: every thread calls it; scratch is this kernel's own.
        let (m, s) = unsafe { block_combine(m, s, scratch) };
        if t == 0 {
            // SAFETY: b < rows·splits pairs.
            unsafe {
                *p.partials.add(2 * b) = m;
                *p.partials.add(2 * b + 1) = s;
            }
        }
    }
}

kernel! {
    /// Online softmax, pass 2: `y = exp(x - M) / S` over each chunk, `(M, S)` the
    /// row's combined pair.
    ///
    /// # Safety
    /// As pass 1, with `p.y` writable as `[rows, cols]` (stride `ld`; `y` is `x` or
    /// does not overlap it) and the pairs written by pass 1.
    ///
    /// # Thread Mapping
    /// As pass 1; every warp first combines the row's `splits` pairs itself.
    #[launch(threads = SOFTMAX_ONLINE_THREADS)]
    pub unsafe fn softmax_online_finish(p: SoftmaxOnlineParams) {
        let b = block_idx().x as usize;
        let (r, start, end) = chunk_of(&p, b);
        debug_assert!(r < p.x.rows as usize, "softmax_online_finish: grid.x must be rows * splits");
        // SAFETY: pass 1 wrote the row's pairs (stream order).
        let (m, s) = unsafe { row_pair(p.partials, r, p.splits as usize) };
        let inv = rcp(s);
        // SAFETY: r < rows.
        let (xr, yr) = unsafe { (p.x.ptr.add(r * p.x.ld as usize), p.y.ptr.add(r * p.y.ld as usize)) };
        let (t, lanes) = (thread_idx().x as usize, block_dim().x as usize);
        // SAFETY: columns [start, end) of row r readable in x and writable in y (contract).
        unsafe { write_span::<false>(xr, yr, start, end, t, lanes, m, inv) };
    }
}
