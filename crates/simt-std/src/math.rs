//! Fast math for kernels, each with its error against the IEEE result.
//!
//! On the GPU, `f32::exp` and friends would lower to libm calls that the NVPTX
//! backend cannot select; these use PTX's approximate instructions instead, run on
//! the SFU (special function unit: 16 results per SM per clock on sm_80/sm_90,
//! against 128 FMAs). On the host (emulator) they use `std`'s correctly rounded or
//! near-correctly rounded versions, so GPU and emulator agree within the errors below.
//!
//! | function | GPU instruction | max error (GPU) |
//! |---|---|---|
//! | [`exp2`] | `ex2.approx.ftz.f32` | 2 ulp relative (PTX ISA); subnormal results flush to 0 |
//! | [`exp`] | `ex2.approx` of `x*log2(e)` | 2 ulp + the rounding of `x*log2 e`: rel. ≤ 2^-22 + |x|·2^-24 |
//! | [`rcp`] | `rcp.approx.ftz.f32` | 1 ulp |
//! | [`tanh`] | `ex2`+`rcp`, odd Taylor polynomial for |x| < 0.125 | rel. ≤ 2e-6 (absolute ≤ 3e-7) |
//! | [`tanh_approx`] | `tanh.approx.f32` (sm_75+) | rel. 2^-10.99 ≈ 5e-4 |
//! | [`erf`] | Chebyshev fit of erfc (Numerical Recipes `erfcc`) | absolute ≤ 4e-7 |
//! | [`fma`] | `fma.rn.f32` | exact (one rounding) |

/// log2(e).
pub const LOG2_E: f32 = core::f32::consts::LOG2_E;

#[cfg(target_arch = "nvptx64")]
mod imp {
    use core::arch::asm;
    #[inline(always)]
    pub fn exp2(x: f32) -> f32 {
        let r: f32;
        // SAFETY: pure arithmetic.
        unsafe {
            asm!("ex2.approx.ftz.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[inline(always)]
    pub fn rcp(x: f32) -> f32 {
        let r: f32;
        // SAFETY: pure arithmetic.
        unsafe {
            asm!("rcp.approx.ftz.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[inline(always)]
    pub fn tanh_approx(x: f32) -> f32 {
        let r: f32;
        // SAFETY: pure arithmetic.
        unsafe {
            asm!("tanh.approx.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[inline(always)]
    pub fn fma(a: f32, b: f32, c: f32) -> f32 {
        let r: f32;
        // SAFETY: pure arithmetic.
        unsafe {
            asm!("fma.rn.f32 {r}, {a}, {b}, {c};", r = out(reg32) r, a = in(reg32) a, b = in(reg32) b, c = in(reg32) c, options(pure, nomem, nostack))
        };
        r
    }
    #[inline(always)]
    pub fn abs(x: f32) -> f32 {
        f32::from_bits(x.to_bits() & 0x7fff_ffff)
    }
}

#[cfg(not(target_arch = "nvptx64"))]
mod imp {
    pub fn exp2(x: f32) -> f32 {
        x.exp2()
    }
    pub fn rcp(x: f32) -> f32 {
        1.0 / x
    }
    pub fn tanh_approx(x: f32) -> f32 {
        x.tanh()
    }
    pub fn fma(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
    pub fn abs(x: f32) -> f32 {
        x.abs()
    }
}

/// 2^x.
#[inline(always)]
pub fn exp2(x: f32) -> f32 {
    imp::exp2(x)
}
/// e^x, as 2^(x·log2 e). `exp(-inf) = 0`, `exp(NaN) = NaN`.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    imp::exp2(x * LOG2_E)
}
/// 1/x.
#[inline(always)]
pub fn rcp(x: f32) -> f32 {
    imp::rcp(x)
}
/// a·b + c with one rounding.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    imp::fma(a, b, c)
}
/// |x|.
#[inline(always)]
pub fn abs(x: f32) -> f32 {
    imp::abs(x)
}
/// Hardware tanh (sm_75+): one SFU instruction, relative error about 5e-4.
#[inline(always)]
pub fn tanh_approx(x: f32) -> f32 {
    imp::tanh_approx(x)
}

/// tanh(x) to about 2e-6 relative error: `1 - 2/(e^{2|x|} + 1)` with the sign
/// restored, and an odd Taylor polynomial near 0 where that form cancels.
/// Saturates to ±1 for large |x| and returns NaN for NaN.
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let a = abs(x);
    if a < 0.125 {
        // x - x^3/3 + 2x^5/15 - 17x^7/315: next term < 2e-10 relative here.
        let x2 = x * x;
        let p = fma(
            fma(fma(-17.0 / 315.0, x2, 2.0 / 15.0), x2, -1.0 / 3.0),
            x2,
            0.0,
        );
        fma(p, x, x)
    } else {
        let e = exp2(2.0 * LOG2_E * a); // +inf for large a: rcp(inf) = 0, result 1
        let t = 1.0 - 2.0 * rcp(e + 1.0);
        if x < 0.0 {
            -t
        } else {
            t
        }
    }
}

/// The error function, absolute error ≤ 4e-7: `1 - erfc(|x|)` with erfc from
/// Numerical Recipes' Chebyshev fit `erfcc` (fractional error 1.2e-7 in exact
/// arithmetic; f32 evaluation adds about as much again).
#[inline(always)]
#[allow(clippy::excessive_precision)] // the coefficients as Numerical Recipes prints them
pub fn erf(x: f32) -> f32 {
    let z = abs(x);
    let t = rcp(1.0 + 0.5 * z);
    // erfc(z) ≈ t·exp(-z² + P(t)), Numerical Recipes §6.2 (fractional error < 1.2e-7).
    let p = fma(t, 0.170_872_77, -0.822_152_23);
    let p = fma(t, p, 1.488_515_87);
    let p = fma(t, p, -1.135_203_98);
    let p = fma(t, p, 0.278_868_07);
    let p = fma(t, p, -0.186_288_06);
    let p = fma(t, p, 0.096_784_18);
    let p = fma(t, p, 0.374_091_96);
    let p = fma(t, p, 1.000_023_68);
    let p = fma(t, p, -1.265_512_23);
    let erfc = t * exp(-z * z + p);
    let r = 1.0 - erfc;
    if x < 0.0 {
        -r
    } else {
        r
    }
}
