//! Hopper's asynchronous machinery on the emulator: `mbarrier` phases with
//! transaction counts, TMA box copies, and warpgroup `wgmma` regions.
//!
//! * **mbarriers.** Each barrier (keyed by its shared address) counts the arrivals
//!   still missing in its current phase and the transaction bytes outstanding. A
//!   phase completes when both reach zero; the barrier then expects its arrivals
//!   again. A wait names the parity of the phase it waits for: if the barrier's
//!   current phase has the other parity, that phase already completed and the wait
//!   returns at once (as on the GPU; a wrong parity therefore runs ahead).
//! * **TMA copies** (tensor boxes and 1-D bulk copies) are read from global memory
//!   when issued, but their bytes land in shared memory only when some thread waits
//!   for their barrier's current phase; until then the destination holds NaN poison.
//!   A consumer that reads without waiting, or after waiting on the wrong parity,
//!   reads poison. A 1-D bulk copy's source must read the same when it lands: a
//!   source written while its copy is in flight is an error.
//! * **wgmma** completes when all 128 threads of a warpgroup reached the same region.
//!   It decodes the descriptors (the 128-byte swizzle only), reads A and B from
//!   the block's shared memory, and adds the product into every thread's
//!   accumulator fragment.
//!
//! Misuse is an error naming the kernel, block and thread (or warpgroup): a barrier
//! used before `init`, an arrival past the expected count, copies that deliver more
//! bytes than their phase's arrivals announced, a TMA destination that is misaligned
//! or outside shared memory, a descriptor pointing outside it, a wgmma not reached
//! by the whole warpgroup, and a wait that can never complete (fewer bytes than
//! announced: the report names the bytes outstanding).
use std::cell::RefCell;
use std::collections::HashMap;

use simt_std::emu::WgmmaOp;
use simt_std::mma::MmaKind;
use simt_std::tma::swizzle_128b;
use simt_std::wgmma::{acc_coords, desc_fields};

use super::memory::{BlockMem, Ctx, State};
use super::EmuError;
use simt_std::Dim3;

/// The shared-window address the emulator gives the first byte of a block's dynamic
/// shared memory: 128-byte aligned (what TMA needs) but not 1024-byte aligned, so a
/// kernel that forgets to align its swizzled tiles fails here as it would on a GPU.
pub(crate) const WINDOW_BASE: u32 = 0x480;

/// The emulator's tensor-map encoding (`simt::TensorMap` writes it): word 0 is
/// this magic number, then the global address, the two dimensions (elements), the
/// row stride (bytes), the box (elements), the element size, the swizzle (0 or
/// 128), whether loads round f32 to TF32 (1: a TF32 map; nearest even, as the
/// H200's TMA, `simt_std::convert::tf32_rne_bits`), then the third dimension
/// (elements; 1 for a 2-D map), its stride (bytes), the box's third side and the
/// rank (2 or 3: a copy must name as many coordinates).
pub const TENSOR_MAP_MAGIC: u64 = 0x5349_4d54_544d_4150; // "SIMTTMAP"

/// One barrier's state.
#[derive(Debug)]
pub(crate) struct Mbar {
    expected: u32,
    pending: u32,
    tx: i64,
    /// Phases completed so far (the current phase's number).
    phase: u32,
    /// TMA copies of the current phase not yet landed: destination, bytes, and for a
    /// 1-D bulk copy its global source (checked unchanged when the copy lands).
    copies: Vec<(usize, Vec<u8>, Option<usize>)>,
    /// The latest phase another block of the cluster arrived on or multicast into,
    /// and that block's rank.
    remote: Option<(u32, u32)>,
    /// Phases below this one were seen complete by a wait of this block.
    observed: u32,
}

impl Mbar {
    fn describe(&self) -> String {
        format!(
            "phase {} (parity {}) in progress: {} of {} arrivals missing, {} transaction bytes outstanding",
            self.phase,
            self.phase % 2,
            self.pending,
            self.expected,
            self.tx
        )
    }
    fn try_complete(&mut self) {
        if self.pending == 0 && self.tx == 0 {
            self.phase += 1;
            self.pending = self.expected;
        }
    }
    /// Lands the phase's copies (their bytes count against the transactions) of the
    /// barrier at `key`.
    fn land(&mut self, key: usize) {
        for (dst, bytes, src) in self.copies.drain(..) {
            if let Some(src) = src {
                // SAFETY: the source was readable for these bytes when the copy was
                // issued (the kernel's contract), and stays allocated for the launch.
                let now = unsafe { std::slice::from_raw_parts(src as *const u8, bytes.len()) };
                assert!(
                    now == &bytes[..],
                    "cp.async.bulk (1-D load): its global source at {src:#x} ({} bytes) was written while the copy was in flight; \
                     on a GPU the copy may read either. Write the source only after a wait on the copy's barrier phase",
                    bytes.len()
                );
            }
            // SAFETY: the destination was checked to lie in the block's shared memory
            // when the copy was issued; the block memory outlives its threads.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst as *mut u8, bytes.len()) };
            self.tx -= bytes.len() as i64;
        }
        // Every arrival of the phase is in, so no announcement is still to come: bytes
        // past the announced ones are a mismatch (on a GPU the phase's count goes
        // negative and it may complete before every copy landed, or never).
        assert!(
            !(self.pending == 0 && self.tx < 0),
            "the copies of phase {} of the mbarrier at {key:#x} delivered {} bytes more than its arrivals announced; \
             announce exactly the bytes the phase's copies move (mbarrier::arrive_expect_tx)",
            self.phase,
            -self.tx
        );
        self.try_complete();
    }
}

