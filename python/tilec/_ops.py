"""tilec's kernel functions as torch.library custom ops, so that torch.compile traces a model
through them without a graph break (docs/pytorch.md).

A public function joins by declaring itself once, with ``@kernel_op``: the decorator derives the
op's schema from the function's parameters (their annotations, or the kinds it is given), and
registers the function itself as the op ``tilec::NAME`` — as its implementation, and, run with
launches turned off, as its fake implementation: the outputs are allocated by the same code, so
their shapes, dtypes and strides agree by construction. An eager call goes straight to the
function (no dispatcher on the launch path); a traced call (torch.compile, make_fx, AOT autograd
tracing a backward) goes through ``torch.ops.tilec.NAME``. The public function keeps TileKernels' signature and return value:
arguments the op schema cannot hold (a ``(data, sf)`` pair, a tuple of ints) travel flattened, and
the results travel as a list of tensors that the declaration's ``returns`` puts back together.

A differentiable function declares its autograd formula with the op (``autograd=``): it is
registered with ``torch.library.register_autograd``, and a call that needs gradients goes through
the op eagerly too, so that one formula serves eager and traced training (the backward's kernels
are ops of their own, so the traced backward is a graph of ops as well).
"""
import functools
import inspect
import typing

import torch

from . import _checks, _plan, _runtime

# How a public argument travels through the op: its kind and the op schema type(s).
TENSOR, OPT_TENSOR, QUANT, PAIR = "Tensor", "Tensor?", "quant", "pair"
INT, OPT_INT, INTS, OPT_INTS = "int", "int?", "int[]", "int[]?"
FLOAT, OPT_FLOAT, BOOL, STR, OPT_STR, DTYPE = "float", "float?", "bool", "str", "str?", "ScalarType"
TENSORS = "Tensor[]"

_FROM_ANNOTATION = {
    torch.Tensor: TENSOR, typing.Optional[torch.Tensor]: OPT_TENSOR, int: INT, typing.Optional[int]: OPT_INT,
    float: FLOAT, typing.Optional[float]: OPT_FLOAT, bool: BOOL, str: STR, typing.Optional[str]: OPT_STR,
    typing.Tuple[int, int]: INTS, typing.Optional[typing.Tuple[int, int]]: OPT_INTS, torch.dtype: DTYPE,
    typing.List[torch.Tensor]: TENSORS,
}

OPS = {}  # op name -> the custom op, for tests (opcheck) and docs


class _NoLaunch:
    def __enter__(self):
        self.saved = _runtime.faking()
        _runtime._state.fake = True

    def __exit__(self, *exc):
        _runtime._state.fake = self.saved


def _flatten_result(r, out):
    if isinstance(r, torch.Tensor):
        out.append(r)
    elif isinstance(r, (tuple, list)):
        for e in r:
            _flatten_result(e, out)
    elif r is not None:
        raise TypeError(f"a kernel op returns tensors, tuples of tensors or None, not {type(r).__name__}")
    return out


def _rebuild_tuple(flat, args):
    return tuple(flat)


def _rebuild_single(flat, args):
    return flat[0]


def _rebuild_none(flat, args):
    return None


def _rebuild_out(flat, args):
    return args["out"] if args["out"] is not None else flat[0]


_RETURNS = {"tuple": _rebuild_tuple, "tensor": _rebuild_single, "none": _rebuild_none, "out": _rebuild_out}


def _written(v):
    """The tensors of a written argument: a tensor, or a list of tensors (none for None)."""
    if v is None:
        return []
    return list(v) if isinstance(v, (list, tuple)) else [v]


_TRACING_MODES = tuple(torch._C._TorchDispatchModeKey.__members__.values())   # fake, proxy, functional


def _tracing():
    """A call being traced: by Dynamo, or under a fake, proxy or functionalisation mode (AOT
    autograd tracing a registered backward, make_fx)."""
    return torch.compiler.is_compiling() or any(torch._C._get_dispatch_mode(k) is not None for k in _TRACING_MODES)


def _wants_grad(a, kw):
    return torch.is_grad_enabled() and any(isinstance(v, torch.Tensor) and v.requires_grad
                                           for v in (*a, *kw.values()))


_SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)


