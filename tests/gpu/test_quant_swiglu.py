"""SwiGLU fused casts against tilec.torch (spec quant-transpose.md §2.15-§2.17): forward with
per-token cast (MoE rows, weights, clamp counts), forward with per-channel cast (transposed or
not), and the backward with per-token cast of the gradient."""
import pytest
import torch

import tilec
from tilec.testing import expand_rows, generate_fused_mapping
from quant_common import assert_equal, dirty_allocator

MOE = [(2, 72), (9, 256)]


@pytest.mark.parametrize("clamp", [None, 10.0, 0.5])
@pytest.mark.parametrize("flags", [(False, True, False), (True, True, True)], ids=lambda f: "col%d-round%d-packed%d" % f)
@pytest.mark.parametrize("n_mode", [128, "H"])
@pytest.mark.parametrize("with_weights", [False, True])
@pytest.mark.parametrize("enable_pte", [False, True])
@pytest.mark.parametrize("hh", [1024, 3584])
@pytest.mark.parametrize("moe", MOE, ids=lambda m: "topk%d-e%d" % m)
def test_swiglu_forward_per_token(moe, hh, enable_pte, with_weights, n_mode, flags, clamp):
    col, rnd, packed = flags
    n = hh if n_mode == "H" else 128
    if (packed and with_weights) or (col and n == hh):
        pytest.skip("combination not in TileKernels' grid")
    topk, experts = moe
    t = 4001
    pos_to_token, ptt, pte, _ = generate_fused_mapping(t, topk, experts, 16)
    x = expand_rows(torch.randn((t, 2 * hh), device="cuda").bfloat16(), pos_to_token)
    weights = torch.randn((t, topk), device="cuda")
    cnt = torch.zeros(3, dtype=torch.int64, device="cuda") if clamp is not None else None
    kw = dict(use_tma_aligned_col_major_sf=col, round_sf=rnd, use_packed_ue8m0=packed)
    dirty_allocator()
    out, sf = tilec.quant.swiglu_forward_and_per_token_cast(
        x, "e4m3", n, ptt if with_weights else None, weights if with_weights else None, pte if enable_pte else None,
        swiglu_clamp_value=clamp, clamped_count=cnt, **kw)
    ref_cnt = torch.zeros(3, dtype=torch.int64, device="cuda") if clamp is not None else None
    act = tilec.torch.swiglu_forward(x, ptt if with_weights else None, weights if with_weights else None, clamp,
                                     ref_cnt)
    pad = (pte < 0)[:, None]
    if enable_pte:
        act = torch.where(pad, torch.zeros((), device="cuda"), act)
    ref, ref_sf = tilec.torch.cast(act, "e4m3", (1, n), **kw)
    # rows without an expert are masked on both sides (TileKernels leaves them unwritten)
    zero = torch.zeros((), device="cuda")
    assert_equal(torch.where(pad, zero, out.float()), torch.where(pad, zero, ref.float()))
    assert sf.shape == ref_sf.shape and sf.stride() == ref_sf.stride()
    if packed:
        rows = (pte >= 0)
        assert torch.equal(sf[rows], ref_sf[rows])
    else:
        assert_equal(torch.where(pad, zero, sf), torch.where(pad, zero, ref_sf))
    if enable_pte:  # our kernel writes zeros there
        assert torch.all(out.float()[pte < 0] == 0)
    if cnt is not None and n != hh:
        assert torch.equal(cnt, ref_cnt)


@pytest.mark.parametrize("clamp", [None, 10.0, 0.5])
@pytest.mark.parametrize("without_transpose", [False, True])
@pytest.mark.parametrize("rnd", [False, True])
@pytest.mark.parametrize("npt", [32, 128])
@pytest.mark.parametrize("hh", [576, 7168])
@pytest.mark.parametrize("t", [0, 4096])
def test_swiglu_forward_per_channel(t, hh, npt, rnd, without_transpose, clamp):
    x = torch.randn((t, 2 * hh), device="cuda").bfloat16()
    dirty_allocator()
    out, sf = tilec.quant.swiglu_forward_and_per_channel_cast_and_transpose(
        x, "e4m3", npt, round_sf=rnd, without_transpose=without_transpose, swiglu_clamp_value=clamp)
    act = tilec.torch.swiglu_forward(x, swiglu_clamp_value=clamp).bfloat16()
    ref, ref_sf = tilec.torch.cast(act, "e4m3", (npt, 1), round_sf=rnd)
    assert_equal(out, ref if without_transpose else ref.T.contiguous())
    assert_equal(sf, ref_sf)


@pytest.mark.parametrize("clamp", [None, 10.0, 0.5])
@pytest.mark.parametrize("rnd", [False, True])
@pytest.mark.parametrize("n", [32, 128])
@pytest.mark.parametrize("hh", [2048, 7168])
@pytest.mark.parametrize("moe", MOE, ids=lambda m: "topk%d-e%d" % m)
def test_swiglu_backward(moe, hh, n, rnd, clamp):
    topk, experts = moe
    t = 4001
    pos_to_token, ptt, _, ttp = generate_fused_mapping(t, topk, experts, n)
    x = tilec.quant.per_token_cast(expand_rows(torch.randn((t, 2 * hh), device="cuda").bfloat16(), pos_to_token),
                                   "e4m3", n)
    N = ptt.numel()
    grad = torch.randn((N, hh), device="cuda").bfloat16()
    weights = torch.rand((t, topk), device="cuda")
    dirty_allocator()
    out, (gq, gsf), xg, wg = tilec.quant.swiglu_backward_and_per_token_cast(x, grad, weights, ptt, ttp, n, rnd, clamp)
    r_out, r_xg, r_wg = tilec.torch.swiglu_backward(x, grad, weights, ptt, ttp, n, clamp)
    r_q, r_sf = tilec.torch.cast(r_xg, "e4m3", (1, n), round_sf=rnd)
    assert_equal(out, r_out.bfloat16())
    assert_equal(xg, r_xg.bfloat16())
    assert_equal(gq, r_q)
    assert_equal(gsf, r_sf)
    torch.testing.assert_close(wg, r_wg, atol=1e-4, rtol=1e-4)
