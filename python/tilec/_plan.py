"""Argument plans: the host work of a kernel function done once per shape.

A public kernel function checks its arguments, derives the kernels' generics and grids from the
shapes, allocates its outputs and launches. All of that depends only on what the plan key holds:
per tensor argument its dtype, shape, strides, storage offset, device, requires_grad and which
earlier argument it is (the same tensor passed twice); every other argument by type and value,
so that a value of another kind that compares equal (0 or 0.0 for False, 16.0 for 16) never
reaches the plan of the valid one, and a float by its float.hex (-0.0 and 0.0 compare equal but
are two keys; every NaN is one key, not a new entry per call); the SM count of
tilec.set_num_sms and torch's grad mode. So after the first call of a key (which
compiles and loads the kernels and builds any lazily made table), the second call runs the
function once more while a recorder watches it: every torch operation that reaches the
dispatcher (torch.empty, torch.zeros, views, fills), every tensor view of _runtime.view, every
launch and every overlap check between an output and an input that may share memory. From the
third call on, the plan replays that record: the same operations in the same order, on the new
call's tensors, with the current stream; the Python checks and derivations are skipped (they
passed for this key and would pass again), the results are bit-identical.

A call is never planned, and always runs in full, when its key cannot be formed (an argument of
another type, a tensor subclass), while torch.compile traces or a fake implementation runs, when
an input requires grad under grad mode, or when the recorded call did anything a replay could
not repeat: a torch operation that computes from data (a copy, arithmetic, reading a value to the
host), a launch on a stream other than the current one. Errors therefore come from the full
path, with their messages unchanged: a call that raises is never recorded, and a call with one
argument of another kind or value has another key.
"""
import functools
import threading

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import _runtime, config

_plans = {}          # key -> _Plan, _NEVER, or the number of full calls seen
_NEVER = object()
_why = {}            # function name -> why its last recorded call made no plan (bench/host_overhead.py)
_LOCK = threading.Lock()
_T, _P = torch.Tensor, torch.nn.Parameter
_SCALARS = {int, float, bool, str, type(None), torch.dtype}
_MAX_PLANS = 4096    # keys kept; beyond, calls of new keys run in full (a process with many shapes)
class _Tls(threading.local):
    rec = None   # the recorder of this thread's call being recorded


_tls = _Tls()

# the dispatcher's operations a plan may repeat: factories, fills, and views (any op whose
# schema says it returns an alias of an input: aten.view, slice, permute, t, as_strided, ...)
_aten = torch.ops.aten
_FACTORIES = {
    _aten.empty.memory_format, _aten.empty_strided.default, _aten.zeros.default, _aten.ones.default,
    _aten.full.default, _aten.empty_like.default, _aten.zeros_like.default, _aten.full_like.default,
    _aten.ones_like.default, _aten.new_empty.default, _aten.new_zeros.default, _aten.new_full.default,
    _aten.new_ones.default, _aten.new_empty_strided.default, _aten.arange.default, _aten.arange.start,
    _aten.arange.start_step,
}
_FILLS = {_aten.zero_.default, _aten.fill_.Scalar}


class _Unplannable(Exception):
    pass


def recording():
    return _tls.rec


def _key(fn, args, kw, tensors):
    """The plan key of a call, and its tensors (in argument order, lists flattened) in ``tensors``."""
    parts = [fn, config._num_sms, torch.is_grad_enabled()]
    ids = {}

    def add(v):
        tp = type(v)
        if tp is _T or tp is _P:
            first = ids.setdefault(id(v), len(tensors))
            tensors.append(v)
            parts.append((v.dtype, v.shape, v.stride(), v.storage_offset(), v.device, v.requires_grad, first))
        elif tp is float:
            parts.append((tp, v.hex()))
        elif tp in _SCALARS:
            parts.append((tp, v))
        elif tp is tuple or tp is list:
            parts.append((tp, len(v)))
            for e in v:
                add(e)
        else:
            raise _Unplannable

    for v in args:
        add(v)
    for k, v in kw.items():
        parts.append(k)
        add(v)
    return tuple(parts)


class _Slot:
    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i


class _Seq:
    """A list or tuple that holds values of the call."""
    __slots__ = ("tp", "items")

    def __init__(self, tp, items):
        self.tp, self.items = tp, items


