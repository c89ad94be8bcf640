use criterion::{BenchmarkId, Criterion, Throughput};
use rust_simt::ops::softmax::{softmax, softmax_naive};

use crate::common::{data, device_time, group, setup};

pub fn bench(c: &mut Criterion) {
    let (gpu, quick) = setup();
    let shapes: &[(usize, usize)] = if quick {
        &[(64, 512)]
    } else {
        &[(4096, 4096), (4096, 16384)]
    };
    let mut g = group(c, "softmax", quick);
    for &(m, n) in shapes {
        let x = gpu.upload(&data(m * n)).unwrap();
        let mut y = gpu.alloc::<f32>(m * n).unwrap();
        let mut t = gpu.alloc::<f32>(m).unwrap();
        g.throughput(Throughput::Bytes(8 * (m * n) as u64));
        let id = format!("{m}x{n}");
        g.bench_function(BenchmarkId::new("fused", &id), |b| {
            b.iter_custom(|it| {
                device_time(&gpu, it, || {
                    softmax(&gpu, x.matrix(m, n)?, y.matrix_mut(m, n)?)
                })
            })
        });
        g.bench_function(BenchmarkId::new("naive", &id), |b| {
            b.iter_custom(|it| {
                device_time(&gpu, it, || {
                    softmax_naive(&gpu, x.matrix(m, n)?, y.matrix_mut(m, n)?, &mut t)
                })
            })
        });
    }
    g.finish();
}
