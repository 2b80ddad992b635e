"""per_block_cast (and variants) and per_block_cast_lossless against tilec.torch (spec
quant-transpose.md §2.5-§2.8)."""
import pytest
import torch

import tilec
from tilec.testing import clamp_abs_ratio, generate_rand_float
from quant_common import FLAGS, assert_equal, check_bias, dirty_allocator, flags_id

HIDDEN = [576, 7168]


@pytest.mark.parametrize("flags", FLAGS, ids=flags_id)
@pytest.mark.parametrize("block", [(128, 128), (32, 32)])
@pytest.mark.parametrize("fmt", ["e4m3", "e2m1"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("h", HIDDEN)
@pytest.mark.parametrize("t", [0, 4001])
def test_per_block_cast(t, h, dtype, fmt, block, flags):
    col, rnd, packed = flags
    kw = dict(use_tma_aligned_col_major_sf=col, round_sf=rnd, use_packed_ue8m0=packed)
    x = torch.randn((t, h), device="cuda").to(dtype)
    dirty_allocator()
    out, sf = tilec.quant.per_block_cast(x, fmt, block, **kw)
    ref, ref_sf = tilec.torch.cast(x, fmt, block, **kw)
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)
    if t:
        check_bias(tilec.torch.cast_back((out, sf), "fp32", block), x.float())
    if dtype != torch.bfloat16:  # the variants share the kernel: one input type
        return
    dirty_allocator()
    assert_equal(tilec.quant.per_block_cast_with_sf_only(x, fmt, block, **kw), ref_sf)
    if not col:
        got = tilec.quant.per_block_cast_with_precomputed_sf(x, fmt, block, sf, round_sf=rnd)
        assert_equal(got, tilec.torch.cast(x, fmt, block, sf=sf))


@pytest.mark.parametrize("out_flags", FLAGS, ids=flags_id)
@pytest.mark.parametrize("in_flags", FLAGS, ids=flags_id)
@pytest.mark.parametrize("out_block", [(1, 128), (32, 32), (128, 128)])
@pytest.mark.parametrize("h", [576, 7168])
@pytest.mark.parametrize("t", [0, 4001])
def test_per_block_cast_lossless(t, h, out_block, in_flags, out_flags):
    icol, irnd, ipacked = in_flags
    x = clamp_abs_ratio(generate_rand_float((t, h))) if t else torch.zeros((0, h), device="cuda")
    xq = tilec.torch.cast(x, "e2m1", (1, 32), round_sf=irnd, use_tma_aligned_col_major_sf=icol,
                          use_packed_ue8m0=ipacked)
    col, rnd, packed = out_flags
    dirty_allocator()
    out = tilec.quant.per_block_cast_lossless(xq, "e4m3", (1, 32), out_block, use_tma_aligned_col_major_sf=col,
                                              round_sf=rnd, use_packed_ue8m0=packed)
    assert out[0].shape == (t, h)
    assert_equal(tilec.torch.cast_back(out, "fp32", out_block), tilec.torch.cast_back(xq, "fp32", (1, 32)))
