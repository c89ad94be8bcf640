//! The device handle: one launch API over two backends, the CUDA driver (through
//! `cust`) and the CPU SIMT emulator. Op wrappers never know which one runs.
//!
//! Layers, from the bottom:
//! 1. [`Gpu::launch`]: `unsafe`, the thin layer. It checks what it can (block
//!    size, grid limits, shared memory) and forwards to `cuLaunchKernel` or the
//!    emulator. It cannot check argument validity: see its `# Safety`.
//! 2. `crate::ops`: safe per-op functions that check shapes and lengths, choose the
//!    launch configuration and call (1).
use std::cell::RefCell;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::time::Instant;

use kernels::emu::Dim3;
use kernels::{Kernel, KernelParam};

use crate::emulator::{self, EmuConfig};
use crate::error::{Result, SimtError};

/// The PTX module compiled from `kernels/` by `build.rs`.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// Which backend runs the kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// An NVIDIA GPU through the CUDA driver.
    Cuda,
    /// The CPU SIMT emulator.
    Emulator,
}

/// Grid, block and dynamic shared memory of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: Dim3,
    pub block: Dim3,
    pub shared_bytes: u32,
}

/// `Dim3` shorthand.
pub const fn dim3(x: u32, y: u32, z: u32) -> Dim3 {
    Dim3 { x, y, z }
}

impl LaunchConfig {
    /// A 1-D launch of `block` threads per block covering `threads` threads.
    pub fn linear(threads: usize, block: u32) -> Result<LaunchConfig> {
        let blocks = threads.div_ceil(block as usize).max(1);
        if blocks > i32::MAX as usize {
            return Err(SimtError::TooLarge { op: "launch", detail: format!("{threads} threads need {blocks} blocks, over the grid limit 2^31-1") });
        }
        Ok(LaunchConfig { grid: dim3(blocks as u32, 1, 1), block: dim3(block, 1, 1), shared_bytes: 0 })
    }
}

/// Properties of the device, read from the driver (or the emulator's stand-ins).
#[derive(Clone, Debug, Default)]
pub struct DeviceProps {
    pub name: String,
    pub compute_capability: (i32, i32),
    pub sms: u32,
    pub max_threads_per_sm: u32,
    pub regs_per_sm: u32,
    pub smem_per_sm: u32,
    pub smem_per_block_optin: u32,
    pub l2_bytes: u32,
    pub mem_clock_khz: u32,
    pub bus_width_bits: u32,
    pub sm_clock_khz: u32,
    pub total_mem: usize,
}

impl DeviceProps {
    /// Theoretical DRAM bandwidth in bytes/s: 2 transfers per clock x bus width.
    pub fn peak_bandwidth(&self) -> f64 {
        2.0 * self.mem_clock_khz as f64 * 1e3 * self.bus_width_bits as f64 / 8.0
    }
    /// Theoretical FP32 rate in FLOP/s: SMs x 128 FMA lanes x 2 x clock (sm_80/sm_90: 64 on sm_80).
    pub fn peak_fp32(&self) -> f64 {
        let lanes = if self.compute_capability.0 == 8 && self.compute_capability.1 == 0 { 64.0 } else { 128.0 };
        self.sms as f64 * lanes * 2.0 * self.sm_clock_khz as f64 * 1e3
    }
}

/// One kernel launch seen by the profiler.
#[derive(Clone, Debug)]
pub struct LaunchRecord {
    pub kernel: &'static str,
    pub ms: f64,
}

enum Timing {
    #[cfg(simt_cuda)]
    Events(&'static str, cust::event::Event, cust::event::Event),
    Done(LaunchRecord),
}

enum Backend {
    #[cfg(simt_cuda)]
    Cuda(crate::cuda::CudaDev),
    Emu(EmuConfig),
}

/// A device that runs rust-simt kernels. Create one with [`Gpu::new`].
pub struct Gpu {
    backend: Backend,
    props: DeviceProps,
    note: String,
    profile: RefCell<Option<Vec<Timing>>>,
}

impl Gpu {
    /// Picks the backend: `SIMT_BACKEND=cuda` or `emulator` forces one; otherwise the
    /// GPU when this build has the CUDA backend and a device answers, else the emulator.
    pub fn new() -> Result<Gpu> {
        match std::env::var("SIMT_BACKEND").unwrap_or_default().to_ascii_lowercase().as_str() {
            "cuda" | "gpu" => Gpu::cuda(),
            "emulator" | "emu" | "cpu" => Ok(Gpu::emulator(EmuConfig::default())),
            "" | "auto" => match Gpu::cuda() {
                Ok(g) => Ok(g),
                Err(e) => {
                    let mut g = Gpu::emulator(EmuConfig::default());
                    g.note = format!("no GPU: {e}");
                    Ok(g)
                }
            },
            other => Err(SimtError::NoBackend(format!("SIMT_BACKEND={other} is not one of cuda, emulator, auto"))),
        }
    }

