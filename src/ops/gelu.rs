//! GeLU: fused (one kernel), naive (PyTorch-eager composition, 7 kernels), exact (erf).
//! An empty input launches nothing.
use kernels::config::{ELEMENTWISE_VEC, GELU_CONFIGS};
use kernels::gelu as k;
use kernels::gelu_wide as kw;
use simt::{dim3, Buffer, Gpu, Kernel, LaunchConfig, MatrixMut, MatrixRef, Result, SimtError};

use super::{check_mut, check_ref, check_same_len};
use crate::ptx;

/// A launch of `K` with one thread per 16-byte vector of `n` floats.
fn vec_launch<K: Kernel>(n: u32) -> Result<LaunchConfig> {
    LaunchConfig::linear::<K>((n as usize).div_ceil(ELEMENTWISE_VEC as usize))
}

/// The fused GeLU kernels, for [`gelu_with`]: one block shape each,
/// `kernels::config::GELU_CONFIGS` (threads, 16-byte vectors a thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeluKernel {
    /// The library's choice by length ([`GeluKernel::auto_for`]): [`GeluKernel::Vec2`]
    /// from [`GELU_VEC2_MIN`] to [`GELU_VEC2_MAX`] elements, [`GeluKernel::Vec1`]
    /// elsewhere.
    Auto,
    /// `gelu_fused`: 256 threads, one vector each.
    Vec1,
    /// `gelu_fused_v2`: 128 threads, two vectors each (Triton's pointwise shape).
    Vec2,
    /// `gelu_fused_v4`: 128 threads, four vectors each.
    Vec4,
    /// `gelu_fused_cs`: as [`GeluKernel::Vec1`], the loads evict-first in L2.
    Vec1Cs,
}

impl GeluKernel {
    /// Every kernel, in the order of the enum.
    pub const ALL: [GeluKernel; 5] = [
        GeluKernel::Auto,
        GeluKernel::Vec1,
        GeluKernel::Vec2,
        GeluKernel::Vec4,
        GeluKernel::Vec1Cs,
    ];

    /// A stable text form: `auto`, or `threads x vectors` (`256x1`, `128x2`, `128x4`;
    /// `256x1-cs` with evict-first loads).
    pub fn label(self) -> &'static str {
        match self {
            GeluKernel::Auto => "auto",
            GeluKernel::Vec1 => "256x1",
            GeluKernel::Vec2 => "128x2",
            GeluKernel::Vec4 => "128x4",
            GeluKernel::Vec1Cs => "256x1-cs",
        }
    }

    /// Parses a [`label`](Self::label).
    pub fn from_label(s: &str) -> Option<GeluKernel> {
        GeluKernel::ALL.into_iter().find(|k| k.label() == s)
    }

    /// The kernel [`GeluKernel::Auto`] runs for `n` elements (any other kernel is
    /// itself).
    pub fn auto_for(n: usize) -> GeluKernel {
        if (GELU_VEC2_MIN..=GELU_VEC2_MAX).contains(&n) {
            GeluKernel::Vec2
        } else {
            GeluKernel::Vec1
        }
    }

    /// `(threads, 16-byte vectors a thread)` of this kernel (`Auto`: `gelu_fused`'s;
    /// resolve it with [`auto_for`](Self::auto_for) for a given length).
    pub fn config(self) -> (u32, u32) {
        GELU_CONFIGS[match self {
            GeluKernel::Auto | GeluKernel::Vec1 | GeluKernel::Vec1Cs => 0,
            GeluKernel::Vec2 => 1,
            GeluKernel::Vec4 => 2,
        }]
    }
}

/// The shortest tensor `Auto` runs with two vectors a thread (2 MiB). Measured in
/// the peers' process on an H100 (2026-12-07, docs/PERFORMANCE.md session 37, three
/// rounds): 128x2 against 256x1 at 2^19 .. 2^23, medians of per-round ratios 1.098,
/// 1.004, 1.029, 1.024, 1.026 (the 2^21 and 2^22 rounds all ahead); at 2^24 .. 2^27
/// level (0.996-0.999), below 2^19 within the event timer's levels (0.907-0.983).
pub const GELU_VEC2_MIN: usize = 1 << 19;
/// The longest tensor `Auto` runs with two vectors a thread (32 MiB); see
/// [`GELU_VEC2_MIN`].
pub const GELU_VEC2_MAX: usize = 1 << 23;

