"""Runs the peers' Triton FP32 (ieee) matmul kernel once per config on one shape, for
ncu / cuobjdump next to ours: `python3 triton_fp32_tile.py 1024 64 64 32 4 3`."""
import sys
import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GM: tl.constexpr):
    pid = tl.program_id(0)
    npm, npn = tl.cdiv(M, BM), tl.cdiv(N, BN)
    group = GM * npn
    gid = pid // group
    first = gid * GM
    gsize = min(npm - first, GM)
    pm = first + ((pid % group) % gsize)
    pn = (pid % group) // gsize
    rm = (pm * BM + tl.arange(0, BM)) % M
    rn = (pn * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    a_p = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b_p = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_p, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_p, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_p += BK * sak
        b_p += BK * sbk
    acc = tl.maximum(acc, 0.0)
    cm = pm * BM + tl.arange(0, BM)
    cn = pn * BN + tl.arange(0, BN)
    tl.store(c_ptr + cm[:, None] * scm + cn[None, :] * scn, acc, mask=(cm[:, None] < M) & (cn[None, :] < N))


n, bm, bn, bk, w, st = map(int, sys.argv[1:7])
a = torch.randn(n, n, device="cuda")
b = torch.randn(n, n, device="cuda")
c = torch.empty(n, n, device="cuda")
grid = (triton.cdiv(n, bm) * triton.cdiv(n, bn),)
for _ in range(3):
    k = matmul_kernel[grid](a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                            BM=bm, BN=bn, BK=bk, GM=8, num_warps=w, num_stages=st)
torch.cuda.synchronize()
print("registers", k.n_regs, "spills", k.n_spills, "shared", k.metadata.shared)
open("triton.sass", "w").write(k.asm.get("sass", "") if hasattr(k, "asm") else "")
