#!/usr/bin/env bash
# rust-simt set-up: installs what is missing, does nothing when all is present.
#
#   1. a device toolchain: rustc's nvptx64 backend with the standard library source
#      (Debian 12's rustc-web + rust-web-src + cargo-web, else a rustup nightly + rust-src);
#   2. libcuda for *linking* cust (Debian non-free's libcuda1, unpacked into
#      .tools/libcuda; never installed, system package sources untouched);
#   3. ptxas, to check the generated PTX without a GPU (PyPI's nvidia-cuda-nvcc-cu12,
#      unpacked into .tools/cuda).
# Everything project-local lives in .tools/ (git-ignored). Safe to run any number of times.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools="$root/.tools"
say() { echo "[setup] $*" >&2; }
die() { echo "[setup] error: $*" >&2; exit 1; }
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
NVCC_WHEEL_VERSION=12.9.86

have_debian_rustc() {
  [ -x /usr/bin/rustc ] && [ -x /usr/bin/cargo ] && /usr/bin/rustc --version >/dev/null 2>&1 &&
    [ -f "$(/usr/bin/rustc --print sysroot)/lib/rustlib/src/rust/library/core/src/lib.rs" ]
}
have_nightly() {
  command -v rustup >/dev/null 2>&1 || return 1
  local r; r=$(rustup which --toolchain nightly rustc 2>/dev/null) || return 1
  [ -f "$("$r" --print sysroot)/lib/rustlib/src/rust/library/core/src/lib.rs" ]
}

# ---- 1. device toolchain ---------------------------------------------------
if [ -n "${SIMT_DEVICE_RUSTC:-}" ] || have_debian_rustc || have_nightly; then
  :
elif command -v apt-get >/dev/null 2>&1 && { [ -z "$SUDO" ] || command -v sudo >/dev/null 2>&1; }; then
  say "installing Debian's rustc-web, rust-web-src and cargo-web (the NVPTX device toolchain)"
  # Always refresh first: stale lists can offer an older rustc-web (seen: 1.85 before,
  # 1.96 after an update on Debian 12).
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq rustc-web rust-web-src cargo-web >/dev/null
  have_debian_rustc || die "rustc-web was installed but its library source is missing"
elif command -v rustup >/dev/null 2>&1; then
  say "installing a rustup nightly with rust-src (the NVPTX device toolchain)"
  rustup toolchain install nightly --profile minimal --component rust-src
else
  die "no way to install a device toolchain: install Debian's rustc-web rust-web-src cargo-web, or rustup"
fi

# ---- 2. libcuda for linking --------------------------------------------------
if [ ! -e "$tools/libcuda/lib64/libcuda.so" ]; then
  say "fetching libcuda (link-time only) from Debian non-free"
  command -v apt-get >/dev/null 2>&1 || die "apt-get is needed to fetch libcuda1; or set CUDA_LIBRARY_PATH to a folder with lib64/libcuda.so"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial"
  echo "deb http://deb.debian.org/debian bookworm non-free" >"$tmp/sources.list"
  o=(-o "Dir::Etc::SourceList=$tmp/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
     -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache" -o "Debug::NoLocking=1"
     -o "APT::Sandbox::User=$(id -un)")
  apt-get "${o[@]}" update -qq >/dev/null 2>&1 || apt-get "${o[@]}" update
  (cd "$tmp" && apt-get "${o[@]}" download libcuda1 >/dev/null 2>&1 || apt-get "${o[@]}" download libcuda1)
  dpkg-deb -x "$tmp"/libcuda1_*.deb "$tmp/x"
  mkdir -p "$tools/libcuda/lib64"
  cp -a "$tmp"/x/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so* "$tools/libcuda/lib64/"
  [ -e "$tools/libcuda/lib64/libcuda.so" ] || ln -s libcuda.so.1 "$tools/libcuda/lib64/libcuda.so"
  rm -rf "$tmp"; trap - EXIT
fi

# ---- 3. ptxas ----------------------------------------------------------------
if [ ! -x "$tools/cuda/bin/ptxas" ]; then
  say "fetching ptxas (nvidia-cuda-nvcc-cu12 $NVCC_WHEEL_VERSION from PyPI)"
  python3 -m pip --version >/dev/null 2>&1 || { DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-pip >/dev/null; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download -q --no-deps --only-binary=:all: -d "$tmp" "nvidia-cuda-nvcc-cu12==$NVCC_WHEEL_VERSION"
  python3 -c 'import sys, zipfile, glob; zipfile.ZipFile(glob.glob(sys.argv[1] + "/*.whl")[0]).extractall(sys.argv[1] + "/x")' "$tmp"
  mkdir -p "$tools/cuda/bin" "$tools/cuda/nvvm"
  cp "$tmp/x/nvidia/cuda_nvcc/bin/ptxas" "$tools/cuda/bin/ptxas"
  chmod +x "$tools/cuda/bin/ptxas"
  cp -r "$tmp/x/nvidia/cuda_nvcc/nvvm/libdevice" "$tools/cuda/nvvm/" 2>/dev/null || true
  rm -rf "$tmp"; trap - EXIT
fi
"$tools/cuda/bin/ptxas" --version >/dev/null || die "ptxas in $tools/cuda/bin does not run"
