//! `C = epilogue(A·B)` on tensor cores: bf16, f16 or TF32 inputs, f32
//! accumulation, f32 output, or bf16/f16 output on Hopper (stages 5 and 6 of the
//! matmul progression with `mma.sync`, stages 7 and 8 with Hopper's `wgmma` + TMA:
//! [`TcKernel`]; [`TcKernel::best`] is the fastest on large products, and
//! [`TcKernel::Auto`] asks the autotuner per shape bucket).
//!
//! The precision is in the types: [`matmul_tc`] takes `MatrixRef<bf16>` or
//! `MatrixRef<f16>` (the `half` crate's types; [`to_bf16`] and [`to_f16`] convert
//! on the device with round-to-nearest-even, as PyTorch's `.bfloat16()`), and
//! [`matmul_tf32`] takes f32 matrices and rounds them to TF32 inside the kernel, as
//! `torch.backends.cuda.matmul.allow_tf32 = True` does. A device below sm_80 is
//! [`SimtError::Unsupported`].
//!
//! C's type is the output's ([`TcOutput`]): f32, or bf16/f16 (the Hopper stages),
//! each f32 sum rounded to nearest even after the epilogue, as `torch.relu(A @ B)`
//! on bf16 tensors returns. A 16-bit C halves the bytes the epilogue writes, which
//! is most of what a product with one tile per SM spends outside its K loop.
//!
//! Why BF16 loses digits: bf16 keeps 8 bits of mantissa (f32 keeps 24), so each
//! input is off by up to 2^-9 relative (0.2%) before any arithmetic; the products
//! and the f32 sums add little on top. Against a float64 product of the *original*
//! f32 inputs a 4096-deep bf16 matmul lands near 1e-3 relative; against the product
//! of the rounded inputs, near 1e-6 (the tests check both).
//!
//! Zero-sized: as [`matmul`](super::matmul::matmul): `m = 0` or `n = 0` launches
//! nothing, `k = 0` writes `epilogue(0) = 0`.
use cust::memory::DeviceCopy;
pub use half::{bf16, f16};
use kernels::config::{
    tc6kb_blocks, TC6KB_ITEM, TC6KB_MAX_TILE_ROWS, TC6K_PARTIAL_FLOATS, TC6T_B_BOX_COLS,
    TC6T_TF32_BN, TC6_BK, TC6_BK_TF32, TC_BM, TC_BN,
};
use kernels::config::{WG_BK, WG_BM, WG_BN, WG_B_BOX_COLS, WG_C_BOX_COLS, WG_C_BOX_ROWS};
use kernels::params::{
    Epilogue, MatMut, MatRef, MatRef16, MatmulParams, MatmulParams16, MatmulParamsStreamK,
    MatmulParamsStreamKTb, MatmulParamsTma, OutType, Tf32CopyParams,
};
use kernels::{
    convert as cv, matmul_mma as s5, matmul_mma_pipelined as s6, matmul_mma_streamk as s6k,
    matmul_mma_streamk_tb as s6kb, matmul_mma_tma as s6t, matmul_wgmma as s7,
    matmul_wgmma_cluster as s8,
};
use simt::{
    dim3, Buffer, Gpu, Kernel, LaunchConfig, MatrixMut, MatrixRef, Result, SimtError, TensorMap,
    TmaElement, TmaSwizzle,
};

use super::{check_product, fits_u32, tile_grid, Product};
use crate::ptx;

/// Which tensor-core stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcKernel {
    /// Stage 5: `mma.sync` from plain shared tiles, any strides and alignment.
    Mma,
    /// Stage 6: 3-stage `cp.async` pipeline, swizzled tiles, `ldmatrix`. Views whose
    /// rows are not 16-byte aligned run stage 5 instead.
    MmaPipelined,
    /// Stage 6t (Hopper, compute capability 9.0 only): stage 6's `mma.sync` warps fed
    /// by TMA copies through an mbarrier ring (one thread issues them), f32 C. TF32
    /// reads its operands as stage 7 does, and where its 128x256 tiles are not a
    /// whole number of waves (one block per SM) runs as stage 6k: persistent blocks
    /// with a stream-K tail ([`kernels::matmul_mma_streamk`]; `SIMT_STREAMK=0` keeps
    /// the one-tile-per-block grid, for comparisons). TF32 products of 32 to 48
    /// tile-rows of at least two waves run as stage 6kb: stage 6k on all but four
    /// SMs, which write `Bᵀ` during the product ([`kernels::matmul_mma_streamk_tb`];
    /// `SIMT_STREAMK_TB=0` keeps stage 6k). Views whose rows are not 16-byte aligned
    /// run stage 5; another device is [`SimtError::Unsupported`].
    MmaTma,
    /// Stage 7 (Hopper, compute capability 9.0 only): `wgmma` from shared memory,
    /// TMA copies, an mbarrier ring, a producer and two consumer warpgroups. Views
    /// whose rows are not 16-byte aligned run stage 5 (with a 16-bit C: into a
    /// temporary f32 C, allocated and freed by the call, which then waits for the
    /// GPU); another device is [`SimtError::Unsupported`] (use [`TcKernel::best`]).
    Wgmma,
    /// Stage 8 (Hopper, as stage 7): stage 7 with an epilogue that stores C through
    /// shared memory and TMA, `wgmma` groups kept in flight across K steps, and
    /// clusters of two blocks that share the tile of B through TMA multicast.
    WgmmaCluster,
    /// The autotuner's choice for the product's shape bucket, precision and C type
    /// ([`crate::tune`]; [`tc_candidates`], [`tc_heuristic`]): the cached winner, or
    /// the heuristic where the bucket was never tuned (always on the emulator).
    Auto,
}

/// How a TF32 product rounds its f32 inputs to TF32 (10 mantissa bits). Both round
/// to nearest; on numbers they differ only on exact ties (an input whose 13 dropped
/// bits are exactly `0x1000`: one in 8192 of random inputs). NaN stays NaN either way
/// (its payload bits differ).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tf32Rounding {
    /// Ties to even, as cuBLAS's TF32: what a TMA load through a TF32 tensor map does
    /// ([`TensorMap::tiled_tf32`]), so stages 6t, 7 and 8.
    TiesToEven,
    /// Ties away from zero: `cvt.rna.tf32.f32`, the one rounding sm_80 has an
    /// instruction for, so stage 6, which rounds its fragments in registers. (Ties
    /// to even there in integer arithmetic made stage 6 1.6x slower on the H200,
    /// 2026-11-25: docs/PERFORMANCE.md, session 17.)
    TiesAway,
}

impl Tf32Rounding {
    /// `x` rounded to TF32 this way, as an f32 (the host's reference).
    pub fn round(self, x: f32) -> f32 {
        f32::from_bits(match self {
            Tf32Rounding::TiesToEven => kernels::simt_std::convert::tf32_rne_bits(x),
            Tf32Rounding::TiesAway => kernels::simt_std::convert::tf32_rna_bits(x),
        })
    }
}

