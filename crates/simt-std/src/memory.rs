//! 16-byte vector loads and stores.
//!
//! A warp that reads 32 consecutive `f32`s issues one 128-byte transaction per
//! instruction; with [`F32x4`] each thread moves 16 bytes per instruction, so the
//! same bytes need a quarter of the load instructions (`ld.global.v4.f32`) and the
//! memory system sees fewer, larger requests: the usual first step for a
//! memory-bound kernel to approach the copy bandwidth.
//!
//! # Alignment rule
//! The address must be a multiple of 16 bytes. A misaligned vector access faults on
//! the GPU (`misaligned address`) and panics on the emulator. Device allocations
//! are 256-byte aligned, so `base + 4*i` is aligned when `i % 4 == 0`; a row of a
//! row-major matrix is aligned when its stride is a multiple of 4 elements. Kernels
//! check [`is_aligned16`] and fall back to scalar accesses otherwise.

/// Four `f32` in one 16-byte-aligned register quad.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct F32x4 {
    pub x: f32,
    pub y: f32,
    pub z: f32,
    pub w: f32,
}

impl F32x4 {
    /// All four lanes set to `v`.
    #[inline(always)]
    pub fn splat(v: f32) -> Self {
        F32x4 {
            x: v,
            y: v,
            z: v,
            w: v,
        }
    }
    /// Applies `f` to each lane.
    #[inline(always)]
    pub fn map(self, f: impl Fn(f32) -> f32) -> Self {
        F32x4 {
            x: f(self.x),
            y: f(self.y),
            z: f(self.z),
            w: f(self.w),
        }
    }
    /// The lanes as an array.
    #[inline(always)]
    pub fn to_array(self) -> [f32; 4] {
        [self.x, self.y, self.z, self.w]
    }
    /// The vector of the lanes `a`.
    #[inline(always)]
    pub fn from_array(a: [f32; 4]) -> Self {
        F32x4 {
            x: a[0],
            y: a[1],
            z: a[2],
            w: a[3],
        }
    }
    /// The sum of the lanes, as a pairwise tree: `(x + y) + (z + w)`.
    #[inline(always)]
    pub fn sum(self) -> f32 {
        (self.x + self.y) + (self.z + self.w)
    }
}

/// Whether `p` is 16-byte aligned.
#[inline(always)]
pub fn is_aligned16<T>(p: *const T) -> bool {
    (p as usize) & 15 == 0
}

/// Loads 4 consecutive `f32` starting at `p` (`ld.v4.f32`).
///
/// # Safety
/// `p..p+4` is readable and `p` is 16-byte aligned.
#[inline(always)]
pub unsafe fn load4(p: *const f32) -> F32x4 {
    #[cfg(not(target_arch = "nvptx64"))]
    assert!(is_aligned16(p), "misaligned 16-byte vector load at {p:p}");
    // SAFETY: caller guarantees validity and alignment.
    unsafe { *(p as *const F32x4) }
}

