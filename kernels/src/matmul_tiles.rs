//! Matmul + ReLU, stage 4b: stage 4's warp tiling with the tile as a parameter, and
//! split K. The autotuner's FP32 kernels.
//!
//! Stage 4 ([`matmul_relu_warptiled()`](crate::matmul_warptiled::matmul_relu_warptiled()))
//! has one shape: 128x128 block tiles of 256 threads. On a 132-SM H100 that is only
//! 16 blocks at 512^3 and 4 at 256^3, so most SMs idle and the rest wait out the
//! latency of a long K loop with one or two warps each. Two knobs fix it:
//!
//! * **smaller block tiles** ([`MM_TILES`]: 128x64 down to 32x32): a 1024^3 product
//!   has 64 tiles of 128x128 but 256 of 64x64. Smaller tiles reuse each value loaded
//!   from global memory fewer times (`bm·bn / (bm + bn)` FMAs per float: 16 for
//!   32x32, 64 for 128x128), so they only win where parallelism is short;
//! * **split K**: the grid's `z` dimension cuts K into slices, each block sums its
//!   slice into a dense partial tile, and [`matmul_splitk_reduce()`] adds the slices
//!   in a fixed order and applies the epilogue. 64x4096x4096 has 64 tiles of 64x64;
//!   with 4 slices it has 256 blocks of 1024 K steps each.
//!
//! Split K adds the slices in a second kernel rather than with float atomics: atomic
//! adds land in whatever order the blocks finish, and float addition is not
//! associative, so the same call could round differently run to run. Here the sum
//! over slices is always `((s0 + s1) + s2) + …`, bit-identical every run, at the cost
//! of writing and reading `splits · m · n` floats and one more launch.
//!
//! The thread tile generalises stage 4's: a warp's lanes sit 4 down by 8 across its
//! `wm x wn` warp tile, and a thread owns `wm/4 x wn/8` outputs as groups of 4x4 that
//! lie `16` rows and `32` columns apart, so every shared-memory load is a 16-byte
//! vector of 4 adjacent values and a warp's loads touch few distinct bytes (see stage
//! 4's docs for why that is the gain). The tile is a const generic; the instances
//! are `kernel!`s of their own (`matmul_relu_tile_{bm}x{bn}`), each with launch
//! bounds for its register budget, built from [`MM_TILES`], the one list the host
//! and the tuner read.
#![cfg_attr(
    all(target_arch = "nvptx64", simt_target = "sm_90a"),
    allow(dead_code, unused_imports)
)]
use crate::config::{MmTile, MM_BK, MM_TILES, SPLITK_REDUCE_THREADS, WARP_SIZE};
use crate::params::{MatmulParams, MatmulSplitParams, SplitReduceParams};
use simt_std::memory::{is_aligned16, load4, load4_first, store4, store4_first, F32x4};
use simt_std::shared::{dynamic_shared, Smem};
use simt_std::swizzle;
use simt_std::thread::{block_dim, block_idx, sync_threads, thread_idx};
use simt_std::{kernel, unroll};

/// Lanes down a warp tile.
const LANES_M: u32 = 4;
/// Lanes across a warp tile.
const LANES_N: u32 = 8;

/// One thread's view of a block: operands, the block's origin and K slice, where
/// the thread's outputs lie.
#[derive(Clone, Copy)]
struct Tiles<const BM: u32, const BN: u32, const WM: u32, const WN: u32> {
    a: *const f32,
    b: *const f32,
    m: u32,
    n: u32,
    lda: u32,
    ldb: u32,
    row0: u32,
    col0: u32,
    /// End of this block's K slice (exclusive).
    k_end: u32,
    /// The block tile lies inside A, B and the output, and all rows are 16-byte
    /// aligned: no checks on loads or stores.
    interior: bool,
    t: u32,
    /// The thread's first output row and column in the block tile.
    rm: u32,
    cn: u32,
}