impl TcKernel {
    /// The fastest stage this device runs: [`TcKernel::WgmmaCluster`] where the
    /// Hopper module loads (an H100 or H200, and the emulator), else
    /// [`TcKernel::MmaPipelined`].
    pub fn best(gpu: &Gpu) -> TcKernel {
        if gpu.can_load(&ptx::sm90a::MODULE) {
            TcKernel::WgmmaCluster
        } else {
            TcKernel::MmaPipelined
        }
    }

    /// Whether this stage needs a Hopper GPU (stages 6t, 7 and 8: the sm_90a module).
    pub fn is_hopper(self) -> bool {
        matches!(
            self,
            TcKernel::MmaTma | TcKernel::Wgmma | TcKernel::WgmmaCluster
        )
    }

    /// How this stage rounds TF32 inputs ([`matmul_tf32_with`]); `None` for
    /// [`TcKernel::Mma`] (no TF32 kernel) and [`TcKernel::Auto`] (the stage the
    /// tuner picks decides).
    pub fn tf32_rounding(self) -> Option<Tf32Rounding> {
        match self {
            TcKernel::MmaPipelined => Some(Tf32Rounding::TiesAway),
            TcKernel::MmaTma | TcKernel::Wgmma | TcKernel::WgmmaCluster => {
                Some(Tf32Rounding::TiesToEven)
            }
            TcKernel::Mma | TcKernel::Auto => None,
        }
    }

    /// Whether this stage writes a 16-bit C itself (the `wgmma` stages 7 and 8); the
    /// others write f32 only.
    pub fn writes_16bit(self) -> bool {
        matches!(self, TcKernel::Wgmma | TcKernel::WgmmaCluster)
    }

    /// A stable name (the tuner's cache stores it).
    pub fn label(self) -> &'static str {
        match self {
            TcKernel::Mma => "mma",
            TcKernel::MmaPipelined => "mma_pipelined",
            TcKernel::MmaTma => "mma_tma",
            TcKernel::Wgmma => "wgmma",
            TcKernel::WgmmaCluster => "wgmma_cluster",
            TcKernel::Auto => "auto",
        }
    }

    /// Parses a [`label`](Self::label).
    pub fn from_label(s: &str) -> Option<TcKernel> {
        Self::ALL
            .into_iter()
            .chain([TcKernel::Auto])
            .find(|k| k.label() == s)
    }

    /// Every stage, in the order of the progression (not [`Auto`](Self::Auto), which
    /// picks one of them).
    pub const ALL: [TcKernel; 5] = [
        TcKernel::Mma,
        TcKernel::MmaPipelined,
        TcKernel::MmaTma,
        TcKernel::Wgmma,
        TcKernel::WgmmaCluster,
    ];
}

/// The element types of the tensor-core matmul's C: `f32` on every stage, [`bf16`]
/// and [`f16`] on the Hopper stages (7 and 8).
pub trait TcOutput: TmaElement + sealed::Sealed {
    /// The kernels' name for it.
    const TYPE: OutType;
}

/// The kernels decide C's and the inputs' element sizes from these traits' constants:
/// only the types below may implement them.
mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for super::bf16 {}
    impl Sealed for super::f16 {}
}

impl TcOutput for f32 {
    const TYPE: OutType = OutType::F32;
}

impl TcOutput for bf16 {
    const TYPE: OutType = OutType::Bf16;
}

impl TcOutput for f16 {
    const TYPE: OutType = OutType::F16;
}

/// The 16-bit input types of the tensor-core matmul.
pub trait TcInput: TmaElement + Default + sealed::Sealed {
    /// "bf16" or "f16".
    const NAME: &'static str;
    #[doc(hidden)]
    fn launch(gpu: &Gpu, stage: TcKernel, grid: simt::Dim3, p: MatmulParams16) -> Result<()>;
    #[doc(hidden)]
    fn launch_tma(gpu: &Gpu, stage: TcKernel, p: MatmulParamsTma) -> Result<()>;
}

fn go<K: Kernel<Args = (P,)>, P: simt::KernelParam>(
    gpu: &Gpu,
    grid: simt::Dim3,
    p: P,
) -> Result<()> {
    // SAFETY: the views were checked against their buffers on this Gpu and against each
    // other, C does not overlap A or B (a `&mut` view), and the grid covers C with the
    // kernel's own block, as its Thread Mapping asks; stage 6 gets aligned rows only.
    unsafe { gpu.launch::<K>(LaunchConfig::for_kernel::<K>(grid), (p,)) }
}

impl TcInput for bf16 {
    const NAME: &'static str = "bf16";
    fn launch(gpu: &Gpu, stage: TcKernel, grid: simt::Dim3, p: MatmulParams16) -> Result<()> {
        match stage {
            TcKernel::Mma => go::<s5::matmul_mma_bf16, _>(gpu, grid, p),
            TcKernel::MmaPipelined => go::<s6::matmul_mma_pipelined_bf16, _>(gpu, grid, p),
            TcKernel::MmaTma | TcKernel::Wgmma | TcKernel::WgmmaCluster | TcKernel::Auto => {
                unreachable!("Hopper stages launch through launch_tma; Auto is resolved first")
            }
        }
    }
    fn launch_tma(gpu: &Gpu, stage: TcKernel, p: MatmulParamsTma) -> Result<()> {
        match stage {
            TcKernel::MmaTma => go_tiles::<s6t::matmul_mma_tma_bf16>(gpu, p),
            TcKernel::WgmmaCluster => go_hopper::<s8::matmul_wgmma_cluster_bf16>(gpu, p),
            _ => go_hopper::<s7::matmul_wgmma_bf16>(gpu, p),
        }
    }
}

impl TcInput for f16 {
    const NAME: &'static str = "f16";
    fn launch(gpu: &Gpu, stage: TcKernel, grid: simt::Dim3, p: MatmulParams16) -> Result<()> {
        match stage {
            TcKernel::Mma => go::<s5::matmul_mma_f16, _>(gpu, grid, p),
            TcKernel::MmaPipelined => go::<s6::matmul_mma_pipelined_f16, _>(gpu, grid, p),
            TcKernel::MmaTma | TcKernel::Wgmma | TcKernel::WgmmaCluster | TcKernel::Auto => {
                unreachable!("Hopper stages launch through launch_tma; Auto is resolved first")
            }
        }
    }
    fn launch_tma(gpu: &Gpu, stage: TcKernel, p: MatmulParamsTma) -> Result<()> {
        match stage {
            TcKernel::MmaTma => go_tiles::<s6t::matmul_mma_tma_f16>(gpu, p),
            TcKernel::WgmmaCluster => go_hopper::<s8::matmul_wgmma_cluster_f16>(gpu, p),
            _ => go_hopper::<s7::matmul_wgmma_f16>(gpu, p),
        }
    }
}

