"""The Python API without a GPU: argument checks, output allocation and the exact kernel
specialisation and arguments each call launches, against a stand-in kernel that records the
launch. (What the kernels compute is tested on the GPU and on the CPU emulator.)"""
import os
import sys

import pytest

torch = pytest.importorskip("torch")

# the package as built (sources + _native) in the build tree
sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(os.path.dirname(__file__), "..", "..", "build", "python")))


import tilec  # noqa: E402
from tilec import _runtime  # noqa: E402


class Recorder:
    def __init__(self):
        self.calls = []

    def kernel(self, name, generics, t):
        rec = self

        class K:
            def launch(self, *args, stream=0, num_sms=0):
                rec.calls.append((name, generics, args))
        return K()


@pytest.fixture
def rec(monkeypatch):
    r = Recorder()
    monkeypatch.setattr(_runtime, "kernel", r.kernel)
    return r


def test_batched_transpose_specialisation(rec):
    x = torch.zeros((2, 128, 192), dtype=torch.bfloat16)
    y = tilec.transpose.batched_transpose(x)
    assert y.shape == (2, 192, 128) and y.dtype == torch.bfloat16 and y.is_contiguous()
    name, gen, args = rec.calls[0]
    # fewer than 1024 tiles of 128 x 128: halved tiles
    assert name == "batched_transpose" and gen == ("T=bf16", "BX=64", "BY=64", "SA=8")
    assert args[0] is x and args[1] is y
    tilec.transpose.batched_transpose(torch.zeros((1, 512, 256), dtype=torch.uint8))
    assert rec.calls[1][1] == ("T=u8", "BX=128", "BY=128", "SA=16")
    tilec.transpose.batched_transpose(torch.zeros((1, 64, 128), dtype=torch.uint8))  # smaller than a tile
    assert rec.calls[2][1] == ("T=u8", "BX=32", "BY=64", "SA=16")
    # 1024 tiles and more: 128 x 128 bf16 (512 threads for a batch), 256 x 256 bytes, 64 x 128 f32
    # (2000 and more); N = 192 is not a multiple of 128: a partial last tile, not a smaller one
    # (the memory is never touched)
    tilec.transpose.batched_transpose(torch.empty((512, 128, 192), dtype=torch.bfloat16))
    assert rec.calls[3][1] == ("T=bf16", "BX=128", "BY=128", "SA=8", "NTH=512")
    tilec.transpose.batched_transpose(torch.empty((256, 512, 512), dtype=torch.uint8))
    assert rec.calls[4][1] == ("T=u8", "BX=256", "BY=256", "SA=16")
    tilec.transpose.batched_transpose(torch.empty((64, 256, 512), dtype=torch.float32))
    assert rec.calls[5][1] == ("T=f32", "BX=64", "BY=128", "SA=4")
    tilec.transpose.transpose(torch.empty((4096, 4096), dtype=torch.bfloat16))   # one matrix: 256 threads
    assert rec.calls[6][1] == ("T=bf16", "BX=128", "BY=128", "SA=8")
    # f32 under 2000 tiles: the columns halved first, then the rows
    tilec.transpose.transpose(torch.empty((4032, 2048), dtype=torch.float32))
    assert rec.calls[7][1] == ("T=f32", "BX=64", "BY=64", "SA=4")
    tilec.transpose.transpose(torch.empty((4032, 1024), dtype=torch.float32))
    assert rec.calls[8][1] == ("T=f32", "BX=32", "BY=64", "SA=4")


def test_transpose_wide_matrix_orders_blocks_along_rows(rec):
    # 65536 column tiles of 128 do not fit the grid's second dimension (65535): blocks go along
    # x's rows instead of down its columns (the memory is allocated, never touched)
    x = torch.empty((64, 65536 * 128), dtype=torch.bfloat16)
    tilec.transpose.transpose(x)
    assert rec.calls[0][1] == ("T=bf16", "BX=64", "BY=128", "SA=8", "YMAJOR=false")
    tilec.transpose.transpose(x[:, :65535 * 128])
    assert rec.calls[1][1] == ("T=bf16", "BX=64", "BY=128", "SA=8")


def test_transpose_strided_rows(rec):
    base = torch.zeros((64, 2 * 64 + 4), dtype=torch.float32)
    x = base[:, :64]
    y = tilec.transpose.transpose(x)
    assert y.shape == (64, 64)
    name, gen, args = rec.calls[0]
    assert gen == ("T=f32", "BX=64", "BY=64", "SA=4")  # row stride 132 = 4 * 33


def test_transpose_raw_bits_for_other_dtypes(rec):
    x = torch.zeros((64, 64), dtype=torch.int16)
    tilec.transpose.transpose(x)
    assert rec.calls[0][1][0] == "T=i16"
    x = torch.zeros((64, 64), dtype=torch.bool)  # 1 byte, not a language dtype: moved as u8 bits
    tilec.transpose.transpose(x)
    assert rec.calls[1][1][0] == "T=u8" and rec.calls[1][2][0].dtype == torch.uint8


def test_transpose_empty_launches_nothing(rec):
    y = tilec.transpose.transpose(torch.zeros((0, 64)))
    assert y.shape == (64, 0) and not rec.calls


@pytest.mark.parametrize("x, msg", [
    (torch.zeros((64, 64, 1)), "must be 2-D"),
    (torch.zeros((100, 64)), "multiples of 64"),
    (torch.zeros((64, 66))[:, :64], "row stride must be a multiple of 4"),
    (torch.zeros((64, 64), dtype=torch.float64), "1-, 2- or 4-byte"),
    (torch.zeros((128, 64)).T, "unit stride"),
])
def test_transpose_errors(rec, x, msg):
    with pytest.raises(ValueError, match=msg):
        tilec.transpose.transpose(x)
    assert not rec.calls


@pytest.mark.parametrize("packed", [False, True])
def test_per_token_cast_specialisation(rec, packed):
    x = torch.zeros((10, 576), dtype=torch.bfloat16)
    out, sf = tilec.quant.per_token_cast(x, "e4m3", 128, use_tma_aligned_col_major_sf=packed, round_sf=True,
                                         use_packed_ue8m0=packed)
    name, gen, args = rec.calls[0]
    assert gen[:6] == ("T=bf16", "O=e4m3", "H=576", "G=128", "ROUND=true", "XA=32")
    if packed:
        assert sf.dtype == torch.int32 and sf.shape == (10, 2) and sf.stride() == (1, 12)
        assert args[2] is None and "sf=absent" in gen and "sfp=present" in gen
    else:
        assert sf.dtype == torch.float32 and sf.shape == (10, 5) and sf.stride() == (5, 1)
        assert args[2] is sf and args[3] is None


def test_per_token_cast_errors(rec):
    x = torch.zeros((4, 256), dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="fmt must be 'e4m3', 'e2m1' or 'e5m6'"):
        tilec.quant.per_token_cast(x, "e3m2", 32)
    with pytest.raises(ValueError, match="num_per_channels"):
        tilec.quant.per_token_cast(x, "e4m3", 48)
    with pytest.raises(ValueError, match="use_packed_ue8m0 needs use_tma_aligned_col_major_sf"):
        tilec.quant.per_token_cast(x, "e4m3", 32, round_sf=True, use_packed_ue8m0=True)
    with pytest.raises(ValueError, match="bfloat16 or float32"):
        tilec.quant.per_token_cast(x.half(), "e4m3", 32)
    assert not rec.calls
