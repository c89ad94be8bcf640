//! An autotuner, like Triton's `@triton.autotune`: for each op a list of candidate
//! configurations, a key of shape buckets, and the fastest candidate per key cached
//! on disk.
//!
//! An op that supports it ([`MatmulKernel::Auto`](crate::ops::matmul::MatmulKernel::Auto),
//! and [`SoftmaxKernel::Auto`](crate::ops::softmax::SoftmaxKernel::Auto) for rows
//! past the register kernels) asks [`choose`] for a configuration with
//!
//! * a [`Key`]: the device's name, the op, the element type and the shape's bucket
//!   (each size rounded up to a power of two, plus flags such as alignment), so one
//!   tuning serves every shape in its bucket;
//! * its candidates, and a heuristic choice;
//! * a closure that runs the op with a candidate.
//!
//! What it gets back depends on the mode, [`Mode::from_env`] (`SIMT_TUNE`):
//!
//! | mode | on a cache hit | on a miss |
//! |---|---|---|
//! | `off` (`SIMT_TUNE=0`; always on the emulator) | the heuristic | the heuristic |
//! | `cached` (the default) | the cached winner | the heuristic |
//! | `tune` (`SIMT_TUNE=1`) | the cached winner | time every candidate, cache and return the fastest |
//!
//! Tuning times each candidate like the benchmark harness: warm-up runs, then
//! repetitions timed alone with CUDA events, each after an L2 flush, and the median
//! wins. Tuning a shape ahead of time is `cargo run --release --example tune`.
//!
//! The cache is JSON at `$SIMT_TUNE_CACHE`, else `$XDG_CACHE_HOME/rust-simt/tune.json`,
//! else `~/.cache/rust-simt/tune.json`. It records the hash of the PTX modules it was
//! tuned with (the portable one and the Hopper one): a rebuilt module (a kernel
//! changed) starts an empty cache. A file that
//! cannot be read or parsed is set aside with a warning, never an error.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::{BackendKind, Buffer, Gpu, LaunchConfig, Result};

/// When the tuner times candidates. See the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The heuristic, always.
    Off,
    /// Cached winners where there are any, else the heuristic.
    Cached,
    /// Cached winners, and tuning on a miss.
    Tune,
}

impl Mode {
    /// `SIMT_TUNE`: `0`/`off` → `Off`, `1`/`on`/`tune` → `Tune`, unset or
    /// `cached` → `Cached`. Anything else is `Cached`, with a warning.
    pub fn from_env() -> Mode {
        match std::env::var("SIMT_TUNE").as_deref().map(str::trim) {
            Err(_) | Ok("") | Ok("cached") => Mode::Cached,
            Ok("0") | Ok("off") => Mode::Off,
            Ok("1") | Ok("on") | Ok("tune") => Mode::Tune,
            Ok(v) => {
                warn_once(&format!(
                    "SIMT_TUNE={v} is not one of 0, off, cached, 1, on, tune: using cached"
                ));
                Mode::Cached
            }
        }
    }
}

/// A tuning key: `device|op|dtype|name=bucket|...|flag`. Build one with
/// [`Key::new`], [`dim`](Key::dim) and [`flag`](Key::flag).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key(String);