    /// The CPU SIMT emulator with the given settings.
    pub fn emulator(cfg: EmuConfig) -> Gpu {
        let props = DeviceProps {
            name: format!("rust-simt CPU SIMT emulator ({} worker threads)", cfg.workers),
            compute_capability: (9, 0),
            sms: cfg.workers as u32,
            max_threads_per_sm: 2048,
            regs_per_sm: 65536,
            smem_per_sm: 233472,
            smem_per_block_optin: 232448,
            l2_bytes: 0,
            ..Default::default()
        };
        Gpu { backend: Backend::Emu(cfg), props, note: String::new(), profile: RefCell::new(None) }
    }

    /// The first CUDA device.
    pub fn cuda() -> Result<Gpu> {
        #[cfg(simt_cuda)]
        {
            let dev = crate::cuda::CudaDev::new()?;
            let props = dev.props.clone();
            Ok(Gpu { backend: Backend::Cuda(dev), props, note: String::new(), profile: RefCell::new(None) })
        }
        #[cfg(not(simt_cuda))]
        {
            Err(SimtError::NoBackend(
                "this build has no CUDA backend: no NVIDIA driver (libcuda.so.1) was found when it was built. \
                 On a GPU machine rebuild there (or with SIMT_CUDA=1), or run the bundle made by scripts/bundle.sh"
                    .into(),
            ))
        }
    }

    /// Which backend this is.
    pub fn kind(&self) -> BackendKind {
        match self.backend {
            #[cfg(simt_cuda)]
            Backend::Cuda(_) => BackendKind::Cuda,
            Backend::Emu(_) => BackendKind::Emulator,
        }
    }

    /// Device properties.
    pub fn props(&self) -> &DeviceProps {
        &self.props
    }

    /// One line saying what runs the kernels (and why, for the emulator).
    pub fn describe(&self) -> String {
        match self.kind() {
            BackendKind::Cuda => format!("backend: CUDA GPU, {} (sm_{}{})", self.props.name, self.props.compute_capability.0, self.props.compute_capability.1),
            BackendKind::Emulator => {
                let why = if self.note.is_empty() { "selected".to_string() } else { self.note.clone() };
                format!("backend: CPU SIMT emulator ({why}); the same kernel source runs, timings are CPU times")
            }
        }
    }

    /// Allocates `len` elements with unspecified contents (poison them before use in tests).
    pub fn alloc<T: cust::memory::DeviceCopy>(&self, len: usize) -> Result<Buffer<T>> {
        let mem = match &self.backend {
            #[cfg(simt_cuda)]
            Backend::Cuda(_) => {
                // SAFETY: `DeviceCopy` types have no invalid bit patterns the host will
                // observe before the kernels or copies write them.
                let b = unsafe { cust::memory::DeviceBuffer::<T>::uninitialized(len) }.map_err(|e| match e {
                    cust::error::CudaError::OutOfMemory => SimtError::OutOfMemory { bytes: len * std::mem::size_of::<T>() },
                    e => SimtError::Cuda { context: "cuMemAlloc".into(), message: e.to_string() },
                })?;
                Mem::Cuda(b)
            }
            Backend::Emu(_) => Mem::Host(HostMem::new(len * std::mem::size_of::<T>())?, PhantomData),
        };
        Ok(Buffer { mem, len, _t: PhantomData })
    }

    /// Copies a host slice to a new device buffer.
    pub fn upload<T: cust::memory::DeviceCopy>(&self, data: &[T]) -> Result<Buffer<T>> {
        let mut b = self.alloc::<T>(data.len())?;
        self.write(&mut b, data)?;
        Ok(b)
    }

    /// Overwrites a buffer from a host slice of the same length.
    pub fn write<T: cust::memory::DeviceCopy>(&self, buf: &mut Buffer<T>, data: &[T]) -> Result<()> {
        if data.len() != buf.len {
            return Err(SimtError::Shape { op: "write", detail: format!("buffer has {} elements, slice {}", buf.len, data.len()) });
        }
        match &mut buf.mem {
            #[cfg(simt_cuda)]
            Mem::Cuda(b) => {
                use cust::memory::CopyDestination;
                self.synchronize()?;
                b.copy_from(data).map_err(crate::error::cuda("host-to-device copy"))
            }
            Mem::Host(h, _) => {
                // SAFETY: `h` holds `len` elements; the slice has the same length.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), h.ptr as *mut T, data.len()) };
                Ok(())
            }
        }
    }

