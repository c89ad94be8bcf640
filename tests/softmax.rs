//! Softmax: every kernel (shared-memory rows, register rows, split rows, online) and
//! the naive composition, against float64, with stability cases and long rows.
mod common;
use common::*;
use rust_simt::emulator::{EmuConfig, Order};
use rust_simt::ops::softmax::{
    bulk_max_cols, has_clusters, max_cols, softmax, softmax_naive, softmax_with,
    split_async_max_cols, split_max_cols, split_wide_max_cols, SoftmaxKernel, CLUSTER_MAX_COLS,
    REGISTER_MAX_COLS, ROW_BULK_MAX_COLS,
};
use rust_simt::Layout;
use rust_simt::{reference, Gpu, SimtError};

const RTOL: f64 = 1e-5;
const ATOL: f64 = 1e-7;

/// The kernels that take rows of `cols` columns on `g`: every path `softmax` can
/// pick, and the ones a user can name.
fn kernels_for(g: &Gpu, cols: usize) -> Vec<SoftmaxKernel> {
    let mut v = vec![
        SoftmaxKernel::Auto,
        SoftmaxKernel::Online,
        SoftmaxKernel::Looped,
        SoftmaxKernel::Stream,
    ];
    if has_clusters(g) {
        v.push(SoftmaxKernel::ThreePass);
    }
    if cols <= max_cols(g) {
        v.push(SoftmaxKernel::SharedRow);
    }
    if cols <= REGISTER_MAX_COLS {
        v.push(SoftmaxKernel::Registers);
    }
    if cols <= CLUSTER_MAX_COLS && has_clusters(g) {
        v.push(SoftmaxKernel::Cluster);
    }
    if cols <= split_max_cols(g).unwrap() {
        v.push(SoftmaxKernel::Split);
    }
    // Contiguous rows from an aligned buffer: 16-byte aligned when cols % 4 == 0.
    if cols.is_multiple_of(4) && cols <= split_async_max_cols(g).unwrap() {
        v.push(SoftmaxKernel::SplitAsync);
    }
    // Any rows: those not 16-byte aligned count a head of up to 3 floats.
    if cols + if cols.is_multiple_of(4) { 0 } else { 3 } <= split_wide_max_cols(g).unwrap() {
        v.push(SoftmaxKernel::SplitWide);
    }
    // Rows 16-byte aligned with a multiple of 4 columns, on Hopper and the emulator.
    if cols.is_multiple_of(4) && cols <= bulk_max_cols(g).unwrap() {
        v.push(SoftmaxKernel::Bulk);
    }
    if cols.is_multiple_of(4) && cols <= ROW_BULK_MAX_COLS && has_clusters(g) {
        v.push(SoftmaxKernel::RowBulk);
    }
    v
}

/// `softmax_with(k)` of the dense `rows x cols` input `xb` into a freshly poisoned
/// output, checked against `want` (float64); the output, for further checks.
fn run_checked(
    g: &Gpu,
    k: SoftmaxKernel,
    xb: &rust_simt::Buffer<f32>,
    rows: usize,
    cols: usize,
    want: &[f64],
    seed: u64,
) -> Vec<f32> {
    let mut y = poisoned(g, rows * cols);
    softmax_with(
        g,
        k,
        xb.matrix(rows, cols).unwrap(),
        y.matrix_mut(rows, cols).unwrap(),
    )
    .unwrap();
    let y = g.download(&y).unwrap();
    assert_close(
        &format!("softmax {k:?} {rows}x{cols}"),
        seed,
        &y,
        want,
        RTOL,
        ATOL,
        1e-5,
    );
    y
}

