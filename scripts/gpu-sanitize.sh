#!/usr/bin/env bash
# On a GPU machine, from the bundle folder: compute-sanitizer over the whole test
# suite. Every test binary runs under memcheck, racecheck, synccheck and initcheck,
# with emulator-sized shapes (SIMT_SMALL=1) and SIMT_PROPTEST_CASES property cases
# per op (default 40), JOBS tool runs at once (default 4). The test that faults the
# GPU on purpose (a trap and an illegal address, to check recovery) is skipped: its
# errors are the point of it. Logs to $OUT/sanitize (or out/sanitize).
#
#   bundle/gpu-sanitize.sh                  # all four tools over every test binary
#   TOOLS="memcheck" bundle/gpu-sanitize.sh # one tool
# A run past PER_RUN_S seconds (default 400) is stopped and shows rc=124.
cd "$(dirname "$0")"
OUT=${OUT:-out}; LOG="$OUT/sanitize"; mkdir -p "$LOG"
TOOLS=${TOOLS:-"memcheck racecheck synccheck initcheck"}
export SIMT_SMALL=1 SIMT_PROPTEST_CASES=${SIMT_PROPTEST_CASES:-40}
run_one() {
  tool=$1; t=$2; name=$(basename "$t")
  extra=""
  case "$tool" in racecheck) extra="--racecheck-report hazard";; esac
  start=$(date +%s)
  timeout "${PER_RUN_S:-400}" compute-sanitizer --tool "$tool" $extra --error-exitcode 9 --print-limit 20 \
    "$t" --test-threads=1 --skip gpu_fault_then_recovery >"$LOG/$tool-$name.log" 2>&1
  rc=$?
  # A binary whose tests make no CUDA call here (the PTX checks; the fault tests
  # without the one skipped) has nothing to instrument: the sanitizer exits 255.
  if [ $rc = 255 ] && grep -q "terminated before first instrumented API call" "$LOG/$tool-$name.log"; then rc="0 (no CUDA work)"; fi
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$LOG/$tool-$name.log" | tail -1)
  tests=$(grep -E "^test result" "$LOG/$tool-$name.log" | tail -1)
  echo "$tool $name rc=$rc $(( $(date +%s) - start ))s | $summary | $tests"
}
export -f run_one; export LOG
for tool in $TOOLS; do for t in tests/*; do echo "$tool $t"; done; done |
  xargs -P "${JOBS:-4}" -L 1 bash -c 'run_one "$0" "$1"' | sort | tee "$LOG/summary.txt"
bad=$(grep -vc "rc=0[ ]" "$LOG/summary.txt")
echo "sanitizer runs with a nonzero exit: $bad of $(wc -l <"$LOG/summary.txt")"
