"""Argument checks and launch helpers shared by the mHC kernel modules."""
import torch

from .. import _runtime
from .._checks import check_bool, check_float, check_int, check_no_overlap  # noqa: F401
from ..config import get_num_sms  # noqa: F401
from ..utils import align, ceil_div

MAX_MULT = 16    # streams a kernel unrolls over


def _dt(d):
    return str(d).replace("torch.", "")


def check_tensor(fn, name, t, dtype, min_dim=1, dim=None, contiguous=True):
    """``t`` is a ``dtype`` tensor with ``dim`` dimensions (or at least ``min_dim``), contiguous."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{fn}: {name} must be a tensor, got {type(t).__name__}")
    if t.dtype != dtype:
        raise ValueError(f"{fn}: {name} must be {_dt(dtype)}, got {_dt(t.dtype)}")
    if dim is not None and t.dim() != dim:
        raise ValueError(f"{fn}: {name} must be {dim}-D, got {t.dim()}-D with shape {tuple(t.shape)}")
    if t.dim() < min_dim:
        raise ValueError(f"{fn}: {name} must have at least {min_dim} dimensions, got shape {tuple(t.shape)}")
    if contiguous and not t.is_contiguous():
        raise ValueError(f"{fn}: {name} must be contiguous")


def check_shape(fn, name, t, shape, what):
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{fn}: {name} must have shape {what} = {tuple(shape)}, got {tuple(t.shape)}")


def check_mult(fn, name, m):
    if not isinstance(m, torch.SymInt):   # a dimension of a traced tensor may be symbolic
        check_int(fn, name, m)
    if not 1 <= m <= MAX_MULT:
        raise ValueError(f"{fn}: {name} must be in [1, {MAX_MULT}], got {m}")
    return m


def check_device(fn, /, **tensors):
    """All tensors on one device (the first named one's)."""
    items = [(n, t) for n, t in tensors.items() if isinstance(t, torch.Tensor)]
    if not items:
        return
    n0, t0 = items[0]
    for n, t in items[1:]:
        if t.device != t0.device:
            raise ValueError(f"{fn}: {n} is on {t.device}, {n0} on {t0.device}")


def check_out(fn, out, shape, what, dtype, **inputs):
    """An optional preallocated output: ``dtype``, ``shape``, contiguous, on the inputs' device,
    sharing no memory with them."""
    if out is None:
        return
    check_tensor(fn, "out", out, dtype)
    check_shape(fn, "out", out, shape, what)
    first = next(t for t in inputs.values() if isinstance(t, torch.Tensor))
    if out.device != first.device:
        raise ValueError(f"{fn}: out is on {out.device}, the inputs on {first.device}")
    check_no_overlap(fn, "out", out, **inputs)


def launch(name, gens, like, *args, num_sms=None):
    _runtime.kernel(name, tuple(gens), like).launch(
        *args, stream=_runtime.stream(like), **({} if num_sms is None else {"num_sms": num_sms}))


def present(name, t):
    return f"{name}={'absent' if t is None else 'present'}"


def chunk(H, cap):
    """The hidden-column chunk of a block: cap, or H rounded up to 64 when it is smaller."""
    return cap if H >= cap else max(64, align(H, 64))


def partials(count, T, *a):
    """The blocks a launch over T tokens sums partial results over: count(T, *a, SM count); 1
    in a fake implementation, which launches nothing (no partial buffers are needed, and a token
    count that is symbolic there is not compared with the SM count)."""
    if _runtime.faking():
        return 1
    return count(T, *a, get_num_sms())


def _hidden_splits(T, H, chunk, n):
    if T >= n or H <= chunk:
        return 1
    return max(1, min(ceil_div(H, chunk), ceil_div(n, T)))


def hidden_splits(T, H, chunk):
    """Blocks a backward kernel puts on each token's hidden columns: one where the tokens fill
    the SMs, else enough (at most one a chunk) that T x splits reaches the SM count; their
    partial sums over the hidden dimension are added up by the caller."""
    return partials(_hidden_splits, T, H, chunk)


def grad_from_mhc_post(fn, who, x):
    """The residual-gradient buffer mhc_post's backward left on x's storage (spec §3.5, §3.6,
    §3.10), viewed as x, or None; ``who`` names x in the message of a buffer that is not one."""
    buf = getattr(x.untyped_storage(), "grad_from_mhc_post", None)
    if buf is None:
        return None
    if not isinstance(buf, torch.Tensor) or buf.dtype != torch.bfloat16 or buf.numel() != x.numel() \
            or not buf.is_contiguous():
        raise ValueError(f"{fn}: the grad_from_mhc_post buffer on {who} storage must be a contiguous bf16 tensor "
                         f"of {who} {x.numel()} elements")
    return buf.view(x.shape)