/// Every kernel that takes these rows (and the naive composition) against float64,
/// each into a freshly poisoned output.
fn check_on(g: &Gpu, rows: usize, cols: usize, x: &[f32], seed: u64) {
    let want = reference::softmax(x, rows, cols);
    let xb = g.upload(x).unwrap();
    for k in kernels_for(g, cols) {
        run_checked(g, k, &xb, rows, cols, &want, seed);
    }
    let mut y = poisoned(g, rows * cols);
    let mut tmp = poisoned(g, rows);
    softmax_naive(
        g,
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

fn check(rows: usize, cols: usize, x: &[f32], seed: u64) {
    check_on(&gpu(), rows, cols, x, seed)
}

/// The emulator with 4 workers (4 resident blocks: split rows up to 32768 columns)
/// under `order`, or the GPU.
fn gpu_four_sms(order: Order) -> Gpu {
    gpu_with_sms(4, order)
}

/// The emulator with `workers` workers (as many resident blocks) under `order`, or
/// the GPU.
fn gpu_with_sms(workers: usize, order: Order) -> Gpu {
    let g = gpu();
    if on_gpu(&g) {
        return g;
    }
    let g = Gpu::emulator(EmuConfig {
        workers,
        order,
        ..EmuConfig::default()
    });
    rust_simt::ptx::load(&g).unwrap();
    g
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
fn every_kernel_writes_nan_for_an_all_neg_inf_row_and_zero_for_neg_inf_entries() {
    // The output starts finite (7.0), not NaN: a kernel that skipped the all -inf
    // row would leave 7.0 there, which a NaN-poisoned check could not tell from the
    // NaN it must write (as torch.softmax).
    let g = gpu_four_sms(Order::Reversed);
    let (mut r, seed) = rng("softmax all -inf rows");
    for cols in [100, 3000, 40000] {
        let rows = 3;
        let mut x = uniform(&mut r, rows * cols, -4.0, 4.0);
        x[cols..2 * cols].fill(f32::NEG_INFINITY);
        for c in (0..cols).step_by(3) {
            x[c] = f32::NEG_INFINITY;
        }
        let xb = g.upload(&x).unwrap();
        for k in kernels_for(&g, cols) {
            let mut y = g.upload(&vec![7.0f32; rows * cols]).unwrap();
            softmax_with(
                &g,
                k,
                xb.matrix(rows, cols).unwrap(),
                y.matrix_mut(rows, cols).unwrap(),
            )
            .unwrap();
            let y = g.download(&y).unwrap();
            assert!(
                y[cols..2 * cols].iter().all(|v| v.is_nan()),
                "{k:?} {rows}x{cols} (seed {seed}): the all -inf row is not all NaN"
            );
            assert!(
                (0..cols).step_by(3).all(|c| y[c] == 0.0),
                "{k:?} {rows}x{cols} (seed {seed}): a -inf entry is not 0"
            );
            let row0: f64 = y[..cols].iter().map(|&v| v as f64).sum();
            let row2: f64 = y[2 * cols..].iter().map(|&v| v as f64).sum();
            assert!(
                (row0 - 1.0).abs() < 1e-4 && (row2 - 1.0).abs() < 1e-4,
                "{k:?} {rows}x{cols} (seed {seed}): rows sum to {row0}, {row2}"
            );
        }
    }
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
    // A kernel named for rows longer than it takes: a typed error saying what to use.
    let too_long = max_cols(&g) + 1;
    let xl = g.alloc::<f32>(too_long).unwrap();
    let mut yl = g.alloc::<f32>(too_long).unwrap();
    for k in [SoftmaxKernel::SharedRow, SoftmaxKernel::Registers] {
        let e = softmax_with(
            &g,
            k,
            xl.matrix(1, too_long).unwrap(),
            yl.matrix_mut(1, too_long).unwrap(),
        )
        .unwrap_err();
        assert!(matches!(e, SimtError::TooLarge { .. }), "{e}");
        assert!(
            e.to_string().contains("SoftmaxKernel::Auto"),
            "the error says what to do: {e}"
        );
    }
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

#[test]
fn every_register_kernel_size() {
    // Each register-resident kernel at its largest row, one past the previous one's,
    // and a ragged length (partial vectors, a misaligned second row).
    let (mut r, seed) = rng("softmax register sizes");
    for cols in [
        4, 128, 129, 256, 257, 511, 512, 1000, 1024, 1025, 2048, 2049, 4095, 4096, 8191, 8192,
        8193, 16384,
    ] {
        let rows = 3;
        let x = uniform(&mut r, rows * cols, -8.0, 8.0);
        check(rows, cols, &x, seed);
    }
}

/// Long rows with every stability case in them: a row whose first chunk is all
/// -inf, a row of only -inf (NaN, as torch.softmax), values of +-1e30, a row near
/// +1e4, and plain random rows.
fn long_rows(r: &mut impl rand::Rng, rows: usize, cols: usize) -> Vec<f32> {
    let mut x = uniform(r, rows * cols, -6.0, 6.0);
    let row = |i: usize| i * cols..(i + 1) * cols;
    if rows > 1 {
        x[row(1)][..cols.min(9000)].fill(f32::NEG_INFINITY);
    }
    if rows > 2 {
        x[row(2)].fill(f32::NEG_INFINITY);
    }
    if rows > 3 {
        for (i, v) in x[row(3)].iter_mut().enumerate() {
            *v = if i % 3 == 0 {
                1e30
            } else if i % 3 == 1 {
                -1e30
            } else {
                *v
            };
        }
    }
    if rows > 4 {
        x[row(4)].iter_mut().for_each(|v| *v += 1e4);
    }
    x
}

#[test]
fn long_rows_split_and_online_every_order() {
    // Rows past the register kernels: split over 2 to 4 blocks (whole rows per wave
    // of 4 resident blocks on the emulator: 1 or 2 rows a wave) and the online two
    // passes, under every thread order. The wide split kernel's chunks are 32768
    // columns, 16384 in registers and 16384 staged: 32868 ends its second chunk in
    // the register part (nothing staged), 49160 in the staged part. Rows of an odd
    // length start 0-3 floats past a 16-byte boundary (row r at r·cols): the wide
    // kernel reads them as aligned rows with a head; at 32767 columns a row's second
    // chunk holds the last 1-2 elements or none (empty chunks), at 49157 it ends in
    // the staged part.
    for order in [Order::InOrder, Order::Reversed, Order::Random(7)] {
        let g = gpu_four_sms(order);
        let (mut r, seed) = rng("softmax long rows");
        for (rows, cols) in [
            (5, 16385),
            (3, 24580),
            (2, 32768),
            (5, 40000),
            (2, 32868),
            (3, 49160),
            (3, 32767),
            (4, 49157),
        ] {
            let x = long_rows(&mut r, rows, cols);
            check_on(&g, rows, cols, &x, seed);
            let y = rust_simt::ops::softmax::softmax_host(&g, &x, rows, cols).unwrap();
            if rows > 2 {
                assert!(
                    y[2 * cols..3 * cols].iter().all(|v| v.is_nan()),
                    "all -inf row: NaN"
                );
            }
            assert!(
                y[cols..cols + 9000].iter().all(|&v| v == 0.0),
                "-inf entries: 0"
            );
        }
        if on_gpu(&g) {
            break;
        }
    }
}

#[test]
fn one_row_of_a_million() {
    // A single row of 2^20 columns: split over 128 blocks on the GPU, the online
    // two passes on the emulator (its few resident blocks hold 32768 columns); and
    // the stream kernel, whose 64 chunks outnumber the emulator's 4 blocks (a lag
    // of a whole row: every read before the first write).
    let g = gpu();
    let (mut r, seed) = rng("softmax one row");
    let cols = 1 << 20;
    let x = uniform(&mut r, cols, -20.0, 20.0);
    let want = reference::softmax(&x, 1, cols);
    let xb = g.upload(&x).unwrap();
    for k in [SoftmaxKernel::Auto, SoftmaxKernel::Stream] {
        run_checked(&g, k, &xb, 1, cols, &want, seed);
    }
}

/// The stream kernel's order of pieces ([`kernels::softmax_stream::piece`]): every
/// chunk's stats and write appear once each, and every write comes after all the
/// stats of its row (what makes the cooperative launch deadlock-free), for grids and
/// row lengths around the edges: fewer chunks than blocks, more chunks in a row than
/// blocks, odd grids whose rounds cut pairs in two.
#[test]
fn stream_order_is_a_permutation_and_writes_follow_their_rows() {
    use rust_simt::kernels::softmax_stream::{lag, piece};
    for (rows, splits) in [
        (1, 1),
        (1, 7),
        (3, 5),
        (64, 16),
        (8, 65),
        (256, 4),
        (5, 300),
    ] {
        let n = rows * splits;
        for grid in [1, 2, 3, 7, 8, 264, 1000] {
            let l = lag(grid, splits, n);
            let mut stats_at = vec![usize::MAX; n];
            let mut write_at = vec![usize::MAX; n];
            let mut kinds = vec![Vec::new(); grid];
            for pos in 0..2 * n {
                let (s, i) = piece(pos, n, l, grid);
                let slot = if s {
                    &mut stats_at[i]
                } else {
                    &mut write_at[i]
                };
                assert_eq!(*slot, usize::MAX, "piece ({s}, {i}) twice");
                *slot = pos;
                kinds[pos % grid].push(s);
            }
            assert_eq!(write_at.len(), n);
            for (i, &w) in write_at.iter().enumerate() {
                let row = i / splits * splits..(i / splits + 1) * splits;
                let last_stats = row.map(|k| stats_at[k]).max().unwrap();
                assert!(
                    last_stats < w,
                    "rows {rows}, splits {splits}, grid {grid}: W({i}) at {w} before its row's stats at {last_stats}"
                );
            }
            // Past the first lag, an even grid's blocks alternate reads and writes.
            if grid % 2 == 0 && l == grid && n >= 4 * grid {
                let b = &kinds[0][1..4];
                assert!(b[0] != b[1] && b[1] != b[2], "block 0 alternates: {b:?}");
            }
        }
    }
}

#[test]
fn long_rows_strided() {
    // Rows 16391 apart (misaligned: the scalar path) and a different output stride,
    // on the split and online kernels.
    let g = gpu_four_sms(Order::InOrder);
    let (mut r, seed) = rng("softmax long strided");
    // Each kernel on its own draw of the same shape.
    let mut ks = vec![
        SoftmaxKernel::Split,
        SoftmaxKernel::SplitWide,
        SoftmaxKernel::Online,
        SoftmaxKernel::Looped,
        SoftmaxKernel::Stream,
    ];
    if has_clusters(&g) {
        ks.push(SoftmaxKernel::ThreePass);
        ks.push(SoftmaxKernel::Cluster);
    }
    for k in ks {
        strided_case(&g, k, &mut r, seed, (3, 16390, 16391, 16400));
    }
}

/// The marks `long_rows` leaves in a softmax of its rows: row 2 (all -inf) NaN, the
/// first 9000 entries of row 1 (-inf) exactly 0.
fn long_rows_marks(y: &[f32], rows: usize, cols: usize) {
    if rows > 2 {
        assert!(
            y[2 * cols..3 * cols].iter().all(|v| v.is_nan()),
            "all -inf row: NaN"
        );
    }
    if rows > 1 && cols > 9000 {
        assert!(
            y[cols..cols + 9000].iter().all(|&v| v == 0.0),
            "-inf entries: 0"
        );
    }
}

/// `k` on `rows x cols` taken from rows `ldx` apart into a NaN-poisoned output with
/// rows `ldy` apart: checked against float64, and the output's padding untouched.
fn strided_case(
    g: &Gpu,
    k: SoftmaxKernel,
    r: &mut impl rand::Rng,
    seed: u64,
    (rows, cols, ldx, ldy): (usize, usize, usize, usize),
) {
    let buf = uniform(r, rows * ldx, -4.0, 4.0);
    let dense = dense_rows(&buf, rows, cols, ldx);
    let want = reference::softmax(&dense, rows, cols);
    let xb = g.upload(&buf).unwrap();
    let mut y = poisoned(g, rows * ldy);
    softmax_with(
        g,
        k,
        xb.matrix_strided(Layout::strided(rows, cols, ldx)).unwrap(),
        y.matrix_mut_strided(Layout::strided(rows, cols, ldy))
            .unwrap(),
    )
    .unwrap();
    let y = g.download(&y).unwrap();
    assert_close(
        &format!("softmax {k:?} strided"),
        seed,
        &dense_rows(&y, rows, cols, ldy),
        &want,
        RTOL,
        ATOL,
        1e-5,
    );
    assert!(y[cols..ldy].iter().all(|v| v.is_nan()), "padding untouched");
}

/// The bulk kernel (`softmax_bulk`) under every thread order: rows whose last chunk
/// is short (20004: 3 chunks, the last of 3620 columns), a block walking more chunks
/// than its ring of 7 (12 x 20004 is 36 chunks on 4 blocks, 9 a block: stages 0 and 1
/// refilled), rows of one chunk, the longest row 4 blocks take (3 rows of 28 chunks,
/// 21 a block: every stage refilled, a row spanning all 4 blocks' whole rings), a
/// strided input and an output that is not 16-byte aligned (scalar stores), and the
/// stability cases of `long_rows`.
#[test]
fn bulk_rows_every_order() {
    for order in [Order::InOrder, Order::Reversed, Order::Random(11)] {
        let g = gpu_four_sms(order);
        if !has_clusters(&g) {
            return;
        }
        let (mut r, seed) = rng("softmax bulk");
        for (rows, cols) in [
            (5, 20004),
            (12, 20004),
            (6, 8192),
            (3, 4 * 7 * 8192),
            (9, 4),
        ] {
            if cols > bulk_max_cols(&g).unwrap() {
                continue;
            }
            let x = long_rows(&mut r, rows, cols);
            let want = reference::softmax(&x, rows, cols);
            let xb = g.upload(&x).unwrap();
            let y = run_checked(&g, SoftmaxKernel::Bulk, &xb, rows, cols, &want, seed);
            long_rows_marks(&y, rows, cols);
        }
        // Strided rows in, rows out of alignment (y's stride odd).
        strided_case(
            &g,
            SoftmaxKernel::Bulk,
            &mut r,
            seed,
            (5, 16388, 16392, 16389),
        );
        if on_gpu(&g) {
            break;
        }
    }
}

/// The bulk-copied rows in place (`y` is `x`), launched directly: the safe API's
/// views of one buffer cannot alias.
fn row_bulk_in_place(g: &Gpu, xy: &mut rust_simt::Buffer<f32>, rows: usize, cols: usize) {
    use rust_simt::kernels::softmax_row_bulk as k;
    use rust_simt::{dim3, LaunchConfig};
    assert!(cols.is_multiple_of(4) && cols <= ROW_BULK_MAX_COLS && xy.len() >= rows * cols);
    let p = xy.ptr_mut();
    let (r, c) = (rows as u32, cols as u32);
    // SAFETY: xy holds rows·cols floats on g (asserted), a device allocation (16-byte
    // aligned) with a multiple of 4 columns, at most ROW_BULK_MAX_COLS (asserted); in
    // place is in the kernel's contract; grid.x = rows; the launch gives cols·4 bytes
    // of dynamic shared memory (the kernel's launch contract); the module is loaded
    // (the caller ran softmax_with on g first).
    unsafe {
        g.launch::<k::softmax_row_bulk>(
            LaunchConfig::for_kernel::<k::softmax_row_bulk>(dim3(r, 1, 1)),
            (p as *const f32, p, r, c, c, c),
        )
    }
    .unwrap();
}

/// The bulk-copied rows (`softmax_row_bulk`) under every thread order: the longest
/// row (16384 columns, two copies), a row one copy long and one a copy and a vector
/// (8196: the second copy is 16 bytes), a row shorter than the block's first
/// vectors (4 and 1020 columns: most threads hold nothing), a ragged count that is
/// not a power of two, the stability cases of `long_rows` (a row of -inf gives NaN,
/// -inf entries 0), in place, and a strided input into an output whose rows are not
/// 16-byte aligned (scalar stores) with its padding left alone.
#[test]
fn row_bulk_every_order() {
    for order in [Order::InOrder, Order::Reversed, Order::Random(5)] {
        let g = gpu_four_sms(order);
        if !has_clusters(&g) {
            return;
        }
        let (mut r, seed) = rng("softmax row bulk");
        for (rows, cols) in [
            (6, ROW_BULK_MAX_COLS),
            (5, 8192),
            (3, 8196),
            (9, 4),
            (2, 1020),
            (7, 12004),
        ] {
            let x = long_rows(&mut r, rows, cols);
            let want = reference::softmax(&x, rows, cols);
            let xb = g.upload(&x).unwrap();
            let y = run_checked(&g, SoftmaxKernel::RowBulk, &xb, rows, cols, &want, seed);
            long_rows_marks(&y, rows, cols);
            // In place: the copy lands before any write of the row.
            let mut xy = g.upload(&x).unwrap();
            row_bulk_in_place(&g, &mut xy, rows, cols);
            assert_close(
                &format!("softmax RowBulk in place {rows}x{cols}"),
                seed,
                &g.download(&xy).unwrap(),
                &want,
                RTOL,
                ATOL,
                1e-5,
            );
        }
        strided_case(
            &g,
            SoftmaxKernel::RowBulk,
            &mut r,
            seed,
            (5, 16380, 16384, 16381),
        );
        if on_gpu(&g) {
            break;
        }
    }
}

/// What the bulk-copied rows refuse, with errors that say what to do: rows not
/// 16-byte aligned (the stride, then the start), a column count not a multiple of
/// 4, rows longer than one block's shared memory holds.
#[test]
fn row_bulk_refusals_are_errors() {
    let g = gpu_four_sms(Order::InOrder);
    let run = |rows: usize, cols: usize, ld: usize, offset: usize| {
        let xb = g.upload(&vec![0.5f32; rows * ld + offset]).unwrap();
        let mut y = g.alloc::<f32>(rows * ld).unwrap();
        softmax_with(
            &g,
            SoftmaxKernel::RowBulk,
            xb.matrix_at(offset, Layout::strided(rows, cols, ld))
                .unwrap(),
            y.matrix_mut_strided(Layout::strided(rows, cols, ld))
                .unwrap(),
        )
    };
    if !has_clusters(&g) {
        // Before Hopper: no bulk copies, and the error says what to use.
        match run(2, 1000, 1000, 0) {
            Err(SimtError::Unsupported(detail)) => assert!(detail.contains("Auto"), "{detail}"),
            other => panic!("RowBulk before Hopper: {other:?}"),
        }
        return;
    }
    for (rows, cols, ld, offset) in [(2, 1001, 1001, 0), (2, 1000, 1002, 0), (2, 1000, 1000, 1)] {
        match run(rows, cols, ld, offset) {
            Err(SimtError::Shape { detail, .. }) => assert!(detail.contains("Auto"), "{detail}"),
            other => panic!("{rows}x{cols} ld {ld} offset {offset}: {other:?}"),
        }
    }
    let long = ROW_BULK_MAX_COLS + 4;
    match run(1, long, long, 0) {
        Err(SimtError::TooLarge { detail, .. }) => assert!(detail.contains("Auto"), "{detail}"),
        other => panic!("1x{long}: {other:?}"),
    }
}

/// What the bulk kernel refuses, with errors that say what to do: rows not 16-byte
/// aligned, a column count not a multiple of 4, rows longer than its bound.
#[test]
fn bulk_refusals_are_errors() {
    let g = gpu_four_sms(Order::InOrder);
    if !has_clusters(&g) {
        return;
    }
    let run = |rows: usize, cols: usize, ld: usize| {
        let xb = g.upload(&vec![0.5f32; rows * ld + 1]).unwrap();
        let mut y = g.alloc::<f32>(rows * ld).unwrap();
        softmax_with(
            &g,
            SoftmaxKernel::Bulk,
            xb.matrix_strided(Layout::strided(rows, cols, ld)).unwrap(),
            y.matrix_mut_strided(Layout::strided(rows, cols, ld))
                .unwrap(),
        )
    };
    for (rows, cols, ld) in [(2, 20001, 20001), (2, 20000, 20002)] {
        match run(rows, cols, ld) {
            Err(SimtError::Shape { detail, .. }) => assert!(detail.contains("Auto"), "{detail}"),
            other => panic!("{rows}x{cols} ld {ld}: {other:?}"),
        }
    }
    let long = bulk_max_cols(&g).unwrap() + 4;
    match run(1, long, long) {
        Err(SimtError::TooLarge { detail, .. }) => assert!(detail.contains("Online"), "{detail}"),
        other => panic!("1x{long}: {other:?}"),
    }
}

#[test]
fn split_rows_too_long_for_the_device_are_errors() {
    // The split kernel needs every chunk of a row resident at once: on the 4-block
    // emulator 32768 columns; past that a typed error, and Auto goes online.
    let g = gpu_four_sms(Order::InOrder);
    if on_gpu(&g) {
        return;
    }
    assert_eq!(split_max_cols(&g).unwrap(), 4 * 8192);
    let cols = 4 * 8192 + 1;
    let x = g.alloc::<f32>(cols).unwrap();
    let mut y = g.alloc::<f32>(cols).unwrap();
    let e = softmax_with(
        &g,
        SoftmaxKernel::Split,
        x.matrix(1, cols).unwrap(),
        y.matrix_mut(1, cols).unwrap(),
    )
    .unwrap_err();
    assert!(
        matches!(e, SimtError::TooLarge { .. }) && e.to_string().contains("Online"),
        "{e}"
    );
    // Auto: a cluster per row where the device has them, else the online passes;
    // past the clusters' longest row, the online passes.
    let want = if has_clusters(&g) {
        SoftmaxKernel::Cluster
    } else {
        SoftmaxKernel::Online
    };
    assert_eq!(
        rust_simt::ops::softmax::auto_kernel(&g, 1, cols, false).unwrap(),
        want
    );
    assert_eq!(
        rust_simt::ops::softmax::auto_kernel(&g, 1, CLUSTER_MAX_COLS + 1, false).unwrap(),
        SoftmaxKernel::Online
    );
}

#[test]
fn cluster_rows_every_order() {
    // The cluster kernels (Hopper; the emulator runs a cluster's blocks together):
    // 2 blocks (up to 32768 columns) and 4 (40000: rank 3 holds no column), a row
    // whose whole first chunk is -inf (that block's pair is (-inf, 0)), a row of
    // only -inf (NaN), +-1e30 and a shifted row, under every thread order.
    for order in [Order::InOrder, Order::Reversed, Order::Random(11)] {
        let g = gpu_four_sms(order);
        if !has_clusters(&g) {
            return;
        }
        let (mut r, seed) = rng("softmax cluster rows");
        for (rows, cols) in [(3, 16385), (5, 40000)] {
            let mut x = long_rows(&mut r, rows, cols);
            // Row 1: all of rank 0's chunk and more, but not the whole row.
            let dead = (16384 + 7).min(cols - 1);
            x[cols..cols + dead].fill(f32::NEG_INFINITY);
            let want = reference::softmax(&x, rows, cols);
            let xb = g.upload(&x).unwrap();
            let y = run_checked(&g, SoftmaxKernel::Cluster, &xb, rows, cols, &want, seed);
            assert!(
                y[cols..2 * cols].iter().all(|v| !v.is_nan()),
                "a chunk of only -inf is no NaN"
            );
            assert!(
                y[cols..cols + dead].iter().all(|&v| v == 0.0),
                "-inf entries: 0"
            );
            if rows > 2 {
                assert!(
                    y[2 * cols..3 * cols].iter().all(|v| v.is_nan()),
                    "all -inf row: NaN"
                );
            }
        }
        // The longest row a cluster takes, and one past it (Auto then takes another kernel).
        let cols = CLUSTER_MAX_COLS;
        let x = uniform(&mut r, cols, -10.0, 10.0);
        let xb = g.upload(&x).unwrap();
        let want = reference::softmax(&x, 1, cols);
        run_checked(&g, SoftmaxKernel::Cluster, &xb, 1, cols, &want, seed);
        let x = uniform(&mut r, cols + 1, -10.0, 10.0);
        let xb = g.upload(&x).unwrap();
        let mut y = poisoned(&g, cols + 1);
        match softmax_with(
            &g,
            SoftmaxKernel::Cluster,
            xb.matrix(1, cols + 1).unwrap(),
            y.matrix_mut(1, cols + 1).unwrap(),
        ) {
            Err(SimtError::TooLarge { detail, .. }) => {
                assert!(detail.contains("262144"), "{detail}")
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
        if on_gpu(&g) {
            break;
        }
    }
}

/// On a device that refuses cooperative launches (a shared MPS device), `Auto`
/// answers the refusal of the kernel it picked (the bulk kernel here) with the
/// online passes; asked for by name, the kernel's refusal is the error.
#[test]
fn auto_falls_back_to_the_online_passes_without_cooperative_launches() {
    let g = emulator_without_cooperative(8, Order::Random(3));
    let (mut r, seed) = rng("softmax refused");
    let (rows, cols) = (2, 200_000);
    assert_eq!(
        rust_simt::ops::softmax::auto_kernel(&g, rows, cols, true).unwrap(),
        SoftmaxKernel::Bulk
    );
    let x = long_rows(&mut r, rows, cols);
    let want = reference::softmax(&x, rows, cols);
    let xb = g.upload(&x).unwrap();
    let (_, launches) = g
        .profile(|| {
            Ok(run_checked(
                &g,
                SoftmaxKernel::Auto,
                &xb,
                rows,
                cols,
                &want,
                seed,
            ))
        })
        .unwrap();
    let names: Vec<_> = launches.iter().map(|l| l.kernel).collect();
    assert_eq!(
        names,
        ["softmax_online_partials", "softmax_online_finish"],
        "the online passes alone ran"
    );
    for k in [SoftmaxKernel::Stream, SoftmaxKernel::Bulk] {
        let mut out = poisoned(&g, rows * cols);
        let e = softmax_with(
            &g,
            k,
            xb.matrix(rows, cols).unwrap(),
            out.matrix_mut(rows, cols).unwrap(),
        )
        .unwrap_err();
        assert!(
            matches!(e, SimtError::CooperativeRefused { .. }),
            "{k:?}: {e}"
        );
    }
}

#[test]
fn auto_picks_among_the_long_row_kernels() {
    // On an 8-block emulator the bulk kernel takes rows of up to 8 x 7 chunks of 8192
    // and `Auto` gives it aligned rows of 65536 to 2^20 columns with a chunk per block
    // or more (measured ahead of the cluster and stream kernels there: H200,
    // 2026-11-26). The wide split kernel holds 8 chunks of 32768 at once (a row of
    // 262144) and takes inputs of at most two waves (16 chunks); such inputs of rows
    // not 16-byte aligned (three waves) go to the stream kernel (H200, 2026-11-24);
    // shorter rows stay on the cluster; past all of them, the online passes.
    let g = gpu_with_sms(8, Order::InOrder);
    if on_gpu(&g) {
        return;
    }
    if !has_clusters(&g) {
        return;
    }
    use rust_simt::ops::softmax::auto_kernel;
    assert_eq!(split_wide_max_cols(&g).unwrap(), 8 * 32768);
    assert_eq!(bulk_max_cols(&g).unwrap(), 8 * 7 * 8192);
    let big = CLUSTER_MAX_COLS; // 262144: 8 chunks of 32768
    use SoftmaxKernel::{Bulk, Cluster, Online, Stream};
    // (rows, cols, rows 16-byte aligned, the kernel Auto takes)
    for (rows, cols, aligned, want) in [
        (1, big, true, Bulk),
        (2, 200_000, true, Bulk),
        (3, big, true, Bulk),
        (64, 65536, true, Bulk),
        (1, big + 4, true, Bulk),
        // Shorter rows: the cluster.
        (64, 32768, true, Cluster),
        // Rows not 16-byte aligned, or not a multiple of 4 columns: the wide split
        // kernel would take them (up to 3 floats more), so the stream kernel.
        (2, 200_000, false, Stream),
        (2, 200_001, true, Stream),
        // Three rows of 7 chunks (21, three waves of 8) not 16-byte aligned: the stream
        // kernel (every other kernel reads them 4 bytes at a time).
        (3, 200_000, false, Stream),
        // Misaligned rows it cannot take (262144 + 3 columns): the cluster.
        (1, big, false, Cluster),
        // Past the bulk kernel's bound (and too short for the L2 rule): the online passes.
        (1, 8 * 7 * 8192 + 4, true, Online),
    ] {
        assert_eq!(
            auto_kernel(&g, rows, cols, aligned).unwrap(),
            want,
            "{rows} x {cols}, aligned {aligned}"
        );
    }
}
