//! Softmax: fused and naive, against float64, with stability cases.
mod common;
use common::*;
use rust_simt::ops::softmax::{max_cols, softmax, softmax_naive, softmax_strided};
use rust_simt::ops::Layout;
use rust_simt::{reference, SimtError};

const RTOL: f64 = 1e-5;
const ATOL: f64 = 1e-7;

fn check(rows: usize, cols: usize, x: &[f32], seed: u64) {
    let g = gpu();
    let want = reference::softmax(x, rows, cols);
    let xb = g.upload(x).unwrap();
    let mut y = poisoned(&g, rows * cols);
    softmax(&g, &xb, &mut y, rows, cols).unwrap();
    assert_close(&format!("softmax_fused {rows}x{cols}"), seed, &g.download(&y).unwrap(), &want, RTOL, ATOL, 1e-5);
    let mut y = poisoned(&g, rows * cols);
    let mut tmp = poisoned(&g, rows);
    softmax_naive(&g, &xb, &mut y, rows, cols, &mut tmp).unwrap();
    assert_close(&format!("softmax_naive {rows}x{cols}"), seed, &g.download(&y).unwrap(), &want, RTOL, ATOL, 1e-5);
}

#[test]
fn hand_worked() {
    // softmax([0, ln 2, ln 3]) = [1, 2, 3] / 6; softmax([5, 5]) = [1/2, 1/2].
    let g = gpu();
    let y = rust_simt::ops::softmax::softmax_host(&g, &[0.0, 2f32.ln(), 3f32.ln(), 5.0, 5.0, 5.0], 2, 3).unwrap();
    let want = [1.0 / 6.0, 2.0 / 6.0, 3.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0];
    for (o, w) in y.iter().zip(want) {
        assert!((o - w).abs() < 1e-6, "{y:?}");
    }
}

#[test]
fn random_shapes() {
    let (mut r, seed) = rng("softmax");
    for (rows, cols) in [(1, 1), (3, 5), (2, 3), (127, 129), (64, 1000), (7, 4096), (3, 4099)] {
        let x = uniform(&mut r, rows * cols, -5.0, 5.0);
        check(rows, cols, &x, seed);
    }
}

#[test]
fn large() {
    let g = gpu();
    let (rows, cols) = if on_gpu(&g) { (4096, 4096) } else { (256, 2048) };
    let (mut r, seed) = rng("softmax large");
    let x = uniform(&mut r, rows * cols, -10.0, 10.0);
    check(rows, cols, &x, seed);
    // The longest row the fused kernel takes.
    let cols = max_cols(&g);
    let x = uniform(&mut r, 2 * cols, -10.0, 10.0);
    check(2, cols, &x, seed);
}

#[test]
fn stability() {
    let (mut r, seed) = rng("softmax stability");
    let cols = 300;
    let mut x = Vec::new();
    // rows near +1e4 and -1e4 (a naive exp would overflow / underflow to 0/0)
    x.extend(uniform(&mut r, cols, 1e4 - 5.0, 1e4 + 5.0));
    x.extend(uniform(&mut r, cols, -1e4 - 5.0, -1e4 + 5.0));
    // a row with some -inf (they get probability 0)
    let mut row = uniform(&mut r, cols, -3.0, 3.0);
    for i in (0..cols).step_by(7) {
        row[i] = f32::NEG_INFINITY;
    }
    x.extend(row);
    // a row of all -inf: PyTorch gives NaN
    x.extend(vec![f32::NEG_INFINITY; cols]);
    check(4, cols, &x, seed);
    let g = gpu();
    let y = rust_simt::ops::softmax::softmax_host(&g, &x, 4, cols).unwrap();
    assert!(y[3 * cols..].iter().all(|v| v.is_nan()), "all -inf row must be NaN like torch.softmax");
    assert!(y[2 * cols] == 0.0);
}

#[test]
fn strided_views() {
    // rows 5 apart in a wider buffer, output with another stride (misaligned rows: scalar path)
    let g = gpu();
    let (mut r, seed) = rng("softmax strided");
    let (rows, cols, ldx, ldy) = (33, 70, 75, 73);
    let buf = uniform(&mut r, rows * ldx, -4.0, 4.0);
    let dense: Vec<f32> = (0..rows).flat_map(|i| buf[i * ldx..i * ldx + cols].to_vec()).collect();
    let xb = g.upload(&buf).unwrap();
    let mut y = poisoned(&g, rows * ldy);
    softmax_strided(&g, &xb, Layout { rows, cols, ld: ldx }, &mut y, Layout { rows, cols, ld: ldy }).unwrap();
    let y = g.download(&y).unwrap();
    let got: Vec<f32> = (0..rows).flat_map(|i| y[i * ldy..i * ldy + cols].to_vec()).collect();
    assert_close("softmax strided", seed, &got, &reference::softmax(&dense, rows, cols), RTOL, ATOL, 1e-5);
    // untouched padding stays poisoned
    assert!(y[cols].is_nan());
}

#[test]
fn bad_inputs_are_errors() {
    let g = gpu();
    let x = g.upload(&[0.0f32; 12]).unwrap();
    let mut y = g.alloc::<f32>(12).unwrap();
    assert!(matches!(softmax(&g, &x, &mut y, 4, 4), Err(SimtError::Shape { .. })));
    assert!(matches!(softmax(&g, &x, &mut y, 0, 4), Err(SimtError::Empty { .. })));
    let too_long = max_cols(&g) + 1;
    let xl = g.alloc::<f32>(too_long).unwrap();
    let mut yl = g.alloc::<f32>(too_long).unwrap();
    let e = softmax(&g, &xl, &mut yl, 1, too_long).unwrap_err();
    assert!(matches!(e, SimtError::TooLarge { .. }), "{e}");
    assert!(e.to_string().contains("softmax_naive"), "the error says what to do: {e}");
    let bad = Layout { rows: 2, cols: 6, ld: 5 };
    assert!(matches!(softmax_strided(&g, &x, bad, &mut y, bad), Err(SimtError::Shape { .. })));
}
