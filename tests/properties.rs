//! Property tests: every op and every kernel variant over generated shapes, strides,
//! start offsets and values, against float64, with shrinking and a replayable seed.
//!
//! Each case draws a shape (1, primes, 2^k±1, skinny, sometimes 0), row padding,
//! an element offset into a larger buffer (so views start misaligned), a tail after
//! the view, and values (unit, wide, and a stability case: large magnitudes, and
//! -inf / ±1e30 entries in softmax rows). It checks the output against float64,
//! that no output element stays poisoned, and that every element outside the output
//! view (padding, offset, tail) still holds the poison bit pattern.
//!
//! * Cases per op: `SIMT_PROPTEST_CASES` (default 3000 on the emulator, a third
//!   under each thread order: in-order, reversed, random; 10 000 on a GPU).
//! * Shapes: emulator-sized on the emulator and with `SIMT_SMALL=1`; larger on a GPU.
//! * Seed: printed per op; `SIMT_TEST_SEED=<seed>` replays a run. proptest shrinks a
//!   failure to a minimal case and prints it.
//! * Soak: `SIMT_SOAK_S=120 cargo test --release --test properties -- --ignored soak`
//!   loops every property for that long with fresh seeds and checks that device
//!   memory use stays flat and that a fixed input gives bit-identical outputs.
mod common;
use std::fmt::Debug;
use std::time::Instant;

use common::check_close;
use half::{bf16, f16};
use kernels::params::Epilogue;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use rand::{Rng, SeedableRng};
use rust_simt::emulator::{EmuConfig, Order};
use rust_simt::ops::gelu::{gelu, gelu_erf, gelu_matrix, gelu_naive, gelu_with, GeluKernel};
use rust_simt::ops::matmul::{matmul, MatmulKernel};
use rust_simt::ops::matmul_tc::{
    bf16_to_f32, f16_to_f32, matmul_tc, matmul_tf32_with, to_bf16, to_f16, TcInput, TcKernel,
    TcOutput,
};
use rust_simt::ops::row_sum::row_sum;
use rust_simt::ops::softmax::{
    bulk_max_cols, has_clusters, max_cols, softmax_naive, softmax_with, split_async_max_cols,
    split_max_cols, split_wide_max_cols, SoftmaxKernel, CLUSTER_MAX_COLS, REGISTER_MAX_COLS,
    ROW_BULK_MAX_COLS,
};
use rust_simt::{reference, BackendKind, Buffer, Gpu, Layout, SimtError};

/// The poison: a quiet NaN with a payload no kernel computes, so an element written
/// with any value (a NaN included) is told apart from one never written.
const POISON: u32 = 0x7fe5_a5a5;

// ---- devices, seeds, case counts ---------------------------------------------------

/// A device under test and how to name it in a failure.
struct Dev {
    name: String,
    gpu: Gpu,
}

/// The GPU when there is one; else the emulator under each thread order.
fn devices(seed: u64) -> Vec<Dev> {
    let g = common::gpu();
    if g.kind() == BackendKind::Cuda {
        return vec![Dev {
            name: g.props().name.clone(),
            gpu: g,
        }];
    }
    [Order::InOrder, Order::Reversed, Order::Random(seed)]
        .into_iter()
        .map(|order| {
            let gpu = Gpu::emulator(EmuConfig {
                order,
                ..EmuConfig::default()
            });
            rust_simt::ptx::load(&gpu).unwrap();
            Dev {
                name: format!("emulator {order:?}"),
                gpu,
            }
        })
        .collect()
}

/// Whether shapes are GPU-sized (a GPU, without `SIMT_SMALL=1`).
fn big(g: &Gpu) -> bool {
    rust_simt::full_size(g)
}

/// Cases per op in total: `SIMT_PROPTEST_CASES`, else 3000 on the emulator and
/// 10 000 on a GPU.
fn total_cases(on_gpu: bool) -> u32 {
    let soak = SOAK_CASES.load(std::sync::atomic::Ordering::Relaxed);
    if soak > 0 {
        return soak;
    }
    std::env::var("SIMT_PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if on_gpu { 10_000 } else { 3000 })
}

/// Cases per op per pass while soaking (0: not soaking).
static SOAK_CASES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn seed_for(op: &str) -> u64 {
    let seed = std::env::var("SIMT_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen());
    eprintln!("[{op}] seed {seed} (replay with SIMT_TEST_SEED={seed})");
    seed
}

/// Runs `cases` cases of `strategy` through `check` on `dev`; a failure (shrunk to a
/// minimal case by proptest) comes back as text.
fn run_cases<S>(
    op: &str,
    dev: &Dev,
    cases: u32,
    seed: u64,
    strategy: S,
    check: &Check<S::Value>,
) -> Result<(), String>
where
    S: Strategy,
    S::Value: Debug,
{
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed),
        max_shrink_iters: 256,
        ..Config::default()
    });
    runner
        .run(&strategy, |v| {
            check(&dev.gpu, &v).map_err(TestCaseError::fail)
        })
        .map_err(|e| format!("{op} on {}: {e}", dev.name))
}

/// A property's check of one generated case.
type Check<V> = dyn Fn(&Gpu, &V) -> Result<(), String>;

/// One property: `cases` in total over the devices; panics with the minimal failing
/// case and the seed.
fn property<S>(op: &str, strategy: impl Fn(&Gpu) -> S, check: &Check<S::Value>)
where
    S: Strategy,
    S::Value: Debug,
{
    let seed = seed_for(op);
    let devs = devices(seed);
    let on_gpu = devs[0].gpu.kind() == BackendKind::Cuda;
    let per = total_cases(on_gpu).div_ceil(devs.len() as u32);
    for (i, d) in devs.iter().enumerate() {
        let t = Instant::now();
        if let Err(e) = run_cases(
            op,
            d,
            per,
            seed.wrapping_add(i as u64),
            strategy(&d.gpu),
            check,
        ) {
            panic!("{e}\n  replay: SIMT_TEST_SEED={seed} cargo test --test properties {op}");
        }
        eprintln!(
            "[{op}] {per} cases on {}: ok in {:.1} s",
            d.name,
            t.elapsed().as_secs_f64()
        );
    }
}

