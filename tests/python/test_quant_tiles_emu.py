"""The quantisation and transpose kernels on the CPU emulator (CPU tensors run there) against the
tilec.torch references, byte for byte, aimed at the performance choices: every tile and thread
count the wrappers pick (per-run scales, 128-thread SwiGLU, 512-thread blocks, E5M6 chunks, 4 x
1024 cast-back tiles), exact FP4 / FP8 rounding ties, and the padding the kernels write.

TILEC_BUILD_PYTHON: the package to test (default build/python); TILEC_KERNELS: the kernel
library (default: the checkout's kernels.tl)."""
import os
import sys

import pytest

torch = pytest.importorskip("torch")

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(_root, "build", "python")))
import tilec.quant as Q  # noqa: E402
import tilec.torch as R  # noqa: E402
import tilec.transpose as TR  # noqa: E402
from tilec.testing import assert_equal  # noqa: E402

PK = dict(use_tma_aligned_col_major_sf=True, round_sf=True, use_packed_ue8m0=True)
FLAGS = [dict(use_tma_aligned_col_major_sf=False, round_sf=True, use_packed_ue8m0=False), PK,
         dict(use_tma_aligned_col_major_sf=False, round_sf=False, use_packed_ue8m0=False)]
FLAG_IDS = ["row-round", "packed", "row-ieee"]


def data(t, h, dtype=torch.bfloat16, seed=0):
    """Random rows, plus rows that hit the FP4 / FP8 rounding ties exactly: with amax 6 (or 448)
    and power-of-two scales, x * sf_inv is x itself."""
    g = torch.Generator().manual_seed(seed + t * 7 + h)
    x = torch.randn((t, h), generator=g) * 3
    ties = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, -0.25, -2.5, -5.0, 0.0, -0.0, 0.5, 3.0, 4.0])
    if t > 2:
        x[1] = ties.repeat(h // 16 + 1)[:h]
        x[2] = ties.repeat(h // 16 + 1)[:h] * 64
    return x.to(dtype)


@pytest.mark.parametrize("flags", FLAGS, ids=FLAG_IDS)
@pytest.mark.parametrize("fmt, n", [("e4m3", 128), ("e2m1", 32), ("e2m1", 128)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("t, h", [(37, 576), (9, 2048)])
def test_per_token_cast(t, h, dtype, fmt, n, flags):
    x = data(t, h, dtype)
    out, sf = Q.per_token_cast(x, fmt, n, **flags)
    ref, ref_sf = R.cast(x, fmt, (1, n), **flags)
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)


@pytest.mark.parametrize("fmt", ["e4m3", "e2m1"])
@pytest.mark.parametrize("in_fmt, xbs", [("e4m3", (128, 128)), ("e2m1", (32, 32))])
def test_per_token_cast_quant_input(in_fmt, xbs, fmt):
    xq = R.cast(data(130, 2048), in_fmt, xbs, **PK)
    out, sf = Q.per_token_cast(xq, fmt, 128, x_block_size=xbs, **PK)
    ref, ref_sf = R.cast(xq, fmt, (1, 128), x_block_size=xbs, **PK)
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)


@pytest.mark.parametrize("flags", FLAGS[:2], ids=FLAG_IDS[:2])
@pytest.mark.parametrize("fmt", ["e4m3", "e2m1"])
@pytest.mark.parametrize("block", [(128, 128), (32, 32)])
def test_per_block_cast(block, fmt, flags):
    x = data(161, 576)
    out, sf = Q.per_block_cast(x, fmt, block, **flags)
    ref, ref_sf = R.cast(x, fmt, block, **flags)
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)


@pytest.mark.parametrize("out_block", [(1, 128), (32, 32), (128, 128)])
@pytest.mark.parametrize("in_flags", FLAGS[:2], ids=FLAG_IDS[:2])
@pytest.mark.parametrize("in_block", [(1, 32), (1, 16)])   # whole 16-byte runs per input scale, and not
def test_per_block_cast_lossless(in_block, in_flags, out_block):
    g = torch.Generator().manual_seed(5)
    x = torch.randn((161, 576), generator=g) * torch.exp2(torch.randint(-3, 4, (161, 18), generator=g).float()
                                                         ).repeat_interleave(32, dim=1)
    xq = R.cast(x, "e2m1", in_block, **in_flags)
    out = Q.per_block_cast_lossless(xq, "e4m3", in_block, out_block, **PK)
    assert out[0].shape == (161, 576)
    assert_equal(R.cast_back(out, "fp32", out_block), R.cast_back(xq, "fp32", in_block))


@pytest.mark.parametrize("out_fmt", ["fp32", "bf16"])
@pytest.mark.parametrize("fmt, n", [("e4m3", 128), ("e2m1", 32)])
@pytest.mark.parametrize("flags", FLAGS[:2], ids=FLAG_IDS[:2])
@pytest.mark.parametrize("h", [576, 2048])      # default tiles; 4 x 1024 tiles with 32-element runs
def test_per_token_cast_back(h, flags, fmt, n, out_fmt):
    xq = R.cast(data(37, h), fmt, (1, n), **flags)
    assert_equal(Q.per_token_cast_back(xq, out_fmt, n), R.cast_back(xq, out_fmt, (1, n)))


@pytest.mark.parametrize("rnd", [False, True])
@pytest.mark.parametrize("t, h", [(256, 576), (128, 2048)])
def test_per_channel_cast(t, h, rnd):
    x = data(t, h)
    out, sf = Q.per_channel_cast(x, "e4m3", 128, rnd)
    ref, ref_sf = R.cast(x, "e4m3", (128, 1), round_sf=rnd)
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)


