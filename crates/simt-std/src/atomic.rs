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
