//! The CUDA backend, through `cust` (compiled only with `cfg(simt_cuda)`).
//!
//! Layering as cudarc's: `cust::sys` is the raw driver; [`check`] and
//! [`crate::error::cuda`] turn its statuses into `Result`s; this type is the safe
//! surface the `Gpu` uses. Every call first makes this device's (primary) context
//! current, so two `Gpu`s on one thread never act on each other's context.
//!
//! **Faults.** A kernel that traps or accesses an illegal address leaves the
//! device's (primary) context unusable for the rest of the process: every later call
//! in it fails. The first call that sees it (a synchronize, a copy) returns
//! [`SimtError::KernelFault`] naming the kernels launched since the last
//! synchronize; the context is then marked lost for this device, and every `Gpu`
//! on it answers [`SimtError::ContextLost`]; dropping them frees and unloads nothing.
//! A later [`Gpu::cuda`](crate::Gpu::cuda) resets the primary context
//! (`cuDevicePrimaryCtxReset`) and tries again; on driver 580 (H100, 2026-11-22,
//! `tests/faults.rs`) the driver keeps the fault for the whole process and refuses,
//! so that is `ContextLost` too: only a new process uses the GPU again. Work that may
//! fault (untrusted kernels, a fuzzer) belongs in a child process.
use std::any::Any;
use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::sync::Mutex;

use cust::context::{Context, CurrentContext};
use cust::device::{Device, DeviceAttribute};
use cust::event::{Event as CuEvent, EventFlags};
use cust::function::{Function, FunctionAttribute};
use cust::module::Module as CuModule;
use cust::stream::{Stream, StreamFlags};
use cust::sys;

use super::{Backend, DevPtr, Event};
use crate::device::{BackendKind, DeviceProps, KernelResources, MemInfo};
use crate::error::{cuda, Result, SimtError};
use crate::launch::RawLaunch;
use crate::module::Module;
use crate::tensor_map::{TensorMapDesc, TmaSwizzle};

/// Dynamic shared memory a kernel may use without opting in.
const DEFAULT_DYNAMIC_SMEM: u32 = 48 * 1024;

/// Opts `f` in to `dynamic` bytes of dynamic shared memory when its static plus
/// dynamic shared memory passes the 48 KiB a launch gets without it (a kernel with
/// 48 KiB of dynamic and a 4-byte static array needs the opt-in too).
///
/// # Safety
/// `f` is a valid function handle; `dynamic` is within the device's opt-in limit.
unsafe fn opt_in_shared(f: &cust::function::Function<'_>, dynamic: u32) -> Result<()> {
    let mut static_bytes: i32 = 0;
    // SAFETY: a valid function handle and an out-pointer to an i32.
    let r = unsafe {
        sys::cuFuncGetAttribute(
            &mut static_bytes,
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
            f.to_raw(),
        )
    };
    check(r, "cuFuncGetAttribute(SHARED_SIZE_BYTES)")?;
    if dynamic as u64 + static_bytes.max(0) as u64 > DEFAULT_DYNAMIC_SMEM as u64 {
        // SAFETY: the caller's contract.
        let r = unsafe {
            sys::cuFuncSetAttribute(
                f.to_raw(),
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                dynamic as i32,
            )
        };
        check(r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")?;
    }
    Ok(())
}

pub(crate) struct CudaBackend {
    // Dropped by hand (see `Drop`): modules and stream before the context, and not
    // at all once the context was reset under them.
    modules: ManuallyDrop<Mutex<HashMap<(&'static str, &'static str), CuModule>>>,
    stream: ManuallyDrop<Stream>,
    ctx: Context,
    props: DeviceProps,
    ordinal: u32,
    /// The context generation this backend was made in (see the module docs).
    generation: u64,
    /// Kernels launched since the last successful synchronize, for fault reports.
    in_flight: Mutex<Vec<&'static str>>,
}

/// Per device ordinal: the context generation and whether it is lost.
static CONTEXTS: Mutex<Vec<(u32, u64, bool)>> = Mutex::new(Vec::new());

/// The generation of `ordinal`'s context and whether it is lost.
fn context_state(ordinal: u32) -> (u64, bool) {
    let c = CONTEXTS.lock().unwrap_or_else(|e| e.into_inner());
    c.iter()
        .find(|e| e.0 == ordinal)
        .map(|e| (e.1, e.2))
        .unwrap_or((0, false))
}

/// Driver statuses after which the context cannot be used again.
fn is_sticky(e: cust::error::CudaError) -> bool {
    use cust::error::CudaError as E;
    matches!(
        e,
        E::LaunchFailed
            | E::IllegalAddress
            | E::IllegalInstruction
            | E::MisalignedAddress
            | E::InvalidAddressSpace
            | E::InvalidProgramCounter
            | E::HardwareStackError
            | E::AssertError
            | E::LaunchTimeout
    )
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        let (generation, lost) = context_state(self.ordinal);
        if generation == self.generation && !lost && self.current().is_ok() {
            // SAFETY: dropped once, here, while their context is alive and current.
            unsafe {
                ManuallyDrop::drop(&mut self.modules);
                ManuallyDrop::drop(&mut self.stream);
            }
        }
        // Otherwise their handles belong to a lost or reset context (and may even name
        // objects of the new one): leave them.
    }
}

