//! Softmax: fused and naive, against float64, with stability cases.
mod common;
use common::*;
use rust_simt::ops::softmax::{max_cols, softmax, softmax_naive};
use rust_simt::Layout;
use rust_simt::{reference, SimtError};

const RTOL: f64 = 1e-5;
const ATOL: f64 = 1e-7;

fn check(rows: usize, cols: usize, x: &[f32], seed: u64) {
    let g = gpu();
    let want = reference::softmax(x, rows, cols);
    let xb = g.upload(x).unwrap();
    let mut y = poisoned(&g, rows * cols);
    softmax(
        &g,
        xb.matrix(rows, cols).unwrap(),
        y.matrix_mut(rows, cols).unwrap(),
    )
    .unwrap();
    assert_close(
        &format!("softmax_fused {rows}x{cols}"),
        seed,
        &g.download(&y).unwrap(),
        &want,
        RTOL,
        ATOL,
        1e-5,
    );
    let mut y = poisoned(&g, rows * cols);
    let mut tmp = poisoned(&g, rows);
    softmax_naive(
        &g,
        xb.matrix(rows, cols).unwrap(),
        y.matrix_mut(rows, cols).unwrap(),
        &mut tmp,
    )
    .unwrap();
    assert_close(
        &format!("softmax_naive {rows}x{cols}"),
        seed,
        &g.download(&y).unwrap(),
        &want,
        RTOL,
        ATOL,
        1e-5,
    );
}

#[test]
fn hand_worked() {
    // softmax([0, ln 2, ln 3]) = [1, 2, 3] / 6; softmax([5, 5]) = [1/2, 1/2].
    let g = gpu();
    let y = rust_simt::ops::softmax::softmax_host(
        &g,
        &[0.0, 2f32.ln(), 3f32.ln(), 5.0, 5.0, 5.0],
        2,
        3,
    )
    .unwrap();
    let want = [
        1.0 / 6.0,
        2.0 / 6.0,
        3.0 / 6.0,
        1.0 / 3.0,
        1.0 / 3.0,
        1.0 / 3.0,
    ];
    for (o, w) in y.iter().zip(want) {
        assert!((o - w).abs() < 1e-6, "{y:?}");
    }
}

#[test]
fn random_shapes() {
    let (mut r, seed) = rng("softmax");
    for (rows, cols) in [
        (1, 1),
        (3, 5),
        (2, 3),
        (127, 129),
        (64, 1000),
        (7, 4096),
        (3, 4099),
    ] {
        let x = uniform(&mut r, rows * cols, -5.0, 5.0);
        check(rows, cols, &x, seed);
    }
}

#[test]
fn large() {
    let g = gpu();
    let (rows, cols) = if on_gpu(&g) {
        (4096, 4096)
    } else {
        (256, 2048)
    };
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
    assert!(
        y[3 * cols..].iter().all(|v| v.is_nan()),
        "all -inf row must be NaN like torch.softmax"
    );
    assert!(y[2 * cols] == 0.0);
}

#[test]
fn strided_views() {
    // rows 5 apart in a wider buffer, output with another stride (misaligned rows: scalar path)
    let g = gpu();
    let (mut r, seed) = rng("softmax strided");
    let (rows, cols, ldx, ldy) = (33, 70, 75, 73);
    let buf = uniform(&mut r, rows * ldx, -4.0, 4.0);
    let dense: Vec<f32> = (0..rows)
        .flat_map(|i| buf[i * ldx..i * ldx + cols].to_vec())
        .collect();
    let xb = g.upload(&buf).unwrap();
    let mut y = poisoned(&g, rows * ldy);
    softmax(
        &g,
        xb.matrix_strided(Layout::strided(rows, cols, ldx)).unwrap(),
        y.matrix_mut_strided(Layout::strided(rows, cols, ldy))
            .unwrap(),
    )
    .unwrap();
    let y = g.download(&y).unwrap();
    let got = dense_rows(&y, rows, cols, ldy);
    assert_close(
        "softmax strided",
        seed,
        &got,
        &reference::softmax(&dense, rows, cols),
        RTOL,
        ATOL,
        1e-5,
    );
    // untouched padding stays poisoned
    assert!(y[cols].is_nan());
}

#[test]
fn bad_inputs_are_errors() {
    let g = gpu();
    let x = g.upload(&[0.0f32; 12]).unwrap();
    let mut y = g.alloc::<f32>(12).unwrap();
    // A 4x4 view of a 12-element buffer cannot be made.
    assert!(matches!(x.matrix(4, 4), Err(SimtError::Shape { .. })));
    // x and y of different shapes.
    assert!(matches!(
        softmax(&g, x.matrix(3, 4).unwrap(), y.matrix_mut(4, 3).unwrap()),
        Err(SimtError::Shape { .. })
    ));
    let too_long = max_cols(&g) + 1;
    let xl = g.alloc::<f32>(too_long).unwrap();
    let mut yl = g.alloc::<f32>(too_long).unwrap();
    let e = softmax(
        &g,
        xl.matrix(1, too_long).unwrap(),
        yl.matrix_mut(1, too_long).unwrap(),
    )
    .unwrap_err();
    assert!(matches!(e, SimtError::TooLarge { .. }), "{e}");
    assert!(
        e.to_string().contains("softmax_naive"),
        "the error says what to do: {e}"
    );
    let bad = Layout::strided(2, 6, 5);
    assert!(
        matches!(x.matrix_strided(bad), Err(SimtError::Shape { .. })),
        "row stride under the column count"
    );
    // The naive composition takes contiguous rows only.
    let mut tmp = g.alloc::<f32>(2).unwrap();
    let strided = Layout::strided(2, 5, 6);
    assert!(matches!(
        softmax_naive(
            &g,
            x.matrix_strided(strided).unwrap(),
            y.matrix_mut(2, 5).unwrap(),
            &mut tmp
        ),
        Err(SimtError::Shape { .. })
    ));
}

#[test]
fn empty_inputs_launch_nothing() {
    // As torch.softmax: a 0 x n or n x 0 input gives an empty output, no launch.
    let g = gpu();
    let x = g.alloc::<f32>(0).unwrap();
    let mut y = g.alloc::<f32>(0).unwrap();
    for (r, c) in [(0, 4), (4, 0), (0, 0)] {
        let (_, launches) = g
            .profile(|| softmax(&g, x.matrix(r, c)?, y.matrix_mut(r, c)?))
            .unwrap();
        assert!(launches.is_empty(), "{r}x{c}");
        let mut tmp = g.alloc::<f32>(r).unwrap();
        softmax_naive(
            &g,
            x.matrix(r, c).unwrap(),
            y.matrix_mut(r, c).unwrap(),
            &mut tmp,
        )
        .unwrap();
    }
}
