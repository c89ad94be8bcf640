//! Probe kernels for the device library's own tests (`tests/device_library.rs`):
//! each exercises one primitive and writes what it saw, so the same test checks the
//! emulator in CI and the GPU. Two are wrong on purpose (a missing barrier, a
//! divergent barrier), for the emulator's negative tests.
use simt_std::atomic::atomic_add_f32;
use simt_std::kernel;
use simt_std::math;
use simt_std::memory::{load4, store4};
use simt_std::shared::{dynamic_shared, dynamic_shared_bytes};
use simt_std::shared_array;
use simt_std::thread::*;
use simt_std::warp::*;

kernel! {
    /// Writes, per thread (linear global id `g`), 8 words: threadIdx.xyz, blockIdx.xyz, lane, warp.
    ///
    /// # Safety
    /// `out` holds 8 words per thread of the grid.
    #[launch(max_threads = 1024)]
    pub unsafe fn probe_indices(out: *mut u32) {
        let t = thread_idx();
        let b = block_idx();
        let gd = grid_dim();
        let block_linear = b.x + gd.x * (b.y + gd.y * b.z);
        let g = (block_linear * block_threads() + thread_linear()) as usize;
        let v = [t.x, t.y, t.z, b.x, b.y, b.z, lane_id(), warp_id()];
        for (i, x) in v.iter().enumerate() {
            // SAFETY: g*8+i within the caller's buffer.
            unsafe { *out.add(g * 8 + i) = *x };
        }
    }
}

kernel! {
    /// Per thread `i` of a 1-D launch with input `v = x[i]`, writes 4 words:
    /// `shfl_xor(v, arg)`, `shfl_down(v, arg)`, `shfl_up(v, arg)`, `shfl_idx(v, (lane*arg) % 32)`.
    ///
    /// # Safety
    /// `x` holds one word and `out` four per thread; blocks are multiples of 32.
    #[launch(max_threads = 1024)]
    pub unsafe fn probe_shuffles(x: *const u32, out: *mut u32, arg: u32) {
        let i = global_index_x();
        // SAFETY: caller's sizes.
        let v = unsafe { *x.add(i) };
        let r = [shfl_xor(v, arg), shfl_down(v, arg), shfl_up(v, arg), shfl_idx(v, (lane_id() * arg) % 32)];
        for (j, w) in r.iter().enumerate() {
            // SAFETY: caller's sizes.
            unsafe { *out.add(4 * i + j) = *w };
        }
    }
}

kernel! {
    /// Per thread: `out[3i..]` = warp_sum, warp_max of `x[i]`, and the block sum
    /// (through `block_sum`).
    ///
    /// # Safety
    /// `x` one float and `out` three per thread; blocks are multiples of 32.
    #[launch(max_threads = 1024)]
    pub unsafe fn probe_reductions(x: *const f32, out: *mut f32) {
        let scratch = shared_array!(PROBE_RED_SCRATCH, f32, 32);
        let i = global_index_x();
        // SAFETY: caller's sizes.
        let v = unsafe { *x.add(i) };
        let (s, m) = (warp_sum(v), warp_max(v));
        // SAFETY: scratch is this kernel's own.
        let b = unsafe { block_sum(v, scratch) };
        unsafe {
            *out.add(3 * i) = s;
            *out.add(3 * i + 1) = m;
            *out.add(3 * i + 2) = b;
        }
    }
}

kernel! {
    /// Per input `x[i]`, 7 outputs: exp, exp2, tanh, tanh_approx, rcp, erf, fma(x, x, 1).
    ///
    /// # Safety
    /// `x` holds n floats, `out` 7n.
    #[launch(max_threads = 1024)]
    pub unsafe fn probe_math(x: *const f32, out: *mut f32, n: u32) {
        let i = global_index_x();
        if i < n as usize {
            // SAFETY: i < n.
            let v = unsafe { *x.add(i) };
            let r = [math::exp(v), math::exp2(v), math::tanh(v), math::tanh_approx(v), math::rcp(v), math::erf(v), math::fma(v, v, 1.0)];
            for (j, w) in r.iter().enumerate() {
                // SAFETY: 7i+j < 7n.
                unsafe { *out.add(7 * i + j) = *w };
            }
        }
    }
}

kernel! {
    /// Copies `4n` floats with 16-byte vector loads/stores, reversing the order of
    /// vectors: `y[4(n-1-i)..] = x[4i..]`. Both pointers 16-byte aligned.
    ///
    /// # Safety
    /// `x`, `y` hold 4n floats, 16-aligned.
    #[launch(max_threads = 1024)]
    pub unsafe fn probe_vec4(x: *const f32, y: *mut f32, n: u32) {
        let i = global_index_x();
        if i < n as usize {
            // SAFETY: in bounds, aligned (caller).
            unsafe { store4(y.add(4 * (n as usize - 1 - i)), load4(x.add(4 * i))) };
        }
    }
}

kernel! {
    /// Every thread adds `x[i]` to `acc[i % slots]` atomically.
    ///
    /// # Safety
    /// `x` holds n floats, `acc` `slots` floats (zeroed), `slots > 0`.
    #[launch(max_threads = 1024)]
    pub unsafe fn probe_atomic(x: *const f32, acc: *mut f32, n: u32, slots: u32) {
        let i = global_index_x();
        if i < n as usize {
            // SAFETY: in bounds; all accesses to acc are atomic.
            unsafe { atomic_add_f32(acc.add(i % slots as usize), *x.add(i)) };
        }
    }
}

