//! Profiling like the lecture's `profile()`: kernels per region, PTX per kernel,
//! the ptxas resource report.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::gpu::{LaunchRecord, PTX};

/// A table of the kernels launched in a region: name, calls, total and mean time, share.
pub fn kernel_table(records: &[LaunchRecord]) -> String {
    let mut by: BTreeMap<&str, (usize, f64)> = BTreeMap::new();
    for r in records {
        let e = by.entry(r.kernel).or_default();
        e.0 += 1;
        e.1 += r.ms;
    }
    let total: f64 = by.values().map(|v| v.1).sum();
    let mut rows: Vec<_> = by.into_iter().collect();
    rows.sort_by(|a, b| b.1 .1.total_cmp(&a.1 .1));
    let mut s = format!("{:<22} {:>6} {:>11} {:>11} {:>7}\n", "kernel", "calls", "total ms", "mean us", "share");
    for (k, (calls, ms)) in rows {
        s += &format!("{:<22} {:>6} {:>11.4} {:>11.2} {:>6.1}%\n", k, calls, ms, ms * 1e3 / calls as f64, 100.0 * ms / total.max(1e-12));
    }
    s += &format!("{:<22} {:>6} {:>11.4}\n", "total", records.len(), total);
    s
}

/// The PTX of one kernel (its `.entry` through the closing brace), as the lecture's `output_ptx`.
pub fn kernel_ptx(name: &str) -> Option<String> {
    let start = PTX.find(&format!(".entry {name}("))?;
    let start = PTX[..start].rfind('\n').map(|i| i + 1).unwrap_or(start);
    let body = &PTX[start..];
    let mut depth = 0i32;
    for (i, ch) in body.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(body[..=i].to_string());
                }
            }
            _ => {}
        }
    }
    None
}

/// Names of all kernels in the module.
pub fn kernel_names() -> Vec<String> {
    PTX.lines().filter_map(|l| l.split(".entry ").nth(1)).map(|s| s.trim_end_matches('(').to_string()).collect()
}

/// Writes `kernels.ptx` and one `<kernel>.ptx` per kernel into `dir`.
pub fn write_ptx(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut out = vec![dir.join("kernels.ptx")];
    std::fs::write(&out[0], PTX)?;
    for k in kernel_names() {
        if let Some(p) = kernel_ptx(&k) {
            let f = dir.join(format!("{k}.ptx"));
            std::fs::write(&f, p)?;
            out.push(f);
        }
    }
    Ok(out)
}

/// Finds `ptxas`: `SIMT_PTXAS`, the project's `.tools/cuda/bin`, `PATH`, `/usr/local/cuda/bin`.
pub fn find_ptxas() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("SIMT_PTXAS") {
        return Some(p.into());
    }
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools/cuda/bin/ptxas");
    if local.is_file() {
        return Some(local);
    }
    if let Ok(path) = std::env::var("PATH") {
        for d in std::env::split_paths(&path) {
            if d.join("ptxas").is_file() {
                return Some(d.join("ptxas"));
            }
        }
    }
    let cuda = PathBuf::from("/usr/local/cuda/bin/ptxas");
    cuda.is_file().then_some(cuda)
}

/// One kernel's line of the ptxas report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Resources {
    pub kernel: String,
    pub registers: u32,
    pub smem_bytes: u32,
    pub stack_bytes: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
}

/// Assembles the module with `ptxas -v` for `arch` (e.g. `sm_90`). Returns the
/// per-kernel report, or the assembler's error text.
pub fn ptxas_report(ptxas: &Path, arch: &str) -> Result<Vec<Resources>, String> {
    let dir = std::env::temp_dir().join(format!("rust-simt-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let src = dir.join("kernels.ptx");
    std::fs::write(&src, PTX).map_err(|e| e.to_string())?;
    let out = Command::new(ptxas)
        .args(["-v", "--warn-on-spills", &format!("-arch={arch}"), "-o"])
        .arg(dir.join(format!("kernels.{arch}.cubin")))
        .arg(&src)
        .output()
        .map_err(|e| format!("could not run {}: {e}", ptxas.display()))?;
    let text = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || text.contains("error") {
        return Err(text);
    }
    let num = |s: &str, before: &str| -> u32 {
        s.split(before).next().and_then(|h| h.split_whitespace().last()).and_then(|n| n.parse().ok()).unwrap_or(0)
    };
    let mut res: Vec<Resources> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.split("Function properties for ").nth(1) {
            res.push(Resources { kernel: name.trim().to_string(), ..Default::default() });
        } else if let Some(r) = res.last_mut() {
            if line.contains("stack frame") {
                r.stack_bytes = num(line, "bytes stack frame");
                r.spill_stores = num(line, "bytes spill stores");
                r.spill_loads = num(line, "bytes spill loads");
            } else if line.contains("Used") && line.contains("registers") {
                r.registers = num(line, "registers");
                if line.contains("bytes smem") {
                    r.smem_bytes = num(line, "bytes smem");
                }
            }
        }
    }
    // Keep entries only (device functions like core's panic helpers also get lines).
    let names = kernel_names();
    res.retain(|r| names.contains(&r.kernel));
    Ok(res)
}

/// A formatted ptxas resource table.
pub fn resource_table(res: &[Resources]) -> String {
    let mut s = format!("{:<22} {:>5} {:>9} {:>7} {:>7}\n", "kernel", "regs", "smem B", "stack B", "spill B");
    for r in res {
        s += &format!("{:<22} {:>5} {:>9} {:>7} {:>7}\n", r.kernel, r.registers, r.smem_bytes, r.stack_bytes, r.spill_stores + r.spill_loads);
    }
    s
}
