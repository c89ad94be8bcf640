//! Scaling sweeps (the lecture's matmul sweep, softmax over N, GeLU over n, row sum
//! with few long and many short rows), written to CSV, merged with the peers'
//! numbers (`scripts/peers.py`), drawn as PNG plots, and summarised against the floor.
//!
//! Every row is `op,variant,shape,ms`; the shape string (`n`, `MxN` or `MxNxK`)
//! determines the op's minimal bytes and FLOPs, so ours and the peers' rows are
//! converted to throughput by the same formulas.
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use rand::{Rng, SeedableRng};

use crate::bench::{progress, BenchConfig, Bencher};
use crate::ops::matmul::{matmul, Epilogue, MatmulKernel};
use crate::ops::{gelu, row_sum, softmax};
use crate::plot::{line_plot, Series};
use crate::BackendKind;
use crate::Gpu;
use crate::Result;

/// The ops the sweeps cover.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Gelu,
    Softmax,
    RowSum,
    Matmul,
}

impl Op {
    /// Every op, in sweep order.
    pub const ALL: [Op; 4] = [Op::Gelu, Op::Softmax, Op::RowSum, Op::Matmul];

    /// The name used in CSV rows, plots and `--ops`.
    pub fn name(self) -> &'static str {
        match self {
            Op::Gelu => "gelu",
            Op::Softmax => "softmax",
            Op::RowSum => "row_sum",
            Op::Matmul => "matmul",
        }
    }

    /// Parses a name; an unknown one is an error that lists the known ones.
    pub fn parse(s: &str) -> std::result::Result<Op, String> {
        Op::ALL
            .into_iter()
            .find(|o| o.name() == s.trim())
            .ok_or_else(|| {
                format!(
                    "unknown op `{s}`: use a comma-separated subset of {}",
                    Op::ALL.map(Op::name).join(",")
                )
            })
    }

    /// Parses a comma-separated list (`gelu,softmax`).
    pub fn parse_list(s: &str) -> std::result::Result<Vec<Op>, String> {
        s.split(',').map(Op::parse).collect()
    }
}

/// One timing.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub op: String,
    pub variant: String,
    pub shape: String,
    pub ms: f64,
}

/// Dimensions parsed from a shape string.
fn dims(shape: &str) -> Vec<f64> {
    shape
        .split('x')
        .filter_map(|d| d.parse::<f64>().ok())
        .collect()
}

/// The fewest bytes an op must move and the FLOPs it must do, for a shape.
pub fn work(op: &str, shape: &str) -> (f64, f64) {
    let d = dims(shape);
    match (op, d.as_slice()) {
        ("gelu", [n]) => (8.0 * n, 0.0),
        ("softmax", [m, n]) => (8.0 * m * n, 0.0),
        ("row_sum", [r, c]) => (4.0 * r * c + 4.0 * r, 0.0),
        ("matmul", [m, n, k]) => (4.0 * (m * k + k * n + m * n), 2.0 * m * n * k),
        _ => (0.0, 0.0),
    }
}

/// The x coordinate plotted for a shape: n, N (columns) or the matmul size.
fn x_of(op: &str, shape: &str) -> f64 {
    let d = dims(shape);
    match op {
        "gelu" | "matmul" => d[0],
        _ => *d.last().unwrap_or(&0.0),
    }
}

/// The hardware ceilings the floor is computed from.
#[derive(Clone, Copy, Debug)]
pub struct Ceilings {
    /// Measured copy bandwidth, GB/s.
    pub copy_gbps: f64,
    /// FP32 non-tensor peak, TFLOP/s.
    pub fp32_tflops: f64,
}

impl Ceilings {
    /// Floor time in ms: the larger of bytes / bandwidth and FLOPs / peak.
    pub fn floor_ms(&self, op: &str, shape: &str) -> f64 {
        let (b, f) = work(op, shape);
        let tb = b / (self.copy_gbps * 1e9);
        let tf = if self.fp32_tflops > 0.0 {
            f / (self.fp32_tflops * 1e12)
        } else {
            0.0
        };
        tb.max(tf) * 1e3
    }
}

fn rand_vec(n: usize, seed: u64) -> Vec<f32> {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| r.gen_range(-2.0f32..2.0)).collect()
}

