#!/usr/bin/env bash
# The GPU tests and benchmarks of tilec. Runs from the repository root on a machine with an NVIDIA
# GPU (the recorded figures are from an H200) and needs there: the install tree ./dist
# (cmake --install build --prefix dist), torch with CUDA, pytest, and compute-sanitizer on PATH.
# Parts:
#   scripts/gpu_all.sh tests   the GPU test files in five parallel pytest processes (the JIT is
#                              CPU-bound; they share the disk cache), the emulator-vs-GPU
#                              comparison, compute-sanitizer memcheck on small subsets
#   scripts/gpu_all.sh bench   launch overhead, bandwidth benchmarks of every family (against the
#                              copy ceiling and torch.compile), JIT compile latency
#   scripts/gpu_all.sh numerics  the MUFU measurements and the tensor-core model against mma.sync
#                              (needs build-gpu/ from tests/gpu/numerics/build.sh build-gpu, nvcc)
#   scripts/gpu_all.sh torch   the end-to-end block on the GPU against the emulator, its expert-
#                              parallel form with NCCL on 2 GPUs, host time per Python call
# Both parts: scripts/gpu_all.sh tests bench (about 4.5 minutes on an H200 host before the Engram
# steps were added). Logs (as logs.tgz),
# the benchmark JSON and summary.txt go to $OUT (default /tmp/out). Each step has a time limit so
# that one slow step cannot take the whole run.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEC_DIST=$PWD/dist PYTHONPATH=$PWD/dist/python TILEC_CACHE_DIR=${TILEC_CACHE_DIR:-/tmp/tilec-cache}
export PYTHONUNBUFFERED=1
PYTEST="python3 -m pytest -q -p no:cacheprovider"
summary() { echo "$*" | tee -a "$OUT/summary.txt"; }
elapsed() { echo $(( $(date +%s) - $1 )); }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -c "import torch, tilec; print('torch', torch.__version__, 'tilec', tilec.__version__)" 2>&1 | tee -a "$OUT/gpu.txt"

