//! Row softmax for rows of any length, and the naive 5-kernel composition.
//!
//! [`softmax`] picks the kernel from the row length ([`SoftmaxKernel::Auto`]):
//!
//! | columns | kernel | traffic per element |
//! |---|---|---|
//! | up to 1024 | a warp per row, the row in registers (`softmax_warp_*`) | 1 read, 1 write |
//! | up to 16384 | a block per row, the row in registers (`softmax_row_*`) | 1 read, 1 write |
//! | 65536 to 2^20, on Hopper, rows 16-byte aligned with a multiple of 4 columns, a chunk of 8192 per SM or more | chunks copied into a shared-memory ring by bulk copies, reduced, exchanged and written by specialised warps of a persistent grid (`softmax_bulk`) | 1 read, 1 write |
//! | up to 262144, on Hopper, rows enough for a cluster per SM or more | a cluster of 2-8 blocks per row, chunks in registers, pairs over distributed shared memory (`softmax_cluster_*`) | 1 read, 1 write |
//! | longer, the input 16 MiB to L2's size | two-pass online softmax (`softmax_online_*`): the second read hits L2 | 1 read (+1 from L2), 1 write |
//! | the input 2 waves of `softmax_split_wide`'s chunks of 32768 or fewer (3 for rows not 16-byte aligned: read as aligned rows up to 3 floats longer) | every chunk of 16384 read, reduced, and later read again from L2 and written, in one cooperative stream (`softmax_stream`) | 1 read (+1 from L2), 1 write |
//! | up to `max_resident_blocks · 8192`, fewer chunks than SMs | chunks of 8192 over cooperating blocks, loaded into registers (`softmax_split`) | 1 read, 1 write |
//! | up to `max_resident_blocks · 16384`, rows 16-byte aligned | chunks of 16384 over cooperating blocks, staged by `cp.async` (`softmax_split_async`) | 1 read, 1 write |
//! | up to `max_resident_blocks · 8192` | `softmax_split` | 1 read, 1 write |
//! | longer | two-pass online softmax | 2 reads, 1 write |
//!
//! [`auto_kernel`] says why, with the measurements. Past the register kernels,
//! `Auto` also asks the autotuner ([`crate::tune`], key [`auto_key`]): a cached
//! winner for the shape's bucket replaces the heuristic, and `SIMT_TUNE=1` times
//! [`long_row_candidates`] on a miss (never for an in-place call).
//!
//! An empty input (no rows or no columns) launches nothing and leaves the (empty)
//! output as it is, as `torch.softmax` returns an empty tensor.
use kernels::config::{
    SOFTMAX_ASYNC_CHUNK, SOFTMAX_BULK_CHUNK, SOFTMAX_BULK_STAGES, SOFTMAX_CLUSTER_CONFIGS,
    SOFTMAX_CLUSTER_MAX_COLS, SOFTMAX_CLUSTER_SLICE, SOFTMAX_MAX_COLS, SOFTMAX_ONLINE_THREADS,
    SOFTMAX_ROW_BULK_MAX_COLS, SOFTMAX_ROW_CONFIGS, SOFTMAX_SPLIT_CHUNK, SOFTMAX_STREAM_CHUNK,
    SOFTMAX_WARP_VECS, SOFTMAX_WIDE_CHUNK, WARP_ROWS_THREADS, WARP_ROW_MAX_COLS, WARP_SIZE,
};
use kernels::params::{MatMut, MatRef, SoftmaxBulkParams, SoftmaxOnlineParams, SoftmaxSplitParams};
use kernels::softmax_bulk as kb;
use kernels::softmax_cluster as kc;
use kernels::softmax_row_bulk as krb;
use kernels::softmax_split as ks;
use kernels::softmax_split_async as ksa;
use kernels::softmax_split_wide as ksw;
use kernels::softmax_stream as kst;
use kernels::{
    row_sum as rs, softmax as k, softmax_looped as kl, softmax_online as ko, softmax_regs as kr,
    softmax_three_pass as k3,
};
use simt::{dim3, Buffer, Gpu, Kernel, LaunchConfig, MatrixMut, MatrixRef, Result, SimtError};

use super::{check_mut, check_ref, fits_u32, SCRATCH_SOFTMAX_PAIRS};
use crate::ptx;

/// The softmax kernels, for [`softmax_with`]: the optimisation stages side by side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoftmaxKernel {
    /// By row length, as the module doc's table says.
    Auto,
    /// The row staged in shared memory (a warp per row up to 1024 columns, a block
    /// per row up to [`max_cols`]): the first fused version.
    SharedRow,
    /// The row in registers (a warp or a block per row), up to 16384 columns.
    Registers,
    /// A thread-block cluster of 2 to 8 blocks per row, each chunk in registers,
    /// the blocks' `(max, sum)` pairs combined through distributed shared memory:
    /// up to [`CLUSTER_MAX_COLS`] columns, on Hopper (the `sm_90a` module).
    Cluster,
    /// Chunks of 8192 columns over cooperating blocks, any row the device holds on
    /// chip ([`split_max_cols`]).
    Split,
    /// Chunks of 16384 columns over cooperating blocks, staged in shared memory by
    /// `cp.async`: rows 16-byte aligned, up to [`split_async_max_cols`].
    SplitAsync,
    /// Chunks of 32768 columns over cooperating blocks, half of each in registers
    /// and half staged in shared memory, two blocks per SM: any rows (those not
    /// 16-byte aligned read as aligned ones up to 3 floats longer), up
    /// to [`split_wide_max_cols`]. The most a split kernel holds on chip at once.
    SplitWide,
    /// Two passes with online `(max, sum)` pairs: any length.
    Online,
    /// A block per row reading it twice (an online `(max, sum)` pass, then a pass
    /// that re-reads it from L2 and writes): any length, one launch, no scratch
    /// memory (`torch.compile`'s loop).
    Looped,
    /// One cooperative launch that streams every chunk of 16384 columns twice, its
    /// read and (about a grid of chunks later, from L2) its write, so DRAM reads and
    /// writes overlap all through: any length, any rows.
    Stream,
    /// Chunks of 8192 columns copied into a shared-memory ring by bulk copies (one
    /// thread, many KiB in flight), reduced, exchanged and written by specialised
    /// warps of a persistent grid: rows 16-byte aligned with a multiple of 4 columns,
    /// up to [`bulk_max_cols`], on Hopper (the `sm_90a` module).
    Bulk,
    /// A block per row, the row brought into shared memory by bulk copies (no row
    /// in registers, so three 16384-column rows an SM where the register kernel
    /// holds two): rows 16-byte aligned with a multiple of 4 columns, up to
    /// [`ROW_BULK_MAX_COLS`], on Hopper (the `sm_90a` module).
    RowBulk,
    /// A block of 1024 threads per row and three loops over it (max, sum, write; the
    /// last two from L2): the kernel `torch.compile` runs at 4096 x 16384 on an H100.
    /// Any length, one launch, no scratch memory; on Hopper (the `sm_90a` module:
    /// L2 cache policies).
    ThreePass,
}

