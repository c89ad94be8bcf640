//! Warp collectives on the emulator: a shuffle, an `mma.sync` or an `ldmatrix`
//! completes when all 32 lanes of the warp have reached it, with the hardware's
//! semantics: shuffles exchange values as `shfl.sync` does (xor/down/up/idx, with
//! the PTX clamping rules); `mma.sync` gathers the warp's fragments into matrices
//! (the maps of `simt_std::mma`), multiplies them and scatters D back; `ldmatrix`
//! reads each 8x8 matrix from the rows the lanes point at.
//!
//! A collective that not every lane reaches, one in a partial warp, lanes at
//! different collectives, or a misaligned or out-of-bounds `ldmatrix` row is
//! [`EmuError::ShuffleDivergence`], naming the kernel, block, warp and lane.
use simt_std::convert::{bf16_to_f32, f16_to_f32};
use simt_std::emu::{ShflMode, WarpMatrixOp};
use simt_std::mma::{a_coords, b_coords, c_coords, MmaKind};
use simt_std::Dim3;

use super::memory::{BlockMem, Ctx, State};
use super::{d, EmuError};

fn is_collective(s: &State) -> bool {
    matches!(s, State::Shfl(..) | State::Warp(..))
}

/// Completes every warp whose lanes all wait at a collective; `Ok(true)` if any did.
pub(super) fn complete_collectives(
    kernel: &'static str,
    bid: Dim3,
    ctxs: &[Ctx],
    mem: &BlockMem,
    state: &mut [State],
) -> Result<bool, EmuError> {
    let n = state.len();
    let mut progressed = false;
    for w in 0..n.div_ceil(32) {
        let lanes = w * 32..((w + 1) * 32).min(n);
        let waiting = lanes.clone().filter(|&l| is_collective(&state[l])).count();
        if waiting == 0 {
            continue;
        }
        let div = |detail: String| EmuError::ShuffleDivergence {
            kernel,
            block: bid,
            warp: w as u32,
            detail,
        };
        let what = match state[lanes.clone().find(|&l| is_collective(&state[l])).unwrap()] {
            State::Warp(WarpMatrixOp::Mma { .. }) => "mma.sync",
            State::Warp(WarpMatrixOp::Ldmatrix { .. }) => "ldmatrix",
            _ => "shuffle",
        };
        if lanes.len() < 32 {
            return Err(div(format!(
                "a {what} in a partial warp of {} lanes; blocks that use warp collectives need a multiple of 32 threads",
                lanes.len()
            )));
        }
        // A lane still in an mbarrier wait, or just released from one, may yet arrive.
        if waiting < 32
            && lanes.clone().any(|l| {
                matches!(
                    state[l],
                    State::MbarWait(..) | State::FlagWait(..) | State::Run(_)
                )
            })
        {
            continue;
        }
        if waiting < 32 {
            let l = lanes.clone().find(|&l| !is_collective(&state[l])).unwrap();
            let why = if matches!(state[l], State::Done) {
                "has exited"
            } else {
                "waits at sync_threads()"
            };
            return Err(div(format!(
                "a full-warp {what} was not reached by lane {} (thread {}), which {why}",
                l % 32,
                d(ctxs[l].tid)
            )));
        }
        let base = lanes.start;
        let lane_states: Vec<State> = lanes.clone().map(|l| state[l]).collect();
        let outputs: Vec<(u32, [u32; 4])> = match lane_states[0] {
            State::Shfl(..) => shuffle(&lane_states)
                .map_err(div)?
                .into_iter()
                .map(|v| (v, [0; 4]))
                .collect(),
            State::Warp(WarpMatrixOp::Mma { .. }) => mma(&lane_states)
                .map_err(div)?
                .into_iter()
                .map(|r| (0, r))
                .collect(),
            State::Warp(WarpMatrixOp::Ldmatrix { .. }) => ldmatrix(&lane_states, mem)
                .map_err(div)?
                .into_iter()
                .map(|r| (0, r))
                .collect(),
            _ => unreachable!(),
        };
        for (i, (resume, regs)) in outputs.into_iter().enumerate() {
            ctxs[base + i].warp_out.set(regs);
            state[base + i] = State::Run(resume);
        }
        progressed = true;
    }
    Ok(progressed)
}

fn mismatch(a: &State, b: &State) -> String {
    format!("lanes of one warp executed different collectives ({a:?} and {b:?}); warp collectives must be reached by the converged warp")
}

fn shuffle(lanes: &[State]) -> Result<Vec<u32>, String> {
    let mut vals = [0u32; 32];
    let mut argv = [0u32; 32];
    let State::Shfl(mode, ..) = lanes[0] else {
        unreachable!()
    };
    for (i, s) in lanes.iter().enumerate() {
        match *s {
            State::Shfl(m, v, a) if m == mode => {
                vals[i] = v;
                argv[i] = a;
            }
            _ => return Err(mismatch(&lanes[0], s)),
        }
    }
    Ok((0..32)
        .map(|i| {
            let a = argv[i];
            let src = match mode {
                ShflMode::Xor => (i as u32 ^ a) as usize,
                ShflMode::Down => i + a as usize,
                ShflMode::Up => (i as u32)
                    .checked_sub(a)
                    .map(|s| s as usize)
                    .unwrap_or(usize::MAX),
                ShflMode::Idx => (a & 31) as usize,
            };
            if src < 32 {
                vals[src]
            } else {
                vals[i]
            }
        })
        .collect())
}

