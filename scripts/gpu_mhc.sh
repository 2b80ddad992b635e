#!/usr/bin/env bash
# The mHC ops on a machine with an NVIDIA GPU: tests/gpu/test_mhc.py over TileKernels' grids,
# compute-sanitizer memcheck and racecheck on its *small* tests, and bench/bench_mhc.py (the
# bandwidth-bound ops at 8192 tokens, m = 4, H = 7168 and 2560, decode sizes of 1 to 128 tokens,
# against the copy ceiling and torch.compile of the references). Runs from the repository root and
# needs there the install tree ./dist (`cmake --install build --prefix dist`), torch with CUDA,
# pytest and compute-sanitizer on PATH. Logs and the benchmark JSON go to $OUT (default /tmp/out).
# Usage: scripts/gpu_mhc.sh [quick]  (quick: H = 7168 and one decode size only)
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEC_DIST=$PWD/dist PYTHONPATH=$PWD/dist/python TILEC_CACHE_DIR=${TILEC_CACHE_DIR:-/tmp/tilec-cache}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/mhc_gpu.txt"
t0=$(date +%s)
timeout 600 python3 -m pytest -q -p no:cacheprovider --durations=15 tests/gpu/test_mhc.py > "$OUT/mhc_pytest.log" 2>&1
echo "mhc pytest exit $? in $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/mhc_pytest.log")"
grep -E "^(FAILED|ERROR)" "$OUT/mhc_pytest.log" | head -30
for tool in memcheck racecheck; do
  t0=$(date +%s)
  timeout 600 compute-sanitizer --tool $tool --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
      tests/gpu/test_mhc.py -k small > "$OUT/mhc_$tool.log" 2>&1
  echo "mhc $tool exit $? in $(( $(date +%s) - t0 )) s: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$OUT/mhc_$tool.log" | tail -2 | tr '\n' ' ')"
done
t0=$(date +%s)
timeout 600 python3 bench/bench_mhc.py ${1:+--quick} --json "$OUT/bench_mhc.json" > "$OUT/bench_mhc.log" 2>&1
echo "bench_mhc exit $? in $(( $(date +%s) - t0 )) s"
cat "$OUT/bench_mhc.log"
