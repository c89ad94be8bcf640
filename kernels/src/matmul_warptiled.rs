//! Matmul + ReLU, stage 4: warp tiling, deeper K steps, an interior fast path.
//!
//! Stage 3 ([`matmul_relu_tiled_db()`](crate::matmul_tiled_db::matmul_relu_tiled_db()))
//! lays its 16x16 threads out row-major over the block tile, so one warp is 2 rows
//! by 16 columns of threads. Per k each thread reads 2 A vectors and 2 B vectors of
//! 16 bytes from shared memory. Shared memory serves 128 bytes (32 banks x 4) per
//! pass, and lanes that read the same word share it (a broadcast). In stage 3 the A
//! loads see 2 distinct vectors (1 pass each), but the B loads see 16 distinct
//! vectors, 256 bytes: 2 passes each. That is **6 passes per 64 FMAs** of each thread.
//!
//! The FP32 units retire 4 warp FMAs per clock per SM, so 64 warp FMAs take 16
//! clocks, while the 6 passes take 6 clocks of the same SM's shared-memory pipe.
//! With 16 warps per SM sharing that pipe, the operand traffic is over a third of
//! the FMA time.
//!
//! **Warp tiling** gives each warp a compact 32x64 tile instead, lanes arranged 4
//! rows by 8 columns. Per k a warp then reads 4 distinct A vectors (64 bytes) and 8
//! distinct B vectors (128 bytes) per instruction: **4 passes per 64 FMAs**, the
//! minimum for 4 vector loads. `tests/device_library.rs` pins both counts (6 and 4).
//!
//! Two more changes against stage 3:
//! * K steps of `8 * L` (`L = 2`: 16): half the barriers and loop overhead per FMA.
//!   The next step's global loads are issued one 8-deep slice at a time, just before
//!   the current step's matching slice is computed, so only 8 floats per thread are
//!   in flight: that keeps the kernel at <= 128 registers (two blocks per SM).
//! * Blocks whose tile lies wholly inside A, B and C, with aligned rows, take an
//!   interior path with no bounds checks: unconditional 16-byte loads and stores.
//!   Edge blocks and ragged K keep the checked path, so any M, N, K still works.
use crate::config::{MM_BM, MM_BN, MM_THREADS, WARP_SIZE};
use crate::matmul_tiled::{TM, TN};
use crate::memory::{is_aligned16, load4, load4_first, store4, store4_first, F32x4};
use crate::shared::Smem;
use crate::swizzle;
use crate::thread::{block_idx, sync_threads, thread_idx};
use crate::{kernel, launch_bounds, shared_array, unroll};

/// Rows of C per warp.
pub const WARP_M: u32 = 32;
/// Columns of C per warp.
pub const WARP_N: u32 = 64;
/// Lanes across a warp tile's columns (so `32 / LANES_N = 4` lanes down its rows).
pub const LANES_N: u32 = 8;
const LANES_M: u32 = WARP_SIZE / LANES_N;
const WARPS_N: u32 = MM_BN / WARP_N;
const _: () = assert!(
    (MM_BM / WARP_M) * (MM_BN / WARP_N) * WARP_SIZE == MM_THREADS
        && WARP_M == 2 * 4 * LANES_M
        && WARP_N == 2 * 4 * LANES_N
        && TM == 8
        && TN == 8
);

/// Where thread `t` of a block sits in its block tile: the first of its two 4-row
/// groups (the second is `WARP_M / 2` = 16 rows lower) and the first of its two
/// 4-column groups (the second `WARP_N / 2` = 32 columns right).
#[inline(always)]
pub const fn warp_tile_origin(t: u32) -> (u32, u32) {
    let (warp, lane) = (t / WARP_SIZE, t % WARP_SIZE);
    let (wm, wn) = (warp / WARPS_N, warp % WARPS_N);
    let (ly, lx) = (lane / LANES_N, lane % LANES_N);
    (wm * WARP_M + 4 * ly, wn * WARP_N + 4 * lx)
}

