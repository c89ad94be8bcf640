//! Matmul + ReLU, stage 5: stage 4's warp tiling fed by a multi-stage `cp.async`
//! pipeline.
//!
//! Stage 4 ([`matmul_relu_warptiled()`](crate::matmul_warptiled::matmul_relu_warptiled()))
//! stages each K step through registers: `LDG` the next step, compute the current
//! one, then `STS` what arrived. ncu on the H100 at 4096^3 (2026-11-22) shows where
//! its warps wait, per issued instruction: 0.9 cycles on a long scoreboard (the
//! `STS` waiting for its `LDG`) and 0.6-0.7 at the barrier. Its 128 registers are all
//! in use, so it cannot prefetch further ahead.
//!
//! Here the tiles travel by [`copy_async`] (`LDGSTS`): global to shared memory
//! with no registers in between. `STAGES` shared buffers keep `STAGES - 1` K steps
//! in flight, and one barrier per step serves two purposes: it publishes step `s`,
//! and it frees the buffer that step `s + STAGES - 1` overwrites.
//!
//! ```text
//! prologue: issue steps 0 .. STAGES-2, one commit group each
//! for s in 0..steps:
//!     wait until step s's group has landed (at most STAGES-2 pending)
//!     barrier            // step s visible to all; step s-1's buffer free
//!     issue step s+STAGES-1 into that buffer; commit
//!     compute step s     // the copies fly meanwhile
//! ```
//!
//! Edges need no branches in the copy path: a copy outside the matrix reads 0
//! source bytes and zero-fills its destination (see [`crate::pipeline`]).
use crate::config::{MM_BM, MM_BN, MM_THREADS};
use crate::matmul_tiled::{TM, TN};
use crate::matmul_warptiled::WarpTiling;
use crate::memory::is_aligned16;
use crate::pipeline::{commit, copy_async, wait};
use crate::shared::Smem;
use crate::swizzle;
use crate::thread::{sync_threads, thread_idx};
use crate::{kernel, launch_bounds, shared_array, unroll};

