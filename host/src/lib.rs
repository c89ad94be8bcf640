//! # simt: the rust-simt runtime
//!
//! Runs kernels written with `simt-std` and built with `simt-builder`, on an NVIDIA
//! GPU through the CUDA driver (`cust`) or on the CPU SIMT emulator, with one API:
//!
//! ```ignore
//! mod ptx { include!(concat!(env!("OUT_DIR"), "/kernels.rs")); } // from simt-builder
//!
//! let gpu = simt::Gpu::from_env()?;               // GPU if present, else the emulator
//! gpu.load(&ptx::MODULE)?;
//! let x = gpu.upload(&[1.0f32, 2.0, 3.0])?;
//! let mut y = gpu.alloc::<f32>(3)?;
//! let cfg = simt::LaunchConfig::linear::<my_kernels::double>(3)?;  // the kernel's own block
//! // SAFETY: x and y hold 3 floats, as `double`'s contract asks.
//! unsafe { gpu.launch::<my_kernels::double>(cfg, (x.ptr(), y.ptr_mut(), 3))? };
//! assert_eq!(gpu.download(&y)?, [2.0, 4.0, 6.0]);
//! ```
//!
//! | item | what it is |
//! |---|---|
//! | [`Gpu`] | a device: modules, buffers, checked launches, timing and profiling |
//! | [`Buffer`] | device memory that knows its device |
//! | [`MatrixRef`], [`MatrixMut`], [`Layout`] | matrix views with shape and row stride |
//! | [`Module`] | a PTX module, as `simt-builder` writes it |
//! | [`TensorMap`] | a TMA tensor map of a matrix, for Hopper kernels |
//! | [`LaunchConfig`] | grid and block, built from the kernel's contract |
//! | [`emulator`] | the CPU SIMT emulator and its settings |
//! | [`SimtError`] | every failure, typed, with what to do |
//!
//! The CUDA backend is compiled in when the building machine has the NVIDIA driver
//! (or `SIMT_CUDA=1`); otherwise every `Gpu` is the emulator and says why.
mod backend;
mod buffer;
mod device;
pub mod emulator;
mod error;
mod gpu;
mod launch;
mod module;
mod tensor_map;
mod view;

pub use buffer::Buffer;
pub use device::{BackendKind, DeviceProps, KernelResources, MemInfo};
pub use error::{DriverStatus, Result, SimtError};
pub use gpu::{CapturedLaunch, Gpu, LaunchRecord, ScratchKind, ScratchRegion};
pub use launch::{LaunchArgs, LaunchConfig, MAX_GRID};
pub use module::Module;
pub use simt_std::{Dim3, Kernel, KernelParam, ParamValue};
pub use tensor_map::{TensorMap, TmaElement, TmaSwizzle};
pub use view::{Layout, MatrixMut, MatrixRef};

/// `Dim3` shorthand.
pub const fn dim3(x: u32, y: u32, z: u32) -> Dim3 {
    Dim3 { x, y, z }
}
