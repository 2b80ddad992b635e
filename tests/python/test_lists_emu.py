"""Tensor lists through the Python binding on the CPU emulator: a list or tuple of torch CPU
tensors for a list parameter (tests/emu/lists.tl), results against torch bit for bit, the checks
of each tensor named 'xs[i]' (dtype, shape, device, the list's max), non-tensors refused, more
tensors than fit on the binding's stack, and the emulator's bounds check of each tensor.

TILEC_BUILD_PYTHON: the package to test (default build/python)."""
import os
import sys

import pytest

torch = pytest.importorskip("torch")

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(_root, "build", "python")))

from tilec import _native, _runtime  # noqa: E402

LISTS = os.path.join(_root, "tests", "emu", "lists.tl")

MANY = """kernel count_rows(xs: list<f32[N], L, max = 300>, out: f32[L]) grid(cdiv(L, 32)) threads(32)
{
    let l = block.x * 32 + thread.x;
    if l < L {
        var s: f32 = 0.0;
        for i in 0 .. N {
            s += xs[l][i];
        }
        out[l] = s;
    }
}
"""


@pytest.fixture(scope="module")
def lib():
    _runtime.library(_runtime.CPU)  # the dtype registrations
    rt = _native.Runtime(memory_only=True, cpu=True)
    return rt.open(source=LISTS)


def small(*shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-64, 64, shape, generator=g).to(torch.float32) / 8  # sums stay exact


def test_weighted_sum(lib):
    k = lib.kernel("weighted_sum", ())
    xs = [small(10, 64, seed=i) for i in range(5)]
    w = small(5, seed=99)
    out = torch.empty(10, 64)
    k.launch(xs, w, out)
    want = torch.zeros(10, 64)
    for x, wl in zip(xs, w):
        want = x * wl + want
    assert torch.equal(out, want)
    k.launch(tuple(xs[:2]), w[:2].clone(), out)  # a tuple, and a shorter list
    assert torch.equal(out, xs[0] * w[0] + xs[1] * w[1])


def test_pipelined_sum(lib):
    k = lib.kernel("pipelined_sum", ())
    xs = [small(40, 64, seed=10 + i).to(torch.bfloat16) for i in range(7)]
    out = torch.empty(40, 64)
    k.launch(xs, out)
    want = torch.zeros(40, 64)
    for x in xs:
        want += x.float()
    assert torch.equal(out, want)


@pytest.mark.parametrize("L", [3, 4])
def test_recompute(lib, L):
    k = lib.kernel("recompute", ())
    P, N = 3, 300
    init = small(N, seed=1)
    pre = [small(N, seed=20 + i) for i in range(L)]
    lo = [small(N, seed=30 + i) for i in range(P)]
    post = [small(N, seed=40 + i) / 8 for i in range(P)]
    inp = [torch.zeros(N) for _ in range(L)]
    res = [torch.zeros(N) for _ in range(P)]
    k.launch(init, pre, lo, post, inp, res)
    r = init.clone()
    for l in range(P):
        assert torch.equal(inp[l], r * pre[l])
        r = r + lo[l] * post[l]
        assert torch.equal(res[l], r)
    if L > P:
        assert torch.equal(inp[L - 1], r * pre[L - 1])


def test_checks_name_the_tensor(lib):
    k = lib.kernel("weighted_sum", ())
    xs = [small(10, 64, seed=i) for i in range(3)]
    w, out = small(3, seed=5), torch.empty(10, 64)
    bad = list(xs)
    bad[1] = xs[1].double()
    with pytest.raises(_native.LaunchError, match=r"argument 'xs\[1\]': expected dtype f32, got f64"):
        k.launch(bad, w, out)
    bad[1] = xs[1][:, :32]
    with pytest.raises(_native.LaunchError, match=r"argument 'xs\[1\]': dimension 1 is 32 but 64"):
        k.launch(bad, w, out)
    bad[1] = xs[1].t().contiguous().t()
    with pytest.raises(_native.LaunchError,
                       match=r"argument 'xs\[1\]': expected a contiguous tensor, but stride 1 is 10"):
        k.launch(bad, w, out)
    with pytest.raises(_native.LaunchError,
                       match=r"argument 'xs': 9 tensors, more than the 8 the kernel takes \(its list's max\)"):
        k.launch(xs * 3, small(9, seed=6), out)
    with pytest.raises(_native.LaunchError, match=r"argument 0 element 2: a list argument holds tensors, not an int"):
        k.launch([xs[0], xs[1], 3], w, out)
    with pytest.raises(_native.LaunchError, match=r"argument 'xs': expected a list of tensors, got a tensor"):
        k.launch(xs[0], w, out)
    with pytest.raises(_native.LaunchError, match=r"argument 'w': expected a tensor, got a list of tensors"):
        k.launch(xs, [w], out)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device for a tensor elsewhere")
def test_device_of_each_tensor(lib):
    k = lib.kernel("weighted_sum", ())
    xs = [small(10, 64, seed=i) for i in range(3)]
    xs[2] = xs[2].cuda()
    with pytest.raises(_native.LaunchError, match=r"argument 'xs\[0\]' is on cpu, argument 'xs\[2\]' on cuda:0"):
        k.launch(xs, small(3, seed=5), torch.empty(10, 64))


def test_many_tensors(tmp_path):
    """300 tensors: more than the binding keeps on its stack"""
    path = tmp_path / "many.tl"
    path.write_text(MANY)
    _runtime.library(_runtime.CPU)
    k = _native.Runtime(memory_only=True, cpu=True).open(source=str(path)).kernel("count_rows", ())
    xs = [torch.full((5,), float(i)) for i in range(300)]
    out = torch.empty(300)
    k.launch(xs, out)
    assert torch.equal(out, torch.arange(300, dtype=torch.float32) * 5)


def test_bounds(lib):
    k = lib.kernel("pick", ())
    mem = torch.arange(24, dtype=torch.float32)
    xs = [mem[0:8], mem[8:16], mem[16:24]]
    out = torch.empty(1)
    k.launch(xs, 2, 7, out)
    assert out.item() == 23.0
    with pytest.raises(RuntimeError, match=r"offset 32 of 'xs\[1\]', 4 bytes past the end of its 32 bytes"):
        k.launch(xs, 1, 8, out)
    with pytest.raises(RuntimeError, match=r"through 'xs\[3\]', past the end of the list \(3 tensors\)"):
        k.launch(xs, 3, 0, out)
    k.launch(xs, 0, 1, out)  # the process carries on
    assert out.item() == 1.0
