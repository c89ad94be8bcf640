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
//! Kernels address it through [`Smem<T>`]: on the GPU a 32-bit address in the
//! shared window, accessed with `ld.shared`/`st.shared` (`LDS`/`STS` in SASS). A
//! generic 64-bit pointer would also work, but every access would then be a generic
//! `LD`/`ST` plus 64-bit address arithmetic, which cost the double-buffered matmul
//! 9% (rust-simt's docs/PERFORMANCE.md).
//! (Where LLVM's scheduling of global loads matters more, see [`Smem::generic`].)
//! On the emulator `Smem<T>` is a plain pointer into the block's shared buffer.
//!
//! # Soundness rules
//! Shared memory is memory that every thread of the block can write, so the type
//! system cannot prove accesses race-free. The rules are:
//! 1. A location written by one thread and read by another needs a
//!    [`sync_threads`](crate::thread::sync_threads) between the write and the read,
//!    reached by every thread of the block.
//! 2. Its contents start undefined (the emulator fills them with NaN bytes): write
//!    before you read.
//! 3. Indices stay inside the declared size (dynamic: the size passed at launch,
//!    [`dynamic_shared_bytes`]).
//! 4. Pointers do not outlive the block (never store them to global memory).

use crate::memory::F32x4;

/// A pointer into the block's shared memory (see the module docs).
#[derive(Clone, Copy, Debug)]
pub struct Smem<T> {
    #[cfg(target_arch = "nvptx64")]
    addr: u32,
    #[cfg(not(target_arch = "nvptx64"))]
    ptr: *mut T,
    #[cfg(target_arch = "nvptx64")]
    _t: core::marker::PhantomData<*mut T>,
}

impl<T> Smem<T> {
    /// From a shared-window address (GPU).
    #[cfg(target_arch = "nvptx64")]
    #[doc(hidden)]
    #[inline(always)]
    pub fn from_addr(addr: u32) -> Self {
        Smem {
            addr,
            _t: core::marker::PhantomData,
        }
    }
    /// From a pointer into the block's shared buffer (emulator).
    #[cfg(not(target_arch = "nvptx64"))]
    #[doc(hidden)]
    #[inline(always)]
    pub fn from_ptr(ptr: *mut T) -> Self {
        Smem { ptr }
    }
    /// The 32-bit shared-window address (GPU).
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) fn addr(self) -> u32 {
        self.addr
    }
    /// The pointer into the block's shared buffer (emulator).
    #[cfg(not(target_arch = "nvptx64"))]
    #[inline(always)]
    pub(crate) fn ptr(self) -> *mut T {
        self.ptr
    }
    /// The 32-bit shared-window address: what `wgmma` descriptors, TMA and the
    /// address-based swizzles see. The emulator gives the block's dynamic shared
    /// memory a window address of its own choosing, 128- but not 1024-byte aligned
    /// (kernels that need 1024-byte alignment must align it themselves, as on the
    /// GPU); a static array has none there (a panic naming the kernel and thread).
    #[inline(always)]
    pub fn window_addr(self) -> u32 {
        #[cfg(target_arch = "nvptx64")]
        {
            self.addr
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            crate::emu::env().shared_window_addr(self.ptr as *const u8)
        }
    }
    /// The same address as a pointer to `U` (reinterpreting the bytes).
    #[inline(always)]
    pub fn cast<U>(self) -> Smem<U> {
        #[cfg(target_arch = "nvptx64")]
        {
            Smem::from_addr(self.addr)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            Smem::from_ptr(self.ptr as *mut U)
        }
    }
    /// The element `n` places further (no bounds check: see the soundness rules).
    #[inline(always)]
    #[allow(clippy::should_implement_trait)] // an offset in elements, as `<*const T>::add`
    pub fn add(self, n: usize) -> Self {
        #[cfg(target_arch = "nvptx64")]
        {
            Smem::from_addr(self.addr + (n * core::mem::size_of::<T>()) as u32)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            Smem::from_ptr(self.ptr.wrapping_add(n))
        }
    }
}

