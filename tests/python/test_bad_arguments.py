"""Every public function of tilec.quant, tilec.moe, tilec.transpose, tilec.engram and the mHC ops
(tilec.modeling.mhc, its ops, round_to_tf32) called with one argument of
the wrong kind at a time — a float or a bool for an integer, a string or None for a flag, a list
or a complex tensor for a tensor, a wrong pair for a block size — raises ValueError or TypeError
whose message names the function and the argument, before anything is launched (the runtime
records no launch). A valid call of each function comes first, so that the baseline is known to
work; the hostile values then replace one argument each. The same holds for every parameter
with a default, left out of the valid calls or not: its wrong values come from its annotation
(or its default's type): 1, 0, "yes", 1.0 for a bool; 1.5, True, "3" and the default as a
float for an int; "x", True, a complex for a float; a string, a list and a complex tensor for a
tensor. An output or in-place tensor that shares memory with an input is refused naming both,
in a full call and in a plan's replay."""
import inspect
import os
import sys
import typing

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
        (MO.mhc_pre_norm_fn, dict(residual=bf(2, 3, 4, 64), mhc_fn=f32(24, 256) * 1e-2, mhc_norm_weight=f32(256),
                                  mhc_norm_eps=1e-6, fuse_grad_acc=False, n_splits=4)),
        (MO.mhc_pre_big_fuse, dict(residual=bf(2, 3, 4, 64), fn=f32(24, 256) * 1e-2, mhc_scale=f32(3),
                                   mhc_base=f32(24), rms_eps=1e-6, mhc_pre_eps=1e-6, mhc_sinkhorn_eps=1e-6,
                                   mhc_post_mult_value=1.0, sinkhorn_repeat=10, n_splits=4)),
        (MO.mhc_multilayer_recompute, dict(initial_residual=bf(2, 3, 4, 64), pre_mix_list=[f32(2, 3, 4, 1)] * 2,
                                           layer_output_list=[bf(2, 3, 64)], post_mix_list=[f32(2, 3, 4, 1)],
                                           comb_mix_list=[f32(2, 3, 4, 4)], layer_input_list=[bf(2, 3, 64)] * 2,
                                           residual_list=[bf(2, 3, 4, 64)])),
        (MHC.mhc_pre, dict(residual=bf(2, 3, 4, 64), fn=f32(24, 256) * 1e-2, scale=f32(3), base=f32(24),
                           norm_weight=f32(256), norm_eps=1e-6, mhc_mult=4, post_mult_value=1.0, pre_eps=1e-6,
                           sinkhorn_eps=1e-6, sinkhorn_repeat=10, n_splits=4)),
        (MHC.mhc_head, dict(residual=bf(2, 3, 4, 64), fn=f32(4, 256) * 1e-2, scale=f32(1), base=f32(4),
                            norm_weight=f32(256), norm_eps=1e-6, mhc_mult=4, pre_eps=1e-6, n_splits=4)),
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
        return ["yes", None, 1.5, int(v)]
    if isinstance(v, int):
        return [1.5, True, "3", None, float(v)]
    if isinstance(v, float):
        return ["1.0", complex(1, 2), None, torch.ones(1)]
    if isinstance(v, str):
        return [3, None, b"e4m3"]
    if isinstance(v, torch.Tensor):
        return [v.tolist(), v.to(torch.complex64) if v.is_floating_point() else v.float(), None, 3]
    if isinstance(v, tuple) and all(isinstance(e, int) for e in v):
        return [(1.5, 2), (True, 32), "ab", (32,), None, (float(v[0]), v[1])]
    if isinstance(v, tuple):   # a (data, sf) pair
        return [(v[0],), [v[0].tolist(), v[1]], (v[0], 2.0)]
    if isinstance(v, list):    # a list of tensors
        return [None, 3, v[0], [t.tolist() for t in v]]
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


def _annotation(param):
    """(kind, optional) of a parameter: kind one of bool, int, float, str, tensor, pair, dtype,
    from its annotation, else from its default's type."""
    ann = param.annotation
    optional = param.default is None
    if typing.get_origin(ann) is typing.Union:
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        optional = optional or len(args) < len(typing.get_args(ann))
        ann = args[0] if len(args) == 1 else ann
    if ann in (bool, int, float, str):
        return ann.__name__, optional
    if ann is torch.Tensor:
        return "tensor", optional
    if ann is torch.dtype:
        return "dtype", optional
    if typing.get_origin(ann) is tuple and all(a is int for a in typing.get_args(ann)):
        return "pair", optional
    d = param.default
    for tp in (bool, int, float, str):
        if type(d) is tp:
            return tp.__name__, optional
    if isinstance(d, torch.dtype):
        return "dtype", optional
    raise AssertionError(f"parameter {param.name}: no kind for {ann!r} = {d!r}")


