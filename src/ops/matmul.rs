//! `C = epilogue(A·B)`: naive, tiled, double-buffered and warp-tiled kernels, any
//! shape, row-major views with their own strides.
//!
//! Zero-sized: `m = 0` or `n = 0` writes nothing and launches nothing; `k = 0`
//! writes `epilogue(0) = 0` to every element of C (the empty sum), as `torch.mm` does.
pub use kernels::config::{
    MmCluster, MmLoop, MmTile, MM_ASYNC_TILES, MM_CLUSTER_CONFIGS, MM_TILES, SPLITK_MAX,
};
use kernels::config::{
    GEMV_COL_ROWS, GEMV_ROW_COLS, MM4K_PARTIAL_FLOATS, MM_ASYNC_STAGES, MM_BK, MM_BM, MM_BN,
    MM_WIDE_BM, MM_WIDE_BN, NAIVE_TILE, SPLITK_REDUCE_THREADS,
};
pub use kernels::params::Epilogue;
use kernels::params::{
    MatMut, MatRef, MatmulParams, MatmulParamsStreamK4, MatmulParamsTail4, MatmulSplitParams,
    SplitReduceParams,
};
use kernels::{
    matmul_cluster_splitk, matmul_gemv, matmul_naive, matmul_tiled, matmul_tiled_db, matmul_tiles,
    matmul_tiles_async, matmul_warptiled, matmul_warptiled_streamk, matmul_warptiled_tail,
    matmul_warptiled_wide, matmul_warptiled_wide_tail,
};
use simt::{dim3, Gpu, Kernel, LaunchConfig, MatrixMut, MatrixRef, Result, SimtError};

use super::{check_product, tile_grid, Product};
use crate::ptx;

/// Runs `$body` with `$k` the kernel type of cluster config `$config`
/// ([`MM_CLUSTER_CONFIGS`]; the last arm takes any index past the others, so callers
/// check the index first). The one list of the cluster split-K kernels.
#[rustfmt::skip]
macro_rules! by_cluster_config {
    ($config:expr, $k:ident => $body:expr) => {{
        use kernels::matmul_cluster_splitk::*;
        const _: () = assert!(MM_CLUSTER_CONFIGS.len() == 11, "one arm per MM_CLUSTER_CONFIGS entry");
        match $config {
            0 => { type $k = matmul_relu_cluster_tile_64x128_c2; $body }
            1 => { type $k = matmul_relu_cluster_tile_64x128_c4; $body }
            2 => { type $k = matmul_relu_cluster_tile_64x128_c8; $body }
            3 => { type $k = matmul_relu_cluster_tile_128x64_c4; $body }
            4 => { type $k = matmul_relu_cluster_tile_64x64_c4; $body }
            5 => { type $k = matmul_relu_cluster_async_s4_32x64_c2; $body }
            6 => { type $k = matmul_relu_cluster_async_s4_32x64_c4; $body }
            7 => { type $k = matmul_relu_cluster_async_s4_16x64_c2; $body }
            8 => { type $k = matmul_relu_cluster_async_s4_16x64_c4; $body }
            9 => { type $k = matmul_relu_cluster_async_s4_64x64_c4; $body }
            _ => { type $k = matmul_relu_cluster_async_64x64_w4_c2; $body }
        }
    }};
}

/// Which matmul kernel.
///
/// The four stages ([`MatmulKernel::ALL`]) are the lecture's progression. The
/// configurable kernels ([`MatmulKernel::Tile`], the GEMV paths) are what
/// [`MatmulKernel::Auto`] chooses from, shape by shape (see [`crate::tune`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatmulKernel {
    /// One thread per output, K loop from global memory.
    Naive,
    /// 128x128x8 shared-memory tiles, 8x8 outputs per thread, swizzled A tile.
    Tiled,
    /// `Tiled`, double-buffered: next K step's loads in flight during compute,
    /// two shared stages, one barrier per step, launch bounds (256, 2).
    TiledDoubleBuffered,
    /// `TiledDoubleBuffered` with warp tiles (32x64 per warp) and unchecked loads and
    /// stores in interior blocks: the last stage of the lecture's progression, and the
    /// K loop of stages 4s and 4k.
    WarpTiled,
    /// Stage 4w: stage 4 with 256x128 block tiles, a 16x8 thread tile and one block
    /// of 256 threads per SM (up to 255 registers a thread).
    WarpTiledWide,
    /// Stage 4ws: stage 4w with the tiles of its partial last wave split along K, the
    /// SMs that would idle running the short later parts ([`wide_tail_plan`] picks the
    /// parts and the cut), then the split tiles' parts added by a second launch. With
    /// fewer tiles than SMs, every tile in equal parts (1024^3: 32 tiles in 4). Where
    /// the tiles are a whole number of waves, the plan saves too little, or fewer tiles
    /// than SMs in equal parts of 32 K steps would fill under 7/8 of them, it runs
    /// stage 4w itself. Results can differ from stage 4w's in the last bits where a
    /// tile is split; they are the same on every run.
    WarpTiledWideTail,
    /// Stage 4k: stage 4 on persistent blocks (as many as the device holds at once)
    /// with a **stream-K** tail: the tiles past the last whole wave are cut along K
    /// into equal shares, so no SM idles in a partial last wave. Where the tiles are a
    /// whole number of waves (or fewer than one), the stream-K part has 2^32 K steps or
    /// more, or the device refuses a cooperative launch (a shared MPS device), it runs
    /// stage 4 itself. Results can differ from stage 4's in the last bits where a tile
    /// is split; they are the same on every run.
    WarpTiledStreamK,
    /// Stage 4s: stage 4 with the tiles of its partial last wave split along K, one
    /// segment per block in one ordinary launch: the long first parts start first and
    /// the short ones fill the slots they leave ([`tail_plan`] picks the cut). With
    /// fewer tiles than SMs, every tile is split into equal parts (split K on stage
    /// 4's own loop). Where the tiles are a whole number of waves, or the plan saves
    /// too little, it runs stage 4 itself. Results can differ from stage 4's in the
    /// last bits where a tile is split; they are the same on every run.
    WarpTiledTail,
    /// Stage 4s with the three-part cut of [`tail_plan`] replaced by
    /// `TAIL_PLANS[plan]` (parts, first part in eighths of K): the tuner's other plans.
    /// Where the rule would split into equal parts, or the replacement would give a
    /// part fewer than 4 K steps, it runs the rule's own plan.
    WarpTiledTailPlan {
        /// Index into [`TAIL_PLANS`].
        plan: usize,
    },
    /// Stage 4's warp tiling with block tile `MM_TILES[tile]` (128x128 down to 32x32)
    /// and K cut into `split_k` slices (1: no split; at most [`SPLITK_MAX`]) whose
    /// partial products a second kernel adds in a fixed order.
    Tile {
        /// Index into [`MM_TILES`].
        tile: usize,
        /// K slices, 1 to [`SPLITK_MAX`].
        split_k: u32,
    },
    /// Block tile `MM_ASYNC_TILES[tile]` fed by a 3-stage `cp.async` pipeline with K
    /// steps of 32 (latency-bound small products), K in `split_k` slices.
    TileAsync {
        /// Index into [`MM_ASYNC_TILES`].
        tile: usize,
        /// K slices, 1 to [`SPLITK_MAX`].
        split_k: u32,
    },
    /// The K loop of a tile kernel with K split over the blocks of a thread-block
    /// cluster, `MM_CLUSTER_CONFIGS[config]`, the slices added through distributed
    /// shared memory in the same launch (Hopper: compute capability 9.0).
    TileCluster {
        /// Index into [`MM_CLUSTER_CONFIGS`].
        config: usize,
    },
    /// A row times a matrix (`m = 1`), reading B once; K in `split_k` slices.
    GemvRow {
        /// K slices, 1 to [`SPLITK_MAX`].
        split_k: u32,
    },
    /// A matrix times a column (`n = 1`), reading A once; K in `split_k` slices.
    GemvCol {
        /// K slices, 1 to [`SPLITK_MAX`].
        split_k: u32,
    },
    /// Chosen per shape: the autotuner's cached winner for the shape's bucket when
    /// there is one (and, with `SIMT_TUNE=1`, tuned on the spot when there is not),
    /// else a deterministic heuristic ([`auto_heuristic`]).
    Auto,
}