/// The longest row of [`SoftmaxKernel::RowBulk`].
pub const ROW_BULK_MAX_COLS: usize = SOFTMAX_ROW_BULK_MAX_COLS as usize;

/// The longest row the shared-memory kernel ([`SoftmaxKernel::SharedRow`]) takes on
/// this device: `SOFTMAX_MAX_COLS`, and no more than shared memory per block holds.
pub fn max_cols(gpu: &Gpu) -> usize {
    (SOFTMAX_MAX_COLS as usize).min(gpu.props().smem_per_block_optin as usize / 4)
}

/// The longest row of a register-resident kernel: the last of `SOFTMAX_ROW_CONFIGS`.
pub const REGISTER_MAX_COLS: usize =
    4 * (SOFTMAX_ROW_CONFIGS[3].0 * SOFTMAX_ROW_CONFIGS[3].1) as usize;

/// The longest row of [`SoftmaxKernel::Cluster`]: 8 blocks of 32768 columns.
pub const CLUSTER_MAX_COLS: usize = SOFTMAX_CLUSTER_MAX_COLS as usize;

/// Whether this device runs [`SoftmaxKernel::Cluster`] (thread-block clusters: the
/// Hopper module loads, an H100 or H200, and the emulator).
pub fn has_clusters(gpu: &Gpu) -> bool {
    gpu.can_load(&ptx::sm90a::MODULE)
}

impl SoftmaxKernel {
    /// Every kernel, in the order of the enum.
    pub const ALL: [SoftmaxKernel; 13] = [
        SoftmaxKernel::Auto,
        SoftmaxKernel::SharedRow,
        SoftmaxKernel::Registers,
        SoftmaxKernel::Cluster,
        SoftmaxKernel::Split,
        SoftmaxKernel::SplitAsync,
        SoftmaxKernel::SplitWide,
        SoftmaxKernel::Online,
        SoftmaxKernel::Looped,
        SoftmaxKernel::Stream,
        SoftmaxKernel::Bulk,
        SoftmaxKernel::RowBulk,
        SoftmaxKernel::ThreePass,
    ];

    /// A stable text form (the tuning cache's).
    pub fn label(self) -> &'static str {
        match self {
            SoftmaxKernel::Auto => "auto",
            SoftmaxKernel::SharedRow => "shared-row",
            SoftmaxKernel::Registers => "registers",
            SoftmaxKernel::Cluster => "cluster",
            SoftmaxKernel::Split => "split",
            SoftmaxKernel::SplitAsync => "split-async",
            SoftmaxKernel::SplitWide => "split-wide",
            SoftmaxKernel::Online => "online",
            SoftmaxKernel::Looped => "looped",
            SoftmaxKernel::Stream => "stream",
            SoftmaxKernel::Bulk => "bulk",
            SoftmaxKernel::RowBulk => "row-bulk",
            SoftmaxKernel::ThreePass => "three-pass",
        }
    }

    /// Parses a [`label`](Self::label).
    pub fn from_label(s: &str) -> Option<SoftmaxKernel> {
        SoftmaxKernel::ALL.into_iter().find(|k| k.label() == s)
    }
}

/// Whether `kernel` takes rows of `cols` columns on this device (`aligned`: 16-byte
/// aligned row starts); `Auto` takes every row.
pub fn takes(gpu: &Gpu, kernel: SoftmaxKernel, cols: usize, aligned: bool) -> Result<bool> {
    Ok(match kernel {
        SoftmaxKernel::Auto
        | SoftmaxKernel::Online
        | SoftmaxKernel::Looped
        | SoftmaxKernel::Stream => true,
        SoftmaxKernel::ThreePass => has_clusters(gpu),
        SoftmaxKernel::SharedRow => cols <= max_cols(gpu),
        SoftmaxKernel::Registers => cols <= REGISTER_MAX_COLS,
        SoftmaxKernel::Cluster => cols <= CLUSTER_MAX_COLS && has_clusters(gpu),
        SoftmaxKernel::Split => cols <= split_max_cols(gpu)?,
        SoftmaxKernel::SplitAsync => aligned && cols <= split_async_max_cols(gpu)?,
        SoftmaxKernel::SplitWide => wide_cols(cols, aligned) <= split_wide_max_cols(gpu)?,
        SoftmaxKernel::Bulk => bulk_takes(gpu, cols, aligned)?,
        SoftmaxKernel::RowBulk => row_bulk_takes(gpu, cols, aligned),
    })
}

/// Whether [`SoftmaxKernel::Bulk`] takes rows of `cols` columns here: rows 16-byte
/// aligned, a multiple of 4 columns, the sm_90a module, at most [`bulk_max_cols`].
fn bulk_takes(gpu: &Gpu, cols: usize, aligned: bool) -> Result<bool> {
    Ok(aligned && cols.is_multiple_of(4) && has_clusters(gpu) && cols <= bulk_max_cols(gpu)?)
}

