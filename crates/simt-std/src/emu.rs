//! The hook between device primitives and the CPU SIMT emulator (host builds only).
//!
//! The emulator (in the host crate) runs every GPU thread as a coroutine and, before
//! resuming one, installs that thread's [`ThreadEnv`] here. Device primitives
//! (`thread_idx`, `sync_threads`, shuffles, shared memory) read it.
use std::cell::Cell;

pub use crate::thread::Dim3;

/// The four `shfl.sync` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShflMode {
    /// Read from lane `lane ^ arg`.
    Xor,
    /// Read from lane `lane + arg` (own value past the warp's end).
    Down,
    /// Read from lane `lane - arg` (own value before lane 0).
    Up,
    /// Read from lane `arg`.
    Idx,
}

/// A warp-collective matrix operation (tensor cores, `ldmatrix`): the emulator
/// completes it once all 32 lanes of the warp have reached one, and returns each
/// lane its registers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WarpMatrixOp {
    /// `mma.sync`: this lane's A, B and C (f32 bits) fragments.
    Mma {
        kind: crate::mma::MmaKind,
        a: [u32; 4],
        b: [u32; 2],
        c: [u32; 4],
    },
    /// `ldmatrix.m8n8.x{num}[.trans]`: the row address this lane supplies (a host
    /// pointer into the block's shared memory).
    Ldmatrix { num: u32, trans: bool, addr: usize },
}

/// A warpgroup `wgmma` region as one thread hands it to the emulator: the 128
/// threads of the warpgroup must all reach one with the same descriptors; the
/// emulator then multiplies the operands the descriptors point at and adds the
/// product into every thread's accumulator fragment (`acc`, a host pointer to this
/// thread's `n / 2` f32).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WgmmaOp {
    pub kind: crate::mma::MmaKind,
    /// The tile's width N (the instruction's `m64nNk16` / `m64nNk8`).
    pub n: u32,
    /// Matrix descriptors of A and B for each of the region's K steps.
    pub a: [u64; 4],
    pub b: [u64; 4],
    /// B is stored N-major (`imm-trans-b = 1`), else K-major.
    pub trans_b: bool,
    pub acc: usize,
    /// The region ends at its commit (`mma_*_async`), not at `wait_group 0`.
    pub asynchronous: bool,
}

