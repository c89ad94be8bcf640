//! The backends behind a [`Gpu`](crate::Gpu): the CUDA driver (through `cust`) and
//! the CPU SIMT emulator, one trait, chosen once when the `Gpu` is made.
//!
//! This is the only place where `cfg(simt_cuda)` decides anything: without the
//! CUDA backend compiled in, [`cuda()`] says why and everything else is unchanged.
use std::any::Any;

use crate::device::{BackendKind, DeviceProps, KernelResources, MemInfo};
use crate::error::Result;
use crate::launch::RawLaunch;
use crate::module::Module;
use crate::tensor_map::TensorMapDesc;

#[cfg(simt_cuda)]
mod cuda;
mod emu;

pub(crate) use emu::EmuBackend;

/// A device address (a host address on the emulator).
pub(crate) type DevPtr = u64;

/// What a backend does. Buffers hold an `Arc` of their backend, so a backend
/// outlives every allocation made on it.
pub(crate) trait Backend: Send + Sync {
    fn kind(&self) -> BackendKind;
    fn props(&self) -> &DeviceProps;
    /// `bytes` of device memory (any contents), 256-byte aligned; 0 bytes is a null pointer.
    fn alloc(&self, bytes: usize) -> Result<DevPtr>;
    /// # Safety
    /// `ptr` came from `alloc(bytes)` on this backend and is freed once.
    unsafe fn free(&self, ptr: DevPtr, bytes: usize);
    /// Host to device, after all queued work.
    /// # Safety
    /// `dst` holds `bytes` on this backend; `src` is readable for `bytes`.
    unsafe fn write(&self, dst: DevPtr, src: *const u8, bytes: usize) -> Result<()>;
    /// Device to host, after all queued work.
    /// # Safety
    /// `src` holds `bytes` on this backend; `dst` is writable for `bytes`.
    unsafe fn read(&self, src: DevPtr, dst: *mut u8, bytes: usize) -> Result<()>;
    /// Device to device, queued in order with the launches.
    /// # Safety
    /// Both hold `bytes` on this backend and do not overlap.
    unsafe fn copy(&self, src: DevPtr, dst: DevPtr, bytes: usize) -> Result<()>;
    /// Waits for all queued work; reports asynchronous kernel errors.
    fn synchronize(&self) -> Result<()>;
    /// Makes a module's kernels launchable.
    fn load(&self, m: &Module) -> Result<()>;
    /// Queues (CUDA) or runs (emulator) a validated launch.
    /// # Safety
    /// `Gpu::launch`'s contract.
    unsafe fn launch(&self, l: &RawLaunch) -> Result<()>;
    /// A timing event.
    fn event(&self) -> Result<Box<dyn Event>>;
    /// Records `e` at this point of the launch order.
    fn record(&self, e: &dyn Event) -> Result<()>;
    /// The driver's resource report of a loaded kernel (`None` on the emulator).
    fn kernel_resources(
        &self,
        module: &str,
        target: &str,
        kernel: &str,
    ) -> Result<Option<KernelResources>>;
    /// Blocks of `kernel` (with this block size and dynamic shared memory) that one
    /// SM holds at once: the driver's occupancy calculator; 1 on the emulator.
    fn max_active_blocks(
        &self,
        module: &str,
        target: &str,
        kernel: &str,
        block_threads: u32,
        shared_bytes: u32,
    ) -> Result<u32>;
    /// Clusters of `cluster` blocks of `kernel` (a kernel with compile-time cluster
    /// dimensions) that the whole device holds at once: the driver's
    /// `cuOccupancyMaxActiveClusters` (clusters must fit inside one GPC, so this can be
    /// less than SMs / cluster); SMs / cluster on the emulator.
    fn max_active_clusters(
        &self,
        module: &str,
        target: &str,
        kernel: &str,
        block_threads: u32,
        shared_bytes: u32,
        cluster: u32,
    ) -> Result<u32>;
    /// Free and total device memory.
    fn mem_info(&self) -> Result<MemInfo>;
    /// The 128 bytes of a checked tensor map (the driver's, or the emulator's).
    fn encode_tensor_map(&self, d: &TensorMapDesc) -> Result<[u64; 16]>;
}

/// A point in the launch order whose time can be read once the work before it ran.
pub(crate) trait Event: Send {
    fn synchronize(&self) -> Result<()>;
    /// Milliseconds from `start` to this event.
    fn elapsed_ms(&self, start: &dyn Event) -> Result<f64>;
    fn as_any(&self) -> &dyn Any;
}

/// The CUDA backend on device `ordinal`, or why there is none.
pub(crate) fn cuda(ordinal: u32) -> Result<Box<dyn Backend>> {
    #[cfg(simt_cuda)]
    {
        Ok(Box::new(cuda::CudaBackend::new(ordinal)?))
    }
    #[cfg(not(simt_cuda))]
    {
        let _ = ordinal;
        Err(crate::error::SimtError::NoBackend(
            "this build has no CUDA backend: no NVIDIA driver (libcuda.so.1) was found when it was built. \
             On a GPU machine rebuild there (or with SIMT_CUDA=1), or run the bundle made by scripts/bundle.sh"
                .into(),
        ))
    }
}
