#!/usr/bin/env bash
# On a GPU machine, from the bundle folder: the peers (PyTorch, Triton, cuBLAS) and
# our sweeps in one run, merged into results/ (CSV, summary.md, PNG plots).
cd "$(dirname "$0")"
OUT=${OUT:-out}; mkdir -p "$OUT" results
PYTHONUNBUFFERED=1 python3 peers/peers.py --out results/peers.csv "$@" 2>&1 | tail -40
bin/benchmarking --sweep --peers results/peers.csv --out results 2>&1 | tail -60
tar czf "$OUT/results.tgz" results
