//! Matmul + ReLU, naive and tiled, any shape and strides, against float64.
mod common;
use common::*;
use rust_simt::emulator::Order;
use rust_simt::ops::matmul::{
    matmul, matmul_host, Dims, Epilogue, MatmulKernel, MmLoop, MM_ASYNC_TILES, MM_CLUSTER_CONFIGS,
    MM_TILES,
};
use rust_simt::ops::softmax::has_clusters;
use rust_simt::Layout;
use rust_simt::{reference, SimtError};

const KERNELS: [MatmulKernel; MatmulKernel::ALL.len()] = MatmulKernel::ALL;

/// Every kernel that takes an `m x n` product: the stages, stages 4w, 4ws, 4k and 4s, every tile
/// of both tile kernels unsplit and in 3 K slices (an odd count: the last slice is
/// short), every cluster split-K kernel where the device has clusters, the GEMV paths
/// where a side is 1 (unsplit and in 5 slices), and `Auto`.
fn kernels_for(g: &rust_simt::Gpu, m: usize, n: usize) -> Vec<MatmulKernel> {
    let mut v = KERNELS.to_vec();
    v.push(MatmulKernel::WarpTiledWide);
    v.push(MatmulKernel::WarpTiledWideTail);
    v.push(MatmulKernel::WarpTiledStreamK);
    v.push(MatmulKernel::WarpTiledTail);
    v.extend(
        (0..rust_simt::ops::matmul::TAIL_PLANS.len())
            .map(|plan| MatmulKernel::WarpTiledTailPlan { plan }),
    );
    if has_clusters(g) {
        v.extend((0..MM_CLUSTER_CONFIGS.len()).map(|config| MatmulKernel::TileCluster { config }));
    }
    for split_k in [1, 3] {
        for tile in 0..MM_TILES.len() {
            v.push(MatmulKernel::Tile { tile, split_k });
        }
        for tile in 0..MM_ASYNC_TILES.len() {
            v.push(MatmulKernel::TileAsync { tile, split_k });
        }
    }
    for split_k in [1, 5] {
        if m == 1 {
            v.push(MatmulKernel::GemvRow { split_k });
        }
        if n == 1 {
            v.push(MatmulKernel::GemvCol { split_k });
        }
    }
    v.push(MatmulKernel::Auto);
    v
}

fn check(m: usize, n: usize, k: usize, pad: usize, relu: bool) {
    let g = gpu();
    let (mut r, seed) = rng("matmul");
    let (lda, ldb, ldc) = (k + pad, n + pad, n + 2 * pad);
    let a = uniform(&mut r, (m - 1) * lda + k, -1.0, 1.0);
    let b = uniform(&mut r, (k - 1) * ldb + n, -1.0, 1.0);
    let want = reference::matmul(&a, &b, m, n, k, lda, ldb, relu);
    let epi = if relu { Epilogue::Relu } else { Epilogue::None };
    let (ab, bb) = (g.upload(&a).unwrap(), g.upload(&b).unwrap());
    for kern in kernels_for(&g, m, n) {
        let mut c = poisoned(&g, (m - 1) * ldc + n);
        let (av, bv) = (
            ab.matrix_strided(Layout::strided(m, k, lda)).unwrap(),
            bb.matrix_strided(Layout::strided(k, n, ldb)).unwrap(),
        );
        matmul(
            &g,
            kern,
            av,
            bv,
            c.matrix_mut_strided(Layout::strided(m, n, ldc)).unwrap(),
            epi,
        )
        .unwrap();
        let c = g.download(&c).unwrap();
        let got = dense_rows(&c, m, n, ldc);
        assert_matmul_close(
            &format!("{kern:?} {m}x{n}x{k} pad {pad} relu {relu}"),
            seed,
            &got,
            &want,
            k,
        );
        if pad > 0 && m > 1 {
            assert!(c[n].is_nan(), "{kern:?} wrote into C's row padding");
        }
    }
}

#[test]
fn hand_worked() {
    // [[1, 2], [3, 4]] · [[1, -1], [0, 1]] = [[1, 1], [3, 1]]; with a negative entry ReLU'd:
    // [[1, 2], [3, 4]] · [[-1, 0], [0, 1]] = [[-1, 2], [-3, 4]] -> [[0, 2], [0, 4]]
    let g = gpu();
    for kern in KERNELS {
        let c = matmul_host(
            &g,
            kern,
            &[1., 2., 3., 4.],
            &[1., -1., 0., 1.],
            Dims { m: 2, n: 2, k: 2 },
            Epilogue::None,
        )
        .unwrap();
        assert_eq!(c, vec![1., 1., 3., 1.], "{kern:?}");
        let c = matmul_host(
            &g,
            kern,
            &[1., 2., 3., 4.],
            &[-1., 0., 0., 1.],
            Dims { m: 2, n: 2, k: 2 },
            Epilogue::Relu,
        )
        .unwrap();
        assert_eq!(c, vec![0., 2., 0., 4.], "{kern:?}");
    }
}

#[test]
fn small_and_ragged() {
    for (m, n, k) in [
        (1, 1, 1),
        (3, 5, 7),
        (1, 129, 17),
        (129, 1, 9),
        (127, 129, 131),
        (128, 128, 8),
        (130, 260, 13),
        (256, 384, 40),
        (260, 300, 48),
        // Edge tiles of the `cp.async` tiles over several whole K steps, then a
        // partial one.
        (100, 200, 100),
    ] {
        check(m, n, k, 0, true);
    }
}

#[test]
fn strided_and_misaligned() {
    // (100 x 198 with rows of 200: B's rows aligned, its last chunk of columns partly
    // inside, which the `cp.async` tiles copy piece by piece.)
    for (m, n, k, pad) in [
        (33, 65, 17, 1),
        (128, 128, 128, 3),
        (70, 200, 35, 4),
        (100, 198, 100, 2),
    ] {
        check(m, n, k, pad, true);
        check(m, n, k, pad, false);
    }
}

#[test]
fn k_not_multiple_of_block_k() {
    for k in [1, 3, 9, 15, 33] {
        check(64, 96, k, 0, true);
    }
}

#[test]
fn large() {
    let g = gpu();
    if on_gpu(&g) {
        check(1000, 1001, 1000, 0, true);
        check(2048, 2048, 2048, 0, true);
    } else {
        check(1000, 1001, 64, 0, true);
        check(256, 256, 256, 0, false);
    }
}

