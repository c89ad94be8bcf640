//! The block scheduler: every thread of a block is a stackful coroutine; each runs
//! to its next synchronisation point in the configured order, then warp
//! collectives complete ([`super::warp`]) and, when every thread waits at it, the
//! barrier releases. A barrier that some thread cannot reach is an error naming
//! the kernel, the block and both threads.
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use simt_std::emu::{self, ThreadEnv};
use simt_std::Dim3;

use super::memory::{BlockMem, ClusterInfo, Ctx, Event, State};
use super::{hopper, warp, EmuConfig, EmuError, EmuLaunch, Order};
use crate::launch::EmuEntry;

/// The kernel entry moved into each coroutine.
#[derive(Clone, Copy)]
struct SendEntry(EmuEntry);
// SAFETY: see `SendLaunch` in the parent module: raw device pointers and scalars
// the launch contract lets every thread use.
unsafe impl Send for SendEntry {}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// The value of the global flag at `f` (acquire: the writes published with it are
/// visible to the thread resumed after it).
fn flag_value(f: usize) -> u32 {
    // SAFETY: `flag::wait_eq`'s contract: a valid, aligned global flag, accessed
    // atomically by every block during the launch.
    unsafe { AtomicU32::from_ptr(f as *mut u32) }.load(Ordering::Acquire)
}

/// Clears the thread-local environment when dropped (also on unwinding).
struct EnvGuard;
impl Drop for EnvGuard {
    fn drop(&mut self) {
        // SAFETY: clearing never dangles.
        unsafe { emu::set_env(None) };
    }
}

/// The 3-D index of linear index `linear` in `dim` (a thread in its block, a block
/// in its grid), x fastest.
fn unlinear(linear: u64, dim: Dim3) -> Dim3 {
    let (x, y) = (dim.x as u64, dim.y as u64);
    Dim3 {
        x: (linear % x) as u32,
        y: ((linear / x) % y) as u32,
        z: (linear / (x * y)) as u32,
    }
}

/// What another thread is doing, for a divergence error.
fn doing(s: &State) -> &'static str {
    match s {
        State::Done => "has exited without reaching it",
        State::Barrier => "waits at sync_threads()",
        State::ClusterBarrier => "waits at cluster::sync()",
        State::SetMaxNreg(..) => "waits at setmaxnreg",
        _ => "waits at a warp or warpgroup collective (shuffle, mma, ldmatrix, wgmma)",
    }
}

