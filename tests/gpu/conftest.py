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


def poison(t):
    """Fill an output with a pattern no kernel writes by accident, so unwritten elements show."""
    t.view(torch.uint8).fill_(0xA5)
    return t
