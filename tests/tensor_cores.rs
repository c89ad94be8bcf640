//! Tensor cores: fragment maps pinned by hand-worked products, `ldmatrix` against its
//! definition, conversions bit for bit, the emulator's negative cases, swizzle
//! banks, and the bf16/f16/tf32 matmuls against float64 on random and ragged shapes.
mod common;
use common::*;
use half::{bf16, f16};
use kernels::matmul_mma_pipelined::{swz_a, swz_b, swz_b_tf32};
use kernels::params::Epilogue;
use kernels::selftest as p;
use kernels::simt_std::mma::{a_coords, b_coords, c_coords, ldmatrix_row_addr, MmaKind};
use rust_simt::emulator::{EmuError, Order};
use rust_simt::ops::matmul_tc::{
    bf16_to_f32, matmul_tc, matmul_tf32, to_bf16, to_f16, TcInput, TcKernel,
};
use rust_simt::{dim3, Gpu, LaunchConfig, Layout, SimtError};

fn warp() -> LaunchConfig {
    LaunchConfig::new(dim3(1, 1, 1), dim3(32, 1, 1))
}

#[test]
fn fragment_maps_pinned() {
    // Lane 5: group g = 1, thread t = 1 (PTX ISA fragment tables).
    let (bf, tf) = (MmaKind::Bf16, MmaKind::Tf32);
    assert_eq!(a_coords(bf, 5, 0), [(1, 2), (1, 3)]);
    assert_eq!(a_coords(bf, 5, 1), [(9, 2), (9, 3)]);
    assert_eq!(a_coords(bf, 5, 2), [(1, 10), (1, 11)]);
    assert_eq!(a_coords(bf, 5, 3), [(9, 10), (9, 11)]);
    assert_eq!(b_coords(bf, 5, 0), [(2, 1), (3, 1)]);
    assert_eq!(b_coords(bf, 5, 1), [(10, 1), (11, 1)]);
    assert_eq!(
        [0, 1, 2, 3].map(|i| c_coords(5, i)),
        [(1, 2), (1, 3), (9, 2), (9, 3)]
    );
    // TF32: a1 is (g+8, t) and a2 is (g, t+4), not the other way round.
    assert_eq!(
        [0, 1, 2, 3].map(|r| a_coords(tf, 5, r)[0]),
        [(1, 1), (9, 1), (1, 5), (9, 5)]
    );
    assert_eq!([0, 1].map(|r| b_coords(tf, 5, r)[0]), [(1, 1), (5, 1)]);
    // Every element of A, B and C is held by exactly one (lane, register, half).
    for kind in [bf, tf] {
        let (k, halves) = (kind.k(), if kind == tf { 1 } else { 2 });
        let mut seen_a = vec![0; 16 * k];
        let mut seen_b = vec![0; k * 8];
        let mut seen_c = [0; 128];
        for lane in 0..32 {
            for r in 0..4 {
                for &(row, col) in a_coords(kind, lane, r).iter().take(halves) {
                    seen_a[row as usize * k + col as usize] += 1;
                }
                let (row, col) = c_coords(lane, r);
                seen_c[row as usize * 8 + col as usize] += 1;
            }
            for r in 0..2 {
                for &(row, col) in b_coords(kind, lane, r).iter().take(halves) {
                    seen_b[row as usize * 8 + col as usize] += 1;
                }
            }
        }
        assert!(
            seen_a.iter().chain(&seen_b).chain(&seen_c).all(|&c| c == 1),
            "{kind:?}"
        );
    }
    // ldmatrix.x4 row addresses: lanes 0-7 rows 0-7 of quadrant (0, 0), 8-15 rows 8-15,
    // 16-23 rows 0-7 at column 8, 24-31 rows 8-15 at column 8.
    assert_eq!(
        [0, 7, 8, 15, 16, 31].map(ldmatrix_row_addr),
        [(0, 0), (7, 0), (8, 0), (15, 0), (0, 8), (15, 8)]
    );
}

/// 16-bit bits of `x` as u32 words (two per word), for the probe's u32 pointer.
fn pack16(x: &[u16]) -> Vec<u32> {
    x.chunks(2)
        .map(|p| p[0] as u32 | (*p.get(1).unwrap_or(&0) as u32) << 16)
        .collect()
}