/// The Hopper stages need the sm_90a module.
fn check_hopper(gpu: &Gpu, op: &'static str) -> Result<()> {
    if gpu.can_load(&ptx::sm90a::MODULE) {
        return Ok(());
    }
    Err(SimtError::Unsupported(format!(
        "{op}: stages 6t, 7 and 8 (TMA, wgmma) need compute capability 9.0 (an H100 or H200), this device is {}; use TcKernel::best(gpu)",
        gpu.props().sm()
    )))
}

/// Launches a Hopper stage, persistent: one block per SM (stage 7) or as many
/// clusters as the device holds at once (stage 8), never more than the tiles
/// (pairs of tiles) of C.
fn go_hopper<K: Kernel<Args = (MatmulParamsTma,)>>(gpu: &Gpu, p: MatmulParamsTma) -> Result<()> {
    let c = K::BOUNDS.cluster.max(1) as u64;
    let tiles_m = (p.m as u64).div_ceil(WG_BM as u64).div_ceil(c);
    let work = tiles_m * (p.n as u64).div_ceil(WG_BN as u64);
    let slots = if c > 1 {
        gpu.max_resident_clusters::<K>(&(p,))? as u64
    } else {
        gpu.props().sms as u64
    };
    let grid = work.min(slots.max(1)) * c;
    go::<K, _>(gpu, dim3(grid as u32, 1, 1), p)
}

/// Launches stage 6t (16-bit inputs): one block per 128x128 tile of C.
fn go_tiles<K: Kernel<Args = (MatmulParamsTma,)>>(gpu: &Gpu, p: MatmulParamsTma) -> Result<()> {
    go::<K, _>(gpu, grid("matmul_tc", p.m, p.n)?, p)
}

/// Tensor cores need sm_80 (Ampere) or newer.
fn check_device(gpu: &Gpu, op: &'static str) -> Result<()> {
    let cc = gpu.props().compute_capability;
    if cc < (8, 0) {
        return Err(SimtError::Unsupported(format!(
            "{op}: mma.sync with bf16/f16/tf32 needs compute capability 8.0 or newer, this device is {}.{}; use ops::matmul (FP32 SIMT)",
            cc.0, cc.1
        )));
    }
    Ok(())
}

/// Shapes, devices and 32-bit byte offsets of `A·B -> C`: `(m, n, k)`.
fn check<T: DeviceCopy, O: DeviceCopy>(
    gpu: &Gpu,
    op: &'static str,
    a: &MatrixRef<'_, T>,
    b: &MatrixRef<'_, T>,
    c: &MatrixMut<'_, O>,
) -> Result<(u32, u32, u32)> {
    let Product { m, n, k, .. } = check_product(gpu, op, a, b, c)?;
    let eb = std::mem::size_of::<T>();
    for (what, l) in [("A", a.layout()), ("B", b.layout())] {
        if (l.min_len() as u64) * eb as u64 > u32::MAX as u64 {
            return Err(SimtError::TooLarge { op, detail: format!("{what} spans {} bytes; the tensor-core kernels index bytes in 32 bits; split the product", l.min_len() * eb) });
        }
    }
    if c.layout().min_len() as u64 > u32::MAX as u64 {
        return Err(SimtError::TooLarge {
            op,
            detail: "C spans 2^32 elements or more; split the product".into(),
        });
    }
    Ok((m, n, k))
}

fn grid(op: &'static str, m: u32, n: u32) -> Result<simt::Dim3> {
    tile_grid(op, m, n, TC_BM, TC_BN)
}

/// Whether a view's rows all start 16-byte aligned (what stage 6's copies need).
fn rows_aligned<T: DeviceCopy>(v: &MatrixRef<'_, T>) -> bool {
    let eb = std::mem::size_of::<T>();
    (v.ptr() as usize).is_multiple_of(16) && (v.ld() * eb).is_multiple_of(16)
}

