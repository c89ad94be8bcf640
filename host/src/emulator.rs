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
//! other than through atomics are a bug there and here.
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as AtOrd};
use std::sync::Mutex;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use kernels::emu::{self, Dim3, ShflMode, ThreadEnv};
use kernels::Kernel;

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
            _ => s.strip_prefix("random:").and_then(|n| n.parse().ok()).map(Order::Random),
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
}

impl Default for EmuConfig {
    /// `SIMT_EMU_ORDER` (default `inorder`), `SIMT_EMU_WORKERS` (default: all cores).
    fn default() -> Self {
        let order = std::env::var("SIMT_EMU_ORDER").ok().and_then(|s| Order::parse(&s)).unwrap_or(Order::InOrder);
        let workers = std::env::var("SIMT_EMU_WORKERS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
        EmuConfig { order, workers: workers.max(1), stack_bytes: 256 * 1024 }
    }
}

/// An emulated launch that went wrong, with where.
#[derive(Debug, Clone, PartialEq)]
pub enum EmuError {
    /// A barrier that not every thread of the block reached.
    BarrierDivergence { kernel: &'static str, block: Dim3, waiting: Dim3, other: Dim3, other_state: &'static str },
    /// A warp shuffle that not every lane of the warp reached.
    ShuffleDivergence { kernel: &'static str, block: Dim3, warp: u32, detail: String },
    /// The kernel panicked (an assertion in the device library, e.g. a misaligned vector access).
    Panic { kernel: &'static str, block: Dim3, thread: Dim3, message: String },
    /// Could not allocate emulator resources.
    Resources(String),
}

fn d(v: Dim3) -> String {
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
            EmuError::ShuffleDivergence { kernel, block, warp, detail } => {
                write!(f, "kernel `{kernel}`, block {}, warp {warp}: {detail}", d(*block))
            }
            EmuError::Panic { kernel, block, thread, message } => {
                write!(f, "kernel `{kernel}` panicked in block {}, thread {}: {message}", d(*block), d(*thread))
            }
            EmuError::Resources(m) => write!(f, "emulator: {m}"),
        }
    }
}

impl std::error::Error for EmuError {}

/// What a suspended thread waits for.
#[derive(Clone, Copy, Debug)]
enum Event {
    Barrier,
    Shfl(ShflMode, u32, u32),
}

#[derive(Clone, Copy, Debug)]
enum State {
    Run(u32),
    Barrier,
    Shfl(ShflMode, u32, u32),
    Done,
}

/// A block's shared memory.
struct BlockMem {
    statics: RefCell<Vec<(usize, usize, Box<[u128]>)>>,
    dynamic: Box<[u128]>,
    dynamic_bytes: usize,
}

const POISON: u128 = u128::MAX; // 0xFF bytes: NaN as f32

impl BlockMem {
    fn new(dynamic_bytes: usize) -> Self {
        BlockMem { statics: RefCell::new(Vec::new()), dynamic: vec![POISON; dynamic_bytes.div_ceil(16)].into_boxed_slice(), dynamic_bytes }
    }
}

/// One emulated thread's view of the launch.
struct Ctx {
    tid: Dim3,
    bid: Dim3,
    bdim: Dim3,
    gdim: Dim3,
    yielder: Cell<*const Yielder<u32, Event>>,
    mem: *const BlockMem,
    /// Async copies issued but not committed, and committed groups, oldest first.
    copies: RefCell<(Vec<AsyncCopy>, VecDeque<Vec<AsyncCopy>>)>,
}

/// One `cp.async`: performed when a `wait` covers its group.
struct AsyncCopy {
    dst: *mut u8,
    src: *const u8,
    bytes: usize,
    src_bytes: usize,
}

impl Ctx {
    fn suspend(&self, e: Event) -> u32 {
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
    fn static_shared(&self, key: usize, bytes: usize) -> *mut u8 {
        // SAFETY: the block memory outlives every coroutine of the block.
        let mem = unsafe { &*self.mem };
        let mut st = mem.statics.borrow_mut();
        if let Some((_, b, buf)) = st.iter().find(|(k, _, _)| *k == key) {
            assert_eq!(*b, bytes, "one shared array declared with two sizes");
            return buf.as_ptr() as *mut u8;
        }
        let buf = vec![POISON; bytes.div_ceil(16)].into_boxed_slice();
        let p = buf.as_ptr() as *mut u8;
        st.push((key, bytes, buf));
        p
    }
    fn dynamic_shared(&self) -> (*mut u8, usize) {
        // SAFETY: as above.
        let mem = unsafe { &*self.mem };
        (mem.dynamic.as_ptr() as *mut u8, mem.dynamic_bytes)
    }
    fn copy_async(&self, dst: *mut u8, src: *const u8, bytes: usize, src_bytes: usize) {
        self.copies.borrow_mut().0.push(AsyncCopy { dst, src, bytes, src_bytes });
    }
    fn copy_commit(&self) {
        let mut c = self.copies.borrow_mut();
        let group = std::mem::take(&mut c.0);
        c.1.push_back(group);
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

/// Kernel arguments moved to worker threads.
#[derive(Clone, Copy)]
struct SendArgs<A>(A);
// SAFETY: the arguments are raw device pointers and scalars; the launch's caller
// guarantees (launch's `# Safety`) that the kernel may access them from any thread,
// as it would from any SM of a GPU.
unsafe impl<A> Send for SendArgs<A> {}
// SAFETY: as above.
unsafe impl<A> Sync for SendArgs<A> {}

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

fn unlinear(i: u32, dim: Dim3) -> Dim3 {
    Dim3 { x: i % dim.x, y: (i / dim.x) % dim.y, z: i / (dim.x * dim.y) }
}

/// Stacks kept for reuse by later launches (all workers together).
static STACKS: Mutex<Vec<DefaultStack>> = Mutex::new(Vec::new());
const MAX_POOLED_STACKS: usize = 4096;

fn block_threads(b: Dim3) -> usize {
    (b.x * b.y * b.z) as usize
}

/// Runs one launch of `K` on the emulator and returns when every block finished.
///
/// # Safety
/// The arguments satisfy the kernel's `# Safety` contract (pointers valid for what
/// the kernel accesses, with this grid and block), as for a GPU launch.
pub unsafe fn run<K: Kernel>(grid: Dim3, block: Dim3, shared_bytes: u32, args: K::Args, cfg: &EmuConfig) -> Result<(), EmuError> {
    let blocks = grid.x as usize * grid.y as usize * grid.z as usize;
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let first_err: Mutex<Option<EmuError>> = Mutex::new(None);
    let args = SendArgs(args);
    let workers = cfg.workers.min(blocks).max(1);
    let work = || {
        // Coroutine stacks are mmap'd; reuse them across launches (a fresh mmap per
        // emulated thread costs ~30 us, more than most kernels' work).
        let mut pool: Vec<DefaultStack> = {
            let mut g = STACKS.lock().unwrap();
            let keep = g.len().saturating_sub(block_threads(block));
            g.split_off(keep)
        };
        loop {
            if stop.load(AtOrd::Relaxed) {
                break;
            }
            let b = next.fetch_add(1, AtOrd::Relaxed);
            if b >= blocks {
                break;
            }
            let bid = Dim3 { x: (b % grid.x as usize) as u32, y: ((b / grid.x as usize) % grid.y as usize) as u32, z: (b / (grid.x as usize * grid.y as usize)) as u32 };
            let a = args;
            // SAFETY: forwarded from this function's contract.
            if let Err(e) = unsafe { run_block::<K>(grid, block, bid, b as u64, shared_bytes, a, cfg, &mut pool) } {
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

/// Clears the thread-local environment when dropped (also on unwinding).
struct EnvGuard;
impl Drop for EnvGuard {
    fn drop(&mut self) {
        // SAFETY: clearing never dangles.
        unsafe { emu::set_env(None) };
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn run_block<K: Kernel>(
    grid: Dim3,
    bdim: Dim3,
    bid: Dim3,
    block_linear: u64,
    shared_bytes: u32,
    args: SendArgs<K::Args>,
    cfg: &EmuConfig,
    pool: &mut Vec<DefaultStack>,
) -> Result<(), EmuError> {
    let n = (bdim.x * bdim.y * bdim.z) as usize;
    let mem = BlockMem::new(shared_bytes as usize);
    let ctxs: Box<[Ctx]> = (0..n as u32)
        .map(|i| Ctx {
            tid: unlinear(i, bdim),
            bid,
            bdim,
            gdim: grid,
            yielder: Cell::new(std::ptr::null()),
            mem: &mem,
            copies: RefCell::new((Vec::new(), VecDeque::new())),
        })
        .collect();
    let mut cos: Vec<Option<Coroutine<u32, Event, (), DefaultStack>>> = Vec::with_capacity(n);
    for ctx in ctxs.iter() {
        let stack = match pool.pop() {
            Some(s) => s,
            None => DefaultStack::new(cfg.stack_bytes).map_err(|e| EmuError::Resources(format!("stack allocation failed: {e}")))?,
        };
        let ctxp = ctx as *const Ctx as usize;
        let a = args;
        cos.push(Some(Coroutine::with_stack(stack, move |y: &Yielder<u32, Event>, _: u32| {
            let a = a;
            // SAFETY: `ctxs` outlives the coroutines (dropped after `cos`).
            unsafe { (*(ctxp as *const Ctx)).yielder.set(y as *const _) };
            // SAFETY: launch contract, forwarded.
            unsafe { K::run(a.0) }
        })));
    }
    let mut state = vec![State::Run(0); n];
    let mut order: Vec<usize> = (0..n).collect();
    if cfg.order == Order::Reversed {
        order.reverse();
    }
    let mut rng = match cfg.order {
        Order::Random(s) => Some(Rng(s ^ block_linear.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)),
        _ => None,
    };
    let _guard = EnvGuard;
    let kernel = K::NAME;
    loop {
        if let Some(r) = rng.as_mut() {
            for i in (1..n).rev() {
                let j = (r.next() % (i as u64 + 1)) as usize;
                order.swap(i, j);
            }
        }
        // Run every runnable thread to its next synchronisation point.
        for &t in &order {
            let State::Run(input) = state[t] else { continue };
            let env: *const (dyn ThreadEnv + 'static) = &ctxs[t] as &dyn ThreadEnv as *const _;
            // SAFETY: ctxs[t] lives until after the coroutines; cleared by `_guard`.
            unsafe { emu::set_env(Some(env)) };
            let co = cos[t].as_mut().unwrap();
            match catch_unwind(AssertUnwindSafe(|| co.resume(input))) {
                Ok(CoroutineResult::Yield(Event::Barrier)) => state[t] = State::Barrier,
                Ok(CoroutineResult::Yield(Event::Shfl(m, v, a))) => state[t] = State::Shfl(m, v, a),
                Ok(CoroutineResult::Return(())) => {
                    state[t] = State::Done;
                    pool.push(cos[t].take().unwrap().into_stack());
                }
                Err(p) => {
                    let message = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "non-string panic".into());
                    return Err(EmuError::Panic { kernel, block: bid, thread: ctxs[t].tid, message });
                }
            }
        }
        if state.iter().all(|s| matches!(s, State::Done)) {
            return Ok(());
        }
        // Warp shuffles whose 32 lanes are all there.
        let mut progressed = false;
        for w in 0..n.div_ceil(32) {
            let lanes = w * 32..((w + 1) * 32).min(n);
            let waiting = lanes.clone().filter(|&l| matches!(state[l], State::Shfl(..))).count();
            if waiting == 0 {
                continue;
            }
            let div = |detail: String| EmuError::ShuffleDivergence { kernel, block: bid, warp: w as u32, detail };
            if lanes.len() < 32 {
                return Err(div(format!(
                    "a shuffle in a partial warp of {} lanes; blocks that use shuffles need a multiple of 32 threads",
                    lanes.len()
                )));
            }
            if waiting < 32 {
                let l = lanes.clone().find(|&l| !matches!(state[l], State::Shfl(..))).unwrap();
                let what = if matches!(state[l], State::Done) { "has exited" } else { "waits at sync_threads()" };
                return Err(div(format!("a full-warp shuffle was not reached by lane {} (thread {}), which {what}", l % 32, d(ctxs[l].tid))));
            }
            let mut vals = [0u32; 32];
            let mut argv = [0u32; 32];
            let mut mode0 = None;
            for (i, l) in lanes.clone().enumerate() {
                let State::Shfl(m, v, a) = state[l] else { unreachable!() };
                if *mode0.get_or_insert(m) != m {
                    return Err(div(format!("lanes of one warp executed different shuffles ({:?} and {m:?})", mode0.unwrap())));
                }
                vals[i] = v;
                argv[i] = a;
            }
            let mode = mode0.unwrap();
            for (i, l) in lanes.enumerate() {
                let a = argv[i];
                let src = match mode {
                    ShflMode::Xor => (i as u32 ^ a) as usize,
                    ShflMode::Down => i + a as usize,
                    ShflMode::Up => (i as u32).checked_sub(a).map(|s| s as usize).unwrap_or(usize::MAX),
                    ShflMode::Idx => (a & 31) as usize,
                };
                state[l] = State::Run(if src < 32 { vals[src] } else { vals[i] });
            }
            progressed = true;
        }
        if progressed {
            continue;
        }
        // The barrier.
        let at_barrier = state.iter().filter(|s| matches!(s, State::Barrier)).count();
        if at_barrier == n {
            state.iter_mut().for_each(|s| *s = State::Run(0));
            continue;
        }
        let waiting = state.iter().position(|s| matches!(s, State::Barrier)).unwrap();
        let other = state.iter().position(|s| !matches!(s, State::Barrier)).unwrap();
        let other_state = if matches!(state[other], State::Done) { "has exited without reaching it" } else { "waits at a warp shuffle" };
        return Err(EmuError::BarrierDivergence { kernel, block: bid, waiting: ctxs[waiting].tid, other: ctxs[other].tid, other_state });
    }
}
