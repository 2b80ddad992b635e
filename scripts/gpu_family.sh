#!/usr/bin/env bash
# One family of kernels on a machine with an NVIDIA GPU: its GPU tests over TileKernels' grids
# (tests/gpu/test_FAMILY.py), compute-sanitizer memcheck and racecheck on its *small* tests, and
# its benchmark (bench/bench_FAMILY.py: against the copy ceiling and torch.compile of the
# references; Engram: the gate at 4096 and 16384 tokens, hc = 4, D = 7168; mHC: the
# bandwidth-bound ops at 8192 tokens, m = 4, H = 7168 and 2560, and decode sizes of 1 to 128
# tokens). Runs from the repository root and needs there the install tree ./dist (`cmake --install
# build --prefix dist`), torch with CUDA, pytest and compute-sanitizer on PATH. Logs and the
# benchmark JSON go to $OUT (default /tmp/out).
# Usage: scripts/gpu_family.sh engram|mhc [quick]  (quick: Engram T = 16384 only; mHC H = 7168 and
# one decode size)
set -u
f=${1:-}
case "$f" in
  engram|mhc) ;;
  *) echo "usage: scripts/gpu_family.sh engram|mhc [quick]" >&2; exit 2 ;;
esac
quick=${2:-}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEC_DIST=$PWD/dist PYTHONPATH=$PWD/dist/python TILEC_CACHE_DIR=${TILEC_CACHE_DIR:-/tmp/tilec-cache}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/${f}_gpu.txt"
t0=$(date +%s)
timeout 600 python3 -m pytest -q -p no:cacheprovider --durations=15 tests/gpu/test_$f.py > "$OUT/${f}_pytest.log" 2>&1
echo "$f pytest exit $? in $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/${f}_pytest.log")"
grep -E "^(FAILED|ERROR)" "$OUT/${f}_pytest.log" | head -30
for tool in memcheck racecheck; do
  t0=$(date +%s)
  timeout 600 compute-sanitizer --tool $tool --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
      tests/gpu/test_$f.py -k small > "$OUT/${f}_$tool.log" 2>&1
  echo "$f $tool exit $? in $(( $(date +%s) - t0 )) s: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$OUT/${f}_$tool.log" | tail -2 | tr '\n' ' ')"
done
t0=$(date +%s)
timeout 600 python3 bench/bench_$f.py ${quick:+--quick} --json "$OUT/bench_$f.json" > "$OUT/bench_$f.log" 2>&1
echo "bench_$f exit $? in $(( $(date +%s) - t0 )) s"
cat "$OUT/bench_$f.log"