class _Recorder(TorchDispatchMode):
    """Watches one call: slots 0.. are the stream, then the call's tensors, then every value made."""

    def __init__(self, tensors):
        super().__init__()
        self.vals = [None] + list(tensors)     # kept alive, so that ids stay unique
        self.slot = {}
        for i, t in enumerate(tensors):
            self.slot.setdefault(id(t), i + 1)
        self.keep = []
        self.fresh = set()                    # slots of tensors on storage this call allocated
        self.ops = []
        self.stream = None
        self.bad = None

    def new(self, v, fresh):
        self.vals.append(v)
        s = len(self.vals) - 1
        self.slot[id(v)] = s
        if fresh:
            self.fresh.add(s)
        return s

    def tmpl(self, v):
        """A value as a replay sees it: a _Slot for a tensor or Arg of the call, else the value."""
        if isinstance(v, (_T, _runtime.Arg)):
            s = self.slot.get(id(v))
            if s is not None:
                return _Slot(s)
            if isinstance(v, _T) and v.requires_grad:
                raise _Unplannable
            return v                            # a tensor the call did not make: a kept table
        if type(v) in (list, tuple):
            items = [self.tmpl(e) for e in v]
            if any(isinstance(e, _Seq) for e in items):
                raise _Unplannable   # values of the call below the first level
            if any(isinstance(e, _Slot) for e in items):
                return _Seq(type(v), items)
            return v
        return v

    def op(self, func, args, kw):
        self.ops.append(_compile_op(func, [self.tmpl(a) for a in args], {k: self.tmpl(v) for k, v in kw.items()}))

    def fast(self, func, args, kw, out):
        """The recorded op with torch's Python function or Tensor method of the same name in place of
        the dispatcher's OpOverload (a third of its cost), when that gives the same tensor."""
        name = func._schema.name.split("::")[1]
        f = None
        if func is _aten.slice.Tensor and isinstance(out, _T):
            dim = args[1] if len(args) > 1 else kw.get("dim", 0)
            start = args[2] if len(args) > 2 else kw.get("start", None)
            step = args[4] if len(args) > 4 else kw.get("step", 1)
            if step == 1 and start is not None and start >= 0 and not kw:
                n = out.size(dim)
                f, args, kw = _narrow, (args[0], dim, start, n), {}
        elif func in _FACTORIES and hasattr(torch, name) and not name.startswith("new_"):
            f = getattr(torch, name)
        elif hasattr(_T, name):
            f = getattr(_T, name)
        if f is None:
            return
        try:
            again = f(*args, **kw)
        except Exception:
            return
        if func in _FILLS:
            self.ops[-1].func = f
        elif (isinstance(again, _T) and again.shape == out.shape and again.stride() == out.stride() and
              again.dtype == out.dtype and again.device == out.device and
              again.storage_offset() == out.storage_offset() and again.requires_grad == out.requires_grad and
              (func in _FACTORIES or again.untyped_storage().data_ptr() == out.untyped_storage().data_ptr())):
            last = self.ops[-1]
            self.ops[-1] = _compile_op(f, [self.tmpl(a) for a in args], {k: self.tmpl(v) for k, v in kw.items()})
            self.ops[-1].result = last.result

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if self.bad:
            return out
        if func is _aten.detach.default and isinstance(out, _T) and not out.requires_grad:
            s = self.slot.get(id(args[0]))
            if s is not None and s in self.fresh:   # the detached alias of a new tensor: the tensor itself
                self.keep.append(out)
                self.slot[id(out)] = s
                return out
        if func not in _FACTORIES and func not in _FILLS and not func.is_view:
            self.bad = str(func)
            return out
        try:
            self.op(func, args, kwargs)
        except _Unplannable:
            self.bad = f"{func} on a tensor that requires grad"
            return out
        if func in _FILLS:
            self.ops[-1].result = None
            with torch.utils._python_dispatch._disable_current_modes():
                self.fast(func, args, kwargs, out)
            return out
        if not isinstance(out, _T):
            self.bad = f"{func} returned {type(out).__name__}"
            return out
        src = args[0] if args and isinstance(args[0], _T) else None
        fresh = func in _FACTORIES or (src is not None and self.slot.get(id(src)) in self.fresh)
        self.ops[-1].result = self.new(out, fresh)
        with torch.utils._python_dispatch._disable_current_modes():
            self.fast(func, args, kwargs, out)
        return out

    # hooks of _runtime and _checks
    def arg(self, t, dtype, shape, strides):
        a = _native_arg(t, dtype, shape, strides)
        if not self.bad:
            try:
                self.op(_native_arg, (t, dtype, shape, strides), {})
            except _Unplannable:
                self.bad = "a view of a tensor that requires grad"
                return a
            self.ops[-1].result = self.new(a, self.slot.get(id(t)) in self.fresh)
        return a

    def kernel(self, k, t):
        return _RecKernel(self, k, t)

    def overlap(self, check, fn, out_name, out, inputs):
        if self.bad or self.slot.get(id(out)) in self.fresh:
            return   # an output on fresh storage overlaps no input
        try:
            self.op(check, (fn, out_name, out), inputs)
        except _Unplannable:
            self.bad = "an overlap check of a tensor that requires grad"
            return
        self.ops[-1].result = None


def _narrow(t, dim, start, n):
    return t.narrow(dim, start, n)


def _native_arg(t, dtype, shape, strides):
    return _runtime._native.Arg(t.data_ptr(), dtype, shape, strides, t)


class _RecKernel:
    def __init__(self, rec, k, t):
        self.rec, self.k, self.t = rec, k, t

    def launch(self, *args, **kw):
        rec = self.rec
        if not rec.bad:
            stream = kw.pop("stream", None)
            if stream is None or stream != _runtime.stream(rec.vals[1]) or self.t.device != rec.vals[1].device:
                rec.bad = "a launch off the current stream"
            else:
                try:
                    rec.op(_launch_on, (self.k.launch, _Slot(0)) + args, kw)
                except _Unplannable:
                    rec.bad = "a launch on a tensor that requires grad"
                else:
                    rec.ops[-1].result = None
            kw["stream"] = stream
        return self.k.launch(*args, **kw)

    @property
    def signature(self):
        return self.k.signature