/// A block's Hopper state.
#[derive(Default)]
pub(crate) struct Hopper {
    mbars: RefCell<HashMap<usize, Mbar>>,
    /// The shared-window ranges `[lo, hi)` that asynchronous wgmma groups in flight
    /// read, by group id: a TMA copy into one of them is an error.
    inflight: RefCell<Vec<(u64, u32, u32)>>,
    next_group: std::cell::Cell<u64>,
}

impl Hopper {
    /// Whether the wait for parity `parity` on `bar` can return (landing the current
    /// phase's copies first when it is the awaited one).
    pub(crate) fn wait_ready(&self, bar: usize, parity: u32) -> bool {
        let mut m = self.mbars.borrow_mut();
        let Some(b) = m.get_mut(&bar) else {
            return true; // reported at the wait itself
        };
        if b.phase % 2 == parity {
            b.land(bar);
        }
        let done = b.phase % 2 != parity;
        if done {
            b.observed = b.phase;
        }
        done
    }

    /// At the block's exit: a barrier of this block whose phase another block
    /// arrived on (or multicast into) was not seen complete by any wait here, as
    /// `(barrier address, that block's rank, the phase)`.
    pub(crate) fn unobserved_remote(&self) -> Option<(usize, u32, u32)> {
        self.mbars.borrow().iter().find_map(|(&k, b)| {
            b.remote
                .filter(|&(phase, _)| phase >= b.observed)
                .map(|(phase, rank)| (k, rank, phase))
        })
    }

    /// An arrival (announcing `tx` bytes) on the barrier at `key`; `remote`: the
    /// rank of the arriving block when it is another block of the cluster.
    fn arrive(&self, key: usize, tx: u32, remote: Option<u32>) {
        let mut m = self.mbars.borrow_mut();
        let b = m.get_mut(&key).unwrap_or_else(|| {
            panic!("mbarrier.arrive on the barrier at {key:#x}, which was never initialised (mbarrier::init, fence_init and a block barrier first)")
        });
        assert!(
            b.pending > 0,
            "an arrival past the expected count on the mbarrier at {key:#x} ({})",
            b.describe()
        );
        if let Some(r) = remote {
            b.remote = Some((b.phase, r));
        }
        b.pending -= 1;
        b.tx += tx as i64;
        b.try_complete();
    }

    /// Queues a TMA copy's bytes on the barrier at `key` (they land at a wait).
    fn queue_copy(
        &self,
        key: usize,
        dst: usize,
        image: Vec<u8>,
        src: Option<usize>,
        remote: Option<u32>,
        what: &str,
    ) {
        let mut m = self.mbars.borrow_mut();
        let b = m.get_mut(&key).unwrap_or_else(|| {
            panic!("{what} completing on the mbarrier at {key:#x}, which was never initialised")
        });
        if let Some(r) = remote {
            b.remote = Some((b.phase, r));
        }
        b.copies.push((dst, image, src));
    }
    /// The shared-window range `[lo, hi)` of a wgmma group still in flight that
    /// overlaps `[wa, wa + bytes)`: an asynchronous copy into it would overwrite the
    /// group's operands on a GPU.
    fn inflight_over(&self, wa: u32, bytes: usize) -> Option<(u32, u32)> {
        self.inflight
            .borrow()
            .iter()
            .find(|g| wa < g.2 && g.1 < wa + bytes as u32)
            .map(|&(_, lo, hi)| (lo, hi))
    }
    pub(crate) fn describe(&self, bar: usize) -> String {
        self.mbars
            .borrow()
            .get(&bar)
            .map(|b| b.describe())
            .unwrap_or_else(|| "not initialised".into())
    }
}

fn mem(ctx: &Ctx) -> &BlockMem {
    // SAFETY: the block memory outlives every coroutine of the block.
    unsafe { &*ctx.mem }
}

impl Ctx {
    pub(crate) fn window_addr(&self, p: *const u8) -> u32 {
        let m = mem(self);
        let (base, bytes) = m.dynamic_range();
        let a = p as usize;
        assert!(
            a >= base && a <= base + bytes,
            "a shared-window address was asked of {a:#x}, which is not in the block's dynamic shared memory: on the emulator only dynamic shared memory has window addresses (declare wgmma and TMA tiles there)"
        );
        WINDOW_BASE + (a - base) as u32
    }

    /// The host pointer of window address `w`, `len` bytes of dynamic shared memory.
    fn window_ptr(&self, w: u32, len: usize) -> Option<*mut u8> {
        let (base, bytes) = mem(self).dynamic_range();
        let off = w.checked_sub(WINDOW_BASE)? as usize;
        (off + len <= bytes).then_some((base + off) as *mut u8)
    }

    fn bar_key(&self, bar: *mut u8, what: &str) -> usize {
        let a = bar as usize;
        assert!(
            a.is_multiple_of(8) && mem(self).contains(a, 8),
            "{what}: the mbarrier at {a:#x} is not 8-byte aligned shared memory of this block"
        );
        a
    }