/// Whether [`SoftmaxKernel::RowBulk`] takes rows of `cols` columns here: rows 16-byte
/// aligned, a multiple of 4 columns, at most [`ROW_BULK_MAX_COLS`], the sm_90a module.
fn row_bulk_takes(gpu: &Gpu, cols: usize, aligned: bool) -> bool {
    aligned && cols.is_multiple_of(4) && cols <= ROW_BULK_MAX_COLS && has_clusters(gpu)
}

/// How many blocks of [`SoftmaxKernel::Bulk`] the device holds at once (one per SM
/// on an H100 or H200): its grid.
pub fn bulk_blocks(gpu: &Gpu) -> Result<u32> {
    ptx::load(gpu)?;
    let p = SoftmaxBulkParams {
        x: MatRef::EMPTY,
        y: MatMut::EMPTY,
        splits: 1,
        pairs: std::ptr::null_mut(),
        epoch: 0,
        evict_first: 0,
    };
    gpu.max_resident_blocks::<kb::softmax_bulk>(&(p,))
}

/// The longest row [`SoftmaxKernel::Bulk`] takes on this device: a row's chunks of
/// 8192 columns at most `STAGES` per block (what keeps its waits deadlock-free:
/// [`kernels::softmax_bulk`]); 0 without the sm_90a module.
pub fn bulk_max_cols(gpu: &Gpu) -> Result<usize> {
    if !has_clusters(gpu) {
        return Ok(0);
    }
    Ok(bulk_blocks(gpu)? as usize * (SOFTMAX_BULK_STAGES * SOFTMAX_BULK_CHUNK) as usize)
}

/// The columns [`SoftmaxKernel::SplitWide`] and [`SoftmaxKernel::Stream`] count in a
/// row of `cols`: rows that do not start 16-byte aligned are read as aligned ones up
/// to 3 floats longer ([`kernels::softmax_split_wide`]).
fn wide_cols(cols: usize, aligned: bool) -> usize {
    if aligned {
        cols
    } else {
        cols + 3
    }
}

/// What the autotuner times for rows past the register kernels: every long-row
/// kernel that takes `cols` columns here (`Cluster`, `Split`, `SplitAsync`,
/// `SplitWide`, `Online`, `Looped`, `Stream`, `Bulk`).
pub fn long_row_candidates(gpu: &Gpu, cols: usize, aligned: bool) -> Result<Vec<SoftmaxKernel>> {
    let mut v = Vec::new();
    for k in [
        SoftmaxKernel::Cluster,
        SoftmaxKernel::Split,
        SoftmaxKernel::SplitAsync,
        SoftmaxKernel::SplitWide,
        SoftmaxKernel::Online,
        SoftmaxKernel::Looped,
        SoftmaxKernel::Stream,
        SoftmaxKernel::Bulk,
    ] {
        if takes(gpu, k, cols, aligned)? {
            v.push(k);
        }
    }
    Ok(v)
}

/// The tuning key of a softmax of `rows x cols` (both bucketed to powers of two).
pub fn auto_key(gpu: &Gpu, rows: usize, cols: usize, aligned: bool) -> crate::tune::Key {
    crate::tune::Key::new(gpu, "softmax", "f32")
        .dim("rows", rows)
        .dim("cols", cols)
        .flag("aligned", aligned)
}

/// The longest row [`SoftmaxKernel::Split`] takes on this device: one chunk of 8192
/// columns per block the device holds at once.
pub fn split_max_cols(gpu: &Gpu) -> Result<usize> {
    ptx::load(gpu)?;
    Ok(split_capacity(gpu)? as usize * SOFTMAX_SPLIT_CHUNK as usize)
}

fn split_capacity(gpu: &Gpu) -> Result<u32> {
    resident_blocks::<ks::softmax_split>(gpu)
}

/// How many blocks of a split kernel the device holds at once (the cooperative
/// launch's limit). The kernels' shared memory does not depend on their arguments:
/// empty ones will do.
fn resident_blocks<K: Kernel<Args = (SoftmaxSplitParams,)>>(gpu: &Gpu) -> Result<u32> {
    let p = SoftmaxSplitParams {
        x: MatRef::EMPTY,
        y: MatMut::EMPTY,
        splits: 1,
        partials: std::ptr::null_mut(),
        flags: std::ptr::null_mut(),
        epoch: 0,
    };
    gpu.max_resident_blocks::<K>(&(p,))
}

/// The longest row [`SoftmaxKernel::SplitAsync`] takes on this device: one chunk
/// of 16384 columns per block the device holds at once.
pub fn split_async_max_cols(gpu: &Gpu) -> Result<usize> {
    ptx::load(gpu)?;
    Ok(split_async_capacity(gpu)? as usize * SOFTMAX_ASYNC_CHUNK as usize)
}

fn split_async_capacity(gpu: &Gpu) -> Result<u32> {
    resident_blocks::<ksa::softmax_split_async>(gpu)
}

/// The longest row [`SoftmaxKernel::SplitWide`] takes on this device: one chunk
/// of 32768 columns per block the device holds at once.
pub fn split_wide_max_cols(gpu: &Gpu) -> Result<usize> {
    ptx::load(gpu)?;
    Ok(split_wide_capacity(gpu)? as usize * SOFTMAX_WIDE_CHUNK as usize)
}

fn split_wide_capacity(gpu: &Gpu) -> Result<u32> {
    resident_blocks::<ksw::softmax_split_wide>(gpu)
}

/// How many blocks of [`SoftmaxKernel::Stream`] the device holds at once: its grid.
pub fn stream_blocks(gpu: &Gpu) -> Result<u32> {
    ptx::load(gpu)?;
    resident_blocks::<kst::softmax_stream>(gpu)
}

/// The blocks per cluster [`SoftmaxKernel::Cluster`] gives rows of `cols` columns
/// (`None` past [`CLUSTER_MAX_COLS`]).
pub fn cluster_size(cols: usize) -> Option<u32> {
    cluster_config(cols).map(|i| SOFTMAX_CLUSTER_CONFIGS[i].0)
}

/// The index in `SOFTMAX_CLUSTER_CONFIGS` of the smallest cluster kernel that holds
/// rows of `cols` columns.
fn cluster_config(cols: usize) -> Option<usize> {
    SOFTMAX_CLUSTER_CONFIGS
        .iter()
        .position(|&(c, h)| cols <= (SOFTMAX_CLUSTER_SLICE * h * c) as usize)
}

