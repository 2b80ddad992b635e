#!/usr/bin/env bash
# Installs what a fresh Debian 12 / Ubuntu 24.04 machine lacks, then configures and builds
# tilec into ./build (release) and installs it into ./dist.
# Usage: scripts/setup.sh [--deps-only]
set -euo pipefail
cd "$(dirname "$0")/.."

LLVM_VER=22
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v flex >/dev/null || need+=(flex)
command -v bison >/dev/null || need+=(bison)
command -v cc >/dev/null || need+=(gcc)
command -v llvm-config-$LLVM_VER >/dev/null || need+=(llvm-$LLVM_VER-dev)
command -v clang-$LLVM_VER >/dev/null || need+=(clang-$LLVM_VER)
[ -e /usr/lib/llvm-$LLVM_VER/lib/clang/$LLVM_VER/lib/linux/libclang_rt.fuzzer-x86_64.a ] || need+=(libclang-rt-$LLVM_VER-dev)
command -v ld.lld-$LLVM_VER >/dev/null || need+=(lld-$LLVM_VER)
[ -e /usr/include/zstd.h ] || need+=(libzstd-dev)
[ -e /usr/include/zlib.h ] || need+=(zlib1g-dev)
command -v python3 >/dev/null || need+=(python3)
# The Python package tests (recorded launches, no GPU) run on Debian's torch.
python3 -c "import torch" 2>/dev/null || need+=(python3-torch)
python3 -c "import pytest" 2>/dev/null || need+=(python3-pytest)

if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need[@]}"; then
    echo "setup: apt-get could not install ${need[*]}." >&2
    echo "setup: LLVM $LLVM_VER comes from Debian 12's bookworm-security suite, or apt.llvm.org on Ubuntu." >&2
    exit 1
  fi
fi

if [ ! -x /usr/local/cuda/bin/ptxas ]; then
  echo "setup: warning: CUDA 13 toolkit not found at /usr/local/cuda (ptxas is missing)." >&2
  echo "setup: tilec still builds and emits PTX; cubins, fatbins and the ptxas tests need it." >&2
fi

[ "${1:-}" = "--deps-only" ] && exit 0

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
cmake --install build --prefix dist >/dev/null
echo "setup: built ./build, installed ./dist (tilec CLI: dist/bin/tilec)"