    pub(crate) fn mbar_init_impl(&self, bar: *mut u8, count: u32) {
        let key = self.bar_key(bar, "mbarrier.init");
        assert!(
            (1..1 << 20).contains(&count),
            "mbarrier.init with an arrival count of {count}: it must be 1 to 2^20 - 1"
        );
        let mut m = mem(self).hopper.mbars.borrow_mut();
        if let Some(old) = m.get(&key) {
            assert!(
                old.copies.is_empty(),
                "mbarrier.init on a barrier with TMA copies in flight ({})",
                old.describe()
            );
        }
        m.insert(
            key,
            Mbar {
                expected: count,
                pending: count,
                tx: 0,
                phase: 0,
                copies: Vec::new(),
                remote: None,
                observed: 0,
            },
        );
    }

    pub(crate) fn mbar_arrive_impl(&self, bar: *mut u8, tx: u32) {
        let key = self.bar_key(bar, "mbarrier.arrive");
        mem(self).hopper.arrive(key, tx, None);
    }

    /// `what` reaches block `rank` of the cluster: checked like a distributed
    /// shared-memory access (after the first cluster barrier, to a live block); the
    /// block's memory.
    fn remote_block(&self, rank: u32, what: &str) -> &BlockMem {
        self.cluster_block(
            rank,
            &format!("{what} to"),
            false,
            "started or initialised its mbarriers. Initialise, mbarrier::fence_init, then cluster::sync() before the first remote arrival or multicast",
            "That block must wait for the phase this completes before it exits",
        )
    }

    /// `p`, an address in this block's shared memory, in block `to`'s.
    fn in_block(&self, p: *mut u8, to: &BlockMem, what: &str) -> usize {
        self.same_place(p, to, what) as usize
    }

    pub(crate) fn mbar_arrive_remote_impl(&self, bar: *mut u8, rank: u32) {
        let what = "mbarrier::arrive_cluster";
        let key = self.bar_key(bar, what);
        let to = self.remote_block(rank, what);
        let remote = (rank != self.rank).then_some(self.rank);
        let theirs = self.in_block(key as *mut u8, to, what);
        to.hopper.arrive(theirs, 0, remote);
    }

    /// Whether a wait may return now; `None` if it must suspend.
    pub(crate) fn mbar_wait_now(&self, bar: *mut u8, parity: u32) -> bool {
        let key = self.bar_key(bar, "mbarrier.try_wait");
        assert!(
            mem(self).hopper.mbars.borrow().contains_key(&key),
            "mbarrier wait on the barrier at {key:#x}, which was never initialised"
        );
        mem(self).hopper.wait_ready(key, parity)
    }

    /// The box `map` describes at `coords`, against this block's shared memory at
    /// `smem` (checked: aligned for the swizzle, inside the dynamic shared memory).
    fn tma_box(&self, smem: *const u8, map: *const u8, coords: &[i32], what: &str) -> TmaBox {
        // SAFETY: the kernel's contract makes `map` a readable, 64-byte aligned map.
        let w: [u64; 16] = unsafe { std::ptr::read(map as *const [u64; 16]) };
        assert!(
            w[0] == TENSOR_MAP_MAGIC,
            "{what} with a pointer that is no tensor map made by simt::TensorMap for the emulator"
        );
        let rank = w[13] as usize;
        assert!(
            coords.len() == rank,
            "{what}: a {}-D copy through a {rank}-D tensor map (use tma::load_{rank}d)",
            coords.len()
        );
        let b = TmaBox {
            gaddr: w[1] as usize,
            dims: [w[2] as i64, w[3] as i64, w[10] as i64],
            strides: [w[4] as usize, w[11] as usize],
            boxdim: [w[5] as usize, w[6] as usize, w[12] as usize],
            eb: w[7] as usize,
            swizzled: w[8] == 128,
            tf32: w[9] == 1,
            coords: [coords[0], coords[1], coords.get(2).copied().unwrap_or(0)],
            wa: self.window_addr(smem),
        };
        let need = if b.swizzled { 1024 } else { 128 };
        assert!(
            b.wa.is_multiple_of(need),
            "{what}: shared memory at window address {:#x} is not {need}-byte aligned{}",
            b.wa,
            if b.swizzled {
                " (the 128-byte swizzle needs 1024-byte aligned tiles)"
            } else {
                ""
            }
        );
        assert!(
            self.window_ptr(b.wa, b.bytes()).is_some(),
            "{what}: a box of {} bytes at shared window address {:#x} runs past the block's dynamic shared memory",
            b.bytes(),
            b.wa
        );
        b
    }

    /// A 1-D bulk copy (`simt_std::tma::bulk_load`): checked (sizes and alignment as
    /// the PTX ISA asks, the destination inside the dynamic shared memory, clear of
    /// wgmma groups in flight), read from global memory now, landed at a wait.
    pub(crate) fn bulk_load_impl(&self, dst: *mut u8, src: *const u8, bytes: usize, bar: *mut u8) {
        let what = "cp.async.bulk (1-D load)";
        assert!(
            bytes > 0 && bytes.is_multiple_of(16) && bytes < 1 << 32,
            "{what} of {bytes} bytes: the size must be a positive multiple of 16"
        );
        assert!(
            (src as usize).is_multiple_of(16),
            "{what} from global address {src:p}, which is not 16-byte aligned"
        );
        let wa = self.window_addr(dst);
        assert!(
            wa.is_multiple_of(16),
            "{what} into shared window address {wa:#x}, which is not 16-byte aligned"
        );
        let d = self.window_ptr(wa, bytes).unwrap_or_else(|| {
            panic!("{what}: {bytes} bytes at shared window address {wa:#x} run past the block's dynamic shared memory")
        });
        let key = self.bar_key(bar, what);
        if let Some((lo, hi)) = mem(self).hopper.inflight_over(wa, bytes) {
            panic!(
                "{what} into shared window [{wa:#x}, {:#x}), where a wgmma group still in flight reads [{lo:#x}, {hi:#x})",
                wa + bytes as u32
            );
        }
        // SAFETY: the kernel's contract makes src readable for `bytes` bytes of global
        // memory that no one writes during the launch.
        let image = unsafe { std::slice::from_raw_parts(src, bytes) }.to_vec();
        // Until the copy lands, the destination reads as poison.
        // SAFETY: inside the dynamic shared memory (checked above).
        unsafe { std::ptr::write_bytes(d, 0xFF, bytes) };
        mem(self)
            .hopper
            .queue_copy(key, d as usize, image, Some(src as usize), None, what);
    }

