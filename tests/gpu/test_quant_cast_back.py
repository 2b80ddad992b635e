"""cast_back / per_token_cast_back (e4m3, e2m1, E5M6) against tilec.torch (spec
quant-transpose.md §2.9-§2.11)."""
import pytest
import torch

import tilec
from tilec.testing import calc_diff, generate_e5m6_inputs
from quant_common import FLAGS, assert_equal, dirty_allocator, flags_id

HIDDEN = [576, 7168]
OUT = {"bf16": torch.bfloat16, "fp32": torch.float32}


@pytest.mark.parametrize("out_fmt", ["fp32", "bf16"])
@pytest.mark.parametrize("n_mode", [128, "H"])
@pytest.mark.parametrize("flags", FLAGS, ids=flags_id)
@pytest.mark.parametrize("fmt", ["e4m3", "e2m1"])
@pytest.mark.parametrize("h", HIDDEN)
@pytest.mark.parametrize("t", [0, 4001])
def test_per_token_cast_back(t, h, fmt, flags, n_mode, out_fmt):
    col, rnd, packed = flags
    n = h if n_mode == "H" else n_mode
    x = torch.randn((t, h), device="cuda").to(OUT[out_fmt])
    xq = tilec.quant.per_token_cast(x, fmt, n, use_tma_aligned_col_major_sf=col, round_sf=rnd, use_packed_ue8m0=packed)
    dirty_allocator()
    back = tilec.quant.per_token_cast_back(xq, out_fmt, n)
    assert_equal(back, tilec.torch.cast_back(xq, out_fmt, (1, n)))
    if t:
        assert calc_diff(x, back) < (2e-2 if fmt == "e2m1" else 1e-3)


@pytest.mark.parametrize("block", [(128, 1), (128, 128)])
@pytest.mark.parametrize("out_fmt", ["fp32", "bf16"])
@pytest.mark.parametrize("rnd", [False, True])
@pytest.mark.parametrize("h", HIDDEN)
@pytest.mark.parametrize("t", [0, 4001])
def test_cast_back(t, h, rnd, out_fmt, block):
    xq = tilec.torch.cast(torch.randn((t, h), device="cuda"), "e4m3", block, round_sf=rnd)
    dirty_allocator()
    assert_equal(tilec.quant.cast_back(xq, out_fmt, block), tilec.torch.cast_back(xq, out_fmt, block))


@pytest.mark.parametrize("out_fmt", ["fp32", "bf16"])
@pytest.mark.parametrize("flags", FLAGS, ids=flags_id)
@pytest.mark.parametrize("h", HIDDEN)
@pytest.mark.parametrize("t", [0, 4001])
def test_cast_back_e5m6(t, h, flags, out_fmt):
    col, rnd, packed = flags
    for i, x in enumerate(generate_e5m6_inputs((t, h), OUT[out_fmt])):
        xq = tilec.quant.per_token_cast(x, "e5m6", h, use_tma_aligned_col_major_sf=col, round_sf=rnd,
                                        use_packed_ue8m0=packed)
        dirty_allocator()
        back = tilec.quant.cast_back(xq, out_fmt, (1, h), x_special_fmt="e5m6")
        assert_equal(back, tilec.torch.cast_back_from_e5m6(xq, out_fmt, (1, h)))
        if t:
            assert calc_diff(x, back) < (1e-4 if i == 0 else 5e-6)
