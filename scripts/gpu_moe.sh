#!/usr/bin/env bash
# The MoE family on a machine with an NVIDIA GPU: the GPU tests over the spec's grids,
# compute-sanitizer memcheck on the *small* tests, and bench/bench_moe.py. Runs from the repository
# root and needs there the install tree ./dist (`cmake --install build --prefix dist`), torch with
# CUDA, pytest and compute-sanitizer on PATH. Logs and the benchmark JSON go to $OUT (default
# /tmp/out). Usage: scripts/gpu_moe.sh [quick]  (quick: a shorter benchmark)
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEC_DIST=$PWD/dist PYTHONPATH=$PWD/dist/python TILEC_CACHE_DIR=${TILEC_CACHE_DIR:-/tmp/tilec-cache}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/moe_gpu.txt"
t0=$(date +%s)
python3 -m pytest -q -p no:cacheprovider --durations=15 tests/gpu/test_moe_gate.py tests/gpu/test_moe_fused.py \
    tests/gpu/test_moe_utils.py > "$OUT/moe_pytest.log" 2>&1
echo "moe pytest exit $? in $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/moe_pytest.log")"
grep -E "^(FAILED|ERROR)" "$OUT/moe_pytest.log" | head -30
t0=$(date +%s)
compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider \
    tests/gpu/test_moe_gate.py tests/gpu/test_moe_fused.py tests/gpu/test_moe_utils.py -k small \
    > "$OUT/moe_memcheck.log" 2>&1
echo "moe memcheck exit $? in $(( $(date +%s) - t0 )) s: $(grep -E "ERROR SUMMARY|passed|failed" "$OUT/moe_memcheck.log" | tail -2 | tr '\n' ' ')"
t0=$(date +%s)
python3 bench/bench_moe.py ${1:+--quick} --json "$OUT/bench_moe.json" > "$OUT/bench_moe.log" 2>&1
echo "bench_moe exit $? in $(( $(date +%s) - t0 )) s"
cat "$OUT/bench_moe.log"
