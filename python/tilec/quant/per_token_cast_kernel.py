"""Per-token casts (spec quant-transpose.md §2.1-§2.3): per_token_cast (e4m3, packed e2m1; float
or quantised input; E5M6 through per_token_cast_to_e5m6), its scale-only and precomputed-scale
variants."""
import functools
import math
from typing import Optional, Tuple

import torch

from .. import _runtime
from .._ops import kernel_op, QUANT
from ..utils import align, ceil_div
from .common import (FLOAT_IN, alloc_data_out, alloc_sf, check_block, check_flags, check_float_x, check_layout_flags,
                     data_arg, input_sf_args, kernel, pow2_divisor, sf_grid, sf_out_args, tile_shape)
from .per_token_cast_to_e5m6_kernel import per_token_cast_to_e5m6

_FMTS = ("e4m3", "e2m1", "e5m6")


def _check_n(n, H: int, fn: str, allow_row: bool):
    if not isinstance(n, int) or isinstance(n, bool):
        raise ValueError(f"{fn}: num_per_channels must be an integer, got {n!r}")
    if allow_row and n == H:
        if H % 64:
            raise ValueError(f"{fn}: one scale per row (num_per_channels == hidden) needs hidden % 64 == 0, got {H}")
        return
    if n not in (16, 32, 64, 128):
        if allow_row:
            raise ValueError(f"{fn}: num_per_channels must be 16, 32, 64, 128 or the hidden size ({H}), got {n}")
        raise ValueError(f"{fn}: num_per_channels must be 16, 32, 64 or 128 here, got {n}")


def _prepare(x, fmt: str, n, x_block_size, col: bool, rnd: bool, packed: bool, fn: str, mode: str):
    """Checks everything and returns (T, H, in_type, x_arg, isf, isfp, ibm, ibn)."""
    if fmt not in ("e4m3", "e2m1"):
        raise ValueError(f"{fn}: fmt must be 'e4m3' or 'e2m1', got {fmt!r}")
    check_layout_flags(col, rnd, packed, fn)
    if isinstance(x, tuple):
        if mode != "full":
            raise ValueError(f"{fn}: x must be a float tensor (QuantTensor input is not supported here)")
        if len(x) != 2:
            raise ValueError(f"{fn}: a QuantTensor x is a (data, sf) pair")
        if x_block_size is None:
            raise ValueError(f"{fn}: x_block_size is required for QuantTensor input")
        ibm, ibn = check_block(x_block_size, "x_block_size", fn)
        q, q_sf = x
        if q.dtype not in (torch.float8_e4m3fn, torch.int8):
            if q.dtype == torch.uint8:
                raise ValueError(f"{fn}: E5M6 (uint8) QuantTensor input is not supported")
            raise ValueError(f"{fn}: QuantTensor data must be float8_e4m3fn or int8 (packed e2m1), got {q.dtype}")
        if q.dim() != 2:
            raise ValueError(f"{fn}: x must be 2-D (num_tokens, hidden), got {q.dim()}-D")
        if q.stride(1) != 1 and q.size(1) > 1:
            raise ValueError(f"{fn}: x must have unit stride along the hidden dimension, got {q.stride(1)}")
        T = q.size(0)
        H = q.size(1) * (2 if q.dtype == torch.int8 else 1)
        _check_n(n, H, fn, allow_row=False)
        isf, isfp = input_sf_args(q_sf, ceil_div(T, ibm), ceil_div(H, ibn), fn, "x's sf")
        tname = "e2m1" if q.dtype == torch.int8 else "e4m3"
        return T, H, tname, data_arg(q, fn), isf, isfp, ibm, ibn, q
    if x_block_size is not None:
        raise ValueError(f"{fn}: x_block_size is only for QuantTensor input")
    check_float_x(x, fn)
    T, H = x.shape
    _check_n(n, H, fn, allow_row=(mode == "full"))
    return T, H, FLOAT_IN[x.dtype], x, None, None, 1, 1, x


def _xa(tname: str, xt: torch.Tensor) -> int:
    stride = xt.stride(0) * (2 if tname == "e2m1" else 1)
    return pow2_divisor(stride, 32)


