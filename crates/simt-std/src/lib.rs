//! # simt-std: the device library of rust-simt
//!
//! What Rust-CUDA's `cuda_std` is to its kernels, this crate is to rust-simt's: the
//! small library a kernel crate is written against. A kernel crate depends on it,
//! declares its kernels with [`kernel!`], and is compiled twice:
//!
//! * for `nvptx64-nvidia-cuda` by rustc's own NVPTX backend, through
//!   `simt-builder` from the host crate's `build.rs` (`no_std`, every kernel an
//!   `extern "ptx-kernel"` `.entry` of one PTX module);
//! * for the host, as an ordinary dependency of the host crate, where every device
//!   primitive calls into the CPU SIMT emulator of the `simt` runtime through
//!   [`emu`], so CI and GPU-less machines run the real kernel code with real block,
//!   barrier, shared-memory and warp semantics.
//!
//! Kernels touch the hardware only through this library (no `asm!` in kernel
//! files), which is what lets the emulator see everything.
//!
//! | module | what it teaches / provides | needs |
//! |---|---|---|
//! | [`thread`] | thread/block/grid indices, block barrier | any |
//! | [`warp`] | lane id, shuffles, warp and block reductions | `shfl.sync`: sm_70+ (PTX 6.0) |
//! | [`shared`] | static and dynamic shared memory | any |
//! | [`math`] | fast exp/exp2/tanh/rcp/fma/erf with stated errors | `tanh.approx`: sm_75+ |
//! | [`memory`] | 16-byte vector loads and stores | any |
//! | [`pipeline`] | `cp.async` global-to-shared copies, commit groups, waits | sm_80+ |
//! | [`mma`] | tensor cores: `mma.sync` (bf16, f16, tf32), `ldmatrix`, fragment maps | sm_80+ |
//! | [`convert`] | bf16, f16 and tf32 conversions with the hardware's rounding | sm_80+ |
//! | [`swizzle`] | XOR swizzles and bank arithmetic | any |
//! | [`atomic`] | f32 atomic add | sm_20+ |
//! | [`cluster`] | thread-block clusters: rank, cluster barrier, distributed shared memory | sm_90 |
//!
//! A kernel crate's `lib.rs` starts with
//! `#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx, asm_experimental_arch))]`:
//! [`kernel!`] and [`shared_array!`] expand, in that crate, to `extern "ptx-kernel"`
//! entries and to PTX `asm!` (shared-memory declarations, the launch-bounds marker),
//! and feature gates are per crate. The panic handler (a `trap`) comes from here.
#![cfg_attr(target_arch = "nvptx64", no_std)]
#![cfg_attr(target_arch = "nvptx64", feature(stdarch_nvptx, asm_experimental_arch))]
#![allow(clippy::missing_safety_doc)] // each kernel's `# Safety` lives in its doc template

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: `trap` aborts the kernel; the launch reports an error to the host.
    unsafe { core::arch::asm!("trap;", options(noreturn)) }
}

pub mod atomic;
pub mod cluster;
pub mod convert;
#[cfg(not(target_arch = "nvptx64"))]
pub mod emu;
pub mod flag;
pub mod math;
pub mod mbarrier;
pub mod memory;
pub mod mma;
pub mod pipeline;
pub mod shared;
pub mod swizzle;
pub mod thread;
pub mod tma;
pub mod warp;
pub mod wgmma;
mod wgmma_ops;

pub use thread::Dim3;

/// Warp width: 32 lanes on every NVIDIA GPU so far.
pub const WARP_SIZE: u32 = 32;

/// The block shapes a kernel accepts, part of its [`LaunchBounds`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockShape {
    /// Not declared yet (only while [`kernel!`] builds the bounds; never in a kernel).
    Unset,
    /// Exactly this block: the kernel's thread mapping assumes it.
    Exact(Dim3),
    /// Any block of at most this many threads (grid-stride or bounds-checked kernels).
    AtMost(u32),
}