/// A raw driver status as a `Result`.
fn check(r: sys::CUresult, what: &str) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(SimtError::Driver {
            context: what.to_string(),
            status: format!("{r:?}"),
        })
    }
}

impl CudaBackend {
    pub(crate) fn new(ordinal: u32) -> Result<CudaBackend> {
        cust::init(cust::CudaFlags::empty())
            .map_err(cuda("cuInit (is an NVIDIA GPU and driver present?)"))?;
        let device =
            Device::get_device(ordinal).map_err(cuda(format!("cuDeviceGet({ordinal})")))?;
        let mut contexts = CONTEXTS.lock().unwrap_or_else(|e| e.into_inner());
        if !contexts.iter().any(|e| e.0 == ordinal) {
            contexts.push((ordinal, 0, false));
        }
        let state = contexts.iter_mut().find(|e| e.0 == ordinal).unwrap();
        let was_lost = state.2;
        if was_lost {
            // A new generation: every backend of the old one refuses to touch the
            // context from now on (`alive`), whatever the reset does.
            state.1 += 1;
            // SAFETY: the context is lost: nothing in it can be used any more, and no
            // backend uses it (above).
            unsafe { Context::reset(&device) }.map_err(cuda(
                "cuDevicePrimaryCtxReset after a kernel fault: drop every Gpu and buffer of the lost context and try again, or restart the process",
            ))?;
        }
        let generation = state.1;
        let ctx = match Context::new(device) {
            Ok(c) => c,
            Err(e) if was_lost => {
                return Err(SimtError::ContextLost(format!(
                    "device {ordinal} could not be brought back after a kernel fault ({}): the driver keeps the fault for this process, so only a new process can use the GPU (run work that may fault in a child process)",
                    crate::error::DriverStatus(e)
                )))
            }
            Err(e) => return Err(cuda("creating a CUDA context")(e)),
        };
        // A real driver call in the new context: only once it works is the mark cleared.
        let stream = match Stream::new(StreamFlags::NON_BLOCKING, None) {
            Ok(s) => s,
            Err(e) if was_lost => {
                return Err(SimtError::ContextLost(format!(
                    "device {ordinal} could not be brought back after a kernel fault ({}): the driver keeps the fault for this process, so only a new process can use the GPU (run work that may fault in a child process)",
                    crate::error::DriverStatus(e)
                )))
            }
            Err(e) => return Err(cuda("cuStreamCreate")(e)),
        };
        state.2 = false;
        drop(contexts);
        let a = |x: DeviceAttribute| {
            device
                .get_attribute(x)
                .map(|v| v as u32)
                .map_err(cuda("cuDeviceGetAttribute"))
        };
        let props = DeviceProps {
            name: device.name().map_err(cuda("cuDeviceGetName"))?,
            compute_capability: (
                a(DeviceAttribute::ComputeCapabilityMajor)? as i32,
                a(DeviceAttribute::ComputeCapabilityMinor)? as i32,
            ),
            sms: a(DeviceAttribute::MultiprocessorCount)?,
            max_threads_per_sm: a(DeviceAttribute::MaxThreadsPerMultiprocessor)?,
            regs_per_sm: a(DeviceAttribute::MaxRegistersPerMultiprocessor)?,
            smem_per_sm: a(DeviceAttribute::MaxSharedMemoryPerMultiprocessor)?,
            smem_per_block_optin: {
                let mut v = 0i32;
                // SAFETY: a valid device handle and out-pointer.
                check(
                    unsafe {
                        sys::cuDeviceGetAttribute(&mut v, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device.as_raw())
                    },
                    "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)",
                )?;
                v as u32
            },
            l2_bytes: a(DeviceAttribute::L2CacheSize)?,
            mem_clock_khz: a(DeviceAttribute::MemoryClockRate)?,
            bus_width_bits: a(DeviceAttribute::GlobalMemoryBusWidth)?,
            sm_clock_khz: a(DeviceAttribute::ClockRate)?,
            total_mem: device.total_memory().map_err(cuda("cuDeviceTotalMem"))?,
        };
        Ok(CudaBackend {
            modules: ManuallyDrop::new(Mutex::new(HashMap::new())),
            stream: ManuallyDrop::new(stream),
            ctx,
            props,
            ordinal,
            generation,
            in_flight: Mutex::new(Vec::new()),
        })
    }