impl<const BM: u32, const BN: u32, const WM: u32, const WN: u32> Tiles<BM, BN, WM, WN> {
    const THREADS: u32 = (BM / WM) * (BN / WN) * WARP_SIZE;
    /// 16-byte vectors per row of an A step (`MM_BK / 4`).
    const A_VECS_PER_ROW: u32 = MM_BK / 4;
    /// 16-byte vectors per row of a B step.
    const B_VECS_PER_ROW: u32 = BN / 4;
    /// Floats of one stage of A and of B.
    const A_STAGE: u32 = MM_BK * BM;
    const B_STAGE: u32 = MM_BK * BN;

    /// This thread's share of the K step at `k0`: `LA` vectors of A (row `v / 2`,
    /// columns `k0 + 4(v % 2) ..+4` for `v = t, t + THREADS, …`) and `LB` of B (row
    /// `k0 + v / (BN/4)`, columns `4(v % (BN/4)) ..+4`); zeros outside the matrices
    /// and past the slice.
    ///
    /// # Safety
    /// The kernel's contract (A and B readable as described).
    #[inline(always)]
    unsafe fn load<const LA: usize, const LB: usize>(&self, k0: u32) -> ([F32x4; LA], [F32x4; LB]) {
        let mut av = [F32x4::default(); LA];
        let mut bv = [F32x4::default(); LB];
        if self.interior && k0 + MM_BK <= self.k_end {
            for (i, v) in av.iter_mut().enumerate() {
                let e = self.t + i as u32 * Self::THREADS;
                let (r, kq) = (e / Self::A_VECS_PER_ROW, 4 * (e % Self::A_VECS_PER_ROW));
                // SAFETY: interior block, whole K step: row0 + r < m, k0 + kq + 4 <=
                // k_end <= k; rows 16-byte aligned.
                *v = unsafe { load4(self.a.add(((self.row0 + r) * self.lda + k0 + kq) as usize)) };
            }
            for (i, v) in bv.iter_mut().enumerate() {
                let e = self.t + i as u32 * Self::THREADS;
                let (kr, c) = (e / Self::B_VECS_PER_ROW, 4 * (e % Self::B_VECS_PER_ROW));
                // SAFETY: as above, k0 + kr < k_end and col0 + c + 4 <= n.
                *v = unsafe { load4(self.b.add(((k0 + kr) * self.ldb + self.col0 + c) as usize)) };
            }
        } else {
            for (i, v) in av.iter_mut().enumerate() {
                let e = self.t + i as u32 * Self::THREADS;
                let (r, ka) = (
                    self.row0 + e / Self::A_VECS_PER_ROW,
                    k0 + 4 * (e % Self::A_VECS_PER_ROW),
                );
                if r < self.m && ka < self.k_end {
                    // SAFETY: row r < m; columns ka.. of which min(4, k_end - ka) are
                    // read, all < k.
                    *v = unsafe {
                        load4_first(
                            self.a.add((r * self.lda + ka) as usize),
                            self.k_end - ka,
                            is_aligned16(self.a) && self.lda % 4 == 0,
                        )
                    };
                }
            }
            for (i, v) in bv.iter_mut().enumerate() {
                let e = self.t + i as u32 * Self::THREADS;
                let (kr, c) = (
                    k0 + e / Self::B_VECS_PER_ROW,
                    self.col0 + 4 * (e % Self::B_VECS_PER_ROW),
                );
                if kr < self.k_end && c < self.n {
                    // SAFETY: row kr < k; columns c.. of which min(4, n - c) are read.
                    *v = unsafe {
                        load4_first(
                            self.b.add((kr * self.ldb + c) as usize),
                            self.n - c,
                            is_aligned16(self.b) && self.ldb % 4 == 0,
                        )
                    };
                }
            }
        }
        (av, bv)
    }

