#!/bin/sh
# Runs the tilec under test ($TILEC, set by run_golden.py) with -D C0=0 ... -D C{N-1}=N-1 before
# ARGS. Usage: define_many.sh N ARGS...
n=$1
shift
i=$((n - 1))
while [ "$i" -ge 0 ]; do
    set -- -D "C$i=$i" "$@"
    i=$((i - 1))
done
exec "$TILEC" "$@"
