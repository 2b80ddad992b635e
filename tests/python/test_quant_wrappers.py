"""tilec.quant without a GPU: for every function, the kernel specialisation and arguments it
launches (a stand-in kernel records them), the outputs it allocates (dtypes, shapes, strides of
the three scale layouts), empty inputs (no launch), and the exact error of each violated
precondition (raised before any launch)."""
import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(os.path.dirname(__file__), "..", "..", "build", "python")))

import tilec  # noqa: E402
from tilec import _runtime  # noqa: E402
from tilec import quant as Q  # noqa: E402

F8 = torch.float8_e4m3fn


class Recorder:
    def __init__(self):
        self.calls = []

    def kernel(self, name, generics, t):
        rec = self

        class K:
            def launch(self, *args, stream=0, num_sms=0):
                rec.calls.append((name, dict(g.split("=", 1) for g in generics), args))
        return K()


@pytest.fixture
def rec(monkeypatch):
    r = Recorder()
    monkeypatch.setattr(_runtime, "kernel", r.kernel)
    return r


def bf(*shape):
    return torch.zeros(shape, dtype=torch.bfloat16)


def arg_shape(a):
    """(dtype name or torch dtype, shape, strides) of a launch argument."""
    if isinstance(a, torch.Tensor):
        return a.dtype, tuple(a.shape), tuple(a.stride())
    return None


# ---------------- per_token_cast ----------------

@pytest.mark.parametrize("fmt", ["e4m3", "e2m1"])
@pytest.mark.parametrize("flags", [(False, False, False), (False, True, False), (True, False, False), (True, True, True)])
def test_per_token_cast_layouts(rec, fmt, flags):
    col, rnd, packed = flags
    out, sf = Q.per_token_cast(bf(10, 576), fmt, 128, use_tma_aligned_col_major_sf=col, round_sf=rnd,
                               use_packed_ue8m0=packed)
    assert out.shape == ((10, 576) if fmt == "e4m3" else (10, 288))
    assert out.dtype == (F8 if fmt == "e4m3" else torch.int8)
    name, g, args = rec.calls[0]
    assert name == "per_token_cast" and g["T"] == "bf16" and g["O"] == fmt and g["H"] == "576" and g["G"] == "128"
    assert g["ROUND"] == ("true" if rnd else "false")
    if packed:
        assert sf.dtype == torch.int32 and sf.shape == (10, 2) and sf.stride() == (1, 12)
        assert g["sf"] == "absent" and g["sfp"] == "present" and args[2] is None
    elif col:
        assert sf.dtype == torch.float32 and sf.shape == (10, 5) and sf.stride() == (1, 12)
        assert args[2] is sf
    else:
        assert sf.shape == (10, 5) and sf.stride() == (5, 1) and args[2] is sf
    assert g["psf"] == g["isf"] == g["isfp"] == "absent"


def test_per_token_cast_col_major_padding_zeroed(rec):
    _, sf = Q.per_token_cast(bf(10, 256), "e4m3", 128, use_tma_aligned_col_major_sf=True)
    store = torch.as_strided(sf, (2, 12), (12, 1))
    assert torch.equal(store[:, 10:], torch.zeros((2, 2)))


def test_per_token_cast_single_column_strides(rec):
    _, sf = Q.per_token_cast(bf(6, 128), "e4m3", 128)
    assert sf.shape == (6, 1) and sf.stride() == (1, 1)
    _, sf = Q.per_token_cast(bf(6, 128), "e4m3", 128, use_tma_aligned_col_major_sf=True, round_sf=True,
                             use_packed_ue8m0=True)
    assert sf.shape == (6, 1) and sf.stride() == (1, 8)


def test_per_token_cast_row_stride(rec):
    base = torch.zeros((8, 2 * 2048 + 8), dtype=torch.float32)
    Q.per_token_cast(base[:, :2048], "e4m3", 64)
    g = rec.calls[0][1]
    assert g["XA"] == "8" and g["T"] == "f32"  # row stride 4104 = 8 * 513


def test_per_token_cast_whole_row(rec):
    _, sf = Q.per_token_cast(bf(4, 7168), "e4m3", 7168)
    assert sf.shape == (4, 1) and rec.calls[0][1]["G"] == "7168"


