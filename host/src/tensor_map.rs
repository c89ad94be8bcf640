//! TMA tensor maps: the 128-byte description of a matrix that a Hopper kernel's
//! bulk tensor copies read ([`simt_std::tma`]).
//!
//! On a GPU the driver writes it (`cuTensorMapEncodeTiled`, bound here because
//! `cust` 0.3 does not expose it); on the emulator the emulator's own encoding.
//! Either way it lives in device memory, 64-byte aligned, and the kernel gets
//! [`TensorMap::ptr`]: stock Rust cannot pass it as a `__grid_constant__` parameter
//! (see the device library's `tma` docs).
//!
//! Maps are cached per `Gpu` (the last 64 distinct ones): a map depends only on the
//! address, sizes, stride, box and swizzle, so an op that makes the same map on every
//! call encodes and uploads it once, and no allocation or copy lands between the
//! launches it times.
//!
//! Every argument is checked here first, with what to do, because the driver's
//! answer to a bad one is a bare `CUDA_ERROR_INVALID_VALUE`:
//! * the base address is 16-byte aligned, the row stride a multiple of 16 bytes;
//! * sizes are at least 1 and below 2^32, the stride below 2^40 bytes;
//! * the box is 1 to 256 elements per side, its rows a multiple of 16 bytes;
//! * a 3-D map's ([`TensorMap::tiled_blocks`]) columns are whole blocks;
//! * with the 128-byte swizzle, the box's rows are exactly 128 bytes.
use std::marker::PhantomData;
use std::sync::Arc;

use cust::memory::DeviceCopy;

use crate::buffer::Buffer;
use crate::error::{Result, SimtError};
use crate::gpu::Gpu;
use crate::view::MatrixRef;

/// How TMA lays a box out in shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmaSwizzle {
    /// Row after row, as in global memory.
    None,
    /// 16-byte chunk `c` of row `r` at chunk `c ^ (r % 8)` (rows of exactly 128
    /// bytes): the layout `wgmma` reads without bank conflicts.
    B128,
}

/// Element types a tensor map can describe, with the driver's data-type code.
pub trait TmaElement: DeviceCopy {
    /// `CUtensorMapDataType`.
    const CU_TYPE: u32;
}
impl TmaElement for half::bf16 {
    const CU_TYPE: u32 = 9; // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
}
impl TmaElement for half::f16 {
    const CU_TYPE: u32 = 6; // CU_TENSOR_MAP_DATA_TYPE_FLOAT16
}
impl TmaElement for f32 {
    const CU_TYPE: u32 = 7; // CU_TENSOR_MAP_DATA_TYPE_FLOAT32
}

/// `CU_TENSOR_MAP_DATA_TYPE_TFLOAT32`: f32 in memory, and every load rounds each
/// element to TF32 on the way into shared memory (see [`TensorMap::tiled_tf32`]).
const CU_TYPE_TFLOAT32: u32 = 11;

/// A checked tiled tensor map of rank 2 or 3, as the backends encode it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TensorMapDesc {
    #[cfg_attr(not(simt_cuda), allow(dead_code))]
    pub cu_type: u32,
    pub elem_bytes: u32,
    pub global: u64,
    /// 2 or 3.
    pub rank: u32,
    /// Elements along the contiguous dimension, then the others (a 2-D map: 1 last).
    pub dims: [u64; 3],
    /// Bytes from one index of dimension 1 to the next, and of dimension 2 (a 2-D
    /// map: unused, 0).
    pub strides: [u64; 2],
    /// Box elements along the contiguous dimension, then the others (2-D: 1 last).
    pub boxdim: [u32; 3],
    pub swizzle: TmaSwizzle,
}

/// The box a map's copies move: 2-D tiles, or 3-D blocks ([`TensorMap::tiled_blocks`]).
#[derive(Clone, Copy)]
enum Shape {
    Tiles {
        box_rows: u32,
        box_cols: u32,
    },
    Blocks {
        box_rows: u32,
        block_cols: u32,
        box_blocks: u32,
    },
}

/// A tensor map in device memory for a matrix of `T` (see the module docs).
pub struct TensorMap<T> {
    buf: Arc<Buffer<u64>>,
    desc: TensorMapDesc,
    _t: PhantomData<T>,
}

