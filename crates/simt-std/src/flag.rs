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
        assert!(flag as usize % 4 == 0, "misaligned flag at {flag:p}");
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
        assert!(flag as usize % 4 == 0, "misaligned flag at {flag:p}");
        // SAFETY: caller's contract.
        let a = unsafe { std::sync::atomic::AtomicU32::from_ptr(flag as *mut u32) };
        if a.load(std::sync::atomic::Ordering::Acquire) != value {
            crate::emu::env().flag_wait(flag, value);
        }
    }
}