/// Issues the copies of one K step (at `k0`) into one stage: per 8-deep slice, 4
/// floats of A (4-byte copies, transposed and swizzled like stage 4's stores) and 4
/// of B (one 16-byte copy when B's rows are aligned, else 4 of 4 bytes).
///
/// # Safety
/// The kernel's contract; `a_st`, `b_st` are a stage of the caller's shared arrays
/// that no thread reads until the matching `wait` and a barrier.
#[inline(always)]
unsafe fn issue<const L: usize>(tl: &WarpTiling<L>, a_st: Smem<f32>, b_st: Smem<f32>, k0: u32) {
    let gr = tl.row0 + tl.la_row;
    let gc = tl.col0 + tl.lb_col;
    let a_col = swizzle::matmul_a(tl.la_k, tl.la_row);
    if tl.interior && k0 + WarpTiling::<L>::BK <= tl.k {
        // Interior block, whole step: every copy is in range and B's are aligned.
        let pa = tl.a.wrapping_add((gr * tl.lda + k0 + tl.la_k) as usize);
        let pb = tl.b.wrapping_add(((k0 + tl.lb_k) * tl.ldb + gc) as usize);
        unroll!(2, LI => {
            if LI < L {
                let l = LI as u32;
                unroll!(4, J => {
                    let kr = 8 * l + tl.la_k + J as u32;
                    // SAFETY: row gr < m, column k0 + kr < k; stage row kr < BK.
                    unsafe { copy_async::<4>(a_st.add((kr * MM_BM + a_col) as usize), pa.wrapping_add(8 * LI + J), 4) };
                });
                // SAFETY: row k0 + 8l + lb_k < k, columns gc..gc+4 <= n, 16-aligned.
                unsafe { copy_async::<16>(b_st.add(((8 * l + tl.lb_k) * MM_BN + tl.lb_col) as usize), pb.wrapping_add((8 * l * tl.ldb) as usize), 16) };
            }
        });
        return;
    }
    // Edge block or ragged step: bounds-checked copies.
    let row_ok = gr < tl.m;
    let vec_b = is_aligned16(tl.b) && tl.ldb % 4 == 0;
    unroll!(2, LI => {
        if LI < L {
            let l = LI as u32;
            unroll!(4, J => {
                let kr = 8 * l + tl.la_k + J as u32; // row of the stage
                let ka = k0 + kr;
                let ok = row_ok && ka < tl.k;
                let src = if ok { tl.a.wrapping_add((gr * tl.lda + ka) as usize) } else { tl.a };
                // SAFETY: `src` is in A when `ok`, else A's base with 0 bytes read;
                // the destination is inside the stage (row kr < BK, column < 128).
                unsafe { copy_async::<4>(a_st.add((kr * MM_BM + a_col) as usize), src, if ok { 4 } else { 0 }) };
            });
            let kr = 8 * l + tl.lb_k;
            let kb = k0 + kr;
            let dst = b_st.add((kr * MM_BN + tl.lb_col) as usize);
            let row_in = kb < tl.k;
            if vec_b {
                // Columns gc.. of which min(4, n - gc) exist: copy those, zero the rest.
                let valid = if row_in && gc < tl.n { (tl.n - gc).min(4) } else { 0 };
                let src = if valid > 0 { tl.b.wrapping_add((kb * tl.ldb + gc) as usize) } else { tl.b };
                // SAFETY: `valid` floats of row kb from column gc are in B, 16-byte
                // aligned (vec_b); else B's base with 0 bytes read.
                unsafe { copy_async::<16>(dst, src, 4 * valid) };
            } else {
                unroll!(4, J => {
                    let ok = row_in && gc + (J as u32) < tl.n;
                    let src = if ok { tl.b.wrapping_add((kb * tl.ldb + gc + J as u32) as usize) } else { tl.b };
                    // SAFETY: as above, one float at a time.
                    unsafe { copy_async::<4>(dst.add(J), src, if ok { 4 } else { 0 }) };
                });
            }
        }
    });
}

/// The stage-5 kernel body: `L` 8-deep slices per K step, `S` shared stages of
/// `8L x 128` floats per operand in `a_s`, `b_s`.
///
/// # Safety
/// The kernel's contract; `a_s`, `b_s` are the calling kernel's own shared arrays of
/// `S * WarpTiling::<L>::STAGE` floats each.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn pipelined<const L: usize, const S: usize, const SPLIT: usize>(
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
    const { assert!(L == 1 || L == 2, "1 or 2 slices per K step") };
    let stage = WarpTiling::<L>::STAGE;
    let bk = WarpTiling::<L>::BK;
    let tl = WarpTiling::<L>::new(a, b, c, m, n, k, lda, ldb, ldc, thread_idx().x);
    let mut acc = [[0.0f32; TN]; TM];
    let steps = k.div_ceil(bk);
    // SAFETY (all blocks below): kernel contract; stage offsets `i * stage` with
    // i < S stay inside the caller's arrays; the pipeline discipline is the module's.
    let mut p = 0usize;
    while p < S - 1 {
        if (p as u32) < steps {
            unsafe { issue(&tl, a_s.add(p * stage), b_s.add(p * stage), p as u32 * bk) };
        }
        commit();
        p += 1;
    }
    let (mut cur, mut nxt) = (0usize, S - 1); // stages of step s and of step s + S - 1
    let mut s = 0u32;
    while s < steps {
        wait_for_stage::<S>();
        sync_threads();
        let ahead = s + S as u32 - 1;
        // The first SPLIT k rows are computed before the copies are issued, so their
        // shared loads are not queued behind the copies in the memory pipe.
        unsafe { tl.compute_range::<0, SPLIT>(a_s.add(cur * stage), b_s.add(cur * stage), 0, &mut acc) };
        if ahead < steps {
            unsafe { issue(&tl, a_s.add(nxt * stage), b_s.add(nxt * stage), ahead * bk) };
        }
        commit();
        unsafe { tl.compute_range::<SPLIT, 8>(a_s.add(cur * stage), b_s.add(cur * stage), 0, &mut acc) };
        if L > 1 {
            unsafe { tl.compute(a_s.add(cur * stage), b_s.add(cur * stage), 1, &mut acc) };
        }
        cur = if cur + 1 == S { 0 } else { cur + 1 };
        nxt = if nxt + 1 == S { 0 } else { nxt + 1 };
        s += 1;
    }
    unsafe { tl.write(c, ldc, relu, &acc) };
}

