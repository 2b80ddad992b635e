"""tilec.moe without a GPU: each call's argument checks (exact messages, nothing launched), output
allocation, and the exact kernel specialisations and arguments it launches, against stand-in
kernels that record the launches. (What the kernels compute: tests/gpu/test_moe_*.py.)"""
import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(os.path.dirname(__file__), "..", "..", "build", "python")))

import tilec  # noqa: E402
import tilec.moe as moe  # noqa: E402
from tilec import _runtime  # noqa: E402


class Recorder:
    def __init__(self):
        self.calls = []
        self.on_launch = None

    def kernel(self, name, generics, t):
        rec = self

        class K:
            def launch(self, *args, stream=0, num_sms=0):
                rec.calls.append((name, generics, args, num_sms))
                if rec.on_launch:
                    rec.on_launch(name, generics, args)
        return K()


@pytest.fixture
def rec(monkeypatch):
    r = Recorder()
    monkeypatch.setattr(_runtime, "kernel", r.kernel)
    for m in (moe.get_fused_mapping_kernel, moe.common):   # the modules that read get_num_sms
        monkeypatch.setattr(m, "get_num_sms", lambda: 132)
    return r


def raises(msg):
    return pytest.raises(ValueError, match="^" + msg.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                         .replace("]", r"\]").replace("+", r"\+").replace("*", r"\*") + "$")


# ---- topk_gate, topk_sum_and_topk_group_idx ---------------------------------------------------

def test_topk_gate_launch(rec):
    s = torch.zeros((10, 72))
    idx = moe.topk_gate(s, 6)
    assert idx.shape == (10, 6) and idx.dtype == torch.int64 and idx.is_contiguous()
    name, gen, args, _ = rec.calls[0]
    assert name == "topk_gate" and gen == ("E=72", "K=6") and args[0] is s and args[1] is idx


def test_topk_gate_empty_and_errors(rec):
    assert moe.topk_gate(torch.zeros((0, 16)), 4).shape == (0, 4)
    with raises("topk_gate: scores must be float32, got float64"):
        moe.topk_gate(torch.zeros((4, 16), dtype=torch.float64), 2)
    with raises("topk_gate: scores must be 2-D, got 1-D"):
        moe.topk_gate(torch.zeros(16), 2)
    with raises("topk_gate: scores must be contiguous"):
        moe.topk_gate(torch.zeros((16, 8)).T, 2)
    with raises("topk_gate: num_topk must be in [1, 16] (the number of experts), got 17"):
        moe.topk_gate(torch.zeros((4, 16)), 17)
    with raises("topk_gate: at most 1024 experts, got 1040"):
        moe.topk_gate(torch.zeros((4, 1040)), 2)
    assert not rec.calls


def test_topk_sum_and_topk_group_idx(rec):
    s = torch.zeros((5, 8, 32))
    out = moe.topk_sum_and_topk_group_idx(s, 2, 4)
    assert out.shape == (5, 4) and out.dtype == torch.int64
    assert rec.calls[0][:2] == ("topk_sum_and_topk_group_idx", ("G=8", "P=32", "NS=2", "NK=4"))
    with raises("topk_sum_and_topk_group_idx: num_topk_sum must be 1 or 2, got 3"):
        moe.topk_sum_and_topk_group_idx(s, 3, 4)
    with raises("topk_sum_and_topk_group_idx: num_topk_sum (2) cannot exceed the group size (1)"):
        moe.topk_sum_and_topk_group_idx(torch.zeros((5, 8, 1)), 2, 4)
    with raises("topk_sum_and_topk_group_idx: at most 32 groups, got 33"):
        moe.topk_sum_and_topk_group_idx(torch.zeros((5, 33, 2)), 2, 4)
    with raises("topk_sum_and_topk_group_idx: num_topk_groups must be in [1, 8] (the number of groups), got 9"):
        moe.topk_sum_and_topk_group_idx(s, 2, 9)
    with raises("topk_sum_and_topk_group_idx: scores must be 3-D, got 2-D"):
        moe.topk_sum_and_topk_group_idx(torch.zeros((5, 8)), 1, 2)
    assert len(rec.calls) == 1


# ---- top2_sum_gate --------------------------------------------------------------------------

