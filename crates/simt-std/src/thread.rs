//! Threads, blocks and grids.
//!
//! A launch runs a *grid* of *blocks*; each block is a group of up to 1024 threads
//! that run on one SM, share its shared memory and can meet at a barrier. A thread
//! finds its work from four registers: `threadIdx` (its position in the block),
//! `blockIdx` (its block's position in the grid), `blockDim` and `gridDim`. The
//! usual 1-D global index is `blockIdx.x * blockDim.x + threadIdx.x`; threads are
//! numbered within a block x-fastest (`x + y*Dx + z*Dx*Dy`), and every 32
//! consecutive numbers form a warp.

/// x/y/z extents or indices, as in CUDA's `dim3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl Dim3 {
    /// `(x, y, z)`.
    pub const fn new(x: u32, y: u32, z: u32) -> Dim3 {
        Dim3 { x, y, z }
    }
    /// `(x, 1, 1)`.
    pub const fn x(x: u32) -> Dim3 {
        Dim3 { x, y: 1, z: 1 }
    }
    /// `x · y · z`, in 64 bits (a grid can hold more than 2^32 blocks).
    pub const fn volume(&self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }
}

#[cfg(target_arch = "nvptx64")]
mod imp {
    use super::Dim3;
    use core::arch::nvptx::*;
    #[inline(always)]
    pub fn thread_idx() -> Dim3 {
        // SAFETY: reading special registers has no preconditions.
        unsafe {
            Dim3 {
                x: _thread_idx_x() as u32,
                y: _thread_idx_y() as u32,
                z: _thread_idx_z() as u32,
            }
        }
    }
    #[inline(always)]
    pub fn block_idx() -> Dim3 {
        // SAFETY: as above.
        unsafe {
            Dim3 {
                x: _block_idx_x() as u32,
                y: _block_idx_y() as u32,
                z: _block_idx_z() as u32,
            }
        }
    }
    #[inline(always)]
    pub fn block_dim() -> Dim3 {
        // SAFETY: as above.
        unsafe {
            Dim3 {
                x: _block_dim_x() as u32,
                y: _block_dim_y() as u32,
                z: _block_dim_z() as u32,
            }
        }
    }
    #[inline(always)]
    pub fn grid_dim() -> Dim3 {
        // SAFETY: as above.
        unsafe {
            Dim3 {
                x: _grid_dim_x() as u32,
                y: _grid_dim_y() as u32,
                z: _grid_dim_z() as u32,
            }
        }
    }
    #[inline(always)]
    pub fn sync_threads() {
        // SAFETY: `bar.sync 0`; the caller's contract (see `sync_threads`) is that
        // every thread of the block reaches it.
        unsafe { _syncthreads() }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod imp {
    use super::Dim3;
    use crate::emu::env;
    #[inline]
    pub fn thread_idx() -> Dim3 {
        env().thread_idx()
    }
    #[inline]
    pub fn block_idx() -> Dim3 {
        env().block_idx()
    }
    #[inline]
    pub fn block_dim() -> Dim3 {
        env().block_dim()
    }
    #[inline]
    pub fn grid_dim() -> Dim3 {
        env().grid_dim()
    }
    #[inline]
    pub fn sync_threads() {
        env().sync_threads()
    }
}

/// `threadIdx`: this thread's position in its block.
#[inline(always)]
pub fn thread_idx() -> Dim3 {
    imp::thread_idx()
}
/// `blockIdx`: this block's position in the grid.
#[inline(always)]
pub fn block_idx() -> Dim3 {
    imp::block_idx()
}
/// `blockDim`: threads per block in x/y/z.
#[inline(always)]
pub fn block_dim() -> Dim3 {
    imp::block_dim()
}
/// `gridDim`: blocks per grid in x/y/z.
#[inline(always)]
pub fn grid_dim() -> Dim3 {
    imp::grid_dim()
}

/// `blockIdx.x * blockDim.x + threadIdx.x`, as `usize` (no 32-bit overflow).
#[inline(always)]
pub fn global_index_x() -> usize {
    block_idx().x as usize * block_dim().x as usize + thread_idx().x as usize
}

/// `blockIdx.y * blockDim.y + threadIdx.y`.
#[inline(always)]
pub fn global_index_y() -> usize {
    block_idx().y as usize * block_dim().y as usize + thread_idx().y as usize
}

/// Total threads in the grid along x: the stride of a grid-stride loop.
#[inline(always)]
pub fn grid_stride_x() -> usize {
    grid_dim().x as usize * block_dim().x as usize
}

/// The thread's linear index within its block (x fastest).
#[inline(always)]
pub fn thread_linear() -> u32 {
    let t = thread_idx();
    let d = block_dim();
    t.x + d.x * (t.y + d.y * t.z)
}

/// Threads per block.
#[inline(always)]
pub fn block_threads() -> u32 {
    let d = block_dim();
    d.x * d.y * d.z
}

/// Block barrier (`__syncthreads`): waits until every thread of the block has
/// arrived, and orders the block's shared-memory accesses before it against those after.
///
/// Every thread of the block must reach the same barrier: one inside a branch that
/// only some threads take, or after an early `return` of some threads, is undefined
/// on the GPU (a hang or garbage) and an error on the emulator, which names the
/// kernel, block and thread.
#[inline(always)]
pub fn sync_threads() {
    imp::sync_threads()
}

/// The tile `(row, col)` that linear block `pid` of a `rows x cols` grid of output
/// tiles computes when blocks go down `group` tile-rows before moving right (the
/// "grouped" order of Triton's matmul tutorial).
///
/// Blocks run roughly in `pid` order. Row-major order sweeps a whole row of tiles
/// first: every block of the wave needs another column panel of B, and for a large
/// B the panels fall out of L2 before the next row of tiles reuses them. Grouped,
/// a wave covers a `group x k` patch that reuses `group` panels of A and `k` of B.
#[inline(always)]
pub const fn grouped_tile(pid: u32, rows: u32, cols: u32, group: u32) -> (u32, u32) {
    let per_group = group * cols;
    let first = (pid / per_group) * group;
    let size = if rows - first < group {
        rows - first
    } else {
        group
    };
    let within = pid % per_group;
    (first + within % size, within / size)
}

#[cfg(test)]
mod tests {
    #[test]
    fn grouped_tile_is_a_bijection_in_column_major_groups() {
        for (rows, cols, group) in [
            (1, 1, 8),
            (3, 5, 8),
            (8, 8, 8),
            (17, 3, 8),
            (64, 64, 8),
            (10, 7, 4),
        ] {
            let mut seen = vec![false; (rows * cols) as usize];
            for pid in 0..rows * cols {
                let (r, c) = super::grouped_tile(pid, rows, cols, group);
                assert!(
                    r < rows && c < cols,
                    "{rows}x{cols}: pid {pid} -> ({r}, {c})"
                );
                assert!(
                    !std::mem::replace(&mut seen[(r * cols + c) as usize], true),
                    "({r}, {c}) twice"
                );
            }
        }
        // The first 8 blocks of a 64x64 grid go down one column of tiles.
        assert_eq!(
            (0..8)
                .map(|p| super::grouped_tile(p, 64, 64, 8))
                .collect::<Vec<_>>(),
            (0..8).map(|r| (r, 0)).collect::<Vec<_>>()
        );
        assert_eq!(super::grouped_tile(8, 64, 64, 8), (0, 1));
    }
}
