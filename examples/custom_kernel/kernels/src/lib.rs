//! A user's kernels crate: one kernel, written against simt-std only.
#![cfg_attr(
    target_arch = "nvptx64",
    no_std,
    feature(abi_ptx, asm_experimental_arch)
)]

use simt_std::kernel;
use simt_std::math::{exp2, fma, rcp, LOG2_E};
use simt_std::thread::{global_index_x, grid_stride_x};

/// Threads per block of [`bias_gelu`]: the one place this number is written.
pub const BLOCK: u32 = 256;

/// GeLU, tanh form, as `0.5·x·(1 + tanh(u)) = x / (1 + e^{-2u})` (no cancellation for negative x).
#[inline(always)]
pub fn gelu(x: f32) -> f32 {
    let u = 0.797_884_6 * fma(0.044_715 * x * x, x, x);
    x * rcp(1.0 + exp2(-2.0 * LOG2_E * u))
}

kernel! {
    /// Fused bias + GeLU: `y[r, c] = gelu(x[r, c] + bias[c])` for a `rows x cols`
    /// row-major matrix: one read of x, one of the (cached) bias row, one write of y.
    ///
    /// # Safety
    /// `x` readable and `y` writable for `rows·cols` floats, `bias` readable for `cols`;
    /// `y` may be `x` (in place).
    ///
    /// # Parameters
    /// * `x`, `y`: `[rows, cols]` row-major, contiguous. * `bias`: `[cols]`.
    ///
    /// # Thread Mapping
    /// Grid-stride loop over the `rows·cols` elements, `BLOCK` threads per block, any grid.
    #[launch(threads = BLOCK)]
    pub unsafe fn bias_gelu(x: *const f32, bias: *const f32, y: *mut f32, rows: u32, cols: u32) {
        let n = rows as usize * cols as usize;
        let mut i = global_index_x();
        while i < n {
            // SAFETY: i < rows·cols, and i % cols < cols (the contract's sizes).
            unsafe { *y.add(i) = gelu(*x.add(i) + *bias.add(i % cols as usize)) };
            i += grid_stride_x();
        }
    }
}
