//! The lecture's sections as runnable demos: each checks its kernels against a
//! float64 reference, times them with the harness, and states, measured, what the
//! lecture observes. The examples run one section each; the main binary runs them in order.
use rand::{Rng, SeedableRng};

use crate::bench::{copy_bandwidth, BenchConfig, Bencher, Stats};
use crate::ops::matmul::{matmul, Dims, Epilogue, MatmulKernel};
use crate::ops::{gelu, row_sum, softmax};
use crate::Result;
use crate::{info, profile, reference, BackendKind};
use crate::{Buffer, Gpu};

/// Shared state of a walk-through: the device, its measured ceilings, problem sizes.
pub struct Demo<'g> {
    pub gpu: &'g Gpu,
    /// Measured device-to-device copy bandwidth (read + write), GB/s.
    pub copy_gbps: f64,
    /// FP32 peak from the device table (SMs x 128 lanes x 2 x clock), TFLOP/s.
    pub fp32_tflops: f64,
    pub big: bool,
    seed: u64,
}

fn verdict(rel: f64, tol: f64) -> String {
    if rel <= tol {
        format!("rel. error {rel:.1e} (tol {tol:.0e}) OK")
    } else {
        format!("rel. error {rel:.1e} (tol {tol:.0e}) MISMATCH")
    }
}

impl<'g> Demo<'g> {
    /// Measures the copy ceiling and picks sizes (full on a GPU, small on the emulator).
    pub fn new(gpu: &'g Gpu) -> Result<Demo<'g>> {
        // SIMT_SMALL=1: emulator-sized problems on a GPU too (for compute-sanitizer runs).
        let big = gpu.kind() == BackendKind::Cuda
            && std::env::var("SIMT_SMALL").map_or(true, |v| v != "1");
        let copy_gbps = copy_bandwidth(gpu, if big { 1 << 30 } else { 1 << 22 })?;
        let fp32_tflops = gpu.props().peak_fp32() / 1e12;
        Ok(Demo {
            gpu,
            copy_gbps,
            fp32_tflops,
            big,
            seed: 2026,
        })
    }

    fn rand(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        self.seed += 1;
        let mut r = rand::rngs::StdRng::seed_from_u64(self.seed);
        (0..n).map(|_| r.gen_range(lo..hi)).collect()
    }

    fn bencher(&self) -> Result<Bencher<'g>> {
        Bencher::new(self.gpu, BenchConfig::for_gpu(self.gpu))
    }

    fn mem_line(&self, what: &str, s: &Stats, bytes: f64) -> String {
        let gb = s.gbps(bytes);
        format!(
            "  {what:<28} {:>9.4} ms  {:>8.1} GB/s  {:>5.1}% of copy bandwidth",
            s.median_ms,
            gb,
            100.0 * gb / self.copy_gbps
        )
    }

    /// Section 1: the device, and occupancy from a real kernel's resources.
    pub fn gpu_info(&mut self) -> Result<()> {
        println!("== GPU: what we are running on ==");
        println!("{}", self.gpu.describe());
        print!("{}", info::device_table(self.gpu));
        println!(
            "  measured copy bandwidth (read+write)  {:.0} GB/s",
            self.copy_gbps
        );
        // Occupancy of the tiled matmul from its actual registers and shared memory.
        type Tiled = kernels::matmul_tiled::matmul_relu_tiled;
        let name = <Tiled as crate::Kernel>::NAME;
        crate::ptx::load(self.gpu)?;
        let res = match self.gpu.kernel_resources::<Tiled>()? {
            Some(r) => Some((r.registers, r.static_smem_bytes, "driver")),
            None => profile::find_ptxas()
                .and_then(|p| profile::ptxas_report(&p, "sm_90").ok())
                .and_then(|r| r.into_iter().find(|x| x.kernel == name))
                .map(|r| (r.registers, r.smem_bytes, "ptxas -arch=sm_90")),
        };
        if let Some((regs, smem, src)) = res {
            let mut p = self.gpu.props().clone();
            if self.gpu.kind() == BackendKind::Emulator {
                // occupancy is a GPU notion: show it for an H100's limits
                p.max_threads_per_sm = 2048;
                p.regs_per_sm = 65536;
                p.smem_per_sm = 233472;
            }
            let threads = kernels::config::MM_THREADS;
            let (blocks, limit) = info::occupancy(&p, threads, regs, smem);
            println!(
                "  occupancy of `{name}` ({src}: {regs} registers/thread, {smem} B shared/block, {threads} threads/block):\n    \
                 {blocks} blocks/SM = {} warps of {} ({:.0}%), limited by {limit}",
                blocks * threads / 32,
                p.max_threads_per_sm / 32,
                100.0 * (blocks * threads) as f64 / p.max_threads_per_sm as f64
            );
        }
        println!();
        Ok(())
    }