impl MatmulKernel {
    /// All stages, slowest first.
    pub const ALL: [MatmulKernel; 4] = [
        MatmulKernel::Naive,
        MatmulKernel::Tiled,
        MatmulKernel::TiledDoubleBuffered,
        MatmulKernel::WarpTiled,
    ];
    /// Short name of the kind (without the configuration; see [`label`](Self::label)).
    pub fn name(self) -> &'static str {
        match self {
            MatmulKernel::Naive => "naive",
            MatmulKernel::Tiled => "tiled",
            MatmulKernel::TiledDoubleBuffered => "tiled+db",
            MatmulKernel::WarpTiled => "warptiled",
            MatmulKernel::WarpTiledWide => "warptiled-wide",
            MatmulKernel::WarpTiledWideTail => "warptiled-wide-tail",
            MatmulKernel::WarpTiledStreamK => "warptiled-sk",
            MatmulKernel::WarpTiledTail | MatmulKernel::WarpTiledTailPlan { .. } => {
                "warptiled-tail"
            }
            MatmulKernel::Tile { .. } => "tile",
            MatmulKernel::TileAsync { .. } => "async",
            MatmulKernel::TileCluster { .. } => "cluster",
            MatmulKernel::GemvRow { .. } => "gemv-row",
            MatmulKernel::GemvCol { .. } => "gemv-col",
            MatmulKernel::Auto => "auto",
        }
    }
    /// Name with the configuration, for tables and the tuner's cache:
    /// `tile64x64/k4`, `gemv-row/k16`, `tile64x128/c4` (K over a cluster of 4), or
    /// the stage's [`name`](Self::name).
    pub fn label(self) -> String {
        match self {
            MatmulKernel::TileCluster { config } => match MM_CLUSTER_CONFIGS.get(config) {
                Some(c) => {
                    let base = match c.kloop {
                        MmLoop::Tile(tile) => MatmulKernel::Tile { tile, split_k: 1 },
                        MmLoop::Async(tile) => MatmulKernel::TileAsync { tile, split_k: 1 },
                    }
                    .label();
                    let base = base.strip_suffix("/k1").unwrap_or(&base);
                    format!("{base}/c{}", c.cluster)
                }
                None => format!("cluster#{config}"),
            },
            MatmulKernel::Tile { tile, split_k } => match MM_TILES.get(tile) {
                Some(t) => format!("tile{}x{}/k{split_k}", t.bm, t.bn),
                None => format!("tile#{tile}/k{split_k}"),
            },
            MatmulKernel::TileAsync { tile, split_k } => match MM_ASYNC_TILES.get(tile) {
                Some(t) => {
                    let stages = match t.stages {
                        MM_ASYNC_STAGES => String::new(),
                        s => format!("-s{s}-"),
                    };
                    // A tile of the same size as another with more warps: `-w4`.
                    let fewer_warps = MM_ASYNC_TILES
                        .iter()
                        .any(|o| o.bm == t.bm && o.bn == t.bn && o.threads() > t.threads());
                    let warps = match fewer_warps {
                        true => format!("-w{}", t.threads() / 32),
                        false => String::new(),
                    };
                    let slices = match t.kslices {
                        1 => String::new(),
                        s => format!("-ks{s}"),
                    };
                    format!("async{stages}{}x{}{warps}{slices}/k{split_k}", t.bm, t.bn)
                }
                None => format!("async#{tile}/k{split_k}"),
            },
            MatmulKernel::WarpTiledTailPlan { plan } => match TAIL_PLANS.get(plan) {
                Some((parts, eighths)) => format!("warptiled-tail/p{parts}c{eighths}"),
                None => format!("warptiled-tail#{plan}"),
            },
            MatmulKernel::GemvRow { split_k } => format!("gemv-row/k{split_k}"),
            MatmulKernel::GemvCol { split_k } => format!("gemv-col/k{split_k}"),
            k => k.name().to_string(),
        }
    }
    /// Parses a [`label`](Self::label); `None` for anything else.
    pub fn from_label(s: &str) -> Option<MatmulKernel> {
        let split = |r: &str| r.strip_prefix('k')?.parse::<u32>().ok();
        // A tile `{bm}x{bn}/k{split}` of `tiles` with `stages` stages (any when 0).
        let tile = |rest: &str, tiles: &[MmTile], stages: u32| {
            let (tile, k) = rest.split_once('/')?;
            let (bm, bn) = tile.split_once('x')?;
            let (bm, bn) = (bm.parse::<u32>().ok()?, bn.parse::<u32>().ok()?);
            Some((
                tiles.iter().position(|t| {
                    t.bm == bm && t.bn == bn && (stages == 0 || t.stages == stages)
                })?,
                split(k)?,
            ))
        };
        if let Some((tile, split_k)) = s.strip_prefix("tile").and_then(|r| tile(r, &MM_TILES, 0)) {
            return Some(MatmulKernel::Tile { tile, split_k });
        }
        // The async labels carry stages and warps: match them whole.
        let async_tile = s.starts_with("async").then(|| {
            let split_k = split(s.rsplit_once('/')?.1)?;
            let tile = (0..MM_ASYNC_TILES.len())
                .find(|&tile| MatmulKernel::TileAsync { tile, split_k }.label() == s)?;
            Some((tile, split_k))
        });
        if let Some((tile, split_k)) = async_tile.flatten() {
            return Some(MatmulKernel::TileAsync { tile, split_k });
        }
        if s.contains("/c") {
            return (0..MM_CLUSTER_CONFIGS.len())
                .map(|config| MatmulKernel::TileCluster { config })
                .find(|k| k.label() == s);
        }
        if s.starts_with("warptiled-tail/") {
            return (0..TAIL_PLANS.len())
                .map(|plan| MatmulKernel::WarpTiledTailPlan { plan })
                .find(|k| k.label() == s);
        }
        if let Some(k) = s.strip_prefix("gemv-row/") {
            return Some(MatmulKernel::GemvRow { split_k: split(k)? });
        }
        if let Some(k) = s.strip_prefix("gemv-col/") {
            return Some(MatmulKernel::GemvCol { split_k: split(k)? });
        }
        [
            Self::ALL.as_slice(),
            &[
                MatmulKernel::WarpTiledWide,
                MatmulKernel::WarpTiledWideTail,
                MatmulKernel::WarpTiledStreamK,
                MatmulKernel::WarpTiledTail,
                MatmulKernel::Auto,
            ],
        ]
        .concat()
        .into_iter()
        .find(|k| k.name() == s)
    }
    /// The PTX entry name of the kernel (the product's kernel; a split product also
    /// runs `matmul_splitk_reduce`, stage 4s `matmul_tail_reduce`). `None` for
    /// [`Auto`](Self::Auto), which picks one per shape, and for a tile index past
    /// [`MM_TILES`].
    pub fn kernel_name(self) -> Option<&'static str> {
        Some(match self {
            MatmulKernel::Naive => matmul_naive::matmul_relu_naive::NAME,
            MatmulKernel::Tiled => matmul_tiled::matmul_relu_tiled::NAME,
            MatmulKernel::TiledDoubleBuffered => matmul_tiled_db::matmul_relu_tiled_db::NAME,
            MatmulKernel::WarpTiled => matmul_warptiled::matmul_relu_warptiled::NAME,
            MatmulKernel::WarpTiledWide => matmul_warptiled_wide::matmul_relu_warptiled_wide::NAME,
            MatmulKernel::WarpTiledWideTail => {
                matmul_warptiled_wide_tail::matmul_relu_warptiled_wide_tail::NAME
            }
            MatmulKernel::WarpTiledStreamK => {
                matmul_warptiled_streamk::matmul_relu_warptiled_streamk::NAME
            }
            MatmulKernel::WarpTiledTail | MatmulKernel::WarpTiledTailPlan { .. } => {
                matmul_warptiled_tail::matmul_relu_warptiled_tail::NAME
            }
            MatmulKernel::Tile { tile, .. } => matmul_tiles::TILE_KERNEL_NAMES.get(tile)?,
            MatmulKernel::TileAsync { tile, .. } => {
                matmul_tiles_async::ASYNC_KERNEL_NAMES.get(tile)?
            }
            MatmulKernel::TileCluster { config } => {
                matmul_cluster_splitk::CLUSTER_KERNEL_NAMES.get(config)?
            }
            MatmulKernel::GemvRow { .. } => matmul_gemv::matmul_gemv_row::NAME,
            MatmulKernel::GemvCol { .. } => matmul_gemv::matmul_gemv_col::NAME,
            MatmulKernel::Auto => return None,
        })
    }
    /// Whether the kernel can run a product of this shape: the GEMV paths need
    /// `m = 1` (row) or `n = 1` (column), tile indices and splits must exist, and
    /// `Auto` is never a choice itself.
    pub fn runs(self, s: Shape) -> bool {
        let split_ok = |sk: u32| (1..=SPLITK_MAX).contains(&sk);
        match self {
            MatmulKernel::Tile { tile, split_k } => tile < MM_TILES.len() && split_ok(split_k),
            MatmulKernel::TileAsync { tile, split_k } => {
                tile < MM_ASYNC_TILES.len() && split_ok(split_k)
            }
            MatmulKernel::TileCluster { config } => config < MM_CLUSTER_CONFIGS.len(),
            MatmulKernel::WarpTiledTailPlan { plan } => plan < TAIL_PLANS.len(),
            MatmulKernel::GemvRow { split_k } => s.m == 1 && split_ok(split_k),
            MatmulKernel::GemvCol { split_k } => s.n == 1 && split_ok(split_k),
            MatmulKernel::Auto => false,
            _ => true,
        }
    }
    /// The K slices of the configurable kernels (1 for the stages).
    pub fn split_k(self) -> u32 {
        match self {
            MatmulKernel::TileCluster { config } => {
                MM_CLUSTER_CONFIGS.get(config).map_or(1, |c| c.cluster)
            }
            MatmulKernel::Tile { split_k, .. }
            | MatmulKernel::TileAsync { split_k, .. }
            | MatmulKernel::GemvRow { split_k }
            | MatmulKernel::GemvCol { split_k } => split_k,
            _ => 1,
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
    let kernel = if k == 0 {
        MatmulKernel::Naive
    } else if kernel == MatmulKernel::Auto {
        let aligned = [a.ptr() as usize, b.ptr() as usize, c.ptr_mut() as usize]
            .iter()
            .all(|&p| p % 16 == 0)
            && [lda, ldb, ldc].iter().all(|&l| l % 4 == 0);
        let shape = Shape { m, n, k, aligned };
        crate::tune::choose(
            gpu,
            &auto_key(gpu, shape),
            &auto_candidates(gpu, shape),
            auto_heuristic(gpu, shape),
            |kern| kern.runs(shape),
            |kern| matmul(gpu, kern, a, b, c.reborrow(), epilogue),
        )?
    } else {
        kernel
    };
    if matches!(
        kernel,
        MatmulKernel::Tile { .. }
            | MatmulKernel::TileAsync { .. }
            | MatmulKernel::TileCluster { .. }
            | MatmulKernel::WarpTiledStreamK
            | MatmulKernel::WarpTiledTail
            | MatmulKernel::WarpTiledTailPlan { .. }
            | MatmulKernel::WarpTiledWideTail
            | MatmulKernel::GemvRow { .. }
            | MatmulKernel::GemvCol { .. }
    ) {
        // Their K loops compute `k + a few steps` in 32 bits.
        if k > 1 << 31 {
            return Err(SimtError::TooLarge {
                op,
                detail: format!("k = {k}: the tile and GEMV kernels take k up to 2^31; use MatmulKernel::Naive or split K yourself"),
            });
        }
    }
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
        unsafe { launch_checked::<K>(gpu, grid, p) }
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
        MatmulKernel::WarpTiledWide => go::<matmul_warptiled_wide::matmul_relu_warptiled_wide>(
            gpu,
            grid(MM_WIDE_BM, MM_WIDE_BN)?,
            p,
        ),
        MatmulKernel::WarpTiledWideTail => {
            warptiled_wide_tail(gpu, grid(MM_WIDE_BM, MM_WIDE_BN)?, p)
        }
        MatmulKernel::WarpTiledStreamK => warptiled_streamk(gpu, grid(MM_BM, MM_BN)?, p),
        MatmulKernel::WarpTiledTail => warptiled_tail(gpu, grid(MM_BM, MM_BN)?, p, None),
        MatmulKernel::WarpTiledTailPlan { plan } => {
            let Some(&cut) = TAIL_PLANS.get(plan) else {
                return Err(SimtError::Unsupported(format!(
                    "{op}: tail plan {plan} does not exist: MatmulKernel::WarpTiledTailPlan takes 0..{} (TAIL_PLANS)",
                    TAIL_PLANS.len()
                )));
            };
            warptiled_tail(gpu, grid(MM_BM, MM_BN)?, p, Some(cut))
        }
        MatmulKernel::Tile { tile, split_k } => {
            let Some(t) = MM_TILES.get(tile) else {
                return Err(SimtError::Unsupported(format!(
                    "{op}: tile {tile} does not exist: MatmulKernel::Tile takes 0..{} (MM_TILES)",
                    MM_TILES.len()
                )));
            };
            let g = grid(t.bm, t.bn)?;
            use matmul_tiles::*;
            let launch = match tile {
                0 => split_launch::<matmul_relu_tile_128x64>,
                1 => split_launch::<matmul_relu_tile_64x128>,
                2 => split_launch::<matmul_relu_tile_64x64>,
                3 => split_launch::<matmul_relu_tile_32x64>,
                // The last index (checked above): a tile added to MM_TILES without an
                // arm here fails the assertion below at compile time instead of
                // launching this kernel with the wrong grid.
                _ => split_launch::<matmul_relu_tile_32x32>,
            };
            const _: () = assert!(MM_TILES.len() == 5, "one arm per MM_TILES entry above");
            launch(gpu, (g.x, g.y), SliceDim::Z, p, split_k)
        }
        MatmulKernel::TileAsync { tile, split_k } => {
            let Some(t) = MM_ASYNC_TILES.get(tile) else {
                return Err(SimtError::Unsupported(format!(
                    "{op}: tile {tile} does not exist: MatmulKernel::TileAsync takes 0..{} (MM_ASYNC_TILES)",
                    MM_ASYNC_TILES.len()
                )));
            };
            let g = grid(t.bm, t.bn)?;
            use matmul_tiles_async::*;
            let launch = match tile {
                0 => split_launch::<matmul_relu_async_64x64>,
                1 => split_launch::<matmul_relu_async_64x32>,
                2 => split_launch::<matmul_relu_async_32x64>,
                3 => split_launch::<matmul_relu_async_32x32>,
                4 => split_launch::<matmul_relu_async_16x64>,
                5 => split_launch::<matmul_relu_async_16x128>,
                6 => split_launch::<matmul_relu_async_s4_16x64>,
                7 => split_launch::<matmul_relu_async_s4_32x64>,
                8 => split_launch::<matmul_relu_async_s4_64x64>,
                9 => split_launch::<matmul_relu_async_64x64_w4>,
                10 => split_launch::<matmul_relu_async_s4_64x64_w4>,
                _ => split_launch::<matmul_relu_async_64x64_ks2>,
            };
            const _: () = assert!(
                MM_ASYNC_TILES.len() == 12,
                "one arm per MM_ASYNC_TILES entry above"
            );
            launch(gpu, (g.x, g.y), SliceDim::Z, p, split_k)
        }
        MatmulKernel::TileCluster { config } => {
            let Some(c) = MM_CLUSTER_CONFIGS.get(config) else {
                return Err(SimtError::Unsupported(format!(
                    "{op}: cluster config {config} does not exist: MatmulKernel::TileCluster takes 0..{} (MM_CLUSTER_CONFIGS)",
                    MM_CLUSTER_CONFIGS.len()
                )));
            };
            if !super::softmax::has_clusters(gpu) {
                return Err(SimtError::Unsupported(format!(
                    "MatmulKernel::TileCluster needs thread-block clusters (compute capability 9.0, the sm_90a module) and this device is {}; use MatmulKernel::Tile with split_k, or MatmulKernel::Auto",
                    gpu.props().sm()
                )));
            }
            let t = c.tile();
            let g = grid(t.bm, t.bn)?;
            let gx = g.x as u64 * c.cluster as u64;
            if gx > i32::MAX as u64 {
                return Err(SimtError::TooLarge {
                    op,
                    detail: format!(
                        "n = {n} needs {gx} blocks along x ({} per tile); split B's columns",
                        c.cluster
                    ),
                });
            }
            let sp = MatmulSplitParams {
                mm: p,
                k_chunk: k_slices(k, c.cluster).0,
                partials: std::ptr::null_mut(),
            };
            fn go_c<K: Kernel<Args = (MatmulSplitParams,)>>(
                gpu: &Gpu,
                grid: simt::Dim3,
                p: MatmulSplitParams,
            ) -> Result<()> {
                // SAFETY: the views were checked against their buffers on this Gpu and
                // each other; C does not overlap A or B; k < 2^31 (checked above);
                // cluster · k_chunk >= k (`k_slices`); grid = (tiles along n · cluster,
                // tiles along m), as the kernel's Thread Mapping asks.
                unsafe { gpu.launch::<K>(LaunchConfig::for_kernel::<K>(grid), (p,)) }
            }
            by_cluster_config!(config, K => go_c::<K>(gpu, dim3(gx as u32, g.y, 1), sp))
        }
        MatmulKernel::GemvRow { split_k } => {
            if m != 1 {
                return Err(SimtError::Shape {
                    op,
                    detail: format!("MatmulKernel::GemvRow takes one row of A (m = 1), not m = {m}; use MatmulKernel::Auto"),
                });
            }
            split_launch::<matmul_gemv::matmul_gemv_row>(
                gpu,
                (n.div_ceil(GEMV_ROW_COLS), 1),
                SliceDim::Y,
                p,
                split_k,
            )
        }
        MatmulKernel::GemvCol { split_k } => {
            if n != 1 {
                return Err(SimtError::Shape {
                    op,
                    detail: format!("MatmulKernel::GemvCol takes one column of B (n = 1), not n = {n}; use MatmulKernel::Auto"),
                });
            }
            split_launch::<matmul_gemv::matmul_gemv_col>(
                gpu,
                (m.div_ceil(GEMV_COL_ROWS), 1),
                SliceDim::Y,
                p,
                split_k,
            )
        }
        MatmulKernel::Auto => unreachable!("Auto was resolved above"),
    }
}

