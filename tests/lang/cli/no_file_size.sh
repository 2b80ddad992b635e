#!/bin/sh
# Runs the tilec under test ($TILEC, set by run_golden.py) with a file-size limit of 0, so that
# every write to a file fails with EFBIG as it would on a full disk. SIGXFSZ is ignored (and stays
# ignored across exec) so that the write fails instead of the signal killing tilec.
trap '' XFSZ
ulimit -f 0
exec "$TILEC" "$@"
