//! # rust-simt device crate
//!
//! GPU kernels written in Rust in SIMT style, plus the small device library they
//! are written against. The same source is compiled twice:
//!
//! * for `nvptx64-nvidia-cuda` by rustc's own NVPTX backend (`no_std`, every kernel
//!   an `extern "ptx-kernel"` `.entry` in one PTX module; see the top-level `build.rs`);
//! * for the host, where every device primitive calls into the CPU SIMT emulator
//!   (`rust_simt::emulator`) through [`emu`], so CI and GPU-less machines run the
//!   real kernel code with real block, barrier, shared-memory and warp semantics.
//!
//! Kernels touch the hardware only through this library (no `asm!` in kernel
//! files), which is what lets the emulator see everything.
//!
//! | module | what it teaches / provides | needs |
//! |---|---|---|
//! | [`thread`] | thread/block/grid indices, block barrier | any |
//! | [`warp`] | lane id, shuffles, warp and block reductions | sm_30+ (`shfl.sync`: sm_70+ PTX 6.0) |
//! | [`shared`] | static and dynamic shared memory | any |
//! | [`math`] | fast exp/exp2/tanh/rcp/fma/erf with stated errors | `tanh.approx`: sm_75+ |
//! | [`memory`] | 16-byte vector loads and stores | any |
//! | [`pipeline`] | `cp.async` global-to-shared copies, commit groups, waits | sm_80+ |
//! | [`swizzle`] | XOR swizzles and bank arithmetic | any |
//! | [`atomic`] | f32 atomic add | sm_20+ |
//! | [`config`] | block and tile sizes shared with the host | - |
#![cfg_attr(target_arch = "nvptx64", no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)
)]
#![allow(clippy::missing_safety_doc)] // each kernel's `# Safety` lives in its doc template

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: `trap` aborts the kernel; the launch reports an error to the host.
    unsafe { core::arch::asm!("trap;", options(noreturn)) }
}

pub mod atomic;
pub mod config;
#[cfg(not(target_arch = "nvptx64"))]
pub mod emu;
pub mod math;
pub mod memory;
pub mod pipeline;
pub mod shared;
pub mod swizzle;
pub mod thread;
pub mod warp;

pub mod gelu;
pub mod matmul_naive;
pub mod matmul_tiled;
pub mod matmul_tiled_db;
pub mod matmul_warptiled;
pub mod row_sum;
pub mod selftest;
pub mod softmax;
pub mod util;

/// A kernel as the host sees it: its PTX entry name and its parameter list.
///
/// Implemented by [`kernel!`] for a marker type named like the kernel function, so
/// host code writes `launch::<kernels::gelu::gelu_fused>(cfg, args)` and never types
/// a kernel-name string.
pub trait Kernel {
    /// The `.entry` name in the PTX module (the function's own name).
    const NAME: &'static str;
    /// The parameters, as a tuple, in declaration order.
    type Args: Copy + 'static;
    /// Runs the kernel body for the current emulated thread.
    ///
    /// # Safety
    /// The caller upholds the kernel's own `# Safety` contract for `args`, and calls
    /// it only inside an emulated launch (the emulator installs the thread context).
    #[cfg(not(target_arch = "nvptx64"))]
    unsafe fn run(args: Self::Args);
}

/// Declares a kernel: `#[no_mangle] extern "ptx-kernel"` on the GPU, a plain
/// `unsafe fn` the emulator calls on the host, and a marker type implementing
/// [`Kernel`] (the entry name as a constant, the parameter tuple as a type).
///
/// ```ignore
/// kernel! {
///     /// y = 2x
///     pub unsafe fn double(x: *const f32, y: *mut f32, n: u32) { ... }
/// }
/// ```
#[macro_export]
macro_rules! kernel {
    ($(#[$meta:meta])* pub unsafe fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $body:block) => {
        #[cfg(target_arch = "nvptx64")]
        $(#[$meta])*
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) $body

        #[cfg(not(target_arch = "nvptx64"))]
        $(#[$meta])*
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $name($($arg: $ty),*) $body

        #[doc = concat!("Marker type of the kernel [`", stringify!($name), "()`] for the host launch API.")]
        #[allow(non_camel_case_types)]
        pub struct $name {}

        impl $crate::Kernel for $name {
            const NAME: &'static str = stringify!($name);
            type Args = ($($ty,)*);
            #[cfg(not(target_arch = "nvptx64"))]
            unsafe fn run(args: Self::Args) {
                let ($($arg,)*) = args;
                // SAFETY: forwarded from `Kernel::run`'s contract.
                unsafe { $name($($arg),*) }
            }
        }
    };
}

/// Marks a type as a legal kernel parameter (passed by value in `.param` space):
/// scalars and raw pointers. Host launch code requires it for every argument.
///
/// # Safety
/// Implementors must be plain-old-data with the same size and meaning on host and device.
pub unsafe trait KernelParam: Copy + 'static {}
// SAFETY: scalars and pointers are 4 or 8 bytes with identical representation on both sides.
unsafe impl KernelParam for u32 {}
// SAFETY: as above.
unsafe impl KernelParam for i32 {}
// SAFETY: as above.
unsafe impl KernelParam for u64 {}
// SAFETY: as above.
unsafe impl KernelParam for f32 {}
// SAFETY: device pointers are 64-bit on nvptx64 and on the host.
unsafe impl<T: 'static> KernelParam for *const T {}
// SAFETY: as above.
unsafe impl<T: 'static> KernelParam for *mut T {}

/// Repeats a body with a compile-time constant index: `unroll!(8, i => { acc[i] += x; })`.
///
/// Register arrays (`[f32; N]` accumulators) stay in registers only when every index
/// is a compile-time constant; a loop the optimiser does not fully unroll moves the
/// whole array to local memory (a stack frame in the ptxas report). This makes the
/// unrolling explicit for the counts kernels use (2, 4, 8).
#[macro_export]
macro_rules! unroll {
    (2, $i:ident => $body:block) => {{
        { const $i: usize = 0; $body }
        { const $i: usize = 1; $body }
    }};
    (4, $i:ident => $body:block) => {{
        { const $i: usize = 0; $body }
        { const $i: usize = 1; $body }
        { const $i: usize = 2; $body }
        { const $i: usize = 3; $body }
    }};
    (8, $i:ident => $body:block) => {{
        $crate::unroll!(4, $i => $body);
        { const $i: usize = 4; $body }
        { const $i: usize = 5; $body }
        { const $i: usize = 6; $body }
        { const $i: usize = 7; $body }
    }};
}

/// `__launch_bounds__` for a kernel: `launch_bounds!(name, max_threads, min_blocks_per_sm)`.
///
/// Tells ptxas the kernel never runs with more than `max_threads` threads per block
/// and should fit `min_blocks_per_sm` blocks on an SM, so it caps registers at
/// `65536 / (max_threads · min_blocks)`. rustc has no attribute for this: the macro
/// leaves a marker comment in the PTX module, and `build.rs` turns it into the
/// entry's `.maxntid` / `.minnctapersm` directives (checked by `tests/ptx.rs`).
#[macro_export]
macro_rules! launch_bounds {
    ($name:ident, $threads:expr, $min_blocks:expr) => {
        #[cfg(target_arch = "nvptx64")]
        ::core::arch::global_asm!(
            concat!("// simt:launch_bounds ", stringify!($name), " {t} {b}"),
            t = const $threads,
            b = const $min_blocks,
        );
        #[cfg(not(target_arch = "nvptx64"))]
        const _: (u32, u32) = ($threads, $min_blocks);
    };
}
