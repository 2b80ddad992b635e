"""Every public kernel function is a torch.library custom op (tilec::NAME) that torch.compile
traces whole: torch.library.opcheck passes for each op on CPU tensors (the emulator) — schema,
fake tensor, autograd registration, AOT dispatch with dynamic shapes —, a compiled call with
fullgraph=True (no graph break) gives results bit-identical to the eager call, a change of token
count marked dynamic does not recompile, and the fake implementations launch nothing. The mHC
ops carry their autograd (their backward kernels are ops too): opcheck with inputs that require
grad, and an mHC training step (expand, mhc_pre, mhc_post, mhc_head) compiled forward and
backward in one graph whose loss and gradients are bit-identical to eager mode — the
grad_from_mhc_post accumulation of the residual's gradient included — for every token count
marked dynamic, with one compile."""
import inspect
import os
import sys

import pytest
import torch

sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                                                     "python")))
sys.path.insert(0, os.path.dirname(__file__))

from tilec import _ops, moe, quant as Q  # noqa: E402
from tilec.modeling import mhc as MHC  # noqa: E402
from tilec.modeling.mhc import ops as MO  # noqa: E402
from tilec.modeling.mhc.ops import (expand as MO_expand, head_compute_mix as MO_head, norm_fn as MO_norm,  # noqa: E402
                                    pre_apply_mix as MO_apply, pre_split_mixes as MO_split, sinkhorn as MO_sink)
from test_bad_arguments import CASES, DEFAULT_CASES, VALID  # noqa: E402  (a valid call of every public function)
from call_results import assert_same as _same, clone_args as _clone, flat as _flat  # noqa: E402

# the synchronising form of get_fused_mapping (num_expanded_tokens = 0, force_no_sync = False) trims
# its outputs to a size read from the device: a graph break by nature; traced, use a size or
# force_no_sync
NOT_OPS = {"unpack_from_e2m1fn_x2"}   # plain torch code, traced as is
# not ops themselves: the mHC functional layer (compositions of the mHC ops) and round_to_tf32
# (plain torch code); compiled whole like the ops
LAYERS = {"expand_from_embedding", "mhc_pre", "mhc_head", "round_to_tf32"}


# TILEC_OPS_DEVICE=cuda runs the same checks on CUDA tensors (scripts/gpu_all.sh)
DEV = os.environ.get("TILEC_OPS_DEVICE", "cpu")


def _on(v):
    if isinstance(v, torch.Tensor):
        return v.to(DEV)
    if isinstance(v, (tuple, list)):
        return type(v)(_on(e) for e in v)
    return v


def _bwd_calls():
    """A valid call of each mHC backward op (the kernels of the ops' autograd)."""
    g = torch.Generator().manual_seed(0)

    def bf(*shape):
        return torch.randn(shape, generator=g).bfloat16()

    def f32(*shape):
        return torch.randn(shape, generator=g)
    res, fn = bf(2, 3, 4, 64), f32(24, 256) * 1e-2
    _, fn_r, mul, sq = MO.mhc_pre_norm_fn.op(*MO.mhc_pre_norm_fn.op_args(res, fn, None, 1e-6, n_splits=4))
    return [
        (MO_expand._expand_to_mhc_bwd, dict(out_grad=bf(2, 3, 4, 256))),
        (MO_sink._sinkhorn_normalize_bwd, dict(x=f32(2, 3, 4, 4), grad=f32(2, 3, 4, 4), repeat=10, eps=1e-6)),
        (MO_split._mhc_pre_split_mixes_bwd, dict(input_mixes=f32(2, 3, 24), post=torch.rand(2, 3, 4, 1, generator=g),
                                                 g_pre=f32(2, 3, 4, 1), g_post=f32(2, 3, 4, 1), g_comb=f32(2, 3, 4, 4),
                                                 mhc_scale=f32(3), mhc_base=f32(24), mhc_mult=4,
                                                 mhc_post_mult_value=2.0)),
        (MO_head._mhc_head_compute_mix_bwd, dict(input_mix=f32(2, 3, 4), g_out=f32(2, 3, 4), mhc_scale=f32(1),
                                                 mhc_base=f32(4))),
        (MO_apply._mhc_pre_apply_mix_bwd, dict(x=bf(2, 3, 4, 256), mix=torch.rand(2, 3, 4, 1, generator=g),
                                               o_grad=bf(2, 3, 256), x_grad_buf=bf(2, 3, 4, 256))),
        (MO_norm._mhc_pre_norm_fn_bwd, dict(out_grad=f32(2, 3, 24), mul=mul, sq=sq, x=res, fn_r=fn_r,
                                            x_grad_buf=bf(2, 3, 4, 64), norm_eps=1e-6)),
    ]


