//! Pieces the softmax kernels share, for every PTX target (the portable module
//! and the Hopper one): a row slice held in registers, and the online-softmax
//! combination of `(max, sum)` pairs.
use simt_std::math::exp;
use simt_std::memory::{
    compiler_barrier, is_aligned16, load4, load4_cs, load4_first, prefetch_l2, store4, store4_cs,
    store4_first,
    F32x4,
};
use simt_std::pipeline::copy_async;
use simt_std::shared::Smem;
use simt_std::unroll;
use simt_std::warp::{max_nan, shfl_xor_f32};

/// A row slice in registers: lane `lane` of `lanes` holds vector `k` (for `k < V`)
/// at columns `start + 4·(lane + k·lanes) ..+4`, so each warp-wide load is one
/// contiguous 512-byte span. Columns at or past `end` hold `-inf`.
pub(crate) struct Slice<const V: usize> {
    pub v: [F32x4; V],
}

impl<const V: usize> Slice<V> {
    /// The first column of vector `k` of this lane.
    #[inline(always)]
    pub(crate) fn col(start: usize, lane: usize, lanes: usize, k: usize) -> usize {
        start + 4 * (lane + k * lanes)
    }

    /// Loads the lane's vectors of `row[start..end]`: 16-byte loads when `vec` (the
    /// row start is 16-byte aligned; `start` is a multiple of 4), scalar otherwise.
    ///
    /// # Safety
    /// `row[start..end]` readable.
    #[inline(always)]
    pub unsafe fn load(
        row: *const f32,
        start: usize,
        end: usize,
        lane: usize,
        lanes: usize,
        vec: bool,
    ) -> Self {
        // SAFETY: forwarded (no head: lo = start).
        unsafe { Self::load_from::<false, false>(row, start, start, end, lane, lanes, vec) }
    }

    /// As [`load`](Self::load), for the columns `[lo, end)` of the vectors of
    /// `[start, end)`: with `HEAD`, columns before `lo` (`start <= lo < start + 4`,
    /// inside one lane's first vector) are `-inf`. This is how a row that does not
    /// start 16-byte aligned is read as an aligned one: `row` is the aligned address
    /// up to 3 floats before the row's first element, and `lo` that first element's
    /// column. The head's vector is read whole (one aligned 16-byte load, its columns
    /// before `lo` then masked: a byte-wise head cost the wide split kernel 80 bytes of
    /// spills at its 64 registers); nothing before `lo` is ever written
    /// ([`store_scaled_from`](Self::store_scaled_from)). Without `HEAD`, `lo` is
    /// ignored (and the code is `load`'s). With `LAST`, the whole vectors are loaded
    /// as their last use ([`load4_cs`]: evict-first in L2).
    ///
    /// # Safety
    /// `row[start..end]` readable: with `HEAD`, `row[lo..end]` is the row and
    /// `row[start..lo]` the bytes before it in the same allocation, which starts
    /// 16-byte aligned (a device allocation does); with `LAST`, in global memory.
    #[inline(always)]
    pub unsafe fn load_from<const HEAD: bool, const LAST: bool>(
        row: *const f32,
        start: usize,
        lo: usize,
        end: usize,
        lane: usize,
        lanes: usize,
        vec: bool,
    ) -> Self {
        let mut v = [F32x4::splat(f32::NEG_INFINITY); V];
        if vec && Self::col(start, lane, lanes, V - 1) + 4 <= end {
            // Every vector whole and aligned: V loads with no branch between them. With
            // the per-vector checks below, ptxas keeps each load in its own branch and
            // issues the next only after the previous one returned (measured: the
            // 16384-column kernel at 0.34 ms against 0.22 for the shared-memory one).
            let mut k = 0;
            while k < V {
                // SAFETY: the lane's last vector ends by `end`; aligned (vec, c % 4 == 0);
                // a head vector's columns before lo are readable (the contract).
                let p = unsafe { row.add(Self::col(start, lane, lanes, k)) };
                // SAFETY: as above; global memory (the contract) for the hinted load.
                v[k] = unsafe {
                    if LAST {
                        load4_cs(p)
                    } else {
                        load4(p)
                    }
                };
                k += 1;
            }
        } else {
            // All V loads first, then the masking: the loads are independent and all
            // in flight.
            let mut k = 0;
            while k < V {
                let c = Self::col(start, lane, lanes, k);
                let valid = end.saturating_sub(c).min(4) as u32;
                if valid > 0 {
                    // SAFETY: columns c..c+valid are inside [start, end).
                    let a = unsafe { load4_first(row.add(c), valid, vec) };
                    v[k] = mask_tail(a, valid);
                }
                k += 1;
            }
        }
        // Only the lane's first vector can hold the head (lo < start + 4): the columns
        // before lo are -inf, whatever was read there.
        let c = Self::col(start, lane, lanes, 0);
        if HEAD && c < lo {
            let mut o = v[0].to_array();
            unroll!(4, J => {
                if c + J < lo {
                    o[J] = f32::NEG_INFINITY;
                }
            });
            v[0] = F32x4::from_array(o);
        }
        Slice { v }
    }