/// What one emulated GPU thread can ask of the emulator.
pub trait ThreadEnv {
    fn thread_idx(&self) -> Dim3;
    fn block_idx(&self) -> Dim3;
    fn block_dim(&self) -> Dim3;
    fn grid_dim(&self) -> Dim3;
    /// Block-wide barrier (`bar.sync 0`): suspends until every thread of the block arrives.
    fn sync_threads(&self);
    /// Warp shuffle of a 32-bit value; every lane of the warp must call it.
    fn shfl(&self, mode: ShflMode, value: u32, arg: u32) -> u32;
    /// The block's static shared array identified by `key`, `bytes` long, 16-aligned.
    fn static_shared(&self, key: usize, bytes: usize) -> *mut u8;
    /// The block's dynamic shared memory and its size in bytes.
    fn dynamic_shared(&self) -> (*mut u8, usize);
    /// A warp-collective matrix operation; every lane of the warp must call it.
    fn warp_matrix(&self, op: WarpMatrixOp) -> [u32; 4];
    /// Queues an asynchronous copy of `bytes` bytes to shared `dst`: `src_bytes` from
    /// `src`, then zeros. It lands at the [`copy_wait`](ThreadEnv::copy_wait) that covers it.
    fn copy_async(&self, dst: *mut u8, src: *const u8, bytes: usize, src_bytes: usize);
    /// Closes the queued copies into a group.
    fn copy_commit(&self);
    /// Performs every committed group except the `pending` newest.
    fn copy_wait(&self, pending: usize);
    /// The shared-window address of `p`, a pointer into the block's dynamic shared
    /// memory (what descriptors and the swizzle use on the GPU).
    fn shared_window_addr(&self, p: *const u8) -> u32;
    /// `mbarrier.init`: the barrier at `bar` expects `count` arrivals per phase.
    fn mbar_init(&self, bar: *mut u8, count: u32);
    /// An arrival on `bar`, announcing `tx_bytes` of transactions (0: a plain arrive).
    fn mbar_arrive(&self, bar: *mut u8, tx_bytes: u32);
    /// Suspends until the phase of parity `parity` of `bar` has completed.
    fn mbar_wait(&self, bar: *mut u8, parity: u32);
    /// A TMA box copy of `map`'s box at `coords` (x, y and, for a 3-D copy, z) to
    /// `dst`, completing on `bar`.
    fn tma_load(&self, dst: *mut u8, map: *const u8, coords: &[i32], bar: *mut u8);
    /// A 1-D bulk copy of `bytes` bytes from global `src` to shared `dst`, completing
    /// on `bar` (`simt_std::tma::bulk_load`).
    fn bulk_load(&self, dst: *mut u8, src: *const u8, bytes: usize, bar: *mut u8);
    /// As [`tma_load`](ThreadEnv::tma_load), into the same offsets of every block of
    /// the cluster whose rank bit is set in `mask`.
    fn tma_load_multicast(
        &self,
        dst: *mut u8,
        map: *const u8,
        coords: &[i32],
        bar: *mut u8,
        mask: u16,
    );
    /// An arrival on the barrier at `bar`'s offset in block `rank` of the cluster.
    fn mbar_arrive_remote(&self, bar: *mut u8, rank: u32);
    /// A warpgroup `wgmma` region (fence, the K steps, commit, wait); every thread
    /// of the warpgroup must call it.
    fn wgmma(&self, op: WgmmaOp);
    /// `wgmma.wait_group pending` for this thread's warpgroup: `acc` is this thread's
    /// accumulator array of `n / 2` f32, which the emulator fills with the sums of the
    /// groups now complete.
    fn wgmma_wait(&self, pending: usize, acc: usize, n: u32);
    /// Suspends until the global `u32` at `flag` holds `value` (read with acquire
    /// ordering); another block of the launch sets it.
    fn flag_wait(&self, flag: *const u32, value: u32);
    /// A TMA store of `map`'s box at `coords` from shared `src`: queued, performed
    /// (source read, global written) by the [`bulk_wait`](ThreadEnv::bulk_wait)
    /// that covers its group.
    fn tma_store(&self, src: *const u8, map: *const u8, coords: &[i32]);
    /// Closes the queued TMA stores into a bulk group.
    fn bulk_commit(&self);
    /// Every committed bulk group except the `pending` newest has read its source
    /// (the emulator checks the source is as it was when the store was issued).
    fn bulk_wait_read(&self, pending: usize);
    /// Every committed bulk group except the `pending` newest is complete (its
    /// global writes done).
    fn bulk_wait(&self, pending: usize);
    /// This block's rank in its cluster.
    fn cluster_rank(&self) -> u32;
    /// Blocks per cluster (1 without clusters).
    fn cluster_size(&self) -> u32;
    /// Barrier over every thread of the cluster.
    fn cluster_sync(&self);
    /// The address of `p` (in this block's shared memory) in block `rank`'s shared
    /// memory; an error (a panic naming the thread) if `p` is not shared memory of
    /// this block or `rank` is outside the cluster.
    fn cluster_map(&self, p: *const u8, rank: u32) -> *mut u8;
    /// Checks a distributed-shared-memory access of `bytes` at `p` in block `rank`'s
    /// shared memory (a panic naming the rule otherwise): after the first cluster
    /// barrier, to a block that has not exited, inside its shared arrays.
    fn cluster_access(&self, rank: u32, p: *const u8, bytes: usize);
    /// `setmaxnreg.inc` / `.dec` to `regs` per thread for this thread's warpgroup:
    /// every thread of the warpgroup must call it with the same arguments; an
    /// increase waits until the block's pool (what decreases released) holds the
    /// registers, and one that never can is a hang named as such.
    fn set_max_registers(&self, regs: u32, inc: bool);
}

thread_local! {
    static ENV: Cell<Option<*const (dyn ThreadEnv + 'static)>> = const { Cell::new(None) };
}

/// Installs (or clears) the current thread's environment.
///
/// # Safety
/// `env`, if `Some`, must stay valid until it is replaced or cleared.
pub unsafe fn set_env(env: Option<*const (dyn ThreadEnv + 'static)>) {
    ENV.with(|e| e.set(env));
}

/// The current emulated thread's environment.
///
/// Panics with a clear message when device code runs outside an emulated launch.
#[inline]
pub fn env() -> &'static dyn ThreadEnv {
    let p = ENV.with(|e| e.get()).expect(
        "a device function was called outside a kernel launch: launch kernels through \
         rust_simt's launch API (GPU or emulator), never call them directly",
    );
    // SAFETY: `set_env`'s contract keeps the pointee alive while installed; the
    // emulator clears it before the thread context is dropped.
    unsafe { &*p }
}
