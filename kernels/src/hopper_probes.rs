//! Probes of the Hopper primitives (sm_90a module): one TMA copy through an
//! mbarrier, one 1-D bulk copy, and one `wgmma` region on TMA-loaded tiles. `tests/hopper.rs` runs them
//! on the emulator and the GPU and compares with the definitions, so the emulator's
//! model of descriptors, swizzles and phases is checked against the hardware.
use simt_std::shared::{dynamic_shared, Smem};
use simt_std::thread::{sync_threads, thread_idx};
use simt_std::tma::{self, TensorMap};
use simt_std::wgmma::{self, acc_coords, desc_k_major, desc_n_major};
use simt_std::{kernel, mbarrier, unroll};

/// Bytes of shared memory the probes ask for: two 16 KiB tiles and a barrier in the
/// first 33 KiB after the 1 KiB alignment slack; 64 KiB in all, above the 48 KiB
/// default, so that their launches configure the block as `matmul_wgmma`'s do.
pub const PROBE_SMEM: u32 = 64 * 1024;

kernel! {
    /// Thread 0 copies one box of `map` at `(x, y)` (a 2-D map, `z < 0`) or `(x, y,
    /// z)` (a 3-D map) into shared memory with TMA;
    /// threads 128-255 wait on the
    /// mbarrier for the phase of parity `parity` (0 is right, 1 is wrong: that
    /// phase "completed" before the copy), and writes the shared bytes, as they lie
    /// (swizzled), to `out` (`bytes` of them, a multiple of 4).
    ///
    /// # Safety
    /// `map` is a tensor map whose box has `bytes` bytes (at most 16 KiB, rows of
    /// 128 bytes when swizzled); `out` holds `bytes / 4` words.
    #[launch(threads = 256, min_blocks = 1, shared = PROBE_SMEM, target = "sm_90a")]
    pub unsafe fn probe_tma(map: *const TensorMap, x: i32, y: i32, z: i32, bytes: u32, parity: u32, out: *mut u32) {
        let raw = dynamic_shared::<u8>();
        let tile = raw.add(((1024 - raw.window_addr() % 1024) % 1024) as usize);
        // SAFETY: the map (caller) describes a box of `bytes`; the destination is
        // 1024-byte aligned; the phase announces exactly the box's bytes.
        unsafe {
            copy_probe(tile, bytes, parity, out, |tile, bar| {
                tma::prefetch(map);
                mbarrier::arrive_expect_tx(bar, bytes);
                if z < 0 {
                    tma::load_2d(tile, map, x, y, bar);
                } else {
                    tma::load_3d(tile, map, x, y, z, bar);
                }
            })
        }
    }
}

kernel! {
    /// Thread 0 copies `bytes` of `src` into shared memory with one 1-D bulk copy
    /// ([`tma::bulk_load`]); threads 128-255 wait on the mbarrier for the phase of
    /// parity `parity` and write the shared words to `out`. `mode` 1 breaks the rule
    /// on purpose, for the emulator's check: thread 0 writes `src[0]` while the copy
    /// is in flight (on a GPU a race; the tests run it on the emulator only).
    ///
    /// # Safety
    /// `src` is 16-byte aligned global memory of `bytes` bytes (a positive multiple of
    /// 16, at most 32 KiB), written by no one else during the launch; `out` holds
    /// `bytes / 4` words.
    #[launch(threads = 256, min_blocks = 1, shared = PROBE_SMEM, target = "sm_90a")]
    pub unsafe fn probe_bulk(src: *mut u32, bytes: u32, parity: u32, mode: u32, out: *mut u32) {
        // SAFETY: src as the contract says; a 16-byte aligned destination of `bytes`
        // (at most 32 KiB, below the barrier); the phase announces exactly these bytes.
        // Mode 1's write is the misuse under test.
        unsafe {
            copy_probe(dynamic_shared::<u8>(), bytes, parity, out, |tile, bar| {
                mbarrier::arrive_expect_tx(bar, bytes);
                tma::bulk_load(tile.cast::<u32>(), src as *const u32, bytes, bar, false);
                if mode == 1 {
                    *src = !*src;
                }
            })
        }
    }
}