/// The static half of a kernel's launch contract: which blocks it accepts and how
/// many blocks per SM the compiler must plan registers for.
///
/// Built by [`kernel!`] from `#[launch(threads = …)]`, `#[launch(block = (x, y, z))]`
/// or `#[launch(max_threads = …)]`, plus an optional `min_blocks = …`. With
/// `min_blocks`, the builder writes `.maxntid` and `.minnctapersm` on the PTX entry
/// (CUDA's `__launch_bounds__`): ptxas then caps registers at
/// `65536 / (threads · min_blocks)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchBounds {
    pub block: BlockShape,
    /// Blocks per SM the register allocation must allow (0: no launch bounds).
    pub min_blocks_per_sm: u32,
    /// The one PTX target the kernel is built for (`Some("sm_90a")` for Hopper-only
    /// kernels: wgmma, TMA); `None` for portable kernels.
    pub target: Option<&'static str>,
    /// The blocks wait on each other (through [`flag`]s): the launch must make them
    /// all resident at once (`cuLaunchCooperativeKernel`; on the emulator, one worker
    /// per block), and a grid larger than the device holds is refused.
    pub cooperative: bool,
    /// Blocks per thread-block cluster along x (1: no clusters; [`cluster`]): the
    /// PTX entry requires it (`.reqnctapercluster`), `grid.x` must be a multiple.
    pub cluster: u32,
}

impl LaunchBounds {
    #[doc(hidden)]
    pub const UNSET: LaunchBounds = LaunchBounds {
        block: BlockShape::Unset,
        min_blocks_per_sm: 0,
        target: None,
        cooperative: false,
        cluster: 1,
    };

    /// Exactly `(threads, 1, 1)`.
    pub const fn threads(self, threads: u32) -> Self {
        LaunchBounds {
            block: BlockShape::Exact(Dim3::x(threads)),
            ..self
        }
    }
    /// Exactly `(x, y, z)`.
    pub const fn block(self, b: (u32, u32, u32)) -> Self {
        LaunchBounds {
            block: BlockShape::Exact(Dim3::new(b.0, b.1, b.2)),
            ..self
        }
    }
    /// Any block of at most `threads` threads.
    pub const fn max_threads(self, threads: u32) -> Self {
        LaunchBounds {
            block: BlockShape::AtMost(threads),
            ..self
        }
    }
    /// Only in the module of PTX target `sm` (e.g. `"sm_90a"`).
    pub const fn target(self, sm: &'static str) -> Self {
        LaunchBounds {
            target: Some(sm),
            ..self
        }
    }
    /// Every block resident at once (see [`LaunchBounds::cooperative`]).
    pub const fn cooperative(self, yes: bool) -> Self {
        LaunchBounds {
            cooperative: yes,
            ..self
        }
    }
    /// Clusters of `n` blocks along x (see [`cluster`]).
    pub const fn cluster(self, n: u32) -> Self {
        LaunchBounds { cluster: n, ..self }
    }
    /// At least `n` blocks per SM.
    pub const fn min_blocks(self, n: u32) -> Self {
        LaunchBounds {
            min_blocks_per_sm: n,
            ..self
        }
    }
    /// The most threads a block of this kernel has (`.maxntid`).
    pub const fn max_block_threads(&self) -> u32 {
        match self.block {
            BlockShape::Exact(d) => d.x * d.y * d.z,
            BlockShape::AtMost(t) => t,
            BlockShape::Unset => 0,
        }
    }
    /// Stops compilation when the shape is missing or out of the hardware's range.
    #[doc(hidden)]
    pub const fn checked(self) -> Self {
        let t = self.max_block_threads();
        assert!(
            !matches!(self.block, BlockShape::Unset),
            "a kernel's #[launch(..)] must declare threads, block or max_threads"
        );
        assert!(t >= 1 && t <= 1024, "a block has 1 to 1024 threads");
        assert!(
            self.cluster >= 1 && self.cluster <= 8,
            "a cluster has 1 to 8 blocks (the portable sizes)"
        );
        assert!(
            !(self.cooperative && self.cluster > 1),
            "a kernel is cooperative or clustered, not both"
        );
        assert!(
            self.cluster == 1 || self.target.is_some(),
            "a kernel with clusters (sm_90+) needs target = \"sm_90a\": in the portable module its directives would break every kernel"
        );
        self
    }
}

