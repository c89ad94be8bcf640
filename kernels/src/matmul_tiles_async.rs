//! Matmul + ReLU, stage 4c: configurable tiles as stage 4b's, fed by a 3- or 4-stage
//! `cp.async` pipeline with K steps of 32 ([`MM_ASYNC_TILES`]).
//!
//! Stage 4b ([`crate::matmul_tiles`]) stages each K step of 8 through registers and
//! waits out one global-memory round trip (about 1 us under load) per step, with
//! only one step in flight. A small product has few steps' worth of FMAs per block
//! to hide it behind: at 256^3 a 32x32 block computes 16 outputs per thread over
//! 32 steps, and the round trips are most of its time.
//!
//! Here each step is 32 deep and two or three steps are in flight while another is
//! computed (3 or 4 stages, `MmTile::stages`): a 256^3 product is 8 steps per block,
//! with the loads of steps `s+1` .. `s+3` landing while step `s` is computed. On the
//! H100 the 4-stage 32x64 tile is the fastest at 256^3 and 512^3. The copies go straight
//! from global to shared memory (`cp.async`), so staging costs no registers.
//!
//! **A is not transposed.** `cp.async` copies contiguous 16-byte chunks, so A's
//! tile stays row-major, `As[m][k]`, 128 bytes a row. A thread reads its rows 4 k at
//! a time (one 16-byte load gives a row's values for 4 k steps), so per 4 k steps it
//! loads `TM` vectors of A and `4·TN/4` of B for `4·TM·TN` FMAs, the same ratio as
//! stage 4b. The chunk of row `r` holding k `4c..4c+4` is stored at chunk
//! `c ^ (r/4 % 8)`: the 4 rows a warp reads at once (`4ly + i`, `ly = 0..3`) then
//! sit in 4 different 16-byte bank groups, so the load is conflict-free (without the
//! XOR all 4 would hit the same banks: a 4-way conflict). The pipeline module's docs
//! tell why transposing A with 4-byte copies did not pay.
//!
//! **Sliced K** (`MmTile::kslices` = 2): the tile's warps are doubled, and the two
//! groups (slices) split every K step, slice 0 computing its first 16 k and slice 1
//! the last 16, each over the whole tile. After the loop slice 1's sums go through the
//! stages' shared memory and are added into slice 0's, which stores them. Where a
//! product is a single wave of two blocks per SM (1024^3: 256 tiles of 64x64), that is
//! 16 warps per SM instead of 8, for one exchange per tile.
//!
//! Edges: a chunk that is only partly inside the matrix, or any chunk of an
//! unaligned operand, is copied as 4-byte pieces (a 16-byte copy with fewer source
//! bytes still reads 16); pieces outside the matrix or the K slice are zero-filled.
#![cfg_attr(
    all(target_arch = "nvptx64", simt_target = "sm_90a"),
    allow(dead_code, unused_imports)
)]
use crate::config::{MmTile, MM_ASYNC_BK, MM_ASYNC_TILES, WARP_SIZE};
use crate::matmul_tiles::{split_place, store_sums, Place, Sums};
use crate::params::{MatmulParams, MatmulSplitParams};
use simt_std::memory::{is_aligned16, F32x4};
use simt_std::pipeline::{commit, copy_async, wait};
use simt_std::shared::{dynamic_shared, Smem};
use simt_std::thread::{sync_threads, thread_idx};
use simt_std::{kernel, unroll};

/// Lanes down a warp tile.
const LANES_M: u32 = 4;
/// Lanes across a warp tile.
const LANES_N: u32 = 8;
/// 16-byte chunks per row of an A stage.
const A_CHUNKS: u32 = MM_ASYNC_BK / 4;

/// The physical chunk of logical chunk `c` of A's stage row `r`.
#[inline(always)]
pub const fn a_chunk(r: u32, c: u32) -> u32 {
    c ^ ((r / 4) % A_CHUNKS)
}