/// The body of [`probe_tma`] and [`probe_bulk`]: thread 0 initialises the barrier
/// 32 KiB past `tile` and, after a block barrier, calls `issue(tile, bar)` to announce
/// and start its copies. Warpgroup 0 is the producer, as in `matmul_wgmma`: thread 0
/// issues and every producer thread leaves; warpgroup 1 waits for the phase of parity
/// `parity` and writes the tile's first `bytes` to `out` as words (`mbarrier`'s rule 4).
///
/// # Safety
/// 256 threads; `tile` has 32 KiB and 8 bytes of this block's shared memory; `issue`
/// announces on `bar` exactly the bytes its copies deliver into `tile`, at least
/// `bytes`; `out` holds `bytes / 4` words.
#[inline(always)]
unsafe fn copy_probe(
    tile: Smem<u8>,
    bytes: u32,
    parity: u32,
    out: *mut u32,
    issue: impl FnOnce(Smem<u8>, Smem<u64>),
) {
    let bar = tile.add(32768).cast::<u64>();
    // SAFETY: an aligned slot of this block's shared memory, 256 threads (the contract).
    let Some(t) = (unsafe { hand_off(bar, || issue(tile, bar)) }) else {
        return;
    };
    // SAFETY: an initialised barrier.
    unsafe { mbarrier::wait(bar, parity) };
    let words = tile.cast::<u32>();
    let mut i = t;
    while i < bytes / 4 {
        // SAFETY: inside the copies (the contract); out holds bytes / 4 words.
        unsafe { *out.add(i as usize) = words.add(i as usize).cast::<f32>().read().to_bits() };
        i += 128;
    }
}

/// The probes' hand-off, as in `matmul_wgmma` (`mbarrier`'s rule 4): thread 0
/// initialises `bar` for one arrival; after a block barrier thread 0 calls `issue`
/// and warpgroup 0 (the producer) leaves with `None`; each thread of warpgroup 1 (the
/// consumer) gets its index in it.
///
/// # Safety
/// 256 threads; `bar` is an 8-byte aligned slot of this block's shared memory that
/// nothing else uses.
#[inline(always)]
unsafe fn hand_off(bar: Smem<u64>, issue: impl FnOnce()) -> Option<u32> {
    let t = thread_idx().x;
    if t == 0 {
        // SAFETY: the contract; used only after the block barrier below.
        unsafe { mbarrier::init(bar, 1) };
        mbarrier::fence_init();
    }
    sync_threads();
    if t < 128 {
        if t == 0 {
            issue();
        }
        return None;
    }
    Some(t - 128)
}

