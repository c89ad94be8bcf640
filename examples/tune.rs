//! Tunes `MatmulKernel::Auto`, `TcKernel::Auto` (bf16 inputs, f32 C) and
//! `SoftmaxKernel::Auto` (rows past the register kernels) ahead of time, like running a `@triton.autotune`d kernel once per shape:
//! every candidate is timed on each shape, the winner is written to the tuning
//! cache, and a table shows the winner against the heuristic (what `Auto` runs when
//! a shape was never tuned).
//!
//! ```text
//! cargo run --release --example tune                       # the benchmark sweeps' shapes
//! cargo run --release --example tune -- 1x4096x4096 333x777x555 64x262144
//! ```
//!
//! `MxNxK` is a matmul, `ROWSxCOLS` a softmax.
//!
//! The cache is `$SIMT_TUNE_CACHE`, else `~/.cache/rust-simt/tune.json` (see
//! `rust_simt::tune`); later runs of any program pick the tuned kernels from it. On
//! the emulator it runs too, on small shapes, but timings there are host times.
use rust_simt::ops::matmul::{auto_candidates, auto_heuristic, auto_key, matmul, Epilogue, Shape};
use rust_simt::ops::softmax;
use rust_simt::tune::{self, Entry, Key, Timing};
use rust_simt::{BackendKind, Gpu, Result};

/// `n` values in [-1, 1), a fixed pattern per `seed`: timing on constant inputs
/// flatters the tensor cores (their power, and so the clock under load, depends on
/// the data).
fn values(n: usize, seed: usize) -> impl Iterator<Item = f32> {
    (0..n).map(move |i| ((i * 7919 + seed * 104729) % 2001) as f32 / 1000.0 - 1.0)
}

/// The head of the tables the example prints, one row per shape ([`table_row`]).
const TABLE_HEAD: &str = "| shape | candidates | tuned choice | ms | heuristic | ms | heuristic / tuned |\n|---|---|---|---|---|---|---|";

/// A table row: the tuned winner's and the heuristic's median times from `entry`.
fn table_row(shape: &str, candidates: usize, entry: &Entry, best: &str, heuristic: &str) -> String {
    let ms_of = |label: &str| {
        entry
            .timings
            .iter()
            .find(|t| t.0 == label)
            .map_or(f64::NAN, |t| t.1)
    };
    let (tb, th) = (ms_of(best), ms_of(heuristic));
    format!(
        "| {shape} | {candidates} | {best} | {tb:.4} | {heuristic} | {th:.4} | {:.2}x |",
        th / tb
    )
}

/// Writes one tuned key to the cache.
fn save(key: &Key, entry: Entry) -> Result<()> {
    tune::with_cache(|cache| {
        cache.insert(key, entry);
        cache.save()
    })
    .map_err(|e| {
        rust_simt::SimtError::Unsupported(format!(
            "writing the tuning cache: {e}; set SIMT_TUNE_CACHE to a writable file"
        ))
    })
}

/// Tunes the tensor-core matmul (bf16 inputs, f32 C) of each `MxNxK` shape; prints a
/// table like the FP32 one.
fn tune_tc(g: &Gpu, shapes: &[String], timing: Timing) -> Result<()> {
    use rust_simt::kernels::params::OutType;
    use rust_simt::ops::matmul_tc::{
        bf16, matmul_tc, tc_candidates, tc_heuristic, tc_key, TcShape,
    };
    // Tensor cores need sm_80 or newer (the emulator has them).
    if shapes.is_empty() || g.props().compute_capability < (8, 0) {
        return Ok(());
    }
    println!("\nTensor cores, bf16 inputs, f32 C:");
    println!("{TABLE_HEAD}");
    for s in shapes {
        let d: Vec<usize> = s.split('x').filter_map(|v| v.parse().ok()).collect();
        let [m, n, k] = d[..] else { continue };
        let a = g.upload(&values(m * k, 1).map(bf16::from_f32).collect::<Vec<_>>())?;
        let b = g.upload(&values(k * n, 2).map(bf16::from_f32).collect::<Vec<_>>())?;
        let mut c = g.alloc::<f32>(m * n)?;
        let shape = TcShape {
            m: m as u32,
            n: n as u32,
            k: k as u32,
            aligned: k % 8 == 0 && n % 8 == 0,
            input: "bf16",
            out: OutType::F32,
        };
        let cands = tc_candidates(g, shape);
        let (best, entry) = tune::tune(g, &cands, timing, |kern| {
            matmul_tc(
                g,
                kern,
                a.matrix(m, k)?,
                b.matrix(k, n)?,
                c.matrix_mut(m, n)?,
                Epilogue::Relu,
            )
        })?;
        let h = tc_heuristic(g, shape);
        println!(
            "{}",
            table_row(s, cands.len(), &entry, best.label(), h.label())
        );
        save(&tc_key(g, shape), entry)?;
    }
    println!("Cached: `TcKernel::Auto` now runs the tuned choice for these shapes' buckets.");
    Ok(())
}

