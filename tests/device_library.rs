//! The device library's primitives, each through a probe kernel that runs on the
//! emulator in CI and on the GPU when present; plus the emulator's negative tests
//! and the swizzle's bank arithmetic.
mod common;
use common::*;
use kernels::selftest as p;
use kernels::simt_std::swizzle::{bank, conflict_degree, matmul_a, xor32};
use rust_simt::emulator::{EmuError, Order};
use rust_simt::{dim3, Gpu, LaunchConfig, SimtError};

fn cfg(grid: (u32, u32, u32), block: (u32, u32, u32)) -> LaunchConfig {
    LaunchConfig::new(
        dim3(grid.0, grid.1, grid.2),
        dim3(block.0, block.1, block.2),
    )
}

/// A 1-D launch of `threads` threads in blocks of `block`.
fn linear(threads: usize, block: u32) -> LaunchConfig {
    cfg(
        (threads.div_ceil(block as usize) as u32, 1, 1),
        (block, 1, 1),
    )
}

#[test]
fn thread_block_lane_and_warp_indices() {
    let g = gpu();
    let (grid, block) = ((3, 2, 2), (8, 4, 2)); // 64 threads per block: 2 warps
    let threads = 12 * 64;
    let mut out = g.upload(&vec![u32::MAX; threads * 8]).unwrap();
    // SAFETY: 8 words per thread.
    unsafe {
        g.launch::<p::probe_indices>(cfg(grid, block), (out.ptr_mut(),))
            .unwrap()
    };
    let out = g.download(&out).unwrap();
    let mut g_id = 0;
    for bz in 0..2 {
        for by in 0..2 {
            for bx in 0..3 {
                for tz in 0..2 {
                    for ty in 0..4 {
                        for tx in 0..8 {
                            let lin = tx + 8 * (ty + 4 * tz);
                            let want = [tx, ty, tz, bx, by, bz, lin % 32, lin / 32];
                            assert_eq!(&out[g_id * 8..g_id * 8 + 8], &want, "thread {g_id}");
                            g_id += 1;
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn shuffles_all_modes() {
    let g = gpu();
    let n = 128;
    let x: Vec<u32> = (0..n as u32).map(|i| i * 1000 + 7).collect();
    let xb = g.upload(&x).unwrap();
    for arg in [0u32, 1, 3, 16, 31] {
        let mut out = g.upload(&vec![u32::MAX; 4 * n]).unwrap();
        // SAFETY: one word in and four out per thread; 64-thread blocks.
        unsafe {
            g.launch::<p::probe_shuffles>(
                cfg((2, 1, 1), (64, 1, 1)),
                (xb.ptr(), out.ptr_mut(), arg),
            )
            .unwrap()
        };
        let out = g.download(&out).unwrap();
        for i in 0..n {
            let (lane, base) = (i % 32, i - i % 32);
            let at = |l: usize| x[base + l];
            let xor = at(lane ^ arg as usize);
            let down = if lane + (arg as usize) < 32 {
                at(lane + arg as usize)
            } else {
                x[i]
            };
            let up = if lane >= arg as usize {
                at(lane - arg as usize)
            } else {
                x[i]
            };
            let idx = at((lane * arg as usize) % 32);
            assert_eq!(
                &out[4 * i..4 * i + 4],
                &[xor, down, up, idx],
                "thread {i}, arg {arg}"
            );
        }
    }
}

#[test]
fn warp_and_block_reductions() {
    let g = gpu();
    let (mut r, _) = rng("reductions");
    let (blocks, threads) = (3usize, 256usize);
    // small integers: every summation order gives the exact same f32
    let x: Vec<f32> = (0..blocks * threads)
        .map(|_| (r.gen_range(-50..50)) as f32)
        .collect();
    let xb = g.upload(&x).unwrap();
    let mut out = poisoned(&g, 3 * x.len());
    // SAFETY: one float in and three out per thread.
    unsafe {
        g.launch::<p::probe_reductions>(
            cfg((blocks as u32, 1, 1), (threads as u32, 1, 1)),
            (xb.ptr(), out.ptr_mut()),
        )
        .unwrap()
    };
    let out = g.download(&out).unwrap();
    for i in 0..x.len() {
        let w = &x[i - i % 32..i - i % 32 + 32];
        let b = &x[i - i % threads..i - i % threads + threads];
        assert_eq!(out[3 * i], w.iter().sum::<f32>(), "warp sum, thread {i}");
        assert_eq!(
            out[3 * i + 1],
            w.iter().cloned().fold(f32::MIN, f32::max),
            "warp max, thread {i}"
        );
        assert_eq!(
            out[3 * i + 2],
            b.iter().sum::<f32>(),
            "block sum, thread {i}"
        );
    }
}
use rand::Rng;

#[test]
fn fast_math_within_documented_errors() {
    let g = gpu();
    let mut x: Vec<f32> = (0..2000).map(|i| -20.0 + i as f32 * 0.02).collect();
    x.extend([0.0, 1e-3, -1e-3, 0.1, -0.1, 0.124, 0.126, 80.0, -80.0]);
    let n = x.len();
    let xb = g.upload(&x).unwrap();
    let mut out = poisoned(&g, 7 * n);
    // SAFETY: n in, 7n out.
    unsafe {
        g.launch::<p::probe_math>(linear(n, 128), (xb.ptr(), out.ptr_mut(), n as u32))
            .unwrap()
    };
    let out = g.download(&out).unwrap();
    let rel = |got: f32, want: f64| ((got as f64 - want) / want.abs().max(1e-30)).abs();
    for (i, &v) in x.iter().enumerate() {
        let o = &out[7 * i..7 * i + 7];
        let vd = v as f64;
        let (e, e2, th, tha, rc, er, fm) = (o[0], o[1], o[2], o[3], o[4], o[5], o[6]);
        // exp: 2 ulp + rounding of x·log2 e (|x|·2^-24)
        assert!(
            rel(e, vd.exp()) <= 2.4e-7 + vd.abs() * 6e-8,
            "exp({v}) = {e}"
        );
        assert!(rel(e2, vd.exp2()) <= 2.4e-7, "exp2({v}) = {e2}");
        assert!(
            (th as f64 - vd.tanh()).abs() <= 2e-6 * vd.tanh().abs() + 3e-7,
            "tanh({v}) = {th}"
        );
        assert!(
            (tha as f64 - vd.tanh()).abs() <= 1e-3 * vd.tanh().abs() + 1e-6,
            "tanh_approx({v}) = {tha}"
        );
        if v != 0.0 {
            assert!(rel(rc, 1.0 / vd) <= 1.2e-7, "rcp({v}) = {rc}");
        }
        assert!(
            (er as f64 - rust_simt::reference::erf(vd)).abs() <= 4e-7,
            "erf({v}) = {er}"
        );
        assert_eq!(fm, v.mul_add(v, 1.0), "fma({v}) is correctly rounded");
    }
}

#[test]
fn vector_loads_and_stores() {
    let g = gpu();
    let n = 1000;
    let x: Vec<f32> = (0..4 * n).map(|i| i as f32).collect();
    let xb = g.upload(&x).unwrap();
    let mut y = poisoned(&g, 4 * n);
    // SAFETY: 4n floats each, device allocations are 256-byte aligned.
    unsafe {
        g.launch::<p::probe_vec4>(linear(n, 128), (xb.ptr(), y.ptr_mut(), n as u32))
            .unwrap()
    };
    let y = g.download(&y).unwrap();
    for i in 0..n {
        assert_eq!(&y[4 * (n - 1 - i)..4 * (n - i)], &x[4 * i..4 * i + 4]);
    }
}

#[test]
fn misaligned_vector_access_is_reported_on_the_emulator() {
    let g = emulator(Order::InOrder);
    let x = g.upload(&[0f32; 12]).unwrap();
    let mut y = g.alloc::<f32>(12).unwrap();
    // SAFETY (of the emulator run): in bounds; deliberately misaligned by one float,
    // which the emulator must report instead of running (a GPU would fault).
    let e = unsafe { g.launch::<p::probe_vec4>(linear(2, 32), (x.ptr().add(1), y.ptr_mut(), 2)) }
        .unwrap_err();
    assert!(e.to_string().contains("misaligned"), "{e}");
}

#[test]
fn atomic_add() {
    let g = gpu();
    let n = 10_000usize;
    let slots = 7usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 5) as f32).collect();
    let xb = g.upload(&x).unwrap();
    let mut acc = g.upload(&vec![0f32; slots]).unwrap();
    // SAFETY: n inputs, `slots` zeroed accumulators.
    unsafe {
        g.launch::<p::probe_atomic>(
            linear(n, 256),
            (xb.ptr(), acc.ptr_mut(), n as u32, slots as u32),
        )
        .unwrap()
    };
    let acc = g.download(&acc).unwrap();
    assert_eq!(acc.len(), slots);
    for (s, &got) in acc.iter().enumerate() {
        let want: f32 = (s..n).step_by(slots).map(|i| x[i]).sum(); // small integers: exact
        assert_eq!(got, want, "slot {s}");
    }
}

#[test]
fn dynamic_shared_memory() {
    let g = gpu();
    let (blocks, threads) = (4usize, 96usize);
    let x: Vec<f32> = (0..blocks * threads).map(|i| i as f32).collect();
    let xb = g.upload(&x).unwrap();
    let mut out = poisoned(&g, x.len() + 1);
    let bytes = (threads * 4) as u32 + 64;
    // SAFETY: sizes as the kernel documents.
    unsafe {
        g.launch::<p::probe_dynamic_shared>(
            cfg((blocks as u32, 1, 1), (threads as u32, 1, 1)),
            (xb.ptr(), out.ptr_mut(), bytes),
        )
        .unwrap()
    };
    let out = g.download(&out).unwrap();
    for b in 0..blocks {
        for t in 0..threads {
            assert_eq!(out[b * threads + t], x[b * threads + threads - 1 - t]);
        }
    }
    assert_eq!(out[x.len()], bytes as f32, "%dynamic_smem_size");
}

#[test]
fn shared_memory_sum_with_barrier_is_right_under_every_order() {
    let orders = [
        Order::InOrder,
        Order::Reversed,
        Order::Random(1),
        Order::Random(2),
    ];
    let mut gpus: Vec<Gpu> = orders.iter().map(|&o| emulator(o)).collect();
    gpus.push(gpu());
    for g in &gpus {
        let x: Vec<f32> = (0..4 * 256).map(|i| (i % 17) as f32).collect();
        let xb = g.upload(&x).unwrap();
        let mut out = poisoned(g, 4);
        // SAFETY: 256 floats per block, one output per block.
        unsafe {
            g.launch::<p::probe_shared_sum>(cfg((4, 1, 1), (256, 1, 1)), (xb.ptr(), out.ptr_mut()))
                .unwrap()
        };
        let out = g.download(&out).unwrap();
        for b in 0..4 {
            assert_eq!(
                out[b],
                x[b * 256..(b + 1) * 256].iter().sum::<f32>(),
                "{}",
                g.describe()
            );
        }
    }
}

#[test]
fn missing_barrier_gives_a_wrong_result_under_some_order() {
    // The same reduction without its barrier: thread 0 reads slots the other threads
    // have not written yet whenever it runs first (in-order). The emulator must show it.
    let x: Vec<f32> = (0..256).map(|i| 1.0 + (i % 3) as f32).collect();
    let want: f32 = x.iter().sum();
    let mut wrong = Vec::new();
    for order in [Order::InOrder, Order::Reversed, Order::Random(7)] {
        let g = emulator(order);
        let xb = g.upload(&x).unwrap();
        let mut out = poisoned(&g, 1);
        // SAFETY: sizes as documented; the race is the point of the test.
        unsafe {
            g.launch::<p::probe_shared_sum_no_barrier>(
                cfg((1, 1, 1), (256, 1, 1)),
                (xb.ptr(), out.ptr_mut()),
            )
            .unwrap()
        };
        let got = g.download(&out).unwrap()[0];
        if got != want {
            wrong.push(order);
        }
    }
    assert!(
        wrong.contains(&Order::InOrder),
        "in-order must expose the missing barrier (wrong under {wrong:?})"
    );
}

#[test]
fn barrier_skipped_by_some_threads_is_an_error() {
    let g = emulator(Order::InOrder);
    let mut out = poisoned(&g, 64);
    // SAFETY: one float per thread; the divergence is the point of the test.
    let e = unsafe {
        g.launch::<p::probe_divergent_barrier>(cfg((1, 1, 1), (64, 1, 1)), (out.ptr_mut(), 40))
    }
    .unwrap_err();
    match &e {
        SimtError::Emulator(EmuError::BarrierDivergence { kernel, other, .. }) => {
            assert_eq!(*kernel, "probe_divergent_barrier");
            assert!(other.x >= 40);
        }
        other => panic!("expected a barrier divergence, got {other}"),
    }
    let msg = e.to_string();
    assert!(
        msg.contains("probe_divergent_barrier")
            && msg.contains("block (0, 0, 0)")
            && msg.contains("has exited"),
        "{msg}"
    );
}

#[test]
fn shuffle_in_a_partial_warp_is_an_error() {
    let g = emulator(Order::InOrder);
    let x = g.upload(&[1u32; 48]).unwrap();
    let mut out = g.upload(&[0u32; 4 * 48]).unwrap();
    // SAFETY: sizes fine; 48 threads make a partial second warp, which is the point.
    let e = unsafe {
        g.launch::<p::probe_shuffles>(cfg((1, 1, 1), (48, 1, 1)), (x.ptr(), out.ptr_mut(), 1))
    }
    .unwrap_err();
    assert!(
        matches!(
            e,
            SimtError::Emulator(EmuError::ShuffleDivergence { warp: 1, .. })
        ),
        "{e}"
    );
}

#[test]
fn bad_launch_configurations_are_errors() {
    let g = gpu();
    let mut out = g.alloc::<f32>(4).unwrap();
    for c in [
        cfg((1, 1, 1), (2048, 1, 1)),
        cfg((0, 1, 1), (32, 1, 1)),
        cfg((1, 70000, 1), (32, 1, 1)),
    ] {
        // SAFETY: rejected before launching.
        let e =
            unsafe { g.launch::<p::probe_divergent_barrier>(c, (out.ptr_mut(), 0)) }.unwrap_err();
        assert!(matches!(e, SimtError::BadLaunch { .. }), "{e}");
    }
    // More dynamic shared memory than the device has: the contract's size, from the arguments.
    // SAFETY: rejected before launching.
    let e = unsafe {
        g.launch::<p::probe_dynamic_shared>(
            cfg((1, 1, 1), (32, 1, 1)),
            (out.ptr(), out.ptr_mut(), 1 << 20),
        )
    }
    .unwrap_err();
    assert!(
        matches!(e, SimtError::BadLaunch { .. }) && e.to_string().contains("dynamic shared memory"),
        "{e}"
    );
}

#[test]
fn launches_are_checked_against_the_kernel_contract() {
    use kernels::softmax::softmax_fused;
    use rust_simt::Kernel;
    let g = gpu();
    let x = g.upload(&[1.0f32; 8]).unwrap();
    let mut y = g.alloc::<f32>(8).unwrap();
    // softmax_fused is declared #[launch(threads = SOFTMAX_THREADS, shared = cols * 4)].
    assert_eq!(
        softmax_fused::BOUNDS.max_block_threads(),
        kernels::config::SOFTMAX_THREADS
    );
    assert_eq!(
        softmax_fused::dynamic_shared_bytes(&(x.ptr(), y.ptr_mut(), 1, 8, 8, 8)),
        32
    );
    // SAFETY: rejected before launching (a block the kernel's mapping is not written for).
    let e = unsafe {
        g.launch::<softmax_fused>(
            cfg((1, 1, 1), (128, 1, 1)),
            (x.ptr(), y.ptr_mut(), 1, 8, 8, 8),
        )
    }
    .unwrap_err();
    assert!(
        matches!(e, SimtError::BadLaunch { .. }) && e.to_string().contains("written for exactly"),
        "{e}"
    );
    // The contract's own block runs.
    let c = LaunchConfig::for_kernel::<softmax_fused>(dim3(1, 1, 1));
    // SAFETY: one row of 8 floats in and out.
    unsafe {
        g.launch::<softmax_fused>(c, (x.ptr(), y.ptr_mut(), 1, 8, 8, 8))
            .unwrap()
    };
    assert!(g
        .download(&y)
        .unwrap()
        .iter()
        .all(|v| (v - 0.125).abs() < 1e-6));
}

#[test]
fn a_kernel_whose_module_is_not_loaded_is_an_error() {
    let g = Gpu::emulator(rust_simt::emulator::EmuConfig::default()); // nothing loaded
    let mut out = g.alloc::<u32>(64 * 8).unwrap();
    // SAFETY: rejected before launching.
    let e = unsafe { g.launch::<p::probe_indices>(cfg((1, 1, 1), (64, 1, 1)), (out.ptr_mut(),)) }
        .unwrap_err();
    assert!(
        matches!(
            e,
            SimtError::ModuleNotLoaded {
                module: "kernels",
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().contains("gpu.load"),
        "the message says what to do: {e}"
    );
}

#[test]
fn buffers_of_another_device_are_rejected() {
    // Two devices in one process: the device under test and a second emulator (on a
    // GPU machine, a CUDA Gpu and an emulator Gpu: a device address must never reach
    // the host, nor a host address the GPU).
    let g = gpu();
    let other = emulator(Order::InOrder);
    let x_other = other.upload(&[1.0f32; 16]).unwrap();
    let mut y = g.alloc::<f32>(16).unwrap();
    let e = rust_simt::ops::gelu::gelu(&g, &x_other, &mut y).unwrap_err();
    assert!(
        matches!(
            e,
            SimtError::WrongDevice {
                op: "gelu",
                what: "x",
                ..
            }
        ),
        "{e}"
    );
    let x = g.upload(&[1.0f32; 16]).unwrap();
    let mut y_other = other.alloc::<f32>(16).unwrap();
    assert!(matches!(
        rust_simt::ops::gelu::gelu(&g, &x, &mut y_other),
        Err(SimtError::WrongDevice { what: "y", .. })
    ));
    assert!(matches!(
        g.download(&x_other),
        Err(SimtError::WrongDevice { .. })
    ));
    assert!(matches!(
        g.copy(&x, &mut y_other),
        Err(SimtError::WrongDevice { .. })
    ));
    let m = x_other.matrix(4, 4).unwrap();
    let mut out = g.alloc::<f32>(4).unwrap();
    assert!(matches!(
        rust_simt::ops::row_sum::row_sum(&g, m, &mut out),
        Err(SimtError::WrongDevice { .. })
    ));
    // The same calls on the right device work.
    rust_simt::ops::gelu::gelu(&other, &x_other, &mut y_other).unwrap();
}

#[test]
fn buffers_hold_user_element_types() {
    // Any `DeviceCopy` type is a buffer element; cust_derive derives it for structs.
    #[derive(Clone, Copy, Debug, Default, PartialEq, cust_derive::DeviceCopy)]
    #[repr(C)]
    struct Pair {
        re: f32,
        im: f32,
    }
    let g = gpu();
    let data: Vec<Pair> = (0..100)
        .map(|i| Pair {
            re: i as f32,
            im: -(i as f32),
        })
        .collect();
    let a = g.upload(&data).unwrap();
    let mut b = g.alloc::<Pair>(100).unwrap();
    g.copy(&a, &mut b).unwrap();
    assert_eq!(g.download(&b).unwrap(), data);
    assert_eq!(b.bytes(), 800);
}

// ---- swizzle: bank arithmetic pinned ----------------------------------------

/// Byte addresses a warp touches reading column `c` of a 32x32 f32 tile (lane i -> row i).
fn column_read(c: u32, swizzled: bool) -> Vec<u32> {
    (0..32)
        .map(|i| 4 * (32 * i + if swizzled { xor32(i, c) } else { c }))
        .collect()
}

#[test]
fn swizzle_column_read_banks() {
    for c in [0, 5, 31] {
        let plain = column_read(c, false);
        assert!(
            plain.iter().all(|&a| bank(a) == c),
            "unswizzled: every lane in bank {c}"
        );
        assert_eq!(
            conflict_degree(&plain),
            32,
            "unswizzled column read: 32-way conflict"
        );
        let sw = column_read(c, true);
        let mut banks: Vec<u32> = sw.iter().map(|&a| bank(a)).collect();
        banks.sort();
        assert_eq!(
            banks,
            (0..32).collect::<Vec<_>>(),
            "swizzled: 32 distinct banks"
        );
        assert_eq!(
            conflict_degree(&sw),
            1,
            "swizzled column read: conflict-free"
        );
    }
    // row reads stay conflict-free after swizzling
    let row: Vec<u32> = (0..32).map(|j| 4 * (32 * 9 + xor32(9, j))).collect();
    assert_eq!(conflict_degree(&row), 1);
    // a broadcast (all lanes, one word) is one pass
    assert_eq!(conflict_degree(&[64; 32]), 1);
}

#[test]
fn matmul_a_tile_store_banks() {
    // The tiled matmul's transposed A store: thread t writes As[kk][t/2] with
    // kk = 4(t%2) + j, for j = 0..4 (one instruction per j). BM = 128 floats per row.
    let bm = kernels::config::MM_BM;
    for j in 0..4 {
        let addrs = |sw: bool| -> Vec<u32> {
            (0..32u32)
                .map(|t| {
                    let (row, kk) = (t / 2, 4 * (t % 2) + j);
                    4 * (kk * bm + if sw { matmul_a(kk, row) } else { row })
                })
                .collect()
        };
        assert_eq!(
            conflict_degree(&addrs(false)),
            2,
            "unswizzled A store: 2-way"
        );
        assert_eq!(
            conflict_degree(&addrs(true)),
            1,
            "swizzled A store: conflict-free"
        );
    }
    // and the inner loop's 16-byte reads of As[kk][4ty..4ty+4] stay contiguous and aligned
    for kk in 0..8 {
        for ty in 0..16 {
            let m = matmul_a(kk, 4 * ty);
            assert_eq!(m % 4, 0);
            for q in 1..4 {
                assert_eq!(matmul_a(kk, 4 * ty + q), m + q);
            }
        }
    }
}

/// Distinct bytes that one warp-wide 16-byte shared load touches.
fn distinct_bytes(starts: impl Iterator<Item = u32>) -> u32 {
    let mut v: Vec<u32> = starts.collect();
    v.sort();
    v.dedup();
    16 * v.len() as u32
}

#[test]
fn matmul_warp_tiling_layout() {
    use kernels::config::{MM_BM, MM_BN};
    use kernels::matmul_warptiled::{warp_tile_origin, WARP_M, WARP_N};
    // Per k, each thread reads 2 A vectors (its 8 rows) and 2 B vectors (its 8 columns)
    // from the k-th rows of As[k][128] and Bs[k][128]. Warp 3, k = 5 (swizzled A rows).
    // Stage 3 maps thread t to (ty, tx) = (t/16, t%16) with rows {4ty, 64+4ty} and
    // columns {4tx, 64+4tx}; stage 4 uses `warp_tile_origin`.
    let k = 5u32;
    let warp = 3u32 * 32..4 * 32;
    let a_row = |m: u32| 4 * (k * MM_BM + matmul_a(k, m));
    let b_row = |n: u32| 4 * (MM_BM * 8 + k * MM_BN + n);
    for off in [0, 64] {
        assert_eq!(
            distinct_bytes(warp.clone().map(|t| a_row(4 * (t / 16) + off))),
            32,
            "stage 3 A load: 2 vectors"
        );
        assert_eq!(
            distinct_bytes(warp.clone().map(|t| b_row(4 * (t % 16) + off))),
            256,
            "stage 3 B load: 16 vectors"
        );
    }
    for h in [0, 1] {
        let a = warp
            .clone()
            .map(|t| a_row(warp_tile_origin(t).0 + h * WARP_M / 2));
        let b: Vec<u32> = warp
            .clone()
            .map(|t| b_row(warp_tile_origin(t).1 + h * WARP_N / 2))
            .collect();
        assert_eq!(distinct_bytes(a), 64, "stage 4 A load: 4 vectors");
        assert_eq!(
            distinct_bytes(b.iter().copied()),
            128,
            "stage 4 B load: 8 vectors"
        );
        // 128 contiguous bytes: every bank once, no conflict.
        let words: Vec<u32> = b
            .iter()
            .flat_map(|&a| (0..4).map(move |j| a + 4 * j))
            .collect();
        assert_eq!(conflict_degree(&words), 1);
    }
    // The warp tiles cover the block tile exactly once.
    let mut seen = vec![0u32; (MM_BM * MM_BN) as usize];
    for t in 0..kernels::config::MM_THREADS {
        let (r, c) = warp_tile_origin(t);
        for dr in [
            0,
            1,
            2,
            3,
            WARP_M / 2,
            WARP_M / 2 + 1,
            WARP_M / 2 + 2,
            WARP_M / 2 + 3,
        ] {
            for dc in [
                0,
                1,
                2,
                3,
                WARP_N / 2,
                WARP_N / 2 + 1,
                WARP_N / 2 + 2,
                WARP_N / 2 + 3,
            ] {
                seen[((r + dr) * MM_BN + c + dc) as usize] += 1;
            }
        }
    }
    assert!(
        seen.iter().all(|&s| s == 1),
        "every output of the block tile is owned by exactly one thread"
    );
}

#[test]
fn async_copies_land_after_wait_and_zero_fill() {
    let g = gpu();
    let x: Vec<f32> = (0..256).map(|i| 1.0 + i as f32).collect();
    let xb = g.upload(&x).unwrap();
    for src_floats in [4u32, 3, 0] {
        let mut out = poisoned(&g, 256);
        // SAFETY: 256 floats each, aligned device allocations, one 64-thread block.
        unsafe {
            g.launch::<p::probe_copy_async>(
                cfg((1, 1, 1), (64, 1, 1)),
                (xb.ptr(), out.ptr_mut(), src_floats, 1),
            )
            .unwrap()
        };
        let got = g.download(&out).unwrap();
        for t in 0..64 {
            let u = (t + 1) % 64;
            for j in 0..4 {
                let want = if (j as u32) < src_floats {
                    x[4 * u + j]
                } else {
                    0.0
                };
                assert_eq!(
                    got[4 * t + j],
                    want,
                    "src_floats {src_floats}, thread {t}, float {j}"
                );
            }
        }
    }
}

#[test]
fn async_copy_without_wait_is_caught_by_the_emulator() {
    // The emulator lands a copy only at the `wait` that covers it, so a kernel that
    // forgets the wait reads fresh shared memory: NaN poison, under every order.
    for order in [Order::InOrder, Order::Reversed, Order::Random(3)] {
        let g = emulator(order);
        let xb = g.upload(&vec![1.0f32; 256]).unwrap();
        let mut out = poisoned(&g, 256);
        // SAFETY: sizes as documented; the missing wait is the point of the test.
        unsafe {
            g.launch::<p::probe_copy_async>(
                cfg((1, 1, 1), (64, 1, 1)),
                (xb.ptr(), out.ptr_mut(), 4, 0),
            )
            .unwrap()
        };
        assert!(
            g.download(&out).unwrap().iter().all(|v| v.is_nan()),
            "{order:?}: unwaited copies must not be visible"
        );
    }
}

/// The emulator with `workers` resident blocks and a short flag timeout, or the GPU.
fn cooperative_device(workers: usize) -> Gpu {
    let g = gpu();
    if on_gpu(&g) {
        return g;
    }
    let g = Gpu::emulator(rust_simt::emulator::EmuConfig {
        workers,
        flag_timeout: std::time::Duration::from_millis(300),
        ..rust_simt::emulator::EmuConfig::default()
    });
    rust_simt::ptx::load(&g).unwrap();
    g
}

#[test]
fn flags_pass_data_between_resident_blocks() {
    // Each block publishes its word and reads its right neighbour's after the flag:
    // a ring, so every block waits on another one, all resident at once.
    let g = cooperative_device(4);
    let args = (std::ptr::null_mut(), std::ptr::null_mut(), 0, 0);
    let most = g.max_resident_blocks::<p::probe_flags>(&args).unwrap();
    let blocks = most.min(64);
    assert!(blocks >= 2, "{most}");
    for _ in 0..2 {
        // Two launches on one flag buffer: the epoch, not a clearing kernel, separates them.
        let (flags, epoch) = g.flags(blocks as usize).unwrap();
        let mut data = g.upload(&vec![u32::MAX; 2 * blocks as usize]).unwrap();
        // SAFETY: `blocks` flags none of which holds `epoch`; 2·blocks words; a grid the
        // device holds at once.
        unsafe {
            g.launch::<p::probe_flags>(
                cfg((blocks, 1, 1), (64, 1, 1)),
                (flags.ptr() as *mut u32, data.ptr_mut(), epoch, u32::MAX),
            )
            .unwrap()
        };
        let d = g.download(&data).unwrap();
        for b in 0..blocks as usize {
            let next = (b + 1) % blocks as usize;
            assert_eq!(d[blocks as usize + b], 10 * next as u32 + 1, "block {b}");
        }
    }
}

#[test]
fn a_cooperative_grid_larger_than_the_device_is_refused() {
    let g = cooperative_device(4);
    let args = (std::ptr::null_mut(), std::ptr::null_mut(), 0, 0);
    let most = g.max_resident_blocks::<p::probe_flags>(&args).unwrap();
    let (flags, epoch) = g.flags(most as usize + 1).unwrap();
    let mut data = g.upload(&vec![0u32; 2 * most as usize + 2]).unwrap();
    // SAFETY: refused before it runs.
    let e = unsafe {
        g.launch::<p::probe_flags>(
            cfg((most + 1, 1, 1), (64, 1, 1)),
            (flags.ptr() as *mut u32, data.ptr_mut(), epoch, u32::MAX),
        )
    }
    .unwrap_err();
    assert!(
        matches!(
            e,
            SimtError::BadLaunch {
                kernel: "probe_flags",
                ..
            }
        ) && e.to_string().contains("max_resident_blocks"),
        "{e}"
    );
}

#[test]
fn a_flag_that_never_comes_is_an_error_not_a_hang() {
    let g = cooperative_device(4);
    if on_gpu(&g) {
        return; // on a GPU this hangs: the emulator's negative test only
    }
    let (flags, epoch) = g.flags(4).unwrap();
    let mut data = g.upload(&[0u32; 8]).unwrap();
    // Block 2 never publishes: block 1 waits for it forever.
    // SAFETY: 4 flags, 8 words; the missing flag is the point of the test.
    let e = unsafe {
        g.launch::<p::probe_flags>(
            cfg((4, 1, 1), (64, 1, 1)),
            (flags.ptr() as *mut u32, data.ptr_mut(), epoch, 2),
        )
    }
    .unwrap_err();
    match &e {
        SimtError::Emulator(EmuError::Hang { kernel, block, .. }) => {
            assert_eq!(*kernel, "probe_flags");
            assert_eq!(block.x, 1);
        }
        other => panic!("expected a hang error, got {other}"),
    }
    let msg = e.to_string();
    assert!(msg.contains("flag") && msg.contains("cooperative"), "{msg}");
}

// ---- Launch records (`Gpu::capture`, the plans `scripts/peers.py --ours` replays) ----

#[test]
fn parameter_values_are_exact_for_scalars_and_pointers_and_sized_for_structs() {
    use kernels::params::MatRef;
    use rust_simt::{KernelParam, LaunchArgs, ParamValue};
    let p = 0x7f00_1234_5600u64 as usize as *const f32;
    let args = (p, 3u32, 1.5f32, -2i32, 7u64, -0.25f64, 200u8);
    assert_eq!(
        args.param_values(),
        vec![
            ParamValue::Pointer(0x7f00_1234_5600),
            ParamValue::Unsigned { value: 3, bytes: 4 },
            ParamValue::F32(1.5),
            ParamValue::Signed {
                value: -2,
                bytes: 4
            },
            ParamValue::Unsigned { value: 7, bytes: 8 },
            ParamValue::F64(-0.25),
            ParamValue::Unsigned {
                value: 200,
                bytes: 1
            },
        ]
    );
    // A struct is recorded by its size only: its padding bytes are never read.
    let m = MatRef {
        ptr: p,
        rows: 2,
        cols: 3,
        ld: 3,
    };
    assert_eq!(
        m.param_value(),
        ParamValue::Opaque {
            bytes: std::mem::size_of::<MatRef>()
        }
    );
}

#[test]
fn capture_records_every_launch_in_order_and_only_inside_it() {
    use rust_simt::ops::gelu;
    use rust_simt::ParamValue;
    let g = gpu();
    let n = 1000;
    let x = g.upload(&vec![0.5f32; n]).unwrap();
    let mut y = g.alloc::<f32>(n).unwrap();
    let mut t = g.alloc::<f32>(n).unwrap();
    let ((), fused) = g.capture(|| gelu::gelu(&g, &x, &mut y)).unwrap();
    assert_eq!(fused.len(), 1);
    let l = &fused[0];
    assert_eq!(
        (l.kernel, l.module, l.cooperative, l.cluster),
        ("gelu_fused", "kernels", false, 1)
    );
    assert_eq!(l.params[0], ParamValue::Pointer(x.ptr() as usize as u64));
    assert_eq!(l.params[1], ParamValue::Pointer(y.ptr() as usize as u64));
    assert_eq!(
        l.params[2],
        ParamValue::Unsigned {
            value: n as u64,
            bytes: 4
        }
    );
    // One 16-byte vector a thread: the grid covers n / 4 threads.
    assert!(l.grid.x as usize * l.block.x as usize * 4 >= n);
    // The eager composition: seven kernels, in launch order; nothing after capture ends.
    let ((), naive) = g
        .capture(|| gelu::gelu_naive(&g, &x, &mut y, &mut t))
        .unwrap();
    assert_eq!(
        naive.len(),
        7,
        "{:?}",
        naive.iter().map(|l| l.kernel).collect::<Vec<_>>()
    );
    gelu::gelu(&g, &x, &mut y).unwrap();
    let ((), none) = g.capture(|| Ok(())).unwrap();
    assert!(none.is_empty());
    // A failing op still ends the capture and returns its error.
    let mut short = g.alloc::<f32>(n - 1).unwrap();
    assert!(g.capture(|| gelu::gelu(&g, &x, &mut short)).is_err());
    let ((), after) = g.capture(|| Ok(())).unwrap();
    assert!(after.is_empty());
    // Nested: the inner capture's launches are in both; a panic inside ends it too.
    let ((((), inner), ()), outer) = g
        .capture(|| {
            let r = g.capture(|| gelu::gelu(&g, &x, &mut y))?;
            gelu::gelu(&g, &x, &mut y)?;
            Ok((r, ()))
        })
        .unwrap();
    assert_eq!((inner.len(), outer.len()), (1, 2));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = g.capture(|| -> rust_simt::Result<()> { panic!("inside a capture") });
    }));
    assert!(caught.is_err());
    gelu::gelu(&g, &x, &mut y).unwrap();
    let ((), after) = g.capture(|| Ok(())).unwrap();
    assert!(after.is_empty(), "a launch after the panic was recorded");
}

#[test]
fn plans_name_every_pointer_by_its_buffer_or_say_why_not() {
    use rust_simt::sweep::Op;
    let g = gpu();
    let dir = std::env::temp_dir().join(format!("simt-plans-{}", std::process::id()));
    let (n, ok) =
        rust_simt::plans::write(&g, &[Op::Gelu, Op::Softmax, Op::RowSum], true, &dir).unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("plans.json")).unwrap()).unwrap();
    let plans = doc["plans"].as_array().unwrap();
    assert_eq!(plans.len(), n);
    assert!(ok >= 1 && ok <= n, "{ok} of {n} replayable");
    // Per shape: the op's own plan first, then its candidates, each variant once.
    let mut seen = std::collections::HashSet::new();
    for (i, p) in plans.iter().enumerate() {
        let key = (p["op"].as_str().unwrap(), p["shape"].as_str().unwrap());
        let first = i == 0
            || (
                plans[i - 1]["op"].as_str().unwrap(),
                plans[i - 1]["shape"].as_str().unwrap(),
            ) != key;
        assert_eq!(p["candidate"].as_bool().unwrap(), !first, "{p}");
        assert!(seen.insert((key, p["variant"].as_str().unwrap())), "{p}");
    }
    let variants = |op: &str, shape: &str| -> Vec<String> {
        plans
            .iter()
            .filter(|p| p["op"] == op && p["shape"] == shape)
            .map(|p| p["variant"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        variants("gelu", "4096"),
        [
            "rust-simt fused",
            "rust-simt fused 128x2",
            "rust-simt fused 128x4",
            "rust-simt fused 256x1-cs"
        ]
    );
    assert_eq!(variants("softmax", "64x512"), ["rust-simt fused"]);
    // The looped softmax beside the long-row kernels: one launch on x and y, no
    // scratch, so it replays where they may not.
    let looped = plans
        .iter()
        .find(|p| p["shape"] == "2x40000" && p["variant"] == "rust-simt looped")
        .unwrap();
    assert_eq!(looped["replayable"], true, "{looped}");
    assert_eq!(looped["launches"].as_array().unwrap().len(), 1);
    assert_eq!(looped["launches"][0]["kernel"], "softmax_looped");
    assert_eq!(looped["launches"][0]["grid"], serde_json::json!([2, 1, 1]));
    for p in plans {
        if p["replayable"].as_bool().unwrap() {
            for l in p["launches"].as_array().unwrap() {
                let ptx = dir.join(l["ptx"].as_str().unwrap());
                let text = std::fs::read_to_string(&ptx).unwrap();
                assert!(text.contains(&format!(".entry {}(", l["kernel"].as_str().unwrap())));
                let ptrs: Vec<_> = l["params"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|v| v[0] == "ptr")
                    .map(|v| (v[1].as_str().unwrap().to_string(), v[2].as_u64().unwrap()))
                    .collect();
                // x and y at their starts, then any of the Gpu's scratch buffers the
                // plan lists with their size and what a replay must put in them.
                assert_eq!(
                    ptrs[..2],
                    [("x".to_string(), 0), ("y".to_string(), 0)],
                    "{p}"
                );
                for (name, _) in &ptrs[2..] {
                    let b = &p["buffers"][name];
                    assert!(b["bytes"].as_u64().unwrap() > 0, "{p}");
                    assert!(b["init"] == "any" || b["init"] == "zero", "{p}");
                }
            }
        } else {
            // Epoch flags, memory the plan cannot name, or (where a device has no
            // clusters and a long row takes the split kernel) a cooperative launch.
            let why = p["why"].as_str().unwrap();
            assert!(
                why.contains("epoch-tagged")
                    || why.contains("outside the op's x and y")
                    || why.contains("cooperative launch"),
                "{p}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn split_row_sums_name_their_workspace_and_counts_as_scratch_regions() {
    use rust_simt::ops::row_sum::{row_sum_with, RowSumKernel};
    use rust_simt::{ParamValue, ScratchKind};
    let g = gpu();
    let cols = 1 << 16;
    let x = g.upload(&vec![0.25f32; cols]).unwrap();
    let mut out = g.alloc::<f32>(1).unwrap();
    let ((), launches) = g
        .capture(|| row_sum_with(&g, RowSumKernel::Stream, x.matrix(1, cols)?, &mut out))
        .unwrap();
    assert_eq!(g.download(&out).unwrap(), [0.25 * cols as f32]);
    let regions = g.scratch_regions();
    let mut kinds = Vec::new();
    for p in launches.iter().flat_map(|l| l.params.iter()) {
        if let ParamValue::Pointer(a) = *p {
            if a == 0 || a == x.ptr() as usize as u64 || a == out.ptr() as usize as u64 {
                continue;
            }
            let r = regions
                .iter()
                .find(|r| a >= r.base && a < r.base + r.bytes)
                .unwrap_or_else(|| panic!("pointer {a:#x} in no region of {regions:?}"));
            kinds.push(r.kind);
        }
    }
    // One row in parts: each part's sum in the workspace, the row's count in the zeros.
    assert!(
        kinds.contains(&ScratchKind::Workspace) && kinds.contains(&ScratchKind::Zeros),
        "{kinds:?}"
    );
}
