//! float64 CPU references for every op, and error metrics.

/// √(2/π) in f64.
const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;

/// GeLU, tanh form.
pub fn gelu_tanh(x: &[f32]) -> Vec<f64> {
    x.iter()
        .map(|&x| {
            let x = x as f64;
            0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)).tanh())
        })
        .collect()
}

/// GeLU, exact (erf form).
pub fn gelu_erf(x: &[f32]) -> Vec<f64> {
    x.iter()
        .map(|&x| 0.5 * x as f64 * (1.0 + erf(x as f64 / std::f64::consts::SQRT_2)))
        .collect()
}

/// erf in float64: Maclaurin series for |x| < 3 (error ~1e-13), Laplace continued
/// fraction of erfc beyond.
pub fn erf(x: f64) -> f64 {
    let a = x.abs();
    let r = if a < 3.0 {
        let (mut term, mut sum, x2) = (a, a, a * a);
        let mut n = 0.0;
        while term.abs() > 1e-17 * sum.abs() {
            n += 1.0;
            term *= -x2 / n;
            sum += term / (2.0 * n + 1.0);
        }
        2.0 / std::f64::consts::PI.sqrt() * sum
    } else {
        let mut t = a;
        for n in (1..=80).rev() {
            t = a + (n as f64 / 2.0) / t;
        }
        1.0 - (-a * a).exp() / (std::f64::consts::PI.sqrt() * t)
    };
    if x < 0.0 {
        -r
    } else {
        r
    }
}

/// Row softmax of a contiguous `rows x cols` matrix; a row of all `-inf` gives NaN (as PyTorch).
pub fn softmax(x: &[f32], rows: usize, cols: usize) -> Vec<f64> {
    let mut out = vec![0.0; rows * cols];
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let m = row.iter().fold(
            f64::NEG_INFINITY,
            |m, &v| if (v as f64) > m { v as f64 } else { m },
        );
        let s: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
        for c in 0..cols {
            out[r * cols + c] = (row[c] as f64 - m).exp() / s;
        }
    }
    out
}

/// Row sums of a `rows x cols` view with row stride `ld`.
pub fn row_sum(x: &[f32], rows: usize, cols: usize, ld: usize) -> Vec<f64> {
    (0..rows)
        .map(|r| x[r * ld..r * ld + cols].iter().map(|&v| v as f64).sum())
        .collect()
}

/// `relu?(A·B)` with strides, accumulated in f64.
#[allow(clippy::too_many_arguments)]
pub fn matmul(
    a: &[f32],
    b: &[f32],
    m: usize,
    n: usize,
    k: usize,
    lda: usize,
    ldb: usize,
    relu: bool,
) -> Vec<f64> {
    let mut c = vec![0.0f64; m * n];
    for i in 0..m {
        let crow = &mut c[i * n..(i + 1) * n];
        for p in 0..k {
            let av = a[i * lda + p] as f64;
            let brow = &b[p * ldb..p * ldb + n];
            for (cv, &bv) in crow.iter_mut().zip(brow) {
                *cv += av * bv as f64;
            }
        }
        if relu {
            crow.iter_mut().for_each(|v| *v = v.max(0.0));
        }
    }
    c
}

/// ‖out − ref‖₂ / ‖ref‖₂ (NaN if any output is NaN where the reference is not).
pub fn rel_err(out: &[f32], reference: &[f64]) -> f64 {
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (&o, &r) in out.iter().zip(reference) {
        if r.is_nan() {
            continue;
        }
        num += (o as f64 - r).powi(2);
        den += r * r;
    }
    if den == 0.0 {
        num.sqrt()
    } else {
        (num / den).sqrt()
    }
}