/// The body of [`probe_wgmma`] and [`probe_wgmma_misuse`].
///
/// # Safety
/// As [`probe_wgmma`].
#[inline(always)]
unsafe fn wgmma_probe(
    a_map: *const TensorMap,
    b_map: *const TensorMap,
    trans_b: u32,
    mode: u32,
    out: *mut f32,
) {
    {
        let raw = dynamic_shared::<u8>();
        let a_tile = raw.add(((1024 - raw.window_addr() % 1024) % 1024) as usize);
        let b_tile = a_tile.add(8192);
        let bar = a_tile.add(32768).cast::<u64>();
        let issue = || {
            // SAFETY: the maps (caller): A's box is 64 x 64 bf16 (8 KiB); B's two boxes
            // (N-major) or one 128 x 64 box (K-major) are 16 KiB; 1024-byte aligned.
            unsafe {
                tma::prefetch(a_map);
                tma::prefetch(b_map);
                mbarrier::arrive_expect_tx(bar, 8192 + 16384);
                tma::load_2d(a_tile, a_map, 0, 0, bar);
                if trans_b != 0 {
                    tma::load_2d(b_tile, b_map, 0, 0, bar);
                    tma::load_2d(b_tile.add(8192), b_map, 64, 0, bar);
                } else {
                    tma::load_2d(b_tile, b_map, 0, 0, bar);
                }
            }
        };
        // SAFETY: an aligned slot of this block's shared memory, 256 threads (the contract).
        let Some(t) = (unsafe { hand_off(bar, issue) }) else {
            return;
        };
        // SAFETY: an initialised barrier; phase 0 carries the copies.
        unsafe { mbarrier::wait(bar, 0) };
        let da = [0, 1, 2, 3].map(|i| desc_k_major(a_tile, 32 * i));
        let mut acc = [[0f32; 4]; 16];
        let db = if trans_b != 0 {
            [0, 1, 2, 3].map(|i| desc_n_major(b_tile, 64, 16 * i))
        } else {
            [0, 1, 2, 3].map(|i| desc_k_major(b_tile, 32 * i))
        };
        // SAFETY: the whole warpgroup, converged; operands landed (the wait); modes 2
        // to 4 break the rules on purpose (see the doc).
        acc = unsafe {
            match (mode, trans_b != 0) {
                (0, true) => wgmma::mma_bf16_n128::<true>(acc, da, db),
                (0, false) => wgmma::mma_bf16_n128::<false>(acc, da, db),
                (_, tb) => {
                    let mut acc = if tb {
                        wgmma::mma_bf16_n128_async::<true>(acc, da, db)
                    } else {
                        wgmma::mma_bf16_n128_async::<false>(acc, da, db)
                    };
                    if mode == 1 {
                        acc = if tb {
                            wgmma::mma_bf16_n128_async::<true>(acc, da, db)
                        } else {
                            wgmma::mma_bf16_n128_async::<false>(acc, da, db)
                        };
                    } else if mode == 2 {
                        acc[0][0] = 1.0;
                    } else if mode == 4 {
                        if t == 0 {
                            tma::prefetch(a_map);
                            mbarrier::arrive_expect_tx(bar, 8192);
                            tma::load_2d(a_tile, a_map, 0, 0, bar);
                        }
                    } else {
                        a_tile.add(4 * t as usize).cast::<f32>().write(0.0);
                    }
                    wgmma::wait_n128::<0>(acc)
                }
            }
        };
        unroll!(8, I => {
            unroll!(8, J => {
                let i = 8 * I + J;
                let (r, c) = acc_coords(t, i as u32);
                // SAFETY: r < 64, c < 128: inside out.
                unsafe { *out.add((r * 128 + c) as usize) = acc[i / 4][i % 4] };
            });
        });
    }
}

kernel! {
    /// Thread 0 loads the tiles with TMA; the second warpgroup computes `D = A · B` (64 x 128, f32) with one bf16 `wgmma`
    /// region of 4 k16 steps (K = 64): A `[64][64]` from `a_map` (one box), and B either N-major (`trans_b = 1`: `B: [64][128]`, two boxes of 64
    /// columns from `b_map`) or K-major (`trans_b = 0`: `Bᵀ: [128][64]`, one box of 128
    /// rows). `out`: D row-major `[64][128]`.
    ///
    /// `mode` 1 runs the region twice as asynchronous groups (`mma_bf16_n128_async`,
    /// then `wait_n128::<0>`), so `D = 2 · A · B`.
    ///
    /// # Safety
    /// The maps describe bf16 matrices with those boxes (128-byte swizzle); `out` holds
    /// 64 x 128 floats.
    #[launch(threads = 256, min_blocks = 1, shared = PROBE_SMEM, target = "sm_90a")]
    pub unsafe fn probe_wgmma(a_map: *const TensorMap, b_map: *const TensorMap, trans_b: u32, mode: u32, out: *mut f32) {
        // SAFETY: forwarded; modes 0 and 1 only.
        unsafe { wgmma_probe(a_map, b_map, trans_b, mode.min(1), out) }
    }
}

