use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion};
use rust_simt::{BackendKind, Gpu};

/// The device, and whether to run the quick (tiny, short) mode.
pub fn setup() -> (Gpu, bool) {
    let gpu = rust_simt::gpu().expect("no backend");
    let quick = gpu.kind() == BackendKind::Emulator
        || std::env::var("SIMT_BENCH_QUICK").is_ok_and(|v| v == "1");
    eprintln!(
        "{}{}",
        gpu.describe(),
        if quick { " [quick mode]" } else { "" }
    );
    (gpu, quick)
}

/// A group with timings suited to the mode.
pub fn group<'c>(c: &'c mut Criterion, name: &str, quick: bool) -> BenchmarkGroup<'c, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10);
    if quick {
        g.warm_up_time(Duration::from_millis(50))
            .measurement_time(Duration::from_millis(200));
    } else {
        g.warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(2));
    }
    g
}

/// `iters` back-to-back launches of `f`, timed on the device.
pub fn device_time(
    gpu: &Gpu,
    iters: u64,
    mut f: impl FnMut() -> rust_simt::Result<()>,
) -> Duration {
    let ms = gpu
        .time_ms(|| {
            for _ in 0..iters {
                f()?;
            }
            Ok(())
        })
        .expect("benchmark launch failed");
    Duration::from_secs_f64(ms * 1e-3)
}

/// Deterministic non-zero inputs.
pub fn data(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 2654435761) % 1000) as f32 / 500.0 - 1.0)
        .collect()
}
