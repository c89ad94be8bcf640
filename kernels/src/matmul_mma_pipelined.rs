//! Matmul + ReLU, stage 6: tensor cores fed by a multistage `cp.async` pipeline,
//! XOR-swizzled shared tiles read with `ldmatrix`. bf16, f16 or TF32 inputs, f32
//! accumulation and output.
//!
//! Against stage 5 ([`matmul_mma`](crate::matmul_mma)):
//! * **Copies, not loads.** Each K step's tiles travel global -> shared as 16-byte
//!   `cp.async` copies that never pass through registers, issued `TC_STAGES - 1` steps
//!   ahead into a ring of `TC_STAGES` stages (3 x 32 KiB of dynamic shared memory, two
//!   blocks per SM): the tensor cores work on step `s` while the next steps are in
//!   flight. Ragged edges are zero-filled by the copy itself (fewer source bytes than
//!   16); interior tiles copy without any bounds test.
//! * **Long K steps.** 64 elements of K per step (128-byte rows of A): one barrier and
//!   one `cp.async.wait_group` per 4 `mma` k16 steps. Halving them from 32-element steps
//!   was worth 7% on the H100 (docs/PERFORMANCE.md).
//! * **`ldmatrix`.** A warp's A fragments of a 16x16 tile arrive in one `ldmatrix.x4`
//!   instead of four 32-bit loads per lane, and two n8 B fragments in one
//!   `ldmatrix.x4.trans` (B is k-major in shared memory, the `mma` wants it n-major).
//! * **Swizzles instead of padding.** `ldmatrix` reads 8 rows of 16 bytes at one
//!   column. A's rows are 128 bytes, one bank line each, and B's 256: unswizzled, the
//!   8 rows would all hit the same 4 banks (8-way conflicts). XOR-ing the 16-byte chunk
//!   index with the row bits ([`swz_a`], [`swz_b`]) spreads the 8 rows over all 32
//!   banks; `tests/tensor_cores.rs` counts the banks.
//! * **Grouped block order** ([`GROUP_M`] tile-rows down before moving right), so a
//!   wave of blocks shares panels of A and B in L2.
//! * **C through shared memory.** A lane's accumulators are pairs of columns on 8
//!   rows; stored as they lie, each warp store writes 8 rows x 32 bytes. Interior
//!   tiles go through a per-warp staging tile instead and leave as whole rows, 16
//!   bytes a lane (`store_staged`): TF32 +5% on the H200, bf16 level. (That the
//!   pairs were 8-byte stores at all needed `memory::store2` in inline assembly:
//!   LLVM had split every one in two, docs/PERFORMANCE.md, session 13.)
//!
//! TF32 (f32 inputs) uses the same block, warp and stage sizes with K steps of 32
//! (128-byte rows of A again): A fragments still come from `ldmatrix` (an 8x8 matrix
//! of 16-bit elements is an 8x4 matrix of f32, exactly the tf32 A fragment). `ldmatrix`
//! cannot transpose 32-bit elements, so B fragments are single f32 words read with
//! `ld.shared` from a layout swizzled by `k % 4` ([`swz_b_tf32`]). Every element is
//! rounded with `cvt.rna.tf32.f32` on its way to the tensor cores: ties away from
//! zero, where cuBLAS and the TMA-fed stages round ties to even. Ties to even in
//! integer arithmetic (sm_80 has no instruction for it) made this kernel 1.6x slower
//! on the H200 (docs/PERFORMANCE.md, session 17).
//!
//! The host sends only aligned problems here (rows of A and B 16-byte aligned:
//! strides a multiple of 8 elements, or 4 for TF32); others take stage 5.
// The Hopper module reuses the fragment and epilogue code (stage 6t) but not the kernels.
#![cfg_attr(
    all(target_arch = "nvptx64", simt_target = "sm_90a"),
    allow(dead_code, unused_imports)
)]
use crate::config::{
    TC6_A_ROW_BYTES, TC6_BK, TC6_BK_TF32, TC6_THREADS, TC6_WARP_N, TC_BM, TC_BN, TC_SMEM_BYTES,
    TC_STAGES, TC_STAGE_BYTES, TC_WARP_M,
};
use crate::matmul_mma::write_c;
use crate::params::{MatmulParams, MatmulParams16};
use simt_std::memory::store4;
use simt_std::mma::{
    ldmatrix_row_addr, ldmatrix_x4, ldmatrix_x4_trans, mma_bf16, mma_f16, mma_tf32, to_tf32,
};
use simt_std::pipeline::{commit, copy_async, wait};
use simt_std::shared::{dynamic_shared, Smem};
use simt_std::thread::{block_idx, grid_dim, grouped_tile, sync_threads, thread_idx};
use simt_std::warp::{lane_id, warp_id};
use simt_std::{kernel, unroll};

