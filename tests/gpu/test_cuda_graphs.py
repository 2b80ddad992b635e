"""Every public kernel function captured in a CUDA graph (spec of the launch path: no host
synchronisation, no allocation outside torch's caching allocator, no Python work that depends on
tensor values, the current stream): the calls of tests/python/test_ops.py (a valid call of each
op of tilec.quant, transpose, moe, engram and modeling.mhc.ops, and of the mHC backward ops) on
CUDA tensors, captured after a warm-up on a side stream, replayed, and compared byte for byte —
outputs and the arguments a function writes — with an eager call on copies of the same inputs."""
import os
import sys

import pytest
import torch

os.environ["TILEC_OPS_DEVICE"] = "cuda"      # test_ops builds its calls on this device
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import test_ops  # noqa: E402
from call_results import assert_same, clone_args, flat  # noqa: E402
from conftest import poison  # noqa: E402


CALLS = test_ops._op_calls()


@pytest.mark.parametrize("fn, kw", CALLS, ids=[f"{fn.__module__}.{fn.__name__}" for fn, _ in CALLS])
def test_captured_call_replays_like_eager(fn, kw):
    eager_args = clone_args(kw)
    want = fn(**eager_args)                  # also compiles the kernels: the capture must not
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):            # the warm-up torch.cuda.graphs asks for
        fn(**clone_args(kw))
    torch.cuda.current_stream().wait_stream(side)
    graph_args = clone_args(kw)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        got = fn(**graph_args)
    # the outputs the graph allocated are poisoned first, so that a replay that writes nothing fails
    inputs = {t.untyped_storage().data_ptr() for t in flat(graph_args) if isinstance(t, torch.Tensor)}
    for t in flat(got):
        if isinstance(t, torch.Tensor) and t.numel() and t.untyped_storage().data_ptr() not in inputs:
            poison(t)
    graph.replay()
    torch.cuda.synchronize()
    assert_same(got, want)
    assert_same(graph_args, eager_args)   # what the function wrote
