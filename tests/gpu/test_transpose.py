"""tilec.transpose against torch on the TileKernels test shapes (spec quant-transpose.md §2.19-20)."""
import pytest
import torch

import tilec
from tilec.testing import assert_equal

HIDDEN = [576, 2048, 2560, 3072, 4096, 6144, 7168]
DTYPES = [torch.bfloat16, torch.float8_e4m3fn, torch.float32]


def rand(shape, dtype):
    if dtype == torch.float8_e4m3fn:
        return torch.randint(0, 256, shape, dtype=torch.uint8, device="cuda").view(dtype)
    return torch.randn(shape, device="cuda").to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", HIDDEN)
@pytest.mark.parametrize("m", [0, 4032, 8064])
def test_transpose_strided(m, n, dtype):
    # the input is a column slice with row stride 2n, as in TileKernels' test
    base = rand((m, 2 * n), dtype)
    x = base[:, :n]
    y = tilec.transpose.transpose(x)
    assert_equal(y, x.T.contiguous())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", HIDDEN)
@pytest.mark.parametrize("m", [0, 4032])
@pytest.mark.parametrize("b", [8, 32])
def test_batched_transpose(b, m, n, dtype):
    x = rand((b, m, n), dtype)
    y = tilec.transpose.batched_transpose(x)
    assert_equal(y, x.transpose(1, 2).contiguous())


def test_bad_inputs():
    with pytest.raises(ValueError, match="multiples of 64"):
        tilec.transpose.transpose(torch.zeros((100, 64), device="cuda"))
    with pytest.raises(ValueError, match="row stride must be a multiple of 4"):
        tilec.transpose.transpose(torch.zeros((64, 66), device="cuda")[:, :64])
    with pytest.raises(ValueError, match="1-, 2- or 4-byte"):
        tilec.transpose.transpose(torch.zeros((64, 64), dtype=torch.float64, device="cuda"))