/// `wait::<S - 2>()`: the oldest in-flight step has landed.
#[inline(always)]
fn wait_for_stage<const S: usize>() {
    const { assert!(S >= 2 && S <= 4, "the pipelined matmul has 2 to 4 stages") };
    match S {
        2 => wait::<0>(),
        3 => wait::<1>(),
        _ => wait::<2>(),
    }
}

launch_bounds!(matmul_relu_pipelined, MM_THREADS, 2);
launch_bounds!(matmul_relu_pipelined_k16, MM_THREADS, 2);

/// Stages of [`matmul_relu_pipelined()`] (K steps of 8): 4 x 8 KiB.
pub const STAGES: usize = 4;
/// Stages of [`matmul_relu_pipelined_k16()`] (K steps of 16): 3 x 16 KiB.
pub const STAGES_K16: usize = 3;

kernel! {
    /// `C = relu?(A · B)`: warp-tiled (as stage 4), K steps of 8, a 4-stage
    /// `cp.async` pipeline. Same formula, contract and parameters as
    /// [`matmul_relu_tiled()`](crate::matmul_tiled::matmul_relu_tiled()).
    ///
    /// # Safety
    /// As `matmul_relu_tiled`.
    ///
    /// # Tiling
    /// Block tile 128x128, warp tile 32x64, thread tile 8x8 (stage 4's mapping);
    /// 4 shared stages of `As[8][128]` (transposed, swizzled) and `Bs[8][128]`
    /// (32 KiB), 3 K steps in flight.
    ///
    /// # Thread Mapping
    /// As stage 4: thread `t` copies A row `t/2`, columns `4(t%2)..+4` (four 4-byte
    /// copies) and B row `t/32`, columns `4(t%32)..+4` (one 16-byte copy).
    pub unsafe fn matmul_relu_pipelined(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, relu: u32) {
        let a_s = shared_array!(MM_PL_A, f32, STAGES * WarpTiling::<1>::STAGE);
        let b_s = shared_array!(MM_PL_B, f32, STAGES * WarpTiling::<1>::STAGE);
        // SAFETY: kernel contract; the arrays are this kernel's own.
        unsafe { pipelined::<1, STAGES, 2>(a, b, c, m, n, k, lda, ldb, ldc, relu, a_s, b_s) };
    }
}

kernel! {
    /// [`matmul_relu_pipelined()`] with K steps of 16 and 3 stages (48 KiB).
    ///
    /// # Safety
    /// As `matmul_relu_tiled`.
    pub unsafe fn matmul_relu_pipelined_k16(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, relu: u32) {
        let a_s = shared_array!(MM_PL16_A, f32, STAGES_K16 * WarpTiling::<2>::STAGE);
        let b_s = shared_array!(MM_PL16_B, f32, STAGES_K16 * WarpTiling::<2>::STAGE);
        // SAFETY: kernel contract; the arrays are this kernel's own.
        unsafe { pipelined::<2, STAGES_K16, 2>(a, b, c, m, n, k, lda, ldb, ldc, relu, a_s, b_s) };
    }
}