    /// `Ok` while this backend's context is usable, else [`SimtError::ContextLost`].
    fn alive(&self) -> Result<()> {
        let (generation, lost) = context_state(self.ordinal);
        if generation != self.generation {
            return Err(SimtError::ContextLost(format!(
                "this Gpu's CUDA context on device {} was reset after a kernel fault; its buffers are gone. Use the Gpu made since (or make one with Gpu::cuda) and upload the inputs again",
                self.ordinal
            )));
        }
        if lost {
            return Err(SimtError::ContextLost(format!(
                "a kernel fault left the CUDA context of device {} unusable for every Gpu of this process; CUDA keeps such a fault for the process, so only a new process can use the GPU (Gpu::cuda() tries a reset, which driver 580 refuses)",
                self.ordinal
            )));
        }
        Ok(())
    }

    fn current(&self) -> Result<()> {
        self.alive()?;
        CurrentContext::set_current(&self.ctx).map_err(cuda("cuCtxSetCurrent"))
    }

    /// A failed synchronize: a sticky status marks the context lost and names the
    /// kernels that may have caused it.
    fn fault(&self, e: cust::error::CudaError, when: &str) -> SimtError {
        let kernels =
            std::mem::take(&mut *self.in_flight.lock().unwrap_or_else(|p| p.into_inner()));
        if is_sticky(e) {
            let mut c = CONTEXTS.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(s) = c
                .iter_mut()
                .find(|s| s.0 == self.ordinal && s.1 == self.generation)
            {
                s.2 = true;
            }
            SimtError::KernelFault {
                kernels,
                source: crate::error::DriverStatus(e),
            }
        } else {
            cuda(format!(
                "{when} (kernels since the last synchronize: {kernels:?})"
            ))(e)
        }
    }
}

