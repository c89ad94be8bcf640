//! XOR swizzles for shared-memory tiles, and the bank arithmetic behind them.
//!
//! Shared memory has 32 banks, each 4 bytes wide: the word at byte address `a` sits
//! in bank `(a / 4) % 32`. A warp's access completes in one pass when its 32 lanes
//! touch 32 different banks (or the same word: a broadcast); `k` lanes on different
//! words of one bank serialise into `k` passes, a *k-way conflict*.
//!
//! The classic case: a 32x32 `f32` tile stored row-major, read down a column
//! (`tile[i][c]` for lanes `i = 0..32`). Row `i` starts at word `32*i`, so every lane
//! hits bank `c`: a **32-way** conflict. Storing element `(i, j)` at column
//! `j ^ i` instead ([`xor32`]) spreads the column over banks `c ^ 0 .. c ^ 31`, all
//! 32 different: **1 pass**, with no padding and no wasted memory. Row reads stay
//! conflict-free too, because `j -> j ^ i` permutes a row's 32 banks. The tests in
//! `tests/device_library.rs` pin these numbers (32 and 1) with [`conflict_degree`].
//!
//! The tiled matmul uses [`matmul_a`]: its transposed A tile is written column-wise
//! by pairs of threads whose rows differ by 4 k-steps, a 2-way conflict that the
//! swizzle removes (2 -> 1, pinned by the same tests).

/// Number of shared-memory banks.
pub const BANKS: u32 = 32;
/// Width of one bank in bytes.
pub const BANK_BYTES: u32 = 4;

/// The bank of a shared-memory byte address.
#[inline(always)]
pub const fn bank(byte_addr: u32) -> u32 {
    (byte_addr / BANK_BYTES) % BANKS
}

/// XOR swizzle for a 32-column tile of 4-byte elements: the physical column of
/// logical `(row, col)`.
#[inline(always)]
pub const fn xor32(row: u32, col: u32) -> u32 {
    col ^ (row % 32)
}

/// The tiled matmul's swizzle of its transposed A tile `As[k][m]` (`MM_BM` wide):
/// the physical column of logical `(k, m)`. Flips bit 4 of `m` for k in 4..8 of
/// each 8-deep step, which keeps 8-aligned groups of `m` contiguous (so 16-byte
/// vector reads of `As[k][m..m+4]` still work) and moves the two threads that store
/// `(k, m)` and `(k+4, m)` in the same instruction to different banks.
#[inline(always)]
pub const fn matmul_a(k: u32, m: u32) -> u32 {
    m ^ (((k >> 2) & 1) << 4)
}

/// How many passes one warp-wide access takes: the largest number of *distinct*
/// 4-byte words that map to one bank (same-word lanes are a broadcast). `addrs` are
/// the byte addresses of the active lanes.
pub fn conflict_degree(addrs: &[u32]) -> u32 {
    let mut words_per_bank = [[u32::MAX; 32]; 32];
    let mut counts = [0u32; 32];
    for &a in addrs {
        let b = bank(a) as usize;
        let w = a / BANK_BYTES;
        let seen = words_per_bank[b][..counts[b] as usize].contains(&w);
        if !seen {
            words_per_bank[b][counts[b] as usize] = w;
            counts[b] += 1;
        }
    }
    let mut m = 0;
    let mut i = 0;
    while i < 32 {
        if counts[i] > m {
            m = counts[i];
        }
        i += 1;
    }
    m
}
