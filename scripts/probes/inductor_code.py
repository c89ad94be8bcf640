#!/usr/bin/env python3
"""Prints the Triton kernels `torch.compile` (Inductor) generates for the peers'
GeLU, softmax and row sum at given shapes, and the launch it actually makes, so that
ours can be set against what the best peer runs (issue 12: at 4096 x 16384
`torch.compile`'s softmax is 1% ahead of ours, and a two-pass loop as we wrote it is
4% behind).

    python3 scripts/probes/inductor_code.py softmax:4096x16384 gelu:4194304 > inductor.txt

Each op is compiled as `peers.py` compiles it (`dynamic=False`, the same functions,
imported from it), run once on uniform inputs, and the source Inductor wrote is
printed: the generated module, kernels with their `triton_heuristics` metadata and
the candidate configurations it autotunes over. Which configuration won shows only
at run time, so the compiled function is then run under the profiler and each kernel
launch is printed with its grid, block, registers, shared memory and duration
(`grid` = rows / XBLOCK for a reduction, `block` = 32 x num_warps).
"""
import json, os, sys, tempfile

# peers.py sits beside this file in the bundle (peers/) and one folder up in the
# repository (scripts/).
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
from peers import gelu_naive, row_sum, softmax_naive  # noqa: E402


def launches(torch, f, x):
    """The kernels one call of `f(x)` launches, from a profiler trace."""
    from torch.profiler import ProfilerActivity, profile

    f(x)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            f(x)
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as fh:
            events = json.load(fh).get("traceEvents", [])
    out = []
    for e in events:
        if str(e.get("cat", "")).lower() != "kernel":
            continue
        a = e.get("args", {})
        out.append(f"  {e.get('name')}: grid {a.get('grid')}, block {a.get('block')}, "
                   f"{a.get('registers per thread')} registers, "
                   f"{a.get('shared memory')} B shared, {e.get('dur')} us")
    return out


def main(argv):
    import torch
    from torch._inductor.utils import run_and_get_code

    fns = {"gelu": gelu_naive, "softmax": softmax_naive, "row_sum": row_sum}
    for spec in argv or ["softmax:4096x16384"]:
        op, shape = spec.split(":")
        d = [int(v) for v in shape.split("x")]
        x = torch.rand(*d, device="cuda") * 4 - 2
        torch._dynamo.reset()
        f = torch.compile(fns[op], dynamic=False)
        _, code = run_and_get_code(f, x)
        print(f"===== {op} {shape}: {len(code)} generated module(s), torch {torch.__version__} =====")
        for c in code:
            print(c)
        print(f"===== {op} {shape}: launches of three calls (profiler) =====")
        try:
            print("\n".join(launches(torch, f, x)) or "  (no kernel events in the trace)")
        except Exception as e:  # noqa: BLE001 -- a probe: say why, go on to the next shape
            print(f"  profiler unavailable: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
