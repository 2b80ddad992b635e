"""Tensor lists on the GPU: the kernels of tests/emu/lists.tl on CUDA tensors against torch and
against the CPU emulator, bit for bit; a list of 4090 tensors, the most that fit: 32760 bytes of
kernel parameters of the 32764 cuLaunchKernel takes (4091 would need 32768); a list launch
captured into a CUDA graph and replayed over new tensor contents (the pointers are parameters: no
copy, no synchronisation); the launch checks of each tensor."""
import os

import pytest
import torch

from tilec import _native, _runtime

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LISTS = os.path.join(ROOT, "tests", "emu", "lists.tl")

MANY = """kernel sum_all(xs: list<f32[N], L, max = 4090>, out: f32[N]) grid(cdiv(N, 128)) threads(128)
{
    let i = block.x * 128 + thread.x;
    if i < N {
        var s: f32 = 0.0;
        for l in 0 .. L {
            s += xs[l][i];
        }
        out[i] = s;
    }
}
"""


def small(*shape, seed, device="cuda"):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(-64, 64, shape, generator=g).to(torch.float32) / 8).to(device)  # sums stay exact


@pytest.fixture(scope="module")
def gpu():
    _runtime.library(0)  # the CUDA context and the dtype registrations
    return _native.Runtime(cache_dir=os.environ.get("TILEC_CACHE_DIR"), device=0).open(source=LISTS)


@pytest.fixture(scope="module")
def cpu():
    _runtime.library(_runtime.CPU)
    return _native.Runtime(memory_only=True, cpu=True).open(source=LISTS)


def launch(k, *args):
    out = next(a for a in args if isinstance(a, torch.Tensor))
    k.launch(*args, stream=_runtime.stream(out))
    torch.cuda.synchronize()


def test_weighted_sum(gpu):
    xs = [small(1000, 64, seed=i) for i in range(8)]
    w = small(8, seed=99)
    out = torch.empty(1000, 64, device="cuda")
    launch(gpu.kernel("weighted_sum", ()), xs, w, out)
    want = torch.zeros_like(out)
    for x, wl in zip(xs, w):
        want = x * wl + want
    assert torch.equal(out, want)


@pytest.mark.parametrize("L", [1, 2, 7, 64])
def test_pipelined_sum_gpu_and_emulator(gpu, cpu, L):
    xs = [small(200, 64, seed=10 + i).to(torch.bfloat16) for i in range(L)]
    out = torch.empty(200, 64, device="cuda")
    launch(gpu.kernel("pipelined_sum", ()), xs, out)
    want = torch.zeros_like(out)
    for x in xs:
        want += x.float()
    assert torch.equal(out, want)
    cpu_out = torch.empty(200, 64)
    cpu.kernel("pipelined_sum", ()).launch([x.cpu() for x in xs], cpu_out)
    assert torch.equal(cpu_out, out.cpu())


@pytest.mark.parametrize("L", [9, 10])
def test_recompute(gpu, L):
    P, N = 9, 100_000
    init = small(N, seed=1)
    pre = [small(N, seed=20 + i) for i in range(L)]
    lo = [small(N, seed=40 + i) for i in range(P)]
    post = [small(N, seed=60 + i) / 8 for i in range(P)]
    inp = [torch.zeros(N, device="cuda") for _ in range(L)]
    res = [torch.zeros(N, device="cuda") for _ in range(P)]
    launch(gpu.kernel("recompute", ()), init, pre, lo, post, inp, res)
    r = init.clone()
    for l in range(P):
        assert torch.equal(inp[l], r * pre[l])
        r = r + lo[l] * post[l]
        assert torch.equal(res[l], r)
    if L > P:
        assert torch.equal(inp[L - 1], r * pre[L - 1])


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    path = tmp_path_factory.mktemp("lists") / "many.tl"
    path.write_text(MANY)
    _runtime.library(0)
    return _native.Runtime(cache_dir=os.environ.get("TILEC_CACHE_DIR"), device=0).open(source=str(path)).kernel(
        "sum_all", ())


@pytest.mark.parametrize("L", [1, 100, 4090])
def test_near_the_parameter_limit(many, L):
    """4090 pointers (32720 bytes) and 40 bytes of the other parameters, alignment included:
    32760 bytes, the largest list this kernel can take"""
    assert "list 0 xs f32 1 16 4090" in many.signature
    xs = [torch.full((256,), float(l), device="cuda") for l in range(L)]
    out = torch.empty(256, device="cuda")
    launch(many, xs, out)
    assert torch.equal(out, torch.full_like(out, float(L * (L - 1) // 2)))
    with pytest.raises(_native.LaunchError, match=r"argument 'xs': 4091 tensors, more than the 4090 the kernel takes"):
        many.launch(xs + [out] * (4091 - L), out)


def test_cuda_graph(gpu):
    """the pointers go into the kernel's parameters: a captured launch reads the tensors' new
    contents when replayed"""
    k = gpu.kernel("weighted_sum", ())
    xs = [small(64, 64, seed=i) for i in range(4)]
    w = small(4, seed=7)
    out = torch.empty(64, 64, device="cuda")
    launch(k, xs, w, out)  # compiled and loaded before the capture
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        k.launch(xs, w, out, stream=_runtime.stream(out))
    for step in range(3):
        for i, x in enumerate(xs):
            x.copy_(small(64, 64, seed=100 * step + i))
        out.zero_()
        g.replay()
        torch.cuda.synchronize()
        want = torch.zeros_like(out)
        for x, wl in zip(xs, w):
            want = x * wl + want
        assert torch.equal(out, want)


def test_checks_name_the_tensor(gpu):
    k = gpu.kernel("weighted_sum", ())
    xs = [small(10, 64, seed=i) for i in range(3)]
    w, out = small(3, seed=5), torch.empty(10, 64, device="cuda")
    with pytest.raises(_native.LaunchError, match=r"argument 'xs\[1\]': expected dtype f32, got bf16"):
        k.launch([xs[0], xs[1].bfloat16(), xs[2]], w, out)
    with pytest.raises(_native.LaunchError,
                       match=r"tensors on different devices: argument 'xs\[0\]' is on cuda:0, argument 'xs\[2\]' on cpu"):
        k.launch([xs[0], xs[1], xs[2].cpu()], w, out)
    with pytest.raises(_native.LaunchError, match=r"argument 'xs\[2\]': data pointer 0x[0-9a-f]+ is not aligned to 16"):
        k.launch([xs[0], xs[1], torch.empty(10 * 64 + 1, device="cuda")[1:].view(10, 64)], w, out)
