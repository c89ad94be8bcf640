//! Memory faults in emulated kernels: an out-of-bounds access is an error naming the
//! kernel, the block and the thread, not a corrupted heap or a dead process.
//!
//! **Guarded device memory.** Every emulator buffer is its own mapping, placed so
//! that it *ends* where an inaccessible guard page begins, with a second guard page
//! before it:
//!
//! ```text
//! | guard (no access) | slack · · · buffer (bytes, rounded up to 256) | guard (no access) |
//!                            ^ ptr, 256-byte aligned, as cudaMalloc's
//! ```
//!
//! An access past the rounded end, or far enough before the start, touches a guard
//! page and faults at once. The slack (up to 255 bytes after the end, the rest of
//! the first page before the start) holds `0xFF` bytes: reads there see NaN, as the
//! rest of fresh device memory does, and after each launch the emulator checks that
//! the slack is untouched, so a write there is reported too (without the thread,
//! which is gone by then).
//!
//! **The trap.** On x86-64 Linux a `SIGSEGV`/`SIGBUS` handler looks at the thread
//! that faulted: if it was running an emulated GPU thread (a coroutine), the handler
//! records the address and makes that coroutine return at once
//! (`corosensei`'s trap handler); the scheduler then reports
//! [`EmuError::MemoryFault`](super::EmuError::MemoryFault). Any other fault goes to
//! the handler that was installed before (Rust's stack-overflow report, or the
//! default: the process ends, as it would have). A GPU reports the same bug as an
//! illegal-address error after the fact, with no thread; compute-sanitizer's
//! memcheck names it.
use std::collections::BTreeMap;
use std::sync::Mutex;

use super::EmuError;

/// Bytes of a page (the guard granule).
fn page() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// One guarded mapping.
#[derive(Clone, Copy, Debug)]
struct Mapping {
    /// Start of the whole mapping (the leading guard page).
    base: usize,
    /// Length of the whole mapping.
    len: usize,
    /// The buffer's address and size.
    ptr: usize,
    bytes: usize,
    /// The emulator backend that owns it (launches check only their own).
    owner: u64,
}

impl Mapping {
    /// The accessible range: the data pages between the guards.
    fn data(&self, page: usize) -> (usize, usize) {
        (self.base + page, self.base + self.len - page)
    }
}

/// Every live emulator buffer, by mapping start.
static MAPPINGS: Mutex<BTreeMap<usize, Mapping>> = Mutex::new(BTreeMap::new());

/// `bytes` (> 0) of device memory for emulator `owner`, filled with `0xFF`, between
/// guard pages; its address is 256-byte aligned.
pub(crate) fn alloc(bytes: usize, owner: u64) -> Result<usize, EmuError> {
    let page = page();
    let oom = |why: String| {
        EmuError::Resources(format!(
            "host allocation of {bytes} bytes for a device buffer failed ({why})"
        ))
    };
    let rounded = bytes
        .checked_next_multiple_of(256)
        .ok_or_else(|| oom("size overflow".into()))?;
    let data = rounded
        .checked_next_multiple_of(page)
        .ok_or_else(|| oom("size overflow".into()))?;
    let len = data
        .checked_add(2 * page)
        .ok_or_else(|| oom("size overflow".into()))?;
    // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(oom(std::io::Error::last_os_error().to_string()));
    }
    let base = base as usize;
    // SAFETY: the data pages lie inside the mapping just made.
    if unsafe {
        libc::mprotect(
            (base + page) as *mut libc::c_void,
            data,
            libc::PROT_READ | libc::PROT_WRITE,
        )
    } != 0
    {
        let e = std::io::Error::last_os_error();
        // SAFETY: unmapping the mapping made above, once.
        unsafe { libc::munmap(base as *mut libc::c_void, len) };
        return Err(oom(e.to_string()));
    }
    let ptr = base + page + data - rounded;
    // SAFETY: the data pages are readable and writable, `data` bytes from base + page.
    unsafe { std::ptr::write_bytes((base + page) as *mut u8, 0xFF, data) };
    MAPPINGS.lock().unwrap().insert(
        base,
        Mapping {
            base,
            len,
            ptr,
            bytes,
            owner,
        },
    );
    Ok(ptr)
}

/// Frees a buffer made by [`alloc`].
///
/// # Safety
/// `ptr` came from [`alloc`] and is freed once; nothing uses it afterwards.
pub(crate) unsafe fn free(ptr: usize) {
    let mut maps = MAPPINGS.lock().unwrap();
    let Some(&m) = maps
        .range(..ptr)
        .next_back()
        .map(|(_, m)| m)
        .filter(|m| m.ptr == ptr)
    else {
        return;
    };
    maps.remove(&m.base);
    // SAFETY: the whole mapping made by `alloc`, unmapped once (the caller's contract).
    unsafe { libc::munmap(m.base as *mut libc::c_void, m.len) };
}

