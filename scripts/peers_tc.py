#!/usr/bin/env python3
"""Tensor-core peers of `examples/matmul_tc.rs`, timed the same way in the same run:
cuBLAS BF16 / FP16 (torch.relu(A @ B), output in the input precision, as PyTorch
returns it), cuBLAS TF32 (f32 inputs with allow_tf32), and a tutorial-style
autotuned Triton `tl.dot` kernel (FP16, BF16, TF32) with a fused ReLU.
Method: triton.testing.do_bench (events, warm-up, median over repetitions).

    python3 scripts/peers_tc.py [N ...]      # default 2048 4096 8192
"""
import sys

def main():
    try:
        import torch, triton, triton.language as tl
        from triton.testing import do_bench
    except Exception as e:  # noqa
        print(f"peers_tc: PyTorch/Triton not available ({e})")
        return 0
    if not torch.cuda.is_available():
        print("peers_tc: no CUDA device")
        return 0
    sizes = [int(a) for a in sys.argv[1:]] or [2048, 4096, 8192]

    configs = [
        triton.Config({"BM": 128, "BN": 256, "BK": 64, "G": 8}, num_stages=3, num_warps=8),
        triton.Config({"BM": 256, "BN": 128, "BK": 64, "G": 8}, num_stages=3, num_warps=8),
        triton.Config({"BM": 128, "BN": 128, "BK": 64, "G": 8}, num_stages=4, num_warps=4),
        triton.Config({"BM": 128, "BN": 128, "BK": 32, "G": 8}, num_stages=4, num_warps=4),
        triton.Config({"BM": 64, "BN": 128, "BK": 32, "G": 8}, num_stages=4, num_warps=4),
    ]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def mm(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, G: tl.constexpr):
        pid = tl.program_id(0)
        npm, npn = tl.cdiv(M, BM), tl.cdiv(N, BN)
        per_group = G * npn
        gid = pid // per_group
        first = gid * G
        gsz = min(npm - first, G)
        pm = first + ((pid % per_group) % gsz)
        pn = (pid % per_group) // gsz
        rm = (pm * BM + tl.arange(0, BM)) % M
        rn = (pn * BN + tl.arange(0, BN)) % N
        rk = tl.arange(0, BK)
        ap = a + rm[:, None] * sam + rk[None, :] * sak
        bp = b + rk[:, None] * sbk + rn[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            x = tl.load(ap, mask=rk[None, :] < K - k * BK, other=0.0)
            y = tl.load(bp, mask=rk[:, None] < K - k * BK, other=0.0)
            acc = tl.dot(x, y, acc)
            ap += BK * sak
            bp += BK * sbk
        acc = tl.maximum(acc, 0.0)
        cm = pm * BM + tl.arange(0, BM)
        cn = pn * BN + tl.arange(0, BN)
        tl.store(c + cm[:, None] * scm + cn[None, :] * scn, acc.to(c.dtype.element_ty), mask=(cm[:, None] < M) & (cn[None, :] < N))

    def triton_mm(A, B):
        M, K = A.shape
        N = B.shape[1]
        C = torch.empty((M, N), device=A.device, dtype=A.dtype)
        grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)
        mm[grid](A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1), C.stride(0), C.stride(1))
        return C

    print(f"{'peer':<26} {'n':>6} {'ms':>10} {'TFLOP/s':>9} {'rel err':>9}")
    for n in sizes:
        g = torch.Generator(device="cuda").manual_seed(0)
        A32 = torch.rand((n, n), device="cuda", generator=g) * 2 - 1
        B32 = torch.rand((n, n), device="cuda", generator=g) * 2 - 1
        ref = torch.relu(A32[:64].double() @ B32.double())
        flops = 2.0 * n ** 3
        def run(name, fn, out_rows):
            out = fn()
            err = ((out_rows(out).double() - ref).norm() / ref.norm()).item()
            ms = do_bench(fn, warmup=50, rep=300, return_mode="median")
            print(f"{name:<26} {n:>6} {ms:>10.4f} {flops / ms / 1e9:>9.1f} {err:>9.1e}", flush=True)
        for dt, nm in [(torch.bfloat16, "bf16"), (torch.float16, "fp16")]:
            A, B = A32.to(dt), B32.to(dt)
            run(f"cuBLAS {nm}", lambda: torch.relu(A @ B), lambda o: o[:64])
            run(f"triton {nm} (autotuned)", lambda: triton_mm(A, B), lambda o: o[:64])
        torch.backends.cuda.matmul.allow_tf32 = True
        run("cuBLAS tf32", lambda: torch.relu(A32 @ B32), lambda o: o[:64])
        run("triton tf32 (autotuned)", lambda: triton_mm(A32, B32), lambda o: o[:64])
        torch.backends.cuda.matmul.allow_tf32 = False
    return 0

if __name__ == "__main__":
    sys.exit(main())
