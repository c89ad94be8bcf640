//! Launch plans: what our ops launch at each sweep shape, written so that another
//! program can make the same launches in its own process.
//!
//! The peers (PyTorch, Triton) run in Python; the sweep runs in Rust. Timed in two
//! processes, two kernels that both run at the copy ceiling differ by how each
//! process's buffers happen to be placed and by each process's draw of noise, which
//! at 40 µs is as large as the difference being asked about. `scripts/peers.py
//! --ours PLANS` closes that gap: it loads the very PTX the Rust process loaded,
//! replays each plan's launches on its own tensors, and times them interleaved with
//! the peers, on the same buffers, with the same flush and the same timer.
//!
//! A plan replays only when every launch's parameters are scalars or pointers into
//! the op's own input `x` and output `y` (no scratch buffers, flags or counters
//! whose state a launch depends on, no structs) and no launch is cooperative;
//! otherwise it is written with `"replayable": false` and the reason.
use std::path::Path;

use serde_json::{json, Value};

use crate::ops::{gelu, row_sum, softmax};
use crate::sweep::{shapes, Op};
use crate::{Buffer, CapturedLaunch, Gpu, ParamValue};

/// A named device buffer that a plan's pointers may point into.
struct Label<'a> {
    name: &'static str,
    base: u64,
    bytes: u64,
    _buf: std::marker::PhantomData<&'a ()>,
}

impl<'a> Label<'a> {
    fn of(name: &'static str, b: &'a Buffer<f32>) -> Label<'a> {
        Label {
            name,
            base: b.ptr() as usize as u64,
            bytes: (b.len() * 4) as u64,
            _buf: std::marker::PhantomData,
        }
    }
}

/// The PTX file a launch's module is written to, beside the plans.
fn ptx_file(module: &str, target: &str) -> String {
    format!("{module}_{target}.ptx")
}

/// One parameter as JSON (`["ptr", "x", offset]`, `["u32", v]`, `["f32bits", b]`,
/// ...), or why the launch cannot be replayed.
fn param_json(p: &ParamValue, labels: &[Label]) -> std::result::Result<Value, String> {
    Ok(match *p {
        ParamValue::Unsigned { value, bytes } => json!([format!("u{}", bytes * 8), value]),
        ParamValue::Signed { value, bytes } => json!([format!("i{}", bytes * 8), value]),
        ParamValue::F32(v) => json!(["f32bits", v.to_bits()]),
        ParamValue::F64(v) => json!(["f64bits", v.to_bits()]),
        ParamValue::Pointer(a) => {
            let l = labels
                .iter()
                .find(|l| a >= l.base && a < l.base + l.bytes.max(1))
                .ok_or("a pointer outside the op's x and y (scratch memory, flags or counters: state the launch depends on)")?;
            json!(["ptr", l.name, a - l.base])
        }
        ParamValue::Opaque { bytes } => {
            return Err(format!(
                "a {bytes}-byte struct parameter (not recorded field by field)"
            ))
        }
    })
}

/// A plan's launches as JSON, or why they cannot be replayed.
fn launches_json(
    launches: &[CapturedLaunch],
    labels: &[Label],
) -> std::result::Result<Value, String> {
    let mut out = Vec::new();
    for l in launches {
        if l.cooperative {
            return Err(format!("`{}` is a cooperative launch", l.kernel));
        }
        let params = l
            .params
            .iter()
            .map(|p| param_json(p, labels))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| format!("`{}` takes {e}", l.kernel))?;
        out.push(json!({
            "kernel": l.kernel,
            "ptx": ptx_file(l.module, l.target),
            "grid": [l.grid.x, l.grid.y, l.grid.z],
            "block": [l.block.x, l.block.y, l.block.z],
            "shared": l.shared_bytes,
            "cluster": l.cluster,
            "params": params,
        }));
    }
    Ok(Value::Array(out))
}

/// Captures our op (what the sweep times as `rust-simt fused` / `auto`) at every
/// sweep shape of `ops` (GeLU, softmax and row sum; matmul is not planned), and
/// writes `plans.json` and the PTX modules the launches used into `dir`. Returns
/// (plans, replayable).
pub fn write(
    gpu: &Gpu,
    ops: &[Op],
    quick: bool,
    dir: &Path,
) -> std::result::Result<(usize, usize), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    for m in [&crate::ptx::MODULE, &crate::ptx::sm90a::MODULE] {
        std::fs::write(dir.join(ptx_file(m.crate_name(), m.target())), m.ptx())?;
    }
    let mut plans: Vec<Value> = Vec::new();
    let mut replayable = 0;
    for &op in ops {
        for shape in shapes(op.name(), quick) {
            let d: Vec<usize> = shape.split('x').map(|v| v.parse().unwrap_or(0)).collect();
            let (xn, yn, variant) = match op {
                Op::Gelu => (d[0], d[0], "rust-simt fused"),
                Op::Softmax if d[1] > softmax::REGISTER_MAX_COLS => {
                    (d[0] * d[1], d[0] * d[1], "rust-simt auto")
                }
                Op::Softmax => (d[0] * d[1], d[0] * d[1], "rust-simt fused"),
                Op::RowSum => (d[0] * d[1], d[0], "rust-simt"),
                Op::Matmul => continue,
            };
            let x = gpu.alloc::<f32>(xn)?;
            let mut y = gpu.alloc::<f32>(yn)?;
            let mut run = || match op {
                Op::Gelu => gelu::gelu(gpu, &x, &mut y),
                Op::Softmax => {
                    softmax::softmax(gpu, x.matrix(d[0], d[1])?, y.matrix_mut(d[0], d[1])?)
                }
                Op::RowSum => row_sum::row_sum(gpu, x.matrix(d[0], d[1])?, &mut y),
                Op::Matmul => Ok(()),
            };
            // Once before the capture: a first call may tune (`SIMT_TUNE=1`), and the
            // tuner's trial launches are not the op's plan.
            run()?;
            let ((), launches) = gpu.capture(&mut run)?;
            gpu.synchronize()?;
            let labels = [Label::of("x", &x), Label::of("y", &y)];
            let mut plan = json!({
                "op": op.name(), "shape": shape, "variant": variant, "x": xn, "y": yn,
            });
            match launches_json(&launches, &labels) {
                Ok(j) => {
                    replayable += 1;
                    plan["replayable"] = json!(true);
                    plan["launches"] = j;
                }
                Err(why) => {
                    plan["replayable"] = json!(false);
                    plan["why"] = json!(why);
                    plan["kernels"] = json!(launches.iter().map(|l| l.kernel).collect::<Vec<_>>());
                }
            }
            plans.push(plan);
        }
    }
    let doc = json!({ "device": gpu.props().name, "plans": plans });
    std::fs::write(dir.join("plans.json"), serde_json::to_string_pretty(&doc)?)?;
    Ok((plans.len(), replayable))
}