/// Long softmax rows: few rows of 2^16 to 2^20 columns (split over cooperating
/// blocks), a non-power-of-two row, and rows longer than the device holds on chip
/// (the online two passes). The same list as `scripts/peers.py`'s `LONG_SOFTMAX`.
pub const LONG_SOFTMAX: [&str; 5] = [
    "256x65536",
    "64x262144",
    "8x1048576",
    "1x100000",
    "4x3000017",
];

/// Row sums of odd shapes: rows of 2^k + 1 columns (every row but the first
/// misaligned for 16-byte loads), millions of rows of a few columns, a single
/// element, and a square of 2^k + 1. The same list as `scripts/peers.py`'s
/// `ODD_ROW_SUM`.
pub const ODD_ROW_SUM: [&str; 4] = ["4x16777217", "4194304x3", "1x1", "1025x1025"];

/// Matmul shapes past the squares: one row times a matrix (decoding), one column, a
/// few rows, a short K, and a ragged size. The same list as `scripts/peers.py`'s
/// `MATMUL_SHAPES`.
pub const MATMUL_SHAPES: [&str; 5] = [
    "1x8192x8192",
    "8192x1x8192",
    "64x4096x4096",
    "4096x4096x64",
    "1000x1000x1000",
];

/// The sweep's shapes per op. `quick`: tiny shapes (emulator / CI).
pub fn shapes(op: &str, quick: bool) -> Vec<String> {
    let p2 = |lo: u32, hi: u32, step: usize| {
        (lo..=hi)
            .step_by(step)
            .map(|e| 1usize << e)
            .collect::<Vec<_>>()
    };
    match (op, quick) {
        ("matmul", false) => {
            let mut v: Vec<String> = p2(8, 13, 1)
                .iter()
                .map(|n| format!("{n}x{n}x{n}"))
                .collect();
            v.extend(MATMUL_SHAPES.iter().map(|s| s.to_string()));
            v
        }
        ("matmul", true) => vec![
            "64x64x64".into(),
            "128x128x128".into(),
            "1x256x256".into(),
            "100x1x64".into(),
            "96x80x300".into(),
        ],
        ("softmax", false) => {
            let mut v: Vec<String> = p2(7, 14, 1).iter().map(|n| format!("4096x{n}")).collect();
            v.extend(LONG_SOFTMAX.iter().map(|s| s.to_string()));
            v
        }
        ("softmax", true) => vec!["64x128".into(), "64x512".into(), "2x40000".into()],
        ("gelu", false) => p2(16, 27, 1).iter().map(|n| n.to_string()).collect(),
        ("gelu", true) => vec!["4096".into(), "65536".into()],
        ("row_sum", false) => {
            let mut v: Vec<String> = p2(16, 26, 2).iter().map(|c| format!("4x{c}")).collect();
            v.extend(
                [16usize, 64, 256, 1024]
                    .iter()
                    .map(|c| format!("{}x{c}", (1usize << 24) / c)),
            );
            v.extend(ODD_ROW_SUM.iter().map(|s| s.to_string()));
            v
        }
        ("row_sum", true) => vec!["4x16384".into(), "1024x16".into()],
        _ => vec![],
    }
}