    /// Prefetches `row[start..end]` into L2, one 128-byte line per lane in turn
    /// (a hint: loads of it later hit L2).
    ///
    /// # Safety
    /// `row[start..end]` is in one allocation.
    #[inline(always)]
    pub unsafe fn prefetch(row: *const f32, start: usize, end: usize, lane: usize, lanes: usize) {
        let mut c = start + 32 * lane;
        while c < end {
            // SAFETY: c < end.
            unsafe { prefetch_l2(row.add(c)) };
            c += 32 * lanes;
        }
    }

    /// The lane's maximum (NaN if any element is NaN).
    #[inline(always)]
    pub fn max(&self) -> f32 {
        let mut m = f32::NEG_INFINITY;
        let mut k = 0;
        while k < V {
            let a = self.v[k];
            m = max_nan(m, max_nan(max_nan(a.x, a.y), max_nan(a.z, a.w)));
            k += 1;
        }
        m
    }

    /// Replaces every element by `exp(e - m)` and returns the lane's sum of them.
    #[inline(always)]
    pub fn exp_sum(&mut self, m: f32) -> f32 {
        let mut s = 0.0f32;
        let mut k = 0;
        while k < V {
            let e = self.v[k].map(|x| exp(x - m));
            s += (e.x + e.y) + (e.z + e.w);
            self.v[k] = e;
            k += 1;
        }
        s
    }

    /// Stores `factor ·` the lane's elements to `row[start..end]` (16-byte stores
    /// when `vec`).
    ///
    /// # Safety
    /// `row[start..end]` writable.
    #[inline(always)]
    pub unsafe fn store_scaled(
        &self,
        row: *mut f32,
        start: usize,
        end: usize,
        lane: usize,
        lanes: usize,
        vec: bool,
        factor: f32,
    ) {
        // SAFETY: forwarded (no head: lo = start).
        unsafe {
            self.store_scaled_from::<false, false>(row, start, start, end, lane, lanes, vec, factor)
        }
    }

    /// As [`store_scaled`](Self::store_scaled), for the columns `[lo, end)`: with
    /// `HEAD`, nothing before `lo` is written (the head of a row read by
    /// [`load_from`](Self::load_from)). With `STREAM`, the whole vectors are stored
    /// as streaming data ([`store4_cs`]: evict-first in L2).
    ///
    /// # Safety
    /// `row[lo..end]` writable (`row[start..end]` without `HEAD`); with `STREAM`, in
    /// global memory.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn store_scaled_from<const HEAD: bool, const STREAM: bool>(
        &self,
        row: *mut f32,
        start: usize,
        lo: usize,
        end: usize,
        lane: usize,
        lanes: usize,
        vec: bool,
        factor: f32,
    ) {
        let lo = if HEAD { lo } else { start };
        if vec
            && (!HEAD || Self::col(start, lane, lanes, 0) >= lo)
            && Self::col(start, lane, lanes, V - 1) + 4 <= end
        {
            let mut k = 0;
            while k < V {
                // SAFETY: as `load`'s whole-vector path; global memory for the hinted store.
                unsafe {
                    let (p, e) = (
                        row.add(Self::col(start, lane, lanes, k)),
                        self.v[k].map(|e| e * factor),
                    );
                    if STREAM {
                        store4_cs(p, e)
                    } else {
                        store4(p, e)
                    }
                };
                k += 1;
            }
            return;
        }
        let mut k = 0;
        while k < V {
            let c = Self::col(start, lane, lanes, k);
            let valid = end.saturating_sub(c).min(4) as u32;
            if valid > 0 && (!HEAD || c >= lo) {
                // SAFETY: columns c..c+valid are inside [lo, end).
                unsafe { store4_first(row.add(c), self.v[k].map(|e| e * factor), valid, vec) };
            }
            k += 1;
        }
        // The head vector (only the lane's first), its columns from lo on.
        let c = Self::col(start, lane, lanes, 0);
        if HEAD && c < lo {
            let e = self.v[0].map(|e| e * factor).to_array();
            unroll!(4, J => {
                if c + J >= lo && c + J < end {
                    // SAFETY: column c + J is inside [lo, end).
                    unsafe { *row.add(c + J) = e[J] };
                }
            });
        }
    }
}

