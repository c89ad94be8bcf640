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