/// Which grid dimension a split kernel's K slices run along.
#[derive(Clone, Copy)]
enum SliceDim {
    Y,
    Z,
}

/// How many blocks of cluster config `config` ([`MM_CLUSTER_CONFIGS`]) the device
/// holds at once: the driver's count of whole clusters resident together (a cluster
/// stays inside one GPC, so this can be less than the SMs times the blocks each
/// holds), times the cluster's size. On the emulator, its workers rounded down to
/// whole clusters. `Ok(0)` where the device has no clusters.
pub fn cluster_resident_blocks(gpu: &Gpu, config: usize) -> Result<u32> {
    let Some(c) = MM_CLUSTER_CONFIGS.get(config) else {
        return Err(SimtError::Unsupported(format!(
            "cluster config {config} does not exist: MM_CLUSTER_CONFIGS has 0..{}",
            MM_CLUSTER_CONFIGS.len()
        )));
    };
    if !super::softmax::has_clusters(gpu) {
        return Ok(0);
    }
    // The query needs the kernel's module loaded (a no-op once it is).
    ptx::load(gpu)?;
    // The occupancy query reads only the kernel's block and shared memory, which do
    // not depend on the arguments.
    let null = MatmulSplitParams {
        mm: MatmulParams {
            a: MatRef::EMPTY,
            b: MatRef::EMPTY,
            c: MatMut::EMPTY,
            epilogue: Epilogue::None,
        },
        k_chunk: 0,
        partials: std::ptr::null_mut(),
    };
    let clusters = by_cluster_config!(config, K => gpu.max_resident_clusters::<K>(&(null,))?);
    Ok(clusters * c.cluster)
}

/// How stage 4k splits a product of `tiles` 128x128 tiles with `ksteps` K steps of 8
/// over `blocks` resident blocks: `(dp_tiles, sk_tiles)`, or `None` where stage 4 runs
/// instead (the tiles a whole number of waves or fewer than one, or more stream-K K
/// steps than 32 bits count).
pub fn streamk_plan(tiles: u64, ksteps: u32, blocks: u32) -> Option<(u32, u32)> {
    let tiles = u32::try_from(tiles).ok()?;
    let (dp, sk) = kernels::streamk::streamk_split(tiles, blocks);
    (sk > 0 && (sk as u64) * (ksteps as u64) < 1 << 32).then_some((dp, sk))
}

/// Launches a one-parameter matmul kernel (stage 4 and the stages before it) over
/// `grid`: the one launch `matmul`'s stages and the stage 4 fallbacks of stages 4k and
/// 4s share.
///
/// # Safety
/// `p`'s views were checked by [`matmul`] against their buffers on this `gpu` and
/// against each other (C does not overlap A or B), and `grid` covers C with `K`'s own
/// block, as its Thread Mapping asks.
unsafe fn launch_checked<K: Kernel<Args = (MatmulParams,)>>(
    gpu: &Gpu,
    grid: simt::Dim3,
    p: MatmulParams,
) -> Result<()> {
    // SAFETY: the caller's contract is the kernel's.
    unsafe { gpu.launch::<K>(LaunchConfig::for_kernel::<K>(grid), (p,)) }
}

/// Stage 4k: stage 4's tiles on as many persistent blocks as the device holds, the
/// tiles past the last whole wave shared along K ([`MatmulKernel::WarpTiledStreamK`]).
fn warptiled_streamk(gpu: &Gpu, grid: simt::Dim3, p: MatmulParams) -> Result<()> {
    type K = matmul_warptiled_streamk::matmul_relu_warptiled_streamk;
    type S4 = matmul_warptiled::matmul_relu_warptiled;
    // SAFETY (stage 4, both below): as in `matmul`: the views were checked against
    // their buffers and each other, C does not overlap A or B, the grid covers C.
    let stage4 = || unsafe { launch_checked::<S4>(gpu, grid, p) };
    let mut sp = MatmulParamsStreamK4 {
        mm: p,
        dp_tiles: 0,
        sk_tiles: 0,
        partials: std::ptr::null_mut(),
        flags: std::ptr::null_mut(),
        epoch: 0,
    };
    let blocks = gpu.max_resident_blocks::<K>(&(sp,))?;
    let tiles = grid.x as u64 * grid.y as u64;
    let Some((dp_tiles, sk_tiles)) = streamk_plan(tiles, p.a.cols.div_ceil(MM_BK), blocks) else {
        return stage4();
    };
    let partials = gpu.scratch_f32(
        super::SCRATCH_STREAMK,
        blocks as usize * MM4K_PARTIAL_FLOATS as usize,
    )?;
    let (flags, epoch) = gpu.flags(blocks as usize)?;
    sp.dp_tiles = dp_tiles;
    sp.sk_tiles = sk_tiles;
    sp.partials = partials.ptr() as *mut f32;
    sp.flags = flags.ptr() as *mut u32;
    sp.epoch = epoch;
    // SAFETY: `p` as for stage 4 (checked views, C apart from A and B, k <= 2^31 and
    // every view under 2^32 elements: `matmul`'s checks); dp_tiles + sk_tiles are the
    // tiles of the grid, split by `streamk_split` for `blocks` blocks with fewer than
    // 2^32 stream-K K steps (`streamk_plan`); the workspace holds `blocks` slots and
    // `blocks` flags with a fresh epoch, this Gpu's alone while its queue runs this
    // launch; the grid is the resident blocks, launched cooperatively (the contract).
    let r = unsafe { gpu.launch::<K>(LaunchConfig::for_kernel::<K>(dim3(blocks, 1, 1)), (sp,)) };
    match r {
        // Refused before it ran (a device that cannot hold the grid at once, such as
        // a shared MPS one): stage 4 computes the same product.
        Err(SimtError::CooperativeRefused { kernel, .. }) if kernel == K::NAME => stage4(),
        r => r,
    }
}

/// How stage 4s ([`MatmulKernel::WarpTiledTail`]) cuts a product: the first
/// `dp_tiles` tiles whole, the last `split_tiles` in `parts` parts along K, part 0
/// the first `cut` K steps and the others sharing the rest evenly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TailPlan {
    pub dp_tiles: u32,
    pub split_tiles: u32,
    pub parts: u32,
    pub cut: u32,
}

/// The tuner's other three-part-rule plans for stage 4s
/// ([`MatmulKernel::WarpTiledTailPlan`]): `(parts, first part in eighths of K)`, the
/// others sharing the rest evenly. The best plans timed on the H200 at 2560^3 and
/// 6144^3 (3 parts, the first half of K) and 8192^3 (8 and 4 equal parts), where the
/// rule's own (3 parts, the first 5/8) was 0.2-0.9% slower (docs/PERFORMANCE.md,
/// session 26).
pub const TAIL_PLANS: [(u32, u32); 3] = [(3, 4), (4, 2), (8, 1)];

/// What one part of a split tile costs besides its K steps, in K steps, in
/// [`tail_plan`]'s model of equal parts: the first stage's load and barrier, the slot
/// written and read back.
const TAIL_OVERHEAD_STEPS: u64 = 4;
/// The fewest K steps a part of a split tile gets.
const TAIL_MIN_PART_STEPS: u64 = 4;
/// The fewest K steps a part gets where [`tail_plan`] splits every tile (fewer tiles
/// than SMs). H200, session 28 (docs/PERFORMANCE.md): parts of 18 steps
/// (768x768x1024, 7 parts) ran 1.18x faster than the heuristic's choice before, parts
/// of 16 (512x512x2048, 16 parts) 1.14x slower than its 64x128 tile with K split.
pub const WHOLE_SPLIT_MIN_STEPS: u64 = 18;
/// The fewest K steps a part gets where the heuristic takes a whole split of two parts
/// ([`whole_split`]; 116 to 131 tiles on 132 SMs: stage 4 alone already gives nearly
/// every SM a block, and a part alone on its SM runs almost twice as fast as one of a
/// pair). [`tail_plan`] itself keeps such plans, for the tuner and explicit requests.
/// H200, session 28, the tuner on mid shapes: two parts of 32 steps (1024x2048x512,
/// 1408x1408x512) 1.09-1.10x slower than stage 4; of 64 level (1024x2048x1024 1%
/// slower than stage 4, 1408x1408x1024 the tuner's choice); of 128 (1024x2048x2048,
/// 1408x1408x2048) the tuner's choice. Session 30 (`fp32_trial`): 1300x1400 and
/// 1700x1100 (121 and 126 tiles) with parts of 81 and 125 steps (K = 1300, 2000)
/// 1.03-1.06x faster than stage 4, of 44 and 56 steps 0.4-2.6% faster, of 31 and 19
/// 0.7-6.6% slower. The break-even depends on the shape (64 steps lost 1% on
/// 1024x2048x1024 in session 28): 72 keeps both sessions' losses out (the limit was
/// 128).
pub const WHOLE_SPLIT_MIN_STEPS_TWO: u64 = 72;

