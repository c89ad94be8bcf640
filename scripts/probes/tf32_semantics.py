# Does cuBLAS's TF32 (torch allow_tf32) round its f32 inputs to nearest, or truncate
# them (the tensor cores ignore the low 13 bits)? C = A @ I with every A element
# 1 + 3*2^-12: nearest gives 1 + 2^-10 (4 in units of 2^-12), truncation 1 (0),
# exact f32 3. The tie 1 + 2^-11 (2 units): nearest-away 4, nearest-even 0, trunc 0.
# Then the same with B = the value and A = I (the other operand).
import torch
torch.backends.cuda.matmul.allow_tf32 = True
for n in [256, 2048, 4096, 8192]:
    for v, what in [(1 + 3 * 2**-12, "1+3u"), (1 + 2**-11, "1+2u (tie)")]:
        x = torch.full((n, n), v, device="cuda")
        eye = torch.eye(n, device="cuda")
        ca = (x @ eye)[n // 2, n // 3].item()
        cb = (eye @ x)[n // 2, n // 3].item()
        print(f"n={n} A={what}: C-1 = {(ca - 1) * 2**12:.3f} u; B={what}: C-1 = {(cb - 1) * 2**12:.3f} u")
