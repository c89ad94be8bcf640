//! A sound timing harness, like the lecture's `benchmark()`, plus the two ceilings.
//!
//! * warm-up runs first (module load, first-touch, clocks ramping up): at least
//!   `warmup` runs and, on a GPU, at least [`WARMUP_MS`] of them, as
//!   `triton.testing.do_bench` warms up for 25 ms before every measurement. A count
//!   alone is not enough: between two shapes of a sweep the host builds and uploads
//!   the next inputs, the GPU idles and its clocks drop, and two runs of a
//!   microsecond kernel end before they are back up;
//! * each repetition is timed alone with CUDA events around it;
//! * before each repetition L2 is flushed by writing a buffer twice its size, so
//!   every repetition reads its inputs from HBM (no input rotation is needed); this
//!   leaves L2 full of dirty lines, as `triton.testing.do_bench`'s flush does, so
//!   the timed kernel's first allocations in L2 write them back. `SIMT_FLUSH=read`
//!   flushes by reading the buffer instead (a row sum of it), leaving L2 clean: a
//!   diagnostic, not comparable with the peers' timings;
//! * repetitions continue until their device time reaches `rep_ms` (100 ms, as
//!   `do_bench`'s `rep`), at least `reps` and at most `max_reps` of them: a
//!   40 µs kernel gets 1000 samples, as the peers' `do_bench` gives theirs several
//!   hundred, and its median no longer moves by a few percent between two blocks
//!   of the same sweep (10 samples did);
//! * the report is the median and the 10th/90th percentiles.
use crate::BackendKind;
use crate::Result;
use crate::{Buffer, Gpu, LaunchConfig};

/// The shortest warm-up before a measurement on a GPU, in milliseconds of wall time:
/// `triton.testing.do_bench`'s default, so our kernels and the peers' start their
/// timed runs equally warm.
pub const WARMUP_MS: f64 = 25.0;

/// The device time the timed repetitions add up to, at least, in milliseconds:
/// `triton.testing.do_bench`'s default `rep`, so a microsecond kernel is sampled as
/// often as the peers' are.
pub const REP_MS: f64 = 100.0;

/// The most timed repetitions of one measurement.
pub const MAX_REPS: usize = 1000;

/// How to time.
#[derive(Clone, Copy, Debug)]
pub struct BenchConfig {
    /// Warm-up runs, at least.
    pub warmup: usize,
    /// Warm-up wall time, at least (milliseconds; 0 for none).
    pub warmup_ms: f64,
    /// Timed repetitions, at least.
    pub reps: usize,
    /// Device time of the timed repetitions, at least (milliseconds; 0 for none)...
    pub rep_ms: f64,
    /// ...unless this many repetitions came first.
    pub max_reps: usize,
    pub flush_l2: bool,
}

impl BenchConfig {
    /// 5 warm-ups (and [`WARMUP_MS`]) and 30 to [`MAX_REPS`] repetitions (at least
    /// [`REP_MS`] of device time) on a GPU; 1 warm-up and 3 repetitions on the
    /// emulator.
    pub fn for_gpu(gpu: &Gpu) -> BenchConfig {
        match gpu.kind() {
            BackendKind::Cuda => BenchConfig {
                warmup: 5,
                warmup_ms: WARMUP_MS,
                reps: 30,
                rep_ms: REP_MS,
                max_reps: MAX_REPS,
                flush_l2: true,
            },
            BackendKind::Emulator => BenchConfig {
                warmup: 1,
                warmup_ms: 0.0,
                reps: 3,
                rep_ms: 0.0,
                max_reps: 3,
                flush_l2: false,
            },
        }
    }
}

/// Summary of repeated timings, in milliseconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats {
    pub median_ms: f64,
    pub p10_ms: f64,
    pub p90_ms: f64,
    pub reps: usize,
}

impl Stats {
    /// From raw samples.
    pub fn from_samples(mut v: Vec<f64>) -> Stats {
        v.sort_by(|a, b| a.total_cmp(b));
        let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
        Stats {
            median_ms: q(0.5),
            p10_ms: q(0.1),
            p90_ms: q(0.9),
            reps: v.len(),
        }
    }
    /// Throughput in GB/s for `bytes` moved per run.
    pub fn gbps(&self, bytes: f64) -> f64 {
        bytes / (self.median_ms * 1e-3) / 1e9
    }
    /// TFLOP/s for `flops` per run.
    pub fn tflops(&self, flops: f64) -> f64 {
        flops / (self.median_ms * 1e-3) / 1e12
    }
}