/// Stage 4s's plan for `tiles` 128x128 tiles of `ksteps` K steps (of 8) on `sms` SMs
/// of two blocks each, or `None` where stage 4 runs instead. With `W` whole waves of
/// `slots = 2·sms` tiles and `t` tiles left over:
/// * no plan where `t` is 0;
/// * less than one wave (`W = 0`) but at least a tile per SM: none (2048^3, 256 tiles
///   on 264 slots, runs stage 4);
/// * fewer tiles than SMs: **every tile** in `q` equal parts, `q` the most that one
///   wave holds (`q·tiles <= slots`, at most [`TAIL_MAX_PARTS`]), where that is at
///   least 2, fills at least 7/8 of the slots and gives each part at least
///   [`WHOLE_SPLIT_MIN_STEPS`] K steps; otherwise none. On 132 SMs 1024x1024x2048 is
///   64 tiles in 4 parts of 64 steps; 1536x1024x1024 (96 tiles in 2 parts: 192
///   blocks, some SMs with two and most with one) has none;
/// * `t` above `sms` (some SM would run two of the last tiles) and at most 90% of the
///   slots: **three parts**, the first `5/8` of the K steps and two of `3/16`. The
///   first parts take the slots as the whole waves' blocks end, and the short ones
///   fill what is left;
/// * `t` at most `sms` (each SM would run one at most, about twice as fast as a pair):
///   `q` equal parts, `q` from 2 to [`TAIL_MAX_PARTS`] while the `q·t` parts fit one
///   wave, the cheapest in a model that counts a part's K steps plus
///   [`TAIL_OVERHEAD_STEPS`], halved where `q·t <= sms` (each part alone on its SM),
///   kept only where that is at most 90% of stage 4's lone last tiles (`ksteps` plus
///   the overhead, alone on their SMs);
/// * every part at least [`TAIL_MIN_PART_STEPS`] K steps.
///
/// [`TAIL_MAX_PARTS`]: kernels::matmul_warptiled_tail::TAIL_MAX_PARTS
pub fn tail_plan(tiles: u64, ksteps: u32, sms: u32) -> Option<TailPlan> {
    use kernels::matmul_warptiled_tail::TAIL_MAX_PARTS;
    let (sms, n, o) = (sms.max(1) as u64, ksteps as u64, TAIL_OVERHEAD_STEPS);
    let slots = 2 * sms;
    let t = tiles % slots;
    if t == 0 || tiles >= 1 << 31 {
        return None;
    }
    if tiles < slots {
        if tiles >= sms {
            return None;
        }
        let q = (slots / tiles).min(TAIL_MAX_PARTS as u64);
        if q < 2 || 8 * q * tiles < 7 * slots || n / q < WHOLE_SPLIT_MIN_STEPS {
            return None;
        }
        return parts_fit(n, n / q, q).then_some(TailPlan {
            dp_tiles: 0,
            split_tiles: tiles as u32,
            parts: q as u32,
            cut: (n / q) as u32,
        });
    }
    let (parts, cut) = if t > sms {
        if 10 * t > 9 * slots {
            return None;
        }
        (3, (5 * n).div_ceil(8))
    } else {
        // Costs in half steps (a step of a block alone on its SM is one).
        let (q, cost) = (2..=TAIL_MAX_PARTS as u64)
            .take_while(|q| q * t <= slots)
            .map(|q| {
                let cost = n / q + o;
                (q, if q * t <= sms { cost } else { 2 * cost })
            })
            .min_by_key(|&(_, cost)| cost)?;
        if 10 * cost > 9 * (n + o) {
            return None;
        }
        (q, n / q)
    };
    parts_fit(n, cut, parts).then_some(TailPlan {
        dp_tiles: (tiles - t) as u32,
        split_tiles: t as u32,
        parts: parts as u32,
        cut: cut as u32,
    })
}

/// Whether `parts` parts of `n` K steps, the first `cut` and the others sharing the
/// rest evenly, are 2 to [`TAIL_MAX_PARTS`] parts of at least [`TAIL_MIN_PART_STEPS`]
/// K steps each.
///
/// [`TAIL_MAX_PARTS`]: kernels::matmul_warptiled_tail::TAIL_MAX_PARTS
fn parts_fit(n: u64, cut: u64, parts: u64) -> bool {
    use kernels::matmul_warptiled_tail::TAIL_MAX_PARTS;
    (2..=TAIL_MAX_PARTS as u64).contains(&parts)
        && cut <= n
        && cut.min((n - cut) / (parts - 1)) >= TAIL_MIN_PART_STEPS
}

/// [`tail_plan`], its three-part cut replaced by `cut = (parts, first part in eighths
/// of K)` where given ([`TAIL_PLANS`]); where the rule splits into equal parts, or the
/// replacement would give a part fewer than [`TAIL_MIN_PART_STEPS`] K steps, the
/// rule's plan.
pub fn tail_plan_with(
    tiles: u64,
    ksteps: u32,
    sms: u32,
    cut: Option<(u32, u32)>,
) -> Option<TailPlan> {
    let plan = tail_plan(tiles, ksteps, sms)?;
    let Some((parts, eighths)) = cut else {
        return Some(plan);
    };
    let n = ksteps as u64;
    let first = (eighths as u64 * n).div_ceil(8);
    let fits = parts_fit(n, first, parts as u64);
    // The three-part rule applies where more tiles are left than SMs.
    Some(match plan.split_tiles > sms.max(1) && fits {
        true => TailPlan {
            parts,
            cut: first as u32,
            ..plan
        },
        false => plan,
    })
}

/// The most parts [`wide_tail_plan`] cuts a tile into.
pub const WIDE_TAIL_MAX_PARTS: u64 = 8;
/// The fewest K steps a part gets where [`wide_tail_plan`] splits every tile (fewer
/// tiles than SMs): the shortest measured (H200, session 32: 1024^3 in 4 parts of 32
/// steps, 0.9-1.4% faster than the `cp.async` 64x64 tile of two K slices).
pub const WIDE_WHOLE_MIN_STEPS: u64 = 32;
/// Slots of stage 4ws's workspace (256x128 floats each, written by a part and read
/// back by the reduce: 256 KiB of traffic) whose cost [`wide_tail_plan`] counts as one
/// K step of the whole device: at about 3.5 TB/s a slot's traffic takes 75 ns, and a K
/// step of one 256x128 block on every SM took about 1.3 us on the H200 (4096^3).
const WIDE_TAIL_SLOTS_PER_STEP: u64 = 20;

/// Stage 4ws's plan for `tiles` 256x128 tiles of `ksteps` K steps (of 8) on `sms` SMs
/// of one block each, or `None` where stage 4w runs instead. With `W >= 1` whole
/// waves and `t` tiles left (`0 < t < sms`), `i = sms - t` SMs would idle through the
/// last wave. The plan keeps every last tile's first `cut` K steps whole (part 0, one
/// per SM) and cuts the rest into `parts - 1` equal parts that the idle SMs run, `k =
/// ceil((parts - 1)·t / i)` of them one after another, in about part 0's time: the
/// least `cut` with `k·(part + o) <= cut + o`, `o` being [`TAIL_OVERHEAD_STEPS`] per
/// part. The blocks go out in order (part 0 of every split tile first), so part 0s
/// take the SMs as the whole waves end and the later parts fill the rest, as in stage
/// 4s. Of `parts` = 2 to [`WIDE_TAIL_MAX_PARTS`], the cheapest in the model `cut + o +
/// parts·t / WIDE_TAIL_SLOTS_PER_STEP` (the workspace's traffic), kept where that is
/// at most 95% of an unsplit last wave (`ksteps + o`) and every part has at least
/// [`TAIL_MIN_PART_STEPS`] K steps. On 132 SMs: 4096^3 (512 tiles, 116 left) two parts
/// of 459 and 53 K steps; 8192^3 (2048 tiles, 68 left) 7 parts, the first 563 of 1024
/// K steps.
///
/// With fewer tiles than SMs, **every tile** in `q` equal parts, `q = sms / tiles` (at
/// most [`WIDE_TAIL_MAX_PARTS`]), where `q >= 2`, the parts fill at least 7/8 of the
/// SMs and each has at least [`WIDE_WHOLE_MIN_STEPS`] K steps: 1024^3 is 32 tiles in 4
/// parts of 32 steps, 2048 x 1024 x 1024 64 in 2 of 64; not 1024 x 1024 x 512 (parts
/// of 16 steps).
pub fn wide_tail_plan(tiles: u64, ksteps: u32, sms: u32) -> Option<TailPlan> {
    let (sms, n, o) = (sms.max(1) as u64, ksteps as u64, TAIL_OVERHEAD_STEPS);
    if tiles > 0 && tiles < sms {
        let q = (sms / tiles).min(WIDE_TAIL_MAX_PARTS);
        let fills = 8 * q * tiles >= 7 * sms;
        return (q >= 2 && fills && n / q >= WIDE_WHOLE_MIN_STEPS && parts_fit(n, n / q, q))
            .then_some(TailPlan {
                dp_tiles: 0,
                split_tiles: tiles as u32,
                parts: q as u32,
                cut: (n / q) as u32,
            });
    }
    let t = tiles % sms;
    if t == 0 || tiles < sms || tiles >= 1 << 31 {
        return None;
    }
    let idle = sms - t;
    let (parts, cut, cost) = (2..=WIDE_TAIL_MAX_PARTS)
        .filter_map(|q| {
            // k later parts per idle SM; part 0 lasts as long as k of them.
            let k = ((q - 1) * t).div_ceil(idle);
            let cut = (k * n + (q - 1) * o * (k - 1)).div_ceil(k + q - 1).min(n);
            parts_fit(n, cut, q).then_some((q, cut, cut + o + q * t / WIDE_TAIL_SLOTS_PER_STEP))
        })
        .min_by_key(|&(_, _, cost)| cost)?;
    (20 * cost <= 19 * (n + o)).then_some(TailPlan {
        dp_tiles: (tiles - t) as u32,
        split_tiles: t as u32,
        parts: parts as u32,
        cut: cut as u32,
    })
}

/// Stage 4ws's plan for a product on this device ([`wide_tail_plan`] over stage 4w's
/// 256x128 tiles, one block per SM).
pub fn wide_tail_split(gpu: &Gpu, s: Shape) -> Option<TailPlan> {
    let tiles = s.m.div_ceil(MM_WIDE_BM) as u64 * s.n.div_ceil(MM_WIDE_BN) as u64;
    wide_tail_plan(tiles, s.k.div_ceil(MM_BK), gpu.props().sms)
}

/// Stage 4s: stage 4 with the tiles of its partial last wave (or, with fewer tiles
/// than SMs, every tile) split along K ([`MatmulKernel::WarpTiledTail`]; `cut` as
/// [`tail_plan_with`]'s), then the split tiles' parts added.
fn warptiled_tail(
    gpu: &Gpu,
    grid: simt::Dim3,
    p: MatmulParams,
    cut: Option<(u32, u32)>,
) -> Result<()> {
    use matmul_warptiled_tail::{
        matmul_relu_warptiled_tail, matmul_tail_reduce, TAIL_REDUCE_BLOCKS,
    };
    let tiles = grid.x as u64 * grid.y as u64;
    let plan = tail_plan_with(tiles, p.a.cols.div_ceil(MM_BK), gpu.props().sms, cut);
    // SAFETY: the plan is `tail_plan_with`'s for stage 4's 128x128 tiles of this grid;
    // the three kernels are stage 4s's product, its reduce (TAIL_REDUCE_BLOCKS blocks
    // per split tile, slots of 128x128) and stage 4 itself.
    unsafe {
        tail_launch::<
            matmul_relu_warptiled_tail,
            matmul_tail_reduce,
            matmul_warptiled::matmul_relu_warptiled,
        >(gpu, grid, p, plan, MM_BM, TAIL_REDUCE_BLOCKS)
    }
}