#[test]
fn bad_inputs_are_errors() {
    let g = gpu();
    let a = g.upload(&[1.0f32; 6]).unwrap();
    let b = g.upload(&[1.0f32; 6]).unwrap();
    let mut c = g.alloc::<f32>(6).unwrap();
    // A 2x3 times B 2x3: inner dimensions differ.
    let e = matmul(
        &g,
        MatmulKernel::Tiled,
        a.matrix(2, 3).unwrap(),
        b.matrix(2, 3).unwrap(),
        c.matrix_mut(2, 3).unwrap(),
        Epilogue::Relu,
    );
    assert!(matches!(e, Err(SimtError::Shape { .. })));
    // C of the wrong shape.
    let e = matmul(
        &g,
        MatmulKernel::Naive,
        a.matrix(2, 3).unwrap(),
        b.matrix(3, 2).unwrap(),
        c.matrix_mut(3, 2).unwrap(),
        Epilogue::Relu,
    );
    assert!(matches!(e, Err(SimtError::Shape { .. })));
}

#[test]
fn zero_sized_products() {
    // As torch.mm: m = 0 or n = 0 is an empty result (no launch); k = 0 is the empty
    // sum, so C = epilogue(0) = 0 everywhere, with any strides.
    let g = gpu();
    let empty = g.alloc::<f32>(0).unwrap();
    for kern in KERNELS {
        let mut c = poisoned(&g, 3 * 6);
        let a = empty.matrix(3, 0).unwrap();
        let b = empty.matrix(0, 5).unwrap();
        matmul(
            &g,
            kern,
            a,
            b,
            c.matrix_mut_strided(Layout::strided(3, 5, 6)).unwrap(),
            Epilogue::None,
        )
        .unwrap();
        let c = g.download(&c).unwrap();
        for i in 0..3 {
            assert_eq!(&c[i * 6..i * 6 + 5], &[0.0; 5], "{kern:?} row {i}");
        }
        assert!(c[5].is_nan(), "{kern:?}: padding untouched");
        let mut none = g.alloc::<f32>(0).unwrap();
        let (_, launches) = g
            .profile(|| {
                matmul(
                    &g,
                    kern,
                    empty.matrix(0, 4)?,
                    empty.matrix(4, 0)?,
                    none.matrix_mut(0, 0)?,
                    Epilogue::Relu,
                )
            })
            .unwrap();
        assert!(launches.is_empty(), "{kern:?}");
    }
}

/// Split K adds the slices in a fixed order, whatever order the blocks ran in: two
/// runs give the same bits, and the result matches float64.
#[test]
fn split_k_is_deterministic() {
    let g = gpu();
    let (m, n, k) = (70, 90, 1000);
    let (mut r, seed) = rng("split_k");
    let a = uniform(&mut r, m * k, -1.0, 1.0);
    let b = uniform(&mut r, k * n, -1.0, 1.0);
    let (ab, bb) = (g.upload(&a).unwrap(), g.upload(&b).unwrap());
    let want = reference::matmul(&a, &b, m, n, k, k, n, true);
    for kern in [
        MatmulKernel::Tile {
            tile: 2,
            split_k: 7,
        },
        MatmulKernel::TileAsync {
            tile: 3,
            split_k: 5,
        },
        MatmulKernel::GemvCol { split_k: 3 },
    ] {
        let n = if matches!(kern, MatmulKernel::GemvCol { .. }) {
            1
        } else {
            n
        };
        let want = if n == 1 {
            reference::matmul(&a, &b, m, 1, k, k, 90, true)
        } else {
            want.clone()
        };
        let mut runs = Vec::new();
        for _ in 0..2 {
            let mut c = poisoned(&g, m * n);
            matmul(
                &g,
                kern,
                ab.matrix(m, k).unwrap(),
                bb.matrix_strided(Layout::strided(k, n, 90)).unwrap(),
                c.matrix_mut(m, n).unwrap(),
                Epilogue::Relu,
            )
            .unwrap();
            runs.push(g.download(&c).unwrap());
        }
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&runs[0]), bits(&runs[1]), "{kern:?}: two runs differ");
        assert_matmul_close(&format!("{kern:?}"), seed, &runs[0], &want, k);
    }
}

/// The cluster split-K kernels add the same slices in the same order as the
/// two-launch split of the same tile (`matmul_splitk_reduce`): the same bits, under
/// every thread order of the emulator, with and without ReLU, on a ragged shape whose
/// last slice is short and whose edge tiles are partial.
#[test]
fn cluster_split_k_matches_the_two_launch_split_bit_for_bit() {
    let g = gpu();
    if !has_clusters(&g) {
        return;
    }
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let gpus: Vec<_> = if on_gpu(&g) {
        vec![g]
    } else {
        [Order::InOrder, Order::Reversed, Order::Random(3)]
            .into_iter()
            .map(emulator)
            .collect()
    };
    // Unaligned rows (the checked copies); aligned rows with interior tiles and
    // slices of 32 or more (the unconditional copies and stores); K = 20, whose
    // slices of 8 leave the last blocks of a cluster of 4 or 8 with none.
    for (m, n, k) in [(70, 90, 300), (64, 128, 300), (64, 128, 20)] {
        let (mut r, seed) = rng("cluster_split_k");
        let a = uniform(&mut r, m * k, -1.0, 1.0);
        let b = uniform(&mut r, k * n, -1.0, 1.0);
        let want = reference::matmul(&a, &b, m, n, k, k, n, false);
        for g in &gpus {
            let (ab, bb) = (g.upload(&a).unwrap(), g.upload(&b).unwrap());
            let run = |kern: MatmulKernel, epi: Epilogue| {
                let mut c = poisoned(g, m * n);
                matmul(
                    g,
                    kern,
                    ab.matrix(m, k).unwrap(),
                    bb.matrix(k, n).unwrap(),
                    c.matrix_mut(m, n).unwrap(),
                    epi,
                )
                .unwrap();
                g.download(&c).unwrap()
            };
            for (config, c) in MM_CLUSTER_CONFIGS.iter().enumerate() {
                let cluster = MatmulKernel::TileCluster { config };
                let split = match c.kloop {
                    MmLoop::Tile(tile) => MatmulKernel::Tile {
                        tile,
                        split_k: c.cluster,
                    },
                    MmLoop::Async(tile) => MatmulKernel::TileAsync {
                        tile,
                        split_k: c.cluster,
                    },
                };
                for epi in [Epilogue::None, Epilogue::Relu] {
                    let got = run(cluster, epi);
                    assert_eq!(
                        bits(&got),
                        bits(&run(split, epi)),
                        "{} against {}, {m}x{n}x{k} {epi:?}",
                        cluster.label(),
                        split.label()
                    );
                    if epi == Epilogue::None {
                        assert_matmul_close(
                            &format!("{} {m}x{n}x{k}", cluster.label()),
                            seed,
                            &got,
                            &want,
                            k,
                        );
                    }
                }
            }
        }
    }
}