    /// Section 2: GeLU, 7 kernels vs 1.
    pub fn gelu(&mut self) -> Result<()> {
        let n = if self.big { 1 << 24 } else { 1 << 16 };
        println!("== GeLU, n = {n}: PyTorch-eager composition (7 kernels) vs fused (1 kernel) ==");
        let g = self.gpu;
        let x = self.rand(n, -6.0, 6.0);
        let want = reference::gelu_tanh(&x);
        let xb = g.upload(&x)?;
        let mut y = g.upload(&vec![f32::NAN; n])?;
        let mut tmp = g.alloc::<f32>(n)?;
        let (_, naive_k) = g.profile(|| gelu::gelu_naive(g, &xb, &mut y, &mut tmp))?;
        println!(
            "  naive: {} launches, {}",
            naive_k.len(),
            verdict(reference::rel_err(&g.download(&y)?, &want), 1e-5)
        );
        let mut y = g.upload(&vec![f32::NAN; n])?;
        let (_, fused_k) = g.profile(|| gelu::gelu(g, &xb, &mut y))?;
        println!(
            "  fused: {} launch,    {}",
            fused_k.len(),
            verdict(reference::rel_err(&g.download(&y)?, &want), 1e-5)
        );
        let mut b = self.bencher()?;
        let sn = b.run(|| gelu::gelu_naive(g, &xb, &mut y, &mut tmp))?;
        let sf = b.run(|| gelu::gelu(g, &xb, &mut y))?;
        let naive_bytes: u32 = kernels::gelu::NAIVE_STAGES.iter().map(|s| s.1).sum();
        println!(
            "{}",
            self.mem_line(
                &format!("naive ({naive_bytes} B/elem moved)"),
                &sn,
                naive_bytes as f64 * n as f64
            )
        );
        println!("{}", self.mem_line("fused (8 B/elem)", &sf, 8.0 * n as f64));
        println!(
            "  => fused is {:.1}x faster: {} launches -> 1 and {}n -> 8n bytes; the fused kernel runs at {:.0}% of the copy bandwidth\n",
            sn.median_ms / sf.median_ms,
            naive_k.len(),
            naive_bytes,
            100.0 * sf.gbps(8.0 * n as f64) / self.copy_gbps
        );
        Ok(())
    }

    /// Section 3: softmax, row fits in a block.
    pub fn softmax(&mut self) -> Result<()> {
        let (m, n) = if self.big { (4096, 4096) } else { (256, 1024) };
        println!(
            "== Softmax, {m} x {n}: naive (5 kernels) vs fused (one block per row, row on chip) =="
        );
        let g = self.gpu;
        let x = self.rand(m * n, -8.0, 8.0);
        let want = reference::softmax(&x, m, n);
        let xb = g.upload(&x)?;
        let mut y = g.upload(&vec![f32::NAN; m * n])?;
        let mut tmp = g.alloc::<f32>(m)?;
        let (_, nk) = g.profile(|| {
            softmax::softmax_naive(g, xb.matrix(m, n)?, y.matrix_mut(m, n)?, &mut tmp)
        })?;
        println!(
            "  naive: {} launches, {}",
            nk.len(),
            verdict(reference::rel_err(&g.download(&y)?, &want), 1e-5)
        );
        let mut y = g.upload(&vec![f32::NAN; m * n])?;
        let (_, fk) = g.profile(|| softmax::softmax(g, xb.matrix(m, n)?, y.matrix_mut(m, n)?))?;
        println!(
            "  fused: {} launch,    {}",
            fk.len(),
            verdict(reference::rel_err(&g.download(&y)?, &want), 1e-5)
        );
        let mut b = self.bencher()?;
        let sn =
            b.run(|| softmax::softmax_naive(g, xb.matrix(m, n)?, y.matrix_mut(m, n)?, &mut tmp))?;
        let sf = b.run(|| softmax::softmax(g, xb.matrix(m, n)?, y.matrix_mut(m, n)?))?;
        let (mn, mf) = ((m * n) as f64, m as f64);
        let naive_bytes = 4.0 * ((5.0 * mn + 2.0 * mf) + (3.0 * mn + 2.0 * mf));
        println!(
            "{}",
            self.mem_line("naive (5MN+2M rd, 3MN+2M wr)", &sn, naive_bytes)
        );
        println!("{}", self.mem_line("fused (MN rd, MN wr)", &sf, 8.0 * mn));
        println!(
            "  => fused is {:.1}x faster than naive\n",
            sn.median_ms / sf.median_ms
        );
        Ok(())
    }

