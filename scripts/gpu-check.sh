#!/usr/bin/env bash
# On a GPU machine, from the bundle folder: the correctness suite, every example,
# the walk-through, the criterion benches, compute-sanitizer on every example and
# ncu's shared-memory bank-conflict counters for the tiled matmul. Logs to $OUT (or out/).
cd "$(dirname "$0")"
OUT=${OUT:-out}; mkdir -p "$OUT"
LOG=$(mktemp -d)/logs; mkdir -p "$LOG"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$LOG/device.txt"
echo "== tests"; ./run-tests.sh >"$LOG/tests.log" 2>&1; echo "tests rc=$?"; grep -E "test result|FAILED|panicked" "$LOG/tests.log"
for ex in gpu_info gelu softmax row_sum matmul_relu benchmarking profiling; do
  echo "== example $ex"; bin/$ex >"$LOG/ex_$ex.log" 2>&1; echo "rc=$?"
done
echo "== walk-through"; bin/rust-simt >"$LOG/demo.log" 2>&1; echo "rc=$?"
echo "== criterion"; benches/kernels --bench >"$LOG/criterion.log" 2>&1; echo "rc=$?"; grep -E "time:" -B1 "$LOG/criterion.log" | grep -v "^--" | paste - - | sed 's/  */ /g'
if command -v compute-sanitizer >/dev/null; then
  for ex in gpu_info gelu softmax row_sum matmul_relu benchmarking profiling; do
    for tool in memcheck racecheck synccheck; do
      r=$(SIMT_SMALL=1 compute-sanitizer --tool $tool --error-exitcode 9 bin/$ex 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY" | tail -1)
      echo "sanitizer $tool $ex: $r"
    done
  done 2>&1 | tee "$LOG/sanitizer.log"
fi
if command -v ncu >/dev/null; then
  ncu --clock-control none --kernel-name matmul_relu_tiled --launch-skip 2 --launch-count 1 \
    --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_shared_st.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed \
    bin/matmul_relu >"$LOG/ncu.log" 2>&1; echo "ncu rc=$?"; grep -E "l1tex|smsp|sm__" "$LOG/ncu.log"
  ncu --clock-control none --kernel-name regex:"^matmul_relu_(tiled_db|warptiled)$" --launch-skip 2 --launch-count 2 \
    --section WarpStateStats --section SchedulerStats bin/matmul_relu >"$LOG/ncu_stalls.log" 2>&1
  grep -E "matmul_relu_|Issued Warp|No Eligible|Warp Cycles Per Issued|Stall" "$LOG/ncu_stalls.log" | head -30
fi
tar czf "$OUT/check-logs.tgz" -C "$(dirname "$LOG")" logs