/// Runs one cluster of `csize` consecutive blocks (linear indices `first..`; one
/// block without clusters) to completion: the threads of all its blocks as
/// coroutines, scheduled together in `cfg.order` between synchronisation points.
///
/// # Safety
/// As [`run`](super::run).
pub(super) unsafe fn run_cluster(
    launch: EmuLaunch,
    first: u64,
    csize: usize,
    cfg: &EmuConfig,
    pool: &mut Vec<DefaultStack>,
) -> Result<(), EmuError> {
    let EmuLaunch {
        kernel,
        grid,
        block: bdim,
        shared_bytes,
        entry,
        min_blocks,
        ..
    } = launch;
    let per = (bdim.x * bdim.y * bdim.z) as usize;
    let n = per * csize;
    let mems: Box<[BlockMem]> = (0..csize)
        .map(|_| BlockMem::new(shared_bytes as usize))
        .collect();
    let cluster = ClusterInfo {
        mems: mems.iter().map(|m| m as *const BlockMem).collect(),
        bids: (0..csize as u64)
            .map(|b| unlinear(first + b, grid))
            .collect(),
        alive: (0..csize).map(|_| Cell::new(per)).collect(),
        epoch: Cell::new(0),
        touched: (0..csize).map(|_| Cell::new(None)).collect(),
    };
    let ctxs: Box<[Ctx]> = (0..n)
        .map(|i| Ctx {
            tid: unlinear((i % per) as u64, bdim),
            bid: cluster.bids[i / per],
            bdim,
            gdim: grid,
            yielder: Cell::new(std::ptr::null()),
            mem: &mems[i / per],
            rank: (i / per) as u32,
            cluster: &cluster,
            warp_out: Cell::new([0; 4]),
            copies: RefCell::new((Vec::new(), VecDeque::new())),
            bulk: RefCell::new((Vec::new(), VecDeque::new())),
            wg_async: Default::default(),
        })
        .collect();
    let mut cos: Vec<Option<Coroutine<u32, Event, (), DefaultStack>>> = Vec::with_capacity(n);
    for ctx in ctxs.iter() {
        let stack = match pool.pop() {
            Some(s) => s,
            None => DefaultStack::new(cfg.stack_bytes)
                .map_err(|e| EmuError::Resources(format!("stack allocation failed: {e}")))?,
        };
        let ctxp = ctx as *const Ctx as usize;
        let e = SendEntry(entry);
        cos.push(Some(Coroutine::with_stack(
            stack,
            move |y: &Yielder<u32, Event>, _: u32| {
                let e = e;
                // SAFETY: `ctxs` outlives the coroutines (dropped after `cos`).
                unsafe { (*(ctxp as *const Ctx)).yielder.set(y as *const _) };
                // SAFETY: launch contract, forwarded.
                unsafe { (e.0.run)(e.0.args) }
            },
        )));
    }
    let mut state = vec![State::Run(0); n];
    let mut books: Vec<hopper::RegBooks> = (0..csize)
        .map(|_| hopper::RegBooks::new(per, min_blocks))
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    if cfg.order == Order::Reversed {
        order.reverse();
    }
    let mut rng = match cfg.order {
        Order::Random(s) => Some(Rng(s ^ first.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)),
        _ => None,
    };
    let _guard = EnvGuard;
    let mut flag_since: Option<Instant> = None;
    loop {
        if let Some(r) = rng.as_mut() {
            for i in (1..n).rev() {
                let j = (r.next() % (i as u64 + 1)) as usize;
                order.swap(i, j);
            }
        }
        // Run every runnable thread to its next synchronisation point.
        for &t in &order {
            let State::Run(input) = state[t] else {
                continue;
            };
            let env: *const (dyn ThreadEnv + 'static) = &ctxs[t] as &dyn ThreadEnv as *const _;
            // SAFETY: ctxs[t] lives until after the coroutines; cleared by `_guard`.
            unsafe { emu::set_env(Some(env)) };
            let co = cos[t].as_mut().unwrap();
            super::fault::enter(co.trap_handler());
            let r = catch_unwind(AssertUnwindSafe(|| co.resume(input)));
            if let Some(f) = super::fault::leave() {
                let detail = match f.kind {
                    super::fault::FaultKind::StackOverflow => format!(
                        "the emulated thread's stack ({} bytes, EmuConfig::stack_bytes) overflowed: deep recursion or large local arrays",
                        cfg.stack_bytes
                    ),
                    super::fault::FaultKind::Access => super::fault::describe(f.addr),
                };
                return Err(EmuError::MemoryFault {
                    kernel,
                    block: ctxs[t].bid,
                    thread: ctxs[t].tid,
                    address: f.addr as u64,
                    detail,
                });
            }
            match r {
                Ok(CoroutineResult::Yield(Event::Barrier)) => state[t] = State::Barrier,
                Ok(CoroutineResult::Yield(Event::ClusterBarrier)) => {
                    state[t] = State::ClusterBarrier
                }
                Ok(CoroutineResult::Yield(Event::Shfl(m, v, a))) => state[t] = State::Shfl(m, v, a),
                Ok(CoroutineResult::Yield(Event::Warp(op))) => state[t] = State::Warp(op),
                Ok(CoroutineResult::Yield(Event::MbarWait(b, p))) => {
                    state[t] = State::MbarWait(b, p)
                }
                Ok(CoroutineResult::Yield(Event::Wgmma(op))) => state[t] = State::Wgmma(op),
                Ok(CoroutineResult::Yield(Event::FlagWait(f, v))) => {
                    state[t] = State::FlagWait(f, v)
                }
                Ok(CoroutineResult::Yield(Event::SetMaxNreg(r, i))) => {
                    state[t] = State::SetMaxNreg(r, i)
                }
                Ok(CoroutineResult::Return(())) => {
                    let open = ctxs[t].bulk_finish();
                    if open > 0 {
                        return Err(EmuError::Panic {
                            kernel,
                            block: ctxs[t].bid,
                            thread: ctxs[t].tid,
                            message: format!(
                                "exits with {open} TMA store(s) not waited for: the copy engine may still read the block's shared memory. \
                                 Commit them (tma::store_commit) and wait (tma::store_wait_read::<0> or store_wait::<0>) before the block ends"
                            ),
                        });
                    }
                    state[t] = State::Done;
                    let a = &cluster.alive[t / per];
                    a.set(a.get() - 1);
                    // The block's last thread: nobody may still be reading its shared
                    // memory, i.e. no remote access to it since its last cluster barrier.
                    if a.get() == 0 && cluster.touched[t / per].get() >= Some(cluster.epoch.get()) {
                        return Err(EmuError::Panic {
                            kernel,
                            block: ctxs[t].bid,
                            thread: ctxs[t].tid,
                            message: "the block exits while another block of its cluster accessed its shared memory after the last cluster::sync() \
                                      this block passed: on a GPU that memory may be gone before the access. End with cluster::sync() after the last remote access"
                                .into(),
                        });
                    }
                    if a.get() == 0 {
                        if let Some((bar, from, phase)) = mems[t / per].hopper.unobserved_remote() {
                            let w = (bar.wrapping_sub(mems[t / per].dynamic_range().0) as u32)
                                .wrapping_add(hopper::WINDOW_BASE);
                            return Err(EmuError::Panic {
                                kernel,
                                block: ctxs[t].bid,
                                thread: ctxs[t].tid,
                                message: format!(
                                    "the block exits, but phase {phase} of its mbarrier at shared window address {w:#x}, which block rank {from} of its cluster \
                                     arrived on or multicast into, was waited for by none of its threads: on a GPU that arrival may come after the block is gone. \
                                     Wait for every phase other blocks complete before exiting (a producer waits for each stage's last release)"
                                ),
                            });
                        }
                    }
                    pool.push(cos[t].take().unwrap().into_stack());
                }
                Err(p) => {
                    let message = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "non-string panic".into());
                    return Err(EmuError::Panic {
                        kernel,
                        block: ctxs[t].bid,
                        thread: ctxs[t].tid,
                        message,
                    });
                }
            }
        }
        if state.iter().all(|s| matches!(s, State::Done)) {
            return Ok(());
        }
        // Warp shuffles whose 32 lanes are all there, wgmma regions whose warpgroup is,
        // and mbarrier waits whose phase completed (landing its TMA copies).
        let mut progressed = false;
        for (t, s) in state.iter_mut().enumerate() {
            if let State::MbarWait(b, p) = *s {
                if mems[t / per].hopper.wait_ready(b, p) {
                    *s = State::Run(0);
                    progressed = true;
                }
            }
        }
        for s in state.iter_mut() {
            if let State::FlagWait(f, v) = *s {
                if flag_value(f) == v {
                    *s = State::Run(0);
                    progressed = true;
                }
            }
        }
        for (b, mem) in mems.iter().enumerate() {
            let r = b * per..(b + 1) * per;
            let bid = cluster.bids[b];
            progressed |= warp::complete_collectives(
                kernel,
                bid,
                &ctxs[r.clone()],
                mem,
                &mut state[r.clone()],
            )?;
            progressed |=
                hopper::complete_wgmma(kernel, bid, &ctxs[r.clone()], &mut state[r.clone()])?;
            progressed |= hopper::complete_setmaxnreg(
                kernel,
                bid,
                &ctxs[r.clone()],
                &mut state[r],
                &mut books[b],
            )?;
        }
        if progressed {
            flag_since = None;
            continue;
        }
        // Global flags are set by other blocks, running on other workers: poll them
        // until one comes or the wait has lasted `cfg.flag_timeout`.
        if let Some(t) = state.iter().position(|s| matches!(s, State::FlagWait(..))) {
            let since = *flag_since.get_or_insert_with(Instant::now);
            if since.elapsed() < cfg.flag_timeout {
                std::thread::sleep(Duration::from_micros(20));
                continue;
            }
            let State::FlagWait(f, v) = state[t] else {
                unreachable!()
            };
            return Err(EmuError::Hang {
                kernel,
                block: ctxs[t].bid,
                thread: ctxs[t].tid,
                detail: format!(
                    "waited {:.0} s for the flag at {f:#x} to hold {v} (it holds {}): the block that publishes it never ran or never published. \
                     Blocks that wait on each other need #[launch(cooperative = true)] and a grid of at most Gpu::max_resident_blocks; \
                     check the flag index and the epoch too",
                    since.elapsed().as_secs_f64(),
                    flag_value(f)
                ),
            });
        }
        // The block barriers, then the cluster barrier.
        let mut released = false;
        for b in 0..csize {
            let r = b * per..(b + 1) * per;
            if state[r.clone()].iter().all(|s| matches!(s, State::Barrier)) {
                state[r].iter_mut().for_each(|s| *s = State::Run(0));
                released = true;
            }
        }
        if state.iter().all(|s| matches!(s, State::ClusterBarrier)) {
            state.iter_mut().for_each(|s| *s = State::Run(0));
            cluster.epoch.set(cluster.epoch.get() + 1);
            released = true;
        }
        if released {
            flag_since = None;
            continue;
        }
        if let Some(t) = state
            .iter()
            .position(|s| matches!(s, State::SetMaxNreg(_, true)))
        {
            let State::SetMaxNreg(regs, _) = state[t] else {
                unreachable!()
            };
            let book = &books[t / per];
            let cur = book.budget[(t % per) / 128];
            return Err(EmuError::Hang {
                kernel,
                block: ctxs[t].bid,
                thread: ctxs[t].tid,
                detail: format!(
                    "waits in setmaxnreg.inc to {regs} registers a thread for {} registers the block's pool never gets (it holds {}): \
                     each of the {per} threads started with {} (64 K over the threads of {} block(s) per SM, rounded down to 8), and only \
                     decreases fill the pool; lower the increase, or give more back in another warpgroup's setmaxnreg.dec",
                    128 * (regs - cur) as u64,
                    book.pool,
                    book.entry,
                    min_blocks.max(1)
                ),
            });
        }
        if let Some(t) = state.iter().position(|s| matches!(s, State::MbarWait(..))) {
            let State::MbarWait(b, p) = state[t] else {
                unreachable!()
            };
            let mem = &mems[t / per];
            return Err(EmuError::Hang {
                kernel,
                block: ctxs[t].bid,
                thread: ctxs[t].tid,
                detail: format!(
                    "waits for the phase of parity {p} of the mbarrier at shared window address {:#x} ({})",
                    (b.wrapping_sub(mem.dynamic_range().0) as u32).wrapping_add(hopper::WINDOW_BASE),
                    mem.hopper.describe(b)
                ),
            });
        }
        if let Some(w) = state.iter().position(|s| matches!(s, State::Barrier)) {
            let b = w / per;
            let other = (b * per..(b + 1) * per)
                .find(|&t| !matches!(state[t], State::Barrier))
                .expect("a block whose every thread waits at the barrier was released above");
            return Err(EmuError::BarrierDivergence {
                kernel,
                block: ctxs[w].bid,
                waiting: ctxs[w].tid,
                other: ctxs[other].tid,
                other_state: doing(&state[other]),
            });
        }
        if let Some(w) = state
            .iter()
            .position(|s| matches!(s, State::ClusterBarrier))
        {
            let other = (0..n)
                .find(|&t| !matches!(state[t], State::ClusterBarrier))
                .expect("a cluster whose every thread waits at the barrier was released above");
            return Err(EmuError::ClusterDivergence {
                kernel,
                block: ctxs[w].bid,
                waiting: ctxs[w].tid,
                other_block: ctxs[other].bid,
                other: ctxs[other].tid,
                other_state: doing(&state[other]),
            });
        }
        let t = state
            .iter()
            .position(|s| !matches!(s, State::Done))
            .expect("not every thread is done");
        return Err(EmuError::Hang {
            kernel,
            block: ctxs[t].bid,
            thread: ctxs[t].tid,
            detail: format!("is stuck in {:?}", state[t]),
        });
    }
}
