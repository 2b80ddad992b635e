#!/usr/bin/env bash
# Sets a fresh Debian 12 or 13 machine up for tilec, in one command:
#   1. installs what is missing: Debian packages (LLVM 22, clang, lld, flex, bison, CMake, ...)
#      and the Python packages pinned in requirements.txt (torch 2.13.0 CPU, pytest, ...);
#   2. builds ./build (release) and installs it into ./dist;
#   3. builds the kernel library ahead of time into dist/share/tilec/kernels.fatbin (needs the
#      CUDA 13 toolkit's ptxas, nvlink and fatbinary; skipped, with a warning, without them);
#   4. makes the python3 on PATH import tilec from ./dist/python (a .pth file in its site-packages);
#   5. runs a first kernel: on the GPU where there is one, else on the CPU emulator.
# Usage: scripts/setup.sh [--deps-only]   (--deps-only: step 1 alone)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/deps.sh

tilec_install_deps "$root"
[ "${1:-}" = "--deps-only" ] && exit 0

# TILEC_AOT_KERNELS: every declared specialisation compiled ahead of time into kernels.fatbin
# (a warning, and kernels compiled on first use, where the CUDA tools are missing)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEC_AOT_KERNELS=ON >/dev/null
cmake --build build
cmake --install build --prefix dist --strip >/dev/null
echo "setup: built ./build, installed ./dist (the tilec CLI: dist/bin/tilec; the Python package: dist/python)"
[ -e dist/share/tilec/kernels.fatbin ] && echo "setup: the kernel library ahead of time: dist/share/tilec/kernels.fatbin"

# `python3 -c "import tilec"` from anywhere: a .pth file in the site-packages of the python3 on PATH
# (the .venv where step 1 made one) puts dist/python on its path; a wheel installed later
# (`pip install .`) comes first on the path
site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if printf '%s\n' "$root/dist/python" 2>/dev/null >"$site/tilec-dist.pth"; then
  echo "setup: $(command -v python3) imports tilec from ./dist/python (through $site/tilec-dist.pth)"
  case "$(command -v python3)" in
    "$root"/.venv/*) echo "setup: that python3 is the venv ./.venv: '. .venv/bin/activate' puts it first on PATH" ;;
  esac
else
  echo "setup: $site is not writable: set PYTHONPATH=$root/dist/python to import tilec"
fi

python3 scripts/first_kernel.py
