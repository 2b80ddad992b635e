"""tilec.moe index utilities on the GPU (spec moe-engram-mhc.md §1.8-§1.12): normalize_weight,
group_count, aux_fi, mask_indices_by_tp, inplace_unique_group_indices against the references,
bit for bit (aux_fi: calc_diff < 2e-7), for each SM count where the kernel uses it, at prefill
and decode sizes. Tests named *small* are the compute-sanitizer subset of scripts/gpu_moe.sh."""
import pytest
import torch

import tilec
from tilec.testing import assert_equal, calc_diff
from tilec.testing.generator import generate_moe_params, generate_num_sms, generate_topk_idx
import tilec.torch as ref

PARAMS = list(generate_moe_params())


def pid(p):
    return "k%d-e%d-ep%d" % (p["num_topk"], p["num_experts"], p["num_ep_ranks"])


@pytest.fixture(scope="module")
def cache():
    return {}


def topk_of(cache, p):
    key = tuple(sorted(p.items()))
    if key not in cache:
        torch.manual_seed(p["num_topk"] * 1_000_003 + p["num_experts"] * 101 + p["num_ep_ranks"])  # stable across runs
        cache[key] = generate_topk_idx(p)
    return cache[key]


@pytest.mark.parametrize("p", PARAMS, ids=pid)
def test_normalize_weight(p, cache):
    T = topk_of(cache, p).shape[0]
    for t in (T, 128):
        w = torch.rand((t, p["num_topk"]), device="cuda")
        den, nw = tilec.moe.normalize_weight(w)
        rden, rnw = ref.normalize_weight(w)
        assert_equal(den, rden)
        assert_equal(nw, rnw)


@pytest.mark.parametrize("p", PARAMS, ids=pid)
def test_group_count_and_aux_fi(p, cache):
    idx = topk_of(cache, p)
    E, K = p["num_experts"], p["num_topk"]
    for n in generate_num_sms():
        tilec.set_num_sms(n)
        for x in (idx, idx[:128]):
            assert_equal(tilec.moe.group_count(x, E), ref.group_count(x, E))
            for aux in (1, K):
                got, want = tilec.moe.aux_fi(x, E, aux), ref.aux_fi(x, E, aux)
                assert got.dtype == torch.float32 and calc_diff(got, want) < 2e-7


@pytest.mark.parametrize("ntp", [2, 4, 8])
@pytest.mark.parametrize("p", PARAMS, ids=pid)
def test_mask_indices_by_tp(p, ntp, cache):
    idx = topk_of(cache, p)
    n, ep = p["num_experts"] * p["num_ep_ranks"], p["num_ep_ranks"]
    if ep % ntp:
        pytest.skip("EP ranks not a multiple of the TP ranks")
    tp = int(torch.randint(0, ntp, (1,)))
    # indices over all experts of all EP ranks (what the function is given in practice)
    full = torch.where(idx >= 0, idx + (torch.randint(0, ep, idx.shape, device="cuda") * p["num_experts"]), idx)
    for x in (full, full[:128], full.int()):
        assert_equal(tilec.moe.mask_indices_by_tp(x, n, ep, tp, ntp), ref.mask_indices_by_tp(x, n, ep, tp, ntp))


@pytest.mark.parametrize("ng", [8, 16, 72])
@pytest.mark.parametrize("p", PARAMS, ids=pid)
def test_inplace_unique_group_indices(p, ng, cache):
    total = p["num_experts"] * p["num_ep_ranks"]
    if total % ng:
        pytest.skip("experts not a multiple of the groups")
    idx = topk_of(cache, p)
    # the spec's input: group of each expert over all ranks (here: random ranks), -1 kept
    full = torch.where(idx >= 0, idx + (torch.randint(0, p["num_ep_ranks"], idx.shape, device="cuda")
                                        * p["num_experts"]), idx)
    g = torch.div(full, total // ng, rounding_mode="floor")
    for n in generate_num_sms():
        tilec.set_num_sms(n)
        for x in (g, g[:128]):
            a, b = x.clone(), x.clone()
            tilec.moe.inplace_unique_group_indices(a, ng)
            ref.inplace_unique_group_indices(b, ng)
            assert_equal(a, b)


def test_utils_small():
    idx = torch.randint(-1, 16, (300, 9), device="cuda")
    idx[::7] = -1
    assert_equal(tilec.moe.group_count(idx, 16), ref.group_count(idx, 16))
    assert calc_diff(tilec.moe.aux_fi(idx, 16, 9), ref.aux_fi(idx, 16, 9)) < 2e-7
    big = torch.randint(-1, 16, (3000, 9), device="cuda")   # several blocks, atomics
    assert_equal(tilec.moe.group_count(big, 16), ref.group_count(big, 16))
    assert calc_diff(tilec.moe.aux_fi(big, 16, 9), ref.aux_fi(big, 16, 9)) < 2e-7
    assert_equal(tilec.moe.mask_indices_by_tp(idx, 64, 8, 1, 2), ref.mask_indices_by_tp(idx, 64, 8, 1, 2))
    a, b = idx.clone(), idx.clone()
    tilec.moe.inplace_unique_group_indices(a, 16)
    ref.inplace_unique_group_indices(b, 16)
    assert_equal(a, b)
    w = torch.rand((300, 9), device="cuda")
    for x, y in zip(tilec.moe.normalize_weight(w), ref.normalize_weight(w)):
        assert_equal(x, y)
    e = idx[:0]
    assert tilec.moe.group_count(e, 16).tolist() == [0] * 16 and tilec.moe.aux_fi(e, 16, 1).tolist() == [0.0] * 16
    assert tilec.moe.mask_indices_by_tp(e, 64, 8, 0, 2).shape == (0, 9)
    tilec.moe.inplace_unique_group_indices(e, 16)