/// Copies the 4 floats at `src[0..valid]` (zeros after) to `dst`: one 16-byte copy
/// when all 4 exist and `vec`, else 4-byte pieces.
///
/// # Safety
/// `src[0..valid]` readable (`valid <= 4`), `base` a readable address of the same
/// allocation, `dst` a 16-byte aligned shared chunk no one reads before a `wait`
/// and a barrier; with `vec`, `src` 16-byte aligned.
#[inline(always)]
unsafe fn copy_chunk(dst: Smem<f32>, src: *const f32, base: *const f32, valid: u32, vec: bool) {
    if valid == 4 && vec {
        // SAFETY: 4 readable floats, aligned.
        unsafe { copy_async::<16, f32>(dst, src, 16) };
    } else {
        unroll!(4, J => {
            let ok = (J as u32) < valid;
            // SAFETY: piece J exists when ok; else 0 bytes from the allocation's base.
            unsafe { copy_async::<4, f32>(dst.add(J), if ok { src.wrapping_add(J) } else { base }, if ok { 4 } else { 0 }) };
        });
    }
}

/// The K loop of every `matmul_relu_async_*` kernel and of their cluster variants
/// (see the module docs): block tile `BM x BN`, warp tile `WM x WN`, thread tile
/// `TM x TN`, `LA` and `LB` chunk copies of A and B per thread and step, `KS` K
/// slices (threads `KS · tile_threads`, slice `t / tile_threads`). Returns the
/// thread's sums, whether the tile lies inside C with every row aligned (`vec_o`: the
/// output's rows are), and whether the thread holds the tile's sums (slice 0; with
/// one slice, every thread): only those threads store.
///
/// # Safety
/// The kernel's contract (see [`matmul_relu_async_64x64()`]); `place` inside it,
/// `place.k_end <= k`, `place.k_begin` as [`Place`] says (a multiple of 4); `MmTile::async_smem_bytes` of dynamic shared memory.
#[inline(always)]
pub(crate) unsafe fn async_main<
    const BM: u32,
    const BN: u32,
    const WM: u32,
    const WN: u32,
    const TM: usize,
    const TN: usize,
    const LA: u32,
    const LB: u32,
    const STAGES: u32,
    const KS: u32,