impl Backend for CudaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }
    fn props(&self) -> &DeviceProps {
        &self.props
    }
    fn alloc(&self, bytes: usize) -> Result<DevPtr> {
        if bytes == 0 {
            return Ok(0);
        }
        self.current()?;
        // SAFETY: `bytes > 0`; our context is current; the memory is only reached
        // through this pointer until `free`.
        match unsafe { cust::memory::cuda_malloc::<u8>(bytes) } {
            Ok(p) => Ok(p.as_raw()),
            Err(e @ cust::error::CudaError::OutOfMemory) => Err(SimtError::OutOfMemory {
                bytes,
                source: Some(crate::error::DriverStatus(e)),
            }),
            Err(e) => Err(cuda(format!("cuMemAlloc({bytes} bytes)"))(e)),
        }
    }
    unsafe fn free(&self, ptr: DevPtr, _bytes: usize) {
        // A lost or reset context frees nothing (its memory goes with the reset).
        if ptr != 0 && self.current().is_ok() {
            // Frees after the work queued on our stream that may still use it.
            let _ = self.stream.synchronize();
            // SAFETY: allocated by `alloc` on this context (the caller's contract); freed once.
            let _ = unsafe { sys::cuMemFree_v2(ptr) };
        }
    }
    unsafe fn write(&self, dst: DevPtr, src: *const u8, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.synchronize()?;
        // SAFETY: the caller's contract: `dst` holds `bytes`, `src` is readable.
        check(
            unsafe { sys::cuMemcpyHtoD_v2(dst, src as *const std::ffi::c_void, bytes) },
            "host-to-device copy",
        )
    }
    unsafe fn read(&self, src: DevPtr, dst: *mut u8, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.synchronize()?;
        // SAFETY: as `write`.
        check(
            unsafe { sys::cuMemcpyDtoH_v2(dst as *mut std::ffi::c_void, src, bytes) },
            "device-to-host copy",
        )
    }
    unsafe fn copy(&self, src: DevPtr, dst: DevPtr, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.current()?;
        // SAFETY: both hold `bytes` (the caller's contract); ordered on our stream.
        check(
            unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, self.stream.as_inner()) },
            "cuMemcpyDtoDAsync",
        )
    }
    fn synchronize(&self) -> Result<()> {
        self.current()?;
        match self.stream.synchronize() {
            Ok(()) => {
                self.in_flight
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clear();
                Ok(())
            }
            Err(e) => Err(self.fault(e, "a kernel (reported at stream synchronize)")),
        }
    }
    fn load(&self, m: &Module) -> Result<()> {
        self.current()?;
        let mut mods = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        if !mods.contains_key(&(m.crate_name(), m.target())) {
            let module = CuModule::from_ptx(m.ptx(), &[])
                .map_err(cuda(format!("loading the PTX module of `{}` (.target {}; is the driver too old for its .version?)", m.crate_name(), m.target())))?;
            mods.insert((m.crate_name(), m.target()), module);
        }
        Ok(())
    }
    unsafe fn launch(&self, l: &RawLaunch) -> Result<()> {
        self.current()?;
        let mods = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        let module = mods
            .get(&(l.module, l.target))
            .ok_or(SimtError::ModuleNotLoaded {
                kernel: l.kernel,
                module: l.module,
            })?;
        let f = module.get_function(l.kernel).map_err(cuda(format!(
            "finding kernel `{}` in the PTX module of `{}`",
            l.kernel, l.module
        )))?;
        // SAFETY: a valid function handle; the size was checked against the device's opt-in limit.
        unsafe { opt_in_shared(&f, l.shared_bytes)? };
        let (g, b) = (l.grid, l.block);
        // Listed once the driver took it: a launch that never ran cannot be the one a
        // later fault report blames.
        let in_flight = || {
            let mut f = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
            if f.len() == 64 {
                f.remove(0);
            }
            f.push(l.kernel);
        };
        if l.cooperative {
            // SAFETY: as the plain launch below; the driver checks that every block is
            // resident at once and refuses the launch otherwise.
            let r = unsafe {
                sys::cuLaunchCooperativeKernel(
                    f.to_raw(),
                    g.x,
                    g.y,
                    g.z,
                    b.x,
                    b.y,
                    b.z,
                    l.shared_bytes,
                    self.stream.as_inner(),
                    l.params.as_ptr() as *mut *mut std::ffi::c_void,
                )
            };
            let what = format!("cuLaunchCooperativeKernel(`{}`)", l.kernel);
            // A refusal of this launch (the grid does not fit at once, or the device or
            // its MPS share takes no cooperative launches) is `CooperativeRefused`,
            // which a caller may answer with another kernel; any other status (such as
            // an earlier kernel's fault surfacing here) stays a driver error.
            use sys::CUresult::*;
            let why = match r {
                CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE => "the device cannot hold the whole grid at once (size it with Gpu::max_resident_blocks; an MPS client may hold fewer SMs than the device has)",
                CUDA_ERROR_NOT_SUPPORTED | CUDA_ERROR_NOT_PERMITTED => "this device or its MPS share takes no cooperative launches",
                _ => {
                    check(r, &what)?;
                    in_flight();
                    return Ok(());
                }
            };
            return Err(SimtError::CooperativeRefused {
                kernel: l.kernel,
                detail: format!("{what}: {r:?}: {why}"),
            });
        }
        // SAFETY: one pointer per kernel parameter, each to a value of the parameter's
        // type (`LaunchArgs` of the kernel's own tuple); what they point to is
        // `Gpu::launch`'s contract.
        unsafe {
            self.stream.launch(
                &f,
                (g.x, g.y, g.z),
                (b.x, b.y, b.z),
                l.shared_bytes,
                l.params,
            )
        }
        .map_err(|e| SimtError::BadLaunch {
            kernel: l.kernel,
            detail: format!("cuLaunchKernel failed: {e}"),
        })?;
        in_flight();
        Ok(())
    }
    fn event(&self) -> Result<Box<dyn Event>> {
        self.current()?;
        let e = CuEvent::new(EventFlags::DEFAULT).map_err(cuda("cuEventCreate"))?;
        Ok(Box::new(CudaEvent(e)))
    }
    fn record(&self, e: &dyn Event) -> Result<()> {
        let e = e
            .as_any()
            .downcast_ref::<CudaEvent>()
            .expect("an event of this backend");
        e.0.record(&self.stream).map_err(cuda("cuEventRecord"))
    }
    fn encode_tensor_map(&self, d: &TensorMapDesc) -> Result<[u64; 16]> {
        self.current()?;
        let mut map = AlignedMap([0; 16]);
        let dims = d.dims;
        let strides = d.strides;
        let boxdim = d.boxdim;
        let elem_strides = [1u32, 1, 1];
        let swizzle = match d.swizzle {
            TmaSwizzle::None => 0, // CU_TENSOR_MAP_SWIZZLE_NONE
            TmaSwizzle::B128 => 3, // CU_TENSOR_MAP_SWIZZLE_128B
        };
        // SAFETY: every pointer is to a local array at least as long as the driver
        // reads for rank d.rank <= 3 (dims and box rank, strides rank - 1, element
        // strides rank); the map is 64-byte aligned and 128 bytes; the arguments were
        // checked by `TensorMap`'s constructors.
        let status = unsafe {
            cuTensorMapEncodeTiled(
                map.0.as_mut_ptr() as *mut std::ffi::c_void,
                d.cu_type,
                d.rank,
                d.global as *mut std::ffi::c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                boxdim.as_ptr(),
                elem_strides.as_ptr(),
                0, // CU_TENSOR_MAP_INTERLEAVE_NONE
                swizzle,
                2, // CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                0, // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: zeros outside the matrix
            )
        };
        if status != 0 {
            return Err(SimtError::Driver {
                context: format!("cuTensorMapEncodeTiled ({d:?})"),
                status: format!("status {status}"),
            });
        }
        Ok(map.0)
    }
    fn max_active_blocks(
        &self,
        module: &str,
        target: &str,
        kernel: &str,
        block_threads: u32,
        shared_bytes: u32,
    ) -> Result<u32> {
        self.with_function(module, target, kernel, shared_bytes, |f| {
            f.max_active_blocks_per_multiprocessor(block_threads.into(), shared_bytes as usize)
                .map_err(cuda("cuOccupancyMaxActiveBlocksPerMultiprocessor"))
        })
    }
    fn max_active_clusters(
        &self,
        module: &str,
        target: &str,
        kernel: &str,
        block_threads: u32,
        shared_bytes: u32,
        cluster: u32,
    ) -> Result<u32> {
        self.with_function(module, target, kernel, shared_bytes, |f| {
            clusters_of(f, kernel, block_threads, shared_bytes, cluster)
        })
    }
    fn mem_info(&self) -> Result<MemInfo> {
        self.current()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: our context is current; two valid out-pointers.
        check(
            unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) },
            "cuMemGetInfo",
        )?;
        Ok(MemInfo { free, total })
    }
    fn kernel_resources(
        &self,
        module: &str,
        target: &str,
        kernel: &str,
    ) -> Result<Option<KernelResources>> {
        self.current()?;
        let mods = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        let Some(m) = mods
            .iter()
            .find(|((c, t), _)| *c == module && *t == target)
            .map(|(_, m)| m)
        else {
            return Ok(None);
        };
        let f = m
            .get_function(kernel)
            .map_err(cuda(format!("finding kernel `{kernel}`")))?;
        let g = |a| {
            f.get_attribute(a)
                .map(|v| v as u32)
                .map_err(cuda("cuFuncGetAttribute"))
        };
        Ok(Some(KernelResources {
            registers: g(FunctionAttribute::NumRegisters)?,
            static_smem_bytes: g(FunctionAttribute::SharedMemorySizeBytes)?,
            local_bytes: g(FunctionAttribute::LocalSizeBytes)?,
        }))
    }
}

