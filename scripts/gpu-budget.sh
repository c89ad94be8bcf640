# Sourced by the GPU scripts that run inside one device call with a time budget
# (gpu-issue12.sh, gpu-rowbulk.sh): BUDGET seconds in all, counted from the start of
# the calling script ($SECONDS).
# clk: the card's name, clocks, temperature, power and throttle reasons, one line.
clk() { nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv,noheader; }
# left: seconds of the budget left.
left() { echo $((BUDGET - SECONDS)); }
# step NEED MAX CMD...: runs CMD under a timeout of min(MAX, what is left - 10) when
# at least NEED seconds are left, else says it was skipped.
step() {
  local need=$1 max=$2; shift 2
  local l; l=$(left)
  if [ "$l" -lt "$need" ]; then echo "== skipped ($l s left): $*"; return 0; fi
  local t=$(( l - 10 < max ? l - 10 : max ))
  timeout "$t" "$@"
}
