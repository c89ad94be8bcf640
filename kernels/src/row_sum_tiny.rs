//! Row sums of millions of rows of 1 to 3 columns: four rows per thread, read as
//! `C` 16-byte vectors and written as one.
//!
//! `out[r] = Σ_c x[r, c]`, `c < C` (`C` = 1, 2 or 3).
//!
//! A row of 3 floats is 12 bytes: [`crate::row_sum`]'s lane groups give it one lane,
//! which reads it with 3 scalar loads and writes 4 bytes. On the H100 (2026-11-23)
//! that ran 4194304 x 3 in 0.0325 ms against `torch.compile`'s 0.0280. Here a thread
//! takes 4 consecutive rows, `4·C` floats that start on a 16-byte boundary (the rows
//! are contiguous and the matrix aligned; the host checks), loads them as `C`
//! vectors, adds each row's `C` floats in registers (every index a constant) and
//! writes the 4 sums as one 16-byte store: a quarter of the load instructions and of
//! the store instructions. The last `rows % 4` rows take scalar loads. Measured
//! (same GPU and day, commit 6d4e7fe): 0.0283 ms against `torch.compile`'s 0.0268,
//! still 1.06x behind; two groups per thread did not help (0.0289). Loads through
//! the read-only path (`ld.global.nc`, as `row_sum_stream`): 0.0281 against 0.0268
//! (commit after f80d442), within the spread between runs. Then coalesced loads:
//! a warp's 128 rows are `32·C` consecutive vectors, loaded lane by lane (each
//! instruction 512 contiguous bytes, where a thread's own `C` vectors 48 bytes apart
//! touched twice the sectors per instruction), passed through shared memory to
//! the thread that sums them: 0.0279 against 0.0269 (commit 63172cc), again within
//! the spread; both kept, neither proven.
//!
//! On the H200 (2026-11-26, docs/PERFORMANCE.md session 29) the same design in CUDA C++
//! ran 0.0204 ms under the write flush, level with `torch.compile`, where this kernel
//! ran 0.0213: its staging went through generic `ST.E`/`LD.E` (a generic pointer into
//! shared memory) where the C++ has `STS`/`LDS`. It now stages through [`Smem`]'s
//! `st/ld.shared`, and reads the rows as their last use where the host asks (inputs up
//! to `ROW_SUM_LAST_USE_MAX_BYTES`; [`load4_nc_last_if`]: evict-first lines,
//! 0.0199-0.0200 ms in the probe).
use crate::config::ELEMENTWISE_THREADS;
use simt_std::memory::{load4_nc, load4_nc_last_if, store4, F32x4};
use simt_std::shared::Smem;
use simt_std::thread::{block_dim, block_idx, thread_idx};
use simt_std::{kernel, unroll};
use simt_std::{shared_array, warp};

/// Element `i` (0..4) of `v`.
#[inline(always)]
fn at(v: F32x4, i: usize) -> f32 {
    match i {
        0 => v.x,
        1 => v.y,
        2 => v.z,
        _ => v.w,
    }
}

/// Rows `r0 .. r0 + 4` from their `4·C` floats as `C` vectors: each row's `C` floats
/// added in registers, the 4 sums stored as one vector.
///
/// # Safety
/// `out[r0..r0 + 4]` is writable and 16-byte aligned.
#[inline(always)]
unsafe fn sum_and_store<const C: usize>(v: [F32x4; C], out: *mut f32, r0: usize) {
    let mut s = [0.0f32; 4];
    unroll!(4, J => {
        let mut c = 0;
        while c < C {
            let e = J * C + c;
            s[J] += at(v[e / 4], e % 4);
            c += 1;
        }
    });
    // SAFETY: the caller's.
    unsafe {
        store4(
            out.add(r0),
            F32x4 {
                x: s[0],
                y: s[1],
                z: s[2],
                w: s[3],
            },
        )
    };
}