// ---- shapes and values ---------------------------------------------------------------

/// Sizes in `1..=max`, log-uniform (small ones as often as large), with the special
/// ones drawn often: 1, primes, 2^k - 1, 2^k, 2^k + 1.
fn dim(max: usize) -> BoxedStrategy<usize> {
    let mut special: Vec<usize> = vec![1, 2, 3, 5, 7, 13, 31, 61, 127, 251, 509, 1021, 2039, 4093];
    for k in 1..=24 {
        special.extend([(1usize << k) - 1, 1 << k, (1 << k) + 1]);
    }
    special.retain(|&v| v >= 1 && v <= max);
    special.sort_unstable();
    special.dedup();
    let bits = usize::BITS - max.leading_zeros() - 1;
    let log_uniform = (0..=bits).prop_flat_map(move |b| {
        let lo = 1usize << b;
        lo..=max.min((lo << 1) - 1)
    });
    prop_oneof![3 => log_uniform, 2 => prop::sample::select(special)].boxed()
}

/// As [`dim`], and 0 one time in 25 (empty inputs launch nothing and write nothing).
fn dim0(max: usize) -> BoxedStrategy<usize> {
    prop_oneof![24 => dim(max), 1 => Just(0usize)].boxed()
}

/// A matrix view inside a larger buffer: `offset` elements before it, `pad` after
/// each row, `tail` after the last.
#[derive(Clone, Copy, Debug)]
struct View {
    rows: usize,
    cols: usize,
    pad: usize,
    offset: usize,
    tail: usize,
}

impl View {
    fn ld(&self) -> usize {
        self.cols + self.pad
    }
    fn layout(&self) -> Layout {
        Layout::strided(self.rows, self.cols, self.ld())
    }
    fn buffer_len(&self) -> usize {
        self.offset + self.layout().min_len() + self.tail
    }
    /// Buffer index of element (r, c).
    fn at(&self, r: usize, c: usize) -> usize {
        self.offset + r * self.ld() + c
    }
    /// The view's elements, densely, from a whole-buffer copy.
    fn dense<T: Copy>(&self, buf: &[T]) -> Vec<T> {
        let mut v = Vec::with_capacity(self.rows * self.cols);
        if self.cols == 0 {
            return v;
        }
        for r in 0..self.rows {
            v.extend_from_slice(&buf[self.at(r, 0)..self.at(r, 0) + self.cols]);
        }
        v
    }
    fn contains(&self, i: usize) -> bool {
        if i < self.offset || self.rows == 0 || self.cols == 0 {
            return false;
        }
        let j = i - self.offset;
        j / self.ld() < self.rows && j % self.ld() < self.cols
    }
}

/// A view of `rows x cols` with padding 0 half the time (contiguous), an offset of
/// 0-7 elements (0 half the time) and a tail of 0-3.
fn view(rows: BoxedStrategy<usize>, cols: BoxedStrategy<usize>) -> impl Strategy<Value = View> {
    (
        rows,
        cols,
        prop_oneof![Just(0usize), 1..=9usize],
        prop_oneof![Just(0usize), 1..=7usize],
        0..=3usize,
    )
        .prop_map(|(rows, cols, pad, offset, tail)| View {
            rows,
            cols,
            pad,
            offset,
            tail,
        })
}

/// How the values of a case are drawn.
#[derive(Clone, Copy, Debug)]
enum Values {
    /// Uniform in [-1, 1).
    Unit,
    /// Uniform in [-30, 30).
    Wide,
    /// Stability: uniform in [-1e4, 1e4), and in softmax rows some -inf entries, a
    /// row of only -inf and ±1e30.
    Extreme,
}

fn values() -> impl Strategy<Value = Values> {
    prop_oneof![2 => Just(Values::Unit), 1 => Just(Values::Wide), 1 => Just(Values::Extreme)]
}

/// `n` values drawn by `v` from `seed`.
fn fill(seed: u64, n: usize, v: Values) -> Vec<f32> {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    let s = match v {
        Values::Unit => 1.0,
        Values::Wide => 30.0,
        Values::Extreme => 1e4,
    };
    (0..n).map(|_| r.gen_range(-s..s)).collect()
}

/// A buffer of `len` poison words.
fn poison_buf(g: &Gpu, len: usize) -> Result<Buffer<f32>, String> {
    g.upload(&vec![f32::from_bits(POISON); len])
        .map_err(|e| e.to_string())
}

