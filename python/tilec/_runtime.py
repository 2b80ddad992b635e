"""The bridge to the C runtime: one runtime and kernel library per device, one cache of
specialisations for every family, and the stream a launch goes on.

The device follows the tensors: CPU tensors run on the CPU emulator (docs/debugging.md), CUDA
tensors on their GPU; a launch whose tensors are on different devices is refused, naming them.
``TILEC_DEVICE`` (read when tilec is imported) restricts every launch to one device, ``cpu``
(the emulator) or ``cuda``: a tensor elsewhere is then an error.

Kernel sources: the file ``TILEC_KERNELS`` names, else the ``kernels.tl`` shipped with the
package (inside it in a wheel, ``share/tilec`` in an install tree, the checkout's root for the
sources). On a GPU, ``kernels.fatbin`` and its manifest next to that file (built ahead of time)
serve every specialisation they hold; the rest compile on first use. ``TILEC_CACHE_DIR`` is the
disk cache (default ``~/.cache/tilec``).
"""
import os
import threading

import torch

from . import _native

CPU = -1  # the device key of the CPU emulator; a CUDA device's key is its index (Tensor.get_device())

_HERE = os.path.dirname(os.path.abspath(__file__))
_FORCED = os.environ.get("TILEC_DEVICE", "").strip().lower()
_runtimes = {}   # device key -> Runtime
_libraries = {}  # device key -> (Runtime, Library) of the shipped kernel library
_kernels = {}    # (device key, kernel name, generics[, library]) -> Kernel

_DTYPES = {
    torch.bool: "bool", torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64",
    torch.uint8: "u8", torch.uint16: "u16", torch.uint32: "u32", torch.uint64: "u64", torch.float16: "f16",
    torch.bfloat16: "bf16", torch.float32: "f32", torch.float64: "f64", torch.float8_e4m3fn: "e4m3",
    torch.float8_e5m2: "e5m2", torch.float8_e8m0fnu: "ue8m0",
}
for _k, _v in _DTYPES.items():
    _native.register_dtype(_k, _v)

LaunchError = _native.LaunchError
Arg = _native.Arg

# While a fake implementation runs (tilec._ops: torch.compile tracing, meta tensors), the kernel
# functions allocate their outputs as usual but launch nothing and read no data pointer.
class _State(threading.local):
    fake = False   # a class default: reading it costs an attribute lookup, not a getattr with a default


_state = _State()


def faking() -> bool:
    return _state.fake


class _NoLaunch:
    def launch(self, *args, **kw):
        pass


_NO_LAUNCH = _NoLaunch()


def view(t: torch.Tensor, dtype: str, shape, strides):
    """An argument over ``t``'s storage with another element type, shape and strides (in
    elements): packed FP4 as e2m1 elements, scale bytes, words."""
    if faking():
        return None
    rec = _plan.recording()
    if rec is not None:
        return rec.arg(t, dtype, shape, strides)
    return _native.Arg(t.data_ptr(), dtype, shape, strides, t)


def kernels_source() -> str:
    """The root .tl file of the kernel library: $TILEC_KERNELS, else the one shipped with tilec."""
    env = os.environ.get("TILEC_KERNELS")
    if env:
        return env
    for cand in (os.path.join(_HERE, "share"), os.path.join(_HERE, "..", "..", "share", "tilec"),
                 os.path.join(_HERE, "..", "..")):
        path = os.path.join(cand, "kernels.tl")
        if os.path.exists(path):
            return os.path.abspath(path)
    raise RuntimeError(f"tilec: no kernels.tl found with the package in {_HERE}; set TILEC_KERNELS to the library's "
                       "root .tl file")


def device_name(dev: int) -> str:
    return "cpu" if dev == CPU else f"cuda:{dev}"


