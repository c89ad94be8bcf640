//! GeLU: fused, naive (7 kernels) and exact, against float64 references.
mod common;
use common::*;
use rust_simt::ops::gelu::{gelu, gelu_erf, gelu_naive, gelu_with, GeluKernel};
use rust_simt::{reference, SimtError};

/// GeLU is elementwise with ~1e-6 relative error (fast tanh) on O(1) values.
const RTOL: f64 = 2e-5;
const ATOL: f64 = 1e-6;

/// `got` against `want` within GeLU's tolerances ([`RTOL`], [`ATOL`]).
fn close(what: &str, seed: u64, got: &[f32], want: &[f64]) {
    assert_close(what, seed, got, want, RTOL, ATOL, 1e-4);
}

fn run_all(n: usize, lo: f32, hi: f32) {
    let g = gpu();
    let (mut r, seed) = rng("gelu");
    let x = uniform(&mut r, n, lo, hi);
    let xb = g.upload(&x).unwrap();
    let want = reference::gelu_tanh(&x);
    // Every fused kernel: `Auto` (what `gelu` runs), one, two and four vectors a
    // thread, evict-first loads.
    for k in GeluKernel::ALL {
        let mut y = poisoned(&g, n);
        gelu_with(&g, k, &xb, &mut y).unwrap();
        close(
            &format!("gelu_fused {} n={n}", k.label()),
            seed,
            &g.download(&y).unwrap(),
            &want,
        );
    }
    let mut y = poisoned(&g, n);
    let mut tmp = poisoned(&g, n);
    gelu_naive(&g, &xb, &mut y, &mut tmp).unwrap();
    close(
        &format!("gelu_naive n={n}"),
        seed,
        &g.download(&y).unwrap(),
        &want,
    );
    let mut y = poisoned(&g, n);
    gelu_erf(&g, &xb, &mut y).unwrap();
    assert_close(
        &format!("gelu_erf n={n}"),
        seed,
        &g.download(&y).unwrap(),
        &reference::gelu_erf(&x),
        RTOL,
        2e-6,
        1e-4,
    );
}

#[test]
fn hand_worked_values() {
    // gelu(0) = 0; gelu(1) = 0.5·(1 + tanh(√(2/π)·1.044715)) = 0.5·(1 + tanh(0.833554)) = 0.841192;
    // gelu(-1) = -1 + gelu(1) = -0.158808 (gelu(x) - gelu(-x) = x).
    let g = gpu();
    let y = rust_simt::ops::gelu::gelu_host(&g, &[0.0, 1.0, -1.0, 2.0]).unwrap();
    assert_eq!(y[0], 0.0);
    assert!((y[1] - 0.841192).abs() < 2e-6, "{}", y[1]);
    assert!((y[2] + 0.158808).abs() < 2e-6, "{}", y[2]);
    assert!((y[1] - y[2] - 1.0).abs() < 2e-6);
    // gelu(2) = 2·0.5·(1 + tanh(√(2/π)·2.35772)) = 1.954598
    assert!((y[3] - 1.954598).abs() < 4e-6, "{}", y[3]);
}

#[test]
fn random_ragged_lengths() {
    // Around the tiles: 1024 elements a block (256x1, 128x2), 2048 (128x4).
    for n in [1, 3, 4, 5, 255, 1023, 1025, 2047, 2049, 4097, 6150] {
        run_all(n, -6.0, 6.0);
    }
}

#[test]
fn large() {
    let n = if on_gpu(&gpu()) {
        (1 << 24) + 3
    } else {
        (1 << 18) + 3
    };
    run_all(n, -8.0, 8.0);
}