/// Stage 4ws: stage 4w with the tiles of its partial last wave split along K
/// ([`MatmulKernel::WarpTiledWideTail`]), then the split tiles' parts added.
fn warptiled_wide_tail(gpu: &Gpu, grid: simt::Dim3, p: MatmulParams) -> Result<()> {
    use matmul_warptiled_wide_tail::{
        matmul_relu_warptiled_wide_tail, matmul_wide_tail_reduce, WIDE_TAIL_REDUCE_BLOCKS,
    };
    let tiles = grid.x as u64 * grid.y as u64;
    let plan = wide_tail_plan(tiles, p.a.cols.div_ceil(MM_BK), gpu.props().sms);
    // SAFETY: the plan is `wide_tail_plan`'s for stage 4w's 256x128 tiles of this grid
    // (at most WIDE_TAIL_MAX_PARTS <= TAIL_MAX_PARTS parts); the three kernels are stage
    // 4ws's product, its reduce (WIDE_TAIL_REDUCE_BLOCKS blocks per split tile, slots
    // of 256x128) and stage 4w itself.
    unsafe {
        tail_launch::<
            matmul_relu_warptiled_wide_tail,
            matmul_wide_tail_reduce,
            matmul_warptiled_wide::matmul_relu_warptiled_wide,
        >(gpu, grid, p, plan, MM_WIDE_BM, WIDE_TAIL_REDUCE_BLOCKS)
    }
}

/// The launches of a tail-split product (stages 4s and 4ws): product `K` over the
/// plan's segments, one block each, then `R`, `reduce_blocks` blocks per split tile,
/// adding each split tile's parts into C; where there is no plan (or it would pass the
/// 32-bit and grid limits below), the whole-tile kernel `W` over `grid`.
///
/// # Safety
/// `p`'s views were checked against their buffers on this Gpu and each other (C apart
/// from A and B, k <= 2^31, every view under 2^32 elements: `matmul`'s checks); `grid`
/// covers C with `W`'s tiles of `rows x 128`; `plan` is [`tail_plan`]'s (or
/// [`tail_plan_with`]'s, [`wide_tail_plan`]'s) for those tiles and K steps (2 to
/// `TAIL_MAX_PARTS` parts of at least `TAIL_MIN_PART_STEPS` K steps); `K` and `R` are
/// the tail kernels of that tile, whose contracts take slots of `rows x 128` floats and
/// `reduce_blocks` reduce blocks per split tile.
unsafe fn tail_launch<K, R, W>(
    gpu: &Gpu,
    grid: simt::Dim3,
    p: MatmulParams,
    plan: Option<TailPlan>,
    rows: u32,
    reduce_blocks: u32,
) -> Result<()>
where
    K: Kernel<Args = (MatmulParamsTail4,)>,
    R: Kernel<Args = (MatmulParamsTail4,)>,
    W: Kernel<Args = (MatmulParams,)>,
{
    // A slot's rows are addressed as C's, 128 floats long, in 32 bits: row r (up to
    // m + rows in a ragged last tile) times 128 plus C's column (up to n + 128); one
    // block per segment in a 1-D grid.
    let plan = plan.filter(|pl| {
        let slot_index =
            (p.c.rows as u64 + rows as u64) * (MM_BN as u64) + (p.c.cols as u64 + MM_BN as u64);
        slot_index < 1 << 32
            && (pl.dp_tiles as u64 + pl.parts as u64 * pl.split_tiles as u64) < 1 << 31
            && (pl.split_tiles as u64 * reduce_blocks as u64) < 1 << 31
    });
    let Some(plan) = plan else {
        // SAFETY: the caller's contract: checked views, the grid covers C with W's tiles.
        return unsafe { launch_checked::<W>(gpu, grid, p) };
    };
    let slots = plan.parts as usize * plan.split_tiles as usize;
    let partials = gpu.scratch_f32(super::SCRATCH_TAIL, slots * (rows * MM_BN) as usize)?;
    let sp = MatmulParamsTail4 {
        mm: p,
        dp_tiles: plan.dp_tiles,
        split_tiles: plan.split_tiles,
        parts: plan.parts,
        cut: plan.cut,
        partials: partials.ptr() as *mut f32,
    };
    let blocks = plan.dp_tiles + plan.parts * plan.split_tiles;
    // SAFETY: `p` as the caller's contract says, (m + rows) · 128 + n + 128 < 2^32
    // (above); dp_tiles + split_tiles are the grid's tiles and the parts are as K's
    // contract asks (the caller's plan); the workspace holds parts · split_tiles slots
    // of rows x 128 floats, this Gpu's alone while its queue runs the two launches; one
    // block per segment, fewer than 2^31 (above).
    unsafe { gpu.launch::<K>(LaunchConfig::for_kernel::<K>(dim3(blocks, 1, 1)), (sp,))? };
    // SAFETY: after the product above with the same parameters (queue order), every
    // slot holds its part's sums; C as checked; reduce_blocks blocks per split tile,
    // fewer than 2^31 in all (above).
    unsafe {
        gpu.launch::<R>(
            LaunchConfig::for_kernel::<R>(dim3(plan.split_tiles * reduce_blocks, 1, 1)),
            (sp,),
        )
    }
}

/// K slices of `chunk` elements (a multiple of 8) for `split_k` requested slices:
/// `(chunk, slices)` with `slices <= split_k` and `slices · chunk >= k`.
pub fn k_slices(k: u32, split_k: u32) -> (u32, u32) {
    let chunk = k.div_ceil(split_k.max(1)).div_ceil(MM_BK) * MM_BK;
    (chunk, k.div_ceil(chunk))
}

/// Launches a split-capable kernel over `xy` blocks and the K slices, then (with
/// more than one slice) the reduction kernel that adds them in order into C.
///
/// The slices are added by a second kernel rather than by the last block of each
/// tile to finish: that one-launch version (an arrival counter per tile) measured
/// 1.07-1.10x slower on the H100 at 1000^3 to 64x4096x4096 (docs/PERFORMANCE.md).
fn split_launch<K: Kernel<Args = (MatmulSplitParams,)>>(
    gpu: &Gpu,
    xy: (u32, u32),
    dim: SliceDim,
    mm: MatmulParams,
    split_k: u32,
) -> Result<()> {
    let op = "matmul";
    if !(1..=SPLITK_MAX).contains(&split_k) {
        return Err(SimtError::Unsupported(format!(
            "{op}: split_k = {split_k}: K splits into 1 to {SPLITK_MAX} slices"
        )));
    }
    let (m, n, k) = (mm.c.rows, mm.c.cols, mm.a.cols);
    let (chunk, slices) = k_slices(k, split_k);
    let grid = match dim {
        SliceDim::Y => dim3(xy.0, slices, 1),
        SliceDim::Z => dim3(xy.0, xy.1, slices),
    };
    if slices == 1 {
        let p = MatmulSplitParams {
            mm,
            k_chunk: chunk,
            partials: std::ptr::null_mut(),
        };
        // SAFETY: the views were checked against their buffers on this Gpu and each
        // other; C does not overlap A or B; one slice covers K (chunk >= k, a multiple
        // of 8); the grid covers C with the kernel's block, as its Thread Mapping asks.
        return unsafe { gpu.launch::<K>(LaunchConfig::for_kernel::<K>(grid), (p,)) };
    }
    let total = slices as u64 * m as u64 * n as u64;
    if total > u32::MAX as u64 {
        return Err(SimtError::TooLarge {
            op,
            detail: format!("{slices} K slices of a {m}x{n} product are {total} partial sums, over 2^32; use fewer slices"),
        });
    }
    let partials = gpu.scratch_f32(super::SCRATCH_SPLITK, total as usize)?;
    let p = MatmulSplitParams {
        mm,
        k_chunk: chunk,
        partials: partials.ptr() as *mut f32,
    };
    // SAFETY: as above, and `partials` is this Gpu's scratch of `slices·m·n` floats
    // (< 2^32), used by this call only: the queue orders it after any earlier user of
    // the slot and before the reduction below; slices·chunk >= k > (slices-1)·chunk.
    unsafe { gpu.launch::<K>(LaunchConfig::for_kernel::<K>(grid), (p,))? };
    type Reduce = matmul_tiles::matmul_splitk_reduce;
    let r = SplitReduceParams {
        partials: partials.ptr(),
        splits: slices,
        c: mm.c,
        epilogue: mm.epilogue,
    };
    let threads = (total / slices as u64).div_ceil(4) as u32;
    let cfg = LaunchConfig::new(
        dim3(threads.div_ceil(SPLITK_REDUCE_THREADS), 1, 1),
        dim3(SPLITK_REDUCE_THREADS, 1, 1),
    );
    // SAFETY: the partials hold `slices` slices of m x n sums, all written by the
    // launch before (queued first); C is the checked view; the grid gives each of the
    // ceil(m·n/4) groups a thread.
    unsafe { gpu.launch::<Reduce>(cfg, (r,)) }
}

/// What the tuner and the heuristic see of a product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    /// All three operands start 16-byte aligned with row strides a multiple of 4.
    pub aligned: bool,
}

/// The tuner's key of a product: the device, then `m`, `n` and `k` rounded up to
/// powers of two, whether the operands are aligned, whether stage 4s splits tiles
/// ([`tail_split`]: 3584^3 and 4096^3 share the powers of two, and not the best
/// kernel; on 132 SMs 1000^3, split whole, and 513x1024x600 do too), and whether 64x64
/// tiles cover it whole ([`covers_whole`]: 1000^3 and 1024^3 share them, and not the
/// best kernel either), and which of [`mid_wave`] and [`wide_fits`] apply (1536^2 x
/// 2048 and 2048^3 share the powers of two; the first runs the 64x64 tile 1.29x faster
/// than stage 4w, the second stage 4w).
/// Shapes in one bucket share a choice.
pub fn auto_key(gpu: &Gpu, s: Shape) -> crate::tune::Key {
    crate::tune::Key::new(gpu, "matmul", "f32")
        .dim("m", s.m as usize)
        .dim("n", s.n as usize)
        .dim("k", s.k as usize)
        .flag("aligned", s.aligned)
        .flag("tail_split", tail_split(gpu, s).is_some())
        .flag("tiles64", covers_whole(gpu, s))
        .flag("ragged", is_ragged(s))
        .flag("mid_wave", mid_wave(gpu, s).is_some())
        .flag("wide", wide_fits(gpu, s))
        .flag(
            "wide_tail",
            wide_tail_fits(gpu, s) || wide_whole_split(gpu, s),
        )
}

/// Whether `m` or `n` is not a multiple of 64 (partial 64x64 edge tiles), where
/// [`ragged_cluster`] may apply: 1000x1500 and 1024x1536 share their power-of-two
/// buckets and not their kernels.
fn is_ragged(s: Shape) -> bool {
    !(s.m.is_multiple_of(64) && s.n.is_multiple_of(64))
}

/// Stage 4s's plan for a product on this device ([`tail_plan`] over stage 4's
/// tiles, two blocks per SM), or `None` where stage 4 runs whole.
pub fn tail_split(gpu: &Gpu, s: Shape) -> Option<TailPlan> {
    tail_plan(stage4_tiles(s), s.k.div_ceil(MM_BK), gpu.props().sms)
}

/// Whether the heuristic runs stage 4s with every tile split ([`tail_plan`]'s plan
/// for fewer tiles than SMs): where there is such a plan and the tiles are at least
/// 3/4 inside C (64x4096x4096 would compute half of every tile for nothing).
/// H200, session 28 (docs/PERFORMANCE.md): 1.07-1.40x faster than the heuristic's
/// choice before on 1000^3, 640x640x2048, 768x768x1024 to x4096, 1280x1024x768 and
/// x1024, 1024x1024x2048 to x8192, 2048x1024x2048 and 512x512x8192. Session 30: on the
/// 31 ragged products of its fit and check sets that it and [`WHOLE_SPLIT_MIN_STEPS_TWO`]
/// newly take (tiles 75-92% inside C: 900x1300 from K = 500, 950x950 from 800,
/// 450x1800, 333x2000, 550x750, ...), the fastest of 18 kernels or within 1% on 27,
/// 1-7% behind on 4 (700x900 at K = 900 and 1300, 400x1600 at K = 800 and 1100), and
/// 1.02-1.50x faster than the kernel the heuristic ran before; the limit was 7/8.
pub fn whole_split(gpu: &Gpu, s: Shape) -> bool {
    // 3/4 only where that was measured (both sides at least 256, K at most 2048): 7/8
    // elsewhere, as before (100x4096x4096's tiles are 78% inside C, never timed split).
    let (num, den) = match in_measured_domain(s) {
        true => (3, 4),
        false => (7, 8),
    };
    // A plan with no whole tiles splits every tile; two equal parts start at `cut`.
    inside_tiles(s, num, den)
        && tail_split(gpu, s).is_some_and(|p| {
            p.dp_tiles == 0 && (p.parts > 2 || p.cut as u64 >= WHOLE_SPLIT_MIN_STEPS_TWO)
        })
}

