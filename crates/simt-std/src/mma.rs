//! Tensor cores, warp level (`mma.sync`, sm_80+): a warp multiplies small matrix
//! tiles held in registers, spread over its 32 lanes in fixed *fragments*.
//!
//! One `mma.sync.m16n8k16` does a 16x8x16 product (4096 FLOPs) per warp in one
//! instruction; the FP32 pipe needs 64 FMA instructions per warp for the same work.
//! On an H100 the dense BF16 tensor rate (989 TFLOP/s datasheet) is 15x the FP32 one.
//!
//! ## Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16 / m16n8k8")
//!
//! With `g = lane / 4` (the *group*) and `t = lane % 4` (the thread in the group):
//!
//! | operand | register | holds elements (row, col) |
//! |---|---|---|
//! | A 16x16 (bf16/f16, row) | `a[0]` | (g, 2t), (g, 2t+1) |
//! | | `a[1]` | (g+8, 2t), (g+8, 2t+1) |
//! | | `a[2]` | (g, 2t+8), (g, 2t+9) |
//! | | `a[3]` | (g+8, 2t+8), (g+8, 2t+9) |
//! | B 16x8 (bf16/f16, col) | `b[0]` | (2t, g), (2t+1, g) |
//! | | `b[1]` | (2t+8, g), (2t+9, g) |
//! | A 16x8 (tf32, row) | `a[0]`, `a[1]`, `a[2]`, `a[3]` | (g, t), (g+8, t), (g, t+4), (g+8, t+4) |
//! | B 8x8 (tf32, col) | `b[0]`, `b[1]` | (t, g), (t+4, g) |
//! | C, D 16x8 (f32) | `c[0]`, `c[1]`, `c[2]`, `c[3]` | (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1) |
//!
//! Two 16-bit elements share a register, the lower column (or row, for B) in the
//! low half. [`a_coords`], [`b_coords`] and [`c_coords`] compute these maps, and
//! `tests/tensor_cores.rs` pins them with hand-worked products.
//!
//! ## ldmatrix
//!
//! `ldmatrix.m8n8.xN` loads N 8x8 matrices of 16-bit elements from shared memory
//! into exactly this fragment order: lanes `8i..8i+8` give the addresses of matrix
//! `i`'s 8 rows (16 bytes each, 16-byte aligned), and lane `l` receives, in register
//! `i`, the two elements (`l/4`, `2(l%4)`) and (`l/4`, `2(l%4)+1`) of matrix `i`
//! (with `.trans`, of its transpose). So an x4 load of a 16x16 row-major A tile gives
//! `a[0..4]`, and an x4 `.trans` load of a k-major 16x16 B tile gives the `b` of two
//! n8 tiles. [`ldmatrix_row_addr`] is the address each lane supplies.
//!
//! Every operation here is warp-collective: all 32 lanes execute it, converged.
//! The emulator completes it only when all 32 lanes of the warp have reached it,
//! and reports a partial warp, lanes at different operations, or a misaligned or
//! out-of-bounds `ldmatrix` address as an error naming the kernel, block and lane.
use crate::shared::Smem;

/// Which tensor-core product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmaKind {
    /// `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`.
    Bf16,
    /// `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`.
    F16,
    /// `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`.
    Tf32,
}

impl MmaKind {
    /// The K of one instruction (16 for 16-bit inputs, 8 for tf32).
    pub const fn k(self) -> usize {
        match self {
            MmaKind::Tf32 => 8,
            _ => 16,
        }
    }
}

/// `(row, col)` of the two (16-bit) or one (tf32: the first) A elements in
/// register `reg` of lane `lane`.
pub const fn a_coords(kind: MmaKind, lane: u32, reg: usize) -> [(u32, u32); 2] {
    let (g, t) = (lane / 4, lane % 4);
    let row = g + 8 * (reg as u32 & 1);
    match kind {
        MmaKind::Tf32 => {
            let col = t + 4 * (reg as u32 >> 1);
            [(row, col), (row, col)]
        }
        _ => {
            let col = 2 * t + 8 * (reg as u32 >> 1);
            [(row, col), (row, col + 1)]
        }
    }
}

