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
//!
//! TF32 (f32 inputs) uses the same block, warp and stage sizes with K steps of 32
//! (128-byte rows of A again): A fragments still come from `ldmatrix` (an 8x8 matrix
//! of 16-bit elements is an 8x4 matrix of f32, exactly the tf32 A fragment), each
//! element rounded with `cvt.rna.tf32.f32`; B fragments are single f32 words,
//! read with `ld.shared` from k-rows padded by 8 words ([`TC6_B_PAD_TF32`]), so the 4
//! k-rows a warp reads at once fall in 4 different 8-bank groups.
//!
//! The body is generic over the block tile's width, threads and stages: stage 6b
//! ([`matmul_mma_wide`](crate::matmul_mma_wide)) runs it with 128x256 tiles.
//!
//! The host sends only aligned problems here (rows of A and B 16-byte aligned:
//! strides a multiple of 8 elements, or 4 for TF32); others take stage 5.
use crate::config::{
    tc6_stage_bytes, TC6_A_ROW_BYTES, TC6_BK, TC6_BK_TF32, TC6_B_PAD_TF32, TC6_THREADS,
    TC6_WARP_N, TC_BM, TC_BN, TC_SMEM_BYTES, TC_SMEM_BYTES_TF32, TC_STAGES, TC_WARP_M,
};
use crate::matmul_mma::write_c;
use crate::params::{MatmulParams, MatmulParams16};
use simt_std::mma::{
    ldmatrix_row_addr, ldmatrix_x4, ldmatrix_x4_trans, mma_bf16, mma_f16, mma_tf32, to_tf32,
};
use simt_std::pipeline::{commit, copy_async, wait};
use simt_std::shared::{dynamic_shared, Smem};
use simt_std::thread::{block_idx, grid_dim, grouped_tile, sync_threads, thread_idx};
use simt_std::warp::{lane_id, warp_id};
use simt_std::{kernel, unroll};

const _: () = assert!(
    TC_WARP_M == 64 && TC6_WARP_N == 64 && TC_BM == 128 && TC_BN == 128 && TC6_THREADS == 128
);
/// Bytes per row of A in a stage, and its 16-byte chunks.
const A_ROW: u32 = TC6_A_ROW_BYTES;
const A_CHUNKS: u32 = A_ROW / 16;
/// `mma` steps per K step (k16 for 16-bit inputs, k8 for TF32: both 32 bytes of A's row).
const KSTEPS: u32 = A_ROW / 32;
/// n8 tiles per warp.
const NT: usize = (TC6_WARP_N / 8) as usize;
const _: () = assert!(A_ROW == 128 && KSTEPS == 4 && NT == 8);
/// Bytes of A per stage (128 rows of 128 bytes); B follows.
const A_BYTES: u32 = TC_BM * A_ROW;

/// Physical 16-byte chunk of logical chunk `c` in row `row` of an A tile of
/// 128-byte rows: each row is one bank line and `row % 8` flips the chunk, so 8
/// consecutive rows at one logical chunk use 8 distinct bank groups.
#[inline(always)]
pub const fn swz_a(row: u32, c: u32) -> u32 {
    c ^ (row & 7)
}

/// Physical chunk of logical chunk `c` in row `k` of a 16-bit B tile (rows of 256
/// or 512 bytes): `k % 8` flips the low 3 bits, inside one 128-byte bank line.
#[inline(always)]
pub const fn swz_b(k: u32, c: u32) -> u32 {
    c ^ (k & 7)
}

/// Byte offset of word `n` in k-row `k` of a TF32 B tile of `bn` columns: rows of
/// `bn + 8` words ([`TC6_B_PAD_TF32`]), no swizzle.
#[inline(always)]
pub const fn b_tf32_offset(bn: u32, k: u32, n: u32) -> u32 {
    (k * (bn + TC6_B_PAD_TF32) + n) * 4
}

/// Tile-rows that consecutive blocks walk down before moving right (L2 reuse).
pub const GROUP_M: u32 = 8;

/// The `(row, col)` of C where this block's `TC_BM x bn` tile starts: the grid is
/// `(n tiles, m tiles)`, visited in [`grouped_tile`] order.
#[inline(always)]
fn block_origin(bn: u32) -> (u32, u32) {
    let (b, g) = (block_idx(), grid_dim());
    let (pm, pn) = grouped_tile(b.y * g.x + b.x, g.y, g.x, GROUP_M);
    (pm * TC_BM, pn * bn)
}