/// Loads 4 consecutive `f32` through the non-coherent read-only path
/// (`ld.global.nc.v4.f32`, what CUDA C++ emits for a `const __restrict__` pointer).
///
/// For data no thread writes during the kernel, this path is faster for streaming
/// reads: on the H100 (2026-11-23, a CUDA C++ probe of a 1 GiB row sum, 512
/// threads, 4 loads in flight each) the same kernel read at 2941 GB/s with
/// streaming (`.cs`) loads and at 3051 GB/s with `.nc` ones.
///
/// # Safety
/// As [`load4`], and nothing writes `p..p+4` during the kernel (the read-only path
/// is not coherent with the kernel's own stores: an in-place kernel must use
/// [`load4`]).
#[inline(always)]
pub unsafe fn load4_nc(p: *const f32) -> F32x4 {
    #[cfg(target_arch = "nvptx64")]
    {
        let (x, y, z, w): (f32, f32, f32, f32);
        // SAFETY: caller's contract (valid, aligned, read-only during the kernel).
        // `pure, readonly`: LLVM may schedule it like an ordinary load.
        unsafe {
            core::arch::asm!(
                "ld.global.nc.v4.f32 {{{x}, {y}, {z}, {w}}}, [{p}];",
                x = out(reg32) x, y = out(reg32) y, z = out(reg32) z, w = out(reg32) w,
                p = in(reg64) p, options(pure, readonly, nostack)
            )
        };
        F32x4 { x, y, z, w }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: caller's contract.
    unsafe {
        load4(p)
    }
}

/// [`load4_nc`], and where `last` as the data's last use (`ld.global.cs.nc.v4.f32`,
/// `LDG.E.EF.128.CONSTANT` in SASS): the lines marked evict-first, so that the lines a
/// stream of single reads allocates in L2 evict each other before they evict other
/// data. Where L2 holds dirty lines (another kernel's output, or a benchmark's write
/// flush) that leaves them in place instead of writing them back during this kernel
/// (row sums of 64 MiB 1.13-1.20x faster under a write flush; of 1 GiB 4% slower:
/// H200, 2026-11-26, docs/PERFORMANCE.md session 29).
///
/// The choice is made at run time by a predicate inside one instruction sequence (two
/// predicated loads, one of which runs): a kernel that takes it from the host keeps
/// one copy of its loop (a branch would let LLVM duplicate and unroll it, with more
/// registers).
///
/// # Safety
/// As [`load4_nc`], and `p` is in global memory.
#[inline(always)]
pub unsafe fn load4_nc_last_if(p: *const f32, last: bool) -> F32x4 {
    #[cfg(target_arch = "nvptx64")]
    {
        let (x, y, z, w): (f32, f32, f32, f32);
        // SAFETY: caller's contract (valid, aligned, global, read-only during the
        // kernel); exactly one of the two loads runs and writes the outputs.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred %pl; setp.ne.u32 %pl, {l}, 0;",
                "@%pl ld.global.cs.nc.v4.f32 {{{x}, {y}, {z}, {w}}}, [{p}];",
                "@!%pl ld.global.nc.v4.f32 {{{x}, {y}, {z}, {w}}}, [{p}]; }}",
                x = out(reg32) x, y = out(reg32) y, z = out(reg32) z, w = out(reg32) w,
                p = in(reg64) p, l = in(reg32) last as u32, options(pure, readonly, nostack)
            )
        };
        F32x4 { x, y, z, w }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = last;
        // SAFETY: caller's contract; the hints change no value.
        unsafe { load4(p) }
    }
}

/// Stores 4 consecutive `f32` starting at `p` (`st.v4.f32`).
///
/// # Safety
/// `p..p+4` is writable and `p` is 16-byte aligned.
#[inline(always)]
pub unsafe fn store4(p: *mut f32, v: F32x4) {
    #[cfg(not(target_arch = "nvptx64"))]
    assert!(is_aligned16(p), "misaligned 16-byte vector store at {p:p}");
    // SAFETY: caller guarantees validity and alignment.
    unsafe { *(p as *mut F32x4) = v }
}

/// Two f32 in one 8-byte access (`ld/st.global.v2.f32`).
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct F32x2 {
    pub x: f32,
    pub y: f32,
}

