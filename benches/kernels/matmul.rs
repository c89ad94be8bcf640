use criterion::{BenchmarkId, Criterion, Throughput};
use rust_simt::ops::matmul::{matmul, Dims, Epilogue, MatmulKernel};
use rust_simt::ops::matmul_tc::{bf16, matmul_tc, matmul_tf32, to_bf16, TcKernel};

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
                                                                                   // The lecture's stages, then Auto (the tuner's cached pick, else its heuristic).
        for k in MatmulKernel::ALL.into_iter().chain([MatmulKernel::Auto]) {
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
        // Tensor cores: bf16 (inputs converted on the device) and TF32 on the same data.
        let (mut ab, mut bb) = (
            gpu.alloc::<bf16>(n * n).unwrap(),
            gpu.alloc::<bf16>(n * n).unwrap(),
        );
        to_bf16(&gpu, &a, &mut ab).unwrap();
        to_bf16(&gpu, &b, &mut bb).unwrap();
        g.bench_function(BenchmarkId::new("TensorCoreBf16", n), |bch| {
            bch.iter_custom(|iters| {
                device_time(&gpu, iters, || {
                    matmul_tc(
                        &gpu,
                        TcKernel::MmaPipelined,
                        ab.matrix(n, n)?,
                        bb.matrix(n, n)?,
                        out.matrix_mut(n, n)?,
                        Epilogue::Relu,
                    )
                })
            })
        });
        g.bench_function(BenchmarkId::new("TensorCoreTf32", n), |bch| {
            bch.iter_custom(|iters| {
                device_time(&gpu, iters, || {
                    matmul_tf32(
                        &gpu,
                        a.matrix(n, n)?,
                        b.matrix(n, n)?,
                        out.matrix_mut(n, n)?,
                        Epilogue::Relu,
                    )
                })
            })
        });
    }
    g.finish();
}