/// Rows of the read flush's view of the flush buffer (`SIMT_FLUSH=read`).
const FLUSH_ROWS: usize = 64;

/// Keeps the L2-flush buffer.
pub struct Bencher<'g> {
    gpu: &'g Gpu,
    cfg: BenchConfig,
    flush: Option<Buffer<f32>>,
    /// `SIMT_FLUSH=read`: where the read flush's row sums go.
    read_flush: Option<Buffer<f32>>,
}

impl<'g> Bencher<'g> {
    /// A harness for `gpu`.
    pub fn new(gpu: &'g Gpu, cfg: BenchConfig) -> Result<Bencher<'g>> {
        let flush = if cfg.flush_l2 && gpu.props().l2_bytes > 0 {
            Some(gpu.alloc::<f32>(gpu.props().l2_bytes as usize / 2)?)
        } else {
            None
        };
        let read_flush = match (&flush, std::env::var("SIMT_FLUSH").as_deref()) {
            (Some(_), Ok("read")) => Some(gpu.alloc::<f32>(FLUSH_ROWS)?),
            _ => None,
        };
        Ok(Bencher {
            gpu,
            cfg,
            flush,
            read_flush,
        })
    }

    fn flush_l2(&mut self) -> Result<()> {
        if let (Some(b), Some(out)) = (self.flush.as_ref(), self.read_flush.as_mut()) {
            let cols = b.len() / FLUSH_ROWS;
            return crate::ops::row_sum::row_sum(self.gpu, b.matrix(FLUSH_ROWS, cols)?, out);
        }
        if let Some(b) = self.flush.as_mut() {
            let n = b.len();
            // SAFETY: the buffer holds n floats.
            unsafe {
                self.gpu.launch::<kernels::util::fill_f32>(
                    LaunchConfig::linear::<kernels::util::fill_f32>(n)?,
                    (b.ptr_mut(), n as u32, 1.0),
                )?
            };
        }
        Ok(())
    }

    /// Times `f` (which launches work) per the config.
    pub fn run(&mut self, mut f: impl FnMut() -> Result<()>) -> Result<Stats> {
        // Batches of 1, 2, 4, ... runs (no more than the count still asks for while
        // it is short), the GPU waited for after each: the wall time then counts GPU
        // time (a launch returns before its kernel ends), a long kernel stops at the
        // count or after the run that passes the mark (8192^3 with a count of 2: 2
        // runs), and microsecond kernels keep the GPU busy between the waits.
        let start = std::time::Instant::now();
        let (mut runs, mut batch) = (0, 1);
        while runs < self.cfg.warmup || start.elapsed().as_secs_f64() * 1e3 < self.cfg.warmup_ms {
            let n = if runs < self.cfg.warmup {
                batch.min(self.cfg.warmup - runs)
            } else {
                batch
            };
            for _ in 0..n {
                f()?;
            }
            runs += n;
            batch *= 2;
            self.gpu.synchronize()?;
        }
        let mut samples = Vec::with_capacity(self.cfg.reps);
        let mut total_ms = 0.0;
        while samples.len() < self.cfg.reps
            || (total_ms < self.cfg.rep_ms && samples.len() < self.cfg.max_reps.max(self.cfg.reps))
        {
            self.flush_l2()?;
            let t = self.gpu.time_ms(&mut f)?;
            total_ms += t;
            samples.push(t);
        }
        Ok(Stats::from_samples(samples))
    }
}

/// The measured memory ceiling: a device-to-device copy of `bytes` bytes, counting
/// bytes read plus bytes written, in GB/s.
pub fn copy_bandwidth(gpu: &Gpu, bytes: usize) -> Result<f64> {
    let n = bytes / 4;
    let src = gpu.alloc::<f32>(n)?;
    let mut dst = gpu.alloc::<f32>(n)?;
    let mut b = Bencher::new(gpu, BenchConfig::for_gpu(gpu))?;
    let s = b.run(|| gpu.copy(&src, &mut dst))?;
    Ok(s.gbps(2.0 * (n * 4) as f64))
}

/// A progress bar for sweeps (hidden when stderr is not a terminal).
pub fn progress(len: u64, what: &str) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new(len);
    pb.set_style(
        indicatif::ProgressStyle::with_template("{msg:>14} [{bar:30}] {pos}/{len} {elapsed}")
            .unwrap()
            .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    pb
}