def _runtime_of(dev: int):
    """The one runtime of device ``dev`` (CPU: the emulator), created on first use; every library
    of the device, the shipped one and those of tilec.load, opens in it."""
    rt = _runtimes.get(dev)
    if rt is not None:
        return rt
    if _FORCED not in ("", "cpu", "cuda"):
        raise ValueError(f"tilec: TILEC_DEVICE is '{_FORCED}': it must be 'cpu', 'cuda' or unset")
    if _FORCED == "cpu" and dev != CPU:
        raise ValueError(f"tilec: TILEC_DEVICE=cpu runs every kernel on the CPU emulator, but the tensors are on "
                         f"{device_name(dev)}")
    if _FORCED == "cuda" and dev == CPU:
        raise ValueError("tilec: TILEC_DEVICE=cuda runs every kernel on the GPU, but the tensors are on the CPU")
    cache_dir = os.environ.get("TILEC_CACHE_DIR")
    if dev == CPU:
        rt = _native.Runtime(cache_dir=cache_dir, cpu=True)
    else:
        with torch.cuda.device(dev):
            torch.cuda.current_stream(dev)  # makes the device's primary context current
            rt = _native.Runtime(cache_dir=cache_dir, device=dev)
    _runtimes[dev] = rt
    return rt


def open_library(dev: int, **kw):
    """A library (``Runtime.open``'s keywords: source, fatbin, manifest, include_dirs, defines)
    in the runtime of device ``dev``."""
    rt = _runtime_of(dev)
    if dev == CPU:
        return rt.open(**kw)
    with torch.cuda.device(dev):
        return rt.open(**kw)


def _open(dev: int):
    source = kernels_source()
    kw = {"source": source}
    fatbin = os.path.join(os.path.dirname(source), "kernels.fatbin")
    if dev != CPU and os.path.exists(fatbin) and os.path.exists(fatbin + ".manifest"):
        kw.update(fatbin=fatbin, manifest=fatbin + ".manifest")
    lib = open_library(dev, **kw)
    return _runtimes[dev], lib


def library(dev: int = CPU):
    """The kernel library of device ``dev`` (CPU: the emulator), opened on first use."""
    entry = _libraries.get(dev)
    if entry is None:
        entry = _libraries[dev] = _open(dev)
    return entry[1]


def runtime(dev: int = CPU):
    """The runtime of device ``dev`` (its cache counters, its disk cache directory)."""
    library(dev)
    return _libraries[dev][0]


def kernel(name: str, generics: tuple, t: torch.Tensor, lib=None):
    """The specialisation of ``name`` for ``generics`` (a tuple of "NAME=VALUE" strings) on the
    device of tensor ``t``; compiled, or loaded from a cache, on first use. ``lib``: a library
    of tilec.load (tilec.Library) instead of the shipped one."""
    if faking():
        return _NO_LAUNCH
    dev = t.get_device()
    key = (dev, name, generics) if lib is None else (dev, name, generics, lib)
    k = _kernels.get(key)
    if k is None:
        k = _kernels[key] = (library(dev) if lib is None else lib._native(dev)).kernel(name, generics)
    rec = _plan.recording()
    if rec is not None:
        return rec.kernel(k, t)
    return k


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def stream(t: torch.Tensor) -> int:
    """The current torch stream of tensor ``t``'s device, as an integer handle (0 on the CPU)."""
    dev = t.get_device()
    if dev == CPU or faking():
        return 0
    if _raw_stream is not None:
        return _raw_stream(dev)
    return torch.cuda.current_stream(t.device).cuda_stream


def pow2_divisor(v: int, cap: int) -> int:
    """The largest power of two that divides v, at most cap (a stride's alignment in elements)."""
    d = 1
    while d < cap and v % (d * 2) == 0:
        d *= 2
    return d


def warm_up(entries, dev: int = CPU, threads: int = 0) -> None:
    """Compiles (or loads from the caches) every specialisation in ``entries`` for device
    ``dev`` (CPU: the emulator) on a pool of ``threads`` threads (0: one per processor), so that
    a server pays for its compiles once, at start-up, in one call; a second start reads them from
    the disk cache. ``entries`` is a sequence of ``(kernel name, generics)`` with generics a tuple
    of "NAME=VALUE" strings, as ``kernel()`` takes them. Every entry is tried; the first failure
    is raised afterwards (RuntimeError, or LaunchError for a malformed generic), naming the entry.
    The kernels are then in memory for later calls."""
    entries = [(name, tuple(gens)) for name, gens in entries]
    library(dev).warm_up(entries, threads=threads)


from . import _plan  # noqa: E402  (the plans' recorder hooks view() and kernel())
