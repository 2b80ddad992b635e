"""Helpers of the tests that call a function twice and compare (test_ops, test_plans,
tests/gpu/test_cuda_graphs): copies of a call's arguments, and results compared bit for bit."""
import torch


def clone_args(kw):
    """The keyword arguments of a call with every tensor (also inside tuples and lists) copied."""
    def one(v):
        if isinstance(v, torch.Tensor):
            return v.clone()
        if isinstance(v, (tuple, list)):
            return type(v)(one(e) for e in v)
        return v
    return {k: one(v) for k, v in kw.items()}


def flat(r, out=None):
    """The tensors and other values of a result, tuples and lists flattened, in order."""
    out = [] if out is None else out
    if isinstance(r, torch.Tensor):
        out.append(r)
    elif isinstance(r, dict):
        for k in sorted(r):
            flat(r[k], out)
    elif isinstance(r, (tuple, list)):
        for e in r:
            flat(e, out)
    else:
        out.append(r)
    return out


def assert_same(a, b):
    """Bit-identical results (NaN payloads and -0 included): the same shapes, dtypes, strides,
    devices and bytes; other values equal."""
    fa, fb = flat(a), flat(b)
    assert len(fa) == len(fb)
    for x, y in zip(fa, fb):
        if isinstance(x, torch.Tensor):
            assert isinstance(y, torch.Tensor)
            assert (x.shape, x.dtype, x.stride(), x.device) == (y.shape, y.dtype, y.stride(), y.device)
            if x.numel():
                assert torch.equal(x.detach().reshape(-1).view(torch.uint8), y.detach().reshape(-1).view(torch.uint8))
        else:
            assert x == y
