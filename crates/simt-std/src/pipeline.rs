//! Asynchronous copies from global to shared memory (`cp.async`, sm_80 and later).
//!
//! The classic way to stage a tile is `LDG` into registers, then `STS` into shared
//! memory. The data passes through the register file, and the `STS` must wait for
//! the `LDG`'s ~500-cycle round trip. A double-buffered kernel therefore holds the
//! next tile in registers for a whole K step: 8 registers per thread in the matmul
//! (4 of A, 4 of B). At 128 registers per thread (two 256-thread blocks per SM)
//! that is 6% of the budget, and the `STS` stalls on a long scoreboard when the
//! load is late.
//!
//! `cp.async` (`LDGSTS` in SASS) copies 4, 8 or 16 bytes straight from global to
//! shared memory. The thread only issues the copy and goes on. Copies are grouped:
//! [`commit`] closes the copies issued since the last commit into a group, and
//! [`wait::<N>()`](wait) blocks until at most `N` of the thread's groups are still
//! in flight. With S shared stages a kernel keeps S-1 steps in flight and holds
//! none of them in registers.
//!
//! Where it did not pay (rust-simt's docs/PERFORMANCE.md has the numbers): a
//! warp-tiled FP32 matmul fed by a 4-stage `cp.async` pipeline ran slower than
//! register staging. Its long-scoreboard stalls went away, as predicted, but its A
//! tile is transposed on the way to shared memory, so it needed four 4-byte copies
//! per thread per K step, and they crowded the memory pipe (shared-load waits grew
//! fivefold). Use 16-byte copies of contiguous data.
//!
//! Rules (the emulator enforces the first two):
//! 1. A copy is only guaranteed to have landed after a `wait` that covers its
//!    group; other threads see it only after a barrier that follows that `wait`.
//!    The emulator performs each copy at the `wait` that covers it, never earlier,
//!    so a missing `wait` reads the NaN poison of fresh shared memory.
//! 2. 16-byte copies need 16-byte aligned source and destination, 4-byte copies
//!    4-byte aligned ones (the emulator checks both).
//! 3. `src_bytes < BYTES` reads only the first `src_bytes` bytes and fills the rest
//!    of the destination with zeros; `src_bytes = 0` reads nothing. That is how tile
//!    loads handle the matrix edges without a branch. The source address must still
//!    be a valid address of the allocation; pass the tensor's base when out of range.
use crate::shared::Smem;

/// Starts an asynchronous copy of `BYTES` (4 or 16) bytes to `dst`: the first
/// `src_bytes` (at most `BYTES`) from `src`, then zeros.
///
/// # Safety
/// `src..src + src_bytes` is readable global memory and `src` points into a live
/// allocation even when `src_bytes` is 0; `dst..dst + BYTES` is in bounds of a
/// shared array that no thread reads until a [`wait`] covering this copy and then a
/// barrier; both addresses are `BYTES`-aligned.
#[inline(always)]
pub unsafe fn copy_async<const BYTES: u32, T>(dst: Smem<T>, src: *const T, src_bytes: u32) {
    const {
        assert!(
            BYTES == 4 || BYTES == 16,
            "cp.async copies 4, 8 or 16 bytes; this library uses 4 and 16"
        )
    };
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller's contract. 16-byte copies bypass L1 (`.cg`: each byte is used
    // once per block); 4-byte copies must use `.ca`.
    unsafe {
        if BYTES == 16 {
            core::arch::asm!("cp.async.cg.shared.global [{d}], [{s}], 16, {n};", d = in(reg32) dst.addr(), s = in(reg64) src, n = in(reg32) src_bytes, options(nostack))
        } else {
            core::arch::asm!("cp.async.ca.shared.global [{d}], [{s}], 4, {n};", d = in(reg32) dst.addr(), s = in(reg64) src, n = in(reg32) src_bytes, options(nostack))
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let (d, s) = (dst.ptr() as usize, src as usize);
        assert!(
            d % BYTES as usize == 0 && (src_bytes == 0 || s % BYTES as usize == 0),
            "misaligned {BYTES}-byte async copy (shared {d:#x}, global {s:#x})"
        );
        assert!(
            src_bytes <= BYTES,
            "async copy of {src_bytes} source bytes into {BYTES}"
        );
        crate::emu::env().copy_async(
            d as *mut u8,
            s as *const u8,
            BYTES as usize,
            src_bytes as usize,
        );
    }
}

/// Closes the copies this thread issued since the last commit into one group
/// (`cp.async.commit_group`). An empty group is allowed and completes at once.
#[inline(always)]
pub fn commit() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands; bookkeeping of this thread's copies.
    unsafe {
        core::arch::asm!("cp.async.commit_group;", options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::env().copy_commit();
}

/// Waits until at most `PENDING` of this thread's committed groups are still in
/// flight (`cp.async.wait_group PENDING`): every older group has landed in shared
/// memory. Other threads' copies need a barrier after their own `wait`.
#[inline(always)]
pub fn wait<const PENDING: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: waits on this thread's own copies; orders later shared accesses.
    unsafe {
        core::arch::asm!("cp.async.wait_group {n};", n = const PENDING, options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::env().copy_wait(PENDING as usize);
}