    pub(crate) fn tma_load_impl(&self, dst: *mut u8, map: *const u8, coords: &[i32], bar: *mut u8) {
        self.tma_load_multicast_impl(dst, map, coords, bar, 1 << self.rank);
    }

    /// A TMA load into the blocks of `mask` (this block alone: a plain load).
    pub(crate) fn tma_load_multicast_impl(
        &self,
        dst: *mut u8,
        map: *const u8,
        coords: &[i32],
        bar: *mut u8,
        mask: u16,
    ) {
        let multicast = mask != 1 << self.rank;
        let what = if multicast {
            "cp.async.bulk.tensor (multicast load)"
        } else {
            "cp.async.bulk.tensor (load)"
        };
        let n = self.cluster_info().mems.len();
        assert!(
            mask != 0 && (mask as usize) >> n == 0,
            "{what} with the block mask {mask:#06x}, which names no rank or a rank outside the cluster of {n} blocks"
        );
        let b = self.tma_box(dst, map, coords, what);
        let bytes = b.bytes();
        let key = self.bar_key(bar, what);
        let mut image = vec![0u8; bytes];
        b.each(false, |at, src| {
            // SAFETY: inside the matrix the map describes (checked when it was made).
            unsafe {
                std::ptr::copy_nonoverlapping(src as *const u8, image.as_mut_ptr().add(at), b.eb)
            };
            if b.tf32 {
                let e = &mut image[at..at + 4];
                let x = f32::from_le_bytes([e[0], e[1], e[2], e[3]]);
                e.copy_from_slice(&simt_std::convert::tf32_rne_bits(x).to_le_bytes());
            }
        });
        for r in (0..n as u32).filter(|r| mask >> r & 1 == 1) {
            let to = self.remote_block(r, what);
            let (d, k) = (
                self.in_block(dst, to, what),
                self.in_block(key as *mut u8, to, what),
            );
            // Until the copy lands, the destination reads as poison.
            // SAFETY: the box lies in the dynamic shared memory (checked above), at
            // the same offset in every block of the cluster.
            unsafe { std::ptr::write_bytes(d as *mut u8, 0xFF, bytes) };
            let wa = self.window_addr(dst);
            if let Some((lo, hi)) = to.hopper.inflight_over(wa, bytes) {
                panic!(
                    "{what} into shared window [{wa:#x}, {:#x}) of rank {r}, where a wgmma group still in flight reads [{lo:#x}, {hi:#x}): \
                     on a GPU the copy may overwrite its operands. Release a stage only after wgmma::wait_n* covers the groups that read it",
                    wa + bytes as u32
                );
            }
            let remote = (r != self.rank).then_some(self.rank);
            to.hopper
                .queue_copy(k, d, image.clone(), None, remote, what);
        }
    }
}

impl Ctx {
    pub(crate) fn tma_store_impl(&self, src: *const u8, map: *const u8, coords: &[i32]) {
        let b = self.tma_box(src, map, coords, "cp.async.bulk.tensor (store)");
        // The engine may read the source any time until a wait covers the store: take
        // it now (a tile stored before it is complete stores what was there) and
        // check at the wait that nobody wrote it meanwhile.
        // SAFETY: the box lies in this block's dynamic shared memory (checked above).
        let image = unsafe { std::slice::from_raw_parts(src, b.bytes()) }.to_vec();
        self.bulk.borrow_mut().0.push(BulkStore {
            src: src as usize,
            b,
            image,
        });
    }

    pub(crate) fn bulk_commit_impl(&self) {
        let mut q = self.bulk.borrow_mut();
        let group = std::mem::take(&mut q.0);
        q.1.push_back((false, group));
    }

    /// Every committed group but the `pending` newest: its source checked against
    /// what it was at issue (read done); with `complete`, its global writes done too.
    pub(crate) fn bulk_wait_impl(&self, pending: usize, complete: bool) {
        let mut q = self.bulk.borrow_mut();
        let covered = q.1.len().saturating_sub(pending);
        for (read, group) in q.1.iter_mut().take(covered) {
            if !*read {
                for st in group.iter() {
                    st.check_source();
                }
                *read = true;
            }
        }
        if complete {
            for (_, group) in q.1.drain(..covered) {
                group.iter().for_each(BulkStore::write);
            }
        }
    }

