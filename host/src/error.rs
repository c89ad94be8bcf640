//! Typed errors: every op returns these instead of panicking.
use std::fmt;

use crate::emulator::EmuError;

/// Everything a rust-simt call can fail with.
#[derive(Debug)]
pub enum SimtError {
    /// Buffer lengths or strides do not fit the stated shape.
    Shape { op: &'static str, detail: String },
    /// The shape is valid but beyond what a kernel is designed for.
    TooLarge { op: &'static str, detail: String },
    /// A dimension or length is zero where the op needs data.
    Empty { op: &'static str },
    /// A launch configuration the hardware cannot run.
    BadLaunch { kernel: &'static str, detail: String },
    /// A device allocation failed.
    OutOfMemory { bytes: usize },
    /// The CUDA driver reported an error.
    Cuda { context: String, message: String },
    /// The emulator reported an error (barrier/shuffle divergence, a kernel panic).
    Emulator(EmuError),
    /// The requested backend is not available.
    NoBackend(String),
    /// Buffers of two different devices or backends were mixed.
    WrongDevice,
}

impl fmt::Display for SimtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimtError::Shape { op, detail } => write!(f, "{op}: shape mismatch: {detail}"),
            SimtError::TooLarge { op, detail } => write!(f, "{op}: input too large for this kernel: {detail}"),
            SimtError::Empty { op } => write!(f, "{op}: empty input (a zero-sized dimension); pass at least one element"),
            SimtError::BadLaunch { kernel, detail } => write!(f, "launch of `{kernel}`: {detail}"),
            SimtError::OutOfMemory { bytes } => write!(f, "out of device memory allocating {bytes} bytes; free buffers or use smaller inputs"),
            SimtError::Cuda { context, message } => write!(f, "CUDA error in {context}: {message}"),
            SimtError::Emulator(e) => write!(f, "{e}"),
            SimtError::NoBackend(m) => write!(f, "{m}"),
            SimtError::WrongDevice => write!(f, "a buffer from another backend was passed; allocate all buffers on the same Gpu"),
        }
    }
}

impl std::error::Error for SimtError {}

impl From<EmuError> for SimtError {
    fn from(e: EmuError) -> Self {
        SimtError::Emulator(e)
    }
}

#[cfg(simt_cuda)]
pub(crate) fn cuda(context: impl Into<String>) -> impl FnOnce(cust::error::CudaError) -> SimtError {
    let context = context.into();
    move |e| match e {
        cust::error::CudaError::OutOfMemory => SimtError::OutOfMemory { bytes: 0 },
        e => SimtError::Cuda { context, message: format!("{e} ({e:?})") },
    }
}

/// `Result` with [`SimtError`].
pub type Result<T> = std::result::Result<T, SimtError>;