/// `C = epilogue(A·B)` on tensor cores with 16-bit inputs (`T` = [`bf16`] or
/// [`f16`]), f32 accumulation, C in `O` = f32, or [`bf16`] / [`f16`] on the Hopper
/// stages (another stage with a 16-bit C is [`SimtError::Unsupported`]). Any shape
/// and strides: inputs whose rows are not 16-byte aligned run stage 5, with a 16-bit
/// C through a temporary f32 product rounded into it (allocated and freed by the
/// call, which then waits for the GPU).
pub fn matmul_tc<T: TcInput, O: TcOutput>(
    gpu: &Gpu,
    stage: TcKernel,
    a: MatrixRef<'_, T>,
    b: MatrixRef<'_, T>,
    mut c: MatrixMut<'_, O>,
    epilogue: Epilogue,
) -> Result<()> {
    let op = "matmul_tc";
    let (m, n, k) = check(gpu, op, &a, &b, &c)?;
    check_device(gpu, op)?;
    if stage == TcKernel::Auto {
        let s = TcShape {
            m,
            n,
            k,
            aligned: rows_aligned(&a) && rows_aligned(&b),
            input: T::NAME,
            out: O::TYPE,
        };
        let chosen = choose_stage(gpu, s, |kern| {
            matmul_tc(gpu, kern, a, b, c.reborrow(), epilogue)
        })?;
        return matmul_tc(gpu, chosen, a, b, c, epilogue);
    }
    if O::TYPE != OutType::F32 && !stage.writes_16bit() {
        return Err(SimtError::Unsupported(format!(
            "{op}: a {} C needs a wgmma stage (TcKernel::Wgmma or TcKernel::WgmmaCluster); {stage:?} writes f32: pass an f32 C and convert it",
            std::any::type_name::<O>()
        )));
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    ptx::load(gpu)?;
    if k == 0 {
        // The empty sum: epilogue(0) = 0 everywhere.
        return fill_zero(gpu, &mut c);
    }
    let aligned = rows_aligned(&a) && rows_aligned(&b);
    if O::TYPE != OutType::F32 && !aligned {
        // Stage 5 runs unaligned inputs and writes f32 only: into a temporary f32 C
        // (allocated per call: this path is for odd views, not for speed), then
        // rounded into the caller's.
        let mut c32 = gpu.alloc::<f32>(m as usize * n as usize)?;
        let dense = c32.matrix_mut(m as usize, n as usize)?;
        matmul_tc(gpu, TcKernel::Mma, a, b, dense, epilogue)?;
        return round_into(gpu, &c32, &mut c);
    }
    if stage.is_hopper() && aligned {
        check_hopper(gpu, op)?;
        // Boxes: A 128 rows x 64 columns (one 128-byte row of K), B 64 k-rows x 64
        // columns: the same for stage 6t's smaller tiles (2 B boxes) and stage 7's.
        const _: () =
            assert!(TC_BM == WG_BM && TC6_BK == WG_BK && TC6T_B_BOX_COLS == WG_B_BOX_COLS);
        let am = TensorMap::tiled(gpu, a, WG_BM, WG_BK, TmaSwizzle::B128)?;
        let bm = TensorMap::tiled(gpu, b, WG_BK, WG_B_BOX_COLS, TmaSwizzle::B128)?;
        let cm = c_map(gpu, stage, &c)?;
        let p = wgmma_params(&am, &bm, cm.as_ref(), &mut c, (m, n, k), epilogue);
        return T::launch_tma(gpu, stage, p);
    }
    let ldc = c.ld() as u32;
    // The mma.sync stages below write f32 only (checked above).
    let c_ptr = c.ptr_mut() as *mut f32;
    let p = MatmulParams16 {
        a: MatRef16 {
            ptr: a.ptr() as *const u16,
            rows: m,
            cols: k,
            ld: a.ld() as u32,
        },
        b: MatRef16 {
            ptr: b.ptr() as *const u16,
            rows: k,
            cols: n,
            ld: b.ld() as u32,
        },
        c: MatMut {
            ptr: c_ptr,
            rows: m,
            cols: n,
            ld: ldc,
        },
        epilogue,
    };
    let stage = if stage != TcKernel::Mma && !aligned {
        TcKernel::Mma
    } else {
        stage
    };
    T::launch(gpu, stage, grid(op, m, n)?, p)
}

/// `C = epilogue(A·B)` in TF32 on tensor cores: f32 inputs rounded to TF32 in the
/// kernel (`cvt.rna`: to nearest, ties away; [`Tf32Rounding`]), f32 accumulation and
/// output, stage 6. Rows of A and B must start 16-byte aligned (row strides a
/// multiple of 4 floats); others are a [`SimtError::Shape`] saying so.
pub fn matmul_tf32(
    gpu: &Gpu,
    a: MatrixRef<'_, f32>,
    b: MatrixRef<'_, f32>,
    mut c: MatrixMut<'_, f32>,
    epilogue: Epilogue,
) -> Result<()> {
    let op = "matmul_tf32";
    let (m, n, k) = check(gpu, op, &a, &b, &c)?;
    check_device(gpu, op)?;
    if m == 0 || n == 0 || k == 0 {
        return super::matmul::matmul(gpu, super::matmul::MatmulKernel::Naive, a, b, c, epilogue);
    }
    if !(rows_aligned(&a) && rows_aligned(&b)) {
        return Err(SimtError::Shape {
            op,
            detail: format!(
                "the TF32 kernel copies 16-byte rows: A's and B's row strides ({} and {}) must be multiples of 4 floats and the buffers' starts 16-byte aligned; copy into a padded buffer, or use ops::matmul (FP32)",
                a.ld(),
                b.ld()
            ),
        });
    }
    ptx::load(gpu)?;
    let p = MatmulParams {
        a: MatRef {
            ptr: a.ptr(),
            rows: m,
            cols: k,
            ld: a.ld() as u32,
        },
        b: MatRef {
            ptr: b.ptr(),
            rows: k,
            cols: n,
            ld: b.ld() as u32,
        },
        c: MatMut {
            ptr: c.ptr_mut(),
            rows: m,
            cols: n,
            ld: c.ld() as u32,
        },
        epilogue,
    };
    go::<s6::matmul_mma_pipelined_tf32, _>(gpu, grid(op, m, n)?, p)
}

/// `C = epilogue(A·B)` in TF32 with the chosen stage: [`TcKernel::MmaPipelined`] is
/// [`matmul_tf32`]; [`TcKernel::Wgmma`] (compute capability 9.0) first writes `Bᵀ`
/// (and `A`, where its rows do not start 16-byte aligned) rounded to TF32 into the
/// `Gpu`'s scratch buffers ([`kernels::tf32_prep`]: `wgmma` reads tf32 K-major
/// only), then multiplies with stage 7; an `A` read in place is rounded by its
/// tensor map's loads ([`TensorMap::tiled_tf32`]); it takes any strides.
/// [`TcKernel::WgmmaCluster`] and [`TcKernel::MmaTma`] do the same (stage 6t then
/// reads both operands with `ldmatrix`). These round to nearest with ties to even,
/// as cuBLAS; stage 6 rounds ties away ([`TcKernel::tf32_rounding`]).
/// [`TcKernel::Mma`] has no TF32 kernel: [`SimtError::Unsupported`].
pub fn matmul_tf32_with(
    gpu: &Gpu,
    stage: TcKernel,
    a: MatrixRef<'_, f32>,
    b: MatrixRef<'_, f32>,
    mut c: MatrixMut<'_, f32>,
    epilogue: Epilogue,
) -> Result<()> {
    let op = "matmul_tf32_with";
    if stage == TcKernel::Auto {
        let (m, n, k) = check(gpu, op, &a, &b, &c)?;
        let s = TcShape {
            m,
            n,
            k,
            aligned: rows_aligned(&a) && rows_aligned(&b),
            input: "tf32",
            out: OutType::F32,
        };
        let chosen = choose_stage(gpu, s, |kern| {
            matmul_tf32_with(gpu, kern, a, b, c.reborrow(), epilogue)
        })?;
        return matmul_tf32_with(gpu, chosen, a, b, c, epilogue);
    }
    match stage {
        TcKernel::Auto => unreachable!("resolved above"),
        TcKernel::MmaPipelined => return matmul_tf32(gpu, a, b, c, epilogue),
        TcKernel::Mma => {
            return Err(SimtError::Unsupported(format!(
                "{op}: stage 5 has no TF32 kernel; use TcKernel::MmaPipelined, TcKernel::Wgmma or TcKernel::WgmmaCluster"
            )))
        }
        TcKernel::MmaTma | TcKernel::Wgmma | TcKernel::WgmmaCluster => {}
    }
    let (m, n, k) = check(gpu, op, &a, &b, &c)?;
    check_device(gpu, op)?;
    if m == 0 || n == 0 || k == 0 {
        return super::matmul::matmul(gpu, super::matmul::MatmulKernel::Naive, a, b, c, epilogue);
    }
    ptx::load(gpu)?;
    check_hopper(gpu, op)?;
    // A is K-major as it is: the kernels read it in place where its rows start
    // 16-byte aligned (TMA's rule), through a TF32 map whose loads round it; else
    // from a copy. `Bᵀ` is always a copy (the kernels read K-major operands only).
    // The copies round as they go (to nearest even, bit-exact against the TMA's
    // rounding) and are read through plain f32 maps: loading through a TF32 map
    // costs the product about 1% (H200, docs/PERFORMANCE.md session 17). Rows of the
    // copies are padded to 16 bytes; the maps stop at k, so the padding is never read
    // (boxes past k arrive as zeros).
    let kp = (k as usize).next_multiple_of(4);
    let a_in_place = rows_aligned(&a);
    let plan = if stage == TcKernel::MmaTma {
        plan_6k(gpu.props().sms, m, n, k, rows_aligned(&b))
    } else {
        Plan6k::Tiles
    };
    for (what, rows, copied) in [("A", m as usize, !a_in_place), ("B", n as usize, true)] {
        if copied && (rows * kp * 4) as u64 > u32::MAX as u64 {
            return Err(SimtError::TooLarge {
                op,
                detail: format!("the TF32 copy of {what} spans {} bytes; the kernels index bytes in 32 bits; split the product", rows * kp * 4),
            });
        }
    }
    let bt = gpu.scratch_f32(super::SCRATCH_TF32_B, n as usize * kp)?;
    let ar = if a_in_place {
        None
    } else {
        Some(gpu.scratch_f32(super::SCRATCH_TF32_A, m as usize * kp)?)
    };
    type Prep = kernels::tf32_prep::tf32_operand_copy;
    let region = kernels::tf32_prep::REGION;
    // The copies in one launch (grid.z picks the copy): a second one no longer waits
    // for the first one's last wave and its own launch.
    let job = |src: &MatrixRef<'_, f32>, dst: &Buffer<f32>, transpose: u32| Tf32CopyParams {
        src: MatRef {
            ptr: src.ptr(),
            rows: src.rows() as u32,
            cols: src.cols() as u32,
            ld: src.ld() as u32,
        },
        dst: dst.ptr() as *mut f32,
        ld_dst: kp as u32,
        transpose,
    };
    // Stage 6kb's transposing blocks write Bᵀ's strips from `first_strip` on: the
    // copy makes only those before.
    let pb = match plan {
        Plan6k::Transposed { first_strip, .. } => {
            let cols = (first_strip * TC6T_TF32_BN).min(n);
            let mut pb = job(&b, &bt, 1);
            pb.src.cols = cols;
            pb
        }
        _ => job(&b, &bt, 1),
    };
    let (p0, p1, copies) = match (&ar, pb.src.cols) {
        (Some(ar), 0) => (job(&a, ar, 0), job(&a, ar, 0), 1),
        (Some(ar), _) => (pb, job(&a, ar, 0), 2),
        (None, 0) => (pb, pb, 0),
        (None, _) => (pb, pb, 1),
    };
    let grid = dim3(
        p0.src.cols.max(p1.src.cols).div_ceil(region),
        p0.src.rows.max(p1.src.rows).div_ceil(region),
        copies,
    );
    if copies > 0 {
        // SAFETY: both sources are checked views of this Gpu; each dst is this Gpu's
        // scratch of at least rows x kp (A) or cols x kp (Bᵀ) floats, kp >= k,
        // written by this launch only (the queue orders it before the matmul that
        // reads it and after any earlier user of the slot); the grid covers the
        // copies it runs (grid.z) with the kernel's block (blocks past one's edges
        // exit).
        unsafe { gpu.launch::<Prep>(LaunchConfig::for_kernel::<Prep>(grid), (p0, p1))? };
    }
    // Boxes of one 128-byte row of K (32 f32) for every stage; rows: A 128, Bᵀ a
    // stage's columns of C per copy.
    const _: () = assert!(TC_BM == WG_BM && TC6_BK_TF32 == WG_BK / 2);
    let am = match &ar {
        Some(ar) => TensorMap::tiled(
            gpu,
            ar.matrix_strided(simt::Layout::strided(m as usize, k as usize, kp))?,
            WG_BM,
            WG_BK / 2,
            TmaSwizzle::B128,
        )?,
        None => TensorMap::tiled_tf32(gpu, a, WG_BM, WG_BK / 2, TmaSwizzle::B128)?,
    };
    let bm = TensorMap::tiled(
        gpu,
        bt.matrix_strided(simt::Layout::strided(n as usize, k as usize, kp))?,
        match stage {
            TcKernel::WgmmaCluster => s8::TF32_B_BOX_ROWS,
            TcKernel::MmaTma => TC6T_TF32_BN,
            _ => WG_BN,
        },
        WG_BK / 2,
        TmaSwizzle::B128,
    )?;
    let cm = c_map(gpu, stage, &c)?;
    let p = wgmma_params(&am, &bm, cm.as_ref(), &mut c, (m, n, k), epilogue);
    match stage {
        TcKernel::MmaTma => {
            let grid = tile_grid("matmul_tf32", p.m, p.n, TC_BM, TC6T_TF32_BN)?;
            let sms = gpu.props().sms;
            let (blocks, first_strip, mul) = match plan {
                Plan6k::Tiles => return go::<s6t::matmul_mma_tma_tf32, _>(gpu, grid, p),
                Plan6k::StreamK => (0, 0, sms),
                Plan6k::Transposed {
                    blocks,
                    first_strip,
                } => (blocks, first_strip, sms - blocks),
            };
            let (dp_tiles, sk_tiles) = s6k::streamk_split(grid.x * grid.y, mul);
            let partials = gpu.scratch_f32(
                super::SCRATCH_STREAMK,
                sms as usize * TC6K_PARTIAL_FLOATS as usize,
            )?;
            let strips = n.div_ceil(TC6T_TF32_BN);
            let (flags, epoch) = gpu.flags(sms as usize + strips as usize)?;
            let sp = MatmulParamsStreamK {
                mm: p,
                dp_tiles,
                sk_tiles,
                partials: partials.ptr() as *mut f32,
                flags: flags.ptr() as *mut u32,
                epoch,
            };
            if blocks == 0 {
                type K = s6k::matmul_mma_streamk_tf32;
                // SAFETY: the maps and C as for stage 6t (above); dp_tiles + sk_tiles
                // are C's tiles, dp_tiles whole waves of `sms` and sk_tiles zero or
                // more than `sms` (streamk_split), their K steps fewer than 2^32
                // (plan_6k); the workspace holds `sms` slots (a device allocation,
                // 16-byte aligned) and at least `sms` flags none of which holds
                // `epoch` (Gpu::flags), both used by launches on this Gpu's queue
                // only, in order; one block per SM is resident (checked again by the
                // cooperative launch).
                let r = unsafe {
                    gpu.launch::<K>(LaunchConfig::for_kernel::<K>(dim3(sms, 1, 1)), (sp,))
                };
                return match r {
                    // Refused before it ran (a shared MPS device takes no cooperative
                    // launch): stage 6t computes the product from the same maps.
                    Err(SimtError::CooperativeRefused { kernel, .. }) if kernel == K::NAME => {
                        go::<s6t::matmul_mma_tma_tf32, _>(gpu, grid, p)
                    }
                    r => r,
                };
            }
            let b_src = TensorMap::tiled_tf32(gpu, b, TC6KB_ITEM, TC6T_TF32_BN, TmaSwizzle::None)?;
            let counts = gpu.zero_counts(strips as usize)?;
            let bt_map = TensorMap::tiled(
                gpu,
                bt.matrix_strided(simt::Layout::strided(n as usize, k as usize, kp))?,
                TC6KB_ITEM,
                TC6KB_ITEM,
                TmaSwizzle::B128,
            )?;
            let q = MatmulParamsStreamKTb {
                sk: sp,
                b_src: b_src.ptr(),
                bt_map: bt_map.ptr(),
                counts: counts.ptr() as *mut u32,
                blocks,
                first_strip,
            };
            type K = s6kb::matmul_mma_streamk_tb_tf32;
            // SAFETY: as stage 6k above, on the `sms - blocks` multiplying blocks
            // (1 <= blocks <= sms / 8 and first_strip <= strips: plan_6k), with `sms`
            // flags then one per strip; b_src maps B (a checked view, rows 16-byte
            // aligned: plan_6k) in boxes of 32 rows x 256 columns, unswizzled; bt_map
            // maps the Bᵀ of the map above (this Gpu's scratch of n x kp floats, kp >=
            // k a multiple of 4: rows of whole
            // 16-byte chunks) in boxes of 32 x 32, 128-byte swizzled, its strips
            // before first_strip written by the copy above (queue order), read by
            // nothing else during the launch; one count per strip, zero
            // (Gpu::zero_counts, left zero by the kernel).
            let r =
                unsafe { gpu.launch::<K>(LaunchConfig::for_kernel::<K>(dim3(sms, 1, 1)), (q,)) };
            if r.is_err() {
                // It may have stopped with some counts not back at zero.
                gpu.discard_counts();
            }
            match r {
                // Refused before it ran (a shared MPS device takes no cooperative
                // launch): the copy makes the strips its transposing blocks would
                // have written, and stage 6t computes the product.
                Err(SimtError::CooperativeRefused { kernel, .. }) if kernel == K::NAME => {
                    let col0 = (first_strip * TC6T_TF32_BN).min(n);
                    if col0 < n {
                        let mut rest = job(&b, &bt, 1);
                        rest.src.ptr = rest.src.ptr.wrapping_add(col0 as usize);
                        rest.src.cols = n - col0;
                        rest.dst = rest.dst.wrapping_add(col0 as usize * kp);
                        let copy_grid = dim3(
                            rest.src.cols.div_ceil(region),
                            rest.src.rows.div_ceil(region),
                            1,
                        );
                        // SAFETY: as the copy above: columns col0.. of the checked view
                        // B (col0 < n) into rows col0.. of Bᵀ's scratch (n x kp floats),
                        // which nothing else reads or writes meanwhile; the grid covers
                        // that block of B with the kernel's block.
                        unsafe {
                            gpu.launch::<Prep>(
                                LaunchConfig::for_kernel::<Prep>(copy_grid),
                                (rest, rest),
                            )?
                        };
                    }
                    go::<s6t::matmul_mma_tma_tf32, _>(gpu, grid, p)
                }
                r => r,
            }
        }
        TcKernel::WgmmaCluster => go_hopper::<s8::matmul_wgmma_cluster_tf32>(gpu, p),
        _ => go_hopper::<s7::matmul_wgmma_tf32>(gpu, p),
    }
}

