"""The MoE kernels on the CPU emulator (CPU tensors run there) against the PyTorch references, on
small grids with ties, -1 indices, empty inputs and several SM counts.

TILEC_BUILD_PYTHON: the package to test (default build/python); TILEC_KERNELS: the kernel
library (default: the checkout's kernels.tl)."""
import os
import sys

import pytest

torch = pytest.importorskip("torch")

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(_root, "build", "python")))

import tilec.moe as moe  # noqa: E402
from tilec.testing import assert_equal, calc_diff  # noqa: E402
import tilec.torch as ref  # noqa: E402

SM_READERS = (moe.get_fused_mapping_kernel, moe.common)   # the modules that read get_num_sms


@pytest.fixture(params=[132, 7], ids=lambda n: f"sms{n}")
def num_sms(request, monkeypatch):
    for m in SM_READERS:
        monkeypatch.setattr(m, "get_num_sms", lambda: request.param)
    return request.param


def routing(T, K, E, holes=0.3, seed=0):
    """Random top-k style indices in [-1, E): distinct per row, some -1."""
    g = torch.Generator().manual_seed(seed)
    idx = torch.rand((T, max(E, K)), generator=g).argsort(dim=1)[:, :K]
    idx = torch.where(idx >= E, torch.full_like(idx, -1), idx)
    hole = torch.rand((T, K), generator=g) < holes
    return torch.where(hole, torch.full_like(idx, -1), idx).contiguous()


# ---- gates ----------------------------------------------------------------------------------