/// The row lengths [`SoftmaxKernel::Auto`] gives [`SoftmaxKernel::Bulk`] (see
/// [`auto_kernel`]).
pub const BULK_AUTO_MIN_COLS: usize = 65536;
/// See [`BULK_AUTO_MIN_COLS`].
pub const BULK_AUTO_MAX_COLS: usize = 1 << 20;

/// The largest input [`SoftmaxKernel::Bulk`] reads with evict-first bulk copies.
pub const BULK_EVICT_FIRST_MAX_BYTES: usize = 32 << 20;

/// Which kernel [`SoftmaxKernel::Auto`] runs for `rows` rows of `cols` columns,
/// whose starts are 16-byte aligned or not (`aligned`: the pointer and the row
/// stride). Fitted to the H100 runs of 2026-11-22 and -23 and the H200 runs since
/// (docs/PERFORMANCE.md):
///
/// * on Hopper, the bulk kernel for 16-byte aligned rows of 65536 to 2^20 columns (a
///   multiple of 4) with at least one chunk of 8192 per SM (H200, 2026-11-26, session
///   33: 3-14% ahead of the cluster and stream kernels there, measured behind them at
///   1 x 100000, 512 x 32768, 4 x 3000016 and 16 x 2^22);
/// * otherwise a cluster per row wherever one holds the row in one slice per block (H100,
///   commit 12a7cf9: 256 x 65536 0.0535 ms, 1 x 100000 0.0067, against 0.0706
///   and 0.0070 for the best split kernel);
/// * rows of the largest cluster (two slices per block, one block per SM): the
///   stream kernel where the wide split kernel would take them (below; the wide split
///   kernel was 1-3% ahead of the cluster on the H100, commits 415d432 and 177631e:
///   64 x 262144 0.0604-0.0605 ms against 0.0607-0.0617), else the cluster;
/// * rows too long for a cluster, or no clusters: the split kernel in registers
///   when the row's chunks are fewer than the SMs (1 x 100000 without clusters:
///   0.0070-0.0088 ms, staged split 0.0084-0.0104);
/// * rows whose chunks of 32768 fill at most two waves of the device (three for rows
///   not 16-byte aligned, which every other kernel loads 4 bytes at a time: H200,
///   2026-11-24, 64 x 262143 0.0570 ms against the cluster's 0.0838, 4 x 3000017
///   0.0490 against the online passes' 0.0867): the stream kernel, which on the
///   H200 (2026-11-24, session 15) runs 8 x 2^20 in 0.0263-0.0266 ms, 32 x 262144 in
///   0.0245-0.0248, 64 x 262143 in 0.0515 and 4 x 3000017 in 0.0438-0.0442 against
///   the wide split kernel's 0.0278-0.0279, 0.0268-0.0270, 0.0555-0.0566 and 0.0495,
///   and 64 x 262144 level (0.0471-0.0474 against 0.0472-0.0473); the wide split kernel
///   had been 1.2-1.3x ahead of the online passes (H100, commit 415d432);
/// * the two online passes when the input fits in L2, so that their second read hits
///   it, and is no toy (8 x 2^20: 0.0419-0.0440 ms, staged split 0.0456-0.0458);
/// * else the staged split kernel for aligned rows, the register one for others,
///   the online passes past what the device holds on chip.
pub fn auto_kernel(gpu: &Gpu, rows: usize, cols: usize, aligned: bool) -> Result<SoftmaxKernel> {
    let sms = gpu.props().sms.max(1) as usize;
    let bytes = rows.saturating_mul(cols).saturating_mul(4);
    let fits_l2 = bytes >= 16 << 20 && bytes <= gpu.props().l2_bytes as usize;
    if cols <= REGISTER_MAX_COLS {
        return Ok(SoftmaxKernel::Registers);
    }
    // Bulk copies on Hopper: rows of 65536 to 2^20 columns, 16-byte aligned, at least
    // a chunk per SM (H200, 2026-11-26, session 33, `bin/softmax`: 256 x 65536 0.0413
    // ms against the cluster's 0.0434, 64 x 262144 0.0420 against the stream kernel's
    // 0.0474, 128 x 262144 0.0756 against 0.0879, 1024 x 65536 0.1470 against 0.1563,
    // 32 x 262144 0.0227 against 0.0247; 8 x 2^20 and 4 x 2^20 level with the stream
    // kernel; behind where a row has hundreds of chunks, 4 x 3000016 and 16 x 2^22,
    // and at 1 x 100000 and 512 x 32768, where the cluster is faster).
    let bulk_chunks = rows.saturating_mul(cols.div_ceil(SOFTMAX_BULK_CHUNK as usize));
    if (BULK_AUTO_MIN_COLS..=BULK_AUTO_MAX_COLS).contains(&cols)
        && bulk_chunks >= sms
        && bulk_takes(gpu, cols, aligned)?
    {
        return Ok(SoftmaxKernel::Bulk);
    }
    let few_chunks = rows.saturating_mul(cols.div_ceil(SOFTMAX_SPLIT_CHUNK as usize)) < sms;
    let wide = || -> Result<bool> {
        // Unaligned rows: up to three waves, where the other kernels load them 4 bytes
        // at a time (H200, 2026-11-24: 64 x 262143, 2.2 waves, 0.0570 ms against the
        // cluster's 0.0838).
        let waves = if aligned { 2 } else { 3 };
        let cols = wide_cols(cols, aligned);
        Ok(
            rows.saturating_mul(cols.div_ceil(SOFTMAX_WIDE_CHUNK as usize))
                <= waves * split_wide_capacity(gpu)? as usize
                && cols <= split_wide_max_cols(gpu)?,
        )
    };
    if let Some(i) = cluster_config(cols).filter(|_| has_clusters(gpu)) {
        // One slice a block: always the cluster. Two (one block per SM): the wide
        // split kernel where it takes the input and the rows are not few.
        if i + 1 < SOFTMAX_CLUSTER_CONFIGS.len() || few_chunks || !wide()? {
            return Ok(SoftmaxKernel::Cluster);
        }
    }
    Ok(if few_chunks && cols <= split_max_cols(gpu)? {
        SoftmaxKernel::Split
    } else if wide()? {
        // Where the wide split kernel would take the input, the stream kernel is as
        // fast or faster (H200, 2026-11-24, docs/PERFORMANCE.md session 15).
        SoftmaxKernel::Stream
    } else if fits_l2 {
        SoftmaxKernel::Online
    } else if aligned && cols <= split_async_max_cols(gpu)? {
        SoftmaxKernel::SplitAsync
    } else if cols <= split_max_cols(gpu)? {
        SoftmaxKernel::Split
    } else {
        SoftmaxKernel::Online
    })
}

