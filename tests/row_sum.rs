//! Row sum for rows of any length (tiles, shuffles, shared memory, split rows added in
//! order by their last block).
mod common;
use common::*;
use rust_simt::emulator::Order;
use rust_simt::ops::row_sum::{
    auto_kernel, auto_kernel_for, plan, row_sum, row_sum_with, stream_splits, tiny_takes,
    wide_takes, RowSumKernel, WIDE_MIN_COLS,
};
use rust_simt::Layout;
use rust_simt::{reference, SimtError};

fn check(rows: usize, cols: usize, ld: usize, lo: f32, hi: f32) {
    check_on(&gpu(), rows, cols, ld, lo, hi)
}

/// Every kernel that takes the shape on `g`, against float64.
fn check_on(g: &rust_simt::Gpu, rows: usize, cols: usize, ld: usize, lo: f32, hi: f32) {
    let (mut r, seed) = rng("row_sum");
    let x = uniform(&mut r, (rows - 1) * ld + cols, lo, hi);
    let xb = g.upload(&x).unwrap();
    let want = reference::row_sum(&x, rows, cols, ld);
    // f32 accumulation of `cols` terms: error grows ~ sqrt(cols)·eps·Σ|x|
    let atol = 1e-6 * (cols as f64).sqrt() * (hi.abs().max(lo.abs()) as f64) + 1e-6;
    // Every kernel that takes the shape, each into a freshly poisoned output.
    let mut kernels = vec![
        RowSumKernel::Auto,
        RowSumKernel::Blocks,
        RowSumKernel::Stream,
    ];
    if tiny_takes(&xb.matrix_strided(Layout::strided(rows, cols, ld)).unwrap()) {
        kernels.push(RowSumKernel::Tiny);
    }
    if cols <= kernels::config::WARP_ROW_MAX_COLS as usize {
        kernels.push(RowSumKernel::Warp);
    }
    if wide_takes(&xb.matrix_strided(Layout::strided(rows, cols, ld)).unwrap()) {
        kernels.push(RowSumKernel::WarpWide);
    }
    for k in kernels {
        let mut out = poisoned(g, rows);
        row_sum_with(
            g,
            k,
            xb.matrix_strided(Layout::strided(rows, cols, ld)).unwrap(),
            &mut out,
        )
        .unwrap();
        assert_close(
            &format!("row_sum {k:?} {rows}x{cols} ld {ld}"),
            seed,
            &g.download(&out).unwrap(),
            &want,
            1e-5,
            atol,
            1e-5,
        );
    }
}

/// `kernel` refuses the view `view()` with a shape error that points to `Auto`, and
/// `Auto` sums it: every row to `want`.
fn refused_then_auto<'a>(
    g: &rust_simt::Gpu,
    kernel: RowSumKernel,
    view: impl Fn() -> rust_simt::MatrixRef<'a, f32>,
    out: &mut rust_simt::Buffer<f32>,
    want: f32,
) {
    match row_sum_with(g, kernel, view(), out) {
        Err(SimtError::Shape { detail, .. }) => assert!(detail.contains("Auto"), "{detail}"),
        other => panic!("expected a Shape error from {kernel:?}, got {other:?}"),
    }
    row_sum_with(g, RowSumKernel::Auto, view(), out).unwrap();
    assert!(g.download(out).unwrap().iter().all(|&s| s == want));
}

#[test]
fn hand_worked() {
    // rows [1..=4] and [0.5, -0.5, 2, 8]: 10 and 10
    let g = gpu();
    let s =
        rust_simt::ops::row_sum::row_sum_host(&g, &[1.0, 2.0, 3.0, 4.0, 0.5, -0.5, 2.0, 8.0], 2, 4)
            .unwrap();
    assert_eq!(s, vec![10.0, 10.0]);
}

#[test]
fn shapes() {
    // up to WARP_ROW_MAX_COLS columns: a warp per row; beyond: a block (or several) per row
    for (rows, cols, ld) in [
        (1, 1, 1),
        (3, 5, 5),
        (127, 129, 129),
        (1000, 1001, 1001),
        (5, 77, 80),
        (9, 100, 101),
        (64, 3000, 3001),
        (300, 2048, 2048),
        (33, 1025, 1025),
    ] {
        check(rows, cols, ld, -1.0, 1.0);
    }
}

#[test]
fn few_long_rows_split_across_blocks() {
    let g = gpu();
    let cols = if on_gpu(&g) { 1 << 24 } else { 1 << 20 };
    assert!(
        plan(&g, 2, cols).0 > 1,
        "long rows must be split over several blocks"
    );
    check(2, cols, cols, -1.0, 1.0);
    check(3, cols + 3, cols + 5, 0.0, 1.0);
    // The striding kernel: whole tiles, the row's partial last tile, the floats past
    // the last whole vector (cols % 4 != 0) and misaligned rows (ld odd).
    assert!(stream_splits(&g, 2, cols) > 1);
    for (rows, cols, ld) in [
        (2, 2048 * 3 + 5, 2048 * 3 + 5),
        (3, 2048 * 7 + 1, 2048 * 7 + 4),
        (1, 100_003, 100_003),
    ] {
        check(rows, cols, ld, -2.0, 3.0);
    }
}