/// The body of `row_sum_tiny_*`.
///
/// # Safety
/// As the kernels'.
#[inline(always)]
unsafe fn tiny<const C: usize>(x: *const f32, out: *mut f32, rows: u32, last: bool) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    let (r0, rows) = (4 * i, rows as usize);
    let lane = (thread_idx().x % 32) as usize;
    // The warp's 128 rows (`32·C` vectors), when they all exist.
    let first = i - lane;
    let stage: Smem<f32> = shared_array!(ROW_SUM_TINY, f32, (ELEMENTWISE_THREADS * 4 * 3) as usize)
        .add((thread_idx().x / 32) as usize * 128 * C);
    if 4 * (first + 32) <= rows {
        // Coalesced: lane l loads vectors l, l + 32, ... of the warp's span, all
        // before any store to the stage (an asm store is a memory clobber that the
        // loads would not cross); through
        // shared memory, each thread then takes its own C vectors (48-byte strides
        // for C = 3: conflict-free per quarter warp).
        let mut g = [F32x4::default(); C];
        let mut k = 0;
        while k < C {
            // SAFETY: vector lane + 32k of the warp's 32·C lies in its 128 rows, which
            // exist (checked); 16-byte aligned (the matrix is); x is read-only during
            // the kernel (the contract: out does not overlap it).
            g[k] = unsafe { load4_nc_last_if(x.add(4 * C * first + 4 * (lane + 32 * k)), last) };
            k += 1;
        }
        let mut k = 0;
        while k < C {
            // SAFETY: inside this warp's 128·C floats of the block's array, 16-byte
            // aligned (the array is; offsets are multiples of 4 floats).
            unsafe { stage.add(4 * (lane + 32 * k)).store4(g[k]) };
            k += 1;
        }
        warp::sync();
        let mut v = [F32x4::default(); C];
        let mut k = 0;
        while k < C {
            // SAFETY: as above; written by the warp before the sync.
            v[k] = unsafe { stage.add(4 * C * lane + 4 * k).load4() };
            k += 1;
        }
        // SAFETY: rows r0..r0 + 4 exist, so out[r0..r0 + 4] does; 16-byte aligned
        // (out is, and r0 % 4 == 0).
        unsafe { sum_and_store::<C>(v, out, r0) };
    } else if r0 + 4 <= rows {
        let mut v = [F32x4::default(); C];
        let mut k = 0;
        while k < C {
            // SAFETY: floats 4C·i + 4k ..+4 lie in rows r0..r0+4; 16-byte aligned (the
            // matrix is, and 4C·i floats are 16C·i bytes); nothing writes x during
            // the kernel (the contract: out does not overlap it), as the read-only
            // path needs.
            v[k] = unsafe { load4_nc(x.add(4 * C * i + 4 * k)) };
            k += 1;
        }
        // SAFETY: rows r0..r0 + 4 exist, so out[r0..r0 + 4] does; 16-byte aligned
        // (out is, and r0 % 4 == 0).
        unsafe { sum_and_store::<C>(v, out, r0) };
    } else if r0 < rows {
        let mut r = r0;
        while r < rows {
            let mut s = 0.0f32;
            let mut c = 0;
            while c < C {
                // SAFETY: row r < rows, column c < C.
                s += unsafe { *x.add(r * C + c) };
                c += 1;
            }
            // SAFETY: r < rows.
            unsafe { *out.add(r) = s };
            r += 1;
        }
    }
}

macro_rules! tiny_kernel {
    ($name:ident, $c:literal) => {
        kernel! {
            #[doc = concat!("`out[r] = Σ_c x[r, c]` for rows of exactly ", $c, " column(s), four rows per thread (see the module doc).")]
            ///
            /// # Safety
            /// `x` readable for `rows·C` contiguous floats (row stride `C`), `out`
            /// writable for `rows` floats, not overlapping `x` (x is read through the
            /// read-only path); both 16-byte aligned.
            ///
            /// # Parameters
            /// * `last`: nonzero to read `x` as its last use (evict-first lines; the host's
            ///   choice by size: `ROW_SUM_LAST_USE_MAX_BYTES`).
            ///
            /// # Thread Mapping
            /// Thread `i` (of the whole grid) sums rows `4i .. 4i + 4`;
            /// `grid.x = ceil(rows / (4·256))`.
            #[launch(threads = ELEMENTWISE_THREADS)]
            pub unsafe fn $name(x: *const f32, out: *mut f32, rows: u32, last: u32) {
                // SAFETY: the kernel's contract, forwarded.
                unsafe { tiny::<$c>(x, out, rows, last != 0) }
            }
        }
    };
}

tiny_kernel!(row_sum_tiny_1, 1);
tiny_kernel!(row_sum_tiny_2, 2);
tiny_kernel!(row_sum_tiny_3, 3);
