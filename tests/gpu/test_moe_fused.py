"""tilec.moe fused layout on the GPU (spec moe-engram-mhc.md §1.4-§1.7): get_fused_mapping
bit for bit against the reference's ascending layout plus TileKernels' consistency checks, for
each SM count; expand_to_fused, expand_to_fused_with_sf and reduce_fused bit for bit. Inputs
from generate_moe_params / generate_topk_idx (ties come from bf16 scores; -1 holes from other
EP ranks). Tests named *small* are the compute-sanitizer subset of scripts/gpu_moe.sh."""
import itertools

import pytest
import torch

import tilec
from tilec.testing import assert_equal
from tilec.testing.generator import generate_moe_params, generate_num_sms, generate_topk_idx
import tilec.torch as ref

PARAMS = list(generate_moe_params())
HAS_QUANT = hasattr(tilec.quant, "per_token_cast")


def pid(p):
    return "k%d-e%d-ep%d" % (p["num_topk"], p["num_experts"], p["num_ep_ranks"])


@pytest.fixture(scope="module")
def topk_cache():
    return {}


def topk_of(cache, p):
    key = tuple(sorted(p.items()))
    if key not in cache:
        torch.manual_seed(p["num_topk"] * 1_000_003 + p["num_experts"] * 101 + p["num_ep_ranks"])  # stable across runs
        cache[key] = generate_topk_idx(p)
    return cache[key]


def check_mapping(idx, E, align, got):
    """TileKernels' consistency checks (order-free) plus equality with the reference layout."""
    p2e, p2t, p2tk, ttp, start, end, cnt, lst = got
    K = idx.shape[1]
    assert lst == cnt.tolist()
    run = torch.cumsum(torch.tensor([0] + lst, device="cuda"), 0)
    assert start.tolist() == run[:-1].tolist() and end.tolist() == run[1:].tolist()
    want = ref.get_fused_mapping(idx, E, 0, align)
    for a, b in zip(got[:7], want[:7]):
        assert_equal(a, b)
    assert lst == want[7]
    filled = p2e >= 0
    assert torch.equal(filled, p2t >= 0) and torch.equal(filled, p2tk >= 0)
    slots = torch.nonzero(filled).flatten()
    assert torch.equal(ttp.flatten()[p2tk[slots].long()], slots.int())
    assert torch.equal(idx.flatten()[p2tk[slots].long()], p2e[slots].long())
    assert torch.equal(p2t[slots], torch.div(p2tk[slots], K, rounding_mode="floor"))


@pytest.mark.parametrize("align", [64, 128])
@pytest.mark.parametrize("p", PARAMS, ids=pid)
def test_get_fused_mapping(p, align, topk_cache):
    idx = topk_of(topk_cache, p)
    E = p["num_experts"]
    for n in generate_num_sms():
        tilec.set_num_sms(n)
        check_mapping(idx, E, align, tilec.moe.get_fused_mapping(idx, E, 0, align))
    for rows in (128, 1):   # the single-block (decode) path
        check_mapping(idx[:rows], E, align, tilec.moe.get_fused_mapping(idx[:rows], E, 0, align))