/// Issues slice `l` of B for the K step at `k0` into one stage: one 16-byte copy
/// when B's rows are aligned (zero-filled past the edges), else 4 of 4 bytes.
///
/// # Safety
/// As [`issue`].
#[inline(always)]
unsafe fn issue_b<const L: usize>(tl: &WarpTiling<L>, b_st: Smem<f32>, k0: u32, l: u32) {
    let gc = tl.col0 + tl.lb_col;
    let kr = 8 * l + tl.lb_k;
    let kb = k0 + kr;
    let dst = b_st.add((kr * MM_BN + tl.lb_col) as usize);
    if tl.interior && k0 + WarpTiling::<L>::BK <= tl.k {
        // SAFETY: row kb < k, columns gc..gc+4 <= n, 16-aligned (interior block).
        unsafe { copy_async::<16>(dst, tl.b.wrapping_add((kb * tl.ldb + gc) as usize), 16) };
    } else if is_aligned16(tl.b) && tl.ldb % 4 == 0 {
        let valid = if kb < tl.k && gc < tl.n { (tl.n - gc).min(4) } else { 0 };
        let src = if valid > 0 { tl.b.wrapping_add((kb * tl.ldb + gc) as usize) } else { tl.b };
        // SAFETY: `valid` floats of row kb from column gc are in B, 16-byte aligned;
        // else B's base with 0 bytes read.
        unsafe { copy_async::<16>(dst, src, 4 * valid) };
    } else {
        unroll!(4, J => {
            let ok = kb < tl.k && gc + (J as u32) < tl.n;
            let src = if ok { tl.b.wrapping_add((kb * tl.ldb + gc + J as u32) as usize) } else { tl.b };
            // SAFETY: as above, one float at a time.
            unsafe { copy_async::<4>(dst.add(J), src, if ok { 4 } else { 0 }) };
        });
    }
}

launch_bounds!(matmul_relu_hybrid, MM_THREADS, 2);

kernel! {
    /// Candidate: stage 4 (K steps of 8, two stages) with B copied by `cp.async` and
    /// A still through registers (its transpose needs them).
    ///
    /// # Safety
    /// As `matmul_relu_tiled`.
    pub unsafe fn matmul_relu_hybrid(a: *const f32, b: *const f32, c: *mut f32, m: u32, n: u32, k: u32, lda: u32, ldb: u32, ldc: u32, relu: u32) {
        let a_s = shared_array!(MM_HY_A, f32, 2 * WarpTiling::<1>::STAGE);
        let b_s = shared_array!(MM_HY_B, f32, 2 * WarpTiling::<1>::STAGE);
        let stage = WarpTiling::<1>::STAGE;
        let tl = WarpTiling::<1>::new(a, b, c, m, n, k, lda, ldb, ldc, thread_idx().x);
        let mut acc = [[0.0f32; TN]; TM];
        let steps = k.div_ceil(8);
        // SAFETY (all blocks below): kernel contract; stage offsets stay inside this
        // kernel's own arrays. Step s+1's B copies land by the wait at the end of step
        // s, and the barrier after it publishes them with A's stores.
        unsafe {
            tl.store_a(a_s, 0, tl.load_a(0, 0));
            issue_b(&tl, b_s, 0, 0);
        }
        commit();
        wait::<0>();
        sync_threads();
        let mut s = 0u32;
        while s < steps {
            let cur = (s as usize % 2) * stage;
            let nxt = stage - cur;
            let na = unsafe { tl.load_a((s + 1) * 8, 0) };
            unsafe { issue_b(&tl, b_s.add(nxt), (s + 1) * 8, 0) };
            commit();
            unsafe { tl.compute(a_s.add(cur), b_s.add(cur), 0, &mut acc) };
            unsafe { tl.store_a(a_s.add(nxt), 0, na) };
            wait::<0>();
            sync_threads();
            s += 1;
        }
        unsafe { tl.write(c, ldc, relu, &acc) };
    }
}