/// `(row, col)` (row = k) of the B elements in register `reg` of lane `lane`.
pub const fn b_coords(kind: MmaKind, lane: u32, reg: usize) -> [(u32, u32); 2] {
    let (g, t) = (lane / 4, lane % 4);
    match kind {
        MmaKind::Tf32 => {
            let row = t + 4 * reg as u32;
            [(row, g), (row, g)]
        }
        _ => {
            let row = 2 * t + 8 * reg as u32;
            [(row, g), (row + 1, g)]
        }
    }
}

/// `(row, col)` of accumulator `i` (0..4) of lane `lane`.
pub const fn c_coords(lane: u32, i: usize) -> (u32, u32) {
    let (g, t) = (lane / 4, lane % 4);
    (g + 8 * (i as u32 >> 1), 2 * t + (i as u32 & 1))
}

/// For an `ldmatrix.x4` of a 16x16 tile of 16-bit elements at `(row0, col0)` of a
/// row-major array: the `(row, col)` whose address lane `lane` supplies. Matrices
/// 0..4 are the tile's quadrants in `a[]` order: rows `0..8`/`8..16` alternate
/// fastest, then columns `0..8`/`8..16`.
pub const fn ldmatrix_row_addr(lane: u32) -> (u32, u32) {
    (lane % 8 + 8 * ((lane / 8) & 1), 8 * (lane / 16))
}

/// D = A·B + C on one 16x8x16 bf16 tile (f32 accumulate).
///
/// # Safety
/// Every lane of the warp executes it, converged (a warp-collective instruction).
#[inline(always)]
pub unsafe fn mma_bf16(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    // SAFETY: forwarded.
    unsafe { imp::mma(MmaKind::Bf16, a, b, c) }
}

/// D = A·B + C on one 16x8x16 f16 tile (f32 accumulate).
///
/// # Safety
/// As [`mma_bf16`].
#[inline(always)]
pub unsafe fn mma_f16(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    // SAFETY: forwarded.
    unsafe { imp::mma(MmaKind::F16, a, b, c) }
}

/// D = A·B + C on one 16x8x8 tf32 tile (f32 accumulate); inputs from [`to_tf32`] or
/// [`crate::convert::tf32_rne_bits`] (the tensor cores ignore the low 13 bits of an
/// unrounded one).
///
/// # Safety
/// As [`mma_bf16`].
#[inline(always)]
pub unsafe fn mma_tf32(a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    // SAFETY: forwarded.
    unsafe { imp::mma(MmaKind::Tf32, a, b, c) }
}

/// `ldmatrix.sync.aligned.m8n8.x4.shared.b16`: four 8x8 matrices; this lane supplies
/// the row address `p` (see the module docs).
///
/// # Safety
/// Every lane executes it, converged; `p` is 16-byte aligned, its 16 bytes are in
/// bounds of the block's shared memory and were written before a barrier.
#[inline(always)]
pub unsafe fn ldmatrix_x4<T>(p: Smem<T>) -> [u32; 4] {
    // SAFETY: forwarded.
    unsafe { imp::ldmatrix::<4, false, T>(p) }
}

/// `ldmatrix ... .x4.trans`: as [`ldmatrix_x4`], each matrix transposed.
///
/// # Safety
/// As [`ldmatrix_x4`].
#[inline(always)]
pub unsafe fn ldmatrix_x4_trans<T>(p: Smem<T>) -> [u32; 4] {
    // SAFETY: forwarded.
    unsafe { imp::ldmatrix::<4, true, T>(p) }
}

/// `ldmatrix ... .x2` (lanes 0..16 supply addresses; the others' are ignored but
/// must still be valid).
///
/// # Safety
/// As [`ldmatrix_x4`].
#[inline(always)]
pub unsafe fn ldmatrix_x2<T>(p: Smem<T>) -> [u32; 2] {
    // SAFETY: forwarded.
    let r = unsafe { imp::ldmatrix::<2, false, T>(p) };
    [r[0], r[1]]
}

/// `ldmatrix ... .x2.trans`.
///
/// # Safety
/// As [`ldmatrix_x4`].
#[inline(always)]
pub unsafe fn ldmatrix_x2_trans<T>(p: Smem<T>) -> [u32; 2] {
    // SAFETY: forwarded.
    let r = unsafe { imp::ldmatrix::<2, true, T>(p) };
    [r[0], r[1]]
}

/// `ldmatrix ... .x1` (lanes 0..8 supply addresses).
///
/// # Safety
/// As [`ldmatrix_x4`].
#[inline(always)]
pub unsafe fn ldmatrix_x1<T>(p: Smem<T>) -> u32 {
    // SAFETY: forwarded.
    unsafe { imp::ldmatrix::<1, false, T>(p)[0] }
}

