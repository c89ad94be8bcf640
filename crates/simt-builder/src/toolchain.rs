//! Finding a toolchain that compiles for `nvptx64-nvidia-cuda` with the standard
//! library's source (`-Zbuild-std=core` builds `core` for the target).
use std::path::{Path, PathBuf};
use std::process::Command;

/// A cargo/rustc pair that can build kernels.
#[derive(Clone, Debug)]
pub struct Toolchain {
    pub cargo: PathBuf,
    pub rustc: PathBuf,
    /// rustup toolchain name to pin, if any.
    pub rustup_toolchain: Option<String>,
    /// What it is, for messages.
    pub what: String,
}

fn run_ok(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn has_core_src(sysroot: &Path) -> bool {
    sysroot
        .join("lib/rustlib/src/rust/library/core/src/lib.rs")
        .is_file()
}

/// The first that fits: `SIMT_DEVICE_CARGO` + `SIMT_DEVICE_RUSTC`; Debian 12's
/// `rustc-web` + `rust-web-src` + `cargo-web` (`/usr/bin`); a rustup nightly with
/// `rust-src`. Otherwise a message saying what to install.
pub fn find() -> Result<Toolchain, String> {
    if let (Ok(c), Ok(r)) = (
        std::env::var("SIMT_DEVICE_CARGO"),
        std::env::var("SIMT_DEVICE_RUSTC"),
    ) {
        return Ok(Toolchain {
            cargo: c.into(),
            rustc: r.into(),
            rustup_toolchain: None,
            what: "SIMT_DEVICE_CARGO/SIMT_DEVICE_RUSTC".into(),
        });
    }
    let (drustc, dcargo) = (
        PathBuf::from("/usr/bin/rustc"),
        PathBuf::from("/usr/bin/cargo"),
    );
    if drustc.is_file() && dcargo.is_file() {
        let v = run_ok(Command::new(&drustc).arg("--version")).unwrap_or_default();
        let sysroot =
            run_ok(Command::new(&drustc).args(["--print", "sysroot"])).unwrap_or_default();
        if v.starts_with("rustc 1.") && has_core_src(Path::new(&sysroot)) {
            return Ok(Toolchain {
                cargo: dcargo,
                rustc: drustc,
                rustup_toolchain: None,
                what: format!("Debian rustc-web ({v})"),
            });
        }
    }
    if let Some(rustc) =
        run_ok(Command::new("rustup").args(["which", "--toolchain", "nightly", "rustc"]))
    {
        let rustc = PathBuf::from(rustc);
        let sysroot = run_ok(Command::new(&rustc).args(["--print", "sysroot"])).unwrap_or_default();
        if has_core_src(Path::new(&sysroot)) {
            let cargo = rustc.with_file_name("cargo");
            return Ok(Toolchain {
                cargo,
                rustc,
                rustup_toolchain: Some("nightly".into()),
                what: "rustup nightly with rust-src".into(),
            });
        }
    }
    Err("no toolchain can build the GPU kernels (rustc's nvptx64-nvidia-cuda target with the \
         standard library's source).\n  In rust-simt run `scripts/setup.sh` (it installs what is missing), or by hand:\n    \
         sudo apt-get install rustc-web rust-web-src cargo-web      # Debian 12\n  or\n    \
         rustup toolchain install nightly --component rust-src\n  or point SIMT_DEVICE_CARGO and \
         SIMT_DEVICE_RUSTC at a cargo/rustc pair whose sysroot has library/core sources."
        .into())
}

impl Toolchain {
    /// A `cargo` command in a clean environment: no outer `RUSTFLAGS`, `CARGO_*` or
    /// build-script variables leak into the nested build; `RUSTC_BOOTSTRAP=1` for
    /// `-Zbuild-std` and the `abi_ptx` feature.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.cargo);
        cmd.env_clear();
        for keep in [
            "PATH",
            "HOME",
            "CARGO_HOME",
            "RUSTUP_HOME",
            "TMPDIR",
            "http_proxy",
            "https_proxy",
            "HTTPS_PROXY",
            "CARGO_NET_OFFLINE",
        ] {
            if let Ok(v) = std::env::var(keep) {
                cmd.env(keep, v);
            }
        }
        cmd.env("RUSTC", &self.rustc).env("RUSTC_BOOTSTRAP", "1");
        if let Some(t) = &self.rustup_toolchain {
            cmd.env("RUSTUP_TOOLCHAIN", t);
        }
        cmd
    }
}
