"""tilec.moe gates on the GPU against the PyTorch references (tilec.torch), on TileKernels' grids
(spec moe-engram-mhc.md §1.1-§1.3): topk_gate, topk_sum_and_topk_group_idx, top2_sum_gate.
Indices are compared bit for bit and in pick order (stronger than the spec's per-row sort: the
references use the same CUDA exp / log1p / sqrt, so the ranking scores are identical); weights
with torch.allclose (rtol 1e-5, atol 1e-8) as the spec says. Tests named *small* are the
compute-sanitizer subset of scripts/gpu_moe.sh."""
import pytest
import torch

import tilec
from tilec.testing import assert_equal
import tilec.torch as ref

TOKENS = [4001, 128, 0]
TOPK_CFG = [(72, 6), (32, 6), (64, 6), (96, 6), (16, 6), (36, 6), (108, 6), (128, 6), (144, 6), (256, 8)]


@pytest.mark.parametrize("t", TOKENS)
@pytest.mark.parametrize("e, k", TOPK_CFG, ids=lambda v: str(v))
def test_topk_gate(t, e, k):
    s = torch.randn((t, e), device="cuda")
    if t > 10:
        s[3] = 0.0                         # all ties: ascending indices
        s[5, : e // 2] = float("-inf")     # -inf never repeats an index
        s[7, ::3] = 1.0                    # partial ties
    assert_equal(tilec.moe.topk_gate(s, k), ref.stable_topk(s, k))


def test_topk_gate_small():
    s = torch.randn((5, 40), device="cuda")
    s[1] = 2.0
    assert_equal(tilec.moe.topk_gate(s, 9), ref.stable_topk(s, 9))


GROUPS = [(72, 4), (72, 8), (72, 12), (256, 4), (256, 8), (256, 16)]


@pytest.mark.parametrize("t", [4001, 128])
@pytest.mark.parametrize("nk", [2, 4])
@pytest.mark.parametrize("ns", [1, 2])
@pytest.mark.parametrize("e, g", GROUPS, ids=lambda v: str(v))
def test_topk_sum_and_topk_group_idx(t, e, g, ns, nk):
    s = torch.randn((t, g, e // g), device="cuda")
    s[1] = 0.5                 # every group ties
    s[2, :, :2] = 3.0          # a repeated maximum counts twice
    assert_equal(tilec.moe.topk_sum_and_topk_group_idx(s, ns, nk), ref.topk_sum_and_topk_group_idx(s, ns, nk))


def test_topk_sum_and_topk_group_idx_small():
    s = torch.randn((3, 8, 32), device="cuda")
    assert_equal(tilec.moe.topk_sum_and_topk_group_idx(s, 2, 4), ref.topk_sum_and_topk_group_idx(s, 2, 4))
    assert tilec.moe.topk_sum_and_topk_group_idx(s[:0], 2, 4).shape == (0, 4)


# (num_groups, num_topk_groups, E, S, K) of TileKernels' test; routed_scaling_factor 1.5, 4 EP
# ranks, 2 TP ranks, ep_rank 0, 32 extra experts when a map is used
GATES = [(0, 0, 72, 1, 6), (0, 0, 32, 2, 6), (0, 0, 64, 2, 6), (0, 0, 96, 2, 6), (0, 0, 16, 2, 6), (0, 0, 36, 2, 6),
         (0, 0, 108, 2, 6), (0, 0, 128, 2, 6), (0, 0, 144, 2, 6), (8, 8, 256, 2, 8), (8, 4, 256, 2, 8)]
X = 32


def run_gate(logits, bias, cfg, shared, scoring, tp_rank, padded, fix, ep_rank=0):
    ng, ntg, E, S, K = cfg
    T = logits.shape[0]
    kw = {}
    if padded:
        mask = torch.ones(T, dtype=torch.bool, device="cuda")
        mask[T - padded:] = False
        kw["mask"] = mask
    if shared:
        kw["to_physical_map"] = torch.arange(E + S, dtype=torch.int32, device="cuda")[:, None].repeat(1, 1 + X)
        kw["logical_count"] = torch.ones(E + S, dtype=torch.int32, device="cuda")
    if fix:
        g = torch.Generator(device="cuda").manual_seed(1)
        unm = torch.randint(0, E, (T, K), generator=g, device="cuda")
        kw["fix_routing_mask"] = torch.ones(T, dtype=torch.bool, device="cuda")
    else:
        unm = torch.zeros((T, K), dtype=torch.int64, device="cuda")
    u1, u2 = unm.clone(), unm.clone()
    args = (K, ntg, ng, shared, S, 1.5, ep_rank, 4, tp_rank, 2, scoring)
    idx, w = tilec.moe.top2_sum_gate(logits, bias, *args, unmapped_topk_idx=u1, **kw)
    ridx, rw = ref.top2_sum_gate(logits, bias, *args, unmapped_topk_idx=u2, **kw)
    assert_equal(idx, ridx)
    assert_equal(u1, u2)
    assert w.shape == rw.shape and torch.allclose(w, rw, rtol=1e-5, atol=1e-8), (w - rw).abs().max()


@pytest.mark.parametrize("scoring", ["sigmoid", "sqrtsoftplus", "softmax"])
@pytest.mark.parametrize("cfg", GATES, ids=lambda c: "g%d-%d-e%d-s%d-k%d" % c)
def test_top2_sum_gate(cfg, scoring):
    ng, ntg, E, S, K = cfg
    shared_ok = K % S == 0 and E % (K // S) == 0
    for t in (4001, 128):
        logits = torch.randn((t, E), device="cuda")
        bias = torch.randn(E, device="cuda") * 0.1
        # (a) shared experts as routed where valid, 10 padded tokens, both TP ranks
        for tp in (0, 1):
            run_gate(logits, bias, cfg, shared_ok, scoring, tp, 10, False)
        # (b) routed only, no padding, fixed routing for every token
        run_gate(logits, bias, cfg, False, scoring, 1, 0, True)


def test_top2_sum_gate_stability():
    for cfg in GATES:
        ng, ntg, E, S, K = cfg
        z = torch.zeros((4001, E), device="cuda")
        idx, _ = tilec.moe.top2_sum_gate(z, torch.zeros(E, device="cuda"), K, ntg, ng, False, S, 1.5, 0, 4, 0, 2,
                                         "sigmoid")
        n = min(E // 4, K)
        want = ref.top2_sum_gate(z, torch.zeros(E, device="cuda"), K, ntg, ng, False, S, 1.5, 0, 4, 0, 2, "sigmoid")[0]
        assert_equal(idx, want)
        assert idx[:, :n].tolist() == [list(range(n))] * 4001


def test_top2_sum_gate_hash_in_64_bits():
    # the replica choice floormod(ep_rank + t * 23333, n) for rows past 92 037 (t * 23333 > 2^31)
    E, S, K, T = 32, 2, 8, 100_000
    logits = torch.randn((T, E), device="cuda")
    pmap = torch.randint(0, E + 7, (E + S, 8), dtype=torch.int32, device="cuda")
    cnt = torch.randint(1, 9, (E + S,), dtype=torch.int32, device="cuda")
    args = (logits, torch.zeros(E, device="cuda"), K, 0, 0, True, S, 1.0, 5, 1, 0, 1, "sigmoid")
    idx, _ = tilec.moe.top2_sum_gate(*args, to_physical_map=pmap, logical_count=cnt)
    ridx, _ = ref.top2_sum_gate(*args, to_physical_map=pmap, logical_count=cnt)
    assert_equal(idx, ridx)


def test_top2_sum_gate_small():
    cfg = (8, 4, 256, 2, 8)
    logits = torch.randn((7, 256), device="cuda")
    bias = torch.randn(256, device="cuda") * 0.1
    run_gate(logits, bias, cfg, True, "sqrtsoftplus", 1, 2, False, ep_rank=3)
    run_gate(logits, bias, cfg, False, "softmax", 0, 0, True)
    i, w = tilec.moe.top2_sum_gate(logits[:0], bias, 8, 4, 8, False, 0, 1.0, 0, 1, 0, 1, "sigmoid")
    assert i.shape == (0, 8) and w.shape == (0, 8)
