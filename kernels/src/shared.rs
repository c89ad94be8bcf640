//! Shared memory: the SM's on-chip scratchpad, private to one block.
//!
//! On an H100 each SM has 228 KiB of it (up to 227 KiB per block after an opt-in),
//! about 30x the bandwidth of HBM and ~30 cycles away instead of ~500. A block
//! stages tiles there so that each value loaded from device memory is reused many
//! times. It is split into 32 banks of 4 bytes: see [`crate::swizzle`].
//!
//! Two kinds:
//! * **static** arrays, sized at compile time: [`shared_array!`](crate::shared_array);
//! * **dynamic** shared memory, sized by the host at launch: [`dynamic_shared`].
//!
//! # Soundness rules
//! Shared memory is a raw pointer into memory that every thread of the block can
//! write, so the type system cannot prove accesses race-free. The rules are:
//! 1. A location written by one thread and read by another needs a
//!    [`sync_threads`](crate::thread::sync_threads) between the write and the read,
//!    reached by every thread of the block.
//! 2. Its contents start undefined (the emulator fills them with NaN bytes): write
//!    before you read.
//! 3. Indices stay inside the declared size (dynamic: the size passed at launch,
//!    [`dynamic_shared_bytes`]).
//! 4. Pointers do not outlive the block (never store them to global memory).

/// Declares a block-wide static shared array and evaluates to a `*mut T` to its
/// first element, 16-byte aligned.
///
/// `shared_array!(NAME, f32, 1024)`: `NAME` must be unique within the kernel crate
/// (it is the `.shared` symbol in the PTX module; a clash fails the PTX check).
/// See the module docs for the soundness rules that every access must follow.
#[macro_export]
macro_rules! shared_array {
    ($name:ident, $ty:ty, $len:expr) => {{
        #[cfg(target_arch = "nvptx64")]
        {
            #[allow(non_snake_case)]
            mod $name {
                #[allow(unused_imports)]
                use super::*;
                ::core::arch::global_asm!(
                    concat!(".shared .align 16 .b8 simt_smem_", stringify!($name), "[{bytes}];"),
                    bytes = const (::core::mem::size_of::<$ty>() * ($len)),
                );
            }
            let p: u64;
            // SAFETY: converts the address of the shared array declared just above to a
            // generic pointer; no memory is accessed.
            unsafe {
                ::core::arch::asm!(
                    concat!("cvta.shared.u64 {p}, simt_smem_", stringify!($name), ";"),
                    p = out(reg64) p,
                    options(pure, nomem, nostack)
                )
            };
            p as *mut $ty
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            static KEY: u8 = 0;
            $crate::emu::env().static_shared(
                &KEY as *const u8 as usize,
                ::core::mem::size_of::<$ty>() * ($len),
            ) as *mut $ty
        }
    }};
}

#[cfg(target_arch = "nvptx64")]
core::arch::global_asm!(".extern .shared .align 16 .b8 simt_dynamic_smem[];");

/// The block's dynamic shared memory, as `*mut T` (16-byte aligned). Its size is
/// the `shared_bytes` of the launch; see [`dynamic_shared_bytes`].
#[inline(always)]
pub fn dynamic_shared<T>() -> *mut T {
    #[cfg(target_arch = "nvptx64")]
    {
        let p: u64;
        // SAFETY: address conversion only.
        unsafe { core::arch::asm!("cvta.shared.u64 {p}, simt_dynamic_smem;", p = out(reg64) p, options(pure, nomem, nostack)) };
        p as *mut T
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::emu::env().dynamic_shared().0 as *mut T
    }
}

/// Size in bytes of the block's dynamic shared memory (`%dynamic_smem_size`).
#[inline(always)]
pub fn dynamic_shared_bytes() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: reads a special register.
        unsafe { core::arch::asm!("mov.u32 {r}, %dynamic_smem_size;", r = out(reg32) r, options(pure, nomem, nostack)) };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::emu::env().dynamic_shared().1 as u32
    }
}