/// A launch of `K`, a block of `threads` taking `4·threads·vecs` elements of `n`.
fn tile_launch<K: Kernel>(n: u32, (threads, vecs): (u32, u32)) -> Result<LaunchConfig> {
    let tile = (ELEMENTWISE_VEC * threads * vecs) as usize;
    LaunchConfig::linear::<K>((n as usize).div_ceil(tile) * threads as usize)
}

/// `y = gelu(x)` (tanh form), one fused kernel: 8 bytes of traffic per element.
pub fn gelu(gpu: &Gpu, x: &Buffer<f32>, y: &mut Buffer<f32>) -> Result<()> {
    gelu_with(gpu, GeluKernel::Auto, x, y)
}

/// [`gelu`] with a chosen kernel (block shape). Every kernel computes the same
/// values.
pub fn gelu_with(
    gpu: &Gpu,
    kernel: GeluKernel,
    x: &Buffer<f32>,
    y: &mut Buffer<f32>,
) -> Result<()> {
    let n = check_same_len(gpu, "gelu", x, y)?;
    if n == 0 {
        return Ok(());
    }
    ptx::load(gpu)?;
    // SAFETY: x and y hold n floats on this Gpu (checked); mapping per the kernel's docs.
    unsafe { launch_fused(gpu, kernel, x.ptr(), y.ptr_mut(), n) }
}

/// Launches the fused GeLU `kernel` over `n` floats.
///
/// # Safety
/// `x` readable and `y` writable for `n` floats on `gpu`, aliasing exactly or not at all.
unsafe fn launch_fused(
    gpu: &Gpu,
    kernel: GeluKernel,
    x: *const f32,
    y: *mut f32,
    n: u32,
) -> Result<()> {
    let kernel = match kernel {
        GeluKernel::Auto => GeluKernel::auto_for(n as usize),
        k => k,
    };
    let c = kernel.config();
    // SAFETY (each launch): the caller's contract; the grid is the kernel's Thread Mapping.
    unsafe {
        match kernel {
            GeluKernel::Auto | GeluKernel::Vec1 => {
                gpu.launch::<k::gelu_fused>(vec_launch::<k::gelu_fused>(n)?, (x, y, n))
            }
            GeluKernel::Vec2 => {
                gpu.launch::<kw::gelu_fused_v2>(tile_launch::<kw::gelu_fused_v2>(n, c)?, (x, y, n))
            }
            GeluKernel::Vec4 => {
                gpu.launch::<kw::gelu_fused_v4>(tile_launch::<kw::gelu_fused_v4>(n, c)?, (x, y, n))
            }
            GeluKernel::Vec1Cs => {
                gpu.launch::<kw::gelu_fused_cs>(tile_launch::<kw::gelu_fused_cs>(n, c)?, (x, y, n))
            }
        }
    }
}

/// `y = gelu(x)` (tanh form) on matrix views: any shape, row strides and start
/// offsets (misaligned starts take the scalar path). Contiguous views run as
/// [`gelu`] does, one 1-D launch; strided ones a launch over rows.
pub fn gelu_matrix(gpu: &Gpu, x: MatrixRef<'_, f32>, mut y: MatrixMut<'_, f32>) -> Result<()> {
    let op = "gelu_matrix";
    let (rows, cols, ldx) = check_ref(gpu, op, "x", &x)?;
    let (_, _, ldy) = check_mut(gpu, op, "y", &y)?;
    if (x.rows(), x.cols()) != (y.rows(), y.cols()) {
        return Err(SimtError::Shape {
            op,
            detail: format!(
                "x is {}x{}, y is {}x{}",
                x.rows(),
                x.cols(),
                y.rows(),
                y.cols()
            ),
        });
    }
    if x.layout().is_empty() {
        return Ok(());
    }
    ptx::load(gpu)?;
    if x.layout().is_contiguous() && y.layout().is_contiguous() {
        let n = super::fits_u32(op, "rows*cols", x.rows() * x.cols())?;
        // SAFETY: both views hold n contiguous floats on this Gpu (checked); `&mut y`
        // excludes overlap with x.
        return unsafe { launch_fused(gpu, GeluKernel::Auto, x.ptr(), y.ptr_mut(), n) };
    }
    let chunk = ELEMENTWISE_VEC * kernels::config::ELEMENTWISE_THREADS;
    let grid = dim3(cols.div_ceil(chunk), rows.min(simt::MAX_GRID.y), 1);
    // SAFETY: both views checked against their buffers on this Gpu; `&mut y` excludes
    // overlap with x; the grid is the kernel's Thread Mapping.
    unsafe {
        gpu.launch::<k::gelu_fused_rows>(
            LaunchConfig::for_kernel::<k::gelu_fused_rows>(grid),
            (x.ptr(), ldx, y.ptr_mut(), ldy, rows, cols),
        )
    }
}