/// Runs our kernels over the sweep shapes of `ops`, with a progress bar.
pub fn run(gpu: &Gpu, ops: &[Op], quick: bool) -> Result<Vec<Row>> {
    let mut cfg = BenchConfig::for_gpu(gpu);
    if gpu.kind() == BackendKind::Cuda {
        // At least 10 runs, more up to `rep_ms` of device time: the naive matmul at
        // 8192^3 (2.7 s a run) stops at 10, a 40 µs kernel at `MAX_REPS`.
        cfg.warmup = 2;
        cfg.reps = 10;
    }
    let mut b = Bencher::new(gpu, cfg)?;
    let total: usize = ops.iter().map(|o| shapes(o.name(), quick).len()).sum();
    let pb = progress(total as u64, "sweeps");
    let mut rows = Vec::new();
    let mut push = |op: &str, variant: &str, shape: &str, ms: f64| {
        rows.push(Row {
            op: op.into(),
            variant: variant.into(),
            shape: shape.into(),
            ms,
        })
    };
    for &kind in ops {
        let op = kind.name();
        for shape in shapes(op, quick) {
            pb.set_message(format!("{op} {shape}"));
            let d: Vec<usize> = dims(&shape).iter().map(|&v| v as usize).collect();
            match kind {
                Op::Gelu => {
                    let n = d[0];
                    let x = gpu.upload(&rand_vec(n, 1))?;
                    let mut y = gpu.alloc::<f32>(n)?;
                    let mut t = gpu.alloc::<f32>(n)?;
                    push(
                        op,
                        "rust-simt fused",
                        &shape,
                        b.run(|| gelu::gelu(gpu, &x, &mut y))?.median_ms,
                    );
                    // The other block shapes (candidates for `Auto`), side by side.
                    let own = gelu::GeluKernel::auto_for(n);
                    for k in gelu::GeluKernel::ALL
                        .into_iter()
                        .filter(|&k| k != gelu::GeluKernel::Auto && k != own)
                    {
                        push(
                            op,
                            &format!("rust-simt fused {}", k.label()),
                            &shape,
                            b.run(|| gelu::gelu_with(gpu, k, &x, &mut y))?.median_ms,
                        );
                    }
                    push(
                        op,
                        "rust-simt naive",
                        &shape,
                        b.run(|| gelu::gelu_naive(gpu, &x, &mut y, &mut t))?
                            .median_ms,
                    );
                }
                Op::Softmax => {
                    let (m, n) = (d[0], d[1]);
                    let x = gpu.upload(&rand_vec(m * n, 2))?;
                    let mut y = gpu.alloc::<f32>(m * n)?;
                    let mut t = gpu.alloc::<f32>(m)?;
                    // `softmax` itself: the fused (one-pass, register-row) kernel up to
                    // REGISTER_MAX_COLS columns; past it, whichever long-row kernel
                    // `Auto` picks, so it is named for that and not "fused".
                    push(
                        op,
                        if n > softmax::REGISTER_MAX_COLS {
                            "rust-simt auto"
                        } else {
                            "rust-simt fused"
                        },
                        &shape,
                        b.run(|| softmax::softmax(gpu, x.matrix(m, n)?, y.matrix_mut(m, n)?))?
                            .median_ms,
                    );
                    // Each long-row kernel that takes the shape, side by side.
                    if n > softmax::REGISTER_MAX_COLS {
                        for (k, name) in [
                            (softmax::SoftmaxKernel::Cluster, "rust-simt cluster"),
                            (softmax::SoftmaxKernel::Split, "rust-simt split"),
                            (softmax::SoftmaxKernel::SplitAsync, "rust-simt split-async"),
                            (softmax::SoftmaxKernel::SplitWide, "rust-simt split-wide"),
                            (softmax::SoftmaxKernel::Online, "rust-simt online"),
                            (softmax::SoftmaxKernel::Looped, "rust-simt looped"),
                            (softmax::SoftmaxKernel::ThreePass, "rust-simt three-pass"),
                            (softmax::SoftmaxKernel::Stream, "rust-simt stream"),
                            (softmax::SoftmaxKernel::Bulk, "rust-simt bulk"),
                        ] {
                            if let Ok(t) = b.run(|| {
                                softmax::softmax_with(gpu, k, x.matrix(m, n)?, y.matrix_mut(m, n)?)
                            }) {
                                push(op, name, &shape, t.median_ms);
                            }
                        }
                    }
                    // Candidates beside the register rows: the two-pass loop of
                    // `torch.compile` at 8192 and 16384 columns (at 4096 it ran 28%
                    // slower than they: H100, 2026-12-07, docs/PERFORMANCE.md session
                    // 37), and the bulk-copied rows from 4096 (where the device takes
                    // them: Hopper).
                    for (k, name, cols) in [
                        (
                            softmax::SoftmaxKernel::Looped,
                            "rust-simt looped",
                            8192..=softmax::REGISTER_MAX_COLS,
                        ),
                        (
                            softmax::SoftmaxKernel::ThreePass,
                            "rust-simt three-pass",
                            8192..=softmax::REGISTER_MAX_COLS,
                        ),
                        (
                            softmax::SoftmaxKernel::RowBulk,
                            "rust-simt row-bulk",
                            4096..=softmax::ROW_BULK_MAX_COLS,
                        ),
                    ] {
                        if cols.contains(&n) && softmax::takes(gpu, k, n, n.is_multiple_of(4))? {
                            let t = b.run(|| {
                                softmax::softmax_with(gpu, k, x.matrix(m, n)?, y.matrix_mut(m, n)?)
                            })?;
                            push(op, name, &shape, t.median_ms);
                        }
                    }
                    // The earlier stage (the row staged in shared memory), where it fits.
                    if n <= softmax::max_cols(gpu) {
                        push(
                            op,
                            "rust-simt shared-row",
                            &shape,
                            b.run(|| {
                                softmax::softmax_with(
                                    gpu,
                                    softmax::SoftmaxKernel::SharedRow,
                                    x.matrix(m, n)?,
                                    y.matrix_mut(m, n)?,
                                )
                            })?
                            .median_ms,
                        );
                    }
                    push(
                        op,
                        "rust-simt naive",
                        &shape,
                        b.run(|| {
                            softmax::softmax_naive(
                                gpu,
                                x.matrix(m, n)?,
                                y.matrix_mut(m, n)?,
                                &mut t,
                            )
                        })?
                        .median_ms,
                    );
                }
                Op::RowSum => {
                    let (r, c) = (d[0], d[1]);
                    let x = gpu.upload(&rand_vec(r * c, 3))?;
                    let mut o = gpu.alloc::<f32>(r)?;
                    push(
                        op,
                        "rust-simt",
                        &shape,
                        b.run(|| row_sum::row_sum(gpu, x.matrix(r, c)?, &mut o))?
                            .median_ms,
                    );
                }
                Op::Matmul => {
                    let (m, n, k) = (d[0], d[1], d[2]);
                    let a = gpu.upload(&rand_vec(m * k, 4))?;
                    let bb = gpu.upload(&rand_vec(k * n, 5))?;
                    let mut c = gpu.alloc::<f32>(m * n)?;
                    // Squares: Auto and the lecture's stages; the other shapes: Auto and
                    // the best stage. Auto first: timed after the naive stage's 2.7 s
                    // at 8192^3, the H200 ran into its power cap (throttle reason
                    // 0x4) and Auto took 21.78-22.28 ms where `fp32_trial` timed the
                    // same kernel at 21.44 in the same call (docs/PERFORMANCE.md,
                    // session 29).
                    let kernels: Vec<MatmulKernel> = if m == n && n == k {
                        std::iter::once(MatmulKernel::Auto)
                            .chain(MatmulKernel::ALL.iter().copied())
                            .collect()
                    } else {
                        vec![MatmulKernel::Auto, MatmulKernel::WarpTiled]
                    };
                    for kern in kernels {
                        push(
                            op,
                            &format!("rust-simt {}", kern.name()),
                            &shape,
                            b.run(|| {
                                matmul(
                                    gpu,
                                    kern,
                                    a.matrix(m, k)?,
                                    bb.matrix(k, n)?,
                                    c.matrix_mut(m, n)?,
                                    Epilogue::Relu,
                                )
                            })?
                            .median_ms,
                        );
                    }
                }
            }
            pb.inc(1);
        }
    }
    pb.finish_and_clear();
    Ok(rows)
}

