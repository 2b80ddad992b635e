#!/bin/sh
# Runs the tilec under test ($TILEC, set by run_golden.py) in the folder $1, where it makes a
# named pipe (FIFO) pipe.tl, a folder dir.tl, and imports_pipe.tl and imports_dir.tl that import
# them: with no writer, opening the pipe to read would wait forever.
cd "$1" || exit 2
shift
[ -p pipe.tl ] || mkfifo pipe.tl || exit 2
mkdir -p dir.tl
printf 'import "pipe.tl";\n' > imports_pipe.tl
printf 'import "dir.tl";\nimport "/dev/zero";\n' > imports_dir.tl
exec "$TILEC" "$@"