/// The chunks of a persistent long-row kernel (`rows · splits` of `chunk` columns),
/// which its kernels count in 31 bits; more is a `TooLarge` error.
fn chunk_count(rows: u32, splits: usize, chunk: u32) -> Result<usize> {
    let items = rows as usize * splits;
    if items >= 1 << 31 {
        return Err(SimtError::TooLarge {
            op: "softmax",
            detail: format!("{items} chunks of {chunk} columns (at most 2^31-1); split the rows into several calls"),
        });
    }
    Ok(items)
}

/// `kernel` needs the sm_90a module (`what`: the Hopper feature it uses): an
/// `Unsupported` error naming `instead` on other devices.
fn needs_sm90a(gpu: &Gpu, kernel: SoftmaxKernel, what: &str, instead: &str) -> Result<()> {
    if has_clusters(gpu) {
        return Ok(());
    }
    Err(SimtError::Unsupported(format!(
        "SoftmaxKernel::{kernel:?} needs {what} (compute capability 9.0, the sm_90a module) and this device is {}; use {instead}",
        gpu.props().sm()
    )))
}

/// `kernel` copies rows as 16-byte units (bulk copies): a `Shape` error unless x's
/// rows start 16-byte aligned (`aligned`) and hold a multiple of 4 columns.
fn needs_16_byte_rows(
    op: &'static str,
    kernel: SoftmaxKernel,
    n: usize,
    aligned: bool,
) -> Result<()> {
    if aligned && n.is_multiple_of(4) {
        return Ok(());
    }
    Err(SimtError::Shape {
        op,
        detail: format!("SoftmaxKernel::{kernel:?} copies rows as 16-byte units: x needs a 16-byte aligned start, a row stride that is a multiple of 4 and a multiple of 4 columns (rows of {n}); use SoftmaxKernel::Auto"),
    })
}

/// Launches a softmax kernel of the register and cluster families (parameters
/// `x, y, rows, cols, ld_x, ld_y`) on `grid` blocks of its own block.
///
/// # Safety
/// As [`Gpu::launch`]: the views behind `args` are checked on `gpu`, and `grid` is
/// the kernel's thread mapping for them.
unsafe fn launch_rows<K: Kernel<Args = (*const f32, *mut f32, u32, u32, u32, u32)>>(
    gpu: &Gpu,
    grid: simt::Dim3,
    args: K::Args,
) -> Result<()> {
    // SAFETY: forwarded.
    unsafe { gpu.launch::<K>(LaunchConfig::for_kernel::<K>(grid), args) }
}

/// `y = softmax(x)` over each row, any row length (see the module doc). `x` and `y`
/// have the same shape, each with its own row stride; `y` may not alias `x` except
/// exactly (in place).
pub fn softmax(gpu: &Gpu, x: MatrixRef<'_, f32>, y: MatrixMut<'_, f32>) -> Result<()> {
    softmax_with(gpu, SoftmaxKernel::Auto, x, y)
}

