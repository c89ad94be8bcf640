//! What the device is: properties read from the driver (or the emulator's stand-ins),
//! and the rates a roofline needs.

/// Which backend runs the kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// An NVIDIA GPU through the CUDA driver.
    Cuda,
    /// The CPU SIMT emulator.
    Emulator,
}

/// Device memory, as `cuMemGetInfo` reports it: bytes free and in total. On the
/// emulator `total` is the host's physical memory and `free` is that less this
/// emulator's live buffers (other host memory use is not counted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemInfo {
    pub free: usize,
    pub total: usize,
}

/// Properties of the device.
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
    /// Theoretical FP32 rate in FLOP/s: SMs x FMA lanes x 2 x clock (128 lanes per SM
    /// from sm_86 on, 64 on sm_80).
    pub fn peak_fp32(&self) -> f64 {
        let lanes = if self.compute_capability == (8, 0) {
            64.0
        } else {
            128.0
        };
        self.sms as f64 * lanes * 2.0 * self.sm_clock_khz as f64 * 1e3
    }
    /// `sm_XY` of the compute capability.
    pub fn sm(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }
}

/// A kernel's resources as the driver reports them after loading its module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelResources {
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory per block, bytes.
    pub static_smem_bytes: u32,
    /// Local memory per thread (stack, spills), bytes.
    pub local_bytes: u32,
}