#[test]
fn stability_at_large_inputs() {
    // gelu(x) -> x for x >> 0 and -> 0 (from below) for x << 0; no NaN or inf from x^3.
    let g = gpu();
    let x = [-1e30f32, -1e4, -50.0, -10.0, 10.0, 50.0, 1e4, 1e30];
    let y = rust_simt::ops::gelu::gelu_host(&g, &x).unwrap();
    let want = reference::gelu_tanh(&x);
    for (i, (&o, &w)) in y.iter().zip(&want).enumerate() {
        let w = if w.is_nan() {
            if x[i] > 0.0 {
                x[i] as f64
            } else {
                0.0
            }
        } else {
            w
        };
        assert!(o.is_finite(), "gelu({}) = {o}", x[i]);
        assert!(
            (o as f64 - w).abs() <= 1e-6 * w.abs() + 1e-6,
            "gelu({}) = {o}, want {w}",
            x[i]
        );
    }
}

#[test]
fn approximation_error_tanh_vs_erf() {
    // The tanh form differs from the exact GeLU by at most ~5e-4 (the lecture's point).
    let g = gpu();
    let x: Vec<f32> = (0..4001).map(|i| -8.0 + i as f32 * 0.004).collect();
    let xb = g.upload(&x).unwrap();
    let (mut a, mut b) = (poisoned(&g, x.len()), poisoned(&g, x.len()));
    gelu(&g, &xb, &mut a).unwrap();
    gelu_erf(&g, &xb, &mut b).unwrap();
    let (a, b) = (g.download(&a).unwrap(), g.download(&b).unwrap());
    let max = a
        .iter()
        .zip(&b)
        .map(|(p, q)| (p - q).abs())
        .fold(0.0f32, f32::max);
    assert!(
        max > 1e-5 && max < 1e-3,
        "max |tanh form - erf form| = {max}"
    );
}

#[test]
fn bad_inputs_are_errors() {
    let g = gpu();
    let x = g.upload(&[1.0f32; 8]).unwrap();
    let mut y = g.alloc::<f32>(7).unwrap();
    assert!(matches!(gelu(&g, &x, &mut y), Err(SimtError::Shape { .. })));
    let e = g.alloc::<f32>(0).unwrap();
    let mut e2 = g.alloc::<f32>(0).unwrap();
    let (_, launches) = g.profile(|| gelu(&g, &e, &mut e2)).unwrap();
    assert!(launches.is_empty(), "an empty input launches nothing");
    let mut tmp = g.alloc::<f32>(3).unwrap();
    let mut y8 = g.alloc::<f32>(8).unwrap();
    assert!(matches!(
        gelu_naive(&g, &x, &mut y8, &mut tmp),
        Err(SimtError::Shape { .. })
    ));
}

/// Launches the fused GeLU kernel `which` on raw pointers, with the grid its Thread
/// Mapping gives for `n` floats.
///
/// # Safety
/// `x` readable and `y` writable for `n` floats on `g`, aliasing exactly or not at all.
unsafe fn launch_shape(g: &rust_simt::Gpu, which: GeluKernel, x: *const f32, y: *mut f32, n: u32) {
    use rust_simt::kernels::{gelu as k, gelu_wide as kw};
    use rust_simt::{dim3, LaunchConfig};
    let (t, v) = which.config();
    let grid = dim3((n as usize).div_ceil((4 * t * v) as usize) as u32, 1, 1);
    // SAFETY: the caller's contract; the grid covers n with the kernel's tile.
    unsafe {
        match which {
            GeluKernel::Auto | GeluKernel::Vec1 => g.launch::<k::gelu_fused>(
                LaunchConfig::for_kernel::<k::gelu_fused>(grid),
                (x, y, n),
            ),
            GeluKernel::Vec2 => g.launch::<kw::gelu_fused_v2>(
                LaunchConfig::for_kernel::<kw::gelu_fused_v2>(grid),
                (x, y, n),
            ),
            GeluKernel::Vec4 => g.launch::<kw::gelu_fused_v4>(
                LaunchConfig::for_kernel::<kw::gelu_fused_v4>(grid),
                (x, y, n),
            ),
            GeluKernel::Vec1Cs => g.launch::<kw::gelu_fused_cs>(
                LaunchConfig::for_kernel::<kw::gelu_fused_cs>(grid),
                (x, y, n),
            ),
        }
    }
    .unwrap();
}

