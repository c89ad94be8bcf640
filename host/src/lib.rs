//! # rust-simt
//!
//! GPU kernels written in Rust in SIMT style (the `kernels` crate), compiled to
//! PTX by rustc's NVPTX backend at build time, and launched from here with `cust`,
//! or run on the CPU SIMT [`emulator`] when there is no GPU.
//!
//! * [`Gpu`]: the device handle, buffers and the one launch API over both backends.
//! * [`ops`]: safe per-op wrappers (GeLU, softmax, row sum, matmul + ReLU).
//! * [`bench`], [`profile`], [`info`]: timing, per-kernel tables, the device table.
#[cfg(simt_cuda)]
mod cuda;
pub mod bench;
pub mod demo;
pub mod emulator;
pub mod error;
pub mod gpu;
pub mod info;
pub mod ops;
pub mod plot;
pub mod profile;
pub mod reference;
pub mod sweep;

pub use error::{Result, SimtError};
pub use gpu::{dim3, BackendKind, Buffer, DeviceProps, Gpu, LaunchConfig, PTX};
pub use kernels;

/// Whether this binary was built with the CUDA backend.
pub const BUILT_WITH_CUDA: bool = cfg!(simt_cuda);