impl<T: TmaElement> TensorMap<T> {
    /// A map of `m`'s matrix (row-major, `rows x cols`, row stride `ld`) whose copies
    /// move boxes of `box_rows x box_cols` elements. Elements of a box outside the
    /// matrix arrive as zeros; a TMA store (`simt_std::tma::store_2d`) through the
    /// same map writes only the elements inside it.
    pub fn tiled(
        gpu: &Gpu,
        m: MatrixRef<'_, T>,
        box_rows: u32,
        box_cols: u32,
        swizzle: TmaSwizzle,
    ) -> Result<TensorMap<T>> {
        Self::encode(
            gpu,
            m,
            Shape::Tiles { box_rows, box_cols },
            swizzle,
            T::CU_TYPE,
        )
    }

    /// As [`TensorMap::tiled`], for a 3-D copy ([`simt_std::tma::load_3d`]): the
    /// map views the row-major matrix as `rows x (cols / block_cols) x block_cols`,
    /// blocks of `block_cols` consecutive columns, and a copy at `(0, b, r)` moves
    /// `box_blocks` neighbouring blocks of `box_rows` rows. In shared memory the box
    /// lies row by row with a row's blocks side by side: element `c` of block `b` of
    /// row `r` (counted from the box's corner) at `(r·box_blocks + b)·block_cols + c`
    /// before the swizzle.
    ///
    /// What it is for: rows narrower than a box row would be, side by side. With
    /// 128-byte blocks and two blocks a row, the 128-byte swizzle XORs a block's
    /// 16-byte chunks with `(2r + b) % 8`, so the same chunk of 4 consecutive rows
    /// falls on 4 different bank groups: the 32 lanes `(g, t)` of a TF32 `mma.sync` B
    /// fragment, `B[k = t][n = g]` read from an N-major B, meet 32 different banks
    /// (a test pins it). Stage 6t ran that way on an H200 (2026-11-25,
    /// docs/PERFORMANCE.md session 18) and lost: 16 scalar fragment loads cost the
    /// kernel more than the transposing copy they replaced. The map itself worked
    /// there, edges zero-filled, as the emulator models it.
    ///
    /// `cols` must be a multiple of `block_cols` (a partial last block would run into
    /// the next row): pad the rows, or copy the matrix into padded rows first.
    pub fn tiled_blocks(
        gpu: &Gpu,
        m: MatrixRef<'_, T>,
        box_rows: u32,
        block_cols: u32,
        box_blocks: u32,
        swizzle: TmaSwizzle,
    ) -> Result<TensorMap<T>> {
        Self::encode(
            gpu,
            m,
            Shape::Blocks {
                box_rows,
                block_cols,
                box_blocks,
            },
            swizzle,
            T::CU_TYPE,
        )
    }

    fn encode(
        gpu: &Gpu,
        m: MatrixRef<'_, T>,
        shape: Shape,
        swizzle: TmaSwizzle,
        cu_type: u32,
    ) -> Result<TensorMap<T>> {
        let op = match (cu_type == CU_TYPE_TFLOAT32, shape) {
            (false, Shape::Tiles { .. }) => "TensorMap::tiled",
            (true, Shape::Tiles { .. }) => "TensorMap::tiled_tf32",
            (_, Shape::Blocks { .. }) => "TensorMap::tiled_blocks",
        };
        gpu.check(op, "matrix", m.buffer())?;
        let eb = std::mem::size_of::<T>() as u64;
        let l = m.layout();
        let bad = |detail: String| Err(SimtError::Shape { op, detail });
        let global = m.ptr() as u64;
        if !global.is_multiple_of(16) {
            return bad(format!(
                "the matrix starts at {global:#x}, which is not 16-byte aligned (TMA needs it)"
            ));
        }
        let stride = l.ld as u64 * eb;
        if l.rows > 1 && !stride.is_multiple_of(16) {
            return bad(format!("a row stride of {} elements ({stride} bytes) is not a multiple of 16 bytes: pad the rows to a multiple of {} elements", l.ld, 16 / eb));
        }
        if l.rows == 0
            || l.cols == 0
            || l.rows as u64 >= 1 << 32
            || l.cols as u64 >= 1 << 32
            || stride >= 1 << 40
        {
            return bad(format!("a {}x{} matrix with a {stride}-byte row stride: sizes must be 1 to 2^32 - 1 and the stride below 2^40 bytes", l.rows, l.cols));
        }
        // Rows of one element still need a stride the driver accepts.
        let row_stride = if l.rows > 1 {
            stride
        } else {
            (l.cols as u64 * eb).next_multiple_of(16)
        };
        let (rank, dims, strides, boxdim) = match shape {
            Shape::Tiles { box_rows, box_cols } => (
                2,
                [l.cols as u64, l.rows as u64, 1],
                [row_stride, 0],
                [box_cols, box_rows, 1],
            ),
            Shape::Blocks {
                box_rows,
                block_cols,
                box_blocks,
            } => {
                if block_cols == 0 || !l.cols.is_multiple_of(block_cols as usize) {
                    return bad(format!("{} columns are not whole blocks of {block_cols}: pad the rows to a multiple of {block_cols} columns (or copy the matrix into such rows)", l.cols));
                }
                let blocks = (l.cols / block_cols as usize) as u64;
                (
                    3,
                    [block_cols as u64, blocks, l.rows as u64],
                    [block_cols as u64 * eb, row_stride],
                    [block_cols, box_blocks, box_rows],
                )
            }
        };
        if boxdim[..rank as usize]
            .iter()
            .any(|b| !(1..=256).contains(b))
            || !(boxdim[0] as u64 * eb).is_multiple_of(16)
        {
            return bad(format!("a box of {:?} elements (contiguous side first): each side is 1 to 256 elements and its rows a multiple of 16 bytes", &boxdim[..rank as usize]));
        }
        if swizzle == TmaSwizzle::B128 && boxdim[0] as u64 * eb != 128 {
            return bad(format!(
                "the 128-byte swizzle needs box rows of exactly 128 bytes ({} elements), not {}",
                128 / eb,
                boxdim[0]
            ));
        }
        let desc = TensorMapDesc {
            cu_type,
            elem_bytes: eb as u32,
            global,
            rank,
            dims,
            strides,
            boxdim,
            swizzle,
        };
        let buf = gpu.tensor_map_buffer(&desc)?;
        Ok(TensorMap {
            buf,
            desc,
            _t: PhantomData,
        })
    }