def gate_args(T=6, E=72, **kw):
    a = dict(logits=torch.zeros((T, E)), bias=torch.zeros(E), num_topk=6, num_topk_groups=0, num_groups=0,
             use_shared_as_routed=False, num_shared_experts=1, routed_scaling_factor=1.5, ep_rank=0,
             num_ep_ranks=4, tp_rank=1, num_tp_ranks=2, scoring_func="sigmoid")
    a.update(kw)
    return a


def test_top2_sum_gate_plain(rec):
    a = gate_args()
    idx, w = moe.top2_sum_gate(**a)
    assert idx.shape == (6, 6) and idx.dtype == torch.int64 and w.dtype == torch.float32
    name, gen, args, _ = rec.calls[0]
    assert name == "top2_sum_gate"
    assert gen == ("E=72", "K=6", "S=0", "NG=0", "NTG=0", "SCORING=0", "mask=absent", "fix_routing_mask=absent",
                   "to_physical_map=absent", "logical_count=absent", "unmapped_topk_idx=absent", "invalid=absent")
    assert args[0] is a["logits"] and args[2] is idx and args[3] is w
    assert args[4:10] == (None,) * 6
    assert args[10:] == (1.5, 0, 18, 1, 2)  # scale, ep_rank, R = 72 // 4, tp_rank, num_tp_ranks


