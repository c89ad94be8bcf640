#!/usr/bin/env bash
# On a GPU machine, from the repository root with bundle/ (scripts/bundle.sh) and
# bundle/old/ (the same examples built from an older commit): the suite, every
# example, the user-style crate, compute-sanitizer on the new examples, and an A/B
# of matmul_relu and softmax, old and new interleaved, in one run. Logs to $OUT.
OUT=${OUT:-out}; mkdir -p "$OUT"
cd bundle
q() { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv,noheader; }
echo "device: $(q)"
echo "== tests"; ./run-tests.sh >"$OUT/tests.log" 2>&1; echo "tests rc=$?"; grep -E "^test result|FAILED|panicked" "$OUT/tests.log" | sort | uniq -c
for ex in custom-kernel gpu_info gelu softmax row_sum matmul_relu profiling; do
  echo "== $ex"; bin/$ex >"$OUT/ex_$ex.log" 2>&1; echo "rc=$?"; grep -vE "^\s*$" "$OUT/ex_$ex.log" | tail -6
done
echo "== walk-through"; bin/rust-simt >"$OUT/demo.log" 2>&1; echo "rc=$?"
echo "== A/B (old = $(cat old/COMMIT 2>/dev/null || echo previous), new = $(cat COMMIT))"
for i in 1 2; do
  for v in old new; do
    if [ $v = old ]; then m=old/matmul_relu; s=old/softmax; else m=bin/matmul_relu; s=bin/softmax; fi
    echo "-- $v matmul_relu (run $i), clocks: $(q)"; $m 2>&1 | grep -E "warptiled|WarpTiled|tiled\+db|TiledDouble|^Tiled|tiled  |naive|Naive" | grep -E "ms" | head -8
    echo "-- $v softmax (run $i)"; $s 2>&1 | grep -E "ms" | head -4
  done
done
if command -v compute-sanitizer >/dev/null; then
  for ex in custom-kernel softmax row_sum gelu matmul_relu; do
    for tool in memcheck racecheck synccheck; do
      r=$(SIMT_SMALL=1 compute-sanitizer --tool $tool --error-exitcode 9 bin/$ex 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY" | tail -1)
      echo "sanitizer $tool $ex: $r"
    done
  done 2>&1 | tee "$OUT/sanitizer.log"
fi
echo "device after: $(q)"
