//! Kernel parameter structs shared by the kernels and the host: matrix views and
//! the matmul parameters, passed by value (one `.param` byte array each, as CUDA
//! C++ passes a struct).
//!
//! Named fields instead of a positional argument list: swapping `m` and `n`, or
//! `lda` and `ldb`, no longer type-checks by accident.
use simt_std::tma::TensorMap;
use simt_std::{kernel_params, KernelParam};

kernel_params! {
    /// A read-only row-major matrix view: `rows x cols`, consecutive rows `ld`
    /// elements apart (`ld >= cols`).
    pub struct MatRef { pub ptr: *const f32, pub rows: u32, pub cols: u32, pub ld: u32 }

    /// A writable row-major matrix view, as [`MatRef`].
    pub struct MatMut { pub ptr: *mut f32, pub rows: u32, pub cols: u32, pub ld: u32 }

    /// `C = epilogue(A · B)` with `A: m x k`, `B: k x n`, `C: m x n`.
    pub struct MatmulParams { pub a: MatRef, pub b: MatRef, pub c: MatMut, pub epilogue: Epilogue }

    /// `C = epilogue(A · B)` over K slices ([`crate::matmul_tiles`], [`crate::matmul_gemv`]):
    /// block `z` of the grid's slice dimension sums `k` in `z·k_chunk .. (z+1)·k_chunk`
    /// (`k_chunk` a multiple of 8). With `partials` null there is one slice and the
    /// kernel writes `epilogue(sum)` to C; otherwise slice `z` writes its raw sum to
    /// `partials[z·m·n ..]` (dense `m x n`) and [`crate::matmul_tiles::matmul_splitk_reduce`]
    /// adds the slices in order.
    pub struct MatmulSplitParams { pub mm: MatmulParams, pub k_chunk: u32, pub partials: *mut f32 }

    /// The split-K reduction: `C = epilogue(Σ_z partials[z·m·n ..])` for `z` in
    /// `0..splits`, in that order, `m x n` the shape of `c`.
    pub struct SplitReduceParams { pub partials: *const f32, pub splits: u32, pub c: MatMut, pub epilogue: Epilogue }

    /// A read-only row-major view of 16-bit elements (bf16 or f16 bits).
    pub struct MatRef16 { pub ptr: *const u16, pub rows: u32, pub cols: u32, pub ld: u32 }

    /// `C = epilogue(A · B)` with 16-bit `A: m x k`, `B: k x n` and f32 `C: m x n`.
    pub struct MatmulParams16 { pub a: MatRef16, pub b: MatRef16, pub c: MatMut, pub epilogue: Epilogue }

    /// A copy of an f32 matrix rounded to TF32 (nearest even), optionally transposed
    /// ([`crate::tf32_prep`]).
    pub struct Tf32CopyParams { pub src: MatRef, pub dst: *mut f32, pub ld_dst: u32, pub transpose: u32 }

    /// Softmax of rows split over several blocks ([`crate::softmax_split`]): row `r`
    /// is `splits` chunks of `SOFTMAX_SPLIT_CHUNK` columns; chunk `i = r·splits + j`
    /// publishes its `(max, sum)` at `partials[2i..2i+2]` and then `flags[i] = epoch`.
    pub struct SoftmaxSplitParams {
        pub x: MatRef,
        pub y: MatMut,
        pub splits: u32,
        pub partials: *mut f32,
        pub flags: *mut u32,
        pub epoch: u32,
    }

    /// Softmax of long rows by bulk copies ([`crate::softmax_bulk`]): row `r` is
    /// `splits` chunks of `SOFTMAX_BULK_CHUNK` columns; chunk `i = r·splits + j`
    /// publishes its `(max, sum)` at `pairs[2i..2i+2]` tagged with `epoch`
    /// ([`simt_std::flag::publish_pair`]). `evict_first` (0 or 1): the bulk copies
    /// carry an L2 evict-first policy.
    pub struct SoftmaxBulkParams { pub x: MatRef, pub y: MatMut, pub splits: u32, pub pairs: *mut u64, pub epoch: u32, pub evict_first: u32 }

    /// Two-pass online softmax ([`crate::softmax_online`]): row `r` is `splits`
    /// chunks of `chunk` columns (a multiple of 4); chunk `i = r·splits + j` writes
    /// its `(max, sum)` at `partials[2i..2i+2]` in pass 1, pass 2 reads them all.
    pub struct SoftmaxOnlineParams {
        pub x: MatRef,
        pub y: MatMut,
        pub splits: u32,
        pub chunk: u32,
        pub partials: *mut f32,
    }

    /// `C = epilogue(A · B)` for the Hopper kernels: A and B as TMA tensor maps in
    /// global memory (`a_map` of `A: m x k` with boxes of 128 rows x 64 columns,
    /// `b_map` of `B: k x n` with boxes of 64 x 64, both 128-byte swizzled), `C` of
    /// element type `c_type` (`c.ptr` points at such elements, `c.ld` counts them).
    pub struct MatmulParamsTma {
        pub a_map: *const TensorMap,
        pub b_map: *const TensorMap,
        /// Stage 8: a map of C (`c_type`, boxes of [`WG_C_BOX_ROWS`] rows of 128
        /// bytes: [`WG_C_BOX_COLS`] f32 or twice as many 16-bit elements, 128-byte
        /// swizzled) for its TMA-store epilogue, or null (C's rows not 16-byte
        /// aligned, or not a multiple of 16 bytes long: plain stores). Stage 7
        /// ignores it.
        ///
        /// [`WG_C_BOX_ROWS`]: crate::config::WG_C_BOX_ROWS
        /// [`WG_C_BOX_COLS`]: crate::config::WG_C_BOX_COLS
        pub c_map: *const TensorMap,
        pub c: MatMut,
        pub m: u32,
        pub n: u32,
        pub k: u32,
        pub epilogue: Epilogue,
        /// C's element type.
        pub c_type: OutType,
    }

    /// Stage 4k ([`crate::matmul_warptiled_streamk`]): stage 4's product on persistent
    /// blocks with a stream-K tail ([`crate::streamk`]). A block that holds a tile's
    /// first K steps but not all of them (the tile's head) writes its partial sums to
    /// its slot of `partials` (`grid x MM4K_PARTIAL_FLOATS` floats) and then sets
    /// `flags[block] = epoch`; the next block, which holds the rest, waits for it and
    /// finishes the tile.
    pub struct MatmulParamsStreamK4 {
        pub mm: MatmulParams,
        pub dp_tiles: u32,
        pub sk_tiles: u32,
        pub partials: *mut f32,
        pub flags: *mut u32,
        pub epoch: u32,
    }

    /// Stage 4s ([`crate::matmul_warptiled_tail`]): stage 4's product with the tiles
    /// of its partial last wave (or every tile: `dp_tiles` 0) split along K. Blocks
    /// `0 .. dp_tiles` take the first tiles whole; the last `split_tiles` tiles are cut
    /// into `parts` parts (part 0 the first `cut` K steps, the others sharing the rest
    /// evenly), one block each. Each
    /// part writes its sums to its slot of `partials` (`parts x split_tiles x
    /// MM4K_PARTIAL_FLOATS` floats: slot `p · split_tiles + j` for part `p` of split
    /// tile `j`), and `matmul_tail_reduce` adds them into C. Stage 4ws
    /// ([`crate::matmul_warptiled_wide_tail`]) takes the same fields over its 256x128
    /// tiles, with slots of `WIDE_PARTIAL_FLOATS` and `matmul_wide_tail_reduce`.
    pub struct MatmulParamsTail4 {
        pub mm: MatmulParams,
        pub dp_tiles: u32,
        pub split_tiles: u32,
        pub parts: u32,
        pub cut: u32,
        pub partials: *mut f32,
    }

    /// Stage 6k ([`crate::matmul_mma_streamk`]): stage 6t's TF32 product with a
    /// stream-K tail. The first `dp_tiles` tiles (in grouped order) are whole, the last
    /// `sk_tiles` are shared along K; a block that holds a tile's first K steps but
    /// not all of them (the tile's head) writes its partial sums to its slot of
    /// `partials` (`grid x TC6K_PARTIAL_FLOATS` floats) and then sets `flags[block] =
    /// epoch`; the next block, which holds the rest, waits for it and finishes the tile.
    pub struct MatmulParamsStreamK {
        pub mm: MatmulParamsTma,
        pub dp_tiles: u32,
        pub sk_tiles: u32,
        pub partials: *mut f32,
        pub flags: *mut u32,
        pub epoch: u32,
    }

    /// Stage 6kb ([`crate::matmul_mma_streamk_tb`]): stage 6k on the blocks from
    /// `blocks` on, while blocks `0 .. blocks` write `Bᵀ` from B: column strips
    /// `first_strip ..` of `TC6T_TF32_BN` columns (the host's copy made the strips
    /// before it), read through `b_src` (a TF32 map of B as it lies, `k x n`, boxes
    /// of 32 rows x 256 columns, unswizzled) and written through `bt_map` (a map of the
    /// `Bᵀ` that `sk.mm.b_map` describes, boxes of 32 x 32, 128-byte swizzled).
    /// `sk.flags` holds one flag per block of the grid (the heads' partials), then
    /// one per strip (its rows of `Bᵀ` written); `counts` one count per strip, zero
    /// at the launch and left zero.
    pub struct MatmulParamsStreamKTb {
        pub sk: MatmulParamsStreamK,
        pub b_src: *const TensorMap,
        pub bt_map: *const TensorMap,
        pub counts: *mut u32,
        pub blocks: u32,
        pub first_strip: u32,
    }
}