    /// Waits for all launched work, then copies the buffer to the host.
    pub fn download<T: cust::memory::DeviceCopy + Default + Clone>(&self, buf: &Buffer<T>) -> Result<Vec<T>> {
        self.synchronize()?;
        let mut v = vec![T::default(); buf.len];
        match &buf.mem {
            #[cfg(simt_cuda)]
            Mem::Cuda(b) => {
                use cust::memory::CopyDestination;
                b.copy_to(&mut v[..]).map_err(crate::error::cuda("device-to-host copy"))?;
            }
            Mem::Host(h, _) => {
                // SAFETY: `h` holds `len` elements.
                unsafe { std::ptr::copy_nonoverlapping(h.ptr as *const T, v.as_mut_ptr(), buf.len) };
            }
        }
        Ok(v)
    }

    /// Device-to-device copy of `src` into `dst` (same length), asynchronous on the GPU.
    pub fn copy<T: cust::memory::DeviceCopy>(&self, src: &Buffer<T>, dst: &mut Buffer<T>) -> Result<()> {
        if src.len != dst.len {
            return Err(SimtError::Shape { op: "copy", detail: format!("{} vs {} elements", src.len, dst.len) });
        }
        match (&self.backend, &src.mem, &mut dst.mem) {
            #[cfg(simt_cuda)]
            (Backend::Cuda(c), Mem::Cuda(s), Mem::Cuda(d)) => c.copy_dtod(s, d),
            (Backend::Emu(_), Mem::Host(s, _), Mem::Host(d, _)) => {
                // SAFETY: both hold `len` elements; distinct allocations.
                unsafe { std::ptr::copy_nonoverlapping(s.ptr, d.ptr, src.len * std::mem::size_of::<T>()) };
                Ok(())
            }
            #[allow(unreachable_patterns)]
            _ => Err(SimtError::WrongDevice),
        }
    }

    /// Waits until all launched work has finished; reports asynchronous kernel errors.
    pub fn synchronize(&self) -> Result<()> {
        match &self.backend {
            #[cfg(simt_cuda)]
            Backend::Cuda(c) => c.synchronize(),
            Backend::Emu(_) => Ok(()),
        }
    }

    /// Launches kernel `K`.
    ///
    /// # Safety
    /// This layer cannot check the arguments: every pointer in `args` must be a
    /// buffer of this `Gpu` valid for every access the kernel makes with this grid
    /// and block (its `# Safety` section), buffers the kernel writes must not be
    /// read or written concurrently by other work, and `cfg` must be the mapping
    /// the kernel's `# Thread Mapping` asks for.
    pub unsafe fn launch<K: Kernel>(&self, cfg: LaunchConfig, args: K::Args) -> Result<()>
    where
        K::Args: LaunchArgs,
    {
        let threads = cfg.block.x as u64 * cfg.block.y as u64 * cfg.block.z as u64;
        let bad = |detail: String| Err(SimtError::BadLaunch { kernel: K::NAME, detail });
        if threads == 0 || threads > 1024 || cfg.block.z > 64 {
            return bad(format!("block {:?} has {threads} threads; a block needs 1 to 1024 (z at most 64)", cfg.block));
        }
        if cfg.grid.x == 0 || cfg.grid.y == 0 || cfg.grid.z == 0 || cfg.grid.x > i32::MAX as u32 || cfg.grid.y > 65535 || cfg.grid.z > 65535 {
            return bad(format!("grid {:?} is outside 1..2^31-1 x 1..65535 x 1..65535", cfg.grid));
        }
        if cfg.shared_bytes > self.props.smem_per_block_optin {
            return bad(format!("{} bytes of dynamic shared memory, over the device's {} per block", cfg.shared_bytes, self.props.smem_per_block_optin));
        }
        let profiling = self.profile.borrow().is_some();
        match &self.backend {
            #[cfg(simt_cuda)]
            Backend::Cuda(c) => {
                let ev = if profiling { Some(c.event_pair()?) } else { None };
                if let Some((s, _)) = &ev {
                    c.record(s)?;
                }
                args.with_param_ptrs(|p| c.launch(K::NAME, cfg, p))?;
                if let Some((s, e)) = ev {
                    c.record(&e)?;
                    self.profile.borrow_mut().as_mut().unwrap().push(Timing::Events(K::NAME, s, e));
                }
                Ok(())
            }
            Backend::Emu(e) => {
                let t0 = Instant::now();
                // SAFETY: forwarded from this function's contract.
                unsafe { emulator::run::<K>(cfg.grid, cfg.block, cfg.shared_bytes, args, e)? };
                if profiling {
                    let ms = t0.elapsed().as_secs_f64() * 1e3;
                    self.profile.borrow_mut().as_mut().unwrap().push(Timing::Done(LaunchRecord { kernel: K::NAME, ms }));
                }
                Ok(())
            }
        }
    }