/// A kernel as the host sees it: its PTX entry, its module, its parameters and its
/// launch contract.
///
/// Implemented by [`kernel!`] for a marker type named like the kernel function, so
/// host code writes `gpu.launch::<my_kernels::saxpy>(cfg, args)` and never types a
/// kernel-name string, a block size or a shared-memory size.
pub trait Kernel {
    /// The `.entry` name in the PTX module (the function's own name).
    const NAME: &'static str;
    /// The crate the kernel lives in: the module the host must have loaded.
    const MODULE: &'static str;
    /// The blocks the kernel accepts.
    const BOUNDS: LaunchBounds;
    /// The parameters, as a tuple, in declaration order.
    type Args: Copy + 'static;
    /// Bytes of dynamic shared memory a launch with these arguments needs
    /// (`#[launch(shared = …)]`, an expression of the parameters; 0 if not declared).
    fn dynamic_shared_bytes(args: &Self::Args) -> u64;
    /// Runs the kernel body for the current emulated thread.
    ///
    /// # Safety
    /// The caller upholds the kernel's own `# Safety` contract for `args`, and calls
    /// it only inside an emulated launch (the emulator installs the thread context).
    #[cfg(not(target_arch = "nvptx64"))]
    unsafe fn run(args: Self::Args);
}

/// A kernel parameter's value as the host passed it, for a record of a launch
/// (`simt::Gpu::capture`) that another program can replay: scalars and pointers
/// exactly, anything else (structs, arrays) by its size only.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamValue {
    /// An unsigned integer of `bytes` bytes (1, 2, 4 or 8).
    Unsigned {
        value: u64,
        bytes: u8,
    },
    /// A signed integer of `bytes` bytes.
    Signed {
        value: i64,
        bytes: u8,
    },
    F32(f32),
    F64(f64),
    /// A pointer (a device address on a GPU, a host address on the emulator).
    Pointer(u64),
    /// A struct or an array of `bytes` bytes, not recorded field by field.
    Opaque {
        bytes: usize,
    },
}

/// Marks a type as a legal kernel parameter, passed by value in `.param` space:
/// scalars, raw pointers, and `#[repr(C)]` structs of them declared with
/// [`kernel_params!`]. [`kernel!`] requires it of every parameter.
///
/// # Safety
/// Implementors must be plain old data with the same size, alignment and meaning
/// on the host and the device.
pub unsafe trait KernelParam: Copy + 'static {
    /// The value, for launch records: exact for scalars and pointers, its size for
    /// anything else (a struct's padding bytes are never read).
    fn param_value(&self) -> ParamValue {
        ParamValue::Opaque {
            bytes: core::mem::size_of::<Self>(),
        }
    }
}
macro_rules! scalar_params {
    ($($t:ty => $v:ident $(as $w:ty)?),*) => {$(
        // SAFETY: fixed-size scalars with identical representation on both sides.
        unsafe impl KernelParam for $t {
            fn param_value(&self) -> ParamValue {
                scalar_params!(@value *self, $v $(, $w)?)
            }
        }
    )*};
    (@value $x:expr, Unsigned, $w:ty) => {
        ParamValue::Unsigned { value: $x as $w, bytes: core::mem::size_of_val(&$x) as u8 }
    };
    (@value $x:expr, Signed, $w:ty) => {
        ParamValue::Signed { value: $x as $w, bytes: core::mem::size_of_val(&$x) as u8 }
    };
    (@value $x:expr, $v:ident) => {
        ParamValue::$v($x)
    };
}
scalar_params!(
    u8 => Unsigned as u64, u16 => Unsigned as u64, u32 => Unsigned as u64, u64 => Unsigned as u64,
    i8 => Signed as i64, i16 => Signed as i64, i32 => Signed as i64, i64 => Signed as i64,
    f32 => F32, f64 => F64
);
// SAFETY: device pointers are 64-bit on nvptx64 and on the host.
unsafe impl<T: 'static> KernelParam for *const T {
    fn param_value(&self) -> ParamValue {
        ParamValue::Pointer(*self as *const u8 as usize as u64)
    }
}
// SAFETY: as above.
unsafe impl<T: 'static> KernelParam for *mut T {
    fn param_value(&self) -> ParamValue {
        ParamValue::Pointer(*self as *const u8 as usize as u64)
    }
}
// SAFETY: arrays of parameters have the same layout on both sides.
unsafe impl<T: KernelParam, const N: usize> KernelParam for [T; N] {}

