#!/usr/bin/env bash
# One device call of Nsight Compute profiles: for each "WHAT:KERNEL_REGEX" argument, the last
# launch of the kernel in bench/profile_one.py WHAT (SpeedOfLight, Occupancy, LaunchStats,
# WarpStateStats), as CSV in $OUT/ncu_WHAT.csv, and a one-line summary per profile.
set -u
export TILEC_DIST=$PWD/dist PYTHONPATH=$PWD/dist/python TILEC_CACHE_DIR=/tmp/tilec-cache PYTHONUNBUFFERED=1
for arg in "$@"; do
  what=${arg%%:*} kern=${arg#*:}
  timeout 150 /usr/local/cuda/bin/ncu -k "regex:$kern" -c 1 --launch-skip 2 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --csv --page details python3 bench/profile_one.py "$what" \
    > "$OUT/ncu_$what.csv" 2> "$OUT/ncu_$what.err"
  echo "== $what ($kern): exit $?"
  python3 - "$OUT/ncu_$what.csv" <<'PY'
import csv, io, sys
want = ("Duration", "Memory Throughput", "DRAM Throughput", "Compute (SM) Throughput", "Registers Per Thread",
        "Achieved Occupancy", "Theoretical Occupancy", "Block Limit Registers", "Block Limit Shared Mem",
        "Warp Cycles Per Issued Instruction")
lines = open(sys.argv[1]).read().splitlines()
head = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), len(lines))  # ncu's ==PROF== lines first
for row in csv.DictReader(io.StringIO("\n".join(lines[head:]))):
    if row.get("Metric Name") in want:
        print(f"  {row['Kernel Name'][:40]:40s} {row['Metric Name']:36s} {row['Metric Value']} {row['Metric Unit']}")
PY
done