/// One thread's view of the problem for `L` 8-deep slices per K step.
#[derive(Clone, Copy)]
pub(crate) struct WarpTiling<const L: usize> {
    pub(crate) a: *const f32,
    pub(crate) b: *const f32,
    pub(crate) m: u32,
    pub(crate) n: u32,
    pub(crate) k: u32,
    pub(crate) lda: u32,
    pub(crate) ldb: u32,
    pub(crate) row0: u32,
    pub(crate) col0: u32,
    /// The block tile lies inside A, B and C and all rows are 16-byte aligned.
    pub(crate) interior: bool,
    pub(crate) la_row: u32,
    pub(crate) la_k: u32,
    pub(crate) lb_k: u32,
    pub(crate) lb_col: u32,
    pub(crate) rm: u32,
    pub(crate) cn: u32,
    /// Row distance of the thread's second 4-row group.
    pub(crate) dm: u32,
    /// Column distance of the thread's second 4-column group.
    pub(crate) dn: u32,
}

impl<const L: usize> WarpTiling<L> {
    pub(crate) const BK: u32 = 8 * L as u32;
    /// Floats per shared stage of A (and of B).
    pub(crate) const STAGE: usize = 8 * L * MM_BM as usize;

    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, t: u32) -> Self {
        Self::with_layout(a, b, c, m, n, k, lda, ldb, ldc, t, true)
    }

    /// As [`new`](Self::new); `warp_tiles = false` gives stage 3's row-major thread
    /// layout instead (16x16 threads, groups 64 apart), for the ablation kernel.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn with_layout(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, t: u32, warp_tiles: bool) -> Self {
        let (row0, col0) = (block_idx().y * MM_BM, block_idx().x * MM_BN);
        let vec_a = is_aligned16(a) && lda % 4 == 0;
        let vec_b = is_aligned16(b) && ldb % 4 == 0;
        let vec_c = is_aligned16(c) && ldc % 4 == 0;
        let ((rm, cn), (dm, dn)) = if warp_tiles { (warp_tile_origin(t), (WARP_M / 2, WARP_N / 2)) } else { ((4 * (t / 16), 4 * (t % 16)), (64, 64)) };
        WarpTiling {
            a,
            b,
            m,
            n,
            k,
            lda,
            ldb,
            row0,
            col0,
            interior: vec_a && vec_b && vec_c && row0 + MM_BM <= m && col0 + MM_BN <= n,
            la_row: t / 2,
            la_k: 4 * (t % 2),
            lb_k: t / 32,
            lb_col: 4 * (t % 32),
            rm,
            cn,
            dm,
            dn,
        }
    }

    /// This thread's share of 8-deep slice `l` of the K step at `k0`: 4 values of A
    /// (row `la_row`, columns `k0 + 8l + la_k ..+4`) and 4 of B (row
    /// `k0 + 8l + lb_k`, columns `lb_col ..+4`); zeros outside the matrices.
    ///
    /// # Safety
    /// The kernel's contract (A and B readable as described).
    #[inline(always)]
    unsafe fn load(&self, k0: u32, l: u32) -> (F32x4, F32x4) {
        // One interior test for both operands: two separate tests (`load_a`, then
        // `load_b`) made ptxas emit two branchy regions, and the kernel went from
        // 3.37 to 3.84 ms at 4096^3 (H100, 2026-11-22).
        let (gr, gc) = (self.row0 + self.la_row, self.col0 + self.lb_col);
        let (ka, kb) = (k0 + 8 * l + self.la_k, k0 + 8 * l + self.lb_k);
        if self.interior && k0 + Self::BK <= self.k {
            // SAFETY: interior block and a whole K step: every index is in range, and
            // rows are 16-byte aligned.
            unsafe { (load4(self.a.add((gr * self.lda + ka) as usize)), load4(self.b.add((kb * self.ldb + gc) as usize))) }
        } else {
            // SAFETY: forwarded (the checked paths).
            unsafe { (self.load_a(k0, l), self.load_b(k0, l)) }
        }
    }

    /// The A half of [`load`](Self::load).
    ///
    /// # Safety
    /// As `load`.
    #[inline(always)]
    pub(crate) unsafe fn load_a(&self, k0: u32, l: u32) -> F32x4 {
        let gr = self.row0 + self.la_row;
        let ka = k0 + 8 * l + self.la_k;
        if self.interior && k0 + Self::BK <= self.k {
            // SAFETY: interior block and a whole K step: in range, rows 16-byte aligned.
            unsafe { load4(self.a.add((gr * self.lda + ka) as usize)) }
        } else if gr < self.m && ka < self.k {
            let vec_a = is_aligned16(self.a) && self.lda % 4 == 0;
            // SAFETY: row gr < m; columns ka.. of which min(4, k - ka) exist.
            unsafe { load4_first(self.a.add((gr * self.lda + ka) as usize), self.k - ka, vec_a) }
        } else {
            F32x4::default()
        }
    }

    /// The B half of [`load`](Self::load).
    ///
    /// # Safety
    /// As `load`.
    #[inline(always)]
    unsafe fn load_b(&self, k0: u32, l: u32) -> F32x4 {
        let gc = self.col0 + self.lb_col;
        let kb = k0 + 8 * l + self.lb_k;
        if self.interior && k0 + Self::BK <= self.k {
            // SAFETY: interior block and a whole K step: in range, rows 16-byte aligned.
            unsafe { load4(self.b.add((kb * self.ldb + gc) as usize)) }
        } else if kb < self.k && gc < self.n {
            let vec_b = is_aligned16(self.b) && self.ldb % 4 == 0;
            // SAFETY: row kb < k; columns gc.. of which min(4, n - gc) exist.
            unsafe { load4_first(self.b.add((kb * self.ldb + gc) as usize), self.n - gc, vec_b) }
        } else {
            F32x4::default()
        }
    }

    /// Stores a loaded slice `l` into one stage: A transposed and swizzled, B as is.
    ///
    /// # Safety
    /// `a_s` and `b_s` are stages of `STAGE` floats, 16-byte aligned, that no thread
    /// reads until a barrier.
    #[inline(always)]
    unsafe fn store(&self, a_s: Smem<f32>, b_s: Smem<f32>, l: u32, (av, bv): (F32x4, F32x4)) {
        // SAFETY: forwarded.
        unsafe {
            self.store_a(a_s, l, av);
            // Row 8l + lb_k < BK, lb_col + 4 <= 128, 16-aligned.
            b_s.add(((8 * l + self.lb_k) * MM_BN + self.lb_col) as usize).store4(bv);
        }
    }

    /// The A half of [`store`](Self::store).
    ///
    /// # Safety
    /// As `store`.
    #[inline(always)]
    pub(crate) unsafe fn store_a(&self, a_s: Smem<f32>, l: u32, av: F32x4) {
        // Slice l's rows start 8l rows into the stage. The swizzle depends on bit 2 of
        // the row only, which `8l + J` (J < 4) shares with `la_k` (0 or 4): one
        // swizzled column for all four stores.
        let a_l = a_s.add((8 * l * MM_BM) as usize);
        let col = swizzle::matmul_a(self.la_k, self.la_row);
        let a4 = av.to_array();
        unroll!(4, J => {
            // SAFETY: row 8l + la_k + J < BK, swizzled column < 128: inside the A stage.
            unsafe { a_l.add(((self.la_k + J as u32) * MM_BM + col) as usize).write(a4[J]) };
        });
    }

    /// The 8 rank-1 updates of slice `l` of one stage into the thread's 8x8
    /// accumulators: per k, 4 shared loads of 16 bytes and 64 FMAs.
    ///
    /// # Safety
    /// The stage holds a fully stored K step (a barrier separates the stores from this).
    #[inline(always)]
    pub(crate) unsafe fn compute(&self, a_s: Smem<f32>, b_s: Smem<f32>, l: u32, acc: &mut [[f32; TN]; TM]) {
        // SAFETY: forwarded.
        unsafe { self.compute_range::<0, 8>(a_s, b_s, l, acc) }
    }

    /// [`compute`](Self::compute) for the k rows `FROM..TO` of the slice only.
    ///
    /// # Safety
    /// As `compute`.
    #[inline(always)]
    pub(crate) unsafe fn compute_range<const FROM: usize, const TO: usize>(&self, a_s: Smem<f32>, b_s: Smem<f32>, l: u32, acc: &mut [[f32; TN]; TM]) {
        // Slice l's rows start 8l rows into the stage; the swizzle depends on k % 8
        // only, so every offset below is a constant plus `rm` or `cn`.
        let (a_l, b_l) = (a_s.add((8 * l * MM_BM) as usize), b_s.add((8 * l * MM_BN) as usize));
        {
            unroll!(8, KK => {
              if KK >= FROM && KK < TO {
                let kk = KK as u32;
                // SAFETY: offsets inside the stage; the swizzle flips bit 4 only, so
                // 4-aligned groups stay contiguous and 16-byte aligned.
                let (a_lo, a_hi, b_lo, b_hi) = unsafe {
                    (
                        a_l.add((kk * MM_BM + swizzle::matmul_a(kk, self.rm)) as usize).load4(),
                        a_l.add((kk * MM_BM + swizzle::matmul_a(kk, self.rm + self.dm)) as usize).load4(),
                        b_l.add((kk * MM_BN + self.cn) as usize).load4(),
                        b_l.add((kk * MM_BN + self.cn + self.dn) as usize).load4(),
                    )
                };
                let af = [a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w];
                let bf = [b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w];
                unroll!(8, I => {
                    unroll!(8, J => {
                        acc[I][J] = crate::math::fma(af[I], bf[J], acc[I][J]);
                    });
                });
              }
            });
        }
    }

    /// Epilogue: optional ReLU, then the 8x8 tile to C (unchecked 16-byte stores in
    /// interior blocks, checked ones at the edges).
    ///
    /// # Safety
    /// The kernel's contract (C writable as described).
    #[inline(always)]
    pub(crate) unsafe fn write(&self, c: *mut f32, ldc: u32, relu: u32, acc: &[[f32; TN]; TM]) {
        let vec_c = is_aligned16(c) && ldc % 4 == 0;
        unroll!(8, I => {
            let r = self.row0 + self.rm + (I as u32 % 4) + if I < 4 { 0 } else { self.dm };
            unroll!(2, H => {
                let c0 = self.col0 + self.cn + H as u32 * self.dn;
                let mut v = F32x4 { x: acc[I][4 * H], y: acc[I][4 * H + 1], z: acc[I][4 * H + 2], w: acc[I][4 * H + 3] };
                if relu != 0 {
                    v = v.map(|x| if x > 0.0 { x } else { 0.0 });
                }
                let p = c.wrapping_add((r * ldc + c0) as usize);
                if self.interior {
                    // SAFETY: interior block: (r, c0..c0+4) inside C, row aligned.
                    unsafe { store4(p, v) };
                } else if r < self.m {
                    // SAFETY: r < m; of the columns c0.., those below n are written.
                    unsafe { store4_first(p, v, self.n.saturating_sub(c0), vec_c) };
                }
            });
        });
    }
}

