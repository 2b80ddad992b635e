#!/usr/bin/env bash
# The test command of tilec (the README's, and CI's through .ci/run). It first installs what the
# machine lacks (scripts/deps.sh: Debian packages, the pins of requirements.txt), then:
#   1. release build in build/, every CTest test;
#   2. ASan + UBSan build in build-asan/, the tests labelled `sanitize`;
#   3. libFuzzer build (clang) in build-fuzz/, for $TILEC_FUZZ_SECONDS (60) seconds each: the
#      front-end fuzzer from the .tl files of tests/, the kernel fuzzer from token-level mutants
#      of kernels/ and dsl/ (through code generation); any finding fails;
#   4. `pip install .` into a fresh venv (the wheel of pyproject.toml), then the installed tilec
#      from outside the checkout: tests/package/check_wheel.py.
# Usage: scripts/test.sh [release|asan|fuzz|wheel ...]   (default: all four, in that order)
# A new suite joins by registering CTest tests (with LABELS sanitize to run under the sanitizers).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/deps.sh
tilec_install_deps "$root"

JOBS=${TILEC_JOBS:-$(nproc)}
FUZZ_SECONDS=${TILEC_FUZZ_SECONDS:-60}
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(release asan fuzz wheel)

step() { printf '\n== %s\n' "$*"; }

run_release() {
  step "release build (build/) and all tests"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j "$JOBS"
  ctest --test-dir build --output-on-failure -j "$JOBS"
}

run_asan() {
  step "ASan + UBSan build (build-asan/) and the tests labelled sanitize"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTILEC_SANITIZE=ON >/dev/null
  cmake --build build-asan -j "$JOBS"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$JOBS" -L sanitize
}

# one libFuzzer target for $FUZZ_SECONDS seconds: fuzz NAME MAX_LEN SEEDS... (extra libFuzzer flags
# in FUZZ_FLAGS); the corpus grows in build-fuzz/corpus-NAME, a finding is left in build-fuzz/artifacts-NAME
fuzz() {
  local name=$1 max_len=$2
  shift 2
  local art=build-fuzz/artifacts-$name corpus=build-fuzz/corpus-$name log=build-fuzz/$name.log
  rm -rf "$art"
  mkdir -p "$art" "$corpus"
  # shellcheck disable=SC2086
  build-fuzz/tests/fuzz/"$name" -max_total_time="$FUZZ_SECONDS" -timeout=30 -rss_limit_mb=3072 \
    -max_len="$max_len" $FUZZ_FLAGS -artifact_prefix="$art/" -print_final_stats=1 "$corpus" "$@" 2>"$log" || {
      tail -n 60 "$log"
      echo "test: $name found a problem; the input is in $art/ (add it to tests/fuzz/regressions/)" >&2
      return 1
    }
  grep -E '^(Done|stat::number_of_executed_units)' "$log" || true
  # slow-unit-* files are reports of inputs slower than 10 s, not failures (a timeout fails above)
  if [ -n "$(ls -A "$art" | grep -v '^slow-unit-')" ]; then
    echo "test: $name left inputs in $art/" >&2
    return 1
  fi
}

run_fuzz() {
  step "libFuzzer build (build-fuzz/), ${FUZZ_SECONDS} s of each fuzzer: the front end, mutants of the shipped kernels"
  CC=clang-22 CXX=clang++-22 cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTILEC_FUZZ=ON >/dev/null
  cmake --build build-fuzz -j "$JOBS" --target fuzz_frontend fuzz_kernels
  # the front end's seeds: every .tl file of the test suites
  local seeds=build-fuzz/seeds
  rm -rf "$seeds"
  mkdir -p "$seeds"
  find tests -name '*.tl' -size -64k -exec cp -t "$seeds" --backup=numbered {} +
  FUZZ_FLAGS="-dict=tests/fuzz/tilec.dict" fuzz fuzz_frontend 4096 "$seeds"
  # the kernels' fuzzer mutates tokens of the shipped kernels (its own mutator) and compiles them
  FUZZ_FLAGS="" fuzz fuzz_kernels 65536 kernels dsl tests/fuzz/regressions
}

run_wheel() {
  step "wheel: pip install . into a fresh venv, tilec from there"
  local start=$SECONDS tmp venv
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-wheel.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" EXIT
  venv=$tmp/venv
  # --system-site-packages: torch from this machine, not downloaded again
  python3 -m venv --system-site-packages "$venv"
  # where python3 is itself a venv's (the .venv of scripts/deps.sh), the new venv sees only the base
  # Python's packages: a .pth file adds this venv's site-packages (torch) after its own
  local parent_site
  parent_site=$(python3 -c 'import sys, sysconfig; print(sysconfig.get_paths()["purelib"] if sys.prefix != sys.base_prefix else "")')
  if [ -n "$parent_site" ]; then
    "$venv/bin/python" -c 'import os, sys, sysconfig
open(os.path.join(sysconfig.get_paths()["purelib"], "tilec-parent-venv.pth"), "w").write(sys.argv[1] + "\n")' "$parent_site"
  fi
  # the caller's TILEC_* variables (TILEC_CUDA_HOME, ...) and PYTHONPATH stay out of the build
  local unset_env=(-u PYTHONPATH)
  for v in $(compgen -e | grep '^TILEC_' || true); do unset_env+=(-u "$v"); done
  env "${unset_env[@]}" "$venv/bin/python" -m pip install -q "$root"
  echo "wheel: built and installed in $((SECONDS - start)) s"
  # outside the checkout, in a bare environment: only the installed tilec can be imported; a fresh
  # HOME, so the kernels compile from the package (no disk cache of other builds)
  mkdir "$tmp/home"
  (cd "$tmp" && env -i HOME="$tmp/home" PATH="$venv/bin:/usr/bin:/bin" LANG=C.UTF-8 \
    "$venv/bin/python" "$root/tests/package/check_wheel.py" "$venv")
  rm -rf "$tmp"
  trap - EXIT
  echo "wheel: $((SECONDS - start)) s"
}

for s in "${stages[@]}"; do
  case "$s" in
    release) run_release ;;
    asan) run_asan ;;
    fuzz) run_fuzz ;;
    wheel) run_wheel ;;
    *) echo "test: unknown stage '$s' (release, asan, fuzz, wheel)" >&2; exit 2 ;;
  esac
done
step "all passed: ${stages[*]}"