>(
    mm: &MatmulParams,
    place: Place,
    vec_o: bool,
) -> (Sums<TM, TN>, bool, bool) {
    const {
        let t = MmTile::new(BM, BN, WM, WN, 1)
            .with_stages(STAGES)
            .with_kslices(KS);
        assert!(t.is_valid_async());
        assert!(t.tm() as usize == TM && t.tn() as usize == TN);
        assert!(t.async_a_loads() == LA && t.async_b_loads() == LB);
        assert!(TM == 4 && (TN == 4 || TN == 8));
    };
    const BK: u32 = MM_ASYNC_BK;
    // The warps of one K slice cover the tile; KS slices share each step.
    let tile_threads = (BM / WM) * (BN / WN) * WARP_SIZE;
    let threads = tile_threads * KS;
    let (a, b, _, m, n, _, lda, ldb, _, _) = mm.unpack();
    let t = thread_idx().x;
    // A whole number of warps per slice, so `slice` is the same across a warp.
    let (slice, tt) = match KS {
        1 => (0, t),
        _ => (t / tile_threads, t % tile_threads),
    };
    let Place {
        row0,
        col0,
        k_begin,
        k_end,
    } = place;
    let vec_a = is_aligned16(a) && lda % 4 == 0;
    let vec_b = is_aligned16(b) && ldb % 4 == 0;
    let (warp, lane) = (tt / WARP_SIZE, tt % WARP_SIZE);
    let (wm, wn) = (warp / (BN / WN), warp % (BN / WN));
    let rm = wm * WM + 4 * (lane / LANES_N);
    let cn = wn * WN + 4 * (lane % LANES_N);
    let smem = dynamic_shared::<f32>();
    let a_stage = (BM * BK) as usize;
    let stage = ((BM + BN) * BK) as usize;

    // An interior tile (every row and column inside A and B, rows 16-byte aligned)
    // copies whole K steps as unconditional 16-byte chunks. The checked path costs
    // bounds, a `min`, a select and a branch per chunk: about 25 instructions, 200 per
    // step next to 1024 FMAs in the 64x64 4-warp tile, where ncu counted 10% more
    // instructions than Triton's kernel of the same tiling.
    let interior = vec_a && vec_b && row0 + BM <= m && col0 + BN <= n;

    // Issues the copies of step `st` into its stage and commits them as one group
    // (an empty group past the slice, so every step's `wait` counts the same).
    // SAFETY (callers): the stage is not read until this group's wait and a barrier.
    // A macro, not a closure: with both copy paths the closure grew past LLVM's
    // inlining threshold and became a call with its captures in local memory.
    macro_rules! issue {
        ($st:expr) => {{
            let st: u32 = $st;
            let k0 = k_begin + st * BK;
            let s_a = smem.add((st % STAGES) as usize * stage);
            let s_b = s_a.add(a_stage);
            if interior && k0 + BK <= k_end {
                for i in 0..LA {
                    let e = t + i * threads;
                    let (r, ch) = (e / A_CHUNKS, e % A_CHUNKS);
                    let dst = s_a.add((r * BK + 4 * a_chunk(r, ch)) as usize);
                    // SAFETY: interior tile and a whole step: row row0 + r < m, columns
                    // k0 + 4ch ..+4 <= k_end <= k, 16-byte aligned; the chunk lies in this
                    // stage of A.
                    unsafe {
                        copy_async::<16, f32>(
                            dst,
                            a.add(((row0 + r) * lda + k0 + 4 * ch) as usize),
                            16,
                        )
                    };
                }
                for i in 0..LB {
                    let e = t + i * threads;
                    let (kr, ch) = (e / (BN / 4), e % (BN / 4));
                    let dst = s_b.add((kr * BN + 4 * ch) as usize);
                    // SAFETY: as above: row k0 + kr < k_end, columns col0 + 4ch ..+4 <= n.
                    unsafe {
                        copy_async::<16, f32>(
                            dst,
                            b.add(((k0 + kr) * ldb + col0 + 4 * ch) as usize),
                            16,
                        )
                    };
                }
            } else if k0 < k_end {
                for i in 0..LA {
                    let e = t + i * threads;
                    let (r, ch) = (e / A_CHUNKS, e % A_CHUNKS);
                    let (gr, gk) = (row0 + r, k0 + 4 * ch);
                    let valid = if gr < m && gk < k_end {
                        (k_end - gk).min(4)
                    } else {
                        0
                    };
                    let dst = s_a.add((r * BK + 4 * a_chunk(r, ch)) as usize);
                    // SAFETY: row gr < m and columns gk..gk+valid < k when valid > 0; the
                    // chunk lies in this stage of A.
                    unsafe {
                        copy_chunk(
                            dst,
                            a.wrapping_add((gr * lda + gk) as usize),
                            a,
                            valid,
                            vec_a,
                        )
                    };
                }
                for i in 0..LB {
                    let e = t + i * threads;
                    let (kr, ch) = (e / (BN / 4), e % (BN / 4));
                    let (gk, gc) = (k0 + kr, col0 + 4 * ch);
                    let valid = if gk < k_end && gc < n {
                        (n - gc).min(4)
                    } else {
                        0
                    };
                    let dst = s_b.add((kr * BN + 4 * ch) as usize);
                    // SAFETY: row gk < k and columns gc..gc+valid < n when valid > 0.
                    unsafe {
                        copy_chunk(
                            dst,
                            b.wrapping_add((gk * ldb + gc) as usize),
                            b,
                            valid,
                            vec_b,
                        )
                    };
                }
            }
            commit();
        }};
    }

    let mut acc = [[0.0f32; TN]; TM];
    let steps = (k_end - k_begin).div_ceil(BK);
    for st in 0..STAGES - 1 {
        issue!(st);
    }
    let mut s = 0u32;
    while s < steps {
        // Step s's copies have landed (at most the next STAGES-2 are in flight) in
        // every thread, and every thread has finished computing step s-1.
        if STAGES == 3 {
            wait::<1>();
        } else {
            wait::<2>();
        }
        sync_threads();
        // Refill the stage of step s-1 with step s+STAGES-1.
        issue!(s + STAGES - 1);
        let s_a = smem.add((s % STAGES) as usize * stage);
        let s_b = s_a.add(a_stage);
        // Slice `slice` computes the step's groups of 4 k `slice·8/KS ..` (all 8
        // with one slice).
        unroll!(8, KC => {
            if (KC as u32) < A_CHUNKS / KS {
                let kc = KC as u32 + slice * (A_CHUNKS / KS);
                // The thread's TM rows, k = 4kc..4kc+4 of each.
                let mut av = [F32x4::default(); TM];
                for (i, v) in av.iter_mut().enumerate() {
                    let r = rm + (i as u32 / 4) * 4 * LANES_M + i as u32 % 4;
                    // SAFETY: row r < BM of this stage, chunk < 8, 16-byte aligned.
                    *v = unsafe { s_a.add((r * BK + 4 * a_chunk(r, kc)) as usize).load4() };
                }
                unroll!(4, KK => {
                    let kr = 4 * kc + KK as u32;
                    // SAFETY: row kr < BK of this stage of B, columns inside, aligned.
                    let (b_lo, b_hi) = unsafe {
                        (
                            s_b.add((kr * BN + cn) as usize).load4(),
                            if TN == 8 { s_b.add((kr * BN + cn + 4 * LANES_N) as usize).load4() } else { F32x4::default() },
                        )
                    };
                    let bf = [b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w];
                    // Unrolled by the macro, not left to LLVM: with the interior copy path
                    // in the loop, LLVM stopped unrolling the 4x8 tile and put the
                    // accumulators in local memory (240 bytes of stack).
                    unroll!(4, I => {
                        let x = av[I].to_array()[KK];
                        unroll!(8, J => {
                            if J < TN {
                                acc[I][J] = simt_std::math::fma(x, bf[J], acc[I][J]);
                            }
                        });
                    });
                    simt_std::memory::compiler_barrier();
                });
            }
        });
        s += 1;
    }
    // Nothing is left in flight past the slice (those groups were empty), but leave
    // no copy pending at exit either.
    wait::<0>();
    if KS == 2 {
        // Slice 1's sums to the stages' shared memory, 16 bytes per thread and group of
        // 4, thread-major (a warp's stores and loads are conflict-free), then added
        // into slice 0's in that order: `s0 + s1` on every run.
        let at = |q: usize| (4 * (q as u32 * tile_threads + tt)) as usize;
        // Every thread is done with the stages.
        sync_threads();
        if slice == 1 {
            unroll!(4, I => {
                unroll!(2, H => {
                    if 4 * H < TN {
                        let r = &acc[I];
                        let v = F32x4 { x: r[4 * H], y: r[4 * H + 1], z: r[4 * H + 2], w: r[4 * H + 3] };
                        // SAFETY: q = I·TN/4 + H < TM·TN/4 groups of tile_threads
                        // 16-byte slots: BM·BN floats, inside the stages
                        // (`is_valid_async`).
                        unsafe { smem.add(at(I * (TN / 4) + H)).store4(v) };
                    }
                });
            });
        }
        sync_threads();
        if slice == 0 {
            unroll!(4, I => {
                unroll!(2, H => {
                    if 4 * H < TN {
                        // SAFETY: as above; written by the slice-1 thread at the same
                        // place of the tile, before the barrier.
                        let v = unsafe { smem.add(at(I * (TN / 4) + H)).load4() }.to_array();
                        unroll!(4, J => { acc[I][4 * H + J] += v[J]; });
                    }
                });
            });
        }
    }
    (
        Sums { acc, rm, cn },
        vec_o && row0 + BM <= m && col0 + BN <= n,
        slice == 0,
    )
}

