#!/usr/bin/env python3
"""Writes crates/simt-std/src/wgmma_ops.rs: one function per (input type, N) holding a
whole wgmma region (fence, 4 K steps, commit, wait) in a single asm! statement; the
same region without its wait (`*_async`); and one wait per N.

Why generated: each instruction names N/2 accumulator registers (64 or 128), and
asm! wants every one as its own operand. Run it after editing this file:
    python3 scripts/gen_wgmma.py
"""
import os

KINDS = [  # (rust name, ptx type, MmaKind, k per instruction, has transpose immediates)
    ("bf16", "bf16", "Bf16", 16, True),
    ("f16", "f16", "F16", 16, True),
    ("tf32", "tf32", "Tf32", 8, False),
]
NS = [64, 128, 256]

out = []
w = out.append


def acc_operands(r):
    return [f"d{i} = inout(reg32) acc[{i // 4}][{i % 4}]" for i in range(r)]


def region(name, ptx, kind, k, trans, n, asynchronous):
    """One region function: with `asynchronous`, it ends at the commit."""
    r = n // 2
    ks = 4 * k
    if asynchronous:
        fn = f"mma_{name}_n{n}_async"
        w(f"/// As [`mma_{name}_n{n}`], without the final `wait_group`: the region's 4 `m64n{n}k{k}`")
        w("/// steps are committed as one *wgmma group* and run on while this warpgroup goes on.")
        w("/// The accumulators returned are not yet the sum: pass them, untouched, to the next")
        w(f"/// region or to [`wait_n{n}`], which returns them once at most `N` groups are in flight.")
        w("///")
        w("/// # Safety")
        w(f"/// As [`mma_{name}_n{n}`]; in addition, nothing reads or writes the returned")
        w("/// accumulators, and nothing overwrites the operands' shared memory, until a")
        w(f"/// [`wait_n{n}`] covers this group (the emulator poisons them meanwhile).")
    else:
        fn = f"mma_{name}_n{n}"
        w(f"/// One `wgmma` region of 4 `m64n{n}k{k}` steps ({ks} elements of K: one 128-byte")
        w(f"/// row of each operand), {name} inputs, f32 accumulators: `acc += A · B` for this")
        w(f"/// warpgroup's 64x{n} tile (returned). `a[s]`, `b[s]`: the descriptors of step `s`.")
        if trans:
            w("/// `TRANS_B`: B is stored N-major (`[k][n]`, the row-major B of `A · B`).")
        else:
            w("/// TF32 operands are K-major only (PTX: no transpose for tf32); `TRANS_B` must be false.")
        w("///")
        w("/// # Safety")
        w("/// As [`crate::wgmma`]'s rules: every thread of the warpgroup calls it, converged,")
        w("/// with the same descriptors, and the operands have landed in shared memory.")
    w("#[inline(always)]")
    w(f"pub unsafe fn {fn}<const TRANS_B: bool>(acc: [[f32; 4]; {r // 4}], a: [u64; 4], b: [u64; 4]) -> [[f32; 4]; {r // 4}] {{")
    w("    #[allow(unused_mut)]")
    w("    let mut acc = acc;")
    if not trans:
        w('    const { assert!(!TRANS_B, "tf32 wgmma reads K-major operands only") };')
    w('    #[cfg(target_arch = "nvptx64")]')
    w("    {")
    regs = ", ".join(f"{{d{i}}}" for i in range(r))

    def body(tb):
        lines = ['"{{ .reg .pred p; setp.ne.b32 p, {one}, 0;",', '"wgmma.fence.sync.aligned;",']
        for s in range(4):
            imm = f", 1, 1, 0, {tb}" if trans else ", 1, 1"
            lines.append(f'"wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{ptx}.{ptx} {{{{{regs}}}}}, {{a{s}}}, {{b{s}}}, p{imm};",')
        if asynchronous:
            lines.append('"wgmma.commit_group.sync.aligned; }}",')
        else:
            lines.append('"wgmma.commit_group.sync.aligned;",')
            lines.append('"wgmma.wait_group.sync.aligned 0; }}",')
        ops = acc_operands(r)
        ops += [f"a{s} = in(reg64) a[{s}]" for s in range(4)]
        ops += [f"b{s} = in(reg64) b[{s}]" for s in range(4)]
        ops += ["one = in(reg32) 1u32", "options(nostack)"]
        return lines, ops

    variants = [(1, "TRANS_B"), (0, "!TRANS_B")] if trans else [(0, None)]
    for tb, cond in variants:
        lines, ops = body(tb)
        ind = "        "
        if cond is not None:
            w(f"{ind}if {'TRANS_B' if tb else 'true'} {{" if tb else f"{ind}else {{")
            ind += "    "
        if asynchronous:
            w(f"{ind}// SAFETY: caller's contract. The accumulators are this statement's in-out")
            w(f"{ind}// operands and the next region's or wait's: ptxas sees one chain of registers.")
        else:
            w(f"{ind}// SAFETY: caller's contract; the accumulators stay in registers for the whole")
            w(f"{ind}// region (one asm statement), so LLVM cannot touch them while the wgmma is in flight.")
        w(f"{ind}unsafe {{")
        w(f"{ind}    core::arch::asm!(")
        for l in lines:
            w(f"{ind}        {l}")
        w(f"{ind}        " + ", ".join(ops))
        w(f"{ind}    )")
        w(f"{ind}}}")
        if cond is not None:
            ind = ind[:-4]
            w(f"{ind}}}")
    w("    }")
    w('    #[cfg(not(target_arch = "nvptx64"))]')
    flag = "true" if asynchronous else "false"
    w(f"    crate::emu::env().wgmma(crate::emu::WgmmaOp {{ kind: crate::mma::MmaKind::{kind}, n: {n}, a, b, trans_b: TRANS_B, acc: acc.as_mut_ptr() as usize, asynchronous: {flag} }});")
    w("    acc")
    w("}")
    w("")