/// Bytes of every live emulator buffer in the process.
pub(crate) fn bytes_in_use_all() -> usize {
    MAPPINGS.lock().unwrap().values().map(|m| m.bytes).sum()
}

/// What lies at `addr`: which buffer it is outside of, and by how much.
pub(crate) fn describe(addr: usize) -> String {
    let page = page();
    let maps = MAPPINGS.lock().unwrap();
    let near = maps
        .range(..=addr)
        .next_back()
        .map(|(_, m)| *m)
        .filter(|m| addr < m.base + m.len);
    match near {
        Some(m) if addr >= m.ptr + m.bytes => format!(
            "{} bytes past the end of a {}-byte buffer at {:#x}",
            addr - (m.ptr + m.bytes),
            m.bytes,
            m.ptr
        ),
        Some(m) if addr < m.ptr => format!(
            "{} bytes before the start of a {}-byte buffer at {:#x}",
            m.ptr - addr,
            m.bytes,
            m.ptr
        ),
        Some(m) => format!(
            "inside a {}-byte buffer at {:#x} that the fault left inaccessible (report this as an emulator bug)",
            m.bytes, m.ptr
        ),
        None if addr == 0 => "address 0: a null pointer, or a non-canonical address (which the CPU reports as 0), e.g. an index far out of range".to_string(),
        None if addr < page => "a null pointer (plus a small offset)".to_string(),
        None => "not in any device buffer of the emulator: a dangling pointer, a buffer already freed, or host memory".to_string(),
    }
}

/// Checks the slack around `owner`'s buffers (see the module docs): the first
/// write outside a buffer's bounds; every written slack is refilled, so each write
/// is reported once.
pub(crate) fn check_slack(owner: u64) -> Option<String> {
    let page = page();
    let maps = MAPPINGS.lock().unwrap();
    let mut first = None;
    for m in maps.values().filter(|m| m.owner == owner) {
        let (lo, hi) = m.data(page);
        for (start, end, side) in [
            (lo, m.ptr, "before the start"),
            (m.ptr + m.bytes, hi, "past the end"),
        ] {
            if start >= end {
                continue;
            }
            // SAFETY: [start, end) lies in the mapping's readable, writable data pages
            // and is not part of any buffer a kernel may use.
            let slack = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, end - start) };
            if let Some(i) = slack.iter().position(|&b| b != 0xFF) {
                let at = start + i;
                let by = if side == "past the end" {
                    at - (m.ptr + m.bytes)
                } else {
                    m.ptr - at
                };
                slack.fill(0xFF);
                first.get_or_insert(format!(
                    "wrote byte {by} {side} of a {}-byte buffer at {:#x} (address {at:#x})",
                    m.bytes, m.ptr
                ));
            }
        }
    }
    first
}

pub(crate) use imp::{enter, install, leave};

/// What the trap handler saw.
#[derive(Clone, Copy, Debug)]
pub(crate) enum FaultKind {
    /// An access to an address that is not mapped readable/writable.
    Access,
    /// The coroutine's own stack guard: the emulated thread's stack overflowed.
    StackOverflow,
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod imp {
    use std::cell::Cell;
    use std::mem::MaybeUninit;
    use std::sync::Once;

    use corosensei::trap::CoroutineTrapHandler;

    use super::FaultKind;

    /// A fault the handler took inside an emulated thread.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Fault {
        pub addr: usize,
        pub kind: FaultKind,
    }

    thread_local! {
        /// The coroutine this OS thread is running now, if any.
        static ACTIVE: Cell<Option<CoroutineTrapHandler<()>>> = const { Cell::new(None) };
        /// The fault taken in it.
        static FAULT: Cell<Option<Fault>> = const { Cell::new(None) };
    }

    static INSTALL: Once = Once::new();
    static mut OLD_SEGV: MaybeUninit<libc::sigaction> = MaybeUninit::uninit();
    static mut OLD_BUS: MaybeUninit<libc::sigaction> = MaybeUninit::uninit();