const STAGES: u32 = TC_STAGES;
const _: () = assert!(
    (STAGES == 3 || STAGES == 4)
        && (TC6_THREADS == 128 || TC6_THREADS == 256)
        && TC_WARP_M == 64
        && (TC6_WARP_N == 64 || TC6_WARP_N == 32)
        && (TC_BM / TC_WARP_M) * (TC_BN / TC6_WARP_N) * 32 == TC6_THREADS
        && TC_BM == 128
        && TC_BN == 128
);
/// Bytes per row of A in a stage, and its 16-byte chunks.
pub(crate) const A_ROW: u32 = TC6_A_ROW_BYTES;
const A_CHUNKS: u32 = A_ROW / 16;
/// `mma` steps per K step (k16 for 16-bit inputs, k8 for TF32: both 32 bytes of A's row).
pub(crate) const KSTEPS: u32 = A_ROW / 32;
/// n8 tiles per warp.
pub(crate) const NT: usize = (TC6_WARP_N / 8) as usize;
/// Warps across the block tile's columns.
pub(crate) const WARPS_N: u32 = TC_BN / TC6_WARP_N;
/// 16-byte copies per thread per operand and stage (`TC_BM · A_CHUNKS` chunks each).
const CP: usize = (TC_BM * A_CHUNKS / TC6_THREADS) as usize;
const _: () = assert!(
    CP >= 1 && CP <= 8 && TC_BM * A_CHUNKS % TC6_THREADS == 0 && KSTEPS >= 2 && KSTEPS <= 4
);
/// Whether the 16-bit kernels double-buffer their fragments across the barrier: with
/// 64x64 warp tiles there are registers for it; with 64x32 tiles at 2 blocks per SM
/// (128 registers) they would spill.
const DOUBLE_BUFFER: bool = TC6_WARP_N == 64 && KSTEPS == 2;
/// Bytes of A per stage (128 rows of 64 bytes); B follows.
pub(crate) const A_BYTES: u32 = TC_BM * A_ROW;
const _: () = assert!(TC_STAGE_BYTES == 2 * A_BYTES && TC_SMEM_BYTES == STAGES * TC_STAGE_BYTES);

/// Physical 16-byte chunk of logical chunk `c` in row `row` of an A tile of
/// `A_ROW`-byte rows. With 128-byte rows each row is one bank line and `row % 8`
/// flips the chunk; with 64-byte rows two rows share a line and `(row / 2) % 4` does.
/// Either way 8 consecutive rows at one logical chunk use 8 distinct bank groups.
#[inline(always)]
pub const fn swz_a(row: u32, c: u32) -> u32 {
    if A_ROW == 128 {
        c ^ (row & 7)
    } else {
        c ^ ((row >> 1) & 3)
    }
}

/// Physical chunk of logical chunk `c` (0..16) in row `k` of a 16-bit B tile
/// (256-byte rows): `k % 8` flips the low 3 bits.
#[inline(always)]
pub const fn swz_b(k: u32, c: u32) -> u32 {
    c ^ (k & 7)
}

/// Physical chunk of logical chunk `c` (0..32) in row `k` of a TF32 B tile
/// (512-byte rows): word `n` moves to `n ^ 8·(k % 4)`, so the 4 k-rows of a warp's
/// scalar fragment load hit 4 different 8-bank groups.
#[inline(always)]
pub const fn swz_b_tf32(k: u32, c: u32) -> u32 {
    c ^ ((k & 3) << 1)
}

/// Tile-rows that consecutive blocks walk down before moving right (L2 reuse).
pub const GROUP_M: u32 = 8;