/// The stage-4 kernel body for `L` 8-deep slices per K step, over two shared stages
/// per operand (`a_s`, `b_s`: `2 * 8L * 128` floats each).
///
/// # Safety
/// The kernel's contract; `a_s`, `b_s` are the calling kernel's own shared arrays.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn warptiled<const L: usize, const WARP_TILES: bool>(
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
    lda: u32,
    ldb: u32,
    ldc: u32,
    relu: u32,
    a_s: Smem<f32>,
    b_s: Smem<f32>,
) {
    let stage = WarpTiling::<L>::STAGE;
    let tl = WarpTiling::<L>::with_layout(a, b, c, m, n, k, lda, ldb, ldc, thread_idx().x, WARP_TILES);
    let mut acc = [[0.0f32; TN]; TM];
    let steps = k.div_ceil(WarpTiling::<L>::BK);
    // SAFETY (all blocks below): kernel contract; stage offsets stay inside the
    // caller's shared arrays.
    for l in 0..L as u32 {
        unsafe { tl.store(a_s, b_s, l, tl.load(0, l)) };
    }
    sync_threads();
    let mut s = 0u32;
    while s < steps {
        let cur = (s as usize % 2) * stage;
        let nxt = stage - cur;
        // Per slice: issue the next step's loads for it (registers), compute this
        // step's slice from shared memory while they fly, then store them into the
        // other stage. Its last readers finished step s-1, before the barrier that
        // ended it. Loading one slice at a time holds 8 floats in flight, not 8L.
        // The last step "loads" step `steps`, past K: zeros, stored where no one
        // reads them; cheaper than a branch that doubles the loop's code.
        unroll!(2, LI => {
            if LI < L {
                let l = LI as u32;
                let next = unsafe { tl.load((s + 1) * WarpTiling::<L>::BK, l) };
                unsafe { tl.compute(a_s.add(cur), b_s.add(cur), l, &mut acc) };
                unsafe { tl.store(a_s.add(nxt), b_s.add(nxt), l, next) };
            }
        });
        sync_threads();
        s += 1;
    }
    unsafe { tl.write(c, ldc, relu, &acc) };
}

