//! Flags in global memory: how the blocks of one launch hand each other results.
//!
//! Blocks of a grid have no barrier in common. When several blocks share one piece
//! of work (a softmax row split over 64 blocks, each holding its slice in
//! registers), each block writes its partial result to global memory and then
//! **publishes** a flag; the blocks that need it **wait** until the flag holds the
//! value they expect, and only then read the partial.
//!
//! Two rules make that correct:
//!
//! 1. **Ordering.** [`publish`] is a release (`fence.acq_rel.gpu` then the store):
//!    every write the block made before it, in any of its threads that reached a
//!    barrier with the publisher first, is visible to a thread whose [`wait_eq`]
//!    (an acquire: `ld.acquire.gpu`) saw the value. Without the fence the partial
//!    can land after the flag on the GPU (the L1 of another SM still holds a stale
//!    line, or the stores reach L2 out of order).
//! 2. **Residency.** A waiting block spins on its SM. If the block it waits for is
//!    not resident yet, it never will be: the waiter holds the SM. So a kernel that
//!    waits is declared `#[launch(cooperative = true)]`: the host launches it with
//!    `cuLaunchCooperativeKernel`, which refuses a grid larger than the device holds
//!    at once, and checks that bound itself first (`Gpu::max_resident_blocks`).
//!
//! Flags are compared for equality with a per-launch **epoch** (the host's counter)
//! rather than reset: a flag buffer zeroed once serves every later launch without
//! a clearing kernel, which would cost a launch (~2 us) per call.
//!
//! On the emulator each block of a cooperative launch has its own worker, a waiting
//! thread suspends until the flag holds the value, and a flag that never comes is
//! an error naming the kernel, block, thread and flag, not a hang.