fn run_mma(g: &Gpu, kind: u32, a: &[f32], b: &[f32]) -> Vec<f32> {
    let (ab, bb) = if kind == 2 {
        (
            g.upload(&a.iter().map(|v| v.to_bits()).collect::<Vec<_>>())
                .unwrap(),
            g.upload(&b.iter().map(|v| v.to_bits()).collect::<Vec<_>>())
                .unwrap(),
        )
    } else {
        let cv = |v: &f32| {
            if kind == 0 {
                bf16::from_f32(*v).to_bits()
            } else {
                f16::from_f32(*v).to_bits()
            }
        };
        (
            g.upload(&pack16(&a.iter().map(cv).collect::<Vec<_>>()))
                .unwrap(),
            g.upload(&pack16(&b.iter().map(cv).collect::<Vec<_>>()))
                .unwrap(),
        )
    };
    let mut d = poisoned(g, 128);
    // SAFETY: A 16 x K, B K x 8, D 16 x 8, one warp.
    unsafe {
        g.launch::<p::probe_mma>(warp(), (ab.ptr(), bb.ptr(), d.ptr_mut(), kind))
            .unwrap()
    };
    g.download(&d).unwrap()
}

#[test]
fn hand_worked_tile_products() {
    // A = identity plus a column of ones in its last column: D[i][j] = B[i][j] + B[K-1][j]
    // (and 2·B[K-1][j] in the last row), for small integers, exact in every format.
    let g = gpu();
    for (kind, k) in [(0u32, 16usize), (1, 16), (2, 8)] {
        let mut a = vec![0f32; 16 * k];
        for i in 0..16 {
            if i < k {
                a[i * k + i] = 1.0;
            }
            a[i * k + k - 1] += 1.0;
        }
        let b: Vec<f32> = (0..k * 8).map(|i| (i % 13) as f32 - 6.0).collect();
        let d = run_mma(&g, kind, &a, &b);
        for i in 0..16 {
            for j in 0..8 {
                let want = (if i < k { b[i * 8 + j] } else { 0.0 }) + b[(k - 1) * 8 + j];
                assert_eq!(d[i * 8 + j], want, "kind {kind}: D[{i}][{j}]");
            }
        }
    }
}

#[test]
fn random_tile_products_against_f64() {
    let g = gpu();
    let (mut r, seed) = rng("mma tile");
    for (kind, k) in [(0u32, 16usize), (1, 16), (2, 8)] {
        let a = uniform(&mut r, 16 * k, -2.0, 2.0);
        let b = uniform(&mut r, k * 8, -2.0, 2.0);
        let round = |v: f32| match kind {
            0 => bf16::from_f32(v).to_f32() as f64,
            1 => f16::from_f32(v).to_f32() as f64,
            _ => f32::from_bits(kernels::simt_std::convert::tf32_rna_bits(v)) as f64,
        };
        let want: Vec<f64> = (0..128)
            .map(|ij| {
                (0..k)
                    .map(|p| round(a[ij / 8 * k + p]) * round(b[p * 8 + ij % 8]))
                    .sum()
            })
            .collect();
        assert_close(
            &format!("mma kind {kind}"),
            seed,
            &run_mma(&g, kind, &a, &b),
            &want,
            1e-6,
            1e-6,
            1e-6,
        );
    }
}

#[test]
fn ldmatrix_matches_its_definition() {
    let g = gpu();
    let x: Vec<u16> = (0..256).map(|i| i as u16 * 3 + 1).collect();
    let xb = g.upload(&x).unwrap();
    for trans in [0u32, 1] {
        let mut out = g.upload(&vec![u32::MAX; 128]).unwrap();
        // SAFETY: 256 u16 in, 128 u32 out; skew 8 keeps rows 16-byte aligned.
        unsafe {
            g.launch::<p::probe_ldmatrix>(warp(), (xb.ptr(), out.ptr_mut(), trans, 8))
                .unwrap()
        };
        let out = g.download(&out).unwrap();
        for lane in 0..32usize {
            for m in 0..4usize {
                // Matrix m is the quadrant (rows 8·(m%2).., cols 8·(m/2)..) of the 16x16 tile.
                let (qr, qc) = (8 * (m % 2), 8 * (m / 2));
                let (row, col) = (lane / 4, 2 * (lane % 4));
                let at = |r: usize, c: usize| x[(qr + r) * 16 + qc + c] as u32;
                let want = if trans == 0 {
                    at(row, col) | at(row, col + 1) << 16
                } else {
                    at(col, row) | at(col + 1, row) << 16
                };
                assert_eq!(
                    out[4 * lane + m],
                    want,
                    "trans {trans} lane {lane} matrix {m}"
                );
            }
        }
    }
}