impl Key {
    /// The key of `op` on `dtype` elements on `gpu`'s device.
    pub fn new(gpu: &Gpu, op: &str, dtype: &str) -> Key {
        Key(format!("{}|{op}|{dtype}", gpu.props().name))
    }
    /// Adds a size, bucketed: rounded up to a power of two (0 stays 0).
    pub fn dim(mut self, name: &str, v: usize) -> Key {
        let b = if v == 0 { 0 } else { v.next_power_of_two() };
        self.0.push_str(&format!("|{name}={b}"));
        self
    }
    /// Adds a yes/no property (`name` or `!name`).
    pub fn flag(mut self, name: &str, on: bool) -> Key {
        self.0
            .push_str(&format!("|{}{name}", if on { "" } else { "!" }));
        self
    }
    /// The key as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A configuration the tuner can store: a label that parses back.
pub trait Config: Copy + PartialEq + std::fmt::Debug {
    /// A stable text form (stored in the cache).
    fn label(&self) -> String;
    /// Parses a [`label`](Config::label).
    fn from_label(s: &str) -> Option<Self>;
}

impl Config for crate::ops::softmax::SoftmaxKernel {
    fn label(&self) -> String {
        crate::ops::softmax::SoftmaxKernel::label(*self).to_string()
    }
    fn from_label(s: &str) -> Option<Self> {
        crate::ops::softmax::SoftmaxKernel::from_label(s)
    }
}

impl Config for crate::ops::matmul::MatmulKernel {
    fn label(&self) -> String {
        crate::ops::matmul::MatmulKernel::label(*self)
    }
    fn from_label(s: &str) -> Option<Self> {
        crate::ops::matmul::MatmulKernel::from_label(s)
    }
}

/// One tuned key: the winner and every candidate's median time.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The winner's label.
    pub choice: String,
    /// Median milliseconds of each candidate timed (failed candidates left out).
    pub timings: Vec<(String, f64)>,
}

/// The on-disk cache: entries of one PTX module hash.
#[derive(Debug)]
pub struct Cache {
    path: PathBuf,
    module: String,
    entries: BTreeMap<String, Entry>,
}

/// Format version of the cache file.
const FORMAT: u64 = 1;

impl Cache {
    /// The default path: `$SIMT_TUNE_CACHE`, else `$XDG_CACHE_HOME/rust-simt/tune.json`,
    /// else `$HOME/.cache/rust-simt/tune.json`, else `./rust-simt-tune.json`.
    pub fn default_path() -> PathBuf {
        if let Some(p) = std::env::var_os("SIMT_TUNE_CACHE").filter(|p| !p.is_empty()) {
            return PathBuf::from(p);
        }
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
        match base {
            Some(b) => b.join("rust-simt").join("tune.json"),
            None => PathBuf::from("rust-simt-tune.json"),
        }
    }

    /// Reads the cache at `path` for the module whose hash is `module`. A missing
    /// file is an empty cache; a file of another module is an empty cache (it is
    /// replaced on the next save); an unreadable or corrupt file is an empty cache
    /// and a warning (returned, and printed once by the tuner).
    pub fn load(path: &Path, module: &str) -> (Cache, Option<String>) {
        let mut c = Cache {
            path: path.to_path_buf(),
            module: module.to_string(),
            entries: BTreeMap::new(),
        };
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (c, None),
            Err(e) => {
                return (
                    c,
                    Some(format!(
                        "tuning cache {}: cannot read it ({e}); starting empty",
                        path.display()
                    )),
                )
            }
        };
        match Self::parse(&text) {
            Ok((m, entries)) if m == module => {
                c.entries = entries;
                (c, None)
            }
            Ok(_) => (c, None),
            Err(why) => (
                c,
                Some(format!(
                    "tuning cache {}: not a rust-simt tuning cache ({why}); starting empty, the next tuning overwrites it",
                    path.display()
                )),
            ),
        }
    }

    fn parse(text: &str) -> std::result::Result<(String, BTreeMap<String, Entry>), String> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if v.get("format").and_then(|f| f.as_u64()) != Some(FORMAT) {
            return Err(format!("format is not {FORMAT}"));
        }
        let module = v
            .get("module")
            .and_then(|m| m.as_str())
            .ok_or("no module hash")?
            .to_string();
        let mut entries = BTreeMap::new();
        let obj = v
            .get("entries")
            .and_then(|e| e.as_object())
            .ok_or("no entries object")?;
        for (key, e) in obj {
            let choice = e
                .get("choice")
                .and_then(|c| c.as_str())
                .ok_or_else(|| format!("entry {key}: no choice"))?;
            let mut timings = Vec::new();
            if let Some(t) = e.get("timings").and_then(|t| t.as_object()) {
                for (label, ms) in t {
                    timings.push((
                        label.clone(),
                        ms.as_f64().ok_or_else(|| {
                            format!("entry {key}: timing of {label} is not a number")
                        })?,
                    ));
                }
            }
            entries.insert(
                key.clone(),
                Entry {
                    choice: choice.to_string(),
                    timings,
                },
            );
        }
        Ok((module, entries))
    }

    /// The entry of `key`, if tuned.
    pub fn get(&self, key: &Key) -> Option<&Entry> {
        self.entries.get(key.as_str())
    }

    /// Records `entry` for `key` (in memory; [`save`](Cache::save) writes it).
    pub fn insert(&mut self, key: &Key, entry: Entry) {
        self.entries.insert(key.as_str().to_string(), entry);
    }

    /// Every entry, by key.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &Entry)> {
        self.entries.iter().map(|(k, e)| (k.as_str(), e))
    }

    /// The file it reads and writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the cache (to a temporary file first, then renamed into place, so a
    /// crash never leaves half a file).
    pub fn save(&self) -> std::io::Result<()> {
        // Keep what other processes tuned since this one read the file (same module);
        // this process's entries win on a clash.
        let mut all = match std::fs::read_to_string(&self.path).map(|t| Self::parse(&t)) {
            Ok(Ok((m, e))) if m == self.module => e,
            _ => BTreeMap::new(),
        };
        all.extend(self.entries.iter().map(|(k, e)| (k.clone(), e.clone())));
        let mut entries = serde_json::Map::new();
        for (k, e) in &all {
            let mut t = serde_json::Map::new();
            for (label, ms) in &e.timings {
                t.insert(label.clone(), serde_json::json!(ms));
            }
            entries.insert(
                k.clone(),
                serde_json::json!({ "choice": e.choice, "timings": t }),
            );
        }
        let v = serde_json::json!({ "format": FORMAT, "module": self.module, "entries": entries });
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = self
            .path
            .with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(
            &tmp,
            serde_json::to_string_pretty(&v).expect("JSON of strings and numbers"),
        )?;
        std::fs::rename(&tmp, &self.path)
    }
}

