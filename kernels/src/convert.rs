//! Precision conversions on the device: f32 to bf16 or f16 (round to nearest even,
//! as PyTorch's `.bfloat16()` and `.half()`), and back (exact). Elementwise and
//! memory-bound: 6 bytes per element.
use crate::config::ELEMENTWISE_THREADS;
use crate::util::map_strided;
use simt_std::convert::{bf16_to_f32, f16_to_f32, f32_to_bf16_rne, f32_to_f16_rne};
use simt_std::kernel;
use simt_std::thread::{global_index_x, grid_stride_x};

/// `y[i] = f(x[i])` for `i < n`, grid-stride.
///
/// # Safety
/// `x` readable and `y` writable for `n` elements.
#[inline(always)]
unsafe fn map<A: Copy, B>(x: *const A, y: *mut B, n: u32, f: impl Fn(A) -> B) {
    let mut i = global_index_x();
    while i < n as usize {
        // SAFETY: i < n.
        unsafe { *y.add(i) = f(*x.add(i)) };
        i += grid_stride_x();
    }
}

kernel! {
    /// `y[i] = bf16(x[i])`, round to nearest even (`cvt.rn.bf16.f32`).
    ///
    /// # Safety
    /// `x` readable for `n` f32, `y` writable for `n` u16 (bf16 bits).
    ///
    /// # Thread Mapping
    /// Grid-stride over `i`, any grid of `ELEMENTWISE_THREADS`-thread blocks.
    #[launch(threads = ELEMENTWISE_THREADS)]
    pub unsafe fn f32_to_bf16(x: *const f32, y: *mut u16, n: u32) {
        // SAFETY: forwarded.
        unsafe { map(x, y, n, f32_to_bf16_rne) }
    }
}

kernel! {
    /// `y[i] = f16(x[i])`, round to nearest even (`cvt.rn.f16.f32`); beyond 65504 gives infinity.
    ///
    /// # Safety
    /// As [`f32_to_bf16()`].
    #[launch(threads = ELEMENTWISE_THREADS)]
    pub unsafe fn f32_to_f16(x: *const f32, y: *mut u16, n: u32) {
        // SAFETY: forwarded.
        unsafe { map(x, y, n, f32_to_f16_rne) }
    }
}

kernel! {
    /// `y[i] = f32(x[i])` for bf16 bits `x` (exact).
    ///
    /// # Safety
    /// `x` readable for `n` u16, `y` writable for `n` f32.
    #[launch(threads = ELEMENTWISE_THREADS)]
    pub unsafe fn bf16_to_f32_kernel(x: *const u16, y: *mut f32, n: u32) {
        // SAFETY: forwarded.
        unsafe { map(x, y, n, bf16_to_f32) }
    }
}

kernel! {
    /// `y[i] = f32(x[i])` for f16 bits `x` (exact).
    ///
    /// # Safety
    /// As [`bf16_to_f32_kernel()`].
    #[launch(threads = ELEMENTWISE_THREADS)]
    pub unsafe fn f16_to_f32_kernel(x: *const u16, y: *mut f32, n: u32) {
        // SAFETY: forwarded.
        unsafe { map(x, y, n, f16_to_f32) }
    }
}

/// `y[r·ld + c] = f(x[r·cols + c])` for `r < rows`, `c < cols`: a dense f32 matrix
/// into a strided 16-bit one.
///
/// # Safety
/// `x` readable for `rows · cols` f32; `y` writable at `r·ld + c` for `r < rows`,
/// `c < cols`.
#[inline(always)]
unsafe fn map_into_strided(
    x: *const f32,
    y: *mut u16,
    rows: u32,
    cols: u32,
    ld: u32,
    f: impl Fn(f32) -> u16,
) {
    // SAFETY: the caller's; `map_strided` passes dense indices below rows·cols.
    unsafe { map_strided(y, rows, cols, ld, |i| f(*x.add(i))) }
}

kernel! {
    /// `y[r·ld + c] = bf16(x[r·cols + c])`, round to nearest even: a dense f32 matrix
    /// into a strided bf16 one (a matmul's f32 result into the caller's bf16 C).
    ///
    /// # Safety
    /// `x` readable for `rows · cols` f32; `y` writable at `r·ld + c` for `r < rows`,
    /// `c < cols` (u16, bf16 bits).
    ///
    /// # Thread Mapping
    /// Grid-stride over the `rows · cols` elements, any grid of
    /// `ELEMENTWISE_THREADS`-thread blocks.
    #[launch(threads = ELEMENTWISE_THREADS)]
    pub unsafe fn f32_to_bf16_strided(x: *const f32, y: *mut u16, rows: u32, cols: u32, ld: u32) {
        // SAFETY: forwarded.
        unsafe { map_into_strided(x, y, rows, cols, ld, f32_to_bf16_rne) }
    }
}

kernel! {
    /// As [`f32_to_bf16_strided()`], to f16 (round to nearest even; beyond 65504
    /// gives infinity).
    ///
    /// # Safety
    /// As [`f32_to_bf16_strided()`].
    #[launch(threads = ELEMENTWISE_THREADS)]
    pub unsafe fn f32_to_f16_strided(x: *const f32, y: *mut u16, rows: u32, cols: u32, ld: u32) {
        // SAFETY: forwarded.
        unsafe { map_into_strided(x, y, rows, cols, ld, f32_to_f16_rne) }
    }
}
