#!/usr/bin/env bash
# The quantisation and transpose families on a machine with an NVIDIA GPU: the GPU tests,
# compute-sanitizer memcheck over a small subset, and the bandwidth benchmark. Runs from the
# repository root and needs there the install tree ./dist (`cmake --install build --prefix dist`),
# torch with CUDA, pytest and compute-sanitizer on PATH. Logs and bench JSON go to $OUT (default
# /tmp/out).
# Usage: scripts/gpu_quant.sh [quick]   (quick: tests only, no memcheck/benchmark)
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEC_DIST=$PWD/dist PYTHONPATH=$PWD/dist/python TILEC_CACHE_DIR=/tmp/tilec-cache PYTHONUNBUFFERED=1
TESTS="tests/gpu/test_quant_per_token.py tests/gpu/test_quant_per_block.py tests/gpu/test_quant_cast_back.py
       tests/gpu/test_quant_per_channel.py tests/gpu/test_quant_swiglu.py tests/gpu/test_transpose.py"
t0=$(date +%s)
python3 -m pytest -q -p no:cacheprovider $TESTS > "$OUT/quant_pytest.log" 2>&1
echo "pytest exit $? in $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/quant_pytest.log")"
grep -E "^(FAILED|ERROR)" "$OUT/quant_pytest.log" | head -30
[ "${1:-}" = quick ] && exit 0
# memcheck: one small case per kernel (the kernels are cached from the run above)
t0=$(date +%s)
compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider $TESTS -k \
  "(test_float_input and 4001-576 and e2m1 and col1) or (test_quant_input and 4001 and e2m1-32 and xbs1 and col1) or \
   (test_e5m6 and 4001-576 and bfloat16) or (test_per_block_cast and 4001-576 and e2m1-block1) or \
   (test_per_block_cast_lossless and 4001-576-out_block0) or (test_per_token_cast_back and 4001-576-e2m1 and col1 and 128-fp32) or \
   (test_cast_back_e5m6 and 4001-576 and fp32) or (test_per_channel_cast and 4096-576) or \
   (test_per_channel_cast_fused and 2048 and topk2) or (test_per_channel_cast_and_transpose and 4096-576) or \
   (test_swiglu_forward_per_token and topk2 and 1024 and True-True-128 and 0.5) or \
   (test_swiglu_forward_per_channel and 4096-576-32-True-False-0.5) or (test_swiglu_backward and topk2 and 2048 and 32-True-0.5)" \
  > "$OUT/quant_memcheck.log" 2>&1
echo "memcheck exit $? in $(( $(date +%s) - t0 )) s: $(grep -E "ERROR SUMMARY|passed|failed" "$OUT/quant_memcheck.log" | tail -2 | tr '\n' ' ')"
python3 bench/bench_quant.py --json "$OUT/bench_quant.json" 2>&1 | tee "$OUT/bench_quant.log"
