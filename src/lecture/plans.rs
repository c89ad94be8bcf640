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
//! A plan replays when every launch's parameters are scalars or pointers into the
//! op's own input `x` and output `y`, or into the `Gpu`'s workspace (any contents
//! will do: `"init": "any"`) and counts (zero before a launch, left zero by it:
//! `"init": "zero"`), listed under `"buffers"` with their sizes, and no launch is
//! cooperative. Otherwise (epoch-tagged flags, whose state carries from launch to
//! launch; a struct parameter; memory the plan cannot name) it is written with
//! `"replayable": false` and the reason.
use std::path::Path;

use serde_json::{json, Value};

use crate::ops::{gelu, row_sum, softmax};
use crate::sweep::{shapes, Op};
use crate::{Buffer, CapturedLaunch, Gpu, ParamValue, ScratchKind};

/// A named device region that a plan's pointers may point into.
struct Label {
    name: String,
    base: u64,
    bytes: u64,
    /// `None` for x and y; else what a replay must put there (`"any"`, `"zero"`),
    /// or `Err(why)` where no replay can.
    init: Option<std::result::Result<&'static str, &'static str>>,
}

impl Label {
    fn of(name: &str, b: &Buffer<f32>) -> Label {
        Label {
            name: name.into(),
            base: b.ptr() as usize as u64,
            bytes: (b.len() * 4) as u64,
            init: None,
        }
    }

    /// The `Gpu`'s own buffers, named `scratch0`, `zeros0`, `flags0`, ...
    fn scratch(gpu: &Gpu) -> Vec<Label> {
        gpu.scratch_regions()
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let (name, init) = match r.kind {
                    ScratchKind::Workspace => ("scratch", Ok("any")),
                    ScratchKind::Zeros => ("zeros", Ok("zero")),
                    ScratchKind::EpochFlags => (
                        "flags",
                        Err("epoch-tagged flags (each launch waits for the epoch it was handed: it cannot be made twice)"),
                    ),
                };
                Label {
                    name: format!("{name}{i}"),
                    base: r.base,
                    bytes: r.bytes,
                    init: Some(init),
                }
            })
            .collect()
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
        // A null pointer (an argument the launch does not use) is 8 zero bytes.
        ParamValue::Pointer(0) => json!(["u64", 0]),
        ParamValue::Pointer(a) => {
            let l = labels
                .iter()
                .find(|l| a >= l.base && a < l.base + l.bytes.max(1))
                .ok_or("a pointer outside the op's x and y and the Gpu's scratch buffers")?;
            if let Some(Err(why)) = l.init {
                return Err(why.to_string());
            }
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

/// The scratch regions a plan's launches name, with their sizes and what a replay
/// must put in them: `{"zeros3": {"bytes": 64, "init": "zero"}, ...}`.
fn buffers_json(launches: &Value, labels: &[Label]) -> Value {
    let mut out = serde_json::Map::new();
    for l in launches.as_array().into_iter().flatten() {
        for p in l["params"].as_array().into_iter().flatten() {
            if p[0] != "ptr" {
                continue;
            }
            if let Some(lab) = labels.iter().find(|lab| p[1] == lab.name.as_str()) {
                if let Some(Ok(init)) = lab.init {
                    out.insert(lab.name.clone(), json!({"bytes": lab.bytes, "init": init}));
                }
            }
        }
    }
    Value::Object(out)
}

/// What a plan runs: the op itself (what a user's call launches), or a candidate
/// kernel named through the op's `*_with`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Choice {
    Op,
    Gelu(gelu::GeluKernel),
    Softmax(softmax::SoftmaxKernel),
}

