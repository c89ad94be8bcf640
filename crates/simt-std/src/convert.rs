//! 16-bit and TF32 floating point: conversions with the hardware's rounding.
//!
//! | format | sign, exponent, mantissa bits | max finite | epsilon |
//! |---|---|---|---|
//! | f32 | 1, 8, 23 | 3.4e38 | 1.2e-7 |
//! | tf32 (f32 bits, low 13 zero) | 1, 8, 10 | 3.4e38 | 9.8e-4 |
//! | bf16 | 1, 8, 7 | 3.4e38 | 7.8e-3 |
//! | f16 | 1, 5, 10 | 65504 | 9.8e-4 |
//!
//! bf16 keeps f32's range and drops 16 mantissa bits; f16 keeps more mantissa and
//! overflows above 65504. The `*_rne` functions round to nearest, ties to even, as
//! `cvt.rn.bf16.f32` / `cvt.rn.f16.f32` and PyTorch's `.bfloat16()` / `.half()` do;
//! [`tf32_rna_bits`] rounds ties away from zero, as `cvt.rna.tf32.f32` does;
//! [`tf32_rne_bits`] to nearest even, as cuBLAS's TF32 and a TMA load through a
//! TF32 tensor map do (integer arithmetic on both the GPU and the host: sm_80 has no
//! instruction for it). On the GPU the other device versions are those instructions;
//! on the host these are the software versions, bit-exact against them (pinned by
//! the tests on both).

/// bf16 bits to f32 (exact).
#[inline(always)]
pub fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// f32 to bf16 bits, round to nearest even; NaN stays NaN (quiet).
#[inline(always)]
pub fn f32_to_bf16_rne(x: f32) -> u16 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u16;
        // SAFETY: a conversion; no memory.
        unsafe {
            core::arch::asm!("cvt.rn.bf16.f32 {r}, {x};", r = out(reg16) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let b = x.to_bits();
        if x.is_nan() {
            return ((b >> 16) | 0x0040) as u16;
        }
        let round = 0x7fff + ((b >> 16) & 1);
        (b.wrapping_add(round) >> 16) as u16
    }
}

/// f16 bits to f32 (exact).
#[inline(always)]
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // subnormal: m · 2^-24, normalised
            let shift = m.leading_zeros() - 21; // bring the top bit to bit 10
            let m = (m << shift) & 0x3ff;
            let e = 127 - 15 + 1 - shift;
            sign | (e << 23) | (m << 13)
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, m) => sign | 0x7fc0_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// f32 to f16 bits, round to nearest even; overflow gives infinity, NaN stays NaN.
#[inline(always)]
pub fn f32_to_f16_rne(x: f32) -> u16 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u16;
        // SAFETY: a conversion; no memory.
        unsafe {
            core::arch::asm!("cvt.rn.f16.f32 {r}, {x};", r = out(reg16) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let b = x.to_bits();
        let sign = ((b >> 16) & 0x8000) as u16;
        let exp = ((b >> 23) & 0xff) as i32;
        let man = b & 0x7f_ffff;
        if exp == 0xff {
            return sign
                | 0x7c00
                | if man != 0 {
                    0x200 | (man >> 13) as u16
                } else {
                    0
                };
        }
        let e = exp - 127 + 15;
        if e >= 0x1f {
            return sign | 0x7c00;
        }
        if e <= 0 {
            // subnormal or zero: value = (1.man) · 2^(exp-127), in units of 2^-24
            if e < -10 {
                return sign;
            }
            let m = man | 0x80_0000;
            let shift = (14 - e) as u32; // 24-bit mantissa down to the 2^-24 grid
            let half = 1u32 << (shift - 1);
            let rest = m & ((1 << shift) - 1);
            let mut r = m >> shift;
            if rest > half || (rest == half && (r & 1) == 1) {
                r += 1;
            }
            return sign | r as u16;
        }
        let mut r = ((e as u32) << 10) | (man >> 13);
        let rest = man & 0x1fff;
        if rest > 0x1000 || (rest == 0x1000 && (r & 1) == 1) {
            r += 1; // may carry into the exponent, up to infinity: correct
        }
        sign | r as u16
    }
}