#[test]
fn emulator_rejects_misaligned_ldmatrix_and_partial_warps() {
    let g = emulator(Order::InOrder);
    let x = g.upload(&vec![1u16; 256]).unwrap();
    let mut out = g.alloc::<u32>(128).unwrap();
    // SAFETY: as above; skew 1 makes every row address 2 bytes off 16-byte alignment.
    let e = unsafe { g.launch::<p::probe_ldmatrix>(warp(), (x.ptr(), out.ptr_mut(), 0, 1)) }
        .unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(
            e,
            SimtError::Emulator(EmuError::ShuffleDivergence {
                kernel: "probe_ldmatrix",
                ..
            })
        ),
        "{e}"
    );
    assert!(
        msg.contains("lane 0")
            && msg.contains("not 16-byte aligned")
            && msg.contains("block (0, 0, 0)"),
        "{msg}"
    );
    // An mma in a block of 48 threads: its second warp has 16 lanes.
    let a = g.upload(&vec![0u32; 256]).unwrap();
    let mut d = g.alloc::<f32>(128).unwrap();
    // SAFETY: the launch fails in the emulator before anything is read out of bounds.
    let e = unsafe {
        g.launch::<p::probe_mma>(
            LaunchConfig::new(dim3(1, 1, 1), dim3(48, 1, 1)),
            (a.ptr(), a.ptr(), d.ptr_mut(), 0),
        )
    };
    assert!(
        e.is_err_and(|e| e.to_string().contains("mma.sync in a partial warp")),
        "partial-warp mma must be an error"
    );
}

#[test]
fn swizzles_make_ldmatrix_conflict_free() {
    // An ldmatrix phase reads 8 rows of 16 bytes at one logical chunk. Its 8 physical
    // 16-byte slots must lie in 8 different 16-byte bank groups (bank / 4).
    let group = |byte: u32| (byte / 16) % 8;
    let row = kernels::config::TC6_A_ROW_BYTES; // bytes per row of A in a stage
    for c in 0..row / 16 {
        for r0 in (0..128).step_by(8) {
            let mut g: Vec<u32> = (r0..r0 + 8)
                .map(|r| group(r * row + swz_a(r, c) * 16))
                .collect();
            g.sort();
            g.dedup();
            assert_eq!(g.len(), 8, "A chunk {c} rows {r0}..");
            // Unswizzled, rows meet in the same groups: 4-way for 64-byte rows (2 groups), 8-way for 128 (1).
            let mut u: Vec<u32> = (r0..r0 + 8).map(|r| group(r * row + c * 16)).collect();
            u.sort();
            u.dedup();
            assert_eq!(
                u.len(),
                if row == 128 { 1 } else { 2 },
                "unswizzled A chunk {c}"
            );
        }
    }
    for c in 0..16 {
        for k0 in (0..32).step_by(8) {
            let mut g: Vec<u32> = (k0..k0 + 8)
                .map(|k| group(k * 256 + swz_b(k, c) * 16))
                .collect();
            g.sort();
            g.dedup();
            assert_eq!(g.len(), 8, "B chunk {c} rows {k0}..");
        }
    }
    // TF32 B: lane (g, t) reads word n0 + g of k-row t: 32 distinct banks.
    for n0 in (0..128).step_by(8) {
        let mut banks: Vec<u32> = (0..32)
            .map(|lane| {
                let (g, t) = (lane / 4, lane % 4);
                let n = n0 + g;
                let word = t * 128 + swz_b_tf32(t, n / 4) * 4 + n % 4;
                word % 32
            })
            .collect();
        banks.sort();
        banks.dedup();
        assert_eq!(banks.len(), 32, "tf32 B columns {n0}..");
    }
}

