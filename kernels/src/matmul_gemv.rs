//! Matmul + ReLU when one side is a vector: `1 x k · k x n` (a row times a matrix,
//! as in decoding one token) and `m x k · k x 1` (a matrix times a column).
//!
//! A product with `m = 1` does 2 FLOPs per element of B it reads: it is bound by
//! memory, not by FMAs, and the block-tiled kernels waste it. They stage B in shared
//! memory for reuse that never comes, and a 128-row block tile computes 127 rows of
//! padding. The floor is reading the matrix once: 256 MiB for 8192 x 8192 floats,
//! 89 us at the H100's 3.0 TB/s copy bandwidth.
//!
//! * [`matmul_gemv_row()`]: each lane owns 4 adjacent columns of C and walks down
//!   B's rows; a warp reads 512 contiguous bytes of a row per load, the 8 warps of a
//!   block take every 8th row, and each lane keeps 4 rows' loads in flight. The
//!   block's 8 partial sums meet in shared memory. Only 64 blocks cover 8192
//!   columns, so the grid's `y` dimension splits K as well ([`MatmulSplitParams`]).
//! * [`matmul_gemv_col()`]: a warp per row of A, each lane 16-byte loads 128 floats
//!   apart, then a butterfly sum over the warp. 8192 rows are 1024 blocks: no split
//!   needed, except when rows are few.
//!
//! Every sum runs in a fixed order (per lane, then the fixed shared-memory or
//! butterfly tree), so results are bit-identical run to run.
use crate::config::{
    GEMV_COL_ROWS, GEMV_COL_THREADS, GEMV_ROW_COLS, GEMV_ROW_KGROUPS, GEMV_ROW_THREADS, WARP_SIZE,
};
use crate::params::MatmulSplitParams;
use simt_std::memory::{is_aligned16, load4, load4_first, store4_first, F32x4};
use simt_std::thread::{block_idx, sync_threads, thread_idx};
use simt_std::warp::warp_sum;
use simt_std::{kernel, shared_array};

/// `acc + x·v`, lane by lane.
#[inline(always)]
fn axpy4(acc: F32x4, x: f32, v: F32x4) -> F32x4 {
    use simt_std::math::fma;
    F32x4 {
        x: fma(x, v.x, acc.x),
        y: fma(x, v.y, acc.y),
        z: fma(x, v.z, acc.z),
        w: fma(x, v.w, acc.w),
    }
}

/// The end of slice `z` of `k` in slices of `chunk`.
#[inline(always)]
fn slice(k: u32, chunk: u32, z: u32) -> (u32, u32) {
    let begin = z * chunk;
    (begin, if k - begin > chunk { begin + chunk } else { k })
}

