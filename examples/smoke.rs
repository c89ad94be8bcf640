use rust_simt::{ops, Gpu};
fn main() -> rust_simt::Result<()> {
    let gpu = Gpu::new()?;
    println!("{}", gpu.describe());
    let x: Vec<f32> = (0..1003).map(|i| (i as f32 - 500.0) / 100.0).collect();
    let y = ops::gelu::gelu_host(&gpu, &x)?;
    let r = rust_simt::reference::gelu_tanh(&x);
    println!("gelu rel err {:e}", rust_simt::reference::rel_err(&y, &r));
    let (m, n, k) = (130, 131, 67);
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 11) as f32 - 5.0) / 5.0).collect();
    let r = rust_simt::reference::matmul(&a, &b, m, n, k, k, n, true);
    for kern in [ops::matmul::MatmulKernel::Naive, ops::matmul::MatmulKernel::Tiled] {
        let t = std::time::Instant::now();
        let c = ops::matmul::matmul_host(&gpu, kern, &a, &b, m, n, k, true)?;
        println!("{kern:?} rel err {:e} in {:?}", rust_simt::reference::rel_err(&c, &r), t.elapsed());
    }
    let s = ops::softmax::softmax_host(&gpu, &x[..1000], 10, 100)?;
    println!("softmax rel err {:e}", rust_simt::reference::rel_err(&s, &rust_simt::reference::softmax(&x[..1000], 10, 100)));
    let rs = ops::row_sum::row_sum_host(&gpu, &x[..1000], 2, 500)?;
    println!("row_sum {:?} vs {:?}", rs, rust_simt::reference::row_sum(&x[..1000], 2, 500, 500));
    Ok(())
}