/// `cp.async.wait_group` for a ring of `STAGES` stages: all but the newest
/// `STAGES - 2` groups have landed.
#[inline(always)]
fn wait_ring<const STAGES: u32>() {
    const { assert!(STAGES == 3 || STAGES == 4) };
    if STAGES == 3 {
        wait::<1>()
    } else {
        wait::<2>()
    }
}

/// What one thread needs to issue a stage's copies, for a `TC_BM x BN` block tile of
/// `THREADS` threads.
#[derive(Clone, Copy)]
struct Loader<const BN: u32, const THREADS: u32> {
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
    /// The block's whole tile of C is inside the matrices.
    interior: bool,
}

impl<const BN: u32, const THREADS: u32> Loader<BN, THREADS> {
    /// 16-byte copies per thread per stage: of A (`TC_BM · A_CHUNKS` chunks) and of B
    /// (`BN · A_CHUNKS`: B's K-step rows hold `A_ROW · BN` bytes).
    const CPA: usize = (TC_BM * A_CHUNKS / THREADS) as usize;
    const CPB: usize = (BN * A_CHUNKS / THREADS) as usize;

    /// Issues the copies of K step `kt` into stage `s`. `EB`: element bytes (2, or 4
    /// for TF32, which also picks B's layout); `BK`: the step's depth in elements.
    ///
    /// # Safety
    /// The kernel's contract (rows of A and B 16-byte aligned); stage `s` is not read
    /// until a `wait` covering these copies and a barrier.
    #[inline(always)]
    unsafe fn issue<const EB: u32, const BK: u32, const WHICH: u32>(&self, smem: Smem<u8>, s: u32, kt: u32) {
        const {
            assert!(
                Self::CPA >= 1
                    && Self::CPB <= 8
                    && TC_BM * A_CHUNKS % THREADS == 0
                    && BN * A_CHUNKS % THREADS == 0
                    && THREADS % (BN * EB / 16) == 0
                    && BK * EB == A_ROW
            )
        };
        let epc = 16 / EB; // elements per 16-byte chunk
        let k0 = kt * BK;
        let base = smem.add((s * tc6_stage_bytes(BN, EB)) as usize);
        let chunks_per_row = BN / epc;
        // Byte offset of chunk c of B's k-row kr in the stage.
        let b_at = |kr: u32, c: u32| {
            A_BYTES
                + if EB == 4 {
                    b_tf32_offset(BN, kr, c * 4)
                } else {
                    kr * BN * 2 + swz_b(kr, c) * 16
                }
        };
        if self.interior && k0 + BK <= self.k {
            // The whole tile is inside A and B: no bounds, no predicates. Thread t's
            // copies j sit `THREADS / A_CHUNKS` rows of A (a multiple of 8) and
            // `THREADS / chunks_per_row` k-rows of B (8, or 4 unswizzled for TF32)
            // apart, at swizzles that do not depend on j, so each is one address add
            // from the first.
            let (ra, ca) = (self.t / A_CHUNKS, self.t % A_CHUNKS);
            let (rb, cb) = (self.t / chunks_per_row, self.t % chunks_per_row);
            let a0 = self
                .a
                .wrapping_add(((self.row0 + ra) * self.lda_bytes + (k0 + ca * epc) * EB) as usize);
            let b0 = self
                .b
                .wrapping_add(((k0 + rb) * self.ldb_bytes + (self.col0 + cb * epc) * EB) as usize);
            let da = base.add((ra * A_ROW + swz_a(ra, ca) * 16) as usize);
            let db = base.add(b_at(rb, cb) as usize);
            let (rows_a, rows_b) = (THREADS / A_CHUNKS, THREADS / chunks_per_row);
            let b_step = b_at(rows_b, 0) - b_at(0, 0);
            unroll!(8, J => {
                let j = J as u32;
                // SAFETY (both): interior tile (checked above): every chunk is 16 bytes
                // inside A or B, 16-byte aligned (contract); destinations inside stage s.
                if J < Self::CPA && WHICH != 2 {
                    unsafe { copy_async::<16, u8>(da.add((j * rows_a * A_ROW) as usize), a0.wrapping_add((j * rows_a * self.lda_bytes) as usize), 16) };
                }
                if J < Self::CPB && WHICH != 1 {
                    unsafe { copy_async::<16, u8>(db.add((j * b_step) as usize), b0.wrapping_add((j * rows_b * self.ldb_bytes) as usize), 16) };
                }
            });
            return;
        }
        // A: TC_BM rows x A_CHUNKS chunks, CPA per thread.
        unroll!(8, J => {
            if J < Self::CPA && WHICH != 2 {
                let q = self.t + J as u32 * THREADS;
                let (r, c) = (q / A_CHUNKS, q % A_CHUNKS);
                let (gr, gk) = (self.row0 + r, k0 + c * epc);
                let valid = if gr < self.m && gk < self.k { (self.k - gk).min(epc) } else { 0 };
                let src = if valid > 0 { self.a.wrapping_add((gr * self.lda_bytes + gk * EB) as usize) } else { self.a };
                // SAFETY: `valid` elements of row gr are inside A and 16-byte aligned (contract);
                // the destination chunk is inside stage s.
                unsafe { load_chunk::<EB>(base.add((r * A_ROW + swz_a(r, c) * 16) as usize), src, valid, epc) };
            }
        });
        // B: the K step's rows of BN columns, CPB per thread.
        unroll!(8, J => {
            if J < Self::CPB && WHICH != 1 {
                let q = self.t + J as u32 * THREADS;
                let (kr, c) = (q / chunks_per_row, q % chunks_per_row);
                let (gk, gc) = (k0 + kr, self.col0 + c * epc);
                let valid = if gk < self.k && gc < self.n { (self.n - gc).min(epc) } else { 0 };
                let src = if valid > 0 { self.b.wrapping_add((gk * self.ldb_bytes + gc * EB) as usize) } else { self.b };
                // SAFETY: as for A.
                unsafe { load_chunk::<EB>(base.add(b_at(kr, c) as usize), src, valid, epc) };
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
        let (word, shift) = if EB == 4 { (i, 0) } else { (i / 2, 16 * (i % 2)) };
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

/// Which inputs a launch multiplies.
pub const BF16: u32 = 0;
/// See [`BF16`].
pub const F16: u32 = 1;
/// See [`BF16`].
pub const TF32: u32 = 2;

/// One product, as the body needs it: byte pointers and strides of A and B.
#[derive(Clone, Copy)]
pub struct Problem {
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
        $crate::matmul_mma_pipelined::Problem::new(
            a.ptr as *const u8,
            b.ptr as *const u8,
            c.ptr,
            (a.rows, b.cols, a.cols),
            (a.ld, b.ld, c.ld),
            p.epilogue as u32 != 0,
        )
    }};
}
pub(crate) use problem_of;

impl Problem {
    /// `(m, n, k)` and `(lda, ldb, ldc)` in elements.
    #[inline(always)]
    pub fn new(
        a: *const u8,
        b: *const u8,
        c: *mut f32,
        (m, n, k): (u32, u32, u32),
        (lda, ldb, ldc): (u32, u32, u32),
        relu: bool,
    ) -> Problem {
        Problem { a, b, c, m, n, k, lda, ldb, ldc, relu }
    }
}

/// The kernel for `KIND` ([`BF16`], [`F16`] or [`TF32`] inputs) with a `TC_BM x BN`
/// block tile of `THREADS` threads (warps of 64x64, `BN / 64` across) and a ring of
/// `STAGES` shared stages.
///
/// # Safety
/// As [`matmul_mma_pipelined_bf16()`], with `BN`, `THREADS` and `STAGES` those the
/// kernel's launch and shared size were declared with.
#[inline(always)]
pub(crate) unsafe fn body<
    const KIND: u32,
    const BN: u32,
    const THREADS: u32,
    const STAGES: u32,
    const ORDER: u32,
>(
    p: Problem,
) {
    const {
        assert!(
            (BN == 128 || BN == 256)
                && THREADS == (TC_BM / TC_WARP_M) * (BN / TC6_WARP_N) * 32
                && (STAGES == 3 || STAGES == 4)
        )
    };
    let tf32 = KIND == TF32;
    let smem = dynamic_shared::<u8>();
    let (m, n, k) = (p.m, p.n, p.k);
    let (row0, col0) = block_origin(BN);
    let eb = if tf32 { 4 } else { 2 };
    let stage_bytes = tc6_stage_bytes(BN, eb);
    let ld = Loader::<BN, THREADS> {
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
        interior: row0 + TC_BM <= m && col0 + BN <= n,
    };
    // SAFETY (both): the kernel's contract; the stage is unread until a wait and a barrier.
    let issue = |s: u32, kt: u32| unsafe {
        if tf32 {
            ld.issue::<4, TC6_BK_TF32, 0>(smem, s, kt)
        } else {
            ld.issue::<2, TC6_BK, 0>(smem, s, kt)
        }
    };
    // A's copies (WHICH = 1) or B's (2) only, as `issue`.
    macro_rules! issue_half {
        ($s:expr, $kt:expr, $which:literal) => {
            // SAFETY: as for `issue`.
            unsafe {
                if tf32 {
                    ld.issue::<4, TC6_BK_TF32, $which>(smem, $s, $kt)
                } else {
                    ld.issue::<2, TC6_BK, $which>(smem, $s, $kt)
                }
            }
        };
    }
    let warps_n = BN / TC6_WARP_N;
    let (w, lane) = (warp_id(), lane_id());
    let (wm, wn) = (w / warps_n * TC_WARP_M, w % warps_n * TC6_WARP_N);
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
    // Fragments of a quarter K step (one k16 step, or one k8 step for TF32): A of the
    // 4 m16 tiles, B of the NT n8 tiles.
    let frags = |kt: u32, kk: u32| -> ([[u32; 4]; 4], [[u32; 2]; NT]) {
        let base = smem.add(((kt % STAGES) * stage_bytes) as usize);
        let mut bf = [[0u32; 2]; NT];
        if tf32 {
            // Single f32 words of k-rows tq and tq + 4, column g of each n8 tile, rounded
            // to TF32: one base address per lane, every load a constant offset from it.
            let lane_b = base.add((A_BYTES + b_tf32_offset(BN, kk * 8 + tq, wn + g)) as usize).cast::<f32>();
            unroll!(8, NJ => {
                unroll!(2, R => {
                    let off = b_tf32_offset(BN, 4 * R as u32, NJ as u32 * 8) / 4;
                    // SAFETY: inside stage kt % STAGES, landed and published by the last barrier.
                    bf[NJ][R] = to_tf32(unsafe { lane_b.add(off as usize).read() });
                });
            });
        } else {
            // Two n8 tiles per `ldmatrix.x4.trans` (B is k-major in shared memory).
            unroll!(4, NJ => {
                let kr = kk * 16 + lr;
                let c = (wn + NJ as u32 * 16 + lc) / 8;
                // SAFETY: inside stage kt % STAGES, landed and published by the last
                // barrier; 16-byte aligned rows.
                let r = unsafe { ldmatrix_x4_trans(base.add((A_BYTES + kr * BN * 2 + swz_b(kr, c) * 16) as usize)) };
                bf[2 * NJ] = [r[0], r[1]];
                bf[2 * NJ + 1] = [r[2], r[3]];
            });
        }
        let mut af = [[0u32; 4]; 4];
        unroll!(4, MI => {
            let row = wm + MI as u32 * 16 + lr;
            let c = kk * 2 + lc / 8;
            // SAFETY: as above.
            let raw = unsafe { ldmatrix_x4(base.add((row * A_ROW + swz_a(row, c) * 16) as usize)) };
            // An 8x8 matrix of 16-bit elements is an 8x4 matrix of f32: for TF32 the
            // same load gives the (g, t) / (g+8, t) / (g, t+4) / (g+8, t+4) fragment.
            af[MI] = if tf32 { raw.map(|x| to_tf32(f32::from_bits(x))) } else { raw };
        });
        (af, bf)
    };
    let mma_all = |acc: &mut [[[f32; 4]; NT]; 4], (af, bf): ([[u32; 4]; 4], [[u32; 2]; NT])| {
        unroll!(4, MI => {
            unroll!(8, NJ => {
                // SAFETY: the whole warp executes every mma (no divergence in the loop).
                acc[MI][NJ] = unsafe {
                    match KIND {
                        BF16 => mma_bf16(af[MI], bf[NJ], acc[MI][NJ]),
                        F16 => mma_f16(af[MI], bf[NJ], acc[MI][NJ]),
                        _ => mma_tf32(af[MI], bf[NJ], acc[MI][NJ]),
                    }
                };
            });
        });
    };
    let mut kt = 0;
    while kt < ktiles {
        wait_ring::<STAGES>();
        sync_threads();
        let next = kt + STAGES - 1;
        let refill = next < ktiles;
        // Stage next % STAGES was last read in step kt - 1, before the barrier.
        if ORDER == 0 {
            if refill {
                issue(next % STAGES, next);
            }
            commit();
            unroll!(4, KK => {
                mma_all(&mut acc, frags(kt, KK as u32));
            });
        } else if ORDER == 1 {
            // The first fragments' loads go out before the copies.
            let f0 = frags(kt, 0);
            if refill {
                issue(next % STAGES, next);
            }
            commit();
            mma_all(&mut acc, f0);
            unroll!(4, KK => {
                if KK >= 1 {
                    mma_all(&mut acc, frags(kt, KK as u32));
                }
            });
        } else {
            // A's copies after the first k16 step's fragments, B's after the second's.
            let f0 = frags(kt, 0);
            if refill {
                issue_half!(next % STAGES, next, 1);
            }
            mma_all(&mut acc, f0);
            let f1 = frags(kt, 1);
            if refill {
                issue_half!(next % STAGES, next, 2);
            }
            commit();
            mma_all(&mut acc, f1);
            unroll!(4, KK => {
                if KK >= 2 {
                    mma_all(&mut acc, frags(kt, KK as u32));
                }
            });
        }
        kt += 1;
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

kernel! {
    /// `C = epilogue(A · B)` on tensor cores, bf16 inputs, f32 accumulation and output,
    /// fed by a 3-stage `cp.async` pipeline and `ldmatrix` from swizzled tiles.
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
        unsafe { body::<BF16, TC_BN, TC6_THREADS, TC_STAGES, 0>(problem_of!(p)) }
    }
}

kernel! {
    /// As [`matmul_mma_pipelined_bf16()`], f16 inputs.
    ///
    /// # Safety
    /// As [`matmul_mma_pipelined_bf16()`].
    #[launch(threads = TC6_THREADS, min_blocks = 2, shared = TC_SMEM_BYTES)]
    pub unsafe fn matmul_mma_pipelined_f16(p: MatmulParams16) {
        // SAFETY: forwarded.
        unsafe { body::<F16, TC_BN, TC6_THREADS, TC_STAGES, 0>(problem_of!(p)) }
    }
}

kernel! {
    /// `C = epilogue(A · B)` on tensor cores in TF32: f32 inputs rounded to TF32
    /// (`cvt.rna`), f32 accumulation and output, as PyTorch with
    /// `allow_tf32 = True`. Same pipeline and tiles as
    /// [`matmul_mma_pipelined_bf16()`] with K steps of 32 and `mma.m16n8k8`.
    ///
    /// # Safety
    /// As [`matmul_mma_pipelined_bf16()`], with `lda` and `ldb` multiples of 4.
    ///
    /// # Parameters
    /// One [`MatmulParams`] (f32 `a`, `b`, `c`).
    #[launch(threads = TC6_THREADS, min_blocks = 2, shared = TC_SMEM_BYTES_TF32)]
    pub unsafe fn matmul_mma_pipelined_tf32(p: MatmulParams) {
        // SAFETY: forwarded.
        unsafe { body::<TF32, TC_BN, TC6_THREADS, TC_STAGES, 0>(problem_of!(p)) }
    }
}

kernel! {
    /// Trial: [`matmul_mma_pipelined_bf16()`], copies after the first fragments.
    ///
    /// # Safety
    /// As [`matmul_mma_pipelined_bf16()`].
    #[launch(threads = TC6_THREADS, min_blocks = 2, shared = TC_SMEM_BYTES)]
    pub unsafe fn matmul_mma_o1_bf16(p: MatmulParams16) {
        // SAFETY: forwarded.
        unsafe { body::<BF16, TC_BN, TC6_THREADS, TC_STAGES, 1>(problem_of!(p)) }
    }
}

kernel! {
    /// Trial: [`matmul_mma_pipelined_bf16()`], copies split over two k16 steps.
    ///
    /// # Safety
    /// As [`matmul_mma_pipelined_bf16()`].
    #[launch(threads = TC6_THREADS, min_blocks = 2, shared = TC_SMEM_BYTES)]
    pub unsafe fn matmul_mma_o2_bf16(p: MatmulParams16) {
        // SAFETY: forwarded.
        unsafe { body::<BF16, TC_BN, TC6_THREADS, TC_STAGES, 2>(problem_of!(p)) }
    }
}

kernel! {
    /// Trial: [`matmul_mma_pipelined_tf32()`], copies after the first fragments.
    ///
    /// # Safety
    /// As [`matmul_mma_pipelined_tf32()`].
    #[launch(threads = TC6_THREADS, min_blocks = 2, shared = TC_SMEM_BYTES_TF32)]
    pub unsafe fn matmul_mma_o1_tf32(p: MatmulParams) {
        // SAFETY: forwarded.
        unsafe { body::<TF32, TC_BN, TC6_THREADS, TC_STAGES, 1>(problem_of!(p)) }
    }
}

kernel! {
    /// Trial: [`matmul_mma_pipelined_tf32()`], copies split over two k8 steps.
    ///
    /// # Safety
    /// As [`matmul_mma_pipelined_tf32()`].
    #[launch(threads = TC6_THREADS, min_blocks = 2, shared = TC_SMEM_BYTES_TF32)]
    pub unsafe fn matmul_mma_o2_tf32(p: MatmulParams) {
        // SAFETY: forwarded.
        unsafe { body::<TF32, TC_BN, TC6_THREADS, TC_STAGES, 2>(problem_of!(p)) }
    }
}