/// How [`TcKernel::MmaTma`] runs a TF32 product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan6k {
    /// Stage 6t: one block per tile.
    Tiles,
    /// Stage 6k: one persistent block per SM, a stream-K tail.
    StreamK,
    /// Stage 6kb: stage 6k on all but `blocks` SMs, which write `Bᵀ`'s strips from
    /// `first_strip` on during the product.
    Transposed { blocks: u32, first_strip: u32 },
}

/// Stage 6kb where its transposing blocks keep up and the SMs they take cost less
/// than the copy they save: a wave of the multiplying blocks is at most 4 strips'
/// worth of tiles (it may straddle 5; at least 32 tile-rows on 132 SMs: four SMs
/// write about 4 strips of `Bᵀ` in the time a wave multiplies them; with 2 SMs at
/// 4096^3 stage 6kb ran 1.5x longer), m is
/// at most [`TC6KB_MAX_TILE_ROWS`] tile-rows (the SMs' share of the product grows
/// with m, the copy does not: H200, 2026-11-25, stage 6kb 2.5-3.5% faster than stage
/// 6k at 4096^3 and 0-3% slower at 8192^3), the product is at least two waves of
/// tiles (the first one's strips are copied), B's rows start 16-byte aligned (its TMA
/// map) and the device has at least 8 SMs. Else stage 6k where the tiles are not
/// whole waves of one block per SM; stage 6t otherwise, or where stream-K's K steps
/// would not fit in 32 bits. `SIMT_STREAMK_TB=0` turns stage 6kb off and
/// `SIMT_STREAMK=0` both, for comparisons; `SIMT_6KB_BLOCKS` sets the transposing
/// blocks (and skips the keeps-up rule: measurements only).
fn plan_6k(sms: u32, m: u32, n: u32, k: u32, b_aligned: bool) -> Plan6k {
    let off = |name: &str| std::env::var_os(name).is_some_and(|v| v == "0");
    if off("SIMT_STREAMK") {
        return Plan6k::Tiles;
    }
    let (tiles_m, strips) = (m.div_ceil(TC_BM), n.div_ceil(TC6T_TF32_BN));
    let tiles = tiles_m as u64 * strips as u64;
    let ktiles = k.div_ceil(TC6_BK_TF32) as u64;
    let fits = |grid: u32| {
        let (_, sk) = s6k::streamk_split(tiles.min(u32::MAX as u64) as u32, grid);
        tiles <= u32::MAX as u64 && sk as u64 * ktiles <= u32::MAX as u64
    };
    // At most an eighth of the SMs transpose (so no emulated device of fewer than 8).
    // A number asked for (`SIMT_6KB_BLOCKS`, the tests' hook) skips the keeps-up rule.
    let asked: Option<u32> = std::env::var("SIMT_6KB_BLOCKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .or(testing::BLOCKS.get());
    let blocks = asked.map_or(tc6kb_blocks(sms), |b| b.clamp(1, (sms / 8).max(1)));
    if blocks <= sms / 8
        && (asked.is_some() || sms - blocks <= 4 * tiles_m)
        && tiles_m <= TC6KB_MAX_TILE_ROWS
        && b_aligned
        && tiles >= 2 * (sms - blocks) as u64
        && fits(sms - blocks)
        && !off("SIMT_STREAMK_TB")
    {
        // The strips the first wave's tiles (column-major) need.
        let first_strip = if testing::ALL_STRIPS_TRANSPOSED.get() {
            0
        } else {
            ((sms - blocks - 1) / tiles_m + 1).min(strips)
        };
        return Plan6k::Transposed {
            blocks,
            first_strip,
        };
    }
    let (_, sk) = s6k::streamk_split(tiles.min(u32::MAX as u64) as u32, sms);
    if sk > 0 && fits(sms) {
        Plan6k::StreamK
    } else {
        Plan6k::Tiles
    }
}

/// Hooks for the tests.
#[doc(hidden)]
pub mod testing {
    use std::cell::Cell;
    thread_local! {
        pub(super) static ALL_STRIPS_TRANSPOSED: Cell<bool> = const { Cell::new(false) };
        pub(super) static BLOCKS: Cell<Option<u32>> = const { Cell::new(None) };
    }

    /// Sets `cell` to `v` while `f` runs, then back (also when `f` panics).
    fn with<T: Copy + 'static, R>(
        cell: &'static std::thread::LocalKey<Cell<T>>,
        v: T,
        f: impl FnOnce() -> R,
    ) -> R {
        struct Restore<T: Copy + 'static>(&'static std::thread::LocalKey<Cell<T>>, T);
        impl<T: Copy + 'static> Drop for Restore<T> {
            fn drop(&mut self) {
                self.0.set(self.1);
            }
        }
        let _restore = Restore(cell, cell.replace(v));
        f()
    }

    /// Runs `f` with stage 6kb's copy making none of `Bᵀ` on this thread: the
    /// transposing blocks write every strip and the multiplying blocks wait for each,
    /// the first wave at once. A test of the strip flags, not a fast path.
    pub fn with_all_strips_transposed<R>(f: impl FnOnce() -> R) -> R {
        with(&ALL_STRIPS_TRANSPOSED, true, f)
    }

    /// Runs `f` with stage 6kb on this thread using `blocks` transposing blocks (at
    /// most an eighth of the SMs), whether they keep up or not: tests of several
    /// transposing blocks on an emulated device.
    pub fn with_transposing_blocks<R>(blocks: u32, f: impl FnOnce() -> R) -> R {
        with(&BLOCKS, Some(blocks), f)
    }
}