def _launch_on(launch, stream, *args, **kw):
    launch(*args, stream=stream, **kw)


class _Op:
    __slots__ = ("func", "args", "subs", "kw", "ksubs", "result")


def _compile_op(func, args, kw):
    op = _Op()
    op.func = func
    op.args, op.subs = _split(args)
    kws, op.ksubs = _split(list(kw.values()))
    op.kw = dict(zip(kw.keys(), kws))
    op.ksubs = [(list(kw.keys())[p], s) for p, s in op.ksubs]
    op.result = None
    return op


def _split(items):
    """(literal list, [(position, slot or (type, items))]) of a template list."""
    lit, subs = [], []
    for p, v in enumerate(items):
        if isinstance(v, _Slot):
            subs.append((p, v.i))
            lit.append(None)
        elif isinstance(v, _Seq):
            subs.append((p, (v.tp, [e.i if isinstance(e, _Slot) else _Lit(e) for e in v.items])))
            lit.append(None)
        else:
            lit.append(v)
    return lit, subs


class _Lit:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v


def _value(vals, s):
    if type(s) is int:
        return vals[s]
    tp, items = s
    return tp(e.v if type(e) is _Lit else vals[e] for e in items)


class _Plan:
    __slots__ = ("ops", "nvals", "result", "dev")

    def replay(self, tensors):
        vals = [None] * self.nvals
        vals[0] = _runtime.stream(tensors[0]) if self.dev != _runtime.CPU else 0
        vals[1:len(tensors) + 1] = tensors
        for op in self.ops:
            a = op.args
            if op.subs:
                a = list(a)
                for p, s in op.subs:
                    a[p] = vals[s] if type(s) is int else _value(vals, s)
            kw = op.kw
            if op.ksubs:
                kw = dict(kw)
                for k, s in op.ksubs:
                    kw[k] = vals[s] if type(s) is int else _value(vals, s)
            r = op.func(*a, **kw)
            if op.result is not None:
                vals[op.result] = r
        return self.result(vals)


def _result_builder(rec, res):
    """A function of the replay's values that rebuilds the call's return value: each tensor one
    the call was given or made, lists and tuples of them rebuilt, any other value as it was."""
    def tmpl(v):
        if isinstance(v, (_T, _runtime.Arg)):
            s = rec.slot.get(id(v))
            if s is None:
                raise _Unplannable   # a tensor the call did not make
            return s
        if type(v) in (list, tuple):
            return _Seq(type(v), [tmpl(e) for e in v])
        return _Lit(v)

    def build(t, vals):
        if type(t) is int:
            return vals[t]
        if type(t) is _Lit:
            return t.v
        return t.tp(build(e, vals) for e in t.items)

    t = tmpl(res)
    if type(t) is int:
        return lambda vals: vals[t]
    if type(t) is _Seq and all(type(e) is int for e in t.items):
        idx = t.items
        if t.tp is tuple:
            return lambda vals: tuple([vals[i] for i in idx])
        return lambda vals: [vals[i] for i in idx]
    return lambda vals: build(t, vals)


def planned(fn):
    """The call of ``fn`` through its plan (see the module's text); ``fn``'s own behaviour otherwise."""
    @functools.wraps(fn)
    def call(*args, **kw):
        if _tls.rec is not None or _runtime._state.fake:
            return fn(*args, **kw)
        tensors = []
        try:
            key = _key(fn, args, kw, tensors)
            p = _plans.get(key)
        except (_Unplannable, TypeError):   # an unhashable value
            return fn(*args, **kw)
        if type(p) is _Plan:
            return p.replay(tensors)
        if p is _NEVER or not tensors:
            return fn(*args, **kw)
        if p is None:
            r = fn(*args, **kw)
            with _LOCK:
                if len(_plans) < _MAX_PLANS:
                    _plans.setdefault(key, 1)
            return r
        return _record(fn, key, args, kw, tensors)
    return call


def _record(fn, key, args, kw, tensors):
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        _plans[key] = _NEVER
        return fn(*args, **kw)
    rec = _Recorder(tensors)
    _tls.rec = rec
    try:
        with rec:
            res = fn(*args, **kw)
    finally:
        _tls.rec = None
    plan = None
    if not rec.bad:
        try:
            plan = _Plan()
            plan.ops = rec.ops
            plan.nvals = len(rec.vals)
            plan.result = _result_builder(rec, res)
            plan.dev = tensors[0].get_device()
            if plan.dev < 0:
                plan.dev = _runtime.CPU
        except _Unplannable:
            plan = None
    with _LOCK:
        _plans[key] = plan if plan is not None else _NEVER
    if plan is None:
        _why[getattr(fn, "__name__", str(fn))] = rec.bad or "its return value"
    return res


def clear():
    """Forgets every plan (tests; a changed kernel library)."""
    with _LOCK:
        _plans.clear()
