//! Emulated memory: each block's shared memory (static arrays and the dynamic
//! window, poisoned with `0xFF` bytes), and each
//! thread's context, which the device library reaches through `simt_std::emu`.
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use corosensei::Yielder;
use simt_std::emu::{ShflMode, ThreadEnv, WarpMatrixOp, WgmmaOp};
use simt_std::Dim3;

/// What a suspended thread waits for.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
    Barrier,
    Shfl(ShflMode, u32, u32),
    Warp(WarpMatrixOp),
    /// An mbarrier wait: the barrier's address and the awaited parity.
    MbarWait(usize, u32),
    Wgmma(WgmmaOp),
    /// A global flag wait: the flag's address and the awaited value.
    FlagWait(usize, u32),
    /// `cluster::sync`.
    ClusterBarrier,
    /// `setmaxnreg`: the new count per thread, and whether it increases.
    SetMaxNreg(u32, bool),
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum State {
    Run(u32),
    Barrier,
    Shfl(ShflMode, u32, u32),
    Warp(WarpMatrixOp),
    MbarWait(usize, u32),
    Wgmma(WgmmaOp),
    FlagWait(usize, u32),
    ClusterBarrier,
    SetMaxNreg(u32, bool),
    Done,
}

/// A block's static shared arrays: each array's key (its declaration's address),
/// its size in bytes and its storage.
type Statics = RefCell<Vec<(usize, usize, Box<[u128]>)>>;

/// A block's shared memory.
pub(crate) struct BlockMem {
    statics: Statics,
    /// 128-byte aligned, as the device's (`simt_std::shared::dynamic_shared`).
    dynamic: Box<[Line]>,
    dynamic_bytes: usize,
    /// mbarriers and their TMA copies.
    pub(crate) hopper: super::hopper::Hopper,
}

const POISON: u128 = u128::MAX; // 0xFF bytes: NaN as f32

/// 128 bytes of dynamic shared memory, aligned as the device aligns the array.
#[derive(Clone, Copy)]
#[repr(C, align(128))]
struct Line([u128; 8]);

impl BlockMem {
    pub(crate) fn new(dynamic_bytes: usize) -> Self {
        BlockMem {
            statics: RefCell::new(Vec::new()),
            dynamic: vec![Line([POISON; 8]); dynamic_bytes.div_ceil(128)].into_boxed_slice(),
            dynamic_bytes,
            hopper: Default::default(),
        }
    }

    /// The host address and size of the dynamic shared memory.
    pub(crate) fn dynamic_range(&self) -> (usize, usize) {
        (self.dynamic.as_ptr() as usize, self.dynamic_bytes)
    }

    /// The block's static shared array `key` of `bytes` bytes, made (poisoned) on
    /// first use.
    pub(crate) fn static_array(&self, key: usize, bytes: usize) -> *mut u8 {
        let mut st = self.statics.borrow_mut();
        if let Some((_, b, buf)) = st.iter().find(|(k, _, _)| *k == key) {
            assert_eq!(*b, bytes, "one shared array declared with two sizes");
            return buf.as_ptr() as *mut u8;
        }
        let buf = vec![POISON; bytes.div_ceil(16)].into_boxed_slice();
        let p = buf.as_ptr() as *mut u8;
        st.push((key, bytes, buf));
        p
    }

    /// Which shared array of this block `addr` is in, and where.
    pub(crate) fn locate(&self, addr: usize) -> Option<Region> {
        let d = self.dynamic.as_ptr() as usize;
        if addr >= d && addr < d + self.dynamic_bytes {
            return Some(Region::Dynamic(addr - d));
        }
        self.statics.borrow().iter().find_map(|(key, bytes, buf)| {
            let p = buf.as_ptr() as usize;
            (addr >= p && addr < p + bytes).then(|| Region::Static {
                key: *key,
                bytes: *bytes,
                off: addr - p,
            })
        })
    }

