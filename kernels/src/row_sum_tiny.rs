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
//! (commit after f80d442), within the spread between runs.
use crate::config::ELEMENTWISE_THREADS;
use simt_std::memory::{load4_nc, store4, F32x4};
use simt_std::thread::{block_dim, block_idx, thread_idx};
use simt_std::{kernel, unroll};

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

/// The body of `row_sum_tiny_*`.
///
/// # Safety
/// As the kernels'.
#[inline(always)]
unsafe fn tiny<const C: usize>(x: *const f32, out: *mut f32, rows: u32) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    let (r0, rows) = (4 * i, rows as usize);
    if r0 + 4 <= rows {
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
        let mut s = [0.0f32; 4];
        unroll!(4, J => {
            let mut c = 0;
            while c < C {
                let e = J * C + c;
                s[J] += at(v[e / 4], e % 4);
                c += 1;
            }
        });
        // SAFETY: out[r0..r0+4] exists; 16-byte aligned (out is, r0 % 4 == 0).
        unsafe { store4(out.add(r0), F32x4 { x: s[0], y: s[1], z: s[2], w: s[3] }) };
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
            /// # Thread Mapping
            /// Thread `i` (of the whole grid) sums rows `4i .. 4i + 4`;
            /// `grid.x = ceil(rows / (4·256))`.
            #[launch(threads = ELEMENTWISE_THREADS)]
            pub unsafe fn $name(x: *const f32, out: *mut f32, rows: u32) {
                // SAFETY: the kernel's contract, forwarded.
                unsafe { tiny::<$c>(x, out, rows) }
            }
        }
    };
}

tiny_kernel!(row_sum_tiny_1, 1);
tiny_kernel!(row_sum_tiny_2, 2);
tiny_kernel!(row_sum_tiny_3, 3);