/// The `(row, col)` of C where this block's tile starts: the grid is `(n tiles, m
/// tiles)`, visited in [`grouped_tile`] order.
#[inline(always)]
pub(crate) fn block_origin() -> (u32, u32) {
    block_origin_n(TC_BN)
}

/// As [`block_origin`], for tiles `bn` columns wide.
#[inline(always)]
pub(crate) fn block_origin_n(bn: u32) -> (u32, u32) {
    let (b, g) = (block_idx(), grid_dim());
    let (pm, pn) = grouped_tile(b.y * g.x + b.x, g.y, g.x, GROUP_M);
    (pm * TC_BM, pn * bn)
}

/// What one thread needs to issue a stage's copies.
#[derive(Clone, Copy)]
struct Loader {
    a: *const u8,
    b: *const u8,
    m: u32,
    n: u32,
    k: u32,
    lda_bytes: u32,
    ldb_bytes: u32,
    row0: u32,
    col0: u32,
    t: u32,
    /// The block's whole 128x128 tile of C is inside the matrices.
    interior: bool,
}

impl Loader {
    /// Issues the copies of K step `kt` into stage `s`. `EB`: element bytes (2, or 4
    /// for TF32, which also picks B's swizzle); `BK`: the step's depth in elements.
    ///
    /// # Safety
    /// The kernel's contract (rows of A and B 16-byte aligned); stage `s` is not read
    /// until a `wait` covering these copies and a barrier.
    #[inline(always)]
    unsafe fn issue<const EB: u32, const BK: u32>(&self, smem: Smem<u8>, s: u32, kt: u32) {
        let epc = 16 / EB; // elements per 16-byte chunk
        let k0 = kt * BK;
        let base = smem.add((s * TC_STAGE_BYTES) as usize);
        let chunks_per_row = TC_BN / epc;
        if self.interior && k0 + BK <= self.k {
            // The whole tile is inside A and B: no bounds, no predicates. Thread t's
            // copies j = 0..4 sit 32 rows of A (and 128 / chunks_per_row k-rows of B)
            // apart, at swizzles that do not depend on j (the row bits they use are
            // the same for all four), so each is one address add from the first.
            let (ra, ca) = (self.t / A_CHUNKS, self.t % A_CHUNKS);
            let (rb, cb) = (self.t / chunks_per_row, self.t % chunks_per_row);
            let a0 = self
                .a
                .wrapping_add(((self.row0 + ra) * self.lda_bytes + (k0 + ca * epc) * EB) as usize);
            let b0 = self
                .b
                .wrapping_add(((k0 + rb) * self.ldb_bytes + (self.col0 + cb * epc) * EB) as usize);
            let da = base.add((ra * A_ROW + swz_a(ra, ca) * 16) as usize);
            let pb = if EB == 4 {
                swz_b_tf32(rb, cb)
            } else {
                swz_b(rb, cb)
            };
            let db = base.add((A_BYTES + rb * TC_BN * EB + pb * 16) as usize);
            let (rows_a, rows_b) = (TC6_THREADS / A_CHUNKS, TC6_THREADS / chunks_per_row);
            unroll!(8, J => {
                if J < CP {
                    let j = J as u32;
                    // SAFETY: interior tile (checked above): every chunk is 16 bytes inside A
                    // or B, 16-byte aligned (contract); destinations inside stage s.
                    unsafe {
                        copy_async::<16, u8>(da.add((j * rows_a * A_ROW) as usize), a0.wrapping_add((j * rows_a * self.lda_bytes) as usize), 16);
                        copy_async::<16, u8>(db.add((j * rows_b * TC_BN * EB) as usize), b0.wrapping_add((j * rows_b * self.ldb_bytes) as usize), 16);
                    }
                }
            });
            return;
        }
        // A: 128 rows x A_CHUNKS chunks, CP per thread.
        unroll!(8, J => {
            if J < CP {
                let q = self.t + J as u32 * TC6_THREADS;
                let (r, c) = (q / A_CHUNKS, q % A_CHUNKS);
                let (gr, gk) = (self.row0 + r, k0 + c * epc);
                let valid = if gr < self.m && gk < self.k { (self.k - gk).min(epc) } else { 0 };
                let src = if valid > 0 { self.a.wrapping_add((gr * self.lda_bytes + gk * EB) as usize) } else { self.a };
                // SAFETY: `valid` elements of row gr are inside A and 16-byte aligned (contract);
                // the destination chunk is inside stage s.
                unsafe { load_chunk::<EB>(base.add((r * A_ROW + swz_a(r, c) * 16) as usize), src, valid, epc) };
            }
        });
        // B: the K step's rows of 128 columns, as many chunks as A, CP per thread.
        unroll!(8, J => {
            if J < CP {
                let q = self.t + J as u32 * TC6_THREADS;
                let (kr, c) = (q / chunks_per_row, q % chunks_per_row);
                let (gk, gc) = (k0 + kr, self.col0 + c * epc);
                let valid = if gk < self.k && gc < self.n { (self.n - gc).min(epc) } else { 0 };
                let src = if valid > 0 { self.b.wrapping_add((gk * self.ldb_bytes + gc * EB) as usize) } else { self.b };
                let pc = if EB == 4 { swz_b_tf32(kr, c) } else { swz_b(kr, c) };
                // SAFETY: as for A.
                unsafe { load_chunk::<EB>(base.add((A_BYTES + kr * TC_BN * EB + pc * 16) as usize), src, valid, epc) };
            }
        });
    }
}