    /// At the block's exit: the count of stores whose source read no wait covered
    /// (an error), else the writes of the read-waited ones, done now (the hardware
    /// completes them) and 0.
    pub(crate) fn bulk_finish(&self) -> usize {
        let mut q = self.bulk.borrow_mut();
        let unread = q.0.len()
            + q.1
                .iter()
                .filter(|(r, _)| !r)
                .map(|(_, g)| g.len())
                .sum::<usize>();
        if unread == 0 {
            for (_, group) in q.1.drain(..) {
                group.iter().for_each(BulkStore::write);
            }
        }
        unread
    }
}

/// One TMA box as a copy sees it: the decoded map, the box's coordinates and its
/// shared-window address.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TmaBox {
    gaddr: usize,
    /// Elements along the contiguous dimension, then rows, then planes (1 for a 2-D map).
    dims: [i64; 3],
    /// Bytes from one row to the next, and from one plane to the next.
    strides: [usize; 2],
    boxdim: [usize; 3],
    eb: usize,
    swizzled: bool,
    /// Loads round each f32 element to TF32 (a TF32 map).
    tf32: bool,
    coords: [i32; 3],
    wa: u32,
}

impl TmaBox {
    fn bytes(&self) -> usize {
        self.boxdim[0] * self.eb * self.boxdim[1] * self.boxdim[2]
    }

    /// Calls `f(offset in shared memory, global address)` for every element of the
    /// box inside the tensor; the offset has the swizzle applied. The box lies in
    /// shared memory row after row (`x` fastest, then `y`, then `z`). `chunks`
    /// (stores): also for the elements past the matrix's last column that share its
    /// 16-byte chunk, which an H100's TMA store may write (docs/GPU-RUNS.md, section 17).
    fn each(&self, chunks: bool, mut f: impl FnMut(usize, usize)) {
        let row = self.boxdim[0] * self.eb;
        let last_chunk = ((self.dims[0] - 1) * self.eb as i64) / 16;
        for z in 0..self.boxdim[2] {
            let gz = self.coords[2] as i64 + z as i64;
            if gz < 0 || gz >= self.dims[2] {
                continue;
            }
            for r in 0..self.boxdim[1] {
                let gy = self.coords[1] as i64 + r as i64;
                for c in 0..self.boxdim[0] {
                    let gx = self.coords[0] as i64 + c as i64;
                    let inside_x =
                        gx < self.dims[0] || (chunks && (gx * self.eb as i64) / 16 == last_chunk);
                    if gx < 0 || !inside_x || gy < 0 || gy >= self.dims[1] {
                        continue;
                    }
                    let lin = ((z * self.boxdim[1] + r) * row + c * self.eb) as u32;
                    let at = if self.swizzled {
                        (swizzle_128b(self.wa + lin) - self.wa) as usize
                    } else {
                        lin as usize
                    };
                    f(
                        at,
                        self.gaddr
                            + gz as usize * self.strides[1]
                            + gy as usize * self.strides[0]
                            + gx as usize * self.eb,
                    );
                }
            }
        }
    }
}

/// One TMA store: its box, its source and the source's bytes when it was issued.
pub(crate) struct BulkStore {
    src: usize,
    b: TmaBox,
    image: Vec<u8>,
}

impl BulkStore {
    fn check_source(&self) {
        // SAFETY: the source box lies in this block's dynamic shared memory, which
        // outlives its threads (checked when the store was issued).
        let now = unsafe { std::slice::from_raw_parts(self.src as *const u8, self.image.len()) };
        assert!(
            now == &self.image[..],
            "the shared memory a TMA store reads (window address {:#x}, {} bytes) was written after the store was issued and before a \
             store_wait_read covered it: on a GPU the engine may read either. Wait (tma::store_wait_read) before writing the tile again",
            self.b.wa,
            self.image.len()
        );
    }

    fn write(&self) {
        self.b.each(true, |at, dst| {
            // SAFETY: the destination is inside the matrix the map describes (checked
            // when it was made), or in the 16-byte chunk that holds its last column:
            // rows start 16-byte aligned (checked), so that chunk is inside the row
            // stride or the allocation (rounded up to 256 bytes); the image holds the box.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.image.as_ptr().add(at),
                    dst as *mut u8,
                    self.b.eb,
                )
            };
        });
    }
}

/// One thread's asynchronous `wgmma` groups (`mma_*_async` .. `wait_n*`). While a
/// group is in flight the thread's accumulator registers are the hardware's: the
/// emulator keeps the running sums here and hands the kernel NaN poison instead,
/// checks that the poison comes back untouched (an accumulator written while a group
/// is in flight is an error), and returns the sums at the wait that completes the
/// last group. The first thread of the warpgroup also keeps each group's operand
/// bytes and checks at the wait that covers it that they are still there: on a GPU a
/// group may read its shared memory until then.
#[derive(Default)]
pub(crate) struct AsyncWgmma {
    sums: Option<Vec<f32>>,
    /// Groups in flight, oldest first, with their operands (the warpgroup's first
    /// thread only; empty elsewhere).
    groups: std::collections::VecDeque<(u64, Vec<Operand>)>,
    in_flight: usize,
}

/// One operand element a wgmma read: its window address, its bits and its bytes.
pub(crate) type Operand = (u32, u32, u8);

const ACC_POISON: u32 = u32::MAX;

/// The `eb` (2 or 4) bytes at `p` as an integer.
///
/// # Safety
/// `p` is readable for `eb` bytes.
unsafe fn read_bits(p: *const u8, eb: u8) -> u32 {
    // SAFETY: the caller's contract.
    unsafe {
        if eb == 2 {
            (p as *const u16).read_unaligned() as u32
        } else {
            (p as *const u32).read_unaligned()
        }
    }
}