impl<T> Smem<T> {
    /// The same location as a generic pointer (`cvta.shared`), for ordinary loads
    /// and stores that LLVM may freely reorder with the kernel's global accesses.
    ///
    /// `Smem`'s own accesses are inline PTX, which LLVM must assume may touch any
    /// memory: a loop that interleaves global loads with `Smem` stores loses its
    /// memory-level parallelism: the fused softmax ran 20% slower through `Smem`
    /// than through generic pointers (rust-simt's docs/PERFORMANCE.md); the tiled
    /// matmul, whose inner loop only reads shared memory, is faster with `Smem`.
    #[inline(always)]
    pub fn generic(self) -> *mut T {
        #[cfg(target_arch = "nvptx64")]
        {
            let p: u64;
            // SAFETY: address conversion only.
            unsafe {
                core::arch::asm!("cvta.shared.u64 {p}, {a};", p = out(reg64) p, a = in(reg64) self.addr as u64, options(pure, nomem, nostack))
            };
            p as *mut T
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            self.ptr
        }
    }
}

impl Smem<u32> {
    /// Writes one `u32` (`st.shared.b32`), e.g. two packed 16-bit values.
    ///
    /// # Safety
    /// In bounds and 4-byte aligned; no other thread accesses it until a barrier
    /// (module rules).
    #[inline(always)]
    pub unsafe fn write(self, v: u32) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: caller's contract.
        unsafe {
            core::arch::asm!("st.shared.b32 [{a}], {v};", a = in(reg32) self.addr, v = in(reg32) v, options(nostack))
        };
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: caller's contract.
        unsafe {
            assert!(
                (self.ptr as usize).is_multiple_of(4),
                "Smem::<u32>::write at {:p}, which is not 4-byte aligned",
                self.ptr
            );
            *self.ptr = v
        };
    }
}

impl Smem<f32> {
    /// Reads one `f32` (`ld.shared.f32`).
    ///
    /// # Safety
    /// In bounds, and ordered after the write that produced it (module rules).
    #[inline(always)]
    pub unsafe fn read(self) -> f32 {
        #[cfg(target_arch = "nvptx64")]
        {
            let v: f32;
            // SAFETY: caller's contract; a shared-window address.
            unsafe {
                core::arch::asm!("ld.shared.f32 {v}, [{a}];", v = out(reg32) v, a = in(reg32) self.addr, options(pure, readonly, nostack))
            };
            v
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: caller's contract.
        unsafe {
            *self.ptr
        }
    }
    /// Writes one `f32` (`st.shared.f32`).
    ///
    /// # Safety
    /// In bounds; no other thread accesses it until a barrier (module rules).
    #[inline(always)]
    pub unsafe fn write(self, v: f32) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: caller's contract.
        unsafe {
            core::arch::asm!("st.shared.f32 [{a}], {v};", a = in(reg32) self.addr, v = in(reg32) v, options(nostack))
        };
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: caller's contract.
        unsafe {
            *self.ptr = v
        };
    }
    /// Writes 2 consecutive `f32` (`st.shared.v2.f32`, 8-byte aligned).
    ///
    /// # Safety
    /// As [`write`](Self::write), for 2 elements, and 8-byte aligned.
    #[inline(always)]
    pub unsafe fn store2(self, a: f32, b: f32) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: caller's contract.
        unsafe {
            core::arch::asm!("st.shared.v2.f32 [{p}], {{{a}, {b}}};", p = in(reg32) self.addr, a = in(reg32) a, b = in(reg32) b, options(nostack))
        };
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: caller's contract.
        unsafe {
            assert!(
                (self.ptr as usize).is_multiple_of(8),
                "Smem::store2 at {:p}, which is not 8-byte aligned",
                self.ptr
            );
            *self.ptr = a;
            *self.ptr.add(1) = b;
        };
    }
    /// Reads 4 consecutive `f32` (`ld.shared.v4.f32`, 16-byte aligned).
    ///
    /// # Safety
    /// As [`read`](Self::read), for 4 elements, and 16-byte aligned.
    #[inline(always)]
    pub unsafe fn load4(self) -> F32x4 {
        #[cfg(target_arch = "nvptx64")]
        {
            let (x, y, z, w): (f32, f32, f32, f32);
            // SAFETY: caller's contract.
            unsafe {
                core::arch::asm!("ld.shared.v4.f32 {{{x}, {y}, {z}, {w}}}, [{a}];", x = out(reg32) x, y = out(reg32) y, z = out(reg32) z, w = out(reg32) w, a = in(reg32) self.addr, options(pure, readonly, nostack))
            };
            F32x4 { x, y, z, w }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: caller's contract (load4 checks the alignment on the emulator).
        unsafe {
            crate::memory::load4(self.ptr)
        }
    }
    /// Writes 4 consecutive `f32` (`st.shared.v4.f32`, 16-byte aligned).
    ///
    /// # Safety
    /// As [`write`](Self::write), for 4 elements, and 16-byte aligned.
    #[inline(always)]
    pub unsafe fn store4(self, v: F32x4) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: caller's contract.
        unsafe {
            core::arch::asm!("st.shared.v4.f32 [{a}], {{{x}, {y}, {z}, {w}}};", a = in(reg32) self.addr, x = in(reg32) v.x, y = in(reg32) v.y, z = in(reg32) v.z, w = in(reg32) v.w, options(nostack))
        };
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: caller's contract.
        unsafe {
            crate::memory::store4(self.ptr, v)
        };
    }
}