def _is_tensor_pair(v):
    return isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(e, torch.Tensor) for e in v)


def _check_kinds(fn, params, args):
    """Each argument of a traced call is of its parameter's travel kind, checked before the op's
    schema sees it (the schema would turn 1 into True for a bool, and report a string for a
    tensor in torch's words): the eager path's checks, which the fake implementation runs, then
    see the caller's values."""
    for pname, kind, _ in params:
        v = args[pname]
        if (v is None and kind.endswith("?")) or isinstance(v, _SYMBOLIC):   # None, or a traced shape's value
            continue
        if kind == BOOL:
            _checks.check_bool(fn, pname, v)
        elif kind in (INT, OPT_INT):
            _checks.check_int(fn, pname, v)
        elif kind in (FLOAT, OPT_FLOAT):
            _checks.check_float(fn, pname, v)
        elif kind in (STR, OPT_STR):
            if not isinstance(v, str):
                raise ValueError(f"{fn}: {pname} must be a string, got {type(v).__name__} {v!r}")
        elif kind in (TENSOR, OPT_TENSOR):
            if not isinstance(v, torch.Tensor):
                raise ValueError(f"{fn}: {pname} must be a tensor, got {type(v).__name__}")
        elif kind == QUANT:
            if not isinstance(v, torch.Tensor) and not _is_tensor_pair(v):
                raise ValueError(f"{fn}: {pname} must be a tensor or a (data, sf) pair of tensors, "
                                 f"got {type(v).__name__}")
        elif kind == PAIR:
            if not _is_tensor_pair(v):
                raise ValueError(f"{fn}: {pname} must be a (data, sf) pair of tensors, got {type(v).__name__}")
        elif kind in (INTS, OPT_INTS):
            if (not isinstance(v, (tuple, list)) or
                    not all(isinstance(e, (int, torch.SymInt)) and not isinstance(e, bool) for e in v)):
                raise ValueError(f"{fn}: {pname} must be a tuple of integers, got {v!r}")
        elif kind == DTYPE:
            if not isinstance(v, torch.dtype):
                raise ValueError(f"{fn}: {pname} must be a torch.dtype, got {type(v).__name__} {v!r}")
        elif kind == TENSORS:
            if not isinstance(v, (tuple, list)) or not all(isinstance(e, torch.Tensor) for e in v):
                raise ValueError(f"{fn}: {pname} must be a list of tensors")


