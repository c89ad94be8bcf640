//! Compiles `kernels/` to one PTX module with rustc's NVPTX backend and decides
//! whether the CUDA backend is built in.
//!
//! * Device toolchain, first that fits: `SIMT_DEVICE_CARGO` + `SIMT_DEVICE_RUSTC`;
//!   Debian's `rustc-web` (`/usr/bin/rustc` 1.96+ with `rust-web-src`); a rustup
//!   nightly with `rust-src`. Nothing fits: the build stops and says what to install.
//! * The nested cargo gets a clean environment (no outer `RUSTFLAGS`/`CARGO_*`),
//!   its own target directory beside the profile's, and builds `kernels` as a
//!   `staticlib` with fat LTO, emitting `$OUT_DIR/kernels.ptx`.
//! * `cfg(simt_cuda)`: on when `SIMT_CUDA=1`, off when `SIMT_CUDA=0`, otherwise on
//!   when this machine has the NVIDIA driver (`libcuda.so.1`). Without it the binary
//!   does not link `libcuda` and runs everything on the emulator.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "nvptx64-nvidia-cuda";

struct Toolchain {
    cargo: PathBuf,
    rustc: PathBuf,
    /// rustup toolchain name to pin, if any.
    rustup_toolchain: Option<String>,
    what: String,
}

