"""Every public function of tilec.quant, tilec.moe, tilec.transpose, tilec.engram and the mHC ops
(tilec.modeling.mhc, its ops, round_to_tf32) called with one argument of
the wrong kind at a time — a float or a bool for an integer, a string or None for a flag, a list
or a complex tensor for a tensor, a wrong pair for a block size — raises ValueError or TypeError
whose message names the function and the argument, before anything is launched (the runtime
records no launch). A valid call of each function comes first, so that the baseline is known to
work; the hostile values then replace one argument each."""
import inspect
import os
import sys

import pytest
import torch

sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                                                     "python")))

import tilec  # noqa: E402
from tilec import _runtime, engram as EG, moe, quant as Q, transpose as TR  # noqa: E402
from tilec.mhc import norm_fn_kernel as NFK  # noqa: E402
from tilec.modeling import mhc as MHC  # noqa: E402
from tilec.modeling.mhc import ops as MO  # noqa: E402


def bf(*shape):
    return torch.randn(shape).bfloat16()


def i32(*vals):
    return torch.tensor(vals, dtype=torch.int32)


def fp8(t, h, n=128):
    return Q.per_token_cast(bf(t, h), "e4m3", n)


def mapping(T=4, K=2, E=4):
    idx = torch.arange(T * K).view(T, K) % E
    return moe.get_fused_mapping(idx, E, 0, 16)


def f32(*shape):
    return torch.randn(shape)