/// One 16-byte chunk of a tile at its edge: `valid` of its `epc` elements (`EB`
/// bytes each) from `src`, zeros after. A whole or empty chunk is one `cp.async`
/// (an empty one reads nothing); a partial one is read element by element and stored
/// by this thread, so nothing past the matrix's last element is read: a 16-byte copy
/// of it would read past the end of a buffer that ends mid-chunk (compute-sanitizer
/// reports it, and it is outside the view).
///
/// # Safety
/// `src..src + valid·EB` is readable global memory (any pointer when `valid` is 0);
/// `dst` is a 16-byte chunk of shared memory.
#[inline(always)]
unsafe fn load_chunk<const EB: u32>(dst: Smem<u8>, src: *const u8, valid: u32, epc: u32) {
    if valid == 0 || valid == epc {
        // SAFETY: the caller's contract; 16 bytes or none are read.
        unsafe { copy_async::<16, u8>(dst, src, valid * EB) };
        return;
    }
    let mut w = [0u32; 4];
    let mut i = 0;
    while i < valid {
        // SAFETY: element i < valid is inside the matrix (the caller's contract).
        let bits = unsafe {
            if EB == 4 {
                (src as *const u32).add(i as usize).read()
            } else {
                (src as *const u16).add(i as usize).read() as u32
            }
        };
        let (word, shift) = if EB == 4 {
            (i, 0)
        } else {
            (i / 2, 16 * (i % 2))
        };
        w[word as usize] |= bits << shift;
        i += 1;
    }
    let v = simt_std::memory::F32x4 {
        x: f32::from_bits(w[0]),
        y: f32::from_bits(w[1]),
        z: f32::from_bits(w[2]),
        w: f32::from_bits(w[3]),
    };
    // SAFETY: a 16-byte aligned chunk of shared memory (the caller's contract); the
    // stage is read only after the pipeline's wait and barrier, which order this store too.
    unsafe { dst.cast::<f32>().store4(v) };
}

/// Floats per row of a warp's staging tile in [`store_staged`]: the warp tile's
/// width and 8 more, so that a half-warp's 8-byte stores (4 rows, 32 bytes each) start
/// 8 banks apart: conflict-free, as are the 16-byte reads along a row.
pub(crate) const STAGE_LD: u32 = TC6_WARP_N + 8;
const _: () = assert!(
    (TC6_THREADS / 32) * TC_WARP_M * STAGE_LD * 4 <= TC_SMEM_BYTES && 32 % (TC6_WARP_N / 4) == 0
);

