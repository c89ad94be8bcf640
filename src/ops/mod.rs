//! Safe per-op functions: check devices and shapes, choose the grid, launch, return
//! typed errors.
//!
//! Every function takes device [`Buffer`]s or matrix views ([`MatrixRef`],
//! [`MatrixMut`]) and returns once the work is queued;
//! [`Gpu::download`](crate::Gpu::download) waits for it. The `*_host` conveniences
//! take and return host slices. Every buffer must belong to the `Gpu` the op runs
//! on ([`SimtError::WrongDevice`] otherwise).
//!
//! Zero-sized inputs follow PyTorch: an op on an empty tensor returns an empty
//! result and launches nothing (see each op for its case).
use simt::{Buffer, Gpu, MatrixMut, MatrixRef, Result, SimtError};

pub mod gelu;
pub mod matmul;
pub mod matmul_tc;
pub mod row_sum;
pub mod softmax;

pub(crate) fn fits_u32(op: &'static str, what: &str, v: usize) -> Result<u32> {
    u32::try_from(v).map_err(|_| SimtError::TooLarge {
        op,
        detail: format!("{what}: {v} exceeds the kernels' 32-bit sizes (4294967295)"),
    })
}

/// A matrix view's device and 32-bit sizes: `(rows, cols, ld)`.
pub(crate) fn check_ref(
    gpu: &Gpu,
    op: &'static str,
    what: &'static str,
    m: &MatrixRef<'_, f32>,
) -> Result<(u32, u32, u32)> {
    gpu.check(op, what, m.buffer())?;
    Ok((
        fits_u32(op, what, m.rows())?,
        fits_u32(op, what, m.cols())?,
        fits_u32(op, what, m.ld())?,
    ))
}

/// As [`check_ref`], for a writable view.
pub(crate) fn check_mut(
    gpu: &Gpu,
    op: &'static str,
    what: &'static str,
    m: &MatrixMut<'_, f32>,
) -> Result<(u32, u32, u32)> {
    check_ref(gpu, op, what, &m.as_ref())
}

/// An elementwise pair: same device, same length, 32-bit length.
pub(crate) fn check_same_len(
    gpu: &Gpu,
    op: &'static str,
    x: &Buffer<f32>,
    y: &Buffer<f32>,
) -> Result<u32> {
    gpu.check(op, "x", x)?;
    gpu.check(op, "y", y)?;
    if x.len() != y.len() {
        return Err(SimtError::Shape {
            op,
            detail: format!("input has {} elements, output {}", x.len(), y.len()),
        });
    }
    fits_u32(op, "length", x.len())
}
