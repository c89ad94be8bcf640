#!/usr/bin/env bash
# On a GPU machine, from the bundle folder: the bulk-copied softmax rows
# (`SoftmaxKernel::RowBulk`) checked and timed in one short device call (at most
# BUDGET seconds, default 260), most important first: its tests (under a timeout:
# a hang shows as rc=124), memcheck on them, then ours, the candidates (RowBulk, the
# looped and three-loop kernels) and the peers in one process at SHAPES (default
# 4096 x 4096 / 8192 /
# 16384; ROUNDS, default 3, --stat trim), synccheck and racecheck on RowBulk's tests,
# the whole softmax test binary.
# OUT=dir collects results/ (results.tgz) and the log.
cd "$(dirname "$0")"
OUT=${OUT:-out}; mkdir -p "$OUT" results
BUDGET=${BUDGET:-260}
. ./gpu-budget.sh
echo "== commit $(cat COMMIT), clocks before: $(clk)"
step 20 40 tests/softmax row_bulk --test-threads=1 > results/test-row-bulk.txt 2>&1
echo "tests/softmax row_bulk rc=$? $(grep -E 'test result|FAILED|panicked|skipped' results/test-row-bulk.txt | tr '\n' ' ')"
step 30 45 compute-sanitizer --tool memcheck --error-exitcode 9 tests/softmax row_bulk --test-threads=1 > results/san-memcheck-row-bulk.txt 2>&1
echo "row_bulk memcheck rc=$? $(grep -E 'ERROR SUMMARY|test result|skipped' results/san-memcheck-row-bulk.txt | tr '\n' ' ')"
step 30 60 bin/benchmarking --plans results/plans --ops softmax 2>&1 | tail -1
echo "== in process ($(left) s left)"
step 40 120 env PYTHONUNBUFFERED=1 python3 peers/peers.py --ours results/plans --rounds "${ROUNDS:-3}" --stat trim \
  --ops softmax --only "${SHAPES:-4096x4096,4096x8192,4096x16384}" --out results/peers-inproc.csv > results/peers-inproc.log 2>&1
echo "peers rc=$?"; grep -v "done (" results/peers-inproc.log | tail -60
echo "== clocks: $(clk)"
for tool in synccheck racecheck; do
  step 30 45 compute-sanitizer --tool $tool --error-exitcode 9 tests/softmax row_bulk --test-threads=1 > results/san-$tool-row-bulk.txt 2>&1
  echo "row_bulk $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result|skipped' results/san-$tool-row-bulk.txt | tr '\n' ' ')"
done
step 30 90 tests/softmax --test-threads=4 > results/test-softmax.txt 2>&1
echo "tests/softmax rc=$? $(grep -E 'test result|FAILED|panicked|skipped' results/test-softmax.txt | tr '\n' ' ')"
echo "== clocks after: $(clk); $SECONDS s"
tar czf "$OUT/results.tgz" results