/// The shared-memory sum both `probe_shared_sum*` kernels do: every thread stores its
/// value, then thread 0 adds up the block's slots.
#[inline(always)]
unsafe fn shared_sum(x: *const f32, out: *mut f32, with_barrier: bool) {
    let s = shared_array!(PROBE_SHARED_SUM, f32, 1024);
    let t = thread_idx().x as usize;
    let b = block_idx().x as usize;
    let n = block_dim().x as usize;
    // SAFETY: caller's sizes; t < 1024.
    unsafe { s.add(t).write(*x.add(b * n + t)) };
    if with_barrier {
        sync_threads();
    }
    if t == 0 {
        let mut acc = 0.0;
        for j in 0..n {
            // SAFETY: j < n <= 1024.
            acc += unsafe { s.add(j).read() };
        }
        // SAFETY: one output per block.
        unsafe { *out.add(b) = acc };
    }
}

kernel! {
    /// Block sums through shared memory, correctly synchronised.
    ///
    /// # Safety
    /// `x` holds blockDim.x floats per block, `out` one per block; blockDim.x <= 1024.
    #[launch(max_threads = 1024)]
    pub unsafe fn probe_shared_sum(x: *const f32, out: *mut f32) {
        // SAFETY: forwarded.
        unsafe { shared_sum(x, out, true) }
    }
}

kernel! {
    /// DELIBERATELY WRONG: [`probe_shared_sum()`] without its barrier. Thread 0 may
    /// read slots before their threads wrote them. For the emulator's negative test.
    ///
    /// # Safety
    /// As [`probe_shared_sum()`].
    #[launch(max_threads = 1024)]
    pub unsafe fn probe_shared_sum_no_barrier(x: *const f32, out: *mut f32) {
        // SAFETY: forwarded.
        unsafe { shared_sum(x, out, false) }
    }
}

kernel! {
    /// DELIBERATELY WRONG: threads with `threadIdx.x >= keep` return before a barrier
    /// the others wait at. For the emulator's negative test (never launch on a GPU).
    ///
    /// # Safety
    /// `out` holds one float per thread.
    #[launch(max_threads = 1024)]
    pub unsafe fn probe_divergent_barrier(out: *mut f32, keep: u32) {
        let t = thread_idx().x;
        if t >= keep {
            return;
        }
        sync_threads();
        // SAFETY: caller's size.
        unsafe { *out.add(global_index_x()) = 1.0 };
    }
}

kernel! {
    /// Reverses each block's `blockDim.x` floats through dynamic shared memory;
    /// `out[gridDim.x * blockDim.x]` receives the dynamic size in bytes (as f32).
    ///
    /// # Safety
    /// `x` holds blockDim.x floats per block, `out` that plus one;
    /// `bytes >= blockDim.x*4` (the launch gives `bytes` of dynamic shared memory).
    #[launch(max_threads = 1024, shared = bytes)]
    pub unsafe fn probe_dynamic_shared(x: *const f32, out: *mut f32, bytes: u32) {
        let _ = bytes; // the launch contract's dynamic shared size
        let s = dynamic_shared::<f32>();
        let t = thread_idx().x as usize;
        let n = block_dim().x as usize;
        let b = block_idx().x as usize;
        // SAFETY: t < n floats of dynamic shared memory (caller).
        unsafe { s.add(t).write(*x.add(b * n + t)) };
        sync_threads();
        unsafe { *out.add(b * n + t) = s.add(n - 1 - t).read() };
        if b == 0 && t == 0 {
            unsafe { *out.add(grid_dim().x as usize * n) = dynamic_shared_bytes() as f32 };
        }
    }
}

kernel! {
    /// One 64-thread block. Thread `t` copies `x[4t..4t+4]` into shared memory with
    /// one 16-byte `cp.async` that reads only `src_floats` (0..=4) of them (the rest
    /// zero-filled), commits, waits if `wait != 0`, meets the block at a barrier and
    /// writes the 4 floats of thread `(t+1) % 64` to `out[4t..4t+4]`.
    ///
    /// # Safety
    /// `x` and `out` hold 256 floats, 16-byte aligned; `src_floats <= 4`. With
    /// `wait == 0` the shared reads race with the copies (the point of the probe).
    #[launch(max_threads = 1024)]
    pub unsafe fn probe_copy_async(x: *const f32, out: *mut f32, src_floats: u32, wait: u32) {
        let s = shared_array!(PROBE_ASYNC, f32, 256);
        let t = thread_idx().x as usize;
        // SAFETY: as documented; 16-byte aligned on both sides.
        unsafe { simt_std::pipeline::copy_async::<16>(s.add(4 * t), x.add(4 * t), 4 * src_floats) };
        simt_std::pipeline::commit();
        if wait != 0 {
            simt_std::pipeline::wait::<0>();
        }
        sync_threads();
        let u = (t + 1) % 64;
        // SAFETY: in bounds; the copy landed (wait + barrier) unless wait == 0.
        unsafe { store4(out.add(4 * t), s.add(4 * u).load4()) };
    }
}