/// `ldmatrix ... .x1.trans`.
///
/// # Safety
/// As [`ldmatrix_x4`].
#[inline(always)]
pub unsafe fn ldmatrix_x1_trans<T>(p: Smem<T>) -> u32 {
    // SAFETY: forwarded.
    unsafe { imp::ldmatrix::<1, true, T>(p)[0] }
}

/// An f32 rounded to TF32 (`cvt.rna.tf32.f32`: 10 mantissa bits, to nearest, ties
/// away from zero), as the bit pattern `mma_tf32` takes.
#[inline(always)]
pub fn to_tf32(x: f32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: a conversion; no memory.
        unsafe {
            core::arch::asm!("cvt.rna.tf32.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::convert::tf32_rna_bits(x)
    }
}

#[cfg(target_arch = "nvptx64")]
mod imp {
    use super::MmaKind;
    use crate::shared::Smem;
    use core::arch::asm;

    #[inline(always)]
    pub unsafe fn mma(kind: MmaKind, a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
        let (mut d0, mut d1, mut d2, mut d3) = (c[0], c[1], c[2], c[3]);
        macro_rules! go {
            ($ins:literal) => {
                // SAFETY: warp-collective, converged (caller); registers only.
                unsafe {
                    asm!(
                        concat!($ins, " {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};"),
                        d0 = inout(reg32) d0, d1 = inout(reg32) d1, d2 = inout(reg32) d2, d3 = inout(reg32) d3,
                        a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
                        b0 = in(reg32) b[0], b1 = in(reg32) b[1],
                        options(pure, nomem, nostack)
                    )
                }
            };
        }
        match kind {
            MmaKind::Bf16 => go!("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
            MmaKind::F16 => go!("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
            MmaKind::Tf32 => go!("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
        }
        [d0, d1, d2, d3]
    }

    #[inline(always)]
    pub unsafe fn ldmatrix<const N: u32, const TRANS: bool, T>(p: Smem<T>) -> [u32; 4] {
        let (mut r0, mut r1, mut r2, mut r3) = (0u32, 0u32, 0u32, 0u32);
        let a = p.addr();
        // SAFETY: caller's contract (aligned, in bounds, written before a barrier).
        unsafe {
            match (N, TRANS) {
                (4, false) => {
                    asm!("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [{a}];", r0 = out(reg32) r0, r1 = out(reg32) r1, r2 = out(reg32) r2, r3 = out(reg32) r3, a = in(reg32) a, options(readonly, nostack))
                }
                (4, true) => {
                    asm!("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [{a}];", r0 = out(reg32) r0, r1 = out(reg32) r1, r2 = out(reg32) r2, r3 = out(reg32) r3, a = in(reg32) a, options(readonly, nostack))
                }
                (2, false) => {
                    asm!("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {{{r0}, {r1}}}, [{a}];", r0 = out(reg32) r0, r1 = out(reg32) r1, a = in(reg32) a, options(readonly, nostack))
                }
                (2, true) => {
                    asm!("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {{{r0}, {r1}}}, [{a}];", r0 = out(reg32) r0, r1 = out(reg32) r1, a = in(reg32) a, options(readonly, nostack))
                }
                (_, false) => {
                    asm!("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {{{r0}}}, [{a}];", r0 = out(reg32) r0, a = in(reg32) a, options(readonly, nostack))
                }
                (_, true) => {
                    asm!("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {{{r0}}}, [{a}];", r0 = out(reg32) r0, a = in(reg32) a, options(readonly, nostack))
                }
            }
        }
        [r0, r1, r2, r3]
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod imp {
    use super::MmaKind;
    use crate::emu::{env, WarpMatrixOp};
    use crate::shared::Smem;

    pub unsafe fn mma(kind: MmaKind, a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
        env()
            .warp_matrix(WarpMatrixOp::Mma {
                kind,
                a,
                b,
                c: c.map(f32::to_bits),
            })
            .map(f32::from_bits)
    }

    pub unsafe fn ldmatrix<const N: u32, const TRANS: bool, T>(p: Smem<T>) -> [u32; 4] {
        env().warp_matrix(WarpMatrixOp::Ldmatrix {
            num: N,
            trans: TRANS,
            addr: p.ptr() as usize,
        })
    }
}
