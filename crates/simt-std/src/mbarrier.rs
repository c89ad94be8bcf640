//! Memory barriers in shared memory (`mbarrier`, sm_80; transaction counts, sm_90).
//!
//! `sync_threads` makes a whole block wait for the whole block. A Hopper kernel
//! needs finer hand-offs: one producer thread starts a TMA copy of the next tile,
//! and the two consumer warpgroups must wait for *that copy*, not for each other;
//! later the consumers tell the producer that a stage may be refilled. An
//! `mbarrier` is an 8-byte object in shared memory that counts such events:
//!
//! * [`init`]`(bar, count)`: the barrier expects `count` arrivals per phase;
//! * [`arrive`]: one arrival;
//! * [`arrive_expect_tx`]`(bar, bytes)`: one arrival that also announces `bytes` of
//!   asynchronous transactions (a TMA copy names the barrier and subtracts its bytes
//!   from this count when it lands);
//! * [`wait`]`(bar, parity)`: blocks until the phase of that parity has completed.
//!
//! A phase completes when all `count` arrivals came **and** the transaction count is
//! back to zero; the barrier then flips to the next phase and expects `count`
//! arrivals again. Phases are told apart by their parity only (0, 1, 0, ...): a ring
//! of `S` stages walks stage `s = i % S` with parity `(i / S) % 2`. Waiting on the
//! parity of a phase that completed long ago returns at once, so a consumer that
//! gets the parity wrong runs ahead of its data.
//!
//! The emulator models exactly that: TMA copies land only when a thread waits on
//! their barrier's current phase, the destination holds NaN poison until then, and a
//! wait on the wrong parity returns at once, so the kernel reads poison. A barrier
//! used before [`init`], an arrival past the expected count, or a wait that can never
//! complete (every thread blocked) is an error naming the kernel, block and thread.
//!
//! Rules:
//! 1. One thread initialises each barrier, then [`fence_init`] and a
//!    [`sync_threads`](crate::thread::sync_threads) before any other thread or the
//!    TMA unit uses it.
//! 2. Each phase gets exactly `count` arrivals, and exactly as many transaction
//!    bytes as were announced.
//! 3. Barriers live in shared memory, 8-byte aligned, and are not reused for data.
//! 4. Let the issuing thread's warp be converged whenever it waits: all its lanes
//!    wait together, one lane issues between waits, and the warp reconverges
//!    ([`crate::warp::sync`]) before the next wait. Stage 6t of the lecture's matmul
//!    (warp 0 issues and multiplies) runs so on the H200 (2026-11-24, every test and
//!    compute-sanitizer clean). On the H100 (2026-11-22) two probes whose thread 0
//!    issued a TMA copy while lanes 1-31 of its warp waited for it hung, and they also
//!    hung with the issuing thread in a warpgroup of its own. The cause (found
//!    2026-12-08, when `softmax_row_bulk` hung the same way) was not the mbarrier:
//!    written as `if t == 0 { init } sync_threads(); if t == 0 { issue }`, the
//!    compiler copied the block barrier into both arms of the branch, so thread 0 met
//!    the block at a `bar.sync` of its own, undefined behaviour for an aligned
//!    barrier. Keep the initialisation and the first issue in one `if`, then one
//!    `sync_threads()`; that is not always enough (a later branch implied by the
//!    thread-0 condition, such as the probes' `t < 128`, lets the compiler split the
//!    barrier again), so `simt_builder::ptx::divergent_barriers` finds the shape in
//!    PTX and tests/ptx.rs runs it on every kernel. The emulator runs the source
//!    and cannot see it.
use crate::shared::Smem;

