"""Builtins whose GPU code takes a shortcut, checked bit for bit against the plain expression on
every one of the 2^32 f32 inputs (tests/gpu/math_exhaustive.tl): silu(x) against x / (1 + exp(-x))
and sigmoid(x) against 1 / (1 + exp(-x)), where the plain division is PTX div.rn.f32 / rcp.rn.f32.
One launch of 2^24 threads, about a second on an H200. Also the per-channel SwiGLU cast's SiLU
table (silu_lut_slot and the table in shared memory) against silu() on every bf16 value, and the
scale computation's division by 448 / 6 / 65024 (div_by_format_max) against the IEEE division on every f32
in the ranges the scales use."""
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
