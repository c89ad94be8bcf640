//! PTX modules: what `simt-builder` writes and a `Gpu` loads.
//!
//! A kernels crate becomes one PTX module. The host crate's `build.rs` builds it
//! with `simt_builder::Builder`, which also writes `$OUT_DIR/<name>.rs` defining
//! `pub static MODULE: simt::Module`; the host includes that file and calls
//! [`Gpu::load`](crate::Gpu::load) once. Each kernel's marker type names its
//! crate ([`Kernel::MODULE`](simt_std::Kernel::MODULE)), so a launch finds its module
//! by type, on the GPU and on the emulator alike: a kernel whose module was never
//! loaded is the same error on both.

/// A PTX module compiled from one kernels crate.
#[derive(Clone, Copy, Debug)]
pub struct Module {
    crate_name: &'static str,
    target: &'static str,
    ptx: &'static str,
}

impl Module {
    /// A module of the kernels crate `crate_name` (its library name), built for
    /// `target` (`sm_80`, ...). Normally written by `simt-builder`.
    pub const fn new(crate_name: &'static str, target: &'static str, ptx: &'static str) -> Module {
        Module {
            crate_name,
            target,
            ptx,
        }
    }
    /// The kernels crate's library name.
    pub fn crate_name(&self) -> &'static str {
        self.crate_name
    }
    /// The PTX target it was built for.
    pub fn target(&self) -> &'static str {
        self.target
    }
    /// The PTX text.
    pub fn ptx(&self) -> &'static str {
        self.ptx
    }
    /// Its kernels (`.entry` names), in order.
    pub fn entries(&self) -> Vec<String> {
        self.ptx
            .lines()
            .filter_map(|l| l.split(".entry ").nth(1))
            .map(|s| s.trim_end_matches('(').trim().to_string())
            .collect()
    }
    /// Whether the target is architecture-specific (`sm_90a`): its module runs only
    /// on that exact compute capability.
    pub fn arch_specific(&self) -> bool {
        self.target.ends_with('a')
    }
    /// The lowest compute capability that can run it (from `sm_XY`).
    pub fn min_compute_capability(&self) -> (i32, i32) {
        let digits: String = self
            .target
            .trim_start_matches("sm_")
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        let v: i32 = digits.parse().unwrap_or(0);
        (v / 10, v % 10)
    }
}