/// What [`TcKernel::Auto`] decides on: the product's sizes, whether A's and B's rows
/// all start 16-byte aligned, the inputs' precision (`"bf16"`, `"f16"` or `"tf32"`)
/// and C's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcShape {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub aligned: bool,
    pub input: &'static str,
    pub out: OutType,
}

/// The tuner's key of a tensor-core product: the device, the precision and C's type,
/// `m`, `n`, `k` rounded up to powers of two, the alignment, and whether C has
/// ragged 128x128 tiles (H100, 2026-11-23: stage 6 won 1024^3 and took 1.6x stage
/// 8's time at 1000^3, one bucket apart from it otherwise; docs/PERFORMANCE.md).
pub fn tc_key(gpu: &Gpu, s: TcShape) -> crate::tune::Key {
    let out = match s.out {
        OutType::F32 => "f32",
        OutType::Bf16 => "bf16",
        OutType::F16 => "f16",
    };
    crate::tune::Key::new(gpu, "matmul_tc", &format!("{}->{out}", s.input))
        .dim("m", s.m as usize)
        .dim("n", s.n as usize)
        .dim("k", s.k as usize)
        .flag("aligned", s.aligned)
        .flag(
            "ragged",
            !s.m.is_multiple_of(TC_BM) || !s.n.is_multiple_of(TC_BN),
        )
}