def test_top2_sum_gate_all_options(rec):
    T, E, S, X = 5, 256, 2, 32
    a = gate_args(T=T, E=E, num_topk=8, num_groups=8, num_topk_groups=4, use_shared_as_routed=True,
                  num_shared_experts=S, scoring_func="SqrtSoftplus", ep_rank=3, tp_rank=0)
    a["mask"] = torch.ones((T, 1), dtype=torch.bool)
    a["unmapped_topk_idx"] = torch.zeros((T, 10), dtype=torch.int64)[:, :8]
    a["fix_routing_mask"] = torch.ones(T, dtype=torch.bool)
    a["to_physical_map"] = torch.zeros((E + S, 1 + X), dtype=torch.int32)
    a["logical_count"] = torch.ones(E + S, dtype=torch.int32)
    idx, w = moe.top2_sum_gate(**a)
    assert idx.shape == (T, 10) and w.shape == (T, 10)
    name, gen, args, _ = rec.calls[0]
    assert gen == ("E=256", "K=8", "S=2", "NG=8", "NTG=4", "SCORING=1", "mask=present", "fix_routing_mask=present",
                   "to_physical_map=present", "logical_count=present", "unmapped_topk_idx=present", "invalid=absent")
    assert args[4].dtype == torch.uint8 and args[4].shape == (T,) and args[5].dtype == torch.uint8
    assert args[8] is a["unmapped_topk_idx"]
    assert args[11:13] == (3, (256 + 32) // 4)


def test_top2_sum_gate_groups_all_kept_is_ungrouped(rec):
    moe.top2_sum_gate(**gate_args(E=256, num_topk=8, num_groups=8, num_topk_groups=8, scoring_func="softmax"))
    assert rec.calls[0][1][3:6] == ("NG=0", "NTG=0", "SCORING=2")


def test_top2_sum_gate_empty(rec):
    idx, w = moe.top2_sum_gate(**gate_args(T=0))
    assert idx.shape == (0, 6) and w.shape == (0, 6) and not rec.calls


@pytest.mark.parametrize("kw, msg", [
    (dict(scoring_func="identity"),
     "top2_sum_gate: scoring_func 'identity' is not supported (sigmoid, sqrtsoftplus or softmax)"),
    (dict(scoring_func="relu"), "relu is not a valid ScoringFunc"),
    (dict(num_groups=8, num_topk_groups=0),
     "top2_sum_gate: num_groups and num_topk_groups must both be 0 or both be positive, got 8 and 0"),
    (dict(num_topk=73), "top2_sum_gate: num_topk must be in [1, 72] (the number of experts), got 73"),
    (dict(num_groups=4, num_topk_groups=5), "top2_sum_gate: num_topk_groups (5) cannot exceed num_groups (4)"),
    (dict(num_groups=5, num_topk_groups=2),
     "top2_sum_gate: the number of experts (72) must be a multiple of num_groups (5)"),
    (dict(num_groups=36, num_topk_groups=2), "top2_sum_gate: grouping supports at most 32 groups, got 36"),
    (dict(num_groups=2, num_topk_groups=1), "top2_sum_gate: grouping needs 2 to 32 experts per group, got 36"),
    (dict(num_groups=24, num_topk_groups=2, num_topk=7),
     "top2_sum_gate: num_topk (7) exceeds the experts of the kept groups (6)"),
    (dict(use_shared_as_routed=True, num_shared_experts=3),
     "top2_sum_gate: num_shared_experts must be 1 or 2 with use_shared_as_routed, got 3"),
    (dict(use_shared_as_routed=True, num_shared_experts=1),
     "top2_sum_gate: use_shared_as_routed needs to_physical_map and logical_count"),
    (dict(to_physical_map=torch.zeros((72, 1), dtype=torch.int32)),
     "top2_sum_gate: to_physical_map and logical_count must be given together"),
    (dict(to_physical_map=torch.zeros((73, 1), dtype=torch.int32), logical_count=torch.ones(73, dtype=torch.int32)),
     "top2_sum_gate: to_physical_map must be (72, 1 + num_extra_experts), got (73, 1)"),
    (dict(use_shared_as_routed=True, num_shared_experts=2, to_physical_map=torch.zeros((74, 2), dtype=torch.int32),
          logical_count=torch.ones(74, dtype=torch.int32)),
     "top2_sum_gate: use_shared_as_routed needs at least 2 extra experts in to_physical_map, got 1"),
    (dict(bias=torch.zeros(71)), "top2_sum_gate: bias must have 72 elements (one per expert), got 71"),
    (dict(bias=torch.zeros(72, dtype=torch.bfloat16)), "top2_sum_gate: bias must be float32, got bfloat16"),
    (dict(mask=torch.ones(5, dtype=torch.bool)), "top2_sum_gate: mask must be a bool tensor with 6 elements (one per token)"),
    (dict(fix_routing_mask=torch.ones(6, dtype=torch.bool)),
     "top2_sum_gate: fix_routing_mask needs unmapped_topk_idx (the fixed indices)"),
    (dict(unmapped_topk_idx=torch.zeros((6, 5), dtype=torch.int64)),
     "top2_sum_gate: unmapped_topk_idx must be (6, 6) with unit stride along k"),
    (dict(num_ep_ranks=0), "top2_sum_gate: num_ep_ranks must be in [1, 72], got 0"),
    (dict(tp_rank=2), "top2_sum_gate: tp_rank must be in [0, num_tp_ranks), got 2 of 2"),
    (dict(num_topk=33, logits=torch.zeros((6, 72))), "top2_sum_gate: num_topk must be at most 32, got 33"),
])
def test_top2_sum_gate_errors(rec, kw, msg):
    with raises(msg):
        moe.top2_sum_gate(**gate_args(**kw))
    assert not rec.calls


# ---- get_fused_mapping ------------------------------------------------------------------------

def test_fused_mapping_single_block(rec):
    idx = torch.zeros((100, 8), dtype=torch.int64)
    r = moe.get_fused_mapping(idx, 32, 1000, 16, force_no_sync=True)
    assert len(rec.calls) == 1
    name, gen, args, _ = rec.calls[0]
    assert name == "fused_scatter" and gen == ("E=32", "K=8", "SINGLE=true", "part=absent", "invalid=absent")
    assert args[0].shape == (800,) and args[1] is None and args[-2:] == (0, 16)
    assert [t.shape for t in r[:7]] == [(1000,)] * 3 + [(100, 8)] + [(32,)] * 3
    assert all(t.dtype == torch.int32 for t in r[:7]) and r[7] == []


def test_fused_mapping_three_kernels(rec):
    T, K, E = 4001, 9, 72
    idx = torch.zeros((T, K), dtype=torch.int64)
    r = moe.get_fused_mapping(idx, E, 0, 128, force_no_sync=True)
    N = (T * K + 127 * E) // 128 * 128
    assert r[0].shape == (N,) and r[7] == []     # force_no_sync with 0: the upper bound, untrimmed
    names = [c[0] for c in rec.calls]
    assert names == ["fused_count", "fused_scan", "fused_scatter"]
    cb = (T * K + 131) // 132
    cb = (cb + 255) // 256 * 256
    nb = (T * K + cb - 1) // cb
    count, scan, scatter = rec.calls
    assert count[2][2] == cb and count[2][1].shape == (nb + 1, E)
    assert scan[2][0] is count[2][1] and scan[2][-1] == 128
    assert scatter[1] == ("E=72", "K=9", "SINGLE=false", "part=present", "invalid=absent") and scatter[2][-2:] == (cb, 128)


def test_fused_mapping_sync_trims(rec):
    def fill(name, gen, args):
        args[8].copy_(torch.tensor([16, 0, 32], dtype=torch.int32))   # aligned counts
    rec.on_launch = fill
    r = moe.get_fused_mapping(torch.zeros((10, 4), dtype=torch.int64), 3, 0, 16)
    assert r[7] == [16, 0, 32] and r[0].shape == (48,) and r[1].shape == (48,) and r[2].shape == (48,)
    assert r[3].shape == (10, 4)


@pytest.mark.parametrize("args, msg", [
    ((torch.zeros((4, 2), dtype=torch.int32), 8, 0, 16), "get_fused_mapping: topk_idx must be int64, got int32"),
    ((torch.zeros((4, 2), dtype=torch.int64), 0, 0, 16), "get_fused_mapping: num_experts must be in [1, 1024], got 0"),
    ((torch.zeros((4, 2), dtype=torch.int64), 8, 0, 0), "get_fused_mapping: alignment must be positive, got 0"),
    ((torch.zeros((4, 2), dtype=torch.int64), 8, -1, 16), "get_fused_mapping: num_expanded_tokens must be >= 0, got -1"),
])
def test_fused_mapping_errors(rec, args, msg):
    with raises(msg):
        moe.get_fused_mapping(*args)
    assert not rec.calls


# ---- expand / reduce ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, H, gens", [
    (torch.bfloat16, 7168, ("V=i32", "H=3584", "BH=3584", "K=2", "NT=128")),    # 896 vectors = 128 threads x 7
    (torch.bfloat16, 2560, ("V=i32", "H=1280", "BH=1280", "K=2", "NT=64")),     # 320 vectors = 64 x 5
    (torch.bfloat16, 576, ("V=i32", "H=288", "BH=512", "K=2", "NT=128")),       # 72 vectors: one masked chunk
    (torch.float32, 7168, ("V=i32", "H=7168", "BH=3584", "K=2", "NT=128")),     # two chunks of 7 vectors per thread
    (torch.uint8, 2050, ("V=i16", "H=1025", "BH=1024", "K=2", "NT=128")),       # odd words: 2-byte words, masked
])
def test_expand_specialisation(rec, dtype, H, gens):
    x = torch.zeros((3, H), dtype=dtype)
    ttp = torch.zeros((3, 2), dtype=torch.int32)
    pte = torch.zeros(7, dtype=torch.int32)
    out = moe.expand_to_fused(x, ttp, pte)
    assert out.shape == (7, H) and out.dtype == dtype
    name, gen, args, _ = rec.calls[0]
    assert name == "expand_to_fused" and gen == gens + ("invalid=absent",)
    assert args[0].data_ptr() == x.data_ptr() and args[3].data_ptr() == out.data_ptr()


