//! The user-style crate's kernel on the GPU (when present) and the emulator under
//! every thread order, against float64.
use custom_kernel::{bias_gelu, reference};
use simt::emulator::{EmuConfig, Order};
use simt::{Gpu, SimtError};

fn check(gpu: &Gpu, rows: usize, cols: usize) {
    let x: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 7919 + 13) % 2001) as f32 / 200.0 - 5.0)
        .collect();
    let bias: Vec<f32> = (0..cols)
        .map(|c| ((c * 31) % 17) as f32 / 8.0 - 1.0)
        .collect();
    let (xb, bb) = (gpu.upload(&x).unwrap(), gpu.upload(&bias).unwrap());
    let mut yb = gpu.upload(&vec![f32::NAN; rows * cols]).unwrap();
    bias_gelu(
        gpu,
        xb.matrix(rows, cols).unwrap(),
        &bb,
        yb.matrix_mut(rows, cols).unwrap(),
    )
    .unwrap();
    let y = gpu.download(&yb).unwrap();
    for (i, (&got, want)) in y.iter().zip(reference(&x, &bias, cols)).enumerate() {
        // ex2.approx and rcp.approx: ~2 ulp relative, plus the tanh-form rounding near 0
        assert!(
            (got as f64 - want).abs() <= 2e-6 + 2e-6 * want.abs(),
            "[{i}] got {got} want {want} ({rows}x{cols})"
        );
    }
}

#[test]
fn hand_worked() {
    // gelu(0) = 0; gelu(x) -> x for large x; gelu(x) -> -0 for very negative x.
    let gpu = Gpu::from_env().unwrap();
    let x = gpu.upload(&[-1.0f32, 9.0, -20.0]).unwrap();
    let bias = gpu.upload(&[1.0f32, 1.0, 0.0]).unwrap();
    let mut y = gpu.alloc::<f32>(3).unwrap();
    bias_gelu(
        &gpu,
        x.matrix(1, 3).unwrap(),
        &bias,
        y.matrix_mut(1, 3).unwrap(),
    )
    .unwrap();
    let y = gpu.download(&y).unwrap();
    assert_eq!(y[0], 0.0);
    assert!((y[1] - 10.0).abs() < 1e-6, "{}", y[1]);
    assert!(y[2] == 0.0 && y[2].is_sign_negative(), "{}", y[2]);
}

#[test]
fn ragged_shapes_on_the_device_under_test() {
    let gpu = Gpu::from_env().unwrap();
    for (r, c) in [(1, 1), (3, 7), (33, 129), (256, 1000)] {
        check(&gpu, r, c);
    }
}

#[test]
fn every_emulator_order() {
    for order in [Order::InOrder, Order::Reversed, Order::Random(7)] {
        check(
            &Gpu::emulator(EmuConfig {
                order,
                ..EmuConfig::default()
            }),
            17,
            300,
        );
    }
}

#[test]
fn bad_inputs_are_errors() {
    let gpu = Gpu::from_env().unwrap();
    let x = gpu.upload(&[0.0f32; 6]).unwrap();
    let bias = gpu.upload(&[0.0f32; 2]).unwrap();
    let mut y = gpu.alloc::<f32>(6).unwrap();
    let e = bias_gelu(
        &gpu,
        x.matrix(2, 3).unwrap(),
        &bias,
        y.matrix_mut(2, 3).unwrap(),
    )
    .unwrap_err();
    assert!(
        matches!(e, SimtError::Shape { .. }),
        "bias of 2 for 3 columns: {e}"
    );
    let other = Gpu::emulator(EmuConfig::default());
    let b3 = other.upload(&[0.0f32; 3]).unwrap();
    let e = bias_gelu(
        &gpu,
        x.matrix(2, 3).unwrap(),
        &b3,
        y.matrix_mut(2, 3).unwrap(),
    )
    .unwrap_err();
    assert!(
        matches!(e, SimtError::WrongDevice { what: "bias", .. }),
        "{e}"
    );
}