/// `y = 0.5·x·(1 + erf(x/√2))`, the exact GeLU, fused.
pub fn gelu_erf(gpu: &Gpu, x: &Buffer<f32>, y: &mut Buffer<f32>) -> Result<()> {
    let n = check_same_len(gpu, "gelu_erf", x, y)?;
    if n == 0 {
        return Ok(());
    }
    ptx::load(gpu)?;
    // SAFETY: as `gelu`.
    unsafe {
        gpu.launch::<k::gelu_erf_fused>(
            vec_launch::<k::gelu_erf_fused>(n)?,
            (x.ptr(), y.ptr_mut(), n),
        )
    }
}

/// `y = gelu(x)` as PyTorch eager computes the formula: 7 kernels (see
/// [`kernels::gelu::NAIVE_STAGES`]), each reading and writing the whole tensor,
/// with `tmp` (same length) as the intermediate.
pub fn gelu_naive(
    gpu: &Gpu,
    x: &Buffer<f32>,
    y: &mut Buffer<f32>,
    tmp: &mut Buffer<f32>,
) -> Result<()> {
    let n = check_same_len(gpu, "gelu_naive", x, y)?;
    gpu.check("gelu_naive", "tmp", tmp)?;
    if tmp.len() != x.len() {
        return Err(SimtError::Shape {
            op: "gelu_naive",
            detail: format!("tmp has {} elements, needs {n}", tmp.len()),
        });
    }
    if n == 0 {
        return Ok(());
    }
    ptx::load(gpu)?;
    let v = vec_launch::<k::ew_cube>(n)?;
    let s = LaunchConfig::linear::<k::ew_axpby>(n as usize)?;
    let (xp, t, yp) = (x.ptr(), tmp.ptr_mut(), y.ptr_mut());
    // SAFETY: x, tmp and y each hold n floats on this Gpu; elementwise kernels may run
    // in place (each thread reads then writes the same indices); mappings per the docs.
    unsafe {
        gpu.launch::<k::ew_cube>(v, (xp, t, n))?;
        gpu.launch::<k::ew_axpby>(s, (xp, t as *const f32, t, n, 1.0, k::GELU_CUBIC))?;
        gpu.launch::<k::ew_affine>(v, (t as *const f32, t, n, k::SQRT_2_OVER_PI, 0.0))?;
        gpu.launch::<k::ew_tanh>(v, (t as *const f32, t, n))?;
        gpu.launch::<k::ew_affine>(v, (t as *const f32, t, n, 1.0, 1.0))?;
        gpu.launch::<k::ew_mul>(s, (xp, t as *const f32, t, n))?;
        gpu.launch::<k::ew_affine>(v, (t as *const f32, yp, n, 0.5, 0.0))?;
    }
    Ok(())
}

/// Host-slice convenience for [`gelu`].
pub fn gelu_host(gpu: &Gpu, x: &[f32]) -> Result<Vec<f32>> {
    let xb = gpu.upload(x)?;
    let mut yb = gpu.alloc::<f32>(x.len())?;
    gelu(gpu, &xb, &mut yb)?;
    gpu.download(&yb)
}
