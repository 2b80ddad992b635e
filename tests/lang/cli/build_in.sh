#!/bin/sh
# Runs `tilec build ARGS... -o DIR/k.fatbin` with the tilec under test ($TILEC, set by
# run_golden.py) and prints its standard error with DIR written as %t, so that a golden test can
# hold the messages of a build that succeeds (the last one names the fatbin).
# Usage: build_in.sh DIR ARGS...
dir=$1
shift
"$TILEC" build "$@" -o "$dir/k.fatbin" 2>"$dir/stderr"
rc=$?
sed "s|$dir|%t|g" "$dir/stderr" >&2
exit $rc