run_tests() {
  local t0=$(date +%s)
  declare -A groups=(
    [main]="tests/gpu/test_transpose.py tests/gpu/test_per_token_cast.py tests/gpu/test_math_exhaustive.py tests/gpu/test_tensor_lists.py"
    [quant1]="tests/gpu/test_quant_per_token.py tests/gpu/test_quant_per_block.py"
    [quant2]="tests/gpu/test_quant_cast_back.py tests/gpu/test_quant_per_channel.py tests/gpu/test_quant_swiglu.py"
    [moe]="tests/gpu/test_moe_gate.py tests/gpu/test_moe_fused.py tests/gpu/test_moe_utils.py"
  )
  for g in "${!groups[@]}"; do
    ( timeout 400 $PYTEST ${groups[$g]} > "$OUT/pytest_$g.log" 2>&1; echo $? > "$OUT/pytest_$g.rc" ) &
  done
  wait
  # the Engram and mHC grids hold tens of GB of the GPU's memory at their largest sizes: one at a
  # time, after the others
  for g in engram mhc; do
    timeout 300 $PYTEST tests/gpu/test_$g.py > "$OUT/pytest_$g.log" 2>&1; echo $? > "$OUT/pytest_$g.rc"
  done
  for g in main quant1 quant2 moe engram mhc; do
    summary "pytest $g: exit $(cat "$OUT/pytest_$g.rc") — $(tail -1 "$OUT/pytest_$g.log")"
    grep -E "^(FAILED|ERROR)" "$OUT/pytest_$g.log" | head -15 | tee -a "$OUT/summary.txt"
  done
  summary "tests took $(elapsed $t0) s"

  t0=$(date +%s)
  timeout 120 python3 tests/gpu/emu_vs_gpu.py --dist dist --dump "$OUT/emu_dump" > "$OUT/emu_vs_gpu.log" 2>&1
  summary "emu_vs_gpu: exit $? in $(elapsed $t0) s — $(tail -3 "$OUT/emu_vs_gpu.log" | tr '\n' ' ')"

  t0=$(date +%s)
  local MC="timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9"
  ( $MC $PYTEST tests/gpu/test_transpose.py tests/gpu/test_per_token_cast.py -k "4032 and 576 or 4001 and 576 and 128" \
      > "$OUT/memcheck_main.log" 2>&1; echo $? > "$OUT/memcheck_main.rc" ) &
  ( $MC $PYTEST tests/gpu/test_moe_gate.py tests/gpu/test_moe_fused.py tests/gpu/test_moe_utils.py -k small \
      > "$OUT/memcheck_moe.log" 2>&1; echo $? > "$OUT/memcheck_moe.rc" ) &
  ( $MC $PYTEST tests/gpu/test_engram.py -k small > "$OUT/memcheck_engram.log" 2>&1; echo $? > "$OUT/memcheck_engram.rc" ) &
  ( $MC $PYTEST tests/gpu/test_mhc.py -k small > "$OUT/memcheck_mhc.log" 2>&1; echo $? > "$OUT/memcheck_mhc.rc" ) &
  ( $MC $PYTEST tests/gpu/test_quant_per_token.py tests/gpu/test_quant_per_block.py tests/gpu/test_quant_cast_back.py \
      tests/gpu/test_quant_per_channel.py tests/gpu/test_quant_swiglu.py -k \
      "(test_float_input and 4001-576 and e2m1 and col1) or (test_e5m6 and 4001-576 and bfloat16) or \
       (test_per_block_cast and 4001-576 and e2m1-block1) or (test_per_channel_cast and 4096-576) or \
       (test_swiglu_backward and topk2 and 2048 and 32-True-0.5)" \
      > "$OUT/memcheck_quant.log" 2>&1; echo $? > "$OUT/memcheck_quant.rc" ) &
  wait
  for g in main quant moe engram mhc; do
    summary "memcheck $g: exit $(cat "$OUT/memcheck_$g.rc") — $(grep -E "ERROR SUMMARY" "$OUT/memcheck_$g.log" | tail -1) $(tail -1 "$OUT/memcheck_$g.log")"
  done
  summary "memcheck took $(elapsed $t0) s"

  # racecheck over the kernels that stage data through shared memory: the transposes, the
  # per-channel casts, the Engram gate's pipelines, the mHC kernels
  t0=$(date +%s)
  local RC="timeout 240 compute-sanitizer --tool racecheck --error-exitcode 9"
  ( $RC $PYTEST tests/gpu/test_transpose.py -k "4032 and 576" > "$OUT/racecheck_transpose.log" 2>&1
    echo $? > "$OUT/racecheck_transpose.rc" ) &
  ( $RC $PYTEST tests/gpu/test_quant_per_channel.py -k "test_per_channel_cast and 4096-576" \
      > "$OUT/racecheck_quant.log" 2>&1; echo $? > "$OUT/racecheck_quant.rc" ) &
  ( $RC $PYTEST tests/gpu/test_engram.py -k small > "$OUT/racecheck_engram.log" 2>&1; echo $? > "$OUT/racecheck_engram.rc" ) &
  ( $RC $PYTEST tests/gpu/test_mhc.py -k small > "$OUT/racecheck_mhc.log" 2>&1; echo $? > "$OUT/racecheck_mhc.rc" ) &
  wait
  for g in transpose quant engram mhc; do
    summary "racecheck $g: exit $(cat "$OUT/racecheck_$g.rc") — $(grep -E "RACECHECK SUMMARY|ERROR SUMMARY" "$OUT/racecheck_$g.log" | tail -1) $(tail -1 "$OUT/racecheck_$g.log")"
  done
  summary "racecheck took $(elapsed $t0) s"

  # the custom ops on CUDA tensors: opcheck, fullgraph compile, no host reads (tests/python/test_ops.py)
  t0=$(date +%s)
  TILEC_BUILD_PYTHON=$PWD/dist/python TILEC_OPS_DEVICE=cuda timeout 200 $PYTEST tests/python/test_ops.py \
    > "$OUT/ops_cuda.log" 2>&1
  summary "ops on cuda: exit $? in $(elapsed $t0) s — $(tail -1 "$OUT/ops_cuda.log")"
  # every op captured in a CUDA graph and replayed against an eager call (tests/gpu/test_cuda_graphs.py)
  t0=$(date +%s)
  TILEC_BUILD_PYTHON=$PWD/dist/python timeout 200 $PYTEST tests/gpu/test_cuda_graphs.py > "$OUT/cuda_graphs.log" 2>&1
  summary "cuda graphs: exit $? in $(elapsed $t0) s — $(tail -1 "$OUT/cuda_graphs.log")"
  grep -E "^(FAILED|ERROR)" "$OUT/cuda_graphs.log" | head -15 | tee -a "$OUT/summary.txt"
}

