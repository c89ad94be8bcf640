//! The device handle: one API over two backends, the CUDA driver and the CPU SIMT
//! emulator. Code written against a [`Gpu`] never knows which one runs.
//!
//! Layers, from the bottom:
//! 1. [`Gpu::launch`]: `unsafe`, the thin layer. It checks everything it can (the
//!    kernel's launch contract, grid limits, shared memory, that the module is
//!    loaded) and forwards to `cuLaunchKernel` or the emulator. It cannot check the
//!    arguments' validity: see its `# Safety`.
//! 2. Safe ops (the `rust-simt` crate's `ops`, or your own): check shapes and that
//!    every buffer belongs to this `Gpu` ([`Gpu::check`]), choose the grid, call (1).
use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cust::memory::DeviceCopy;
use simt_std::{Dim3, Kernel, ParamValue};

use crate::backend::{self, Backend, EmuBackend, Event};
use crate::buffer::Buffer;
use crate::device::{BackendKind, DeviceProps, KernelResources, MemInfo};
use crate::emulator::EmuConfig;
use crate::error::{Result, SimtError};
use crate::launch::{self, EmuEntry, LaunchArgs, LaunchConfig, RawLaunch};
use crate::module::Module;

/// One kernel launch seen by the profiler.
#[derive(Clone, Debug)]
pub struct LaunchRecord {
    pub kernel: &'static str,
    pub ms: f64,
}

/// One kernel launch as [`Gpu::capture`] recorded it: everything another program
/// needs to make the same launch through the driver (`cuModuleLoadData` of the
/// module's PTX, `cuLaunchKernel` with this grid, block, shared memory and these
/// parameters), with pointers still this process's addresses.
#[derive(Clone, Debug)]
pub struct CapturedLaunch {
    /// The `.entry` name.
    pub kernel: &'static str,
    /// The kernels crate, and the PTX target of the loaded module the launch used.
    pub module: &'static str,
    pub target: &'static str,
    pub grid: Dim3,
    pub block: Dim3,
    /// Dynamic shared memory, bytes.
    pub shared_bytes: u32,
    /// Blocks per cluster along x (1: none); the PTX entry declares it.
    pub cluster: u32,
    /// Launched with `cuLaunchCooperativeKernel`.
    pub cooperative: bool,
    /// The parameters in order.
    pub params: Vec<ParamValue>,
}

impl CapturedLaunch {
    /// The record of a validated launch, with its parameters' values.
    fn of(raw: &RawLaunch<'_>, params: Vec<ParamValue>) -> CapturedLaunch {
        CapturedLaunch {
            kernel: raw.kernel,
            module: raw.module,
            target: raw.target,
            grid: raw.grid,
            block: raw.block,
            shared_bytes: raw.shared_bytes,
            cluster: raw.cluster.max(1),
            cooperative: raw.cooperative,
            params,
        }
    }
}

/// What a buffer that a `Gpu` keeps for its ops ([`Gpu::scratch_regions`]) holds
/// between launches: what another program replaying a [`CapturedLaunch`] must give
/// in its place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScratchKind {
    /// Workspace ([`Gpu::scratch_f32`]): written before it is read within an op, so
    /// any buffer of the size will do.
    Workspace,
    /// Counts ([`Gpu::zero_counts`]): zero before each launch, and left zero by it.
    Zeros,
    /// Epoch-tagged flags or pair slots ([`Gpu::flags`], [`Gpu::pair_slots`]): each
    /// launch waits for the epoch it was handed, so a launch cannot be made twice.
    EpochFlags,
}

/// One buffer a `Gpu` keeps for its ops: its kind, device address and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScratchRegion {
    pub kind: ScratchKind,
    pub base: u64,
    pub bytes: u64,
}