/// A cluster kernel's label names its tile and cluster, and parses back.
#[test]
fn cluster_labels_round_trip() {
    let labels: Vec<String> = (0..MM_CLUSTER_CONFIGS.len())
        .map(|config| MatmulKernel::TileCluster { config }.label())
        .collect();
    assert_eq!(labels[1], "tile64x128/c4");
    assert_eq!(labels[6], "async-s4-32x64/c4");
    for (config, l) in labels.iter().enumerate() {
        assert_eq!(
            MatmulKernel::from_label(l),
            Some(MatmulKernel::TileCluster { config }),
            "{l}"
        );
    }
    let mut unique = labels.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), labels.len(), "labels collide: {labels:?}");
}

/// Stage 4k's split of stage 4's tiles (the numbers of its module docs): 4096^3 on
/// 264 resident blocks is two data-parallel waves and 496 tiles shared along K; whole
/// waves, or fewer tiles than blocks, run stage 4; and over many splits every K step
/// of every tile is in exactly one block's segments, a tile in at most two (a head in
/// block b - 1, the tail in block b), segments in the documented order.
#[test]
fn streamk_plan_covers_every_k_step_once() {
    use kernels::streamk::Share;
    use rust_simt::ops::matmul::streamk_plan;
    assert_eq!(streamk_plan(1024, 512, 264), Some((528, 496)));
    assert_eq!(streamk_plan(4096, 1024, 264), Some((3696, 400)));
    assert_eq!(streamk_plan(528, 512, 264), None);
    assert_eq!(streamk_plan(256, 256, 264), None);
    assert_eq!(streamk_plan(1 << 33, 8, 264), None);
    assert_eq!(
        streamk_plan(265, 1 << 28, 264),
        None,
        "stream-K K steps past 2^32"
    );
    for grid in 1..12u32 {
        for tiles in 1..5 * grid {
            for kt in [1u32, 2, 3, 7] {
                let Some((dp, sk)) = streamk_plan(tiles as u64, kt, grid) else {
                    assert!(
                        tiles <= grid || tiles % grid == 0,
                        "{tiles} tiles on {grid}"
                    );
                    continue;
                };
                let mut seen = vec![0u32; (tiles * kt) as usize];
                let mut owners = vec![Vec::new(); tiles as usize];
                for b in 0..grid {
                    let sh = Share::new(b, grid, dp, sk, kt);
                    let mut last_kind = 0;
                    for i in 0..sh.segments {
                        let (tile, k0, k1) = sh.segment(i);
                        assert!(k0 < k1 && k1 <= kt && tile < tiles);
                        // whole tiles (0), then a head (1), then a tail (2)
                        let kind = if k0 == 0 && k1 == kt {
                            0
                        } else if k0 == 0 {
                            1
                        } else {
                            2
                        };
                        assert!(kind >= last_kind, "segment order in block {b}");
                        last_kind = kind;
                        if kind == 2 {
                            assert!(b > 0);
                        }
                        owners[tile as usize].push((b, kind));
                        for s in k0..k1 {
                            seen[(tile * kt + s) as usize] += 1;
                        }
                    }
                }
                assert!(
                    seen.iter().all(|&c| c == 1),
                    "{tiles} tiles, {grid} blocks, kt {kt}"
                );
                for (t, o) in owners.iter().enumerate() {
                    match o.as_slice() {
                        [(_, 0)] => {}
                        [(h, 1), (tb, 2)] | [(tb, 2), (h, 1)] => assert_eq!(*tb, h + 1, "tile {t}"),
                        other => panic!("tile {t}: segments {other:?}"),
                    }
                }
            }
        }
    }
}

