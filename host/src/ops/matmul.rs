//! `C = relu?(A·B)`: naive and tiled kernels, any shape, row-major with strides.
use kernels::config::{MM_BM, MM_BN, MM_THREADS, NAIVE_TILE};
use kernels::{matmul_naive, matmul_tiled, matmul_tiled_db, matmul_warptiled};

use super::{check_matrix, Layout};
use crate::error::{Result, SimtError};
use crate::gpu::{dim3, Buffer, Gpu, LaunchConfig};

/// Which matmul kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatmulKernel {
    /// One thread per output, K loop from global memory.
    Naive,
    /// 128x128x8 shared-memory tiles, 8x8 outputs per thread, swizzled A tile.
    Tiled,
    /// `Tiled`, double-buffered: next K step's loads in flight during compute,
    /// two shared stages, one barrier per step, launch bounds (256, 2).
    TiledDoubleBuffered,
    /// `TiledDoubleBuffered` with warp tiles (32x64 per warp) and unchecked loads and
    /// stores in interior blocks: the fastest stage.
    WarpTiled,
}

impl MatmulKernel {
    /// All stages, slowest first.
    pub const ALL: [MatmulKernel; 4] = [MatmulKernel::Naive, MatmulKernel::Tiled, MatmulKernel::TiledDoubleBuffered, MatmulKernel::WarpTiled];
    /// Short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            MatmulKernel::Naive => "naive",
            MatmulKernel::Tiled => "tiled",
            MatmulKernel::TiledDoubleBuffered => "tiled+db",
            MatmulKernel::WarpTiled => "warptiled",
        }
    }
}

/// Shapes of one product: `A: m x k`, `B: k x n`, `C: m x n`, each with a row stride.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulShape {
    pub a: Layout,
    pub b: Layout,
    pub c: Layout,
}

impl MatmulShape {
    /// Contiguous `m x k` times `k x n`.
    pub fn contiguous(m: usize, n: usize, k: usize) -> MatmulShape {
        MatmulShape { a: Layout::contiguous(m, k), b: Layout::contiguous(k, n), c: Layout::contiguous(m, n) }
    }
    /// FLOPs of the product (2mnk).
    pub fn flops(&self) -> f64 {
        2.0 * self.a.rows as f64 * self.b.cols as f64 * self.a.cols as f64
    }
}

/// `C = A·B`, then ReLU if `relu`. `C` must not overlap `A` or `B`.
pub fn matmul(gpu: &Gpu, kernel: MatmulKernel, a: &Buffer<f32>, b: &Buffer<f32>, c: &mut Buffer<f32>, s: MatmulShape, relu: bool) -> Result<()> {
    let op = "matmul";
    check_matrix(op, "A", s.a, a)?;
    check_matrix(op, "B", s.b, b)?;
    check_matrix(op, "C", s.c, c)?;
    let (m, k, n) = (s.a.rows, s.a.cols, s.b.cols);
    if s.b.rows != k || s.c.rows != m || s.c.cols != n {
        return Err(SimtError::Shape {
            op,
            detail: format!("A is {m}x{k}, B is {}x{n}, C is {}x{}: need A m x k, B k x n, C m x n", s.b.rows, s.c.rows, s.c.cols),
        });
    }
    let (mu, nu, ku) = (m as u32, n as u32, k as u32);
    let args = (a.ptr(), b.ptr(), c.ptr_mut(), mu, nu, ku, s.a.ld as u32, s.b.ld as u32, s.c.ld as u32, relu as u32);
    let grid_y_limit = 65535u64;
    match kernel {
        MatmulKernel::Naive => {
            let gy = m.div_ceil(NAIVE_TILE as usize) as u64;
            if gy > grid_y_limit {
                return Err(SimtError::TooLarge { op, detail: format!("m = {m} needs {gy} block rows, over 65535") });
            }
            let cfg = LaunchConfig { grid: dim3(n.div_ceil(NAIVE_TILE as usize) as u32, gy as u32, 1), block: dim3(NAIVE_TILE, NAIVE_TILE, 1), shared_bytes: 0 };
            // SAFETY: all three views checked against their buffers; mapping per the docs.
            unsafe { gpu.launch::<matmul_naive::matmul_relu_naive>(cfg, args) }
        }
        MatmulKernel::Tiled | MatmulKernel::TiledDoubleBuffered | MatmulKernel::WarpTiled => {
            for (what, l) in [("A", s.a), ("B", s.b), ("C", s.c)] {
                if l.min_len() as u64 > u32::MAX as u64 {
                    return Err(SimtError::TooLarge {
                        op,
                        detail: format!("{what} spans {} elements; the tiled kernels index in 32 bits (< 2^32); use MatmulKernel::Naive or split the product", l.min_len()),
                    });
                }
            }
            let gy = m.div_ceil(MM_BM as usize) as u64;
            if gy > grid_y_limit {
                return Err(SimtError::TooLarge { op, detail: format!("m = {m} needs {gy} block rows, over 65535") });
            }
            let cfg = LaunchConfig { grid: dim3(n.div_ceil(MM_BN as usize) as u32, gy as u32, 1), block: dim3(MM_THREADS, 1, 1), shared_bytes: 0 };
            // SAFETY: as above; the tiled stages share the grid, block and contract.
            unsafe {
                match kernel {
                    MatmulKernel::Tiled => gpu.launch::<matmul_tiled::matmul_relu_tiled>(cfg, args),
                    MatmulKernel::TiledDoubleBuffered => gpu.launch::<matmul_tiled_db::matmul_relu_tiled_db>(cfg, args),
                    _ => gpu.launch::<matmul_warptiled::matmul_relu_warptiled>(cfg, args),
                }
            }
        }
    }
}

/// Host-slice convenience: contiguous `a: m x k`, `b: k x n`, returns `m x n`.
pub fn matmul_host(gpu: &Gpu, kernel: MatmulKernel, a: &[f32], b: &[f32], m: usize, n: usize, k: usize, relu: bool) -> Result<Vec<f32>> {
    let ab = gpu.upload(a)?;
    let bb = gpu.upload(b)?;
    let mut cb = gpu.alloc::<f32>(m * n)?;
    matmul(gpu, kernel, &ab, &bb, &mut cb, MatmulShape::contiguous(m, n, k), relu)?;
    gpu.download(&cb)
}