#[test]
fn every_block_shape_in_place_ragged_and_misaligned() {
    // Each kernel in place (y is x); on lengths that end 1-3 floats into a thread's
    // last vector (2047 ends 1 float short of a tile of 1024 or 2048, 2045 3 short),
    // aligned and on pointers 1-3 floats past a 16-byte boundary (the element path).
    // The input goes on past each view with finite values, so an element read or
    // written past the end shows as a finite value in the NaN-poisoned output.
    let g = gpu();
    rust_simt::ptx::load(&g).unwrap();
    let (mut r, seed) = rng("gelu in place");
    let n = 2056;
    let x = uniform(&mut r, n, -6.0, 6.0);
    let xb = g.upload(&x).unwrap();
    for which in GeluKernel::ALL {
        let mut b = g.upload(&x[..2047]).unwrap();
        let p = b.ptr_mut();
        // SAFETY: b holds 2047 floats on g; in place is in each kernel's contract.
        unsafe { launch_shape(&g, which, p, p, 2047) };
        close(
            &format!("gelu {} in place", which.label()),
            seed,
            &g.download(&b).unwrap(),
            &reference::gelu_tanh(&x[..2047]),
        );
        for (off, m) in [
            (0, 2047),
            (0, 2046),
            (0, 2045),
            (0, 2048),
            (1, 2047),
            (2, 2040),
            (3, 2045),
        ] {
            let mut y = poisoned(&g, n);
            // SAFETY: both pointers are `off` floats into buffers of n floats, and
            // off + m <= n; the buffers are distinct.
            unsafe {
                launch_shape(
                    &g,
                    which,
                    xb.ptr().wrapping_add(off),
                    y.ptr_mut().wrapping_add(off),
                    m as u32,
                )
            };
            let got = g.download(&y).unwrap();
            assert!(
                got[..off].iter().chain(&got[off + m..]).all(|v| v.is_nan()),
                "{}, {m} floats at +{off}: wrote outside them",
                which.label()
            );
            close(
                &format!("gelu {}, {m} floats at +{off}", which.label()),
                seed,
                &got[off..off + m],
                &reference::gelu_tanh(&x[off..off + m]),
            );
        }
    }
}

#[test]
fn auto_runs_two_vectors_a_thread_from_2_to_32_mib() {
    // `Auto`'s table (GELU_VEC2_MIN..=GELU_VEC2_MAX: 128x2), read off the launch it
    // makes, with the result checked at each edge.
    use rust_simt::ops::gelu::{GELU_VEC2_MAX, GELU_VEC2_MIN};
    let g = gpu();
    let (mut r, seed) = rng("gelu auto");
    for (n, kernel) in [
        (GELU_VEC2_MIN - 1, "gelu_fused"),
        (GELU_VEC2_MIN, "gelu_fused_v2"),
        (GELU_VEC2_MIN + 5, "gelu_fused_v2"),
        (GELU_VEC2_MAX, "gelu_fused_v2"),
        (GELU_VEC2_MAX + 1, "gelu_fused"),
    ] {
        assert_eq!(
            GeluKernel::auto_for(n).label(),
            if kernel == "gelu_fused" {
                "256x1"
            } else {
                "128x2"
            }
        );
        // The emulator checks the values at the lower edge; the upper edge (32 MiB)
        // only for the launch made.
        let check = n <= GELU_VEC2_MIN + 5 || on_gpu(&g);
        let x = if check {
            uniform(&mut r, n, -6.0, 6.0)
        } else {
            vec![0.5; n]
        };
        let xb = g.upload(&x).unwrap();
        let mut y = poisoned(&g, n);
        let ((), launches) = g.capture(|| gelu(&g, &xb, &mut y)).unwrap();
        assert_eq!(launches.len(), 1);
        assert_eq!(launches[0].kernel, kernel, "n = {n}");
        if check {
            close(
                &format!("gelu auto n={n}"),
                seed,
                &g.download(&y).unwrap(),
                &reference::gelu_tanh(&x),
            );
        }
    }
}