    /// Installs the handler for `SIGSEGV` and `SIGBUS` once per process, keeping the
    /// previous ones to pass other faults on to.
    pub(crate) fn install() {
        INSTALL.call_once(|| {
            for (sig, old) in [
                (libc::SIGSEGV, &raw mut OLD_SEGV),
                (libc::SIGBUS, &raw mut OLD_BUS),
            ] {
                // SAFETY: a zeroed sigaction is a valid starting value; the handler has
                // the SA_SIGINFO signature; `old` is written once, here, before the
                // handler can run (Once), and only read afterwards.
                unsafe {
                    // The previous action first, so it is in place before ours can run.
                    libc::sigaction(sig, std::ptr::null(), (*old).as_mut_ptr());
                    let mut sa: libc::sigaction = std::mem::zeroed();
                    sa.sa_sigaction = handler as *const () as usize;
                    sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
                    libc::sigemptyset(&mut sa.sa_mask);
                    libc::sigaction(sig, &sa, std::ptr::null_mut());
                }
            }
        });
    }

    /// Marks `h` as the coroutine about to run on this thread.
    pub(crate) fn enter(h: CoroutineTrapHandler<()>) {
        FAULT.with(|f| f.set(None));
        ACTIVE.with(|a| a.set(Some(h)));
    }

    /// The coroutine stopped (yielded, returned or trapped): the fault it took, if any.
    pub(crate) fn leave() -> Option<Fault> {
        ACTIVE.with(|a| a.set(None));
        FAULT.with(|f| f.take())
    }

    extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // Only const-initialised, destructor-free thread locals and plain loads and
        // stores here: this runs inside a signal handler.
        let active = ACTIVE.try_with(|a| a.get()).ok().flatten();
        // SAFETY: the kernel passes a valid ucontext_t and siginfo_t to an SA_SIGINFO
        // handler.
        let (uc, addr, code) = unsafe {
            (
                &mut *(ctx as *mut libc::ucontext_t),
                (*info).si_addr() as usize,
                (*info).si_code,
            )
        };
        // si_code > 0: a fault of this thread's own access; a signal sent by kill or
        // raise (si_code <= 0) is passed on.
        if let (Some(h), true) = (active, code > 0) {
            let sp = uc.uc_mcontext.gregs[libc::REG_RSP as usize] as usize;
            if h.stack_ptr_in_bounds(sp) {
                let kind = if h.stack_ptr_in_bounds(addr) {
                    FaultKind::StackOverflow
                } else {
                    FaultKind::Access
                };
                let _ = FAULT.try_with(|f| f.set(Some(Fault { addr, kind })));
                let _ = ACTIVE.try_with(|a| a.set(None));
                // SAFETY: the fault happened on this coroutine's stack (checked above);
                // the coroutine is abandoned (its launch fails), so what it wrote
                // before the fault does not matter; the registers below are the ones
                // `setup_trap_handler` asks us to set.
                let regs = unsafe { h.setup_trap_handler(|| ()) };
                let g = &mut uc.uc_mcontext.gregs;
                g[libc::REG_RIP as usize] = regs.rip as i64;
                g[libc::REG_RSP as usize] = regs.rsp as i64;
                g[libc::REG_RBP as usize] = regs.rbp as i64;
                g[libc::REG_RDI as usize] = regs.rdi as i64;
                g[libc::REG_RSI as usize] = regs.rsi as i64;
                return;
            }
        }
        // Not ours: the previous handler, or the default action (the faulting
        // instruction runs again and the process ends as it would have).
        // Through a raw pointer: a reference to the `static mut` itself is the
        // `static_mut_refs` lint.
        let old = if sig == libc::SIGBUS {
            &raw const OLD_BUS
        } else {
            &raw const OLD_SEGV
        };
        // SAFETY: written once by `install` before this handler was installed.
        let old = unsafe { (*old).assume_init_ref() };
        let act = old.sa_sigaction;
        if act == libc::SIG_DFL || act == libc::SIG_IGN {
            // SAFETY: restoring the previous disposition of this signal: a fault runs its
            // instruction again and meets it; a sent signal is raised again to meet it.
            unsafe {
                libc::sigaction(sig, old, std::ptr::null_mut());
                if code <= 0 {
                    libc::raise(sig);
                }
            }
        } else if old.sa_flags & libc::SA_SIGINFO != 0 {
            // SAFETY: the previous handler was installed with this signature.
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(act) };
            f(sig, info, ctx);
        } else {
            // SAFETY: the previous handler was installed with this signature.
            let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(act) };
            f(sig);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
mod imp {
    use corosensei::trap::CoroutineTrapHandler;

    use super::FaultKind;

    /// Never made here: without the trap handler a fault ends the process.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Fault {
        pub addr: usize,
        pub kind: FaultKind,
    }
    pub(crate) fn install() {}
    pub(crate) fn enter(_: CoroutineTrapHandler<()>) {}
    pub(crate) fn leave() -> Option<Fault> {
        None
    }
}
