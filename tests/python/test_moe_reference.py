"""The PyTorch references of the MoE family (tilec.torch: topk, expand_to_fused, reduce_fused, moe) on small cases
computed by hand from the spec (moe-engram-mhc.md §1), on the CPU. The GPU tests compare the
kernels with these references, so they must be right on their own."""
import math
import os
import random
import struct
import sys
from fractions import Fraction

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(os.path.dirname(__file__), "..", "..", "build", "python")))

import tilec.torch as ref  # noqa: E402
from tilec.testing import generator  # noqa: E402


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def t(rows, dtype=torch.float32):
    return torch.tensor(rows, dtype=dtype)


def test_stable_topk_ties_and_order():
    s = t([[1.0, 3.0, 3.0, 2.0, 3.0], [0.0, 0.0, 0.0, 0.0, 0.0]])
    assert ref.stable_topk(s, 3).tolist() == [[1, 2, 4], [0, 1, 2]]
    assert ref.topk_gate(s, 5).tolist() == [[1, 2, 4, 3, 0], [0, 1, 2, 3, 4]]


def test_topk_sum_and_topk_group_idx():
    # 3 groups of 3: maxima 5, 4, 5; top-2 sums 5+5=10, 4+4=8, 5+1=6
    s = t([[[5.0, 1.0, 5.0], [4.0, 4.0, 0.0], [1.0, 5.0, 0.5]]])
    assert ref.topk_sum_and_topk_group_idx(s, 1, 3).tolist() == [[0, 2, 1]]   # tie 0/2 -> smaller first
    assert ref.topk_sum_and_topk_group_idx(s, 2, 2).tolist() == [[0, 1]]


def sigmoid(x):
    return f32(1.0 / (1.0 + math.exp(-x)))


def test_top2_sum_gate_sigmoid_by_hand():
    # 8 experts; logits 0 except two; bias decides among the 0.5s
    E, K = 8, 3
    logits = t([[0.0, 2.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0]])
    bias = t([0.0, 0.0, 0.1, 0.0, 0.3, 0.0, 0.0, 0.0])
    idx, w = ref.top2_sum_gate(logits, bias, K, 0, 0, False, 0, 2.0, 0, 1, 0, 1, "sigmoid")
    # r: e1 = σ(2) = 0.88, e4 = 0.8, e2 = 0.6, others 0.5 / σ(-1) = 0.27
    assert idx.tolist() == [[1, 4, 2]]
    s = [sigmoid(2.0), 0.5, 0.5]
    den = f32(f32(f32(f32(1e-20) + s[0]) + s[1]) + s[2])
    want = [f32(f32(v / den) * 2.0) for v in s]
    assert w.tolist() == [want]


def test_top2_sum_gate_groups_shared_map_and_tp():
    # 8 experts in 4 groups of 2, keep 2 groups; scores = logits (softmax ranks on logit + bias)
    E, K, S = 8, 2, 1
    logits = t([[0.0, 1.0, 5.0, 0.0, 3.0, 3.0, 0.0, 0.0]])
    bias = torch.zeros(E)
    # group sums: g0 = 1, g1 = 5, g2 = 6, g3 = 0 -> keep g2, g1; picks: e2 (5), then e4 (3, tie with e5)
    X = 2
    pmap = torch.arange(E + S, dtype=torch.int32)[:, None].repeat(1, 1 + X)
    pmap[2] = torch.tensor([2, 9, 10], dtype=torch.int32)       # expert 2 has replicas 9 and 10
    count = torch.ones(E + S, dtype=torch.int32)
    count[2] = 3
    unmapped = torch.zeros((1, K), dtype=torch.int64)
    idx, w = ref.top2_sum_gate(logits, bias, K, 2, 4, True, S, 1.0, 1, 1, 0, 1, "softmax",
                               to_physical_map=pmap, logical_count=count, unmapped_topk_idx=unmapped)
    assert unmapped.tolist() == [[2, 4]]
    # expert 2: replica floormod(ep_rank 1 + 0 * 23333, 3) = 1 -> 9; expert 4 -> 4; shared slot E + 0 = 8
    assert idx.tolist() == [[9, 4, 8]]
    p = torch.softmax(logits, -1)[0]
    den = f32(f32(f32(1e-20) + float(p[2])) + float(p[4]))
    assert w.tolist() == [[f32(float(p[2]) / den), f32(float(p[4]) / den), 1.0]]
    # EP/TP: (E + X) = 10 experts over 5 EP ranks (R = 2), 2 TP ranks: TP rank 1 keeps EP ranks 1, 3
    idx2, _ = ref.top2_sum_gate(logits, bias, K, 2, 4, True, S, 1.0, 1, 5, 1, 2, "softmax",
                                to_physical_map=pmap, logical_count=count)
    # 9: EP rank 4 -> -1; 4: EP rank 2 -> -1; 8: EP rank 4 -> -1
    assert idx2.tolist() == [[-1, -1, -1]]
    idx3, _ = ref.top2_sum_gate(logits, bias, K, 2, 4, True, S, 1.0, 1, 5, 0, 2, "softmax",
                                to_physical_map=pmap, logical_count=count)
    # TP rank 0 keeps EP ranks 0, 2, 4: 9 -> dp 2 -> 2 * 2 + 1 = 5; 4 -> 2; 8 -> 4
    assert idx3.tolist() == [[5, 2, 4]]


