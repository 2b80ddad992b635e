"""Every public kernel function is a torch.library custom op (tilec::NAME) that torch.compile
traces whole: torch.library.opcheck passes for each op on CPU tensors (the emulator) — schema,
fake tensor, autograd registration, AOT dispatch with dynamic shapes —, a compiled call with
fullgraph=True (no graph break) gives results bit-identical to the eager call, a change of token
count marked dynamic does not recompile, and the fake implementations launch nothing."""
import os
import sys

import pytest
import torch

sys.path.insert(0, os.environ.get("TILEC_BUILD_PYTHON", os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                                                     "python")))
sys.path.insert(0, os.path.dirname(__file__))

import tilec  # noqa: E402
from tilec import _ops, moe, quant as Q  # noqa: E402
from test_bad_arguments import VALID  # noqa: E402  (a valid call of every public function)

# the synchronising form of get_fused_mapping (num_expanded_tokens = 0, force_no_sync = False) trims
# its outputs to a size read from the device: a graph break by nature; traced, use a size or
# force_no_sync
NOT_OPS = {"unpack_from_e2m1fn_x2"}   # plain torch code, traced as is
# the mHC family: its ops are autograd layers over kernels that are not custom ops yet
NOT_YET = ("tilec.modeling.mhc", "tilec.mhc")


# TILEC_OPS_DEVICE=cuda runs the same checks on CUDA tensors (scripts/gpu_all.sh)
DEV = os.environ.get("TILEC_OPS_DEVICE", "cpu")


def _on(v):
    if isinstance(v, torch.Tensor):
        return v.to(DEV)
    if isinstance(v, tuple):
        return tuple(_on(e) for e in v)
    return v


def _op_calls():
    out = []
    for fn, kw in VALID:
        if fn.__name__ in NOT_OPS or fn.__module__.startswith(NOT_YET):
            continue
        if fn.__name__ == "get_fused_mapping":
            kw = dict(kw, num_expanded_tokens=64)
        out.append((fn, {k: _on(v) for k, v in kw.items()}))
    return out


OP_CALLS = _op_calls()
IDS = [f.__name__ for f, _ in OP_CALLS]


def _flat(r, out=None):
    out = [] if out is None else out
    if isinstance(r, torch.Tensor):
        out.append(r)
    elif isinstance(r, (tuple, list)):
        for e in r:
            _flat(e, out)
    else:
        out.append(r)
    return out


def _same(a, b):
    """Bit-identical results (NaN payloads and -0 included)."""
    fa, fb = _flat(a), _flat(b)
    assert len(fa) == len(fb)
    for x, y in zip(fa, fb):
        if isinstance(x, torch.Tensor):
            assert isinstance(y, torch.Tensor)
            assert (x.shape, x.dtype, x.stride()) == (y.shape, y.dtype, y.stride())
            assert torch.equal(x.contiguous().view(torch.uint8), y.contiguous().view(torch.uint8))
        else:
            assert x == y


def _clone(kw):
    return {k: (v.clone() if isinstance(v, torch.Tensor) else
                tuple(e.clone() if isinstance(e, torch.Tensor) else e for e in v) if isinstance(v, tuple) else v)
            for k, v in kw.items()}


def test_every_public_function_is_an_op():
    names = {f.__name__ for f, _ in OP_CALLS}
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


@pytest.mark.parametrize("fn, kw", OP_CALLS, ids=IDS)
def test_fullgraph_compile_bit_identical(fn, kw):
    torch._dynamo.reset()
    eager = fn(**_clone(kw))
    compiled = torch.compile(lambda **a: fn(**a), fullgraph=True, backend="aot_eager")(**_clone(kw))
    _same(eager, compiled)


@pytest.mark.parametrize("fn, kw", [c for c in OP_CALLS if c[0].__name__ != "get_fused_mapping"],
                         ids=[i for i in IDS if i != "get_fused_mapping"])
def test_fake_on_meta_tensors(fn, kw):
    """The op on meta tensors (no storage: a launch could not happen) runs the fake implementation
    alone, and gives the real call's shapes, dtypes and strides."""
    def meta(v):
        if isinstance(v, torch.Tensor):
            return v.to("meta")
        if isinstance(v, tuple):
            return tuple(meta(e) for e in v)
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


@pytest.mark.parametrize("fn, kw", OP_CALLS, ids=IDS)
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