def kernel_op(name=None, *, kinds=None, mutates=(), returns="tuple", saves=0, autograd=None):
    """Declares a public kernel function as the custom op ``tilec::name`` (default: the function's
    name). ``kinds`` gives the travel kind of parameters whose annotation does not say it
    (QUANT: a tensor or a (data, sf) pair; PAIR: always a pair; INTS: a tuple of ints; ...);
    ``mutates`` names the tensors (or lists of tensors) the kernels write in place (the op returns
    their new values after its results, and the traced call copies them back); ``returns`` rebuilds
    the public return value from the op's list of result tensors: "tuple", "tensor", "none", "out"
    (the ``out`` argument when given, else the one result) or a function (flat, args) -> value,
    args being the public call's arguments by name.

    ``saves``: the number of tensors the function keeps for its backward; it then returns
    ``(value, (t1, ..., t_saves))``, the op returns the saved tensors after its results, and the
    public call returns ``value`` alone. ``autograd``: ``(setup_context, backward)``, registered on
    the op with torch.library.register_autograd: ``setup_context(ctx, args, results)`` gets the
    public arguments by name and the op's result tensors (results, saved tensors, written
    tensors); ``backward(ctx, grads)`` gets one gradient a result and returns {argument name:
    gradient} (arguments left out get None). A call with grad mode on and an argument that
    requires grad then goes through the op eagerly as well."""
    def deco(fn):
        op_name = name or fn.__name__
        sig = inspect.signature(fn)
        params = []
        for p in sig.parameters.values():
            kind = (kinds or {}).get(p.name) or _FROM_ANNOTATION.get(p.annotation)
            if kind is None:
                raise TypeError(f"kernel_op {op_name}: say how parameter '{p.name}' travels (kinds=...)")
            params.append((p.name, kind, p.default))
        schema_args = []
        for pname, kind, _ in params:
            if kind in (QUANT, PAIR):
                schema_args += [f"Tensor {pname}", f"Tensor? {pname}_sf" if kind == QUANT else f"Tensor {pname}_sf"]
            else:
                schema_args.append(f"{kind} {pname}")
        schema = f"({', '.join(schema_args)}) -> Tensor[]"
        rebuild = _RETURNS.get(returns, returns)

        def flatten(args):
            flat = []
            for pname, kind, _ in params:
                v = args[pname]
                if kind in (QUANT, PAIR):
                    if isinstance(v, (tuple, list)) and len(v) == 2:
                        flat += [v[0], v[1]]
                    elif kind == QUANT:
                        flat += [v, None]
                    else:
                        flat += [v, None]   # the function's own check reports it
                elif kind in (INTS, OPT_INTS) and v is not None:
                    flat.append(list(v))
                else:
                    flat.append(v)
            return flat

        def unflatten(flat):
            args, i = {}, 0
            for pname, kind, _ in params:
                if kind in (QUANT, PAIR):
                    args[pname] = flat[i] if flat[i + 1] is None and kind == QUANT else (flat[i], flat[i + 1])
                    i += 2
                elif kind in (INTS, OPT_INTS) and flat[i] is not None:
                    args[pname] = tuple(flat[i])
                    i += 1
                else:
                    args[pname] = flat[i]
                    i += 1
            return args

        def impl(*flat):
            # The op is functional: a tensor the function writes in place (``mutates``) is cloned,
            # written, and returned after the results; the traced call copies it back into the
            # caller's tensor (auto-functionalisation supports neither Tensor[] results nor
            # optional written tensors, and this costs only the clone, on the traced path and, for
            # a differentiable op, an eager call that needs gradients).
            args = unflatten(flat)
            written = []
            for m in mutates:
                v = args[m]
                if isinstance(v, (list, tuple)):
                    args[m] = [t.clone() for t in v]
                    written += args[m]
                elif v is not None:
                    args[m] = v.clone()
                    written.append(args[m])
            r = fn(**args)
            saved = []
            if saves:
                r, saved = r[0], list(r[1])
            res = _flatten_result(r, [])
            return [t for t in res if not any(t is w for w in written)] + saved + written

        def fake(*flat):
            with _NoLaunch():
                return impl(*flat)

        op = torch.library.custom_op(f"tilec::{op_name}", impl, mutates_args=(), schema=schema)
        op.register_fake(fake)
        OPS[op_name] = op
        eager = _plan.planned(fn)   # the eager call, through its argument plan

        if autograd is not None:
            setup_fn, backward_fn = autograd

            def setup_context(ctx, inputs, output):
                setup_fn(ctx, unflatten(list(inputs)), list(output))

            def backward(ctx, grads):
                got = backward_fn(ctx, list(grads))
                flat = []
                for pname, kind, _ in params:
                    flat += [got.get(pname), None] if kind in (QUANT, PAIR) else [got.get(pname)]
                return tuple(flat)

            torch.library.register_autograd(op, backward, setup_context=setup_context)

        @functools.wraps(fn)
        def call(*a, **kw):
            if not _tracing() and not (autograd is not None and _wants_grad(a, kw)):
                r = eager(*a, **kw)
                return r[0] if saves else r
            bound = sig.bind(*a, **kw)
            bound.apply_defaults()
            args = bound.arguments
            _check_kinds(fn.__name__, params, args)
            res = op(*flatten(args))
            targets = [t for m in mutates for t in _written(args[m])]
            if targets:
                res, written = res[:-len(targets)], res[-len(targets):]
                for t, w in zip(targets, written):
                    t.copy_(w)
            if saves:
                res = res[:len(res) - saves]
            return rebuild(res, args)

        def op_args(*a, **kw):
            """The op's arguments for a public call's (for torch.library.opcheck)."""
            bound = sig.bind(*a, **kw)
            bound.apply_defaults()
            return tuple(flatten(bound.arguments))

        call.op = op
        call.op_name = op_name
        call.op_args = op_args
        call.impl = fn
        return call
    return deco


def no_launch():
    """A context in which the kernel functions allocate their outputs and launch nothing (their
    fake implementations)."""
    return _NoLaunch()
