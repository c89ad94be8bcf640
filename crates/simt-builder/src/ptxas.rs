//! `ptxas`, NVIDIA's PTX assembler: the resource report (registers, shared memory,
//! stack, spills) of a module, without a GPU.
use std::path::{Path, PathBuf};
use std::process::Command;

/// Finds `ptxas`: `SIMT_PTXAS`; `.tools/cuda/bin/ptxas` in the current folder, the
/// building crate's folder (`CARGO_MANIFEST_DIR`) or any folder above them (where
/// rust-simt's `scripts/setup.sh` puts it); `PATH`; `/usr/local/cuda/bin`.
pub fn find() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("SIMT_PTXAS") {
        return Some(p.into());
    }
    let starts = [
        std::env::var("CARGO_MANIFEST_DIR").ok().map(PathBuf::from),
        std::env::current_dir().ok(),
    ];
    for start in starts.into_iter().flatten() {
        for dir in start.ancestors() {
            let p = dir.join(".tools/cuda/bin/ptxas");
            if p.is_file() {
                return Some(p);
            }
        }
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

/// Assembles `ptx` with `ptxas -v` for `arch` (e.g. `sm_90`). Returns the
/// per-kernel report (entries only), or the assembler's error text.
pub fn report(ptxas: &Path, ptx: &str, arch: &str) -> Result<Vec<Resources>, String> {
    static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("simt-ptxas-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let src = dir.join("module.ptx");
    std::fs::write(&src, ptx).map_err(|e| e.to_string())?;
    let out = Command::new(ptxas)
        .args(["-v", "--warn-on-spills", &format!("-arch={arch}"), "-o"])
        .arg(dir.join(format!("module.{arch}.cubin")))
        .arg(&src)
        .output()
        .map_err(|e| format!("could not run {}: {e}", ptxas.display()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = out?;
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || text.contains("error") {
        return Err(text);
    }
    // C7515: a wgmma serialised because other instructions touch its accumulators;
    // C7511: too few registers for wgmma's pipelining. Either means the asm regions
    // of `simt_std::wgmma` were split or starved: slow at best, so refuse the module.
    // Kernels named `*_misuse` break the rules on purpose, for the emulator's checks.
    let serialised = text
        .lines()
        .any(|l| (l.contains("C7515") || l.contains("C7511")) && !l.contains("_misuse'"));
    if serialised {
        return Err(format!("ptxas serialised wgmma instructions (see simt_std::wgmma: one asm region per accumulator lifetime):\n{text}"));
    }
    Ok(parse_report(&text, &crate::ptx::entries(ptx)))
}

/// Parses `ptxas -v` output into one [`Resources`] per kernel in `entries`.
pub fn parse_report(text: &str, entries: &[String]) -> Vec<Resources> {
    let num = |s: &str, before: &str| -> u32 {
        s.split(before)
            .next()
            .and_then(|h| h.split_whitespace().last())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let mut res: Vec<Resources> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.split("Function properties for ").nth(1) {
            res.push(Resources {
                kernel: name.trim().to_string(),
                ..Default::default()
            });
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
    // Entries only: device functions (core's panic helpers) get lines too.
    res.retain(|r| entries.contains(&r.kernel));
    res
}

/// A formatted resource table.
pub fn table(res: &[Resources]) -> String {
    let mut s = format!(
        "{:<24} {:>5} {:>9} {:>7} {:>7}\n",
        "kernel", "regs", "smem B", "stack B", "spill B"
    );
    for r in res {
        s += &format!(
            "{:<24} {:>5} {:>9} {:>7} {:>7}\n",
            r.kernel,
            r.registers,
            r.smem_bytes,
            r.stack_bytes,
            r.spill_stores + r.spill_loads
        );
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_ptxas_lines() {
        let text = "ptxas info    : Compiling entry function 'k' for 'sm_90'\nptxas info    : Function properties for k\n    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\nptxas info    : Used 40 registers, 8192 bytes smem, 380 bytes cmem[0]\nptxas info    : Function properties for helper\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
        let r = super::parse_report(text, &["k".to_string()]);
        assert_eq!(
            r,
            vec![super::Resources {
                kernel: "k".into(),
                registers: 40,
                smem_bytes: 8192,
                stack_bytes: 16,
                spill_stores: 8,
                spill_loads: 4
            }]
        );
    }
}