/// The stages that run a product on this device: stage 5 always (16-bit inputs, f32
/// C), stage 6 when the rows are aligned (TF32: only then), the Hopper stages where
/// the sm_90a module loads (16-bit inputs: aligned rows; TF32: any, through its
/// copies). A 16-bit C takes the Hopper stages only; stage 8 also runs it for
/// unaligned inputs (through stage 5 and a rounding pass). Empty when nothing runs
/// it (a 16-bit C off Hopper); `Auto` then reports the heuristic's error.
pub fn tc_candidates(gpu: &Gpu, s: TcShape) -> Vec<TcKernel> {
    let hopper = gpu.can_load(&ptx::sm90a::MODULE);
    let tf32 = s.input == "tf32";
    let mut v = Vec::new();
    if s.out == OutType::F32 {
        if !tf32 {
            v.push(TcKernel::Mma);
        }
        if s.aligned {
            v.push(TcKernel::MmaPipelined);
        }
    }
    if hopper {
        if s.out == OutType::F32 && (s.aligned || tf32) {
            v.push(TcKernel::MmaTma);
        }
        if s.aligned || tf32 {
            v.push(TcKernel::Wgmma);
        }
        if s.aligned || tf32 || s.out != OutType::F32 {
            v.push(TcKernel::WgmmaCluster);
        }
    }
    v
}

/// What `Auto` runs without a tuned choice: [`TcKernel::best`] for aligned rows (and
/// TF32, whose Hopper stages copy whatever input TMA cannot read in place), stage 8
/// for a 16-bit C, stage 5 for unaligned 16-bit inputs into an f32 C.
pub fn tc_heuristic(gpu: &Gpu, s: TcShape) -> TcKernel {
    if s.out != OutType::F32 {
        TcKernel::WgmmaCluster
    } else if s.aligned || s.input == "tf32" {
        TcKernel::best(gpu)
    } else {
        TcKernel::Mma
    }
}

/// [`TcKernel::Auto`]'s stage for `s`: the tuner's choice among [`tc_candidates`]
/// (`run` runs the product with a candidate when tuning).
fn choose_stage(
    gpu: &Gpu,
    s: TcShape,
    run: impl FnMut(TcKernel) -> Result<()>,
) -> Result<TcKernel> {
    let candidates = tc_candidates(gpu, s);
    crate::tune::choose(
        gpu,
        &tc_key(gpu, s),
        &candidates,
        tc_heuristic(gpu, s),
        |kern| candidates.contains(&kern),
        run,
    )
}

impl crate::tune::Config for TcKernel {
    fn label(&self) -> String {
        TcKernel::label(*self).to_string()
    }
    fn from_label(s: &str) -> Option<Self> {
        TcKernel::from_label(s)
    }
}

/// Stage 8's map of C for its TMA-store epilogue: boxes of 16 rows x 128 bytes (32
/// f32 or 64 16-bit columns), 128-byte swizzled; `None` for stage 7, or when C's
/// rows do not start 16-byte aligned or are not a whole number of 16-byte chunks
/// long (stage 8 then stores from registers, as stage 7).
fn c_map<O: TcOutput>(
    gpu: &Gpu,
    stage: TcKernel,
    c: &MatrixMut<'_, O>,
) -> Result<Option<TensorMap<O>>> {
    // Rows of whole 16-byte chunks too: a TMA store writes the chunk that holds the
    // last column entirely (simt_std::tma::store_2d), which would touch the padding.
    let eb = O::TYPE.bytes() as usize;
    let aligned = (c.as_ref().ptr() as usize).is_multiple_of(16)
        && (c.rows() == 1 || (c.ld() * eb).is_multiple_of(16))
        && (c.cols() * eb).is_multiple_of(16);
    if stage != TcKernel::WgmmaCluster || !aligned {
        return Ok(None);
    }
    TensorMap::tiled(
        gpu,
        c.as_ref(),
        WG_C_BOX_ROWS,
        WG_C_BOX_COLS * 4 / eb as u32,
        TmaSwizzle::B128,
    )
    .map(Some)
}

