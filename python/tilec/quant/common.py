"""Scale-factor layouts and argument plumbing shared by the quantisation functions (spec
quant-transpose.md §0.2, §1.4-§1.6): output allocation in the three layouts, reading an input
scale tensor's layout from its strides, FP4 views, and the kernel-launch helper."""
import ctypes
import functools
import struct

import torch

from .. import _runtime
from .._runtime import pow2_divisor  # noqa: F401  (re-exported for the quant modules)


def ceil_div(a: int, b: int) -> int:
    return (a + b - 1) // b


def align(a: int, b: int) -> int:
    return ceil_div(a, b) * b


def get_sf_shape(num_rows: int, hidden: int, block_size):
    """(sf rows, sf columns) of a (num_rows, hidden) tensor quantised in blocks of block_size."""
    bm, bn = block_size
    return ceil_div(num_rows, bm), ceil_div(hidden, bn)


def get_logical_hidden(hidden: int, dtype) -> int:
    """Columns in elements: packed FP4 (int8) holds two per byte."""
    return hidden * 2 if dtype == torch.int8 else hidden


def get_physical_hidden(hidden: int, dtype) -> int:
    return hidden // 2 if dtype == torch.int8 else hidden


def alloc_scaling_factors(nm: int, nk: int, use_tma_aligned_col_major_sf: bool, use_packed_ue8m0: bool, device,
                          kernel_pads_packed: bool = False):
    """The sf tensor in the layout of §1.4: row-major f32 (nm, nk); TMA-aligned column-major f32
    (strides (1, align(nm, 4))); or packed UE8M0, int32 (nm, cdiv(nk, 4)) column-major.
    Returns (sf view, storage): the storage is what kernels write through. Padding rows of the
    column-major storage are zeroed (TileKernels leaves them unwritten): here, or by the kernel
    for packed storage when ``kernel_pads_packed`` (dsl/quant.tl ue8m0_store), which saves a
    memset launch."""
    rows = align(nm, 4)
    make = torch.zeros if rows != nm else torch.empty
    if use_packed_ue8m0:
        make = torch.empty if kernel_pads_packed else make
        store = make((ceil_div(nk, 4), rows), dtype=torch.int32, device=device)
        return store[:, :nm].T, store
    if use_tma_aligned_col_major_sf:
        store = make((nk, rows), dtype=torch.float32, device=device)
        return store[:, :nm].T, store
    sf = torch.empty((nm, nk), dtype=torch.float32, device=device)
    return sf, sf


def packed_bytes(store: torch.Tensor) -> "_runtime.Arg":
    """The u8 view a kernel writes packed UE8M0 bytes through: [word column, 4 * row + byte]."""
    words, rows = store.shape
    return _runtime.Arg(store.data_ptr(), "u8", (words, rows * 4), (rows * 4, 1), store)


def sf_out_args(sf: torch.Tensor, store: torch.Tensor, packed: bool):
    """(sf, sfp) kernel arguments for an output allocated by alloc_scaling_factors."""
    return (None, packed_bytes(store)) if packed else (sf, None)


def check_layout_flags(use_tma_aligned_col_major_sf: bool, round_sf: bool, use_packed_ue8m0: bool, fn: str):
    if use_packed_ue8m0 and not use_tma_aligned_col_major_sf:
        raise ValueError(f"{fn}: use_packed_ue8m0 needs use_tma_aligned_col_major_sf=True (packed scales are column-major)")
    if use_packed_ue8m0 and not round_sf:
        raise ValueError(f"{fn}: use_packed_ue8m0 needs round_sf=True (UE8M0 holds powers of two only)")


def check_block(block, name: str, fn: str):
    if (not isinstance(block, (tuple, list)) or len(block) != 2 or
            not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in block)):
        raise ValueError(f"{fn}: {name} must be a pair of positive integers, got {block!r}")
    return int(block[0]), int(block[1])


def data_arg(q: torch.Tensor, fn: str, name: str = "x"):
    """A quantised data tensor as a kernel argument: e4m3 as is, int8 as packed e2m1 with its
    logical shape and strides (two elements per byte)."""
    if q.dtype == torch.int8:
        if q.stride(1) != 1:
            raise ValueError(f"{fn}: {name} must have unit stride along the hidden dimension")
        return _runtime.Arg(q.data_ptr(), "e2m1", (q.size(0), 2 * q.size(1)), (2 * q.stride(0), 1), q)
    return q


