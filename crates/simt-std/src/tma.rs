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
//! The way back is a **TMA store** ([`store_2d`]): one thread hands the copy engine a
//! staged tile of shared memory and the box it goes to; the engine writes the
//! elements that lie inside the matrix. Stores complete in *bulk groups*
//! ([`store_commit`], [`store_wait_read`], [`store_wait`]), not on an mbarrier. The
//! emulator takes a store's source when it is issued (so a tile stored before it
//! is complete stores what was there), checks at the wait that covers it that the
//! source was not written meanwhile (an error otherwise: on a GPU the engine may
//! read either), writes global memory at [`store_wait`] (or when the block exits,
//! after a [`store_wait_read`]), and refuses a block that exits with a store whose
//! source read no wait covered.
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
/// it before this thread's copies (`fence.proxy.tensormap::generic.acquire.sys` then
/// `prefetch.tensormap`). Call once per map, from each thread that issues copies or
/// stores with it.
///
/// The scope is the system's because the host wrote the map (a copy from host
/// memory): the CUDA programming guide asks for `.sys` there (this library used
/// `.gpu` until 2026-11-23). The cache of maps (`simt::TensorMap`) reuses freed map
/// buffers, so the fence matters.
///
/// # Safety
/// `map` points to a valid tensor map in global memory (64-byte aligned).
#[inline(always)]
pub unsafe fn prefetch(map: *const TensorMap) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller's contract.
    unsafe {
        core::arch::asm!(
            "fence.proxy.tensormap::generic.acquire.sys [{m}], 128;",
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
        &[x, y],
        bar.ptr() as *mut u8,
    );
}

/// Copies `bytes` contiguous bytes of global memory at `src` into shared memory at
/// `dst`, and subtracts them from `bar`'s transaction count when they land: a 1-D
/// *bulk copy*, no tensor map
/// (`cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`). One
/// thread moves a whole chunk, so a block keeps many KiB of loads in flight without
/// registers or threads waiting on them. With `evict_first`, the copy carries an L2
/// evict-first policy (`createpolicy.fractional.L2::evict_first`, `.L2::cache_hint`):
/// for data read once, so its lines leave L2 before other kernels' lines do.
///
/// The emulator reads the source when the copy is issued, poisons the destination
/// (NaN) until a wait on `bar`'s phase lands it, as [`load_2d`], and refuses a source
/// that was written meanwhile.
///
/// # Safety
/// `src` is global memory readable for `bytes` bytes, 16-byte aligned, and not
/// written until `bar`'s phase completes; `dst` is shared memory of `bytes` bytes, 16-byte
/// aligned, not read or written until `bar`'s phase completes; `bytes` is a
/// positive multiple of 16; `bar` is an initialised barrier whose phase announced
/// these bytes ([`crate::mbarrier::arrive_expect_tx`]).
#[inline(always)]
pub unsafe fn bulk_load<T>(
    dst: Smem<T>,
    src: *const T,
    bytes: u32,
    bar: Smem<u64>,
    evict_first: bool,
) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller's contract.
    unsafe {
        if evict_first {
            core::arch::asm!(
                "{{ .reg .b64 pol; createpolicy.fractional.L2::evict_first.b64 pol, 1.0;",
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [{d}], [{s}], {n}, [{b}], pol; }}",
                d = in(reg32) dst.addr(), s = in(reg64) src, n = in(reg32) bytes, b = in(reg32) bar.addr(),
                options(nostack)
            )
        } else {
            core::arch::asm!(
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{s}], {n}, [{b}];",
                d = in(reg32) dst.addr(), s = in(reg64) src, n = in(reg32) bytes, b = in(reg32) bar.addr(),
                options(nostack)
            )
        }
    };
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = evict_first;
        crate::emu::env().bulk_load(
            dst.ptr() as *mut u8,
            src as *const u8,
            bytes as usize,
            bar.ptr() as *mut u8,
        );
    }
}

/// As [`load_2d`], for a 3-D map (`simt::TensorMap::tiled_blocks`): the box at
/// element coordinates `(x, y, z)`, `x` along the contiguous dimension
/// (`cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes`).
/// The box lands in shared memory dimension by dimension, `x` fastest: element
/// `(i, j, l)` of a `b0 x b1 x b2` box at `(l·b1 + j)·b0 + i`, before the swizzle.
///
/// # Safety
/// As [`load_2d`].
#[inline(always)]
pub unsafe fn load_3d<T>(
    dst: Smem<T>,
    map: *const TensorMap,
    x: i32,
    y: i32,
    z: i32,
    bar: Smem<u64>,
) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller's contract.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}, {z}}}], [{b}];",
            d = in(reg32) dst.addr(), m = in(reg64) map, x = in(reg32) x, y = in(reg32) y, z = in(reg32) z, b = in(reg32) bar.addr(),
            options(nostack)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::env().tma_load(
        dst.ptr() as *mut u8,
        map as *const u8,
        &[x, y, z],
        bar.ptr() as *mut u8,
    );
}