@pytest.mark.parametrize("E, K", [(16, 6), (72, 6), (256, 8), (40, 9)])
def test_topk_gate(E, K):
    torch.manual_seed(E)
    s = torch.randn(37, E)
    s[3] = 0.0                 # a row of ties
    s[5, :E // 2] = float("-inf")
    s[6] = torch.tensor([-0.0, 0.0, 1.0, -1.0])[torch.randint(0, 4, (E,))]   # ties across lanes, -0.0 == 0.0
    s[7] = float("-inf")
    assert_equal(moe.topk_gate(s, K), ref.stable_topk(s, K))


@pytest.mark.parametrize("G, P, ns, nk", [(8, 9, 2, 4), (4, 64, 1, 2), (16, 16, 2, 4), (3, 2, 2, 3)])
def test_topk_sum_and_topk_group_idx(G, P, ns, nk):
    torch.manual_seed(G * P)
    s = torch.randn(21, G, P)
    s[2] = 1.0                 # every group ties
    s[4, :, 0] = 7.0           # a repeated maximum counts twice
    s[4, :, 1] = 7.0
    assert_equal(moe.topk_sum_and_topk_group_idx(s, ns, nk), ref.topk_sum_and_topk_group_idx(s, ns, nk))


GATES = [  # (num_groups, num_topk_groups, E, S, K)
    (0, 0, 72, 1, 6), (0, 0, 16, 2, 6), (8, 8, 256, 2, 8), (8, 4, 256, 2, 8), (4, 2, 36, 0, 5)]


@pytest.mark.parametrize("scoring", ["sigmoid", "sqrtsoftplus", "softmax"])
@pytest.mark.parametrize("cfg", GATES, ids=lambda c: "g%d-%d-e%d-s%d-k%d" % c)
def test_top2_sum_gate(cfg, scoring):
    ng, ntg, E, S, K = cfg
    T, X = 23, 4
    torch.manual_seed(E + K)
    logits = torch.randn(T, E)
    bias = torch.randn(E) * 0.1
    logits[7] = 0.0
    bias_row_ties = logits.clone()
    shared = S > 0 and K % S == 0 and E % (K // S) == 0   # as TileKernels' test: shared-as-routed where valid
    S = S if shared else 0
    kw = {}
    if shared:
        kw["to_physical_map"] = torch.randint(0, E + X, (E + S, 1 + X), dtype=torch.int32)
        kw["logical_count"] = torch.randint(1, 1 + X + 1, (E + S,), dtype=torch.int32)
    mask = torch.rand(T) > 0.2
    fixed = torch.rand(T) > 0.7
    un_in = torch.randint(0, E, (T, K))
    for use_mask, use_fix in ((False, False), (True, True)):
        u1, u2 = un_in.clone(), un_in.clone()
        extra = dict(kw)
        if use_mask:
            extra["mask"] = mask
        if use_fix:
            extra["fix_routing_mask"] = fixed
        args = (K, ntg, ng, shared, S, 1.5, 3, 4, 1, 2, scoring)
        idx, w = moe.top2_sum_gate(logits, bias, *args, unmapped_topk_idx=u1, **extra)
        ridx, rw = ref.top2_sum_gate(bias_row_ties, bias, *args, unmapped_topk_idx=u2, **extra)
        assert_equal(idx, ridx)
        assert_equal(u1, u2)
        assert torch.allclose(w, rw, rtol=1e-6, atol=1e-8)  # the CPU's exp/log1p differ from CUDA's


def test_top2_sum_gate_stability():
    E, K = 64, 6
    z = torch.zeros(9, E)
    idx, _ = moe.top2_sum_gate(z, torch.zeros(E), K, 0, 0, False, 0, 1.0, 0, 1, 0, 1, "sigmoid")
    assert idx.tolist() == [list(range(K))] * 9


# ---- fused layout ---------------------------------------------------------------------------

@pytest.mark.parametrize("T, K, E, align", [(40, 6, 9, 16), (700, 8, 32, 128), (1500, 9, 4, 64), (300, 2, 256, 1),
                                            (0, 2, 8, 16), (5, 1, 1, 64), (2000, 2, 16, 16), (4000, 8, 32, 16)])
def test_get_fused_mapping(T, K, E, align, num_sms):
    """(2000, 2): one block, two chunks of 256 entries per warp; (4000, 8) on 7 SMs: 576 entries
    per warp, a partial third chunk."""
    idx = routing(T, K, E, seed=T + K)
    got = moe.get_fused_mapping(idx, E, 0, align)
    want = ref.get_fused_mapping(idx, E, 0, align)
    for g, w in zip(got[:7], want[:7]):
        assert_equal(g, w)
    assert got[7] == want[7]
    # a given (larger) size: the tail is -1, nothing trimmed
    n = want[0].shape[0] + 37
    got = moe.get_fused_mapping(idx, E, n, align)
    want = ref.get_fused_mapping(idx, E, n, align)
    for g, w in zip(got[:7], want[:7]):
        assert_equal(g, w)


def test_get_fused_mapping_no_sync_upper_bound():
    idx = routing(300, 6, 16, seed=3)
    got = moe.get_fused_mapping(idx, 16, 0, 32, force_no_sync=True)
    want = ref.get_fused_mapping(idx, 16, 0, 32, force_no_sync=True)
    assert got[7] == [] and got[0].shape[0] == (300 * 6 + 31 * 16) // 32 * 32
    for g, w in zip(got[:7], want[:7]):
        assert_equal(g, w)


def test_get_fused_mapping_too_small_is_safe():
    """A num_expanded_tokens below the slots needed: the entries past it are dropped (their
    token_topk_to_pos is -1, so expand_to_fused never writes past its output) and counted."""
    idx = routing(200, 6, 16, holes=0.0, seed=4)
    bad = torch.zeros(1, dtype=torch.int32)
    out = moe.get_fused_mapping(idx, 16, 100, 16, invalid_count=bad)   # needs ~1200 slots
    full = ref.get_fused_mapping(idx, 16, 0, 16)
    assert_equal(out[0], full[0][:100])
    assert_equal(out[3], torch.where(full[3] < 100, full[3], -1))
    for g, w in zip(out[:7], ref.get_fused_mapping(idx, 16, 100, 16)[:7]):
        assert_equal(g, w)
    assert bad.item() == int((full[3] >= 100).sum())
    x = torch.randn(200, 256).bfloat16()
    assert_equal(moe.expand_to_fused(x, out[3], out[0]), ref.expand_to_fused(x, out[3], out[0]))


def mapping(T, K, E, align=16, seed=0):
    idx = routing(T, K, E, seed=seed)
    idx[min(2, T - 1)] = -1          # a token routed nowhere
    return moe.get_fused_mapping(idx, E, 0, align)


@pytest.mark.parametrize("H, dtype", [(576, torch.bfloat16), (2560, torch.bfloat16), (96, torch.float32),
                                      (1025, torch.float8_e4m3fn), (7168, torch.bfloat16)])
def test_expand_to_fused(H, dtype):
    T, K, E = 33, 6, 9
    p2e, _, _, ttp, *_ = mapping(T, K, E, seed=H)
    x = (torch.randn(T, H) * 100).to(dtype)
    assert_equal(moe.expand_to_fused(x, ttp, p2e), ref.expand_to_fused(x, ttp, p2e))


def test_expand_to_fused_zero_tokens():
    p2e = torch.full((48,), -1, dtype=torch.int32)
    x = torch.zeros((0, 256), dtype=torch.bfloat16)
    out = moe.expand_to_fused(x, torch.zeros((0, 4), dtype=torch.int32), p2e)
    assert_equal(out, torch.zeros((48, 256), dtype=torch.bfloat16))


@pytest.mark.parametrize("col, packed", [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("npc", [32, 128])
def test_expand_to_fused_with_sf(col, packed, npc):
    T, K, E, H = 29, 8, 9, 576
    p2e, _, _, ttp, *_ = mapping(T, K, E, seed=npc)
    data = torch.randint(0, 255, (T, H), dtype=torch.uint8).view(torch.float8_e4m3fn)   # every byte, NaN codes too
    ng = (H + npc - 1) // npc
    sf = torch.randint(1, 1 << 30, (T, (ng + 3) // 4), dtype=torch.int32) if packed else torch.rand(T, ng)
    out, osf = moe.expand_to_fused_with_sf((data, sf), npc, ttp, p2e, use_tma_aligned_col_major_sf=col)
    rout, rsf = ref.expand_to_fused_with_sf((data, sf), npc, ttp, p2e, use_tma_aligned_col_major_sf=col)
    assert_equal(out, rout)
    assert_equal(osf, rsf)


@pytest.mark.parametrize("col", [False, True])
def test_expand_to_fused_with_sf_many_scales(col):
    """256 scale words per row for 128 threads: the words past the first NT go through the
    second loop."""
    T, K, E, H = 9, 4, 5, 8192
    p2e, _, _, ttp, *_ = mapping(T, K, E, seed=3)
    data = torch.randint(0, 255, (T, H), dtype=torch.uint8).view(torch.float8_e4m3fn)
    sf = torch.rand(T, H // 32)
    out, osf = moe.expand_to_fused_with_sf((data, sf), 32, ttp, p2e, use_tma_aligned_col_major_sf=col)
    rout, rsf = ref.expand_to_fused_with_sf((data, sf), 32, ttp, p2e, use_tma_aligned_col_major_sf=col)
    assert_equal(out, rout)
    assert_equal(osf, rsf)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("fmt", ["", "e4m3"])
@pytest.mark.parametrize("weights, with_sf", [(True, False), (False, True), (True, True)])
def test_reduce_fused(dtype, fmt, weights, with_sf):
    T, K, E, H = 19, 6, 9, 512
    torch.manual_seed(T + K + H)
    p2e, _, _, ttp, *_ = mapping(T, K, E, align=1, seed=7)
    ttp[3] = -1                                   # a token routed nowhere: zeros
    N = p2e.shape[0]
    x = torch.randn(N, H).to(dtype)
    w = torch.rand(T, K) if weights else None
    xin = (x, torch.randn(N)) if with_sf else x
    sf = torch.randn(1) if fmt else None
    got = moe.reduce_fused(xin, w, ttp, fmt, sf=sf)
    want = ref.reduce_fused(xin, w, ttp, fmt, sf=sf)
    assert_equal(got, want)


# ---- utilities ------------------------------------------------------------------------------

@pytest.mark.parametrize("K", [1, 6, 9])
def test_normalize_weight(K):
    w = torch.rand(300, K)
    w[5] = 0.0
    den, nw = moe.normalize_weight(w)
    rden, rnw = ref.normalize_weight(w)
    assert_equal(den, rden)
    assert_equal(nw, rnw)


@pytest.mark.parametrize("T, K, E", [(100, 6, 9), (3000, 8, 32), (1, 2, 1), (1200, 9, 72)])
def test_group_count_and_aux_fi(T, K, E, num_sms):
    idx = routing(T, K, E, seed=E)
    assert_equal(moe.group_count(idx, E), ref.group_count(idx, E))
    for aux in (1, K):
        got, want = moe.aux_fi(idx, E, aux), ref.aux_fi(idx, E, aux)
        assert calc_diff(got, want) < 2e-7


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8])
@pytest.mark.parametrize("ntp", [1, 2, 4])
def test_mask_indices_by_tp(dtype, ntp):
    idx = routing(333, 6, 64, seed=ntp).to(dtype)
    for tp in range(ntp):
        assert_equal(moe.mask_indices_by_tp(idx, 64 * 8, 8, tp, ntp), ref.mask_indices_by_tp(idx, 64 * 8, 8, tp, ntp))


def test_mask_indices_by_tp_wide_values():
    """Indices and expert counts beyond 32 bits take the 64-bit path; near 2^31 the 32-bit one."""
    g = torch.Generator().manual_seed(3)
    big = torch.randint(-1, 1 << 40, (97, 5), generator=g, dtype=torch.int64)
    edge = torch.tensor([[(1 << 31) - 1, 1 << 31, (1 << 31) + 5, 0, -1]], dtype=torch.int64)
    for idx, n, ep in ((big, 1 << 41, 8), (edge, 1 << 33, 2), (edge, 12, 3), (big, (3 << 34) + 7, 3)):
        for tp, ntp in ((0, 1), (1, 2), (2, 4)):
            if n // ep >= 1:
                assert_equal(moe.mask_indices_by_tp(idx, n, ep, tp, ntp), ref.mask_indices_by_tp(idx, n, ep, tp, ntp))


@pytest.mark.parametrize("groups", [8, 72, 128])
def test_inplace_unique_group_indices(groups):
    idx = routing(400, 9, 256, seed=groups)
    g = torch.div(idx, 256 // min(groups, 256) + 1, rounding_mode="floor")
    g = torch.where(idx < 0, idx, g.clamp_max(groups - 1))
    a, b = g.clone(), g.clone()
    moe.inplace_unique_group_indices(a, groups)
    ref.inplace_unique_group_indices(b, groups)
    assert_equal(a, b)


@pytest.mark.parametrize("K", [1, 13, 16])
def test_reduce_fused_row_counts(K):
    """One row, and more than 12 rows (the run-time loop over groups of 8)."""
    T, E, H = 11, 20, 256
    p2e, _, _, ttp, *_ = mapping(T, K, E, align=1, seed=K)
    x = torch.randn(p2e.shape[0], H)
    xin = (x, torch.rand(p2e.shape[0]))
    w = torch.rand(T, K)
    assert_equal(moe.reduce_fused(xin, w, ttp), ref.reduce_fused(xin, w, ttp))


@pytest.mark.parametrize("H", [1536, 2560])
def test_reduce_fused_chunk_shapes(H):
    """Blocks of 64 threads x 3 vectors and 160 threads x 2 (whole rows, a thread count that is
    not a power of two); tokens with no valid slot, one, and several."""
    T, K, E = 7, 4, 5
    p2e, _, _, ttp, *_ = mapping(T, K, E, align=1, seed=H)
    x = torch.randn(p2e.shape[0], H).to(torch.bfloat16)
    w = torch.rand(T, K)
    assert_equal(moe.reduce_fused(x, w, ttp), ref.reduce_fused(x, w, ttp))


def test_reduce_fused_keeps_negative_zero():
    """acc = -0.0 after a product that underflows, then unused slots: the reference keeps -0.0."""
    T, K, H = 3, 4, 256
    ttp = torch.tensor([[0, -1, -1, -1], [-1, 1, -1, 2], [-1, -1, -1, -1]], dtype=torch.int32)
    x = torch.full((3, H), -1e-30)
    w = torch.tensor([[1e-20, float("inf"), float("nan"), 5.0]] * T)    # unused slots: any weight
    for xin, wt in ((x, w), (x, None), ((x, torch.full((3,), 1e-20)), None)):
        got, want = moe.reduce_fused(xin, wt, ttp), ref.reduce_fused(xin, wt, ttp)
        assert_equal(got, want)
    assert torch.signbit(moe.reduce_fused(x, w, ttp)[0]).all()


# ---- out-of-range indices and positions (checked on the device) -----------------------------
# The rule: an index or position outside its range is treated as -1 (dropped), never
# dereferenced (the emulator's bounds check fails a launch that reads or writes outside a
# tensor), and counted into invalid_count when the caller passes one. Each kernel run on hostile
# values is compared with the same function on the values replaced by -1.

def hostile(x, lo, hi, seed=0):
    """x with a few entries set to values outside [lo, hi): hi, hi + 7, lo - 1, lo - 9 and, where
    the dtype holds them, 2^32 + 1 (1 once truncated to 32 bits) and -2^40; returns (hostile x, x
    with those entries -1, their count)."""
    g = torch.Generator().manual_seed(seed)
    vals = torch.tensor([hi, hi + 7, lo - 1, lo - 9, 2 ** 32 + 1, -2 ** 40], dtype=torch.int64)
    if x.dtype == torch.int32:
        vals = vals[(vals >= -2 ** 31) & (vals < 2 ** 31)]
    flat = x.clone().reshape(-1)
    where = torch.randperm(flat.numel(), generator=g)[:min(flat.numel(), 12)]
    flat[where] = vals[torch.arange(where.numel()) % vals.numel()].to(x.dtype)
    clean = flat.clone()
    clean[where] = -1
    return flat.view(x.shape), clean.view(x.shape), where.numel()


def counter():
    return torch.zeros(1, dtype=torch.int32)


@pytest.mark.parametrize("T, K, E", [(40, 6, 9), (900, 8, 32)])   # one block; count, scan and scatter
def test_get_fused_mapping_out_of_range_indices(T, K, E):
    idx, clean, n = hostile(routing(T, K, E, seed=T), -1, E)
    bad = counter()
    got = moe.get_fused_mapping(idx, E, 0, 16, invalid_count=bad)
    want = moe.get_fused_mapping(clean, E, 0, 16)
    for g, w in zip(got[:7], want[:7]):
        assert_equal(g, w)
    assert got[7] == want[7] and bad.item() == n
    for g, w in zip(got[:7], ref.get_fused_mapping(idx, E, 0, 16)[:7]):   # the reference's rule too
        assert_equal(g, w)


def test_expand_and_reduce_out_of_range_positions():
    T, K, E, H = 33, 6, 9, 256
    p2e, _, _, ttp, *_ = mapping(T, K, E, seed=5)
    N = p2e.shape[0]
    http, cttp, n = hostile(ttp, -1, N, seed=1)
    x = torch.randn(T, H).bfloat16()
    # the slots a dropped position pointed at are written by no token: their rows are unspecified
    defined = (p2e < 0).clone()
    defined[cttp[cttp >= 0].long()] = True
    bad = counter()
    got = moe.expand_to_fused(x, http, p2e, invalid_count=bad)
    assert_equal(got[defined], ref.expand_to_fused(x, cttp, p2e)[defined])
    assert bad.item() == n
    q, sf = torch.randint(0, 255, (T, H), dtype=torch.uint8).view(torch.float8_e4m3fn), torch.rand(T, H // 128)
    bad = counter()
    got = moe.expand_to_fused_with_sf((q, sf), 128, http, p2e, invalid_count=bad)
    want = ref.expand_to_fused_with_sf((q, sf), 128, cttp, p2e)
    assert_equal(got[0][defined], want[0][defined])
    assert_equal(got[1][defined], want[1][defined])
    assert bad.item() == n
    xe = torch.randn(N, H).bfloat16()
    w = torch.rand(T, K)
    bad = counter()
    assert_equal(moe.reduce_fused(xe, w, http, invalid_count=bad), ref.reduce_fused(xe, w, cttp))
    assert bad.item() == n
    assert_equal(moe.reduce_fused(xe, w, http), ref.reduce_fused(xe, w, cttp))   # no counter: the same result


@pytest.mark.parametrize("T", [50, 2000])   # one block; several blocks with atomics
def test_histograms_out_of_range_indices(T):
    idx, clean, n = hostile(routing(T, 6, 16, seed=T), -1, 16, seed=2)
    bad = counter()
    assert_equal(moe.group_count(idx, 16, invalid_count=bad), ref.group_count(clean, 16))
    assert bad.item() == n
    bad = counter()
    got = moe.aux_fi(idx, 16, 6, invalid_count=bad)
    assert calc_diff(got, ref.aux_fi(clean, 16, 6)) < 1e-12 and bad.item() == n


def test_inplace_unique_out_of_range_values():
    g = torch.randint(-1, 8, (30, 6), dtype=torch.int64)
    hg, clean, n = hostile(g, -1, 64, seed=3)     # num_groups 8: values must lie in [0, 64)
    bad = counter()
    moe.inplace_unique_group_indices(hg, 8, invalid_count=bad)
    ref.inplace_unique_group_indices(clean, 8)
    assert_equal(hg, clean)
    assert bad.item() == n


def test_top2_sum_gate_out_of_range_fixed_indices_and_counts():
    T, E, K, S, X = 23, 256, 8, 2, 3
    logits, bias = torch.randn(T, E), torch.randn(E) * 0.1
    fixed = torch.ones(T, dtype=torch.bool)
    un = torch.stack([torch.randperm(E)[:K] for _ in range(T)])
    hun, cun, n = hostile(un, 0, E, seed=4)
    count = torch.randint(1, X + 1, (E + S,), dtype=torch.int32)
    count[[3, 250, E + 1]] = torch.tensor([0, -5, X + 1], dtype=torch.int32)   # replica counts outside [1, X]
    pmap = torch.randint(0, E, (E + S, X), dtype=torch.int32)
    args = (K, 4, 8, True, S, 1.5, 1, 4, 1, 2, "sigmoid")
    bad = counter()
    idx, w = moe.top2_sum_gate(logits, bias, *args, fix_routing_mask=fixed, to_physical_map=pmap,
                               logical_count=count, unmapped_topk_idx=hun.clone(), invalid_count=bad)
    # expected: a bad fixed index is a -1 pick with weight 0; a slot whose expert has a bad replica
    # count is -1 with weight 0; every other slot as the reference gives it
    ridx, rw = ref.top2_sum_gate(logits, bias, *args, fix_routing_mask=fixed, to_physical_map=pmap,
                                 logical_count=count.clamp(1, X), unmapped_topk_idx=cun.clamp(min=0))
    logical = torch.cat([cun, torch.arange(E, E + S).expand(T, S)], dim=1)
    drop = (logical < 0) | ((logical >= 0) & ~((count >= 1) & (count <= X))[logical.clamp(min=0)])
    assert torch.equal(idx[drop], torch.full_like(idx[drop], -1)) and not w[drop].any()
    assert torch.equal(idx[~drop], ridx[~drop])
    n_count = int((drop & (logical >= 0)).sum())
    assert bad.item() == n + n_count
    assert n_count > 0
