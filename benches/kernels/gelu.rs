use criterion::{BenchmarkId, Criterion, Throughput};
use rust_simt::ops::gelu::{gelu, gelu_naive};

use crate::common::{data, device_time, group, setup};

pub fn bench(c: &mut Criterion) {
    let (gpu, quick) = setup();
    let sizes: &[usize] = if quick {
        &[1 << 14]
    } else {
        &[1 << 20, 1 << 24]
    };
    let mut g = group(c, "gelu", quick);
    for &n in sizes {
        let x = gpu.upload(&data(n)).unwrap();
        let mut y = gpu.alloc::<f32>(n).unwrap();
        let mut t = gpu.alloc::<f32>(n).unwrap();
        g.throughput(Throughput::Bytes(8 * n as u64)); // one read + one write per element
        g.bench_function(BenchmarkId::new("fused", n), |b| {
            b.iter_custom(|it| device_time(&gpu, it, || gelu(&gpu, &x, &mut y)))
        });
        g.bench_function(BenchmarkId::new("naive", n), |b| {
            b.iter_custom(|it| device_time(&gpu, it, || gelu_naive(&gpu, &x, &mut y, &mut t)))
        });
    }
    g.finish();
}
