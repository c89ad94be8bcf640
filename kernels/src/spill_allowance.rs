// Read by the kernels crate (`kernels::spill_allowance`) and included by the root
// crate's build.rs, so the build's warnings and tests/ptx.rs share one list.

/// Kernels allowed a few bytes of stack and spills, with the bytes (stack, spill
/// stores and spill loads together) measured and found harmless; every other kernel
/// must have none (tests/ptx.rs), and the build warns past these.
///
/// * `matmul_mma_streamk_tf32` (stage 6k): three 64-bit addresses of the stream-K
///   fix-up, stored once before the K loop and loaded once after it (24 bytes of
///   stack, 24 stored, 24 loaded). Every spill-free build of it tried (the addresses
///   hidden from LLVM, or the plan recomputed per segment) had ptxas keep the ring
///   index in ordinary registers instead of uniform ones, which puts an `R2UR` before
///   every K step's first `ldmatrix`: on the H200 the kernel then ran 532-538 us at
///   4096^3 against 516-519 us (docs/PERFORMANCE.md, session 21).
pub const SPILL_ALLOWANCE: &[(&str, u32)] = &[("matmul_mma_streamk_tf32", 72)];
