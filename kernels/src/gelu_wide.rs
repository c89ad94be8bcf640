//! Fused GeLU with several 16-byte vectors a thread.
//!
//! [`crate::gelu::gelu_fused`] gives each thread one vector (4 floats): 256 threads
//! move 4 KiB a block, and a 2^21-element tensor is 2048 blocks, more than an H100
//! holds at once (132 SMs x 8 blocks), so the grid runs in two waves. Triton's
//! pointwise kernels for large tensors take 1024 elements a block of 4 warps: 2
//! vectors a thread, every load issued before the first store. The blocks move the
//! same bytes with half the threads, so twice as many are resident (16 an SM), and
//! the grid of a mid-sized tensor (2^21 elements: 2048 blocks) runs in one wave.
//! `GeluKernel::Auto` runs it from 2^19 to 2^23 elements (measured on an H100:
//! `rust_simt::ops::gelu::GELU_VEC2_MIN`).
//!
//! Here a block of `T` threads takes a tile of `4·T·V` elements; thread `t` holds
//! the tile's vectors `t, t + T, …, t + (V-1)·T`, so every warp-wide load is 512
//! contiguous bytes (as one vector a thread is). The shapes, [`GELU_CONFIGS`]:
//! `(128, 2)` (`gelu_fused_v2`) and `(128, 4)` (`gelu_fused_v4`).
//!
//! `gelu_fused_cs` is `gelu_fused`'s shape (256 threads, one vector) with its loads
//! marked as the data's last use (`ld.global.cs`: evict-first in L2). Under a
//! benchmark's write flush, or after a kernel that left L2 full of dirty lines, the
//! input's lines then evict each other rather than the dirty ones, whose write-back
//! would share DRAM with this kernel (a CUDA C++ probe on the H100: 1-3% faster at
//! 2^23, level at 2^25; docs/PERFORMANCE.md, session 35).
//!
//! A thread whose vectors all lie inside the tensor, with both pointers 16-byte
//! aligned, makes `V` vector loads and then `V` vector stores; the tensor's last
//! tile goes vector by vector, each whole vector as one access and the cut one
//! element by element; a misaligned view goes element by element.
use crate::config::GELU_CONFIGS;
use crate::gelu::gelu_tanh;
use simt_std::kernel;
use simt_std::memory::{is_aligned16, load4, load4_cs, store4, F32x4};
use simt_std::thread::{block_idx, thread_idx};

/// `y = f(x)` over the block's tile of `4·T·V` elements (see the module doc); with
/// `CS`, the whole vectors are loaded as their last use ([`load4_cs`]).
///
/// # Safety
/// `x` readable and `y` writable for `n` floats, in global memory; they alias
/// exactly or not at all; blocks of `T` threads.
#[inline(always)]
unsafe fn map_tile<const T: usize, const V: usize, const CS: bool>(
    x: *const f32,
    y: *mut f32,
    n: u32,
    f: impl Fn(f32) -> f32,
) {
    let n = n as usize;
    let base = block_idx().x as usize * 4 * T * V;
    let t = thread_idx().x as usize;
    let col = |k: usize| base + 4 * (t + k * T);
    if col(V - 1) + 4 <= n && is_aligned16(x) && is_aligned16(y) {
        // Every load before the first store: V loads in flight.
        let mut a = [F32x4::splat(0.0); V];
        let mut k = 0;
        while k < V {
            // SAFETY: col(k) + 4 <= col(V-1) + 4 <= n; aligned (x is, col % 4 == 0);
            // global memory (the contract).
            a[k] = unsafe {
                if CS {
                    load4_cs(x.add(col(k)))
                } else {
                    load4(x.add(col(k)))
                }
            };
            k += 1;
        }
        let mut k = 0;
        while k < V {
            // SAFETY: as the loads, in y.
            unsafe { store4(y.add(col(k)), a[k].map(&f)) };
            k += 1;
        }
        return;
    }
    let vec = is_aligned16(x) && is_aligned16(y);
    let mut k = 0;
    while k < V {
        let i = col(k);
        if vec && i + 4 <= n {
            // SAFETY: i + 4 <= n; aligned.
            unsafe { store4(y.add(i), load4(x.add(i)).map(&f)) };
        } else {
            let mut j = i;
            while j < n && j < i + 4 {
                // SAFETY: j < n.
                unsafe { *y.add(j) = f(*x.add(j)) };
                j += 1;
            }
        }
        k += 1;
    }
}

macro_rules! wide_kernel {
    ($name:ident, $i:expr, $cs:literal) => {
        kernel! {
            #[doc = concat!("Fused GeLU (tanh form), `y[i] = gelu(x[i])`, with `GELU_CONFIGS[", stringify!($i), "]` = (threads, 16-byte vectors a thread); evict-first loads: ", stringify!($cs), " (see the module doc).")]
            ///
            /// # Safety
            /// `x` readable and `y` writable for `n` floats, in global memory; they
            /// may alias exactly (in place).
            ///
            /// # Parameters
            /// * `x`: `[n]` input. * `y`: `[n]` output. * `n`: length.
            ///
            /// # Thread Mapping
            /// 1-D: block `b` takes elements `[4·T·V·b, 4·T·V·(b+1))`, thread `t` its
            /// vectors `t + k·T`; `grid.x = ceil(n / (4·T·V))`.
            #[launch(threads = GELU_CONFIGS[$i].0)]
            pub unsafe fn $name(x: *const f32, y: *mut f32, n: u32) {
                // SAFETY: forwarded contract; the block is GELU_CONFIGS[$i].0 threads.
                unsafe {
                    map_tile::<{ GELU_CONFIGS[$i].0 as usize }, { GELU_CONFIGS[$i].1 as usize }, $cs>(x, y, n, gelu_tanh)
                }
            }
        }
    };
}

wide_kernel!(gelu_fused_v2, 1, false);
wide_kernel!(gelu_fused_v4, 2, false);
wide_kernel!(gelu_fused_cs, 0, true);