/// Writes a warp's `64 x TC6_WARP_N` tile of C through shared memory (warp `w` of a
/// block `warps_n` warps across, at rows `64·(w / warps_n)` and columns
/// `64·(w % warps_n)` of the block's tile), with the ReLU when `relu`: the
/// accumulators go to the warp's own staging tile (at the start of the dynamic shared
/// memory) as the fragments lie (8 bytes a lane), and come back as whole rows, 16 bytes a lane, so each store instruction writes `32 · 16`
/// contiguous-by-row bytes of C instead of 8 rows of 32 bytes. Fewer, fuller L2 write
/// requests: the epilogue writes 64 MiB at 4096^3.
///
/// # Safety
/// The block's tile at `(row0, col0)` is inside C, writable, with `ldc % 4 == 0` and
/// `c` 16-byte aligned. No thread of the block reads or writes the first `warps · 64 ·
/// STAGE_LD` floats of the dynamic shared memory any more, nor will:
/// the caller's barrier, after every warp's last read of its stages and every copy
/// into them, made sure.
#[inline(always)]
pub(crate) unsafe fn store_staged(
    warps_n: u32,
    acc: &[[[f32; 4]; NT]; 4],
    c: *mut f32,
    ldc: u32,
    row0: u32,
    col0: u32,
    relu: bool,
) {
    // Recomputed here rather than kept live through the K loop (the TF32 kernel sits at
    // 255 registers; passed in, they cost it a spill).
    let (w, lane) = (warp_id(), lane_id());
    let (r0, c0) = (
        row0 + w / warps_n * TC_WARP_M,
        col0 + w % warps_n * TC6_WARP_N,
    );
    let tile = dynamic_shared::<f32>().add((w * TC_WARP_M * STAGE_LD) as usize);
    let (g, t) = (lane / 4, lane % 4);
    let relu_of = |v: f32| if relu && v < 0.0 { 0.0 } else { v };
    unroll!(4, MI => {
        unroll!(8, NJ => {
            if NJ < NT {
                unroll!(2, H => {
                    let (row, col) = (MI as u32 * 16 + g + 8 * H as u32, NJ as u32 * 8 + 2 * t);
                    // SAFETY: inside this warp's staging tile (64 rows of STAGE_LD), 8-byte aligned.
                    unsafe { tile.add((row * STAGE_LD + col) as usize).store2(relu_of(acc[MI][NJ][2 * H]), relu_of(acc[MI][NJ][2 * H + 1])) };
                });
            }
        });
    });
    // Only this warp reads its tile back.
    simt_std::warp::sync();
    const LANES_PER_ROW: u32 = TC6_WARP_N / 4;
    const ROWS_PER_STEP: u32 = 32 / LANES_PER_ROW;
    let (lr, lc) = (lane / LANES_PER_ROW, (lane % LANES_PER_ROW) * 4);
    unroll!(8, I => {
        unroll!(8, J => {
            let step = (I * 8 + J) as u32;
            if step < TC_WARP_M / ROWS_PER_STEP {
                let row = step * ROWS_PER_STEP + lr;
                // SAFETY: the staging tile, 16-byte aligned (STAGE_LD and lc are multiples
                // of 4); C's tile is inside C with 16-byte aligned rows (the contract).
                unsafe {
                    let v = tile.add((row * STAGE_LD + lc) as usize).load4();
                    store4(c.add(((r0 + row) * ldc + c0 + lc) as usize), v);
                }
            }
        });
    });
}

/// A warp's A fragments of one k16 step (k8 for TF32) of a stage: the 4 m16 tiles at
/// rows `wm ..` of the stage's `[128][A_ROW]` tile, [`swz_a`]-swizzled, each by one
/// `ldmatrix.x4`. `round`: round each f32 to TF32 (`cvt.rna`) on the way.
///
/// # Safety
/// `base` is a stage (16-byte aligned, its A tile landed and published to this warp);
/// the whole warp calls it.
#[inline(always)]
pub(crate) unsafe fn a_frags(base: Smem<u8>, wm: u32, kk: u32, round: bool) -> [[u32; 4]; 4] {
    let (lr, lc) = ldmatrix_row_addr(lane_id());
    let mut af = [[0u32; 4]; 4];
    unroll!(4, MI => {
        let row = wm + MI as u32 * 16 + lr;
        let c = kk * 2 + lc / 8;
        // SAFETY: inside the stage's A tile (the caller's contract), 16-byte aligned.
        let raw = unsafe { ldmatrix_x4(base.add((row * A_ROW + swz_a(row, c) * 16) as usize)) };
        // An 8x8 matrix of 16-bit elements is an 8x4 matrix of f32: for TF32 the
        // same load gives the (g, t) / (g+8, t) / (g, t+4) / (g+8, t+4) fragment.
        af[MI] = if round { raw.map(|x| to_tf32(f32::from_bits(x))) } else { raw };
    });
    af
}

