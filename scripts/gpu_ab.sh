#!/usr/bin/env bash
# One device call of A/B runs: bench/ab_generics.py over the variants it lists; with
# OLD=1 also the same cases' defaults with the kernels of an earlier commit, which must be exported
# into ab_old/ (untracked) first:  rm -rf ab_old && mkdir ab_old && git archive REV kernels.tl kernels dsl | tar -x -C ab_old
# Logs and JSON go to $OUT (kept under bench/results/).
set -u
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