/// As [`load_2d`], delivered to every block of the cluster whose rank is set in
/// `mask` (bit `r` = rank `r`, this block's own bit included or not): one read of
/// global memory (and of L2) fills the same shared-memory offset `dst` in each of
/// those blocks, and completes the transaction bytes on the barrier at offset `bar`
/// of each (`cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster`).
///
/// This is how two blocks that multiply the same tile of B share its traffic: each
/// loads half of it and multicasts that half to both, so L2 delivers each byte of
/// B once per cluster instead of once per block. Every receiving block's barrier
/// counts these bytes, so each receiver's phase announces the bytes its partners
/// send it too ([`crate::mbarrier::arrive_expect_tx`]).
///
/// # Safety
/// As [`load_2d`], in every block of `mask`: the destination is free there (its
/// consumers released it, e.g. through [`crate::mbarrier::arrive_cluster`]), its
/// barrier at `bar`'s offset is initialised, and the cluster passed a
/// [`crate::cluster::sync`] after those initialisations; `mask` names only ranks of
/// the cluster.
#[inline(always)]
pub unsafe fn load_2d_multicast<T>(
    dst: Smem<T>,
    map: *const TensorMap,
    x: i32,
    y: i32,
    bar: Smem<u64>,
    mask: u16,
) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller's contract.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [{d}], [{m}, {{{x}, {y}}}], [{b}], {k};",
            d = in(reg32) dst.addr(), m = in(reg64) map, x = in(reg32) x, y = in(reg32) y, b = in(reg32) bar.addr(), k = in(reg16) mask,
            options(nostack)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::env().tma_load_multicast(
        dst.ptr() as *mut u8,
        map as *const u8,
        &[x, y],
        bar.ptr() as *mut u8,
        mask,
    );
}

/// Copies a box of shared memory at `src` to the box at element coordinates
/// `(x, y)` of `map`'s matrix in global memory
/// (`cp.async.bulk.tensor.2d.global.shared::cta.bulk_group`): the way back of
/// [`load_2d`], for an epilogue that has staged its tile in shared memory. The
/// layout in shared memory is the map's (swizzled or not, as for a load). Elements
/// of the box outside the matrix are not written, **except** those past the last
/// column that share a 16-byte chunk with it: on the H100 (2026-11-23) stores whose
/// matrix rows were not a multiple of 16 bytes long wrote that whole chunk, into the
/// row padding. The emulator writes that chunk always. Keep a stored matrix's row
/// length a multiple of 16 bytes (or accept the padding being written); rows below
/// the matrix are never written.
///
/// The copy runs asynchronously: it reads `src` at some point until a
/// [`store_wait_read`] covers it, and its writes are visible once a [`store_wait`]
/// covers it. So, in the thread that issued it: [`store_commit`] after the stores
/// of a group, [`store_wait_read`] before `src` is written again, [`store_wait`]
/// (or `store_wait_read`, for shared memory's sake) before the block exits.
///
/// # Safety
/// `map` as for [`prefetch`] (called before); `src` is shared memory of the box's
/// size, 128-byte aligned (1024-byte for the 128-byte swizzle), whose contents the
/// block wrote before a [`fence_proxy_async`] and a barrier, and does not write
/// again until a [`store_wait_read`] covers this copy; the matrix is writable where
/// the box meets it, including the rest of the 16-byte chunk that holds its last
/// column.
#[inline(always)]
pub unsafe fn store_2d<T>(src: Smem<T>, map: *const TensorMap, x: i32, y: i32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller's contract.
    unsafe {
        core::arch::asm!(
            "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [{m}, {{{x}, {y}}}], [{s}];",
            m = in(reg64) map, x = in(reg32) x, y = in(reg32) y, s = in(reg32) src.addr(),
            options(nostack)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::env().tma_store(src.ptr() as *const u8, map as *const u8, &[x, y]);
}

/// Closes this thread's TMA stores issued since the last commit into a bulk group
/// (`cp.async.bulk.commit_group`).
#[inline(always)]
pub fn store_commit() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: no operands.
    unsafe {
        core::arch::asm!("cp.async.bulk.commit_group;", options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::env().bulk_commit();
}

/// Waits until at most `N` of this thread's committed store groups may still read
/// their shared-memory source (`cp.async.bulk.wait_group.read N`): the sources of
/// the others may be written again.
#[inline(always)]
pub fn store_wait_read<const N: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: an immediate operand; waits only.
    unsafe {
        core::arch::asm!("cp.async.bulk.wait_group.read {n};", n = const N, options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::env().bulk_wait_read(N as usize);
}

/// Waits until at most `N` of this thread's committed store groups are incomplete
/// (`cp.async.bulk.wait_group N`): the writes of the others are done.
#[inline(always)]
pub fn store_wait<const N: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: an immediate operand; waits only.
    unsafe {
        core::arch::asm!("cp.async.bulk.wait_group {n};", n = const N, options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::env().bulk_wait(N as usize);
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

/// Orders this thread's ordinary global-memory accesses before its later accesses
/// through the asynchronous proxy (TMA loads), and makes them visible to it, at GPU
/// scope (`fence.proxy.async.global`). A kernel that writes global memory with
/// ordinary stores and reads it back by TMA in another block puts it after the
/// stores, before the release that publishes them, and after the acquire, before the
/// copy. (The emulator has one proxy: there the fence orders nothing more.)
#[inline(always)]
pub fn fence_proxy_async_global() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence; no operands.
    unsafe {
        core::arch::asm!("fence.proxy.async.global;", options(nostack))
    };
}