#[doc(hidden)]
pub const fn __assert_param<T: KernelParam>() {}

/// Declares kernel-parameter structs: `#[repr(C)]`, `Clone + Copy + Debug`, and
/// [`KernelParam`] (checked field by field at compile time).
///
/// ```ignore
/// simt_std::kernel_params! {
///     /// A row-major matrix view.
///     pub struct View { pub ptr: *const f32, pub rows: u32, pub cols: u32, pub ld: u32 }
/// }
/// ```
///
/// A struct passed by value arrives in `.param` space as one aligned byte array
/// (`.param .align 8 .b8 name[size]`), which is what CUDA C++ does with a struct.
#[macro_export]
macro_rules! kernel_params {
    ($($(#[$meta:meta])* $vis:vis struct $name:ident { $($(#[$fmeta:meta])* $fvis:vis $field:ident : $fty:ty),* $(,)? })*) => {$(
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        $vis struct $name { $($(#[$fmeta])* $fvis $field: $fty),* }

        const _: () = { $($crate::__assert_param::<$fty>();)* };
        // SAFETY: `#[repr(C)]` of fields that are all `KernelParam` (checked above).
        unsafe impl $crate::KernelParam for $name {}
    )*};
}

/// Declares a kernel: `#[no_mangle] extern "ptx-kernel"` on the GPU, a plain
/// `unsafe fn` the emulator calls on the host, and a marker type implementing
/// [`Kernel`]: the entry name, the module, the parameter tuple and the launch
/// contract.
///
/// The doc comment comes first, then `#[launch(..)]`, the contract the host checks
/// every launch against:
///
/// | key | meaning |
/// |---|---|
/// | `threads = N` | the block is exactly `(N, 1, 1)` |
/// | `block = (X, Y, Z)` | the block is exactly `(X, Y, Z)` |
/// | `max_threads = N` | any block of at most `N` threads |
/// | `min_blocks = B` | launch bounds: ptxas plans registers for `B` blocks per SM |
/// | `shared = EXPR` | dynamic shared bytes, an expression of the parameters |
/// | `cooperative = true` | blocks wait on each other ([`flag`]): every block is resident at once, a grid larger than the device holds is refused |
/// | `cluster = N` | thread-block clusters of `N` blocks along x ([`cluster`], sm_90): the PTX entry requires them, `grid.x` is a multiple of `N` |
/// | `target = "sm_90a"` | built only into the module of that PTX target (declare the kernel under `#[cfg]`s that keep it out of the others); a launch elsewhere is an `Unsupported` error |
///
/// ```ignore
/// kernel! {
///     /// y = a·x + y
///     #[launch(max_threads = 1024)]
///     pub unsafe fn saxpy(a: f32, x: *const f32, y: *mut f32, n: u32) { ... }
/// }
/// ```
#[macro_export]
macro_rules! kernel {
    (
        $(#[doc = $doc:expr])*
        #[launch($($key:ident = $val:expr),+ $(,)?)]
        $(#[$meta:meta])*
        pub unsafe fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $body:block
    ) => {
        #[cfg(target_arch = "nvptx64")]
        $(#[doc = $doc])*
        $(#[$meta])*
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) $body

        #[cfg(not(target_arch = "nvptx64"))]
        $(#[doc = $doc])*
        $(#[$meta])*
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn $name($($arg: $ty),*) $body

        #[doc = concat!("Marker type of the kernel [`", stringify!($name), "()`] for the host launch API.")]
        #[allow(non_camel_case_types)]
        pub struct $name {}

        const _: () = { $($crate::__assert_param::<$ty>();)* };

        impl $crate::Kernel for $name {
            const NAME: &'static str = stringify!($name);
            const MODULE: &'static str = env!("CARGO_CRATE_NAME");
            const BOUNDS: $crate::LaunchBounds = {
                let b = $crate::LaunchBounds::UNSET;
                $(let b = $crate::__launch_key!(b, $key, $val);)+
                b.checked()
            };
            type Args = ($($ty,)*);
            #[allow(unused_variables, clippy::unnecessary_cast)]
            fn dynamic_shared_bytes(args: &Self::Args) -> u64 {
                let ($($arg,)*) = *args;
                0u64 $(+ $crate::__launch_shared!($key, $val))+
            }
            #[cfg(not(target_arch = "nvptx64"))]
            unsafe fn run(args: Self::Args) {
                let ($($arg,)*) = args;
                // SAFETY: forwarded from `Kernel::run`'s contract.
                unsafe { $name($($arg),*) }
            }
        }

        // The launch bounds travel to the builder as a comment in the PTX module.
        #[cfg(target_arch = "nvptx64")]
        ::core::arch::global_asm!(
            concat!("// simt:launch_bounds ", stringify!($name), " {t} {b} {c}"),
            t = const <$name as $crate::Kernel>::BOUNDS.max_block_threads(),
            b = const <$name as $crate::Kernel>::BOUNDS.min_blocks_per_sm,
            c = const <$name as $crate::Kernel>::BOUNDS.cluster,
        );
    };
    (
        $(#[doc = $doc:expr])*
        pub unsafe fn $name:ident $($rest:tt)*
    ) => {
        compile_error!(concat!(
            "kernel `", stringify!($name), "` declares no launch contract: put #[launch(threads = N)] ",
            "(or block = (x, y, z), or max_threads = N; optionally min_blocks = B, shared = BYTES) ",
            "between its doc comment and `pub unsafe fn`"
        ));
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __launch_key {
    ($b:ident, threads, $v:expr) => {
        $b.threads($v)
    };
    ($b:ident, block, $v:expr) => {
        $b.block($v)
    };
    ($b:ident, max_threads, $v:expr) => {
        $b.max_threads($v)
    };
    ($b:ident, min_blocks, $v:expr) => {
        $b.min_blocks($v)
    };
    ($b:ident, target, $v:expr) => {
        $b.target($v)
    };
    ($b:ident, cooperative, $v:expr) => {
        $b.cooperative($v)
    };
    ($b:ident, cluster, $v:expr) => {
        $b.cluster($v)
    };
    ($b:ident, shared, $v:expr) => {
        $b
    };
    ($b:ident, $other:ident, $v:expr) => {
        compile_error!(concat!(
            "unknown #[launch] key `",
            stringify!($other),
            "`: use threads, block, max_threads, min_blocks, shared, target, cooperative or cluster"
        ))
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __launch_shared {
    (shared, $v:expr) => {
        ($v) as u64
    };
    ($other:ident, $v:expr) => {
        0u64
    };
}

/// Repeats a body with a compile-time constant index: `unroll!(8, i => { acc[i] += x; })`.
///
/// Register arrays (`[f32; N]` accumulators) stay in registers only when every index
/// is a compile-time constant; a loop the optimiser does not fully unroll moves the
/// whole array to local memory (a stack frame in the ptxas report). This makes the
/// unrolling explicit for the counts kernels use (2, 4, 8, 16).
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
    (16, $i:ident => $body:block) => {{
        $crate::unroll!(8, $i => $body);
        { const $i: usize = 8; $body }
        { const $i: usize = 9; $body }
        { const $i: usize = 10; $body }
        { const $i: usize = 11; $body }
        { const $i: usize = 12; $body }
        { const $i: usize = 13; $body }
        { const $i: usize = 14; $body }
        { const $i: usize = 15; $body }
    }};
}
