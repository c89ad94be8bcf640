//! Utility kernels the host needs: filling buffers (NaN poisoning before a test,
//! zeroing an atomic accumulator, flushing L2 between benchmark repetitions).
use simt_std::kernel;
use simt_std::thread::{global_index_x, grid_stride_x};

kernel! {
    /// `y[i] = value` for `i < n`.
    ///
    /// # Safety
    /// `y` is valid for `n` writes.
    ///
    /// # Parameters
    /// * `y`: `[n]` output. * `n`: length. * `value`: the fill value.
    ///
    /// # Thread Mapping
    /// Grid-stride loop over `i`, any 1-D launch.
    #[launch(max_threads = 1024)]
    pub unsafe fn fill_f32(y: *mut f32, n: u32, value: f32) {
        let mut i = global_index_x();
        while i < n as usize {
            // SAFETY: i < n.
            unsafe { *y.add(i) = value };
            i += grid_stride_x();
        }
    }
}

/// `y[r·ld + c] = f(r·cols + c)` for `r < rows`, `c < cols`, grid-stride over the
/// dense index: writes a strided matrix (a fill, or a dense source converted).
///
/// # Safety
/// `y` is valid for writes at those places; `f` is safe to call with every dense
/// index below `rows · cols`.
#[inline(always)]
pub(crate) unsafe fn map_strided<T>(
    y: *mut T,
    rows: u32,
    cols: u32,
    ld: u32,
    f: impl Fn(usize) -> T,
) {
    let n = rows as usize * cols as usize;
    let mut i = global_index_x();
    while i < n {
        let (r, c) = (i / cols as usize, i % cols as usize);
        // SAFETY: r < rows, c < cols.
        unsafe { *y.add(r * ld as usize + c) = f(i) };
        i += grid_stride_x();
    }
}

kernel! {
    /// `y[r·ld + c] = value` for `r < rows`, `c < cols`: fills a strided matrix of
    /// 32-bit elements (an f32 C of an empty product), leaving the padding between
    /// rows alone.
    ///
    /// # Safety
    /// `y` is valid for writes at `r·ld + c` for `r < rows`, `c < cols`.
    ///
    /// # Parameters
    /// * `y`: `[rows][ld]` output. * `rows`, `cols`, `ld`: its view. * `value`: the
    ///   bits to store.
    ///
    /// # Thread Mapping
    /// Grid-stride loop over the `rows · cols` elements, any 1-D launch.
    #[launch(max_threads = 1024)]
    pub unsafe fn fill_matrix_u32(y: *mut u32, rows: u32, cols: u32, ld: u32, value: u32) {
        // SAFETY: forwarded.
        unsafe { map_strided(y, rows, cols, ld, |_| value) }
    }
}

kernel! {
    /// As [`fill_matrix_u32()`] for 16-bit elements (a bf16 or f16 C).
    ///
    /// # Safety
    /// As [`fill_matrix_u32()`], for 16-bit elements.
    ///
    /// # Parameters
    /// As [`fill_matrix_u32()`]; `value`'s low 16 bits are stored.
    #[launch(max_threads = 1024)]
    pub unsafe fn fill_matrix_u16(y: *mut u16, rows: u32, cols: u32, ld: u32, value: u32) {
        // SAFETY: forwarded.
        unsafe { map_strided(y, rows, cols, ld, |_| value as u16) }
    }
}