/// A stable 64-bit hash (FNV-1a) of the PTX text, as hex: the cache's module key.
pub fn module_hash(ptx: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in ptx.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// The process's cache, loaded on first use.
static CACHE: Mutex<Option<Cache>> = Mutex::new(None);
static WARNED: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn warn_once(msg: &str) {
    let mut w = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    if !w.iter().any(|m| m == msg) {
        eprintln!("warning: {msg}");
        w.push(msg.to_string());
    }
}

/// Runs `f` on the process's cache (loaded from [`Cache::default_path`] for the
/// lecture module on first use).
pub fn with_cache<R>(f: impl FnOnce(&mut Cache) -> R) -> R {
    let mut g = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let c = g.get_or_insert_with(|| {
        let (c, warning) = Cache::load(
            &Cache::default_path(),
            &module_hash(&format!(
                "{}{}",
                crate::ptx::MODULE.ptx(),
                crate::ptx::sm90a::MODULE.ptx()
            )),
        );
        if let Some(w) = warning {
            warn_once(&w);
        }
        c
    });
    f(c)
}

/// How a candidate is timed while tuning.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Untimed runs first.
    pub warmup: usize,
    /// Timed runs; the median counts.
    pub reps: usize,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            warmup: 2,
            reps: 10,
        }
    }
}

