#!/usr/bin/env python3
"""Prints the Triton kernels `torch.compile` (Inductor) generates for the peers'
GeLU, softmax and row sum at given shapes, with their launch configuration, so that
ours can be set against what the best peer actually runs (issue 12: at 4096 x 16384
`torch.compile`'s softmax is 1% ahead of ours, and a two-pass loop as we wrote it is
4% behind).

    python3 scripts/probes/inductor_code.py softmax:4096x16384 gelu:4194304 > inductor.txt

Each op is compiled as `peers.py` compiles it (`dynamic=False`, the same functions),
run once on uniform inputs, and the source Inductor wrote is printed (the generated
module: kernels with their `triton_heuristics` metadata, `num_warps`, block sizes and
grid).
"""
import sys


def main(argv):
    import torch
    from torch._inductor.utils import run_and_get_code

    def gelu_naive(x):
        return 0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x ** 3)))

    def softmax_naive(x):
        m = x.max(dim=1, keepdim=True).values
        e = torch.exp(x - m)
        return e / e.sum(dim=1, keepdim=True)

    fns = {"gelu": gelu_naive, "softmax": softmax_naive, "row_sum": lambda t: t.sum(dim=1)}
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