launch_bounds!(matmul_relu_warptiled, MM_THREADS, 2);
launch_bounds!(matmul_relu_warptiled_k8, MM_THREADS, 2);
launch_bounds!(matmul_relu_warptiled_k8_rowmajor, MM_THREADS, 2);

kernel! {
    /// `C = relu?(A · B)`, warp-tiled, K steps of 16, double-buffered. Same formula,
    /// contract and parameters as
    /// [`matmul_relu_tiled()`](crate::matmul_tiled::matmul_relu_tiled()).
    ///
    /// # Safety
    /// As `matmul_relu_tiled`.
    ///
    /// # Tiling
    /// Block tile 128x128 of C, K steps of 16, two shared stages of `As[16][128]`
    /// (transposed, swizzled) and `Bs[16][128]` (32 KiB). Warp tile 32x64 (8 warps:
    /// 4 down, 2 across); thread tile 8x8 as 2x2 groups of 4x4, 16 rows and 32
    /// columns apart.
    ///
    /// # Thread Mapping
    /// `grid = (ceil(n/128), ceil(m/128))`, 256 threads. Loading: thread `t` loads A
    /// row `t/2`, columns `4(t%2) + {0, 8}..+4`, and B rows `t/32 + {0, 8}`, columns
    /// `4(t%32)..+4`. Computing: warp `w = t/32` owns rows `32(w/2)..+32` and columns
    /// `64(w%2)..+64`; its lane `(ly, lx) = (l/8, l%8)` owns rows `4ly..+4, 16+4ly..+4`
    /// and columns `4lx..+4, 32+4lx..+4` of the warp tile.
    pub unsafe fn matmul_relu_warptiled(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, relu: u32) {
        let a_s = shared_array!(MM_WT_A, f32, 2 * WarpTiling::<2>::STAGE);
        let b_s = shared_array!(MM_WT_B, f32, 2 * WarpTiling::<2>::STAGE);
        // SAFETY: kernel contract; the arrays are this kernel's own.
        unsafe { warptiled::<2, true>(a, b, c, m, n, k, lda, ldb, ldc, relu, a_s, b_s) };
    }
}

