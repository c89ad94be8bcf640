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
/// * `matmul_mma_streamk_tb_tf32` (stage 6kb, stage 6k's code on its multiplying
///   blocks): six 64-bit addresses of the head's partial and the tail's fix-up, the
///   same kind of spill as stage 6k's (48 bytes of stack, 48 stored before the K
///   loop, 48 loaded after it; none inside the loop: `scripts/sass.sh
///   matmul_mma_streamk_tb_tf32`). Measured with it: 2.5-3.5% faster than stage 6k
///   at 4096^3 on the H200 (docs/PERFORMANCE.md, session 22).
/// * `matmul_relu_warptiled_streamk` (stage 4k): the segment index lives in local
///   memory on purpose (stored once per segment, loaded before and after its K loop),
///   so that no part of the stream-K schedule is live through the K loop; on sm_80
///   ptxas adds one 4-byte spill of a tile coordinate, stored before the K loop and
///   loaded after it (sm_80: 16 bytes of stack, 4 stored, 4 loaded; sm_90: 8 bytes of
///   stack, no spills; `scripts/sass.sh matmul_relu_warptiled_streamk sm_80`).
pub const SPILL_ALLOWANCE: &[(&str, u32)] = &[
    ("matmul_relu_warptiled_streamk", 24),
    ("matmul_mma_streamk_tf32", 72),
    ("matmul_mma_streamk_tb_tf32", 144),
];