/// Tunes the softmax of each `ROWSxCOLS` shape whose rows are past the register
/// kernels; prints a table like the matmul one.
fn tune_softmax(g: &Gpu, shapes: &[String], timing: Timing) -> Result<()> {
    let shapes: Vec<(usize, usize)> = shapes
        .iter()
        .filter_map(|s| {
            let d: Vec<usize> = s.split('x').filter_map(|v| v.parse().ok()).collect();
            match d[..] {
                [r, c] if c > softmax::REGISTER_MAX_COLS && r > 0 => Some((r, c)),
                _ => None,
            }
        })
        .collect();
    if shapes.is_empty() {
        return Ok(());
    }
    println!("\nSoftmax, rows past the register kernels:");
    println!("{TABLE_HEAD}");
    for (rows, cols) in shapes {
        let x = g.upload(&values(rows * cols, 3).collect::<Vec<_>>())?;
        let mut y = g.alloc::<f32>(rows * cols)?;
        // Fresh buffers start aligned; the rows are 16-byte aligned when cols % 4 == 0.
        // (This said `true` for every shape, so 4 x 3000017's winner was filed under
        // the aligned key of its bucket, and the heuristic column named a kernel that
        // does not take its rows.)
        let aligned = cols % 4 == 0;
        let cands = softmax::long_row_candidates(g, cols, aligned)?;
        let (best, entry) = tune::tune(g, &cands, timing, |k| {
            softmax::softmax_with(g, k, x.matrix(rows, cols)?, y.matrix_mut(rows, cols)?)
        })?;
        let h = softmax::auto_kernel(g, rows, cols, aligned)?;
        let shape = format!("{rows}x{cols}");
        println!(
            "{}",
            table_row(&shape, cands.len(), &entry, best.label(), h.label())
        );
        save(&softmax::auto_key(g, rows, cols, aligned), entry)?;
    }
    println!("Cached: `SoftmaxKernel::Auto` now runs the tuned choice for these shapes' buckets.");
    Ok(())
}

fn main() -> Result<()> {
    let g = rust_simt::gpu()?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let on_gpu = g.kind() == BackendKind::Cuda;
    let (shapes, softmax_shapes): (Vec<String>, Vec<String>) = if !args.is_empty() {
        args.iter()
            .cloned()
            .partition(|s| s.split('x').count() == 3)
    } else if on_gpu {
        (
            rust_simt::sweep::shapes("matmul", false),
            rust_simt::sweep::shapes("softmax", false),
        )
    } else {
        (
            rust_simt::sweep::shapes("matmul", true),
            rust_simt::sweep::shapes("softmax", true),
        )
    };
    println!(
        "Tuning matmul (FP32) on {} into {}",
        g.props().name,
        tune::with_cache(|c| c.path().display().to_string())
    );
    println!("{TABLE_HEAD}");
    let timing = if on_gpu {
        Timing::default()
    } else {
        Timing { warmup: 0, reps: 1 }
    };
    let pb = rust_simt::bench::progress(shapes.len() as u64, "tuning");
    for s in &shapes {
        let d: Vec<usize> = s.split('x').filter_map(|v| v.parse().ok()).collect();
        let [m, n, k] = d[..] else {
            eprintln!("skipping `{s}`: a shape is MxNxK, e.g. 1x4096x4096");
            continue;
        };
        pb.set_message(s.clone());
        let a = g.upload(&values(m * k, 1).collect::<Vec<_>>())?;
        let b = g.upload(&values(k * n, 2).collect::<Vec<_>>())?;
        let mut c = g.alloc::<f32>(m * n)?;
        let shape = Shape {
            m: m as u32,
            n: n as u32,
            k: k as u32,
            aligned: k % 4 == 0 && n % 4 == 0,
        };
        let cands = auto_candidates(&g, shape);
        let (best, entry) = tune::tune(&g, &cands, timing, |kern| {
            matmul(
                &g,
                kern,
                a.matrix(m, k)?,
                b.matrix(k, n)?,
                c.matrix_mut(m, n)?,
                Epilogue::Relu,
            )
        })?;
        let h = auto_heuristic(&g, shape);
        let row = table_row(s, cands.len(), &entry, &best.label(), &h.label());
        pb.suspend(|| println!("{row}"));
        save(&auto_key(&g, shape), entry)?;
        pb.inc(1);
    }
    pb.finish_and_clear();
    println!("Cached: `MatmulKernel::Auto` now runs the tuned choice for these shapes' buckets.");
    tune_tc(&g, &shapes, timing)?;
    tune_softmax(&g, &softmax_shapes, timing)
}