def wait(n):
    r = n // 2
    w("/// Waits until at most `N` of this warpgroup's wgmma groups are in flight")
    w(f"/// (`wgmma.wait_group N`) and returns the accumulators of a 64x{n} tile, which the")
    w("/// groups now complete have written. With `N = 0` they are the final sums.")
    w("///")
    w("/// # Safety")
    w("/// Every thread of the warpgroup calls it, converged; `acc` are the accumulators the")
    w(f"/// last `mma_*_n{n}_async` returned, untouched.")
    w("#[inline(always)]")
    w(f"pub unsafe fn wait_n{n}<const N: u32>(acc: [[f32; 4]; {r // 4}]) -> [[f32; 4]; {r // 4}] {{")
    w("    #[allow(unused_mut)]")
    w("    let mut acc = acc;")
    w('    #[cfg(target_arch = "nvptx64")]')
    ops = acc_operands(r) + ["n = const N", "options(nostack)"]
    mention = " ".join(f"{{d{i}}}" for i in range(r))
    w("    // SAFETY: caller's contract. The accumulators are in-out operands, so no use of")
    w("    // them moves above the wait (the comment names them: asm! wants each operand used).")
    w("    unsafe {")
    w("        core::arch::asm!(")
    w(f'            "wgmma.wait_group.sync.aligned {{n}}; // {mention}",')
    w("            " + ", ".join(ops))
    w("        )")
    w("    }")
    w('    #[cfg(not(target_arch = "nvptx64"))]')
    w(f"    crate::emu::env().wgmma_wait(N as usize, acc.as_mut_ptr() as usize, {n});")
    w("    acc")
    w("}")
    w("")


w("// @generated by scripts/gen_wgmma.py: do not edit by hand.")
w("//! The wgmma regions of [`crate::wgmma`], one per input type and tile width N.")
w("#![allow(clippy::too_many_arguments)]")
w("")
for asynchronous in (False, True):
    for name, ptx, kind, k, trans in KINDS:
        for n in NS:
            region(name, ptx, kind, k, trans, n, asynchronous)
for n in NS:
    wait(n)

path = os.path.join(os.path.dirname(__file__), "..", "crates", "simt-std", "src", "wgmma_ops.rs")
with open(path, "w") as f:
    f.write("\n".join(out))
print("wrote", os.path.normpath(path))