/// Makes this block's earlier writes visible device-wide, then sets `*flag = value`.
///
/// # Safety
/// `flag` is a valid, 4-byte aligned location in global memory that other threads
/// access only through [`publish`] and [`wait_eq`] during the launch.
#[inline(always)]
pub unsafe fn publish(flag: *mut u32, value: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller's contract.
    unsafe {
        core::arch::asm!(
            "fence.acq_rel.gpu;",
            "st.relaxed.gpu.u32 [{p}], {v};",
            p = in(reg64) flag, v = in(reg32) value, options(nostack)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    {
        assert!(
            (flag as usize).is_multiple_of(4),
            "misaligned flag at {flag:p}"
        );
        // SAFETY: caller's contract: valid, aligned, accessed atomically by others.
        unsafe { std::sync::atomic::AtomicU32::from_ptr(flag) }
            .store(value, std::sync::atomic::Ordering::Release);
    }
}

/// Waits until `*flag == value`, then reads after it see every write published
/// with it (acquire).
///
/// # Safety
/// As [`publish`]; the launch is cooperative, or the publisher is otherwise
/// guaranteed to be resident (see the module doc).
#[inline(always)]
pub unsafe fn wait_eq(flag: *const u32, value: u32) {
    #[cfg(target_arch = "nvptx64")]
    loop {
        let v: u32;
        // SAFETY: caller's contract.
        unsafe {
            core::arch::asm!("ld.acquire.gpu.u32 {v}, [{p}];", v = out(reg32) v, p = in(reg64) flag, options(nostack))
        };
        if v == value {
            break;
        }
        // SAFETY: a plain sleep hint (sm_70+): the spin leaves issue slots to the SM's other warps.
        unsafe { core::arch::asm!("nanosleep.u32 32;", options(nostack)) };
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        assert!(
            (flag as usize).is_multiple_of(4),
            "misaligned flag at {flag:p}"
        );
        // SAFETY: caller's contract.
        let a = unsafe { std::sync::atomic::AtomicU32::from_ptr(flag as *mut u32) };
        if a.load(std::sync::atomic::Ordering::Acquire) != value {
            crate::emu::env().flag_wait(flag, value);
        }
    }
}

/// Publishes the pair `(a, b)` at `p` for launch `epoch` as two self-validating
/// 64-bit words, `p[0] = (epoch << 32) | bits(a)` and `p[1] = (epoch << 32) |
/// bits(b)`, with one 16-byte store and no fence (NCCL's "LL" protocol).
///
/// [`publish`] orders a block's earlier writes before its flag: a `fence.acq_rel.gpu`
/// that waits for every store the thread has in flight, and a reader needs two
/// round trips (the flag, then the data). When the data is just two floats, each
/// can carry the epoch in its own word instead: an aligned 64-bit access is
/// single-copy atomic, so a reader that sees `epoch` in both words of one load
/// ([`pair_ready`]) has both values of this launch, whatever order the words land
/// in. Nothing else is ordered by it: use it only for data that is all in the
/// pair.
///
/// # Safety
/// `p` is 16-byte aligned global memory of two `u64`, read by other threads only
/// through [`load_pair`] and [`wait_pair`] during the launch; `epoch` is the
/// launch's (no word at `p` holds it before).
#[inline(always)]
pub unsafe fn publish_pair(p: *mut u64, a: f32, b: f32, epoch: u32) {
    let (wa, wb) = (
        (epoch as u64) << 32 | a.to_bits() as u64,
        (epoch as u64) << 32 | b.to_bits() as u64,
    );
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller's contract.
    unsafe {
        core::arch::asm!(
            "st.volatile.global.v2.u64 [{p}], {{{a}, {b}}};",
            p = in(reg64) p, a = in(reg64) wa, b = in(reg64) wb, options(nostack)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    {
        assert!((p as usize).is_multiple_of(16), "misaligned pair at {p:p}");
        // The emulator writes each word's value half, then its epoch half (release),
        // as 32-bit atomics: a reader that acquires the epoch half first
        // ([`load_pair`]) then sees the value, as one 64-bit access would give it,
        // and every access to the words (the flag waits' too) has the same size.
        let w = p as *mut u32;
        // SAFETY: caller's contract: valid, aligned, accessed atomically by others.
        unsafe {
            use std::sync::atomic::{AtomicU32, Ordering};
            for (i, v) in [wa, wb].into_iter().enumerate() {
                AtomicU32::from_ptr(w.add(2 * i)).store(v as u32, Ordering::Relaxed);
                AtomicU32::from_ptr(w.add(2 * i + 1)).store((v >> 32) as u32, Ordering::Release);
            }
        }
    }
}

/// The two words at `p` (one 16-byte load that bypasses L1), for [`pair_ready`].
///
/// # Safety
/// As [`publish_pair`].
#[inline(always)]
pub unsafe fn load_pair(p: *const u64) -> [u64; 2] {
    #[cfg(target_arch = "nvptx64")]
    {
        let (a, b): (u64, u64);
        // SAFETY: caller's contract.
        unsafe {
            core::arch::asm!(
                "ld.volatile.global.v2.u64 {{{a}, {b}}}, [{p}];",
                p = in(reg64) p, a = out(reg64) a, b = out(reg64) b, options(nostack)
            )
        };
        [a, b]
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        assert!((p as usize).is_multiple_of(16), "misaligned pair at {p:p}");
        // Each word's epoch half first (acquire), then its value half (see
        // [`publish_pair`]'s emulator path).
        let w = p as *mut u32;
        // SAFETY: caller's contract.
        unsafe {
            use std::sync::atomic::{AtomicU32, Ordering};
            let word = |i: usize| {
                let hi = AtomicU32::from_ptr(w.add(2 * i + 1)).load(Ordering::Acquire);
                let lo = AtomicU32::from_ptr(w.add(2 * i)).load(Ordering::Relaxed);
                (hi as u64) << 32 | lo as u64
            };
            [word(0), word(1)]
        }
    }
}

/// Whether words loaded by [`load_pair`] hold a pair published with `epoch`.
#[inline(always)]
pub fn pair_ready(w: [u64; 2], epoch: u32) -> bool {
    (w[0] >> 32) as u32 == epoch && (w[1] >> 32) as u32 == epoch
}

/// The pair in words for which [`pair_ready`] holds.
#[inline(always)]
pub fn pair_values(w: [u64; 2]) -> (f32, f32) {
    (f32::from_bits(w[0] as u32), f32::from_bits(w[1] as u32))
}

/// Waits until the pair at `p` was published with `epoch` and returns it.
///
/// # Safety
/// As [`publish_pair`]; the publisher is resident (see the module doc).
#[inline(always)]
pub unsafe fn wait_pair(p: *const u64, epoch: u32) -> (f32, f32) {
    loop {
        // SAFETY: caller's contract.
        let w = unsafe { load_pair(p) };
        if pair_ready(w, epoch) {
            return pair_values(w);
        }
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: a plain sleep hint (sm_70+).
        unsafe {
            core::arch::asm!("nanosleep.u32 32;", options(nostack))
        };
        #[cfg(not(target_arch = "nvptx64"))]
        {
            // Suspend until the word that is behind holds the epoch (the high half of
            // a little-endian u64: its second u32).
            let behind = if (w[0] >> 32) as u32 != epoch { 0 } else { 1 };
            // SAFETY: inside the pair (caller's contract).
            crate::emu::env().flag_wait(unsafe { (p.add(behind) as *const u32).add(1) }, epoch);
        }
    }
}