def test_expand_zero_tokens_still_zero_fills(rec):
    out = moe.expand_to_fused(torch.zeros((0, 256), dtype=torch.bfloat16), torch.zeros((0, 4), dtype=torch.int32),
                              torch.full((32,), -1, dtype=torch.int32))
    assert out.shape == (32, 256) and len(rec.calls) == 1
    moe.expand_to_fused(torch.zeros((0, 256), dtype=torch.bfloat16), torch.zeros((0, 4), dtype=torch.int32),
                        torch.zeros(0, dtype=torch.int32))
    assert len(rec.calls) == 1


def test_expand_errors(rec):
    x = torch.zeros((3, 64), dtype=torch.bfloat16)
    with raises("expand_to_fused: x must be a contiguous 2-D tensor"):
        moe.expand_to_fused(x.T, torch.zeros((3, 2), dtype=torch.int32), torch.zeros(7, dtype=torch.int32))
    with raises("expand_to_fused: token_topk_to_pos must be int32, got int64"):
        moe.expand_to_fused(x, torch.zeros((3, 2), dtype=torch.int64), torch.zeros(7, dtype=torch.int32))
    with raises("expand_to_fused: token_topk_to_pos must have one row per token (3), got 4"):
        moe.expand_to_fused(x, torch.zeros((4, 2), dtype=torch.int32), torch.zeros(7, dtype=torch.int32))
    with raises("expand_to_fused: pos_to_expert must be 1-D, got 2-D"):
        moe.expand_to_fused(x, torch.zeros((3, 2), dtype=torch.int32), torch.zeros((7, 1), dtype=torch.int32))
    assert not rec.calls


