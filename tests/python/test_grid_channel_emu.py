"""The per-channel and SwiGLU casts of tilec.quant on the CPU emulator over
TileKernels' whole hidden-size grid (576, 2048, 2560, 3072, 4096, 6144, 7168) crossed with every
option combination of its test grids (spec quant-transpose.md §3, moe-engram-mhc.md §0.5), at
token counts a CPU can afford: each case runs one of 1, 67 (ragged) and 300 rows (multiples of
128 or 64 where the function needs them) and, where it is cheap, 0 rows. Byte for byte against
the tilec.torch references where the spec compares bytes, within its tolerance elsewhere. Each
(hidden size, options) pair is its own kernel specialisation, so this is also the check that the
compiler accepts every configuration the wrappers ask for.

TILEC_BUILD_PYTHON: the package to test (default build/python)."""
import itertools
import os
import sys

import pytest
import torch

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(_root, "build", "python")))

import tilec.torch as R  # noqa: E402
from emu_math import cuda_math  # noqa: E402
from tilec import moe, quant as Q  # noqa: E402
from tilec.testing import assert_equal  # noqa: E402
from grid_common import FLAGS, HIDDEN, MOE, TOKENS128, cid, grid, hidden_sizes, kw, routing, sample  # noqa: E402


# ---- per-channel casts (§2.12-§2.14) ---------------------------------------------------------

@pytest.mark.parametrize("h, rnd, t", grid(HIDDEN, [False, True], tokens=TOKENS128), ids=cid)
def test_per_channel_cast(h, rnd, t):
    for rows in (t, 0):
        x = sample(rows, h, torch.bfloat16)
        out, sf = Q.per_channel_cast(x, "e4m3", 128, round_sf=rnd)
        ref, ref_sf = R.cast(x, "e4m3", (128, 1), round_sf=rnd)
        assert_equal(out, ref)
        assert_equal(sf, ref_sf)


@pytest.mark.parametrize("h, rnd, npt, t", grid(HIDDEN, [True, False], [32, 128], tokens=TOKENS128), ids=cid)
def test_per_channel_cast_and_transpose(h, rnd, npt, t):
    for rows in (t, 0):
        x = sample(rows, h, torch.bfloat16)
        out, sf = Q.per_channel_cast_and_transpose(x, "e4m3", npt, round_sf=rnd)
        ref, ref_sf = R.cast(x, "e4m3", (npt, 1), round_sf=rnd)
        assert_equal(out, ref.T.contiguous())
        assert_equal(sf, ref_sf)


def _fused_cases():
    out = []
    for i, (h, cast_back, rnd) in enumerate(itertools.product(hidden_sizes(128), [False, True], [False, True])):
        out.append((h, cast_back, rnd, None))          # no gather: 4096 tokens in TileKernels, 256 here
        out.append((h, cast_back, rnd, MOE[i % len(MOE)]))
    return out


@pytest.mark.parametrize("h, cast_back, rnd, moe_cfg", _fused_cases(), ids=cid)
def test_per_channel_cast_fused(h, cast_back, rnd, moe_cfg):
    pos = None
    if moe_cfg is None:
        x = sample(256, h, torch.bfloat16)
    else:
        idx = routing(*moe_cfg, tokens=4, seed=h)
        _, pos, _, ttp, *_ = moe.get_fused_mapping(idx, moe_cfg[1], 0, 128)
        x = moe.expand_to_fused(sample(idx.shape[0], h, torch.bfloat16), ttp, pos)
    if cast_back:
        x = Q.per_token_cast(x, "e4m3", 128)
    n = 128 if cast_back else None
    out, sf = Q.per_channel_cast_fused(x, "e4m3", 128, round_sf=rnd, num_per_channels=n, pos_to_token=pos)
    ref, ref_sf = R.per_channel_cast_fused(x, 128, n, rnd, pos)
    assert_equal(out, ref)
    assert_equal(sf, ref_sf)


# ---- SwiGLU fused casts (§2.15-§2.17) --------------------------------------------------------

@pytest.mark.parametrize("h, npt, without_transpose, rnd, clamp, t",
                         grid(HIDDEN, [32, 128], [True, False], [True, False], [None, 10.0, 0.5], tokens=(128, 256)),
                         ids=cid)