/// `C = round(x)`: a dense `m x n` f32 matrix rounded to nearest even into C's
/// 16-bit type (C is bf16 or f16).
fn round_into<O: TcOutput>(gpu: &Gpu, x: &Buffer<f32>, c: &mut MatrixMut<'_, O>) -> Result<()> {
    let (rows, cols, ld) = (c.rows() as u32, c.cols() as u32, c.ld() as u32);
    let y = c.ptr_mut() as *mut u16;
    let threads = rows as usize * cols as usize;
    match O::TYPE {
        OutType::Bf16 => {
            type K = cv::f32_to_bf16_strided;
            // SAFETY: x holds rows·cols f32 of this Gpu; C is a checked 16-bit view of
            // it (writable at r·ld + c); grid-stride.
            unsafe {
                gpu.launch::<K>(
                    LaunchConfig::linear::<K>(threads)?,
                    (x.ptr(), y, rows, cols, ld),
                )
            }
        }
        OutType::F16 => {
            type K = cv::f32_to_f16_strided;
            // SAFETY: as above.
            unsafe {
                gpu.launch::<K>(
                    LaunchConfig::linear::<K>(threads)?,
                    (x.ptr(), y, rows, cols, ld),
                )
            }
        }
        OutType::F32 => Err(SimtError::Unsupported(
            "round_into: C is f32, nothing to round (a bug in matmul_tc)".into(),
        )),
    }
}

/// `C = 0` for an empty product (`k = 0`: `epilogue(0) = 0`), in C's element type.
fn fill_zero<O: TcOutput>(gpu: &Gpu, c: &mut MatrixMut<'_, O>) -> Result<()> {
    let (rows, cols, ld) = (c.rows() as u32, c.cols() as u32, c.ld() as u32);
    let p = c.ptr_mut();
    match O::TYPE {
        OutType::F32 => {
            type K = kernels::util::fill_matrix_u32;
            // SAFETY: a checked view of this Gpu: writable at r·ld + c for r < rows,
            // c < cols, fewer than 2^32 elements (checked by `check`); grid-stride.
            unsafe {
                gpu.launch::<K>(
                    LaunchConfig::linear::<K>(rows as usize * cols as usize)?,
                    (p as *mut u32, rows, cols, ld, 0),
                )
            }
        }
        OutType::Bf16 | OutType::F16 => {
            type K = kernels::util::fill_matrix_u16;
            // SAFETY: as above, for 16-bit elements (0 is +0.0 in both formats).
            unsafe {
                gpu.launch::<K>(
                    LaunchConfig::linear::<K>(rows as usize * cols as usize)?,
                    (p as *mut u16, rows, cols, ld, 0),
                )
            }
        }
    }
}

/// The Hopper stages' parameters.
fn wgmma_params<TA: TmaElement, TB: TmaElement, O: TcOutput>(
    am: &TensorMap<TA>,
    bm: &TensorMap<TB>,
    cm: Option<&TensorMap<O>>,
    c: &mut MatrixMut<'_, O>,
    (m, n, k): (u32, u32, u32),
    epilogue: Epilogue,
) -> MatmulParamsTma {
    MatmulParamsTma {
        a_map: am.ptr(),
        b_map: bm.ptr(),
        c_map: cm.map_or(std::ptr::null(), |m| m.ptr()),
        // The kernels read C's element type from c_type.
        c: MatMut {
            ptr: c.ptr_mut() as *mut f32,
            rows: m,
            cols: n,
            ld: c.ld() as u32,
        },
        m,
        n,
        k,
        epilogue,
        c_type: O::TYPE,
    }
}

/// Launches a conversion kernel `K` over `x -> y`, whose element types `A`, `B`
/// have the sizes and bit patterns of the kernel's `KA`, `KB` (bf16/f16 as u16).
fn convert<K, KA, KB, A, B>(
    gpu: &Gpu,
    op: &'static str,
    x: &Buffer<A>,
    y: &mut Buffer<B>,
) -> Result<()>
where
    K: Kernel<Args = (*const KA, *mut KB, u32)>,
    KA: 'static,
    KB: 'static,
    A: DeviceCopy,
    B: DeviceCopy,
{
    const {
        assert!(
            std::mem::size_of::<A>() == std::mem::size_of::<KA>()
                && std::mem::size_of::<B>() == std::mem::size_of::<KB>()
        )
    };
    gpu.check(op, "x", x)?;
    gpu.check(op, "y", y)?;
    if x.len() != y.len() {
        return Err(SimtError::Shape {
            op,
            detail: format!("input has {} elements, output {}", x.len(), y.len()),
        });
    }
    let n = fits_u32(op, "length", x.len())?;
    if n == 0 {
        return Ok(());
    }
    ptx::load(gpu)?;
    // 4 elements per thread of the kernel's block per pass of the grid-stride loop,
    // at most 2^18 blocks.
    let per_block = K::BOUNDS.max_block_threads() as usize;
    let blocks = (n as usize).div_ceil(4 * per_block).min(1 << 18);
    // SAFETY: x and y hold n elements of the kernel's sizes on this Gpu (checked); the
    // kernel's loop is grid-stride, so any grid covers them.
    unsafe {
        gpu.launch::<K>(
            LaunchConfig::for_kernel::<K>(dim3(blocks as u32, 1, 1)),
            (x.ptr() as *const KA, y.ptr_mut() as *mut KB, n),
        )
    }
}

/// `y = bf16(x)` on the device, round to nearest even (PyTorch's `.bfloat16()`).
pub fn to_bf16(gpu: &Gpu, x: &Buffer<f32>, y: &mut Buffer<bf16>) -> Result<()> {
    convert::<cv::f32_to_bf16, f32, u16, _, _>(gpu, "to_bf16", x, y)
}

/// `y = f16(x)` on the device, round to nearest even (PyTorch's `.half()`).
pub fn to_f16(gpu: &Gpu, x: &Buffer<f32>, y: &mut Buffer<f16>) -> Result<()> {
    convert::<cv::f32_to_f16, f32, u16, _, _>(gpu, "to_f16", x, y)
}

/// `y = f32(x)` for bf16 `x` on the device (exact).
pub fn bf16_to_f32(gpu: &Gpu, x: &Buffer<bf16>, y: &mut Buffer<f32>) -> Result<()> {
    convert::<cv::bf16_to_f32_kernel, u16, f32, _, _>(gpu, "bf16_to_f32", x, y)
}

/// `y = f32(x)` for f16 `x` on the device (exact).
pub fn f16_to_f32(gpu: &Gpu, x: &Buffer<f16>, y: &mut Buffer<f32>) -> Result<()> {
    convert::<cv::f16_to_f32_kernel, u16, f32, _, _>(gpu, "f16_to_f32", x, y)
}
