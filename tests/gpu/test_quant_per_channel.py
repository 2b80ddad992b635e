"""per_channel_cast, per_channel_cast_fused and per_channel_cast_and_transpose against tilec.torch
(spec quant-transpose.md §2.12-§2.14)."""
import pytest
import torch

import tilec
from tilec.testing import expand_rows, generate_fused_mapping
from quant_common import assert_equal, check_bias, dirty_allocator

HIDDEN = [576, 2560, 7168]


@pytest.mark.parametrize("rnd", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("h", HIDDEN)
@pytest.mark.parametrize("t", [0, 4096, 8064])
def test_per_channel_cast(t, h, dtype, rnd):
    x = torch.randn((t, h), device="cuda").to(dtype)
    dirty_allocator()
    out, sf = tilec.quant.per_channel_cast(x, "e4m3", 128, round_sf=rnd)
    ref, ref_sf = tilec.torch.cast(x, "e4m3", (128, 1), round_sf=rnd)
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)
    if t:
        check_bias(tilec.torch.cast_back((out, sf), "fp32", (128, 1)), x.float())


MOE = [(0, 0, 0), (2, 72, 128), (6, 256, 128), (9, 72, 16)]  # (topk, experts, alignment); 0: no expand


@pytest.mark.parametrize("moe", MOE, ids=lambda m: "topk%d-e%d-a%d" % m)
@pytest.mark.parametrize("rnd", [False, True])
@pytest.mark.parametrize("fused_cast_back", [False, True])
@pytest.mark.parametrize("h", [2048, 7168])
def test_per_channel_cast_fused(h, fused_cast_back, rnd, moe):
    topk, experts, alignment = moe
    t = 4096 if topk == 0 else 4001
    x = torch.randn((t, h), device="cuda").bfloat16()
    pos = None
    if topk:
        pos, _, _, _ = generate_fused_mapping(t, topk, experts, alignment)
    xin = tilec.quant.per_token_cast(x, "e4m3", 128) if fused_cast_back else x
    n = 128 if fused_cast_back else None
    dirty_allocator()
    out, sf = tilec.quant.per_channel_cast_fused(xin, "e4m3", 128, round_sf=rnd, num_per_channels=n, pos_to_token=pos)
    ref, ref_sf = tilec.torch.per_channel_cast_fused(xin, 128, n, rnd, pos)
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)
    if topk and not fused_cast_back and pos.numel() % 128 == 0:  # the gather equals casting the expanded rows
        out2, sf2 = tilec.quant.per_channel_cast_fused(expand_rows(x, pos), "e4m3", 128, round_sf=rnd)
        assert_equal(out2, out)
        assert_equal(sf2, sf)


@pytest.mark.parametrize("npt", [32, 128])
@pytest.mark.parametrize("rnd", [False, True])
@pytest.mark.parametrize("h", HIDDEN)
@pytest.mark.parametrize("t", [0, 4096, 8064])
def test_per_channel_cast_and_transpose(t, h, rnd, npt):
    x = torch.randn((t, h), device="cuda").bfloat16()
    dirty_allocator()
    out, sf = tilec.quant.per_channel_cast_and_transpose(x, "e4m3", npt, round_sf=rnd)
    ref, ref_sf = tilec.torch.cast(x, "e4m3", (npt, 1), round_sf=rnd)
    assert_equal(out, ref.T.contiguous())
    assert_equal(sf, ref_sf)
