#!/usr/bin/env bash
# Builds a self-contained GPU bundle: every example, test binary and bench binary in
# release mode, with the CUDA backend forced on, into bundle/ (or DIR). It runs on a
# x86-64 Linux machine with the NVIDIA driver (R525 or newer: the PTX is .version 7.0
# for sm_80 and is JIT-compiled by the driver) and no Rust toolchain.
#
#   scripts/bundle.sh [DIR]                          # -> bundle/ (about 180 MB)
#   scripts/bundle.sh [DIR] --example matmul_tc --test tensor_cores
#                                                    # only these (a few MB: quick to build
#                                                    # and small enough to carry to a lent GPU)
#   bundle/run-tests.sh          # the correctness suite on the GPU (the bundle's tests)
#   bundle/bin/<example>         # any example, e.g. bundle/bin/rust-simt (the walk-through)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$root/bundle
examples=(); tests=()
while [ $# -gt 0 ]; do
  case "$1" in
    --example) examples+=("$2"); shift 2;;
    --test) tests+=("$2"); shift 2;;
    -*) echo "bundle.sh: unknown option $1 (use [DIR] [--example NAME]... [--test NAME]...)" >&2; exit 2;;
    *) out=$1; shift;;
  esac
done
cd "$root"
bash scripts/setup.sh
export SIMT_CUDA=1 CARGO_TARGET_DIR="$root/target/bundle"
rm -rf "$out"; mkdir -p "$out/bin" "$out/tests" "$out/benches" "$out/peers"
list() { python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["kind"][0], m["target"]["name"], m["executable"])'; }
partial=$(( ${#examples[@]} + ${#tests[@]} ))
if [ "$partial" -gt 0 ]; then
  for e in ${examples[@]+"${examples[@]}"}; do
    cargo build --release -q --example "$e"
    cp "$CARGO_TARGET_DIR/release/examples/$e" "$out/bin/"
  done
  for t in ${tests[@]+"${tests[@]}"}; do
    cargo test --release -q --no-run --test "$t" --message-format=json | list | while read -r kind name exe; do
      cp "$exe" "$out/tests/$name"
    done
    [ -e "$out/tests/$t" ] || { echo "bundle.sh: no test binary named $t" >&2; exit 1; }
  done
else
  cargo build --release --bins --examples 2>&1 | grep -v "^\s*Compiling" >&2 || true
  cargo build --release --bins --examples -q
  for f in "$CARGO_TARGET_DIR"/release/rust-simt "$CARGO_TARGET_DIR"/release/examples/*; do
    case "$f" in *.d) continue;; esac
    [[ "$(basename "$f")" =~ -[0-9a-f]{16}$ ]] && continue
    [ -x "$f" ] && [ -f "$f" ] && cp "$f" "$out/bin/"
  done
  cargo test --release --no-run --message-format=json 2>/dev/null | list | while read -r kind name exe; do
    case "$kind" in test) cp "$exe" "$out/tests/$name";; esac
  done
  cargo bench --no-run --message-format=json 2>/dev/null | list | while read -r kind name exe; do
    if [ "$kind" = bench ]; then cp "$exe" "$out/benches/$name"; fi
  done
  # The user-style crate (its own workspace): its demo and its tests, on the GPU too.
  (cd examples/custom_kernel && cargo build --release -q && cp "$CARGO_TARGET_DIR/release/custom-kernel" "$out/bin/" &&
    cargo test --release --no-run --message-format=json 2>/dev/null | list | while read -r kind name exe; do
      case "$kind" in test) cp "$exe" "$out/tests/custom_kernel_$name";; esac
    done)
fi
cp scripts/peers.py scripts/peers_tc.py scripts/probes/inductor_code.py "$out/peers/"
cp scripts/gpu-tc.sh scripts/gpu-check.sh scripts/gpu-perf.sh scripts/gpu-sanitize.sh scripts/gpu-reliability.sh scripts/gpu-matmul.sh scripts/gpu-memory.sh scripts/gpu-issue12.sh scripts/gpu-rowbulk.sh scripts/gpu-budget.sh scripts/memory_targets.py "$out/"
strip "$out"/bin/* "$out"/tests/* "$out"/benches/* 2>/dev/null || true
# The PTX modules, for SASS on the GPU machine (ptxas -arch=sm_90 ptx/kernels.ptx; cuobjdump -sass).
mkdir -p "$out/ptx"
for p in kernels.ptx kernels_sm90a.ptx; do
  f=$(ls -t "$CARGO_TARGET_DIR"/release/build/rust-simt-*/out/$p 2>/dev/null | head -1 || true)
  if [ -n "$f" ]; then cp "$f" "$out/ptx/"; fi
done
cat >"$out/run-tests.sh" <<'SH'
#!/usr/bin/env bash
# Runs every test binary of the bundle; exits non-zero if any fails.
cd "$(dirname "$0")"
rc=0
for t in tests/*; do
  echo "=== $t"
  "$t" --test-threads=4 "$@" || rc=1
done
exit $rc
SH
chmod +x "$out/run-tests.sh"
git rev-parse --short HEAD >"$out/COMMIT" 2>/dev/null || true
du -sh "$out" >&2
ls "$out"/bin "$out"/tests "$out"/benches >&2
