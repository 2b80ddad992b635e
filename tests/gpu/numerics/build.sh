#!/bin/sh
# build.sh — builds the GPU numerics programs (crosscheck, mufu_dump, mma_model) with nvcc.
# Usage, from anywhere: tests/gpu/numerics/build.sh OUTDIR [ARCH_FLAGS...]
# Default ARCH_FLAGS: -arch=sm_90a (H200). For Blackwell, pass e.g.
#   -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_100a,code=sm_100a
# which also compiles the e2m1 / ue8m0 checks (sm_100a-only instructions).
#        tests/gpu/numerics/build.sh --sim OUTDIR
# builds OUTDIR/mufu_dump_sim with the host C++ compiler instead: mufu_dump on a CPU stand-in
# for the GPU (sim_cuda.h) whose "unit" answers from numerics/data/mufu_*.bin.
set -eu
root=$(cd "$(dirname "$0")/../../.." && pwd)
if [ "${1:-}" = "--sim" ]; then
    out=${2:?usage: build.sh --sim OUTDIR}
    mkdir -p "$out"
    ${CC:-cc} -O2 -std=c11 -ffp-contract=off -Wall -Wextra -I"$root/numerics" \
        -c -o "$out/numerics_sim.o" "$root/numerics/numerics.c"
    ${CXX:-c++} -O2 -std=c++17 -ffp-contract=off -Wall -Wextra -Wno-unknown-pragmas -DMUFU_DUMP_SIM \
        -DMUFU_SIM_DATA="\"$root/numerics/data\"" -I"$root/numerics" -I"$root/tests/gpu/numerics" \
        -o "$out/mufu_dump_sim" -x c++ "$root/tests/gpu/numerics/mufu_dump.cu" -x none "$out/numerics_sim.o" \
        -lm -pthread
    echo "built $out/mufu_dump_sim"
    exit 0
fi
out=${1:?usage: build.sh OUTDIR [ARCH_FLAGS...]}
shift
[ $# -gt 0 ] || set -- -arch=sm_90a
nvcc=${NVCC:-nvcc}
command -v "$nvcc" >/dev/null 2>&1 || nvcc=/usr/local/cuda/bin/nvcc
mkdir -p "$out"
for prog in crosscheck mufu_dump mma_model; do
    "$nvcc" -O2 -std=c++17 "$@" -I"$root/numerics" -Xcompiler -ffp-contract=off,-Wall,-Wextra \
        -o "$out/$prog" "$root/tests/gpu/numerics/$prog.cu" "$root/numerics/numerics.c" "$root/numerics/numerics_mma.c"
done
echo "built $out/crosscheck, $out/mufu_dump and $out/mma_model"
