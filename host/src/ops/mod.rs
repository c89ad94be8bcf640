//! Safe per-op wrappers: check shapes, choose the launch, launch, return typed errors.
//!
//! Every function takes device [`Buffer`]s and returns once the work is queued;
//! [`Gpu::download`](crate::Gpu::download) waits for it. The `*_host` conveniences
//! take and return host slices.
use crate::error::{Result, SimtError};
use crate::gpu::Buffer;

pub mod gelu;
pub mod matmul;
pub mod row_sum;
pub mod softmax;

/// A row-major matrix view: `rows x cols`, consecutive rows `ld` elements apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub rows: usize,
    pub cols: usize,
    pub ld: usize,
}

impl Layout {
    /// A contiguous `rows x cols` matrix (`ld = cols`).
    pub fn contiguous(rows: usize, cols: usize) -> Layout {
        Layout { rows, cols, ld: cols }
    }
    /// Elements a buffer needs to hold this view.
    pub fn min_len(&self) -> usize {
        if self.rows == 0 || self.cols == 0 {
            0
        } else {
            (self.rows - 1) * self.ld + self.cols
        }
    }
}

/// Checks a matrix view against its buffer: non-empty, `ld >= cols`, in bounds,
/// and every index fits the kernels' 32-bit parameters.
pub(crate) fn check_matrix(op: &'static str, what: &str, l: Layout, buf: &Buffer<f32>) -> Result<()> {
    if l.rows == 0 || l.cols == 0 {
        return Err(SimtError::Empty { op });
    }
    if l.ld < l.cols {
        return Err(SimtError::Shape { op, detail: format!("{what}: row stride {} is less than its {} columns", l.ld, l.cols) });
    }
    if buf.len() < l.min_len() {
        return Err(SimtError::Shape {
            op,
            detail: format!("{what}: a {}x{} view with row stride {} needs {} elements, the buffer has {}", l.rows, l.cols, l.ld, l.min_len(), buf.len()),
        });
    }
    fits_u32(op, what, l.rows)?;
    fits_u32(op, what, l.ld)?;
    Ok(())
}

pub(crate) fn fits_u32(op: &'static str, what: &str, v: usize) -> Result<u32> {
    u32::try_from(v).map_err(|_| SimtError::TooLarge { op, detail: format!("{what}: {v} exceeds the kernels' 32-bit sizes (4294967295)") })
}

/// Checks an elementwise pair: same length, non-empty, 32-bit length.
pub(crate) fn check_same_len(op: &'static str, x: &Buffer<f32>, y: &Buffer<f32>) -> Result<u32> {
    if x.len() != y.len() {
        return Err(SimtError::Shape { op, detail: format!("input has {} elements, output {}", x.len(), y.len()) });
    }
    if x.is_empty() {
        return Err(SimtError::Empty { op });
    }
    fits_u32(op, "length", x.len())
}