/// Every element outside `v` still holds the poison; no element inside it does.
fn check_untouched(what: &str, buf: &[f32], v: &View) -> Result<(), String> {
    for (i, x) in buf.iter().enumerate() {
        let poisoned = x.to_bits() == POISON;
        match (v.contains(i), poisoned) {
            (false, false) => {
                return Err(format!(
                    "{what}: element {i} outside the output view was written ({x}); view {v:?}"
                ))
            }
            (true, true) => {
                return Err(format!(
                    "{what}: element {i} of the output view was never written; view {v:?}"
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

fn err(e: SimtError) -> String {
    format!("unexpected error: {e}")
}

// ---- GeLU ----------------------------------------------------------------------------

const GELU_RTOL: f64 = 2e-5;
const GELU_ATOL: f64 = 1e-6;

#[derive(Clone, Copy, Debug)]
enum GeluOp {
    Fused(GeluKernel),
    Erf,
    Naive,
}

fn check_gelu(g: &Gpu, &(op, n, vals, seed): &(GeluOp, usize, Values, u64)) -> Result<(), String> {
    let x = fill(seed, n, vals);
    let xb = g.upload(&x).map_err(err)?;
    let mut y = poison_buf(g, n)?;
    let want = match op {
        GeluOp::Fused(k) => {
            gelu_with(g, k, &xb, &mut y).map_err(err)?;
            reference::gelu_tanh(&x)
        }
        GeluOp::Erf => {
            gelu_erf(g, &xb, &mut y).map_err(err)?;
            reference::gelu_erf(&x)
        }
        GeluOp::Naive => {
            let mut tmp = poison_buf(g, n)?;
            gelu_naive(g, &xb, &mut y, &mut tmp).map_err(err)?;
            reference::gelu_tanh(&x)
        }
    };
    let got = g.download(&y).map_err(err)?;
    let all = View {
        rows: 1,
        cols: n,
        pad: 0,
        offset: 0,
        tail: 0,
    };
    check_untouched("gelu", &got, &all)?;
    check_close(&got, &want, GELU_RTOL, GELU_ATOL, 1e-4).map(|_| ())
}

#[test]
fn gelu_any_length() {
    property(
        "gelu",
        |g| {
            let n = if big(g) { 1 << 20 } else { 1 << 14 };
            (
                prop_oneof![
                    proptest::sample::select(GeluKernel::ALL.to_vec()).prop_map(GeluOp::Fused),
                    Just(GeluOp::Erf),
                    Just(GeluOp::Naive)
                ],
                dim0(n),
                values(),
                any::<u64>(),
            )
        },
        &check_gelu,
    );
}

fn check_gelu_matrix(
    g: &Gpu,
    &(xv, yv, vals, seed): &(View, View, Values, u64),
) -> Result<(), String> {
    let x = fill(seed, xv.buffer_len(), vals);
    let xb = g.upload(&x).map_err(err)?;
    let mut yb = poison_buf(g, yv.buffer_len())?;
    gelu_matrix(
        g,
        xb.matrix_at(xv.offset, xv.layout()).map_err(err)?,
        yb.matrix_mut_at(yv.offset, yv.layout()).map_err(err)?,
    )
    .map_err(err)?;
    let got = g.download(&yb).map_err(err)?;
    check_untouched("gelu_matrix", &got, &yv)?;
    check_close(
        &yv.dense(&got),
        &reference::gelu_tanh(&xv.dense(&x)),
        GELU_RTOL,
        GELU_ATOL,
        1e-4,
    )
    .map(|_| ())
}

#[test]
fn gelu_matrix_any_view() {
    property(
        "gelu_matrix",
        |g| {
            let (r, c) = if big(g) { (2048, 4096) } else { (64, 600) };
            (dim0(r), dim0(c)).prop_flat_map(|(rows, cols)| {
                let same = |d: usize| Just(d).boxed();
                (
                    view(same(rows), same(cols)),
                    view(same(rows), same(cols)),
                    values(),
                    any::<u64>(),
                )
            })
        },
        &check_gelu_matrix,
    );
}

// ---- softmax -------------------------------------------------------------------------

/// The kernels that take rows of `cols` columns from view `x` on `g` (what
/// `softmax_with` must accept; the others must refuse with `TooLarge`).
fn softmax_takes(g: &Gpu, k: SoftmaxKernel, cols: usize, x_aligned: bool) -> bool {
    match k {
        SoftmaxKernel::Auto
        | SoftmaxKernel::Online
        | SoftmaxKernel::Looped
        | SoftmaxKernel::Stream => true,
        SoftmaxKernel::ThreePass => has_clusters(g),
        SoftmaxKernel::SharedRow => cols <= max_cols(g),
        SoftmaxKernel::Registers => cols <= REGISTER_MAX_COLS,
        SoftmaxKernel::Cluster => cols <= CLUSTER_MAX_COLS,
        SoftmaxKernel::Split => cols <= split_max_cols(g).unwrap(),
        SoftmaxKernel::SplitAsync => x_aligned && cols <= split_async_max_cols(g).unwrap(),
        // Rows not 16-byte aligned are read as aligned ones up to 3 floats longer.
        SoftmaxKernel::SplitWide => {
            cols + if x_aligned { 0 } else { 3 } <= split_wide_max_cols(g).unwrap()
        }
        // 16-byte units: aligned rows of a multiple of 4 columns (else a Shape error).
        SoftmaxKernel::Bulk => {
            x_aligned && cols.is_multiple_of(4) && cols <= bulk_max_cols(g).unwrap()
        }
        SoftmaxKernel::RowBulk => x_aligned && cols.is_multiple_of(4) && cols <= ROW_BULK_MAX_COLS,
    }
}

const SOFTMAX_KERNELS: [SoftmaxKernel; 13] = SoftmaxKernel::ALL;

/// Softmax rows for `vals`: the stability case puts -inf in about 1 entry in 8,
/// makes one row all -inf (NaN out, as PyTorch) and adds ±1e30.
fn softmax_input(x: &mut [f32], v: &View, vals: Values, seed: u64) {
    if let Values::Extreme = vals {
        let mut r = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5eed);
        let all_inf_row = r.gen_range(0..v.rows.max(1));
        for row in 0..v.rows {
            for c in 0..v.cols {
                let i = v.at(row, c);
                if row == all_inf_row && v.rows > 1 {
                    x[i] = f32::NEG_INFINITY;
                } else {
                    match r.gen_range(0..16) {
                        0 | 1 => x[i] = f32::NEG_INFINITY,
                        2 => x[i] = 1e30,
                        3 => x[i] = -1e30,
                        _ => {}
                    }
                }
            }
        }
    }
}

type SoftmaxCase = (usize, View, View, Values, u64);

fn check_softmax(g: &Gpu, &(ki, xv, yv, vals, seed): &SoftmaxCase) -> Result<(), String> {
    let k = SOFTMAX_KERNELS[ki];
    let mut x = fill(seed, xv.buffer_len(), vals);
    softmax_input(&mut x, &xv, vals, seed);
    let xb = g.upload(&x).map_err(err)?;
    let mut yb = poison_buf(g, yv.buffer_len())?;
    let x_view = xb.matrix_at(xv.offset, xv.layout()).map_err(err)?;
    let aligned = (x_view.ptr() as usize).is_multiple_of(16) && xv.ld().is_multiple_of(4);
    let r = softmax_with(
        g,
        k,
        x_view,
        yb.matrix_mut_at(yv.offset, yv.layout()).map_err(err)?,
    );
    let takes = xv.rows == 0 || xv.cols == 0 || softmax_takes(g, k, xv.cols, aligned);
    match r {
        Err(SimtError::TooLarge { .. }) if !takes => return Ok(()),
        // SplitAsync copies 16-byte vectors: a misaligned view is a Shape error.
        Err(SimtError::Shape { .. }) if k == SoftmaxKernel::SplitAsync && !aligned => return Ok(()),
        // Bulk copies 16-byte units: so are misaligned rows and a column count that is
        // not a multiple of 4.
        Err(SimtError::Shape { .. })
            if matches!(k, SoftmaxKernel::Bulk | SoftmaxKernel::RowBulk)
                && !(aligned && xv.cols % 4 == 0) =>
        {
            return Ok(())
        }
        // Clusters and bulk copies need Hopper.
        Err(SimtError::Unsupported(_))
            if matches!(
                k,
                SoftmaxKernel::Cluster
                    | SoftmaxKernel::Bulk
                    | SoftmaxKernel::RowBulk
                    | SoftmaxKernel::ThreePass
            ) && !has_clusters(g) =>
        {
            return Ok(())
        }
        Err(e) => return Err(format!("{k:?}: {}", err(e))),
        Ok(()) if !takes => {
            return Err(format!("{k:?} accepted {} columns it cannot take", xv.cols))
        }
        Ok(()) => {}
    }
    let got = g.download(&yb).map_err(err)?;
    let want = reference::softmax(&xv.dense(&x), xv.rows, xv.cols);
    let out = yv.dense(&got);
    // An all -inf row is NaN (reference and torch); check_untouched sees NaN written.
    check_untouched(&format!("softmax {k:?}"), &got, &yv)?;
    check_close(&out, &want, 1e-5, 1e-7, 1e-5)
        .map(|_| ())
        .map_err(|e| format!("{k:?}: {e}"))
}

fn softmax_strategy(g: &Gpu) -> impl Strategy<Value = SoftmaxCase> {
    let (r, c) = if big(g) { (512, 300_000) } else { (40, 20_000) };
    let cols = prop_oneof![6 => dim0(c.min(4096)), 1 => dim(c)].boxed();
    (0..SOFTMAX_KERNELS.len(), dim0(r), cols).prop_flat_map(|(k, rows, cols)| {
        let same = |d: usize| Just(d).boxed();
        (
            Just(k),
            view(same(rows), same(cols)),
            view(same(rows), same(cols)),
            values(),
            any::<u64>(),
        )
    })
}

#[test]
fn softmax_every_kernel_any_view() {
    property("softmax", softmax_strategy, &check_softmax);
}

fn check_softmax_naive(
    g: &Gpu,
    &(rows, cols, vals, seed): &(usize, usize, Values, u64),
) -> Result<(), String> {
    let v = View {
        rows,
        cols,
        pad: 0,
        offset: 0,
        tail: 0,
    };
    let mut x = fill(seed, rows * cols, vals);
    softmax_input(&mut x, &v, vals, seed);
    let xb = g.upload(&x).map_err(err)?;
    let mut yb = poison_buf(g, rows * cols)?;
    let mut tmp = poison_buf(g, rows.max(1))?;
    softmax_naive(
        g,
        xb.matrix(rows, cols).map_err(err)?,
        yb.matrix_mut(rows, cols).map_err(err)?,
        &mut tmp,
    )
    .map_err(err)?;
    let got = g.download(&yb).map_err(err)?;
    check_untouched("softmax_naive", &got, &v)?;
    check_close(&got, &reference::softmax(&x, rows, cols), 1e-5, 1e-7, 1e-5).map(|_| ())
}

#[test]
fn softmax_naive_any_shape() {
    property(
        "softmax_naive",
        |g| {
            let (r, c) = if big(g) { (512, 20_000) } else { (40, 3000) };
            (dim0(r), dim0(c), values(), any::<u64>())
        },
        &check_softmax_naive,
    );
}

// ---- row sum -------------------------------------------------------------------------

fn check_row_sum(g: &Gpu, &(xv, vals, seed): &(View, Values, u64)) -> Result<(), String> {
    let x = fill(seed, xv.buffer_len(), vals);
    let xb = g.upload(&x).map_err(err)?;
    let mut out = poison_buf(g, xv.rows)?;
    row_sum(
        g,
        xb.matrix_at(xv.offset, xv.layout()).map_err(err)?,
        &mut out,
    )
    .map_err(err)?;
    let got = g.download(&out).map_err(err)?;
    for r in 0..xv.rows {
        let row = if xv.cols == 0 {
            &[][..]
        } else {
            &x[xv.at(r, 0)..xv.at(r, 0) + xv.cols]
        };
        let want: f64 = row.iter().map(|&v| v as f64).sum();
        let mag: f64 = row.iter().map(|&v| (v as f64).abs()).sum();
        // f32 partial sums: a few ulps of the sum of magnitudes.
        let tol = 1e-6 * mag + 1e-30;
        // `!(err <= tol)`, not `err > tol`: a NaN fails.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        let off = !((got[r] as f64 - want).abs() <= tol);
        if got[r].to_bits() == POISON || off {
            return Err(format!(
                "row {r} of {}x{}: got {} want {want} (tolerance {tol:e})",
                xv.rows, xv.cols, got[r]
            ));
        }
    }
    Ok(())
}

#[test]
fn row_sum_any_view() {
    property(
        "row_sum",
        |g| {
            let (r, c) = if big(g) {
                (4096, 1 << 21)
            } else {
                (300, 1 << 15)
            };
            let rows = prop_oneof![3 => dim0(r.min(64)), 1 => dim0(r)].boxed();
            let cols = prop_oneof![3 => dim0(c.min(2048)), 1 => dim0(c)].boxed();
            (rows, cols)
                .prop_filter("at most 2^22 elements", move |(r, c)| r * c <= 1 << 22)
                .prop_flat_map(|(rows, cols)| {
                    (
                        view(Just(rows).boxed(), Just(cols).boxed()),
                        values(),
                        any::<u64>(),
                    )
                })
        },
        &check_row_sum,
    );
}

// ---- matmul --------------------------------------------------------------------------

/// A product's three views: `A m x k`, `B k x n`, `C m x n`.
#[derive(Clone, Copy, Debug)]
struct Product {
    a: View,
    b: View,
    c: View,
    relu: bool,
    /// A's values are scaled by this (1, or 1e3 for the stability case).
    scale: f32,
}

fn product(m: usize, n: usize, k: usize) -> impl Strategy<Value = Product> {
    let d = |v: usize| Just(v).boxed();
    (
        view(d(m), d(k)),
        view(d(k), d(n)),
        view(d(m), d(n)),
        any::<bool>(),
        prop_oneof![3 => Just(1.0f32), 1 => Just(1e3f32)],
    )
        .prop_map(|(a, b, c, relu, scale)| Product {
            a,
            b,
            c,
            relu,
            scale,
        })
}

/// `(m, n, k)` of a product: squares, skinny ones (m or n of 1), small k.
fn mnk(max: usize, max_k: usize) -> BoxedStrategy<(usize, usize, usize)> {
    prop_oneof![
        4 => (dim0(max), dim0(max), dim0(max_k)),
        1 => (Just(1usize), dim(max), dim(max_k)),
        1 => (dim(max), Just(1usize), dim(max_k)),
        1 => (dim(max), dim(max), dim(8)),
    ]
    .boxed()
}

/// Checks C against float64 of `a·b` (A and B as given, already rounded for
/// reduced precisions), and the poison outside C's view.
/// `out_rtol`: the relative error a 16-bit C adds (its rounding), 0 for f32.
fn check_product_out(
    what: &str,
    p: &Product,
    a: &[f32],
    b: &[f32],
    c: &[f32],
    out_rtol: f64,
) -> Result<(), String> {
    let (m, n, k) = (p.c.rows, p.c.cols, p.a.cols);
    check_untouched(what, c, &p.c)?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    let want = reference::matmul(&p.a.dense(a), &p.b.dense(b), m, n, k, k, n, p.relu);
    let atol = common::matmul_atol(k) * p.scale as f64;
    check_close(&p.c.dense(c), &want, 1e-5 + out_rtol, atol, 1e-5 + out_rtol)
        .map(|_| ())
        .map_err(|e| format!("{what}: {e}"))
}

fn epilogue(relu: bool) -> Epilogue {
    if relu {
        Epilogue::Relu
    } else {
        Epilogue::None
    }
}

/// The matmul kernel a case runs: a stage of [`MatmulKernel::ALL`], a tile with a
/// K split, a GEMV path, a cluster split-K kernel (where the device has clusters,
/// else `Auto`), stage 4k (its stream-K tail where the shape has more tiles than the
/// device's resident blocks and not a whole number of waves: on an emulator of 2
/// workers, as in CI, from 3 tiles; elsewhere it may run the stage 4 it falls back
/// to), stage 4s (its split parts where `tail_plan` gives the shape a plan: on 2
/// workers, 5 tiles from K of about 60 in two equal parts, 7 tiles from K of about
/// 170 in three parts; else stage 4), stage 4w, stage 4ws (its split parts where
/// `wide_tail_plan` gives the shape a plan: on 2 workers, 3 or 5 tiles of 256x128 from K of
/// 64 in two equal parts; else stage 4w) or `Auto`.
fn matmul_kernel(g: &Gpu, ki: usize, tile: usize, split_k: u32) -> MatmulKernel {
    let stages = MatmulKernel::ALL.len();
    match ki {
        _ if ki < stages => MatmulKernel::ALL[ki],
        _ if ki == stages => MatmulKernel::Tile { tile, split_k },
        _ if ki == stages + 1 => MatmulKernel::GemvRow { split_k },
        _ if ki == stages + 2 => MatmulKernel::GemvCol { split_k },
        _ if ki == stages + 3 => MatmulKernel::TileAsync {
            tile: tile % rust_simt::ops::matmul::MM_ASYNC_TILES.len(),
            split_k,
        },
        _ if ki == stages + 4 && rust_simt::ops::softmax::has_clusters(g) => {
            MatmulKernel::TileCluster {
                config: (tile + split_k as usize)
                    % rust_simt::ops::matmul::MM_CLUSTER_CONFIGS.len(),
            }
        }
        _ if ki == stages + 5 => MatmulKernel::WarpTiledStreamK,
        _ if ki == stages + 6 => MatmulKernel::WarpTiledTail,
        _ if ki == stages + 7 => MatmulKernel::WarpTiledWide,
        _ if ki == stages + 8 => MatmulKernel::WarpTiledWideTail,
        _ => MatmulKernel::Auto,
    }
}
const MATMUL_KINDS: usize = MatmulKernel::ALL.len() + 10;

fn check_matmul(
    g: &Gpu,
    &((ki, tile, split_k), p, seed): &((usize, usize, u32), Product, u64),
) -> Result<(), String> {
    let kernel = matmul_kernel(g, ki, tile, split_k);
    let mut a = fill(seed, p.a.buffer_len(), Values::Unit);
    a.iter_mut().for_each(|v| *v *= p.scale);
    let b = fill(seed ^ 1, p.b.buffer_len(), Values::Unit);
    let (ab, bb) = (g.upload(&a).map_err(err)?, g.upload(&b).map_err(err)?);
    let mut cb = poison_buf(g, p.c.buffer_len())?;
    let r = matmul(
        g,
        kernel,
        ab.matrix_at(p.a.offset, p.a.layout()).map_err(err)?,
        bb.matrix_at(p.b.offset, p.b.layout()).map_err(err)?,
        cb.matrix_mut_at(p.c.offset, p.c.layout()).map_err(err)?,
        epilogue(p.relu),
    );
    // A GEMV path asked for a product that is not one (and not empty) is a typed error.
    let (m, n, k) = (p.a.rows, p.b.cols, p.a.cols);
    let misfit = match kernel {
        MatmulKernel::GemvRow { .. } => m != 1,
        MatmulKernel::GemvCol { .. } => n != 1,
        _ => false,
    };
    if misfit && m > 0 && n > 0 && k > 0 {
        return match r {
            Err(SimtError::Shape { .. }) => Ok(()),
            other => Err(format!(
                "matmul {kernel:?} on {m}x{n}x{k}: want a Shape error, got {other:?}"
            )),
        };
    }
    r.map_err(err)?;
    let c = g.download(&cb).map_err(err)?;
    check_product_out(&format!("matmul {kernel:?}"), &p, &a, &b, &c, 0.0)
}

#[test]
fn matmul_every_kernel_any_view() {
    property(
        "matmul",
        |g| {
            let (mx, kx) = if big(g) { (700, 700) } else { (300, 300) };
            let stages = MatmulKernel::ALL.len();
            (
                (
                    0..MATMUL_KINDS,
                    0..rust_simt::ops::matmul::MM_TILES.len(),
                    1..=8u32,
                ),
                mnk(mx, kx),
            )
                .prop_flat_map(move |(kind, (m, n, k))| {
                    // The GEMV paths mostly get their own shape (m = 1 or n = 1), and
                    // sometimes another, which must be a Shape error.
                    let (m, n) = match kind.0 {
                        ki if ki == stages + 1 && m % 4 != 0 => (1, n),
                        ki if ki == stages + 2 && n % 4 != 0 => (m, 1),
                        _ => (m, n),
                    };
                    (Just(kind), product(m, n, k), any::<u64>())
                })
        },
        &check_matmul,
    );
}

// ---- tensor cores ----------------------------------------------------------------------

const TC_STAGES: [TcKernel; 5] = TcKernel::ALL;

/// Whether a view's rows all start 16-byte aligned in a buffer of `eb`-byte elements
/// (as the ops decide it: the start and the row stride, whatever the row count).
fn rows_aligned(buf_ptr: usize, v: &View, eb: usize) -> bool {
    (buf_ptr + v.offset * eb).is_multiple_of(16) && (v.ld() * eb).is_multiple_of(16)
}

/// C in the inputs' 16-bit type, as `torch.relu(A @ B)` on bf16 tensors: the poison
/// of its padding (a NaN in both formats, which no finite product rounds to).
const POISON16: u16 = 0x7fe5;

/// A run's A and B as rounded to the 16-bit type, and C, all as f32.
type Rounded = (Vec<f32>, Vec<f32>, Vec<f32>);

/// Runs `matmul_tc` on the case with f32 C, or with C in `T` when `out16`; returns
/// the rounded inputs and C as f32 (a 16-bit C's untouched poison read back as the
/// f32 poison, so the padding check is the same).
#[allow(clippy::too_many_arguments)]
fn run_tc<T: TcInput + TcOutput + Copy + Default>(
    g: &Gpu,
    stage: TcKernel,
    p: &Product,
    a: &[f32],
    b: &[f32],
    to: fn(f32) -> T,
    back: fn(T) -> f32,
    out16: bool,
) -> Result<Option<Rounded>, String> {
    let (a16, b16): (Vec<T>, Vec<T>) = (
        a.iter().map(|&v| to(v)).collect(),
        b.iter().map(|&v| to(v)).collect(),
    );
    let (ab, bb) = (g.upload(&a16).map_err(err)?, g.upload(&b16).map_err(err)?);
    let mut cb = poison_buf(g, p.c.buffer_len())?;
    // SAFETY: T is bf16 or f16 (16 bits).
    let poison16: T = unsafe { std::mem::transmute_copy(&POISON16) };
    let mut cb16 = g
        .upload(&vec![poison16; if out16 { p.c.buffer_len() } else { 0 }])
        .map_err(err)?;
    let aligned =
        rows_aligned(ab.ptr() as usize, &p.a, 2) && rows_aligned(bb.ptr() as usize, &p.b, 2);
    let (av, bv) = (
        ab.matrix_at(p.a.offset, p.a.layout()).map_err(err)?,
        bb.matrix_at(p.b.offset, p.b.layout()).map_err(err)?,
    );
    let r = if out16 {
        let cv = cb16.matrix_mut_at(p.c.offset, p.c.layout()).map_err(err)?;
        matmul_tc(g, stage, av, bv, cv, epilogue(p.relu))
    } else {
        let cv = cb.matrix_mut_at(p.c.offset, p.c.layout()).map_err(err)?;
        matmul_tc(g, stage, av, bv, cv, epilogue(p.relu))
    };
    let empty = p.c.rows == 0 || p.c.cols == 0 || p.a.cols == 0;
    match r {
        Err(SimtError::Unsupported(_))
            if stage.is_hopper()
                && aligned
                && !empty
                && !g.can_load(&rust_simt::ptx::sm90a::MODULE) =>
        {
            return Ok(None)
        }
        Err(e) => return Err(format!("{} {stage:?}: {}", T::NAME, err(e))),
        Ok(()) => {}
    }
    let c = if out16 {
        g.download(&cb16)
            .map_err(err)?
            .into_iter()
            .map(|x| {
                // SAFETY: as above.
                let bits: u16 = unsafe { std::mem::transmute_copy(&x) };
                if bits == POISON16 {
                    f32::from_bits(POISON)
                } else {
                    back(x)
                }
            })
            .collect()
    } else {
        g.download(&cb).map_err(err)?
    };
    Ok(Some((
        a16.iter().map(|&v| back(v)).collect(),
        b16.iter().map(|&v| back(v)).collect(),
        c,
    )))
}

fn check_tc(
    g: &Gpu,
    &(bf, si, out16, p, seed): &(bool, usize, bool, Product, u64),
) -> Result<(), String> {
    let stage = TC_STAGES[si];
    // A 16-bit C on the Hopper stages; in f16 only without the stability case's
    // scale (its sums can pass f16's 65504).
    let out16 = out16 && stage.writes_16bit() && (bf || p.scale == 1.0);
    let mut a = fill(seed, p.a.buffer_len(), Values::Unit);
    a.iter_mut().for_each(|v| *v *= p.scale);
    let b = fill(seed ^ 1, p.b.buffer_len(), Values::Unit);
    let out = if bf {
        run_tc::<bf16>(g, stage, &p, &a, &b, bf16::from_f32, bf16::to_f32, out16)?
    } else {
        // f16 tops out at 65504: keep the stability case's products in range.
        a.iter_mut().for_each(|v| *v = v.clamp(-60000.0, 60000.0));
        run_tc::<f16>(g, stage, &p, &a, &b, f16::from_f32, f16::to_f32, out16)?
    };
    // A 16-bit C's rounding: at most half an ulp, 2^-9 (bf16) or 2^-12 (f16)
    // relative; the tolerance allows twice that.
    let out_rtol = match (out16, bf) {
        (false, _) => 0.0,
        (true, true) => 2f64.powi(-8),
        (true, false) => 2f64.powi(-11),
    };
    match out {
        None => Ok(()),
        Some((ar, br, c)) => check_product_out(
            &format!(
                "matmul_tc {} {stage:?}{}",
                if bf { "bf16" } else { "f16" },
                if out16 { " (16-bit C)" } else { "" }
            ),
            &p,
            &ar,
            &br,
            &c,
            out_rtol,
        ),
    }
}

#[test]
fn matmul_tc_every_stage_any_view() {
    property(
        "matmul_tc",
        |g| {
            let (mx, kx) = if big(g) { (700, 700) } else { (300, 200) };
            (
                any::<bool>(),
                0..TC_STAGES.len(),
                any::<bool>(),
                mnk(mx, kx),
            )
                .prop_flat_map(|(bf, si, out16, (m, n, k))| {
                    (
                        Just(bf),
                        Just(si),
                        Just(out16),
                        product(m, n, k),
                        any::<u64>(),
                    )
                })
        },
        &check_tc,
    );
}

fn check_tf32(g: &Gpu, &(si, p, seed): &(usize, Product, u64)) -> Result<(), String> {
    let stage = TC_STAGES[si];
    let mut a = fill(seed, p.a.buffer_len(), Values::Unit);
    a.iter_mut().for_each(|v| *v *= p.scale);
    let b = fill(seed ^ 1, p.b.buffer_len(), Values::Unit);
    let (ab, bb) = (g.upload(&a).map_err(err)?, g.upload(&b).map_err(err)?);
    let mut cb = poison_buf(g, p.c.buffer_len())?;
    let aligned =
        rows_aligned(ab.ptr() as usize, &p.a, 4) && rows_aligned(bb.ptr() as usize, &p.b, 4);
    let r = matmul_tf32_with(
        g,
        stage,
        ab.matrix_at(p.a.offset, p.a.layout()).map_err(err)?,
        bb.matrix_at(p.b.offset, p.b.layout()).map_err(err)?,
        cb.matrix_mut_at(p.c.offset, p.c.layout()).map_err(err)?,
        epilogue(p.relu),
    );
    let empty = p.c.rows == 0 || p.c.cols == 0 || p.a.cols == 0;
    let hopper = g.can_load(&rust_simt::ptx::sm90a::MODULE);
    match (stage, r) {
        (_, Ok(())) if empty => {}
        (TcKernel::Mma, Err(SimtError::Unsupported(_))) => return Ok(()),
        (TcKernel::MmaPipelined, Err(SimtError::Shape { .. })) if !aligned => return Ok(()),
        (s, Err(SimtError::Unsupported(_))) if s.is_hopper() && !hopper => return Ok(()),
        (s, Ok(()))
            if s == TcKernel::Mma
                || (s == TcKernel::MmaPipelined && !aligned)
                || (s.is_hopper() && !hopper) =>
        {
            return Err(format!(
                "tf32 {s:?} accepted a case it must refuse (aligned rows: {aligned})"
            ))
        }
        (_, Ok(())) => {}
        (s, Err(e)) => return Err(format!("tf32 {s:?}: {}", err(e))),
    }
    let c = g.download(&cb).map_err(err)?;
    // Each stage's own rounding (they differ on exact ties only).
    let tf32 = stage.tf32_rounding().expect("a stage with a TF32 kernel");
    let (ar, br): (Vec<f32>, Vec<f32>) = (
        a.iter().map(|&v| tf32.round(v)).collect(),
        b.iter().map(|&v| tf32.round(v)).collect(),
    );
    check_product_out(&format!("matmul_tf32 {stage:?}"), &p, &ar, &br, &c, 0.0)
}

#[test]
fn matmul_tf32_every_stage_any_view() {
    property(
        "matmul_tf32",
        |g| {
            let (mx, kx) = if big(g) { (700, 700) } else { (300, 200) };
            (0..TC_STAGES.len(), mnk(mx, kx))
                .prop_flat_map(|(si, (m, n, k))| (Just(si), product(m, n, k), any::<u64>()))
        },
        &check_tf32,
    );
}

// ---- conversions -------------------------------------------------------------------------

/// f32 -> bf16/f16 -> f32 of arbitrary bit patterns (NaN, inf, subnormals, the
/// rounding ties included), bit for bit against the `half` crate (round to nearest
/// even, as PyTorch); NaN only as NaN.
fn check_convert(g: &Gpu, &(n, seed): &(usize, u64)) -> Result<(), String> {
    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
    let x: Vec<f32> = (0..n)
        .map(|i| match i % 3 {
            0 => f32::from_bits(r.gen()),
            // Ties and near-ties of both formats: low mantissa bits around the halfway point.
            1 => f32::from_bits(
                (r.gen::<u32>() & !0x1fff)
                    | [0x1000, 0x0fff, 0x1001, 0x8000, 0x7fff][r.gen_range(0..5)],
            ),
            _ => r.gen_range(-70000.0f32..70000.0),
        })
        .collect();
    let same = |a: u16, b: u16, nan: bool| a == b || nan;
    let xb = g.upload(&x).map_err(err)?;
    let mut hb = g.alloc::<bf16>(n).map_err(err)?;
    to_bf16(g, &xb, &mut hb).map_err(err)?;
    let gb = g.download(&hb).map_err(err)?;
    let mut hf = g.alloc::<f16>(n).map_err(err)?;
    to_f16(g, &xb, &mut hf).map_err(err)?;
    let gf = g.download(&hf).map_err(err)?;
    for i in 0..n {
        let (wb, wf) = (bf16::from_f32(x[i]), f16::from_f32(x[i]));
        if !same(
            gb[i].to_bits(),
            wb.to_bits(),
            x[i].is_nan() && gb[i].is_nan(),
        ) {
            return Err(format!(
                "bf16({:e} = {:#x}): got {:#x} want {:#x}",
                x[i],
                x[i].to_bits(),
                gb[i].to_bits(),
                wb.to_bits()
            ));
        }
        if !same(
            gf[i].to_bits(),
            wf.to_bits(),
            x[i].is_nan() && gf[i].is_nan(),
        ) {
            return Err(format!(
                "f16({:e} = {:#x}): got {:#x} want {:#x}",
                x[i],
                x[i].to_bits(),
                gf[i].to_bits(),
                wf.to_bits()
            ));
        }
    }
    let mut back = poison_buf(g, n)?;
    bf16_to_f32(g, &hb, &mut back).map_err(err)?;
    for (i, v) in g.download(&back).map_err(err)?.iter().enumerate() {
        let w = gb[i].to_f32();
        if v.to_bits() != w.to_bits() && !(v.is_nan() && w.is_nan()) {
            return Err(format!(
                "f32(bf16 {:#x}): got {v:e} want {w:e}",
                gb[i].to_bits()
            ));
        }
    }
    f16_to_f32(g, &hf, &mut back).map_err(err)?;
    for (i, v) in g.download(&back).map_err(err)?.iter().enumerate() {
        let w = gf[i].to_f32();
        if v.to_bits() != w.to_bits() && !(v.is_nan() && w.is_nan()) {
            return Err(format!(
                "f32(f16 {:#x}): got {v:e} want {w:e}",
                gf[i].to_bits()
            ));
        }
    }
    Ok(())
}

#[test]
fn conversions_bit_exact_any_bits() {
    property(
        "convert",
        |g| (dim0(if big(g) { 1 << 20 } else { 1 << 12 }), any::<u64>()),
        &check_convert,
    );
}

// ---- soak ------------------------------------------------------------------------------

/// Device memory in use: `total - free` from `cuMemGetInfo` on a GPU (the whole
/// device, every `Gpu` of this process); on the emulator, every emulator buffer of
/// the process.
fn memory_in_use(g: &Gpu) -> usize {
    match g.kind() {
        BackendKind::Cuda => {
            let m = g.mem_info().unwrap();
            m.total - m.free
        }
        BackendKind::Emulator => rust_simt::emulator::live_bytes(),
    }
}

/// A fixed input through softmax, matmul and GeLU: the output bits, which must not
/// change over a soak.
fn fixed_outputs(g: &Gpu) -> Vec<u32> {
    let x = fill(42, 64 * 1000, Values::Wide);
    let b = fill(43, 1000 * 200, Values::Unit);
    let xb = g.upload(&x).unwrap();
    let bb = g.upload(&b).unwrap();
    let mut y = g.alloc::<f32>(64 * 1000).unwrap();
    rust_simt::ops::softmax::softmax(
        g,
        xb.matrix(64, 1000).unwrap(),
        y.matrix_mut(64, 1000).unwrap(),
    )
    .unwrap();
    let mut c = g.alloc::<f32>(64 * 200).unwrap();
    matmul(
        g,
        MatmulKernel::WarpTiled,
        xb.matrix(64, 1000).unwrap(),
        bb.matrix(1000, 200).unwrap(),
        c.matrix_mut(64, 200).unwrap(),
        Epilogue::Relu,
    )
    .unwrap();
    let mut z = g.alloc::<f32>(64 * 1000).unwrap();
    gelu(g, &xb, &mut z).unwrap();
    [y, c, z]
        .iter()
        .flat_map(|b| g.download(b).unwrap())
        .map(f32::to_bits)
        .collect()
}

/// Loops every property with fresh seeds for `SIMT_SOAK_S` seconds (default 120),
/// `SIMT_SOAK_CASES` cases per op per pass (default 200), and checks that device
/// memory in use after the last pass is within 16 MiB of that after the first, and
/// that a fixed input gives bit-identical outputs after every pass.
#[test]
#[ignore = "soak: SIMT_SOAK_S=120 cargo test --release --test properties -- --ignored soak"]
fn soak() {
    let secs: f64 = std::env::var("SIMT_SOAK_S")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120.0);
    let cases: u32 = std::env::var("SIMT_SOAK_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    SOAK_CASES.store(cases, std::sync::atomic::Ordering::Relaxed);
    let g = common::gpu();
    let fixed = fixed_outputs(&g);
    let props: [(&str, fn()); 9] = [
        ("gelu", gelu_any_length),
        ("gelu_matrix", gelu_matrix_any_view),
        ("softmax", softmax_every_kernel_any_view),
        ("softmax_naive", softmax_naive_any_shape),
        ("row_sum", row_sum_any_view),
        ("matmul", matmul_every_kernel_any_view),
        ("matmul_tc", matmul_tc_every_stage_any_view),
        ("matmul_tf32", matmul_tf32_every_stage_any_view),
        ("convert", conversions_bit_exact_any_bits),
    ];
    let t0 = Instant::now();
    let (mut pass, mut first, mut last, mut peak) = (0u32, 0usize, 0usize, 0usize);
    let mut total_cases = 0u64;
    while pass == 0 || t0.elapsed().as_secs_f64() < secs {
        for (_, p) in props {
            p();
            total_cases += cases as u64;
        }
        pass += 1;
        assert!(
            fixed_outputs(&g) == fixed,
            "soak pass {pass}: a fixed input gave different output bits"
        );
        last = memory_in_use(&g);
        if pass == 1 {
            first = last;
        }
        peak = peak.max(last);
        eprintln!(
            "[soak] pass {pass} done at {:.0}/{secs:.0} s: {total_cases} cases, device memory in use {:.1} MiB (after pass 1: {:.1} MiB)",
            t0.elapsed().as_secs_f64(),
            last as f64 / 1048576.0,
            first as f64 / 1048576.0
        );
    }
    let growth = last as i64 - first as i64;
    eprintln!(
        "[soak] {pass} passes, {total_cases} cases in {:.0} s; memory in use after pass 1 {first} B, at the end {last} B (growth {growth} B), peak {peak} B; fixed outputs unchanged",
        t0.elapsed().as_secs_f64()
    );
    assert!(
        pass >= 2,
        "the soak ran one pass only: raise SIMT_SOAK_S or lower SIMT_SOAK_CASES"
    );
    assert!(
        growth <= 16 << 20,
        "device memory in use grew by {growth} bytes over the soak"
    );
}