/// [`softmax`] with a chosen kernel. A kernel that cannot take rows this long is a
/// `TooLarge` error naming the one that can.
pub fn softmax_with(
    gpu: &Gpu,
    kernel: SoftmaxKernel,
    x: MatrixRef<'_, f32>,
    mut y: MatrixMut<'_, f32>,
) -> Result<()> {
    let op = "softmax";
    let (rows, cols, ld_x) = check_ref(gpu, op, "x", &x)?;
    let (_, _, ld_y) = check_mut(gpu, op, "y", &y)?;
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
    if rows > i32::MAX as u32 {
        return Err(SimtError::TooLarge {
            op,
            detail: "more than 2^31-1 rows; split the rows into several calls".into(),
        });
    }
    ptx::load(gpu)?;
    let n = cols as usize;
    let aligned = (x.ptr() as usize).is_multiple_of(16) && ld_x.is_multiple_of(4);
    let requested = kernel;
    let kernel = match kernel {
        SoftmaxKernel::Auto => {
            let h = auto_kernel(gpu, rows as usize, n, aligned)?;
            if h == SoftmaxKernel::Registers {
                h
            } else {
                // Long rows: the autotuner's cached choice (or, with SIMT_TUNE=1, a
                // timing of the candidates); never tuned in place, where every run
                // would change the input.
                let key = auto_key(gpu, rows as usize, n, aligned);
                let valid =
                    |k| k != SoftmaxKernel::Auto && takes(gpu, k, n, aligned).unwrap_or(false);
                let in_place = std::ptr::eq(x.ptr(), y.ptr_mut());
                // The candidates (and their residency queries) only when tuning.
                if in_place || crate::tune::mode(gpu) != crate::tune::Mode::Tune {
                    crate::tune::lookup(gpu, &key, h, valid)
                } else {
                    let cands = long_row_candidates(gpu, n, aligned)?;
                    crate::tune::choose(gpu, &key, &cands, h, valid, |k| {
                        softmax_with(gpu, k, x, y.reborrow())
                    })?
                }
            }
        }
        k => k,
    };
    let cooperative = matches!(
        kernel,
        SoftmaxKernel::Split
            | SoftmaxKernel::SplitAsync
            | SoftmaxKernel::SplitWide
            | SoftmaxKernel::Stream
            | SoftmaxKernel::Bulk
    );
    if requested == SoftmaxKernel::Auto && cooperative {
        return match softmax_with(gpu, kernel, x, y.reborrow()) {
            // Refused before it ran (a shared MPS device takes no cooperative launch):
            // the online passes need no block to wait for another.
            Err(SimtError::CooperativeRefused { .. }) => {
                softmax_with(gpu, SoftmaxKernel::Online, x, y)
            }
            r => r,
        };
    }
    let too_long = |limit: usize, name: &str, use_: &str| SimtError::TooLarge {
        op,
        detail: format!("rows of {n} columns; the {name} kernel takes at most {limit} ({use_})"),
    };
    let args = (x.ptr(), y.ptr_mut(), rows, cols, ld_x, ld_y);
    // The views as the split, stream and online kernels take them.
    let (xm, ym) = (
        MatRef {
            ptr: x.ptr(),
            rows,
            cols,
            ld: ld_x,
        },
        MatMut {
            ptr: y.ptr_mut(),
            rows,
            cols,
            ld: ld_y,
        },
    );
    let warp_grid = dim3(rows.div_ceil(WARP_ROWS_THREADS / WARP_SIZE), 1, 1);
    match kernel {
        SoftmaxKernel::Auto => unreachable!("resolved above"),
        SoftmaxKernel::SharedRow => {
            if n > max_cols(gpu) {
                return Err(too_long(
                    max_cols(gpu),
                    "shared-memory",
                    "use SoftmaxKernel::Auto",
                ));
            }
            if cols <= WARP_ROW_MAX_COLS {
                // SAFETY: views checked on this Gpu; a warp per row; the contract sizes shared memory.
                return unsafe {
                    gpu.launch::<k::softmax_warp>(
                        LaunchConfig::for_kernel::<k::softmax_warp>(warp_grid),
                        args,
                    )
                };
            }
            let cfg = LaunchConfig::for_kernel::<k::softmax_fused>(dim3(rows, 1, 1));
            // SAFETY: both views checked against their buffers on this Gpu; one block per row;
            // the contract gives cols*4 bytes of dynamic shared memory.
            unsafe { gpu.launch::<k::softmax_fused>(cfg, args) }
        }
        SoftmaxKernel::Registers => {
            // SAFETY (every launch below): views checked on this Gpu, rows no longer than
            // the kernel's register slice, the grid its thread mapping.
            let row_grid = dim3(rows, 1, 1);
            let fits = |v: u32| n <= 128 * v as usize;
            let fits_row = |(t, v): (u32, u32)| n <= 4 * (t * v) as usize;
            // SAFETY: see above.
            unsafe {
                if fits(SOFTMAX_WARP_VECS[0]) {
                    launch_rows::<kr::softmax_warp_128>(gpu, warp_grid, args)
                } else if fits(SOFTMAX_WARP_VECS[1]) {
                    launch_rows::<kr::softmax_warp_256>(gpu, warp_grid, args)
                } else if fits(SOFTMAX_WARP_VECS[2]) {
                    launch_rows::<kr::softmax_warp_512>(gpu, warp_grid, args)
                } else if fits(SOFTMAX_WARP_VECS[3]) {
                    launch_rows::<kr::softmax_warp_1k>(gpu, warp_grid, args)
                } else if fits_row(SOFTMAX_ROW_CONFIGS[0]) {
                    launch_rows::<kr::softmax_row_2k>(gpu, row_grid, args)
                } else if fits_row(SOFTMAX_ROW_CONFIGS[1]) {
                    launch_rows::<kr::softmax_row_4k>(gpu, row_grid, args)
                } else if fits_row(SOFTMAX_ROW_CONFIGS[2]) {
                    launch_rows::<kr::softmax_row_8k>(gpu, row_grid, args)
                } else if fits_row(SOFTMAX_ROW_CONFIGS[3]) {
                    launch_rows::<kr::softmax_row_16k>(gpu, row_grid, args)
                } else {
                    Err(too_long(
                        REGISTER_MAX_COLS,
                        "register-resident",
                        "use SoftmaxKernel::Auto",
                    ))
                }
            }
        }
        SoftmaxKernel::Cluster => {
            if !has_clusters(gpu) {
                return Err(SimtError::Unsupported(format!(
                    "SoftmaxKernel::Cluster needs thread-block clusters (compute capability 9.0, the sm_90a module) and this device is {}; use SoftmaxKernel::Auto",
                    gpu.props().sm()
                )));
            }
            let Some(i) = cluster_config(n) else {
                return Err(too_long(
                    CLUSTER_MAX_COLS,
                    "cluster",
                    "use SoftmaxKernel::Auto",
                ));
            };
            let c = SOFTMAX_CLUSTER_CONFIGS[i].0;
            let grid = fits_u32(op, "rows * cluster size", rows as usize * c as usize)?;
            if grid > i32::MAX as u32 {
                return Err(SimtError::TooLarge {
                    op,
                    detail: format!(
                        "{grid} blocks (rows x {c}); split the rows into several calls"
                    ),
                });
            }
            let grid = dim3(grid, 1, 1);
            // SAFETY: views checked on this Gpu; rows no longer than the kernel's
            // cluster holds (config i); grid = rows · its cluster size.
            unsafe {
                match i {
                    0 => launch_rows::<kc::softmax_cluster_32k>(gpu, grid, args),
                    1 => launch_rows::<kc::softmax_cluster_64k>(gpu, grid, args),
                    2 => launch_rows::<kc::softmax_cluster_128k>(gpu, grid, args),
                    _ => launch_rows::<kc::softmax_cluster_256k>(gpu, grid, args),
                }
            }
        }
        SoftmaxKernel::Split | SoftmaxKernel::SplitAsync | SoftmaxKernel::SplitWide => {
            let staged = kernel != SoftmaxKernel::Split;
            if kernel == SoftmaxKernel::SplitAsync && !aligned {
                return Err(SimtError::Shape {
                    op,
                    detail: format!("SoftmaxKernel::{kernel:?} copies 16-byte vectors: x needs a 16-byte aligned start and a row stride that is a multiple of 4; use SoftmaxKernel::Auto"),
                });
            }
            let (capacity, chunk) = match kernel {
                SoftmaxKernel::SplitAsync => (split_async_capacity(gpu)?, SOFTMAX_ASYNC_CHUNK),
                SoftmaxKernel::SplitWide => (split_wide_capacity(gpu)?, SOFTMAX_WIDE_CHUNK),
                _ => (split_capacity(gpu)?, SOFTMAX_SPLIT_CHUNK),
            };
            let splits = if kernel == SoftmaxKernel::SplitWide {
                wide_cols(cols as usize, aligned).div_ceil(chunk as usize) as u32
            } else {
                cols.div_ceil(chunk)
            };
            if splits > capacity {
                return Err(too_long(
                    capacity as usize * chunk as usize,
                    "split-row",
                    "its chunks must all be resident at once on this device; use SoftmaxKernel::Auto or Online",
                ));
            }
            let items = rows as u64 * splits as u64;
            let items_u32 = fits_u32(op, "rows * chunks", items as usize)?;
            // Whole rows per wave, and no more blocks than chunks.
            let grid = ((capacity / splits) * splits).min(items_u32);
            let pairs = gpu.scratch_f32(SCRATCH_SOFTMAX_PAIRS, 2 * items as usize)?;
            let (flags, epoch) = gpu.flags(items as usize)?;
            let p = SoftmaxSplitParams {
                x: xm,
                y: ym,
                splits,
                partials: pairs.ptr() as *mut f32,
                flags: flags.ptr() as *mut u32,
                epoch,
            };
            // SAFETY: views checked on this Gpu (x's rows 16-byte aligned for the staged
            // kernel, the wide one's splits counting a head of 3 floats otherwise; x's
            // buffer, a device allocation, starts 16-byte aligned); scratch of 2·items floats and items flags none of which holds
            // `epoch` (Gpu::flags); grid a multiple of splits, at most what is resident
            // (checked again by the cooperative launch).
            unsafe {
                if kernel == SoftmaxKernel::SplitWide {
                    let cfg = LaunchConfig::for_kernel::<ksw::softmax_split_wide>(dim3(grid, 1, 1));
                    gpu.launch::<ksw::softmax_split_wide>(cfg, (p,))
                } else if staged {
                    let cfg =
                        LaunchConfig::for_kernel::<ksa::softmax_split_async>(dim3(grid, 1, 1));
                    gpu.launch::<ksa::softmax_split_async>(cfg, (p,))
                } else {
                    let cfg = LaunchConfig::for_kernel::<ks::softmax_split>(dim3(grid, 1, 1));
                    gpu.launch::<ks::softmax_split>(cfg, (p,))
                }
            }
        }
        SoftmaxKernel::Stream => {
            let splits = wide_cols(n, aligned).div_ceil(SOFTMAX_STREAM_CHUNK as usize);
            let items = chunk_count(rows, splits, SOFTMAX_STREAM_CHUNK)?;
            let grid = stream_blocks(gpu)?.min(items as u32).max(1);
            let pairs = gpu.scratch_f32(SCRATCH_SOFTMAX_PAIRS, 2 * items)?;
            let (flags, epoch) = gpu.flags(items)?;
            let p = SoftmaxSplitParams {
                x: xm,
                y: ym,
                splits: splits as u32,
                partials: pairs.ptr() as *mut f32,
                flags: flags.ptr() as *mut u32,
                epoch,
            };
            let cfg = LaunchConfig::for_kernel::<kst::softmax_stream>(dim3(grid, 1, 1));
            // SAFETY: views checked on this Gpu; splits counts a head of 3 floats for
            // rows not 16-byte aligned (x's buffer, a device allocation, starts 16-byte
            // aligned); 2·items floats of scratch and items flags none of which holds
            // `epoch` (Gpu::flags); items < 2^31; grid at most what is resident
            // (checked again by the cooperative launch).
            unsafe { gpu.launch::<kst::softmax_stream>(cfg, (p,)) }
        }
        SoftmaxKernel::Bulk => {
            needs_sm90a(gpu, kernel, "bulk copies", "SoftmaxKernel::Auto")?;
            needs_16_byte_rows(op, kernel, n, aligned)?;
            let limit = bulk_max_cols(gpu)?;
            if n > limit {
                return Err(too_long(
                    limit,
                    "bulk",
                    &format!("a row's chunks must number at most {SOFTMAX_BULK_STAGES} per resident block; use SoftmaxKernel::Auto or Online"),
                ));
            }
            let splits = n.div_ceil(SOFTMAX_BULK_CHUNK as usize);
            let items = chunk_count(rows, splits, SOFTMAX_BULK_CHUNK)?;
            let grid = bulk_blocks(gpu)?.min(items as u32).max(1);
            let (pairs, epoch) = gpu.pair_slots(items)?;
            let p = SoftmaxBulkParams {
                x: xm,
                y: ym,
                splits: splits as u32,
                pairs: pairs.ptr() as *mut u64,
                epoch,
                // Inputs of up to 32 MiB read their copies evict-first (H200, session
                // 33: 8 x 2^20 and 32 x 262144 4-7% faster; 64 MiB and more 3-5% slower).
                evict_first: (rows as usize * n * 4 <= BULK_EVICT_FIRST_MAX_BYTES) as u32,
            };
            let cfg = LaunchConfig::for_kernel::<kb::softmax_bulk>(dim3(grid, 1, 1));
            // SAFETY: views checked on this Gpu; x's rows 16-byte aligned with a multiple
            // of 4 columns (checked above; x's buffer, a device allocation, starts 16-byte
            // aligned); splits = ceil(cols / chunk) <= STAGES · grid (bulk_max_cols);
            // items < 2^31; 2·items pair words, 16-byte aligned, none holding `epoch`
            // (Gpu::pair_slots); grid at most items and what is resident (checked again
            // by the cooperative launch).
            unsafe { gpu.launch::<kb::softmax_bulk>(cfg, (p,)) }
        }
        SoftmaxKernel::RowBulk => {
            needs_sm90a(gpu, kernel, "bulk copies", "SoftmaxKernel::Auto")?;
            needs_16_byte_rows(op, kernel, n, aligned)?;
            if n > ROW_BULK_MAX_COLS {
                return Err(too_long(
                    ROW_BULK_MAX_COLS,
                    "row-bulk",
                    "its 512 threads hold 8 vectors of 4 columns each; use SoftmaxKernel::Auto",
                ));
            }
            // SAFETY: views checked on this Gpu (y is x only exactly, with ld_y = ld_x);
            // x's rows 16-byte aligned (x.ptr() and ld_x) with a multiple of 4 columns,
            // at most ROW_BULK_MAX_COLS (checked above); grid.x = rows (< 2^31, checked
            // above); the launch contract gives cols·4 bytes of dynamic shared memory.
            unsafe { launch_rows::<krb::softmax_row_bulk>(gpu, dim3(rows, 1, 1), args) }
        }
        SoftmaxKernel::ThreePass => {
            needs_sm90a(
                gpu,
                kernel,
                "L2 cache policies",
                "SoftmaxKernel::Auto or Looped",
            )?;
            // SAFETY: views checked on this Gpu (global memory; y is x only exactly,
            // with ld_y = ld_x); grid.x = rows, one block per row (rows < 2^31,
            // checked above).
            unsafe { launch_rows::<k3::softmax_three_pass>(gpu, dim3(rows, 1, 1), args) }
        }
        SoftmaxKernel::Looped => {
            // SAFETY: views checked on this Gpu (global memory); grid.x = rows, one
            // block per row (rows < 2^31, checked above).
            unsafe { launch_rows::<kl::softmax_looped>(gpu, dim3(rows, 1, 1), args) }
        }
        SoftmaxKernel::Online => {
            // Enough chunks for about 4 blocks per SM in total, none shorter than 16
            // vectors per thread.
            let want = 4 * gpu.props().sms.max(1) as usize;
            let min_chunk = 16 * 4 * SOFTMAX_ONLINE_THREADS as usize;
            let splits = want
                .div_ceil(rows as usize)
                .min(n.div_ceil(min_chunk))
                .clamp(1, 65535);
            let chunk = n.div_ceil(splits).next_multiple_of(4);
            let splits = n.div_ceil(chunk);
            let items = rows as usize * splits;
            if items > i32::MAX as usize {
                return Err(SimtError::TooLarge {
                    op,
                    detail: format!("{items} blocks; split the rows into several calls"),
                });
            }
            let pairs = gpu.scratch_f32(SCRATCH_SOFTMAX_PAIRS, 2 * items)?;
            let p = SoftmaxOnlineParams {
                x: xm,
                y: ym,
                splits: splits as u32,
                chunk: chunk as u32,
                partials: pairs.ptr() as *mut f32,
            };
            let c1 =
                LaunchConfig::for_kernel::<ko::softmax_online_partials>(dim3(items as u32, 1, 1));
            let c2 =
                LaunchConfig::for_kernel::<ko::softmax_online_finish>(dim3(items as u32, 1, 1));
            // SAFETY: views checked on this Gpu; 2·items floats of scratch; grid = rows·splits
            // with splits·chunk >= cols; pass 2 runs after pass 1 (stream order).
            unsafe {
                gpu.launch::<ko::softmax_online_partials>(c1, (p,))?;
                gpu.launch::<ko::softmax_online_finish>(c2, (p,))
            }
        }
    }
}