kernel! {
    /// `c = relu?(a · B)` for one row `a` (`1 x k`) and `B: k x n` (or one K slice's
    /// raw sums, see [`MatmulSplitParams`]).
    ///
    /// # Safety
    /// `p.mm` describes readable `A: 1 x k`, `B: k x n` and writable `C: 1 x n` with
    /// their strides, C not overlapping A or B, offsets below 2^32; `p.k_chunk` a
    /// positive multiple of 8 with `grid.y · k_chunk >= k > (grid.y - 1) · k_chunk`;
    /// with `grid.y > 1`, `p.partials` holds `grid.y · n` writable floats (else null).
    ///
    /// # Thread Mapping
    /// `grid = (ceil(n/128), slices)`, 256 threads as 8 groups of 32 lanes. Lane `l`
    /// of group `g` owns columns `128·blockIdx.x + 4l ..+4` and rows `g, g+8, …` of
    /// its slice; group 0 adds the 8 groups' sums in order and writes.
    #[launch(threads = GEMV_ROW_THREADS)]
    pub unsafe fn matmul_gemv_row(p: MatmulSplitParams) {
        const G: u32 = GEMV_ROW_KGROUPS;
        let (a, b, c, _m, n, k, _lda, ldb, _ldc, relu) = p.mm.unpack();
        let t = thread_idx().x;
        let (lane, grp) = (t % WARP_SIZE, t / WARP_SIZE);
        let col = block_idx().x * GEMV_ROW_COLS + 4 * lane;
        let z = block_idx().y;
        let (k_begin, k_end) = slice(k, p.k_chunk, z);
        let red = shared_array!(GEMV_ROW_RED, f32, (GEMV_ROW_KGROUPS * GEMV_ROW_COLS) as usize);
        let mut acc = F32x4::default();
        if col < n {
            let mut kk = k_begin + grp;
            if is_aligned16(b) && ldb % 4 == 0 && col + 4 <= n {
                // Four rows' loads issue before any FMA waits on them.
                while kk + 3 * G < k_end {
                    // SAFETY: rows kk .. kk + 3G < k, columns col..col+4 <= n, rows
                    // 16-byte aligned; a[kk ..] < k.
                    let (v0, v1, v2, v3, x0, x1, x2, x3) = unsafe {
                        (
                            load4(b.add((kk * ldb + col) as usize)),
                            load4(b.add(((kk + G) * ldb + col) as usize)),
                            load4(b.add(((kk + 2 * G) * ldb + col) as usize)),
                            load4(b.add(((kk + 3 * G) * ldb + col) as usize)),
                            *a.add(kk as usize),
                            *a.add((kk + G) as usize),
                            *a.add((kk + 2 * G) as usize),
                            *a.add((kk + 3 * G) as usize),
                        )
                    };
                    acc = axpy4(axpy4(axpy4(axpy4(acc, x0, v0), x1, v1), x2, v2), x3, v3);
                    kk += 4 * G;
                }
                while kk < k_end {
                    // SAFETY: as above, one row.
                    let (v, x) = unsafe { (load4(b.add((kk * ldb + col) as usize)), *a.add(kk as usize)) };
                    acc = axpy4(acc, x, v);
                    kk += G;
                }
            } else {
                while kk < k_end {
                    // SAFETY: row kk < k; of the columns col.., min(4, n - col) are read.
                    let (v, x) = unsafe {
                        (load4_first(b.add((kk * ldb + col) as usize), n - col, false), *a.add(kk as usize))
                    };
                    acc = axpy4(acc, x, v);
                    kk += G;
                }
            }
        }
        // SAFETY: group grp's 128 columns of the 8 x 128 scratch; read after the barrier.
        unsafe { red.add((grp * GEMV_ROW_COLS + 4 * lane) as usize).store4(acc) };
        sync_threads();
        if grp == 0 && col < n {
            let mut s = acc;
            for g in 1..G {
                // SAFETY: inside the scratch, written before the barrier.
                let v = unsafe { red.add((g * GEMV_ROW_COLS + 4 * lane) as usize).load4() };
                s = F32x4 { x: s.x + v.x, y: s.y + v.y, z: s.z + v.z, w: s.w + v.w };
            }
            let (out, relu) = if p.partials.is_null() { (c, relu) } else { (p.partials.wrapping_add((z * n) as usize), 0) };
            if relu != 0 {
                s = s.map(|x| if x > 0.0 { x } else { 0.0 });
            }
            // SAFETY: C's row 0 (or slice z of the partials) has n columns; those of
            // col.. below n are written.
            unsafe { store4_first(out.add(col as usize), s, n - col, is_aligned16(out)) };
        }
    }
}

