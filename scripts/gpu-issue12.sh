#!/usr/bin/env bash
# On a GPU machine, from the bundle folder: issue 12's whole check inside one device
# call (at most BUDGET seconds, default 580), most important first, each step given
# what is left of the budget and skipped when too little is:
#   1. our launches at every shape (`bin/benchmarking --plans`), then ours, our
#      candidate kernels and the peers in one process (`peers.py --ours`, ROUNDS,
#      default 3; STAT, default trim: the mean of each variant's middle 80% of runs,
#      the median kept beside it in the rounds CSV);
#   2. the sweep (what cannot be replayed, the long rows' copy rate), judged by
#      memory_targets.py against the in-process peers;
#   3. the Triton code torch.compile generates where it leads (results/inductor-code.txt),
#      and the GPU tests of the memory-bound ops;
#   4. compute-sanitizer (memcheck, racecheck, synccheck) on the softmax and row_sum
#      examples, memcheck on the GeLU tests (every GeLU kernel on ragged, in-place
#      and misaligned views), all three on the bulk-copied softmax rows' tests.
# OUT=dir collects results/ (results.tgz) and the log.
cd "$(dirname "$0")"
OUT=${OUT:-out}; mkdir -p "$OUT" results
BUDGET=${BUDGET:-580}
. ./gpu-budget.sh
echo "== commit $(cat COMMIT), clocks before: $(clk)"
rm -rf results/plans results/r1
step 60 100 bin/benchmarking --plans results/plans 2>&1 | tail -1
echo "== ours, our candidates and the peers in one process, ${ROUNDS:-3} rounds, --stat ${STAT:-trim} ($(left) s left)"
step 120 "${INPROC_MAX:-300}" env PYTHONUNBUFFERED=1 python3 peers/peers.py --ours results/plans --rounds "${ROUNDS:-3}" \
  --stat "${STAT:-trim}" --ops gelu,softmax,row_sum --out results/peers-inproc.csv > results/peers-inproc.log 2>&1
echo "peers rc=$?"; grep -v "done (" results/peers-inproc.log | tail -120
echo "== clocks: $(clk)"
echo "== sweep ($(left) s left)"
step 90 "${SWEEP_MAX:-200}" bin/benchmarking --sweep --ops gelu,softmax,row_sum --peers results/peers-inproc.csv \
  --out results/r1 > results/sweep.log 2>&1
echo "sweep rc=$?"; grep -E "softmax|row_sum|gelu|copy" results/sweep.log | head -80
echo "== issue 12's targets"; [ -d results/r1 ] && python3 memory_targets.py results/r1
echo "== clocks: $(clk)"
echo "== torch.compile's kernels at the shapes where it leads ($(left) s left)"
step 60 60 python3 peers/inductor_code.py softmax:4096x16384 softmax:4096x1024 gelu:524288 row_sum:4x1048576 \
  > results/inductor-code.txt 2>&1; echo "inductor_code rc=$? $(grep -c "def triton" results/inductor-code.txt) kernels"
echo "== tests ($(left) s left)"
for t in gelu softmax row_sum device_library; do
  step 40 150 tests/$t --test-threads=4 > results/test-$t.txt 2>&1
  echo "$t rc=$? $(grep -E "test result|FAILED|panicked|skipped" results/test-$t.txt | tr '\n' ' ')"
done
echo "== sanitizer ($(left) s left)"
for tool in memcheck racecheck synccheck; do for ex in softmax row_sum; do
  step 40 90 env SIMT_SMALL=1 compute-sanitizer --tool $tool --error-exitcode 9 bin/$ex > results/san-$tool-$ex.txt 2>&1
  echo "$ex $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|skipped' results/san-$tool-$ex.txt | tail -1)"
done; done
step 40 120 compute-sanitizer --tool memcheck --error-exitcode 9 tests/gelu --test-threads=1 > results/san-memcheck-test-gelu.txt 2>&1
echo "tests/gelu memcheck rc=$? $(grep -E 'ERROR SUMMARY|test result|skipped' results/san-memcheck-test-gelu.txt | tr '\n' ' ')"
for tool in memcheck racecheck synccheck; do
  step 40 90 compute-sanitizer --tool $tool --error-exitcode 9 tests/softmax row_bulk --test-threads=1 > results/san-$tool-test-row-bulk.txt 2>&1
  echo "tests/softmax row_bulk $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result|skipped' results/san-$tool-test-row-bulk.txt | tr '\n' ' ')"
done
echo "== clocks after: $(clk); $SECONDS s"
tar czf "$OUT/results.tgz" results
