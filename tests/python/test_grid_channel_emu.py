"""The per-channel and SwiGLU casts of tilec.quant on the CPU emulator over TileKernels' whole
hidden-size grid (576, 2048, 2560, 3072, 4096, 6144, 7168) crossed with every option combination
of its test grids (spec quant-transpose.md §3, moe-engram-mhc.md §0.5), at token counts a CPU can
afford: every case runs 0 tokens and one of 1, 67 (ragged) and 300 (multiples of 128 where the
function needs them), given in turn (grid_common.balance / spread), so that every function meets
all four counts. For the functions on the fused MoE layout the count is that of the tokens routed
to this rank, and a case's count is one whose expanded rows fit a CPU's budget (the routing
configuration of the fewest rows takes any), so that every hidden size still meets every count.
Byte for byte against the tilec.torch references where the spec compares bytes, within its
tolerance elsewhere. Each (hidden size, options) pair is its own kernel specialisation, so this
is also the check that the compiler accepts every configuration the wrappers ask for.

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
import tilec  # noqa: E402
from tilec import moe, quant as Q  # noqa: E402
from tilec.testing import assert_equal  # noqa: E402
from grid_common import (FLAGS, HIDDEN, MOE, TOKENS, TOKENS128, balance, check_coverage, cid, grid,  # noqa: E402
                         hidden_sizes, kw, num_sms_values, routed, sample, within)
from grid_common import restore_num_sms  # noqa: E402, F401 (a fixture)


# ---- per-channel casts (§2.12-§2.14) ---------------------------------------------------------

PER_CHANNEL = grid(HIDDEN, [False, True], tokens=TOKENS128)


@pytest.mark.parametrize("h, rnd, t", PER_CHANNEL, ids=cid)
def test_per_channel_cast(h, rnd, t):
    for rows in (t, 0):
        x = sample(rows, h, torch.bfloat16)
        out, sf = Q.per_channel_cast(x, "e4m3", 128, round_sf=rnd)
        ref, ref_sf = R.cast(x, "e4m3", (128, 1), round_sf=rnd)
        assert_equal(out, ref)
        assert_equal(sf, ref_sf)


PER_CHANNEL_T = grid(HIDDEN, [True, False], [32, 128], tokens=TOKENS128)


@pytest.mark.parametrize("h, rnd, npt, t", PER_CHANNEL_T, ids=cid)
def test_per_channel_cast_and_transpose(h, rnd, npt, t):
    for rows in (t, 0):
        x = sample(rows, h, torch.bfloat16)
        out, sf = Q.per_channel_cast_and_transpose(x, "e4m3", npt, round_sf=rnd)
        ref, ref_sf = R.cast(x, "e4m3", (npt, 1), round_sf=rnd)
        assert_equal(out, ref.T.contiguous())
        assert_equal(sf, ref_sf)


# cast back x rounding, per_channel_cast_fused's options besides the routing
FUSED_OPTS = list(itertools.product([False, True], [False, True]))
# no gather: 4096 tokens in TileKernels, multiples of 128 here (the kernel needs them)
FUSED_PLAIN = grid(hidden_sizes(128), FUSED_OPTS, tokens=TOKENS128)
# TileKernels' MoE grid, crossed: hidden size x routing configuration x the four option
# combinations; the token count (routed here) in turn among those whose expanded rows
# (128-aligned: about experts x 128 from 67 tokens on) x hidden are at most 4M elements, any for
# CHEAPEST_MOE
FUSED_MOE = balance(list(itertools.product(hidden_sizes(128), MOE, FUSED_OPTS)), TOKENS,
                    fits=within(4e6, 1, lambda c: 128, lambda c: c[0]))


@pytest.mark.parametrize("h, opts, t", FUSED_PLAIN, ids=cid)
def test_per_channel_cast_fused(h, opts, t):
    cast_back, rnd = opts
    for rows in (t, 0):
        x = sample(rows, h, torch.bfloat16)
        if cast_back:
            x = Q.per_token_cast(x, "e4m3", 128)
        n = 128 if cast_back else None
        out, sf = Q.per_channel_cast_fused(x, "e4m3", 128, round_sf=rnd, num_per_channels=n)
        ref, ref_sf = R.per_channel_cast_fused(x, 128, n, rnd, None)
        assert_equal(out, ref)
        assert_equal(sf, ref_sf)


@pytest.mark.parametrize("h, moe_cfg, opts, t", FUSED_MOE, ids=cid)
def test_per_channel_cast_fused_moe(h, moe_cfg, opts, t):
    cast_back, rnd = opts
    for tokens in (t, 0):
        idx = routed(*moe_cfg, tokens, seed=h)
        _, pos, _, ttp, *_ = moe.get_fused_mapping(idx, moe_cfg[1], 0, 128)
        x = moe.expand_to_fused(sample(tokens, h, torch.bfloat16), ttp, pos)
        if cast_back:
            x = Q.per_token_cast(x, "e4m3", 128)
        n = 128 if cast_back else None
        out, sf = Q.per_channel_cast_fused(x, "e4m3", 128, round_sf=rnd, num_per_channels=n, pos_to_token=pos)
        ref, ref_sf = R.per_channel_cast_fused(x, 128, n, rnd, pos)
        assert_equal(out, ref)
        assert_equal(sf, ref_sf)


# ---- SwiGLU fused casts (§2.15-§2.17) --------------------------------------------------------

SWIGLU_CT = grid(HIDDEN, [32, 128], [True, False], [True, False], [None, 10.0, 0.5], tokens=(128, 256))


@pytest.mark.parametrize("h, npt, without_transpose, rnd, clamp, t", SWIGLU_CT, ids=cid)
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


# swiglu_forward_and_per_token_cast's options (TileKernels' grid: not packed with weights, not
# column-major with n = Hh); the routing configuration given in turn (balance), so that each
# configuration meets every hidden size and every option value (asserted in test_grid); then the
# token count (routed here) in turn among those whose expanded rows x 2Hh are at most 3M elements,
# any for CHEAPEST_MOE
SWIGLU_FWD = balance(balance([c for c in itertools.product([h // 2 for h in hidden_sizes(256)], [True, False],
                                                           [True, False], [128, "H"], FLAGS, [None, 10.0, 0.5])
                              if not ((c[4][2] and c[2]) or (c[4][0] and c[3] == "H"))], MOE),
                     TOKENS, fits=within(3e6, 6, lambda c: 16, lambda c: 2 * c[0]))


@pytest.mark.parametrize("hh, pte, weights, n_mode, flags, clamp, moe_cfg, t", SWIGLU_FWD, ids=cid)
def test_swiglu_forward_and_per_token_cast(hh, pte, weights, n_mode, flags, clamp, moe_cfg, t, restore_num_sms):
    n = hh if n_mode == "H" else 128
    K, E, _ = moe_cfg
    for tokens in (t, 0):
        idx = routed(*moe_cfg, tokens, seed=hh)
        p2e, _, ptt, *_ = moe.get_fused_mapping(idx, E, 0, 16)   # padding rows, at a CPU's cost
        x = sample(ptt.numel(), 2 * hh, torch.bfloat16, scale=4.0)
        w = torch.randn((tokens, K), generator=torch.Generator().manual_seed(hh + tokens))   # negative weights too
        skip = p2e < 0
        x_ref = x.clone()
        if pte:
            x_ref[skip] = 0.0   # the reference counts every row; zero rows hit no clamp
        ref_cnt = torch.zeros(3, dtype=torch.int64) if clamp is not None else None
        with cuda_math():
            act = R.swiglu_forward(x_ref, ptt if weights else None, w if weights else None, clamp, ref_cnt)
        ref, ref_sf = R.cast(act, "e4m3", (1, n), **kw(flags))
        keep = ~skip if pte else torch.ones_like(skip)   # rows without an expert: unspecified in the spec
        for num_sms in num_sms_values():   # generate_num_sms(): results and counts must not depend on it
            tilec.set_num_sms(num_sms)
            cnt = torch.zeros(3, dtype=torch.int64) if clamp is not None else None
            out, sf = Q.swiglu_forward_and_per_token_cast(x, "e4m3", n, ptt if weights else None,
                                                          w if weights else None, p2e if pte else None,
                                                          swiglu_clamp_value=clamp, clamped_count=cnt, **kw(flags))
            assert_equal(out[keep], ref[keep])
            assert sf.shape == ref_sf.shape and sf.dtype == ref_sf.dtype
            assert sf.numel() == 0 or sf.stride() == ref_sf.stride()   # as assert_equal: no strides when empty
            assert torch.equal(sf[keep], ref_sf[keep])
            if cnt is not None:
                assert torch.equal(cnt, ref_cnt)


# swiglu_backward_and_per_token_cast's options; the routing configuration given in turn (balance),
# so that each configuration meets every hidden size and every option value (asserted in
# test_grid); then the token count (routed here) in turn among those whose expanded rows x 2Hh
# are at most 4M elements, any for CHEAPEST_MOE: the mapping aligns every expert to n rows, so the
# configurations of 32 experts mostly get 1 token
SWIGLU_BWD = balance(balance(list(itertools.product(hidden_sizes(256), [32, 128], [False, True], [None, 10.0, 0.5])),
                             MOE), TOKENS, fits=within(4e6, 4, lambda c: c[1], lambda c: 2 * c[0]))


@pytest.mark.parametrize("h, n, rnd, clamp, moe_cfg, t", SWIGLU_BWD, ids=cid)
def test_swiglu_backward_and_per_token_cast(h, n, rnd, clamp, moe_cfg, t):
    K, E, ranks = moe_cfg
    for tokens in (t, 0):
        idx = routed(K, E, ranks, tokens, seed=h + n)
        weights = torch.rand((tokens, K))
        _, pos_to_token, ptt, ttp, *_ = moe.get_fused_mapping(idx, E, 0, n)
        x = moe.expand_to_fused(sample(tokens, 2 * h, torch.bfloat16, scale=4.0), ttp, pos_to_token)
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
        assert wg.shape == r_wg.shape and wg.dtype == r_wg.dtype
        # TileKernels' tolerance (1e-4 absolute and relative), the relative part of the sum's size
        # before cancellation: weight_grad is an fp32 sum in any order, and sample()'s large and
        # clamped values make terms of 100 and more whose sums can cancel to near 0
        scale = torch.maximum(r_wg.abs(), _term_norm(x, grad, weights, ptt, n, clamp))
        assert torch.all((wg - r_wg).abs() <= 1e-4 + 1e-4 * scale), (wg - r_wg).abs().max()


def _term_norm(x, grad, weights, ptt, n, clamp):
    """Per (token, k) of weight_grad: the 2-norm of its terms g * act (the size of a sum of terms
    of random signs), 0 where unmapped."""
    full = R.cast_back(x, "fp32", (1, n))
    hh = full.shape[1] // 2
    xv, yv = full[:, :hh], full[:, hh:]
    if clamp is not None:
        xv, yv = xv.clamp(max=clamp), yv.clamp(-clamp, clamp)
    norm = (grad.float() * (xv / (1.0 + torch.exp(-xv)) * yv)).double().square().sum(dim=1).sqrt().float()
    out = torch.zeros(weights.shape).view(-1)
    mapped = ptt >= 0
    out[ptt[mapped].long()] = norm[mapped]
    return out.view(weights.shape)


# ---- the grid itself -------------------------------------------------------------------------

@pytest.mark.parametrize("name, cases, counts, moe_pos", [
    ("per_channel_cast", PER_CHANNEL, TOKENS128, None),
    ("per_channel_cast_and_transpose", PER_CHANNEL_T, TOKENS128, None),
    ("per_channel_cast_fused", FUSED_PLAIN, TOKENS128, None),
    ("per_channel_cast_fused_moe", FUSED_MOE, TOKENS, 1),
    ("swiglu_forward_and_per_channel_cast_and_transpose", SWIGLU_CT, (128, 256), None),
    ("swiglu_forward_and_per_token_cast", SWIGLU_FWD, TOKENS, 6),
    ("swiglu_backward_and_per_token_cast", SWIGLU_BWD, TOKENS, 4)], ids=lambda v: v if isinstance(v, str) else "")
def test_grid(name, cases, counts, moe_pos):
    """Every function meets every token count (and 0 in every case); where the routing
    configuration is given in turn or crossed, every configuration meets every hidden size and
    every option value, every option value every hidden size, and every hidden size every token
    count."""
    check_coverage(name, cases, counts, moe_pos)
