"""tilec.quant.per_token_cast (e4m3) against the reference tilec.torch.cast, byte for byte, on
TileKernels' grid (spec quant-transpose.md §2.1)."""
import pytest
import torch

import tilec
from tilec.testing import assert_equal, check_bias, clear_unused_sf

HIDDEN = [576, 2048, 2560, 3072, 4096, 6144, 7168]
FLAGS = [(False, True, False), (True, True, True), (False, False, False), (True, False, False)]


@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: "col%d-round%d-packed%d" % f)
@pytest.mark.parametrize("n_mode", [32, 64, 128, "H"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("h", HIDDEN)
@pytest.mark.parametrize("t", [0, 4001, 8001])
def test_per_token_cast(t, h, dtype, n_mode, flags):
    col, rnd, packed = flags
    n = h if n_mode == "H" else n_mode
    x = torch.randn((t, h), device="cuda").to(dtype)
    out, sf = tilec.quant.per_token_cast(x, "e4m3", n, use_tma_aligned_col_major_sf=col, round_sf=rnd,
                                         use_packed_ue8m0=packed)
    ref, ref_sf = tilec.torch.cast(x, "e4m3", (1, n), round_sf=rnd, use_tma_aligned_col_major_sf=col,
                                   use_packed_ue8m0=packed)
    assert_equal(out, ref)
    if packed:
        assert_equal(clear_unused_sf(sf, h, n), clear_unused_sf(ref_sf, h, n), check_stride=False)
        assert sf.shape == ref_sf.shape and (t == 0 or sf.stride() == ref_sf.stride())
    else:
        assert_equal(sf, ref_sf)
    if t:
        back = tilec.torch.cast_back((out, sf), "fp32", (1, n))
        check_bias(back, x.float())


def test_non_contiguous_rows():
    x = torch.randn((4001, 2 * 2048), device="cuda").bfloat16()[:, :2048]
    a = tilec.quant.per_token_cast(x, "e4m3", 128)
    b = tilec.quant.per_token_cast(x.contiguous(), "e4m3", 128)
    assert_equal(a[0], b[0])
    assert_equal(a[1], b[1])


def test_bad_inputs():
    x = torch.randn((16, 256), device="cuda").bfloat16()
    with pytest.raises(ValueError, match="fmt must be 'e4m3', 'e2m1' or 'e5m6'"):
        tilec.quant.per_token_cast(x, "e3m2", 32)
    with pytest.raises(ValueError, match="num_per_channels"):
        tilec.quant.per_token_cast(x, "e4m3", 48)
    with pytest.raises(ValueError, match="use_packed_ue8m0 needs round_sf"):
        tilec.quant.per_token_cast(x, "e4m3", 32, use_tma_aligned_col_major_sf=True, use_packed_ue8m0=True)
    with pytest.raises(ValueError, match="bfloat16 or float32"):
        tilec.quant.per_token_cast(x.half(), "e4m3", 32)
