//! Matmul + ReLU on tensor cores: `cargo run --release --example matmul_tc [-- N ...]`
//! (`SIMT_TC_ONLY=tf32`, or `bf16`, `f16`, a comma-separated list: only those precisions).
//!
//! For each size: the inputs converted to bf16 / f16 on the device (round to nearest
//! even), stage 5 (`mma.sync` from plain tiles), stage 6 (`cp.async` pipeline,
//! swizzled tiles, `ldmatrix`) and, on Hopper and the emulator, stage 6t (stage 6's
//! `mma.sync` fed by TMA), stage 7 (`wgmma`, TMA,
//! warp specialization) and 8 in bf16 and f16, and stages 6 to 8 in TF32 on the f32
//! inputs; each checked against float64 on sampled rows, both of the rounded inputs
//! (what the kernel must get right) and of the original f32 ones (what the precision
//! costs), then timed. GPU if present, else the emulator (small sizes).
use kernels::matmul_mma_streamk::matmul_mma_streamk_tf32 as S6k;
use kernels::matmul_mma_streamk_tb::matmul_mma_streamk_tb_tf32 as S6kb;
use rust_simt::ops::matmul::Epilogue;
use rust_simt::ops::matmul_tc::{
    bf16, f16, matmul_tc, matmul_tf32_with, to_bf16, to_f16, TcKernel,
};
use rust_simt::{reference, Buffer, Gpu, Kernel, Result};

/// Median ms per call over 7 samples of `reps` back-to-back calls (after a warm-up).
fn time(gpu: &Gpu, reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut t = (0..7)
        .map(|_| {
            gpu.time_ms(|| (0..reps).try_for_each(|_| f()))
                .map(|ms| ms / reps as f64)
        })
        .collect::<Result<Vec<f64>>>()?;
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

/// One size's shared state: the device, the size, the sampled rows and the float64
/// product of the original f32 inputs on them.
struct Case<'a> {
    gpu: &'a Gpu,
    n: usize,
    rows: Vec<usize>,
    exact: Vec<f64>,
    reps: usize,
}

impl Case<'_> {
    /// The sampled rows of an `n x n` matrix.
    fn sample(&self, x: &[f32]) -> Vec<f32> {
        let n = self.n;
        self.rows
            .iter()
            .flat_map(|&r| x[r * n..(r + 1) * n].to_vec())
            .collect()
    }

    /// Poisons C (`poison`), runs `run` once and checks the sampled rows against
    /// `want` (float64 of the rounded inputs) within the f32 accumulation's error plus
    /// `out_eps` (the rounding of a 16-bit C), then times it and prints a row.
    #[allow(clippy::too_many_arguments)]
    fn report<O: cust::memory::DeviceCopy + Default + Clone>(
        &self,
        name: &str,
        peak: f64,
        want: &[f64],
        c: &mut Buffer<O>,
        poison: O,
        to_f32: fn(&O) -> f32,
        out_eps: f64,
        run: &mut dyn FnMut(&mut Buffer<O>) -> Result<()>,
    ) -> Result<()> {
        let (gpu, n) = (self.gpu, self.n);
        gpu.write(c, &vec![poison; n * n])?;
        run(c)?;
        let got: Vec<f32> = gpu.download(c)?.iter().map(to_f32).collect();
        let got = self.sample(&got);
        let (e_r, e_x) = (
            reference::rel_err(&got, want),
            reference::rel_err(&got, &self.exact),
        );
        let ms = time(gpu, self.reps, || run(c))?;
        let tf = 2.0 * (n as f64).powi(3) / ms / 1e9;
        println!(
            "{name:<26} {n:>6} {ms:>10.4} {tf:>9.1} {:>6.1}% {e_r:>12.1e} {e_x:>12.1e}",
            100.0 * tf / peak
        );
        // f32 accumulation of n products: the relative error grows like sqrt(n)·eps.
        let tol = 5e-7 * (n as f64).sqrt() + out_eps;
        assert!(
            e_r < tol,
            "{name}: error {e_r:e} against float64 of the rounded inputs (tolerance {tol:e})"
        );
        Ok(())
    }
}