@pytest.mark.parametrize("col", [False, True])
def test_expand_with_sf_layouts(rec, col):
    T, H, N = 5, 512, 10
    data = torch.zeros((T, H), dtype=torch.float8_e4m3fn)
    if col:
        sf = torch.zeros((T, 1), dtype=torch.int32)      # cdiv(cdiv(512, 128), 4) = 1 packed word
    else:
        sf = torch.zeros((T, 4))
    out, out_sf = moe.expand_to_fused_with_sf((data, sf), 128, torch.zeros((T, 2), dtype=torch.int32),
                                              torch.zeros(N, dtype=torch.int32), use_tma_aligned_col_major_sf=col)
    assert out.shape == (N, H) and out.dtype == data.dtype
    if col:
        assert out_sf.shape == (N, 1) and out_sf.stride() == (1, 12) and out_sf.dtype == torch.int32
    else:
        assert out_sf.shape == (N, 4) and out_sf.stride() == (4, 1) and out_sf.dtype == torch.float32
    name, gen, args, _ = rec.calls[0]
    assert name == "expand_to_fused_with_sf" and gen == ("V=i32", "H=128", "BH=128", "K=2", "NT=32", "invalid=absent")
    assert args[1].dtype == torch.int32 and args[5].data_ptr() == out_sf.data_ptr()
    assert args[5].stride() == out_sf.stride()


def test_expand_with_sf_errors(rec):
    data = torch.zeros((5, 512), dtype=torch.float8_e4m3fn)
    ttp, pte = torch.zeros((5, 2), dtype=torch.int32), torch.zeros(10, dtype=torch.int32)
    with raises("expand_to_fused_with_sf: packed UE8M0 (int32) scales need use_tma_aligned_col_major_sf=True"):
        moe.expand_to_fused_with_sf((data, torch.zeros((5, 1), dtype=torch.int32)), 128, ttp, pte)
    with raises("expand_to_fused_with_sf: sf must be (5, 16), got (5, 4)"):
        moe.expand_to_fused_with_sf((data, torch.zeros((5, 4))), 32, ttp, pte)
    with raises("expand_to_fused_with_sf: num_per_channels must be 32 or 128, got 64"):
        moe.expand_to_fused_with_sf((data, torch.zeros((5, 8))), 64, ttp, pte)
    with raises("expand_to_fused_with_sf: x must be a (data, sf) pair"):
        moe.expand_to_fused_with_sf(data, 128, ttp, pte)
    with raises("expand_to_fused_with_sf: sf must be float32 or int32, got float16"):
        moe.expand_to_fused_with_sf((data, torch.zeros((5, 4), dtype=torch.float16)), 128, ttp, pte)
    assert not rec.calls


@pytest.mark.parametrize("dtype, fmt, H, tail", [
    (torch.bfloat16, "", 7168, ("TX=bf16", "TO=bf16", "H=7168", "K=6", "NT=224", "V=4", "OA=8")),   # whole rows
    (torch.float32, "", 2560, ("TX=f32", "TO=f32", "H=2560", "K=6", "NT=160", "V=2", "OA=4")),     # 320 = 160 x 2
    (torch.float32, "e4m3", 2048, ("TX=f32", "TO=e4m3", "H=2048", "K=6", "NT=64", "V=4", "OA=16")),
])
def test_reduce_specialisation(rec, dtype, fmt, H, tail):
    T, K, N = 4, 6, 24
    x = torch.zeros((N, H), dtype=dtype)
    w = torch.zeros((T, K))
    ttp = torch.zeros((T, K), dtype=torch.int32)
    sf = torch.ones(1) if fmt else None
    out = moe.reduce_fused(x, w, ttp, fmt, sf=sf)
    assert out.shape == (T, H) and out.dtype == (torch.float8_e4m3fn if fmt else dtype)
    name, gen, args, _ = rec.calls[0]
    assert name == "reduce_fused" and gen[:7] == tail
    assert gen[7:] == ("topk_weights=present", "x_sf=absent", "sf=present" if fmt else "sf=absent", "invalid=absent")
    assert args[0] is x and args[1] is ttp and args[2] is w and args[3] is None and args[5] is out