/// The smallest side and the largest K of the products that fitted [`ragged_cluster`]
/// and [`whole_split`]'s 3/4 (H200, session 30: sides 300 to 2500, K 300 to 2000);
/// outside them the rules before session 30 apply.
const MEASURED_MIN_SIDE: u32 = 256;
/// See [`MEASURED_MIN_SIDE`].
const MEASURED_MAX_K: u32 = 2048;

/// Whether a product lies where session 30's rules were measured ([`MEASURED_MIN_SIDE`]).
fn in_measured_domain(s: Shape) -> bool {
    s.m.min(s.n) >= MEASURED_MIN_SIDE && s.k <= MEASURED_MAX_K
}

/// Whether stage 4's 128x128 tiles lie at least `num/den` inside C (64x4096x4096:
/// half).
fn inside_tiles(s: Shape, num: u64, den: u64) -> bool {
    den * s.m as u64 * s.n as u64 >= num * stage4_tiles(s) * (MM_BM * MM_BN) as u64
}

/// Aligned products of at least as many stage-4 tiles as SMs that fill at most one
/// wave of the 64x128 tile (three blocks per SM), inside the measured domain (sides
/// of 256 or more, K = 512 to 2048): the 64x128 tile where its blocks fill 85% of the
/// wave or more and `n` is a multiple of 128 (no half tiles), the 4-stage 64x64 tile
/// of 4 warps otherwise.
///
/// Stage 4 (and 4w) left such products at 0.68-0.99x cuBLAS: 144 of stage 4's tiles
/// on 132 SMs give 12 SMs two blocks, and the product takes a two-block SM's time.
/// Fitted on 33 products of 1024 x 2560 to 2560 x 1280 at K = 512, 1024 and 2048,
/// checked on 30 others (H200, session 31; docs/PERFORMANCE.md): the rule's kernel is
/// the fastest of 7 to 20 or within 3.4% on all but one (1664^2 x 2048: 4.8%), and
/// 1.15-1.36x faster than the heuristic before. The half-tile condition came from the
/// second check (64x128 tiles 1-7% behind at 1792 x 1728 and 2112 x 1472). The 64x128
/// tile with K over a cluster of 2, taken from K = 1024 at first, was within 1.3% of
/// the fastest on 18 of the 24 such products timed, but 13-14% slower on 4 (1600^2,
/// 1088 x 2432 and 1472 x 1728 at K = 1536, 1216 x 2176 at 1280), a pattern not
/// understood: not taken.
fn mid_wave(gpu: &Gpu, s: Shape) -> Option<MatmulKernel> {
    let sms = gpu.props().sms.max(1) as u64;
    let t = &MM_TILES[TILE64X128];
    let wave = t.min_blocks as u64 * sms;
    let blocks = tile_blocks(t, s.m, s.n);
    if !(stage4_tiles(s) >= sms
        && s.aligned
        && !is_ragged(s)
        && in_measured_domain(s)
        && s.k >= 512
        && blocks <= wave)
    {
        return None;
    }
    Some(match 20 * blocks >= 17 * wave && s.n.is_multiple_of(t.bn) {
        true => MatmulKernel::Tile {
            tile: TILE64X128,
            split_k: 1,
        },
        false => MatmulKernel::TileAsync {
            tile: ASYNC64_W4_S4,
            split_k: 1,
        },
    })
}

/// The shortest K at which stage 4w was timed ahead of stage 4 (2048 x 2048 x 512:
/// 0.9% faster; H200, docs/PERFORMANCE.md session 31).
pub const WIDE_MIN_K: u32 = 512;

/// Whether the heuristic runs stage 4w ([`MatmulKernel::WarpTiledWide`]) where it would
/// run stage 4 whole: K of at least [`WIDE_MIN_K`], its 256x128 tiles (one block per
/// SM) cover the rows stage 4's 128x128 tiles (two per SM) cover (`ceil(m/128)` even,
/// so 4w has half as many tiles, in as many waves), and stage 4's last wave has more
/// tiles than SMs.
///
/// Per SM a wave of either covers 256x128 of C, so in the same number of waves the
/// one with the faster K loop wins: stage 4w's has half the barriers and 3/4 of the
/// shared loads per FMA, and ran 0.4-2.5% faster than stage 4 on 46 of 52 products of
/// 1024 x 2560 to 1536 x 8192, K = 512 to 4096, and within 0.2% on 3 (H200, session
/// 31). The three it lost, 1920 x 2048 (2.2-2.4% slower), pad 4w's last row of tiles
/// by 128 rows that stage 4's tiles do not have. Where stage 4's last wave has at most
/// one tile per SM, those SMs run it in about 54% of a two-block wave (ncu, same
/// session), a time 4w's whole tiles cannot match.
pub fn wide_fits(gpu: &Gpu, s: Shape) -> bool {
    let sms = gpu.props().sms.max(1) as u64;
    let tiles = stage4_tiles(s);
    // (no tiles: an empty product)
    let waves = tiles.div_ceil(2 * sms).max(1);
    s.k >= WIDE_MIN_K && wide_rows_fit(s) && tiles > (waves - 1) * 2 * sms + sms
}

/// The shortest K at which the heuristic takes stage 4ws ([`wide_tail_fits`]).
pub const WIDE_TAIL_MIN_K: u32 = 2048;

/// Whether the heuristic runs stage 4ws ([`MatmulKernel::WarpTiledWideTail`]): K of at
/// least [`WIDE_TAIL_MIN_K`], stage 4w's 256x128 tiles cover the rows stage 4's cover
/// (as [`wide_fits`]), and [`wide_tail_plan`] splits their last wave of at least
/// `sms / 8` tiles.
///
/// H200, session 32 (docs/PERFORMANCE.md), against the kernel the heuristic ran before
/// (stage 4s, 4w or 4): 1.004-1.046x faster on 19 of the 20 products it takes in a
/// check set of 31 (K = 512 to 4096), level on one (5120 x 8192 x 2048), and
/// 1.002-1.015x on 3072^3, 4096^3, 6144^3, 7168^3, 8192^3 and 4096^2 x 2048. What it
/// does not take lost: at K = 512 and 1024, 1.2-6.3% slower on all 10 products timed
/// (the parts' fixed costs, one block per SM, are not hidden as under stage 4s's two),
/// and with 12 tiles left (3072 x 1536 x 2048, 8 parts of 32 K steps) 2.8% slower than
/// stage 4s, whose two blocks per SM cut the last wave finer.
pub fn wide_tail_fits(gpu: &Gpu, s: Shape) -> bool {
    let sms = gpu.props().sms.max(1);
    s.k >= WIDE_TAIL_MIN_K
        && wide_rows_fit(s)
        && wide_tail_split(gpu, s).is_some_and(|p| p.dp_tiles > 0 && 8 * p.split_tiles >= sms)
}

/// Whether the heuristic runs stage 4ws with every tile split along K
/// ([`wide_tail_plan`]'s plan for fewer 256x128 tiles than SMs): aligned products that
/// 256x128 tiles cover with no edge tile, K of at least 1024, where there is such a
/// plan. The heuristic asks only where stage 4's 128x128 tiles are fewer than the SMs
/// (with as many or more, the rules above it come first). H200, session 32 (docs/PERFORMANCE.md), against the kernel `Auto` ran before
/// (the 64x64 tile of two K slices, stage 4s split whole, the 64x128 tile): 0.9-1.4%
/// faster at 1024^3, 0.6-1.5% on 1024^2 x 2048 to x 8192, 2048 x 1024 x 1024, 1024 x
/// 2048 x 2048 and 512 x 2048 x 4096.
pub fn wide_whole_split(gpu: &Gpu, s: Shape) -> bool {
    s.aligned
        && s.m.is_multiple_of(MM_WIDE_BM)
        && s.n.is_multiple_of(MM_WIDE_BN)
        && s.k >= 1024
        && wide_tail_split(gpu, s).is_some_and(|p| p.dp_tiles == 0)
}

/// Whether stage 4w's 256x128 tiles cover the rows stage 4's 128x128 tiles cover
/// (`ceil(m/128)` even): half as many tiles, no extra padding.
fn wide_rows_fit(s: Shape) -> bool {
    s.m.div_ceil(MM_BM).is_multiple_of(MM_WIDE_BM / MM_BM)
}

/// Stage 4's (and 4k's and 4s's) 128x128 tiles over the product.
fn stage4_tiles(s: Shape) -> u64 {
    s.m.div_ceil(MM_BM) as u64 * s.n.div_ceil(MM_BN) as u64
}

/// Blocks of a tile over an `m x n` product.
fn tile_blocks(t: &MmTile, m: u32, n: u32) -> u64 {
    m.div_ceil(t.bm) as u64 * n.div_ceil(t.bn) as u64
}

/// What the tuner times for a shape: stage 4, stage 4w where its tiles fill at least 7/8
/// of one wave, stage 4ws where [`wide_tail_plan`] splits its tiles (its last wave, or
/// every tile), stage 4s where it splits stage 4's last
/// wave ([`tail_split`]) with the rule's plan and the other plans of [`TAIL_PLANS`]
/// where they apply, stage 4k where its stream-K tail applies on a GPU (two resident blocks per SM, as its launch bounds ask; the emulator holds
/// one block per worker, so there it may run stage 4 instead), every tile of both
/// tile kernels with the K splits that could fill the device (up to 8 blocks per SM,
/// at least 128 of K per slice), on Hopper the cluster split-K kernels that fit the same bound (at
/// least 64 of K per slice), and the GEMV path where a side is 1.
pub fn auto_candidates(gpu: &Gpu, s: Shape) -> Vec<MatmulKernel> {
    let sms = gpu.props().sms.max(1) as u64;
    let mut v = vec![MatmulKernel::WarpTiled];
    // Stage 4w where the heuristic takes it or its tiles fill 7/8 of one wave.
    let wide = s.m.div_ceil(MM_WIDE_BM) as u64 * s.n.div_ceil(MM_WIDE_BN) as u64;
    if wide_fits(gpu, s) || 8 * wide >= 7 * sms {
        v.push(MatmulKernel::WarpTiledWide);
    }
    if wide_tail_split(gpu, s).is_some() {
        v.push(MatmulKernel::WarpTiledWideTail);
    }
    if let Some(plan) = tail_split(gpu, s) {
        v.push(MatmulKernel::WarpTiledTail);
        // The other three-part plans, where they apply and differ from the rule's.
        for (i, &cut) in TAIL_PLANS.iter().enumerate() {
            let other = tail_plan_with(stage4_tiles(s), s.k.div_ceil(MM_BK), sms as u32, Some(cut));
            if other != Some(plan) {
                v.push(MatmulKernel::WarpTiledTailPlan { plan: i });
            }
        }
    }
    if streamk_plan(stage4_tiles(s), s.k.div_ceil(MM_BK), 2 * sms as u32).is_some() {
        v.push(MatmulKernel::WarpTiledStreamK);
    }
    let splits = |t: &MmTile| {
        let blocks = tile_blocks(t, s.m, s.n);
        [1u32, 2, 4, 8, 16, 32]
            .into_iter()
            .filter(move |&sk| sk == 1 || (blocks * sk as u64 <= 8 * sms && s.k / sk >= 128))
    };
    for (tile, t) in MM_TILES.iter().enumerate() {
        v.extend(splits(t).map(|split_k| MatmulKernel::Tile { tile, split_k }));
    }
    for (tile, t) in MM_ASYNC_TILES.iter().enumerate() {
        v.extend(splits(t).map(|split_k| MatmulKernel::TileAsync { tile, split_k }));
    }
    if super::softmax::has_clusters(gpu) {
        for (config, c) in MM_CLUSTER_CONFIGS.iter().enumerate() {
            let blocks = tile_blocks(&c.tile(), s.m, s.n) * c.cluster as u64;
            if blocks <= 8 * sms && s.k / c.cluster >= 64 {
                v.push(MatmulKernel::TileCluster { config });
            }
        }
    }
    let gemv_splits = |rows_blocks: u64| {
        [1u32, 2, 4, 8, 16, 32]
            .into_iter()
            .filter(move |&sk| sk == 1 || (rows_blocks * sk as u64 <= 16 * sms && s.k / sk >= 64))
    };
    if s.m == 1 {
        v.extend(
            gemv_splits(s.n.div_ceil(GEMV_ROW_COLS) as u64)
                .map(|split_k| MatmulKernel::GemvRow { split_k }),
        );
    }
    if s.n == 1 {
        v.extend(
            gemv_splits(s.m.div_ceil(GEMV_COL_ROWS) as u64)
                .map(|split_k| MatmulKernel::GemvCol { split_k }),
        );
    }
    v
}