fn main() -> Result<()> {
    let gpu = rust_simt::gpu()?;
    println!("{}", gpu.describe());
    let full = rust_simt::full_size(&gpu);
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if !sizes.is_empty() {
        sizes
    } else if full {
        vec![2048, 4096, 8192]
    } else {
        vec![256]
    };
    // Dense tensor peaks of an H100 SXM (datasheet), for the "% of peak" column.
    let (peak16, peak_tf32) = (989.0, 494.0);
    // The ceiling of mma.sync itself: register-resident fragments, no memory; with 8
    // warps per SM (2 per scheduler, as stage 6 runs) and with as many as fit.
    for per_sm in if full { vec![1u32, 8] } else { vec![1] } {
        let (blocks, threads, iters) = if full {
            (gpu.props().sms * per_sm, 256u32, 4096u32)
        } else {
            (2, 64, 4)
        };
        let mut out = gpu.alloc::<f32>((blocks * threads) as usize)?;
        let cfg = rust_simt::LaunchConfig::new(
            rust_simt::dim3(blocks, 1, 1),
            rust_simt::dim3(threads, 1, 1),
        );
        type Rate = kernels::selftest::probe_mma_rate;
        // SAFETY: one output per thread, whole warps.
        let ms = time(&gpu, 1, || unsafe {
            gpu.launch::<Rate>(cfg, (out.ptr_mut(), iters))
        })?;
        let flops = (blocks * threads / 32) as f64 * iters as f64 * 16.0 * 4096.0;
        let tf = flops / ms / 1e9;
        println!("mma.sync bf16 m16n8k16 alone (no memory, {per_sm} block(s) of 8 warps per SM launched): {tf:.1} TFLOP/s, {:.1}% of the {peak16} TFLOP/s dense peak", 100.0 * tf / peak16);
    }
    println!(
        "{:<26} {:>6} {:>10} {:>9} {:>7} {:>12} {:>12}",
        "kernel", "n", "ms", "TFLOP/s", "% peak", "err rounded", "err f32 in"
    );
    for n in sizes {
        let a: Vec<f32> = (0..n * n)
            .map(|i| ((i * 7919) % 2001) as f32 / 1000.0 - 1.0)
            .collect();
        let b: Vec<f32> = (0..n * n)
            .map(|i| ((i * 104729) % 2001) as f32 / 1000.0 - 1.0)
            .collect();
        let (af, bf) = (gpu.upload(&a)?, gpu.upload(&b)?);
        let (mut ab, mut bb) = (gpu.alloc::<bf16>(n * n)?, gpu.alloc::<bf16>(n * n)?);
        let (mut ah, mut bh) = (gpu.alloc::<f16>(n * n)?, gpu.alloc::<f16>(n * n)?);
        to_bf16(&gpu, &af, &mut ab)?;
        to_bf16(&gpu, &bf, &mut bb)?;
        to_f16(&gpu, &af, &mut ah)?;
        to_f16(&gpu, &bf, &mut bh)?;
        let mut c = gpu.alloc::<f32>(n * n)?;
        // float64 references of 4 sampled rows.
        let mut case = Case {
            gpu: &gpu,
            n,
            rows: (0..4).map(|i| (i * 2654435761usize + 7) % n).collect(),
            exact: Vec::new(),
            reps: if full { 5 } else { 1 },
        };
        let reference_of = |case: &Case, round: &dyn Fn(f32) -> f32| {
            let (ar, br): (Vec<f32>, Vec<f32>) = (
                case.sample(&a).iter().map(|&v| round(v)).collect(),
                b.iter().map(|&v| round(v)).collect(),
            );
            reference::matmul(&ar, &br, case.rows.len(), n, n, n, n, true)
        };
        case.exact = reference_of(&case, &|v| v);
        let want_bf = reference_of(&case, &|v| bf16::from_f32(v).to_f32());
        let want_h = reference_of(&case, &|v| f16::from_f32(v).to_f32());
        // Each TF32 stage against the inputs rounded its own way (stage 6 ties away,
        // the TMA-fed stages ties to even; they differ on exact ties only).
        let want_tf_of = |stage: TcKernel| {
            let r = stage.tf32_rounding().expect("a stage with a TF32 kernel");
            reference_of(&case, &|v| r.round(v))
        };
        let f32_of = |x: &f32| *x;
        let report = |name: &str,
                      peak: f64,
                      want: &[f64],
                      c: &mut Buffer<f32>,
                      run: &mut dyn FnMut(&mut Buffer<f32>) -> Result<()>| {
            case.report(name, peak, want, c, f32::NAN, f32_of, 0.0, run)
        };
        let hopper = TcKernel::best(&gpu).is_hopper();
        // SIMT_TC_ONLY=tf32 (or bf16, f16, a comma-separated list) times only those.
        let only = std::env::var("SIMT_TC_ONLY").unwrap_or_default();
        let want = |p: &str| only.is_empty() || only.split(',').any(|o| o.trim() == p);
        let mut stages = vec![
            ("bf16 stage 5 (mma)", TcKernel::Mma),
            ("bf16 stage 6 (pipelined)", TcKernel::MmaPipelined),
        ];
        if hopper {
            stages.push(("bf16 stage 6t (mma + TMA)", TcKernel::MmaTma));
            stages.push(("bf16 stage 7 (wgmma)", TcKernel::Wgmma));
            stages.push(("bf16 stage 8 (multicast)", TcKernel::WgmmaCluster));
        }
        stages.retain(|_| want("bf16"));
        for (name, stage) in stages {
            report(name, peak16, &want_bf, &mut c, &mut |c| {
                matmul_tc(
                    &gpu,
                    stage,
                    ab.matrix(n, n)?,
                    bb.matrix(n, n)?,
                    c.matrix_mut(n, n)?,
                    Epilogue::Relu,
                )
            })?;
        }
        let mut f16_stages = vec![("f16 stage 6 (pipelined)", TcKernel::MmaPipelined)];
        if hopper {
            f16_stages.push(("f16 stage 6t (mma + TMA)", TcKernel::MmaTma));
            f16_stages.push(("f16 stage 7 (wgmma)", TcKernel::Wgmma));
            f16_stages.push(("f16 stage 8 (multicast)", TcKernel::WgmmaCluster));
        }
        if !want("f16") {
            f16_stages.clear();
        }
        if hopper && want("bf16") && want("f16") {
            // C in the inputs' precision, as torch.relu(A @ B) returns on bf16/f16
            // tensors: each element rounded once more (relative 2^-9 bf16, 2^-12 f16).
            let mut c16 = gpu.alloc::<bf16>(n * n)?;
            let name = "bf16 stage 8 -> bf16 C";
            case.report(
                name,
                peak16,
                &want_bf,
                &mut c16,
                bf16::NAN,
                |x| x.to_f32(),
                4e-3,
                &mut |c| {
                    matmul_tc(
                        &gpu,
                        TcKernel::WgmmaCluster,
                        ab.matrix(n, n)?,
                        bb.matrix(n, n)?,
                        c.matrix_mut(n, n)?,
                        Epilogue::Relu,
                    )
                },
            )?;
            let mut c16 = gpu.alloc::<f16>(n * n)?;
            let name = "f16 stage 8 -> f16 C";
            case.report(
                name,
                peak16,
                &want_h,
                &mut c16,
                f16::NAN,
                |x| x.to_f32(),
                5e-4,
                &mut |c| {
                    matmul_tc(
                        &gpu,
                        TcKernel::WgmmaCluster,
                        ah.matrix(n, n)?,
                        bh.matrix(n, n)?,
                        c.matrix_mut(n, n)?,
                        Epilogue::Relu,
                    )
                },
            )?;
        }
        for (name, stage) in f16_stages {
            report(name, peak16, &want_h, &mut c, &mut |c| {
                matmul_tc(
                    &gpu,
                    stage,
                    ah.matrix(n, n)?,
                    bh.matrix(n, n)?,
                    c.matrix_mut(n, n)?,
                    Epilogue::Relu,
                )
            })?;
        }
        let mut tf32_stages = vec![("tf32 stage 6 (pipelined)", TcKernel::MmaPipelined)];
        if hopper {
            // Stages 6t, 7 and 8 include their rounding copy of B (transposed); A is
            // read in place, rounded by its TF32 tensor map.
            tf32_stages.push(("tf32 stage 6t (mma + TMA)", TcKernel::MmaTma));
            tf32_stages.push(("tf32 stage 7 (wgmma)", TcKernel::Wgmma));
            tf32_stages.push(("tf32 stage 8 (multicast)", TcKernel::WgmmaCluster));
        }
        tf32_stages.retain(|_| want("tf32"));
        for (name, stage) in tf32_stages {
            let mut run = |c: &mut Buffer<f32>| {
                matmul_tf32_with(
                    &gpu,
                    stage,
                    af.matrix(n, n)?,
                    bf.matrix(n, n)?,
                    c.matrix_mut(n, n)?,
                    Epilogue::Relu,
                )
            };
            // `MmaTma` runs stage 6t, 6k or 6kb by the shape (TcKernel::MmaTma's
            // docs): name the one that ran.
            let (_, launches) = gpu.profile(|| run(&mut c))?;
            let ran = |k: &str| launches.iter().any(|l| l.kernel == k);
            let name = if ran(S6kb::NAME) {
                "tf32 stage 6kb (mma + TMA)"
            } else if ran(S6k::NAME) {
                "tf32 stage 6k (mma + TMA)"
            } else {
                name
            };
            report(name, peak_tf32, &want_tf_of(stage), &mut c, &mut run)?;
        }
    }
    println!("err rounded: against float64 of the bf16/f16/tf32-rounded inputs (the kernel's own error);");
    println!("err f32 in: against float64 of the f32 inputs (what the precision costs: bf16 keeps 8 mantissa bits, f16 and tf32 11).");
    Ok(())
}
