"""cuBLAS TF32 alone: torch.relu(A @ B) with allow_tf32, do_bench median (L2 flushed), per size.

Used between the rounds of bin/matmul_tc to time the peer in the same call (docs/GPU-RUNS.md).
"""
import torch, sys
from triton.testing import do_bench
torch.backends.cuda.matmul.allow_tf32 = True
for n in [int(a) for a in sys.argv[1:]]:
    g = torch.Generator(device="cuda").manual_seed(0)
    A = torch.rand((n, n), device="cuda", generator=g) * 2 - 1
    B = torch.rand((n, n), device="cuda", generator=g) * 2 - 1
    ms = do_bench(lambda: torch.relu(A @ B), warmup=50, rep=300, return_mode="median")
    print(f"cuBLAS tf32 {n:>6} {ms:10.4f} ms {2*n**3/ms/1e9:9.1f} TFLOP/s", flush=True)