kernel! {
    /// `c = relu?(A · b)` for `A: m x k` and one column `b` (`B: k x 1`, its elements
    /// `ldb` apart), or one K slice's raw sums (see [`MatmulSplitParams`]).
    ///
    /// # Safety
    /// `p.mm` describes readable `A: m x k`, `B: k x 1` and writable `C: m x 1` with
    /// their strides, C not overlapping A or B, offsets below 2^32; `p.k_chunk` a
    /// positive multiple of 8 with `grid.y · k_chunk >= k > (grid.y - 1) · k_chunk`;
    /// with `grid.y > 1`, `p.partials` holds `grid.y · m` writable floats (else null).
    ///
    /// # Thread Mapping
    /// `grid = (ceil(m/8), slices)`, 256 threads: warp `w` owns row `8·blockIdx.x + w`;
    /// lane `l` reads columns `4l + 128j ..+4` of the row's slice.
    #[launch(threads = GEMV_COL_THREADS)]
    pub unsafe fn matmul_gemv_col(p: MatmulSplitParams) {
        let (a, b, c, m, _n, k, lda, ldb, ldc, relu) = p.mm.unpack();
        let t = thread_idx().x;
        let (lane, warp) = (t % WARP_SIZE, t / WARP_SIZE);
        let row = block_idx().x * GEMV_COL_ROWS + warp;
        // The row is the warp's: a warp leaves whole, so the butterfly below is full.
        if row >= m {
            return;
        }
        let z = block_idx().y;
        let (k_begin, k_end) = slice(k, p.k_chunk, z);
        let arow = a.wrapping_add((row * lda) as usize);
        let b_unit = ldb == 1 && is_aligned16(b);
        // B's elements k..k+4 as a vector.
        // SAFETY (callers): k + 4 <= k_end <= k.
        let bvec = |kk: u32| -> F32x4 {
            if b_unit {
                // SAFETY: see above; b 16-byte aligned and kk a multiple of 4.
                unsafe { load4(b.add(kk as usize)) }
            } else {
                // SAFETY: see above.
                unsafe {
                    F32x4 {
                        x: *b.add((kk * ldb) as usize),
                        y: *b.add(((kk + 1) * ldb) as usize),
                        z: *b.add(((kk + 2) * ldb) as usize),
                        w: *b.add(((kk + 3) * ldb) as usize),
                    }
                }
            }
        };
        let dot = |acc: F32x4, x: F32x4, y: F32x4| {
            use simt_std::math::fma;
            F32x4 { x: fma(x.x, y.x, acc.x), y: fma(x.y, y.y, acc.y), z: fma(x.z, y.z, acc.z), w: fma(x.w, y.w, acc.w) }
        };
        let mut acc = F32x4::default();
        let mut tail = 0.0f32;
        if is_aligned16(a) && lda % 4 == 0 {
            const STEP: u32 = 4 * WARP_SIZE;
            let mut kk = k_begin + 4 * lane;
            while kk + 3 * STEP + 4 <= k_end {
                // SAFETY: columns kk .. kk + 3·STEP + 4 <= k_end of row `row`, aligned
                // (k_begin is a multiple of 8).
                let (x0, x1, x2, x3) = unsafe {
                    (
                        load4(arow.add(kk as usize)),
                        load4(arow.add((kk + STEP) as usize)),
                        load4(arow.add((kk + 2 * STEP) as usize)),
                        load4(arow.add((kk + 3 * STEP) as usize)),
                    )
                };
                let (y0, y1, y2, y3) = (bvec(kk), bvec(kk + STEP), bvec(kk + 2 * STEP), bvec(kk + 3 * STEP));
                acc = dot(dot(dot(dot(acc, x0, y0), x1, y1), x2, y2), x3, y3);
                kk += 4 * STEP;
            }
            while kk + 4 <= k_end {
                // SAFETY: as above, one vector.
                let x = unsafe { load4(arow.add(kk as usize)) };
                acc = dot(acc, x, bvec(kk));
                kk += STEP;
            }
            // The last 1-3 columns, in the lane that reached them.
            while kk < k_end {
                // SAFETY: kk < k_end <= k.
                tail = simt_std::math::fma(unsafe { *arow.add(kk as usize) }, unsafe { *b.add((kk * ldb) as usize) }, tail);
                kk += 1;
            }
        } else {
            let mut kk = k_begin + lane;
            while kk < k_end {
                // SAFETY: kk < k_end <= k.
                tail = simt_std::math::fma(unsafe { *arow.add(kk as usize) }, unsafe { *b.add((kk * ldb) as usize) }, tail);
                kk += WARP_SIZE;
            }
        }
        let s = warp_sum(((acc.x + acc.y) + (acc.z + acc.w)) + tail);
        if lane == 0 {
            if p.partials.is_null() {
                let v = if relu != 0 && !(s > 0.0) { 0.0 } else { s };
                // SAFETY: row < m of C.
                unsafe { *c.add((row * ldc) as usize) = v };
            } else {
                // SAFETY: slice z's m floats.
                unsafe { *p.partials.add((z * m + row) as usize) = s };
            }
        }
    }
}