def wrong_kinds(kind, optional):
    """Values of the wrong kind for a parameter of ``kind`` (None too, where it is not optional)."""
    bad = {
        "bool": [1, 0, "yes", 1.0],
        "int": [1.5, True, "3"],
        "float": ["x", True, complex(1, 2)],
        "str": [3, True, b"e4m3"],
        "tensor": ["yes", [1, 2], torch.ones(4, 2, dtype=torch.complex64)],
        "pair": [(1.5, 2), (True, 32), "ab", (32,)],
        "dtype": ["float32", 3],
    }[kind]
    return bad if optional else bad + [None]


def _default_cases():
    """(function, parameter, wrong value) for every parameter with a default of every public
    function, its wrong values chosen by the parameter's annotation (or default's type)."""
    cases = []
    for fn, _ in VALID:
        for p in inspect.signature(fn).parameters.values():
            if p.default is inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            extra = [float(p.default)] if type(p.default) is int else []   # 16.0 for 16
            for bad in wrong_kinds(*_annotation(p)) + extra:
                cases.append((fn, p.name, bad))
    return cases


DEFAULT_CASES = _default_cases()


@pytest.mark.parametrize("fn, args", VALID, ids=[f.__name__ for f, _ in VALID])
def test_valid_call(fn, args):
    fn(**args)


def test_every_default_is_swept():
    """The sweep over defaults reaches the parameters the audit found unchecked."""
    swept = {(f.__name__, n) for f, n, _ in DEFAULT_CASES}
    for want in [("per_token_cast", "round_sf"), ("per_block_cast", "use_tma_aligned_col_major_sf"),
                 ("swiglu_forward_and_per_token_cast", "swiglu_clamp_value"),
                 ("swiglu_forward_and_per_channel_cast_and_transpose", "without_transpose"),
                 ("reduce_fused", "out"), ("get_fused_mapping", "invalid_count")]:
        assert want in swept, want


@pytest.mark.parametrize("fn, name, bad", DEFAULT_CASES,
                         ids=[f"{f.__name__}-{n}-{type(b).__name__}{i}" for i, (f, n, b) in enumerate(DEFAULT_CASES)])
def test_wrong_default_kind(fn, name, bad, monkeypatch):
    """A parameter with a default, given a value of the wrong kind, is refused by name (no
    wrong value of these is valid, None included: it is offered only where not optional)."""
    args = dict(next(a for f, a in VALID if f is fn))
    args[name] = bad
    rec = NoLaunch()
    monkeypatch.setattr(_runtime, "kernel", rec.kernel)
    with pytest.raises((ValueError, TypeError)) as e:
        fn(**args)
    msg = str(e.value)
    assert msg.startswith(f"{fn.__name__}:"), msg
    assert name in msg, msg
    assert not rec.launched


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


