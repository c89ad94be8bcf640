//! The lecture's benchmarking section, and the scaling sweeps.
//!
//! ```text
//! cargo run --release --example benchmarking                  # the section: warm-ups, events, L2, medians
//! cargo run --release --example benchmarking -- --sweep       # all sweeps -> results/ (CSV, PNG, summary.md)
//!     [--quick]              tiny shapes (what CI runs on the emulator)
//!     [--ops gelu,softmax]   a subset of gelu, softmax, row_sum, matmul
//!     [--peers FILE]         merge scripts/peers.py's CSV (PyTorch, Triton, cuBLAS) into tables and plots
//!     [--out DIR]            output folder (default results/)
//! cargo run --release --example benchmarking -- --plans DIR [--ops gelu,softmax,row_sum] [--quick]
//!                            our launches at each sweep shape -> DIR/plans.json + the PTX, which
//!                            `scripts/peers.py --ours DIR` replays and times beside the peers in one process
//! cargo run --release --example benchmarking -- --from results/merged.csv --copy-gbps 3002 --fp32-tflops 66.9 --device NAME
//!                            tables and plots of an earlier run, without running anything
//! cargo run --release --example benchmarking -- --tc LOG [--out DIR] [--device NAME]
//!                            tensor-core bar charts from a scripts/gpu-tc.sh log (ours and the peers)
//! ```
use std::path::PathBuf;

use rust_simt::bench;
use rust_simt::sweep::{self, Ceilings};

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    let value = |f: &str| {
        args.iter()
            .position(|a| a == f)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if let Some(log) = value("--tc") {
        let text = std::fs::read_to_string(&log).map_err(|e| format!("--tc {log}: {e}"))?;
        let rows = rust_simt::tc_report::parse_log(&text);
        let out = PathBuf::from(value("--out").unwrap_or_else(|| "results".into()));
        std::fs::create_dir_all(&out)?;
        let device = value("--device").unwrap_or_else(|| "GPU".into());
        let files = rust_simt::tc_report::plot(&rows, &out, &device)?;
        println!(
            "{} rows from {log}; plots: {}",
            rows.len(),
            files.join(", ")
        );
        return Ok(());
    }
    if let Some(csv) = value("--from") {
        let rows = sweep::read_csv(std::path::Path::new(&csv))?;
        let num = |f: &str| {
            value(f)
                .and_then(|v| v.parse::<f64>().ok())
                .ok_or_else(|| format!("--from needs {f} N"))
        };
        let c = Ceilings {
            copy_gbps: num("--copy-gbps")?,
            fp32_tflops: num("--fp32-tflops")?,
        };
        let out = PathBuf::from(value("--out").unwrap_or_else(|| "results".into()));
        std::fs::create_dir_all(&out)?;
        let device = value("--device").unwrap_or_else(|| "GPU".into());
        let table = sweep::summary(&rows, c);
        println!("{table}");
        std::fs::write(
            out.join("summary.md"),
            format!("# Sweeps on {device}\n\n{table}"),
        )?;
        let files = sweep::plot_all(&rows, &out, &device)?;
        println!("plots: {}", files.join(", "));
        return Ok(());
    }
    let gpu = rust_simt::gpu()?;
    println!("{}", gpu.describe());
    if let Some(dir) = value("--plans") {
        let quick = flag("--quick") || gpu.kind() == rust_simt::BackendKind::Emulator;
        let ops_arg = value("--ops").unwrap_or_else(|| "gelu,softmax,row_sum".into());
        let ops = sweep::Op::parse_list(&ops_arg).map_err(|e| format!("--ops: {e}"))?;
        let (n, ok) = rust_simt::plans::write(&gpu, &ops, quick, std::path::Path::new(&dir))?;
        println!("{n} plans ({ok} replayable) -> {dir}/plans.json; time them beside the peers with: python3 scripts/peers.py --ours {dir}");
        return Ok(());
    }
    if !flag("--sweep") {
        return Ok(rust_simt::demo::Demo::new(&gpu)?.benchmarking()?);
    }
    let quick = flag("--quick") || gpu.kind() == rust_simt::BackendKind::Emulator;
    let out = PathBuf::from(value("--out").unwrap_or_else(|| "results".into()));
    std::fs::create_dir_all(&out)?;
    let ops_arg = value("--ops").unwrap_or_else(|| "gelu,softmax,row_sum,matmul".into());
    let ops = sweep::Op::parse_list(&ops_arg).map_err(|e| format!("--ops: {e}"))?;
    let copy_gbps = bench::copy_bandwidth(&gpu, if quick { 1 << 22 } else { 1 << 30 })?;
    let c = Ceilings {
        copy_gbps,
        fp32_tflops: gpu.props().peak_fp32() / 1e12,
    };
    println!("ceilings: copy {:.0} GB/s (measured, read+write), FP32 {:.1} TFLOP/s (SMs x 128 x 2 x max clock)", c.copy_gbps, c.fp32_tflops);
    let mut rows = sweep::run(&gpu, &ops, quick)?;
    sweep::write_csv(&out.join("ours.csv"), &rows)?;
    if let Some(p) = value("--peers") {
        match sweep::read_csv(std::path::Path::new(&p)) {
            Ok(peers) => {
                println!("merged {} peer timings from {p}", peers.len());
                rows.extend(
                    peers
                        .into_iter()
                        .filter(|r| ops.iter().any(|o| o.name() == r.op)),
                );
            }
            Err(e) => println!(
                "no peer timings ({p}: {e}); run scripts/peers.py where PyTorch is installed"
            ),
        }
    }
    sweep::write_csv(&out.join("merged.csv"), &rows)?;
    let device = gpu.props().name.clone();
    let table = sweep::summary(&rows, c);
    let md = format!(
        "# Sweeps on {device}\n\nceilings: copy {:.0} GB/s measured (read+write), FP32 {:.1} TFLOP/s from the device table\n\n{table}",
        c.copy_gbps, c.fp32_tflops
    );
    std::fs::write(out.join("summary.md"), &md)?;
    println!("{table}");
    match sweep::plot_all(&rows, &out, &device) {
        Ok(files) => println!("plots: {}", files.join(", ")),
        Err(e) => println!("plots failed: {e}"),
    }
    Ok(())
}
