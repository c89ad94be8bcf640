use criterion::{BenchmarkId, Criterion, Throughput};
use rust_simt::ops::matmul::{matmul, Dims, Epilogue, MatmulKernel};

use crate::common::{data, device_time, group, setup};

pub fn bench(c: &mut Criterion) {
    let (gpu, quick) = setup();
    let sizes: &[usize] = if quick {
        &[64, 128]
    } else {
        &[1024, 2048, 4096]
    };
    let mut g = group(c, "matmul_relu", quick);
    for &n in sizes {
        let a = gpu.upload(&data(n * n)).unwrap();
        let b = gpu.upload(&data(n * n)).unwrap();
        let mut out = gpu.alloc::<f32>(n * n).unwrap();
        g.throughput(Throughput::Elements(Dims { m: n, n, k: n }.flops() as u64)); // FLOPs
        for k in MatmulKernel::ALL {
            g.bench_function(BenchmarkId::new(format!("{k:?}"), n), |bch| {
                bch.iter_custom(|iters| {
                    device_time(&gpu, iters, || {
                        matmul(
                            &gpu,
                            k,
                            a.matrix(n, n)?,
                            b.matrix(n, n)?,
                            out.matrix_mut(n, n)?,
                            Epilogue::Relu,
                        )
                    })
                })
            });
        }
    }
    g.finish();
}