/// `acc += A · B` for a warp's `64 x 8·NT` tile: 4 x NT `mma`s of `KIND`
/// ([`BF16`], [`F16`] or [`TF32`]) from one step's fragments.
///
/// # Safety
/// The whole warp calls it, converged.
#[inline(always)]
pub(crate) unsafe fn mma_tile<const KIND: u32>(
    acc: &mut [[[f32; 4]; NT]; 4],
    af: &[[u32; 4]; 4],
    bf: &[[u32; 2]; NT],
) {
    unroll!(4, MI => {
        unroll!(8, NJ => {
            if NJ < NT {
                // SAFETY: the caller's contract.
                acc[MI][NJ] = unsafe {
                    match KIND {
                        BF16 => mma_bf16(af[MI], bf[NJ], acc[MI][NJ]),
                        F16 => mma_f16(af[MI], bf[NJ], acc[MI][NJ]),
                        _ => mma_tf32(af[MI], bf[NJ], acc[MI][NJ]),
                    }
                };
            }
        });
    });
}

/// Which inputs a launch multiplies.
pub(crate) const BF16: u32 = 0;
pub(crate) const F16: u32 = 1;
pub(crate) const TF32: u32 = 2;

/// One product, as the body needs it: byte pointers and strides of A and B.
#[derive(Clone, Copy)]
struct Problem {
    a: *const u8,
    b: *const u8,
    c: *mut f32,
    m: u32,
    n: u32,
    k: u32,
    lda: u32,
    ldb: u32,
    ldc: u32,
    relu: bool,
}

/// A [`Problem`] from either parameter struct (their fields have the same names).
macro_rules! problem_of {
    ($p:expr) => {{
        let p = $p;
        let (a, b, c) = (p.a, p.b, p.c);
        Problem {
            a: a.ptr as *const u8,
            b: b.ptr as *const u8,
            c: c.ptr,
            m: a.rows,
            n: b.cols,
            k: a.cols,
            lda: a.ld,
            ldb: b.ld,
            ldc: c.ld,
            relu: p.epilogue as u32 != 0,
        }
    }};
}

