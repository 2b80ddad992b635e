#!/usr/bin/env bash
# The Engram family on a machine with an NVIDIA GPU: tests/gpu/test_engram.py over TileKernels'
# full grids (0, 4001 and 8001 tokens, every hidden size, several SM counts), compute-sanitizer
# memcheck and racecheck on its *small* tests, and bench/bench_engram.py (the gate at 4096 and
# 16384 tokens, hc = 4, D = 7168, against the copy ceiling and torch.compile of the reference).
# Runs from the repository root and needs there the install tree ./dist (`cmake --install build
# --prefix dist`), torch with CUDA, pytest and compute-sanitizer on PATH. Logs and the benchmark
# JSON go to $OUT (default /tmp/out). Usage: scripts/gpu_engram.sh [quick]  (quick: T = 16384 only)
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEC_DIST=$PWD/dist PYTHONPATH=$PWD/dist/python TILEC_CACHE_DIR=${TILEC_CACHE_DIR:-/tmp/tilec-cache}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/engram_gpu.txt"
t0=$(date +%s)
timeout 600 python3 -m pytest -q -p no:cacheprovider --durations=15 tests/gpu/test_engram.py > "$OUT/engram_pytest.log" 2>&1
echo "engram pytest exit $? in $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/engram_pytest.log")"
grep -E "^(FAILED|ERROR)" "$OUT/engram_pytest.log" | head -30
for tool in memcheck racecheck; do
  t0=$(date +%s)
  timeout 600 compute-sanitizer --tool $tool --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
      tests/gpu/test_engram.py -k small > "$OUT/engram_$tool.log" 2>&1
  echo "engram $tool exit $? in $(( $(date +%s) - t0 )) s: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$OUT/engram_$tool.log" | tail -2 | tr '\n' ' ')"
done
t0=$(date +%s)
timeout 600 python3 bench/bench_engram.py ${1:+--quick} --json "$OUT/bench_engram.json" > "$OUT/bench_engram.log" 2>&1
echo "bench_engram exit $? in $(( $(date +%s) - t0 )) s"
cat "$OUT/bench_engram.log"
