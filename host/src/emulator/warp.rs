//! Warp collectives on the emulator: a shuffle completes when all 32 lanes of the
//! warp have reached one, exchanging values exactly as `shfl.sync` does
//! (xor/down/up/idx, with the PTX clamping rules). A shuffle that not every lane
//! reaches, one in a partial warp, or lanes at different shuffles are
//! [`EmuError::ShuffleDivergence`], naming the kernel, block, warp and lane.
use simt_std::emu::ShflMode;
use simt_std::Dim3;

use super::memory::{Ctx, State};
use super::{d, EmuError};

/// Completes every warp whose lanes all wait at a shuffle; `Ok(true)` if any did.
pub(super) fn complete_shuffles(
    kernel: &'static str,
    bid: Dim3,
    ctxs: &[Ctx],
    state: &mut [State],
) -> Result<bool, EmuError> {
    let n = state.len();
    let mut progressed = false;
    for w in 0..n.div_ceil(32) {
        let lanes = w * 32..((w + 1) * 32).min(n);
        let waiting = lanes
            .clone()
            .filter(|&l| matches!(state[l], State::Shfl(..)))
            .count();
        if waiting == 0 {
            continue;
        }
        let div = |detail: String| EmuError::ShuffleDivergence {
            kernel,
            block: bid,
            warp: w as u32,
            detail,
        };
        if lanes.len() < 32 {
            return Err(div(format!(
            "a shuffle in a partial warp of {} lanes; blocks that use shuffles need a multiple of 32 threads",
            lanes.len()
        )));
        }
        if waiting < 32 {
            let l = lanes
                .clone()
                .find(|&l| !matches!(state[l], State::Shfl(..)))
                .unwrap();
            let what = if matches!(state[l], State::Done) {
                "has exited"
            } else {
                "waits at sync_threads()"
            };
            return Err(div(format!(
                "a full-warp shuffle was not reached by lane {} (thread {}), which {what}",
                l % 32,
                d(ctxs[l].tid)
            )));
        }
        let mut vals = [0u32; 32];
        let mut argv = [0u32; 32];
        let mut mode0 = None;
        for (i, l) in lanes.clone().enumerate() {
            let State::Shfl(m, v, a) = state[l] else {
                unreachable!()
            };
            if *mode0.get_or_insert(m) != m {
                return Err(div(format!(
                    "lanes of one warp executed different shuffles ({:?} and {m:?})",
                    mode0.unwrap()
                )));
            }
            vals[i] = v;
            argv[i] = a;
        }
        let mode = mode0.unwrap();
        for (i, l) in lanes.enumerate() {
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
            state[l] = State::Run(if src < 32 { vals[src] } else { vals[i] });
        }
        progressed = true;
    }
    Ok(progressed)
}
