//! Atomics on global (or shared) memory.

/// `*p += v` atomically; returns the old value (`atom.add.f32`). Additions from
/// different threads land in an unspecified order, so the f32 sum can differ in
/// the last bits between runs.
///
/// # Safety
/// `p` is valid, 4-byte aligned, and every concurrent access to it is atomic.
#[inline(always)]
pub unsafe fn atomic_add_f32(p: *mut f32, v: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let old: f32;
        // SAFETY: caller guarantees `p` is a valid f32 location.
        unsafe {
            core::arch::asm!("atom.add.f32 {o}, [{p}], {v};", o = out(reg32) old, p = in(reg64) p, v = in(reg32) v, options(nostack))
        };
        old
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        use std::sync::atomic::{AtomicU32, Ordering};
        // SAFETY: caller guarantees validity, alignment and atomic-only access.
        let a = unsafe { AtomicU32::from_ptr(p as *mut u32) };
        let mut cur = a.load(Ordering::Relaxed);
        loop {
            let new = (f32::from_bits(cur) + v).to_bits();
            match a.compare_exchange_weak(cur, new, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return f32::from_bits(cur),
                Err(x) => cur = x,
            }
        }
    }
}

/// `*p += v` atomically at GPU scope with acquire-release semantics
/// (`atom.acq_rel.gpu.add.u32`); returns the old value. A count of finished
/// parts: each adder's earlier writes (and those of threads that reached a barrier
/// with it first) are visible to the adder that sees the last count, which can then
/// publish them all ([`crate::flag::publish`]).
///
/// # Safety
/// `p` is a valid, 4-byte aligned location in global memory, and every concurrent
/// access to it is atomic.
#[inline(always)]
pub unsafe fn atomic_add_acq_rel_u32(p: *mut u32, v: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let old: u32;
        // SAFETY: caller guarantees `p` is a valid global u32 location.
        unsafe {
            core::arch::asm!("atom.acq_rel.gpu.add.u32 {o}, [{p}], {v};", o = out(reg32) old, p = in(reg64) p, v = in(reg32) v, options(nostack))
        };
        old
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        assert!((p as usize).is_multiple_of(4), "misaligned atomic at {p:p}");
        // SAFETY: caller guarantees validity, alignment and atomic-only access.
        unsafe { std::sync::atomic::AtomicU32::from_ptr(p) }
            .fetch_add(v, std::sync::atomic::Ordering::AcqRel)
    }
}

/// `*p = v` atomically at GPU scope, relaxed (`st.relaxed.gpu.u32`): resets a
/// count that no other thread touches any more during the launch.
///
/// # Safety
/// As [`atomic_add_acq_rel_u32`].
#[inline(always)]
pub unsafe fn atomic_store_relaxed_u32(p: *mut u32, v: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller's contract.
    unsafe {
        core::arch::asm!("st.relaxed.gpu.u32 [{p}], {v};", p = in(reg64) p, v = in(reg32) v, options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    {
        assert!((p as usize).is_multiple_of(4), "misaligned atomic at {p:p}");
        // SAFETY: caller's contract.
        unsafe { std::sync::atomic::AtomicU32::from_ptr(p) }
            .store(v, std::sync::atomic::Ordering::Relaxed)
    }
}