/// Stage 4s's plans (the numbers of `tail_plan`'s docs, 132 SMs): 4096^3 leaves 232
/// tiles past three waves, cut in three parts of 5/8, 3/16 and 3/16 of its 512 K steps;
/// 3072^3 leaves 48, in five equal parts; 2048^3 (less than one wave, but a tile for
/// every SM), 3584^3 (a last wave
/// 97% full) and whole waves run stage 4; with fewer tiles than one wave holds, every
/// tile is split in equal parts. Over many plans, the segments of the grid
/// cover every K step of every tile once, in the documented order.
#[test]
fn tail_plan_covers_every_k_step_once() {
    use kernels::matmul_warptiled_tail::{tail_segment, TAIL_MAX_PARTS};
    use rust_simt::ops::matmul::{tail_plan, TailPlan};
    let plan = |dp_tiles, split_tiles, parts, cut| TailPlan {
        dp_tiles,
        split_tiles,
        parts,
        cut,
    };
    assert_eq!(tail_plan(1024, 512, 132), Some(plan(792, 232, 3, 320)));
    assert_eq!(tail_plan(576, 384, 132), Some(plan(528, 48, 5, 76)));
    assert_eq!(tail_plan(4096, 1024, 132), Some(plan(3960, 136, 3, 640)));
    assert_eq!(tail_plan(256, 256, 132), None);
    assert_eq!(tail_plan(784, 448, 132), None);
    assert_eq!(tail_plan(792, 512, 132), None);
    assert_eq!(tail_plan(1 << 31, 512, 132), None);
    assert!(tail_plan((1 << 31) - 56, 512, 132).is_some());
    // K too short for parts of 4 steps.
    assert_eq!(tail_plan(1024, 8, 132), None);
    // Fewer tiles than one wave holds: every tile in as many equal parts as one wave
    // holds (1024x1024x2048: 64 tiles in 4; 1280x1024x1024: 80 in 3; 768x768x4096: 36
    // in 7; 512x512x8192: 16 in 16), where each part gets 18 K steps (not 512x512x2048)
    // and the parts fill 7/8 of the slots (not 1536x1024x1024's 96 tiles in 2, nor 8
    // tiles in 16).
    assert_eq!(tail_plan(64, 256, 132), Some(plan(0, 64, 4, 64)));
    assert_eq!(tail_plan(80, 128, 132), Some(plan(0, 80, 3, 42)));
    assert_eq!(tail_plan(36, 512, 132), Some(plan(0, 36, 7, 73)));
    assert_eq!(tail_plan(16, 1024, 132), Some(plan(0, 16, 16, 64)));
    assert_eq!(tail_plan(16, 256, 132), None);
    assert_eq!(tail_plan(96, 128, 132), None);
    // Two parts (116 to 131 tiles) from 18 K steps each, as any whole split (the
    // heuristic takes them only from 128: `whole_split`).
    assert_eq!(tail_plan(128, 256, 132), Some(plan(0, 128, 2, 128)));
    assert_eq!(tail_plan(128, 64, 132), Some(plan(0, 128, 2, 32)));
    assert_eq!(tail_plan(128, 35, 132), None);
    assert_eq!(tail_plan(8, 1024, 132), None);
    // The tuner's other plans replace the three-part cut (first part in eighths of K),
    // not the equal parts, and never below 4 K steps a part.
    use rust_simt::ops::matmul::tail_plan_with;
    assert_eq!(
        tail_plan_with(1024, 512, 132, Some((3, 4))),
        Some(plan(792, 232, 3, 256))
    );
    assert_eq!(
        tail_plan_with(1024, 512, 132, Some((8, 1))),
        Some(plan(792, 232, 8, 64))
    );
    assert_eq!(
        tail_plan_with(576, 384, 132, Some((8, 1))),
        tail_plan(576, 384, 132)
    );
    assert_eq!(
        tail_plan_with(1024, 24, 132, Some((8, 1))),
        tail_plan(1024, 24, 132)
    );
    assert_eq!(
        tail_plan_with(1024, 512, 132, None),
        tail_plan(1024, 512, 132)
    );
    for sms in 1..6u32 {
        for tiles in 1..7 * sms as u64 {
            for (ksteps, cut) in [1u32, 4, 9, 13, 40, 100].into_iter().flat_map(|k| {
                [None, Some((3, 4)), Some((4, 2)), Some((8, 1)), Some((5, 7))].map(|c| (k, c))
            }) {
                let Some(p) = tail_plan_with(tiles, ksteps, sms, cut) else {
                    assert_eq!(tail_plan(tiles, ksteps, sms), None);
                    continue;
                };
                assert!(p.dp_tiles + p.split_tiles == tiles as u32 && p.split_tiles > 0);
                assert!((2..=TAIL_MAX_PARTS).contains(&p.parts));
                // Whole waves first, or every tile split, filling 7/8 to all of one wave.
                let fills = (7 * 2 * sms..=8 * 2 * sms).contains(&(8 * p.parts * p.split_tiles));
                assert!(p.dp_tiles >= 2 * sms || (p.dp_tiles == 0 && fills), "{p:?}");
                let blocks = p.dp_tiles + p.parts * p.split_tiles;
                let mut seen = vec![0u32; (tiles as u32 * ksteps) as usize];
                let mut last_part = 0;
                for b in 0..blocks {
                    let (tile, s0, s1, part) =
                        tail_segment(b, p.dp_tiles, p.split_tiles, p.parts, p.cut, ksteps);
                    assert!(
                        s0 + 4 <= s1 && s1 <= ksteps && tile < tiles as u32,
                        "{p:?} block {b}"
                    );
                    match part {
                        None => assert!(b < p.dp_tiles && (s0, s1) == (0, ksteps)),
                        Some(q) => {
                            // Part 0 of every split tile first, then part 1, ...
                            assert!(b >= p.dp_tiles && q >= last_part && tile >= p.dp_tiles);
                            last_part = q;
                        }
                    }
                    for s in s0..s1 {
                        seen[(tile * ksteps + s) as usize] += 1;
                    }
                }
                assert!(
                    seen.iter().all(|&c| c == 1),
                    "{tiles} tiles, {sms} SMs, {ksteps} steps, {cut:?}: {p:?}"
                );
            }
        }
    }
}

