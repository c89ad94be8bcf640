//! Profiling like the lecture's `profile()`: kernels per region, PTX per kernel,
//! the ptxas resource report.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::ptx::MODULE;
use crate::LaunchRecord;

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
    let mut s = format!(
        "{:<22} {:>6} {:>11} {:>11} {:>7}\n",
        "kernel", "calls", "total ms", "mean us", "share"
    );
    for (k, (calls, ms)) in rows {
        s += &format!(
            "{:<22} {:>6} {:>11.4} {:>11.2} {:>6.1}%\n",
            k,
            calls,
            ms,
            ms * 1e3 / calls as f64,
            100.0 * ms / total.max(1e-12)
        );
    }
    s += &format!("{:<22} {:>6} {:>11.4}\n", "total", records.len(), total);
    s
}

/// The PTX of one kernel (its `.entry` through the closing brace), as the lecture's `output_ptx`.
pub fn kernel_ptx(name: &str) -> Option<String> {
    simt_builder::ptx::entry_text(MODULE.ptx(), name)
}

/// Names of all kernels in the lecture's module.
pub fn kernel_names() -> Vec<String> {
    MODULE.entries()
}

/// Writes `kernels.ptx` and one `<kernel>.ptx` per kernel into `dir`.
pub fn write_ptx(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut out = vec![dir.join("kernels.ptx")];
    std::fs::write(&out[0], MODULE.ptx())?;
    for k in kernel_names() {
        if let Some(p) = kernel_ptx(&k) {
            let f = dir.join(format!("{k}.ptx"));
            std::fs::write(&f, p)?;
            out.push(f);
        }
    }
    Ok(out)
}

pub use simt_builder::ptxas::{find as find_ptxas, table as resource_table, Resources};

/// Assembles the lecture's module with `ptxas -v` for `arch` (e.g. `sm_90`): the
/// per-kernel report, or the assembler's error text.
pub fn ptxas_report(ptxas: &Path, arch: &str) -> Result<Vec<Resources>, String> {
    simt_builder::ptxas::report(ptxas, MODULE.ptx(), arch)
}

/// Assembles the Hopper module (`sm_90a`: the wgmma and TMA kernels) with `ptxas -v`;
/// serialised wgmma (ptxas warnings C7515, C7511) is an error.
pub fn ptxas_report_sm90a(ptxas: &Path) -> Result<Vec<Resources>, String> {
    simt_builder::ptxas::report(ptxas, crate::ptx::sm90a::MODULE.ptx(), "sm_90a")
}