def _op_calls():
    out = []
    for fn, kw in VALID + _bwd_calls():
        if fn.__name__ in NOT_OPS or fn.__name__ in LAYERS:
            continue
        if fn.__name__ == "get_fused_mapping":
            kw = dict(kw, num_expanded_tokens=64)
        out.append((fn, {k: _on(v) for k, v in kw.items()}))
    return out


OP_CALLS = _op_calls()
IDS = [f.__name__ for f, _ in OP_CALLS]
LAYER_CALLS = [(fn, {k: _on(v) for k, v in kw.items()}) for fn, kw in VALID if fn.__name__ in LAYERS]


def test_every_public_function_is_an_op():
    names = {getattr(f, "op_name", f.__name__) for f, _ in OP_CALLS}
    for f, _ in OP_CALLS:
        if f.__name__ != "get_fused_mapping":   # a wrapper of the op _fused_mapping
            assert hasattr(f, "op"), f"{f.__name__} is not declared with @kernel_op"
    assert {n for n in _ops.OPS} >= names - {"get_fused_mapping"}
    assert "get_fused_mapping" in _ops.OPS
    for n in _ops.OPS:
        assert hasattr(torch.ops.tilec, n)


FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)
ALL_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


@pytest.mark.parametrize("fn, kw", OP_CALLS, ids=IDS)
def test_opcheck(fn, kw):
    target = fn
    if fn.__name__ == "get_fused_mapping":
        target = moe.get_fused_mapping_kernel._fused_mapping
        kw = dict(kw, force_no_sync=False, invalid_count=None)
    args = target.op_args(**_clone(kw))
    utils = ALL_UTILS
    if any(isinstance(a, torch.Tensor) and a.dtype in FP8 for a in args):
        # opcheck's schema test compares inputs with arithmetic that CPU float8 lacks in torch
        # ("mul_cpu_reduced_float" not implemented): the same check, by bytes, here
        utils = ALL_UTILS[1:]
        before = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        target.op(*args)
        for a, b in zip(args, before):
            if isinstance(a, torch.Tensor):
                assert torch.equal(a.view(torch.uint8), b.view(torch.uint8)), "an op input was written"
    torch.library.opcheck(target.op, args, test_utils=utils)


@pytest.mark.parametrize("fn, kw", OP_CALLS + LAYER_CALLS, ids=IDS + [f.__name__ for f, _ in LAYER_CALLS])
def test_fullgraph_compile_bit_identical(fn, kw):
    torch._dynamo.reset()
    ea, ca = _clone(kw), _clone(kw)
    eager = fn(**ea)
    compiled = torch.compile(lambda **a: fn(**a), fullgraph=True, backend="aot_eager")(**ca)
    _same(eager, compiled)
    _same([ea[k] for k in sorted(ea)], [ca[k] for k in sorted(ca)])   # the tensors written in place too


@pytest.mark.parametrize("fn, kw", [c for c in OP_CALLS if c[0].__name__ != "get_fused_mapping"],
                         ids=[i for i in IDS if i != "get_fused_mapping"])
def test_fake_on_meta_tensors(fn, kw):
    """The op on meta tensors (no storage: a launch could not happen) runs the fake implementation
    alone, and gives the real call's shapes, dtypes and strides."""
    def meta(v):
        if isinstance(v, torch.Tensor):
            return v.to("meta")
        if isinstance(v, (tuple, list)):
            return type(v)(meta(e) for e in v)
        return v
    real = _flat(fn.op(*fn.op_args(**_clone(kw))))
    fake = _flat(fn.op(*fn.op_args(**{k: meta(v) for k, v in kw.items()})))
    assert [(t.shape, t.dtype, t.stride()) for t in real] == [(t.shape, t.dtype, t.stride()) for t in fake]
    assert all(t.device.type == "meta" for t in fake)