impl Ctx {
    pub(crate) fn wgmma_wait_impl(&self, pending: usize, acc: usize, n: u32) {
        let mut w = self.wg_async.borrow_mut();
        let done = w.in_flight.saturating_sub(pending);
        w.in_flight -= done;
        for _ in 0..done.min(w.groups.len()) {
            let (id, reads) = w.groups.pop_front().unwrap();
            self.check_operands(&reads);
            mem(self).hopper.inflight.borrow_mut().retain(|g| g.0 != id);
        }
        if w.in_flight > 0 {
            return;
        }
        let Some(sums) = w.sums.take() else {
            return; // nothing was in flight: the accumulators are the kernel's own
        };
        assert!(
            sums.len() == n as usize / 2,
            "wgmma wait for a 64x{n} tile, but the groups in flight are 64x{}",
            2 * sums.len()
        );
        // SAFETY: the caller's accumulator array of n / 2 floats.
        let a = unsafe { std::slice::from_raw_parts_mut(acc as *mut f32, sums.len()) };
        assert!(
            a.iter().all(|v| v.to_bits() == ACC_POISON),
            "the accumulators were written while a wgmma group was in flight (between mma_*_async and the wait that completes it): \
             on a GPU that is undefined. Leave them untouched until wgmma::wait_n*::<0>"
        );
        a.copy_from_slice(&sums);
    }

    fn check_operands(&self, reads: &[Operand]) {
        for &(w, bits, eb) in reads {
            let now = self.window_ptr(w, eb as usize).map(|p| {
                // SAFETY: inside the dynamic shared memory (checked).
                unsafe { read_bits(p, eb) }
            });
            assert!(
                now == Some(bits),
                "the shared memory a wgmma group reads (window address {w:#x}) was overwritten before the wait that completes the group: \
                 on a GPU the group may still be reading it. Release a stage only after wgmma::wait_n* covers the groups that read it"
            );
        }
    }
}

fn fields(d: u64, what: &str) -> Result<(u32, u32, u32), String> {
    let (start, lbo, sbo, base, swz) = desc_fields(d);
    if swz != 1 || base != 0 {
        return Err(format!(
            "{what} descriptor {d:#018x} has swizzle mode {swz} and base offset {base}: the emulator models the 128-byte swizzle (mode 1) with base offset 0"
        ));
    }
    Ok((start, lbo, sbo))
}

/// `setmaxnreg`'s books for one block: each warpgroup's registers per thread, and the
/// pool that decreases fill and increases draw from (as the hardware's per-CTA pool).
pub(crate) struct RegBooks {
    /// Registers per thread of each warpgroup.
    pub budget: Vec<u32>,
    /// Registers released by decreases and not yet taken.
    pub pool: u64,
    /// What each thread started with.
    pub entry: u32,
}

impl RegBooks {
    /// A block of `threads` threads launched with `min_blocks` blocks per SM in its
    /// launch bounds (0: none): each thread starts with what ptxas gives it, 64 K
    /// registers over the threads of that many blocks, rounded down to a multiple of
    /// 8 (at most 256).
    pub(crate) fn new(threads: usize, min_blocks: u32) -> Self {
        let all = (threads * min_blocks.max(1) as usize).max(1);
        let entry = ((65536 / all) as u32 / 8 * 8).min(256);
        RegBooks {
            budget: vec![entry; threads.div_ceil(128)],
            pool: 0,
            entry,
        }
    }
}

/// An error of warpgroup `wg`'s collective, naming its warps.
fn wg_error(kernel: &'static str, bid: Dim3, wg: usize, detail: String) -> EmuError {
    EmuError::ShuffleDivergence {
        kernel,
        block: bid,
        warp: 4 * wg as u32,
        detail: format!(
            "warpgroup {wg} (warps {}..{}): {detail}",
            4 * wg,
            4 * wg + 3
        ),
    }
}

/// Warpgroup `wg`'s threads once a collective (`what`, e.g. `"wgmma"`) may complete:
/// `None` while none of them waits at it (`at`) or one may still arrive (running,
/// or in a wait it may leave). A partial warpgroup waiting at it is an error.
fn wg_gathered(
    kernel: &'static str,
    bid: Dim3,
    state: &[State],
    wg: usize,
    what: &str,
    at: impl Fn(&State) -> bool,
) -> Result<Option<std::ops::Range<usize>>, EmuError> {
    let threads = wg * 128..((wg + 1) * 128).min(state.len());
    if !threads.clone().any(|t| at(&state[t])) {
        return Ok(None);
    }
    if threads.len() < 128 {
        return Err(wg_error(
            kernel,
            bid,
            wg,
            format!(
                "a {what} in a partial warpgroup of {} threads; blocks that use {what} need a multiple of 128 threads",
                threads.len()
            ),
        ));
    }
    let pending = threads.clone().any(|t| {
        matches!(
            state[t],
            State::MbarWait(..) | State::FlagWait(..) | State::Run(_)
        )
    });
    Ok((!pending).then_some(threads))
}

/// The error for thread `t` of warpgroup `wg` (first thread `first`), in `state`
/// instead of at the collective `what` the others wait at.
fn wg_absent(
    kernel: &'static str,
    bid: Dim3,
    ctxs: &[Ctx],
    (wg, first, t): (usize, usize, usize),
    state: State,
    what: &str,
) -> EmuError {
    let why = match state {
        State::Done => "has exited",
        State::Barrier => "waits at sync_threads()",
        _ => "waits elsewhere",
    };
    wg_error(
        kernel,
        bid,
        wg,
        format!(
            "{what} was not reached by thread {} (warpgroup thread {}), which {why}; all 128 threads must execute it, converged",
            super::d(ctxs[t].tid),
            t - first
        ),
    )
}

