//! The autotuner: its cache file (written, read back, invalidated by a new module,
//! a corrupt file survived with a warning), its keys, its timing loop, and the
//! matmul heuristic it falls back on.
mod common;
use common::*;
use rust_simt::ops::matmul::{
    auto_candidates, auto_heuristic, auto_key, cluster_resident_blocks, cluster_wave, matmul,
    tail_split, whole_split, wide_fits, wide_tail_fits, wide_whole_split, Epilogue, MatmulKernel,
    Shape, MM_ASYNC_TILES, MM_CLUSTER_CONFIGS, MM_TILES,
};
use rust_simt::ops::softmax::has_clusters;
use rust_simt::tune::{self, Cache, Config, Entry, Key, Timing};
use rust_simt::{reference, Gpu};

fn temp_path(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rust-simt-tune-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn entry(choice: MatmulKernel) -> Entry {
    Entry {
        choice: choice.label(),
        timings: vec![
            (choice.label(), 0.25),
            (MatmulKernel::WarpTiled.label(), 0.5),
        ],
    }
}

#[test]
fn cache_round_trip_and_invalidation() {
    let g = gpu();
    let path = temp_path("round_trip/tune.json");
    let _ = std::fs::remove_file(&path);
    let key = Key::new(&g, "matmul", "f32")
        .dim("m", 1000)
        .dim("n", 1)
        .dim("k", 0)
        .flag("aligned", false);
    assert!(
        key.as_str()
            .ends_with("|matmul|f32|m=1024|n=1|k=0|!aligned"),
        "{}",
        key.as_str()
    );

    // Missing file: empty, no warning.
    let (mut c, w) = Cache::load(&path, "module-a");
    assert!(w.is_none() && c.get(&key).is_none());
    let pick = MatmulKernel::Tile {
        tile: 3,
        split_k: 4,
    };
    c.insert(&key, entry(pick));
    c.save().unwrap();

    // Read back by the same module: the entry, exactly.
    let (c2, w) = Cache::load(&path, "module-a");
    assert!(w.is_none());
    assert_eq!(c2.get(&key), Some(&entry(pick)));
    assert_eq!(
        MatmulKernel::from_label(&c2.get(&key).unwrap().choice),
        Some(pick)
    );

    // Another module hash (a rebuilt kernel): empty, silently.
    let (c3, w) = Cache::load(&path, "module-b");
    assert!(w.is_none() && c3.get(&key).is_none());

    // Corrupt files: empty, with a warning that names the file; saving repairs it.
    for junk in [
        "{ not json",
        "{\"format\": 99, \"module\": \"module-a\", \"entries\": {}}",
        "[]",
        "",
    ] {
        std::fs::write(&path, junk).unwrap();
        let (mut c4, w) = Cache::load(&path, "module-a");
        let w = w.unwrap_or_else(|| panic!("no warning for {junk:?}"));
        assert!(
            w.contains(&path.display().to_string()) && w.contains("starting empty"),
            "{w}"
        );
        assert!(c4.get(&key).is_none());
        c4.insert(&key, entry(pick));
        c4.save().unwrap();
        assert_eq!(
            Cache::load(&path, "module-a").0.get(&key),
            Some(&entry(pick))
        );
    }
}

/// Two processes tuning into one file: each save keeps the other's entries.
#[test]
fn saves_merge_with_the_file() {
    let g = gpu();
    let path = temp_path("merge/tune.json");
    let _ = std::fs::remove_file(&path);
    let k1 = Key::new(&g, "matmul", "f32").dim("m", 1);
    let k2 = Key::new(&g, "matmul", "f32").dim("m", 2);
    let (mut p1, _) = Cache::load(&path, "m");
    let (mut p2, _) = Cache::load(&path, "m");
    p1.insert(&k1, entry(MatmulKernel::GemvRow { split_k: 2 }));
    p1.save().unwrap();
    p2.insert(&k2, entry(MatmulKernel::Tiled));
    p2.save().unwrap();
    let (both, _) = Cache::load(&path, "m");
    assert_eq!(
        both.get(&k1),
        Some(&entry(MatmulKernel::GemvRow { split_k: 2 }))
    );
    assert_eq!(both.get(&k2), Some(&entry(MatmulKernel::Tiled)));
    // A file of another module is not merged in.
    let (mut p3, _) = Cache::load(&path, "other");
    p3.insert(&k2, entry(MatmulKernel::Naive));
    p3.save().unwrap();
    let (only, _) = Cache::load(&path, "other");
    assert!(only.get(&k1).is_none());
}

/// A cached choice serves any shape of its bucket it can run.
#[test]
fn runs_says_which_shapes_a_kernel_takes() {
    let s = |m, n, k| Shape {
        m,
        n,
        k,
        aligned: true,
    };
    let tile = MatmulKernel::Tile {
        tile: 4,
        split_k: 32,
    };
    assert!(tile.runs(s(64, 64, 3000)) && tile.runs(s(1, 1, 1)));
    assert!(!MatmulKernel::Tile {
        tile: MM_TILES.len(),
        split_k: 1
    }
    .runs(s(8, 8, 8)));
    assert!(!MatmulKernel::TileAsync {
        tile: 0,
        split_k: 33
    }
    .runs(s(8, 8, 8)));
    assert!(MatmulKernel::GemvRow { split_k: 4 }.runs(s(1, 9, 9)));
    assert!(!MatmulKernel::GemvRow { split_k: 4 }.runs(s(2, 9, 9)));
    assert!(MatmulKernel::GemvCol { split_k: 1 }.runs(s(9, 1, 9)));
    assert!(!MatmulKernel::GemvCol { split_k: 1 }.runs(s(9, 2, 9)));
    assert!(!MatmulKernel::Auto.runs(s(9, 9, 9)));
    assert!(MatmulKernel::WarpTiledTailPlan { plan: 0 }.runs(s(9, 9, 9)));
    assert!(!MatmulKernel::WarpTiledTailPlan { plan: 99 }.runs(s(9, 9, 9)));
    assert!(MatmulKernel::WarpTiled.runs(s(9, 9, 9)));
    assert!(MatmulKernel::WarpTiledWide.runs(s(9, 9, 9)));
    assert!(MatmulKernel::WarpTiledWideTail.runs(s(9, 9, 9)));
}

#[test]
fn labels_round_trip() {
    let mut all = MatmulKernel::ALL.to_vec();
    all.push(MatmulKernel::Auto);
    all.push(MatmulKernel::WarpTiledStreamK);
    all.push(MatmulKernel::WarpTiledTail);
    all.push(MatmulKernel::WarpTiledWide);
    all.push(MatmulKernel::WarpTiledWideTail);
    for plan in 0..rust_simt::ops::matmul::TAIL_PLANS.len() {
        all.push(MatmulKernel::WarpTiledTailPlan { plan });
    }
    for tile in 0..MM_TILES.len() {
        all.push(MatmulKernel::Tile {
            tile,
            split_k: 1 + tile as u32,
        });
    }
    for tile in 0..MM_ASYNC_TILES.len() {
        all.push(MatmulKernel::TileAsync { tile, split_k: 3 });
    }
    for config in 0..rust_simt::ops::matmul::MM_CLUSTER_CONFIGS.len() {
        all.push(MatmulKernel::TileCluster { config });
    }
    all.push(MatmulKernel::GemvRow { split_k: 16 });
    all.push(MatmulKernel::GemvCol { split_k: 2 });
    for k in all {
        assert_eq!(
            MatmulKernel::from_label(&Config::label(&k)),
            Some(k),
            "{}",
            k.label()
        );
    }
    for bad in [
        "",
        "tile",
        "tile7x7/k1",
        "tile64x64/4",
        "gemv-row/kx",
        "tile64x128/c3",
        "tile64x128/c",
        "warptiled-tail/",
        "warptiled-tail/p3c5",
        "warptiled-tail/p3",
        "fast",
    ] {
        assert_eq!(MatmulKernel::from_label(bad), None, "{bad}");
    }
    assert_eq!(
        MatmulKernel::Tile {
            tile: 2,
            split_k: 4
        }
        .label(),
        "tile64x64/k4"
    );
}

#[test]
fn module_hash_changes_with_the_module() {
    let a = tune::module_hash(rust_simt::ptx::MODULE.ptx());
    assert_eq!(a, tune::module_hash(rust_simt::ptx::MODULE.ptx()));
    assert_ne!(
        a,
        tune::module_hash(&format!("{} ", rust_simt::ptx::MODULE.ptx()))
    );
    assert_eq!(a.len(), 16);
}

fn shape(m: u32, n: u32, k: u32) -> Shape {
    Shape {
        m,
        n,
        k,
        aligned: true,
    }
}

#[test]
fn heuristic_picks_by_shape() {
    let g = gpu();
    let sms = g.props().sms;
    // One row or one column: the GEMV paths.
    assert!(matches!(
        auto_heuristic(&g, shape(1, 8192, 8192)),
        MatmulKernel::GemvRow { .. }
    ));
    assert!(matches!(
        auto_heuristic(&g, shape(8192, 1, 8192)),
        MatmulKernel::GemvCol { .. }
    ));
    // Enough 128x128 tiles for every SM: stage 4 (K below stage 4w's WIDE_MIN_K).
    let big = 128 * (sms as f64).sqrt().ceil() as u32;
    assert_eq!(
        auto_heuristic(&g, shape(big, big, 256)),
        MatmulKernel::WarpTiled
    );
    // A tiny product with a long K: K split (on a device of a few SMs, over a
    // cluster, which that product fills).
    if sms > 1 {
        let h = auto_heuristic(&g, shape(32, 32, 4096));
        assert!(
            matches!(
                h,
                MatmulKernel::Tile { .. } | MatmulKernel::TileCluster { .. }
            ) && h.split_k() > 1,
            "{h:?}"
        );
    }
    if sms > 4 {
        // 4 tiles of 128x128 do not fill the device: a cp.async tile, no split; on
        // Hopper with an SM for every 4 of its 32 tiles of 32x64, K over clusters of 4.
        let h = auto_heuristic(&g, shape(256, 256, 256));
        if has_clusters(&g) && sms >= 128 {
            assert_eq!(h.label(), "async-s4-16x64/c4");
        } else {
            assert!(
                matches!(h, MatmulKernel::TileAsync { split_k: 1, .. }),
                "{h:?}"
            );
        }
    }
    if has_clusters(&g) && sms >= 128 {
        assert_eq!(
            auto_heuristic(&g, shape(512, 512, 512)).label(),
            "async-s4-16x64/k1"
        );
    }
    // A mid-sized product: a register-staged tile, K split to fill the device.
    if sms >= 64 {
        match auto_heuristic(&g, shape(64, 4096, 4096)) {
            MatmulKernel::Tile { split_k, .. } => assert!(split_k > 1),
            k => panic!("{k:?}"),
        }
    }
    // Deterministic, and always one of the candidates.
    for s in [
        shape(1, 7, 3),
        shape(5, 1, 1000),
        shape(300, 300, 300),
        shape(64, 4096, 4096),
        shape(4096, 4096, 64),
    ] {
        let h = auto_heuristic(&g, s);
        assert_eq!(h, auto_heuristic(&g, s));
        assert!(auto_candidates(&g, s).contains(&h), "{s:?}: {h:?}");
        assert_ne!(h, MatmulKernel::Auto);
    }
    // Stage 4s where it splits stage 4's partial last wave (`tail_split`), on an
    // emulated device of 80 SMs (160 slots): 1.6 and 3.875 waves (last waves that give
    // some SMs two blocks: three parts), 2.25 waves (40 tiles left: two equal parts,
    // each alone on its SM); stage 4 where the last wave is 95% full (3.95 waves),
    // where two parts of 80 tiles would share SMs and save too little (1.5 waves), for
    // whole waves, and for less than one wave with at least a tile per SM (0.95 waves),
    // or there stage 4w. (K = 512: below stage 4ws's WIDE_TAIL_MIN_K.)
    let g80 = emulator_workers(80, rust_simt::emulator::Order::InOrder);
    let slots = 2 * g80.props().sms;
    let at = |waves_x40: u32| shape(128 * (slots * waves_x40 / 40), 128, 512);
    for (waves_x40, parts) in [(64, 3), (155, 3), (90, 2)] {
        assert_eq!(
            auto_heuristic(&g80, at(waves_x40)),
            MatmulKernel::WarpTiledTail,
            "{waves_x40}/40 waves"
        );
        let plan = tail_split(&g80, at(waves_x40)).unwrap();
        assert_eq!(plan.parts, parts, "{waves_x40}/40 waves: {plan:?}");
        let cands = auto_candidates(&g80, at(waves_x40));
        assert!(cands.contains(&MatmulKernel::WarpTiledTail));
        // The other plans where the three-part rule applies (more tiles left than SMs).
        let others = cands
            .iter()
            .filter(|k| matches!(k, MatmulKernel::WarpTiledTailPlan { .. }))
            .count();
        assert_eq!(others > 0, parts == 3, "{waves_x40}/40 waves: {cands:?}");
    }
    for waves_x40 in [158, 60, 80, 120, 38] {
        // (stage 4w where its tiles fit: `wide_fits`, pinned below)
        let whole = match wide_fits(&g80, at(waves_x40)) {
            true => MatmulKernel::WarpTiledWide,
            false => MatmulKernel::WarpTiled,
        };
        assert_eq!(
            auto_heuristic(&g80, at(waves_x40)),
            whole,
            "{waves_x40}/40 waves"
        );
        assert!(!auto_candidates(&g80, at(waves_x40)).contains(&MatmulKernel::WarpTiledTail));
    }
    // Fewer tiles than SMs, K long enough for parts of 18 steps: every tile
    // split in as many parts as one wave holds (`whole_split`), on the 80 SMs: 40 tiles
    // in 4 parts, 25 in 6. Not where the tiles are half outside C (64 x 4096), the
    // parts would fill under 7/8 of the slots (64 tiles in 2: 128 of 160) or be short
    // (16 K steps for 40 tiles in 4; 12 for 512 x 512 x 1024's 16 tiles in 10).
    for (s, parts) in [(shape(640, 1024, 2048), 4), (shape(640, 640, 4096), 6)] {
        assert!(whole_split(&g80, s), "{s:?}");
        assert_eq!(
            auto_heuristic(&g80, s),
            MatmulKernel::WarpTiledTail,
            "{s:?}"
        );
        let plan = tail_split(&g80, s).unwrap();
        assert_eq!((plan.dp_tiles, plan.parts), (0, parts), "{s:?}: {plan:?}");
        assert!(auto_candidates(&g80, s).contains(&MatmulKernel::WarpTiledTail));
    }
    for s in [
        shape(64, 4096, 4096),
        shape(1024, 1024, 2048),
        shape(640, 1024, 512),
        shape(512, 512, 1024),
    ] {
        assert!(!whole_split(&g80, s), "{s:?}");
        assert_ne!(
            auto_heuristic(&g80, s),
            MatmulKernel::WarpTiledTail,
            "{s:?}"
        );
    }
    // ... and the tuner's key tells them apart (one power-of-two bucket for m).
    let (split, lone) = (at(64), at(60));
    let bucket = |s: Shape| (s.m as usize).next_power_of_two();
    assert_eq!(bucket(split), bucket(lone));
    assert_ne!(auto_key(&g80, split), auto_key(&g80, lone));
    // Stage 4k is timed where its stream-K tail applies (two resident blocks per SM):
    // a partial last wave, not whole waves.
    let wave = 2 * sms;
    let sk = MatmulKernel::WarpTiledStreamK;
    assert!(auto_candidates(&g, shape(128 * (wave + 1), 128, 64)).contains(&sk));
    assert!(!auto_candidates(&g, shape(128 * wave, 128, 64)).contains(&sk));
    assert!(!auto_candidates(&g, shape(128, 128, 64)).contains(&sk));
    // Aligned products that 64x64 tiles cover whole in one nearly full wave of two
    // blocks per SM, K at most 1024: the 3-stage 64x64 tile of 4 warps, unsplit, as
    // two K slices from K = 512 on (as 1024^3 on the H200) and as one below. Not with
    // edge tiles (as 1000^3), more tiles than a wave, a wave under 7/8 full, or K
    // past 1024. On an emulated device of 80 SMs, 768^2 is 144 such tiles of 160
    // slots, and 36 of stage 4's tiles.
    let w4_slices = |kslices: u32| MatmulKernel::TileAsync {
        tile: MM_ASYNC_TILES
            .iter()
            .position(|t| {
                (t.bm, t.bn, t.wm, t.wn, t.stages, t.kslices) == (64, 64, 16, 64, 3, kslices)
            })
            .unwrap(),
        split_k: 1,
    };
    let (w4, ks2) = (w4_slices(1), w4_slices(2));
    let whole = shape(768, 768, 1024);
    // (From K = 1024, where 256x128 tiles cover the product too, stage 4ws with every
    // tile split comes first: `wide_whole_split`, 768^2's 18 such tiles in 4 parts of 32
    // K steps on the 80 SMs.)
    assert!(wide_whole_split(&g80, whole));
    assert_eq!(auto_heuristic(&g80, whole), MatmulKernel::WarpTiledWideTail);
    assert!(!wide_whole_split(&g80, shape(768, 768, 1016)));
    assert_eq!(auto_heuristic(&g80, shape(768, 768, 1016)), ks2);
    assert_eq!(auto_heuristic(&g80, shape(768, 768, 512)), ks2);
    assert_eq!(auto_heuristic(&g80, shape(768, 768, 508)), w4);
    assert_eq!(auto_heuristic(&g80, shape(768, 768, 256)), w4);
    assert!(auto_candidates(&g80, whole).contains(&w4));
    assert!(auto_candidates(&g80, whole).contains(&ks2));
    // (Those whose 128x128 tiles in parts of 18 K steps or more fill 7/8 of the slots
    // split every stage 4 tile: 36 tiles in 4 parts, 30 in 5.)
    // (768^2 x 2048: 4ws first, as above.)
    for (other, split) in [
        (shape(744, 744, 1024), Some(true)),
        (shape(768, 896, 1024), Some(false)),
        (shape(640, 768, 1024), Some(true)),
        (shape(768, 768, 2048), None),
    ] {
        let h = auto_heuristic(&g80, other);
        match split {
            Some(true) => assert_eq!(h, MatmulKernel::WarpTiledTail, "{other:?}"),
            Some(false) => assert!(matches!(h, MatmulKernel::Tile { .. }), "{other:?}: {h:?}"),
            None => assert_eq!(h, MatmulKernel::WarpTiledWideTail, "{other:?}"),
        }
    }
    assert_ne!(auto_key(&g80, whole), auto_key(&g80, shape(744, 744, 1024)));
    // Keys bucket shapes (of the same 128x128 tiles and K steps, so that stage 4s
    // plans them alike on any device).
    let g132 = emulator_workers(132, rust_simt::emulator::Order::InOrder);
    for g in [&g, &g80, &g132] {
        assert_eq!(
            auto_key(g, shape(1000, 1000, 1000)),
            auto_key(g, shape(900, 990, 1000))
        );
    }
    // ... but not a shape of the same buckets that stage 4s would not split whole
    // (H200-sized: 1000^3 in 4 parts of 31 K steps, 513x1024x600 in 6 of 12).
    assert!(whole_split(&g132, shape(1000, 1000, 1000)));
    // On an H200-sized device: 1000^3 split whole, 1024^3 on stage 4ws with every tile
    // split (below), 1536x1024x1024's 96 tiles in 2 parts (192 of 264
    // slots) not split but, on Hopper, the 64x128 tile with K over clusters of 2 (384
    // of 396 slots), from K = 1024 on (K split below); 116-131 tiles (1408^2: 121; 1024
    // x 2048's 128 go to stage 4ws) in 2 parts from K = 2048 on, stage 4 below that (the
    // tuner still times the split); stage 4 not for 64 x 16384 (128 tiles half outside
    // C).
    let at132 = |m, n, k| auto_heuristic(&g132, shape(m, n, k));
    assert_eq!(at132(1000, 1000, 1000), MatmulKernel::WarpTiledTail);
    // 1024^3 and its K-longer neighbours: stage 4ws with every 256x128 tile split
    // (`wide_whole_split`: 32 tiles in 4 parts, 2048 x 1024's 64 in 2); the 64x64 tile
    // of two K slices at K = 512 (parts of 16 steps), stage 4s split whole at 1000^3
    // (edge tiles), and none where 256x128 tiles leave rows or columns over.
    for (m, n, k) in [
        (1024, 1024, 1024),
        (1024, 1024, 4096),
        (2048, 1024, 1024),
        (512, 2048, 4096),
    ] {
        assert!(wide_whole_split(&g132, shape(m, n, k)), "{m}x{n}x{k}");
        assert_eq!(
            at132(m, n, k),
            MatmulKernel::WarpTiledWideTail,
            "{m}x{n}x{k}"
        );
    }
    assert_eq!(at132(1024, 1024, 512), ks2);
    assert!(!wide_whole_split(&g132, shape(1152, 1024, 1024)));
    assert!(!wide_whole_split(&g132, shape(1024, 1088, 1024)));
    assert!(auto_candidates(&g132, shape(1024, 1024, 1024)).contains(&ks2));
    // Stage 4w where its 256x128 tiles take no more waves than stage 4's, cover the
    // same rows, and stage 4's last wave has more tiles than SMs, from K = 512:
    // 2048^3 is 128 tiles (one wave of 132; stage 4: 256 in 264 slots), 4096 x 2048 is
    // 256, 1536 x 2048 at K = 4096 (past `mid_wave`'s domain) 96 (stage 4: 192). Not
    // 2048^2 at K = 256 (below WIDE_MIN_K), not 1920 x 2048 (4w's tiles would pad 128
    // rows more), not 1280 x 1280 x 2048 (stage 4's 100 tiles are one a SM), not
    // 4096^3 (stage 4s splits stage 4's last wave).
    let wide = MatmulKernel::WarpTiledWide;
    // (`mid_wave` first: up to one wave of the 64x128 tile, 396 blocks, in the
    // measured domain: 1536 x 2048's 384 blocks on that tile; 1536^2's 288 and 1280 x
    // 2048's 320 on the 4-stage 64x64 tile; 2560 x 1280's 400 blocks are past the
    // wave, and K = 4096 past the domain.)
    assert_eq!(at132(1536, 2048, 2048).label(), "tile64x128/k1");
    assert_eq!(at132(1664, 1664, 1024).label(), "tile64x128/k1");
    // (2112 x 1472's 396 blocks include half tiles: the 64x64 tile)
    assert_eq!(at132(2112, 1472, 1280).label(), "async-s4-64x64-w4/k1");
    assert_eq!(at132(1536, 1536, 512).label(), "async-s4-64x64-w4/k1");
    assert_eq!(at132(1536, 1536, 1024).label(), "async-s4-64x64-w4/k1");
    assert_eq!(at132(1280, 2048, 2048).label(), "async-s4-64x64-w4/k1");
    assert_eq!(at132(2560, 1280, 2048), wide);
    assert_eq!(at132(2048, 2048, 2048), wide);
    assert_eq!(at132(2048, 2048, 512), wide);
    assert_eq!(at132(4096, 2048, 2048), wide);
    assert_eq!(at132(1536, 2048, 4096), wide);
    assert_eq!(at132(2048, 2048, 256), MatmulKernel::WarpTiled);
    assert_eq!(at132(1920, 2048, 2048), MatmulKernel::WarpTiled);
    assert!(!wide_fits(&g132, shape(1920, 2048, 2048)));
    assert!(!wide_fits(&g132, shape(1280, 1280, 2048)));
    // Stage 4ws where stage 4w's last wave leaves enough SMs idle for its short parts
    // (`wide_tail_fits`), from K = 2048 with at least sms/8 tiles left: 4096^3 (116
    // tiles past three waves of 132), 8192^3, 3072^3 (24 left), 6144^3, 7168^3, 4096 x
    // 4096 x 2048. Stage 4s where 4w's tiles would pad 128 rows (3968 x 4096: 31 rows of
    // stage 4's tiles), where K is short (4096 x 4096 x 1024, 3584 x 3072 x 512), where
    // 4w's last wave leaves 4 SMs idle (3584^3: 392 tiles; stage 4s has no plan there
    // either, and 4w runs) and where it has 12 tiles (3072 x 1536 x 2048); stage 4 at
    // 2048 x 3072 x 512.
    let wide_tail = MatmulKernel::WarpTiledWideTail;
    for (m, n, k) in [
        (4096, 4096, 4096),
        (8192, 8192, 8192),
        (3072, 3072, 3072),
        (6144, 6144, 6144),
        (7168, 7168, 7168),
        (4096, 4096, 2048),
    ] {
        assert_eq!(at132(m, n, k), wide_tail, "{m}x{n}x{k}");
        let cands = auto_candidates(&g132, shape(m, n, k));
        assert!(cands.contains(&wide_tail) && cands.contains(&MatmulKernel::WarpTiledTail));
    }
    for (m, n, k) in [
        (3968, 4096, 4096),
        (4096, 4096, 1024),
        (3584, 3072, 512),
        (3584, 3584, 3584),
        (3072, 1536, 2048),
    ] {
        assert!(!wide_tail_fits(&g132, shape(m, n, k)), "{m}x{n}x{k}");
        let h = at132(m, n, k);
        assert!(
            h == MatmulKernel::WarpTiledTail || (m, h) == (3584, wide),
            "{m}x{n}x{k}: {h:?}"
        );
    }
    assert!(!wide_tail_fits(&g132, shape(2048, 3072, 512)));
    assert_eq!(at132(2048, 3072, 512), MatmulKernel::WarpTiled);
    // (the tuner still times it where it has a plan, as at K = 512 and with 12 tiles)
    assert!(auto_candidates(&g132, shape(3584, 3072, 512)).contains(&wide_tail));
    assert!(auto_candidates(&g132, shape(3072, 1536, 2048)).contains(&wide_tail));
    assert!(!auto_candidates(&g132, shape(3584, 3584, 3584)).contains(&wide_tail));
    // ... and the tuner's key tells apart shapes of one bucket that differ there: 4096^2
    // at K = 2048 (4ws) and K = 1536 (below WIDE_TAIL_MIN_K: 4s).
    assert!(!wide_tail_fits(&g132, shape(4096, 4096, 1536)));
    assert_ne!(
        auto_key(&g132, shape(4096, 4096, 1536)),
        auto_key(&g132, shape(4096, 4096, 2048))
    );
    for (m, n, k) in [(2048, 2048, 2048), (1536, 2048, 4096), (2560, 1280, 2048)] {
        assert!(
            auto_candidates(&g132, shape(m, n, k)).contains(&wide),
            "{m}x{n}x{k}"
        );
    }
    // `mid_wave`'s choices are candidates too, and it leaves products of fewer stage-4
    // tiles than SMs to the rules below.
    for (m, n, k) in [(1536, 1536, 1024), (1536, 2048, 2048)] {
        let h = at132(m, n, k);
        assert!(
            auto_candidates(&g132, shape(m, n, k)).contains(&h),
            "{m}x{n}x{k}: {h:?}"
        );
    }
    assert!(!auto_candidates(&g132, shape(1024, 1024, 1024)).contains(&wide));
    // (The emulator runs cluster kernels: `has_clusters` holds.)
    assert!(has_clusters(&g132));
    assert_eq!(at132(1536, 1024, 1024).label(), "tile64x128/c2");
    // K below 1024 (`short_k`): by 64x64 tiles, 384 (2.9 a SM) and 128 (one a SM)
    // on the 4-stage 64x64 tile unsplit, 144 on the 4-stage 32x64 tile with K over a
    // cluster of 2, 400 on stage 4 (its 100 tiles are 3/4 of the SMs); from K = 1024
    // the rules above.
    assert_eq!(at132(1536, 1024, 512).label(), "async-s4-64x64-w4/k1");
    assert_eq!(at132(512, 1024, 768).label(), "async-s4-64x64-w4/k1");
    assert_eq!(at132(768, 768, 256).label(), "async-s4-32x64/c2");
    // (not below K = 128: the 64x128 tile, as the tuner's candidates)
    assert!(matches!(at132(768, 768, 64), MatmulKernel::Tile { .. }));
    assert!(auto_candidates(&g132, shape(768, 768, 256)).contains(&at132(768, 768, 256)));
    assert_eq!(at132(1280, 1280, 512), MatmulKernel::WarpTiled);
    assert!(matches!(at132(1280, 1280, 1024), MatmulKernel::Tile { .. }));
    assert_eq!(at132(768, 768, 1024), MatmulKernel::WarpTiledTail);
    // Partial 64x64 edge tiles (`ragged_cluster`): K over clusters of 4 or 2 where
    // they fill one wave at least half (on the emulator a wave is the SMs times the
    // tile's 3 blocks, 396; the H200's driver holds 368 blocks in clusters of 4).
    // 1000 x 1500: 192 64x128 tiles, 384 in clusters of 2; 700 x 900: 88, 352 in
    // clusters of 4; 500 x 900: 60 128x64 tiles, which pad C less than 64 64x128.
    assert_eq!(at132(1000, 1500, 300).label(), "tile64x128/c2");
    assert_eq!(at132(1000, 1500, 700).label(), "tile64x128/c2");
    assert_eq!(at132(700, 900, 500).label(), "tile64x128/c4");
    assert_eq!(at132(500, 900, 700).label(), "tile128x64/c4");
    // ... but not aligned ones (1536 x 1024 at K = 512 above), and not where whole
    // splits of stage 4 apply: 900 x 1300's 88 tiles are 81% inside C.
    assert_eq!(at132(900, 1300, 700), MatmulKernel::WarpTiledTail);
    assert!(whole_split(&g132, shape(900, 1300, 700)));
    // 121 tiles in two parts of 81 K steps (1300 x 1400 x 1300): split; of 56 (K = 900):
    // stage 4.
    assert_eq!(at132(1300, 1400, 1300), MatmulKernel::WarpTiledTail);
    assert_eq!(at132(1300, 1400, 900), MatmulKernel::WarpTiled);
    // Outside the measured domain (a side under 256 or K past 2048) the rules before
    // session 30 apply: 32 x 8192 keeps the 64x128 tile with K split, 100 x 4096
    // (tiles 78% inside C) is not split whole.
    assert!(matches!(at132(32, 8192, 8192), MatmulKernel::Tile { .. }));
    assert!(!whole_split(&g132, shape(100, 4096, 4096)));
    // The cluster wave: on the emulator (no GPCs) the SMs times the tile's 3 blocks, in
    // whole clusters; the driver's count of resident clusters there is a worker each.
    let c4 = (0..MM_CLUSTER_CONFIGS.len())
        .find(|&c| MatmulKernel::TileCluster { config: c }.label() == "tile64x128/c4")
        .unwrap();
    assert_eq!(cluster_wave(&g132, c4), 396);
    assert_eq!(cluster_resident_blocks(&g132, c4).unwrap(), 132);
    assert_eq!(cluster_wave(&g132, 99), 0);
    assert!(cluster_resident_blocks(&g132, 99).is_err());
    // The tuner keeps apart products of one bucket that the rules above tell apart.
    assert_ne!(
        auto_key(&g132, shape(1536, 1536, 2048)),
        auto_key(&g132, shape(2048, 2048, 2048))
    );
    assert_ne!(
        auto_key(&g132, shape(1920, 2048, 2048)),
        auto_key(&g132, shape(2048, 2048, 2048))
    );
    // The tuner keeps ragged and aligned products of one bucket apart.
    assert_ne!(
        auto_key(&g132, shape(1000, 1500, 512)),
        auto_key(&g132, shape(1024, 1536, 512))
    );
    // (1024 x 2048 is 64 tiles of 256x128: stage 4ws in 2 parts comes first there.)
    assert_eq!(at132(1024, 2048, 2048), MatmulKernel::WarpTiledWideTail);
    assert_eq!(at132(1024, 2048, 1024), MatmulKernel::WarpTiledWideTail);
    assert_eq!(at132(1408, 1408, 2048), MatmulKernel::WarpTiledTail);
    assert_eq!(at132(1408, 1408, 1024), MatmulKernel::WarpTiled);
    assert_eq!(at132(1408, 1408, 512), MatmulKernel::WarpTiled);
    let s = shape(1024, 2048, 1024);
    assert!(!whole_split(&g132, s) && tail_split(&g132, s).is_some());
    assert!(auto_candidates(&g132, s).contains(&MatmulKernel::WarpTiledTail));
    assert!(matches!(at132(64, 16384, 2048), MatmulKernel::Tile { .. }));
    assert_ne!(
        auto_key(&g132, shape(1000, 1000, 1000)),
        auto_key(&g132, shape(513, 1024, 600))
    );
    assert_ne!(
        auto_key(&g, shape(1000, 1000, 1000)),
        auto_key(
            &g,
            Shape {
                aligned: false,
                ..shape(1000, 1000, 1000)
            }
        )
    );
}

/// Tuning times every candidate and returns the fastest; the chosen kernel then
/// computes the right product (on the emulator the times are host times).
#[test]
fn tune_times_every_candidate() {
    let g: Gpu = gpu();
    let (m, n, k) = (37, 45, 70);
    let (mut r, seed) = rng("tune");
    let a = uniform(&mut r, m * k, -1.0, 1.0);
    let b = uniform(&mut r, k * n, -1.0, 1.0);
    let (ab, bb) = (g.upload(&a).unwrap(), g.upload(&b).unwrap());
    let mut c = poisoned(&g, m * n);
    let cands = auto_candidates(&g, shape(m as u32, n as u32, k as u32));
    assert!(cands.len() > MM_TILES.len());
    let timing = Timing { warmup: 0, reps: 1 };
    let (best, e) = tune::tune(&g, &cands, timing, |kern| {
        matmul(
            &g,
            kern,
            ab.matrix(m, k)?,
            bb.matrix(k, n)?,
            c.matrix_mut(m, n)?,
            Epilogue::Relu,
        )
    })
    .unwrap();
    assert_eq!(e.timings.len(), cands.len());
    assert_eq!(e.choice, best.label());
    let min = e.timings.iter().map(|t| t.1).fold(f64::INFINITY, f64::min);
    assert_eq!(e.timings.iter().find(|t| t.0 == e.choice).unwrap().1, min);
    let mut c = poisoned(&g, m * n);
    matmul(
        &g,
        best,
        ab.matrix(m, k).unwrap(),
        bb.matrix(k, n).unwrap(),
        c.matrix_mut(m, n).unwrap(),
        Epilogue::Relu,
    )
    .unwrap();
    let want = reference::matmul(&a, &b, m, n, k, k, n, true);
    assert_matmul_close("tuned", seed, &g.download(&c).unwrap(), &want, k);

    // A candidate that fails is left out; all failing is the first error.
    let bad = [
        MatmulKernel::GemvRow { split_k: 1 },
        MatmulKernel::Tile {
            tile: 0,
            split_k: 1,
        },
    ];
    let (best, e) = tune::tune(&g, &bad, timing, |kern| {
        matmul(
            &g,
            kern,
            ab.matrix(m, k)?,
            bb.matrix(k, n)?,
            c.matrix_mut(m, n)?,
            Epilogue::None,
        )
    })
    .unwrap();
    assert_eq!(best, bad[1]);
    assert_eq!(e.timings.len(), 1);
    let r = tune::tune(&g, &bad[..1], timing, |kern| {
        matmul(
            &g,
            kern,
            ab.matrix(m, k)?,
            bb.matrix(k, n)?,
            c.matrix_mut(m, n)?,
            Epilogue::None,
        )
    });
    assert!(
        matches!(r, Err(rust_simt::SimtError::Shape { .. })),
        "{r:?}"
    );
}

#[test]
fn softmax_long_rows_tune_too() {
    // The softmax's long-row kernels through the same tuner: labels round-trip, the
    // candidates are the long-row kernels that take the shape, every one is timed,
    // the winner computes the softmax.
    use rust_simt::ops::softmax::{auto_key, long_row_candidates, softmax_with, SoftmaxKernel};
    for k in SoftmaxKernel::ALL {
        assert_eq!(
            <SoftmaxKernel as Config>::from_label(&Config::label(&k)),
            Some(k)
        );
    }
    assert_eq!(SoftmaxKernel::from_label("tiles"), None);
    let g: Gpu = gpu();
    let (rows, cols) = (3, 20_000);
    let cands = long_row_candidates(&g, cols, true).unwrap();
    assert!(cands.contains(&SoftmaxKernel::Online) && !cands.contains(&SoftmaxKernel::Registers));
    assert_eq!(
        auto_key(&g, rows, cols, true).as_str(),
        format!("{}|softmax|f32|rows=4|cols=32768|aligned", g.props().name)
    );
    let (mut r, seed) = rng("tune softmax");
    let x = uniform(&mut r, rows * cols, -5.0, 5.0);
    let xb = g.upload(&x).unwrap();
    let mut y = poisoned(&g, rows * cols);
    let (best, e) = tune::tune(&g, &cands, Timing { warmup: 0, reps: 1 }, |k| {
        softmax_with(&g, k, xb.matrix(rows, cols)?, y.matrix_mut(rows, cols)?)
    })
    .unwrap();
    assert_eq!(e.timings.len(), cands.len());
    let mut y = poisoned(&g, rows * cols);
    softmax_with(
        &g,
        best,
        xb.matrix(rows, cols).unwrap(),
        y.matrix_mut(rows, cols).unwrap(),
    )
    .unwrap();
    let want = reference::softmax(&x, rows, cols);
    assert_close(
        "tuned softmax",
        seed,
        &g.download(&y).unwrap(),
        &want,
        1e-5,
        1e-7,
        1e-5,
    );
}

#[test]
fn tensor_core_auto_picks_a_stage_that_runs_the_shape() {
    use half::bf16;
    use kernels::params::OutType;
    use rust_simt::ops::matmul_tc::{
        matmul_tc, tc_candidates, tc_heuristic, tc_key, TcKernel, TcShape,
    };
    for k in TcKernel::ALL.into_iter().chain([TcKernel::Auto]) {
        assert_eq!(TcKernel::from_label(k.label()), Some(k));
    }
    assert_eq!(TcKernel::from_label("wgmma+"), None);
    let g = gpu();
    let hopper = g.can_load(&rust_simt::ptx::sm90a::MODULE);
    let shape = |aligned, input, out| TcShape {
        m: 300,
        n: 200,
        k: 100,
        aligned,
        input,
        out,
    };
    for s in [
        shape(true, "bf16", OutType::F32),
        shape(false, "bf16", OutType::F32),
        shape(true, "f16", OutType::F16),
        shape(false, "bf16", OutType::Bf16),
        shape(true, "tf32", OutType::F32),
        shape(false, "tf32", OutType::F32),
    ] {
        let (c, h) = (tc_candidates(&g, s), tc_heuristic(&g, s));
        // Unaligned 16-bit inputs into f32: stage 5 only; a 16-bit C: Hopper only.
        assert_eq!(
            c.contains(&TcKernel::MmaPipelined),
            s.aligned && s.out == OutType::F32,
            "{s:?}: {c:?}"
        );
        assert!(
            c.iter().all(|k| s.out == OutType::F32 || k.writes_16bit()),
            "{s:?}: {c:?}"
        );
        if hopper || s.out == OutType::F32 && (s.aligned || s.input != "tf32") {
            assert!(c.contains(&h), "{s:?}: heuristic {h:?} not among {c:?}");
        }
    }
    // The key separates precisions, C types, alignment and ragged tiles (1000 and 1024
    // share every size bucket).
    let keys = [
        tc_key(
            &g,
            TcShape {
                m: 1000,
                n: 1000,
                k: 1000,
                ..shape(true, "bf16", OutType::F32)
            },
        ),
        tc_key(
            &g,
            TcShape {
                m: 1024,
                n: 1024,
                k: 1000,
                ..shape(true, "bf16", OutType::F32)
            },
        ),
        tc_key(&g, shape(true, "bf16", OutType::F32)),
        tc_key(&g, shape(true, "bf16", OutType::Bf16)),
        tc_key(&g, shape(true, "f16", OutType::F32)),
        tc_key(&g, shape(false, "bf16", OutType::F32)),
    ];
    for i in 0..keys.len() {
        for j in 0..i {
            assert_ne!(keys[i], keys[j]);
        }
    }
    // Auto computes what its choice computes, bit for bit (on the emulator the tuner
    // is off: the heuristic, stage 8 on its sm_90a module).
    let (m, n, k) = (70, 136, 72);
    let a: Vec<bf16> = (0..m * k)
        .map(|i| bf16::from_f32(((i * 37) % 17) as f32 / 8.0 - 1.0))
        .collect();
    let b: Vec<bf16> = (0..k * n)
        .map(|i| bf16::from_f32(((i * 11) % 13) as f32 / 6.0 - 1.0))
        .collect();
    let (ab, bb) = (g.upload(&a).unwrap(), g.upload(&b).unwrap());
    let run = |stage| {
        let mut c = g.upload(&vec![f32::NAN; m * n]).unwrap();
        matmul_tc(
            &g,
            stage,
            ab.matrix(m, k).unwrap(),
            bb.matrix(k, n).unwrap(),
            c.matrix_mut(m, n).unwrap(),
            Epilogue::Relu,
        )
        .unwrap();
        g.download(&c).unwrap()
    };
    let s = shape(true, "bf16", OutType::F32);
    let chosen = tune::lookup(
        &g,
        &tc_key(
            &g,
            TcShape {
                m: m as u32,
                n: n as u32,
                k: k as u32,
                ..s
            },
        ),
        tc_heuristic(&g, s),
        |_| true,
    );
    let (auto, direct) = (run(TcKernel::Auto), run(chosen));
    assert!(
        auto.iter()
            .zip(&direct)
            .all(|(x, y)| x.to_bits() == y.to_bits()),
        "Auto ({chosen:?}) differs from {chosen:?}"
    );
    let want = reference::matmul(
        &a.iter().map(|x| x.to_f32()).collect::<Vec<_>>(),
        &b.iter().map(|x| x.to_f32()).collect::<Vec<_>>(),
        m,
        n,
        k,
        k,
        n,
        true,
    );
    assert_matmul_close("matmul_tc Auto", 0, &auto, &want, k);
}

/// The heuristic as an H100 sees it (132 SMs, clusters), on an emulator of as many
/// workers: the small squares take the 4-stage 16x64 tile, 256^3 with K over clusters
/// of 4, as the H100 tuning chose.
#[test]
fn heuristic_takes_clusters_for_small_squares_on_132_sms() {
    let g = rust_simt::Gpu::emulator(rust_simt::emulator::EmuConfig {
        workers: 132,
        ..Default::default()
    });
    rust_simt::ptx::load(&g).unwrap();
    assert_eq!(g.props().sms, 132);
    let label = |m, n, k| auto_heuristic(&g, shape(m, n, k)).label();
    assert_eq!(label(256, 256, 256), "async-s4-16x64/c4");
    assert_eq!(label(512, 512, 512), "async-s4-16x64/k1");
    assert_eq!(label(300, 200, 700), "async-s4-32x64/c4");
    assert_eq!(
        label(256, 256, 128),
        "async-s4-32x64/k1",
        "K below 256: no cluster"
    );
    for s in [
        shape(256, 256, 256),
        shape(512, 512, 512),
        shape(300, 200, 700),
    ] {
        let h = auto_heuristic(&g, s);
        assert!(auto_candidates(&g, s).contains(&h), "{s:?}: {h:?}");
    }
}