/// Initialises the barrier at `bar` to expect `count` arrivals per phase
/// (`mbarrier.init.shared::cta.b64`), in phase 0.
///
/// # Safety
/// `bar` is 8-byte aligned shared memory that no thread uses until after
/// [`fence_init`] and a barrier; `1 <= count < 2^20`.
#[inline(always)]
pub unsafe fn init(bar: Smem<u64>, count: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller's contract.
    unsafe {
        core::arch::asm!("mbarrier.init.shared::cta.b64 [{b}], {c};", b = in(reg32) bar.addr(), c = in(reg32) count, options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::env().mbar_init(bar.ptr() as *mut u8, count);
}

/// Makes this thread's barrier initialisations visible to the other threads and
/// to the asynchronous (TMA) proxy (`fence.mbarrier_init.release.cluster`). Follow it
/// with a block barrier.
#[inline(always)]
pub fn fence_init() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence; no operands.
    unsafe {
        core::arch::asm!("fence.mbarrier_init.release.cluster;", options(nostack))
    };
}

/// One arrival on `bar` (`mbarrier.arrive.shared::cta.b64`).
///
/// # Safety
/// `bar` is an initialised barrier of this block, and this phase still expects an
/// arrival.
#[inline(always)]
pub unsafe fn arrive(bar: Smem<u64>) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller's contract.
    unsafe {
        core::arch::asm!("mbarrier.arrive.shared::cta.b64 _, [{b}];", b = in(reg32) bar.addr(), options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::env().mbar_arrive(bar.ptr() as *mut u8, 0);
}

/// One arrival on the barrier at `bar`'s offset in block `rank` of this cluster
/// (`mapa` + `mbarrier.arrive.shared::cluster.b64`): how a consumer
/// tells a partner block's producer that a stage it multicasts into
/// ([`crate::tma::load_2d_multicast`]) is free again. `rank` may be this block's own.
///
/// The arrival has the default CTA-scope release semantics: it orders this thread's
/// memory accesses before it for the block only. A `.release.cluster` arrival would
/// order them for the whole cluster, and makes the thread wait for its earlier
/// global stores: on the H100 that cost stage 8 of the matmul 40% (2026-11-23). Use
/// this one to hand back a buffer whose reads are complete (a `wgmma` after its
/// wait, a TMA store after its read wait), not to publish data written with
/// ordinary stores.
///
/// The emulator checks what the hardware leaves undefined: the cluster passed its
/// first [`crate::cluster::sync`] (the partner's barriers are initialised), the
/// target block has not exited, and no block exits while a phase of one of its
/// barriers that another block arrived on (or multicast into) was waited for by
/// none of its threads: such an arrival may come after the block is gone on a GPU.
///
/// # Safety
/// As [`arrive`], for block `rank`'s barrier; `rank` is a rank of the cluster, which
/// passed a cluster barrier after the barrier's initialisation, and that block
/// waits for the phase this arrival completes before it exits.
#[inline(always)]
pub unsafe fn arrive_cluster(bar: Smem<u64>, rank: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller's contract.
    unsafe {
        core::arch::asm!(
            "{{ .reg .b32 ra; mapa.shared::cluster.u32 ra, {b}, {r}; mbarrier.arrive.shared::cluster.b64 _, [ra]; }}",
            b = in(reg32) bar.addr(), r = in(reg32) rank, options(nostack)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::env().mbar_arrive_remote(bar.ptr() as *mut u8, rank);
}

/// One arrival on `bar` that announces `bytes` of transactions to come in this phase
/// (`mbarrier.arrive.expect_tx.shared::cta.b64`): the phase completes only once TMA
/// copies naming this barrier have landed that many bytes.
///
/// # Safety
/// As [`arrive`]; the copies of this phase deliver exactly `bytes` (< 2^20).
#[inline(always)]
pub unsafe fn arrive_expect_tx(bar: Smem<u64>, bytes: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: caller's contract.
    unsafe {
        core::arch::asm!("mbarrier.arrive.expect_tx.shared::cta.b64 _, [{b}], {n};", b = in(reg32) bar.addr(), n = in(reg32) bytes, options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::env().mbar_arrive(bar.ptr() as *mut u8, bytes);
}

/// Blocks until the phase of parity `parity` (0 or 1) of `bar` has completed
/// (`mbarrier.try_wait.parity` in a loop; the hardware suspends the thread between
/// tries). Everything the phase's arrivals and copies wrote is then visible.
///
/// # Safety
/// `bar` is an initialised barrier of this block.
#[inline(always)]
pub unsafe fn wait(bar: Smem<u64>, parity: u32) {
    #[cfg(target_arch = "nvptx64")]
    loop {
        let done: u32;
        // SAFETY: caller's contract. The predicate lives inside the asm (nvptx asm has
        // no predicate register class).
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {ph}; selp.u32 {d}, 1, 0, p; }}",
                b = in(reg32) bar.addr(), ph = in(reg32) parity, d = out(reg32) done, options(nostack)
            )
        };
        if done != 0 {
            break;
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::env().mbar_wait(bar.ptr() as *mut u8, parity & 1);
}
