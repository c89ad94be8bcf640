//! The CPU SIMT emulator: runs the kernels' own source on the host with GPU semantics.
//!
//! Every GPU thread of a block is a stackful coroutine (`corosensei`) on one OS
//! thread; blocks are spread over a few OS worker threads. A thread runs until it
//! reaches a *synchronisation point* and suspends there:
//!
//! * a **barrier** (`sync_threads`) is released only when every thread of the block
//!   waits at it. If some thread has instead exited (an early `return`) or waits at
//!   a shuffle, the launch fails with [`EmuError::BarrierDivergence`], naming the
//!   kernel, the block and both threads: on a GPU this is a hang or garbage.
//! * a **warp shuffle** completes when all 32 lanes of the warp have reached one,
//!   exchanging values exactly as `shfl.sync` does (xor/down/up/idx, with the PTX
//!   clamping rules). A shuffle that not every lane reaches, or in a partial warp,
//!   is [`EmuError::ShuffleDivergence`].
//!
//! Between synchronisation points the threads of a block run one after another in
//! an [`Order`]: in order, reversed, or seeded random. A kernel that is missing a
//! barrier reads shared memory before another thread wrote it under at least one
//! order, so tests run under several. Shared memory starts filled with `0xFF` bytes
//! (NaN as `f32`), so reading unwritten shared memory shows in the output.
//!
//! Blocks run concurrently on the workers, as on a GPU: blocks that communicate
//! other than through atomics and [flags](simt_std::flag) are a bug there and here.
//! A cooperative launch (blocks that wait on each other's flags) runs every block
//! at once, one worker each; the emulated device holds one block per worker. The
//! blocks of a [cluster](simt_std::cluster) run together on one worker, their
//! threads scheduled as one set: a block barrier waits for its block, a cluster
//! barrier for every thread of the cluster.
//!
//! The parts: [`scheduler`] runs a block's coroutines between synchronisation
//! points and releases barriers; [`warp`] completes warp collectives (shuffles);
//! [`memory`] is each block's shared memory, the per-thread context the device
//! library talks to, and the `cp.async` queues.
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as AtOrd};
use std::sync::Mutex;

use corosensei::stack::DefaultStack;
use simt_std::Dim3;

use crate::launch::EmuEntry;

pub(crate) mod fault;
mod hopper;
mod memory;
mod scheduler;
mod warp;

pub use hopper::TENSOR_MAP_MAGIC;

/// The order in which a block's runnable threads run between synchronisation points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Thread 0 first.
    InOrder,
    /// The last thread first.
    Reversed,
    /// A fresh seeded permutation before every pass.
    Random(u64),
}

impl Order {
    /// Parses `inorder`, `reversed`, `random` or `random:SEED`.
    pub fn parse(s: &str) -> Option<Order> {
        match s {
            "inorder" | "in-order" => Some(Order::InOrder),
            "reversed" | "reverse" => Some(Order::Reversed),
            "random" => Some(Order::Random(0x5eed)),
            _ => s
                .strip_prefix("random:")
                .and_then(|n| n.parse().ok())
                .map(Order::Random),
        }
    }
}

/// Emulator settings.
#[derive(Clone, Debug)]
pub struct EmuConfig {
    /// Thread order between synchronisation points.
    pub order: Order,
    /// OS threads running blocks concurrently.
    pub workers: usize,
    /// Stack bytes per emulated GPU thread.
    pub stack_bytes: usize,
    /// How long a block may wait for a [flag](simt_std::flag) while nothing in it
    /// moves before the launch fails with [`EmuError::Hang`].
    pub flag_timeout: std::time::Duration,
    /// Whether the device takes cooperative launches (default `true`). `false`
    /// refuses every one with
    /// [`SimtError::CooperativeRefused`](crate::SimtError::CooperativeRefused), as the
    /// driver does on a device shared through MPS, so that the ops' fallbacks can be
    /// tested.
    pub cooperative: bool,
}

