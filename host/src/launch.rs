//! Launch configurations, argument packs, and the check of every launch against
//! the kernel's declared contract (`#[launch(..)]` in `simt_std::kernel!`).
//!
//! The host never writes a kernel's block size or shared-memory size: the block
//! comes from the contract ([`LaunchConfig::for_kernel`], [`LaunchConfig::linear`]),
//! the dynamic shared memory from the contract's expression of the arguments, and
//! a block that contradicts the contract is a [`SimtError::BadLaunch`].
use std::ffi::c_void;

use simt_std::{BlockShape, Dim3, Kernel, KernelParam, ParamValue};

use crate::error::{Result, SimtError};

/// Largest grid: `2^31 - 1` blocks in x, 65535 in y and z.
pub const MAX_GRID: Dim3 = Dim3 {
    x: i32::MAX as u32,
    y: 65535,
    z: 65535,
};

/// Grid and block of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: Dim3,
    pub block: Dim3,
}

impl LaunchConfig {
    /// An explicit grid and block (checked against the kernel's contract at launch).
    pub const fn new(grid: Dim3, block: Dim3) -> LaunchConfig {
        LaunchConfig { grid, block }
    }

    /// `grid` blocks of the kernel's own block: its exact block, or its largest one
    /// for kernels that accept any block up to a size.
    pub fn for_kernel<K: Kernel>(grid: Dim3) -> LaunchConfig {
        LaunchConfig {
            grid,
            block: contract_block::<K>(),
        }
    }

    /// A 1-D launch of `K`'s block covering `threads` threads (at least one block).
    pub fn linear<K: Kernel>(threads: usize) -> Result<LaunchConfig> {
        let block = contract_block::<K>();
        let per_block = block.volume() as usize;
        let blocks = threads.div_ceil(per_block).max(1);
        if blocks > MAX_GRID.x as usize {
            return Err(SimtError::BadLaunch {
                kernel: K::NAME,
                detail: format!("{threads} threads need {blocks} blocks of {per_block}, over the grid limit 2^31-1; split the work"),
            });
        }
        Ok(LaunchConfig {
            grid: Dim3::x(blocks as u32),
            block,
        })
    }

    /// Blocks in the grid.
    pub fn blocks(&self) -> u64 {
        self.grid.volume()
    }
}

fn contract_block<K: Kernel>() -> Dim3 {
    match K::BOUNDS.block {
        BlockShape::Exact(d) => d,
        BlockShape::AtMost(t) => Dim3::x(t),
        BlockShape::Unset => {
            unreachable!("kernel! rejects kernels without a block shape at compile time")
        }
    }
}

/// Checks `cfg` against the hardware and `K`'s contract; returns the dynamic shared
/// bytes the contract asks for with these arguments.
pub(crate) fn validate<K: Kernel>(
    cfg: &LaunchConfig,
    args: &K::Args,
    smem_limit: u32,
) -> Result<u32> {
    let bad = |detail: String| {
        Err(SimtError::BadLaunch {
            kernel: K::NAME,
            detail,
        })
    };
    let (b, g) = (cfg.block, cfg.grid);
    let threads = b.volume();
    if threads == 0 || threads > 1024 || b.z > 64 {
        return bad(format!(
            "block {b:?} has {threads} threads; a block needs 1 to 1024 (z at most 64)"
        ));
    }
    match K::BOUNDS.block {
        BlockShape::Exact(want) if want != b => {
            return bad(format!(
                "block {b:?}, but the kernel is written for exactly {want:?} (its #[launch] contract); use LaunchConfig::for_kernel or ::linear"
            ))
        }
        BlockShape::AtMost(max) if threads > max as u64 => {
            return bad(format!("block of {threads} threads, but the kernel's #[launch] contract allows at most {max}"))
        }
        _ => {}
    }
    if g.x == 0 || g.y == 0 || g.z == 0 || g.x > MAX_GRID.x || g.y > MAX_GRID.y || g.z > MAX_GRID.z
    {
        return bad(format!(
            "grid {g:?} is outside 1..2^31-1 x 1..65535 x 1..65535"
        ));
    }
    let c = K::BOUNDS.cluster;
    if c > 1 && g.x % c != 0 {
        return bad(format!(
            "grid {g:?}: the kernel runs in clusters of {c} blocks along x (#[launch(cluster = {c})]), so grid.x must be a multiple of {c}"
        ));
    }
    let shared = K::dynamic_shared_bytes(args);
    if shared > smem_limit as u64 {
        return bad(format!(
            "these arguments need {shared} bytes of dynamic shared memory (the kernel's #[launch(shared = ..)]), over the device's {smem_limit} per block; use smaller inputs"
        ));
    }
    Ok(shared as u32)
}

