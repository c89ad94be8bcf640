//! Warpgroup matrix multiply-accumulate (`wgmma.mma_async`, sm_90a): Hopper's
//! tensor-core instruction.
//!
//! `mma.sync` ([`crate::mma`]) is a warp instruction on register fragments: every
//! operand is first loaded from shared memory into registers (`ldmatrix`), and a
//! warp's m16n8k16 is 4096 multiply-adds. On the H100 that path tops out near 65%
//! of the dense peak (rust-simt measured 645 of 989 TFLOP/s with no memory traffic at
//! all). `wgmma` is issued by a **warpgroup** (4 consecutive warps, 128 threads) and
//! reads A and B **straight from shared memory**: one `m64n256k16` is 262144
//! multiply-adds, with no operand registers and no `ldmatrix`. It runs
//! asynchronously: `fence`, the `mma_async`s, `commit_group`, then `wait_group`
//! before the accumulators are read.
//!
//! **Descriptors.** Each operand is named by a 64-bit *matrix descriptor*
//! ([`desc`]):
//!
//! | bits | field |
//! |---|---|
//! | 0-13 | start address >> 4 (shared window) |
//! | 16-29 | leading-dimension byte offset >> 4 |
//! | 32-45 | stride-dimension byte offset >> 4 |
//! | 49-51 | base offset (0 when the tile is 1024-byte aligned) |
//! | 62-63 | swizzle: 0 none, 1 128-byte, 2 64-byte, 3 32-byte |
//!
//! This library uses the 128-byte swizzle that TMA writes ([`crate::tma`]): a tile
//! is made of *atoms* of 8 rows x 128 bytes (1024 bytes), row `r` of an atom at
//! `r · 128`, its 16-byte chunks XOR-ed with `r`. For a **K-major** operand (A, and
//! B stored `[n][k]`) a row is 64 bf16 (or 32 tf32) of K; atoms of 8 rows follow
//! each other at the stride offset (1024 bytes); a K step of 16 bf16 is 32 bytes
//! further along the row, which is just `start + 32` (the swizzle is applied to the
//! full address, so the step lands on the right chunks). For an **N-major** B
//! (`[k][n]`, the row-major B of `A · B`, with `TRANS_B`) a 128-byte row holds 64
//! values of N for one k: 8 k-rows make an atom, a k16 step spans two atoms
//! (`start + 2048` per step), and the tile's next 64 columns are the leading
//! offset away (one TMA box: `64 · 128` bytes).
//!
//! **Accumulators.** The regions take and return them by value as `[[f32; 4]; N / 8]`:
//! a flat `[f32; 128]` stayed in local memory (512 bytes of stack per thread: LLVM's
//! SROA did not split it), groups of 4 stay in registers. Flat index `i` is
//! `acc[i / 4][i % 4]`. Thread `t` of the warpgroup (warp `w = t / 32`, lane
//! `l = t % 32`, `g = l / 4`, `q = l % 4`) holds accumulator `i` of the 64xN tile at row
//! `16w + g + 8·((i / 2) % 2)`, column `8·(i / 4) + 2q + i % 2`: the `mma.sync`
//! C fragment, repeated over N/8 column blocks, warps stacked by 16 rows
//! ([`acc_coords`], pinned by `tests/hopper.rs`).
//!
//! **One asm region per accumulator lifetime.** Between `mma_async` and
//! `wait_group` the accumulator registers belong to the tensor core; if LLVM moved
//! or spilled one in between (separate asm statements allow it), the result would
//! be wrong, not just slow. Each function here is one asm statement holding fence,
//! four K steps (one 128-byte row of each operand), commit and `wait_group 0`
//! (`scripts/gen_wgmma.py` writes them: an N = 256 region names 128 accumulator
//! registers). The cost: the warpgroup waits for its own MMAs at the end of each
//! region; a kernel hides that with two consumer warpgroups per SM.
//!
//! **Groups in flight** (`mma_*_async`, [`wait_n256`] and its siblings). The
//! asynchronous form ends a region at its commit: the group runs on, and the
//! accumulators it returns must be passed, untouched, to the next region or to the
//! wait, which returns them once at most `N` groups are in flight. The registers
//! still pass from one asm statement to the next as in-out operands, so LLVM has no
//! reason to move them; if it ever did, ptxas would serialise the wgmmas and report
//! it (C7515), and the builder refuses such a module. The emulator keeps the sums
//! aside while a group is in flight and hands the kernel NaN poison instead: an
//! accumulator written meanwhile, or a stage overwritten before the wait that
//! covers its group, is an error naming the kernel, block and thread.
//!
//! Rules (the emulator checks 1 and 2):
//! 1. All 128 threads of the warpgroup call the same region, converged, with the
//!    same descriptors; the block has a multiple of 128 threads.
//! 2. The operands lie in the block's shared memory, in the layout the descriptor
//!    describes, and have landed (an [`mbarrier`](crate::mbarrier) wait for TMA
//!    copies; `fence_proxy_async` after ordinary stores).
//! 3. The 128-byte-swizzled tiles are 1024-byte aligned.
use crate::shared::Smem;