impl Default for EmuConfig {
    /// `SIMT_EMU_ORDER` (default `inorder`), `SIMT_EMU_WORKERS` (default: all cores),
    /// `SIMT_EMU_FLAG_TIMEOUT_S` (default 30 seconds); cooperative launches taken.
    fn default() -> Self {
        let order = std::env::var("SIMT_EMU_ORDER")
            .ok()
            .and_then(|s| Order::parse(&s))
            .unwrap_or(Order::InOrder);
        let workers = std::env::var("SIMT_EMU_WORKERS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(1)
            });
        EmuConfig {
            order,
            workers: workers.max(1),
            stack_bytes: 256 * 1024,
            flag_timeout: std::time::Duration::from_secs_f64(
                std::env::var("SIMT_EMU_FLAG_TIMEOUT_S")
                    .ok()
                    .and_then(|s| s.parse::<f64>().ok())
                    .unwrap_or(30.0)
                    .max(0.001),
            ),
            cooperative: true,
        }
    }
}

/// An emulated launch that went wrong, with where.
#[derive(Debug, Clone, PartialEq)]
pub enum EmuError {
    /// A barrier that not every thread of the block reached.
    BarrierDivergence {
        kernel: &'static str,
        block: Dim3,
        waiting: Dim3,
        other: Dim3,
        other_state: &'static str,
    },
    /// A warp shuffle that not every lane of the warp reached.
    ShuffleDivergence {
        kernel: &'static str,
        block: Dim3,
        warp: u32,
        detail: String,
    },
    /// The kernel panicked (an assertion in the device library, e.g. a misaligned vector access).
    Panic {
        kernel: &'static str,
        block: Dim3,
        thread: Dim3,
        message: String,
    },
    /// Threads wait (on mbarriers, a barrier) and none can make progress: a hang on
    /// a GPU.
    Hang {
        kernel: &'static str,
        block: Dim3,
        thread: Dim3,
        detail: String,
    },
    /// A thread accessed memory outside every buffer (caught by a guard page, see
    /// [`fault`](self)), or overflowed its stack.
    MemoryFault {
        kernel: &'static str,
        block: Dim3,
        thread: Dim3,
        address: u64,
        detail: String,
    },
    /// A write just outside a buffer, found after the launch (the thread is unknown).
    OutOfBounds {
        kernel: &'static str,
        detail: String,
    },
    /// A cluster barrier (`cluster::sync`) that not every thread of the cluster
    /// reached.
    ClusterDivergence {
        kernel: &'static str,
        block: Dim3,
        waiting: Dim3,
        other_block: Dim3,
        other: Dim3,
        other_state: &'static str,
    },
    /// Could not allocate emulator resources.
    Resources(String),
}

pub(crate) fn d(v: Dim3) -> String {
    format!("({}, {}, {})", v.x, v.y, v.z)
}

impl fmt::Display for EmuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmuError::BarrierDivergence { kernel, block, waiting, other, other_state } => write!(
                f,
                "kernel `{kernel}`, block {}: thread {} waits at sync_threads() but thread {} {other_state}; \
                 every thread of a block must reach the same barrier (check early returns and branches around it)",
                d(*block),
                d(*waiting),
                d(*other)
            ),
            EmuError::ClusterDivergence { kernel, block, waiting, other_block, other, other_state } => write!(
                f,
                "kernel `{kernel}`: thread {} of block {} waits at cluster::sync() but thread {} of block {} {other_state}; \
                 every thread of every block of a cluster must reach the same cluster barrier (check early returns and branches around it)",
                d(*waiting),
                d(*block),
                d(*other),
                d(*other_block)
            ),
            EmuError::ShuffleDivergence { kernel, block, warp, detail } => {
                write!(f, "kernel `{kernel}`, block {}, warp {warp}: {detail}", d(*block))
            }
            EmuError::Panic { kernel, block, thread, message } => {
                write!(f, "kernel `{kernel}` panicked in block {}, thread {}: {message}", d(*block), d(*thread))
            }
            EmuError::Hang { kernel, block, thread, detail } => write!(
                f,
                "kernel `{kernel}`, block {}: thread {} {detail}, and no thread of the block can make progress (on a GPU this hangs): check the arrival counts, the transaction bytes and the phase parities",
                d(*block),
                d(*thread)
            ),
            EmuError::MemoryFault { kernel, block, thread, address, detail } => write!(
                f,
                "kernel `{kernel}`, block {}, thread {}: invalid memory access at {address:#x}: {detail}. \
                 Check the kernel's index arithmetic and the launch against its `# Safety` contract \
                 (on a GPU this is an illegal-address error; compute-sanitizer's memcheck names the access)",
                d(*block),
                d(*thread)
            ),
            EmuError::OutOfBounds { kernel, detail } => write!(
                f,
                "kernel `{kernel}` {detail}: a write outside the buffer (found after the launch, so the thread is not known; \
                 run the launch with one block per grid to narrow it down, or compute-sanitizer's memcheck on a GPU)"
            ),
            EmuError::Resources(m) => write!(f, "emulator: {m}"),
        }
    }
}