#[test]
fn conversions_are_bit_exact() {
    let g = gpu();
    let (mut r, _) = rng("convert");
    let mut x = uniform(&mut r, 4000, -70000.0, 70000.0);
    x.extend([
        0.0,
        -0.0,
        1.0 + 1.0 / 256.0,
        1.0078125 + 1.0 / 256.0,
        65504.0,
        65520.0,
        1e-6,
        -3.0e-8,
        1.0e30,
        f32::INFINITY,
        f32::MIN_POSITIVE,
    ]);
    x.extend(uniform(&mut r, 1000, -1e-4, 1e-4));
    let xb = g.upload(&x).unwrap();
    let mut yb = g.alloc::<bf16>(x.len()).unwrap();
    to_bf16(&g, &xb, &mut yb).unwrap();
    let got = g.download(&yb).unwrap();
    for (i, v) in x.iter().enumerate() {
        assert_eq!(
            got[i].to_bits(),
            bf16::from_f32(*v).to_bits(),
            "bf16 of {v}"
        );
    }
    let mut yh = g.alloc::<f16>(x.len()).unwrap();
    to_f16(&g, &xb, &mut yh).unwrap();
    let goth = g.download(&yh).unwrap();
    for (i, v) in x.iter().enumerate() {
        assert_eq!(goth[i].to_bits(), f16::from_f32(*v).to_bits(), "f16 of {v}");
    }
    let mut back = poisoned(&g, x.len());
    bf16_to_f32(&g, &yb, &mut back).unwrap();
    assert_eq!(
        g.download(&back).unwrap(),
        got.iter().map(|b| b.to_f32()).collect::<Vec<_>>()
    );
}

/// `C = relu?(A·B)` with 16-bit inputs on `stage`, against float64 of the rounded
/// inputs (the tolerance covers f32 accumulation only) and of the original ones.
fn check_tc<T: TcInput>(stage: TcKernel, m: usize, n: usize, k: usize, pad: usize, relu: bool) {
    let g = gpu();
    let (mut r, seed) = rng("matmul_tc");
    let (lda, ldb, ldc) = (k + pad, n + pad, n + 2 * pad);
    let a = uniform(&mut r, (m - 1) * lda + k, -1.0, 1.0);
    let b = uniform(&mut r, (k - 1) * ldb + n, -1.0, 1.0);
    // f32 to T and back (T is bf16 or f16: `TcInput` is sealed to those two).
    type Conv<T> = (fn(f32) -> T, fn(T) -> f32);
    let (to, back): Conv<T> = if T::NAME == "bf16" {
        (
            // SAFETY: T is bf16 here (same size and bits).
            |v| unsafe { std::mem::transmute_copy(&bf16::from_f32(v)) },
            // SAFETY: as above.
            |v| unsafe { std::mem::transmute_copy::<T, bf16>(&v) }.to_f32(),
        )
    } else {
        (
            // SAFETY: T is f16 here.
            |v| unsafe { std::mem::transmute_copy(&f16::from_f32(v)) },
            // SAFETY: as above.
            |v| unsafe { std::mem::transmute_copy::<T, f16>(&v) }.to_f32(),
        )
    };
    let (a16, b16): (Vec<T>, Vec<T>) = (
        a.iter().map(|&v| to(v)).collect(),
        b.iter().map(|&v| to(v)).collect(),
    );
    let (ar, br): (Vec<f32>, Vec<f32>) = (
        a16.iter().map(|&v| back(v)).collect(),
        b16.iter().map(|&v| back(v)).collect(),
    );
    let want = rust_simt::reference::matmul(&ar, &br, m, n, k, lda, ldb, relu);
    let (ab, bb) = (g.upload(&a16).unwrap(), g.upload(&b16).unwrap());
    let mut c = poisoned(&g, (m - 1) * ldc + n);
    let epi = if relu { Epilogue::Relu } else { Epilogue::None };
    let (av, bv) = (
        ab.matrix_strided(Layout::strided(m, k, lda)).unwrap(),
        bb.matrix_strided(Layout::strided(k, n, ldb)).unwrap(),
    );
    matmul_tc(
        &g,
        stage,
        av,
        bv,
        c.matrix_mut_strided(Layout::strided(m, n, ldc)).unwrap(),
        epi,
    )
    .unwrap();
    let c = g.download(&c).unwrap();
    let got = dense_rows(&c, m, n, ldc);
    // Products of 16-bit inputs are exact; f32 sums of k terms in [-1, 1].
    assert_matmul_close(
        &format!("{} {stage:?} {m}x{n}x{k} pad {pad} relu {relu}", T::NAME),
        seed,
        &got,
        &want,
        k,
    );
    if pad > 0 && m > 1 {
        assert!(c[n].is_nan(), "wrote into C's row padding");
    }
    // Against the unrounded inputs: what the precision costs (bf16 8 bits, f16 11).
    let exact = rust_simt::reference::matmul(&a, &b, m, n, k, lda, ldb, relu);
    let rel = rust_simt::reference::rel_err(&got, &exact);
    assert!(
        rel < if T::NAME == "bf16" { 2e-2 } else { 3e-3 },
        "{} vs unrounded inputs: {rel:e}",
        T::NAME
    );
}