/// The kernel for `KIND` ([`BF16`], [`F16`] or [`TF32`] inputs).
///
/// # Safety
/// As [`matmul_mma_pipelined_bf16()`].
#[inline(always)]
unsafe fn body<const KIND: u32>(p: Problem) {
    let tf32 = KIND == TF32;
    let smem = dynamic_shared::<u8>();
    let (m, n, k) = (p.m, p.n, p.k);
    let (row0, col0) = block_origin();
    let eb = if tf32 { 4 } else { 2 };
    let ld = Loader {
        a: p.a,
        b: p.b,
        m,
        n,
        k,
        lda_bytes: p.lda * eb,
        ldb_bytes: p.ldb * eb,
        row0,
        col0,
        t: thread_idx().x,
        interior: row0 + TC_BM <= m && col0 + TC_BN <= n,
    };
    // SAFETY (both): the kernel's contract; the stage is unread until a wait and a barrier.
    let issue = |s: u32, kt: u32| unsafe {
        if tf32 {
            ld.issue::<4, TC6_BK_TF32>(smem, s, kt)
        } else {
            ld.issue::<2, TC6_BK>(smem, s, kt)
        }
    };
    let (w, lane) = (warp_id(), lane_id());
    let (wm, wn) = (w / WARPS_N * TC_WARP_M, w % WARPS_N * TC6_WARP_N);
    let (lr, lc) = ldmatrix_row_addr(lane); // this lane's row and column (0 or 8) in a 16x16 quadrant set
    let (g, tq) = (lane / 4, lane % 4);
    let ktiles = k.div_ceil(if tf32 { TC6_BK_TF32 } else { TC6_BK });
    let mut acc = [[[0f32; 4]; NT]; 4];
    unroll!(4, S => {
        if (S as u32) < STAGES - 1 {
            if (S as u32) < ktiles {
                issue(S as u32, S as u32);
            }
            commit();
        }
    });
    // Fragments of half a K step (one k16 step, or one k8 step for TF32): A of the
    // 4 m16 tiles, B of the NT n8 tiles.
    let frags = |kt: u32, kk: u32| -> ([[u32; 4]; 4], [[u32; 2]; NT]) {
        let base = smem.add(((kt % STAGES) * TC_STAGE_BYTES) as usize);
        let mut bf = [[0u32; 2]; NT];
        if tf32 {
            // Single f32 words, read from a layout swizzled by k % 4, rounded to TF32.
            // (16-byte loads of column-permuted tiles, 4 instead of 16, cost 15%
            // twice: every word then has to move into its register pair.)
            unroll!(8, NJ => {
                if NJ < NT {
                    let col = wn + NJ as u32 * 8 + g;
                    unroll!(2, R => {
                        let kr = kk * 8 + tq + 4 * R as u32;
                        let word = swz_b_tf32(kr, col / 4) * 4 + col % 4;
                        // SAFETY: inside stage kt % STAGES, landed and published by the last barrier.
                        bf[NJ][R] = to_tf32(unsafe { base.add((A_BYTES + kr * TC_BN * 4) as usize).cast::<f32>().add(word as usize).read() });
                    });
                }
            });
        } else {
            // Two n8 tiles per `ldmatrix.x4.trans` (B is k-major in shared memory).
            unroll!(4, NJ => {
                if NJ < NT / 2 {
                    let kr = kk * 16 + lr;
                    let c = (wn + NJ as u32 * 16 + lc) / 8;
                    // SAFETY: inside stage kt % STAGES, landed and published by the last
                    // barrier; 16-byte aligned rows.
                    let r = unsafe { ldmatrix_x4_trans(base.add((A_BYTES + kr * 256 + swz_b(kr, c) * 16) as usize)) };
                    bf[2 * NJ] = [r[0], r[1]];
                    bf[2 * NJ + 1] = [r[2], r[3]];
                }
            });
        }
        // SAFETY: as above.
        let af = unsafe { a_frags(base, wm, kk, tf32) };
        (af, bf)
    };
    let mma_all = |acc: &mut [[[f32; 4]; NT]; 4], (af, bf): ([[u32; 4]; 4], [[u32; 2]; NT])| {
        // SAFETY: the whole warp executes every mma (no divergence in the loop).
        unsafe { mma_tile::<KIND>(acc, &af, &bf) }
    };
    if DOUBLE_BUFFER && !tf32 {
        // Fragments double-buffered across the barrier: step kt's second half is
        // multiplied while step kt+1's first-half fragments are in flight. (For TF32
        // this took the kernel to 255 registers and cost 15% on the H100.)
        wait::<{ TC_STAGES - 2 }>();
        sync_threads();
        let mut cur = frags(0, 0);
        let mut kt = 0;
        while kt < ktiles {
            let next = kt + STAGES - 1;
            if next < ktiles {
                // Stage next % STAGES = (kt - 1) % STAGES was last read (both halves)
                // before the previous barrier.
                issue(next % STAGES, next);
            }
            commit();
            let second = frags(kt, 1);
            mma_all(&mut acc, cur);
            // Step kt+1 landed, and every warp has read step kt: its stage may be refilled.
            wait::<{ TC_STAGES - 2 }>();
            sync_threads();
            if kt + 1 < ktiles {
                cur = frags(kt + 1, 0);
            }
            mma_all(&mut acc, second);
            kt += 1;
        }
    } else {
        let mut kt = 0;
        while kt < ktiles {
            wait::<{ TC_STAGES - 2 }>();
            sync_threads();
            let next = kt + STAGES - 1;
            if next < ktiles {
                // Stage next % STAGES was last read in step kt - 1, before the barrier.
                issue(next % STAGES, next);
            }
            commit();
            unroll!(4, KK => {
                if (KK as u32) < KSTEPS {
                    mma_all(&mut acc, frags(kt, KK as u32));
                }
            });
            kt += 1;
        }
    }
    if ld.interior && p.ldc % 4 == 0 && p.c as usize % 16 == 0 {
        // No copy is in flight (the last groups were empty) and, after the barrier,
        // every warp has read its last fragments: the stages may be overwritten. Every
        // thread of the block takes this branch (`interior` is the block's).
        wait::<0>();
        sync_threads();
        // SAFETY: the whole tile is inside C (interior), whose rows are 16-byte
        // aligned; the stages are free (above).
        unsafe { store_staged(WARPS_N, &acc, p.c, p.ldc, row0, col0, p.relu) };
        return;
    }
    // SAFETY: the kernel's contract for C.
    unsafe {
        write_c(
            &acc,
            p.c,
            m as usize,
            n as usize,
            p.ldc as usize,
            (row0 + wm) as usize,
            (col0 + wn) as usize,
            lane,
            p.relu,
        )
    };
}

