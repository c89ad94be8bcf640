//! # The lecture's kernels
//!
//! GeLU, softmax, row sum and matmul + ReLU in SIMT style, one family per file and
//! one optimisation stage per file, written against [`simt_std`] exactly as a
//! user's own kernels crate would be. The host crate (`rust-simt`) compiles this
//! crate to PTX with `simt-builder` and runs the same source on the emulator.
//!
//! | module | kernels |
//! |---|---|
//! | [`gelu`] | naive (7 elementwise stages) and fused GeLU, exact (erf) GeLU |
//! | [`softmax`] | naive (5 kernels), fused (a block per row), warp per row |
//! | [`row_sum`] | blocks per row with atomics, lane groups per row |
//! | [`matmul_naive`] … [`matmul_warptiled`] | matmul + ReLU, FP32 SIMT, stages 1 to 4 |
//! | [`matmul_mma`], [`matmul_mma_pipelined`] | matmul + ReLU on tensor cores (bf16, f16, tf32), stages 5 and 6 |
//! | [`util`] | fills (poisoning, zeroing, L2 flushes) |
//! | [`selftest`] | probes of every device-library primitive, for the tests |
//! | [`config`] | block and tile sizes shared with the host (one source of truth) |
#![cfg_attr(
    target_arch = "nvptx64",
    no_std,
    feature(abi_ptx, asm_experimental_arch)
)]
#![allow(clippy::missing_safety_doc)] // each kernel's `# Safety` lives in its doc template

pub mod config;
pub mod convert;
pub mod gelu;
pub mod matmul_mma;
pub mod matmul_mma_pipelined;
pub mod matmul_naive;
pub mod matmul_tiled;
pub mod matmul_tiled_db;
pub mod matmul_warptiled;
pub mod params;
pub mod row_sum;
pub mod selftest;
pub mod softmax;
pub mod util;

pub use simt_std;