/// Two f32 to bf16, round to nearest even, packed: `lo` in bits 0..16, `hi` in
/// 16..32, as two consecutive bf16 in memory (`cvt.rn.bf16x2.f32`: one instruction
/// for both; its first source goes to the upper half). Bit-exact against
/// [`f32_to_bf16_rne`] on each.
#[inline(always)]
pub fn pack_bf16x2_rne(lo: f32, hi: f32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: a conversion; no memory.
        unsafe {
            core::arch::asm!("cvt.rn.bf16x2.f32 {r}, {h}, {l};", r = out(reg32) r, h = in(reg32) hi, l = in(reg32) lo, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        f32_to_bf16_rne(lo) as u32 | (f32_to_bf16_rne(hi) as u32) << 16
    }
}

/// Two f32 to f16, round to nearest even, packed as [`pack_bf16x2_rne`]
/// (`cvt.rn.f16x2.f32`); bit-exact against [`f32_to_f16_rne`] on each.
#[inline(always)]
pub fn pack_f16x2_rne(lo: f32, hi: f32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: a conversion; no memory.
        unsafe {
            core::arch::asm!("cvt.rn.f16x2.f32 {r}, {h}, {l};", r = out(reg32) r, h = in(reg32) hi, l = in(reg32) lo, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        f32_to_f16_rne(lo) as u32 | (f32_to_f16_rne(hi) as u32) << 16
    }
}

/// f32 to TF32 as `cvt.rna.tf32.f32`: keep 10 mantissa bits, round to nearest with
/// ties away from zero; the result is f32 bits with the low 13 bits zero.
#[inline(always)]
pub fn tf32_rna_bits(x: f32) -> u32 {
    let b = x.to_bits();
    if !x.is_finite() {
        return if x.is_nan() { b | 0x0040_0000 } else { b };
    }
    // Magnitude rounding in sign-magnitude form: adding half an ulp and truncating
    // rounds ties away from zero.
    b.wrapping_add(0x1000) & !0x1fff
}

/// The GPU's canonical NaN with TF32's 13 low bits cleared: what a TMA load through a
/// TF32 tensor map makes of every NaN (H200, 2026-11-25,
/// `scripts/probes/tma_tf32.cu`).
pub const TF32_CANONICAL_NAN: u32 = 0x7fff_e000;

/// f32 to TF32, round to nearest with ties to even, as a TMA load through a
/// `CU_TENSOR_MAP_DATA_TYPE_TFLOAT32` map does (and cuBLAS's TF32): measured on an
/// H200 (2026-11-25, `scripts/probes/tma_tf32.cu`), 1021 of 1024 patterns rounded
/// to nearest even, subnormals included and not flushed (the `_FTZ` map type
/// neither), the largest finite values to infinity, and every NaN to
/// [`TF32_CANONICAL_NAN`]. The result is f32 bits with the low 13 bits zero.
///
/// Integer arithmetic only, so the same code runs on every target (sm_80 has no
/// `cvt.rn.tf32.f32`): adding `0xfff` plus the lowest kept bit and truncating
/// rounds the magnitude to nearest even; a carry out of the mantissa steps the
/// exponent, up to infinity.
#[inline(always)]
pub fn tf32_rne_bits(x: f32) -> u32 {
    let b = x.to_bits();
    if x.is_nan() {
        return TF32_CANONICAL_NAN;
    }
    b.wrapping_add(0xfff + ((b >> 13) & 1)) & !0x1fff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_round_trip_and_ties() {
        assert_eq!(f32_to_bf16_rne(1.0), 0x3f80);
        assert_eq!(bf16_to_f32(0x3f80), 1.0);
        // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties to even (1.0)
        assert_eq!(f32_to_bf16_rne(1.0 + 1.0 / 256.0), 0x3f80);
        // 1.0078125 + 2^-8 is halfway to 1.015625: ties to even (0x3f82)
        assert_eq!(f32_to_bf16_rne(1.0078125 + 1.0 / 256.0), 0x3f82);
        assert!(bf16_to_f32(f32_to_bf16_rne(f32::NAN)).is_nan());
        assert_eq!(f32_to_bf16_rne(f32::INFINITY), 0x7f80);
        assert_eq!(f32_to_bf16_rne(-2.5), 0xc020);
    }

    #[test]
    fn f16_round_trip_edges() {
        for (x, h) in [
            (1.0f32, 0x3c00u16),
            (-2.0, 0xc000),
            (65504.0, 0x7bff),
            (65520.0, 0x7c00),
            (5.960_464_5e-8, 0x0001),
            (6.097_555e-5, 0x03ff),
            (0.0, 0),
        ] {
            assert_eq!(f32_to_f16_rne(x), h, "{x}");
            if h != 0x7c00 {
                assert_eq!(f16_to_f32(h), x, "{h:#x}");
            }
        }
        // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0)
        assert_eq!(f32_to_f16_rne(1.0 + 1.0 / 2048.0), 0x3c00);
        assert_eq!(f32_to_f16_rne(1.0 + 3.0 / 2048.0), 0x3c02);
        // every f16 round-trips exactly
        for h in 0..=0xffffu16 {
            let x = f16_to_f32(h);
            if !x.is_nan() {
                assert_eq!(f32_to_f16_rne(x), h, "{h:#x} -> {x}");
            }
        }
    }

    #[test]
    fn tf32_ties_away() {
        assert_eq!(tf32_rna_bits(1.0), 1.0f32.to_bits());
        // 1 + 2^-11 is halfway between tf32 1.0 and 1 + 2^-10: away from zero
        assert_eq!(
            f32::from_bits(tf32_rna_bits(1.0 + 1.0 / 2048.0)),
            1.0 + 1.0 / 1024.0
        );
        assert_eq!(
            f32::from_bits(tf32_rna_bits(-(1.0 + 1.0 / 2048.0))),
            -(1.0 + 1.0 / 1024.0)
        );
        assert_eq!(tf32_rna_bits(1.0 + 1.0 / 4096.0) & 0x1fff, 0);
    }

    /// The H200's TMA through a TF32 map (2026-11-25, `scripts/probes/tma_tf32.cu`),
    /// input -> output bits, as printed there.
    const TMA_TF32_SEEN: [(u32, u32); 31] = [
        (0x3f800000, 0x3f800000),
        (0x3f801000, 0x3f800000), // tie, kept bit even: down (ties away: up)
        (0x3f803000, 0x3f804000), // tie, kept bit odd: up
        (0x3f800fff, 0x3f800000),
        (0x3f801001, 0x3f802000),
        (0x3f801fff, 0x3f802000),
        (0x3f802fff, 0x3f802000),
        (0xbf801000, 0xbf800000),
        (0xbf803000, 0xbf804000),
        (0xbf801001, 0xbf802000),
        (0x7f7fffff, 0x7f800000), // the largest finite f32 rounds to infinity
        (0x7f7ff000, 0x7f800000),
        (0x7f800000, 0x7f800000),
        (0xff800000, 0xff800000),
        (0x7fc00000, 0x7fffe000), // NaN: canonical
        (0x7f800001, 0x7fffe000),
        (0x7fc01001, 0x7fffe000),
        (0x00000001, 0x00000000), // subnormals round too, no flush
        (0x00001000, 0x00000000),
        (0x00003000, 0x00004000),
        (0x00400000, 0x00400000),
        (0x007fffff, 0x00800000),
        (0x80001001, 0x80002000),
        (0x00800000, 0x00800000),
        (0x00801000, 0x00800000),
        (0x40490fdb, 0x40490000), // pi
        (0xffc00000, 0x7fffe000), // negative NaNs too
        (0xff800001, 0x7fffe000),
        (0xffffffff, 0x7fffe000),
        (0x80001000, 0x80000000),
        (0x80003000, 0x80004000),
    ];

    #[test]
    fn tf32_ties_to_even_as_the_tma_does() {
        for (x, want) in TMA_TF32_SEEN {
            assert_eq!(
                tf32_rne_bits(f32::from_bits(x)),
                want,
                "{x:#010x}: want {want:#010x}"
            );
        }
        // 1 + 2^-11 is halfway between tf32 1.0 and 1 + 2^-10: to even (1.0), where
        // ties away give 1 + 2^-10.
        assert_eq!(f32::from_bits(tf32_rne_bits(1.0 + 1.0 / 2048.0)), 1.0);
        assert_eq!(
            f32::from_bits(tf32_rna_bits(1.0 + 1.0 / 2048.0)),
            1.0 + 1.0 / 1024.0
        );
    }
}