    /// Section 4: row sum when a row does not fit in a block.
    pub fn row_sum(&mut self) -> Result<()> {
        println!("== Row sum: rows longer than a block (tiles, warp shuffles, shared memory, a count per row) ==");
        let g = self.gpu;
        let shapes: [(usize, usize); 2] = if self.big {
            [(8, 1 << 22), (1 << 16, 256)]
        } else {
            [(4, 1 << 16), (4096, 64)]
        };
        let mut b = self.bencher()?;
        for (rows, cols) in shapes {
            let x = self.rand(rows * cols, -1.0, 1.0);
            let want = reference::row_sum(&x, rows, cols, cols);
            let xb = g.upload(&x)?;
            let mut out = g.upload(&vec![f32::NAN; rows])?;
            row_sum::row_sum(g, xb.matrix(rows, cols)?, &mut out)?;
            let (splits, chunk) = row_sum::plan(g, rows, cols);
            // (A whole buffer starts 16-byte aligned: Auto's WarpWide takes its rows.)
            let how = if (row_sum::WIDE_MIN_COLS..=kernels::config::WARP_ROW_MAX_COLS as usize)
                .contains(&cols)
                && cols % 4 == 0
            {
                "a warp per row (row_sum_warp_wide, 4 loads a lane in flight, no barriers)"
                    .to_string()
            } else if cols <= kernels::config::WARP_ROW_MAX_COLS as usize {
                format!(
                    "{} lanes per row (row_sum_warp, no barriers)",
                    row_sum::lanes_per_row(cols)
                )
            } else if splits > 1 {
                format!(
                    "{splits} block(s) per row ({chunk} columns each; the row's last block adds their sums in order)"
                )
            } else {
                format!("{splits} block(s) per row ({chunk} columns each)")
            };
            println!(
                "  {rows} x {cols}: {how}, {}",
                verdict(reference::rel_err(&g.download(&out)?, &want), 1e-5)
            );
            let s = b.run(|| row_sum::row_sum(g, xb.matrix(rows, cols)?, &mut out))?;
            println!(
                "{}",
                self.mem_line(
                    &format!("{rows} x {cols}"),
                    &s,
                    4.0 * (rows * cols + rows) as f64
                )
            );
        }
        println!();
        Ok(())
    }