    /// Stores a loaded share into one stage: A transposed and swizzled
    /// (`As[k][m]`), B as is (`Bs[k][n]`).
    ///
    /// # Safety
    /// `a_s` and `b_s` are stages of `A_STAGE` and `B_STAGE` floats, 16-byte aligned,
    /// that no thread reads until a barrier.
    #[inline(always)]
    unsafe fn store<const LA: usize, const LB: usize>(
        &self,
        a_s: Smem<f32>,
        b_s: Smem<f32>,
        (av, bv): ([F32x4; LA], [F32x4; LB]),
    ) {
        for (i, v) in av.iter().enumerate() {
            let e = self.t + i as u32 * Self::THREADS;
            let (r, kq) = (e / Self::A_VECS_PER_ROW, 4 * (e % Self::A_VECS_PER_ROW));
            // Rows kq..kq+4 share bit 2 (kq is 0 or 4): one swizzled column for all 4.
            let col = swizzle::matmul_a(kq, r);
            let a4 = v.to_array();
            unroll!(4, J => {
                // SAFETY: row kq + J < 8, swizzled column < BM (BM % 32 == 0).
                unsafe { a_s.add(((kq + J as u32) * BM + col) as usize).write(a4[J]) };
            });
        }
        for (i, v) in bv.iter().enumerate() {
            let e = self.t + i as u32 * Self::THREADS;
            let (kr, c) = (e / Self::B_VECS_PER_ROW, 4 * (e % Self::B_VECS_PER_ROW));
            // SAFETY: row kr < 8, c + 4 <= BN, 16-byte aligned.
            unsafe { b_s.add((kr * BN + c) as usize).store4(*v) };
        }
    }

    /// The `MM_BK` rank-1 updates of one stage into the thread's `TM x TN`
    /// accumulators: per k, `TM/4 + TN/4` shared loads of 16 bytes and `TM·TN` FMAs.
    ///
    /// # Safety
    /// The stage holds a fully stored K step (a barrier separates the stores from this).
    #[inline(always)]
    unsafe fn compute<const TM: usize, const TN: usize>(
        &self,
        a_s: Smem<f32>,
        b_s: Smem<f32>,
        acc: &mut [[f32; TN]; TM],
    ) {
        const { assert!((TM == 4 || TM == 8) && (TN == 4 || TN == 8)) };
        unroll!(8, KK => {
            let kk = KK as u32;
            // The thread's (at most) two 4-row groups of A and two 4-column groups of
            // B, as stage 4 loads them.
            let (r0, r1) = (self.rm, self.rm + 4 * LANES_M);
            let (c0, c1) = (self.cn, self.cn + 4 * LANES_N);
            // SAFETY: inside the stage; the swizzle flips bit 4 only, so 4-aligned
            // groups stay contiguous and 16-byte aligned. The second groups exist when
            // the thread tile has 8 rows (columns).
            let (a_lo, a_hi, b_lo, b_hi) = unsafe {
                (
                    a_s.add((kk * BM + swizzle::matmul_a(kk, r0)) as usize).load4(),
                    if TM == 8 { a_s.add((kk * BM + swizzle::matmul_a(kk, r1)) as usize).load4() } else { F32x4::default() },
                    b_s.add((kk * BN + c0) as usize).load4(),
                    if TN == 8 { b_s.add((kk * BN + c1) as usize).load4() } else { F32x4::default() },
                )
            };
            let mut af = [0.0f32; TM];
            let mut bf = [0.0f32; TN];
            for (i, v) in [a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w].into_iter().take(TM).enumerate() {
                af[i] = v;
            }
            for (j, v) in [b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w].into_iter().take(TN).enumerate() {
                bf[j] = v;
            }
            for i in 0..TM {
                for j in 0..TN {
                    acc[i][j] = simt_std::math::fma(af[i], bf[j], acc[i][j]);
                }
            }
            // Keeps the next step's shared loads below these FMAs (emits no code).
            // Without it LLVM hoisted 18 of a stage's 32 loads to its top in the 8x8
            // thread tile, and ptxas needed 181 registers (sm_90) where stage 4, the
            // same arithmetic, needs 128.
            simt_std::memory::compiler_barrier();
        });
    }
}

