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
use cust::memory::DeviceCopy;
use simt::{Buffer, Gpu, MatrixMut, MatrixRef, Result, SimtError};

pub mod gelu;
pub mod matmul;
pub mod matmul_tc;
pub mod row_sum;
pub mod softmax;

/// `Gpu::scratch_f32` slots of the ops (one owner each): the TF32 copies of the
/// Hopper matmul's A and B, the softmax's `(max, sum)` pairs, the split-K partial sums,
/// stage 6k's stream-K partial tiles, stage 4s's partial tiles and the row sums' parts.
pub(crate) const SCRATCH_TF32_A: usize = 0;
pub(crate) const SCRATCH_TF32_B: usize = 1;
pub(crate) const SCRATCH_SOFTMAX_PAIRS: usize = 2;
pub(crate) const SCRATCH_SPLITK: usize = 3;
pub(crate) const SCRATCH_STREAMK: usize = 4;
pub(crate) const SCRATCH_TAIL: usize = 5;
pub(crate) const SCRATCH_ROW_PARTS: usize = 6;

pub(crate) fn fits_u32(op: &'static str, what: &str, v: usize) -> Result<u32> {
    u32::try_from(v).map_err(|_| SimtError::TooLarge {
        op,
        detail: format!("{what}: {v} exceeds the kernels' 32-bit sizes (4294967295)"),
    })
}

/// A matrix view's device and 32-bit sizes: `(rows, cols, ld)`.
pub(crate) fn check_ref<T: DeviceCopy>(
    gpu: &Gpu,
    op: &'static str,
    what: &'static str,
    m: &MatrixRef<'_, T>,
) -> Result<(u32, u32, u32)> {
    gpu.check(op, what, m.buffer())?;
    Ok((
        fits_u32(op, what, m.rows())?,
        fits_u32(op, what, m.cols())?,
        fits_u32(op, what, m.ld())?,
    ))
}

/// As [`check_ref`], for a writable view.
pub(crate) fn check_mut<T: DeviceCopy>(
    gpu: &Gpu,
    op: &'static str,
    what: &'static str,
    m: &MatrixMut<'_, T>,
) -> Result<(u32, u32, u32)> {
    check_ref(gpu, op, what, &m.as_ref())
}

/// The sizes of a checked product `C (m x n) = A (m x k) · B (k x n)`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Product {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub lda: u32,
    pub ldb: u32,
    pub ldc: u32,
}

/// Devices, 32-bit sizes and agreeing shapes of `A·B -> C`: what every matmul checks.
pub(crate) fn check_product<T: DeviceCopy, O: DeviceCopy>(
    gpu: &Gpu,
    op: &'static str,
    a: &MatrixRef<'_, T>,
    b: &MatrixRef<'_, T>,
    c: &MatrixMut<'_, O>,
) -> Result<Product> {
    let (m, k, lda) = check_ref(gpu, op, "A", a)?;
    let (kb, n, ldb) = check_ref(gpu, op, "B", b)?;
    let (mc, nc, ldc) = check_mut(gpu, op, "C", c)?;
    if kb != k || mc != m || nc != n {
        return Err(SimtError::Shape {
            op,
            detail: format!(
                "A is {m}x{k}, B is {kb}x{n}, C is {mc}x{nc}: need A m x k, B k x n, C m x n"
            ),
        });
    }
    Ok(Product {
        m,
        n,
        k,
        lda,
        ldb,
        ldc,
    })
}

/// The grid of `bm x bn` output tiles over an `m x n` C: `(n tiles, m tiles)`, or
/// `TooLarge` when the tile rows pass the grid's y limit.
pub(crate) fn tile_grid(op: &'static str, m: u32, n: u32, bm: u32, bn: u32) -> Result<simt::Dim3> {
    let gy = m.div_ceil(bm);
    if gy > simt::MAX_GRID.y {
        return Err(SimtError::TooLarge {
            op,
            detail: format!("m = {m} needs {gy} block rows, over 65535; split A's rows"),
        });
    }
    Ok(simt::dim3(n.div_ceil(bn), gy, 1))
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