@pytest.mark.parametrize("packed_in", [False, True])
def test_per_token_cast_quant_input_fp4(rec, packed_in):
    q = torch.zeros((64, 128), dtype=torch.int8)  # logical H = 256
    if packed_in:
        store = torch.zeros((((256 // 32) + 3) // 4, 64), dtype=torch.int32)
        q_sf = store[:, :64].T
    else:
        q_sf = torch.zeros((64, 8), dtype=torch.float32)
    out, sf = Q.per_token_cast((q, q_sf), "e4m3", 32, x_block_size=(1, 32), round_sf=True)
    assert out.shape == (64, 256) and sf.shape == (64, 8)
    name, g, args = rec.calls[0]
    assert g["T"] == "e2m1" and g["IBM"] == "1" and g["IBN"] == "32" and g["H"] == "256"
    x = args[0]
    assert isinstance(x, _runtime.Arg)
    if packed_in:
        assert g["isfp"] == "present" and g["isf"] == "absent" and isinstance(args[6], _runtime.Arg)
    else:
        assert g["isf"] == "present" and args[5] is q_sf


def test_per_token_cast_quant_input_e4m3_col_major_sf(rec):
    q = torch.zeros((33, 256), dtype=F8)
    q_sf = torch.zeros((2, 36), dtype=torch.float32)[:, :33].T  # column-major (33, 2)
    Q.per_token_cast((q, q_sf), "e2m1", 128, x_block_size=(1, 128), round_sf=True)
    g, args = rec.calls[0][1], rec.calls[0][2]
    assert g["T"] == "e4m3" and g["O"] == "e2m1" and args[5] is q_sf


def test_per_token_cast_e5m6(rec):
    out, sf = Q.per_token_cast(bf(10, 576), "e5m6", 576, use_tma_aligned_col_major_sf=True, round_sf=True,
                               use_packed_ue8m0=True)
    assert out.dtype == torch.uint8 and out.shape == (10, 864)
    assert sf.dtype == torch.int32 and sf.shape == (10, 1) and sf.stride() == (1, 12)
    name, g, args = rec.calls[0]
    assert name == "per_token_cast_e5m6" and g["H"] == "576" and g["sfp"] == "present"


def test_per_token_cast_variants(rec):
    x = bf(9, 512)
    sf = Q.per_token_cast_with_sf_only(x, "e4m3", 64, round_sf=True)
    assert sf.shape == (9, 8) and rec.calls[0][1]["out"] == "absent"
    out = Q.per_token_cast_with_precomputed_sf(x, "e2m1", 64, torch.ones((9, 8)))
    assert out.shape == (9, 256) and out.dtype == torch.int8
    g = rec.calls[1][1]
    assert g["psf"] == "present" and g["out"] == "present" and g["sf"] == "absent"


def test_per_token_cast_empty(rec):
    out, sf = Q.per_token_cast(bf(0, 576), "e4m3", 128, use_tma_aligned_col_major_sf=True, round_sf=True,
                               use_packed_ue8m0=True)
    assert out.shape == (0, 576) and sf.shape == (0, 2) and sf.dtype == torch.int32
    out, sf = Q.per_token_cast(bf(0, 576), "e5m6", 576)
    assert out.shape == (0, 864) and sf.shape == (0, 1)
    assert not rec.calls


@pytest.mark.parametrize("call, exc, msg", [
    (lambda: Q.per_token_cast(bf(4, 256), "e3m2", 32), ValueError,
     "per_token_cast: fmt must be 'e4m3', 'e2m1' or 'e5m6', got 'e3m2'"),
    (lambda: Q.per_token_cast(bf(4, 256), "e4m3", 48), ValueError,
     r"per_token_cast: num_per_channels must be 16, 32, 64, 128 or the hidden size \(256\), got 48"),
    (lambda: Q.per_token_cast(bf(4, 96), "e4m3", 96), ValueError,
     "per_token_cast: one scale per row \\(num_per_channels == hidden\\) needs hidden % 64 == 0, got 96"),
    (lambda: Q.per_token_cast(bf(4, 256).half(), "e4m3", 32), ValueError,
     "per_token_cast: x must be bfloat16 or float32, got torch.float16"),
    (lambda: Q.per_token_cast(bf(4, 256, 1), "e4m3", 32), ValueError, "per_token_cast: x must be 2-D"),
    (lambda: Q.per_token_cast(bf(256, 4).T, "e4m3", 32), ValueError,
     "per_token_cast: x must have unit stride along the hidden dimension, got 4"),
    (lambda: Q.per_token_cast(bf(4, 256), "e4m3", 32, round_sf=True, use_packed_ue8m0=True), ValueError,
     "per_token_cast: use_packed_ue8m0 needs use_tma_aligned_col_major_sf=True"),
    (lambda: Q.per_token_cast(bf(4, 256), "e4m3", 32, use_tma_aligned_col_major_sf=True, use_packed_ue8m0=True),
     ValueError, "per_token_cast: use_packed_ue8m0 needs round_sf=True"),
    (lambda: Q.per_token_cast(bf(4, 256), "e4m3", 32, x_block_size=(1, 32)), ValueError,
     "per_token_cast: x_block_size is only for QuantTensor input"),
    (lambda: Q.per_token_cast((torch.zeros((4, 256), dtype=F8), torch.zeros((4, 2))), "e4m3", 32), ValueError,
     "per_token_cast: x_block_size is required for QuantTensor input"),
    (lambda: Q.per_token_cast((torch.zeros((4, 256), dtype=F8), torch.zeros((4, 3))), "e4m3", 32,
                              x_block_size=(1, 128)), ValueError,
     r"per_token_cast: x's sf must have shape \(4, 2\), got \(4, 3\)"),
    (lambda: Q.per_token_cast((torch.zeros((4, 256), dtype=F8), torch.zeros((4, 1), dtype=torch.int32).T.contiguous().T[:, :1]),
                              "e4m3", 256, x_block_size=(1, 128)), ValueError,
     "per_token_cast: num_per_channels must be 16, 32, 64 or 128 here, got 256"),
    (lambda: Q.per_token_cast((torch.zeros((4, 256), dtype=torch.int16), torch.zeros((4, 2))), "e4m3", 32,
                              x_block_size=(1, 128)), ValueError,
     "per_token_cast: QuantTensor data must be float8_e4m3fn or int8 \\(packed e2m1\\), got torch.int16"),
    (lambda: Q.per_token_cast((torch.zeros((4, 256), dtype=F8), torch.zeros((4, 2), dtype=torch.float16)), "e4m3", 32,
                              x_block_size=(1, 128)), ValueError,
     "per_token_cast: x's sf must be float32 or int32 \\(packed UE8M0\\), got torch.float16"),
    (lambda: Q.per_token_cast((torch.zeros((4, 256), dtype=F8), torch.zeros((4, 1), dtype=torch.int32)), "e4m3", 32,
                              x_block_size=(1, 128)), None, None),
    (lambda: Q.per_token_cast(bf(4, 256), "e5m6", 128), ValueError,
     r"per_token_cast: fmt='e5m6' needs num_per_channels == hidden \(256\), got 128"),
    (lambda: Q.per_token_cast(bf(4, 256), "e5m6", 256, x_block_size=(1, 32)), ValueError,
     "per_token_cast: fmt='e5m6' takes a float tensor x"),
    (lambda: Q.per_token_cast_with_sf_only(bf(4, 256), "e4m3", 256), ValueError,
     "per_token_cast_with_sf_only: num_per_channels must be 16, 32, 64 or 128 here, got 256"),
    (lambda: Q.per_token_cast_with_sf_only((torch.zeros((4, 256), dtype=F8), torch.zeros((4, 2))), "e4m3", 32,
                                           x_block_size=(1, 128)), ValueError,
     "per_token_cast_with_sf_only: x must be a float tensor"),
    (lambda: Q.per_token_cast_with_precomputed_sf(bf(4, 256), "e4m3", 32, torch.ones((4, 8)),
                                                  use_tma_aligned_col_major_sf=True), ValueError,
     "per_token_cast_with_precomputed_sf: precomputed scales are row-major f32"),
    (lambda: Q.per_token_cast_with_precomputed_sf(bf(4, 256), "e4m3", 32, torch.ones((4, 7))), ValueError,
     r"per_token_cast_with_precomputed_sf: sf must have shape \(4, 8\), got \(4, 7\)"),
    (lambda: Q.per_token_cast_with_precomputed_sf(bf(4, 256), "e4m3", 32, torch.ones((8, 4)).T), ValueError,
     "per_token_cast_with_precomputed_sf: sf must be row-major"),
    (lambda: Q.per_token_cast(bf(4, 2 * 65), "e2m1", 16), None, None),
])
def test_per_token_cast_errors(rec, call, exc, msg):
    if exc is None:  # accepted
        call()
        assert rec.calls
        return
    with pytest.raises(exc, match=msg):
        call()
    assert not rec.calls


# ---------------- per_block_cast ----------------

@pytest.mark.parametrize("block", [(128, 128), (32, 32), (32, 128)])
@pytest.mark.parametrize("fmt", ["e4m3", "e2m1"])
def test_per_block_cast(rec, block, fmt):
    out, sf = Q.per_block_cast(bf(100, 576), fmt, block, use_tma_aligned_col_major_sf=True, round_sf=True,
                               use_packed_ue8m0=True)
    nm, nk = -(-100 // block[0]), -(-576 // block[1])
    assert sf.shape == (nm, -(-nk // 4)) and sf.stride() == (1, -(-nm // 4) * 4)
    name, g, args = rec.calls[0]
    assert name == "per_block_cast" and g["SBM"] == str(block[0]) and g["SBN"] == str(block[1]) and g["O"] == fmt
    sf2 = Q.per_block_cast_with_sf_only(bf(100, 576), fmt, block)
    assert sf2.shape == (nm, nk) and rec.calls[1][1]["out"] == "absent"
    Q.per_block_cast_with_precomputed_sf(bf(100, 576), fmt, block, torch.ones((nm, nk)))
    assert rec.calls[2][1]["psf"] == "present"


@pytest.mark.parametrize("call, msg", [
    (lambda: Q.per_block_cast(bf(64, 576), "e4m3", (64, 128)), r"per_block_cast: block_size must be \(32 or 128, "),
    (lambda: Q.per_block_cast(bf(64, 100), "e4m3", (32, 32)), "per_block_cast: hidden must be a multiple of 64, got 100"),
    (lambda: Q.per_block_cast(bf(64, 256)[:, :128], "e4m3", (32, 32)), "per_block_cast: x must be contiguous"),
    (lambda: Q.per_block_cast(bf(64, 256), "e5m6", (32, 32)), "per_block_cast: fmt must be 'e4m3' or 'e2m1'"),
    (lambda: Q.per_block_cast(bf(64, 256), "e4m3", 32), "per_block_cast: block_size must be a pair of positive integers"),
    (lambda: Q.per_block_cast_with_precomputed_sf(bf(64, 256), "e4m3", (32, 32), torch.ones((2, 8)),
                                                  use_packed_ue8m0=True),
     "per_block_cast_with_precomputed_sf: precomputed scales are row-major f32"),
])
def test_per_block_cast_errors(rec, call, msg):
    with pytest.raises(ValueError, match=msg):
        call()
    assert not rec.calls


@pytest.mark.parametrize("out_block", [(1, 128), (32, 32), (128, 128)])
def test_per_block_cast_lossless(rec, out_block):
    q = torch.zeros((100, 288), dtype=torch.int8)  # H = 576
    store = torch.zeros((5, 100), dtype=torch.int32)
    out, sf = Q.per_block_cast_lossless((q, store[:, :100].T), "e4m3", (1, 32), out_block,
                                        use_tma_aligned_col_major_sf=True, round_sf=True, use_packed_ue8m0=True)
    assert out.shape == (100, 576) and out.dtype == F8
    nm = -(-100 // out_block[0])
    assert sf.dtype == torch.int32 and sf.stride() == (1, -(-nm // 4) * 4)
    name, g, args = rec.calls[0]
    assert name == "per_block_cast_lossless" and g["OBM"] == str(out_block[0]) and g["isfp"] == "present"


@pytest.mark.parametrize("call, exc, msg", [
    (lambda: Q.per_block_cast_lossless((torch.zeros((4, 64), dtype=F8), torch.zeros((4, 4))), "e4m3", (1, 32), (1, 128)),
     ValueError, "per_block_cast_lossless: x's data must be int8 \\(packed e2m1\\)"),
    (lambda: Q.per_block_cast_lossless((torch.zeros((4, 64), dtype=torch.int8), torch.zeros((4, 4))), "e2m1", (1, 32),
                                       (1, 128)), ValueError, "per_block_cast_lossless: fmt must be 'e4m3'"),
    (lambda: Q.per_block_cast_lossless((torch.zeros((4, 64), dtype=torch.int8), torch.zeros((4, 4))), "e4m3", (1, 32),
                                       (1, 48)), ValueError, "per_block_cast_lossless: block sizes must be powers of two"),
    (lambda: Q.per_block_cast_lossless((torch.zeros((4, 64), dtype=torch.int8), torch.zeros((4, 4))), "e4m3", (2, 32),
                                       (1, 128)), ValueError, "must be a multiple of x_block_size"),
    (lambda: Q.per_block_cast_lossless((torch.zeros((4, 64), dtype=torch.int8), torch.zeros((4, 4))), "e4m3", (1, 32),
                                       (1, 256)), NotImplementedError, "output blocks above 128 x 128"),
    (lambda: Q.per_block_cast_lossless((torch.zeros((4, 128), dtype=torch.int8)[:, :64], torch.zeros((4, 4))), "e4m3",
                                       (1, 32), (1, 128)), ValueError, "x's data must be contiguous"),
    (lambda: Q.per_block_cast_lossless((torch.zeros((4, 8), dtype=torch.int8), torch.zeros((4, 1))), "e4m3",
                                       (1, 16), (1, 16)), ValueError, "hidden \\(logical\\) must be a multiple of 32, got 16"),
])
def test_per_block_cast_lossless_errors(rec, call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()
    assert not rec.calls


# ---------------- cast_back ----------------

@pytest.mark.parametrize("fmt, dt", [("bf16", torch.bfloat16), ("fp32", torch.float32)])
def test_cast_back(rec, fmt, dt):
    q = torch.zeros((100, 576), dtype=F8)
    out = Q.cast_back((q, torch.ones((1, 576))), fmt, (128, 1))
    assert out.dtype == dt and out.shape == (100, 576)
    name, g, args = rec.calls[0]
    assert name == "cast_back" and g["T"] == "e4m3" and g["SBM"] == "128" and g["SBN"] == "1"
    q4 = torch.zeros((100, 288), dtype=torch.int8)
    store = torch.zeros((2, 100), dtype=torch.int32)
    out = Q.per_token_cast_back((q4, store[:, :100].T), fmt, 128)
    assert out.shape == (100, 576)
    g, args = rec.calls[1][1], rec.calls[1][2]
    assert g["T"] == "e2m1" and g["sfp"] == "present" and isinstance(args[3], _runtime.Arg)


def test_cast_back_e5m6(rec):
    q = torch.zeros((7, 864), dtype=torch.uint8)
    out = Q.cast_back((q, torch.ones((7, 1))), "bf16", (1, 576), x_special_fmt="e5m6")
    assert out.shape == (7, 576) and out.dtype == torch.bfloat16
    assert rec.calls[0][0] == "cast_back_e5m6" and rec.calls[0][1]["H"] == "576"


def test_cast_back_empty(rec):
    out = Q.cast_back((torch.zeros((0, 128), dtype=F8), torch.ones((0, 1))), "fp32", (1, 128))
    assert out.shape == (0, 128) and not rec.calls


@pytest.mark.parametrize("call, msg", [
    (lambda: Q.cast_back((torch.zeros((4, 128), dtype=F8), torch.ones((4, 1))), "fp16", (1, 128)),
     "cast_back: fmt must be 'bf16' or 'fp32', got 'fp16'"),
    (lambda: Q.cast_back((torch.zeros((4, 96), dtype=F8), torch.ones((4, 1))), "fp32", (1, 96)),
     "cast_back: hidden \\(logical\\) must be a multiple of 64, got 96"),
    (lambda: Q.cast_back((torch.zeros((4, 128), dtype=F8), torch.ones((4, 2))), "fp32", (1, 128)),
     r"cast_back: x's sf must have shape \(4, 1\), got \(4, 2\)"),
    (lambda: Q.cast_back((torch.zeros((4, 128), dtype=F8), torch.ones((4, 1), dtype=torch.int32)), "fp32", (1, 128),
                         x_special_fmt="e4m3"), "cast_back: x_special_fmt must be None or 'e5m6'"),
    (lambda: Q.cast_back((torch.zeros((4, 100), dtype=torch.uint8), torch.ones((4, 1))), "fp32", (1, 64),
                         x_special_fmt="e5m6"), "cast_back: E5M6 rows hold 12 bytes per 8 values"),
    (lambda: Q.cast_back((torch.zeros((4, 256), dtype=F8)[:, :128], torch.ones((4, 1))), "fp32", (1, 128)),
     "cast_back: x's data must be contiguous"),
    (lambda: Q.cast_back((torch.zeros((8, 128), dtype=F8), torch.ones((2, 4), dtype=torch.int32)), "fp32", (1, 32)),
     "cast_back: packed UE8M0 x's sf \\(int32\\) must be column-major"),
])
def test_cast_back_errors(rec, call, msg):
    with pytest.raises(ValueError, match=msg):
        call()
    assert not rec.calls


# ---------------- per-channel ----------------

def test_per_channel_cast(rec):
    out, sf = Q.per_channel_cast(bf(256, 576), "e4m3", 128, round_sf=True)
    assert out.shape == (256, 576) and sf.shape == (2, 576) and sf.dtype == torch.float32
    name, g, args = rec.calls[0]
    assert name == "per_channel_cast" and g["pos"] == "absent" and g["xs"] == "absent" and g["ROUND"] == "true"


def test_per_channel_cast_fused(rec):
    pos = torch.full((160,), -1, dtype=torch.int32)
    q = torch.zeros((50, 256), dtype=F8)
    out, sf = Q.per_channel_cast_fused((q, torch.ones((50, 2))), "e4m3", 128, num_per_channels=128, pos_to_token=pos)
    assert out.shape == (160, 256) and sf.shape == (2, 256)
    g, args = rec.calls[0][1], rec.calls[0][2]
    assert g["T"] == "e4m3" and g["pos"] == "present" and g["xs"] == "present" and args[3] is pos


@pytest.mark.parametrize("call, msg", [
    (lambda: Q.per_channel_cast(bf(100, 256), "e4m3", 128), "per_channel_cast: num_tokens must be a multiple of 128, got 100"),
    (lambda: Q.per_channel_cast(bf(128, 96), "e4m3", 128), "per_channel_cast: hidden must be a multiple of 64, got 96"),
    (lambda: Q.per_channel_cast(bf(128, 256), "e4m3", 32), "per_channel_cast: num_per_tokens must be 128, got 32"),
    (lambda: Q.per_channel_cast_fused(bf(128, 256), "e4m3", 128, num_per_channels=128),
     "per_channel_cast_fused: num_per_channels is only for QuantTensor input"),
    (lambda: Q.per_channel_cast_fused(bf(128, 256), "e4m3", 128, pos_to_token=torch.zeros(20, dtype=torch.int32)),
     "per_channel_cast_fused: len\\(pos_to_token\\) must be a multiple of 16, got 20"),
    (lambda: Q.per_channel_cast_fused(bf(128, 256), "e4m3", 128, pos_to_token=torch.zeros(16, dtype=torch.int64)),
     "per_channel_cast_fused: pos_to_token must be a contiguous 1-D int32 tensor"),
    (lambda: Q.per_channel_cast_fused((torch.zeros((128, 256), dtype=F8), torch.ones((128, 3))), "e4m3", 128,
                                      num_per_channels=128), r"x's sf must have shape \(128, 2\), got \(128, 3\)"),
])
def test_per_channel_errors(rec, call, msg):
    with pytest.raises(ValueError, match=msg):
        call()
    assert not rec.calls


@pytest.mark.parametrize("npt", [32, 128])
def test_per_channel_cast_and_transpose(rec, fresh_silu_lut, npt):
    out, sf = Q.per_channel_cast_and_transpose(bf(256, 576), "e4m3", npt)
    assert out.shape == (576, 256) and sf.shape == (256 // npt, 576)
    name, g, args = rec.calls[0]
    assert name == "per_channel_cast_transpose" and g["SWIGLU"] == "false" and g["NPT"] == str(npt)
    assert g["outt"] == "present" and args[2] is out
    # whole 128-column tiles: persistent blocks, tiles in y-major order (down the rows)
    Q.per_channel_cast_and_transpose(bf(256, 640), "e4m3", npt)
    g = rec.calls[1][1]
    assert g["YMAJOR"] == "true" and g["STAGES"] in ("2", "3")
    assert g["BK"] == "128" and g["WAVES"] == "1"
    # columns in 64s: with one scale per 32 rows 3 blocks per SM (2 with SwiGLU)
    Q.per_channel_cast_and_transpose(bf(256, 576), "e4m3", npt)
    g = rec.calls[2][1]
    assert g["BK"] == "64" and g.get("WAVES") == ("3" if npt == 32 else None)
    Q.swiglu_forward_and_per_channel_cast_and_transpose(bf(256, 2 * 640), "e4m3", npt)
    assert rec.calls[-1][1].get("YMAJOR", "false") == "false" and rec.calls[-1][1]["WAVES"] == "2"


@pytest.mark.parametrize("without_transpose", [False, True])
@pytest.mark.parametrize("clamp", [None, 0.5])
def test_swiglu_per_channel(rec, fresh_silu_lut, without_transpose, clamp):
    out, sf = Q.swiglu_forward_and_per_channel_cast_and_transpose(bf(128, 2 * 576), "e4m3", 32,
                                                                   without_transpose=without_transpose,
                                                                   swiglu_clamp_value=clamp)
    assert out.shape == ((128, 576) if without_transpose else (576, 128)) and sf.shape == (4, 576)
    g, args = rec.calls[-1][1], rec.calls[-1][2]
    assert g["SWIGLU"] == "true" and g["CLAMP"] == ("true" if clamp else "false")
    assert args[-1] == (clamp or 0.0)


@pytest.fixture
def fresh_silu_lut():
    from tilec.quant import common
    common._silu_luts.clear()   # a table made under the recorder is not a real one
    yield
    common._silu_luts.clear()


def test_swiglu_per_channel_silu_table(rec, fresh_silu_lut):
    sw = Q.swiglu_forward_and_per_channel_cast_and_transpose
    sw(bf(256, 2 * 640), "e4m3", 128)
    assert [c[0] for c in rec.calls] == ["silu_table", "per_channel_cast_transpose"]
    g, args = rec.calls[1][1], rec.calls[1][2]
    assert g["silu_lut"] == "present" and g["STAGES"] == "2" and args[4] is rec.calls[0][2][0]
    assert args[4].shape == (8196,) and args[4].dtype == torch.float32
    # the table is made once per device; untransposed with one scale per 128 rows: persistent too
    sw(bf(256, 2 * 640), "e4m3", 128, without_transpose=True)
    assert rec.calls[2][0] == "per_channel_cast_transpose" and rec.calls[2][1]["silu_lut"] == "present"
    assert rec.calls[2][1]["STAGES"] == "2" and rec.calls[2][2][4] is args[4]
    # one scale per 32 rows, transposed and not: the table too
    sw(bf(256, 2 * 640), "e4m3", 32)
    sw(bf(256, 2 * 640), "e4m3", 32, without_transpose=True)
    assert [c[1]["silu_lut"] for c in rec.calls[3:]] == ["present", "present"]
    # a clamp that is not a bf16 value (the clamped gate would not be one): computed
    sw(bf(256, 2 * 640), "e4m3", 128, swiglu_clamp_value=0.3)
    assert rec.calls[5][1]["silu_lut"] == "absent"
    sw(bf(256, 2 * 640), "e4m3", 128, swiglu_clamp_value=0.5)
    assert rec.calls[6][1]["silu_lut"] == "present"


def test_transpose_cast_errors(rec):
    with pytest.raises(ValueError, match="per_channel_cast_and_transpose: x must be bfloat16, got torch.float32"):
        Q.per_channel_cast_and_transpose(torch.zeros((128, 64)), "e4m3", 32)
    with pytest.raises(ValueError, match="num_per_tokens must be 32 or 128, got 64"):
        Q.per_channel_cast_and_transpose(bf(128, 64), "e4m3", 64)
    with pytest.raises(ValueError, match=r"x.shape\[1\] must be a multiple of 128, got 192"):
        Q.swiglu_forward_and_per_channel_cast_and_transpose(bf(128, 192), "e4m3", 32)
    assert not rec.calls


# ---------------- SwiGLU per-token ----------------

def test_swiglu_forward_per_token(rec):
    n = 48
    x = bf(n, 2 * 1024)
    ptt = torch.zeros(n, dtype=torch.int32)
    w = torch.zeros((12, 4))
    pte = torch.zeros(n, dtype=torch.int32)
    cnt = torch.zeros(3, dtype=torch.int64)
    out, sf = Q.swiglu_forward_and_per_token_cast(x, "e4m3", 128, ptt, w, pte, True, True, True, 10.0, cnt, 1e-3)
    assert out.shape == (n, 1024) and sf.shape == (n, 2) and sf.dtype == torch.int32
    name, g, args = rec.calls[0]
    assert name == "swiglu_per_token_cast" and g["COUNT"] == "true" and g["CLAMP"] == "true"
    assert args[-2:] == (10.0, 1e-3) and args[7] is cnt
    bm, bk, vec = int(g["BM"]), int(g["BK"]), int(g["VEC"])
    assert bk % 128 == 0 and 1024 % bk == 0 and bk % vec == 0
    # sf_clamp_min >= 448 * 2^-126: the kernel's default FASTDIV (the checked corrected product);
    # below it (subnormal quotients) the IEEE division
    assert "FASTDIV" not in g
    Q.swiglu_forward_and_per_token_cast(x, "e4m3", 128, sf_clamp_min=1e-6)
    assert "FASTDIV" not in rec.calls[1][1]
    Q.swiglu_forward_and_per_token_cast(x, "e4m3", 128, sf_clamp_min=448 * 2.0 ** -126)
    assert "FASTDIV" not in rec.calls[2][1]
    Q.swiglu_forward_and_per_token_cast(x, "e4m3", 128, sf_clamp_min=447 * 2.0 ** -126)
    assert rec.calls[3][1]["FASTDIV"] == "false"
    Q.swiglu_forward_and_per_token_cast(x, "e4m3", 128, sf_clamp_min=0.0)
    assert rec.calls[4][1]["FASTDIV"] == "false"


def test_swiglu_tile_shapes():
    from tilec.quant.common import tile_shape
    for bk in (128, 256, 1024, 1280, 3584, 3072):
        bm, vec = tile_shape(bk, max_elems=8192)
        t1 = __import__("math").gcd(256, bk // vec)
        assert t1 * __import__("math").gcd(256 // t1, bm) == 256, bk


@pytest.mark.parametrize("call, msg", [
    (lambda: Q.swiglu_forward_and_per_token_cast(bf(16, 2048), "e4m3", 64),
     r"num_per_channels must be 128 or the half width \(1024\), got 64"),
    (lambda: Q.swiglu_forward_and_per_token_cast(bf(16, 2048), "e4m3", 1024, use_tma_aligned_col_major_sf=True),
     "use_tma_aligned_col_major_sf needs num_per_channels == 128"),
    (lambda: Q.swiglu_forward_and_per_token_cast(bf(16, 2048), "e4m3", 128, clamped_count=torch.zeros(3, dtype=torch.int64)),
     "clamped_count needs swiglu_clamp_value"),
    (lambda: Q.swiglu_forward_and_per_token_cast(bf(16, 2048), "e4m3", 128, pos_to_token_topk=torch.zeros(16, dtype=torch.int32)),
     "pos_to_token_topk needs topk_weights"),
    (lambda: Q.swiglu_forward_and_per_token_cast(bf(16, 2048), "e4m3", 128, pos_to_expert=torch.zeros(15, dtype=torch.int32)),
     r"pos_to_expert must have 16 entries \(one per row of x\), got 15"),
    (lambda: Q.swiglu_forward_and_per_token_cast(bf(16, 2000), "e4m3", 128),
     "each half of x must have a multiple of 128 columns"),
])
def test_swiglu_forward_errors(rec, call, msg):
    with pytest.raises(ValueError, match=msg):
        call()
    assert not rec.calls


def test_swiglu_backward(rec):
    n, hh, k, t = 32, 2048, 4, 10
    xq = torch.zeros((n, 2 * hh), dtype=F8)
    xs = torch.ones((n, 2 * hh // 128))
    out, (gq, gsf), xg, wg = Q.swiglu_backward_and_per_token_cast(
        (xq, xs), bf(n, hh), torch.ones((t, k)), torch.zeros(n, dtype=torch.int32),
        torch.zeros((t, k), dtype=torch.int32), 128, round_sf=True, swiglu_clamp_value=0.5)
    assert out.shape == (n, hh) and out.dtype == torch.bfloat16 and gq.shape == (n, 2 * hh) and gsf.shape == (n, 32)
    assert xg.dtype == torch.bfloat16 and wg.shape == (t, k) and torch.equal(wg, torch.zeros((t, k)))
    name, g, args = rec.calls[0]
    assert name == "swiglu_backward_per_token_cast" and g["G"] == "128" and g["CLAMP"] == "true" and args[-1] == 0.5


def test_swiglu_backward_empty_weight_grad_zero(rec):
    _, _, _, wg = Q.swiglu_backward_and_per_token_cast(
        (torch.zeros((0, 256), dtype=F8), torch.ones((0, 2))), bf(0, 128), torch.ones((3, 2)),
        torch.zeros(0, dtype=torch.int32), torch.zeros((3, 2), dtype=torch.int32), 128)
    assert torch.equal(wg, torch.zeros((3, 2))) and not rec.calls


def test_swiglu_backward_errors(rec):
    ok = dict(grad_out=bf(8, 256), weight=torch.ones((4, 2)), pos_to_token_topk=torch.zeros(8, dtype=torch.int32),
              token_topk_to_pos=torch.zeros((4, 2), dtype=torch.int32))
    x = (torch.zeros((8, 512), dtype=F8), torch.ones((8, 4)))
    with pytest.raises(ValueError, match="num_per_channels must be 32 or 128, got 64"):
        Q.swiglu_backward_and_per_token_cast(x, num_per_channels=64, **ok)
    with pytest.raises(ValueError, match="grad_out must be bfloat16"):
        Q.swiglu_backward_and_per_token_cast(x, num_per_channels=128, **{**ok, "grad_out": torch.zeros((8, 256))})
    with pytest.raises(ValueError, match="token_topk_to_pos must be a contiguous int32 tensor of weight's shape"):
        Q.swiglu_backward_and_per_token_cast(x, num_per_channels=128,
                                             **{**ok, "token_topk_to_pos": torch.zeros((4, 3), dtype=torch.int32)})
    with pytest.raises(ValueError, match=r"x's sf must be a contiguous float32 tensor of shape \(8, 4\)"):
        Q.swiglu_backward_and_per_token_cast((x[0], torch.ones((8, 2))), num_per_channels=128, **ok)
    assert not rec.calls


# ---------------- unpack ----------------

def test_unpack_from_e2m1fn_x2():
    x = torch.tensor([[0x18, 0x7F]], dtype=torch.uint8)
    y = Q.unpack_from_e2m1fn_x2(x)
    assert y.shape == (1, 4)
    assert y.tolist() == [[-0.0, 0.5, -6.0, 6.0]] and str(y[0, 0].item()) == "-0.0"
    with pytest.raises(ValueError, match="^unpack_from_e2m1fn_x2: x must be int8 or uint8"):
        Q.unpack_from_e2m1fn_x2(torch.zeros(2, dtype=torch.int16))
    with pytest.raises(ValueError, match="0-d"):
        Q.unpack_from_e2m1fn_x2(torch.tensor(3, dtype=torch.uint8))


def test_module_surface():
    for name in ("per_token_cast", "per_token_cast_with_sf_only", "per_token_cast_with_precomputed_sf", "per_block_cast",
                 "per_block_cast_with_sf_only", "per_block_cast_with_precomputed_sf", "per_block_cast_lossless",
                 "cast_back", "per_token_cast_back", "per_channel_cast", "per_channel_cast_fused",
                 "per_channel_cast_and_transpose", "swiglu_forward_and_per_token_cast",
                 "swiglu_forward_and_per_channel_cast_and_transpose", "swiglu_backward_and_per_token_cast",
                 "unpack_from_e2m1fn_x2"):
        assert callable(getattr(Q, name)), name
    assert Q.common.get_logical_hidden(64, torch.int8) == 128 and Q.types.QuantTensor