def _count_compiles(step, inputs, mark=None):
    from torch._dynamo.testing import CompileCounterWithBackend
    torch._dynamo.reset()
    cnt = CompileCounterWithBackend("aot_eager")
    f = torch.compile(step, backend=cnt, fullgraph=True)
    for args in inputs:
        if mark:
            for a, d in mark:
                torch._dynamo.mark_dynamic(args[a], d)
        _same(step(*[a.clone() for a in args]), f(*args))
    return cnt.frame_count


def _cast_round_trip(x):
    y, sf = Q.per_token_cast(x, "e4m3", 128)
    return Q.per_token_cast_back((y, sf), "bf16", 128)


def test_token_count_dynamic_no_recompile():
    """The token dimension marked dynamic: one graph for every token count (the hidden size, which
    picks a specialisation, stays static)."""
    xs = [(torch.randn(t, 256).bfloat16().to(DEV),) for t in (5, 17, 64, 3)]
    assert _count_compiles(_cast_round_trip, xs, mark=[(0, 0)]) == 1


def test_token_count_automatic_dynamic():
    """Without marks, torch.compile's automatic dynamic shapes recompile once, then never again."""
    xs = [(torch.randn(t, 256).bfloat16().to(DEV),) for t in (5, 17, 64, 3, 100)]
    assert _count_compiles(_cast_round_trip, xs) == 2


def test_moe_dynamic_tokens():
    def step(x, idx, w):
        m = moe.get_fused_mapping(idx, 8, 256, 16)
        ex = moe.expand_to_fused(x, m[3], m[0])
        return moe.reduce_fused(ex, w, m[3])
    g = torch.Generator().manual_seed(0)
    ins = []
    for t in (4, 9, 30):
        idx = torch.rand(t, 8, generator=g).argsort(1)[:, :2].contiguous()
        ins.append((torch.randn(t, 256).bfloat16().to(DEV), idx.to(DEV), torch.rand(t, 2).to(DEV)))
    assert _count_compiles(step, ins, mark=[(0, 0), (1, 0), (2, 0)]) == 1


def test_chain_of_families_one_graph():
    """A MoE step (gate, mapping with a fixed size, expand, quantise, reduce) in one graph."""
    torch._dynamo.reset()

    def step(logits, x):
        idx = moe.topk_gate(logits, 2)
        w = logits.gather(1, idx).softmax(-1)
        m = moe.get_fused_mapping(idx, 8, 64, 16)
        ex = moe.expand_to_fused(x, m[3], m[0])
        q, sf = Q.per_token_cast(ex, "e4m3", 128)
        back = Q.per_token_cast_back((q, sf), "bf16", 128)
        return moe.reduce_fused(back, w, m[3])

    logits = torch.randn(6, 8).to(DEV)
    x = torch.randn(6, 256).bfloat16().to(DEV)
    from torch._dynamo.testing import CompileCounterWithBackend
    cnt = CompileCounterWithBackend("aot_eager")
    _same(step(logits, x), torch.compile(step, backend=cnt, fullgraph=True)(logits, x))
    assert cnt.frame_count == 1


class _HostReads(torch.utils._python_dispatch.TorchDispatchMode):
    """Records every read of a tensor's values on the host (a synchronisation on a GPU, and
    Python work depending on tensor values): the aten ops that return data to the host, and the
    Tensor methods that read memory without going through the dispatcher (tolist, item, bool(),
    int(), float(), numpy())."""
    READS = {"_local_scalar_dense", "item", "equal", "is_nonzero", "nonzero", "unique", "_unique2",
             "masked_select", "repeat_interleave"}
    METHODS = ("tolist", "item", "__bool__", "__int__", "__float__", "__index__", "numpy", "__array__")

    def __init__(self, monkeypatch):
        super().__init__()
        self.reads = []
        for m in self.METHODS:
            orig = getattr(torch.Tensor, m)

            def spy(t, *a, _orig=orig, _m=m, **kw):
                self.reads.append(_m)
                return _orig(t, *a, **kw)
            monkeypatch.setattr(torch.Tensor, m, spy)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.__name__.split(".")[0]
        if name in self.READS:
            self.reads.append(name)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("fn, kw", OP_CALLS + LAYER_CALLS, ids=IDS + [f.__name__ for f, _ in LAYER_CALLS])
