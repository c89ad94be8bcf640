//! The emulator backend: device memory is poisoned host memory, launches run to
//! completion on the CPU SIMT emulator, events are host clock readings (launches
//! are synchronous, so they time the same span a GPU event pair would).
use std::any::Any;
use std::cell::Cell;
use std::time::Instant;

use super::{Backend, DevPtr, Event};
use crate::device::{BackendKind, DeviceProps, KernelResources, MemInfo};
use crate::emulator::{self, fault, EmuConfig, EmuLaunch};
use crate::error::{Result, SimtError};
use crate::launch::RawLaunch;
use crate::module::Module;
use crate::tensor_map::TensorMapDesc;

pub(crate) struct EmuBackend {
    cfg: EmuConfig,
    props: DeviceProps,
    /// Whose buffers these are (see [`fault`]).
    id: u64,
}

static NEXT_EMU: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl EmuBackend {
    pub(crate) fn new(cfg: EmuConfig) -> EmuBackend {
        let props = DeviceProps {
            name: format!(
                "rust-simt CPU SIMT emulator ({} worker threads)",
                cfg.workers
            ),
            compute_capability: (9, 0),
            sms: cfg.workers as u32,
            max_threads_per_sm: 2048,
            regs_per_sm: 65536,
            smem_per_sm: 233472,
            smem_per_block_optin: 232448,
            l2_bytes: 0,
            ..Default::default()
        };
        EmuBackend {
            cfg,
            props,
            id: NEXT_EMU.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }
}

impl Backend for EmuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Emulator
    }
    fn props(&self) -> &DeviceProps {
        &self.props
    }
    fn alloc(&self, bytes: usize) -> Result<DevPtr> {
        if bytes == 0 {
            return Ok(0);
        }
        // The emulated device holds what the host's physical memory does; past that (or
        // when the host refuses the mapping) the same typed error as a GPU's.
        let free = self.mem_info()?.free;
        let oom = || crate::error::SimtError::OutOfMemory {
            bytes,
            source: None,
        };
        if bytes > free {
            return Err(oom());
        }
        fault::alloc(bytes, self.id)
            .map(|p| p as DevPtr)
            .map_err(|_| oom())
    }
    unsafe fn free(&self, ptr: DevPtr, _bytes: usize) {
        if ptr != 0 {
            // SAFETY: `alloc` made it (this function's contract); freed once.
            unsafe { fault::free(ptr as usize) };
        }
    }
    unsafe fn write(&self, dst: DevPtr, src: *const u8, bytes: usize) -> Result<()> {
        if bytes > 0 {
            // SAFETY: the caller's contract; host memory on both sides.
            unsafe { std::ptr::copy_nonoverlapping(src, dst as *mut u8, bytes) };
        }
        Ok(())
    }
    unsafe fn read(&self, src: DevPtr, dst: *mut u8, bytes: usize) -> Result<()> {
        if bytes > 0 {
            // SAFETY: as `write`.
            unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst, bytes) };
        }
        Ok(())
    }
    unsafe fn copy(&self, src: DevPtr, dst: DevPtr, bytes: usize) -> Result<()> {
        if bytes > 0 {
            // SAFETY: as `write`; distinct allocations.
            unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, bytes) };
        }
        Ok(())
    }
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    fn load(&self, _: &Module) -> Result<()> {
        Ok(()) // the kernels' host build is linked in; the Gpu records what was loaded
    }
    unsafe fn launch(&self, l: &RawLaunch) -> Result<()> {
        if l.cooperative && !self.cfg.cooperative {
            return Err(SimtError::CooperativeRefused {
                kernel: l.kernel,
                detail: "this emulated device takes no cooperative launches (EmuConfig::cooperative is false, as on a device shared through MPS)".into(),
            });
        }
        let launch = EmuLaunch {
            kernel: l.kernel,
            grid: l.grid,
            block: l.block,
            shared_bytes: l.shared_bytes,
            entry: l.emu,
            cooperative: l.cooperative,
            cluster: l.cluster.max(1),
            min_blocks: l.min_blocks,
        };
        // SAFETY: forwarded from `Gpu::launch`.
        let ran = unsafe { emulator::run(launch, &self.cfg) };
        // The slack is checked (and refilled) whether or not the launch failed, so a
        // stray write is never blamed on a later launch.
        let slack = fault::check_slack(self.id);
        ran?;
        match slack {
            Some(detail) => Err(emulator::EmuError::OutOfBounds {
                kernel: l.kernel,
                detail,
            }
            .into()),
            None => Ok(()),
        }
    }
    fn event(&self) -> Result<Box<dyn Event>> {
        Ok(Box::new(HostEvent(Cell::new(None))))
    }
    fn record(&self, e: &dyn Event) -> Result<()> {
        let e = e
            .as_any()
            .downcast_ref::<HostEvent>()
            .expect("an event of this backend");
        e.0.set(Some(Instant::now()));
        Ok(())
    }
    fn mem_info(&self) -> Result<MemInfo> {
        // SAFETY: sysconf has no preconditions.
        let (pages, page) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        let total = (pages.max(0) as usize).saturating_mul(page.max(0) as usize);
        Ok(MemInfo {
            free: total.saturating_sub(fault::bytes_in_use_all()),
            total,
        })
    }
    fn encode_tensor_map(&self, d: &TensorMapDesc) -> Result<[u64; 16]> {
        Ok(crate::tensor_map::emulator_words(d))
    }
    fn kernel_resources(&self, _: &str, _: &str, _: &str) -> Result<Option<KernelResources>> {
        Ok(None)
    }
    fn max_active_clusters(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: u32,
        _: u32,
        cluster: u32,
    ) -> Result<u32> {
        Ok(self.props().sms / cluster.max(1))
    }
    fn max_active_blocks(&self, _: &str, _: &str, _: &str, _: u32, _: u32) -> Result<u32> {
        Ok(1) // one block per worker (an emulated SM)
    }
}

struct HostEvent(Cell<Option<Instant>>);

impl Event for HostEvent {
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    fn elapsed_ms(&self, start: &dyn Event) -> Result<f64> {
        let s = start
            .as_any()
            .downcast_ref::<HostEvent>()
            .and_then(|e| e.0.get());
        match (s, self.0.get()) {
            (Some(s), Some(e)) => Ok(e.duration_since(s).as_secs_f64() * 1e3),
            _ => Ok(0.0),
        }
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
