"""The bridge to the C runtime: one runtime and one kernel library per process, a cache of
specialisations by (kernel, generic values), and the launch call.

The library is ``share/tilec/kernels.tl`` of the install tree (JIT), plus
``share/tilec/kernels.fatbin`` and its manifest when they exist (ahead-of-time). Environment:
``TILEC_KERNELS`` overrides the .tl file, ``TILEC_CACHE_DIR`` the disk cache, and
``TILEC_DEVICE=cpu`` runs every kernel on the CPU emulator, on CPU tensors (docs/debugging.md).
"""
import os

import torch

from . import _native

_HERE = os.path.dirname(os.path.abspath(__file__))
_rt = None
_lib = None
_kernels = {}

_DTYPES = {
    torch.bool: "bool", torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64",
    torch.uint8: "u8", torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32", torch.float64: "f64",
}
for _name, _t in (("float8_e4m3fn", "e4m3"), ("float8_e5m2", "e5m2"), ("uint16", "u16"), ("uint32", "u32"),
                  ("uint64", "u64"), ("float8_e8m0fnu", "ue8m0")):
    if hasattr(torch, _name):
        _DTYPES[getattr(torch, _name)] = _t
for _k, _v in _DTYPES.items():
    _native.register_dtype(_k, _v)

LaunchError = _native.LaunchError
Arg = _native.Arg


def _share_dir():
    for cand in (os.path.join(_HERE, "..", "..", "share", "tilec"), os.path.join(_HERE, "..", "..")):
        if os.path.exists(os.path.join(cand, "kernels.tl")):
            return os.path.abspath(cand)
    raise RuntimeError("tilec: cannot find kernels.tl next to the package; set TILEC_KERNELS")


def on_cpu():
    """True when kernels run on the CPU emulator (``TILEC_DEVICE=cpu``) instead of the GPU."""
    return os.environ.get("TILEC_DEVICE", "").lower() == "cpu"


def library():
    """The process's kernel library (opened on first use, in the current CUDA context)."""
    global _rt, _lib
    if _lib is None:
        if not on_cpu():
            torch.cuda.init()
            torch.cuda.current_stream()  # makes the primary context current
        source = os.environ.get("TILEC_KERNELS") or os.path.join(_share_dir(), "kernels.tl")
        fatbin = os.path.join(os.path.dirname(source), "kernels.fatbin")
        kw = {"source": source}
        if os.path.exists(fatbin) and os.path.exists(fatbin + ".manifest"):
            kw.update(fatbin=fatbin, manifest=fatbin + ".manifest")
        _rt = _native.Runtime(cache_dir=os.environ.get("TILEC_CACHE_DIR"))
        _lib = _rt.open(**kw)
    return _lib


def runtime():
    library()
    return _rt


def kernel(name, generics):
    """The specialisation of ``name`` for ``generics`` (a tuple of "NAME=VALUE" strings)."""
    key = (name, generics)
    k = _kernels.get(key)
    if k is None:
        k = library().kernel(name, generics)
        _kernels[key] = k
    return k


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def pow2_divisor(v: int, cap: int) -> int:
    """The largest power of two that divides v, at most cap (a stride's alignment in elements)."""
    d = 1
    while d < cap and v % (d * 2) == 0:
        d *= 2
    return d


def require_device(x, fn):
    """Kernels run on CUDA tensors, or on CPU tensors when the CPU emulator is selected."""
    if on_cpu():
        if x.device.type != "cpu":
            raise ValueError(f"{fn}: x must be a CPU tensor when TILEC_DEVICE=cpu, got one on {x.device}")
    elif not x.is_cuda:
        raise ValueError(f"{fn}: x must be a CUDA tensor (or set TILEC_DEVICE=cpu to run on the CPU emulator)")


def stream(t):
    """The current torch stream of tensor ``t``'s device, as an integer handle (0 on the CPU)."""
    if on_cpu():
        return 0
    if _raw_stream is not None:
        return _raw_stream(t.get_device())
    return torch.cuda.current_stream(t.device).cuda_stream