#[test]
fn auto_picks_by_shape() {
    let g = gpu();
    assert_eq!(auto_kernel(1 << 20, 16), RowSumKernel::Warp);
    assert_eq!(auto_kernel(4, 1 << 26), RowSumKernel::Stream);
    assert_eq!(auto_kernel(4, 1 << 20), RowSumKernel::Blocks);
    assert_eq!(auto_kernel(4, 1 << 22), RowSumKernel::Stream);
    let x = g.alloc::<f32>(2048).unwrap();
    let mut out = g.alloc::<f32>(1).unwrap();
    match row_sum_with(&g, RowSumKernel::Warp, x.matrix(1, 2048).unwrap(), &mut out) {
        Err(SimtError::TooLarge { detail, .. }) => assert!(detail.contains("Auto"), "{detail}"),
        other => panic!("expected TooLarge, got {other:?}"),
    }
}

#[test]
fn many_short_rows() {
    let g = gpu();
    let rows = if on_gpu(&g) { 1 << 16 } else { 1 << 12 };
    assert_eq!(plan(&g, rows, 64).0, 1);
    check(rows, 64, 64, -1.0, 1.0);
    check(rows, 7, 7, -1.0, 1.0);
}

#[test]
fn every_lane_group_size() {
    // Short rows take groups of 1, 2, 4, 8, 16 or 32 lanes per row; row counts that do
    // not fill the last warp, aligned and misaligned strides.
    use rust_simt::ops::row_sum::lanes_per_row;
    assert_eq!(
        [1, 4, 5, 16, 17, 64, 128, 1024].map(lanes_per_row),
        [1, 1, 2, 4, 8, 16, 32, 32]
    );
    for cols in [1, 2, 4, 5, 8, 12, 16, 17, 33, 64, 127] {
        for (rows, ld) in [(1001, cols), (37, cols + 1), (8, cols + 4)] {
            check(rows, cols, ld, -1.0, 1.0);
        }
    }
}

#[test]
fn bad_inputs_are_errors() {
    let g = gpu();
    let x = g.upload(&[1.0f32; 10]).unwrap();
    let mut out = g.alloc::<f32>(3).unwrap();
    assert!(
        matches!(
            row_sum(&g, x.matrix(2, 5).unwrap(), &mut out),
            Err(SimtError::Shape { .. })
        ),
        "out has 3 slots for 2 rows"
    );
    assert!(
        matches!(x.matrix(2, 6), Err(SimtError::Shape { .. })),
        "12 elements in a 10-element buffer"
    );
}

#[test]
fn empty_rows_sum_to_zero() {
    // As torch.sum: rows of no columns sum to 0; no rows is an empty result, no launch.
    let g = gpu();
    let x = g.alloc::<f32>(0).unwrap();
    let mut out = poisoned(&g, 3);
    row_sum(&g, x.matrix(3, 0).unwrap(), &mut out).unwrap();
    assert_eq!(g.download(&out).unwrap(), vec![0.0; 3]);
    let mut none = g.alloc::<f32>(0).unwrap();
    let (_, launches) = g
        .profile(|| row_sum(&g, x.matrix(0, 5)?, &mut none))
        .unwrap();
    assert!(launches.is_empty());
}

#[test]
fn tiny_rows_four_per_thread() {
    // Rows of 1-3 columns: whole groups of 4 rows and the 1-3 rows past them, and a
    // view that starts off a 16-byte boundary (Tiny refuses it, Auto takes another
    // kernel).
    for cols in 1..=3 {
        for rows in [1, 2, 3, 4, 5, 7, 8, 1023, 4097] {
            check(rows, cols, cols, -1.0, 1.0);
        }
    }
    let g = gpu();
    let x = g.upload(&vec![1.0f32; 3 * 101]).unwrap();
    let mut out = g.alloc::<f32>(100).unwrap();
    let view = || x.matrix_at(1, Layout::strided(100, 3, 3)).unwrap();
    assert!(!tiny_takes(&view()));
    refused_then_auto(&g, RowSumKernel::Tiny, view, &mut out, 3.0);
}

