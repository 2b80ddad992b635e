"""Dequantisation (spec quant-transpose.md §2.9-§2.11): cast_back and per_token_cast_back for
e4m3, packed e2m1 and (through cast_back_e5m6) E5M6 data."""
from typing import Optional, Tuple

import torch

from .. import _runtime
from .._ops import kernel_op, PAIR
from .._checks import check_int
from ..utils import ceil_div
from .cast_back_e5m6_kernel import run_cast_back_e5m6
from .common import CAST_BACK_OUT, check_cast_back_input, data_arg, input_sf_args, kernel


@kernel_op(kinds={"x": PAIR}, returns="tensor")
def cast_back(x, fmt: str, x_block_size: Tuple[int, int], x_special_fmt: Optional[str] = None) -> torch.Tensor:
    """Dequantises ``x = (data, sf)``: out = decode(data) * sf[t // bm, j // bn], as bf16
    (``fmt='bf16'``) or f32 (``'fp32'``). data is float8_e4m3fn or int8 (packed e2m1), or uint8
    E5M6 with ``x_special_fmt='e5m6'``; sf is f32 (row- or column-major) or packed UE8M0."""
    return _cast_back(x, fmt, x_block_size, x_special_fmt, "cast_back")


def _cast_back(x, fmt, x_block_size, x_special_fmt, fn):
    if not isinstance(fmt, str) or fmt not in CAST_BACK_OUT:
        raise ValueError(f"{fn}: fmt must be 'bf16' or 'fp32', got {fmt!r}")
    if x_special_fmt is not None and (not isinstance(x_special_fmt, str) or x_special_fmt != "e5m6"):
        raise ValueError(f"{fn}: x_special_fmt must be None or 'e5m6', got {x_special_fmt!r}")
    if x_special_fmt == "e5m6":
        return run_cast_back_e5m6(x, fmt, x_block_size, fn)
    q, q_sf, bm, bn = check_cast_back_input(x, x_block_size, fn)
    odt, oname = CAST_BACK_OUT[fmt]
    T = q.size(0)
    if q.dtype not in (torch.float8_e4m3fn, torch.int8):
        raise ValueError(f"{fn}: x's data must be float8_e4m3fn or int8 (packed e2m1), got {q.dtype}")
    H = q.size(1) * (2 if q.dtype == torch.int8 else 1)
    if H % 64:
        raise ValueError(f"{fn}: hidden (logical) must be a multiple of 64, got {H}")
    isf, isfp = input_sf_args(q_sf, ceil_div(T, bm), ceil_div(H, bn), fn, "x's sf")
    out = torch.empty((T, H), dtype=odt, device=q.device)
    if T == 0:
        return out
    tname = "e2m1" if q.dtype == torch.int8 else "e4m3"
    # bf16 output: runs of 8 elements, so that a warp's loads and 16-byte stores are both whole
    # lines; packed e2m1 also as persistent blocks with the next tile's load in flight (H200,
    # 16384 x 7168: e4m3 89.9 -> 92.8 %, e2m1 64.9 -> 84.0 % of the copy ceiling; 2026-11-30,
    # bench/ab_generics.py). f32 output keeps the default runs of 16 (not measured).
    cfg = {}
    if oname == "bf16":
        cfg = dict(VEC=8, STAGES=2, WAVES=8) if tname == "e2m1" else dict(VEC=8)
    k = kernel("cast_back", q, T=tname, OT=oname, H=H, SBM=bm, SBN=bn, **cfg, has_sf=isf is not None,
               has_sfp=isfp is not None)
    k.launch(data_arg(q, fn), out, isf, isfp, stream=_runtime.stream(q))
    return out


@kernel_op(kinds={"x": PAIR}, returns="tensor")
def per_token_cast_back(x, fmt: str, num_per_channels: int, x_special_fmt: Optional[str] = None) -> torch.Tensor:
    """cast_back with blocks of one row by ``num_per_channels`` columns."""
    fn = "per_token_cast_back"
    check_int(fn, "num_per_channels", num_per_channels, 1)
    return _cast_back(x, fmt, (1, num_per_channels), x_special_fmt, fn)