/// Where one block computes: its tile's origin in C and its K slice. `k_begin` is a
/// multiple of 4 (of the 8-aligned `k_chunk`), or `k` for an empty slice: the 16-byte
/// copies of A's rows rely on it.
#[derive(Clone, Copy)]
pub(crate) struct Place {
    pub row0: u32,
    pub col0: u32,
    pub k_begin: u32,
    /// End of the K slice (exclusive, at most `k`; `k_begin` when the slice is empty).
    pub k_end: u32,
}

/// A thread's sums after the K loop, and where they lie in the block tile: groups
/// of 4x4 from `(rm, cn)`, the others `16` rows and `32` columns apart.
pub(crate) struct Sums<const TM: usize, const TN: usize> {
    pub acc: [[f32; TN]; TM],
    pub rm: u32,
    pub cn: u32,
}

/// The K loop of every `matmul_relu_tile_*` kernel, and of their cluster variants:
/// block tile `BM x BN`, warp tile `WM x WN`, thread tile `TM x TN = WM/4 x WN/8`,
/// `LA` and `LB` 16-byte loads of A and B per thread and K step. `vec_o`: the
/// output's rows are 16-byte aligned (with an interior tile, no checks anywhere).
///
/// # Safety
/// The kernel's contract (see [`matmul_relu_tile_64x64()`]); `place` inside it,
/// `place.k_end <= k`; `MmTile::smem_bytes` of dynamic shared memory.
#[inline(always)]
pub(crate) unsafe fn tile_main<
    const BM: u32,
    const BN: u32,
    const WM: u32,
    const WN: u32,
    const TM: usize,
    const TN: usize,
    const LA: usize,
    const LB: usize,
>(
    mm: &MatmulParams,
    place: Place,
    vec_o: bool,
) -> (Sums<TM, TN>, bool) {
    const {
        let t = MmTile::new(BM, BN, WM, WN, 1);
        assert!(t.is_valid());
        assert!(t.tm() as usize == TM && t.tn() as usize == TN);
        assert!(t.a_loads() as usize == LA && t.b_loads() as usize == LB);
    };
    let (a, b, _, m, n, _, lda, ldb, _, _) = mm.unpack();
    let t = thread_idx().x;
    let Place {
        row0,
        col0,
        k_begin,
        k_end,
    } = place;
    let vec_a = is_aligned16(a) && lda % 4 == 0;
    let vec_b = is_aligned16(b) && ldb % 4 == 0;
    let (warp, lane) = (t / WARP_SIZE, t % WARP_SIZE);
    let (wm, wn) = (warp / (BN / WN), warp % (BN / WN));
    let tl = Tiles::<BM, BN, WM, WN> {
        a,
        b,
        m,
        n,
        lda,
        ldb,
        row0,
        col0,
        k_end,
        interior: vec_a && vec_b && vec_o && row0 + BM <= m && col0 + BN <= n,
        t,
        rm: wm * WM + 4 * (lane / LANES_N),
        cn: wn * WN + 4 * (lane % LANES_N),
    };
    let smem = dynamic_shared::<f32>();
    let stage = (Tiles::<BM, BN, WM, WN>::A_STAGE + Tiles::<BM, BN, WM, WN>::B_STAGE) as usize;
    let a_stage = Tiles::<BM, BN, WM, WN>::A_STAGE as usize;
    let mut acc = [[0.0f32; TN]; TM];
    let steps = (k_end - k_begin).div_ceil(MM_BK);
    // SAFETY (all blocks below): kernel contract; the two stages lie in the dynamic
    // shared memory the launch contract sizes (`MmTile::smem_bytes`).
    unsafe { tl.store::<LA, LB>(smem, smem.add(a_stage), tl.load::<LA, LB>(k_begin)) };
    sync_threads();
    let mut s = 0u32;
    while s < steps {
        let cur = (s as usize % 2) * stage;
        let nxt = stage - cur;
        // Next step's global loads fly during this step's FMAs; past the slice they
        // read zeros into a stage no one reads again.
        let next = unsafe { tl.load::<LA, LB>(k_begin + (s + 1) * MM_BK) };
        unsafe { tl.compute::<TM, TN>(smem.add(cur), smem.add(cur + a_stage), &mut acc) };
        unsafe { tl.store::<LA, LB>(smem.add(nxt), smem.add(nxt + a_stage), next) };
        sync_threads();
        s += 1;
    }
    (
        Sums {
            acc,
            rm: tl.rm,
            cn: tl.cn,
        },
        tl.interior,
    )
}

