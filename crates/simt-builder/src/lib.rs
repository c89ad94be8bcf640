//! # simt-builder: compile a kernels crate to PTX from any crate's `build.rs`
//!
//! What Rust-CUDA's `cuda_builder` is to its kernels, this crate is to rust-simt's,
//! with rustc's own `nvptx64-nvidia-cuda` backend instead of a pinned nightly and
//! LLVM 7. A host crate's whole `build.rs`:
//!
//! ```no_run
//! simt_builder::Builder::new("kernels").build().unwrap_or_else(|e| panic!("{e}"));
//! ```
//!
//! and its `src/lib.rs` (or `main.rs`) includes the typed module the build wrote:
//!
//! ```ignore
//! mod ptx { include!(concat!(env!("OUT_DIR"), "/kernels.rs")); } // defines ptx::MODULE
//! gpu.load(&ptx::MODULE)?;
//! ```
//!
//! What [`Builder::build`] does:
//! 1. finds a device toolchain ([`toolchain`]): `SIMT_DEVICE_CARGO` + `SIMT_DEVICE_RUSTC`,
//!    Debian's `rustc-web` (with `rust-web-src`), or a rustup nightly with `rust-src`;
//! 2. runs a nested `cargo rustc` on the kernels crate for `nvptx64-nvidia-cuda`
//!    (`-Zbuild-std=core`, fat LTO, `panic = "abort"`, one codegen unit) in a clean
//!    environment and a target directory of its own, emitting PTX for the target
//!    CPU (`SIMT_SM`, default `sm_80`);
//! 3. turns each kernel's launch bounds (from `#[launch(.., min_blocks = B)]`) into
//!    `.maxntid`/`.minnctapersm` directives on its entry;
//! 4. assembles the module with `ptxas` when one is found ([`ptxas::find`]) and fails
//!    on assembler errors; spills become `cargo:warning`s (for the target, and for
//!    sm_90 too when the target is an older portable one);
//! 5. writes `$OUT_DIR/<name>.ptx` and `$OUT_DIR/<name>.rs`, which defines
//!    `pub static MODULE: simt::Module` (so the host crate depends on `simt`).
//!
//! [`cuda_backend`] is the other half of a build script: whether to compile the
//! runtime's CUDA backend in.
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

pub mod ptx;
pub mod ptxas;
pub mod toolchain;

/// The rustc target the kernels are compiled for.
pub const TARGET: &str = "nvptx64-nvidia-cuda";

/// A failed kernel build, with what to do about it.
#[derive(Debug)]
pub enum Error {
    /// No toolchain can compile for nvptx64 (the message says what to install).
    NoToolchain(String),
    /// The kernels crate's manifest is missing or unreadable.
    Manifest(String),
    /// The nested cargo could not run or the kernels did not compile (rustc's output).
    Compile(String),
    /// The PTX is unusable: no kernels, a malformed launch-bounds marker.
    Ptx(String),
    /// ptxas rejected the module (its output).
    Ptxas(String),
    /// Writing the outputs failed.
    Io(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoToolchain(m) => write!(f, "simt-builder: {m}"),
            Error::Manifest(m) => write!(f, "simt-builder: {m}"),
            Error::Compile(m) => write!(f, "simt-builder: compiling the kernels for {TARGET} failed:\n{m}"),
            Error::Ptx(m) => write!(f, "simt-builder: {m}"),
            Error::Ptxas(m) => write!(f, "simt-builder: ptxas rejected the PTX module (set SIMT_PTXAS_CHECK=0 to skip this check):\n{m}"),
            Error::Io(m) => write!(f, "simt-builder: {m}"),
        }
    }
}

impl std::error::Error for Error {}

/// What a successful build wrote.
#[derive(Clone, Debug)]
pub struct Built {
    /// `$OUT_DIR/<name>.ptx`.
    pub ptx: PathBuf,
    /// `$OUT_DIR/<name>.rs`, defining `pub static MODULE: simt::Module`.
    pub module_rs: PathBuf,
    /// The kernels crate's library name (what `Kernel::MODULE` says).
    pub crate_name: String,
    /// The PTX target, e.g. `sm_80`.
    pub target_cpu: String,
    /// Which toolchain compiled it.
    pub toolchain: String,
}

/// Compiles one kernels crate to one PTX module. See the crate docs.
#[derive(Clone, Debug)]
pub struct Builder {
    kernels: PathBuf,
    name: Option<String>,
    target_cpu: Option<String>,
    ptxas_check: bool,
    /// Kernels allowed to use up to so many bytes of stack plus spills without a
    /// warning ([`Builder::allow_spills`]).
    spill_allowance: Vec<(String, u32)>,
}