def _valid_calls():
    """(function, keyword arguments of a valid call) for every public function."""
    m = mapping()
    p2e, _, ptt, ttp = m[0], m[1], m[2], m[3]
    xq = fp8(len(p2e), 512)
    return [
        (Q.per_token_cast, dict(x=bf(4, 256), fmt="e4m3", num_per_channels=128)),
        (Q.per_token_cast_with_sf_only, dict(x=bf(4, 256), fmt="e4m3", num_per_channels=128)),
        (Q.per_token_cast_with_precomputed_sf, dict(x=bf(4, 256), fmt="e4m3", num_per_channels=128,
                                                    sf=torch.ones(4, 2))),
        (Q.per_block_cast, dict(x=bf(64, 256), fmt="e4m3", block_size=(32, 32))),
        (Q.per_block_cast_with_sf_only, dict(x=bf(64, 256), fmt="e4m3", block_size=(32, 32))),
        (Q.per_block_cast_with_precomputed_sf, dict(x=bf(64, 256), fmt="e4m3", block_size=(32, 32),
                                                    sf=torch.ones(2, 8))),
        (Q.per_block_cast_lossless, dict(x=Q.per_token_cast(bf(32, 256), "e2m1", 32, round_sf=True),
                                         fmt="e4m3", x_block_size=(1, 32), out_block_size=(32, 32))),
        (Q.cast_back, dict(x=fp8(4, 256), fmt="bf16", x_block_size=(1, 128))),
        (Q.per_token_cast_back, dict(x=fp8(4, 256), fmt="bf16", num_per_channels=128)),
        (Q.per_channel_cast, dict(x=bf(128, 256), fmt="e4m3", num_per_tokens=128)),
        (Q.per_channel_cast_fused, dict(x=bf(128, 256), fmt="e4m3", num_per_tokens=128)),
        (Q.per_channel_cast_and_transpose, dict(x=bf(128, 256), fmt="e4m3", num_per_tokens=128)),
        (Q.swiglu_forward_and_per_token_cast, dict(x=bf(4, 512), fmt="e4m3", num_per_channels=128)),
        (Q.swiglu_forward_and_per_channel_cast_and_transpose, dict(x=bf(128, 512), fmt="e4m3", num_per_tokens=128)),
        (Q.swiglu_backward_and_per_token_cast, dict(x=xq, grad_out=bf(len(p2e), 256), weight=torch.rand(4, 2),
                                                    pos_to_token_topk=ptt, token_topk_to_pos=ttp,
                                                    num_per_channels=128)),
        (Q.unpack_from_e2m1fn_x2, dict(x=torch.zeros(4, 8, dtype=torch.int8))),
        (TR.transpose, dict(x=bf(64, 64))),
        (TR.batched_transpose, dict(x=bf(2, 64, 64))),
        (moe.topk_gate, dict(scores=torch.randn(4, 16), num_topk=2)),
        (moe.topk_sum_and_topk_group_idx, dict(scores=torch.randn(4, 4, 8), num_topk_sum=2, num_topk_groups=2)),
        (moe.top2_sum_gate, dict(logits=torch.randn(4, 16), bias=torch.zeros(16), num_topk=2, num_topk_groups=0,
                                 num_groups=0, use_shared_as_routed=False, num_shared_experts=0,
                                 routed_scaling_factor=1.0, ep_rank=0, num_ep_ranks=1, tp_rank=0, num_tp_ranks=1,
                                 scoring_func="sigmoid")),
        (moe.get_fused_mapping, dict(topk_idx=torch.zeros(4, 2, dtype=torch.int64), num_experts=4,
                                     num_expanded_tokens=0, alignment=16)),
        (moe.expand_to_fused, dict(x=bf(4, 256), token_topk_to_pos=ttp, pos_to_expert=p2e)),
        (moe.expand_to_fused_with_sf, dict(x=fp8(4, 256), num_per_channels=128, token_topk_to_pos=ttp,
                                           pos_to_expert=p2e)),
        (moe.reduce_fused, dict(x=bf(len(p2e), 256), topk_weights=torch.rand(4, 2), token_topk_to_pos=ttp)),
        (moe.normalize_weight, dict(topk_weights=torch.rand(4, 2))),
        (moe.group_count, dict(group_idx=torch.zeros(4, 2, dtype=torch.int64), num_groups=4)),
        (moe.aux_fi, dict(topk_idx=torch.zeros(4, 2, dtype=torch.int64), num_experts=4, num_aux_topk=2)),
        (moe.mask_indices_by_tp, dict(indices=torch.zeros(4, 2, dtype=torch.int64), n=8, num_ep_ranks=2, tp_rank=0,
                                      num_tp_ranks=2)),
        (moe.inplace_unique_group_indices, dict(group_indices=torch.zeros(4, 2, dtype=torch.int64), num_groups=8)),
        (EG.engram_hash, dict(ngram_token_ids=torch.randint(0, 100, (4, 3), dtype=torch.int32),
                              multipliers=torch.randint(0, 100, (2, 3)),
                              vocab_sizes=torch.full((2, 2, 4), 1000, dtype=torch.int32),
                              offsets=torch.zeros(2, 8, dtype=torch.int32))),
        (EG.fused_weight, dict(weight_hidden=bf(4, 256), weight_embed=bf(4, 256))),
        (EG.grad_w_reduce, dict(grad_w_partial=f32(3, 4, 256), weight_hidden=bf(4, 256), weight_embed=bf(4, 256),
                                grad_weight_hidden=f32(4, 256), grad_weight_embed=f32(4, 256))),
        (EG.engram_gate_fwd, dict(hidden_states=bf(4, 4, 256), k=bf(4, 4, 256), v=bf(4, 256), weight_fused=f32(4, 256),
                                  eps=1e-20, clamp_value=1e-6, save_for_backward=True)),
        (EG.engram_gate_bwd, dict(grad_out=bf(4, 4, 256), hidden_states=bf(4, 4, 256), k=bf(4, 4, 256), v=bf(4, 256),
                                  weight_fused=f32(4, 256), dot=f32(4, 4), gate_score=torch.rand(4, 4),
                                  rstd_x=torch.rand(4, 4), rstd_k=torch.rand(4, 4), clamp_value=1e-6)),
        (MO.expand_to_mhc, dict(hidden=bf(2, 3, 256), mhc_mult=4, out=bf(2, 3, 4, 256))),
        (MHC.expand_from_embedding, dict(x=bf(2, 3, 256), mhc_mult=4)),
        (MO.sinkhorn_normalize, dict(x=f32(2, 3, 4, 4), repeat=10, eps=1e-6)),
        (MO.mhc_pre_split_mixes, dict(input_mixes=f32(2, 3, 24), mhc_scale=f32(3), mhc_base=f32(24), mhc_mult=4,
                                      mhc_post_mult_value=2.0, mhc_pre_eps=1e-2)),
        (MO.mhc_head_compute_mix, dict(input_mix=f32(2, 3, 4), mhc_scale=f32(1), mhc_base=f32(4), mhc_pre_eps=1e-2)),
        (MO.mhc_pre_apply_mix, dict(x=bf(2, 3, 4, 256), mix=torch.rand(2, 3, 4, 1), out=bf(2, 3, 256))),
        (MO.mhc_post, dict(x=bf(2, 3, 256), residual=bf(2, 3, 4, 256), post_layer_mix=f32(2, 3, 4, 1),
                           comb_res_mix=f32(2, 3, 4, 4), out=bf(2, 3, 4, 256))),
        (MO.mhc_post_fwd, dict(x=bf(2, 3, 256), residual=bf(2, 3, 4, 256), post_layer_mix=f32(2, 3, 4, 1),
                               comb_res_mix=f32(2, 3, 4, 4), out=bf(2, 3, 4, 256))),
        (MO.mhc_post_bwd, dict(x=bf(2, 3, 256), residual=bf(2, 3, 4, 256), post_layer_mix=f32(2, 3, 4, 1),
                               comb_res_mix=f32(2, 3, 4, 4), d_o=bf(2, 3, 4, 256), fuse_grad_acc=False)),
        (NFK.round_to_tf32, dict(x=f32(4, 8))),
    ]


