#!/usr/bin/env bash
# A/B runs of kernel configurations on a GPU: bench/ab_generics.py over the cases it lists, every
# variant timed in one process and its outputs compared byte for byte with the default's. With
# OLD=1 also the same cases' defaults with the kernels of an earlier commit, which must be exported
# into ab_old/ (untracked) first:  rm -rf ab_old && mkdir ab_old && git archive REV kernels.tl kernels dsl | tar -x -C ab_old
# Needs a machine with an NVIDIA GPU (the recorded figures are from an H200), torch with CUDA, and
# the install tree ./dist (cmake --install build --prefix dist) in the repository root, where it
# runs. Writes gpu.txt, ab.log, ab.json (and ab_old.*) to $OUT (default /tmp/out) and prints the
# log's last 100 lines. Usage: [OLD=1] bash scripts/gpu_ab.sh
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEC_DIST=$PWD/dist PYTHONPATH=$PWD/dist/python TILEC_CACHE_DIR=/tmp/tilec-cache PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $OUT/gpu.txt
t0=$(date +%s)
timeout 500 python3 bench/ab_generics.py --json $OUT/ab.json > $OUT/ab.log 2>&1; echo "ab rc $? $(( $(date +%s) - t0 )) s"
if [ "${OLD:-0}" = 1 ]; then
  t0=$(date +%s)
  TILEC_KERNELS=$PWD/ab_old/kernels.tl timeout 100 python3 bench/ab_generics.py --defaults --json $OUT/ab_old.json > $OUT/ab_old.log 2>&1
  echo "old rc $? $(( $(date +%s) - t0 )) s"
fi
grep -v Warning $OUT/ab.log | tail -100
