//! GeLU, the lecture's first example: the same function as 7 kernels or as 1.
//!
//! `gelu(x) = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))` (tanh approximation), and
//! the exact `0.5·x·(1 + erf(x/√2))` for measuring the approximation's error.
//!
//! Written as PyTorch eager would run it, every operator is its own kernel that
//! reads and writes the whole tensor: 7 kernels and 64 bytes of traffic per element
//! (see [`NAIVE_STAGES`]). Fused, it is one kernel, 8 bytes per element (4 in, 4 out):
//! an 8x cut in traffic for a memory-bound function.
use crate::config::ELEMENTWISE_THREADS;
use simt_std::kernel;
use simt_std::math::{erf, exp2, fma, rcp, tanh};
use simt_std::memory::{is_aligned16, load4, store4};
use simt_std::thread::global_index_x;

/// √(2/π).
pub const SQRT_2_OVER_PI: f32 = 0.797_884_6;
/// The cubic coefficient of the tanh approximation.
pub const GELU_CUBIC: f32 = 0.044_715;

/// The naive composition, in launch order: kernel and bytes moved per element
/// (reads + writes of 4-byte floats). Sums to 7 launches and 64 bytes per element.
pub const NAIVE_STAGES: [(&str, u32); 7] = [
    ("ew_cube: t = x^3", 8),
    ("ew_axpby: t = x + 0.044715 t", 12),
    ("ew_affine: t = sqrt(2/pi) t", 8),
    ("ew_tanh: t = tanh t", 8),
    ("ew_affine: t = 1 + t", 8),
    ("ew_mul: t = x t", 12),
    ("ew_affine: y = 0.5 t", 8),
];

/// GeLU (tanh form) of one value, as the fused kernel computes it.
///
/// Uses `0.5·(1 + tanh(u)) = 1 / (1 + e^{-2u})`: the same function without the
/// cancellation of `1 + tanh(u)` for negative `x` (where tanh(u) → -1 and the
/// composed form loses ~1e-4 relative accuracy in f32). One `ex2` and one `rcp`;
/// `x → -inf` gives -0 and `x → +inf` gives `x`.
#[inline(always)]
pub fn gelu_tanh(x: f32) -> f32 {
    let u = SQRT_2_OVER_PI * fma(GELU_CUBIC * x, x * x, x);
    x * rcp(1.0 + exp2(-2.0 * simt_std::math::LOG2_E * u))
}

/// Exact GeLU of one value.
#[inline(always)]
pub fn gelu_erf(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * core::f32::consts::FRAC_1_SQRT_2))
}

/// Applies `f` to 4 elements per thread: one 16-byte load and store when in
/// bounds and aligned, scalars otherwise (the tail, or misaligned views).
#[inline(always)]
unsafe fn map4(x: *const f32, y: *mut f32, n: u32, f: impl Fn(f32) -> f32) {
    let i = global_index_x() * 4;
    let n = n as usize;
    if i + 4 <= n && is_aligned16(x) && is_aligned16(y) {
        // SAFETY: i+4 <= n and both pointers are 16-aligned, so x+i and y+i are too.
        unsafe { store4(y.add(i), load4(x.add(i)).map(f)) };
    } else {
        let mut j = i;
        while j < n && j < i + 4 {
            // SAFETY: j < n.
            unsafe { *y.add(j) = f(*x.add(j)) };
            j += 1;
        }
    }
}

kernel! {
    /// Fused GeLU (tanh form): `y[i] = gelu(x[i])`, one read and one write per element.
    ///
    /// # Safety
    /// `x` readable and `y` writable for `n` floats; they may alias exactly (in place).
    ///
    /// # Parameters
    /// * `x`: `[n]` input. * `y`: `[n]` output. * `n`: length.
    ///
    /// # Thread Mapping
    /// 1-D, 4 consecutive elements per thread (16-byte vectors when aligned):
    /// `grid.x = ceil(n / (4·ELEMENTWISE_THREADS))`.
    #[launch(threads = ELEMENTWISE_THREADS)]
    pub unsafe fn gelu_fused(x: *const f32, y: *mut f32, n: u32) {
        // SAFETY: forwarded contract.
        unsafe { map4(x, y, n, gelu_tanh) }
    }
}

kernel! {
    /// Exact GeLU: `y[i] = 0.5·x·(1 + erf(x/√2))`. Same contract and mapping as [`gelu_fused()`].
    ///
    /// # Safety
    /// As [`gelu_fused()`].
    #[launch(threads = ELEMENTWISE_THREADS)]
    pub unsafe fn gelu_erf_fused(x: *const f32, y: *mut f32, n: u32) {
        // SAFETY: forwarded contract.
        unsafe { map4(x, y, n, gelu_erf) }
    }
}