    /// The address of `r` in this block's shared memory.
    pub(crate) fn resolve(&self, r: Region) -> *mut u8 {
        match r {
            Region::Dynamic(off) => (self.dynamic.as_ptr() as *mut u8).wrapping_add(off),
            Region::Static { key, bytes, off } => self.static_array(key, bytes).wrapping_add(off),
        }
    }

    /// Whether `addr..addr + len` lies inside one of the block's shared arrays.
    pub(crate) fn contains(&self, addr: usize, len: usize) -> bool {
        let within = |p: usize, bytes: usize| addr >= p && addr + len <= p + bytes;
        within(self.dynamic.as_ptr() as usize, self.dynamic_bytes)
            || self
                .statics
                .borrow()
                .iter()
                .any(|(_, bytes, buf)| within(buf.as_ptr() as usize, *bytes))
    }
}

/// A place in a block's shared memory, the same in every block of a cluster.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Region {
    Dynamic(usize),
    Static {
        key: usize,
        bytes: usize,
        off: usize,
    },
}

/// The blocks of one cluster (one block without clusters), as their threads see
/// them: each block's shared memory, index and threads still running.
pub(crate) struct ClusterInfo {
    pub(crate) mems: Vec<*const BlockMem>,
    pub(crate) bids: Vec<Dim3>,
    pub(crate) alive: Vec<Cell<usize>>,
    /// Cluster barriers released so far.
    pub(crate) epoch: Cell<u32>,
    /// Per block: the latest epoch in which another block accessed its shared
    /// memory (it must pass a cluster barrier after that before it exits).
    pub(crate) touched: Vec<Cell<Option<u32>>>,
}

/// One emulated thread's view of the launch.
pub(crate) struct Ctx {
    pub(crate) tid: Dim3,
    pub(crate) bid: Dim3,
    pub(crate) bdim: Dim3,
    pub(crate) gdim: Dim3,
    pub(crate) yielder: Cell<*const Yielder<u32, Event>>,
    pub(crate) mem: *const BlockMem,
    /// This block's rank in its cluster, and the cluster.
    pub(crate) rank: u32,
    pub(crate) cluster: *const ClusterInfo,
    /// Async copies issued but not committed, and committed groups, oldest first.
    /// The registers a completed warp matrix operation returns to this lane.
    pub(crate) warp_out: Cell<[u32; 4]>,
    pub(crate) copies: RefCell<(Vec<AsyncCopy>, VecDeque<Vec<AsyncCopy>>)>,
    /// TMA stores issued but not committed, and committed bulk groups, oldest first.
    #[allow(clippy::type_complexity)]
    pub(crate) bulk: RefCell<(
        Vec<super::hopper::BulkStore>,
        VecDeque<(bool, Vec<super::hopper::BulkStore>)>,
    )>,
    /// This thread's asynchronous wgmma groups.
    pub(crate) wg_async: RefCell<super::hopper::AsyncWgmma>,
}

/// One `cp.async`: performed when a `wait` covers its group.
pub(crate) struct AsyncCopy {
    dst: *mut u8,
    src: *const u8,
    bytes: usize,
    src_bytes: usize,
}

impl Ctx {
    pub(crate) fn cluster_info(&self) -> &ClusterInfo {
        self.cluster()
    }

    /// Block `rank` of this cluster, reached by `what` (a remote access, arrival or
    /// copy): the rank exists and, unless it is this block's own (`own_too` checks
    /// that one too), the cluster passed its first barrier (`early` says how to
    /// fix that) and the block has not exited (`gone` says how). Panics naming the
    /// block otherwise.
    pub(crate) fn cluster_block(
        &self,
        rank: u32,
        what: &str,
        own_too: bool,
        early: &str,
        gone: &str,
    ) -> &BlockMem {
        let c = self.cluster();
        let r = rank as usize;
        assert!(
            r < c.mems.len(),
            "{what} rank {rank}, but the cluster has {} blocks (ranks 0..{})",
            c.mems.len(),
            c.mems.len()
        );
        let b = c.bids[r];
        if own_too || r != self.rank as usize {
            assert!(
                c.epoch.get() > 0,
                "{what} block ({}, {}, {}) (rank {rank} of the cluster) before the cluster's first cluster::sync(): that block may not have {early}",
                b.x,
                b.y,
                b.z
            );
            assert!(
                c.alive[r].get() > 0,
                "{what} block ({}, {}, {}) (rank {rank} of the cluster), whose threads have all exited: on a GPU its shared memory is gone. {gone}",
                b.x,
                b.y,
                b.z
            );
        }
        // SAFETY: the block memories outlive every coroutine of the cluster.
        unsafe { &*c.mems[r] }
    }

