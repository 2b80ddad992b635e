"""Argument checks the wrappers share: each raises ValueError("function: argument rule") before
anything is launched, naming the argument, so that a caller never sees torch's or the runtime's
internals for a mistake of theirs."""
import torch

from . import _plan, _runtime


def check_tensor(fn, name, t, dtypes, dim, contiguous=True):
    """``t`` is a tensor of one of ``dtypes`` with ``dim`` dimensions (and contiguous)."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{fn}: {name} must be a tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        want = " or ".join(str(d).replace("torch.", "") for d in dtypes)
        raise ValueError(f"{fn}: {name} must be {want}, got {str(t.dtype).replace('torch.', '')}")
    if t.dim() != dim:
        raise ValueError(f"{fn}: {name} must be {dim}-D, got {t.dim()}-D")
    if contiguous and not t.is_contiguous():
        raise ValueError(f"{fn}: {name} must be contiguous")


def check_int(fn, name, v, lo=None, hi=None):
    """An integer argument (a bool or a float is not one), optionally within [lo, hi]."""
    if not isinstance(v, int) or isinstance(v, bool):
        raise ValueError(f"{fn}: {name} must be an integer, got {type(v).__name__} {v!r}")
    if hi is not None and not lo <= v <= hi:
        raise ValueError(f"{fn}: {name} must be in [{lo}, {hi}], got {v}")
    if lo is not None and v < lo:
        raise ValueError(f"{fn}: {name} must be " + ("positive" if lo == 1 else f">= {lo}") + f", got {v}")
    return v


def check_bool(fn, name, v):
    if not isinstance(v, bool):
        raise ValueError(f"{fn}: {name} must be a bool, got {type(v).__name__} {v!r}")
    return v


def check_float(fn, name, v):
    """A real number (an int is one; a bool, a complex or a tensor is not)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{fn}: {name} must be a float, got {type(v).__name__} {v!r}")
    return float(v)


def _byte_range(t: torch.Tensor):
    if t.numel() == 0 or _runtime.faking():   # a fake tensor has no memory to compare
        return None
    span = sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride())) + 1
    lo = t.data_ptr() - sum((n - 1) * -s for n, s in zip(t.shape, t.stride()) if s < 0) * t.element_size()
    return lo, lo + span * t.element_size()


def check_no_overlap(fn, out_name, out, /, **inputs):
    """The tensor a kernel writes (``out``) shares no memory with any of ``inputs`` (name ->
    tensor or None): byte ranges of one storage that intersect are refused, even when the
    elements interleave without touching."""
    rec = _plan.recording()
    if rec is not None:
        rec.overlap(check_no_overlap, fn, out_name, out, inputs)
    r = _byte_range(out)
    if r is None:
        return
    for name, t in inputs.items():
        if not isinstance(t, torch.Tensor) or t.device != out.device:
            continue
        q = _byte_range(t)
        if q is not None and q[0] < r[1] and r[0] < q[1]:
            raise ValueError(f"{fn}: {out_name} overlaps {name} (a kernel's output must not share memory with "
                             f"its inputs)")


def invalid_counter(fn, t, like, /, **inputs):
    """The optional counter of dropped out-of-range values: None, or a one-element int32 tensor on
    the device of ``like`` that the kernel adds the count to (atomically, on the device: no
    synchronisation; the caller reads it when it wants to know), sharing no memory with
    ``inputs``."""
    if t is None:
        return None
    if not isinstance(t, torch.Tensor) or t.dtype != torch.int32 or t.numel() != 1:
        raise ValueError(f"{fn}: invalid_count must be an int32 tensor of one element")
    if t.device != like.device:
        raise ValueError(f"{fn}: invalid_count is on {t.device}, the inputs on {like.device}")
    check_no_overlap(fn, "invalid_count", t, **inputs)
    return t.view(1)