/// Stage 4s on emulated devices of 2, 3 and 5 SMs (4, 6 and 10 slots), under every
/// thread order: ragged shapes whose last wave is split in three unequal parts (more
/// tiles left than SMs) or in 2, 3 or 5 equal parts (fewer), or with fewer tiles than
/// SMs every tile split (4, 3 and 16 parts), K not a multiple of the K step,
/// padded strides and C padding, ReLU and none, against float64; the same bits under
/// every order and on a second run; the tiles before the split ones equal to stage
/// 4's bit for bit (same sums in the same order). A product of whole waves runs
/// stage 4 itself.
#[test]
fn warptiled_tail_under_every_order() {
    use rust_simt::ops::matmul::{tail_plan, TailPlan};
    let (mut r, seed) = rng("warptiled_tail");
    // (SMs, m, n, k, pad, relu, the plan's parts)
    for (sms, m, n, k, pad, relu, parts) in [
        (2, 100, 891, 300, 0, true, 3),
        (3, 390, 520, 257, 3, false, 3),
        (5, 1300, 40, 300, 1, true, 5),
        (5, 380, 500, 200, 0, true, 2),
        // Split tiles inside C (rows 384..768), aligned rows: the unchecked stores
        // into the slots through the shifted base.
        (5, 768, 384, 200, 0, false, 3),
        // Fewer tiles than one wave holds: every tile split (one tile in 4 parts on 4
        // slots; two ragged tiles in 3 parts on 6, K not a multiple of the K step).
        (2, 100, 120, 600, 1, true, 4),
        (3, 130, 100, 450, 2, false, 3),
        // 16 parts: the reduce's four rounds of 4 parts each.
        (8, 100, 120, 2310, 0, true, 16),
    ] {
        let tiles = (m as u64).div_ceil(128) * (n as u64).div_ceil(128);
        let plan: TailPlan = tail_plan(tiles, (k as u32).div_ceil(8), sms as u32)
            .unwrap_or_else(|| panic!("{m}x{n}x{k} on {sms} SMs: no plan"));
        assert_eq!(plan.parts, parts, "{m}x{n}x{k} on {sms} SMs: {plan:?}");
        // The whole tiles (counted row by row, as stage 4's grid) carry stage 4's bits.
        assert_split_under_orders(
            &mut r,
            seed,
            (MatmulKernel::WarpTiledTail, MatmulKernel::WarpTiled),
            &["matmul_relu_warptiled_tail", "matmul_tail_reduce"],
            sms,
            (m, n, k, pad, relu),
            (plan.dp_tiles as usize, 128),
            &format!("{plan:?}"),
        );
    }
    // The tuner's other plans (3 parts from half of K, 4 and 8 equal parts) on the first
    // shape (7 tiles on 2 SMs, 38 K steps): against float64, their own plans.
    {
        use rust_simt::ops::matmul::{tail_plan_with, TAIL_PLANS};
        let (sms, m, n, k) = (2, 100, 891, 300);
        let a = uniform(&mut r, m * k, -1.0, 1.0);
        let b = uniform(&mut r, k * n, -1.0, 1.0);
        let want = reference::matmul(&a, &b, m, n, k, k, n, true);
        let g = emulator_workers(sms, Order::Random(7));
        for (plan, parts) in [(0, 3), (1, 4), (2, 8)] {
            let kern = MatmulKernel::WarpTiledTailPlan { plan };
            let p = tail_plan_with(7, 38, 2, Some(TAIL_PLANS[plan]));
            assert_eq!(p.map(|p| p.parts), Some(parts), "{kern:?}");
            let (got, names) =
                profiled_product(&g, kern, &a, &b, (m, n, k), (k, n, n), Epilogue::Relu);
            let what = format!("{m}x{n}x{k} on {sms} SMs, {}", kern.label());
            assert_eq!(
                names,
                ["matmul_relu_warptiled_tail", "matmul_tail_reduce"],
                "{what}"
            );
            assert_matmul_close(&what, seed, &got, &want, k);
        }
    }
    // On a GPU: 4096^3's shape of plan (tiles past whole waves, more than the SMs).
    let g = gpu();
    if on_gpu(&g) {
        let sms = g.props().sms as usize;
        let dims = (128, 128 * (2 * sms + sms + sms / 2), 520);
        let kern = MatmulKernel::WarpTiledTail;
        let names = ["matmul_relu_warptiled_tail", "matmul_tail_reduce"];
        assert_gpu_product(&g, kern, dims, &names, &mut r, seed);
    }
    // Whole waves: 4 tiles on 2 SMs' 4 slots run stage 4.
    assert_whole_waves_run_stage_4(MatmulKernel::WarpTiledTail);
}

/// Stage 4ws's plans (the numbers of `wide_tail_plan`'s docs, 132 SMs, one block
/// each): 4096^3's 512 256x128 tiles leave 116 past three waves, whose first 459 of 512
/// K steps stay whole while the 16 idle SMs run the other 53 of eight tiles each;
/// 8192^3 leaves 68 (64 SMs idle), in 7 parts; whole waves, less than one wave
/// (2048^3) and a last wave with too few idle SMs run stage 4w. Over many plans the
/// segments cover every K step of every tile once, part 0 is at least as long as the
/// later parts, and the later parts (`k` a idle SM in the model) end by part 0's end.
#[test]
fn wide_tail_plan_covers_every_k_step_once() {
    use kernels::matmul_warptiled_tail::{tail_segment, TAIL_MAX_PARTS};
    use rust_simt::ops::matmul::{wide_tail_plan, TailPlan};
    let plan = |dp_tiles, split_tiles, parts, cut| TailPlan {
        dp_tiles,
        split_tiles,
        parts,
        cut,
    };
    assert_eq!(wide_tail_plan(512, 512, 132), Some(plan(396, 116, 2, 459)));
    assert_eq!(
        wide_tail_plan(2048, 1024, 132),
        Some(plan(1980, 68, 7, 563))
    );
    // 3072^3: 288 tiles, 24 left on 108 idle SMs: five equal parts.
    assert_eq!(wide_tail_plan(288, 384, 132), Some(plan(264, 24, 5, 77)));
    assert_eq!(wide_tail_plan(128, 256, 132), None);
    // Fewer tiles than SMs: every tile in sms / tiles equal parts of at least 32 K steps
    // where they fill 7/8 of the SMs: 1024^3 (32 tiles in 4), 2048 x 1024 x 1024 (64 in
    // 2), 512 x 2048 x 4096 (32 in 4), 40 tiles in 3 (120 of 132 SMs); not 1024 x 1024 x
    // 512 (16 steps), not 36 tiles (3 parts: 108 SMs), not 14 (8 parts at most: 112).
    assert_eq!(wide_tail_plan(32, 128, 132), Some(plan(0, 32, 4, 32)));
    assert_eq!(wide_tail_plan(64, 128, 132), Some(plan(0, 64, 2, 64)));
    assert_eq!(wide_tail_plan(32, 512, 132), Some(plan(0, 32, 4, 128)));
    assert_eq!(wide_tail_plan(32, 64, 132), None);
    assert_eq!(wide_tail_plan(40, 512, 132), Some(plan(0, 40, 3, 170)));
    assert_eq!(wide_tail_plan(36, 512, 132), None);
    assert_eq!(wide_tail_plan(16, 1024, 132), Some(plan(0, 16, 8, 128)));
    assert_eq!(wide_tail_plan(14, 1024, 132), None);
    assert_eq!(wide_tail_plan(264, 512, 132), None);
    assert_eq!(wide_tail_plan(263, 512, 132), None);
    assert_eq!(wide_tail_plan(1 << 31, 512, 132), None);
    // K too short for parts of 4 steps, or to save 5%.
    assert_eq!(wide_tail_plan(512, 8, 132), None);
    assert_eq!(wide_tail_plan(512, 64, 132), None);
    for sms in 1..7u32 {
        for tiles in 1..5 * sms as u64 {
            for ksteps in [1u32, 4, 9, 13, 40, 64, 100, 257] {
                let Some(p) = wide_tail_plan(tiles, ksteps, sms) else {
                    continue;
                };
                let what = format!("{tiles} tiles, {sms} SMs, {ksteps} steps: {p:?}");
                assert!(p.dp_tiles + p.split_tiles == tiles as u32, "{what}");
                assert!(p.split_tiles > 0 && p.split_tiles < sms, "{what}");
                assert!((2..=TAIL_MAX_PARTS).contains(&p.parts), "{what}");
                let later = (ksteps - p.cut) / (p.parts - 1);
                if p.dp_tiles == 0 {
                    // Every tile split: equal parts that fill 7/8 of the SMs to all.
                    assert!(
                        (later == p.cut || later == p.cut + 1) && p.cut >= 32,
                        "{what}"
                    );
                    let blocks = p.parts * p.split_tiles;
                    assert!(8 * blocks >= 7 * sms && blocks <= sms, "{what}");
                } else {
                    // Part 0 at least as long as each later part.
                    assert!(p.cut >= later, "{what}");
                    assert!(p.dp_tiles >= sms && p.dp_tiles % sms == 0, "{what}");
                    let (t, idle) = (p.split_tiles, sms - p.split_tiles);
                    let k = ((p.parts - 1) * t).div_ceil(idle);
                    assert!(
                        k * (later + 4) <= p.cut + 4 + k,
                        "{what}: {k} parts an idle SM"
                    );
                }
                let blocks = p.dp_tiles + p.parts * p.split_tiles;
                let mut seen = vec![0u32; (tiles as u32 * ksteps) as usize];
                for b in 0..blocks {
                    let (tile, s0, s1, part) =
                        tail_segment(b, p.dp_tiles, p.split_tiles, p.parts, p.cut, ksteps);
                    assert!(
                        s0 + 4 <= s1 && s1 <= ksteps && tile < tiles as u32,
                        "{what}"
                    );
                    assert_eq!(part.is_none(), b < p.dp_tiles, "{what}");
                    for s in s0..s1 {
                        seen[(tile * ksteps + s) as usize] += 1;
                    }
                }
                assert!(seen.iter().all(|&c| c == 1), "{what}");
            }
        }
    }
}

