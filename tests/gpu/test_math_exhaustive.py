"""Builtins whose GPU code takes a shortcut, checked bit for bit against the plain expression on
every one of the 2^32 f32 inputs (tests/gpu/math_exhaustive.tl): silu(x) against x / (1 + exp(-x))
and sigmoid(x) against 1 / (1 + exp(-x)), where the plain division is PTX div.rn.f32 / rcp.rn.f32.
One launch of 2^24 threads, about a second on an H200. Also the per-channel SwiGLU cast's SiLU
table (silu_lut_slot and the table in shared memory) against silu() on every bf16 value, and the
scale computation's division by 448 / 6 / 65024 (div_by_format_max) against the IEEE division on every f32
in the ranges the scales use. And log1p, copysign and isfinite on every f32 input against
torch's on the GPU (CUDA's log1pf from libdevice, copysignf, isfinite), bit for bit."""
import os

import torch

from tilec import _native, _runtime

HERE = os.path.dirname(os.path.abspath(__file__))


def test_silu_sigmoid_every_f32():
    _runtime.library(0)  # the CUDA context and the dtype registrations
    lib = _native.Runtime(cache_dir=os.environ.get("TILEC_CACHE_DIR")).open(
        source=os.path.join(HERE, "math_exhaustive.tl"))
    bad = torch.zeros(2, dtype=torch.int32, device="cuda")
    lo = torch.full((2,), -1, dtype=torch.int32, device="cuda")  # 0xFFFFFFFF as u32
    lib.kernel("silu_sigmoid_exhaustive", ()).launch(bad, lo.view(torch.uint32), stream=_runtime.stream(bad))
    torch.cuda.synchronize()
    first = [int(v) & 0xFFFFFFFF for v in lo.cpu()]
    assert bad.tolist() == [0, 0], "inputs that differ: silu %d (first bits 0x%08x), sigmoid %d (first 0x%08x)" % (
        bad[0].item(), first[0], bad[1].item(), first[1])



def test_silu_lut_every_bf16():
    from tilec.quant.common import silu_lut
    lib = _native.Runtime(cache_dir=os.environ.get("TILEC_CACHE_DIR")).open(
        source=os.path.join(HERE, "math_exhaustive.tl"))
    bad = torch.zeros(1, dtype=torch.int32, device="cuda")
    lo = torch.full((1,), -1, dtype=torch.int32, device="cuda")
    lib.kernel("silu_lut_exhaustive", ()).launch(silu_lut(bad.device), bad, lo.view(torch.uint32),
                                                stream=_runtime.stream(bad))
    torch.cuda.synchronize()
    assert bad.item() == 0, "bf16 values whose table SiLU differs: %d (first 0x%04x)" % (
        bad.item(), int(lo.item()) & 0xFFFF)


def test_div_by_format_max_every_f32():
    lib = _native.Runtime(cache_dir=os.environ.get("TILEC_CACHE_DIR")).open(
        source=os.path.join(HERE, "math_exhaustive.tl"))
    bad = torch.zeros(3, dtype=torch.int32, device="cuda")
    lo = torch.full((3,), -1, dtype=torch.int32, device="cuda")
    lib.kernel("div_by_format_max_exhaustive", ("G=65536",)).launch(bad, lo.view(torch.uint32), 1,
                                                                    stream=_runtime.stream(bad))
    torch.cuda.synchronize()
    first = [int(v) & 0xFFFFFFFF for v in lo.cpu()]
    assert bad.tolist() == [0, 0, 0], "inputs that differ: /448 %d (first 0x%08x), /6 %d (first 0x%08x), " \
        "/65024 %d (first 0x%08x)" % (bad[0].item(), first[0], bad[1].item(), first[1], bad[2].item(), first[2])


def test_log1p_copysign_isfinite_every_f32():
    """tilec's log1p (libdevice's log1pf written out step by step), copysign and isfinite against
    torch's, which call CUDA's, on all 2^32 inputs in 16 chunks; NaN results compared by their bits
    too."""
    lib = _native.Runtime(cache_dir=os.environ.get("TILEC_CACHE_DIR")).open(
        source=os.path.join(HERE, "math_exhaustive.tl"))
    n = 1 << 28
    k = lib.kernel("log1p_sign_finite_chunk", ())
    idx = torch.arange(n, dtype=torch.int64, device="cuda")
    sign = (idx * 2654435761 & 0xFFFFFFFF).to(torch.int64)
    sign = torch.where(sign >= 1 << 31, sign - (1 << 32), sign).to(torch.int32).view(torch.float32)
    y = torch.empty(n, dtype=torch.int32, device="cuda")
    c = torch.empty(n, dtype=torch.int32, device="cuda")
    f = torch.empty(n, dtype=torch.uint8, device="cuda")
    bad = {"log1p": 0, "copysign": 0, "isfinite": 0}
    first = {}
    for chunk in range(16):
        base = chunk << 28
        bits = idx + base
        x = torch.where(bits >= 1 << 31, bits - (1 << 32), bits).to(torch.int32).view(torch.float32)
        k.launch(base, y.view(torch.uint32), c.view(torch.uint32), f, stream=_runtime.stream(y))
        want = {"log1p": torch.log1p(x).view(torch.int32), "copysign": torch.copysign(x, sign).view(torch.int32),
                "isfinite": torch.isfinite(x).to(torch.uint8)}
        for name, got in (("log1p", y), ("copysign", c), ("isfinite", f)):
            diff = got != want[name]
            nd = int(diff.sum())
            if nd and name not in first:
                i = int(diff.nonzero()[0])
                first[name] = (base + i, int(got[i]) & 0xFFFFFFFF, int(want[name][i]) & 0xFFFFFFFF)
            bad[name] += nd
    assert bad == {"log1p": 0, "copysign": 0, "isfinite": 0}, "inputs that differ: %s (first: input, tilec, torch: %s)" % (
        bad, {k2: tuple("0x%08x" % v for v in t) for k2, t in first.items()})