/// The body of every `matmul_relu_async_*` kernel: [`async_main`] over the block's
/// tile and K slice (`blockIdx.z`), then the sums to C or to the slice's partials.
///
/// # Safety
/// The kernel's contract (see [`matmul_relu_async_64x64()`]).
#[inline(always)]
unsafe fn async_body<
    const BM: u32,
    const BN: u32,
    const WM: u32,
    const WN: u32,
    const TM: usize,
    const TN: usize,
    const LA: u32,
    const LB: u32,
    const STAGES: u32,
    const KS: u32,
>(
    p: MatmulSplitParams,
) {
    let (o, place) = split_place::<BM, BN>(&p);
    // SAFETY: kernel contract; the block's slice lies inside K.
    let (s, unchecked, owner) =
        unsafe { async_main::<BM, BN, WM, WN, TM, TN, LA, LB, STAGES, KS>(&p.mm, place, o.vec_o) };
    // The first K slice's threads hold the tile's sums.
    if owner {
        // SAFETY: kernel contract: the output view as `slice_output` describes it.
        unsafe { store_sums(&s, &o, &p, place, unchecked) };
    }
}

/// Declares the `cp.async` kernel of `MM_ASYNC_TILES[$i]`.
macro_rules! async_kernels {
    ($($name:ident = $i:literal),* $(,)?) => {$(
        kernel! {
            /// `C = relu?(A · B)` (or one K slice's raw sums), FP32, block tile as
            /// named, fed by a 3- or 4-stage `cp.async` pipeline (see the module docs).
            ///
            /// # Safety
            /// As [`matmul_relu_tile_64x64()`](crate::matmul_tiles::matmul_relu_tile_64x64()).
            ///
            /// # Thread Mapping
            /// As the tile kernels; copies: thread `t` copies A chunks `e = t + i·T`
            /// (row `e / 8`, k `4(e % 8)..+4`) and B chunks (row `e / (bn/4)`, columns
            /// `4(e % (bn/4))..+4`) of each step. With two K slices, threads `T/2 ..`
            /// are slice 1, mapped onto the tile as threads `t - T/2`, computing k
            /// `16..32` of each step; slice 0 (threads `.. T/2`) adds their sums and
            /// stores.
            #[launch(threads = MM_ASYNC_TILES[$i].threads(), min_blocks = MM_ASYNC_TILES[$i].min_blocks, shared = MM_ASYNC_TILES[$i].async_smem_bytes())]
            pub unsafe fn $name(p: MatmulSplitParams) {
                // SAFETY: forwarded contract.
                unsafe {
                    async_body::<
                        { MM_ASYNC_TILES[$i].bm },
                        { MM_ASYNC_TILES[$i].bn },
                        { MM_ASYNC_TILES[$i].wm },
                        { MM_ASYNC_TILES[$i].wn },
                        { MM_ASYNC_TILES[$i].tm() as usize },
                        { MM_ASYNC_TILES[$i].tn() as usize },
                        { MM_ASYNC_TILES[$i].async_a_loads() },
                        { MM_ASYNC_TILES[$i].async_b_loads() },
                        { MM_ASYNC_TILES[$i].stages },
                        { MM_ASYNC_TILES[$i].kslices },
                    >(p)
                }
            }
        }
    )*};
}