/// The lane's vectors of `row[start..end]` staged in shared memory: `cp.async`
/// copies into `dst`, vector `k` at `dst[Slice::col(0, lane, lanes, k)]` (the
/// [`Slice`] layout, offset by `start`). Nothing past `end` is read: the vector cut
/// by it copies its valid floats with 4-byte copies and zero-fills the rest.
/// Each lane later reads back only its own vectors ([`Slice::read_staged`],
/// [`staged_max`], [`staged_exp_sum`]): after its own `wait`, no barrier needed.
///
/// # Safety
/// `row[start..end]` readable and 16-byte aligned at `start` (the row start is, and
/// `start % 4 == 0`); `dst` holds `4·lanes·V` floats that no other lane's copies use
/// at these slots.
#[inline(always)]
pub(crate) unsafe fn stage_async<const V: usize>(
    row: *const f32,
    start: usize,
    end: usize,
    dst: Smem<f32>,
    lane: usize,
    lanes: usize,
) {
    let mut k = 0;
    while k < V {
        let c = Slice::<V>::col(start, lane, lanes, k);
        if c < end {
            let valid = (end - c).min(4);
            if valid == 4 {
                // SAFETY: columns c..c+4 are in the row, 16-byte aligned (aligned rows,
                // c % 4 == 0); the destination is this lane's own slot.
                unsafe { copy_async::<16, f32>(dst.add(c - start), row.add(c), 16) };
            } else {
                // The row's last vector: 4-byte copies of the columns that exist (zeros
                // after), so nothing past the row's end is read.
                let mut j = 0;
                while j < 4 {
                    let (src, bytes) = if j < valid { (c + j, 4) } else { (c, 0) };
                    // SAFETY: column `src` is in the row; 4-byte aligned slots of this
                    // lane's own part of `dst`.
                    unsafe { copy_async::<4, f32>(dst.add(c - start + j), row.add(src), bytes) };
                    j += 1;
                }
            }
        }
        k += 1;
    }
}

impl<const V: usize> Slice<V> {
    /// The lane's vectors of `[start, end)` from shared memory staged by
    /// [`stage_async`] at `src`: `-inf` past the end, as [`Slice::load`] gives.
    ///
    /// # Safety
    /// This lane's copies of `[start, end)` into `src` have been waited for.
    #[inline(always)]
    pub(crate) unsafe fn read_staged(
        src: Smem<f32>,
        start: usize,
        end: usize,
        lane: usize,
        lanes: usize,
    ) -> Self {
        let mut v = [F32x4::splat(f32::NEG_INFINITY); V];
        if Self::col(start, lane, lanes, V - 1) + 4 <= end {
            // Every vector whole: V loads with no branch between them.
            let mut k = 0;
            while k < V {
                // SAFETY: the caller's contract; 16-byte aligned slot.
                v[k] = unsafe { src.add(Self::col(0, lane, lanes, k)).load4() };
                k += 1;
            }
            return Slice { v };
        }
        let mut k = 0;
        while k < V {
            let c = Self::col(start, lane, lanes, k);
            if c < end {
                // SAFETY: the caller's contract; 16-byte aligned slot.
                let a = unsafe { src.add(c - start).load4() };
                v[k] = mask_tail(a, (end - c).min(4) as u32);
            }
            k += 1;
        }
        Slice { v }
    }
}