/// Stage 4ws on emulated devices of 3 to 8 SMs (one block each), under every thread
/// order: ragged shapes whose last wave is split in two uneven parts (one or two idle
/// SMs running the short parts), three equal parts, four parts, fewer tiles than SMs
/// (every tile split), and split tiles
/// wholly inside C with aligned rows (the unchecked stores into the slots), K not a
/// multiple of the K step, padded strides and C padding, ReLU and none, against
/// float64; the same bits under every order and on a second run; the whole tiles equal
/// to stage 4w's bit for bit. A product of whole waves runs stage 4w itself.
#[test]
fn warptiled_wide_tail_under_every_order() {
    use rust_simt::ops::matmul::{wide_tail_plan, TailPlan};
    let (mut r, seed) = rng("warptiled_wide_tail");
    let names = ["matmul_relu_warptiled_wide_tail", "matmul_wide_tail_reduce"];
    // (SMs, m, n, k, pad, relu, the plan's parts and cut)
    for (sms, m, n, k, pad, relu, parts, cut) in [
        (5, 600, 300, 1030, 3, true, 2, 106),
        (3, 1000, 130, 500, 1, false, 2, 44),
        (3, 300, 200, 300, 0, true, 3, 13),
        (5, 520, 390, 257, 2, true, 4, 16),
        (4, 512, 640, 400, 0, false, 2, 25),
        // Fewer tiles than SMs: both tiles in 4 equal parts on 8 SMs (129 K steps).
        (8, 300, 100, 1030, 1, true, 4, 32),
        // 5 parts: the reduce's second round of 4 parts over 256-row slots.
        (5, 500, 300, 250, 1, true, 5, 7),
    ] {
        let tiles = (m as u64).div_ceil(256) * (n as u64).div_ceil(128);
        let plan: TailPlan = wide_tail_plan(tiles, (k as u32).div_ceil(8), sms as u32)
            .unwrap_or_else(|| panic!("{m}x{n}x{k} on {sms} SMs: no plan"));
        assert_eq!(
            (plan.parts, plan.cut),
            (parts, cut),
            "{m}x{n}x{k} on {sms} SMs: {plan:?}"
        );
        assert_split_under_orders(
            &mut r,
            seed,
            (MatmulKernel::WarpTiledWideTail, MatmulKernel::WarpTiledWide),
            &names,
            sms,
            (m, n, k, pad, relu),
            (plan.dp_tiles as usize, 256),
            &format!("{plan:?}"),
        );
    }
    // On a GPU: a plan of two equal parts (half the SMs idle in the last wave).
    let g = gpu();
    if on_gpu(&g) {
        let sms = g.props().sms as usize;
        let dims = (256, 128 * (sms + sms / 2), 520);
        assert_gpu_product(
            &g,
            MatmulKernel::WarpTiledWideTail,
            dims,
            &names,
            &mut r,
            seed,
        );
    }
    // Whole waves: 2 tiles on 2 SMs run stage 4w.
    let g = emulator_workers(2, Order::InOrder);
    let (a, b) = (vec![0.5f32; 256 * 8], vec![0.25f32; 8 * 256]);
    let (c, ran) = profiled_product(
        &g,
        MatmulKernel::WarpTiledWideTail,
        &a,
        &b,
        (256, 256, 8),
        (8, 256, 256),
        Epilogue::None,
    );
    assert_eq!(ran, ["matmul_relu_warptiled_wide"]);
    assert!(c.iter().all(|&v| v == 1.0));
}

/// The 64x64 tile of two K slices (`kslices`: 8 warps, each slice half of every K
/// step's FMAs, slice 1's sums added into slice 0's through shared memory after the
/// loop), under every thread order: a missing barrier around the exchange would let
/// an order read a sum before it is written. Ragged shapes and strides, K of one step
/// or less (slice 1 sums only zero-filled copies), ReLU on and off, against float64,
/// the same bits under every order and on a second run.
#[test]
fn sliced_k_tile_under_every_order() {
    let tile = MM_ASYNC_TILES
        .iter()
        .position(|t| t.kslices == 2)
        .expect("a tile of two K slices");
    assert_eq!(MM_ASYNC_TILES[tile].threads(), 256);
    let (mut r, seed) = rng("sliced_k");
    // (m, n, k, pad, relu)
    for (m, n, k, pad, relu) in [
        (64, 64, 32, 0, false),
        (130, 70, 13, 1, true),
        (100, 200, 300, 3, false),
        (192, 128, 1000, 0, true),
    ] {
        let (lda, ldb, ldc) = (k + pad, n + pad, n + 2 * pad);
        let a = uniform(&mut r, (m - 1) * lda + k, -1.0, 1.0);
        let b = uniform(&mut r, (k - 1) * ldb + n, -1.0, 1.0);
        let want = reference::matmul(&a, &b, m, n, k, lda, ldb, relu);
        let epi = if relu { Epilogue::Relu } else { Epilogue::None };
        let mut first: Option<Vec<u32>> = None;
        for order in [Order::InOrder, Order::Reversed, Order::Random(11)] {
            let g = emulator_workers(3, order);
            let kern = MatmulKernel::TileAsync { tile, split_k: 1 };
            let run = || profiled_product(&g, kern, &a, &b, (m, n, k), (lda, ldb, ldc), epi);
            let (got, launches) = run();
            let what = format!("{m}x{n}x{k} pad {pad}, {}, {order:?}", kern.label());
            assert_eq!(launches, ["matmul_relu_async_64x64_ks2"], "{what}");
            let dims = (m, n, k, ldc, pad);
            assert_order_run(&what, seed, &got, &run().0, &want, dims, &mut first);
        }
    }
}