/// The PTX ISA a target needs beyond rustc's default for it: the `a` targets'
/// instructions (`wgmma`, `setmaxnreg`, the tensor-map copies) are PTX 8.0, and the
/// tensor-map proxy fence 8.3 (a CUDA 12.3 driver, R545, or newer).
fn ptx_feature(sm: &str) -> Option<&'static str> {
    match sm {
        "sm_90a" => Some("+ptx83"),
        _ => None,
    }
}

impl Builder {
    /// The kernels crate at `path`, relative to the calling crate's manifest folder
    /// (`CARGO_MANIFEST_DIR`) unless absolute.
    pub fn new(path: impl AsRef<Path>) -> Builder {
        Builder {
            kernels: path.as_ref().to_path_buf(),
            name: None,
            target_cpu: None,
            ptxas_check: true,
            spill_allowance: Vec::new(),
        }
    }

    /// Output file stem (`$OUT_DIR/<name>.ptx` and `.rs`); default: the crate's folder name.
    pub fn name(mut self, name: &str) -> Builder {
        self.name = Some(name.to_string());
        self
    }

    /// PTX target CPU (`sm_80`, `sm_90`, `sm_90a`, ...). Default: `SIMT_SM`, else `sm_80`,
    /// whose module the driver JIT-compiles for any newer GPU. The kernels crate sees
    /// it as `cfg(simt_target = "sm_90a")` (say), so one crate can build a portable
    /// module and a Hopper one: `sm_90a` code (wgmma, TMA) runs only on compute
    /// capability 9.0, and its module is PTX 8.3.
    pub fn target_cpu(mut self, sm: &str) -> Builder {
        self.target_cpu = Some(sm.to_string());
        self
    }

    /// Whether to assemble the module with ptxas when one is found (default on;
    /// `SIMT_PTXAS_CHECK=0` turns it off too).
    pub fn ptxas_check(mut self, on: bool) -> Builder {
        self.ptxas_check = on;
        self
    }

    /// Lets `kernel` use up to `bytes` of stack, spill stores and spill loads together
    /// on the target without a `cargo:warning`: for a spill measured to cost nothing
    /// (outside the hot loop) where the spill-free allocation ran slower. More than
    /// `bytes` still warns.
    pub fn allow_spills(mut self, kernel: &str, bytes: u32) -> Builder {
        self.spill_allowance.push((kernel.to_string(), bytes));
        self
    }

    /// Builds, writes the outputs into `OUT_DIR`, and prints the `cargo:` lines that
    /// rebuild when the kernels or the device library change.
    pub fn build(self) -> Result<Built, Error> {
        let env = |k: &str| {
            std::env::var(k).map_err(|_| {
                Error::Io(format!(
                    "{k} is not set: call Builder::build from a build script"
                ))
            })
        };
        let manifest = PathBuf::from(env("CARGO_MANIFEST_DIR")?);
        let out_dir = PathBuf::from(env("OUT_DIR")?);
        let dir = if self.kernels.is_absolute() {
            self.kernels.clone()
        } else {
            manifest.join(&self.kernels)
        };
        let toml = dir.join("Cargo.toml");
        let manifest_text = std::fs::read_to_string(&toml).map_err(|e| {
            Error::Manifest(format!(
                "cannot read {} ({e}): Builder::new takes the kernels crate's folder",
                toml.display()
            ))
        })?;
        let crate_name = lib_name(&manifest_text)
            .ok_or_else(|| Error::Manifest(format!("{} names no package", toml.display())))?;
        let stem = self.name.clone().unwrap_or_else(|| {
            dir.file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| crate_name.clone())
        });

        println!("cargo:rerun-if-changed={}", toml.display());
        println!("cargo:rerun-if-changed={}", dir.join("src").display());
        for v in [
            "SIMT_DEVICE_CARGO",
            "SIMT_DEVICE_RUSTC",
            "SIMT_SM",
            "SIMT_PTXAS",
            "SIMT_PTXAS_CHECK",
        ] {
            println!("cargo:rerun-if-env-changed={v}");
        }

