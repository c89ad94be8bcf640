#!/usr/bin/env bash
# On a GPU machine, from the repository root with bundle/: the whole suite, the
# tensor-core example against its peers (cuBLAS, Triton) in one run, and
# compute-sanitizer on it. Logs to $OUT. Every step has a timeout (a hung kernel
# must not eat the device lease).
OUT=${OUT:-out}; mkdir -p "$OUT"
cd bundle
q() { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv,noheader; }
echo "device: $(q)"
echo "== tests"; timeout 300 ./run-tests.sh >"$OUT/tests.log" 2>&1; echo "tests rc=$?"; grep -E "^test result|FAILED|panicked" "$OUT/tests.log" | sort | uniq -c
echo "== rust-simt tensor cores (clocks: $(q))"; timeout 180 bin/matmul_tc "$@" 2>&1 | tee "$OUT/matmul_tc.log"
echo "== peers (clocks: $(q))"; PYTHONUNBUFFERED=1 timeout 240 python3 peers/peers_tc.py "$@" 2>&1 | grep -v Warning | tee "$OUT/peers_tc.log"
echo "== rust-simt again (clocks: $(q))"; timeout 180 bin/matmul_tc "$@" 2>&1 | grep -E "stage|kernel" | tee -a "$OUT/matmul_tc.log"
if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck synccheck; do
    r=$(SIMT_SMALL=1 timeout 300 compute-sanitizer --tool $tool --error-exitcode 9 bin/matmul_tc 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY" | tail -1)
    echo "sanitizer $tool matmul_tc: $r"
  done 2>&1 | tee "$OUT/sanitizer.log"
fi
echo "device after: $(q)"