pub use crate::wgmma_ops::*;

/// Swizzle modes of a descriptor (bits 62-63).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swizzle {
    None = 0,
    B128 = 1,
    B64 = 2,
    B32 = 3,
}

/// A matrix descriptor for the tile at shared-window address `addr`, with leading
/// and stride byte offsets `lbo`, `sbo` (multiples of 16) and the swizzle mode.
#[inline(always)]
pub const fn desc(addr: u32, lbo: u32, sbo: u32, swizzle: Swizzle) -> u64 {
    ((addr as u64 >> 4) & 0x3fff)
        | (((lbo as u64 >> 4) & 0x3fff) << 16)
        | (((sbo as u64 >> 4) & 0x3fff) << 32)
        | ((swizzle as u64) << 62)
}

/// The fields of a descriptor: (start address, leading offset, stride offset, base
/// offset, swizzle bits), addresses and offsets in bytes.
pub const fn desc_fields(d: u64) -> (u32, u32, u32, u32, u32) {
    (
        ((d & 0x3fff) << 4) as u32,
        (((d >> 16) & 0x3fff) << 4) as u32,
        (((d >> 32) & 0x3fff) << 4) as u32,
        ((d >> 49) & 7) as u32,
        (d >> 62) as u32,
    )
}

/// The descriptor of a K-major operand tile at `tile` (128-byte-swizzled atoms of
/// 8 rows, stacked 1024 bytes apart), advanced `k_bytes` along K.
#[inline(always)]
pub fn desc_k_major(tile: Smem<u8>, k_bytes: u32) -> u64 {
    desc(tile.window_addr() + k_bytes, 16, 1024, Swizzle::B128)
}

/// The descriptor of an N-major B tile at `tile` made of TMA boxes of 64 columns x
/// `k_rows` k-rows (`k_rows · 128` bytes each, side by side along N), starting at
/// k-row `k0` (a multiple of 8).
#[inline(always)]
pub fn desc_n_major(tile: Smem<u8>, k_rows: u32, k0: u32) -> u64 {
    desc(
        tile.window_addr() + k0 * 128,
        k_rows * 128,
        1024,
        Swizzle::B128,
    )
}

/// `(row, col)` of accumulator `i` of warpgroup thread `t` in the 64xN tile.
pub const fn acc_coords(t: u32, i: u32) -> (u32, u32) {
    let (w, l) = (t / 32, t % 32);
    let (g, q) = (l / 4, l % 4);
    (16 * w + g + 8 * ((i / 2) % 2), 8 * (i / 4) + 2 * q + i % 2)
}

/// Raises (`INC`) or lowers this warpgroup's register budget to `REGS` per thread
/// (`setmaxnreg`, a multiple of 8 in 24..=256): a producer warpgroup that only issues
/// TMA copies gives registers back so the consumers' accumulators fit.
///
/// The registers come from a per-block pool that only decreases fill: each thread
/// starts with the launch's count (ptxas: 64 K / (threads · blocks per SM of the
/// launch bounds), rounded down to a multiple of 8, at most 256 here), and an
/// increase waits until the pool holds `128 · (REGS - current)`. So with 384
/// threads (168 each) a producer at 40 gives two consumer warpgroups 232, and one
/// at 56 only 224: `128 · (168 - P) >= 256 · (C - 168)`. The emulator keeps the
/// same books: an increase that can never be served, a decrease that raises (or an
/// increase that lowers), and a warpgroup whose threads disagree or do not all get
/// there are errors naming the kernel, block and warpgroup.
///
/// # Safety
/// All threads of the warpgroup execute it, converged; a decrease keeps the live
/// registers within the new budget (ptxas plans for it).
#[inline(always)]
pub unsafe fn set_max_registers<const REGS: u32, const INC: bool>() {
    // `%`, not `is_multiple_of` (Rust 1.87): this is device code, built by whichever
    // device toolchain `scripts/setup.sh` found.
    #[allow(clippy::manual_is_multiple_of)]
    const {
        assert!(
            REGS % 8 == 0 && REGS >= 24 && REGS <= 256,
            "setmaxnreg takes a multiple of 8 in 24..=256"
        )
    };
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller's contract.
    unsafe {
        if INC {
            core::arch::asm!("setmaxnreg.inc.sync.aligned.u32 {r};", r = const REGS, options(nostack))
        } else {
            core::arch::asm!("setmaxnreg.dec.sync.aligned.u32 {r};", r = const REGS, options(nostack))
        }
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::env().set_max_registers(REGS, INC);
}