impl std::error::Error for EmuError {}

/// Bytes of every emulator device buffer alive in this process (all `Gpu`s).
pub fn live_bytes() -> usize {
    fault::bytes_in_use_all()
}

/// Stacks kept for reuse by later launches (all workers together).
pub(crate) static STACKS: Mutex<Vec<DefaultStack>> = Mutex::new(Vec::new());
const MAX_POOLED_STACKS: usize = 4096;

pub(crate) fn block_threads(b: Dim3) -> usize {
    (b.x * b.y * b.z) as usize
}

/// One launch as the emulator sees it.
#[derive(Clone, Copy)]
pub(crate) struct EmuLaunch {
    pub kernel: &'static str,
    pub grid: Dim3,
    pub block: Dim3,
    pub shared_bytes: u32,
    pub entry: EmuEntry,
    /// Every block gets its own worker (its blocks wait on each other's flags).
    pub cooperative: bool,
    /// Blocks per cluster along x (1: none); a cluster's blocks run together on one
    /// worker.
    pub cluster: u32,
    /// Blocks per SM of the launch bounds (0: none), for `setmaxnreg`'s books.
    pub min_blocks: u32,
}

/// Kernel entry and arguments moved to worker threads.
#[derive(Clone, Copy)]
struct SendLaunch(EmuLaunch);
// SAFETY: the arguments are raw device pointers and scalars; the launch's caller
// guarantees (`Gpu::launch`'s `# Safety`) that the kernel may access them from any
// thread, as it would from any SM of a GPU; the tuple outlives the launch.
unsafe impl Send for SendLaunch {}
// SAFETY: as above.
unsafe impl Sync for SendLaunch {}

/// Runs one launch on the emulator and returns when every block finished.
///
/// # Safety
/// The arguments satisfy the kernel's `# Safety` contract (pointers valid for what
/// the kernel accesses, with this grid and block), as for a GPU launch, and
/// `launch.entry.args` points to the argument tuple for the whole call.
pub(crate) unsafe fn run(launch: EmuLaunch, cfg: &EmuConfig) -> Result<(), EmuError> {
    fault::install();
    let EmuLaunch { grid, block, .. } = launch;
    let blocks = grid.x as usize * grid.y as usize * grid.z as usize;
    // The host checked that grid.x is a multiple of the cluster, so cluster `c`'s
    // blocks are the consecutive linear indices `c·csize ..+csize`.
    let csize = launch.cluster.max(1) as usize;
    let units = blocks / csize;
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let first_err: Mutex<Option<EmuError>> = Mutex::new(None);
    let shared = SendLaunch(launch);
    // A cooperative launch has at most `workers` blocks (the host checks it against
    // `max_resident_blocks`), so each block runs on its own worker, all at once.
    let workers = if launch.cooperative {
        blocks
    } else {
        cfg.workers.min(units).max(1)
    };
    let work = || {
        // Coroutine stacks are mmap'd; reuse them across launches (a fresh mmap per
        // emulated thread costs ~30 us, more than most kernels' work).
        let mut pool: Vec<DefaultStack> = {
            let mut g = STACKS.lock().unwrap();
            let keep = g.len().saturating_sub(block_threads(block) * csize);
            g.split_off(keep)
        };
        loop {
            if stop.load(AtOrd::Relaxed) {
                break;
            }
            let u = next.fetch_add(1, AtOrd::Relaxed);
            if u >= units {
                break;
            }
            let l = shared;
            // SAFETY: forwarded from this function's contract.
            if let Err(e) =
                unsafe { scheduler::run_cluster(l.0, (u * csize) as u64, csize, cfg, &mut pool) }
            {
                stop.store(true, AtOrd::Relaxed);
                first_err.lock().unwrap().get_or_insert(e);
                break;
            }
        }
        let mut g = STACKS.lock().unwrap();
        if g.len() < MAX_POOLED_STACKS {
            g.append(&mut pool);
        }
    };
    if workers == 1 {
        work();
    } else {
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(work);
            }
        });
    }
    match first_err.into_inner().unwrap() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
