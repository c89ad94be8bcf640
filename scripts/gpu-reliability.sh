#!/usr/bin/env bash
# On a GPU machine, from the bundle folder: the reliability run of docs/RELIABILITY.md.
#  1. the property tests at SIMT_PROPTEST_CASES cases per op (default 10 000), GPU-sized;
#  2. every other test binary of the suite: the fault tests (a trap and an illegal
#     address, then recovery) and the thread tests among them;
#  3. a soak of SOAK_S seconds (default 120) that checks device memory stays flat.
# Clocks and throttle reasons before and after. Logs to $OUT/reliability (or out/).
cd "$(dirname "$0")"
OUT=${OUT:-out}; LOG="$OUT/reliability"; mkdir -p "$LOG"
q() { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader; }
echo "device: $(q)"
export SIMT_PROPTEST_CASES=${SIMT_PROPTEST_CASES:-10000}
start=$(date +%s)
tests/properties --test-threads=9 --nocapture >"$LOG/properties.log" 2>&1; echo "properties rc=$? in $(( $(date +%s) - start )) s"
grep -E "cases on|test result|Test failed|minimal failing" "$LOG/properties.log"
for t in tests/*; do
  n=$(basename "$t"); [ "$n" = properties ] && continue
  "$t" --test-threads=4 --nocapture >"$LOG/$n.log" 2>&1; echo "$n rc=$? $(grep -E '^test result' "$LOG/$n.log" | tail -1)"
done
grep -hE "^test .*(fault|thread|memory)|\[trap\]|\[illegal" "$LOG/faults.log" "$LOG/threads.log"
SIMT_SOAK_S=${SOAK_S:-120} SIMT_SOAK_CASES=${SOAK_CASES:-200} tests/properties --ignored soak --nocapture >"$LOG/soak.log" 2>&1
echo "soak rc=$?"; grep -E "\[soak\]|test result" "$LOG/soak.log" | tail -4
echo "device after: $(q)"