        let tc = toolchain::find().map_err(Error::NoToolchain)?;
        let sm = self
            .target_cpu
            .clone()
            .or_else(|| std::env::var("SIMT_SM").ok())
            .unwrap_or_else(|| "sm_80".into());
        // Shared by every kernels crate of the build and across profiles, one per PTX
        // target (their rustc flags differ, so one directory would rebuild each time):
        // <target>/<profile>/build/<pkg>/out -> <target>/simt-kernels/<sm>
        let target_dir = out_dir
            .ancestors()
            .nth(4)
            .map(|p| p.join("simt-kernels"))
            .unwrap_or_else(|| out_dir.join("simt-kernels"))
            .join(&sm);

        let mut cmd = tc.command();
        cmd.current_dir(&dir)
            .args([
                "rustc",
                "--release",
                "--crate-type",
                "staticlib",
                "-Zbuild-std=core",
                "--target",
                TARGET,
            ])
            .args([
                "--config",
                "profile.release.opt-level=3",
                "--config",
                "profile.release.lto=\"fat\"",
            ])
            .args([
                "--config",
                "profile.release.codegen-units=1",
                "--config",
                "profile.release.panic=\"abort\"",
            ])
            .args(["--config", "profile.release.debug=false", "--target-dir"])
            .arg(&target_dir)
            .args(["--", "--emit=asm", "-C"])
            .arg(format!("target-cpu={sm}"))
            // Kernels crates choose per-target code with `cfg(simt_target = "sm_90a")`
            // (declare it in the crate's `[lints.rust] unexpected_cfgs`).
            .arg("--cfg")
            .arg(format!("simt_target=\"{sm}\""))
            .arg("--check-cfg")
            .arg("cfg(simt_target, values(any()))");
        if let Some(f) = ptx_feature(&sm) {
            cmd.args(["-C", &format!("target-feature={f}")]);
        }
        let out = cmd.output().map_err(|e| {
            Error::Compile(format!(
                "could not run {} ({}): {e}",
                tc.cargo.display(),
                tc.what
            ))
        })?;
        if !out.status.success() {
            return Err(Error::Compile(format!(
                "(toolchain: {})\n{}",
                tc.what,
                String::from_utf8_lossy(&out.stderr)
            )));
        }

        let deps = target_dir.join(TARGET).join("release").join("deps");
        let newest = |ext: &str| -> Option<PathBuf> {
            std::fs::read_dir(&deps)
                .ok()?
                .filter_map(|e| e.ok())
                .filter(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.starts_with(&format!("{crate_name}-")) && n.ends_with(ext)
                })
                .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
                .map(|e| e.path())
        };
        let asm = newest(".s").ok_or_else(|| {
            Error::Ptx(format!(
                "the nested build emitted no PTX ({}/{crate_name}-*.s)",
                deps.display()
            ))
        })?;
        // Rebuild when any source of the kernels crate or its path dependencies (the
        // device library) changes; the standard library's sources never do.
        if let Some(d) = newest(".d") {
            for dep in dep_info_sources(&std::fs::read_to_string(d).unwrap_or_default()) {
                println!("cargo:rerun-if-changed={dep}");
            }
        }

        let raw = std::fs::read_to_string(&asm)
            .map_err(|e| Error::Io(format!("reading {}: {e}", asm.display())))?;
        let text = apply_launch_bounds(&raw)?;
        if ptx::entries(&text).is_empty() {
            return Err(Error::Ptx(format!("the PTX module of `{crate_name}` has no kernels: declare them with simt_std::kernel!")));
        }
        let check =
            self.ptxas_check && std::env::var("SIMT_PTXAS_CHECK").map_or(true, |v| v != "0");
        if check {
            if let Some(ptxas) = ptxas::find() {
                let arch = if sm.starts_with("sm_") {
                    sm.clone()
                } else {
                    "sm_80".into()
                };
                // A portable module is JIT-compiled for the device it meets: check
                // Hopper's register allocation too, which differs (a kernel spilled on
                // sm_90 and not on sm_80, caught only by a test before this).
                let mut archs = vec![arch];
                let number = archs[0].trim_start_matches("sm_").parse::<u32>();
                if number.is_ok_and(|v| v < 90) {
                    archs.push("sm_90".into());
                }
                for (i, arch) in archs.iter().enumerate() {
                    // The target's own pass fails the build; the extra sm_90 pass only
                    // warns (a ptxas before CUDA 11.8 does not know sm_90).
                    let res = match ptxas::report(&ptxas, &text, arch) {
                        Ok(res) => res,
                        Err(e) if i > 0 => {
                            println!("cargo:warning=simt-builder: the extra {arch} check did not run: {}", e.lines().next().unwrap_or(""));
                            continue;
                        }
                        Err(e) => return Err(Error::Ptxas(e)),
                    };
                    let allowed = |k: &str| {
                        self.spill_allowance
                            .iter()
                            .find(|(n, _)| n == k)
                            .map_or(0, |&(_, b)| b as u64)
                    };
                    for r in res.iter().filter(|r| {
                        let used = (r.spill_stores + r.spill_loads + r.stack_bytes) as u64;
                        used > allowed(&r.kernel)
                    }) {
                        println!(
                            "cargo:warning=simt-builder: kernel `{}` uses {} bytes of stack and spills {} bytes on {arch}: a register array indexed at run time, or too many registers",
                            r.kernel,
                            r.stack_bytes,
                            r.spill_stores + r.spill_loads
                        );
                    }
                }
            }
        }

        let ptx_path = out_dir.join(format!("{stem}.ptx"));
        let rs_path = out_dir.join(format!("{stem}.rs"));
        let io = |p: &Path| {
            let p = p.display().to_string();
            move |e: std::io::Error| Error::Io(format!("writing {p}: {e}"))
        };
        std::fs::write(&ptx_path, &text).map_err(io(&ptx_path))?;
        let rs = format!(
            "// @generated by simt-builder from `{}` (crate `{crate_name}`), target {sm}, toolchain: {}.\n\
             /// The PTX module of the kernels crate `{crate_name}`: load it once with `gpu.load(&MODULE)`,\n\
             /// then launch its kernels by their marker types.\n\
             pub static MODULE: ::simt::Module = ::simt::Module::new({crate_name:?}, {sm:?}, include_str!(concat!(env!(\"OUT_DIR\"), \"/{stem}.ptx\")));\n",
            self.kernels.display(),
            tc.what
        );
        std::fs::write(&rs_path, rs).map_err(io(&rs_path))?;
        Ok(Built {
            ptx: ptx_path,
            module_rs: rs_path,
            crate_name,
            target_cpu: sm,
            toolchain: tc.what,
        })
    }
}

