#!/usr/bin/env python3
"""Issue 12's "done when" for the memory-bound ops, read from sweep folders.

Each folder is one `bin/benchmarking --sweep --ops gelu,softmax,row_sum --peers CSV
--out DIR` (its merged.csv holds our timings and the peers', its summary.md the
copy rate it measured). For each folder this prints the least margin of every
target and whether it holds:

  * GeLU (`rust-simt fused`) >= 1.0x the best peer at every size 2^16 .. 2^27;
  * the fused softmax >= 1.0x the best peer at 4096 x N, N = 128 .. 16384;
  * softmax `Auto` at 64 x 262144 and 8 x 2^20 >= 2x `torch.softmax` and `torch.compile`;
  * softmax `Auto` at 256 x 65536 and 64 x 262144 >= 80% of the copy rate;
  * row sums >= 1.0x the best peer on every shape of the sweep.

    python3 scripts/memory_targets.py results/r1 results/r2 ...

Where the peers' CSV came from `peers.py --ours PLANS` (ours replayed in the peers'
process and timed interleaved with them), a shape's `... (in-process)` timing of
ours is the one judged against those peers; the sweep's own timing stands where the
launches could not be replayed (scratch memory, cooperative launches).
"""
import csv
import math
import re
import sys

# Every peer the sweep's summary counts for "the best peer".
PEERS = ("torch builtin", "triton", "torch.compile", "torch naive")


def load(folder):
    t = {}
    with open(f"{folder}/merged.csv") as f:
        for r in csv.DictReader(f):
            ms = float(r["ms"])
            if math.isfinite(ms) and ms > 0:  # a failed timing is no timing
                t[(r["op"], r["variant"], r["shape"])] = ms
    with open(f"{folder}/summary.md") as f:
        copy = float(re.search(r"copy (\d+) GB/s", f.read()).group(1))
    return t, copy


def ours_at(t, op, variant, shape):
    """Ours in the peers' process where it was timed there, else the sweep's."""
    return t.get((op, variant + " (in-process)", shape), t.get((op, variant, shape)))


def best_peer(t, op, shape):
    return min((t[(op, p, shape)], p) for p in PEERS if (op, p, shape) in t)


def check(folder):
    t, copy = load(folder)
    rows = []  # (target, least margin, where, holds)

    def missing(name, what):
        # A shape without our timing or without a peer's is a miss, not a pass.
        rows.append((name, "-", f"no timing of {what}", False))

    def ratio_target(name, op, variant, shapes):
        worst = None
        for s in shapes:
            ours = ours_at(t, op, variant, s)
            if ours is None or not any((op, p, s) in t for p in PEERS):
                return missing(name, f"{op} {s} ({'ours' if ours is None else 'any peer'})")
            peer, who = best_peer(t, op, s)
            r = (peer / ours, f"{s}: {ours:.4f} against {who} {peer:.4f}")
            worst = r if worst is None or r[0] < worst[0] else worst
        if not shapes:
            return missing(name, f"any {op} shape")
        rows.append((name, f"{worst[0]:.3f}x", worst[1], worst[0] >= 1.0))

    ratio_target("GeLU >= 1.0x", "gelu", "rust-simt fused", [str(2**k) for k in range(16, 28)])
    ratio_target("fused softmax >= 1.0x", "softmax", "rust-simt fused",
                 [f"4096x{n}" for n in (128, 256, 512, 1024, 2048, 4096, 8192, 16384)])
    worst = None
    for s in ("64x262144", "8x1048576"):
        for p in ("torch builtin", "torch.compile"):
            ours, theirs = ours_at(t, "softmax", "rust-simt auto", s), t.get(("softmax", p, s))
            if ours is None or theirs is None:
                worst = (0.0, f"no timing of softmax {s} ({'ours' if ours is None else p})")
                break
            r = (theirs / ours, f"{s}: {ours:.4f} against {p} {theirs:.4f}")
            worst = r if worst is None or r[0] < worst[0] else worst
        if worst[0] == 0.0:
            break
    rows.append(("long rows >= 2x torch", f"{worst[0]:.2f}x", worst[1], worst[0] >= 2.0))
    # 64 MiB in and 64 MiB out at the measured copy rate (read + write).
    floor = 2 * 64 * 2**20 / (copy * 1e9) * 1e3
    long = [(ours_at(t, "softmax", "rust-simt auto", s), s) for s in ("256x65536", "64x262144")
            if ours_at(t, "softmax", "rust-simt auto", s) is not None]
    if len(long) < 2:
        missing("long rows >= 80% of copy", "softmax 256x65536 or 64x262144 (ours)")
    else:
        ms, s = max(long)
        pct = 100 * floor / ms
        rows.append(("long rows >= 80% of copy", f"{pct:.1f}%", f"{s}: {ms:.4f} (80% is {floor / 0.8:.4f})", pct >= 80.0))
    shapes = sorted({k[2] for k in t if k[0] == "row_sum"})
    ratio_target("row sums >= 1.0x", "row_sum", "rust-simt", shapes)
    return copy, rows


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    met = 0
    for folder in sys.argv[1:]:
        try:
            copy, rows = check(folder)
        except (OSError, ValueError, AttributeError) as e:
            # A round whose sweep did not finish (no merged.csv or summary.md).
            print(f"{folder}: incomplete ({e}); counted as missing every target")
            continue
        ok = all(r[3] for r in rows)
        met += ok
        print(f"{folder} (copy {copy:.0f} GB/s): {'every target met' if ok else 'missed: ' + ', '.join(r[0] for r in rows if not r[3])}")
        for name, margin, where, holds in rows:
            print(f"  {'ok  ' if holds else 'MISS'} {name:26s} least {margin:8s} {where}")
    print(f"{met} of {len(sys.argv) - 1} sweeps meet every target")


if __name__ == "__main__":
    main()
