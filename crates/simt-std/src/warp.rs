//! Warps: 32 threads that execute together, and exchange registers by shuffles.
//!
//! `shfl.sync` moves a 32-bit register between lanes without touching shared
//! memory. A tree of 5 xor-shuffles (offsets 16, 8, 4, 2, 1) leaves the sum of 32
//! values in every lane: 5 steps instead of 31, and no barrier, because the warp
//! is its own unit of synchronisation. All shuffles here use the full mask: every
//! lane of the warp must execute them, so blocks that use them have a multiple of
//! 32 threads (the emulator reports a shuffle in a partial or divergent warp).
use crate::shared::Smem;
use crate::thread::{block_threads, sync_threads, thread_linear};
use crate::WARP_SIZE;

/// Which lane of its warp this thread is (0..32).
#[inline(always)]
pub fn lane_id() -> u32 {
    thread_linear() % WARP_SIZE
}

/// Which warp of its block this thread is in.
#[inline(always)]
pub fn warp_id() -> u32 {
    thread_linear() / WARP_SIZE
}

#[cfg(target_arch = "nvptx64")]
mod imp {
    use core::arch::asm;
    // The `c` operand packs the clamp: 0x1f for bfly/down/idx, 0 for up (PTX ISA, shfl.sync).
    #[inline(always)]
    pub fn xor(v: u32, m: u32) -> u32 {
        let r: u32;
        // SAFETY: full-mask shuffle; every lane of the warp executes it (module contract).
        unsafe {
            asm!("shfl.sync.bfly.b32 {r}, {v}, {m}, 0x1f, 0xffffffff;", r = out(reg32) r, v = in(reg32) v, m = in(reg32) m, options(nomem, nostack))
        };
        r
    }
    #[inline(always)]
    pub fn down(v: u32, d: u32) -> u32 {
        let r: u32;
        // SAFETY: as above.
        unsafe {
            asm!("shfl.sync.down.b32 {r}, {v}, {d}, 0x1f, 0xffffffff;", r = out(reg32) r, v = in(reg32) v, d = in(reg32) d, options(nomem, nostack))
        };
        r
    }
    #[inline(always)]
    pub fn up(v: u32, d: u32) -> u32 {
        let r: u32;
        // SAFETY: as above.
        unsafe {
            asm!("shfl.sync.up.b32 {r}, {v}, {d}, 0x0, 0xffffffff;", r = out(reg32) r, v = in(reg32) v, d = in(reg32) d, options(nomem, nostack))
        };
        r
    }
    #[inline(always)]
    pub fn idx(v: u32, l: u32) -> u32 {
        let r: u32;
        // SAFETY: as above.
        unsafe {
            asm!("shfl.sync.idx.b32 {r}, {v}, {l}, 0x1f, 0xffffffff;", r = out(reg32) r, v = in(reg32) v, l = in(reg32) l, options(nomem, nostack))
        };
        r
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod imp {
    use crate::emu::{env, ShflMode};
    pub fn xor(v: u32, m: u32) -> u32 {
        env().shfl(ShflMode::Xor, v, m)
    }
    pub fn down(v: u32, d: u32) -> u32 {
        env().shfl(ShflMode::Down, v, d)
    }
    pub fn up(v: u32, d: u32) -> u32 {
        env().shfl(ShflMode::Up, v, d)
    }
    pub fn idx(v: u32, l: u32) -> u32 {
        env().shfl(ShflMode::Idx, v, l)
    }
}

/// A barrier over the warp's 32 lanes (`bar.warp.sync 0xffffffff`): each lane's
/// shared-memory writes before it are visible to every lane after it. All 32 lanes
/// must reach it (on the emulator, as a shuffle: a lane that does not is an error
/// naming the warp).
#[inline(always)]
pub fn sync() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a barrier; no operands. Not `nomem`: it orders memory.
    unsafe {
        core::arch::asm!("bar.warp.sync -1;", options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = imp::idx(0, 0);
}

/// The value of lane `lane_id() ^ mask`.
#[inline(always)]
pub fn shfl_xor(v: u32, mask: u32) -> u32 {
    imp::xor(v, mask)
}
/// The value of lane `lane_id() + delta`, or the own value past lane 31.
#[inline(always)]
pub fn shfl_down(v: u32, delta: u32) -> u32 {
    imp::down(v, delta)
}
/// The value of lane `lane_id() - delta`, or the own value before lane 0.
#[inline(always)]
pub fn shfl_up(v: u32, delta: u32) -> u32 {
    imp::up(v, delta)
}
/// The value of lane `src_lane` (broadcast when all lanes pass the same).
#[inline(always)]
pub fn shfl_idx(v: u32, src_lane: u32) -> u32 {
    imp::idx(v, src_lane)
}
/// [`shfl_xor`] for `f32`.
#[inline(always)]
pub fn shfl_xor_f32(v: f32, mask: u32) -> f32 {
    f32::from_bits(shfl_xor(v.to_bits(), mask))
}
/// [`shfl_down`] for `f32`.
#[inline(always)]
pub fn shfl_down_f32(v: f32, delta: u32) -> f32 {
    f32::from_bits(shfl_down(v.to_bits(), delta))
}
/// [`shfl_idx`] for `f32`.
#[inline(always)]
pub fn shfl_idx_f32(v: f32, src_lane: u32) -> f32 {
    f32::from_bits(shfl_idx(v.to_bits(), src_lane))
}

/// Sum over the warp's 32 lanes, in every lane (butterfly: 5 xor-shuffles).
#[inline(always)]
pub fn warp_sum(mut v: f32) -> f32 {
    let mut m = WARP_SIZE / 2;
    while m > 0 {
        v += shfl_xor_f32(v, m);
        m /= 2;
    }
    v
}

/// Maximum over the warp's 32 lanes, in every lane. NaN-propagating like `torch.max`.
#[inline(always)]
pub fn warp_max(mut v: f32) -> f32 {
    let mut m = WARP_SIZE / 2;
    while m > 0 {
        v = max_nan(v, shfl_xor_f32(v, m));
        m /= 2;
    }
    v
}

/// `max` that returns NaN if either side is NaN (IEEE `maximum`), as PyTorch does.
///
/// On the GPU one instruction, `max.NaN.f32` (sm_80+, `FMNMX.NAN`). Written as
/// `if a != a || b != b { NaN } else if a > b { a } else { b }`, LLVM kept the
/// branches: 4 SASS instructions and a divergence region per step (a SASS read of
/// `softmax_row_8k`, 2026-11-23), on the path between a row's loads and its stores.
#[inline(always)]
pub fn max_nan(a: f32, b: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: pure arithmetic.
        unsafe {
            core::arch::asm!("max.NaN.f32 {r}, {a}, {b};", r = out(reg32) r, a = in(reg32) a, b = in(reg32) b, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        if a.is_nan() || b.is_nan() {
            f32::NAN
        } else if a > b {
            a
        } else {
            b
        }
    }
}

/// [`block_reduce`] without its trailing barrier: one barrier instead of two, for
/// a `scratch` that this block never writes again (a block that reduces once per
/// scratch array, e.g. its max into one array and then its sum into another).
///
/// # Safety
/// As [`block_reduce`], and no thread writes `scratch` after this call.
#[inline(always)]
pub unsafe fn block_reduce_once(
    v: f32,
    scratch: Smem<f32>,
    op: fn(f32, f32) -> f32,
    identity: f32,
) -> f32 {
    let mut v = v;
    let mut m = WARP_SIZE / 2;
    while m > 0 {
        v = op(v, shfl_xor_f32(v, m));
        m /= 2;
    }
    if lane_id() == 0 {
        // SAFETY: warp_id() < 32 because the block has at most 1024 threads.
        unsafe { scratch.add(warp_id() as usize).write(v) };
    }
    sync_threads();
    let lane = lane_id();
    let warps = block_threads().div_ceil(WARP_SIZE);
    // SAFETY: lane < warps <= 32 slots, each written above before the barrier.
    let mut r = if lane < warps {
        unsafe { scratch.add(lane as usize).read() }
    } else {
        identity
    };
    let mut m = WARP_SIZE / 2;
    while m > 0 {
        r = op(r, shfl_xor_f32(r, m));
        m /= 2;
    }
    r
}

/// Block-wide reduction through warp shuffles and one shared slot per warp.
///
/// Every thread of the block must call it (it contains barriers); the block has a
/// multiple of 32 threads, at most 1024. `scratch` points to at least 32 floats of
/// shared memory that no other code uses during the call. Returns the result in
/// every thread.
///
/// # Safety
/// `scratch` is valid shared memory for 32 `f32`s, reserved for this call.
#[inline(always)]
pub unsafe fn block_reduce(
    v: f32,
    scratch: Smem<f32>,
    op: fn(f32, f32) -> f32,
    identity: f32,
) -> f32 {
    let mut v = v;
    let mut m = WARP_SIZE / 2;
    while m > 0 {
        v = op(v, shfl_xor_f32(v, m));
        m /= 2;
    }
    let warps = block_threads().div_ceil(WARP_SIZE);
    if lane_id() == 0 {
        // SAFETY: warp_id() < 32 because the block has at most 1024 threads.
        unsafe { scratch.add(warp_id() as usize).write(v) };
    }
    sync_threads();
    let lane = lane_id();
    // SAFETY: lane < warps <= 32 slots, each written above before the barrier.
    let mut r = if lane < warps {
        unsafe { scratch.add(lane as usize).read() }
    } else {
        identity
    };
    let mut m = WARP_SIZE / 2;
    while m > 0 {
        r = op(r, shfl_xor_f32(r, m));
        m /= 2;
    }
    // Second barrier: nobody may overwrite `scratch` (next call) before all have read it.
    sync_threads();
    r
}

/// Block-wide sum; see [`block_reduce`].
///
/// # Safety
/// As [`block_reduce`].
#[inline(always)]
pub unsafe fn block_sum(v: f32, scratch: Smem<f32>) -> f32 {
    // SAFETY: forwarded.
    unsafe { block_reduce(v, scratch, |a, b| a + b, 0.0) }
}

/// Block-wide maximum (NaN-propagating); see [`block_reduce`].
///
/// # Safety
/// As [`block_reduce`].
#[inline(always)]
pub unsafe fn block_max(v: f32, scratch: Smem<f32>) -> f32 {
    // SAFETY: forwarded.
    unsafe { block_reduce(v, scratch, max_nan, f32::NEG_INFINITY) }
}