/// Completes the `setmaxnreg`s whose warpgroup is all there (and, for an increase,
/// whose registers the pool holds): the warpgroup's budget changes and its threads
/// run on. Errors: a partial warpgroup, threads that disagree or are elsewhere, an
/// increase that lowers or a decrease that raises.
pub(crate) fn complete_setmaxnreg(
    kernel: &'static str,
    bid: Dim3,
    ctxs: &[Ctx],
    state: &mut [State],
    books: &mut RegBooks,
) -> Result<bool, EmuError> {
    let mut progressed = false;
    for wg in 0..state.len().div_ceil(128) {
        let at = |s: &State| matches!(s, State::SetMaxNreg(..));
        let Some(threads) = wg_gathered(kernel, bid, state, wg, "setmaxnreg", at)? else {
            continue;
        };
        let err = |detail: String| wg_error(kernel, bid, wg, detail);
        let Some(State::SetMaxNreg(regs, inc)) = threads.clone().map(|t| state[t]).find(at) else {
            unreachable!()
        };
        let name = if inc { "inc" } else { "dec" };
        for t in threads.clone() {
            match state[t] {
                State::SetMaxNreg(r, i) if (r, i) == (regs, inc) => {}
                State::SetMaxNreg(r, i) => {
                    return Err(err(format!(
                        "threads of one warpgroup reached different setmaxnreg (.{name} to {regs} and .{} to {r}, thread {}): all 128 execute the same one, converged",
                        if i { "inc" } else { "dec" },
                        super::d(ctxs[t].tid)
                    )))
                }
                other => {
                    let what = format!("setmaxnreg.{name}");
                    let at = (wg, threads.start, t);
                    return Err(wg_absent(kernel, bid, ctxs, at, other, &what));
                }
            }
        }
        let cur = books.budget[wg];
        if (inc && regs < cur) || (!inc && regs > cur) {
            return Err(err(format!(
                "setmaxnreg.{name} to {regs} registers a thread, but the warpgroup holds {cur}: .inc must not lower the budget, nor .dec raise it"
            )));
        }
        if inc {
            let need = 128 * (regs - cur) as u64;
            if books.pool < need {
                // Waits for other warpgroups' decreases (a hang if none comes).
                continue;
            }
            books.pool -= need;
        } else {
            books.pool += 128 * (cur - regs) as u64;
        }
        books.budget[wg] = regs;
        threads.for_each(|t| state[t] = State::Run(0));
        progressed = true;
    }
    Ok(progressed)
}

/// Completes every warpgroup whose 128 threads all wait at a wgmma region.
pub(crate) fn complete_wgmma(
    kernel: &'static str,
    bid: Dim3,
    ctxs: &[Ctx],
    state: &mut [State],
) -> Result<bool, EmuError> {
    let mut progressed = false;
    for wg in 0..state.len().div_ceil(128) {
        let at = |s: &State| matches!(s, State::Wgmma(_));
        let Some(threads) = wg_gathered(kernel, bid, state, wg, "wgmma", at)? else {
            continue;
        };
        let err = |detail: String| wg_error(kernel, bid, wg, detail);
        let first = threads.start;
        let Some(State::Wgmma(op0)) = threads.clone().map(|t| state[t]).find(at) else {
            unreachable!()
        };
        for t in threads.clone() {
            match state[t] {
                State::Wgmma(op) if WgmmaOp { acc: 0, ..op } == WgmmaOp { acc: 0, ..op0 } => {}
                State::Wgmma(op) => {
                    return Err(err(format!(
                        "threads of one warpgroup reached different wgmma regions ({op0:?} and {op:?}, thread {})",
                        super::d(ctxs[t].tid)
                    )))
                }
                other => {
                    let at = (wg, first, t);
                    return Err(wg_absent(kernel, bid, ctxs, at, other, "a wgmma"));
                }
            }
        }
        let acc_of = |t: usize| match state[first + t] {
            State::Wgmma(op) => op.acc,
            _ => unreachable!(),
        };
        let half = op0.n as usize / 2;
        // Groups in flight: their running sums are the input, and the kernel must have
        // passed the poison back untouched.
        for t in 0..128 {
            let mut w = ctxs[first + t].wg_async.borrow_mut();
            if let Some(sums) = w.sums.take() {
                // SAFETY: the thread's accumulator array of n / 2 floats; it is suspended.
                let a = unsafe { std::slice::from_raw_parts_mut(acc_of(t) as *mut f32, half) };
                if sums.len() != half || a.iter().any(|v| v.to_bits() != ACC_POISON) {
                    return Err(err(format!(
                        "thread {} passed accumulators to a wgmma region that are not the ones the group in flight returned \
                         (written, or another tile's): leave them untouched until wgmma::wait_n*::<0>",
                        super::d(ctxs[first + t].tid)
                    )));
                }
                a.copy_from_slice(&sums);
            }
        }
        let reads = wgmma(&ctxs[first], &op0, acc_of).map_err(err)?;
        let hop = &mem(&ctxs[first]).hopper;
        let id = hop.next_group.get();
        if op0.asynchronous {
            hop.next_group.set(id + 1);
            let lo = reads.iter().map(|r| r.0).min().unwrap_or(0);
            let hi = reads.iter().map(|r| r.0 + r.2 as u32).max().unwrap_or(0);
            hop.inflight.borrow_mut().push((id, lo, hi));
        }
        for t in 0..128 {
            let mut w = ctxs[first + t].wg_async.borrow_mut();
            if op0.asynchronous {
                // SAFETY: as above.
                let a = unsafe { std::slice::from_raw_parts_mut(acc_of(t) as *mut f32, half) };
                w.sums = Some(a.to_vec());
                a.iter_mut().for_each(|v| *v = f32::from_bits(ACC_POISON));
                w.in_flight += 1;
                if t == 0 {
                    w.groups.push_back((id, reads.clone()));
                }
            } else {
                // The region waited for every group (wait_group 0).
                w.in_flight = 0;
                let older: Vec<_> = w.groups.drain(..).collect();
                drop(w);
                for (gid, g) in older {
                    ctxs[first + t].check_operands(&g);
                    hop.inflight.borrow_mut().retain(|x| x.0 != gid);
                }
            }
        }
        for t in threads {
            state[t] = State::Run(0);
        }
        progressed = true;
    }
    Ok(progressed)
}

