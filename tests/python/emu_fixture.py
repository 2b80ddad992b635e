"""The CPU-emulator set-up that the *_emu.py test modules share: the runtime on its CPU device
with CPU tensors, in place of the process's GPU runtime for the module's duration. Only on
machines without a GPU: a runtime that ignores TILEC_DEVICE would run CPU pointers on it (GPU
machines run tests/gpu instead). Skips the module when the runtime has no CPU device."""
import os

import pytest
import torch

from tilec import _native, _runtime

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def cpu_emulator(probe=None, patch_require=True, caches=()):
    """A generator for a module-scoped fixture: `yield from cpu_emulator(...)`.

    probe: (kernel, generics) compiled up front, so that a runtime that cannot compile for the
    host skips the module rather than failing its tests; patch_require: accept CPU tensors where
    the wrappers ask for a device; caches: the wrappers' own kernel dicts, emptied before and
    after (they would hold the GPU runtime's kernels)."""
    if torch.cuda.is_available():
        pytest.skip("a GPU machine: tests/gpu covers the kernels")
    saved = os.environ.get("TILEC_DEVICE")
    os.environ["TILEC_DEVICE"] = "cpu"
    source = os.environ.get("TILEC_KERNELS", os.path.join(ROOT, "kernels.tl"))
    try:
        rt = _native.Runtime(cache_dir=os.environ.get("TILEC_CACHE_DIR"))
        lib = rt.open(source=source)
        if probe:
            lib.kernel(*probe)
    except Exception as e:  # no CPU device in this runtime (or no compiler for the host)
        if saved is None:
            del os.environ["TILEC_DEVICE"]
        pytest.skip(f"no CPU emulator: {e}")
    mp = pytest.MonkeyPatch()
    mp.setattr(_runtime, "_rt", rt)
    mp.setattr(_runtime, "_lib", lib)
    mp.setattr(_runtime, "_kernels", {})
    if patch_require:
        mp.setattr(_runtime, "require_device", lambda x, fn: None)
    mp.setattr(_runtime, "stream", lambda t: 0)
    for c in caches:
        c.clear()
    yield
    mp.undo()
    for c in caches:
        c.clear()
    if saved is None:
        os.environ.pop("TILEC_DEVICE", None)
    else:
        os.environ["TILEC_DEVICE"] = saved