run_bench() {
  local t0=$(date +%s)
  timeout 60 python3 bench/launch_overhead.py > "$OUT/launch.log" 2>&1
  summary "launch_overhead exit $?"; cat "$OUT/launch.log" >> "$OUT/summary.txt"
  timeout 170 python3 bench/bench_gpu.py --json "$OUT/bench_gpu.json" > "$OUT/bench_gpu.log" 2>&1
  summary "bench_gpu exit $? ($(elapsed $t0) s so far)"
  timeout 170 python3 bench/bench_quant.py --json "$OUT/bench_quant.json" > "$OUT/bench_quant.log" 2>&1
  summary "bench_quant exit $? ($(elapsed $t0) s so far)"
  timeout 150 python3 bench/bench_moe.py --json "$OUT/bench_moe.json" > "$OUT/bench_moe.log" 2>&1
  summary "bench_moe exit $? ($(elapsed $t0) s so far)"
  timeout 150 python3 bench/bench_engram.py --json "$OUT/bench_engram.json" > "$OUT/bench_engram.log" 2>&1
  summary "bench_engram exit $? ($(elapsed $t0) s so far)"
  timeout 150 python3 bench/bench_mhc.py --json "$OUT/bench_mhc.json" > "$OUT/bench_mhc.log" 2>&1
  summary "bench_mhc exit $? ($(elapsed $t0) s so far)"
  timeout 120 python3 bench/compile_speed.py --dist dist --limit 40 > "$OUT/compile_speed.log" 2>&1
  summary "compile_speed exit $? ($(elapsed $t0) s in all)"
  cat "$OUT/compile_speed.log" >> "$OUT/summary.txt"
}

run_torch() {
  # the end-to-end block on the GPU against the emulator's run of the same seed, its expert-parallel
  # form over the GPUs with NCCL (2 or more), and host time per call on the GPU host
  local t0=$(date +%s)
  timeout 200 python3 examples/train_block.py --device cuda --steps 30 --json "$OUT/train_cuda.json" --quiet \
    > "$OUT/train_cuda.log" 2>&1
  summary "train_block cuda: exit $? — $(tail -1 "$OUT/train_cuda.log")"
  timeout 300 python3 examples/train_block.py --device cpu --steps 30 --json "$OUT/train_emu.json" --quiet \
    > "$OUT/train_emu.log" 2>&1
  summary "train_block emulator: exit $? — $(tail -1 "$OUT/train_emu.log")"
  python3 -c "import json,sys; a=json.load(open(sys.argv[1]))['tilec']; b=json.load(open(sys.argv[2]))['tilec']; \
print('train_block tilec losses, GPU against emulator: %d steps, %d equal, largest relative difference %.3g' % \
(len(a), sum(x == y for x, y in zip(a, b)), max(abs(x - y) / abs(y) for x, y in zip(a, b))))" \
    "$OUT/train_cuda.json" "$OUT/train_emu.json" 2>&1 | tee -a "$OUT/summary.txt"
  local n=$(nvidia-smi -L | wc -l)
  if [ "$n" -ge 2 ]; then
    NCCL_NVLS_ENABLE=0 timeout 300 python3 examples/train_block.py --device cuda --steps 4 --ep 2 \
      > "$OUT/train_ep.log" 2>&1
    summary "train_block --ep 2 (NCCL): exit $? — $(tail -1 "$OUT/train_ep.log")"
  else
    summary "train_block --ep 2: skipped, $n GPU"
  fi
  timeout 200 python3 bench/host_overhead.py --tokens 1,128 --json "$OUT/host_overhead.json" > "$OUT/host_overhead.log" 2>&1
  summary "host_overhead exit $? in $(elapsed $t0) s"; tail -60 "$OUT/host_overhead.log" >> "$OUT/summary.txt"
}

run_numerics() {
  # the MUFU ex2/rsqrt measurements (tests/gpu/numerics/build.sh build-gpu, carried along)
  local t0=$(date +%s)
  mkdir -p "$OUT/mufu"
  timeout 240 build-gpu/mufu_dump "$OUT/mufu" > "$OUT/mufu/stdout.txt" 2>&1
  summary "mufu_dump exit $? in $(elapsed $t0) s"
  grep -E "PASS|FAIL" "$OUT/mufu/mufu_report.txt" | tail -20 | tee -a "$OUT/summary.txt"
  timeout 300 build-gpu/mma_model > "$OUT/mma_model.log" 2>&1
  summary "mma_model exit $? — $(grep -cE " 0 mismatches" "$OUT/mma_model.log") input classes without a mismatch"
  grep -E "mismatches" "$OUT/mma_model.log" | grep -v " 0 mismatches" | head -20 | tee -a "$OUT/summary.txt"
}

for part in "${@:-tests}"; do
  case "$part" in
    tests) run_tests ;;
    bench) run_bench ;;
    numerics) run_numerics ;;
    torch) run_torch ;;
    *) echo "usage: scripts/gpu_all.sh tests|bench|numerics|torch ..." >&2; exit 2 ;;
  esac
done
# logs and dumps go into one archive, beside summary.txt and the benchmark JSON
( cd "$OUT" && tar czf logs.tgz --remove-files $(ls | grep -vE '^(summary.txt|logs.tgz|.*\.json)$') )
cat "$OUT/summary.txt"