    /// Whether loads through this map round f32 to TF32 ([`TensorMap::tiled_tf32`]).
    pub fn rounds_to_tf32(&self) -> bool {
        self.desc.cu_type == CU_TYPE_TFLOAT32
    }

    /// The device address of the map, for a kernel's `*const TensorMap` parameter.
    pub fn ptr(&self) -> *const simt_std::tma::TensorMap {
        self.buf.ptr() as *const simt_std::tma::TensorMap
    }

    /// Bytes one box copy delivers (what the kernel's `arrive_expect_tx` announces).
    pub fn box_bytes(&self) -> u32 {
        self.desc.boxdim.iter().product::<u32>() * self.desc.elem_bytes
    }

    /// The identity of the device it lives on.
    pub fn device_id(&self) -> u64 {
        self.buf.device_id()
    }
}

impl TensorMap<f32> {
    /// As [`TensorMap::tiled`], for an f32 matrix whose loads arrive in shared memory
    /// **rounded to TF32**: round to nearest, ties to even, as cuBLAS's TF32; NaN as
    /// the canonical `0x7fffe000`; subnormals rounded, not flushed
    /// ([`simt_std::convert::tf32_rne_bits`], measured bit for bit on an H200,
    /// 2026-11-25, `scripts/probes/tma_tf32.cu`). The TMA unit does it on the way, so
    /// a TF32 product needs neither a rounding pass over its operands nor rounding
    /// instructions in its loop. (Stores through such a map wrote f32 unchanged in
    /// the same probe; the kernels here only load through one.)
    pub fn tiled_tf32(
        gpu: &Gpu,
        m: MatrixRef<'_, f32>,
        box_rows: u32,
        box_cols: u32,
        swizzle: TmaSwizzle,
    ) -> Result<TensorMap<f32>> {
        Self::encode(
            gpu,
            m,
            Shape::Tiles { box_rows, box_cols },
            swizzle,
            CU_TYPE_TFLOAT32,
        )
    }
}

/// The emulator's encoding (see `emulator::TENSOR_MAP_MAGIC`).
pub(crate) fn emulator_words(d: &TensorMapDesc) -> [u64; 16] {
    let mut w = [0u64; 16];
    w[0] = crate::emulator::TENSOR_MAP_MAGIC;
    w[1] = d.global;
    w[2] = d.dims[0];
    w[3] = d.dims[1];
    w[4] = d.strides[0];
    w[5] = d.boxdim[0] as u64;
    w[6] = d.boxdim[1] as u64;
    w[7] = d.elem_bytes as u64;
    w[8] = match d.swizzle {
        TmaSwizzle::None => 0,
        TmaSwizzle::B128 => 128,
    };
    w[9] = (d.cu_type == CU_TYPE_TFLOAT32) as u64;
    w[10] = d.dims[2];
    w[11] = d.strides[1];
    w[12] = d.boxdim[2] as u64;
    w[13] = d.rank as u64;
    w
}
