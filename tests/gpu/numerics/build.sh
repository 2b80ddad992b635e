#!/bin/sh
# build.sh — builds the GPU numerics programs (crosscheck, mufu_dump) with nvcc.
# Usage, from anywhere: tests/gpu/numerics/build.sh OUTDIR [ARCH_FLAGS...]
# Default ARCH_FLAGS: -arch=sm_90a (H200). For Blackwell, pass e.g.
#   -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_100a,code=sm_100a
# which also compiles the e2m1 / ue8m0 checks (sm_100a-only instructions).
set -eu
root=$(cd "$(dirname "$0")/../../.." && pwd)
out=${1:?usage: build.sh OUTDIR [ARCH_FLAGS...]}
shift
[ $# -gt 0 ] || set -- -arch=sm_90a
nvcc=${NVCC:-nvcc}
command -v "$nvcc" >/dev/null 2>&1 || nvcc=/usr/local/cuda/bin/nvcc
mkdir -p "$out"
for prog in crosscheck mufu_dump; do
    "$nvcc" -O2 -std=c++17 "$@" -I"$root/compiler" -Xcompiler -ffp-contract=off,-Wall,-Wextra \
        -o "$out/$prog" "$root/tests/gpu/numerics/$prog.cu" "$root/compiler/numerics.c"
done
echo "built $out/crosscheck and $out/mufu_dump"
