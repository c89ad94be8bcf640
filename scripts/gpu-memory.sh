#!/usr/bin/env bash
# On a GPU machine, from the bundle folder (issue 12): the memory-bound ops' tests
# (softmax, row sum, the cluster probes), their property tests, the peers and the
# sweep of GeLU, softmax and row sum in one run, compute-sanitizer on the softmax and
# row_sum examples. OUT=dir collects the results. ROUNDS=n (default 1): n rounds of
# peers then sweep, alternating (results/r1 .. rn), judged by memory_targets.py.
cd "$(dirname "$0")"
OUT=${OUT:-out}; mkdir -p "$OUT" results
clk() { nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv,noheader; }
echo "== clocks before: $(clk)"; echo "commit $(cat COMMIT)"
for t in softmax row_sum gelu hopper; do timeout 150 tests/$t --test-threads=4 2>&1 | grep -E "test result|FAILED|panicked" ; done
SIMT_PROPTEST_CASES=${CASES:-2000} timeout 150 tests/properties softmax row_sum 2>&1 | grep -E "test result|FAILED|panicked|cases" | head -8
echo "== clocks: $(clk)"
rm -rf results/r[0-9]*; rounds=""
for r in $(seq 1 "${ROUNDS:-1}"); do
  echo "== peers, round $r"; PYTHONUNBUFFERED=1 timeout 300 python3 peers/peers.py --ops gelu,softmax,row_sum --out results/peers-r$r.csv 2>&1 | grep -v "done (" | tail -8
  echo "== sweep, round $r"; timeout 200 bin/benchmarking --sweep --ops gelu,softmax,row_sum --peers results/peers-r$r.csv --out results/r$r 2>&1 | grep -E "softmax|row_sum|gelu|copy" | head -60
  rounds="$rounds results/r$r"
done
echo "== issue 12's targets"; [ -n "$rounds" ] && python3 memory_targets.py $rounds
echo "== clocks after: $(clk)"
for s in 256x65536 64x262144 8x1048576 1x100000; do timeout 60 bin/softmax $s 2>&1 | grep -E "picks|ms" ; done
echo "== sanitizer"
for ex in softmax row_sum; do for tool in memcheck racecheck synccheck; do
  SIMT_SMALL=1 timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 bin/$ex > results/san-$tool-$ex.txt 2>&1; echo "$ex $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' results/san-$tool-$ex.txt | tail -1)"
done; done
tar czf "$OUT/memory-results.tgz" results
