//! Thread-block clusters and distributed shared memory (Hopper, sm_90).
//!
//! Up to Ampere, blocks of a grid share nothing but global memory: a result that
//! several blocks need goes through L2 and a [flag](crate::flag), and the blocks
//! must all be resident (a cooperative launch). Hopper groups blocks into
//! **clusters** of up to 8 (16 with an opt-in), which the hardware schedules
//! *together* on the SMs of one GPC. The blocks of a cluster can then
//!
//! * read and write each other's shared memory (**distributed shared memory**,
//!   DSMEM): [`map`] turns an address in this block's shared memory into the same
//!   address in block `rank`'s (`mapa`), and [`Remote::read`] / [`Remote::write`]
//!   access it (`ld/st.shared::cluster`) over the SM-to-SM network, without L2;
//! * wait for each other: [`sync`] is a barrier over every thread of the cluster
//!   (`barrier.cluster.arrive.release` + `barrier.cluster.wait.acquire`): the writes,
//!   local or remote, made before it are visible to every thread after it.
//!
//! A kernel declares its cluster in its launch contract, `#[launch(cluster = 4)]`:
//! the builder writes `.explicitcluster` and `.reqnctapercluster 4, 1, 1` on the
//! PTX entry, so every launch of it runs in clusters of 4 consecutive blocks along
//! x (`grid.x` must be a multiple of 4; the host checks). Block `b`'s rank in its
//! cluster is `b % 4` ([`rank`]).
//!
//! Two rules:
//! 1. **Order** remote accesses with [`sync`]: a value written (locally or
//!    remotely) before a `sync` is visible to every read after it, nothing else is.
//! 2. **Lifetime**: a block's shared memory exists only while the block runs. A
//!    block must not exit while another may still access its shared memory: end
//!    with a [`sync`] after the last remote access.
//!
//! Numbers (H100, 2026-11-23, rust-simt's docs/PERFORMANCE.md, "Clusters"): the
//! softmax of `kernels::softmax_cluster` spreads a row of 65536 floats over a cluster
//! of 4 blocks of 512 threads, which exchange 4 `(max, sum)` pairs between 2 cluster
//! barriers; 256 such rows took 0.0535 ms, 83% of copy bandwidth, where the same
//! split over global flags and a cooperative launch took 0.0713 ms (62%). Each
//! `sync` is `MEMBAR.ALL.GPU` + `UCGABAR_ARV` + `UCGABAR_WAIT` in SASS, as CUDA C++'s
//! `cluster.sync()`.
//!
//! The emulator runs the blocks of a cluster together on one worker: the cluster
//! barrier releases when every thread of every block of the cluster waits at it
//! (one that exited or waits at another barrier is an error naming both), shared
//! memory of every block starts as NaN poison, and these are errors naming the
//! kernel, the block and the thread: a [`map`] of memory that is not this block's
//! shared memory or to a rank outside the cluster; a [`Remote`] access before the
//! cluster's first [`sync`] (the other blocks may not have started), outside the
//! target's shared arrays, or to a block whose threads have all exited; and a block
//! that exits while another accessed its shared memory after the last [`sync`] it
//! passed (rule 2, whatever order the threads ran in).
use crate::shared::Smem;