/// Whether to compile the runtime's CUDA backend in, for the runtime's own
/// `build.rs`: `SIMT_CUDA=1` yes, `SIMT_CUDA=0` no, otherwise yes when this machine
/// has the NVIDIA driver (`libcuda.so.1`). Prints `cargo:rustc-cfg=simt_cuda` when yes.
pub fn cuda_backend() -> bool {
    println!("cargo:rerun-if-env-changed=SIMT_CUDA");
    println!("cargo::rustc-check-cfg=cfg(simt_cuda)");
    let on = match std::env::var("SIMT_CUDA").as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => libcuda_present(),
    };
    if on {
        println!("cargo:rustc-cfg=simt_cuda");
    }
    on
}

fn libcuda_present() -> bool {
    if let Ok(out) = Command::new("/sbin/ldconfig").arg("-p").output() {
        if String::from_utf8_lossy(&out.stdout).contains("libcuda.so.1") {
            return true;
        }
    }
    [
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        "/usr/lib64/libcuda.so.1",
        "/usr/local/nvidia/lib64/libcuda.so.1",
        "/usr/lib/wsl/lib/libcuda.so.1",
    ]
    .iter()
    .any(|p| Path::new(p).exists())
}

/// The library name of a crate from its manifest: `[lib] name`, else the package
/// name with `-` as `_`. (A small reader, not a TOML parser: it looks for
/// `name = "..."` in those two sections.)
pub fn lib_name(manifest: &str) -> Option<String> {
    let mut section = String::new();
    let (mut package, mut lib) = (None, None);
    for line in manifest.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            section = l.trim_matches(|c| c == '[' || c == ']').trim().to_string();
            continue;
        }
        let Some(rest) = l.strip_prefix("name") else {
            continue;
        };
        let Some(v) = rest.trim_start().strip_prefix('=') else {
            continue;
        };
        let v = v.trim().trim_matches('"').to_string();
        match section.as_str() {
            "package" => package = Some(v),
            "lib" => lib = Some(v),
            _ => {}
        }
    }
    lib.or(package).map(|n| n.replace('-', "_"))
}

