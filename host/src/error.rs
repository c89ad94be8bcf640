//! Typed errors: every call returns these instead of panicking, and each message
//! says what to do.
use crate::emulator::EmuError;

/// Everything a rust-simt call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum SimtError {
    /// Buffer lengths or strides do not fit the stated shape.
    #[error("{op}: shape mismatch: {detail}")]
    Shape { op: &'static str, detail: String },
    /// The shape is valid but beyond what a kernel is designed for.
    #[error("{op}: input too large for this kernel: {detail}")]
    TooLarge { op: &'static str, detail: String },
    /// A launch the kernel's contract or the hardware does not allow.
    #[error("launch of `{kernel}`: {detail}")]
    BadLaunch {
        kernel: &'static str,
        detail: String,
    },
    /// A cooperative launch the device refused before anything ran: it cannot hold
    /// the whole grid at once, or it takes no cooperative launches at all (a device
    /// shared through MPS). The ops that launch cooperatively answer it with a kernel
    /// that needs no co-residency (docs/RELIABILITY.md).
    #[error("cooperative launch of `{kernel}` refused: {detail}")]
    CooperativeRefused {
        kernel: &'static str,
        detail: String,
    },
    /// A device allocation failed.
    #[error("out of device memory allocating {bytes} bytes; free buffers or use smaller inputs")]
    OutOfMemory {
        bytes: usize,
        #[source]
        source: Option<DriverStatus>,
    },
    /// The CUDA driver reported an error.
    #[error("CUDA error in {context}: {source}")]
    Cuda {
        context: String,
        #[source]
        source: DriverStatus,
    },
    /// A raw driver call failed (a status `cust` has no error value for).
    #[error("CUDA driver returned {status} in {context}")]
    Driver { context: String, status: String },
    /// The emulator reported an error (barrier/shuffle divergence, a kernel panic).
    #[error(transparent)]
    Emulator(#[from] EmuError),
    /// The requested backend is not available.
    #[error("{0}")]
    NoBackend(String),
    /// A kernel whose module was not loaded on this `Gpu`.
    #[error("kernel `{kernel}` is in the module of crate `{module}`, which this Gpu has not loaded: call `gpu.load(&MODULE)` with the MODULE that simt-builder generated for that crate")]
    ModuleNotLoaded {
        kernel: &'static str,
        module: &'static str,
    },
    /// A buffer of another `Gpu` (or another backend) was passed.
    #[error("{op}: `{what}` belongs to another Gpu ({detail}); allocate every buffer of an op on the Gpu that runs it")]
    WrongDevice {
        op: &'static str,
        what: &'static str,
        detail: String,
    },
    /// A kernel trapped (a failed assertion, `trap`) or made an illegal memory access.
    /// The GPU reports it at the next synchronize, so `kernels` lists those launched
    /// since the last one (in launch order, the culprit among them). The CUDA context
    /// is lost: see [`SimtError::ContextLost`].
    #[error("a kernel faulted ({source}); launched since the last synchronize: {kernels:?}. The CUDA context is lost for the rest of this process (every call on this device now returns ContextLost; a new process can use the GPU). Run the failing op on the emulator (which names the block and thread) or under compute-sanitizer to find the access")]
    KernelFault {
        kernels: Vec<&'static str>,
        #[source]
        source: DriverStatus,
    },
    /// This `Gpu`'s CUDA context was lost to an earlier kernel fault.
    #[error("{0}")]
    ContextLost(String),
    /// The device cannot run this kernel (too old an architecture for its module).
    #[error("{0}")]
    Unsupported(String),
}

/// A CUDA driver status (`cust`'s error value), the source of [`SimtError::Cuda`].
///
/// Displayed from its name and code: `cust`'s own `Display` asks the driver for the
/// text, which would link `libcuda` into builds that have no CUDA backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverStatus(pub cust::error::CudaError);

impl std::fmt::Display for DriverStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} (CUresult {})", self.0, self.0 as u32)
    }
}

impl std::error::Error for DriverStatus {}

/// `Result` with [`SimtError`].
pub type Result<T> = std::result::Result<T, SimtError>;

/// Maps a driver error to [`SimtError::Cuda`], keeping the driver's status as the source.
#[cfg_attr(not(simt_cuda), allow(dead_code))]
pub(crate) fn cuda(context: impl Into<String>) -> impl FnOnce(cust::error::CudaError) -> SimtError {
    let context = context.into();
    move |e| SimtError::Cuda {
        context,
        source: DriverStatus(e),
    }
}