/// Stage 4k on emulated devices of 2, 3 and 5 resident blocks, under every thread
/// order: ragged shapes whose tiles are not whole waves (heads, tails, whole stream-K
/// tiles and data-parallel tiles), K not a multiple of the K step, padded strides and
/// C padding, against float64; the same bits under every order and on a second run;
/// the data-parallel tiles equal to stage 4's bit for bit (same sums in the same
/// order). On a GPU, a product just past whole waves runs stage 4k's tail on the
/// device. A product of whole waves runs stage 4 itself.
#[test]
fn warptiled_streamk_under_every_order() {
    let (mut r, seed) = rng("warptiled_streamk");
    for (workers, m, n, k, pad) in [
        (2, 300, 260, 100, 0),
        (3, 390, 520, 37, 3),
        (5, 700, 300, 64, 1),
        (3, 129, 129, 9, 0),
    ] {
        let (lda, ldb, ldc) = (k + pad, n + pad, n + 2 * pad);
        let a = uniform(&mut r, (m - 1) * lda + k, -1.0, 1.0);
        let b = uniform(&mut r, (k - 1) * ldb + n, -1.0, 1.0);
        let want = reference::matmul(&a, &b, m, n, k, lda, ldb, true);
        let mut first: Option<Vec<u32>> = None;
        for order in [Order::InOrder, Order::Reversed, Order::Random(9)] {
            let g = emulator_workers(workers, order);
            let run = |kern| {
                let strides = (lda, ldb, ldc);
                profiled_product(&g, kern, &a, &b, (m, n, k), strides, Epilogue::Relu)
            };
            let (got, launches) = run(MatmulKernel::WarpTiledStreamK);
            let what = format!("{m}x{n}x{k} pad {pad} on {workers} blocks, {order:?}");
            assert!(
                launches.contains(&"matmul_relu_warptiled_streamk"),
                "{what}: stage 4k ran ({launches:?})"
            );
            let again = run(MatmulKernel::WarpTiledStreamK).0;
            let dims = (m, n, k, ldc, pad);
            assert_order_run(&what, seed, &got, &again, &want, dims, &mut first);
            // The tiles one block computes whole (all data-parallel ones, counted row
            // by row as stage 4's grid) carry stage 4's bits.
            let s4 = run(MatmulKernel::WarpTiled).0;
            let blocks = workers;
            let tiles = m.div_ceil(128) * n.div_ceil(128);
            let dp = tiles - (tiles % blocks + blocks);
            assert_first_tiles_as_stage_4(&what, &got, &s4, (m, n, ldc), dp);
        }
    }
    // On a GPU: one row of tiles, 24 more than the two resident blocks per SM that
    // stage 4's registers allow, so stage 4k's tail runs on the device.
    let g = gpu();
    if on_gpu(&g) {
        let (m, n, k) = (128, 128 * (2 * g.props().sms as usize + 24), 200);
        let kern = MatmulKernel::WarpTiledStreamK;
        assert_gpu_product(
            &g,
            kern,
            (m, n, k),
            &["matmul_relu_warptiled_streamk"],
            &mut r,
            seed,
        );
    }
    // Whole waves: 4 tiles on 2 blocks run stage 4.
    assert_whole_waves_run_stage_4(MatmulKernel::WarpTiledStreamK);
}

/// One run of a product under one thread order (the "under every order" tests):
/// against float64, C's row padding untouched, the same bits on a second run (`again`)
/// and under the first order tried (`first`, set by the first call).
fn assert_order_run(
    what: &str,
    seed: u64,
    got: &[f32],
    again: &[f32],
    want: &[f64],
    (m, n, k, ldc, pad): (usize, usize, usize, usize, usize),
    first: &mut Option<Vec<u32>>,
) {
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_matmul_close(what, seed, &dense_rows(got, m, n, ldc), want, k);
    if pad > 0 {
        assert!(got[n].is_nan(), "{what}: C's row padding written");
    }
    assert_eq!(bits(got), bits(again), "{what}: two runs");
    match first {
        None => *first = Some(bits(got)),
        Some(f) => assert_eq!(f, &bits(got), "{what}: differs from the first order"),
    }
}

/// A tail-split product (`split`: stage 4s or 4ws) of `m x n x k` with padded strides
/// and C padding, on an emulator of `sms` workers under three thread orders: exactly the
/// launches `names`, against float64, C's padding untouched, the same bits on a second
/// run and under every order, and its first `whole_tiles` tiles of `rows x 128` equal
/// to the whole-tile kernel's (`whole`) bit for bit.
#[allow(clippy::too_many_arguments)]
fn assert_split_under_orders(
    r: &mut rand::rngs::StdRng,
    seed: u64,
    (split, whole): (MatmulKernel, MatmulKernel),
    names: &[&str],
    sms: usize,
    (m, n, k, pad, relu): (usize, usize, usize, usize, bool),
    (whole_tiles, rows): (usize, usize),
    plan: &str,
) {
    let (lda, ldb, ldc) = (k + pad, n + pad, n + 2 * pad);
    let a = uniform(r, (m - 1) * lda + k, -1.0, 1.0);
    let b = uniform(r, (k - 1) * ldb + n, -1.0, 1.0);
    let want = reference::matmul(&a, &b, m, n, k, lda, ldb, relu);
    let epi = if relu { Epilogue::Relu } else { Epilogue::None };
    let mut first: Option<Vec<u32>> = None;
    for order in [Order::InOrder, Order::Reversed, Order::Random(5)] {
        let g = emulator_workers(sms, order);
        let run = |kern| profiled_product(&g, kern, &a, &b, (m, n, k), (lda, ldb, ldc), epi);
        let (got, launches) = run(split);
        let what = format!("{m}x{n}x{k} pad {pad} on {sms} SMs, {plan}, {order:?}");
        assert_eq!(launches, names, "{what}");
        let again = run(split).0;
        assert_order_run(
            &what,
            seed,
            &got,
            &again,
            &want,
            (m, n, k, ldc, pad),
            &mut first,
        );
        let w = run(whole).0;
        assert_first_tiles_as(&what, &got, &w, (m, n, ldc), whole_tiles, rows);
    }
}

