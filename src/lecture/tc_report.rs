//! Tensor-core results as plots: reads the log of `scripts/gpu-tc.sh` (the rows of
//! `examples/matmul_tc` and of `scripts/peers_tc.py`) and draws, per precision, the
//! TFLOP/s of each stage and peer at each size, next to the dense tensor peak.
//!
//! ```text
//! cargo run --release --example benchmarking -- --tc docs/runs/2026-11-23-h100-stage8-out16.txt --out docs/img
//! ```
use std::collections::BTreeMap;
use std::path::Path;

use crate::plot::{bar_plot, Series};

/// One timed row of the log: who, in which precision, at which size.
#[derive(Clone, Debug, PartialEq)]
pub struct TcRow {
    /// "bf16", "fp16" or "tf32".
    pub precision: String,
    /// The kernel or peer, without the precision ("stage 8 (multicast)", "cuBLAS").
    pub name: String,
    pub n: usize,
    pub ms: f64,
    pub tflops: f64,
}

/// The rows of a `gpu-tc.sh` log. Ours: `NAME N MS TFLOP/S PCT% ERR ERR`, the name
/// starting with its precision (`bf16 stage 8 -> bf16 C`); peers: `PEER PREC N MS
/// TFLOP/S ERR` (`cuBLAS bf16`, `triton fp16 (autotuned)`). Other lines are skipped.
pub fn parse_log(text: &str) -> Vec<TcRow> {
    let mut rows = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let num = |s: &str| s.parse::<f64>().ok();
        // Ours: six numeric fields at the end, the 5th a percentage.
        if f.len() >= 8 && f[f.len() - 3].ends_with('%') {
            let t = f.len() - 6;
            let (Some(n), Some(ms), Some(tf)) = (num(f[t]), num(f[t + 1]), num(f[t + 2])) else {
                continue;
            };
            let prec = match f[0] {
                "f16" => "fp16",
                p => p,
            };
            if !["bf16", "fp16", "tf32"].contains(&prec) {
                continue;
            }
            rows.push(TcRow {
                precision: prec.to_string(),
                name: f[1..t].join(" "),
                n: n as usize,
                ms,
                tflops: tf,
            });
            continue;
        }
        // Peers: a name, its precision, then n, ms, TFLOP/s and an error.
        if f.len() >= 6 {
            let t = f.len() - 4;
            let (Some(n), Some(ms), Some(tf), Some(_)) =
                (num(f[t]), num(f[t + 1]), num(f[t + 2]), num(f[t + 3]))
            else {
                continue;
            };
            let Some(pi) = f[..t]
                .iter()
                .position(|w| ["bf16", "fp16", "tf32"].contains(w))
            else {
                continue;
            };
            let mut name: Vec<&str> = f[..t].to_vec();
            name.remove(pi);
            rows.push(TcRow {
                precision: f[pi].to_string(),
                name: name.join(" "),
                n: n as usize,
                ms,
                tflops: tf,
            });
        }
    }
    rows
}

/// One bar chart per precision (`matmul_tc_{bf16,fp16,tf32}.png` in `out`): a group
/// per size, a bar per kernel or peer, each the mean TFLOP/s of its rows in the log
/// (ours appear twice in a `gpu-tc.sh` log, around the peers), and the dense tensor
/// peak as the last bar. Returns the files written.
pub fn plot(rows: &[TcRow], out: &Path, device: &str) -> Result<Vec<String>, String> {
    let mut files = Vec::new();
    for (prec, peak) in [("bf16", 989.0), ("fp16", 989.0), ("tf32", 494.0)] {
        let mine: Vec<&TcRow> = rows.iter().filter(|r| r.precision == prec).collect();
        if mine.is_empty() {
            continue;
        }
        let mut sizes: Vec<usize> = mine.iter().map(|r| r.n).collect();
        sizes.sort_unstable();
        sizes.dedup();
        // Names in order of first appearance (the progression, then the peers).
        let mut names: Vec<&str> = Vec::new();
        for r in &mine {
            if !names.contains(&r.name.as_str()) {
                names.push(&r.name);
            }
        }
        let mut sums: BTreeMap<(&str, usize), (f64, usize)> = BTreeMap::new();
        for r in &mine {
            let e = sums.entry((&r.name, r.n)).or_insert((0.0, 0));
            e.0 += r.tflops;
            e.1 += 1;
        }
        let mut series: Vec<Series> = names
            .iter()
            .map(|&name| Series {
                name: name.to_string(),
                points: sizes
                    .iter()
                    .enumerate()
                    .map(|(j, &n)| {
                        let v = sums
                            .get(&(name, n))
                            .map_or(f64::NAN, |&(s, c)| s / c as f64);
                        (j as f64, v)
                    })
                    .collect(),
            })
            .collect();
        series.push(Series {
            name: format!("dense peak ({peak:.0})"),
            points: (0..sizes.len()).map(|j| (j as f64, peak)).collect(),
        });
        let cats: Vec<String> = sizes.iter().map(|n| format!("{n}^3")).collect();
        let file = out.join(format!("matmul_tc_{prec}.png"));
        bar_plot(
            &file,
            &format!("matmul + ReLU, {prec}, {device}"),
            &cats,
            "TFLOP/s",
            &series,
        )?;
        files.push(file.display().to_string());
    }
    if files.is_empty() {
        return Err("no tensor-core rows in the log".into());
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ours_and_the_peers() {
        let log = "\
kernel                          n         ms   TFLOP/s  % peak  err rounded   err f32 in
bf16 stage 8 -> bf16 C       2048     0.0326     527.2   53.3%       1.7e-3       3.9e-3
f16 stage 6 (pipelined)      4096     0.3522     390.2   39.5%       4.0e-6       9.8e-5
peer                            n         ms   TFLOP/s   rel err
cuBLAS bf16                  2048     0.0334     514.0   2.7e-03
triton fp16 (autotuned)      4096     0.2054     669.3   3.3e-04
sanitizer memcheck matmul_tc: ========= ERROR SUMMARY: 0 errors
";
        let rows = parse_log(log);
        let row = |p: &str, name: &str, n, ms, tflops| TcRow {
            precision: p.into(),
            name: name.into(),
            n,
            ms,
            tflops,
        };
        assert_eq!(
            rows,
            vec![
                row("bf16", "stage 8 -> bf16 C", 2048, 0.0326, 527.2),
                row("fp16", "stage 6 (pipelined)", 4096, 0.3522, 390.2),
                row("bf16", "cuBLAS", 2048, 0.0334, 514.0),
                row("fp16", "triton (autotuned)", 4096, 0.2054, 669.3),
            ]
        );
    }
}