def _spread(bk: int, bm: int, vec: int, nthreads: int = 128) -> bool:
    """Whether the default layout of a bm x bk tile with runs of vec gives every thread its own
    elements."""
    if bk % vec:
        return False
    t1 = math.gcd(nthreads, bk // vec)
    return t1 * math.gcd(nthreads // t1, bm) == nthreads


@functools.lru_cache(maxsize=None)
def _tile(H: int, n: int, fp4: bool):
    """Tile generics. Groups of n: the kernel's default tile (4096 elements), runs of 16 elements
    (32 when FP4 is read or written, so that its accesses are 16 bytes wide too). One scale per
    row (n == H): a whole row (aligned to 128) per tile row, with rows and vector width chosen so
    that no thread holds a copy of another's elements."""
    if n != H:
        bk = max(n, math.gcd(4096, H))
        bm = 4096 // bk if 4096 % bk == 0 else 1
        for vec in ((32, 16, 8, 4) if fp4 else (16, 8, 4)):
            if _spread(bk, bm, vec):
                return dict(VEC=vec)
        return {}
    bk = align(H, 128)
    bm, vec = tile_shape(bk, nthreads=128, max_elems=8192, vecs=(16, 8, 4, 2))
    return dict(VEC=vec, BK=bk, BM=bm)


def _launch(fn, tname, fmt, T, H, n, rnd, xt, xarg, out_arg, sf_arg, sfp_arg, psf, isf, isfp, ibm, ibn):
    if _runtime.faking():   # a fake implementation: outputs allocated, nothing to choose or launch
        return
    # FP4 output, groups: asking ptxas for 8 blocks of 128 threads per SM (blocks_per_sm) gave
    # 73.8 % of the copy ceiling instead of 68.1 % (H200, 16384 x 7168, G = 32; 2026-11-30,
    # `python3 bench/ab_generics.py`)
    bps = 8 if fmt == "e2m1" and n != H else 0
    tile = _tile(H, n, "e2m1" in (fmt, tname))
    if fmt == "e2m1" and tname == "bf16" and rnd and psf is None and n != H and H % 512 == 0:
        # the kernel's f16x2 encoder (HALF_ENC) with 8 x 512 tiles: 91.5 % of the copy ceiling
        # against 90.0 % for 4 x 1024 (H200, 16384 x 7168, G = 32; 2026-11-30, bench/ab_generics.py)
        tile = dict(tile, BK=512, BM=8)
    # e4m3 output: blocks along the rows (XMAJOR), so that those resident together read and write
    # whole rows: 97.9 against 93.5 % of the copy ceiling at 16384 x 7168, 92.4 against 88.9 at
    # 8001 x 7168, 128 x 128-scaled FP8 input 83.1 against 78.1, the same at 8001 x 4096 and
    # 4001 rows; e2m1 output 1 point slower, not taken (H200, 2026-12-01, bench/ab_generics.py)
    k = kernel("per_token_cast", xt, T=tname, O=fmt, H=H, G=n, ROUND=rnd, XA=_xa(tname, xt), IBM=ibm, IBN=ibn,
               **tile, BPS=bps, XMAJOR=fmt == "e4m3",
               has_out=out_arg is not None, has_sf=sf_arg is not None, has_sfp=sfp_arg is not None,
               has_psf=psf is not None, has_isf=isf is not None, has_isfp=isfp is not None)
    k.launch(xarg, out_arg, sf_arg, sfp_arg, psf, isf, isfp, stream=_runtime.stream(xt))


@kernel_op(kinds={"x": QUANT})
def per_token_cast(x, fmt: str, num_per_channels: int, x_block_size: Optional[Tuple[int, int]] = None,
                   use_tma_aligned_col_major_sf: bool = False, round_sf: bool = False,
                   use_packed_ue8m0: bool = False):
    """Quantises each row of ``x`` in groups of ``num_per_channels`` consecutive elements (or one
    group per row when it equals the row length) to ``fmt``: 'e4m3' (float8_e4m3fn), 'e2m1'
    (int8, two FP4 values per byte, even element in the low nibble) or 'e5m6' (uint8, 12 bytes per
    8 values; one scale per row). ``x`` is bf16/f32, or a QuantTensor ``(data, sf)`` quantised in
    blocks of ``x_block_size``. Returns ``(out, sf)``, sf in the layout the flags choose (§1.4).
    """
    fn = "per_token_cast"
    if fmt not in _FMTS:
        raise ValueError(f"{fn}: fmt must be 'e4m3', 'e2m1' or 'e5m6', got {fmt!r}")
    if fmt == "e5m6":
        if isinstance(x, tuple) or x_block_size is not None:
            raise ValueError(f"{fn}: fmt='e5m6' takes a float tensor x (no QuantTensor, no x_block_size)")
        return per_token_cast_to_e5m6(x, num_per_channels, use_tma_aligned_col_major_sf, round_sf, use_packed_ue8m0)
    T, H, tname, xarg, isf, isfp, ibm, ibn, xt = _prepare(x, fmt, num_per_channels, x_block_size,
                                                          use_tma_aligned_col_major_sf, round_sf, use_packed_ue8m0,
                                                          fn, "full")
    if fmt == "e2m1" and H % 2:
        raise ValueError(f"{fn}: fmt='e2m1' needs an even hidden size, got {H}")
    nm, nk = sf_grid(T, H, (1, num_per_channels))
    out, out_arg = alloc_data_out(T, H, fmt, xt.device)
    sf, store = alloc_sf(nm, nk, use_tma_aligned_col_major_sf, use_packed_ue8m0, xt.device,
                                      kernel_pads_packed=True)
    if T == 0:
        return out, sf
    sf_arg, sfp_arg = sf_out_args(sf, store, use_packed_ue8m0)
    _launch(fn, tname, fmt, T, H, num_per_channels, round_sf, xt, xarg, out_arg, sf_arg, sfp_arg, None, isf, isfp,
            ibm, ibn)
    return out, sf


@kernel_op(kinds={"x": QUANT}, returns="tensor")
def per_token_cast_with_sf_only(x, fmt: str, num_per_channels: int, x_block_size: Optional[Tuple[int, int]] = None,
                                use_tma_aligned_col_major_sf: bool = False, round_sf: bool = False,
                                use_packed_ue8m0: bool = False) -> torch.Tensor:
    """The scales :func:`per_token_cast` would return (float input, groups of 16-128); no data."""
    fn = "per_token_cast_with_sf_only"
    if fmt == "e5m6":
        raise ValueError(f"{fn}: fmt must be 'e4m3' or 'e2m1', got 'e5m6'")
    T, H, tname, xarg, _, _, _, _, xt = _prepare(x, fmt, num_per_channels, x_block_size, use_tma_aligned_col_major_sf,
                                                 round_sf, use_packed_ue8m0, fn, "sf_only")
    nm, nk = sf_grid(T, H, (1, num_per_channels))
    sf, store = alloc_sf(nm, nk, use_tma_aligned_col_major_sf, use_packed_ue8m0, xt.device,
                                      kernel_pads_packed=True)
    if T == 0:
        return sf
    sf_arg, sfp_arg = sf_out_args(sf, store, use_packed_ue8m0)
    _launch(fn, tname, fmt, T, H, num_per_channels, round_sf, xt, xarg, None, sf_arg, sfp_arg, None, None, None, 1, 1)
    return sf


@kernel_op(kinds={"x": QUANT}, returns="tensor")
def per_token_cast_with_precomputed_sf(x, fmt: str, num_per_channels: int, sf: torch.Tensor,
                                       x_block_size: Optional[Tuple[int, int]] = None,
                                       use_tma_aligned_col_major_sf: bool = False, round_sf: bool = False,
                                       use_packed_ue8m0: bool = False) -> torch.Tensor:
    """Quantises with given row-major f32 scales ``sf`` (T, cdiv(H, n)): out = fmt(x * (1 / sf))."""
    fn = "per_token_cast_with_precomputed_sf"
    if fmt == "e5m6":
        raise ValueError(f"{fn}: fmt must be 'e4m3' or 'e2m1', got 'e5m6'")
    check_flags(fn, use_tma_aligned_col_major_sf=use_tma_aligned_col_major_sf, use_packed_ue8m0=use_packed_ue8m0)
    if use_tma_aligned_col_major_sf or use_packed_ue8m0:
        raise ValueError(f"{fn}: precomputed scales are row-major f32; use_tma_aligned_col_major_sf and "
                         f"use_packed_ue8m0 must be False")
    T, H, tname, xarg, _, _, _, _, xt = _prepare(x, fmt, num_per_channels, x_block_size, False, round_sf, False, fn,
                                                 "precomputed")
    nm, nk = sf_grid(T, H, (1, num_per_channels))
    if not isinstance(sf, torch.Tensor) or sf.dtype != torch.float32 or sf.dim() != 2:
        raise ValueError(f"{fn}: sf must be a 2-D float32 tensor")
    if tuple(sf.shape) != (nm, nk):
        raise ValueError(f"{fn}: sf must have shape {(nm, nk)}, got {tuple(sf.shape)}")
    if sf.stride(1) != 1 and nk > 1:
        raise ValueError(f"{fn}: sf must be row-major (unit stride along its columns), got strides {tuple(sf.stride())}")
    if fmt == "e2m1" and H % 2:
        raise ValueError(f"{fn}: fmt='e2m1' needs an even hidden size, got {H}")
    out, out_arg = alloc_data_out(T, H, fmt, xt.device)
    if T == 0:
        return out
    psf = sf if sf.stride(1) == 1 else sf.contiguous()
    _launch(fn, tname, fmt, T, H, num_per_channels, round_sf, xt, xarg, out_arg, None, None, psf, None, None, 1, 1)
    return out
