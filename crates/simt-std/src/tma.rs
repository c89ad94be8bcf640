//! The Tensor Memory Accelerator (TMA, sm_90): whole tiles copied global -> shared
//! by one instruction from one thread.
//!
//! With `cp.async` every thread of a block computes addresses and issues 16-byte
//! copies: for a 128x64 bf16 tile that is 1024 copies, with their bounds checks.
//! TMA moves the tile as one *bulk tensor copy*: the host describes the matrix once
//! in a 128-byte **tensor map** (base address, sizes, row stride, box size, swizzle:
//! `simt::TensorMap`), and a single thread asks for the box at coordinates `(x, y)`.
//! The copy engine does the address arithmetic, fills elements outside the matrix
//! with zeros (ragged edges cost nothing), writes shared memory in the swizzled
//! layout `wgmma` reads without bank conflicts, and reports the bytes to an
//! [`mbarrier`](crate::mbarrier) when they land.
//!
//! The **128-byte swizzle**: a box whose rows are 128 bytes is written with the
//! 16-byte chunk `c` of row `r` at chunk `c ^ (r % 8)`. Precisely, byte address `a`
//! (in the shared window) goes to `a ^ (((a >> 7) & 7) << 4)` ([`swizzle_128b`]):
//! the XOR uses the address's own bits 7-9, so the destination must be 1024-byte
//! aligned for row 0 to start the pattern. `wgmma`'s descriptors
//! ([`crate::wgmma`]) apply the same function when reading, so the two agree.
//!
//! The map travels to the kernel as a pointer to global memory: stock Rust cannot
//! mark a by-value parameter `__grid_constant__`, and the address of a by-value
//! parameter copy would not be one TMA can use. The producer thread calls
//! [`prefetch`] (which also orders the host's write of the map before its use)
//! before its first copy.
use crate::shared::Smem;

/// A CUDA tensor map (`CUtensorMap`): 128 opaque bytes, 64-byte aligned, made on
/// the host by `simt::TensorMap` (the driver's `cuTensorMapEncodeTiled` on a GPU, the
/// emulator's own encoding there).
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
pub struct TensorMap {
    pub words: [u64; 16],
}

/// Where the 128-byte swizzle moves shared-window byte address `a`: bits 4-6 (the
/// 16-byte chunk within a 128-byte row) XOR bits 7-9 (the row within 8 rows).
#[inline(always)]
pub const fn swizzle_128b(a: u32) -> u32 {
    a ^ (((a >> 7) & 7) << 4)
}

/// Fetches the tensor map into the TMA unit's cache and orders the host's write of
/// it before this thread's copies (`fence.proxy.tensormap::generic.acquire.gpu` then
/// `prefetch.tensormap`). Call once per map, from the thread that issues copies.
///
/// # Safety
/// `map` points to a valid tensor map in global memory (64-byte aligned).
#[inline(always)]
pub unsafe fn prefetch(map: *const TensorMap) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller's contract.
    unsafe {
        core::arch::asm!(
            "fence.proxy.tensormap::generic.acquire.gpu [{m}], 128;",
            "prefetch.tensormap [{m}];",
            m = in(reg64) map, options(nostack)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = map;
}

/// Copies the box at element coordinates `(x, y)` (`x` along the contiguous
/// dimension) of `map`'s matrix into shared memory at `dst`, and subtracts its bytes
/// from `bar`'s transaction count when it lands
/// (`cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`).
/// Elements outside the matrix arrive as zeros; negative coordinates are allowed.
///
/// # Safety
/// `map` as for [`prefetch`] (called before); `dst` is shared memory of the box's
/// size, 128-byte aligned (1024-byte for the 128-byte swizzle), not read until
/// `bar`'s phase completes; `bar` is an initialised barrier whose phase announced
/// these bytes ([`crate::mbarrier::arrive_expect_tx`]).
#[inline(always)]
pub unsafe fn load_2d<T>(dst: Smem<T>, map: *const TensorMap, x: i32, y: i32, bar: Smem<u64>) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller's contract.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}}}], [{b}];",
            d = in(reg32) dst.addr(), m = in(reg64) map, x = in(reg32) x, y = in(reg32) y, b = in(reg32) bar.addr(),
            options(nostack)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::env().tma_load(
        dst.ptr() as *mut u8,
        map as *const u8,
        [x, y],
        bar.ptr() as *mut u8,
    );
}

/// Makes this thread's ordinary shared-memory writes visible to the asynchronous
/// proxy (TMA stores, `wgmma` operands) (`fence.proxy.async.shared::cta`).
#[inline(always)]
pub fn fence_proxy_async() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence; no operands.
    unsafe {
        core::arch::asm!("fence.proxy.async.shared::cta;", options(nostack))
    };
}