/// The choice without tuning (CI, tests, the emulator, shapes never tuned): the same
/// on every run for a shape and device. Fitted to the H100 tuning runs of
/// 2026-11-23 (docs/PERFORMANCE.md, docs/runs/2026-11-23-h100-tune.json):
///
/// * `m = 1` or `n = 1`: the GEMV path, K split until the grid holds about 4 blocks
///   per SM (each slice at least 256 of K);
/// * where stage 4's 128x128 tiles give every SM a block: on aligned products that
///   fill at most one wave of the 64x128 tile (sides of 256 or more, K = 512 to
///   2048), that tile or the 4-stage 64x64 tile ([`mid_wave`]; H200, session 31:
///   1.15-1.36x faster than stage 4 or 4w on 60 products); else stage 4ws where K is
///   at least 2048 and stage 4w's last wave leaves SMs idle for its short parts
///   ([`wide_tail_fits`]; H200, session 32: 4096^3 0.9% and 8192^3 1.5% faster than
///   stage 4s, 1.004-1.046x the kernel before on 19 of 20 other products, one level);
///   else stage 4s where that
///   splits the tiles of its partial last wave ([`tail_split`]; H200, 2026-11-26:
///   2560^3, 3072^3, 4096^3, 6144^3 and 8192^3 1-16% faster than stage 4, 7168^3
///   level, and faster than stage 4k everywhere it was timed); else stage 4w where
///   its tiles take the same waves ([`wide_fits`]; session 31: 2048^3 1.5-2.1% faster
///   than stage 4); else stage 4;
/// * small products (at most 512 x 512 outputs and K at most 1024), the 4-stage
///   `cp.async` tiles, as the H100 tuning of 2026-11-24 chose (commit 83f0783): on
///   Hopper (K at least 256) 16x64 with K over a cluster of 4 while that is at most
///   2 blocks per SM (256^3); 16x64 unsplit when that is 1 to 2 blocks per SM
///   (512^3); on Hopper 32x64 over a cluster of 4 while that is at most 2 blocks per
///   SM (300x200x700); otherwise 32x64 with K split only while the grid holds fewer
///   blocks than SMs (slices of at least 256);
/// * aligned products that 256x128 tiles cover with no edge tile, fewer of them than
///   SMs, K of at least 1024, where their equal parts of 32 K steps or more fill 7/8 of
///   the SMs: stage 4ws with every tile split ([`wide_whole_split`]; H200, session
///   32: 1024^3 0.9-1.4% faster than the rule below, 1024^2 x 2048 to x 8192 and four
///   others 0.6-1.5%);
/// * aligned products that 64x64 tiles cover with no edge tile in one nearly full
///   wave, K at most 1024: the 3-stage `cp.async` 64x64 tile of 4 warps, unsplit
///   ([`covers_whole`]; H200, 2026-11-25: 1024^3), as two K slices of 4 warps where
///   K is at least 512 (H200, 2026-11-26);
/// * products of fewer 128x128 tiles than SMs, at least 3/4 inside C (7/8 where a
///   side is under 256 or K past 2048), that [`tail_plan`] splits (enough K for every
///   tile in parts that fill the slots; two parts only from
///   [`WHOLE_SPLIT_MIN_STEPS_TWO`] K steps each): stage 4s with every tile split along
///   K ([`whole_split`]); where it does not and the tiles are at least 7/8 of the SMs
///   and 7/8 inside C, stage 4 (H200, session 28: 1024x2048x512 and 1408x1408x512
///   1.09-1.10x faster than the two-part split);
/// * on Hopper, products with partial 64x64 edge tiles, sides of 256 or more and K up
///   to 2048: the 64x128 (or 128x64) tile with K over a cluster of 4, or the 64x128
///   tile over a cluster of 2, where the clusters fit one wave and fill at least half
///   of it ([`ragged_cluster`]; H200, session 30: on 60 ragged products outside the
///   fitted set, with the [`whole_split`] limit of 3/4, 1.11x faster in geometric
///   mean);
/// * on Hopper, where the 64x128 tile's blocks with K over a cluster of 2 fill 7/8 to
///   all of one wave (3 blocks per SM), K at least 1024: that (H200, session 28:
///   1024x1536, 1536x1024 and 2048x768 with K = 1024 to 4096, 1.02-1.22x faster than
///   K split in 4);
/// * K below 1024: by the count of 64x64 tiles, the 4-stage 64x64 tile unsplit, the
///   4-stage 32x64 tile with K over a cluster of 2, or stage 4 ([`short_k`]; H200,
///   session 29: of 17 mid shapes at K = 256, 512 and 768, the 24 products it takes
///   from the 64x128 tile ran 1.01-2.03x faster);
/// * the rest: the 64x128 tile, K split until the grid holds about 8 blocks per SM
///   (slices of at least 192: 64x4096x4096 tuned to 16).
pub fn auto_heuristic(gpu: &Gpu, s: Shape) -> MatmulKernel {
    let sms = gpu.props().sms.max(1) as u64;
    let split_for = |blocks: u64, per_sm: u64, min_slice: u32| {
        let mut sk = 1u32;
        while sk < SPLITK_MAX
            && blocks * (2 * sk as u64) <= per_sm * sms
            && s.k / (2 * sk) >= min_slice
        {
            sk *= 2;
        }
        sk
    };
    if s.m == 1 {
        return MatmulKernel::GemvRow {
            split_k: split_for(s.n.div_ceil(GEMV_ROW_COLS) as u64, 4, 256),
        };
    }
    if s.n == 1 {
        return MatmulKernel::GemvCol {
            split_k: split_for(s.m.div_ceil(GEMV_COL_ROWS) as u64, 4, 256),
        };
    }
    if stage4_tiles(s) >= sms {
        if let Some(k) = mid_wave(gpu, s) {
            return k;
        }
        if wide_tail_fits(gpu, s) {
            return MatmulKernel::WarpTiledWideTail;
        }
        if tail_split(gpu, s).is_some() {
            return MatmulKernel::WarpTiledTail;
        }
        if wide_fits(gpu, s) {
            return MatmulKernel::WarpTiledWide;
        }
        return MatmulKernel::WarpTiled;
    }
    // The cluster split-K kernel of `kloop` over `blocks` blocks, on Hopper.
    let cluster = |kloop: MmLoop, blocks: u32| {
        MM_CLUSTER_CONFIGS
            .iter()
            .position(|c| c.kloop == kloop && c.cluster == blocks)
            .filter(|_| super::softmax::has_clusters(gpu))
    };
    let find = |tiles: &[MmTile], bm: u32, bn: u32, stages: u32| {
        tiles
            .iter()
            .position(|t| t.bm == bm && t.bn == bn && t.stages == stages)
            .unwrap_or(0)
    };
    if s.m as u64 * s.n as u64 <= 512 * 512 && s.k <= 1024 {
        let tile = find(&MM_ASYNC_TILES, 32, 64, 4);
        // The 4-stage tiles, 16x64 first: K over a cluster of 4 (Hopper, K of at
        // least 256) while that is at most 2 blocks per SM; 16x64 unsplit when it
        // alone gives every SM one or two blocks; 32x64 over a cluster of 4.
        let cluster4 = |t: usize| cluster(MmLoop::Async(t), 4).filter(|_| s.k >= 256);
        let t16 = find(&MM_ASYNC_TILES, 16, 64, 4);
        let blocks16 = tile_blocks(&MM_ASYNC_TILES[t16], s.m, s.n);
        let blocks32 = tile_blocks(&MM_ASYNC_TILES[tile], s.m, s.n);
        if let Some(config) = cluster4(t16).filter(|_| blocks16 * 4 <= 2 * sms) {
            return MatmulKernel::TileCluster { config };
        }
        if (sms..=2 * sms).contains(&blocks16) {
            return MatmulKernel::TileAsync {
                tile: t16,
                split_k: 1,
            };
        }
        if let Some(config) = cluster4(tile).filter(|_| blocks32 * 4 <= 2 * sms) {
            return MatmulKernel::TileCluster { config };
        }
        return MatmulKernel::TileAsync {
            tile,
            split_k: split_for(tile_blocks(&MM_ASYNC_TILES[tile], s.m, s.n), 1, 256),
        };
    }
    if wide_whole_split(gpu, s) {
        return MatmulKernel::WarpTiledWideTail;
    }
    if covers_whole(gpu, s) {
        // Two K slices of 4 warps from K = 512 on; below that their closing exchange
        // costs more than the extra warps give (docs/PERFORMANCE.md, session 27).
        return MatmulKernel::TileAsync {
            tile: if s.k >= 512 { ASYNC64_KS2 } else { ASYNC64_W4 },
            split_k: 1,
        };
    }
    if whole_split(gpu, s) {
        return MatmulKernel::WarpTiledTail;
    }
    if 8 * stage4_tiles(s) >= 7 * sms && inside_tiles(s, 7, 8) {
        return MatmulKernel::WarpTiled;
    }
    if let Some(kernel) = ragged_cluster(gpu, s, cluster) {
        return kernel;
    }
    if s.k < 1024 {
        if let Some(kernel) = short_k(gpu, s, cluster(MmLoop::Async(ASYNC32_S4), 2)) {
            return kernel;
        }
    }
    let tile = TILE64X128;
    // On Hopper, K over a cluster of 2 where that fills 7/8 to all of one wave.
    let pairs = 2 * tile_blocks(&MM_TILES[tile], s.m, s.n);
    let slots = MM_TILES[tile].min_blocks as u64 * sms;
    if let Some(config) = cluster(MmLoop::Tile(tile), 2)
        .filter(|_| s.k >= 1024 && pairs <= slots && 8 * pairs >= 7 * slots)
    {
        return MatmulKernel::TileCluster { config };
    }
    MatmulKernel::Tile {
        tile,
        split_k: split_for(tile_blocks(&MM_TILES[tile], s.m, s.n), 8, 192),
    }
}