#[test]
fn split_rows_same_bits_every_run() {
    // Rows over several blocks: the row's last block adds the parts in part order,
    // so on one device (one plan of parts) the sums have the same bits whichever
    // block finishes last: repeated launches, and on the emulator other thread
    // orders of the same worker count. The per-row counts are back at zero after
    // each launch (other rows on the same Gpu then sum right).
    let (mut r, seed) = rng("row_sum_bits");
    let (rows, cols) = (3, 70_001);
    let x = uniform(&mut r, rows * cols, -1.0, 1.0);
    let want = reference::row_sum(&x, rows, cols, cols);
    let y = uniform(&mut r, 5 * 40_000, 0.0, 1.0);
    let want_y = reference::row_sum(&y, 5, 40_000, 40_000);
    // Devices whose sums must agree bit for bit: one GPU, or emulators of 3 and of
    // 16 workers under three thread orders.
    let groups: Vec<Vec<rust_simt::Gpu>> = if on_gpu(&gpu()) {
        vec![vec![gpu()]]
    } else {
        [3, 16]
            .iter()
            .map(|&w| {
                [Order::InOrder, Order::Reversed, Order::Random(5)]
                    .into_iter()
                    .map(|o| emulator_workers(w, o))
                    .collect()
            })
            .collect()
    };
    for kernel in [RowSumKernel::Blocks, RowSumKernel::Stream] {
        for group in &groups {
            let mut first: Option<Vec<f32>> = None;
            for g in group {
                // Five rows first (the Gpu's counts are then at least 5 long), three
                // rows three times (counts 0-2 reset by each launch), five again (on
                // counts that launches reset).
                let yb = g.upload(&y).unwrap();
                let five = |when: &str| {
                    let mut out = poisoned(g, 5);
                    row_sum_with(g, kernel, yb.matrix(5, 40_000).unwrap(), &mut out).unwrap();
                    let what = format!("{kernel:?} 5x40000 {when}");
                    let got = g.download(&out).unwrap();
                    assert_close(&what, seed, &got, &want_y, 1e-5, 1e-4, 1e-5);
                };
                five("first");
                let xb = g.upload(&x).unwrap();
                for _ in 0..3 {
                    let mut out = poisoned(g, rows);
                    row_sum_with(g, kernel, xb.matrix(rows, cols).unwrap(), &mut out).unwrap();
                    let got = g.download(&out).unwrap();
                    let what = format!("{kernel:?} {rows}x{cols}");
                    assert_close(&what, seed, &got, &want, 1e-5, 1e-4, 1e-5);
                    match &first {
                        None => first = Some(got),
                        Some(f) => assert!(
                            f.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits()),
                            "{kernel:?}: bits differ between runs: {f:?} vs {got:?}"
                        ),
                    }
                }
                five("after 3x70001");
            }
        }
    }
}

#[test]
fn wide_rows_a_warp_each() {
    // A warp per row, lanes loading 4, 2 and 1 vectors: one vector a lane and a tail
    // float (129), two (256), three (4 + 2 + 1 steps short: 384), four (512), eight
    // (1024), a 3-float tail (1023); strides equal to and past the row; Auto takes
    // the kernel from WIDE_MIN_COLS columns on aligned rows, Warp below it.
    for cols in [129usize, 256, 260, 384, 511, 512, 1000, 1023, 1024] {
        for (rows, ld) in [
            (37, cols.next_multiple_of(4)),
            (8, cols.next_multiple_of(4) + 4),
        ] {
            check(rows, cols, ld, -1.0, 1.0);
        }
    }
    let g = gpu();
    let x = g.upload(&vec![0.5f32; 300 * 257]).unwrap();
    let mut out = poisoned(&g, 299);
    assert_eq!(WIDE_MIN_COLS, 129);
    assert!(wide_takes(
        &x.matrix_strided(Layout::strided(290, 257, 260)).unwrap()
    ));
    // What Auto runs: WarpWide from 129 aligned columns, Warp below or off alignment.
    let auto = |v: rust_simt::MatrixRef<'_, f32>| auto_kernel_for(&v, &out);
    assert_eq!(auto(x.matrix(299, 256).unwrap()), RowSumKernel::WarpWide);
    assert_eq!(auto(x.matrix(299, 128).unwrap()), RowSumKernel::Warp);
    let off = x.matrix_at(1, Layout::strided(299, 256, 256)).unwrap();
    assert_eq!(auto(off), RowSumKernel::Warp);
    // A row start off a 16-byte boundary: WarpWide refuses the view, Auto sums it.
    let view = || x.matrix_at(1, Layout::strided(299, 256, 256)).unwrap();
    assert!(!wide_takes(&view()));
    refused_then_auto(&g, RowSumKernel::WarpWide, view, &mut out, 128.0);
}

#[test]
fn every_kernel_every_thread_order() {
    // The block reductions and shared scratch of every kernel, under every order the
    // emulator runs a block's threads in: striding blocks (whole and partial tiles, a
    // misaligned row), chunked blocks, lane groups and four-rows-per-thread.
    let g = gpu();
    if on_gpu(&g) {
        return;
    }
    for order in [Order::InOrder, Order::Reversed, Order::Random(9)] {
        let g = emulator(order);
        for (rows, cols, ld) in [
            (2, 2048 * 3 + 5, 2048 * 3 + 5),
            (3, 100, 101),
            (9, 3, 3),
            (5, 2, 2),
            // Whole warps of 128 rows (loaded together through shared memory) and a
            // partial one after them.
            (1000, 3, 3),
            (300, 2, 2),
            (260, 1, 1),
            // A warp per row (WarpWide), a tail float.
            (5, 1021, 1024),
        ] {
            check_on(&g, rows, cols, ld, -2.0, 3.0);
        }
    }
}