/// The body of every `matmul_relu_tile_*` kernel: [`tile_main`] over the block's
/// tile and K slice (`blockIdx.z`), then the sums to C or to the slice's partials.
///
/// # Safety
/// The kernel's contract (see [`matmul_relu_tile_64x64()`]).
#[inline(always)]
unsafe fn tile_body<
    const BM: u32,
    const BN: u32,
    const WM: u32,
    const WN: u32,
    const TM: usize,
    const TN: usize,
    const LA: usize,
    const LB: usize,
>(
    p: MatmulSplitParams,
) {
    let (o, place) = split_place::<BM, BN>(&p);
    // SAFETY: kernel contract; the block's slice lies inside K.
    let (s, interior) =
        unsafe { tile_main::<BM, BN, WM, WN, TM, TN, LA, LB>(&p.mm, place, o.vec_o) };
    // SAFETY: kernel contract: the output view as `slice_output` describes it.
    unsafe { store_sums(&s, &o, &p, place, interior) };
}

/// A split kernel's block: where its sums go (`slice_output`) and its [`Place`]
/// (tile `(blockIdx.y, blockIdx.x)` of `BM x BN`, K slice `blockIdx.z`).
#[inline(always)]
pub(crate) fn split_place<const BM: u32, const BN: u32>(
    p: &MatmulSplitParams,
) -> (SliceOutput, Place) {
    let o = slice_output(p);
    let place = Place {
        row0: block_idx().y * BM,
        col0: block_idx().x * BN,
        k_begin: o.k_begin,
        k_end: o.k_end,
    };
    (o, place)
}

/// [`store_tile`] of a thread's [`Sums`] for the block at `place`.
///
/// # Safety
/// As [`store_tile`].
#[inline(always)]
pub(crate) unsafe fn store_sums<const TM: usize, const TN: usize>(
    s: &Sums<TM, TN>,
    o: &SliceOutput,
    p: &MatmulSplitParams,
    place: Place,
    unchecked: bool,
) {
    let (m, n) = (p.mm.c.rows, p.mm.c.cols);
    // SAFETY: caller's contract.
    unsafe {
        store_tile::<TM, TN>(
            &s.acc,
            o,
            m,
            n,
            place.row0 + s.rm,
            place.col0 + s.cn,
            unchecked,
        )
    };
}

/// Where one block of a tile kernel sums and writes: its K slice, and C with the
/// epilogue (one slice) or its slice of the partials (`partials[z·m·n ..]`, dense,
/// no epilogue).
pub(crate) struct SliceOutput {
    pub k_begin: u32,
    pub k_end: u32,
    pub out: *mut f32,
    pub ldo: u32,
    pub relu: u32,
    /// The output's rows are 16-byte aligned.
    pub vec_o: bool,
}

