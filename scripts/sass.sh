#!/usr/bin/env bash
# The SASS of one kernel, without a GPU: assembles the last build's PTX module with
# the project's ptxas (scripts/setup.sh) and disassembles it with cuobjdump and
# nvdisasm, fetched on first use from PyPI (nvidia-cuda-cuobjdump and
# nvidia-cuda-nvdisasm, unpacked into .tools/cuda; nothing is installed system-wide,
# and neither setup.sh nor CI needs them).
#
#   cargo build --release
#   scripts/sass.sh KERNEL            # a kernel of the sm_90a module (Hopper)
#   scripts/sass.sh KERNEL sm_80      # a kernel of the portable module
#   scripts/sass.sh KERNEL | grep -E 'HMMA|LDSM|STL|LDL'   # e.g. the K loop, spills
#
# Prints ptxas's registers-and-spills line for the kernel, then its SASS. Spill
# stores and loads show up as STL / LDL; ptxas's register count is the launch's (a
# kernel that uses setmaxnreg gets its per-warpgroup budgets on top).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools="$root/.tools/cuda/bin"
die() { echo "sass.sh: $*" >&2; exit 1; }
[ $# -ge 1 ] || die "usage: scripts/sass.sh KERNEL [sm_90a|sm_80]"
kernel=$1
arch=${2:-sm_90a}
case "$arch" in
  sm_90a) module=kernels_sm90a.ptx ;;
  sm_80) module=kernels.ptx ;;
  *) die "unknown architecture $arch (sm_90a or sm_80)" ;;
esac
[ -x "$tools/ptxas" ] || die "no ptxas in .tools/cuda/bin: run scripts/setup.sh first"
WHEEL_VERSION=13.5.37
for tool in cuobjdump nvdisasm; do
  [ -x "$tools/$tool" ] && continue
  echo "[sass] fetching $tool (nvidia-cuda-$tool $WHEEL_VERSION from PyPI)" >&2
  tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps --only-binary=:all: -d "$tmp" "nvidia-cuda-$tool==$WHEEL_VERSION" || { rm -rf "$tmp"; die "pip could not fetch nvidia-cuda-$tool==$WHEEL_VERSION"; }
  python3 -c 'import sys, zipfile, glob; zipfile.ZipFile(glob.glob(sys.argv[1] + "/*.whl")[0]).extractall(sys.argv[1] + "/x")' "$tmp"
  bin=$(find "$tmp/x" -type f -name "$tool" | head -1)
  [ -n "$bin" ] || { rm -rf "$tmp"; die "the wheel holds no $tool"; }
  cp "$bin" "$tools/$tool"
  chmod +x "$tools/$tool"
  rm -rf "$tmp"
done
ptx=$(ls -t "$root"/target/release/build/rust-simt-*/out/$module 2>/dev/null | head -1 || true)
[ -n "$ptx" ] || die "no $module under target/release: run cargo build --release first"
grep -q "\.entry $kernel(" "$ptx" || die "no kernel '$kernel' in $ptx (kernel names: grep '.entry' $ptx)"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$tools/ptxas" -arch="$arch" -v "$ptx" -o "$out/k.cubin" 2> "$out/ptxas.log"
grep -A3 "entry function '$kernel'" "$out/ptxas.log" | grep -E "spill|Used" | sed -e 's/^ *//' -e 's/ptxas info *: //' -e 's/^/ptxas: /'
PATH="$tools:$PATH" "$tools/cuobjdump" -sass -fun "$kernel" "$out/k.cubin" | grep -v '^\s*/\* [0-9a-fx]* \*/\s*$'
