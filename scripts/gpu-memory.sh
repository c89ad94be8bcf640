#!/usr/bin/env bash
# On a GPU machine, from the bundle folder (issue 12): the memory-bound ops' tests
# (softmax, row sum, the cluster probes), their property tests, the peers and the
# sweep of GeLU, softmax and row sum in one run, compute-sanitizer on the softmax and
# row_sum examples. OUT=dir collects the results. By default our launches are
# replayed in the peers' process (`bin/benchmarking --plans`, `peers.py --ours`) and
# timed interleaved with them for ROUNDS rounds (default 5), then one sweep times what
# cannot be replayed and the long-row copy rate (results/r1); INPROC=0: ROUNDS rounds
# of peers then sweep, alternating, each in its own process (results/r1 .. rn). Either
# way memory_targets.py judges the result. TESTS=0 / SAN=0 / SWEEP=0 leave out the
# tests / the sanitizers / the in-process run's sweep. The in-process replay also times
# the candidate kernels beside ours (GeLU's other block shapes, the looped softmax);
# CANDIDATES=0 leaves them out. One device call is at most 600 s: split a full run, e.g.
# `TESTS=0 SAN=0 SWEEP=0 ROUNDS=3` (the in-process comparison), then `INPROC=0
# ROUNDS=1` (the tests, a classic round, the sanitizers).
cd "$(dirname "$0")"
OUT=${OUT:-out}; mkdir -p "$OUT" results
clk() { nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv,noheader; }
echo "== clocks before: $(clk)"; echo "commit $(cat COMMIT)"
if [ "${TESTS:-1}" = 1 ]; then
for t in softmax row_sum gelu hopper; do timeout 150 tests/$t --test-threads=4 2>&1 | grep -E "test result|FAILED|panicked" ; done
SIMT_PROPTEST_CASES=${CASES:-2000} timeout 150 tests/properties softmax row_sum 2>&1 | grep -E "test result|FAILED|panicked|cases" | head -8
fi
echo "== clocks: $(clk)"
rm -rf results/r[0-9]* results/plans; rounds=""
if [ "${INPROC:-1}" = 1 ]; then
  echo "== our launches at every shape"; timeout 120 bin/benchmarking --plans results/plans 2>&1 | tail -1
  echo "== ours and the peers in one process, ${ROUNDS:-5} interleaved rounds"
  cands=""; [ "${CANDIDATES:-1}" = 1 ] || cands="--no-candidates"
  PYTHONUNBUFFERED=1 timeout "${INPROC_TIMEOUT:-540}" python3 peers/peers.py --ours results/plans --rounds "${ROUNDS:-5}" $cands --ops "${OPS:-gelu,softmax,row_sum}" --out results/peers-inproc.csv 2>&1 | grep -v "done (" | tail -90
  echo "== clocks: $(clk)"
  if [ "${SWEEP:-1}" = 1 ]; then
    echo "== sweep"; timeout 300 bin/benchmarking --sweep --ops gelu,softmax,row_sum --peers results/peers-inproc.csv --out results/r1 2>&1 | grep -E "softmax|row_sum|gelu|copy" | head -60
    rounds=results/r1
  fi
fi
for r in $( [ "${INPROC:-1}" = 1 ] || seq 1 "${ROUNDS:-1}"); do
  echo "== peers, round $r"; PYTHONUNBUFFERED=1 timeout 300 python3 peers/peers.py --ops gelu,softmax,row_sum --out results/peers-r$r.csv 2>&1 | grep -v "done (" | tail -8
  echo "== sweep, round $r"; timeout 200 bin/benchmarking --sweep --ops gelu,softmax,row_sum --peers results/peers-r$r.csv --out results/r$r 2>&1 | grep -E "softmax|row_sum|gelu|copy" | head -60
  rounds="$rounds results/r$r"
done
echo "== issue 12's targets"; [ -n "$rounds" ] && python3 memory_targets.py $rounds
echo "== clocks after: $(clk)"
for s in 256x65536 64x262144 8x1048576 1x100000; do timeout 60 bin/softmax $s 2>&1 | grep -E "picks|ms" ; done
[ "${SAN:-1}" = 1 ] || { tar czf "$OUT/memory-results.tgz" results; exit 0; }
echo "== sanitizer"
for ex in softmax row_sum; do for tool in memcheck racecheck synccheck; do
  SIMT_SMALL=1 timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 bin/$ex > results/san-$tool-$ex.txt 2>&1; echo "$ex $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' results/san-$tool-$ex.txt | tail -1)"
done; done
tar czf "$OUT/memory-results.tgz" results