/// Declares a block-wide static shared array and evaluates to an [`Smem`] to its
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
            let a: u32;
            // SAFETY: reads the shared-window address of the array declared above.
            unsafe {
                ::core::arch::asm!(
                    concat!("mov.u32 {a}, simt_smem_", stringify!($name), ";"),
                    a = out(reg32) a,
                    options(pure, nomem, nostack)
                )
            };
            $crate::shared::Smem::<$ty>::from_addr(a)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            static KEY: u8 = 0;
            $crate::shared::Smem::<$ty>::from_ptr($crate::emu::env().static_shared(
                &KEY as *const u8 as usize,
                ::core::mem::size_of::<$ty>() * ($len),
            ) as *mut $ty)
        }
    }};
}

#[cfg(target_arch = "nvptx64")]
// 128-byte aligned: bulk copies into a ring of stages that start off a 128-byte line
// ran 2-5% slower (H200, session 34: `softmax_bulk` with the array at byte 736 of
// the block's window against 768).
core::arch::global_asm!(".extern .shared .align 128 .b8 simt_dynamic_smem[];");

/// The block's dynamic shared memory (128-byte aligned). Its size is the
/// `shared_bytes` of the launch; see [`dynamic_shared_bytes`].
#[inline(always)]
pub fn dynamic_shared<T>() -> Smem<T> {
    #[cfg(target_arch = "nvptx64")]
    {
        let a: u32;
        // SAFETY: reads the shared-window address of the dynamic array.
        unsafe {
            core::arch::asm!("mov.u32 {a}, simt_dynamic_smem;", a = out(reg32) a, options(pure, nomem, nostack))
        };
        Smem::from_addr(a)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        Smem::from_ptr(crate::emu::env().dynamic_shared().0 as *mut T)
    }
}

/// Size in bytes of the block's dynamic shared memory (`%dynamic_smem_size`).
#[inline(always)]
pub fn dynamic_shared_bytes() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: reads a special register.
        unsafe {
            core::arch::asm!("mov.u32 {r}, %dynamic_smem_size;", r = out(reg32) r, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::emu::env().dynamic_shared().1 as u32
    }
}