#[cfg(any(not(target_arch = "nvptx64"), not(simt_target = "sm_90a")))]
async_kernels!(
    matmul_relu_async_64x64 = 0,
    matmul_relu_async_64x32 = 1,
    matmul_relu_async_32x64 = 2,
    matmul_relu_async_32x32 = 3,
    matmul_relu_async_16x64 = 4,
    matmul_relu_async_16x128 = 5,
    matmul_relu_async_s4_16x64 = 6,
    matmul_relu_async_s4_32x64 = 7,
    matmul_relu_async_s4_64x64 = 8,
    matmul_relu_async_64x64_w4 = 9,
    matmul_relu_async_s4_64x64_w4 = 10,
    matmul_relu_async_64x64_ks2 = 11,
);

/// The PTX entry names of the `cp.async` tile kernels, in [`MM_ASYNC_TILES`] order.
pub const ASYNC_KERNEL_NAMES: [&str; MM_ASYNC_TILES.len()] = [
    "matmul_relu_async_64x64",
    "matmul_relu_async_64x32",
    "matmul_relu_async_32x64",
    "matmul_relu_async_32x32",
    "matmul_relu_async_16x64",
    "matmul_relu_async_16x128",
    "matmul_relu_async_s4_16x64",
    "matmul_relu_async_s4_32x64",
    "matmul_relu_async_s4_64x64",
    "matmul_relu_async_64x64_w4",
    "matmul_relu_async_s4_64x64_w4",
    "matmul_relu_async_64x64_ks2",
];
