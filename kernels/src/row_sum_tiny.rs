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
//! the store instructions. Each thread takes two such groups, a grid's width apart
//! (`2·C` loads in flight). The last `rows % 4` rows take scalar loads.
use crate::config::ELEMENTWISE_THREADS;
use simt_std::memory::{load4, store4, F32x4};
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

/// Groups of 4 rows each thread sums: group `i` and group `i + threads` (the
/// grid's thread count), so that `2·C` loads are in flight per thread and each load
/// instruction of a warp still reads one contiguous span.
pub const TINY_GROUPS: usize = 2;

/// Sums the 4 rows of group `g` (if whole) from `C` vectors loaded before.
#[inline(always)]
fn group_sums<const C: usize>(v: &[F32x4; C]) -> F32x4 {
    let mut s = [0.0f32; 4];
    unroll!(4, J => {
        let mut c = 0;
        while c < C {
            let e = J * C + c;
            s[J] += at(v[e / 4], e % 4);
            c += 1;
        }
    });
    F32x4 { x: s[0], y: s[1], z: s[2], w: s[3] }
}

/// The body of `row_sum_tiny_*`.
///
/// # Safety
/// As the kernels'.
#[inline(always)]
unsafe fn tiny<const C: usize>(x: *const f32, out: *mut f32, rows: u32) {
    let threads = (block_dim().x * simt_std::thread::grid_dim().x) as usize;
    let i = (block_idx().x * block_dim().x + thread_idx().x) as usize;
    let rows = rows as usize;
    let whole = rows / 4;
    let g = [i, i + threads];
    // All loads of the thread's whole groups first, then the sums and stores.
    let mut v = [[F32x4::default(); C]; TINY_GROUPS];
    unroll!(2, G => {
        if g[G] < whole {
            let mut k = 0;
            while k < C {
                // SAFETY: floats 4C·g + 4k ..+4 lie in rows 4g..4g+4 < rows; 16-byte
                // aligned (the matrix is, and 4C·g floats are 16C·g bytes).
                v[G][k] = unsafe { load4(x.add(4 * C * g[G] + 4 * k)) };
                k += 1;
            }
        }
    });
    unroll!(2, G => {
        if g[G] < whole {
            // SAFETY: out[4g..4g+4] exists; 16-byte aligned (out is).
            unsafe { store4(out.add(4 * g[G]), group_sums::<C>(&v[G])) };
        }
    });
    // The last rows % 4 rows: thread 0, scalar.
    if i == 0 {
        let mut r = 4 * whole;
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
            /// writable for `rows` floats; both 16-byte aligned.
            ///
            /// # Thread Mapping
            /// Thread `i` of the grid's `T` threads sums the groups of 4 rows `i` and
            /// `i + T` (`T·2·4 >= rows`: `grid.x = ceil(rows / (8·256))`); thread 0
            /// also the last `rows % 4` rows.
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
