# scripts/deps.sh — sourced by setup.sh and test.sh: finds what this machine lacks for tilec and
# installs it. Debian 12 (LLVM 22 from bookworm-security) and Debian 13 (trixie main).
#   tilec_install_deps   installs missing Debian packages and the pins of requirements.txt
#   tilec_python         the python3 on PATH (a venv in .venv when the system one is
#                        externally managed and lacks the pins)

TILEC_LLVM_VER=22

tilec_apt_missing() {
  local v=$TILEC_LLVM_VER need=()
  command -v cmake >/dev/null || need+=(cmake)
  command -v ninja >/dev/null || need+=(ninja-build)
  command -v flex >/dev/null || need+=(flex)
  command -v bison >/dev/null || need+=(bison)
  command -v cc >/dev/null || need+=(gcc)
  command -v c++ >/dev/null || need+=(g++)
  command -v git >/dev/null || need+=(git)
  command -v llvm-config-$v >/dev/null || need+=(llvm-$v-dev)
  command -v clang-$v >/dev/null || need+=(clang-$v)
  [ -e /usr/lib/llvm-$v/lib/clang/$v/lib/linux/libclang_rt.fuzzer-x86_64.a ] ||
    [ -e /usr/lib/llvm-$v/lib/clang/$v/lib/x86_64-pc-linux-gnu/libclang_rt.fuzzer.a ] || need+=(libclang-rt-$v-dev)
  command -v ld.lld-$v >/dev/null || need+=(lld-$v)
  [ -e /usr/include/zstd.h ] || need+=(libzstd-dev)
  [ -e /usr/include/zlib.h ] || need+=(zlib1g-dev)
  if ! command -v python3 >/dev/null; then
    need+=(python3 python3-dev python3-venv)
  else
    python3 -c 'import os, sysconfig; exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' ||
      need+=(python3-dev)
    python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
  fi
  echo "${need[@]}"
}

# The pins of requirements.txt that the python3 on PATH lacks (empty when all are there).
tilec_pip_missing() {
  python3 - "$1" <<'PY'
import sys
from importlib import metadata
missing = []
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, _, want = line.partition("==")
    try:
        have = metadata.version(name)
    except metadata.PackageNotFoundError:
        missing.append(line)
        continue
    if name == "torch":
        # a GPU machine's CUDA build of torch 2.10 or newer serves as well as the CPU pin
        major, minor = (int(p) for p in have.split("+")[0].split(".")[:2])
        if (major, minor) < (2, 10):
            missing.append(line)
    elif have.split("+")[0] != want:
        missing.append(line)
print(" ".join(missing))
PY
}

tilec_install_deps() {
  local root=$1 apt_need SUDO=
  [ "$(id -u)" = 0 ] || SUDO=sudo
  apt_need=$(tilec_apt_missing)
  if [ -n "$apt_need" ]; then
    echo "setup: installing Debian packages: $apt_need"
    $SUDO apt-get update -q
    # shellcheck disable=SC2086
    if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $apt_need; then
      echo "setup: apt-get could not install: $apt_need" >&2
      echo "setup: LLVM $TILEC_LLVM_VER comes from bookworm-security on Debian 12 and from trixie main on Debian 13." >&2
      return 1
    fi
  fi
  tilec_use_venv "$root"
  local pip_need
  pip_need=$(tilec_pip_missing "$root/requirements.txt")
  if [ -n "$pip_need" ]; then
    echo "setup: installing Python packages: $pip_need"
    # shellcheck disable=SC2086
    if ! python3 -m pip install -q $pip_need; then
      echo "setup: pip could not install: $pip_need" >&2
      return 1
    fi
  fi
  if [ ! -x "${TILEC_CUDA_HOME:-/usr/local/cuda}/bin/ptxas" ]; then
    echo "setup: warning: no ptxas at ${TILEC_CUDA_HOME:-/usr/local/cuda}/bin (the CUDA 13 toolkit is missing):" >&2
    echo "setup: tilec builds and emits PTX and every test that needs no ptxas runs; cubins, fatbins," >&2
    echo "setup: the ahead-of-time kernel library and the ptxas tests are skipped." >&2
  fi
}

# A python3 that may not take packages from pip (PEP 668, Debian's own python3) gets a venv in
# .venv that sees the system's packages; every later step runs with it first on PATH.
tilec_use_venv() {
  local root=$1
  if [ -x "$root/.venv/bin/python3" ]; then
    export PATH="$root/.venv/bin:$PATH"
    return 0
  fi
  local stdlib
  stdlib=$(python3 -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
  if [ -e "$stdlib/EXTERNALLY-MANAGED" ] && [ -z "${VIRTUAL_ENV:-}" ]; then
    echo "setup: $(command -v python3) is managed by the system: creating the venv .venv for tilec"
    python3 -m venv --system-site-packages "$root/.venv"
    export PATH="$root/.venv/bin:$PATH"
  fi
}