kernel! {
    /// [`probe_wgmma`] breaking the rules of asynchronous `wgmma` groups on purpose,
    /// for the emulator's checks (on a GPU, undefined results; ptxas serialises the
    /// wgmmas, which the builder allows for kernels named `*_misuse`): `mode` 2 writes
    /// an accumulator while the group is in flight, 3 overwrites A's tile before the
    /// wait, 4 starts a TMA copy into A's tile before the wait (a stage refilled too
    /// early).
    ///
    /// # Safety
    /// As [`probe_wgmma`]; the results are undefined on a GPU.
    #[launch(threads = 256, min_blocks = 1, shared = PROBE_SMEM, target = "sm_90a")]
    pub unsafe fn probe_wgmma_misuse(a_map: *const TensorMap, b_map: *const TensorMap, trans_b: u32, mode: u32, out: *mut f32) {
        // SAFETY: forwarded (the rules broken on purpose).
        unsafe { wgmma_probe(a_map, b_map, trans_b, mode.max(2), out) }
    }
}

/// Threads per block of [`probe_cluster`].
pub const PROBE_CLUSTER_THREADS: u32 = 64;
/// Blocks per cluster of [`probe_cluster`].
pub const PROBE_CLUSTER_SIZE: u32 = 4;

kernel! {
    /// Distributed shared memory across a cluster of 4: each block writes
    /// `1000·blockIdx.x + rank` to a shared slot; after a cluster barrier, thread `t < 4`
    /// of block `b` reads the slot of rank `(rank + t) % 4` and writes it to
    /// `out[8b + t]`; thread 4 writes the rank, thread 5 the cluster size. `mode`
    /// breaks the rules on purpose, for the emulator's checks (on a GPU, modes 1-3
    /// are undefined or hang): 1 leaves out the final cluster barrier (a block may
    /// exit while another reads its slot), 2 makes rank 1 return before the first
    /// barrier, 3 maps a rank outside the cluster, 4 reads a neighbour's slot before
    /// the first barrier (the neighbour may not have started).
    ///
    /// # Safety
    /// `out` holds `8·grid.x` floats; `grid.x` a multiple of 4.
    #[launch(threads = PROBE_CLUSTER_THREADS, cluster = PROBE_CLUSTER_SIZE, target = "sm_90a")]
    pub unsafe fn probe_cluster(out: *mut f32, mode: u32) {
        let slot = simt_std::shared_array!(PROBE_CLUSTER_SLOT, f32, 1);
        let (b, t) = (simt_std::thread::block_idx().x, thread_idx().x);
        let (rank, size) = (simt_std::cluster::rank(), simt_std::cluster::size());
        if mode == 2 && rank == 1 {
            return;
        }
        if t == 0 {
            // SAFETY: this kernel's own slot, read by the cluster after the barrier.
            unsafe { slot.write((1000 * b + rank) as f32) };
        }
        if mode == 4 && t == 0 {
            // SAFETY: none: the rule broken on purpose (see the doc).
            let v = unsafe { simt_std::cluster::map(slot, (rank + 1) % size).read() };
            // SAFETY: out holds 8 floats per block.
            unsafe { *out.add((8 * b + 6) as usize) = v };
        }
        simt_std::cluster::sync();
        if t < 4 {
            let from = if mode == 3 { size } else { (rank + t) % size };
            // SAFETY: (modes 0 and 1) a rank of the cluster; written before the barrier.
            let v = unsafe { simt_std::cluster::map(slot, from).read() };
            // SAFETY: out holds 8 floats per block.
            unsafe { *out.add((8 * b + t) as usize) = v };
        } else if t == 4 {
            // SAFETY: as above.
            unsafe { *out.add((8 * b + 4) as usize) = rank as f32 };
        } else if t == 5 {
            // SAFETY: as above.
            unsafe { *out.add((8 * b + 5) as usize) = size as f32 };
        }
        if mode != 1 {
            simt_std::cluster::sync();
        }
    }
}