    /// Section 5: matmul + ReLU, naive vs tiled.
    pub fn matmul(&mut self) -> Result<()> {
        let n = if self.big { 4096 } else { 256 };
        println!("== Matmul + ReLU, {n}^3 float32: naive vs tiled (128x128 tiles, 8x8 per thread, swizzled) vs double-buffered vs warp-tiled ==");
        let g = self.gpu;
        let a = self.rand(n * n, -1.0, 1.0);
        let bm = self.rand(n * n, -1.0, 1.0);
        let (ab, bb) = (g.upload(&a)?, g.upload(&bm)?);
        let shape = Dims { m: n, n, k: n };
        // Check 16 sampled rows against float64 (the full reference is 2n^3 CPU FLOPs).
        let rows: Vec<usize> = (0..16).map(|i| (i * 2654435761usize) % n).collect();
        let a_rows: Vec<f32> = rows
            .iter()
            .flat_map(|&r| a[r * n..(r + 1) * n].to_vec())
            .collect();
        let want = reference::matmul(&a_rows, &bm, rows.len(), n, n, n, n, true);
        let mut c = g.alloc::<f32>(n * n)?;
        let mut b = self.bencher()?;
        let mut stats = Vec::new();
        for kern in MatmulKernel::ALL {
            g.write(&mut c, &vec![f32::NAN; n * n])?;
            matmul(
                g,
                kern,
                ab.matrix(n, n)?,
                bb.matrix(n, n)?,
                c.matrix_mut(n, n)?,
                Epilogue::Relu,
            )?;
            let got = g.download(&c)?;
            let got_rows: Vec<f32> = rows
                .iter()
                .flat_map(|&r| got[r * n..(r + 1) * n].to_vec())
                .collect();
            let all_written = got.iter().all(|v| !v.is_nan());
            let s = b.run(|| {
                matmul(
                    g,
                    kern,
                    ab.matrix(n, n)?,
                    bb.matrix(n, n)?,
                    c.matrix_mut(n, n)?,
                    Epilogue::Relu,
                )
            })?;
            let tf = s.tflops(shape.flops());
            println!(
                "  {kern:?}: {} on 16 sampled rows, all {} outputs written: {all_written}\n  {:<28} {:>9.3} ms  {:>7.2} TFLOP/s  {} of FP32 peak",
                verdict(reference::rel_err(&got_rows, &want), 1e-5),
                n * n,
                format!("{kern:?}"),
                s.median_ms,
                tf,
                if self.fp32_tflops > 0.0 { format!("{:>5.1}%", 100.0 * tf / self.fp32_tflops) } else { "n/a".into() }
            );
            stats.push(s);
        }
        let speedups: Vec<String> = MatmulKernel::ALL
            .iter()
            .zip(&stats)
            .skip(1)
            .map(|(k, s)| format!("{} {:.1}x", k.name(), stats[0].median_ms / s.median_ms))
            .collect();
        println!("  => speed-up over naive: {}\n", speedups.join(", "));
        Ok(())
    }

    /// The GeLU input and output of sections 6 and 7: n random floats in [-1, 1] and an
    /// output buffer (n = 2^22, or 2^14 for small runs).
    fn gelu_buffers(&mut self) -> Result<(usize, Buffer<f32>, Buffer<f32>)> {
        let n = if self.big { 1 << 22 } else { 1 << 14 };
        let x = self.gpu.upload(&self.rand(n, -1.0, 1.0))?;
        Ok((n, x, self.gpu.alloc::<f32>(n)?))
    }

