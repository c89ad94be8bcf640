use criterion::{BenchmarkId, Criterion, Throughput};
use rust_simt::ops::row_sum::row_sum;

use crate::common::{data, device_time, group, setup};

pub fn bench(c: &mut Criterion) {
    let (gpu, quick) = setup();
    let shapes: &[(usize, usize)] = if quick {
        &[(4, 1 << 14), (1024, 16)]
    } else {
        &[(4, 1 << 24), (1 << 16, 256)]
    };
    let mut g = group(c, "row_sum", quick);
    for &(r, n) in shapes {
        let x = gpu.upload(&data(r * n)).unwrap();
        let mut o = gpu.alloc::<f32>(r).unwrap();
        g.throughput(Throughput::Bytes(4 * (r * n + r) as u64));
        g.bench_function(BenchmarkId::new("rows x cols", format!("{r}x{n}")), |b| {
            b.iter_custom(|it| device_time(&gpu, it, || row_sum(&gpu, x.matrix(r, n)?, &mut o)))
        });
    }
    g.finish();
}