/// Stores `x, y` to `p[0..2]` as one 8-byte access (`st.v2.f32`).
///
/// On the GPU this is inline assembly, not a store of an [`F32x2`]: LLVM splits an
/// aggregate store into two scalar ones and only re-joins them when nothing is in the
/// way. In the tensor-core epilogues, where a bounds-checked scalar fallback stores
/// to the same address, it sank the common first store into both branches and every
/// pair went out as two `st.b32` (stage 6: 192 scalar stores, no vector one; ncu
/// counted 16 of 32 bytes used per sector).
///
/// # Safety
/// `p[0..2]` writable and `p` 8-byte aligned (checked on the emulator).
#[inline(always)]
pub unsafe fn store2(p: *mut f32, x: f32, y: f32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller guarantees validity and alignment; a store, nothing else.
    unsafe {
        core::arch::asm!("st.v2.f32 [{p}], {{{x}, {y}}};", p = in(reg64) p, x = in(reg32) x, y = in(reg32) y, options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    {
        assert!(
            (p as usize).is_multiple_of(8),
            "misaligned 8-byte vector store at {p:p}"
        );
        // SAFETY: caller guarantees validity and alignment.
        unsafe { *(p as *mut F32x2) = F32x2 { x, y } }
    }
}

/// Stores the 32-bit `v` to `p` as one 4-byte access (`st.b32`): two packed 16-bit
/// values of C in one store. Inline assembly on the GPU for the reason of [`store2`]:
/// beside a fallback that stores the two halves, LLVM turned the word store into two
/// `st.b16` (stage 7's 16-bit C: 256 of them, no 32-bit one).
///
/// # Safety
/// `p` writable and 4-byte aligned (checked on the emulator).
#[inline(always)]
pub unsafe fn store_u32(p: *mut u32, v: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller guarantees validity and alignment; a store, nothing else.
    unsafe {
        core::arch::asm!("st.b32 [{p}], {v};", p = in(reg64) p, v = in(reg32) v, options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    {
        assert!(
            (p as usize).is_multiple_of(4),
            "misaligned 4-byte store at {p:p}"
        );
        // SAFETY: caller guarantees validity and alignment.
        unsafe { p.write(v) }
    }
}

/// Loads the 4 floats `p[0..4]` of which only the first `valid` exist (the rest read
/// as 0): one 16-byte load when all 4 exist and `vec_ok`, scalar loads otherwise.
/// The edge-tile load of the tiled matmuls; with `valid = 4`, the aligned-or-not row
/// load of the softmax kernels.
///
/// # Safety
/// `p[0..min(valid, 4)]` is readable; `p` is 16-byte aligned when `vec_ok`.
#[inline(always)]
pub unsafe fn load4_first(p: *const f32, valid: u32, vec_ok: bool) -> F32x4 {
    if valid >= 4 && vec_ok {
        // SAFETY: caller: 4 readable floats, aligned when vec_ok.
        unsafe { load4(p) }
    } else {
        // Volatile on purpose: with plain loads LLVM sinks the `p[3]` read of this
        // path and the vector path's lane w into one scalar load after the branch.
        // The vector path then issues a second load into a register its vector load
        // is still filling, and every call waits out a full global-memory latency
        // (ncu: 19% of the warp-tiled matmul's stall samples on that one load).
        // SAFETY: caller: `valid` readable floats.
        let g = |j: u32| {
            if j < valid {
                unsafe { p.add(j as usize).read_volatile() }
            } else {
                0.0
            }
        };
        F32x4 {
            x: g(0),
            y: g(1),
            z: g(2),
            w: g(3),
        }
    }
}

/// Stores the first `valid` (at most 4) lanes of `v` to `p[0..]`: one 16-byte store
/// when all 4 fit and `vec_ok`, scalar stores otherwise. The edge-tile store of the
/// tiled matmuls.
///
/// # Safety
/// `p[0..min(valid, 4)]` is writable; `p` is 16-byte aligned when `vec_ok`.
#[inline(always)]
pub unsafe fn store4_first(p: *mut f32, v: F32x4, valid: u32, vec_ok: bool) {
    if valid >= 4 && vec_ok {
        // SAFETY: caller: 4 writable floats, aligned when vec_ok.
        unsafe { store4(p, v) }
    } else {
        // Plain stores on purpose. LLVM merges this path with the vector store into
        // scalar stores: stages 2 and 3 of the matmul then write C 4 bytes at a time
        // (stage 4 stores interior tiles with `store4` directly). That epilogue writes
        // each output once, against a K loop that reads 2K values per output.
        // Volatile stores here cost the warp-tiled matmul 16 bytes of spills (sm_80).
        // Rows that need the vector store whenever aligned use [`store4_or_scalar`].
        let vs = v.to_array();
        crate::unroll!(4, J => {
            if (J as u32) < valid {
                // SAFETY: caller: `valid` writable floats.
                unsafe { *p.add(J) = vs[J] };
            }
        });
    }
}

/// Stores the first `valid` lanes of `v` to `p` as [`store4_first`] does, but keeps
/// the 16-byte store: the partial path's stores are volatile ([`store4_or_scalar`]'s
/// rule), so LLVM cannot merge the two paths into scalar stores, which it did in
/// the TF32 operand copy (`simt-kernels`' `tf32_prep`: not one `st.v4` in its PTX).
/// For kernels whose stores are their traffic; a matmul epilogue, which writes each
/// output once, keeps [`store4_first`] (volatile stores cost it registers).
///
/// # Safety
/// As [`store4_first`].
#[inline(always)]
pub unsafe fn store4_first_vec(p: *mut f32, v: F32x4, valid: u32, vec_ok: bool) {
    if valid >= 4 {
        // SAFETY: caller: 4 writable floats, aligned when vec_ok.
        unsafe { store4_or_scalar(p, v, vec_ok) }
    } else {
        let vs = v.to_array();
        crate::unroll!(4, J => {
            if (J as u32) < valid {
                // SAFETY: caller: `valid` writable floats.
                unsafe { p.add(J).write_volatile(vs[J]) };
            }
        });
    }
}

/// Stores `v` to `p[0..4]`: one 16-byte store when `vec`, else four scalar stores.
///
/// The scalar path is volatile so that LLVM cannot merge the two paths into the
/// scalar one, which it did in the fused softmax: its aligned rows were written 4
/// bytes at a time, 8% slower (rust-simt's docs/PERFORMANCE.md).
///
/// # Safety
/// `p[0..4]` writable; `p` 16-byte aligned when `vec`.
#[inline(always)]
pub unsafe fn store4_or_scalar(p: *mut f32, v: F32x4, vec: bool) {
    if vec {
        // SAFETY: caller: writable and aligned.
        unsafe { store4(p, v) }
    } else {
        // SAFETY: caller: 4 writable floats.
        unsafe {
            p.write_volatile(v.x);
            p.add(1).write_volatile(v.y);
            p.add(2).write_volatile(v.z);
            p.add(3).write_volatile(v.w);
        }
    }
}

/// Loads 4 consecutive `f32` as their last use (`ld.global.cs.v4.f32`: "cache
/// streaming", the lines marked evict-first in L1 and L2), for data the kernel
/// reads for the last time, so that L2 keeps other lines in their place.
///
/// # Safety
/// As [`load4`], and `p` is in global memory.
#[inline(always)]
pub unsafe fn load4_cs(p: *const f32) -> F32x4 {
    #[cfg(target_arch = "nvptx64")]
    {
        let (x, y, z, w): (f32, f32, f32, f32);
        // SAFETY: caller's contract (valid, aligned, global). Not `pure`: the kernel
        // may write these lines (an in-place softmax), so the load stays ordered.
        unsafe {
            core::arch::asm!(
                "ld.global.cs.v4.f32 {{{x}, {y}, {z}, {w}}}, [{p}];",
                x = out(reg32) x, y = out(reg32) y, z = out(reg32) z, w = out(reg32) w,
                p = in(reg64) p, options(readonly, nostack)
            )
        };
        F32x4 { x, y, z, w }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: caller's contract; the hint changes no value.
    unsafe {
        load4(p)
    }
}

/// Loads 4 consecutive `f32` that the kernel will read again soon, asking L2 to keep
/// their lines (`createpolicy.fractional.L2::evict_last` and
/// `ld.global.L1::evict_last.L2::cache_hint.v4.f32`: what Triton emits for
/// `eviction_policy="evict_last"`): a row read in several passes, the later ones
/// from L2. The cache policy needs PTX ISA 7.4: kernels of the `sm_90a` module
/// (ptxas refuses it in an older module, at build time).
///
/// # Safety
/// As [`load4`], and `p` is in global memory.
#[inline(always)]
pub unsafe fn load4_keep(p: *const f32) -> F32x4 {
    #[cfg(target_arch = "nvptx64")]
    {
        let (x, y, z, w): (f32, f32, f32, f32);
        // SAFETY: caller's contract (valid, aligned, global). Not `pure`, as
        // [`load4_cs`]: an in-place kernel writes these lines later.
        unsafe {
            core::arch::asm!(
                "{{ .reg .b64 pol; createpolicy.fractional.L2::evict_last.b64 pol, 1.0;",
                "ld.global.L1::evict_last.L2::cache_hint.v4.f32 {{{x}, {y}, {z}, {w}}}, [{p}], pol; }}",
                x = out(reg32) x, y = out(reg32) y, z = out(reg32) z, w = out(reg32) w,
                p = in(reg64) p, options(readonly, nostack)
            )
        };
        F32x4 { x, y, z, w }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: caller's contract; the hint changes no value.
    unsafe {
        load4(p)
    }
}

/// Stores 4 consecutive `f32` as streaming data (`st.global.cs.v4.f32`: the lines
/// marked evict-first in L2), for output the kernel does not read again.
///
/// # Safety
/// As [`store4`], and `p` is in global memory.
#[inline(always)]
pub unsafe fn store4_cs(p: *mut f32, v: F32x4) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller's contract (valid, aligned, global).
    unsafe {
        core::arch::asm!(
            "st.global.cs.v4.f32 [{p}], {{{x}, {y}, {z}, {w}}};",
            p = in(reg64) p, x = in(reg32) v.x, y = in(reg32) v.y, z = in(reg32) v.z, w = in(reg32) v.w,
            options(nostack)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: caller's contract; the hint changes no value.
    unsafe {
        store4(p, v)
    }
}

/// Asks L2 to fetch the 128-byte line holding `p` (`prefetch.global.L2`), without
/// waiting: a hint, so that a later load hits L2. No-op on the emulator.
///
/// # Safety
/// `p` points into a global-memory allocation.
#[inline(always)]
pub unsafe fn prefetch_l2<T>(p: *const T) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a prefetch reads nothing into registers; the caller keeps `p` in an allocation.
    unsafe {
        core::arch::asm!("prefetch.global.L2 [{p}];", p = in(reg64) p, options(nostack, readonly))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = p;
}

/// Keeps the compiler from moving memory accesses (shared and global loads and
/// stores, including the library's `asm!` loads) across this point. Emits no
/// instruction: ptxas still schedules freely.
///
/// For register pressure: with a whole K step unrolled in one basic block, LLVM may
/// hoist the next iterations' shared loads above the current FMAs, and every hoisted
/// 16-byte load holds 4 more registers live (the configurable matmul's 8x8 thread
/// tile went from 128 to 181 registers on sm_90 that way).
#[inline(always)]
pub fn compiler_barrier() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: an empty asm block; without `nomem` the compiler assumes it may touch
    // memory, which is the point.
    unsafe {
        core::arch::asm!("", options(nostack, preserves_flags))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
}

/// Returns `x` unchanged, as a value LLVM can neither see through nor move: a `mov`
/// that it treats as having side effects, so the computation that feeds it stays
/// where it is written, instead of being hoisted out of a loop or reused from an
/// earlier point.
///
/// For register pressure around a hot loop: values derived from kernel parameters
/// (block indices, a schedule's bounds) that are needed only before and after the
/// loop can be recomputed after it rather than held in registers through it. Stage
/// 4k of the lecture's matmul recomputes its stream-K segment this way, and its K
/// loop then gets stage 4's register allocation.
#[inline(always)]
pub fn opaque_u32(x: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let y: u32;
        // SAFETY: a register move; no memory access.
        unsafe {
            core::arch::asm!("mov.b32 {y}, {x};", y = out(reg32) y, x = in(reg32) x, options(nomem, nostack, preserves_flags))
        };
        y
    }
    #[cfg(not(target_arch = "nvptx64"))]
    x
}