/// Adds the region's product into every thread's accumulators; the operand elements
/// it read.
fn wgmma(ctx: &Ctx, op: &WgmmaOp, acc_of: impl Fn(usize) -> usize) -> Result<Vec<Operand>, String> {
    let reads = std::cell::RefCell::new(Vec::new());
    let n = op.n as usize;
    let (k, eb) = match op.kind {
        MmaKind::Tf32 => (8usize, 4usize),
        _ => (16, 2),
    };
    if op.kind == MmaKind::Tf32 && op.trans_b {
        return Err(
            "a tf32 wgmma with a transposed (N-major) B: tf32 operands must be K-major".into(),
        );
    }
    let read = |w: u32, what: &str| -> Result<f64, String> {
        let p = ctx
            .window_ptr(w, eb)
            .ok_or_else(|| format!("{what} operand byte at shared window address {w:#x} is outside the block's dynamic shared memory (check the descriptor)"))?;
        // SAFETY: inside the block's dynamic shared memory (checked).
        reads
            .borrow_mut()
            .push((w, unsafe { read_bits(p, eb as u8) }, eb as u8));
        // SAFETY: as above.
        let v = unsafe {
            match eb {
                2 => {
                    let h = (p as *const u16).read_unaligned();
                    if op.kind == MmaKind::Bf16 {
                        simt_std::convert::bf16_to_f32(h)
                    } else {
                        simt_std::convert::f16_to_f32(h)
                    }
                }
                // The tensor cores read the 19 high bits of a tf32 operand.
                _ => f32::from_bits((p as *const u32).read_unaligned() & !0x1fff),
            }
        };
        Ok(v as f64)
    };
    let mut d = vec![0f64; 64 * n];
    for t in 0..128usize {
        let acc = acc_of(t) as *const f32;
        for i in 0..n / 2 {
            let (r, c) = acc_coords(t as u32, i as u32);
            // SAFETY: the thread's accumulator array of n / 2 floats, alive while it waits.
            d[r as usize * n + c as usize] = unsafe { *acc.add(i) } as f64;
        }
    }
    for s in 0..4 {
        let (sa, _, sbo_a) = fields(op.a[s], "A")?;
        let (sb, lbo_b, sbo_b) = fields(op.b[s], "B")?;
        // A: K-major, 64 rows: row r at atom r / 8 (stride offset apart), row r % 8 of it.
        let mut a = vec![0f64; 64 * k];
        for r in 0..64u32 {
            for kk in 0..k as u32 {
                let lin = sa + (r / 8) * sbo_a + (r % 8) * 128 + kk * eb as u32;
                a[r as usize * k + kk as usize] = read(swizzle_128b(lin), "A")?;
            }
        }
        let mut b = vec![0f64; k * n];
        for kk in 0..k as u32 {
            for c in 0..n as u32 {
                let lin = if op.trans_b {
                    // N-major: 64 columns per 128-byte row, 8 k-rows per atom (stride
                    // offset apart along K), the next 64 columns a leading offset away.
                    sb + (c / 64) * lbo_b + (kk / 8) * sbo_b + (kk % 8) * 128 + (c % 64) * eb as u32
                } else {
                    // K-major ([n][k]): like A, with N as the rows.
                    sb + (c / 8) * sbo_b + (c % 8) * 128 + kk * eb as u32
                };
                b[kk as usize * n + c as usize] = read(swizzle_128b(lin), "B")?;
            }
        }
        for r in 0..64 {
            for c in 0..n {
                let mut s = 0f64;
                for kk in 0..k {
                    s += a[r * k + kk] * b[kk * n + c];
                }
                // The accumulator is f32 between K steps, as in the hardware.
                d[r * n + c] = (d[r * n + c] + s) as f32 as f64;
            }
        }
    }
    for t in 0..128usize {
        let acc = acc_of(t) as *mut f32;
        for i in 0..n / 2 {
            let (r, c) = acc_coords(t as u32, i as u32);
            // SAFETY: as above; the thread is suspended and its array is not borrowed elsewhere.
            unsafe { *acc.add(i) = d[r as usize * n + c as usize] as f32 };
        }
    }
    Ok(reads.into_inner())
}
