"""GPU tests: run on a machine with an NVIDIA GPU, torch, and a tilec install tree.
TILEC_DIST points at the install tree (default: ./dist of the repository)."""
import hashlib
import os
import sys

import pytest

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_dist = os.environ.get("TILEC_DIST", os.path.join(_root, "dist"))
sys.path.insert(0, os.path.join(_dist, "python"))

import torch  # noqa: E402

if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)


@pytest.fixture(autouse=True)
def _seed(request):
    """Fresh, reproducible inputs per test: a seed from the test's id, as TileKernels does."""
    seed = int(hashlib.sha256(request.node.nodeid.encode()).hexdigest(), 16) % (2 ** 31)
    torch.manual_seed(seed)
    yield


_real_empty, _real_like, _real_new = torch.empty, torch.empty_like, torch.Tensor.new_empty


def poison(t):
    """Fill every byte of t's storage (whatever its strides) with 0xA5, a pattern no kernel
    writes by accident, so that elements a kernel leaves unwritten show."""
    if t.numel():
        _real_empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage()).fill_(0xA5)
    return t


@pytest.fixture
def poisoned_outputs(monkeypatch):
    """Every torch.empty / empty_like / Tensor.new_empty on the GPU comes back poisoned (the
    wrappers allocate their outputs with them)."""
    def on_gpu(t):
        return poison(t) if t.is_cuda else t
    monkeypatch.setattr(torch, "empty", lambda *a, **kw: on_gpu(_real_empty(*a, **kw)))
    monkeypatch.setattr(torch, "empty_like", lambda *a, **kw: on_gpu(_real_like(*a, **kw)))
    monkeypatch.setattr(torch.Tensor, "new_empty", lambda self, *a, **kw: on_gpu(_real_new(self, *a, **kw)))


@pytest.fixture
def restore_num_sms():
    """The device's SM count again after a test that sets another (tilec.set_num_sms)."""
    yield
    import tilec
    tilec.set_num_sms(tilec.get_device_num_sms())