def test_top2_sum_gate_mask_and_fixed_routing():
    E, K = 4, 2
    logits = t([[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    bias = torch.zeros(E)
    mask = torch.tensor([True, False, True])
    fixed = torch.tensor([False, False, True])
    unmapped = torch.tensor([[0, 0], [0, 0], [1, 1]])
    idx, w = ref.top2_sum_gate(logits, bias, K, 0, 0, False, 0, 1.0, 0, 1, 0, 1, "sqrtsoftplus",
                               mask=mask, fix_routing_mask=fixed, unmapped_topk_idx=unmapped)
    assert idx.tolist() == [[3, 2], [-1, -1], [1, 1]]
    assert w[1].tolist() == [0.0, 0.0] and unmapped.tolist() == [[3, 2], [-1, -1], [1, 1]]
    s = f32(math.sqrt(f32(math.log1p(1.0))))   # sqrt(softplus(0)) = sqrt(ln 2)
    assert abs(w[2, 0].item() - s / f32(f32(1e-20) + s + s)) < 1e-7 and w[2, 0] == w[2, 1]


def test_get_fused_mapping_by_hand():
    # T = 3, K = 2, E = 3, alignment 2; expert 0 gets (0,1) and (2,0); expert 2 gets (0,0), (1,1), (2,1)
    idx = torch.tensor([[2, 0], [-1, 2], [0, 2]])
    p2e, p2t, p2tk, ttp, start, end, cnt, lst = ref.get_fused_mapping(idx, 3, 0, 2)
    assert start.tolist() == [0, 2, 2] and end.tolist() == [2, 2, 6] and cnt.tolist() == [2, 0, 4] and lst == [2, 0, 4]
    assert p2e.tolist() == [0, 0, 2, 2, 2, -1]
    assert p2t.tolist() == [0, 2, 0, 1, 2, -1]
    assert p2tk.tolist() == [1, 4, 0, 3, 5, -1]
    assert ttp.tolist() == [[2, 0], [-1, 3], [1, 4]]
    # a given size: no trimming, no list; slots past the used ones are -1
    r = ref.get_fused_mapping(idx, 3, 10, 2)
    assert r[0].tolist() == [0, 0, 2, 2, 2, -1, -1, -1, -1, -1] and r[7] == []


def test_expand_and_reduce_by_hand():
    x = t([[1.0, 2.0], [3.0, 4.0]]).to(torch.bfloat16)
    ttp = torch.tensor([[2, 0], [-1, 1]], dtype=torch.int32)
    pte = torch.tensor([5, 5, 7, -1], dtype=torch.int32)
    out = ref.expand_to_fused(x, ttp, pte)
    assert out.float().tolist() == [[1.0, 2.0], [3.0, 4.0], [1.0, 2.0], [0.0, 0.0]]
    sf = t([[0.5], [0.25]])
    o, osf = ref.expand_to_fused_with_sf((x, sf), 128, ttp, pte, use_tma_aligned_col_major_sf=True)
    assert osf.tolist() == [[0.5], [0.25], [0.5], [0.0]] and osf.stride() == (1, 4)
    # reduce: token 0 = 1 * row2 + 0.5 * row0 (k order), token 1 = 2 * row1
    xe = t([[1.0, 1.0], [2.0, 3.0], [4.0, 8.0], [9.0, 9.0]])
    w = t([[1.0, 0.5], [7.0, 2.0]])
    assert ref.reduce_fused(xe, w, ttp).tolist() == [[4.5, 8.5], [4.0, 6.0]]
    xs = t([1.0, 0.5, 2.0, 1.0])
    assert ref.reduce_fused((xe, xs), None, ttp).tolist() == [[9.0, 17.0], [1.0, 1.5]]
    r = ref.reduce_fused(xe, w, ttp, sf=t([0.5]))
    assert r.tolist() == [[2.25, 4.25], [2.0, 3.0]]


def round_f32(q: Fraction) -> float:
    """Exact rational -> nearest f32, ties to even (subnormals included)."""
    if q == 0:
        return 0.0
    sign = -1 if q < 0 else 1
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    e = max(e, -126) - 23            # 24 significant bits, fewer for subnormals
    m = round(a / Fraction(2) ** e)  # Fraction rounds half to even
    return sign * float(m * Fraction(2) ** e)


def test_fma_f32_is_exact():
    rng = random.Random(7)
    a, b, c, want = [], [], [], []
    for i in range(3000):
        x = f32(rng.uniform(-4, 4))
        y = f32(rng.uniform(-4, 4) * 2.0 ** rng.randint(-30, 30))
        if i % 3 == 0:   # c close to -x*y: cancellation
            z = f32(-x * y * (1 + rng.uniform(-1e-6, 1e-6)))
        elif i % 3 == 1:  # c exactly at a midpoint of the product's f32 neighbours: ties
            p = f32(x * y)
            z = f32(p * 2.0 ** -25) if p else 1.0
        else:
            z = f32(rng.uniform(-8, 8))
        a.append(x)
        b.append(y)
        c.append(z)
        want.append(round_f32(Fraction(x) * Fraction(y) + Fraction(z)))
    # exact = (1 + 2^-23) + 2^-24 - 2^-70: just below a midpoint of f32 values, which float64 cannot hold
    a.append(1.0 + 2.0 ** -23)
    b.append((1.0 - 2.0 ** -23) * 2.0 ** -24)
    c.append(1.0 + 2.0 ** -23)
    want.append(round_f32(Fraction(a[-1]) * Fraction(b[-1]) + Fraction(c[-1])))
    assert want[-1] == 1.0 + 2.0 ** -23
    got = ref.fma_f32(t(a), t(b), t(c))
    assert got.tolist() == want
    # rounding a*b+c to float64 first and then to f32 gets the last case wrong
    naive = (t(a).double() * t(b).double() + t(c).double()).float()
    assert naive.tolist() != want


def test_small_utilities_by_hand():
    g = torch.tensor([[3, 1, 3, -1, 1, 0], [-1, -1, 5, 5, 5, 2]])
    ref.inplace_unique_group_indices(g, 8)
    assert g.tolist() == [[3, 1, -1, -1, -1, 0], [-1, -1, 5, -1, -1, 2]]
    idx = torch.tensor([[0, 2, -1], [2, 2, 3]])
    assert ref.group_count(idx, 4).tolist() == [1, 0, 3, 1]
    assert ref.aux_fi(idx, 4, 2).tolist() == [f32(4 / 4), 0.0, f32(12 / 4), f32(4 / 4)]
    # 16 experts on 4 EP ranks (R = 4), 2 TP ranks: rank 1 keeps EP ranks 1, 3 -> experts 4..7, 12..15
    v = torch.tensor([[-1, 0, 4, 7], [8, 12, 15, 3]], dtype=torch.int32)
    assert ref.mask_indices_by_tp(v, 16, 4, 1, 2).tolist() == [[-1, -1, 0, 3], [-1, 4, 7, -1]]
    assert ref.mask_indices_by_tp(v, 16, 4, 1, 2).dtype == torch.int32
    w = t([[1.0, 2.0 ** -30, 3.0]])
    den, nw = ref.normalize_weight(w)
    d = f32(f32(f32(f32(1e-20) + 1.0) + 2.0 ** -30) + 3.0)
    assert den.tolist() == [d] and nw.tolist() == [[f32(1.0 / d), f32(2.0 ** -30 / d), f32(3.0 / d)]]


def test_generators(monkeypatch):
    monkeypatch.delenv("TK_FULL_TEST", raising=False)
    assert generator.generate_num_tokens() == [4001, 8001]
    assert generator.generate_hidden_sizes(256) == [2048, 2560, 3072, 4096, 6144, 7168]
    params = list(generator.generate_moe_params())
    assert {(p["num_experts"], p["num_ep_ranks"]) for p in params} == {(9, 8), (32, 8), (4, 64)}
    assert sorted({p["num_topk"] for p in params}) == [2, 6, 8, 9] and len(params) == 12
    monkeypatch.setenv("TK_FULL_TEST", "1")
    assert generator.generate_num_tokens()[0] == 0 and generator.generate_num_tokens(is_benchmark=True)[0] == 4001
    assert next(iter(generator.generate_moe_params())) == {"num_send_tokens": 0, "num_topk": 1, "num_experts": 1,
                                                          "num_ep_ranks": 1}
    torch.manual_seed(0)
    idx = generator.generate_topk_idx({"num_send_tokens": 50, "num_topk": 6, "num_experts": 9, "num_ep_ranks": 8},
                                      device="cpu")
    assert idx.dtype == torch.int64 and idx.shape[1] == 6 and idx.min() >= -1 and idx.max() < 9
    assert bool((idx >= 0).any(1).all())