/// The lane's maximum over its staged vectors of `[start, end)` (as
/// [`Slice::max`], one vector in registers at a time).
///
/// # Safety
/// As [`Slice::read_staged`].
#[inline(always)]
pub(crate) unsafe fn staged_max<const V: usize>(
    src: Smem<f32>,
    start: usize,
    end: usize,
    lane: usize,
    lanes: usize,
) -> f32 {
    let mut m = f32::NEG_INFINITY;
    let whole = Slice::<V>::col(start, lane, lanes, V - 1) + 4 <= end;
    let mut k = 0;
    while k < V {
        let c = Slice::<V>::col(start, lane, lanes, k);
        if whole {
            // SAFETY: the caller's contract; 16-byte aligned slot.
            let a = unsafe { src.add(Slice::<V>::col(0, lane, lanes, k)).load4() };
            m = max_nan(m, max_nan(max_nan(a.x, a.y), max_nan(a.z, a.w)));
            // Two vectors in flight at a time: the caller holds a slice in registers
            // (hoisting every load spilled the wide split kernel).
            if k % 2 == 1 {
                compiler_barrier();
            }
        } else if c < end {
            // SAFETY: the caller's contract; 16-byte aligned slot.
            let a = mask_tail(
                unsafe { src.add(c - start).load4() },
                (end - c).min(4) as u32,
            );
            m = max_nan(m, max_nan(max_nan(a.x, a.y), max_nan(a.z, a.w)));
        }
        k += 1;
    }
    m
}

/// Replaces the lane's staged elements of `[start, end)` by `exp(e - m)` in place
/// and returns their sum (as [`Slice::exp_sum`]; past `end` they become 0).
///
/// # Safety
/// As [`Slice::read_staged`].
#[inline(always)]
pub(crate) unsafe fn staged_exp_sum<const V: usize>(
    src: Smem<f32>,
    start: usize,
    end: usize,
    lane: usize,
    lanes: usize,
    m: f32,
) -> f32 {
    let mut s = 0.0f32;
    let whole = Slice::<V>::col(start, lane, lanes, V - 1) + 4 <= end;
    let mut k = 0;
    while k < V {
        let c = Slice::<V>::col(start, lane, lanes, k);
        if whole {
            let slot = src.add(Slice::<V>::col(0, lane, lanes, k));
            // SAFETY: the caller's contract; this lane's own 16-byte aligned slot.
            let e = unsafe { slot.load4() }.map(|x| exp(x - m));
            s += (e.x + e.y) + (e.z + e.w);
            // SAFETY: as the load.
            unsafe { slot.store4(e) };
            if k % 2 == 1 {
                compiler_barrier();
            }
        } else if c < end {
            let slot = src.add(c - start);
            // SAFETY: the caller's contract; this lane's own 16-byte aligned slot.
            let a = mask_tail(unsafe { slot.load4() }, (end - c).min(4) as u32);
            let e = a.map(|x| exp(x - m));
            s += (e.x + e.y) + (e.z + e.w);
            // SAFETY: as the load.
            unsafe { slot.store4(e) };
        }
        k += 1;
    }
    s
}

/// Stores `factor ·` the lane's staged elements of `[start, end)` to
/// `row[start..end]`, one vector at a time (as [`Slice::store_scaled`], without
/// holding the slice in registers).
///
/// # Safety
/// As [`Slice::read_staged`]; `row[start..end]` writable, 16-byte aligned at `start`
/// when `vec`.
#[inline(always)]
pub(crate) unsafe fn staged_store_scaled<const V: usize>(
    src: Smem<f32>,
    row: *mut f32,
    start: usize,
    end: usize,
    lane: usize,
    lanes: usize,
    vec: bool,
    factor: f32,
) {
    let whole = vec && Slice::<V>::col(start, lane, lanes, V - 1) + 4 <= end;
    let mut k = 0;
    while k < V {
        let c = Slice::<V>::col(start, lane, lanes, k);
        if whole {
            // SAFETY: the caller's contract; this lane's own 16-byte aligned slot, and
            // columns c..c+4 inside [start, end), aligned (vec).
            unsafe {
                let e = src
                    .add(Slice::<V>::col(0, lane, lanes, k))
                    .load4()
                    .map(|e| e * factor);
                store4(row.add(c), e);
            }
        } else if c < end {
            // SAFETY: the caller's contract; this lane's own 16-byte aligned slot, and
            // columns c..c+valid inside [start, end).
            unsafe {
                let e = src.add(c - start).load4().map(|e| e * factor);
                store4_first(row.add(c), e, (end - c).min(4) as u32, vec);
            }
        }
        k += 1;
    }
}