def test_reduce_quant_input_and_out(rec):
    T, K, N, H = 4, 2, 8, 256
    x, xs = torch.zeros((N, H), dtype=torch.bfloat16), torch.zeros(N)
    out = torch.zeros((T, H + 8), dtype=torch.bfloat16)[:, :H]   # row stride 264 = 8 * 33
    r = moe.reduce_fused((x, xs), None, torch.zeros((T, K), dtype=torch.int32), out=out)
    assert r is out
    name, gen, args, _ = rec.calls[0]
    assert gen == ("TX=bf16", "TO=bf16", "H=256", "K=2", "NT=32", "V=1", "OA=8", "topk_weights=absent", "x_sf=present",
                   "sf=absent", "invalid=absent")
    assert args[3] is xs
    out2 = torch.zeros((T, H + 1), dtype=torch.bfloat16)[:, :H]
    moe.reduce_fused(x, None, torch.zeros((T, K), dtype=torch.int32), out=out2)
    assert rec.calls[1][1][6] == "OA=1"


def test_reduce_errors(rec):
    x = torch.zeros((8, 256), dtype=torch.bfloat16)
    ttp = torch.zeros((4, 2), dtype=torch.int32)
    with raises("reduce_fused: the hidden size must be a multiple of 256, got 128"):
        moe.reduce_fused(torch.zeros((8, 128), dtype=torch.bfloat16), None, ttp)
    with raises("reduce_fused: x must be float32 or bfloat16, got float16"):
        moe.reduce_fused(x.half(), None, ttp)
    with raises("reduce_fused: fp8_format must be '' or 'e4m3', got 'e5m2'"):
        moe.reduce_fused(x, None, ttp, "e5m2")
    with raises("reduce_fused: sf (the output scale) is only for fp8_format='e4m3'"):
        moe.reduce_fused(x, None, ttp, "", sf=torch.ones(1))
    with raises("reduce_fused: x_sf must have one scale per row of x (8), got 7"):
        moe.reduce_fused((x, torch.zeros(7)), None, ttp)
    with raises("reduce_fused: topk_weights must be (4, 2) like token_topk_to_pos, got (4, 3)"):
        moe.reduce_fused(x, torch.zeros((4, 3)), ttp)
    with raises("reduce_fused: out must be (4, 256), got (4, 512)"):
        moe.reduce_fused(x, None, ttp, out=torch.zeros((4, 512), dtype=torch.bfloat16))
    with raises("reduce_fused: out must be bfloat16, got float32"):
        moe.reduce_fused(x, None, ttp, out=torch.zeros((4, 256)))
    with raises("reduce_fused: sf must be a float32 tensor with one element"):
        moe.reduce_fused(x, None, ttp, "e4m3", sf=torch.ones(2))
    assert not rec.calls


def test_reduce_empty(rec):
    out = moe.reduce_fused(torch.zeros((0, 256)), None, torch.zeros((0, 3), dtype=torch.int32))
    assert out.shape == (0, 256) and not rec.calls


# ---- small utilities ----------------------------------------------------------------------

def test_normalize_weight(rec):
    w = torch.zeros((7, 9))
    den, out = moe.normalize_weight(w)
    assert den.shape == (7,) and out.shape == (7, 9)
    assert rec.calls[0][:2] == ("normalize_weight", ("K=9",)) and rec.calls[0][2] == (w, den, out)
    with raises("normalize_weight: topk_weights must be float32, got float64"):
        moe.normalize_weight(w.double())