/// The first `tiles` 128x128 tiles of C (counted row by row, as stage 4's grid) carry
/// stage 4's bits in `got` (C of `m x n`, row stride `ldc`).
fn assert_first_tiles_as_stage_4(
    what: &str,
    got: &[f32],
    s4: &[f32],
    dims: (usize, usize, usize),
    tiles: usize,
) {
    assert_first_tiles_as(what, got, s4, dims, tiles, 128);
}

/// The first `tiles` tiles of `rows x 128` of C (counted row by row) carry the bits of
/// `whole` in `got` (C of `m x n`, row stride `ldc`).
fn assert_first_tiles_as(
    what: &str,
    got: &[f32],
    s4: &[f32],
    (m, n, ldc): (usize, usize, usize),
    tiles: usize,
    rows: usize,
) {
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let tiles_n = n.div_ceil(128);
    for tile in 0..tiles {
        let (r0, c0) = (tile / tiles_n * rows, tile % tiles_n * 128);
        for i in r0..(r0 + rows).min(m) {
            let (lo, hi) = (i * ldc + c0, i * ldc + (c0 + 128).min(n));
            assert_eq!(
                bits(&got[lo..hi]),
                bits(&s4[lo..hi]),
                "{what}: tile {tile} row {i}"
            );
        }
    }
}

/// `kern` on the GPU `g` for a dense `m x n x k` product without ReLU: exactly the
/// launches `names`, against float64.
fn assert_gpu_product(
    g: &rust_simt::Gpu,
    kern: MatmulKernel,
    (m, n, k): (usize, usize, usize),
    names: &[&str],
    r: &mut rand::rngs::StdRng,
    seed: u64,
) {
    let a = uniform(r, m * k, -1.0, 1.0);
    let b = uniform(r, k * n, -1.0, 1.0);
    let want = reference::matmul(&a, &b, m, n, k, k, n, false);
    let (got, ran) = profiled_product(g, kern, &a, &b, (m, n, k), (k, n, n), Epilogue::None);
    assert_eq!(ran, names, "{m}x{n}x{k} on the GPU");
    assert_matmul_close(&format!("{m}x{n}x{k} on the GPU"), seed, &got, &want, k);
}

/// A product of whole waves (4 tiles on an emulator of 2 workers: 2 blocks of stage
/// 4k, 4 slots of stage 4s) runs stage 4 itself, with stage 4's result.
fn assert_whole_waves_run_stage_4(kern: MatmulKernel) {
    let g = emulator_workers(2, Order::InOrder);
    let (a, b) = (vec![0.5f32; 256 * 8], vec![0.25f32; 8 * 256]);
    let dims = (256, 256, 8);
    let (c, names) = profiled_product(&g, kern, &a, &b, dims, (8, 256, 256), Epilogue::None);
    assert_eq!(names, ["matmul_relu_warptiled"], "{kern:?}");
    assert!(c.iter().all(|&v| v == 1.0), "{kern:?}");
}

/// Where the device refuses cooperative launches (a shared MPS device), stage 4k
/// runs stage 4 instead: stage 4 alone ran, against float64. The same product on a
/// device that takes them runs stage 4k, so the fallback is what was tested.
#[test]
fn warptiled_streamk_falls_back_to_stage_4_without_cooperative_launches() {
    let (mut r, seed) = rng("warptiled_streamk_refused");
    let (m, n, k) = (390, 520, 37);
    let a = uniform(&mut r, m * k, -1.0, 1.0);
    let b = uniform(&mut r, k * n, -1.0, 1.0);
    let want = reference::matmul(&a, &b, m, n, k, k, n, true);
    for (refusing, ran) in [
        (false, "matmul_relu_warptiled_streamk"),
        (true, "matmul_relu_warptiled"),
    ] {
        let g = if refusing {
            emulator_without_cooperative(3, Order::Random(seed))
        } else {
            emulator_workers(3, Order::Random(seed))
        };
        let (got, launches) = profiled_product(
            &g,
            MatmulKernel::WarpTiledStreamK,
            &a,
            &b,
            (m, n, k),
            (k, n, n),
            Epilogue::Relu,
        );
        assert_eq!(launches, [ran], "refusing {refusing}");
        assert_matmul_close(
            &format!("stage 4k, refusing {refusing}"),
            seed,
            &got,
            &want,
            k,
        );
    }
}

/// `C = epilogue(A · B)` by `kern` with A `m x k`, B `k x n`, C `m x n` at row strides
/// `(lda, ldb, ldc)`, into a poisoned C: C's whole buffer and the kernels launched.
fn profiled_product(
    g: &rust_simt::Gpu,
    kern: MatmulKernel,
    a: &[f32],
    b: &[f32],
    (m, n, k): (usize, usize, usize),
    (lda, ldb, ldc): (usize, usize, usize),
    epi: Epilogue,
) -> (Vec<f32>, Vec<&'static str>) {
    let (ab, bb) = (g.upload(a).unwrap(), g.upload(b).unwrap());
    let mut c = poisoned(g, (m - 1) * ldc + n);
    let ((), launches) = g
        .profile(|| {
            matmul(
                g,
                kern,
                ab.matrix_strided(Layout::strided(m, k, lda))?,
                bb.matrix_strided(Layout::strided(k, n, ldb))?,
                c.matrix_mut_strided(Layout::strided(m, n, ldc))?,
                epi,
            )
        })
        .unwrap();
    let names = launches.iter().map(|l| l.kernel).collect();
    (g.download(&c).unwrap(), names)
}