#[test]
fn tensor_core_matmul_random_and_ragged() {
    for stage in [TcKernel::Mma, TcKernel::MmaPipelined] {
        for (m, n, k, pad) in [
            (1, 1, 1, 0),
            (16, 8, 16, 0),
            (33, 65, 17, 0),
            (128, 128, 32, 0),
            (130, 260, 100, 8),
            (257, 129, 200, 3),
        ] {
            check_tc::<bf16>(stage, m, n, k, pad, true);
            check_tc::<f16>(stage, m, n, k, pad, false);
        }
    }
}

#[test]
fn tensor_core_matmul_every_thread_order() {
    for order in [Order::Reversed, Order::Random(11)] {
        let g = emulator(order);
        let (m, n, k) = (130, 136, 72);
        let a: Vec<bf16> = (0..m * k)
            .map(|i| bf16::from_f32(((i * 7) % 13) as f32 / 8.0 - 0.75))
            .collect();
        let b: Vec<bf16> = (0..k * n)
            .map(|i| bf16::from_f32(((i * 5) % 11) as f32 / 8.0 - 0.6))
            .collect();
        let (ar, br): (Vec<f32>, Vec<f32>) = (
            a.iter().map(|v| v.to_f32()).collect(),
            b.iter().map(|v| v.to_f32()).collect(),
        );
        let want = rust_simt::reference::matmul(&ar, &br, m, n, k, k, n, false);
        let (ab, bb) = (g.upload(&a).unwrap(), g.upload(&b).unwrap());
        let mut c = poisoned(&g, m * n);
        matmul_tc(
            &g,
            TcKernel::MmaPipelined,
            ab.matrix(m, k).unwrap(),
            bb.matrix(k, n).unwrap(),
            c.matrix_mut(m, n).unwrap(),
            Epilogue::None,
        )
        .unwrap();
        assert_close(
            &format!("pipelined bf16 {order:?}"),
            0,
            &g.download(&c).unwrap(),
            &want,
            1e-5,
            1e-5,
            1e-5,
        );
    }
}

#[test]
fn tf32_matmul_against_f64() {
    let g = gpu();
    let (mut r, seed) = rng("tf32");
    let tf = |v: f32| f32::from_bits(kernels::simt_std::convert::tf32_rna_bits(v));
    // C's rows unaligned (scalar stores) and 16-byte aligned (vector stores, and
    // scalar ones where a warp's run of columns crosses n).
    for (m, n, k, pad, aligned_c) in [
        (1usize, 1usize, 1usize, 0usize, false),
        (33, 65, 17, 0, false),
        (128, 128, 16, 4, false),
        (128, 128, 16, 4, true),
        (200, 130, 300, 4, false),
        (200, 132, 40, 4, true),
    ] {
        let (lda, ldb, ldc) = (
            k.next_multiple_of(4) + pad,
            n.next_multiple_of(4) + pad,
            if aligned_c {
                n.next_multiple_of(4)
            } else {
                n + 1
            },
        );
        let a = uniform(&mut r, (m - 1) * lda + k, -1.0, 1.0);
        let b = uniform(&mut r, (k - 1) * ldb + n, -1.0, 1.0);
        let (ar, br): (Vec<f32>, Vec<f32>) = (
            a.iter().map(|&v| tf(v)).collect(),
            b.iter().map(|&v| tf(v)).collect(),
        );
        let want = rust_simt::reference::matmul(&ar, &br, m, n, k, lda, ldb, true);
        let (ab, bb) = (g.upload(&a).unwrap(), g.upload(&b).unwrap());
        let mut c = poisoned(&g, (m - 1) * ldc + n);
        let (av, bv) = (
            ab.matrix_strided(Layout::strided(m, k, lda)).unwrap(),
            bb.matrix_strided(Layout::strided(k, n, ldb)).unwrap(),
        );
        matmul_tf32(
            &g,
            av,
            bv,
            c.matrix_mut_strided(Layout::strided(m, n, ldc)).unwrap(),
            Epilogue::Relu,
        )
        .unwrap();
        let c = g.download(&c).unwrap();
        let got = dense_rows(&c, m, n, ldc);
        assert_matmul_close(&format!("tf32 {m}x{n}x{k}"), seed, &got, &want, k);
    }
    // Unaligned rows are a clear error, not a wrong answer.
    let a = g.upload(&vec![1.0f32; 64]).unwrap();
    let mut c = g.alloc::<f32>(64).unwrap();
    let e = matmul_tf32(
        &g,
        a.matrix_strided(Layout::strided(3, 3, 5)).unwrap(),
        a.matrix(3, 3).unwrap(),
        c.matrix_mut(3, 3).unwrap(),
        Epilogue::None,
    )
    .unwrap_err();
    assert!(
        matches!(e, SimtError::Shape { .. }) && e.to_string().contains("multiples of 4"),
        "{e}"
    );
}

