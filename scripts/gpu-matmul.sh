#!/usr/bin/env bash
# On a GPU machine, from the bundle folder (issue 13): the matmul tests, the tuner over
# the sweep shapes (cache in results/tune.json), the FP32 peers, the sweep reading the
# tuned cache, and compute-sanitizer over tests/matmul (SKIP_SAN=1: not). OUT=dir collects the results.
cd "$(dirname "$0")"
OUT=${OUT:-out}; mkdir -p "$OUT" results
clk() { nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv,noheader; }
echo "== clocks before: $(clk)"; echo "commit $(cat COMMIT)"
for t in matmul tune; do timeout 120 tests/$t --test-threads=4 2>&1 | grep -E "test result|FAILED|panicked" ; done
SIMT_PROPTEST_CASES=${CASES:-3000} timeout 150 tests/properties matmul_every 2>&1 | grep -E "test result|FAILED|panicked|cases|matmul" | head -8
export SIMT_TUNE_CACHE=$PWD/results/tune.json
echo "== tune"; timeout 150 bin/tune 2>&1 | grep -v "^\s*$" | tail -45
echo "== clocks: $(clk)"
echo "== peers"; PYTHONUNBUFFERED=1 timeout 330 python3 peers/peers.py --ops matmul --out results/peers.csv 2>&1 | grep -v "done (" | tail -14
echo "== sweep"; timeout 200 bin/benchmarking --sweep --ops matmul --peers results/peers.csv --out results 2>&1 | grep -E "matmul|copy|ceil" | head -40
echo "== clocks after: $(clk)"
cp results/*.csv results/*.md results/*.json results/*.png "$OUT"/ 2>/dev/null
[ -n "${SKIP_SAN:-}" ] && exit 0
echo "== sanitizer"
for tool in memcheck racecheck synccheck; do
  timeout 240 compute-sanitizer --tool $tool --error-exitcode 9 tests/matmul --test-threads=1 --skip large > results/san-$tool.txt 2>&1; echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|test result' results/san-$tool.txt | tr '\n' ' ')"
done
SIMT_SMALL=1 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 bin/matmul_relu > results/san-example.txt 2>&1; echo "example memcheck rc=$? $(grep -E 'ERROR SUMMARY' results/san-example.txt)"
cp results/*.csv results/*.md results/*.json results/*.png "$OUT"/ 2>/dev/null