#[cfg(any(not(target_arch = "nvptx64"), not(simt_target = "sm_90a")))]
kernel! {
    /// `C = epilogue(A · B)` on tensor cores, bf16 inputs, f32 accumulation and output,
    /// fed by a 4-stage `cp.async` pipeline and `ldmatrix` from swizzled tiles.
    ///
    /// # Safety
    /// As [`matmul_mma_bf16()`](crate::matmul_mma::matmul_mma_bf16()), and the rows of
    /// A and B start 16-byte aligned (base pointers 16-byte aligned, `lda` and `ldb`
    /// multiples of 8); every matrix has fewer than 2^32 bytes.
    ///
    /// # Parameters
    /// One [`MatmulParams16`]: `a`: `[m, k]`, `b`: `[k, n]` row-major bf16 bits;
    /// `c`: `[m, n]` row-major f32; `epilogue: Relu` fuses the ReLU.
    ///
    /// # Tiling
    /// Block tile 128x128, K steps of 64, 3 shared stages of 32 KiB (A `[128][64]`,
    /// B `[64][128]`, 16-byte chunks XOR-swizzled); warp tile 64x64 = 4x8
    /// `mma.m16n8k16` (128 f32 accumulators per lane), fragments by `ldmatrix.x4` (A)
    /// and `ldmatrix.x4.trans` (B).
    ///
    /// # Thread Mapping
    /// 128 threads = 4 warps, warp `w` at rows `64·(w/2)`, columns `64·(w%2)`; each
    /// thread issues 8 copies of A and 8 of B per step; `grid = (ceil(n/128), ceil(m/128))`,
    /// visited in grouped order ([`GROUP_M`]).
    #[launch(threads = TC6_THREADS, min_blocks = 2, shared = TC_SMEM_BYTES)]
    pub unsafe fn matmul_mma_pipelined_bf16(p: MatmulParams16) {
        // SAFETY: forwarded.
        unsafe { body::<BF16>(problem_of!(p)) }
    }
}

#[cfg(any(not(target_arch = "nvptx64"), not(simt_target = "sm_90a")))]
kernel! {
    /// As [`matmul_mma_pipelined_bf16()`], f16 inputs.
    ///
    /// # Safety
    /// As [`matmul_mma_pipelined_bf16()`].
    #[launch(threads = TC6_THREADS, min_blocks = 2, shared = TC_SMEM_BYTES)]
    pub unsafe fn matmul_mma_pipelined_f16(p: MatmulParams16) {
        // SAFETY: forwarded.
        unsafe { body::<F16>(problem_of!(p)) }
    }
}

#[cfg(any(not(target_arch = "nvptx64"), not(simt_target = "sm_90a")))]
kernel! {
    /// `C = epilogue(A · B)` on tensor cores in TF32: f32 inputs rounded to TF32
    /// (`cvt.rna`: ties away), f32 accumulation and output, as PyTorch with
    /// `allow_tf32 = True`. Same pipeline and tiles as
    /// [`matmul_mma_pipelined_bf16()`] with K steps of 32 and `mma.m16n8k8`.
    ///
    /// # Safety
    /// As [`matmul_mma_pipelined_bf16()`], with `lda` and `ldb` multiples of 4.
    ///
    /// # Parameters
    /// One [`MatmulParams`] (f32 `a`, `b`, `c`).
    #[launch(threads = TC6_THREADS, min_blocks = 2, shared = TC_SMEM_BYTES)]
    pub unsafe fn matmul_mma_pipelined_tf32(p: MatmulParams) {
        // SAFETY: forwarded.
        unsafe { body::<TF32>(problem_of!(p)) }
    }
}