@pytest.mark.parametrize("h", [576, 512])    # 128 x 64 and 128 x 128 tiles
@pytest.mark.parametrize("npt", [32, 128])
def test_per_channel_cast_and_transpose(npt, h):
    x = data(256, h)
    out, sf = Q.per_channel_cast_and_transpose(x, "e4m3", npt, True)
    ref, ref_sf = R.cast(x, "e4m3", (npt, 1), round_sf=True)
    assert_equal(out, ref.T.contiguous())
    assert_equal(sf, ref_sf)


@pytest.mark.parametrize("without_transpose", [False, True])
@pytest.mark.parametrize("clamp", [None, 0.5])
def test_swiglu_forward_per_channel(clamp, without_transpose):
    x = data(256, 2 * 576)
    out, sf = Q.swiglu_forward_and_per_channel_cast_and_transpose(x, "e4m3", 128, round_sf=True,
                                                                 without_transpose=without_transpose,
                                                                 swiglu_clamp_value=clamp)
    act = R.swiglu_forward(x, swiglu_clamp_value=clamp).bfloat16()
    ref, ref_sf = R.cast(act, "e4m3", (128, 1), round_sf=True)
    assert_equal(out, ref if without_transpose else ref.T.contiguous())
    assert_equal(sf, ref_sf)


@pytest.mark.parametrize("n", [128, 1024])
def test_swiglu_forward_per_token(n):
    x = data(37, 2 * 1024)
    kw = PK if n == 128 else FLAGS[0]
    out, sf = Q.swiglu_forward_and_per_token_cast(x, "e4m3", n, **kw)
    ref, ref_sf = R.cast(R.swiglu_forward(x), "e4m3", (1, n), **kw)
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)