    /// Section 5b: the same matmul on tensor cores (bf16, f16, tf32): `mma.sync`
    /// (stage 6), then Hopper's `wgmma` + TMA (stage 7, and stage 8 as `wgmma+`: C stored by
    /// TMA, groups in flight, clusters sharing B) where the device runs it.
    pub fn tensor_cores(&mut self) -> Result<()> {
        use crate::ops::matmul_tc::{
            bf16, f16, matmul_tc, matmul_tf32_with, to_bf16, to_f16, TcKernel,
        };
        let n = if self.big { 4096 } else { 256 };
        let hopper = TcKernel::best(self.gpu).is_hopper();
        println!(
            "== Matmul + ReLU, {n}^3 on tensor cores: bf16, f16 and tf32 inputs, f32 accumulation: mma.sync{} ==",
            if hopper { ", then wgmma + TMA (Hopper; wgmma+ = stage 8: TMA stores, clusters)" } else { "" }
        );
        let g = self.gpu;
        let a = self.rand(n * n, -1.0, 1.0);
        let bm = self.rand(n * n, -1.0, 1.0);
        let (af, bf) = (g.upload(&a)?, g.upload(&bm)?);
        let (mut ab, mut bb) = (g.alloc::<bf16>(n * n)?, g.alloc::<bf16>(n * n)?);
        let (mut ah, mut bh) = (g.alloc::<f16>(n * n)?, g.alloc::<f16>(n * n)?);
        to_bf16(g, &af, &mut ab)?;
        to_bf16(g, &bf, &mut bb)?;
        to_f16(g, &af, &mut ah)?;
        to_f16(g, &bf, &mut bh)?;
        let rows: Vec<usize> = (0..8).map(|i| (i * 2654435761usize) % n).collect();
        let a_rows: Vec<f32> = rows
            .iter()
            .flat_map(|&r| a[r * n..(r + 1) * n].to_vec())
            .collect();
        let exact = reference::matmul(&a_rows, &bm, rows.len(), n, n, n, n, true);
        let flops = Dims { m: n, n, k: n }.flops();
        let mut c = g.alloc::<f32>(n * n)?;
        let mut b = self.bencher()?;
        // Dense tensor peaks of an H100 SXM (datasheet).
        let mut runs = vec![
            ("bf16", "mma.sync", TcKernel::MmaPipelined, 989.0),
            ("f16", "mma.sync", TcKernel::MmaPipelined, 989.0),
            ("tf32", "mma.sync", TcKernel::MmaPipelined, 494.0),
        ];
        if hopper {
            runs.extend([
                ("bf16", "wgmma", TcKernel::Wgmma, 989.0),
                ("f16", "wgmma", TcKernel::Wgmma, 989.0),
                ("tf32", "wgmma", TcKernel::Wgmma, 494.0),
                ("bf16", "wgmma+", TcKernel::WgmmaCluster, 989.0),
                ("f16", "wgmma+", TcKernel::WgmmaCluster, 989.0),
                ("tf32", "wgmma+", TcKernel::WgmmaCluster, 494.0),
            ]);
        }
        for (name, how, stage, peak) in runs {
            let run = |c: &mut crate::Buffer<f32>| -> Result<()> {
                match name {
                    "bf16" => matmul_tc(
                        g,
                        stage,
                        ab.matrix(n, n)?,
                        bb.matrix(n, n)?,
                        c.matrix_mut(n, n)?,
                        Epilogue::Relu,
                    ),
                    "f16" => matmul_tc(
                        g,
                        stage,
                        ah.matrix(n, n)?,
                        bh.matrix(n, n)?,
                        c.matrix_mut(n, n)?,
                        Epilogue::Relu,
                    ),
                    _ => matmul_tf32_with(
                        g,
                        stage,
                        af.matrix(n, n)?,
                        bf.matrix(n, n)?,
                        c.matrix_mut(n, n)?,
                        Epilogue::Relu,
                    ),
                }
            };
            g.write(&mut c, &vec![f32::NAN; n * n])?;
            run(&mut c)?;
            let got = g.download(&c)?;
            let got_rows: Vec<f32> = rows
                .iter()
                .flat_map(|&r| got[r * n..(r + 1) * n].to_vec())
                .collect();
            let err = reference::rel_err(&got_rows, &exact);
            let s = b.run(|| run(&mut c))?;
            let tf = s.tflops(flops);
            println!("  {name:<5} {how:<8} {:>9.3} ms {tf:>8.1} TFLOP/s {:>5.1}% of the {peak} TFLOP/s tensor peak, rel. error {err:.1e} vs float64 of the f32 inputs", s.median_ms, 100.0 * tf / peak);
        }
        println!("  bf16 keeps 8 mantissa bits (f16 and tf32 keep 11, f32 24): each input is off by up to 2^-9 before any");
        println!("  arithmetic, so bf16 lands near 1e-3 against the f32 product; the f32 accumulation adds little.\n");
        Ok(())
    }

    /// Section 6: benchmarking done right (warm-up, events, L2 flush, median).
    pub fn benchmarking(&mut self) -> Result<()> {
        println!("== Benchmarking: why warm-ups, events, L2 flushes and medians ==");
        let g = self.gpu;
        let (n, x, mut y) = self.gelu_buffers()?;
        let cold = g.time_ms(|| gelu::gelu(g, &x, &mut y))?;
        let hot = Stats::from_samples(
            (0..20)
                .map(|_| g.time_ms(|| gelu::gelu(g, &x, &mut y)))
                .collect::<Result<Vec<_>>>()?,
        );
        let mut b = self.bencher()?;
        let flushed = b.run(|| gelu::gelu(g, &x, &mut y))?;
        println!("  fused GeLU, n = {n} ({} MB in + out):", 8 * n / 1_000_000);
        println!("    first call (cold)                      {cold:>9.4} ms");
        println!(
            "    warm, inputs resident in L2, median    {:>9.4} ms  (p10 {:.4}, p90 {:.4})",
            hot.median_ms, hot.p10_ms, hot.p90_ms
        );
        println!(
            "    warm, L2 flushed before each, median   {:>9.4} ms  (p10 {:.4}, p90 {:.4})",
            flushed.median_ms, flushed.p10_ms, flushed.p90_ms
        );
        println!("  Scaling: fused GeLU throughput vs size (small sizes are launch-bound):");
        let mut sizes = vec![1usize << 12, 1 << 16, 1 << 20];
        if self.big {
            sizes.extend([1 << 24, 1 << 26]);
        }
        for n in sizes {
            let x = g.upload(&self.rand(n, -1.0, 1.0))?;
            let mut y = g.alloc::<f32>(n)?;
            let s = b.run(|| gelu::gelu(g, &x, &mut y))?;
            println!(
                "{}",
                self.mem_line(&format!("n = 2^{}", n.trailing_zeros()), &s, 8.0 * n as f64)
            );
        }
        println!("  (full sweeps with CSV and plots: cargo run --release --example benchmarking -- --sweep)\n");
        Ok(())
    }