kernel! {
    /// A TMA store of a 32 x 32 f32 box from shared memory to `map`'s matrix at
    /// `(x, y)`: the 128 threads write element `(r, c)` of the box as
    /// `base + 100·r + c` into a 1024-byte aligned tile (at its 128-byte swizzled
    /// place when `swizzled`), fence the writes for the async proxy, and thread 0
    /// stores, commits and waits. `mode` breaks the rules on purpose, for the
    /// emulator's checks: 1 overwrites the tile with -1 before the wait (the copy
    /// may still read it: on a GPU a race, on the emulator the late bytes are what
    /// lands), 2 exits without waiting.
    ///
    /// # Safety
    /// `map` is a tensor map of an f32 matrix with a 32 x 32 box (128-byte rows when
    /// `swizzled`, and its swizzle then 128 bytes).
    #[launch(threads = 128, shared = PROBE_SMEM, target = "sm_90a")]
    pub unsafe fn probe_tma_store(map: *const TensorMap, x: i32, y: i32, swizzled: u32, base: f32, mode: u32) {
        let raw = dynamic_shared::<u8>();
        let tile = raw.add(((1024 - raw.window_addr() % 1024) % 1024) as usize);
        let t = thread_idx().x;
        let mut i = t;
        while i < 1024 {
            let (r, c) = (i / 32, i % 32);
            let lin = r * 128 + c * 4;
            let at = if swizzled != 0 { tma::swizzle_128b(tile.window_addr() + lin) - tile.window_addr() } else { lin };
            // SAFETY: inside the 4 KiB box of this block's shared memory.
            unsafe { tile.add(at as usize).cast::<f32>().write(base + (100 * r + c) as f32) };
            i += 128;
        }
        tma::fence_proxy_async();
        sync_threads();
        if t == 0 {
            // SAFETY: the map (caller); a 1024-byte aligned source of the box's size,
            // written and fenced before the barrier above.
            unsafe {
                tma::prefetch(map);
                tma::store_2d(tile, map, x, y);
            }
            tma::store_commit();
            if mode == 1 {
                let mut k = 0;
                while k < 1024 {
                    // SAFETY: inside the box (the rule broken on purpose: see the doc).
                    unsafe { tile.add(4 * k).cast::<f32>().write(-1.0) };
                    k += 1;
                }
            }
            if mode != 2 {
                tma::store_wait::<0>();
            }
        }
    }
}

/// Threads per block of [`probe_multicast`]: an issuing warp and a waiting warp.
pub const PROBE_MULTICAST_THREADS: u32 = 64;