/// This block's rank in its cluster, `0..size()` (`%cluster_ctarank`).
#[inline(always)]
pub fn rank() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: reads a special register.
        unsafe {
            core::arch::asm!("mov.u32 {r}, %cluster_ctarank;", r = out(reg32) r, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::env().cluster_rank()
}

/// Blocks in this block's cluster (`%cluster_nctarank`; 1 without clusters).
#[inline(always)]
pub fn size() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: reads a special register.
        unsafe {
            core::arch::asm!("mov.u32 {r}, %cluster_nctarank;", r = out(reg32) r, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::env().cluster_size()
}

/// Barrier over every thread of the cluster, with release/acquire ordering of
/// shared and global memory (rule 1). Every thread of every block of the cluster
/// must reach it, in uniform control flow: the instructions are `.aligned`, and a
/// warp whose threads reach it on different paths is undefined behaviour on the
/// GPU. (The hardware also lets it go when the only missing threads have exited;
/// the emulator reports that as a divergence, as it does for `sync_threads`: a
/// block that leaves early is almost always a bug in a cluster kernel.)
#[inline(always)]
pub fn sync() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a barrier; no operands. Not `nomem`: it orders memory.
    unsafe {
        core::arch::asm!(
            "barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;",
            options(nostack)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::env().cluster_sync();
}

/// A location in the shared memory of a block of this cluster (a `shared::cluster`
/// address on the GPU).
#[derive(Clone, Copy)]
pub struct Remote<T> {
    #[cfg(target_arch = "nvptx64")]
    addr: u32,
    #[cfg(not(target_arch = "nvptx64"))]
    ptr: *mut T,
    #[cfg(not(target_arch = "nvptx64"))]
    rank: u32,
    #[cfg(target_arch = "nvptx64")]
    _t: core::marker::PhantomData<*mut T>,
}

/// The location `p` of this block's shared memory, in the shared memory of block
/// `rank` of the cluster (`mapa.shared::cluster`): the same array, the same offset.
///
/// # Safety
/// `rank < size()`; `p` is in this block's shared memory.
#[inline(always)]
pub unsafe fn map<T>(p: Smem<T>, rank: u32) -> Remote<T> {
    #[cfg(target_arch = "nvptx64")]
    {
        let a: u32;
        // SAFETY: address arithmetic only (caller's contract).
        unsafe {
            core::arch::asm!("mapa.shared::cluster.u32 {a}, {p}, {r};", a = out(reg32) a, p = in(reg32) p.addr(), r = in(reg32) rank, options(pure, nomem, nostack))
        };
        Remote {
            addr: a,
            _t: core::marker::PhantomData,
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    Remote {
        ptr: crate::emu::env().cluster_map(p.ptr() as *const u8, rank) as *mut T,
        rank,
    }
}

impl<T> Remote<T> {
    /// The element `n` places further (no bounds check).
    #[inline(always)]
    #[allow(clippy::should_implement_trait)] // an offset in elements, as `<*const T>::add`
    pub fn add(self, n: usize) -> Self {
        #[cfg(target_arch = "nvptx64")]
        {
            Remote {
                addr: self.addr + (n * core::mem::size_of::<T>()) as u32,
                _t: core::marker::PhantomData,
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        Remote {
            ptr: self.ptr.wrapping_add(n),
            rank: self.rank,
        }
    }
}

impl Remote<f32> {
    /// Reads one `f32` (`ld.shared::cluster.f32`).
    ///
    /// # Safety
    /// In bounds of the array mapped; written before a [`sync`] that this thread
    /// passed since; the block it lives in has not exited (module rules).
    #[inline(always)]
    pub unsafe fn read(self) -> f32 {
        #[cfg(target_arch = "nvptx64")]
        {
            let v: f32;
            // SAFETY: caller's contract. Not `pure`: another block writes it.
            unsafe {
                core::arch::asm!("ld.shared::cluster.f32 {v}, [{a}];", v = out(reg32) v, a = in(reg32) self.addr, options(readonly, nostack))
            };
            v
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            crate::emu::env().cluster_access(self.rank, self.ptr as *const u8, 4);
            // SAFETY: caller's contract; the emulator checked the block and the bounds.
            unsafe { self.ptr.read_volatile() }
        }
    }

    /// Reads 4 consecutive `f32` (`ld.shared::cluster.v4.f32`).
    ///
    /// # Safety
    /// As [`read`](Self::read), for 16 bytes, 16-byte aligned (the emulator checks the
    /// alignment and reports the thread).
    #[inline(always)]
    pub unsafe fn read4(self) -> crate::memory::F32x4 {
        #[cfg(target_arch = "nvptx64")]
        {
            let (x, y, z, w): (f32, f32, f32, f32);
            // SAFETY: caller's contract. Not `pure`: another block writes it.
            unsafe {
                core::arch::asm!(
                    "ld.shared::cluster.v4.f32 {{{x}, {y}, {z}, {w}}}, [{a}];",
                    x = out(reg32) x, y = out(reg32) y, z = out(reg32) z, w = out(reg32) w,
                    a = in(reg32) self.addr, options(readonly, nostack)
                )
            };
            crate::memory::F32x4 { x, y, z, w }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            assert!(
                crate::memory::is_aligned16(self.ptr),
                "misaligned 16-byte distributed-shared-memory load at {:p} (rank {})",
                self.ptr,
                self.rank
            );
            crate::emu::env().cluster_access(self.rank, self.ptr as *const u8, 16);
            // SAFETY: caller's contract; the emulator checked the block and the bounds.
            unsafe { (self.ptr as *const crate::memory::F32x4).read_volatile() }
        }
    }

    /// Writes one `f32` (`st.shared::cluster.f32`).
    ///
    /// # Safety
    /// In bounds of the array mapped; no other thread accesses it until a [`sync`];
    /// the block it lives in has not exited.
    #[inline(always)]
    pub unsafe fn write(self, v: f32) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: caller's contract.
        unsafe {
            core::arch::asm!("st.shared::cluster.f32 [{a}], {v};", a = in(reg32) self.addr, v = in(reg32) v, options(nostack))
        };
        #[cfg(not(target_arch = "nvptx64"))]
        {
            crate::emu::env().cluster_access(self.rank, self.ptr as *const u8, 4);
            // SAFETY: caller's contract; the emulator checked the block and the bounds.
            unsafe { self.ptr.write_volatile(v) }
        }
    }
}