fn run_ok(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn has_core_src(sysroot: &Path) -> bool {
    sysroot.join("lib/rustlib/src/rust/library/core/src/lib.rs").is_file()
}

fn find_toolchain() -> Result<Toolchain, String> {
    if let (Ok(c), Ok(r)) = (env::var("SIMT_DEVICE_CARGO"), env::var("SIMT_DEVICE_RUSTC")) {
        return Ok(Toolchain { cargo: c.into(), rustc: r.into(), rustup_toolchain: None, what: "SIMT_DEVICE_CARGO/SIMT_DEVICE_RUSTC".into() });
    }
    // Debian 12's rustc-web + rust-web-src + cargo-web.
    let (drustc, dcargo) = (PathBuf::from("/usr/bin/rustc"), PathBuf::from("/usr/bin/cargo"));
    if drustc.is_file() && dcargo.is_file() {
        let v = run_ok(Command::new(&drustc).arg("--version")).unwrap_or_default();
        let sysroot = run_ok(Command::new(&drustc).args(["--print", "sysroot"])).unwrap_or_default();
        if v.starts_with("rustc 1.") && has_core_src(Path::new(&sysroot)) {
            return Ok(Toolchain { cargo: dcargo, rustc: drustc, rustup_toolchain: None, what: format!("Debian rustc-web ({v})") });
        }
    }
    // A rustup nightly with rust-src.
    if let Some(rustc) = run_ok(Command::new("rustup").args(["which", "--toolchain", "nightly", "rustc"])) {
        let rustc = PathBuf::from(rustc);
        let sysroot = run_ok(Command::new(&rustc).args(["--print", "sysroot"])).unwrap_or_default();
        if has_core_src(Path::new(&sysroot)) {
            let cargo = rustc.with_file_name("cargo");
            return Ok(Toolchain { cargo, rustc, rustup_toolchain: Some("nightly".into()), what: "rustup nightly with rust-src".into() });
        }
    }
    Err("no toolchain can build the GPU kernels (rustc's nvptx64-nvidia-cuda target with the \
         standard library's source).\n  Run `scripts/setup.sh` (it installs what is missing), or by hand:\n    \
         sudo apt-get install rustc-web rust-web-src cargo-web      # Debian 12\n  or\n    \
         rustup toolchain install nightly --component rust-src\n  or point SIMT_DEVICE_CARGO and \
         SIMT_DEVICE_RUSTC at a cargo/rustc pair whose sysroot has library/core sources."
        .into())
}

fn libcuda_present() -> bool {
    if let Some(out) = run_ok(Command::new("/sbin/ldconfig").arg("-p")) {
        if out.contains("libcuda.so.1") {
            return true;
        }
    }
    ["/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib64/libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1"]
        .iter()
        .any(|p| Path::new(p).exists())
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let kernels = manifest.join("kernels");
    println!("cargo:rerun-if-changed=kernels/src");
    println!("cargo:rerun-if-changed=kernels/Cargo.toml");
    for v in ["SIMT_DEVICE_CARGO", "SIMT_DEVICE_RUSTC", "SIMT_CUDA", "SIMT_SM"] {
        println!("cargo:rerun-if-env-changed={v}");
    }
    println!("cargo::rustc-check-cfg=cfg(simt_cuda)");

    // ---- CUDA backend or emulator only ----
    let cuda = match env::var("SIMT_CUDA").as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => libcuda_present(),
    };
    if cuda {
        println!("cargo:rustc-cfg=simt_cuda");
    }
    println!("cargo:rustc-env=SIMT_BUILT_WITH_CUDA={}", cuda as u8);

    // ---- PTX ----
    let tc = find_toolchain().unwrap_or_else(|e| {
        eprintln!("\nerror: {e}\n");
        panic!("rust-simt: no device toolchain (see the message above)");
    });
    let sm = env::var("SIMT_SM").unwrap_or_else(|_| "sm_80".into());
    // Shared across profiles: <target>/<profile>/build/<pkg>/out -> <target>/simt-kernels
    let target_dir = out_dir.ancestors().nth(4).map(|p| p.join("simt-kernels")).unwrap_or_else(|| out_dir.join("simt-kernels"));

    let mut cmd = Command::new(&tc.cargo);
    cmd.env_clear();
    for keep in ["PATH", "HOME", "CARGO_HOME", "RUSTUP_HOME", "TMPDIR", "http_proxy", "https_proxy", "HTTPS_PROXY", "CARGO_NET_OFFLINE"] {
        if let Ok(v) = env::var(keep) {
            cmd.env(keep, v);
        }
    }
    cmd.env("RUSTC", &tc.rustc).env("RUSTC_BOOTSTRAP", "1");
    if let Some(t) = &tc.rustup_toolchain {
        cmd.env("RUSTUP_TOOLCHAIN", t);
    }
    cmd.current_dir(&kernels)
        .args(["rustc", "--release", "--crate-type", "staticlib", "-Zbuild-std=core", "--target", TARGET, "--target-dir"])
        .arg(&target_dir)
        .args(["--", "--emit=asm", "-C"])
        .arg(format!("target-cpu={sm}"));
    let out = cmd.output().unwrap_or_else(|e| panic!("rust-simt: could not run {} ({}): {e}", tc.cargo.display(), tc.what));
    if !out.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
        panic!("rust-simt: compiling kernels/ for {TARGET} with {} failed (errors above)", tc.what);
    }
    // The newest kernels-*.s in deps/ is this build's PTX.
    let deps = target_dir.join(TARGET).join("release").join("deps");
    let ptx = std::fs::read_dir(&deps)
        .expect("nested kernel build produced no deps/ folder")
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with("kernels-") && n.ends_with(".s")
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .expect("nested kernel build emitted no PTX (kernels-*.s)")
        .path();
    let text = apply_launch_bounds(&std::fs::read_to_string(&ptx).unwrap());
    assert!(text.contains(".entry"), "the PTX module {} has no kernels", ptx.display());
    std::fs::write(out_dir.join("kernels.ptx"), text).unwrap();
    println!("cargo:rustc-env=SIMT_DEVICE_TOOLCHAIN={}", tc.what);
    println!("cargo:rustc-env=SIMT_PTX_TARGET={sm}");
}

/// Turns `// simt:launch_bounds NAME THREADS MIN_BLOCKS` markers (from the
/// `launch_bounds!` macro) into `.maxntid`/`.minnctapersm` directives on the entry.
fn apply_launch_bounds(ptx: &str) -> String {
    let mut out = ptx.to_string();
    for line in ptx.lines() {
        let Some(rest) = line.trim().strip_prefix("// simt:launch_bounds ") else { continue };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let [name, threads, blocks] = f[..] else { panic!("malformed launch_bounds marker: {line}") };
        let entry = out.find(&format!(".entry {name}(")).unwrap_or_else(|| panic!("launch_bounds!({name}, ..) names no kernel in the PTX module"));
        let close = entry + out[entry..].find("\n)").expect("entry parameter list") + 2;
        out.insert_str(close, &format!("\n.maxntid {threads}, 1, 1\n.minnctapersm {blocks}"));
    }
    out
}