    /// Section 7: profiling (kernels per region, PTX, resources, external tools).
    pub fn profiling(&mut self) -> Result<()> {
        println!("== Profiling: which kernels does each region launch? ==");
        let g = self.gpu;
        let (n, x, mut y) = self.gelu_buffers()?;
        let mut tmp = g.alloc::<f32>(n)?;
        gelu::gelu_naive(g, &x, &mut y, &mut tmp)?; // warm-up
        let (_, recs) = g.profile(|| gelu::gelu_naive(g, &x, &mut y, &mut tmp))?;
        println!(
            "  region: naive GeLU (n = {n})\n{}",
            indent(&profile::kernel_table(&recs))
        );
        let (_, recs) = g.profile(|| gelu::gelu(g, &x, &mut y))?;
        println!(
            "  region: fused GeLU\n{}",
            indent(&profile::kernel_table(&recs))
        );
        let (m, c) = if self.big { (4096, 4096) } else { (128, 512) };
        let sx = g.upload(&self.rand(m * c, -4.0, 4.0))?;
        let mut sy = g.alloc::<f32>(m * c)?;
        let mut st = g.alloc::<f32>(m)?;
        let (_, recs) = g.profile(|| {
            softmax::softmax_naive(g, sx.matrix(m, c)?, sy.matrix_mut(m, c)?, &mut st)
        })?;
        println!(
            "  region: naive softmax ({m} x {c})\n{}",
            indent(&profile::kernel_table(&recs))
        );
        let dir = std::path::Path::new("results/ptx");
        match profile::write_ptx(dir) {
            Ok(files) => println!(
                "  PTX of each kernel written to {}/ ({} files), e.g. gelu_fused.ptx:",
                dir.display(),
                files.len()
            ),
            Err(e) => println!("  (could not write PTX files: {e})"),
        }
        if let Some(p) = profile::kernel_ptx("gelu_fused") {
            for l in p
                .lines()
                .filter(|l| {
                    l.contains("ld.global")
                        || l.contains("st.global")
                        || l.contains("ex2")
                        || l.contains("rcp")
                })
                .take(6)
            {
                println!("    {}", l.trim());
            }
        }
        match profile::find_ptxas() {
            Some(p) => match profile::ptxas_report(&p, "sm_90") {
                Ok(r) => println!(
                    "  ptxas -v -arch=sm_90 (registers, shared memory, stack, spills):\n{}",
                    indent(&profile::resource_table(&r))
                ),
                Err(e) => println!("  ptxas failed: {e}"),
            },
            None => println!("  (ptxas not found: run scripts/setup.sh for the resource report)"),
        }
        println!("  External tools, on any example of the GPU bundle (scripts/bundle.sh):");
        println!("    ncu --clock-control none --kernel-name matmul_relu_tiled --launch-count 1 bundle/bin/matmul_relu");
        println!("    compute-sanitizer --tool memcheck bundle/bin/gelu   (also racecheck, synccheck, initcheck)\n");
        Ok(())
    }
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("    {l}\n")).collect()
}

/// `main` of a one-section example: picks the device, prints the backend, runs the
/// section, and exits with status 1 and the error's message on failure.
pub fn run_section(section: impl FnOnce(&mut Demo<'_>) -> Result<()>) {
    let run = || -> Result<()> {
        let gpu = crate::gpu()?;
        println!("{}", gpu.describe());
        section(&mut Demo::new(&gpu)?)
    };
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