def test_launch_path_reads_no_tensor_values(fn, kw, monkeypatch):
    """No host synchronisation and no value-dependent Python work on any launch path."""
    kw = _clone(kw)
    fn(**_clone(kw))   # compiled and cached first: the check is of the launch path
    with _HostReads(monkeypatch) as mode:
        fn(**kw)
    assert mode.reads == [], mode.reads


def test_synchronising_path_is_seen(monkeypatch):
    """The one documented synchronising path, get_fused_mapping without a size or force_no_sync,
    is caught by the same check (the check can fail)."""
    idx = torch.zeros(4, 2, dtype=torch.int64, device=DEV)
    moe.get_fused_mapping(idx, 4, 0, 16)
    with _HostReads(monkeypatch) as mode:
        moe.get_fused_mapping(idx, 4, 0, 16)
    assert "tolist" in mode.reads


# ---- the mHC ops' autograd ----------------------------------------------------------------------------

# the differentiable mHC ops and the arguments that take gradients
DIFFERENTIABLE = {
    "expand_to_mhc": ("hidden",), "sinkhorn_normalize": ("x",),
    "mhc_pre_split_mixes": ("input_mixes", "mhc_scale", "mhc_base"),
    "mhc_head_compute_mix": ("input_mix", "mhc_scale", "mhc_base"), "mhc_pre_apply_mix": ("x", "mix"),
    "mhc_post": ("x", "residual", "post_layer_mix", "comb_res_mix"),
    "mhc_pre_norm_fn": ("residual", "mhc_fn", "mhc_norm_weight"),
}
GRAD_CALLS = [(fn, kw) for fn, kw in OP_CALLS if fn.__name__ in DIFFERENTIABLE]


def _with_grad(fn, kw):
    kw = _clone(kw)
    if "out" in kw:
        kw["out"] = None     # a preallocated output is written, not differentiated
    for name in DIFFERENTIABLE[fn.__name__]:
        kw[name].requires_grad_()
    return kw


@pytest.mark.parametrize("fn, kw", GRAD_CALLS, ids=[f.__name__ for f, _ in GRAD_CALLS])
def test_opcheck_with_gradients(fn, kw):
    """The autograd registration and AOT dispatch (forward and backward, dynamic shapes) of each
    differentiable op, with its inputs requiring grad."""
    torch.library.opcheck(fn.op, fn.op_args(**_with_grad(fn, kw)),
                          test_utils=("test_autograd_registration", "test_aot_dispatch_dynamic"))


@pytest.mark.parametrize("fn, kw", GRAD_CALLS, ids=[f.__name__ for f, _ in GRAD_CALLS])
def test_compiled_backward_bit_identical(fn, kw):
    """Each differentiable op compiled forward and backward with fullgraph=True: its gradients
    are the eager call's, bit for bit."""
    torch._dynamo.reset()
    grads = []
    for run in (fn, torch.compile(lambda **a: fn(**a), fullgraph=True, backend="aot_eager")):
        a = _with_grad(fn, kw)
        outs = [t for t in _flat(run(**a)) if t.requires_grad]
        g = torch.Generator().manual_seed(1)
        torch.autograd.backward(outs, [torch.randn(t.shape, generator=g).to(t.dtype) for t in outs])
        grads.append([a[n].grad for n in DIFFERENTIABLE[fn.__name__]])
    _same(*grads)


def _mhc_step(emb, fn, scale, base, normw, w, hfn, hscale, hbase):
    """expand -> mhc_pre -> a sub-layer -> mhc_post -> mhc_head -> loss: the residual's gradient
    from mhc_post is accumulated by mhc_pre's backward passes in place (grad_from_mhc_post)."""
    r = MHC.expand_from_embedding(emb, 4)
    li, (post, comb) = MHC.mhc_pre(r, fn, scale, base, norm_weight=normw, post_mult_value=2.0, n_splits=4)
    y = torch.tanh(li.float() @ w).bfloat16()
    r = MO.mhc_post(y, r, post, comb)
    h = MHC.mhc_head(r, hfn, hscale, hbase, n_splits=4)
    return (h.float() ** 2).mean()


