"""torch.compile's row sum on one shape, for ncu and for its generated Triton code.

    TORCH_LOGS=output_code python3 row_sum_peer.py 4194304x3      # prints the kernel
    ncu -k regex:triton --launch-skip 3 --launch-count 1 python3 row_sum_peer.py 4194304x3
"""
import sys

import torch

rows, cols = map(int, sys.argv[1].split("x"))
x = torch.randn(rows, cols, device="cuda")
f = torch.compile(lambda t: t.sum(dim=1))
for _ in range(6):
    y = f(x)
torch.cuda.synchronize()
err = (y.double() - x.double().sum(dim=1)).abs().max().item()
print(f"{rows}x{cols}: max abs error {err:.2e}")
