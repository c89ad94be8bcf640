//! `C = epilogue(A·B)`: naive, tiled, double-buffered and warp-tiled kernels, any
//! shape, row-major views with their own strides.
//!
//! Zero-sized: `m = 0` or `n = 0` writes nothing and launches nothing; `k = 0`
//! writes `epilogue(0) = 0` to every element of C (the empty sum), as `torch.mm` does.
use kernels::config::{MM_BM, MM_BN, NAIVE_TILE};
pub use kernels::params::Epilogue;
use kernels::params::{MatMut, MatRef, MatmulParams};
use kernels::{matmul_naive, matmul_tiled, matmul_tiled_db, matmul_warptiled};
use simt::{Gpu, Kernel, LaunchConfig, MatrixMut, MatrixRef, Result, SimtError};

use super::{check_product, tile_grid, Product};
use crate::ptx;

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
    pub const ALL: [MatmulKernel; 4] = [
        MatmulKernel::Naive,
        MatmulKernel::Tiled,
        MatmulKernel::TiledDoubleBuffered,
        MatmulKernel::WarpTiled,
    ];
    /// Short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            MatmulKernel::Naive => "naive",
            MatmulKernel::Tiled => "tiled",
            MatmulKernel::TiledDoubleBuffered => "tiled+db",
            MatmulKernel::WarpTiled => "warptiled",
        }
    }
    /// The PTX entry name of the stage.
    pub fn kernel_name(self) -> &'static str {
        match self {
            MatmulKernel::Naive => matmul_naive::matmul_relu_naive::NAME,
            MatmulKernel::Tiled => matmul_tiled::matmul_relu_tiled::NAME,
            MatmulKernel::TiledDoubleBuffered => matmul_tiled_db::matmul_relu_tiled_db::NAME,
            MatmulKernel::WarpTiled => matmul_warptiled::matmul_relu_warptiled::NAME,
        }
    }
}

/// The sizes of one product: `A: m x k`, `B: k x n`, `C: m x n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

impl Dims {
    /// FLOPs of the product (2mnk).
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }
}

/// `C = epilogue(A·B)` with `kernel`. `C` must not overlap `A` or `B`.
pub fn matmul(
    gpu: &Gpu,
    kernel: MatmulKernel,
    a: MatrixRef<'_, f32>,
    b: MatrixRef<'_, f32>,
    mut c: MatrixMut<'_, f32>,
    epilogue: Epilogue,
) -> Result<()> {
    let op = "matmul";
    let Product {
        m,
        n,
        k,
        lda,
        ldb,
        ldc,
    } = check_product(gpu, op, &a, &b, &c)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    ptx::load(gpu)?;
    let p = MatmulParams {
        a: MatRef {
            ptr: a.ptr(),
            rows: m,
            cols: k,
            ld: lda,
        },
        b: MatRef {
            ptr: b.ptr(),
            rows: k,
            cols: n,
            ld: ldb,
        },
        c: MatMut {
            ptr: c.ptr_mut(),
            rows: m,
            cols: n,
            ld: ldc,
        },
        epilogue,
    };
    // k = 0: the naive kernel's empty loop writes epilogue(0) with any strides.
    let kernel = if k == 0 { MatmulKernel::Naive } else { kernel };
    if kernel != MatmulKernel::Naive {
        for (what, l) in [("A", a.layout()), ("B", b.layout()), ("C", c.layout())] {
            if l.min_len() as u64 > u32::MAX as u64 {
                return Err(SimtError::TooLarge {
                    op,
                    detail: format!("{what} spans {} elements; the tiled kernels index in 32 bits (< 2^32); use MatmulKernel::Naive or split the product", l.min_len()),
                });
            }
        }
    }
    let grid = |bm: u32, bn: u32| tile_grid(op, m, n, bm, bn);
    fn go<K: Kernel<Args = (MatmulParams,)>>(
        gpu: &Gpu,
        grid: simt::Dim3,
        p: MatmulParams,
    ) -> Result<()> {
        // SAFETY: all three views checked against their buffers on this Gpu and against
        // each other; C does not overlap A or B (`&mut` view); the grid covers C with
        // the kernel's own block, as its Thread Mapping asks.
        unsafe { gpu.launch::<K>(LaunchConfig::for_kernel::<K>(grid), (p,)) }
    }
    match kernel {
        MatmulKernel::Naive => {
            go::<matmul_naive::matmul_relu_naive>(gpu, grid(NAIVE_TILE, NAIVE_TILE)?, p)
        }
        MatmulKernel::Tiled => go::<matmul_tiled::matmul_relu_tiled>(gpu, grid(MM_BM, MM_BN)?, p),
        MatmulKernel::TiledDoubleBuffered => {
            go::<matmul_tiled_db::matmul_relu_tiled_db>(gpu, grid(MM_BM, MM_BN)?, p)
        }
        MatmulKernel::WarpTiled => {
            go::<matmul_warptiled::matmul_relu_warptiled>(gpu, grid(MM_BM, MM_BN)?, p)
        }
    }
}

/// Host-slice convenience: contiguous `a: m x k`, `b: k x n`; returns `m x n`.
pub fn matmul_host(
    gpu: &Gpu,
    kernel: MatmulKernel,
    a: &[f32],
    b: &[f32],
    d: Dims,
    epilogue: Epilogue,
) -> Result<Vec<f32>> {
    let ab = gpu.upload(a)?;
    let bb = gpu.upload(b)?;
    let mut cb = gpu.alloc::<f32>(d.m * d.n)?;
    matmul(
        gpu,
        kernel,
        ab.matrix(d.m, d.k)?,
        bb.matrix(d.k, d.n)?,
        cb.matrix_mut(d.m, d.n)?,
        epilogue,
    )?;
    gpu.download(&cb)
}