kernel! {
    /// [`matmul_relu_warptiled()`] with K steps of 8 (16 KiB of shared memory).
    ///
    /// # Safety
    /// As `matmul_relu_tiled`.
    pub unsafe fn matmul_relu_warptiled_k8(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, relu: u32) {
        let a_s = shared_array!(MM_WT8_A, f32, 2 * WarpTiling::<1>::STAGE);
        let b_s = shared_array!(MM_WT8_B, f32, 2 * WarpTiling::<1>::STAGE);
        // SAFETY: kernel contract; the arrays are this kernel's own.
        unsafe { warptiled::<1, true>(a, b, c, m, n, k, lda, ldb, ldc, relu, a_s, b_s) };
    }
}

kernel! {
    /// Ablation: [`matmul_relu_warptiled_k8()`] with stage 3's row-major thread layout
    /// (16x16 threads, groups 64 apart) instead of warp tiles.
    ///
    /// # Safety
    /// As `matmul_relu_tiled`.
    pub unsafe fn matmul_relu_warptiled_k8_rowmajor(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, relu: u32) {
        let a_s = shared_array!(MM_WT8R_A, f32, 2 * WarpTiling::<1>::STAGE);
        let b_s = shared_array!(MM_WT8R_B, f32, 2 * WarpTiling::<1>::STAGE);
        // SAFETY: kernel contract; the arrays are this kernel's own.
        unsafe { warptiled::<1, false>(a, b, c, m, n, k, lda, ldb, ldc, relu, a_s, b_s) };
    }
}
