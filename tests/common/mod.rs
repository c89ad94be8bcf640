//! Test fixtures: the device, seeded inputs, NaN poisoning, float64 comparisons.
#![allow(dead_code)]
use rand::{Rng, SeedableRng};
use rust_simt::emulator::{EmuConfig, Order};
use rust_simt::{BackendKind, Buffer, Gpu};

/// The device under test, with the lecture's module loaded: the GPU when present,
/// else the emulator (`SIMT_BACKEND` overrides).
pub fn gpu() -> Gpu {
    rust_simt::gpu().unwrap_or_else(|e| panic!("no backend: {e}"))
}

/// An emulator with `cfg`, the lecture's module loaded.
pub fn emulator_with(cfg: EmuConfig) -> Gpu {
    let g = Gpu::emulator(cfg);
    rust_simt::ptx::load(&g).unwrap();
    g
}

/// The emulator with an explicit thread order, the lecture's module loaded.
pub fn emulator(order: Order) -> Gpu {
    emulator_with(EmuConfig {
        order,
        ..EmuConfig::default()
    })
}

/// The emulator with `workers` workers (an emulated device of `workers` SMs, one
/// resident block each) and thread order `order`, the lecture's module loaded.
pub fn emulator_workers(workers: usize, order: Order) -> Gpu {
    emulator_with(EmuConfig {
        workers,
        order,
        ..EmuConfig::default()
    })
}

/// As [`emulator_workers`], on a device that refuses every cooperative launch, as
/// the driver does on a shared (MPS) device.
pub fn emulator_without_cooperative(workers: usize, order: Order) -> Gpu {
    emulator_with(EmuConfig {
        workers,
        order,
        cooperative: false,
        ..EmuConfig::default()
    })
}

/// Whether tests run on a real GPU (larger shapes then).
pub fn on_gpu(g: &Gpu) -> bool {
    g.kind() == BackendKind::Cuda
}

/// A fresh seed per call (or `SIMT_TEST_SEED`), printed so a failure can be replayed.
pub fn rng(test: &str) -> (rand::rngs::StdRng, u64) {
    let seed = std::env::var("SIMT_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen());
    eprintln!("[{test}] seed {seed} (replay with SIMT_TEST_SEED={seed})");
    (rand::rngs::StdRng::seed_from_u64(seed), seed)
}

/// `n` uniform values in `[lo, hi)`.
pub fn uniform(r: &mut impl Rng, n: usize, lo: f32, hi: f32) -> Vec<f32> {
    (0..n).map(|_| r.gen_range(lo..hi)).collect()
}

/// A buffer of `n` NaNs: outputs are poisoned before every run, so an element the
/// kernel forgot to write fails the comparison.
pub fn poisoned(g: &Gpu, n: usize) -> Buffer<f32> {
    g.upload(&vec![f32::NAN; n]).unwrap()
}

/// Compares every element: `|out - ref| <= atol + rtol·|ref|` (NaN only where the
/// reference is NaN, infinities equal), and the error norm: `‖out − ref‖ <= max_rel·‖ref‖`
/// or, for outputs near zero, `‖out − ref‖ <= atol·√n`.
/// On failure prints the op, the seed, the first bad indices and both values.
pub fn assert_close(
    what: &str,
    seed: u64,
    out: &[f32],
    reference: &[f64],
    rtol: f64,
    atol: f64,
    max_rel: f64,
) {
    match check_close(out, reference, rtol, atol, max_rel) {
        Ok(rel) => eprintln!(
            "[{what}] {} elements ok, rel. error norm {rel:.2e}",
            out.len()
        ),
        Err(e) => panic!("{what} (seed {seed}): {e}"),
    }
}

/// [`assert_close`]'s comparison without the panic: the relative error norm, or what
/// is wrong (the first bad indices and both values). For property tests.
pub fn check_close(
    out: &[f32],
    reference: &[f64],
    rtol: f64,
    atol: f64,
    max_rel: f64,
) -> Result<f64, String> {
    if out.len() != reference.len() {
        return Err(format!(
            "length {} vs reference {}",
            out.len(),
            reference.len()
        ));
    }
    let mut bad = Vec::new();
    for (i, (&o, &r)) in out.iter().zip(reference).enumerate() {
        let ok = if r.is_nan() {
            o.is_nan()
        } else if r.is_infinite() {
            o as f64 == r
        } else {
            approx::relative_eq!(o as f64, r, epsilon = atol, max_relative = rtol)
                || (o as f64 - r).abs() <= atol + rtol * r.abs()
        };
        if !ok {
            bad.push(i);
        }
    }
    // ‖out − ref‖ / max(‖ref‖, atol·√n): a relative norm that does not blow up when
    // the reference itself is within the absolute tolerance of zero.
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (&o, &r) in out.iter().zip(reference) {
        if r.is_finite() {
            num += (o as f64 - r).powi(2);
            den += r * r;
        }
    }
    let rel = if den > 0.0 {
        num.sqrt() / den.sqrt()
    } else if num == 0.0 {
        0.0
    } else {
        f64::INFINITY
    };
    let norm_ok = rel <= max_rel || num.sqrt() <= atol * (out.len() as f64).sqrt();
    if !bad.is_empty() || !norm_ok {
        let show: Vec<String> = bad
            .iter()
            .take(8)
            .map(|&i| format!("[{i}] got {} want {}", out[i], reference[i]))
            .collect();
        return Err(format!(
            "{} of {} elements outside |d| <= {atol:e} + {rtol:e}|ref|, rel. error norm {rel:e} (max {max_rel:e})\n  {}",
            bad.len(),
            out.len(),
            show.join("\n  ")
        ));
    }
    Ok(rel)
}

/// The `rows x cols` elements of a row-major buffer with row stride `ld`, densely.
pub fn dense_rows(buf: &[f32], rows: usize, cols: usize, ld: usize) -> Vec<f32> {
    (0..rows)
        .flat_map(|i| buf[i * ld..i * ld + cols].to_vec())
        .collect()
}

/// Absolute tolerance of an f32-accumulated product of depth `k` on values in
/// [-1, 1]: the rounding error of partial sums grows ~eps·k/3 in the worst case seen
/// on a GPU (2.3e-5 at k = 1000; docs/GPU-RUNS.md).
pub fn matmul_atol(k: usize) -> f64 {
    1.2e-7 * k as f64 + 1e-6
}

/// [`assert_close`] with the matmul tolerances: relative 1e-5 per element and in norm,
/// absolute [`matmul_atol`]`(k)` for a sum of `k` products.
pub fn assert_matmul_close(what: &str, seed: u64, out: &[f32], reference: &[f64], k: usize) {
    assert_close(what, seed, out, reference, 1e-5, matmul_atol(k), 1e-5);
}
