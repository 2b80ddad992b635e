"""tilec.transpose and every function of tilec.moe on the CPU emulator over
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

import tilec  # noqa: E402
import tilec.torch as R  # noqa: E402
from tilec import moe, quant as Q, transpose as TR  # noqa: E402
from tilec.testing import assert_equal  # noqa: E402
from grid_common import DT, FLAGS, HIDDEN, MOE, TOKENS, cid, grid, hidden_sizes, kw, routing, sample  # noqa: E402


# ---- transposes (§2.19-§2.20) ----------------------------------------------------------------

@pytest.mark.parametrize("h, dtype, t", grid(HIDDEN, [torch.float8_e4m3fn, torch.bfloat16], tokens=(64, 192, 320)),
                         ids=cid)
def test_transpose(h, dtype, t):
    x = (sample(t, h) * 100).to(dtype)
    assert_equal(TR.transpose(x), x.T.contiguous())
    assert TR.transpose(x[:0]).shape == (h, 0)


@pytest.mark.parametrize("h, experts, dtype, t",
                         grid(HIDDEN, [8, 32], [torch.float8_e4m3fn, torch.bfloat16, torch.float32], tokens=(64, 128)),
                         ids=cid)
def test_batched_transpose(h, experts, dtype, t):
    t = 64 if experts == 32 else t
    x = (torch.randn((experts, t, h), generator=torch.Generator().manual_seed(h)) * 100).to(dtype)
    assert_equal(TR.batched_transpose(x), x.transpose(1, 2).contiguous())


# ---- MoE with a hidden size (moe-engram-mhc.md §1) -------------------------------------------

@pytest.mark.parametrize("h, moe_cfg", list(itertools.product(HIDDEN, MOE)), ids=cid)
def test_expand_to_fused(h, moe_cfg):
    K, E, ranks = moe_cfg
    idx = routing(*moe_cfg, tokens=3, seed=h)
    p2e, _, _, ttp, *_ = moe.get_fused_mapping(idx, E, 0, 64)
    x = sample(idx.shape[0], h, torch.bfloat16)
    assert_equal(moe.expand_to_fused(x, ttp, p2e), R.expand_to_fused(x, ttp, p2e))


@pytest.mark.parametrize("h, npc, flags, t", grid(HIDDEN, [32, 128], FLAGS, tokens=range(len(MOE))), ids=cid)
def test_expand_to_fused_with_sf(h, npc, flags, t):
    K, E, ranks = moe_cfg = MOE[t]
    idx = routing(*moe_cfg, tokens=3, seed=h + npc)
    p2e, _, _, ttp, *_ = moe.get_fused_mapping(idx, E, 0, 64)
    q, sf = Q.per_token_cast(sample(idx.shape[0], h, torch.bfloat16), "e4m3", npc, **kw(flags))
    x = (q, sf.contiguous())   # as TileKernels' test passes them
    out, osf = moe.expand_to_fused_with_sf(x, npc, ttp, p2e, use_tma_aligned_col_major_sf=flags[0])
    rout, rsf = R.expand_to_fused_with_sf(x, npc, ttp, p2e, use_tma_aligned_col_major_sf=flags[0])
    assert_equal(out, rout)
    assert_equal(osf, rsf)


@pytest.mark.parametrize("h, weights, in_dt, out_fp8, with_sf, t",
                         grid(hidden_sizes(256), [True, False], ["f32", "bf16"], [False, True], [True, False],
                              tokens=range(len(MOE))), ids=cid)
def test_reduce_fused(h, weights, in_dt, out_fp8, with_sf, t):
    K, E, ranks = moe_cfg = MOE[t]
    idx = routing(*moe_cfg, tokens=3, seed=h)
    T = idx.shape[0]
    p2e, _, _, ttp, *_ = moe.get_fused_mapping(idx, E, 0, 64)
    x = sample(p2e.shape[0], h, DT[in_dt])
    w = torch.rand((T, K)) if weights else None
    xin = (x, torch.rand(x.shape[0])) if with_sf else x
    fmt = "e4m3" if out_fp8 else ""
    sf = torch.rand(1) + 0.5 if out_fp8 else None
    assert_equal(moe.reduce_fused(xin, w, ttp, fmt, sf=sf), R.reduce_fused(xin, w, ttp, fmt, sf=sf))


# ---- MoE gates and routing: TileKernels' configurations ---------------------------------------

TOPK = [(72, 6), (32, 6), (64, 6), (96, 6), (16, 6), (36, 6), (108, 6), (128, 6), (144, 6), (256, 8)]
TOP2 = [(0, 0, 72, 1, 6), (0, 0, 32, 2, 6), (0, 0, 64, 2, 6), (0, 0, 96, 2, 6), (0, 0, 16, 2, 6), (0, 0, 36, 2, 6),
        (0, 0, 108, 2, 6), (0, 0, 128, 2, 6), (0, 0, 144, 2, 6), (8, 8, 256, 2, 8), (8, 4, 256, 2, 8)]


@pytest.mark.parametrize("E, K, t", [c + (TOKENS[i % 3],) for i, c in enumerate(TOPK)], ids=cid)
def test_topk_gate(E, K, t):
    for rows in (t, 0):
        s = sample(rows, E)
        assert_equal(moe.topk_gate(s, K), R.stable_topk(s, K))


@pytest.mark.parametrize("E, G, ns, nk, t", [(e, g, ns, nk) + (TOKENS[i % 3],) for i, (e, g, ns, nk) in enumerate(
    (e, g, ns, nk) for e in (72, 256) for g in (4, 8, 12, 16) if e % g == 0 for ns in (1, 2) for nk in (2, 4))],
    ids=cid)
def test_topk_sum_and_topk_group_idx(E, G, ns, nk, t):
    s = sample(t, E).view(t, G, E // G)
    assert_equal(moe.topk_sum_and_topk_group_idx(s, ns, nk), R.topk_sum_and_topk_group_idx(s, ns, nk))


@pytest.mark.parametrize("cfg, scoring", list(itertools.product(TOP2, ["sigmoid", "sqrtsoftplus", "softmax"])),
                         ids=cid)
def test_top2_sum_gate(cfg, scoring):
    ng, ntg, E, S, K = cfg
    T = 67
    logits = sample(T, E)
    bias = sample(1, E, seed=2)[0] * 0.1
    shared = S > 0 and K % S == 0 and E % (K // S) == 0   # as TileKernels' test: shared-as-routed where valid
    S = S if shared else 0
    extra = {}
    if shared:   # the logical -> physical expert map, X = 4 replicas at most
        g = torch.Generator().manual_seed(E)
        extra["to_physical_map"] = torch.randint(0, E + 4, (E + S, 5), dtype=torch.int32, generator=g)
        extra["logical_count"] = torch.randint(1, 6, (E + S,), dtype=torch.int32, generator=g)
    args = (K, ntg, ng, shared, S, 1.5, 3, 4, 1, 2, scoring)
    idx, w = moe.top2_sum_gate(logits, bias, *args, **extra)
    ridx, rw = R.top2_sum_gate(logits, bias, *args, **extra)
    assert_equal(idx, ridx)
    assert torch.allclose(w, rw, rtol=1e-6, atol=1e-8)  # the CPU's exp/log1p differ from CUDA's


@pytest.fixture
def restore_num_sms():
    yield
    tilec.config._num_sms = None


@pytest.mark.parametrize("moe_cfg, align", list(itertools.product(MOE, [64, 128])), ids=cid)
def test_get_fused_mapping_and_counts(moe_cfg, align, restore_num_sms):
    K, E, ranks = moe_cfg
    idx = routing(*moe_cfg, tokens=40, seed=K + E)
    want = R.get_fused_mapping(idx, E, 0, align)
    for num_sms in (tilec.get_device_num_sms() - 20, tilec.get_device_num_sms()):   # generate_num_sms()
        tilec.set_num_sms(num_sms)
        got = moe.get_fused_mapping(idx, E, 0, align)
        for g, w in zip(got[:7], want[:7]):
            assert_equal(g, w)
        assert got[7] == want[7]
        assert_equal(moe.group_count(idx, E), R.group_count(idx, E))
        for aux in (1, K):
            assert_equal(moe.aux_fi(idx, E, aux), R.aux_fi(idx, E, aux))
    n = E * ranks   # all experts of all EP ranks, as TileKernels' test
    for ntp in (2, 4, 8):
        tp_rank = (K + E) % ntp
        assert_equal(moe.mask_indices_by_tp(idx, n, ranks, tp_rank, ntp), R.mask_indices_by_tp(idx, n, ranks, tp_rank, ntp))


@pytest.mark.parametrize("K", [2, 6, 8, 9])
def test_normalize_weight(K):
    for rows in (300, 0):
        w = torch.rand((rows, K))
        for a, b in zip(moe.normalize_weight(w), R.normalize_weight(w)):
            assert_equal(a, b)


@pytest.mark.parametrize("moe_cfg, groups", [(m, g) for m in MOE for g in (8, 16, 72) if m[1] * m[2] % g == 0],
                         ids=cid)
def test_inplace_unique_group_indices(moe_cfg, groups):
    K, E, ranks = moe_cfg
    idx = routing(*moe_cfg, tokens=20, seed=groups)
    g = torch.where(idx >= 0, idx * groups // (E * ranks), idx)
    got, want = g.clone(), g.clone()
    moe.inplace_unique_group_indices(got, groups)
    R.inplace_unique_group_indices(want, groups)
    assert_equal(got, want)