@pytest.mark.parametrize("T, single", [(1024, True), (1025, False)])
def test_group_count_and_aux_fi(rec, T, single):
    idx = torch.zeros((T, 8), dtype=torch.int64)
    c = moe.group_count(idx, 32)
    f = moe.aux_fi(idx, 32, 6)
    assert c.shape == (32,) and c.dtype == torch.int32 and f.shape == (32,) and f.dtype == torch.float32
    (n1, g1, a1, s1), (n2, g2, a2, s2) = rec.calls
    assert n1 == n2 == "moe_histogram" and s1 == s2 == 132
    assert g1 == ("E=32", f"SINGLE={'true' if single else 'false'}", "counts=present", "freq=absent", "invalid=absent")
    assert g2 == ("E=32", f"SINGLE={'true' if single else 'false'}", "counts=absent", "freq=present", "invalid=absent")
    assert a1[0].shape == (T * 8,) and a1[1] is c and a1[2] is None
    assert a2[1] is None and a2[2] is f and a2[3] is None and a2[4] == float(T * 6)
    if not single:  # several blocks add into zeroed outputs
        assert int(c.abs().sum()) == 0 and float(f.abs().sum()) == 0.0


def test_histogram_empty_and_errors(rec):
    assert torch.equal(moe.group_count(torch.zeros((0, 4), dtype=torch.int64), 5), torch.zeros(5, dtype=torch.int32))
    assert torch.equal(moe.aux_fi(torch.zeros((0, 4), dtype=torch.int64), 5, 2), torch.zeros(5))
    with raises("group_count: num_groups must be in [1, 8192], got 0"):
        moe.group_count(torch.zeros((3, 4), dtype=torch.int64), 0)
    with raises("aux_fi: num_aux_topk must be positive, got 0"):
        moe.aux_fi(torch.zeros((3, 4), dtype=torch.int64), 8, 0)
    with raises("aux_fi: topk_idx must be int64, got int32"):
        moe.aux_fi(torch.zeros((3, 4), dtype=torch.int32), 8, 1)
    assert not rec.calls


@pytest.mark.parametrize("dtype, name", [(torch.int64, "i64"), (torch.int32, "i32"), (torch.int8, "i8")])
def test_mask_indices_by_tp(rec, dtype, name):
    idx = torch.zeros((10, 6), dtype=dtype)
    out = moe.mask_indices_by_tp(idx, 256, 8, 1, 4)
    assert out.shape == idx.shape and out.dtype == dtype
    n, g, a, _ = rec.calls[0]
    assert n == "mask_indices_by_tp" and g == (f"V={name}", "R=32", "NTP=4") and a[0].shape == (60,) and a[2:] == (1,)
    assert a[1].data_ptr() == out.data_ptr()


def test_mask_indices_errors(rec):
    idx = torch.zeros((10, 6), dtype=torch.int64)
    with raises("mask_indices_by_tp: tp_rank must be in [0, num_tp_ranks), got 4 of 4"):
        moe.mask_indices_by_tp(idx, 256, 8, 4, 4)
    with raises("mask_indices_by_tp: n // num_ep_ranks (experts per EP rank) must be positive, got n=4, num_ep_ranks=8"):
        moe.mask_indices_by_tp(idx, 4, 8, 0, 1)
    with raises("mask_indices_by_tp: indices must be int8 or int16 or int32 or int64 or uint8, got float32"):
        moe.mask_indices_by_tp(idx.float(), 256, 8, 0, 1)
    assert not rec.calls


def test_inplace_unique(rec):
    g = torch.zeros((5, 9), dtype=torch.int64)
    assert moe.inplace_unique_group_indices(g, 72) is None
    assert rec.calls[0][:2] == ("inplace_unique_group_indices", ("K=9", "invalid=absent"))
    assert rec.calls[0][2] == (g, None, 128)
    moe.inplace_unique_group_indices(torch.zeros((0, 9), dtype=torch.int64), 8)
    assert len(rec.calls) == 1
    with raises("inplace_unique_group_indices: num_groups must be in [1, 128], got 129"):
        moe.inplace_unique_group_indices(g, 129)


def test_scoring_func():
    from tilec.moe.scoring import ScoringFunc
    assert [str(s) for s in ScoringFunc] == ["sigmoid", "sqrtsoftplus", "softmax", "identity"]
    assert ScoringFunc.from_str("SoftMax") is ScoringFunc.SOFTMAX and int(ScoringFunc.SQRTSOFTPLUS) == 1
    with pytest.raises(ValueError, match="^nope is not a valid ScoringFunc$"):
        ScoringFunc.from_str("nope")
