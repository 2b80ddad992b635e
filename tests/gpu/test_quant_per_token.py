"""tilec.quant.per_token_cast and its variants against tilec.torch, byte for byte (spec
quant-transpose.md §2.1-§2.4), on a trimmed TileKernels grid: T in {0, 4001}, three hidden sizes,
every input dtype, format and flag combination."""
import pytest
import torch

import tilec
from tilec.testing import generate_e5m6_inputs
from quant_common import FLAGS, assert_equal, check_bias, dirty_allocator, flags_id

HIDDEN = [576, 7168]
T_GRID = [0, 4001]


@pytest.mark.parametrize("flags", FLAGS, ids=flags_id)
@pytest.mark.parametrize("fmt", ["e4m3", "e2m1"])
@pytest.mark.parametrize("n_mode", [32, 128, "H"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("h", HIDDEN)
@pytest.mark.parametrize("t", T_GRID)
def test_float_input(t, h, dtype, n_mode, fmt, flags):
    col, rnd, packed = flags
    n = h if n_mode == "H" else n_mode
    x = torch.randn((t, h), device="cuda").to(dtype)
    kw = dict(use_tma_aligned_col_major_sf=col, round_sf=rnd, use_packed_ue8m0=packed)
    dirty_allocator()
    out, sf = tilec.quant.per_token_cast(x, fmt, n, **kw)
    ref, ref_sf = tilec.torch.cast(x, fmt, (1, n), **kw)
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)
    if t:
        check_bias(tilec.torch.cast_back((out, sf), "fp32", (1, n)), x.float())
    if n_mode != "H" and dtype == torch.bfloat16:  # the variants share the kernel: one input type
        dirty_allocator()
        assert_equal(tilec.quant.per_token_cast_with_sf_only(x, fmt, n, **kw), ref_sf)
        if not col:
            got = tilec.quant.per_token_cast_with_precomputed_sf(x, fmt, n, sf, round_sf=rnd)
            assert_equal(got, tilec.torch.cast(x, fmt, (1, n), sf=sf))


@pytest.mark.parametrize("flags", FLAGS, ids=flags_id)
@pytest.mark.parametrize("fmt", ["e4m3", "e2m1"])
@pytest.mark.parametrize("xbs", [(128, 128), (32, 32)])
@pytest.mark.parametrize("n", [32, 128])
@pytest.mark.parametrize("in_fmt", ["e4m3", "e2m1"])
@pytest.mark.parametrize("h", [576])
@pytest.mark.parametrize("t", T_GRID)
def test_quant_input(t, h, in_fmt, n, xbs, fmt, flags):
    col, rnd, packed = flags
    kw = dict(use_tma_aligned_col_major_sf=col, round_sf=rnd, use_packed_ue8m0=packed)
    xq = tilec.torch.cast(torch.randn((t, h), device="cuda").bfloat16(), in_fmt, xbs, **kw)
    dirty_allocator()
    out, sf = tilec.quant.per_token_cast(xq, fmt, n, x_block_size=xbs, **kw)
    ref, ref_sf = tilec.torch.cast(xq, fmt, (1, n), x_block_size=xbs, **kw)
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)


def test_non_contiguous_rows():
    x = torch.randn((4001, 2 * 2048), device="cuda").bfloat16()[:, :2048]
    for fmt in ("e4m3", "e2m1"):
        a = tilec.quant.per_token_cast(x, fmt, 128)
        b = tilec.quant.per_token_cast(x.contiguous(), fmt, 128)
        assert_equal(a[0], b[0])
        assert_equal(a[1], b[1])
    a = tilec.quant.per_token_cast(x, "e5m6", 2048)
    b = tilec.quant.per_token_cast(x.contiguous(), "e5m6", 2048)
    assert_equal(a[0], b[0])


@pytest.mark.parametrize("flags", FLAGS, ids=flags_id)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("h", HIDDEN)
@pytest.mark.parametrize("t", T_GRID)
def test_e5m6(t, h, dtype, flags):
    col, rnd, packed = flags
    kw = dict(use_tma_aligned_col_major_sf=col, round_sf=rnd, use_packed_ue8m0=packed)
    for x in generate_e5m6_inputs((t, h), dtype):
        dirty_allocator()
        out, sf = tilec.quant.per_token_cast(x, "e5m6", h, **kw)
        ref, ref_sf = tilec.torch.cast_to_e5m6(x, h, **kw)
        assert_equal(out, ref)
        assert_equal(sf, ref_sf)
