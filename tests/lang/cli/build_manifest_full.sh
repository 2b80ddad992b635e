#!/bin/sh
# Runs build_in.sh DIR ARGS... with DIR/k.fatbin.manifest a link to /dev/full, so that the fatbin
# is written and its manifest cannot be (every write to /dev/full fails with ENOSPC).
# Usage: build_manifest_full.sh DIR ARGS...
ln -s /dev/full "$1/k.fatbin.manifest" || exit 3
exec "$(dirname "$0")/build_in.sh" "$@"
