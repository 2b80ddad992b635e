"""examples/train_block.py for a few steps on the CPU emulator: the decoder block written with the
tilec kernels and the same block written with the references of tilec.torch train side by side
(every parameter gets a gradient on both sides; the losses fall; the curves agree within the
example's tolerances), and the expert-parallel block on 2 processes (gloo, CPU tensors) gives
the single-process run's losses bit for bit.

TILEC_BUILD_PYTHON: the package to test (default build/python)."""
import os
import sys

import pytest

torch = pytest.importorskip("torch")

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(_root, "build", "python")))
sys.path.insert(0, os.path.join(_root, "examples"))

import train_block as tb  # noqa: E402

STEPS = 3


@pytest.fixture(scope="module")
def curves():
    return tb.train(STEPS, "cpu", check_grads=True)


def test_losses_fall(curves):
    for side in ("tilec", "reference"):
        losses = curves[side]
        assert len(losses) == STEPS
        assert losses[-1] < losses[0] - 0.3, (side, losses)


def test_curves_agree(curves):
    k, r = curves["tilec"], curves["reference"]
    assert abs(k[0] - r[0]) <= tb.FIRST_RTOL * abs(r[0]), (k, r)
    assert tb.max_rel_diff(k, r) <= tb.LOSS_RTOL, (k, r)


def test_expert_parallel_equals_single_process(curves):
    ep = tb.run_ep(2, STEPS, "cpu")
    assert ep == curves["tilec"], (ep, curves["tilec"])