/// A backend together with the identity that its buffers carry.
pub(crate) struct Device {
    pub(crate) id: u64,
    pub(crate) backend: Box<dyn Backend>,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

type Timing = (&'static str, Box<dyn Event>, Box<dyn Event>);

/// What an occupancy answer depends on: module, PTX target, kernel, block threads,
/// dynamic shared bytes, cluster size (0: blocks per SM).
type OccupancyKey = (&'static str, &'static str, &'static str, u32, u32, u32);

/// A device that runs rust-simt kernels: [`Gpu::from_env`], [`Gpu::cuda`] or
/// [`Gpu::emulator`].
///
/// # Threads
/// A `Gpu` is `Send` but not `Sync`: make one per thread (each has its own stream,
/// so threads' work runs concurrently and each thread's launches run in order), or
/// move one to the thread that uses it. Ops reuse per-`Gpu` scratch memory between
/// their launches, which is sound only for one thread at a time; the type system
/// enforces it:
///
/// ```compile_fail
/// fn share<T: Sync>(_: &T) {}
/// let g = simt::Gpu::emulator(Default::default());
/// share(&g); // error: `RefCell<…>` cannot be shared between threads safely
/// ```
///
/// A [`Buffer`] is `Send` and `Sync`; handed to another `Gpu` it is
/// [`SimtError::WrongDevice`]. After a kernel fault on a GPU
/// ([`SimtError::KernelFault`]) every `Gpu` of the process answers
/// [`SimtError::ContextLost`]: CUDA keeps the fault for the process, and a new
/// process uses the GPU again (docs/RELIABILITY.md).
pub struct Gpu {
    dev: Arc<Device>,
    note: String,
    /// Loaded modules: crate, PTX target, kernels.
    modules: RefCell<Vec<(&'static str, &'static str, Vec<String>)>>,
    profile: RefCell<Option<Vec<Timing>>>,
    /// Launches recorded by [`Gpu::capture`] while it runs.
    captured: RefCell<Option<Vec<CapturedLaunch>>>,
    /// Scratch buffers by slot ([`Gpu::scratch_f32`]).
    scratch: RefCell<Vec<Option<Arc<Buffer<f32>>>>>,
    /// Flags for blocks that wait on each other, and the last epoch handed out
    /// ([`Gpu::flags`]).
    flags: RefCell<Option<(Arc<Buffer<u32>>, u32)>>,
    /// Pair slots for blocks that publish `(f32, f32)` pairs with their epoch, and
    /// the last epoch handed out ([`Gpu::pair_slots`]).
    pairs: RefCell<Option<(Arc<Buffer<u64>>, u32)>>,
    /// Counts that kernels leave at zero ([`Gpu::zero_counts`]).
    counts: RefCell<Option<Arc<Buffer<u32>>>>,
    /// Tensor maps in device memory, most recent last (see `tensor_map`).
    tensor_maps: RefCell<Vec<(crate::tensor_map::TensorMapDesc, Arc<Buffer<u64>>)>>,
    /// Occupancy answers by (module, target, kernel, threads, shared bytes, cluster size): the
    /// driver's query costs host time on every launch of a persistent kernel, and
    /// its answer never changes for one device and module.
    occupancy: RefCell<Vec<(OccupancyKey, u32)>>,
}

impl Gpu {
    fn with(backend: Box<dyn Backend>, note: String) -> Gpu {
        let dev = Arc::new(Device {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            backend,
        });
        Gpu {
            dev,
            note,
            modules: RefCell::new(Vec::new()),
            profile: RefCell::new(None),
            captured: RefCell::new(None),
            tensor_maps: RefCell::new(Vec::new()),
            occupancy: RefCell::new(Vec::new()),
            scratch: RefCell::new(Vec::new()),
            flags: RefCell::new(None),
            pairs: RefCell::new(None),
            counts: RefCell::new(None),
        }
    }

    /// Picks the backend from the environment: `SIMT_BACKEND=cuda` or `emulator`
    /// forces one; otherwise (`auto`, unset) the GPU when this build has the CUDA
    /// backend and a device answers, else the emulator, which then says why.
    pub fn from_env() -> Result<Gpu> {
        match std::env::var("SIMT_BACKEND")
            .unwrap_or_default()
            .to_ascii_lowercase()
            .as_str()
        {
            "cuda" | "gpu" => Gpu::cuda(),
            "emulator" | "emu" | "cpu" => Ok(Gpu::emulator(EmuConfig::default())),
            "" | "auto" => match Gpu::cuda() {
                Ok(g) => Ok(g),
                Err(e) => Ok(Gpu::with(
                    Box::new(EmuBackend::new(EmuConfig::default())),
                    format!("no GPU: {e}"),
                )),
            },
            other => Err(SimtError::NoBackend(format!(
                "SIMT_BACKEND={other} is not one of cuda, emulator, auto"
            ))),
        }
    }

    /// The CPU SIMT emulator with the given settings.
    pub fn emulator(cfg: EmuConfig) -> Gpu {
        Gpu::with(Box::new(EmuBackend::new(cfg)), String::new())
    }

    /// CUDA device 0.
    pub fn cuda() -> Result<Gpu> {
        Gpu::cuda_device(0)
    }

    /// CUDA device `ordinal`.
    pub fn cuda_device(ordinal: u32) -> Result<Gpu> {
        Ok(Gpu::with(backend::cuda(ordinal)?, String::new()))
    }

    /// Which backend this is.
    pub fn kind(&self) -> BackendKind {
        self.dev.backend.kind()
    }

    /// Device properties.
    pub fn props(&self) -> &DeviceProps {
        self.dev.backend.props()
    }

    /// Free and total device memory now (`cuMemGetInfo`; on the emulator, see
    /// [`MemInfo`]). What a soak test watches for leaks.
    pub fn mem_info(&self) -> Result<MemInfo> {
        self.dev.backend.mem_info()
    }

    /// One line saying what runs the kernels (and why, for the emulator).
    pub fn describe(&self) -> String {
        let p = self.props();
        match self.kind() {
            BackendKind::Cuda => format!("backend: CUDA GPU, {} ({})", p.name, p.sm()),
            BackendKind::Emulator => {
                let why = if self.note.is_empty() {
                    "selected".to_string()
                } else {
                    self.note.clone()
                };
                format!("backend: CPU SIMT emulator ({why}); the same kernel source runs, timings are CPU times")
            }
        }
    }

    /// Loads a module (what `simt-builder` generated as `MODULE`) so its kernels can
    /// be launched. Loading one twice is a no-op. A module built for a newer
    /// architecture than the device's, or for an architecture-specific target
    /// (`sm_90a`) of another one, is [`SimtError::Unsupported`]: check
    /// [`Gpu::can_load`] first. One crate may have a module per target (a portable
    /// `sm_80` one and an `sm_90a` one, say); a launch finds its kernel in either.
    pub fn load(&self, m: &Module) -> Result<()> {
        if self
            .modules
            .borrow()
            .iter()
            .any(|(c, t, _)| *c == m.crate_name() && *t == m.target())
        {
            return Ok(());
        }
        if !self.can_load(m) {
            return Err(SimtError::Unsupported(format!(
                "the module of `{}` is built for {} and this device is {}: load a module built for a target this device runs (simt_builder::Builder::target_cpu, e.g. the portable sm_80)",
                m.crate_name(),
                m.target(),
                self.props().sm()
            )));
        }
        self.dev.backend.load(m)?;
        self.modules
            .borrow_mut()
            .push((m.crate_name(), m.target(), m.entries()));
        Ok(())
    }

    /// Whether this device can run module `m`: always on the emulator; on a GPU, a
    /// compute capability at least the target's, and exactly it for the
    /// architecture-specific targets (`sm_90a` runs only on 9.0).
    pub fn can_load(&self, m: &Module) -> bool {
        let need = m.min_compute_capability();
        let have = self.props().compute_capability;
        self.kind() == BackendKind::Emulator
            || if m.arch_specific() {
                have == need
            } else {
                have >= need
            }
    }

    /// Whether a module of the kernels crate `crate_name` is loaded.
    pub fn is_loaded(&self, crate_name: &str) -> bool {
        self.modules
            .borrow()
            .iter()
            .any(|(n, _, _)| *n == crate_name)
    }

    /// `Ok` if `buf` was allocated on this `Gpu`, else [`SimtError::WrongDevice`]
    /// naming the op and the argument: what every safe op checks for every buffer.
    pub fn check<T: DeviceCopy>(
        &self,
        op: &'static str,
        what: &'static str,
        buf: &Buffer<T>,
    ) -> Result<()> {
        if buf.device_id() == self.dev.id {
            Ok(())
        } else {
            Err(SimtError::WrongDevice {
                op,
                what,
                detail: format!(
                    "buffer of device #{}, this is device #{} ({:?})",
                    buf.device_id(),
                    self.dev.id,
                    self.kind()
                ),
            })
        }
    }

    /// Allocates `len` elements with unspecified contents (poison them before use in
    /// tests; the emulator fills fresh memory with `0xFF` bytes).
    pub fn alloc<T: DeviceCopy>(&self, len: usize) -> Result<Buffer<T>> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or(SimtError::OutOfMemory {
                bytes: usize::MAX,
                source: None,
            })?;
        let ptr = self.dev.backend.alloc(bytes)?;
        Ok(Buffer {
            dev: self.dev.clone(),
            ptr,
            len,
            _t: PhantomData,
        })
    }

    /// Copies a host slice to a new buffer.
    pub fn upload<T: DeviceCopy>(&self, data: &[T]) -> Result<Buffer<T>> {
        let mut b = self.alloc::<T>(data.len())?;
        self.write(&mut b, data)?;
        Ok(b)
    }

    /// Overwrites a buffer from a host slice of the same length (after queued work).
    pub fn write<T: DeviceCopy>(&self, buf: &mut Buffer<T>, data: &[T]) -> Result<()> {
        self.check("write", "buf", buf)?;
        if data.len() != buf.len() {
            return Err(SimtError::Shape {
                op: "write",
                detail: format!("buffer has {} elements, slice {}", buf.len(), data.len()),
            });
        }
        // SAFETY: the buffer holds `len` elements of this backend; the slice as many.
        unsafe {
            self.dev.backend.write(
                buf.ptr,
                data.as_ptr() as *const u8,
                std::mem::size_of_val(data),
            )
        }
    }

    /// Waits for all launched work, then copies the buffer to the host.
    pub fn download<T: DeviceCopy + Default + Clone>(&self, buf: &Buffer<T>) -> Result<Vec<T>> {
        self.check("download", "buf", buf)?;
        let mut v = vec![T::default(); buf.len()];
        // SAFETY: as `write`.
        unsafe {
            self.dev.backend.read(
                buf.ptr,
                v.as_mut_ptr() as *mut u8,
                buf.len() * std::mem::size_of::<T>(),
            )?
        };
        Ok(v)
    }

    /// Device-to-device copy of `src` into `dst` (same length), in launch order.
    pub fn copy<T: DeviceCopy>(&self, src: &Buffer<T>, dst: &mut Buffer<T>) -> Result<()> {
        self.check("copy", "src", src)?;
        self.check("copy", "dst", dst)?;
        if src.len() != dst.len() {
            return Err(SimtError::Shape {
                op: "copy",
                detail: format!("{} vs {} elements", src.len(), dst.len()),
            });
        }
        // SAFETY: both hold `len` elements on this backend; `&mut dst` excludes overlap.
        unsafe {
            self.dev
                .backend
                .copy(src.ptr, dst.ptr, src.len() * std::mem::size_of::<T>())
        }
    }

    /// Waits until all launched work has finished; reports asynchronous kernel errors.
    pub fn synchronize(&self) -> Result<()> {
        self.dev.backend.synchronize()
    }

    /// Launches kernel `K` with `cfg` and `args`.
    ///
    /// Checked here: the block against the kernel's `#[launch]` contract, the grid
    /// against the hardware's limits, the dynamic shared memory the contract asks
    /// for against the device's, and that `K`'s module is loaded.
    ///
    /// # Safety
    /// This layer cannot check the arguments: every pointer in `args` must point into
    /// a buffer of this `Gpu`, valid for every access the kernel makes with this grid
    /// and block (its `# Safety` section); buffers the kernel writes must not be read
    /// or written concurrently by other work; and the grid must be the mapping the
    /// kernel's `# Thread Mapping` asks for.
    pub unsafe fn launch<K: Kernel>(&self, cfg: LaunchConfig, args: K::Args) -> Result<()>
    where
        K::Args: LaunchArgs,
    {
        let shared_bytes = launch::validate::<K>(&cfg, &args, self.props().smem_per_block_optin)?;
        let target = {
            let mods = self.modules.borrow();
            if !mods.iter().any(|(n, _, _)| *n == K::MODULE) {
                return Err(SimtError::ModuleNotLoaded {
                    kernel: K::NAME,
                    module: K::MODULE,
                });
            }
            let found = mods
                .iter()
                .find(|(n, _, e)| *n == K::MODULE && e.iter().any(|e| e == K::NAME));
            match (found, K::BOUNDS.target) {
                (Some((_, t, _)), _) => *t,
                (None, Some(t)) => {
                    return Err(SimtError::Unsupported(format!(
                        "kernel `{}` is built only for {t} ({}) and this device is {}: its module is not loaded here; use a portable kernel on this device",
                        K::NAME,
                        target_note(t),
                        self.props().sm()
                    )))
                }
                (None, None) => {
                    return Err(SimtError::BadLaunch {
                        kernel: K::NAME,
                        detail: format!("no loaded module of `{}` has an entry `{}`: rebuild it (cargo clean -p of the host crate)", K::MODULE, K::NAME),
                    })
                }
            }
        };
        let timing = if self.profile.borrow().is_some() {
            let (s, e) = (self.dev.backend.event()?, self.dev.backend.event()?);
            self.dev.backend.record(&*s)?;
            Some((s, e))
        } else {
            None
        };
        if K::BOUNDS.cluster > 1 && self.props().compute_capability < (9, 0) {
            return Err(SimtError::Unsupported(format!(
                "kernel `{}` runs in thread-block clusters, which need compute capability 9.0 (Hopper) and this device is {}; use a kernel without clusters",
                K::NAME,
                self.props().sm()
            )));
        }
        if K::BOUNDS.cooperative {
            let most = self.resident_blocks(
                K::MODULE,
                target,
                K::NAME,
                cfg.block.volume() as u32,
                shared_bytes,
            )?;
            if cfg.grid.volume() > most as u64 {
                return Err(SimtError::BadLaunch {
                    kernel: K::NAME,
                    detail: format!(
                        "a cooperative launch of {} blocks, but this device holds at most {most} of them at once; size the grid with Gpu::max_resident_blocks",
                        cfg.grid.volume()
                    ),
                });
            }
        }
        let emu = EmuEntry {
            run: launch::trampoline::<K>,
            args: &args as *const K::Args as *const (),
        };
        args.with_param_ptrs(|params| {
            let raw = RawLaunch {
                kernel: K::NAME,
                module: K::MODULE,
                target,
                grid: cfg.grid,
                block: cfg.block,
                shared_bytes,
                params,
                emu,
                cooperative: K::BOUNDS.cooperative,
                cluster: K::BOUNDS.cluster,
                min_blocks: K::BOUNDS.min_blocks_per_sm,
            };
            // SAFETY: forwarded from this function's contract; `args` outlives the call.
            let r = unsafe { self.dev.backend.launch(&raw) };
            // Recorded once the launch was taken: a refused one (a cooperative launch
            // the device cannot hold, answered with another kernel) is not part of
            // what the op did.
            if let (Ok(()), Some(c)) = (&r, self.captured.borrow_mut().as_mut()) {
                c.push(CapturedLaunch::of(&raw, args.param_values()));
            }
            r
        })?;
        if let Some((s, e)) = timing {
            self.dev.backend.record(&*e)?;
            if let Some(p) = self.profile.borrow_mut().as_mut() {
                p.push((K::NAME, s, e));
            }
        }
        Ok(())
    }

    /// Runs `f` and returns every kernel launched inside it with its device time
    /// (events around each launch; on the emulator, wall time of each launch).
    pub fn profile<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<(R, Vec<LaunchRecord>)> {
        *self.profile.borrow_mut() = Some(Vec::new());
        let r = f();
        let recs = self.profile.borrow_mut().take().unwrap_or_default();
        let r = r?;
        self.synchronize()?;
        let mut out = Vec::with_capacity(recs.len());
        for (kernel, s, e) in recs {
            out.push(LaunchRecord {
                kernel,
                ms: e.elapsed_ms(&*s)?,
            });
        }
        Ok((r, out))
    }

    /// The buffers this `Gpu` keeps for ops between calls (scratch slots, counts,
    /// flags, pair slots), so that a reader of [`CapturedLaunch`]es can tell which
    /// pointers point into them and what each must hold.
    pub fn scratch_regions(&self) -> Vec<ScratchRegion> {
        fn region<T: DeviceCopy>(kind: ScratchKind, b: &Buffer<T>) -> ScratchRegion {
            ScratchRegion {
                kind,
                base: b.ptr() as usize as u64,
                bytes: (b.len() * std::mem::size_of::<T>()) as u64,
            }
        }
        let mut out: Vec<ScratchRegion> = self
            .scratch
            .borrow()
            .iter()
            .flatten()
            .map(|b| region(ScratchKind::Workspace, b))
            .collect();
        out.extend(
            self.counts
                .borrow()
                .iter()
                .map(|b| region(ScratchKind::Zeros, b)),
        );
        out.extend(
            self.flags
                .borrow()
                .iter()
                .map(|(b, _)| region(ScratchKind::EpochFlags, b)),
        );
        out.extend(
            self.pairs
                .borrow()
                .iter()
                .map(|(b, _)| region(ScratchKind::EpochFlags, b)),
        );
        out
    }

    /// Runs `f` and returns every kernel launch it made, in order, as
    /// [`CapturedLaunch`]es (the launches run as usual). What `f` does besides
    /// launching kernels (copies, allocations, the state of scratch buffers that
    /// later launches depend on) is not recorded: a record replays only what the
    /// launches themselves say.
    ///
    /// A capture inside another returns its own launches and leaves them in the
    /// outer one's too. Recording ends when `f` returns, errs or panics.
    pub fn capture<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<(R, Vec<CapturedLaunch>)> {
        /// Puts the outer capture (or none) back however `f` ends.
        struct Restore<'a> {
            cell: &'a RefCell<Option<Vec<CapturedLaunch>>>,
            outer: Option<Option<Vec<CapturedLaunch>>>,
        }
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                if let Some(outer) = self.outer.take() {
                    *self.cell.borrow_mut() = outer;
                }
            }
        }
        let outer = self.captured.borrow_mut().replace(Vec::new());
        let mut restore = Restore {
            cell: &self.captured,
            outer: Some(outer),
        };
        let r = f();
        let launches = self.captured.borrow_mut().take().unwrap_or_default();
        if let Some(Some(mut outer)) = restore.outer.take() {
            outer.extend(launches.iter().cloned());
            *self.captured.borrow_mut() = Some(outer);
        }
        drop(restore);
        Ok((r?, launches))
    }

    /// Times `f` on the device: events around it (milliseconds of device time,
    /// launch gaps included); on the emulator, wall time.
    pub fn time_ms(&self, f: impl FnOnce() -> Result<()>) -> Result<f64> {
        let (s, e) = (self.dev.backend.event()?, self.dev.backend.event()?);
        self.dev.backend.record(&*s)?;
        f()?;
        self.dev.backend.record(&*e)?;
        e.synchronize()?;
        e.elapsed_ms(&*s)
    }

    /// A scratch buffer of at least `len` f32 (contents undefined) kept in slot `slot`
    /// of this `Gpu` for reuse: an op that needs temporary device memory on every call
    /// allocates it once, and no allocation lands between the launches it times.
    /// Work queued on the `Gpu` runs in order, so a later call may reuse the slot; two
    /// buffers needed at once take two slots.
    pub fn scratch_f32(&self, slot: usize, len: usize) -> Result<Arc<Buffer<f32>>> {
        let mut s = self.scratch.borrow_mut();
        if s.len() <= slot {
            s.resize(slot + 1, None);
        }
        if let Some(b) = &s[slot] {
            if b.len() >= len {
                return Ok(b.clone());
            }
        }
        s[slot] = None; // free the smaller one first
        let b = Arc::new(self.alloc::<f32>(len.max(1))?);
        s[slot] = Some(b.clone());
        Ok(b)
    }

    /// At least `len` flags (`u32` in device memory) for blocks that publish and wait
    /// ([`simt_std::flag`]), and a fresh **epoch**: no flag holds it yet, so a launch
    /// that publishes `epoch` and waits for `epoch` needs no clearing kernel first.
    ///
    /// The buffer is zeroed once when it is (re)allocated; every call returns the next
    /// epoch (1, 2, …). Launches run in order on this `Gpu`, so flags written by an
    /// earlier launch hold an older epoch. After 2^32 - 1 calls the buffer is zeroed
    /// again and the count restarts.
    pub fn flags(&self, len: usize) -> Result<(Arc<Buffer<u32>>, u32)> {
        let mut f = self.flags.borrow_mut();
        if let Some((b, e)) = f.as_mut() {
            if b.len() >= len && *e < u32::MAX {
                *e += 1;
                return Ok((b.clone(), *e));
            }
        }
        *f = None; // free the old one first
        let b = Arc::new(self.upload(&vec![0u32; len.max(1)])?);
        *f = Some((b.clone(), 1));
        Ok((b, 1))
    }

    /// At least `len` pair slots (two `u64` each, 16-byte aligned) for blocks that
    /// publish `(f32, f32)` pairs tagged with their launch's epoch
    /// ([`simt_std::flag::publish_pair`]), and a fresh **epoch**: no slot's words
    /// hold it yet, so a launch that publishes and waits for `epoch` needs no
    /// clearing kernel first. As [`Gpu::flags`], with its own buffer and count (the
    /// slots' low halves hold float bits, which must never pass for a flag): zeroed
    /// when (re)allocated, and again after 2^32 - 1 epochs.
    pub fn pair_slots(&self, len: usize) -> Result<(Arc<Buffer<u64>>, u32)> {
        let mut f = self.pairs.borrow_mut();
        if let Some((b, e)) = f.as_mut() {
            if b.len() >= 2 * len && *e < u32::MAX {
                *e += 1;
                return Ok((b.clone(), *e));
            }
        }
        *f = None; // free the old one first
        let b = Arc::new(self.upload(&vec![0u64; 2 * len.max(1)])?);
        *f = Some((b.clone(), 1));
        Ok((b, 1))
    }

    /// At least `len` counts (`u32` in device memory) that are zero at every launch
    /// that uses them: zeroed when (re)allocated, and every kernel that counts in
    /// them must leave them at zero (the one that completes a count resets it), so
    /// no clearing launch is needed. Launches that use them run in order on this
    /// `Gpu`.
    pub fn zero_counts(&self, len: usize) -> Result<Arc<Buffer<u32>>> {
        let mut c = self.counts.borrow_mut();
        if let Some(b) = c.as_ref() {
            if b.len() >= len {
                return Ok(b.clone());
            }
        }
        *c = None; // free the old one first
        let b = Arc::new(self.upload(&vec![0u32; len.max(1)])?);
        *c = Some(b.clone());
        Ok(b)
    }

    /// Forgets the counts of [`Gpu::zero_counts`], so the next call allocates them
    /// zeroed again: for a launch that failed part-way and may have left counts
    /// behind.
    pub fn discard_counts(&self) {
        *self.counts.borrow_mut() = None;
    }

    /// A tensor map in device memory, from the cache or encoded and uploaded now.
    pub(crate) fn tensor_map_buffer(
        &self,
        d: &crate::tensor_map::TensorMapDesc,
    ) -> Result<Arc<Buffer<u64>>> {
        let mut cache = self.tensor_maps.borrow_mut();
        if let Some(i) = cache.iter().position(|(k, _)| k == d) {
            let e = cache.remove(i);
            let buf = e.1.clone();
            cache.push(e);
            return Ok(buf);
        }
        let words = self.dev.backend.encode_tensor_map(d)?;
        let buf = Arc::new(self.upload(&words)?);
        if cache.len() == 64 {
            cache.remove(0);
        }
        cache.push((*d, buf.clone()));
        Ok(buf)
    }

    /// How many blocks of `K`, launched with `args`, the device holds at once: SMs
    /// times the driver's occupancy for the kernel's block and dynamic shared memory
    /// (on the emulator, one per worker). The largest grid of a cooperative kernel.
    pub fn max_resident_blocks<K: Kernel>(&self, args: &K::Args) -> Result<u32> {
        let Some((target, threads, shared)) = self.occupancy_query::<K>(args)? else {
            return Ok(0);
        };
        self.resident_blocks(K::MODULE, target, K::NAME, threads, shared)
    }

    /// What an occupancy query of `K` with `args` needs: the loaded module's target,
    /// the block's threads and its dynamic shared memory; `None` when that is more
    /// than a block may have (nothing fits).
    fn occupancy_query<K: Kernel>(
        &self,
        args: &K::Args,
    ) -> Result<Option<(&'static str, u32, u32)>> {
        let shared = K::dynamic_shared_bytes(args);
        if shared > self.props().smem_per_block_optin as u64 {
            return Ok(None);
        }
        let target = self
            .modules
            .borrow()
            .iter()
            .find(|(n, _, e)| *n == K::MODULE && e.iter().any(|e| e == K::NAME))
            .map(|(_, t, _)| *t)
            .ok_or(SimtError::ModuleNotLoaded {
                kernel: K::NAME,
                module: K::MODULE,
            })?;
        Ok(Some((target, K::BOUNDS.max_block_threads(), shared as u32)))
    }

    /// How many clusters of `K` (a kernel with `#[launch(cluster = N)]`), launched
    /// with `args`, the device holds at once: the driver's cluster occupancy, which
    /// counts only whole clusters inside one GPC (on the emulator, workers / N). The
    /// largest useful grid of a persistent cluster kernel is this times N.
    pub fn max_resident_clusters<K: Kernel>(&self, args: &K::Args) -> Result<u32> {
        let Some((target, threads, shared)) = self.occupancy_query::<K>(args)? else {
            return Ok(0);
        };
        let cluster = K::BOUNDS.cluster.max(1);
        self.occupancy_cached(
            (K::MODULE, target, K::NAME, threads, shared, cluster),
            || {
                self.dev.backend.max_active_clusters(
                    K::MODULE,
                    target,
                    K::NAME,
                    threads,
                    shared,
                    cluster,
                )
            },
        )
    }

    /// `query()`'s answer for `key`, asked once per `Gpu`.
    fn occupancy_cached(
        &self,
        key: OccupancyKey,
        query: impl FnOnce() -> Result<u32>,
    ) -> Result<u32> {
        if let Some((_, v)) = self.occupancy.borrow().iter().find(|(k, _)| *k == key) {
            return Ok(*v);
        }
        let v = query()?;
        let mut cache = self.occupancy.borrow_mut();
        // Bounded, like the tensor maps: kernels whose shared memory depends on
        // their arguments add a key per size.
        if cache.len() == 64 {
            cache.remove(0);
        }
        cache.push((key, v));
        Ok(v)
    }

    fn resident_blocks(
        &self,
        module: &'static str,
        target: &'static str,
        kernel: &'static str,
        threads: u32,
        shared: u32,
    ) -> Result<u32> {
        let per_sm = self.occupancy_cached((module, target, kernel, threads, shared, 0), || {
            self.dev
                .backend
                .max_active_blocks(module, target, kernel, threads, shared)
        })?;
        Ok(per_sm.saturating_mul(self.props().sms))
    }

    /// The driver's resources of kernel `K` (registers, static shared memory, local
    /// memory). `None` on the emulator or before its module is loaded.
    pub fn kernel_resources<K: Kernel>(&self) -> Result<Option<KernelResources>> {
        let target = self
            .modules
            .borrow()
            .iter()
            .find(|(n, _, e)| *n == K::MODULE && e.iter().any(|e| e == K::NAME))
            .map(|(_, t, _)| *t);
        match target {
            Some(t) => self.dev.backend.kernel_resources(K::MODULE, t, K::NAME),
            None => Ok(None),
        }
    }
}

/// What an architecture-specific target needs, for error messages.
fn target_note(target: &str) -> &'static str {
    match target {
        "sm_90a" => "wgmma and TMA: compute capability 9.0 exactly, an H100 or H200",
        _ => "an architecture-specific target",
    }
}