def _mhc_leaves(T, H=64, m=4):
    g = torch.Generator().manual_seed(T)
    K, M3 = m * H, m * (m + 2)
    shapes = [((1, T, H), torch.bfloat16, 1.0), ((M3, K), torch.float32, 1e-2), ((3,), torch.float32, 0.1),
              ((M3,), torch.float32, 0.1), ((K,), torch.float32, 0.1), ((H, H), torch.float32, H ** -0.5),
              ((m, K), torch.float32, 1e-2), ((1,), torch.float32, 1.0), ((m,), torch.float32, 0.1)]
    out = [(torch.randn(s, generator=g) * c).to(d) for s, d, c in shapes]
    out[4] += 1                                        # the norm weight about 1
    return [t.to(DEV) for t in out]


def test_mhc_training_step_compiles_forward_and_backward():
    """An mHC training step compiled with fullgraph=True, the token dimension marked dynamic:
    one graph for three token counts, and the loss and all nine gradients bit-identical to eager
    mode (the residual's gradient accumulated through grad_from_mhc_post in both)."""
    from torch._dynamo.testing import CompileCounterWithBackend
    torch._dynamo.reset()
    cnt = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(_mhc_step, backend=cnt, fullgraph=True)
    for T in (5, 9, 3):
        base = _mhc_leaves(T)
        results = []
        for run in (_mhc_step, compiled):
            leaves = [t.clone().requires_grad_() for t in base]
            if run is compiled:
                torch._dynamo.mark_dynamic(leaves[0], 1)
            loss = run(*leaves)
            loss.backward()
            results.append([loss.detach()] + [t.grad for t in leaves])
        assert all(t is not None for t in results[1])
        _same(*results)
    assert cnt.frame_count == 1


def test_mhc_backward_reads_no_tensor_values(monkeypatch):
    """The eager backward of the mHC step (the backward ops, the gradient protocol) reads no
    tensor value on the host."""
    leaves = [t.clone().requires_grad_() for t in _mhc_leaves(4)]
    loss = _mhc_step(*leaves)
    _mhc_step(*[t.clone().requires_grad_() for t in leaves]).backward()   # specialisations compiled first
    with _HostReads(monkeypatch) as mode:
        loss.backward()
    assert mode.reads == [], mode.reads


def _refused_cases(fn):
    """The wrong values test_bad_arguments requires the eager call of ``fn`` to refuse."""
    out = list((n, b) for f, n, b in DEFAULT_CASES if f is fn)
    for f, n, b in CASES:
        if f is not fn:
            continue
        p = inspect.signature(fn).parameters[n]
        optional = p.default is None or "Optional" in str(p.annotation)
        if (b is None and optional) or (fn is moe.expand_to_fused and n == "x" and isinstance(b, torch.Tensor)):
            continue
        out.append((n, b))
    return out


TRACED = [fn for fn, _ in VALID if hasattr(fn, "op")]


@pytest.mark.parametrize("fn", TRACED, ids=[f.__name__ for f in TRACED])
def test_traced_call_refuses_wrong_kinds(fn):
    """A traced call (here make_fx; torch.compile goes the same way) checks each argument's kind
    before the op's schema converts it (which would take 1 for True) or reports it in torch's
    words: every wrong value the eager call refuses raises ValueError or TypeError naming the
    function and the argument."""
    from torch.fx.experimental.proxy_tensor import make_fx
    base = dict(next(a for f, a in VALID if f is fn))
    wrong = []
    for name, bad in _refused_cases(fn):
        kw = dict(base, **{name: bad})
        try:
            make_fx(lambda: fn(**kw))()
        except (ValueError, TypeError) as e:
            if not (str(e).startswith(f"{fn.__name__}:") and name in str(e)):
                wrong.append(f"{name}={bad!r}: {e}")
        else:
            wrong.append(f"{name}={bad!r} accepted")
    assert not wrong, wrong