/// The heuristic's rule for products whose 64x64 tiles are partial at an edge (`m` or
/// `n` not a multiple of 64), both sides at least 256 and K at most 2048 (the measured
/// domain), where the rules before it left them, on Hopper: the
/// 64x128 tile (or the 128x64 tile, where its tiles pad C less) with K over a
/// cluster of 4, where those clusters fit one wave of the device ([`cluster_wave`])
/// and fill at least half of it (9/16 with aligned operands and K of 1024 or more);
/// otherwise the 64x128 tile with K over a cluster of 2 on the same terms. Every
/// slice at least 64 of K.
///
/// Partial tiles cost the 4-stage `cp.async` tiles of [`short_k`] most (their edge
/// loads are predicated element by element), and a split through clusters adds its
/// slices in distributed shared memory, with no second launch. On aligned products
/// the rules after it stay faster: of 21 aligned products (17 shapes at K = 256-768)
/// this rule would move, 12 ran 1.02-1.39x slower on the clusters (512x1024:
/// 1.30-1.39x), 6 within 1%, 3 faster (384x1536x256 1.08x, 768x768x256 1.05x). Fitted on 84 ragged
/// products (14 shapes x K = 300-2000) and checked on 60 others (15 shapes x K =
/// 400-1600; H200, session 30, docs/PERFORMANCE.md): with this rule and the
/// [`whole_split`] limit of 3/4, `Auto` runs the fastest of 18 kernels or one within
/// 7% on all 60 (geometric mean 1.00x the fastest, against 1.12x before). Ms:
///
/// | shape | blocks / wave | this rule | before |
/// |---|---|---|---|
/// | 550x750x400 | 216 / 368 (clusters of 4) | 0.0208 | 0.0231 (4-stage 64x64) |
/// | 700x900x500 | 352 / 368 (4) | 0.0274 | 0.0342 (4-stage 32x64 over 2) |
/// | 1200x1200x700 | 380 / 396 (2) | 0.0628 | 0.0753 (stage 4) |
/// | 777x999x1100 | 208 / 396 (2) | 0.0762 | 0.0866 (64x128, K split in 4) |
/// | 1050x1250x800 | 340 / 396 (2) | 0.0787 | 0.1204 (64x128, K split in 4) |
fn ragged_cluster(
    gpu: &Gpu,
    s: Shape,
    cluster: impl Fn(MmLoop, u32) -> Option<usize>,
) -> Option<MatmulKernel> {
    // Only where it was measured: both sides at least 256 and K at most 2048 (decode-like
    // shapes such as 32x8192x8192 keep the rules after it).
    if !is_ragged(s) || !in_measured_domain(s) {
        return None;
    }
    let padded = |t: &MmTile| {
        s.m.div_ceil(t.bm) as u64 * t.bm as u64 * s.n.div_ceil(t.bn) as u64 * t.bn as u64
    };
    let four = match padded(&MM_TILES[TILE128X64]) < padded(&MM_TILES[TILE64X128]) {
        true => TILE128X64,
        false => TILE64X128,
    };
    // Aligned operands with K of 1024 or more: 9/16. 800x1000 at K = 1300 and 2000 ran
    // the 64x128 tile with K split in 4 and 8 1.07-1.17x faster than over clusters of
    // 2 filling 53% of the wave (unaligned, 777x999 at K = 1100 and 1600, 1.05-1.13x
    // slower); 640x700x1100 over clusters of 4 filling 60% 1.11x faster than K split.
    let (num, den) = match s.aligned && s.k >= 1024 {
        true => (9, 16),
        false => (1, 2),
    };
    [(four, 4u32), (TILE64X128, 2)]
        .into_iter()
        .find_map(|(tile, c)| {
            let config = cluster(MmLoop::Tile(tile), c)?;
            let blocks = tile_blocks(&MM_TILES[tile], s.m, s.n) * c as u64;
            let wave = cluster_wave(gpu, config) as u64;
            (blocks <= wave && den * blocks >= num * wave && s.k / c >= 64).then_some(config)
        })
        .map(|config| MatmulKernel::TileCluster { config })
}

/// The blocks of cluster config `config` that one wave of the device holds: on a GPU
/// the driver's count ([`cluster_resident_blocks`]; on the H200, 396 of 396 slots for
/// the 64x128 tile over clusters of 2, 368 over clusters of 4, as clusters stay inside
/// a GPC); on the emulator, which has no GPCs, its SMs times the tile's blocks per SM,
/// rounded down to whole clusters. 0 where the query fails (no rule then applies).
pub fn cluster_wave(gpu: &Gpu, config: usize) -> u32 {
    let Some(c) = MM_CLUSTER_CONFIGS.get(config) else {
        return 0;
    };
    match gpu.kind() {
        simt::BackendKind::Emulator => {
            let slots = gpu.props().sms * c.tile().min_blocks;
            slots / c.cluster * c.cluster
        }
        _ => cluster_resident_blocks(gpu, config).unwrap_or(0),
    }
}

/// The index in [`MM_TILES`] of the 64x128 tile (32x64 warp tiles, 3 blocks per SM).
const TILE64X128: usize = mm_tile(64, 128);
/// The index in [`MM_TILES`] of the 128x64 tile.
const TILE128X64: usize = mm_tile(128, 64);

/// The index of the `bm x bn` tile in [`MM_TILES`]; a compile error where there is
/// none.
const fn mm_tile(bm: u32, bn: u32) -> usize {
    let mut i = 0;
    while i < MM_TILES.len() {
        if MM_TILES[i].bm == bm && MM_TILES[i].bn == bn {
            return i;
        }
        i += 1;
    }
    panic!("MM_TILES lacks a tile the heuristic names")
}

/// The heuristic's rules for K below 1024 (too short to split in parts that pay for
/// their reduce), where the rules before them left the product: by the count of
/// [`ASYNC64_W4_S4`]'s 64x64 tiles,
///
/// * at most one a SM, 1.5 to 2 a SM, or 2 to 3 a SM where no tile is partial or K
///   is at most 384: the 4-stage 64x64 tile of 4 warps, unsplit;
/// * 1 to 1.5 a SM (one tile a SM leaves most of them a second tile's wait): on
///   Hopper, the 4-stage 32x64 tile with K over a cluster of 2 (`cluster32`);
/// * more, where stage 4's 128x128 tiles are at least 3/4 of the SMs and 7/8 inside
///   C: stage 4.
///
/// `None` leaves the product to the 64x128 tile with K split. Fitted to `fp32_trial`
/// on 17 mid shapes at K = 256, 512 and 768, six kernels each (H200, 2026-11-26,
/// docs/PERFORMANCE.md session 29): on all 51 products the heuristic now runs the
/// fastest of the six or one within 1%. Then checked on 45 other products (K = 128 to
/// 896, 21 of them with partial tiles), which set the edge-tile limit. Ms at K = 512:
///
/// | shape | 64x64 tiles | the rule's kernel | the 64x128 tile, K split |
/// |---|---|---|---|
/// | 512x1024 | 128 | 0.0194 | 0.0289 |
/// | 768x768 | 144 | 0.0258 (32x64 over a cluster of 2) | 0.0354 |
/// | 1024x1536 | 384 | 0.0439 | 0.0495 |
/// | 1280x1280 | 400 | 0.0551 (stage 4) | 0.0603 |
fn short_k(gpu: &Gpu, s: Shape, cluster32: Option<usize>) -> Option<MatmulKernel> {
    let sms = gpu.props().sms.max(1) as u64;
    let tiles = tile_blocks(&MM_ASYNC_TILES[ASYNC64_W4_S4], s.m, s.n);
    let unsplit = MatmulKernel::TileAsync {
        tile: ASYNC64_W4_S4,
        split_k: 1,
    };
    // Past two tiles a SM, partial edge tiles and K past 384 cost the 4-stage tile more
    // than it gains (900x1300 at K = 500 and 700, 1000x1500 at K = 700: 2.5-7% slower
    // than the 64x128 tile with K split; at K = 300 both 1.1x faster).
    if tiles <= sms
        || (2 * tiles > 3 * sms && tiles <= 2 * sms)
        || (tiles > 2 * sms && tiles <= 3 * sms && (!is_ragged(s) || s.k <= 384))
    {
        return Some(unsplit);
    }
    if 2 * tiles <= 3 * sms {
        // (K of at least 128: slices of 64 or more, as the tuner's candidates have.)
        return cluster32
            .filter(|_| s.k >= 128)
            .map(|config| MatmulKernel::TileCluster { config });
    }
    (4 * stage4_tiles(s) >= 3 * sms && inside_tiles(s, 7, 8)).then_some(MatmulKernel::WarpTiled)
}

/// The index in [`MM_ASYNC_TILES`] of the 4-stage `cp.async` 64x64 tile of 4 warps.
const ASYNC64_W4_S4: usize = async_tile(MM_ASYNC_TILES[ASYNC64_W4].with_stages(4));

/// The index in [`MM_ASYNC_TILES`] of the 4-stage `cp.async` 32x64 tile of 4 warps
/// (16x32 warp tiles).
const ASYNC32_S4: usize = async_tile(MmTile::new(32, 64, 16, 32, 4).with_stages(4));

/// The index in [`MM_ASYNC_TILES`] of the `cp.async` 64x64 tile of 4 warps (16x64
/// warp tiles) and 3 stages: the shape of Triton's best FP32 config at 1024^3. A
/// table without it fails to compile.
const ASYNC64_W4: usize = async_tile(MmTile::new(64, 64, 16, 64, 2));

/// The index in [`MM_ASYNC_TILES`] of [`ASYNC64_W4`]'s tile computed by two K slices
/// of 4 warps each (sliced K: 8 warps, the slices' sums added in shared memory).
const ASYNC64_KS2: usize = async_tile(MM_ASYNC_TILES[ASYNC64_W4].with_kslices(2));

/// The index of `want` in [`MM_ASYNC_TILES`], every field equal; a compile error where
/// the table lacks it.
const fn async_tile(want: MmTile) -> usize {
    let mut i = 0;
    while i < MM_ASYNC_TILES.len() {
        let t = MM_ASYNC_TILES[i];
        if t.bm == want.bm
            && t.bn == want.bn
            && t.wm == want.wm
            && t.wn == want.wn
            && t.min_blocks == want.min_blocks
            && t.stages == want.stages
            && t.kslices == want.kslices
        {
            return i;
        }
        i += 1;
    }
    panic!("MM_ASYNC_TILES lacks a tile the heuristic names")
}

/// Whether [`ASYNC64_W4`]'s tiles cover an aligned product with no edge tile, as
/// one wave that fills at least 7/8 of the slots its launch bounds give (2 blocks per
/// SM), with K at most 1024: where it beats the 64x128 tile with K split. On the
/// H200 (2026-11-25, docs/PERFORMANCE.md session 24), ms:
///
/// | shape | its tiles / slots | this tile | 64x128, K split as the heuristic does |
/// |---|---|---|---|
/// | 1024^3 | 256 / 264 | 0.0586-0.0588 | 0.0607-0.0610 (4) |
/// | 2048x512x1024 | 256 / 264 | 0.0586-0.0589 | 0.0678-0.0682 (8) |
/// | 1024x1024x256 | 256 / 264 | 0.0186-0.0188 | 0.0244-0.0246 (2, the best split) |
/// | 1024x1024x4096 | 256 / 264 | 0.2176-0.2184 | 0.2088-0.2092 (8) |
/// | 768^3 | 144 / 264 | 0.0451-0.0453 | 0.0386-0.0387 (4) |
/// | 1280x1024x1024 | 320 / 264 | 0.1130-0.1131 | 0.0848-0.0849 (2, the best split) |
/// | 1000^3 (edge tiles) | | 0.0763-0.0767 | 0.0637-0.0639 (4) |
///
/// Where it holds (and [`wide_whole_split`] does not, as at 1024^3), `Auto` runs the
/// tile as two K slices of 4 warps ([`ASYNC64_KS2`])
/// from K = 512 on: at 1024^3 0.0583-0.0584 ms against 0.0583-0.0585 for one slice,
/// level at K = 512 (0.0319-0.0320 both), and at K = 256 0.0186-0.0189 against
/// 0.0185-0.0188 (H200, docs/PERFORMANCE.md session 27).
pub fn covers_whole(gpu: &Gpu, s: Shape) -> bool {
    let t = &MM_ASYNC_TILES[ASYNC64_W4];
    let slots = t.min_blocks as u64 * gpu.props().sms.max(1) as u64;
    let tiles = tile_blocks(t, s.m, s.n);
    s.aligned
        && s.m.is_multiple_of(t.bm)
        && s.n.is_multiple_of(t.bn)
        && s.k <= 1024
        && tiles <= slots
        && 8 * tiles >= 7 * slots
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `by_cluster_config!`'s arms name the kernels of [`MM_CLUSTER_CONFIGS`] in order.
    #[test]
    fn cluster_configs_run_their_kernels() {
        for config in 0..MM_CLUSTER_CONFIGS.len() {
            let name = by_cluster_config!(config, K => K::NAME);
            assert_eq!(
                Some(name),
                MatmulKernel::TileCluster { config }.kernel_name()
            );
        }
    }
}