/// Times every candidate with `run` (warm-up, then `reps` runs each after an L2
/// flush) and returns the fastest with every timing. A candidate that returns an
/// error is left out; if all fail, the first error is returned.
pub fn tune<C: Config>(
    gpu: &Gpu,
    candidates: &[C],
    timing: Timing,
    mut run: impl FnMut(C) -> Result<()>,
) -> Result<(C, Entry)> {
    let flush_len = (gpu.props().l2_bytes as usize / 2).max(1);
    let mut flush: Option<Buffer<f32>> = if gpu.kind() == BackendKind::Cuda {
        Some(gpu.alloc::<f32>(flush_len)?)
    } else {
        None
    };
    let mut best: Option<(C, f64)> = None;
    let mut timings = Vec::new();
    let mut first_err = None;
    'cand: for &c in candidates {
        for _ in 0..timing.warmup {
            if let Err(e) = run(c) {
                first_err.get_or_insert(e);
                continue 'cand;
            }
        }
        let mut v = Vec::with_capacity(timing.reps);
        for _ in 0..timing.reps.max(1) {
            if let Some(b) = flush.as_mut() {
                let n = b.len();
                // SAFETY: the buffer holds n floats.
                unsafe {
                    gpu.launch::<kernels::util::fill_f32>(
                        LaunchConfig::linear::<kernels::util::fill_f32>(n)?,
                        (b.ptr_mut(), n as u32, 1.0),
                    )?
                };
            }
            match gpu.time_ms(|| run(c)) {
                Ok(ms) => v.push(ms),
                Err(e) => {
                    first_err.get_or_insert(e);
                    continue 'cand;
                }
            }
        }
        v.sort_by(|a, b| a.total_cmp(b));
        let med = v[v.len() / 2];
        timings.push((c.label(), med));
        if best.is_none_or(|(_, b)| med < b) {
            best = Some((c, med));
        }
    }
    match best {
        Some((c, _)) => Ok((
            c,
            Entry {
                choice: c.label(),
                timings,
            },
        )),
        None => Err(first_err
            .unwrap_or_else(|| crate::SimtError::Unsupported("tune: no candidates".into()))),
    }
}

/// The mode [`choose`] works in on `gpu`: [`Mode::from_env`], and always
/// [`Mode::Off`] on the emulator (its timings are host times).
pub fn mode(gpu: &Gpu) -> Mode {
    if gpu.kind() == BackendKind::Emulator {
        Mode::Off
    } else {
        Mode::from_env()
    }
}

/// [`choose`] without tuning: the cached winner for `key` where the mode allows one
/// and `valid` accepts it, else the heuristic. For calls that must not run the op
/// more than once (an in-place softmax: each run would change its input).
pub fn lookup<C: Config>(gpu: &Gpu, key: &Key, heuristic: C, valid: impl Fn(C) -> bool) -> C {
    if mode(gpu) == Mode::Off {
        return heuristic;
    }
    cached(key, &valid).unwrap_or(heuristic)
}

/// The cached winner for `key`, if `valid` accepts it: a cached choice serves every
/// shape of its bucket that it can run, whether or not this exact shape would have
/// listed it as a candidate.
fn cached<C: Config>(key: &Key, valid: &impl Fn(C) -> bool) -> Option<C> {
    with_cache(|c| c.get(key).and_then(|e| C::from_label(&e.choice))).filter(|&c| valid(c))
}

/// The configuration to run for `key`: see the module docs for how the mode
/// decides. `valid` says whether a cached choice can run this call's shape; `run`
/// runs the op with a candidate (only called when tuning). When tuning fails (every
/// candidate fails, or the L2-flush buffer cannot be allocated) the heuristic is
/// used, with a warning.
pub fn choose<C: Config>(
    gpu: &Gpu,
    key: &Key,
    candidates: &[C],
    heuristic: C,
    valid: impl Fn(C) -> bool,
    run: impl FnMut(C) -> Result<()>,
) -> Result<C> {
    if mode(gpu) != Mode::Tune {
        return Ok(lookup(gpu, key, heuristic, valid));
    }
    if let Some(c) = cached(key, &valid) {
        return Ok(c);
    }
    let (c, entry) = match tune(gpu, candidates, Timing::default(), run) {
        Ok(r) => r,
        Err(e) => {
            warn_once(&format!(
                "tuning {}: {e}; using the heuristic choice {}",
                key.as_str(),
                heuristic.label()
            ));
            return Ok(heuristic);
        }
    };
    with_cache(|cache| {
        cache.insert(key, entry);
        if let Err(e) = cache.save() {
            warn_once(&format!(
                "tuning cache {}: cannot write it ({e}); tuned choices last only for this process",
                cache.path().display()
            ));
        }
    });
    Ok(c)
}