/// One 16-bit or tf32 input element as f64.
fn elem(kind: MmaKind, reg: u32, half: usize) -> f64 {
    let h = (reg >> (16 * half)) as u16;
    match kind {
        MmaKind::Bf16 => bf16_to_f32(h) as f64,
        MmaKind::F16 => f16_to_f32(h) as f64,
        // The tensor cores read 19 bits of a tf32 register; the low 13 are ignored.
        MmaKind::Tf32 => f32::from_bits(reg & !0x1fff) as f64,
    }
}

fn mma(lanes: &[State]) -> Result<Vec<[u32; 4]>, String> {
    let State::Warp(WarpMatrixOp::Mma { kind, .. }) = lanes[0] else {
        unreachable!()
    };
    let k = kind.k();
    let mut a = vec![[0f64; 16]; 16];
    let mut b = vec![[0f64; 8]; 16];
    let mut c = [[0f64; 8]; 16];
    for (lane, s) in lanes.iter().enumerate() {
        let State::Warp(WarpMatrixOp::Mma {
            kind: kk,
            a: fa,
            b: fb,
            c: fc,
        }) = *s
        else {
            return Err(mismatch(&lanes[0], s));
        };
        if kk != kind {
            return Err(mismatch(&lanes[0], s));
        }
        let lane = lane as u32;
        let halves = if kind == MmaKind::Tf32 { 1 } else { 2 };
        for (r, &reg) in fa.iter().enumerate() {
            for (h, &(row, col)) in a_coords(kind, lane, r).iter().enumerate().take(halves) {
                a[row as usize][col as usize] = elem(kind, reg, h);
            }
        }
        for (r, &reg) in fb.iter().enumerate() {
            for (h, &(row, col)) in b_coords(kind, lane, r).iter().enumerate().take(halves) {
                b[row as usize][col as usize] = elem(kind, reg, h);
            }
        }
        for (i, &v) in fc.iter().enumerate() {
            let (row, col) = c_coords(lane, i);
            c[row as usize][col as usize] = f32::from_bits(v) as f64;
        }
    }
    // Products of 16-bit (or tf32) inputs are exact in f64; the sum is rounded to
    // f32 once. (The hardware's adder tree rounds differently in the last bits:
    // tests compare with a tolerance, not bit for bit.)
    let dm: Vec<[f32; 8]> = (0..16)
        .map(|r| {
            core::array::from_fn(|col| {
                (c[r][col] + (0..k).map(|p| a[r][p] * b[p][col]).sum::<f64>()) as f32
            })
        })
        .collect();
    Ok((0..32u32)
        .map(|lane| {
            core::array::from_fn(|i| {
                let (row, col) = c_coords(lane, i);
                dm[row as usize][col as usize].to_bits()
            })
        })
        .collect())
}

// Matrix `i`, row `r` comes from lane `8i + r`: the indices are the hardware's.
#[allow(clippy::needless_range_loop)]
fn ldmatrix(lanes: &[State], mem: &BlockMem) -> Result<Vec<[u32; 4]>, String> {
    let State::Warp(WarpMatrixOp::Ldmatrix { num, trans, .. }) = lanes[0] else {
        unreachable!()
    };
    let mut addrs = [0usize; 32];
    for (lane, s) in lanes.iter().enumerate() {
        match *s {
            State::Warp(WarpMatrixOp::Ldmatrix {
                num: n,
                trans: t,
                addr,
            }) if n == num && t == trans => addrs[lane] = addr,
            _ => return Err(mismatch(&lanes[0], s)),
        }
    }
    // Matrix i, row r: 8 16-bit elements at the address lane 8i + r supplies.
    let mut m = [[[0u16; 8]; 8]; 4];
    for i in 0..num as usize {
        for r in 0..8 {
            let lane = 8 * i + r;
            let p = addrs[lane];
            if p % 16 != 0 {
                return Err(format!("ldmatrix: lane {lane} supplies row address {p:#x}, which is not 16-byte aligned"));
            }
            if !mem.contains(p, 16) {
                return Err(format!("ldmatrix: lane {lane} supplies row address {p:#x}, outside the block's shared memory"));
            }
            for (c, e) in m[i][r].iter_mut().enumerate() {
                // SAFETY: inside the block's shared memory (checked above), 16-byte aligned.
                *e = unsafe { (p as *const u16).add(c).read() };
            }
        }
    }
    Ok((0..32usize)
        .map(|lane| {
            let (row, col) = (lane / 4, 2 * (lane % 4));
            core::array::from_fn(|i| {
                if i >= num as usize {
                    return 0;
                }
                let (lo, hi) = if trans {
                    (m[i][col][row], m[i][col + 1][row])
                } else {
                    (m[i][row][col], m[i][row][col + 1])
                };
                lo as u32 | (hi as u32) << 16
            })
        })
        .collect())
}
