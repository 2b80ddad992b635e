#!/usr/bin/env bash
# Nsight Compute profiles: for each "WHAT:KERNEL_REGEX" argument, the last launch of the kernel
# in bench/profile_one.py WHAT (SpeedOfLight, Occupancy, LaunchStats, WarpStateStats,
# ComputeWorkloadAnalysis, and the warp stall reasons and pipe utilisations as metrics), as CSV in
# $OUT/ncu_WHAT_KERNEL$NCU_TAG.csv (default OUT /tmp/out), and a one-line summary per metric.
# PROFILE_GENERICS (see bench/profile_one.py) profiles a variant; NCU_TAG names its files apart.
# Needs a machine with an NVIDIA GPU, /usr/local/cuda/bin/ncu (permission to read the GPU's
# performance counters), torch with CUDA and the install tree ./dist (or TILEC_DIST, PYTHONPATH).
# ncu locks the clocks, so its durations are longer than the benchmarks'.
# Usage: bash scripts/gpu_ncu.sh swiglu_backward:swiglu_backward [WHAT:KERNEL_REGEX ...]
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export TILEC_DIST=${TILEC_DIST:-$PWD/dist} PYTHONPATH=${PYTHONPATH:-$PWD/dist/python} TILEC_CACHE_DIR=/tmp/tilec-cache PYTHONUNBUFFERED=1
STALLS=$(printf 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio,' long_scoreboard short_scoreboard \
  math_pipe_throttle mio_throttle lg_throttle wait not_selected selected barrier dispatch_stall no_instruction \
  branch_resolving drain membar sleeping tex_throttle imc_miss misc)
STALLS=${STALLS%,}
PIPES=$(printf 'sm__inst_executed_pipe_%s.avg.pct_of_peak_sustained_active,' alu fma fmaheavy fmalite xu lsu cbu adu uniform)
PIPES="${PIPES%,},smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,dram__bytes_write.sum"
for arg in "$@"; do
  what=${arg%%:*} kern=${arg#*:}
  # one file per function and kernel pattern (two patterns of one function kept apart)
  f="$OUT/ncu_${what}_$(printf '%s' "$kern" | tr -c 'A-Za-z0-9_' '_' | cut -c1-40)${NCU_TAG:-}"
  timeout 150 /usr/local/cuda/bin/ncu -k "regex:$kern" -c 1 --launch-skip 2 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section ComputeWorkloadAnalysis \
    --metrics "$STALLS,$PIPES" --csv --page details python3 bench/profile_one.py "$what" > "$f.csv" 2> "$f.err"
  echo "== $what${NCU_TAG:-} ($kern${PROFILE_GENERICS:+, $PROFILE_GENERICS}): exit $?"
  python3 - "$f.csv" <<'PY'
import csv, io, sys
want = ("Duration", "Memory Throughput", "DRAM Throughput", "Compute (SM) Throughput", "Registers Per Thread",
        "Achieved Occupancy", "Theoretical Occupancy", "Block Limit Registers", "Block Limit Shared Mem",
        "Warp Cycles Per Issued Instruction")
lines = open(sys.argv[1]).read().splitlines()
head = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), len(lines))  # ncu's ==PROF== lines first
for row in csv.DictReader(io.StringIO("\n".join(lines[head:]))):
    name = row.get("Metric Name", "")
    if name in want or name.startswith(("smsp__average_warps_issue_stalled", "sm__inst_executed_pipe", "smsp__i", "dram__",
                                        "Grid Size", "Block Size")):
        print(f"  {row['Kernel Name'][:40]:40s} {row['Metric Name']:36s} {row['Metric Value']} {row['Metric Unit']}")
PY
done