#[test]
fn tf32_matmul_propagates_nan_and_inf() {
    // NaN and infinity must come through the TF32 rounding and the tensor cores as IEEE
    // says. A's row 5 holds the GPU's canonical NaN (0x7fffffff: a rounding that only
    // adds half an ulp would carry it into the sign bit), B's column 9 an infinity and
    // A's column 3 (the k that meets it) a zero in row 2.
    let g = gpu();
    let (m, n, k) = (64usize, 72usize, 24usize);
    let mut a: Vec<f32> = (0..m * k)
        .map(|i| ((i * 7 % 13) as f32 - 6.0) / 8.0)
        .collect();
    let mut b: Vec<f32> = (0..k * n)
        .map(|i| ((i * 5 % 11) as f32 - 5.0) / 8.0)
        .collect();
    a[5 * k + 7] = f32::from_bits(0x7fff_ffff);
    b[3 * n + 9] = f32::INFINITY;
    a[2 * k + 3] = 0.0;
    let tf = |v: f32| f32::from_bits(kernels::simt_std::convert::tf32_rna_bits(v));
    let (ar, br): (Vec<f32>, Vec<f32>) = (
        a.iter().map(|&v| tf(v)).collect(),
        b.iter().map(|&v| tf(v)).collect(),
    );
    let want: Vec<f32> = rust_simt::reference::matmul(&ar, &br, m, n, k, k, n, false)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    let (ab, bb) = (g.upload(&a).unwrap(), g.upload(&b).unwrap());
    let mut c = poisoned(&g, m * n);
    matmul_tf32(
        &g,
        ab.matrix(m, k).unwrap(),
        bb.matrix(k, n).unwrap(),
        c.matrix_mut(m, n).unwrap(),
        Epilogue::None,
    )
    .unwrap();
    let got = g.download(&c).unwrap();
    for (i, (&x, &y)) in got.iter().zip(&want).enumerate() {
        let (r, col) = (i / n, i % n);
        if y.is_nan() || y.is_infinite() {
            assert!(
                x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
                "C[{r}][{col}] = {x}, want {y}"
            );
        } else {
            assert!((x - y).abs() <= 1e-4, "C[{r}][{col}] = {x}, want {y}");
        }
    }
    // The cases the test is for: a NaN row, an infinite column, and 0·inf.
    assert!(want[5 * n].is_nan() && want[n + 9].is_infinite() && want[2 * n + 9].is_nan());
}

#[test]
fn zero_sized_and_bad_shapes() {
    let g = gpu();
    let empty = g.alloc::<bf16>(0).unwrap();
    let mut c = poisoned(&g, 6);
    matmul_tc(
        &g,
        TcKernel::MmaPipelined,
        empty.matrix(2, 0).unwrap(),
        empty.matrix(0, 3).unwrap(),
        c.matrix_mut(2, 3).unwrap(),
        Epilogue::None,
    )
    .unwrap();
    assert_eq!(
        g.download(&c).unwrap(),
        vec![0.0; 6],
        "k = 0: the empty sum"
    );
    let a = g.upload(&[bf16::ONE; 6]).unwrap();
    let e = matmul_tc(
        &g,
        TcKernel::Mma,
        a.matrix(2, 3).unwrap(),
        a.matrix(2, 3).unwrap(),
        c.matrix_mut(2, 3).unwrap(),
        Epilogue::None,
    )
    .unwrap_err();
    assert!(matches!(e, SimtError::Shape { .. }), "{e}");
}