/// Writes `y = exp(x - m)·inv` over this thread's vectors of `[start..end)` (the
/// vectors of `softmax_online`'s `fold_span`), 4 loads in flight before the first exp. With `LAST`,
/// the whole vectors of `x` are read as their last use ([`load4_cs`]: evict-first
/// in L2), for a kernel whose pass 1 read them into L2 and which wants the rows
/// not yet re-read to stay there.
///
/// # Safety
/// `x[start..end]` readable and `y[start..end]` writable, `y` either `x` or not
/// overlapping it; `start % 4 == 0`; with `LAST`, `x` in global memory.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn write_span<const LAST: bool>(
    x: *const f32,
    y: *mut f32,
    start: usize,
    end: usize,
    t: usize,
    lanes: usize,
    m: f32,
    inv: f32,
) {
    let (vx, vy) = (is_aligned16(x), is_aligned16(y));
    let step = 4 * lanes;
    let mut c = start + 4 * t;
    // Whole groups of 4 vectors: 4 loads in flight before the first exp.
    while vx && vy && c + 3 * step + 4 <= end {
        let mut a = [F32x4::splat(0.0); 4];
        unroll!(4, K => {
            // SAFETY: the group ends by `end`; aligned (vx, c % 4 == 0); global with LAST.
            a[K] = unsafe {
                if LAST {
                    load4_cs(x.add(c + K * step))
                } else {
                    load4(x.add(c + K * step))
                }
            };
        });
        unroll!(4, K => {
            // SAFETY: as the loads, in y (vy).
            unsafe { store4(y.add(c + K * step), a[K].map(|v| exp(v - m) * inv)) };
        });
        c += 4 * step;
    }
    while c < end {
        let valid = (end - c).min(4) as u32;
        // SAFETY: columns c..c+valid are in the span, in x and in y.
        unsafe {
            let a = load4_first(x.add(c), valid, vx);
            store4_first(y.add(c), a.map(|v| exp(v - m) * inv), valid, vy);
        }
        c += step;
    }
}

/// `a` with lanes `valid..4` set to `-inf`.
#[inline(always)]
pub(crate) fn mask_tail(a: F32x4, valid: u32) -> F32x4 {
    if valid >= 4 {
        return a;
    }
    let mut o = a.to_array();
    unroll!(4, J => {
        if J as u32 >= valid {
            o[J] = f32::NEG_INFINITY;
        }
    });
    F32x4 {
        x: o[0],
        y: o[1],
        z: o[2],
        w: o[3],
    }
}

/// Combines two `(max, sum)` pairs: `(M, s1·exp(m1 - M) + s2·exp(m2 - M))` with
/// `M = max(m1, m2)` (NaN-propagating). `(-inf, 0)` is the identity.
#[inline(always)]
pub(crate) fn combine(m1: f32, s1: f32, m2: f32, s2: f32) -> (f32, f32) {
    let m = max_nan(m1, m2);
    if m == f32::NEG_INFINITY {
        return (m, 0.0);
    }
    (m, s1 * exp(m1 - m) + s2 * exp(m2 - m))
}

/// Combines the pairs of the 32 lanes of a warp (every lane gets the result).
#[inline(always)]
pub(crate) fn warp_combine(m: f32, s: f32) -> (f32, f32) {
    warp_combine_lanes(m, s, 32)
}

/// Combines the pairs of each group of `lanes` consecutive lanes (a power of two
/// up to 32; every lane gets its group's result).
#[inline(always)]
pub(crate) fn warp_combine_lanes(mut m: f32, mut s: f32, lanes: u32) -> (f32, f32) {
    let mut off = lanes / 2;
    while off >= 1 {
        let (mo, so) = (shfl_xor_f32(m, off), shfl_xor_f32(s, off));
        (m, s) = combine(m, s, mo, so);
        off /= 2;
    }
    (m, s)
}