/// The [`SliceOutput`] of this block (`blockIdx.z` is its K slice).
#[inline(always)]
pub(crate) fn slice_output(p: &MatmulSplitParams) -> SliceOutput {
    let (m, n, k) = (p.mm.c.rows, p.mm.c.cols, p.mm.a.cols);
    let z = block_idx().z;
    let k_begin = z * p.k_chunk;
    let k_end = if k - k_begin > p.k_chunk {
        k_begin + p.k_chunk
    } else {
        k
    };
    let (out, ldo, relu) = if p.partials.is_null() {
        (p.mm.c.ptr, p.mm.c.ld, p.mm.epilogue as u32)
    } else {
        (p.partials.wrapping_add((z * m * n) as usize), n, 0)
    };
    SliceOutput {
        k_begin,
        k_end,
        out,
        ldo,
        relu,
        vec_o: is_aligned16(out) && ldo % 4 == 0,
    }
}

/// The epilogue of the tile kernels: a thread's `TM x TN` sums, groups of 4x4 whose
/// first is at `(r0, c0)` of the `m x n` output and the others 16 rows and 32 columns
/// apart, with ReLU if asked, as unchecked 16-byte stores when `unchecked` (the
/// block's tile lies inside the output, rows aligned) and checked ones otherwise.
///
/// # Safety
/// `o` describes a writable `m x n` output; `unchecked` only as described.
#[inline(always)]
pub(crate) unsafe fn store_tile<const TM: usize, const TN: usize>(
    acc: &[[f32; TN]; TM],
    o: &SliceOutput,
    m: u32,
    n: u32,
    r0: u32,
    c0: u32,
    unchecked: bool,
) {
    for gi in 0..TM / 4 {
        for r in 0..4 {
            let i = 4 * gi + r;
            let row = r0 + gi as u32 * 4 * LANES_M + r as u32;
            for gj in 0..TN / 4 {
                let col = c0 + gj as u32 * 4 * LANES_N;
                let mut v = F32x4 {
                    x: acc[i][4 * gj],
                    y: acc[i][4 * gj + 1],
                    z: acc[i][4 * gj + 2],
                    w: acc[i][4 * gj + 3],
                };
                if o.relu != 0 {
                    v = v.map(|x| if x > 0.0 { x } else { 0.0 });
                }
                let q = o.out.wrapping_add((row * o.ldo + col) as usize);
                if unchecked {
                    // SAFETY: the block's tile is inside the output: (row, col..col+4)
                    // is, rows aligned.
                    unsafe { store4(q, v) };
                } else if row < m && col < n {
                    // SAFETY: row < m; of the columns col.., those below n are written.
                    unsafe { store4_first(q, v, n - col, o.vec_o) };
                }
            }
        }
    }
}

/// Declares the kernel of `MM_TILES[$i]`.
macro_rules! tile_kernels {
    ($($name:ident = $i:literal),* $(,)?) => {$(
        kernel! {
            /// `C = relu?(A · B)` (or one K slice's raw sums), FP32, with the block
            /// tile named in the kernel (`MM_TILES`; see the module docs).
            ///
            /// # Safety
            /// `p.mm` as [`matmul_relu_tiled()`](crate::matmul_tiled::matmul_relu_tiled()):
            /// A `m x k`, B `k x n`, C `m x n` readable / writable with their strides,
            /// C not overlapping A or B, all offsets below 2^32. `p.k_chunk` is a
            /// positive multiple of 8; with `grid.z > 1`, `p.partials` holds
            /// `grid.z · m · n` writable floats (else null) and `grid.z · k_chunk >= k
            /// > (grid.z - 1) · k_chunk`.
            ///
            /// # Thread Mapping
            /// `grid = (ceil(n/bn), ceil(m/bm), slices)`, `bm/wm · bn/wn` warps; warp
            /// `w` owns warp tile `(w / (bn/wn), w % (bn/wn))`, its lane `l` rows
            /// `4(l/8) + 16i ..+4` and columns `4(l%8) + 32j ..+4` of it.
            #[launch(threads = MM_TILES[$i].threads(), min_blocks = MM_TILES[$i].min_blocks, shared = MM_TILES[$i].smem_bytes())]
            pub unsafe fn $name(p: MatmulSplitParams) {
                // SAFETY: forwarded contract.
                unsafe {
                    tile_body::<
                        { MM_TILES[$i].bm },
                        { MM_TILES[$i].bn },
                        { MM_TILES[$i].wm },
                        { MM_TILES[$i].wn },
                        { MM_TILES[$i].tm() as usize },
                        { MM_TILES[$i].tn() as usize },
                        { MM_TILES[$i].a_loads() as usize },
                        { MM_TILES[$i].b_loads() as usize },
                    >(p)
                }
            }
        }
    )*};
}