/// What the matmul applies to each accumulated output before storing it.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Epilogue {
    /// Store `A · B` as is.
    None = 0,
    /// Store `max(0, A · B)` (a fused ReLU).
    Relu = 1,
}

// SAFETY: a `#[repr(u32)]` enum is a u32 on both sides; the host only builds valid variants.
unsafe impl KernelParam for Epilogue {}

/// The element type a matmul stores C in. The sums are f32 either way; a 16-bit C
/// is each sum rounded to nearest even after the epilogue, as PyTorch's bf16 and
/// f16 matmuls return, and half the bytes to write.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutType {
    /// f32.
    F32 = 0,
    /// bf16 bits (`u16`).
    Bf16 = 1,
    /// f16 bits (`u16`).
    F16 = 2,
}

impl OutType {
    /// Bytes per element.
    pub const fn bytes(self) -> u32 {
        match self {
            OutType::F32 => 4,
            OutType::Bf16 | OutType::F16 => 2,
        }
    }
}

// SAFETY: as `Epilogue`'s.
unsafe impl KernelParam for OutType {}

impl MatRef {
    /// An empty view at a null pointer: the arguments of an occupancy query, which
    /// reads only a kernel's block and shared memory, never its arguments.
    pub const EMPTY: MatRef = MatRef {
        ptr: core::ptr::null(),
        rows: 0,
        cols: 0,
        ld: 0,
    };
}

impl MatMut {
    /// As [`MatRef::EMPTY`].
    pub const EMPTY: MatMut = MatMut {
        ptr: core::ptr::null_mut(),
        rows: 0,
        cols: 0,
        ld: 0,
    };
}

impl MatmulParams {
    /// The fields as the kernels' loops use them:
    /// `(a, b, c, m, n, k, lda, ldb, ldc, relu)`, `relu` 1 for [`Epilogue::Relu`].
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    pub fn unpack(
        self,
    ) -> (
        *const f32,
        *const f32,
        *mut f32,
        u32,
        u32,
        u32,
        u32,
        u32,
        u32,
        u32,
    ) {
        let MatmulParams { a, b, c, epilogue } = self;
        (
            a.ptr,
            b.ptr,
            c.ptr,
            a.rows,
            b.cols,
            a.cols,
            a.ld,
            b.ld,
            c.ld,
            epilogue as u32,
        )
    }
}