/// Writes rows as CSV (`op,variant,shape,ms`).
pub fn write_csv(path: &Path, rows: &[Row]) -> std::io::Result<()> {
    let mut s = String::from("op,variant,shape,ms\n");
    for r in rows {
        let _ = writeln!(s, "{},{},{},{}", r.op, r.variant, r.shape, r.ms);
    }
    std::fs::write(path, s)
}

/// Reads rows written by [`write_csv`] or by `scripts/peers.py`.
pub fn read_csv(path: &Path) -> std::io::Result<Vec<Row>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f.len() == 4).then(|| Row {
                op: f[0].into(),
                variant: f[1].into(),
                shape: f[2].into(),
                ms: f[3].parse().unwrap_or(f64::NAN),
            })
        })
        .collect())
}

/// One PNG per op: throughput (GB/s, or TFLOP/s for matmul) against size, one line per variant.
pub fn plot_all(
    rows: &[Row],
    dir: &Path,
    device: &str,
) -> std::result::Result<Vec<String>, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let mut files = Vec::new();
    // Per op, per variant: its (size, ms) points.
    type ByVariant = BTreeMap<String, Vec<(f64, f64)>>;
    let mut by_op: BTreeMap<&str, ByVariant> = BTreeMap::new();
    // Other-precision peers ("[tf32] ...") stay in the CSV and tables; plotted next to
    // FP32 kernels they only flatten the comparison.
    // The matmul lines are the squares; the other shapes get a bar plot of their own.
    let square = |r: &Row| {
        let d = dims(&r.shape);
        r.op != "matmul" || (d.len() == 3 && d[0] == d[1] && d[1] == d[2])
    };
    for r in rows
        .iter()
        .filter(|r| !r.variant.starts_with('[') && square(r))
    {
        let (bytes, flops) = work(&r.op, &r.shape);
        let y = if r.op == "matmul" {
            flops / (r.ms * 1e-3) / 1e12
        } else {
            bytes / (r.ms * 1e-3) / 1e9
        };
        // row_sum has two sweeps (4 long rows; 2^24 elements in short rows), softmax
        // two (4096 rows; long rows): one line each
        let variant = if r.op == "softmax" {
            let rows = dims(&r.shape).first().copied().unwrap_or(0.0);
            if rows == 4096.0 {
                r.variant.clone()
            } else {
                format!("{}, long rows", r.variant)
            }
        } else if r.op == "row_sum" {
            let rows = dims(&r.shape).first().copied().unwrap_or(0.0);
            format!(
                "{}, {}",
                r.variant,
                if rows <= 4.0 {
                    "4 long rows"
                } else {
                    "many short rows"
                }
            )
        } else {
            r.variant.clone()
        };
        by_op
            .entry(&r.op)
            .or_default()
            .entry(variant)
            .or_default()
            .push((x_of(&r.op, &r.shape), y));
    }
    for (op, variants) in by_op {
        // row_sum: plot the few-long-rows sweep (4 rows) by columns
        let series: Vec<Series> = variants
            .into_iter()
            .map(|(v, mut pts)| {
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series {
                    name: v,
                    points: pts,
                }
            })
            .collect();
        let (xl, yl) = match op {
            "matmul" => ("n (n x n x n)", "TFLOP/s"),
            "softmax" => ("N (columns; 4096 rows, or few long rows)", "GB/s"),
            "gelu" => ("n", "GB/s"),
            _ => ("columns per row", "GB/s"),
        };
        let path = dir.join(format!("{op}.png"));
        line_plot(&path, &format!("{op} on {device}"), xl, yl, &series, true)?;
        files.push(path.display().to_string());
    }
    if let Some(f) = plot_matmul_shapes(rows, dir, device)? {
        files.push(f);
    }
    Ok(files)
}

