#!/usr/bin/env bash
# The transposes and the per-token FP8 cast on a machine with an NVIDIA GPU: their GPU tests,
# compute-sanitizer on a subset, launch overhead (bench/launch_overhead.py) and bench/bench_gpu.py;
# with NUMERICS=1 also the numerics cross-check and mufu_dump of tests/gpu/numerics (built here
# with nvcc). Runs from the repository root and needs there the install tree ./dist
# (`cmake --install build --prefix dist`), torch with CUDA, pytest and compute-sanitizer on PATH.
# Logs go to $OUT (default /tmp/out). Usage: scripts/gpu_transpose.sh [quick]
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEC_DIST=$PWD/dist PYTHONPATH=$PWD/dist/python TILEC_CACHE_DIR=/tmp/tilec-cache PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, tilec; print('torch', torch.__version__, 'tilec', tilec.__version__)" 2>&1 | tee -a "$OUT/gpu.txt"
t0=$(date +%s)
python3 -m pytest -q -p no:cacheprovider tests/gpu/test_transpose.py tests/gpu/test_per_token_cast.py \
    > "$OUT/pytest.log" 2>&1
echo "pytest exit $? in $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/pytest.log")"
grep -E "^(FAILED|ERROR)" "$OUT/pytest.log" | head -20
t0=$(date +%s)
compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
    tests/gpu/test_transpose.py tests/gpu/test_per_token_cast.py -k "4032 and 576 or 4001 and 576 and 128" \
    > "$OUT/memcheck.log" 2>&1
echo "memcheck exit $? in $(( $(date +%s) - t0 )) s: $(grep -E "ERROR SUMMARY|passed|failed" "$OUT/memcheck.log" | tail -2 | tr '\n' ' ')"
python3 bench/launch_overhead.py 2>&1 | tee "$OUT/launch.log"
python3 bench/bench_gpu.py ${1:+--quick} --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log"
if [ "${NUMERICS:-0}" = 1 ]; then
  # the software conversions against the hardware, and the MUFU ex2 / rsqrt measurements
  bash tests/gpu/numerics/build.sh /tmp/g > "$OUT/numerics_build.log" 2>&1 || echo "numerics build failed"
  /tmp/g/crosscheck > "$OUT/crosscheck.txt" 2>&1; echo "crosscheck exit $?"; tail -40 "$OUT/crosscheck.txt"
  /tmp/g/mufu_dump "$OUT" > "$OUT/mufu_stdout.txt" 2>&1; echo "mufu_dump exit $?"; tail -60 "$OUT/mufu_report.txt"
fi