def _overlap_cases():
    """(function, valid keyword arguments, the argument replaced, a value of it sharing memory with
    another argument, the words the error must hold) for every function that checks that what it
    writes shares no memory with its inputs."""
    m = mapping(T=2)
    p2e, ttp = m[0], m[3]
    x = bf(len(p2e), 256)
    xq = fp8(4, 256)
    m4 = mapping()
    idx = torch.zeros(4, 2, dtype=torch.int64)
    logits = torch.randn(4, 16)
    gate = dict(logits=logits, bias=torch.zeros(16), num_topk=2, num_topk_groups=0, num_groups=0,
                use_shared_as_routed=False, num_shared_experts=0, routed_scaling_factor=1.0, ep_rank=0,
                num_ep_ranks=1, tp_rank=0, num_tp_ranks=1, scoring_func="sigmoid")
    sw = bf(4, 512)
    big = bf(2 * 3 * 4 * 256)
    mx = bf(2, 3, 4, 256)
    res = bf(2, 3, 4, 256)
    post = dict(x=bf(2, 3, 256), residual=res, post_layer_mix=f32(2, 3, 4, 1), comb_res_mix=f32(2, 3, 4, 4))
    g = dict(grad_w_partial=f32(3, 4, 256), weight_hidden=bf(4, 256), weight_embed=bf(4, 256),
             grad_weight_hidden=f32(4, 256), grad_weight_embed=f32(4, 256))
    word = lambda t: t.view(torch.int32).view(-1)[:1]   # noqa: E731  (a counter on t's first bytes)
    red = dict(x=x, topk_weights=torch.rand(2, 2), token_topk_to_pos=ttp)
    return [
        (moe.reduce_fused, red, "out", x[:2], "out overlaps x"),
        (moe.reduce_fused, red, "invalid_count", word(ttp), "invalid_count overlaps token_topk_to_pos"),
        (moe.reduce_fused, dict(red, out=bf(2, 256)), "invalid_count", None, "invalid_count overlaps out"),
        (moe.expand_to_fused, dict(x=bf(2, 256), token_topk_to_pos=ttp, pos_to_expert=p2e), "invalid_count",
         p2e[:1], "invalid_count overlaps pos_to_expert"),
        (moe.expand_to_fused_with_sf, dict(x=xq, num_per_channels=128, token_topk_to_pos=m4[3],
                                           pos_to_expert=m4[0]), "invalid_count", word(xq[1]),
         "invalid_count overlaps sf"),
        (moe.get_fused_mapping, dict(topk_idx=idx, num_experts=4, num_expanded_tokens=0, alignment=16),
         "invalid_count", word(idx), "invalid_count overlaps topk_idx"),
        (moe.group_count, dict(group_idx=idx, num_groups=4), "invalid_count", word(idx),
         "invalid_count overlaps group_idx"),
        (moe.aux_fi, dict(topk_idx=idx, num_experts=4, num_aux_topk=2), "invalid_count", word(idx),
         "invalid_count overlaps topk_idx"),
        (moe.inplace_unique_group_indices, dict(group_indices=idx, num_groups=8), "invalid_count", word(idx),
         "invalid_count overlaps group_indices"),
        (moe.top2_sum_gate, gate, "invalid_count", word(logits), "invalid_count overlaps logits"),
        (moe.top2_sum_gate, gate, "unmapped_topk_idx", logits.view(torch.int64)[:, :2],
         "unmapped_topk_idx overlaps logits"),
        (Q.swiglu_forward_and_per_token_cast, dict(x=sw, fmt="e4m3", num_per_channels=128, swiglu_clamp_value=1.0),
         "clamped_count", sw.view(torch.int64).view(-1)[:3], "clamped_count overlaps x"),
        (MO.expand_to_mhc, dict(hidden=big[:2 * 3 * 256].view(2, 3, 256), mhc_mult=4), "out",
         big.view(2, 3, 4, 256), "out overlaps hidden"),
        (MO.mhc_pre_apply_mix, dict(x=mx, mix=torch.rand(2, 3, 4, 1)), "out", mx.view(-1)[:1536].view(2, 3, 256),
         "out overlaps x"),
        (MO.mhc_post, post, "out", res, "out overlaps residual"),
        (MO.mhc_post_fwd, post, "out", res, "out overlaps residual"),
        (EG.grad_w_reduce, g, "grad_weight_embed", g["grad_weight_hidden"], "grad_weight_hidden overlaps "
                                                                              "grad_weight_embed"),
        (EG.grad_w_reduce, g, "grad_weight_hidden", g["grad_w_partial"][0], "grad_weight_hidden overlaps "
                                                                            "grad_w_partial"),
    ]


def _fresh_like(t):
    """A tensor with t's dtype, shape, strides and storage offset on storage of its own (zeros)."""
    span = sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1
    return torch.zeros(t.storage_offset() + span, dtype=t.dtype).as_strided(t.shape, t.stride(), t.storage_offset())


OVERLAPS = _overlap_cases()


@pytest.mark.parametrize("fn, args, name, shared, words", OVERLAPS,
                         ids=[f"{f.__name__}-{n}-{i}" for i, (f, _, n, _, _) in enumerate(OVERLAPS)])
def test_overlapping_output(fn, args, name, shared, words, monkeypatch):
    """An output (or in-place tensor) sharing memory with an input is refused, naming both, before
    anything is launched: in a full call, and in a call whose key has a plan (recorded from calls
    with the same shapes and strides on separate memory), where the replay repeats the check."""
    from tilec import _plan
    if shared is None:   # the counter on the out argument's own memory
        shared = args["out"].view(torch.int32).view(-1)[:1]
    for _ in range(3):   # a plan for the key of the overlapping call, on separate memory
        kw = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in args.items()}
        kw[name] = _fresh_like(shared)
        fn(**kw)
    for plans in (True, False):
        if not plans:
            _plan.clear()
        rec = NoLaunch()
        monkeypatch.setattr(_runtime, "kernel", rec.kernel)
        with pytest.raises(ValueError, match=f"^{fn.__name__}: {words}"):
            fn(**dict(args, **{name: shared}))
        assert not rec.launched
        monkeypatch.undo()