/// Softmax as PyTorch eager composes it: row max, subtract, exp, row sum, divide;
/// five kernels, any row length. `x` and `y` contiguous; `tmp` holds `rows` floats.
pub fn softmax_naive(
    gpu: &Gpu,
    x: MatrixRef<'_, f32>,
    mut y: MatrixMut<'_, f32>,
    tmp: &mut Buffer<f32>,
) -> Result<()> {
    let op = "softmax_naive";
    let (r, c, _) = check_ref(gpu, op, "x", &x)?;
    check_mut(gpu, op, "y", &y)?;
    gpu.check(op, "tmp", tmp)?;
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
    if !x.layout().is_contiguous() || !y.layout().is_contiguous() {
        return Err(SimtError::Shape { op, detail: "the naive composition takes contiguous rows (ld = cols); use softmax for strided views".into() });
    }
    if tmp.len() < x.rows() {
        return Err(SimtError::Shape {
            op,
            detail: format!("tmp has {} elements, needs {r}", tmp.len()),
        });
    }
    if x.layout().is_empty() {
        return Ok(());
    }
    let n = fits_u32(op, "rows*cols", x.rows() * x.cols())?;
    ptx::load(gpu)?;
    let per_row = LaunchConfig::for_kernel::<k::row_max>(dim3(r, 1, 1));
    let ew = LaunchConfig::linear::<k::rows_sub>(n as usize)?;
    let (xp, yp, v) = (x.ptr(), y.ptr_mut(), tmp.ptr_mut());
    // SAFETY: x, y hold rows*cols floats on this Gpu, tmp at least rows; mappings per
    // the docs; elementwise stages may run in place.
    unsafe {
        gpu.launch::<k::row_max>(per_row, (xp, v, r, c, c))?;
        gpu.launch::<k::rows_sub>(ew, (xp, v as *const f32, yp, r, c))?;
        gpu.launch::<k::ew_exp>(ew, (yp as *const f32, yp, n))?;
        gpu.launch::<rs::row_sum>(
            per_row,
            // One part per row: no scratch, no counts.
            (
                yp as *const f32,
                v,
                r,
                c,
                c,
                1,
                c.next_multiple_of(4),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            ),
        )?;
        gpu.launch::<k::rows_div>(ew, (yp as *const f32, v as *const f32, yp, r, c))?;
    }
    Ok(())
}

/// Host-slice convenience: a contiguous `rows x cols` softmax.
pub fn softmax_host(gpu: &Gpu, x: &[f32], rows: usize, cols: usize) -> Result<Vec<f32>> {
    let xb = gpu.upload(x)?;
    let mut yb = gpu.alloc::<f32>(x.len())?;
    softmax(gpu, xb.matrix(rows, cols)?, yb.matrix_mut(rows, cols)?)?;
    gpu.download(&yb)
}
