"""tilec.transpose and every function of tilec.moe on the CPU emulator over TileKernels' whole
hidden-size grid (576, 2048, 2560, 3072, 4096, 6144, 7168) crossed with every option combination
of its test grids (spec quant-transpose.md §3, moe-engram-mhc.md §0.5), at token counts a CPU can
afford: every case runs 0 tokens and one of 1, 67 (ragged) and 300 (multiples of 64 for the
transposes), given in turn (grid_common.balance / spread); get_fused_mapping (with group_count,
aux_fi and mask_indices_by_tp), normalize_weight and inplace_unique_group_indices run all four in
every case. For the MoE functions the count is that of the tokens routed to this rank, and where
a reference is costly a case's count is one that fits a CPU's budget (the routing configuration
of the fewest rows takes any), so that every hidden size still meets every count. Byte for byte
against the tilec.torch references where the spec compares bytes, within its tolerance elsewhere.
Each (hidden size, options) pair is its own kernel specialisation, so this is also the check that
the compiler accepts every configuration the wrappers ask for.

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
from grid_common import (CHEAPEST_MOE, DT, FLAGS, HIDDEN, MOE, TOKENS, balance, check_coverage, cid, grid,  # noqa: E402
                         hidden_sizes, kw, num_sms_values, routed, sample)
from grid_common import restore_num_sms  # noqa: E402, F401 (a fixture)


# ---- transposes (§2.19-§2.20) ----------------------------------------------------------------

TRANSPOSE = grid(HIDDEN, [torch.float8_e4m3fn, torch.bfloat16], tokens=(64, 192, 320))


@pytest.mark.parametrize("h, dtype, t", TRANSPOSE, ids=cid)
def test_transpose(h, dtype, t):
    x = (sample(t, h) * 100).to(dtype)
    assert_equal(TR.transpose(x), x.T.contiguous())
    assert_equal(TR.transpose(x[:0]), x[:0].T.contiguous())


BATCHED = grid(HIDDEN, [8, 32], [torch.float8_e4m3fn, torch.bfloat16, torch.float32], tokens=(64, 128))


@pytest.mark.parametrize("h, experts, dtype, t", BATCHED, ids=cid)
def test_batched_transpose(h, experts, dtype, t):
    t = 64 if experts == 32 else t
    x = (torch.randn((experts, t, h), generator=torch.Generator().manual_seed(h)) * 100).to(dtype)
    assert_equal(TR.batched_transpose(x), x.transpose(1, 2).contiguous())
    for empty in (x[:, :0], x[:0]):   # 0 rows; 0 matrices
        assert_equal(TR.batched_transpose(empty), empty.transpose(1, 2).contiguous())


# ---- MoE with a hidden size (moe-engram-mhc.md §1) -------------------------------------------

# every hidden size crossed with every routing configuration, the token count (routed here) in
# turn (balance)
EXPAND = balance(list(itertools.product(HIDDEN, MOE)), TOKENS)


@pytest.mark.parametrize("h, moe_cfg, t", EXPAND, ids=cid)
def test_expand_to_fused(h, moe_cfg, t):
    for tokens in (t, 0):
        idx = routed(*moe_cfg, tokens, seed=h)
        p2e, _, _, ttp, *_ = moe.get_fused_mapping(idx, moe_cfg[1], 0, 16)   # TileKernels' alignment
        x = sample(tokens, h, torch.bfloat16)
        assert_equal(moe.expand_to_fused(x, ttp, p2e), R.expand_to_fused(x, ttp, p2e))


# TileKernels' whole grid, crossed: hidden size x routing configuration x scales per group x
# layout flags; the token count in turn, 300 tokens where tokens x hidden is at most 1M (the input's
# per_token_cast is the larger cost) and for CHEAPEST_MOE
EXPAND_SF = balance(list(itertools.product(HIDDEN, MOE, [32, 128], FLAGS)), TOKENS,
                    fits=lambda c, t: c[1] == CHEAPEST_MOE or t * c[0] <= 1e6)


@pytest.mark.parametrize("h, moe_cfg, npc, flags, t", EXPAND_SF, ids=cid)
def test_expand_to_fused_with_sf(h, moe_cfg, npc, flags, t):
    for tokens in (t, 0):
        idx = routed(*moe_cfg, tokens, seed=h + npc)
        p2e, _, _, ttp, *_ = moe.get_fused_mapping(idx, moe_cfg[1], 0, 16)
        q, sf = Q.per_token_cast(sample(tokens, h, torch.bfloat16), "e4m3", npc, **kw(flags))
        x = (q, sf.contiguous())   # as TileKernels' test passes them
        out, osf = moe.expand_to_fused_with_sf(x, npc, ttp, p2e, use_tma_aligned_col_major_sf=flags[0])
        rout, rsf = R.expand_to_fused_with_sf(x, npc, ttp, p2e, use_tma_aligned_col_major_sf=flags[0])
        assert_equal(out, rout)
        assert_equal(osf, rsf)


# hidden size x reduce_fused's options, crossed; the routing configuration given in turn
# (balance), so that each configuration meets every hidden size and every option value (asserted
# in test_grid); then the token count (routed here) in turn, within a CPU's budget of tokens x
# top-k x hidden (the reference's exact fused multiply-add costs the most), any for CHEAPEST_MOE
REDUCE = balance(balance(list(itertools.product(hidden_sizes(256), [True, False], ["f32", "bf16"], [False, True],
                                                [True, False])), MOE), TOKENS,
                 fits=lambda c, t: c[5] == CHEAPEST_MOE or t * c[5][0] * c[0] <= 1.5e6)


@pytest.mark.parametrize("h, weights, in_dt, out_fp8, with_sf, moe_cfg, t", REDUCE, ids=cid)
def test_reduce_fused(h, weights, in_dt, out_fp8, with_sf, moe_cfg, t):
    K, E, ranks = moe_cfg
    for tokens in (t, 0):
        idx = routed(*moe_cfg, tokens, seed=h)
        p2e, _, _, ttp, *_ = moe.get_fused_mapping(idx, E, 0, 1)   # TileKernels' alignment
        x = sample(p2e.shape[0], h, DT[in_dt])
        w = torch.rand((tokens, K)) if weights else None
        xin = (x, torch.randn(x.shape[0])) if with_sf else x
        fmt = "e4m3" if out_fp8 else ""
        sf = torch.rand(1) + 0.5 if out_fp8 else None
        assert_equal(moe.reduce_fused(xin, w, ttp, fmt, sf=sf), R.reduce_fused(xin, w, ttp, fmt, sf=sf))


# ---- MoE gates and routing: TileKernels' configurations ---------------------------------------

TOPK = [(72, 6), (32, 6), (64, 6), (96, 6), (16, 6), (36, 6), (108, 6), (128, 6), (144, 6), (256, 8)]
TOP2 = [(0, 0, 72, 1, 6), (0, 0, 32, 2, 6), (0, 0, 64, 2, 6), (0, 0, 96, 2, 6), (0, 0, 16, 2, 6), (0, 0, 36, 2, 6),
        (0, 0, 108, 2, 6), (0, 0, 128, 2, 6), (0, 0, 144, 2, 6), (8, 8, 256, 2, 8), (8, 4, 256, 2, 8)]
TOPK_CASES = grid(TOPK)


@pytest.mark.parametrize("E, K, t", [c[0] + c[1:] for c in TOPK_CASES], ids=cid)
def test_topk_gate(E, K, t):
    for rows in (t, 0):
        s = sample(rows, E)
        assert_equal(moe.topk_gate(s, K), R.stable_topk(s, K))


TOPK_SUM = grid([(e, g) for e in (72, 256) for g in (4, 8, 12, 16) if e % g == 0], [1, 2], [2, 4])


@pytest.mark.parametrize("E, G, ns, nk, t", [c[0] + c[1:] for c in TOPK_SUM], ids=cid)
def test_topk_sum_and_topk_group_idx(E, G, ns, nk, t):
    for rows in (t, 0):
        s = sample(rows, E).view(rows, G, E // G)
        assert_equal(moe.topk_sum_and_topk_group_idx(s, ns, nk), R.topk_sum_and_topk_group_idx(s, ns, nk))


def _shared_valid(cfg):
    ng, ntg, E, S, K = cfg
    return S > 0 and K % S == 0 and E % (K // S) == 0


# TileKernels' loops, crossed: configuration x shared experts as routed (where valid) x scoring x
# fixed routing x 0 or 10 padded (masked) tokens; tp_rank 0 or 1 in turn (balance: each meets
# every value of the others), then the token count in turn
TOP2_CASES = balance(balance(list(itertools.product(
    [(cfg, shared) for cfg in TOP2 for shared in (False, True) if not shared or _shared_valid(cfg)],
    ["sigmoid", "sqrtsoftplus", "softmax"], [False, True], [0, 10])), [0, 1]), TOKENS)


@pytest.mark.parametrize("cfg_shared, scoring, fix, padded, tp_rank, t", TOP2_CASES, ids=cid)
def test_top2_sum_gate(cfg_shared, scoring, fix, padded, tp_rank, t):
    (ng, ntg, E, S, K), shared = cfg_shared
    S = S if shared else 0
    for rows in (t, 0):
        logits = sample(rows, E)
        bias = sample(1, E, seed=2)[0] * 0.1
        g = torch.Generator().manual_seed(E + rows)
        extra = {}
        if shared:   # a random logical -> physical expert map, X = 4 replicas at most
            extra["to_physical_map"] = torch.randint(0, E + 4, (E + S, 5), dtype=torch.int32, generator=g)
            extra["logical_count"] = torch.randint(1, 6, (E + S,), dtype=torch.int32, generator=g)
        if padded:
            extra["mask"] = torch.arange(rows) < rows - padded   # the last 10 tokens are not routed
        if fix:
            unmapped = torch.randint(0, E, (rows, K), generator=g)
            extra["fix_routing_mask"] = torch.ones(rows, dtype=torch.bool)
        else:
            unmapped = torch.zeros((rows, K), dtype=torch.int64)
        args = (K, ntg, ng, shared, S, 1.5, 0, 4, tp_rank, 2, scoring)
        got_un, want_un = unmapped.clone(), unmapped.clone()
        idx, w = moe.top2_sum_gate(logits, bias, *args, unmapped_topk_idx=got_un, **extra)
        ridx, rw = R.top2_sum_gate(logits, bias, *args, unmapped_topk_idx=want_un, **extra)
        assert_equal(idx, ridx)
        assert_equal(got_un, want_un)
        assert w.shape == rw.shape and w.dtype == rw.dtype
        assert torch.allclose(w, rw, rtol=1e-6, atol=1e-8)  # the CPU's exp/log1p differ from CUDA's


@pytest.mark.parametrize("moe_cfg, align", list(itertools.product(MOE, [64, 128])), ids=cid)
def test_get_fused_mapping_and_counts(moe_cfg, align, restore_num_sms):
    K, E, ranks = moe_cfg
    for t in (0,) + TOKENS:
        idx = routed(*moe_cfg, t, seed=K + E)
        want = R.get_fused_mapping(idx, E, 0, align)
        for num_sms in num_sms_values():   # generate_num_sms()
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
            assert_equal(moe.mask_indices_by_tp(idx, n, ranks, tp_rank, ntp),
                         R.mask_indices_by_tp(idx, n, ranks, tp_rank, ntp))


@pytest.mark.parametrize("K", [2, 6, 8, 9])
def test_normalize_weight(K):
    for rows in (0,) + TOKENS:
        w = torch.rand((rows, K))
        for a, b in zip(moe.normalize_weight(w), R.normalize_weight(w)):
            assert_equal(a, b)


@pytest.mark.parametrize("moe_cfg, groups", [(m, g) for m in MOE for g in (8, 16, 72) if m[1] * m[2] % g == 0],
                         ids=cid)
def test_inplace_unique_group_indices(moe_cfg, groups, restore_num_sms):
    K, E, ranks = moe_cfg
    for t in (0,) + TOKENS:
        idx = routed(*moe_cfg, t, seed=groups)
        g = torch.where(idx >= 0, idx * groups // (E * ranks), idx)
        want = g.clone()
        R.inplace_unique_group_indices(want, groups)
        for num_sms in num_sms_values():   # generate_num_sms(): the result must not depend on it
            tilec.set_num_sms(num_sms)
            got = g.clone()
            moe.inplace_unique_group_indices(got, groups)
            assert_equal(got, want)


# ---- the grid itself -------------------------------------------------------------------------

@pytest.mark.parametrize("name, cases, counts, moe_pos", [
    ("transpose", TRANSPOSE, (64, 192, 320), None),
    ("batched_transpose", BATCHED, (64, 128), None),
    ("expand_to_fused", EXPAND, TOKENS, 1),
    ("expand_to_fused_with_sf", EXPAND_SF, TOKENS, 1),
    ("reduce_fused", REDUCE, TOKENS, 5),
    ("topk_gate", TOPK_CASES, TOKENS, None),
    ("topk_sum_and_topk_group_idx", TOPK_SUM, TOKENS, None),
    ("top2_sum_gate", TOP2_CASES, TOKENS, 0)], ids=lambda v: v if isinstance(v, str) else "")
def test_grid(name, cases, counts, moe_pos):
    """Every function meets every token count (and 0 in every case; the functions not listed
    here run all four in each case); where the routing configuration is given in turn or crossed,
    every configuration meets every hidden size and every option value, every option value every
    hidden size, and every hidden size every token count."""
    check_coverage(name, cases, counts, moe_pos)
