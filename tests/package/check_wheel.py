"""Checks a tilec installed by `pip install .` (scripts/test.sh, stage wheel).

Usage: VENV/bin/python check_wheel.py VENV

Run it from outside the checkout, with no PYTHONPATH and no TILEC_* variables, so that the only
tilec it can find is the installed one. It checks that:
  - tilec, its _native and the libraries _native loads come from the package in VENV;
  - tilec.__version__ and the CLI's version are the distribution's (CMakeLists.txt's project());
  - quant.per_token_cast on a CPU bf16 tensor (the CPU emulator, compiling from the package's
    kernels.tl) matches tilec.torch.cast byte for byte, as float8_e4m3fn;
  - the package holds the ahead-of-time kernels.fatbin and its manifest exactly when the CUDA
    toolkit that the wheel build uses (/usr/local/cuda) has ptxas, nvlink and fatbinary;
  - VENV/bin/tilec --version runs.
"""
import os
import subprocess
import sys
from importlib import metadata

# the wheel build's default TILEC_CUDA_HOME (the stage runs pip without TILEC_* variables)
CUDA_BIN = "/usr/local/cuda/bin"


def inside(path, root):
    return os.path.commonpath([os.path.realpath(path), root]) == root


def main():
    venv = os.path.realpath(sys.argv[1])
    for var in os.environ:
        assert var != "PYTHONPATH" and not var.startswith("TILEC_"), f"{var} is set"

    import torch
    import tilec
    from tilec import _native, _runtime

    pkg = os.path.dirname(os.path.realpath(tilec.__file__))
    assert inside(pkg, venv), f"tilec comes from {pkg}, not from the venv {venv}"
    assert inside(_native.__file__, pkg), _native.__file__
    version = metadata.version("tilec")
    assert tilec.__version__ == version, f"tilec.__version__ {tilec.__version__!r}, the wheel's {version!r}"

    # the emulator compiles the kernel from the package's sources, through the package's libtilec
    # (a fresh HOME: no disk cache from other builds)
    assert _runtime.kernels_source() == os.path.join(pkg, "share", "kernels.tl"), _runtime.kernels_source()
    torch.manual_seed(0)
    x = torch.randn(33, 640, dtype=torch.bfloat16) * 8  # an odd row count, five groups of 128 per row
    q, sf = tilec.quant.per_token_cast(x, "e4m3", 128)
    ref_q, ref_sf = tilec.torch.cast(x, "e4m3", (1, 128))
    assert q.dtype == torch.float8_e4m3fn, q.dtype
    assert q.shape == x.shape and sf.shape == ref_sf.shape, (q.shape, sf.shape, ref_sf.shape)
    assert torch.equal(q.view(torch.uint8), ref_q.view(torch.uint8)), "per_token_cast differs from the reference"
    assert torch.equal(sf.view(torch.int32), ref_sf.view(torch.int32)), "per_token_cast's scales differ"

    # the libraries really loaded are the package's (RUNPATH $ORIGIN/lib, nothing from elsewhere)
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "libtilec" in line}
    for name in ("libtilec.so", "libtilec_runtime.so"):
        paths = [p for p in libs if os.path.basename(p) == name]
        assert paths and all(inside(p, os.path.join(pkg, "lib")) for p in paths), f"{name} loaded from {paths}"

    fatbin = os.path.join(pkg, "share", "kernels.fatbin")
    have_tools = all(os.access(os.path.join(CUDA_BIN, t), os.X_OK) for t in ("ptxas", "nvlink", "fatbinary"))
    if have_tools:
        assert os.path.isfile(fatbin) and os.path.isfile(fatbin + ".manifest"), \
            f"no kernels.fatbin and manifest in {os.path.dirname(fatbin)}, though {CUDA_BIN} has the CUDA tools"
        assert os.path.getsize(fatbin) > 0, fatbin
        with open(fatbin + ".manifest") as f:
            manifest = f.read()
        assert manifest.startswith("tilec-manifest 1\n"), manifest[:80]
        for want in ("arch sm_90a\n", "arch sm_100a\n", "kernel per_token_cast\n"):
            assert want in manifest, f"the manifest has no '{want.strip()}'"
    else:
        assert not os.path.exists(fatbin) and not os.path.exists(fatbin + ".manifest"), \
            "a fatbin without the CUDA tools"

    cli = os.path.join(venv, "bin", "tilec")
    out = subprocess.run([cli, "--version"], check=True, capture_output=True, text=True).stdout
    assert out.startswith(f"tilec {version} "), out

    print(f"check_wheel: tilec {version} from {pkg}: per_token_cast matches on the emulator; "
          f"{'fatbin and manifest inside' if have_tools else 'no CUDA tools, no fatbin'}; {out.splitlines()[0]}")


if __name__ == "__main__":
    main()
