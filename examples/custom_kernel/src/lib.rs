//! The host half of a user's crate: its PTX module (built by `build.rs` with
//! simt-builder) and a safe op over its kernel, on the simt runtime.
use my_kernels as k;
use simt::{Buffer, Gpu, LaunchConfig, MatrixMut, MatrixRef, Result, SimtError};

/// `pub static MODULE: simt::Module`, written by simt-builder.
pub mod ptx {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

/// `y = gelu(x + bias)` row-wise, for contiguous `rows x cols` views; `bias` holds
/// `cols` floats. Checks devices and shapes, then launches [`k::bias_gelu`] with its own
/// block (from its `#[launch]` contract).
pub fn bias_gelu(
    gpu: &Gpu,
    x: MatrixRef<'_, f32>,
    bias: &Buffer<f32>,
    mut y: MatrixMut<'_, f32>,
) -> Result<()> {
    let op = "bias_gelu";
    gpu.check(op, "x", x.buffer())?;
    gpu.check(op, "bias", bias)?;
    gpu.check(op, "y", y.buffer())?;
    if (x.rows(), x.cols()) != (y.rows(), y.cols()) || bias.len() != x.cols() {
        return Err(SimtError::Shape {
            op,
            detail: format!(
                "x {}x{}, y {}x{}, bias {}",
                x.rows(),
                x.cols(),
                y.rows(),
                y.cols(),
                bias.len()
            ),
        });
    }
    if !x.layout().is_contiguous() || !y.layout().is_contiguous() {
        return Err(SimtError::Shape {
            op,
            detail: "contiguous rows only (ld = cols)".into(),
        });
    }
    let n = x.rows() * x.cols();
    if n == 0 {
        return Ok(());
    }
    let too_big = |_| SimtError::TooLarge {
        op,
        detail: format!("{n} elements; this kernel indexes rows and cols in 32 bits"),
    };
    let (rows, cols) = (
        u32::try_from(x.rows()).map_err(too_big)?,
        u32::try_from(x.cols()).map_err(too_big)?,
    );
    gpu.load(&ptx::MODULE)?;
    // At most 4 blocks per SM's worth of threads; the kernel's grid-stride loop does the rest.
    let cfg =
        LaunchConfig::linear::<k::bias_gelu>(n.min(4 * 2048 * gpu.props().sms.max(1) as usize))?;
    // SAFETY: x and y hold rows·cols floats and bias cols floats, all on this Gpu (checked).
    unsafe { gpu.launch::<k::bias_gelu>(cfg, (x.ptr(), bias.ptr(), y.ptr_mut(), rows, cols)) }
}

/// The float64 reference.
pub fn reference(x: &[f32], bias: &[f32], cols: usize) -> Vec<f64> {
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            let v = v as f64 + bias[i % cols] as f64;
            0.5 * v * (1.0 + (0.797_884_560_802_865_4 * (v + 0.044715 * v * v * v)).tanh())
        })
        .collect()
}