/// Bars per matmul shape: our best FP32 kernel's speed relative to the best FP32
/// peer's (`matmul_shapes.png`; above 1 we are faster). `None` when there are no
/// matmul rows, or no shape has both our timing and a peer's.
fn plot_matmul_shapes(
    rows: &[Row],
    dir: &Path,
    device: &str,
) -> std::result::Result<Option<String>, String> {
    let mut shapes: Vec<String> = Vec::new();
    for r in rows.iter().filter(|r| r.op == "matmul") {
        if !shapes.contains(&r.shape) {
            shapes.push(r.shape.clone());
        }
    }
    if shapes.is_empty() {
        return Ok(None);
    }
    let best = |shape: &str, ours: bool| {
        rows.iter()
            .filter(|r| r.op == "matmul" && r.shape == shape && r.ms.is_finite())
            .filter(|r| !r.variant.starts_with('['))
            .filter(|r| r.variant.starts_with("rust-simt") == ours)
            .map(|r| r.ms)
            .fold(f64::NAN, f64::min)
    };
    // Speed relative to the best peer: above 1, ours is faster.
    let series = [Series {
        name: "rust-simt speed / best FP32 peer's (cuBLAS, Triton ieee): above 1 is faster".into(),
        points: shapes
            .iter()
            .enumerate()
            .map(|(i, s)| (i as f64, best(s, false) / best(s, true)))
            .collect(),
    }];
    if !series[0].points.iter().any(|p| p.1.is_finite()) {
        return Ok(None); // no peer timings to compare with (CI, the emulator)
    }
    // Squares as n^3, the rest as m x n x k.
    let labels: Vec<String> = shapes
        .iter()
        .map(|s| {
            let d = dims(s);
            if d.len() == 3 && d[0] == d[1] && d[1] == d[2] {
                format!("{}^3", d[0])
            } else {
                s.clone()
            }
        })
        .collect();
    let path = dir.join("matmul_shapes.png");
    crate::plot::bar_plot(
        &path,
        &format!("matmul + ReLU, FP32: ours against the best peer per shape, {device}"),
        &labels,
        "speed relative to the best peer",
        &series,
    )?;
    Ok(Some(path.display().to_string()))
}