VALID = _valid_calls()


def test_every_public_function_is_covered():
    covered = {f.__name__ for f, _ in VALID}
    public = {n for mod in (Q, moe, TR, EG, MHC, MO) for n in getattr(mod, "__all__", dir(mod))
              if inspect.isfunction(getattr(mod, n, None)) and not n.startswith("_")}
    assert public <= covered, sorted(public - covered)


def hostile_values(v):
    """Values of the wrong kind for an argument whose valid value is v."""
    if isinstance(v, bool):
        return ["yes", None, 1.5]
    if isinstance(v, int):
        return [1.5, True, "3", None]
    if isinstance(v, float):
        return ["1.0", complex(1, 2), None, torch.ones(1)]
    if isinstance(v, str):
        return [3, None, b"e4m3"]
    if isinstance(v, torch.Tensor):
        return [v.tolist(), v.to(torch.complex64) if v.is_floating_point() else v.float(), None, 3]
    if isinstance(v, tuple) and all(isinstance(e, int) for e in v):
        return [(1.5, 2), (True, 32), "ab", (32,), None]
    if isinstance(v, tuple):   # a (data, sf) pair
        return [(v[0],), [v[0].tolist(), v[1]], (v[0], 2.0)]
    if isinstance(v, torch.dtype):
        return ["float32", 3]
    raise AssertionError(type(v))


CASES = [(f, name, bad) for f, args in VALID for name, v in args.items() for bad in hostile_values(v)]


class NoLaunch:
    """Stands in for the runtime's kernel lookup: a launch of a hostile call is a test failure."""

    def __init__(self):
        self.launched = []

    def kernel(self, name, generics, t):
        rec = self

        class K:
            def launch(self, *args, **kw):
                rec.launched.append(name)
        return K()


@pytest.mark.parametrize("fn, args", VALID, ids=[f.__name__ for f, _ in VALID])
def test_valid_call(fn, args):
    fn(**args)


@pytest.mark.parametrize("fn, name, bad", CASES,
                         ids=[f"{f.__name__}-{n}-{type(b).__name__}{i}" for i, (f, n, b) in enumerate(CASES)])
def test_wrong_argument_kind(fn, name, bad, monkeypatch):
    args = dict(next(a for f, a in VALID if f is fn))
    args[name] = bad
    rec = NoLaunch()
    monkeypatch.setattr(_runtime, "kernel", rec.kernel)
    accepted = False
    try:
        fn(**args)
    except (ValueError, TypeError) as e:
        msg = str(e)
        assert msg.startswith(f"{fn.__name__}:"), msg
        assert name in msg, msg
    else:
        # None is a valid value for an optional argument; expand_to_fused moves rows of any dtype
        param = inspect.signature(fn).parameters[name]
        optional = param.default is None or "Optional" in str(param.annotation)
        any_dtype = fn is moe.expand_to_fused and name == "x" and isinstance(bad, torch.Tensor)
        assert (bad is None and optional) or any_dtype, f"{fn.__name__}({name}={bad!r}) was accepted"
        accepted = True
    assert not rec.launched or accepted


def test_set_num_sms_wrong_kind():
    for bad in (1.5, True, "8", 0, 10 ** 6):
        with pytest.raises(ValueError, match="^set_num_sms: num_sms must be"):
            tilec.set_num_sms(bad)