/// The plans of one shape, `(variant, choice)`: the op first, named as the sweep
/// names it, then the candidates a future `Auto` might pick, which the sweep also
/// times side by side: GeLU's kernels other than the one `Auto` runs; the looped softmax beside the
/// register rows from 8192 columns and beside the long-row kernels (most of which
/// cannot be replayed); the bulk-copied rows from 4096 to 16384 columns.
fn choices(op: Op, d: &[usize]) -> Vec<(String, Choice)> {
    let mut v = vec![(
        match op {
            Op::Softmax if d[1] > softmax::REGISTER_MAX_COLS => "rust-simt auto",
            Op::RowSum => "rust-simt",
            _ => "rust-simt fused",
        }
        .to_string(),
        Choice::Op,
    )];
    match op {
        Op::Gelu => {
            // Every fused kernel but the one `Auto` runs at this length.
            let own = gelu::GeluKernel::auto_for(d[0]);
            for k in gelu::GeluKernel::ALL {
                if k != gelu::GeluKernel::Auto && k != own {
                    v.push((format!("rust-simt fused {}", k.label()), Choice::Gelu(k)));
                }
            }
        }
        Op::Softmax => {
            if d[1] >= 8192 {
                v.push((
                    "rust-simt looped".into(),
                    Choice::Softmax(softmax::SoftmaxKernel::Looped),
                ));
                v.push((
                    "rust-simt three-pass".into(),
                    Choice::Softmax(softmax::SoftmaxKernel::ThreePass),
                ));
            }
            // The bulk-copied rows beside the register rows they might replace (planned
            // where the device takes them: Hopper).
            if (4096..=softmax::ROW_BULK_MAX_COLS).contains(&d[1]) {
                v.push((
                    "rust-simt row-bulk".into(),
                    Choice::Softmax(softmax::SoftmaxKernel::RowBulk),
                ));
            }
        }
        _ => {}
    }
    v
}