    /// Runs `f` and returns every kernel launched inside it with its GPU time
    /// (CUDA events around each launch; wall time on the emulator).
    pub fn profile<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<(R, Vec<LaunchRecord>)> {
        *self.profile.borrow_mut() = Some(Vec::new());
        let r = f();
        let recs = self.profile.borrow_mut().take().unwrap_or_default();
        let r = r?;
        self.synchronize()?;
        let mut out = Vec::with_capacity(recs.len());
        for t in recs {
            match t {
                #[cfg(simt_cuda)]
                Timing::Events(kernel, s, e) => {
                    let ms = e.elapsed_time_f32(&s).map_err(crate::error::cuda("cuEventElapsedTime"))? as f64;
                    out.push(LaunchRecord { kernel, ms });
                }
                Timing::Done(r) => out.push(r),
            }
        }
        Ok((r, out))
    }

    /// Times `f` on the device: CUDA events around it on the GPU (milliseconds of
    /// GPU time, launch gaps included), wall time after completion on the emulator.
    pub fn time_ms(&self, f: impl FnOnce() -> Result<()>) -> Result<f64> {
        match &self.backend {
            #[cfg(simt_cuda)]
            Backend::Cuda(c) => {
                let (s, e) = c.event_pair()?;
                c.record(&s)?;
                f()?;
                c.record(&e)?;
                e.synchronize().map_err(crate::error::cuda("cuEventSynchronize"))?;
                Ok(e.elapsed_time_f32(&s).map_err(crate::error::cuda("cuEventElapsedTime"))? as f64)
            }
            Backend::Emu(_) => {
                let t0 = Instant::now();
                f()?;
                Ok(t0.elapsed().as_secs_f64() * 1e3)
            }
        }
    }

    /// Per-kernel resources from the driver: (registers per thread, static shared
    /// bytes, local bytes per thread). `None` on the emulator.
    pub fn kernel_resources(&self, name: &str) -> Result<Option<(i32, i32, i32)>> {
        match &self.backend {
            #[cfg(simt_cuda)]
            Backend::Cuda(c) => c.resources(name).map(Some),
            Backend::Emu(_) => {
                let _ = name;
                Ok(None)
            }
        }
    }
}

/// A device buffer of `len` elements of `T` (device memory on the GPU, 256-byte
/// aligned host memory on the emulator).
pub struct Buffer<T: cust::memory::DeviceCopy> {
    mem: Mem<T>,
    len: usize,
    _t: PhantomData<T>,
}

enum Mem<T: cust::memory::DeviceCopy> {
    #[cfg(simt_cuda)]
    Cuda(cust::memory::DeviceBuffer<T>),
    Host(HostMem, PhantomData<T>),
}

impl<T: cust::memory::DeviceCopy> Buffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The device address of element 0, for kernel arguments.
    pub fn ptr(&self) -> *const T {
        match &self.mem {
            #[cfg(simt_cuda)]
            Mem::Cuda(b) => b.as_device_ptr().as_raw() as usize as *const T,
            Mem::Host(h, _) => h.ptr as *const T,
        }
    }
    /// The device address of element 0, for kernel arguments that are written.
    pub fn ptr_mut(&mut self) -> *mut T {
        self.ptr() as *mut T
    }
}

/// 256-byte aligned host allocation standing in for device memory, filled with
/// `0xFF` bytes (NaN as f32) so unwritten outputs show.
struct HostMem {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl HostMem {
    fn new(bytes: usize) -> Result<HostMem> {
        let layout = std::alloc::Layout::from_size_align(bytes.max(256), 256).map_err(|_| SimtError::OutOfMemory { bytes })?;
        // SAFETY: non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            return Err(SimtError::OutOfMemory { bytes });
        }
        // SAFETY: freshly allocated, `layout.size()` bytes.
        unsafe { std::ptr::write_bytes(ptr, 0xFF, layout.size()) };
        Ok(HostMem { ptr, layout })
    }
}

impl Drop for HostMem {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

/// Kernel argument tuples that can be passed to `cuLaunchKernel`.
pub trait LaunchArgs {
    /// Calls `f` with one pointer to each argument, in order.
    fn with_param_ptrs<R>(&self, f: impl FnOnce(&[*mut c_void]) -> R) -> R;
}

macro_rules! launch_args {
    ($($t:ident $i:tt),*) => {
        impl<$($t: KernelParam),*> LaunchArgs for ($($t,)*) {
            fn with_param_ptrs<R>(&self, f: impl FnOnce(&[*mut c_void]) -> R) -> R {
                f(&[$(&self.$i as *const $t as *mut c_void),*])
            }
        }
    };
}
launch_args!(A 0);
launch_args!(A 0, B 1);
launch_args!(A 0, B 1, C 2);
launch_args!(A 0, B 1, C 2, D 3);
launch_args!(A 0, B 1, C 2, D 3, E 4);
launch_args!(A 0, B 1, C 2, D 3, E 4, F 5);
launch_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
launch_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
launch_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
launch_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