/// Kernel argument tuples: one pointer to each argument, in order, for
/// `cuLaunchKernel` (every element is a [`KernelParam`]).
pub trait LaunchArgs: Copy + 'static {
    /// Calls `f` with one pointer to each argument, in order.
    fn with_param_ptrs<R>(&self, f: impl FnOnce(&[*mut c_void]) -> R) -> R;
    /// Each argument's value, in order, for a launch record ([`crate::Gpu::capture`]).
    fn param_values(&self) -> Vec<ParamValue>;
}

macro_rules! launch_args {
    ($($t:ident $i:tt),*) => {
        impl<$($t: KernelParam),*> LaunchArgs for ($($t,)*) {
            fn with_param_ptrs<R>(&self, f: impl FnOnce(&[*mut c_void]) -> R) -> R {
                f(&[$(&self.$i as *const $t as *mut c_void),*])
            }
            fn param_values(&self) -> Vec<ParamValue> {
                vec![$(self.$i.param_value()),*]
            }
        }
    };
}
launch_args!();
launch_args!(A 0);
launch_args!(A 0, B 1);
launch_args!(A 0, B 1, C 2);
launch_args!(A 0, B 1, C 2, D 3);
launch_args!(A 0, B 1, C 2, D 3, E 4);
launch_args!(A 0, B 1, C 2, D 3, E 4, F 5);
launch_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
launch_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
launch_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
launch_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
launch_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
launch_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
launch_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
launch_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
launch_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);
launch_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15);

/// The emulator's way into a kernel: a monomorphised trampoline and the argument
/// tuple it reads.
#[derive(Clone, Copy)]
pub(crate) struct EmuEntry {
    pub run: unsafe fn(*const ()),
    pub args: *const (),
}

/// Runs `K` with the argument tuple at `args`.
///
/// # Safety
/// `args` points to a live `K::Args`; the launch contract of `Gpu::launch` holds.
pub(crate) unsafe fn trampoline<K: Kernel>(args: *const ()) {
    // SAFETY: forwarded from this function's contract.
    unsafe { K::run(*(args as *const K::Args)) }
}

/// One validated launch, type-erased for the backends.
#[cfg_attr(not(simt_cuda), allow(dead_code))]
pub(crate) struct RawLaunch<'a> {
    pub kernel: &'static str,
    pub module: &'static str,
    /// The PTX target of the loaded module that has the kernel.
    pub target: &'static str,
    pub grid: Dim3,
    pub block: Dim3,
    pub shared_bytes: u32,
    /// One pointer per kernel parameter (CUDA).
    pub params: &'a [*mut c_void],
    /// The kernel body (emulator).
    pub emu: EmuEntry,
    /// Every block resident at once (`#[launch(cooperative = true)]`).
    pub cooperative: bool,
    /// Blocks per cluster along x (`#[launch(cluster = N)]`; 1: none).
    pub cluster: u32,
    /// Blocks per SM of the launch bounds (0: none): with the block's threads, the
    /// registers each thread starts with (`setmaxnreg`'s books on the emulator).
    pub min_blocks: u32,
}