/// Source files listed by a rustc dep-info file, less the standard library's.
fn dep_info_sources(d: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in d.lines() {
        let Some((_, deps)) = line.split_once(": ") else {
            continue;
        };
        let deps = deps.replace("\\ ", "\u{0}");
        for p in deps.split_whitespace() {
            let p = p.replace('\u{0}', " ");
            if p.ends_with(".rs") && !p.contains("/lib/rustlib/src/") && !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// Turns `// simt:launch_bounds NAME THREADS MIN_BLOCKS [CLUSTER]` markers (left by
/// `simt_std::kernel!`) into `.maxntid`/`.minnctapersm` directives on the entry,
/// for kernels that declare `min_blocks`, and `.explicitcluster` /
/// `.reqnctapercluster CLUSTER, 1, 1` for kernels that declare a cluster of more
/// than one block.
pub fn apply_launch_bounds(ptx: &str) -> Result<String, Error> {
    let mut out = ptx.to_string();
    for line in ptx.lines() {
        let Some(rest) = line.trim().strip_prefix("// simt:launch_bounds ") else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let (name, threads, blocks, cluster) = match f[..] {
            [name, threads, blocks] => (name, threads, blocks, "1"),
            [name, threads, blocks, cluster] => (name, threads, blocks, cluster),
            _ => {
                return Err(Error::Ptx(format!(
                    "malformed launch-bounds marker: {line}"
                )))
            }
        };
        let mut directives = String::new();
        if blocks != "0" {
            directives += &format!("\n.maxntid {threads}, 1, 1\n.minnctapersm {blocks}");
        }
        if cluster != "1" {
            directives += &format!("\n.explicitcluster\n.reqnctapercluster {cluster}, 1, 1");
        }
        if directives.is_empty() {
            continue;
        }
        let entry = out.find(&format!(".entry {name}(")).ok_or_else(|| {
            Error::Ptx(format!(
                "launch bounds name `{name}`, which is no kernel of the module"
            ))
        })?;
        let close = entry
            + out[entry..]
                .find("\n)")
                .ok_or_else(|| Error::Ptx(format!("no parameter list for `{name}`")))?
            + 2;
        out.insert_str(close, &directives);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lib_names() {
        assert_eq!(
            lib_name("[package]\nname = \"simt-kernels\"\n[lib]\nname = \"kernels\"\n").as_deref(),
            Some("kernels")
        );
        assert_eq!(
            lib_name("[package]\nname = \"my-kernels\"\nversion = \"0.1.0\"\n").as_deref(),
            Some("my_kernels")
        );
        assert_eq!(lib_name("[dependencies]\nname = \"x\"\n"), None);
    }

    #[test]
    fn launch_bounds_only_with_min_blocks() {
        let ptx = "// simt:launch_bounds a 256 2\n// simt:launch_bounds b 128 0\n.visible .entry a(\n\t.param .u32 a_param_0\n)\n{\n}\n.visible .entry b(\n)\n{\n}\n";
        let out = apply_launch_bounds(ptx).unwrap();
        assert!(out.contains(
            ".entry a(\n\t.param .u32 a_param_0\n)\n.maxntid 256, 1, 1\n.minnctapersm 2\n{"
        ));
        assert!(
            out.contains(".entry b(\n)\n{"),
            "no bounds without min_blocks"
        );
        assert!(
            apply_launch_bounds("// simt:launch_bounds c 1 1\n").is_err(),
            "a marker naming no kernel"
        );
    }

    #[test]
    fn cluster_directives() {
        let ptx = "// simt:launch_bounds a 512 1 4\n// simt:launch_bounds b 128 0 2\n// simt:launch_bounds c 64 0 1\n.visible .entry a(\n)\n{\n}\n.visible .entry b(\n)\n{\n}\n.visible .entry c(\n)\n{\n}\n";
        let out = apply_launch_bounds(ptx).unwrap();
        assert!(out.contains(
            ".entry a(\n)\n.maxntid 512, 1, 1\n.minnctapersm 1\n.explicitcluster\n.reqnctapercluster 4, 1, 1\n{"
        ));
        assert!(out.contains(".entry b(\n)\n.explicitcluster\n.reqnctapercluster 2, 1, 1\n{"));
        assert!(
            out.contains(".entry c(\n)\n{"),
            "a cluster of 1 is no cluster"
        );
    }

    #[test]
    fn dep_info() {
        let d = "/t/deps/k-1.s: /w/kernels/src/lib.rs /w/crates/simt-std/src/warp.rs /usr/lib/rustlib/src/rust/library/core/src/lib.rs\n";
        assert_eq!(
            dep_info_sources(d),
            vec!["/w/kernels/src/lib.rs", "/w/crates/simt-std/src/warp.rs"]
        );
    }
}
