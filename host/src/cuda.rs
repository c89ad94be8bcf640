//! The CUDA backend, through `cust` (built only with `cfg(simt_cuda)`).
use std::ffi::c_void;

use cust::context::Context;
use cust::device::{Device, DeviceAttribute};
use cust::event::{Event, EventFlags};
use cust::function::FunctionAttribute;
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};

use crate::error::{cuda, Result, SimtError};
use crate::gpu::{DeviceProps, LaunchConfig, PTX};

/// Dynamic shared memory a kernel may use without opting in.
const DEFAULT_DYNAMIC_SMEM: u32 = 48 * 1024;

pub(crate) struct CudaDev {
    // Field order is drop order: module and stream before the context.
    module: Module,
    stream: Stream,
    _ctx: Context,
    pub(crate) props: DeviceProps,
}

impl CudaDev {
    pub(crate) fn new() -> Result<CudaDev> {
        cust::init(cust::CudaFlags::empty()).map_err(cuda("cuInit (is an NVIDIA GPU and driver present?)"))?;
        let device = Device::get_device(0).map_err(cuda("cuDeviceGet(0)"))?;
        let ctx = Context::new(device).map_err(cuda("creating a CUDA context"))?;
        let module = Module::from_ptx(PTX, &[]).map_err(cuda("loading the PTX module (driver too old for its .version?)"))?;
        let stream = Stream::new(StreamFlags::NON_BLOCKING, None).map_err(cuda("cuStreamCreate"))?;
        let a = |x: DeviceAttribute| device.get_attribute(x).map(|v| v as u32).map_err(cuda("cuDeviceGetAttribute"));
        let props = DeviceProps {
            name: device.name().map_err(cuda("cuDeviceGetName"))?,
            compute_capability: (a(DeviceAttribute::ComputeCapabilityMajor)? as i32, a(DeviceAttribute::ComputeCapabilityMinor)? as i32),
            sms: a(DeviceAttribute::MultiprocessorCount)?,
            max_threads_per_sm: a(DeviceAttribute::MaxThreadsPerMultiprocessor)?,
            regs_per_sm: a(DeviceAttribute::MaxRegistersPerMultiprocessor)?,
            smem_per_sm: a(DeviceAttribute::MaxSharedMemoryPerMultiprocessor)?,
            smem_per_block_optin: {
                let mut v = 0i32;
                // SAFETY: valid device handle and out-pointer.
                check(
                    unsafe { cust::sys::cuDeviceGetAttribute(&mut v, cust::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device.as_raw()) },
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
        Ok(CudaDev { module, stream, _ctx: ctx, props })
    }

    pub(crate) fn launch(&self, name: &'static str, cfg: LaunchConfig, params: &[*mut c_void]) -> Result<()> {
        let f = self.module.get_function(name).map_err(cuda(format!("finding kernel `{name}` in the PTX module")))?;
        if cfg.shared_bytes > DEFAULT_DYNAMIC_SMEM {
            // SAFETY: valid function handle; the value was checked against the device's opt-in limit.
            let r = unsafe {
                cust::sys::cuFuncSetAttribute(
                    f.to_raw(),
                    cust::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    cfg.shared_bytes as i32,
                )
            };
            check(r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")?;
        }
        let g = cfg.grid;
        let b = cfg.block;
        // SAFETY: the caller (`Gpu::launch`) passes one pointer per kernel parameter,
        // each to a value of the parameter's type; validity of what they point to is
        // `Gpu::launch`'s contract.
        unsafe { self.stream.launch(&f, (g.x, g.y, g.z), (b.x, b.y, b.z), cfg.shared_bytes, params) }.map_err(|e| SimtError::BadLaunch {
            kernel: name,
            detail: format!("cuLaunchKernel failed: {e}"),
        })
    }

    pub(crate) fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(cuda("a kernel (reported at stream synchronize)"))
    }

    pub(crate) fn event_pair(&self) -> Result<(Event, Event)> {
        let e = || Event::new(EventFlags::DEFAULT).map_err(cuda("cuEventCreate"));
        Ok((e()?, e()?))
    }

    pub(crate) fn record(&self, e: &Event) -> Result<()> {
        e.record(&self.stream).map_err(cuda("cuEventRecord"))
    }

    pub(crate) fn copy_dtod<T: cust::memory::DeviceCopy>(&self, s: &cust::memory::DeviceBuffer<T>, d: &mut cust::memory::DeviceBuffer<T>) -> Result<()> {
        let bytes = s.len() * std::mem::size_of::<T>();
        // SAFETY: both buffers hold `bytes` bytes; ordered on our stream.
        let r = unsafe { cust::sys::cuMemcpyDtoDAsync_v2(d.as_device_ptr().as_raw(), s.as_device_ptr().as_raw(), bytes, self.stream.as_inner()) };
        check(r, "cuMemcpyDtoDAsync")
    }

    pub(crate) fn resources(&self, name: &str) -> Result<(i32, i32, i32)> {
        let f = self.module.get_function(name).map_err(cuda(format!("finding kernel `{name}`")))?;
        let g = |a| f.get_attribute(a).map_err(cuda("cuFuncGetAttribute"));
        Ok((g(FunctionAttribute::NumRegisters)?, g(FunctionAttribute::SharedMemorySizeBytes)?, g(FunctionAttribute::LocalSizeBytes)?))
    }
}

/// A raw driver status as a `Result`.
fn check(r: cust::sys::CUresult, what: &str) -> Result<()> {
    if r == cust::sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(SimtError::Cuda { context: what.to_string(), message: format!("{r:?}") })
    }
}