#[cfg(any(not(target_arch = "nvptx64"), not(simt_target = "sm_90a")))]
tile_kernels!(
    matmul_relu_tile_128x64 = 0,
    matmul_relu_tile_64x128 = 1,
    matmul_relu_tile_64x64 = 2,
    matmul_relu_tile_32x64 = 3,
    matmul_relu_tile_32x32 = 4,
);

/// The PTX entry names of the tile kernels, in [`MM_TILES`] order.
pub const TILE_KERNEL_NAMES: [&str; MM_TILES.len()] = [
    "matmul_relu_tile_128x64",
    "matmul_relu_tile_64x128",
    "matmul_relu_tile_64x64",
    "matmul_relu_tile_32x64",
    "matmul_relu_tile_32x32",
];

#[cfg(any(not(target_arch = "nvptx64"), not(simt_target = "sm_90a")))]
kernel! {
    /// `C = epilogue(Σ_z P_z)`: adds a split-K product's `splits` partial tiles
    /// `P_z = partials[z·m·n ..]` (dense `m x n`) in order `z = 0, 1, …`, so every run
    /// rounds the same way, then applies the epilogue.
    ///
    /// # Safety
    /// `partials` holds `splits · m · n` readable floats (`m x n` the shape of `c`),
    /// C is writable with its stride and does not overlap them, `splits · m · n < 2^32`.
    ///
    /// # Thread Mapping
    /// Thread `i` of the grid owns elements `4i ..4i+4` of the dense `m x n` index
    /// space: one 16-byte load per slice when `n % 4 == 0`, scalar ones otherwise.
    #[launch(max_threads = SPLITK_REDUCE_THREADS)]
    pub unsafe fn matmul_splitk_reduce(p: SplitReduceParams) {
        let (m, n, ldc) = (p.c.rows, p.c.cols, p.c.ld);
        let mn = m * n;
        let e0 = 4 * (block_idx().x * block_dim().x + thread_idx().x);
        if e0 >= mn {
            return;
        }
        let relu = p.epilogue as u32 != 0;
        let act = |x: f32| if relu && !(x > 0.0) { 0.0 } else { x };
        if n % 4 == 0 {
            // A whole 4-aligned group of one row.
            let mut s = F32x4::default();
            for z in 0..p.splits {
                // SAFETY: e0 + 4 <= mn (mn and e0 multiples of 4); slice z exists.
                let v = unsafe { load4(p.partials.add((z * mn + e0) as usize)) };
                s = F32x4 { x: s.x + v.x, y: s.y + v.y, z: s.z + v.z, w: s.w + v.w };
            }
            let (row, col) = (e0 / n, e0 % n);
            let vec_c = is_aligned16(p.c.ptr) && ldc % 4 == 0;
            // SAFETY: (row, col..col+4) inside C.
            unsafe { store4_first(p.c.ptr.add((row * ldc + col) as usize), s.map(act), 4, vec_c) };
        } else {
            for j in 0..4 {
                let e = e0 + j;
                if e < mn {
                    let mut s = 0.0f32;
                    for z in 0..p.splits {
                        // SAFETY: e < mn; slice z exists.
                        s += unsafe { *p.partials.add((z * mn + e) as usize) };
                    }
                    // SAFETY: e < m·n: (e / n, e % n) inside C.
                    unsafe { *p.c.ptr.add(((e / n) * ldc + e % n) as usize) = act(s) };
                }
            }
        }
    }
}