kernel! {
    /// TMA multicast across a cluster of two: rank `r`'s thread 0 loads the box of
    /// `map` (8 rows x 32 f32, no swizzle) at `(x, y + 8r)` into offset `1024·r` of
    /// *both* blocks' tiles, on the barrier `full` of both (each announces the 2 KiB
    /// both copies bring), then arrives on the partner's barrier `done`
    /// ([`mbarrier::arrive_cluster`]). Warp 1 waits for `full`, writes its block's
    /// 16 x 32 tile to `out[512·blockIdx.x ..]`, and waits for `done` before the
    /// block exits. `mode` breaks the rules on purpose, for the emulator's checks:
    /// 1 makes rank 0 arrive on rank 1's `done` before the cluster barrier (its
    /// barriers may not exist yet), 2 skips the wait for `done` (the partner's
    /// arrival may come after the block is gone), 3 multicasts to rank 2 of a
    /// cluster of two.
    ///
    /// # Safety
    /// `map` is a tensor map of an f32 matrix with 32 x 8 boxes, no swizzle; `out`
    /// holds `512·grid.x` floats; `grid.x` is even; on a GPU, `mode` 0 only.
    #[launch(threads = PROBE_MULTICAST_THREADS, shared = PROBE_SMEM, cluster = 2, target = "sm_90a")]
    pub unsafe fn probe_multicast(map: *const TensorMap, x: i32, y: i32, mode: u32, out: *mut f32) {
        let raw = dynamic_shared::<u8>();
        let tile = raw.add(((1024 - raw.window_addr() % 1024) % 1024) as usize);
        let full = tile.add(2048).cast::<u64>();
        let done = full.add(1);
        let (t, b) = (thread_idx().x, simt_std::thread::block_idx().x);
        let rank = simt_std::cluster::rank();
        if t == 0 {
            // SAFETY: this block's barrier slots, used by nobody before the cluster
            // barrier below.
            unsafe {
                mbarrier::init(full, 1);
                mbarrier::init(done, 1);
            }
            mbarrier::fence_init();
            if mode == 1 && rank == 0 {
                // SAFETY: none: the rule broken on purpose (see the doc).
                unsafe { mbarrier::arrive_cluster(done, 1) };
            }
        }
        simt_std::cluster::sync();
        if t == 0 {
            let mask = if mode == 3 { 0b101 } else { 0b11 };
            // SAFETY: the map (caller); 1 KiB boxes at the same 1024-byte aligned
            // offsets of both blocks, whose barriers exist (the cluster barrier) and
            // announce both copies' bytes; the partner waits for `done` (modes 0, 1).
            unsafe {
                tma::prefetch(map);
                mbarrier::arrive_expect_tx(full, 2048);
                tma::load_2d_multicast(tile.add(1024 * rank as usize), map, x, y + 8 * rank as i32, full, mask);
                if mode != 1 || rank != 0 {
                    mbarrier::arrive_cluster(done, rank ^ 1);
                }
            }
        } else if t >= 32 {
            // SAFETY: an initialised barrier; its phase 0 brings both copies.
            unsafe { mbarrier::wait(full, 0) };
            let mut i = t - 32;
            while i < 512 {
                // SAFETY: inside the 2 KiB tile; out holds 512 floats per block.
                unsafe { *out.add((512 * b + i) as usize) = tile.cast::<f32>().add(i as usize).read() };
                i += 32;
            }
            if mode != 2 {
                // SAFETY: an initialised barrier; the partner's arrival completes phase 0.
                unsafe { mbarrier::wait(done, 0) };
            }
        }
    }
}

kernel! {
    /// `setmaxnreg` by the book, and against it for the emulator's checks (modes 1-3
    /// hang or break the rules on a GPU: the emulator only). 384 threads start with 168
    /// registers each; warpgroup 0 lowers its budget, warpgroups 1 and 2 raise theirs,
    /// then every thread writes its warpgroup's number plus one to `out[thread]`.
    /// * mode 0: 40 and 232, the books balance (`128 · 128 = 256 · 64`);
    /// * mode 1: 40 and 240: the increases wait for registers the pool never gets;
    /// * mode 2: thread 200 skips the increase: its warpgroup diverges;
    /// * mode 3: warpgroup 0 "decreases" to 200, above the 168 it holds.
    ///
    /// # Safety
    /// `out` holds 384 words; a launch of one block of 384 threads.
    #[launch(threads = 384, min_blocks = 1, target = "sm_90a")]
    pub unsafe fn probe_setmaxnreg(mode: u32, out: *mut u32) {
        let t = thread_idx().x;
        let wg = t / 128;
        // SAFETY: each branch is taken by whole warpgroups, converged (mode 2 breaks
        // this on purpose, mode 1 and 3 the books: the emulator's checks).
        unsafe {
            if wg == 0 {
                if mode == 3 {
                    wgmma::set_max_registers::<200, false>()
                } else {
                    wgmma::set_max_registers::<40, false>()
                }
            } else if !(mode == 2 && t == 200) {
                if mode == 1 {
                    wgmma::set_max_registers::<240, true>()
                } else {
                    wgmma::set_max_registers::<232, true>()
                }
            }
            // SAFETY: t < 384 (the contract).
            *out.add(t as usize) = wg + 1;
        }
    }
}
