#!/bin/sh
# Runs the tilec under test ($TILEC, set by run_golden.py) with its standard output on /dev/full,
# where every write fails with ENOSPC.
exec "$TILEC" "$@" > /dev/full
