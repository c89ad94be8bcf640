//! Pieces the softmax kernels share, for every PTX target (the portable module
//! and the Hopper one): a row slice held in registers, and the online-softmax
//! combination of `(max, sum)` pairs.
use simt_std::math::exp;
use simt_std::memory::{load4, load4_first, prefetch_l2, store4, store4_first, F32x4};
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
        let mut v = [F32x4::splat(f32::NEG_INFINITY); V];
        if vec && Self::col(start, lane, lanes, V - 1) + 4 <= end {
            // Every vector whole and aligned: V loads with no branch between them. With
            // the per-vector checks below, ptxas keeps each load in its own branch and
            // issues the next only after the previous one returned (measured: the
            // 16384-column kernel at 0.34 ms against 0.22 for the shared-memory one).
            let mut k = 0;
            while k < V {
                // SAFETY: the lane's last vector ends by `end`; aligned (vec, c % 4 == 0).
                v[k] = unsafe { load4(row.add(Self::col(start, lane, lanes, k))) };
                k += 1;
            }
            return Slice { v };
        }
        // All V loads first, then the masking: the loads are independent and all in flight.
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
        if vec && Self::col(start, lane, lanes, V - 1) + 4 <= end {
            let mut k = 0;
            while k < V {
                // SAFETY: as `load`'s whole-vector path.
                unsafe {
                    store4(
                        row.add(Self::col(start, lane, lanes, k)),
                        self.v[k].map(|e| e * factor),
                    )
                };
                k += 1;
            }
            return;
        }
        let mut k = 0;
        while k < V {
            let c = Self::col(start, lane, lanes, k);
            let valid = end.saturating_sub(c).min(4) as u32;
            if valid > 0 {
                // SAFETY: columns c..c+valid are inside [start, end).
                unsafe { store4_first(row.add(c), self.v[k].map(|e| e * factor), valid, vec) };
            }
            k += 1;
        }
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
pub(crate) fn warp_combine(mut m: f32, mut s: f32) -> (f32, f32) {
    let mut off = 16;
    while off >= 1 {
        let (mo, so) = (shfl_xor_f32(m, off), shfl_xor_f32(s, off));
        (m, s) = combine(m, s, mo, so);
        off /= 2;
    }
    (m, s)
}