def test_get_fused_mapping_small():
    for T, K, E, align in [(0, 1, 1, 64), (1, 1, 1, 64), (100, 9, 72, 16), (700, 8, 256, 128)]:
        idx = torch.randint(-1, E, (T, K), device="cuda")
        check_mapping(idx, E, align, tilec.moe.get_fused_mapping(idx, E, 0, align))
    idx = torch.randint(-1, 32, (2000, 8), device="cuda")          # the three-kernel path
    check_mapping(idx, 32, 16, tilec.moe.get_fused_mapping(idx, 32, 0, 16))
    # no sync: an upper bound with 0 (never out of bounds), or the given size
    got = tilec.moe.get_fused_mapping(idx, 32, 0, 16, force_no_sync=True)
    want = ref.get_fused_mapping(idx, 32, 0, 16, force_no_sync=True)
    for a, b in zip(got[:7], want[:7]):
        assert_equal(a, b)
    n = int(want[6].sum())
    got = tilec.moe.get_fused_mapping(idx, 32, n + 100, 16, force_no_sync=True)
    assert got[7] == [] and got[0].shape == (n + 100,) and bool((got[0][n:] == -1).all())
    short = tilec.moe.get_fused_mapping(idx, 32, n // 2, 16)   # too small: dropped, not out of bounds
    assert_equal(short[0], want[0][: n // 2])


HIDDEN = [576, 2048, 2560, 3072, 4096, 6144, 7168]


@pytest.mark.parametrize("p", PARAMS, ids=pid)
def test_expand_to_fused(p, topk_cache):
    idx = topk_of(topk_cache, p)
    E = p["num_experts"]
    p2e, _, _, ttp, *_ = tilec.moe.get_fused_mapping(idx, E, 0, 16)
    for h in HIDDEN if p is PARAMS[0] else HIDDEN[::3]:
        x = torch.randn((idx.shape[0], h), device="cuda").bfloat16()
        assert_equal(tilec.moe.expand_to_fused(x, ttp, p2e), ref.expand_to_fused(x, ttp, p2e))


def test_expand_to_fused_small():
    idx = torch.randint(-1, 9, (50, 6), device="cuda")
    p2e, _, _, ttp, *_ = tilec.moe.get_fused_mapping(idx, 9, 0, 16)
    for dt, h in [(torch.bfloat16, 576), (torch.float32, 96), (torch.uint8, 1025), (torch.float8_e4m3fn, 2048)]:
        x = torch.randn((50, h), device="cuda").to(dt) if dt != torch.uint8 else \
            torch.randint(0, 255, (50, h), dtype=torch.uint8, device="cuda")
        assert_equal(tilec.moe.expand_to_fused(x, ttp, p2e), ref.expand_to_fused(x, ttp, p2e))
    empty = tilec.moe.expand_to_fused(torch.zeros((0, 256), device="cuda").bfloat16(),
                                      torch.zeros((0, 4), dtype=torch.int32, device="cuda"),
                                      torch.full((16,), -1, dtype=torch.int32, device="cuda"))
    assert_equal(empty, torch.zeros((16, 256), device="cuda").bfloat16())


@pytest.mark.skipif(not HAS_QUANT, reason="needs tilec.quant.per_token_cast")
@pytest.mark.parametrize("flags", [(False, True, False), (True, True, True)], ids=lambda f: "col%d-round%d-packed%d" % f)
@pytest.mark.parametrize("npc", [32, 128])
@pytest.mark.parametrize("p", PARAMS, ids=pid)
def test_expand_to_fused_with_sf(p, npc, flags, topk_cache):
    col, rnd, packed = flags
    idx = topk_of(topk_cache, p)
    E = p["num_experts"]
    p2e, _, _, ttp, *_ = tilec.moe.get_fused_mapping(idx, E, 0, 16)
    for h in (576, 7168):
        x = torch.randn((idx.shape[0], h), device="cuda").bfloat16()
        data, sf = tilec.quant.per_token_cast(x, "e4m3", npc, use_tma_aligned_col_major_sf=col, round_sf=rnd,
                                              use_packed_ue8m0=packed)
        sf = sf.contiguous()
        out, osf = tilec.moe.expand_to_fused_with_sf((data, sf), npc, ttp, p2e, col)
        rout, rosf = ref.expand_to_fused_with_sf((data, sf), npc, ttp, p2e, col)
        assert_equal(out, rout)
        assert_equal(osf, rosf, check_stride=idx.shape[0] > 0)


REDUCE_FLAGS = list(itertools.product([True, False], [torch.float32, torch.bfloat16], ["same", "e4m3"], [True, False]))


@pytest.mark.parametrize("p", PARAMS, ids=pid)
def test_reduce_fused(p, topk_cache):
    idx = topk_of(topk_cache, p)[:2500]
    E, K = p["num_experts"], p["num_topk"]
    T = idx.shape[0]
    _, _, _, ttp, *_ = tilec.moe.get_fused_mapping(idx, E, T * K, 1)
    i = PARAMS.index(p)
    # every flag combination at 7168 for the first configuration, two rotating ones elsewhere
    cases = [(7168, f) for f in REDUCE_FLAGS] if i == 0 else \
        [(h, REDUCE_FLAGS[(i * 3 + j) % 16]) for j, h in enumerate((2048, 2560, 7168))]
    for h, (with_w, in_dt, out_dt, with_sf) in cases:
        x = torch.randn((T * K, h), device="cuda").to(in_dt)
        w = torch.rand((T, K), device="cuda") if with_w else None
        xin = (x, torch.randn(T * K, device="cuda")) if with_sf else x
        fmt = "e4m3" if out_dt == "e4m3" else ""
        sf = torch.randn(1, device="cuda") if fmt else None
        assert_equal(tilec.moe.reduce_fused(xin, w, ttp, fmt, sf=sf), ref.reduce_fused(xin, w, ttp, fmt, sf=sf))


def test_reduce_fused_small():
    T, K, H = 40, 6, 512
    idx = torch.randint(-1, 9, (T, K), device="cuda")
    idx[3] = -1                                    # routed nowhere: zeros
    _, _, _, ttp, *_ = tilec.moe.get_fused_mapping(idx, 9, T * K, 1)
    x = torch.randn((T * K, H), device="cuda").bfloat16() * 100   # large: e4m3 saturates at 448
    for fmt, sf in (("", None), ("e4m3", torch.tensor([3.0], device="cuda"))):
        w = torch.rand((T, K), device="cuda")
        assert_equal(tilec.moe.reduce_fused(x, w, ttp, fmt, sf=sf), ref.reduce_fused(x, w, ttp, fmt, sf=sf))
    out = torch.empty((T, H + 8), device="cuda").bfloat16()[:, :H]
    r = tilec.moe.reduce_fused(x, None, ttp, out=out)
    assert r is out and torch.equal(out, ref.reduce_fused(x, None, ttp))
    assert tilec.moe.reduce_fused(x, None, ttp[:0]).shape == (0, H)