struct CudaEvent(CuEvent);

impl Event for CudaEvent {
    fn synchronize(&self) -> Result<()> {
        self.0.synchronize().map_err(cuda("cuEventSynchronize"))
    }
    fn elapsed_ms(&self, start: &dyn Event) -> Result<f64> {
        let s = start
            .as_any()
            .downcast_ref::<CudaEvent>()
            .expect("events of one backend");
        Ok(self
            .0
            .elapsed_time_f32(&s.0)
            .map_err(cuda("cuEventElapsedTime"))? as f64)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl CudaBackend {
    /// Runs `f` on `kernel` of a loaded module, its shared-memory opt-in set to
    /// `shared_bytes`.
    fn with_function<R>(
        &self,
        module: &str,
        target: &str,
        kernel: &str,
        shared_bytes: u32,
        f: impl FnOnce(&Function) -> Result<R>,
    ) -> Result<R> {
        self.current()?;
        let mods = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        let m = mods
            .iter()
            .find(|((c, t), _)| *c == module && *t == target)
            .map(|(_, m)| m)
            .ok_or_else(|| {
                SimtError::Unsupported(format!("module `{module}` ({target}) is not loaded"))
            })?;
        let func = m
            .get_function(kernel)
            .map_err(cuda(format!("finding kernel `{kernel}`")))?;
        // SAFETY: a valid function handle; the size is within the device's opt-in limit (validated by the caller).
        unsafe { opt_in_shared(&func, shared_bytes)? };
        f(&func)
    }
}

/// The driver's count of `cluster`-block clusters of `f` the device holds at once.
fn clusters_of(
    f: &Function,
    kernel: &str,
    block_threads: u32,
    shared_bytes: u32,
    cluster: u32,
) -> Result<u32> {
    let config = LaunchConfigRaw {
        grid: [cluster, 1, 1],
        block: [block_threads, 1, 1],
        shared_bytes,
        stream: std::ptr::null_mut(),
        attrs: std::ptr::null_mut(),
        num_attrs: 0,
    };
    let mut clusters: i32 = 0;
    // SAFETY: a valid function handle of the current context; `config` is a
    // `CUlaunchConfig` with no attributes (the kernel's cluster size is in its PTX).
    let status = unsafe {
        cuOccupancyMaxActiveClusters(&mut clusters, f.to_raw() as *mut std::ffi::c_void, &config)
    };
    if status != 0 {
        return Err(SimtError::Driver {
            context: format!("cuOccupancyMaxActiveClusters(`{kernel}`, clusters of {cluster})"),
            status: format!("status {status}"),
        });
    }
    Ok(clusters.max(0) as u32)
}

/// The driver's `CUlaunchConfig` (CUDA 12.0+), for the occupancy query only.
#[repr(C)]
struct LaunchConfigRaw {
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    stream: *mut std::ffi::c_void,
    attrs: *mut std::ffi::c_void,
    num_attrs: u32,
}

/// A `CUtensorMap`: 128 bytes, 64-byte aligned.
#[repr(C, align(64))]
struct AlignedMap([u64; 16]);

extern "C" {
    /// Clusters of a kernel that the device holds at once (CUDA 12.0+; not in `cust`
    /// 0.3). The result is a `CUresult` read as an integer.
    fn cuOccupancyMaxActiveClusters(
        num_clusters: *mut i32,
        func: *mut std::ffi::c_void,
        config: *const LaunchConfigRaw,
    ) -> i32;
    /// The driver's tensor-map encoder (CUDA 12.0+; `cust` 0.3 does not bind it).
    /// Enums are C `int`s; the result is a `CUresult` read as an integer, so a status
    /// this binding does not know is not undefined behaviour.
    fn cuTensorMapEncodeTiled(
        tensor_map: *mut std::ffi::c_void,
        data_type: u32,
        rank: u32,
        global_address: *mut std::ffi::c_void,
        global_dim: *const u64,
        global_strides: *const u64,
        box_dim: *const u32,
        element_strides: *const u32,
        interleave: u32,
        swizzle: u32,
        l2_promotion: u32,
        oob_fill: u32,
    ) -> i32;
}