def input_sf_args(x_sf: torch.Tensor, nm: int, nk: int, fn: str, name: str = "x_sf"):
    """(isf, isfp) kernel arguments for an input scale tensor, its layout read from its strides
    (§1.5): stride(0) == 1 is column-major (int32: packed UE8M0 words), otherwise row-major f32.
    Checks the shape (nm, nk), or (nm, cdiv(nk, 4)) for packed words."""
    if not isinstance(x_sf, torch.Tensor) or x_sf.dim() != 2:
        raise ValueError(f"{fn}: {name} must be a 2-D tensor")
    if x_sf.dtype == torch.int32:
        if x_sf.stride(0) != 1 and x_sf.size(0) > 1:
            raise ValueError(f"{fn}: packed UE8M0 {name} (int32) must be column-major (stride(0) == 1), "
                             f"got strides {tuple(x_sf.stride())}")
        if tuple(x_sf.shape) != (nm, ceil_div(nk, 4)):
            raise ValueError(f"{fn}: packed {name} must have shape {(nm, ceil_div(nk, 4))}, got {tuple(x_sf.shape)}")
        words = x_sf.size(1)
        rows = x_sf.stride(1) if words > 1 else max(x_sf.stride(1), nm)
        if words > 1 and rows < nm:
            raise ValueError(f"{fn}: packed {name}'s column stride ({rows}) is below its row count ({nm})")
        return None, _runtime.Arg(x_sf.data_ptr(), "u8", (words, rows * 4), (rows * 4, 1), x_sf)
    if x_sf.dtype != torch.float32:
        raise ValueError(f"{fn}: {name} must be float32 or int32 (packed UE8M0), got {x_sf.dtype}")
    if tuple(x_sf.shape) != (nm, nk):
        raise ValueError(f"{fn}: {name} must have shape {(nm, nk)}, got {tuple(x_sf.shape)}")
    if x_sf.stride(0) != 1 and x_sf.stride(1) != 1 and x_sf.numel() > 1:
        raise ValueError(f"{fn}: {name} must be row-major or column-major, got strides {tuple(x_sf.stride())}")
    return x_sf, None


def f32(x: float) -> float:
    """x rounded to f32 (to nearest, inf beyond the range), as a kernel's f32 scalar receives it."""
    return ctypes.c_float(x).value


def is_bf16_value(x: float) -> bool:
    """Whether x is exactly a bf16 value (an f32 whose low 16 bits are zero); NaN is not."""
    v = f32(x)
    return v == x and struct.unpack("<I", struct.pack("<f", v))[0] & 0xFFFF == 0


def _gen_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


_generic_strings = {}


def kernel(name: str, t: torch.Tensor, **generics):
    """The specialisation of kernel `name` on tensor ``t``'s device; a tensor-presence generic is
    given as has_NAME=True/False. The "NAME=VALUE" strings of each configuration are built once
    (they were a third of a call's host time); the kernel itself comes from the runtime's cache."""
    key = (name, *generics.items())
    gens = _generic_strings.get(key)
    if gens is None:
        parts = []
        for k, v in generics.items():
            if k.startswith("has_"):
                parts.append(f"{k[4:]}={'present' if v else 'absent'}")
            else:
                parts.append(f"{k}={_gen_value(v)}")
        gens = _generic_strings[key] = tuple(parts)
    return _runtime.kernel(name, gens, t)


def fmt_dtype(fmt: str):
    return torch.float8_e4m3fn if fmt == "e4m3" else torch.int8


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


@functools.lru_cache(maxsize=None)
def tile_shape(bk: int, nthreads: int = 256, max_elems: int = 4096, vecs=(8, 4, 2, 1)):
    """(rows, vector width) of a tile with bk columns such that the default frag layout (runs of
    `vec` along a row, threads over the runs of a row first, then over rows) gives every thread
    its own elements, with no replicated threads: the widest vector first, then the fewest rows,
    at most max_elems elements."""
    for vec in vecs:
        if bk % vec:
            continue
        bm = 1
        while bm * bk <= max_elems:
            t1 = _gcd(nthreads, bk // vec)
            if t1 * _gcd(nthreads // t1, bm) == nthreads:
                return bm, vec
            bm *= 2
    return 1, 1