    /// The address in block `to`'s shared memory of `p`, an address in this block's
    /// (the same array and offset).
    pub(crate) fn same_place(&self, p: *const u8, to: &BlockMem, what: &str) -> *mut u8 {
        // SAFETY: the block memory outlives every coroutine of the block.
        let region = unsafe { &*self.mem }
            .locate(p as usize)
            .unwrap_or_else(|| panic!("{what}: {p:?} is not in this block's shared memory"));
        to.resolve(region)
    }

    fn cluster(&self) -> &ClusterInfo {
        // SAFETY: the cluster outlives every coroutine of its blocks.
        unsafe { &*self.cluster }
    }

    pub(crate) fn suspend(&self, e: Event) -> u32 {
        // SAFETY: set by the coroutine's entry before any kernel code runs, and valid
        // for the coroutine's whole life; device calls only happen inside it.
        unsafe { (*self.yielder.get()).suspend(e) }
    }
}

impl ThreadEnv for Ctx {
    fn thread_idx(&self) -> Dim3 {
        self.tid
    }
    fn block_idx(&self) -> Dim3 {
        self.bid
    }
    fn block_dim(&self) -> Dim3 {
        self.bdim
    }
    fn grid_dim(&self) -> Dim3 {
        self.gdim
    }
    fn sync_threads(&self) {
        self.suspend(Event::Barrier);
    }
    fn shfl(&self, mode: ShflMode, value: u32, arg: u32) -> u32 {
        self.suspend(Event::Shfl(mode, value, arg))
    }
    fn warp_matrix(&self, op: WarpMatrixOp) -> [u32; 4] {
        self.suspend(Event::Warp(op));
        self.warp_out.get()
    }
    fn static_shared(&self, key: usize, bytes: usize) -> *mut u8 {
        // SAFETY: the block memory outlives every coroutine of the block.
        unsafe { &*self.mem }.static_array(key, bytes)
    }
    fn dynamic_shared(&self) -> (*mut u8, usize) {
        // SAFETY: as above.
        let mem = unsafe { &*self.mem };
        (mem.dynamic.as_ptr() as *mut u8, mem.dynamic_bytes)
    }
    fn copy_async(&self, dst: *mut u8, src: *const u8, bytes: usize, src_bytes: usize) {
        self.copies.borrow_mut().0.push(AsyncCopy {
            dst,
            src,
            bytes,
            src_bytes,
        });
    }
    fn copy_commit(&self) {
        let mut c = self.copies.borrow_mut();
        let group = std::mem::take(&mut c.0);
        c.1.push_back(group);
    }
    fn shared_window_addr(&self, p: *const u8) -> u32 {
        self.window_addr(p)
    }
    fn mbar_init(&self, bar: *mut u8, count: u32) {
        self.mbar_init_impl(bar, count)
    }
    fn mbar_arrive(&self, bar: *mut u8, tx_bytes: u32) {
        self.mbar_arrive_impl(bar, tx_bytes)
    }
    fn mbar_wait(&self, bar: *mut u8, parity: u32) {
        if !self.mbar_wait_now(bar, parity) {
            self.suspend(Event::MbarWait(bar as usize, parity));
        }
    }
    fn flag_wait(&self, flag: *const u32, value: u32) {
        self.suspend(Event::FlagWait(flag as usize, value));
    }
    fn tma_store(&self, src: *const u8, map: *const u8, coords: &[i32]) {
        self.tma_store_impl(src, map, coords)
    }
    fn bulk_commit(&self) {
        self.bulk_commit_impl()
    }
    fn bulk_wait_read(&self, pending: usize) {
        self.bulk_wait_impl(pending, false)
    }
    fn bulk_wait(&self, pending: usize) {
        self.bulk_wait_impl(pending, true)
    }
    fn cluster_rank(&self) -> u32 {
        self.rank
    }
    fn cluster_size(&self) -> u32 {
        self.cluster().mems.len() as u32
    }
    fn cluster_sync(&self) {
        self.suspend(Event::ClusterBarrier);
    }
    fn cluster_map(&self, p: *const u8, rank: u32) -> *mut u8 {
        let c = self.cluster();
        assert!(
            (rank as usize) < c.mems.len(),
            "cluster::map to rank {rank}, but the cluster has {} blocks (ranks 0..{})",
            c.mems.len(),
            c.mems.len()
        );
        // SAFETY: the block memories outlive every coroutine of the cluster.
        let theirs = unsafe { &*c.mems[rank as usize] };
        self.same_place(p, theirs, "cluster::map (it takes an Smem of this block)")
    }
    fn cluster_access(&self, rank: u32, p: *const u8, bytes: usize) {
        let c = self.cluster();
        let r = rank as usize;
        let b = c.bids[r];
        let theirs = self.cluster_block(
            rank,
            "accesses the shared memory of",
            true,
            "started on a GPU. Sync the cluster before the first remote access",
            "End the kernel with cluster::sync() after the last remote access",
        );
        assert!(
            theirs.contains(p as usize, bytes),
            "a remote access of {bytes} bytes at {p:?} lies outside the shared arrays of block ({}, {}, {}) (rank {rank})",
            b.x,
            b.y,
            b.z
        );
        if rank != self.rank {
            let t = &c.touched[r];
            t.set(Some(
                t.get().map_or(c.epoch.get(), |e| e.max(c.epoch.get())),
            ));
        }
    }
    fn tma_load(&self, dst: *mut u8, map: *const u8, coords: &[i32], bar: *mut u8) {
        self.tma_load_impl(dst, map, coords, bar)
    }
    fn bulk_load(&self, dst: *mut u8, src: *const u8, bytes: usize, bar: *mut u8) {
        self.bulk_load_impl(dst, src, bytes, bar)
    }
    fn tma_load_multicast(
        &self,
        dst: *mut u8,
        map: *const u8,
        coords: &[i32],
        bar: *mut u8,
        mask: u16,
    ) {
        self.tma_load_multicast_impl(dst, map, coords, bar, mask)
    }
    fn mbar_arrive_remote(&self, bar: *mut u8, rank: u32) {
        self.mbar_arrive_remote_impl(bar, rank)
    }
    fn wgmma(&self, op: WgmmaOp) {
        self.suspend(Event::Wgmma(op));
    }
    fn wgmma_wait(&self, pending: usize, acc: usize, n: u32) {
        self.wgmma_wait_impl(pending, acc, n)
    }
    fn set_max_registers(&self, regs: u32, inc: bool) {
        self.suspend(Event::SetMaxNreg(regs, inc));
    }
    fn copy_wait(&self, pending: usize) {
        let mut c = self.copies.borrow_mut();
        while c.1.len() > pending {
            for cp in c.1.pop_front().unwrap() {
                // SAFETY: `pipeline::copy_async`'s contract: the source is readable for
                // `src_bytes` and the destination is `bytes` inside a shared array of
                // this block, which outlives its threads.
                unsafe {
                    std::ptr::copy_nonoverlapping(cp.src, cp.dst, cp.src_bytes);
                    std::ptr::write_bytes(cp.dst.add(cp.src_bytes), 0, cp.bytes - cp.src_bytes);
                }
            }
        }
    }
}