/// The markdown summary: for each op and shape, the floor, our best variant, the
/// best peer of the same precision, and the ratios.
pub fn summary(rows: &[Row], c: Ceilings) -> String {
    let mut s = String::from("| op | shape | floor ms | ours (best) ms | ours / floor | best peer | peer ms | ours vs best peer |\n|---|---|---|---|---|---|---|---|\n");
    let mut keys: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r.op.clone(), r.shape.clone()))
        .collect();
    keys.dedup();
    let mut seen = std::collections::HashSet::new();
    for (op, shape) in keys {
        if !seen.insert((op.clone(), shape.clone())) {
            continue;
        }
        let here: Vec<&Row> = rows
            .iter()
            .filter(|r| r.op == op && r.shape == shape && r.ms.is_finite())
            .collect();
        // Peers in another precision (variants tagged "[tf32] ...") are plotted but never
        // the comparison for an FP32 kernel.
        let comparable = |r: &&&Row| !r.variant.starts_with('[');
        // Where one of our kernels was also timed in the peers' process (`peers.py
        // --ours`), that timing is the one set against those peers, not the faster of
        // it and the sweep's: two draws of one kernel, the better one picked, would
        // flatter it. Our kernels timed only by the sweep (those that cannot be
        // replayed) stand with the sweep's timing.
        let twin = |r: &Row| {
            let v = format!("{} (in-process)", r.variant);
            here.iter().any(|o| o.variant == v)
        };
        let best = |ours: bool| {
            here.iter()
                .filter(comparable)
                .filter(|r| r.variant.starts_with("rust-simt") == ours)
                .filter(|r| !ours || !twin(r))
                .min_by(|a, b| a.ms.total_cmp(&b.ms))
                .copied()
        };
        let floor = c.floor_ms(&op, &shape);
        let (o, p) = (best(true), best(false));
        let _ = writeln!(
            s,
            "| {op} | {shape} | {floor:.4} | {} | {} | {} | {} | {} |",
            o.map(|r| format!(
                "{:.4} ({})",
                r.ms,
                r.variant.trim_start_matches("rust-simt ").trim()
            ))
            .unwrap_or("-".into()),
            o.map(|r| format!("{:.2}x", r.ms / floor))
                .unwrap_or("-".into()),
            p.map(|r| r.variant.clone()).unwrap_or("-".into()),
            p.map(|r| format!("{:.4}", r.ms)).unwrap_or("-".into()),
            match (o, p) {
                (Some(o), Some(p)) => format!(
                    "{:.2}x {}",
                    (p.ms / o.ms).max(o.ms / p.ms),
                    if o.ms <= p.ms { "faster" } else { "slower" }
                ),
                _ => "-".into(),
            }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(variant: &str, ms: f64) -> Row {
        Row {
            op: "softmax".into(),
            variant: variant.into(),
            shape: "4096x4096".into(),
            ms,
        }
    }

    #[test]
    fn summary_sets_the_in_process_timing_of_ours_against_the_peers() {
        let c = Ceilings {
            copy_gbps: 4000.0,
            fp32_tflops: 60.0,
        };
        // The sweep's own draw is faster, but the peers were timed beside the
        // in-process one: that is the comparison, not the better of two draws.
        let rows = [
            row("rust-simt fused", 0.0360),
            row("rust-simt fused (in-process)", 0.0380),
            row("triton", 0.0370),
        ];
        let s = summary(&rows, c);
        assert!(s.contains("0.0380 (fused (in-process))"), "{s}");
        assert!(s.contains("1.03x slower"), "{s}");
        // Only a candidate replayed (the op's own launch cannot be): the op's sweep
        // timing still counts, and each kernel once.
        let rows = [
            row("rust-simt auto", 0.0400),
            row("rust-simt looped", 0.0350),
            row("rust-simt looped (in-process)", 0.0420),
            row("triton", 0.0410),
        ];
        let s = summary(&rows, c);
        assert!(s.contains("0.0400 (auto)"), "{s}");
        // Without an in-process row, ours is our best variant, as before.
        let s = summary(&[row("rust-simt fused", 0.0360), row("triton", 0.0370)], c);
        assert!(
            s.contains("0.0360 (fused)") && s.contains("1.03x faster"),
            "{s}"
        );
    }
}