kernel! {
    /// Fused GeLU (tanh form) over a strided matrix: `y[r, c] = gelu(x[r, c])` for a
    /// `rows x cols` view with row strides `ldx` and `ldy` (any start and stride:
    /// rows whose starts are 16-byte aligned take vector loads, others scalars).
    ///
    /// # Safety
    /// `x` readable and `y` writable for the `rows x cols` views with strides `ldx`,
    /// `ldy`; the views do not overlap unless they are the same view (in place).
    ///
    /// # Parameters
    /// * `x`: `[rows, ldx]` input. * `y`: `[rows, ldy]` output.
    ///
    /// # Thread Mapping
    /// `grid.x = ceil(cols / (4·ELEMENTWISE_THREADS))` column chunks; `grid.y` rows at
    /// a time (at most 65535), each block striding over rows by `grid.y`.
    #[launch(threads = ELEMENTWISE_THREADS)]
    pub unsafe fn gelu_fused_rows(x: *const f32, ldx: u32, y: *mut f32, ldy: u32, rows: u32, cols: u32) {
        let mut r = simt_std::thread::block_idx().y;
        while r < rows {
            // SAFETY: row r < rows of both views; map4 stays within `cols` of it.
            unsafe { map4(x.add(r as usize * ldx as usize), y.add(r as usize * ldy as usize), cols, gelu_tanh) };
            r += simt_std::thread::grid_dim().y;
        }
    }
}

// ---- the naive stages: one elementwise PyTorch operator each -----------------

kernel! {
    /// `y = x³`. Naive stage 1. Same contract and mapping as [`gelu_fused()`].
    ///
    /// # Safety
    /// As [`gelu_fused()`].
    #[launch(threads = ELEMENTWISE_THREADS)]
    pub unsafe fn ew_cube(x: *const f32, y: *mut f32, n: u32) {
        // SAFETY: forwarded.
        unsafe { map4(x, y, n, |v| v * v * v) }
    }
}

kernel! {
    /// `y = alpha·x + beta`. Naive stages 3, 5, 7. Same mapping as [`gelu_fused()`].
    ///
    /// # Safety
    /// As [`gelu_fused()`].
    #[launch(threads = ELEMENTWISE_THREADS)]
    pub unsafe fn ew_affine(x: *const f32, y: *mut f32, n: u32, alpha: f32, beta: f32) {
        // SAFETY: forwarded.
        unsafe { map4(x, y, n, |v| fma(alpha, v, beta)) }
    }
}

kernel! {
    /// `y = tanh(x)`. Naive stage 4. Same mapping as [`gelu_fused()`].
    ///
    /// # Safety
    /// As [`gelu_fused()`].
    #[launch(threads = ELEMENTWISE_THREADS)]
    pub unsafe fn ew_tanh(x: *const f32, y: *mut f32, n: u32) {
        // SAFETY: forwarded.
        unsafe { map4(x, y, n, tanh) }
    }
}

kernel! {
    /// `y[i] = alpha·a[i] + beta·b[i]`, one element per thread. Naive stage 2.
    ///
    /// # Safety
    /// `a`, `b` readable and `y` writable for `n` floats.
    ///
    /// # Thread Mapping
    /// 1-D, one element per thread: `grid.x = ceil(n / ELEMENTWISE_THREADS)`.
    #[launch(threads = ELEMENTWISE_THREADS)]
    pub unsafe fn ew_axpby(a: *const f32, b: *const f32, y: *mut f32, n: u32, alpha: f32, beta: f32) {
        let i = global_index_x();
        if i < n as usize {
            // SAFETY: i < n.
            unsafe { *y.add(i) = fma(alpha, *a.add(i), beta * *b.add(i)) };
        }
    }
}

kernel! {
    /// `y[i] = a[i]·b[i]`, one element per thread. Naive stage 6.
    ///
    /// # Safety
    /// As [`ew_axpby()`].
    #[launch(threads = ELEMENTWISE_THREADS)]
    pub unsafe fn ew_mul(a: *const f32, b: *const f32, y: *mut f32, n: u32) {
        let i = global_index_x();
        if i < n as usize {
            // SAFETY: i < n.
            unsafe { *y.add(i) = *a.add(i) * *b.add(i) };
        }
    }
}