@pytest.mark.parametrize("dtype", [torch.int8, torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("m, n", [(128, 576), (192, 256), (512, 768)])
def test_transpose(m, n, dtype):
    x = (torch.randn((m, n)) * 50).to(dtype)
    assert_equal(TR.transpose(x), x.T.contiguous())


@pytest.mark.parametrize("clamp", [None, 0.5])
@pytest.mark.parametrize("n", [32, 128])
def test_swiglu_backward(n, clamp):
    t, topk, hh = 19, 2, 512
    g = torch.Generator().manual_seed(n)
    N = t * topk + 3                                     # three padding rows (-1)
    ptt = torch.cat([torch.randperm(t * topk, generator=g), torch.full((3,), -1)]).int()
    ttp = torch.empty(t * topk, dtype=torch.int32)
    ttp[ptt[:t * topk].long()] = torch.arange(t * topk, dtype=torch.int32)
    x = Q.per_token_cast(torch.randn((N, 2 * hh), generator=g).bfloat16(), "e4m3", n)
    grad = torch.randn((N, hh), generator=g).bfloat16()
    weights = torch.rand((t, topk), generator=g)
    ttp = ttp.view(t, topk)
    out, (gq, gsf), xg, wg = Q.swiglu_backward_and_per_token_cast(x, grad, weights, ptt, ttp, n, True, clamp)
    r_out, r_xg, r_wg = R.swiglu_backward(x, grad, weights, ptt, ttp, n, clamp)
    r_q, r_sf = R.cast(r_xg, "e4m3", (1, n), round_sf=True)
    assert_equal(out, r_out.bfloat16())
    assert_equal(xg, r_xg.bfloat16())
    assert_equal(gq, r_q)
    assert_equal(gsf, r_sf)
    torch.testing.assert_close(wg, r_wg, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("clamp", [None, 0.5])
def test_swiglu_forward_per_token_moe(clamp):
    """Top-k weights, padding rows (pos_to_expert < 0) and the clamp counters."""
    t, topk, hh = 23, 2, 1024
    g = torch.Generator().manual_seed(3)
    N = t * topk + 5
    ptt = torch.cat([torch.randperm(t * topk, generator=g), torch.full((5,), -1)]).int()
    pte = torch.where(ptt >= 0, ptt % 4, torch.full_like(ptt, -1)).int()
    x = torch.randn((N, 2 * hh), generator=g).bfloat16()
    x[ptt < 0] = 0                                       # padding rows are zero (as expand_rows makes them)
    weights = torch.randn((t, topk), generator=g)
    cnt = torch.zeros(3, dtype=torch.int64) if clamp is not None else None
    kw = FLAGS[0]
    out, sf = Q.swiglu_forward_and_per_token_cast(x, "e4m3", 128, ptt, weights, pte, swiglu_clamp_value=clamp,
                                                  clamped_count=cnt, **kw)
    ref_cnt = torch.zeros(3, dtype=torch.int64) if clamp is not None else None
    act = R.swiglu_forward(x, ptt, weights, clamp, ref_cnt)
    pad = (pte < 0)[:, None]
    act = torch.where(pad, torch.zeros(()), act)
    ref, ref_sf = R.cast(act, "e4m3", (1, 128), **kw)
    assert_equal(out, ref)
    assert_equal(torch.where(pad, torch.zeros(()), sf), torch.where(pad, torch.zeros(()), ref_sf))
    if cnt is not None:
        assert torch.equal(cnt, ref_cnt)


@pytest.mark.parametrize("flags", FLAGS[:2], ids=FLAG_IDS[:2])
@pytest.mark.parametrize("h", [576, 4096, 7168])   # one group per thread; 32-element chunks, 128 or 224 threads a row
def test_per_token_cast_e5m6(h, flags):
    x = data(37, h)
    out, sf = Q.per_token_cast(x, "e5m6", h, **flags)
    ref, ref_sf = R.cast_to_e5m6(x, h, **flags)
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)


@pytest.mark.parametrize("kind", ["per_token", "per_token_fp4", "per_block", "per_block_32"])
def test_packed_scale_padding_written(kind, monkeypatch):
    """Packed UE8M0 storage is allocated uncleared for these kernels: its padding rows and groups
    must come out zero whatever the memory held."""
    empty = torch.empty

    def dirty(*a, **k):
        t = empty(*a, **k)
        if t.dtype == torch.int32:
            t.fill_(0x5A5A5A5A)
        return t
    monkeypatch.setattr(torch, "empty", dirty)
    x = data(37, 4 * 128 + 64)                           # 37 rows, 5 or 9 groups of 128 / 64 columns
    if kind == "per_token":
        _, sf = Q.per_token_cast(x, "e4m3", 128, **PK)
        nm = 37
    elif kind == "per_token_fp4":
        _, sf = Q.per_token_cast(x, "e2m1", 64, **PK)
        nm = 37
    else:
        bs = (128, 128) if kind == "per_block" else (32, 32)
        _, sf = Q.per_block_cast(x, "e4m3", bs, **PK)
        nm = -(-37 // bs[0])
    rows = -(-nm // 4) * 4
    assert rows > nm
    store = torch.as_strided(sf, (sf.shape[1], rows), (rows, 1))   # the int32 storage behind the view
    assert torch.equal(store[:, nm:], torch.zeros_like(store[:, nm:]))