/// Captures our op (what the sweep times as `rust-simt fused` / `auto`) and its
/// candidates ([`choices`], `"candidate": true`) at every sweep shape of `ops`
/// (GeLU, softmax and row sum; matmul is not planned), and writes `plans.json` and
/// the PTX modules the launches used into `dir`. Returns (plans, replayable).
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
            let (xn, yn) = match op {
                Op::Gelu => (d[0], d[0]),
                Op::Softmax => (d[0] * d[1], d[0] * d[1]),
                Op::RowSum => (d[0] * d[1], d[0]),
                Op::Matmul => continue,
            };
            let x = gpu.alloc::<f32>(xn)?;
            let mut y = gpu.alloc::<f32>(yn)?;
            for (variant, choice) in choices(op, &d) {
                if let Choice::Softmax(k) = choice {
                    // Dense rows of a fresh buffer: 16-byte aligned when cols % 4 == 0.
                    if !softmax::takes(gpu, k, d[1], d[1].is_multiple_of(4))? {
                        continue;
                    }
                }
                let mut run = || match choice {
                    Choice::Op => match op {
                        Op::Gelu => gelu::gelu(gpu, &x, &mut y),
                        Op::Softmax => {
                            softmax::softmax(gpu, x.matrix(d[0], d[1])?, y.matrix_mut(d[0], d[1])?)
                        }
                        Op::RowSum => row_sum::row_sum(gpu, x.matrix(d[0], d[1])?, &mut y),
                        Op::Matmul => Ok(()),
                    },
                    Choice::Gelu(k) => gelu::gelu_with(gpu, k, &x, &mut y),
                    Choice::Softmax(k) => softmax::softmax_with(
                        gpu,
                        k,
                        x.matrix(d[0], d[1])?,
                        y.matrix_mut(d[0], d[1])?,
                    ),
                };
                // Once before the capture: a first call may tune (`SIMT_TUNE=1`), and
                // the tuner's trial launches are not the op's plan.
                run()?;
                let ((), launches) = gpu.capture(&mut run)?;
                gpu.synchronize()?;
                let mut labels = vec![Label::of("x", &x), Label::of("y", &y)];
                labels.extend(Label::scratch(gpu));
                let mut plan = json!({
                    "op": op.name(), "shape": shape, "variant": variant, "x": xn, "y": yn,
                    "candidate": !matches!(choice, Choice::Op),
                });
                match launches_json(&launches, &labels) {
                    Ok(j) => {
                        replayable += 1;
                        plan["replayable"] = json!(true);
                        plan["buffers"] = buffers_json(&j, &labels);
                        plan["launches"] = j;
                    }
                    Err(why) => {
                        plan["replayable"] = json!(false);
                        plan["why"] = json!(why);
                        plan["kernels"] =
                            json!(launches.iter().map(|l| l.kernel).collect::<Vec<_>>());
                    }
                }
                plans.push(plan);
            }
        }
    }
    let doc = json!({ "device": gpu.props().name, "plans": plans });
    std::fs::write(dir.join("plans.json"), serde_json::to_string_pretty(&doc)?)?;
    Ok((plans.len(), replayable))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{dim3, Dim3};

    /// The softmax candidates by row length: the bulk-copied rows from 4096 to 16384
    /// columns, the looped and three-loop kernels from 8192, none below 4096; always
    /// after the op.
    #[test]
    fn softmax_candidates_by_row_length() {
        let names = |cols: usize| -> Vec<String> {
            choices(Op::Softmax, &[64, cols])
                .into_iter()
                .map(|(n, _)| n)
                .collect()
        };
        assert_eq!(names(2048), ["rust-simt fused"]);
        assert_eq!(names(4096), ["rust-simt fused", "rust-simt row-bulk"]);
        assert_eq!(
            names(16384),
            [
                "rust-simt fused",
                "rust-simt looped",
                "rust-simt three-pass",
                "rust-simt row-bulk"
            ]
        );
        assert_eq!(
            names(16388),
            ["rust-simt auto", "rust-simt looped", "rust-simt three-pass"]
        );
    }

    fn launch(params: Vec<ParamValue>, cooperative: bool) -> CapturedLaunch {
        CapturedLaunch {
            kernel: "k",
            module: "kernels",
            target: "sm_80",
            grid: dim3(2, 1, 1),
            block: Dim3 { x: 256, y: 1, z: 1 },
            shared_bytes: 0,
            cluster: 1,
            cooperative,
            params,
        }
    }

    fn label(name: &str, base: u64, init: Option<Result<&'static str, &'static str>>) -> Label {
        Label {
            name: name.into(),
            base,
            bytes: 4096,
            init,
        }
    }

    #[test]
    fn pointers_are_named_by_region_and_unreplayable_launches_say_why() {
        let labels = [
            label("x", 0x1000, None),
            label("y", 0x3000, None),
            label("zeros0", 0x5000, Some(Ok("zero"))),
            label("flags1", 0x8000, Some(Err("epoch-tagged flags"))),
        ];
        let ok = launch(
            vec![
                ParamValue::Pointer(0x1010),
                ParamValue::Pointer(0x3000),
                ParamValue::Pointer(0x5004),
                ParamValue::Unsigned { value: 7, bytes: 4 },
                ParamValue::F32(0.5),
            ],
            false,
        );
        let j = launches_json(std::slice::from_ref(&ok), &labels).unwrap();
        assert_eq!(
            j[0]["params"],
            json!([
                ["ptr", "x", 16],
                ["ptr", "y", 0],
                ["ptr", "zeros0", 4],
                ["u32", 7],
                ["f32bits", 0.5f32.to_bits()]
            ])
        );
        assert_eq!(
            buffers_json(&j, &labels),
            json!({"zeros0": {"bytes": 4096, "init": "zero"}})
        );
        // The end of a region is outside it (half-open), and so is unnamed memory.
        let past = launch(vec![ParamValue::Pointer(0x2000)], false);
        assert!(launches_json(&[past], &labels)
            .unwrap_err()
            .contains("outside"));
        let null = launch(vec![ParamValue::Pointer(0)], false);
        assert_eq!(
            launches_json(&[null], &labels).unwrap()[0]["params"],
            json!([["u64", 0]])
        );
        let flags = launch(vec![ParamValue::Pointer(0x8000)], false);
        assert!(launches_json(&[flags], &labels)
            .unwrap_err()
            .contains("epoch-tagged"));
        let s = launch(vec![ParamValue::Opaque { bytes: 24 }], false);
        assert!(launches_json(&[s], &labels)
            .unwrap_err()
            .contains("24-byte struct"));
        assert!(launches_json(&[ok, launch(vec![], true)], &labels)
            .unwrap_err()
            .contains("cooperative"));
    }
}