def test_swiglu_forward_and_per_channel_cast_and_transpose(h, npt, without_transpose, rnd, clamp, t):
    for rows in (t, 0):
        x = sample(rows, 2 * h, torch.bfloat16, scale=4.0)   # |x| > 10 for a few elements: both clamps act
        out, sf = Q.swiglu_forward_and_per_channel_cast_and_transpose(
            x, "e4m3", npt, round_sf=rnd, without_transpose=without_transpose, swiglu_clamp_value=clamp)
        with cuda_math():
            act = R.swiglu_forward(x, swiglu_clamp_value=clamp).bfloat16()
        ref, ref_sf = R.cast(act, "e4m3", (npt, 1), round_sf=rnd)
        assert_equal(out, ref if without_transpose else ref.T.contiguous())
        assert_equal(sf, ref_sf)


def _swiglu_fwd_cases():
    out = []
    for hh, pte, weights, n_mode, flags, clamp in itertools.product(
            [h // 2 for h in hidden_sizes(256)], [True, False], [True, False], [128, "H"], FLAGS, [None, 10.0, 0.5]):
        if (flags[2] and weights) or (flags[0] and n_mode == "H"):
            continue  # not in TileKernels' grid
        out.append((hh, pte, weights, n_mode, flags, clamp))
    return [c + (MOE[i % len(MOE)],) for i, c in enumerate(out)]


@pytest.mark.parametrize("hh, pte, weights, n_mode, flags, clamp, moe_cfg", _swiglu_fwd_cases(), ids=cid)
def test_swiglu_forward_and_per_token_cast(hh, pte, weights, n_mode, flags, clamp, moe_cfg):
    n = hh if n_mode == "H" else 128
    K, E, _ = moe_cfg
    idx = routing(*moe_cfg, tokens=2, seed=hh)
    T = idx.shape[0]
    p2e, _, ptt, *_ = moe.get_fused_mapping(idx, E, 0, 16)   # padding rows, at a CPU's cost
    x = sample(ptt.numel(), 2 * hh, torch.bfloat16, scale=4.0)
    w = torch.rand((T, K))
    cnt = torch.zeros(3, dtype=torch.int64) if clamp is not None else None
    out, sf = Q.swiglu_forward_and_per_token_cast(x, "e4m3", n, ptt if weights else None, w if weights else None,
                                                  p2e if pte else None, swiglu_clamp_value=clamp, clamped_count=cnt,
                                                  **kw(flags))
    skip = p2e < 0
    x_ref = x.clone()
    if pte:
        x_ref[skip] = 0.0   # the reference counts every row; zero rows hit no clamp
    ref_cnt = torch.zeros(3, dtype=torch.int64) if clamp is not None else None
    with cuda_math():
        act = R.swiglu_forward(x_ref, ptt if weights else None, w if weights else None, clamp, ref_cnt)
    ref, ref_sf = R.cast(act, "e4m3", (1, n), **kw(flags))
    keep = ~skip if pte else torch.ones_like(skip)   # rows without an expert: unspecified in the spec
    assert_equal(out[keep], ref[keep])
    assert sf.shape == ref_sf.shape and sf.stride() == ref_sf.stride() and sf.dtype == ref_sf.dtype
    assert torch.equal(sf[keep], ref_sf[keep])
    if cnt is not None:
        assert torch.equal(cnt, ref_cnt)


@pytest.mark.parametrize("h, n, rnd, clamp", list(itertools.product(hidden_sizes(256), [32, 128], [False, True],
                                                                   [None, 10.0, 0.5])), ids=cid)
def test_swiglu_backward_and_per_token_cast(h, n, rnd, clamp):
    K, E, ranks = MOE[(h // 256 + n + int(rnd)) % len(MOE)]
    idx = routing(K, E, ranks, tokens=2, seed=h + n)
    T = idx.shape[0]
    weights = torch.rand((T, K))
    _, pos_to_token, ptt, ttp, *_ = moe.get_fused_mapping(idx, E, 0, n)
    x = moe.expand_to_fused(sample(T, 2 * h, torch.bfloat16, scale=4.0), ttp, pos_to_token)
    x = Q.per_token_cast(x, "e4m3", n)
    grad = sample(x[0].shape[0], h, torch.bfloat16, seed=1)
    out, (gq, gsf), xg, wg = Q.swiglu_backward_and_per_token_cast(x, grad, weights, ptt, ttp, n, rnd, clamp)
    with cuda_math():
        r_out, r_xg, r_wg = R.swiglu_backward(x, grad, weights, ptt, ttp, n, clamp)
    r_q, r_sf = R.cast(r_xg, "e4m3", (1, n), round_sf=rnd)
    assert_equal(out, r_out.bfloat16())
    assert_equal(xg, r_xg.bfloat16())
    assert_equal(gq, r_q)
    assert_equal(gsf, r_sf)
    torch.testing.assert_close(wg, r_wg, atol=1e-4, rtol=1e-4)
