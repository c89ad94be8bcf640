//! `cargo bench`: tiled vs naive matmul + ReLU, naive vs fused GeLU and softmax, row sum.
//!
//! GPU time comes from CUDA events through `iter_custom` (wall time on the emulator).
//! On the emulator, or with `SIMT_BENCH_QUICK=1`, shapes are tiny and runs short: the
//! quick mode CI runs so the benches never rot.
use criterion::{criterion_group, criterion_main};

mod common;
mod gelu;
mod matmul;
mod row_sum;
mod softmax;

criterion_group!(
    benches,
    matmul::bench,
    gelu::bench,
    softmax::bench,
    row_sum::bench
);
criterion_main!(benches);
