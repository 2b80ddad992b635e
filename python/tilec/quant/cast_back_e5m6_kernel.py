"""The E5M6 dequantisation (spec quant-transpose.md §2.11): the path of
cast_back(..., x_special_fmt='e5m6')."""
from typing import Tuple

import torch

from .. import _runtime
from ..utils import ceil_div
from .common import CAST_BACK_OUT, check_cast_back_input, input_sf_args, kernel


def run_cast_back_e5m6(x, fmt: str, x_block_size, fn: str) -> torch.Tensor:
    """cast_back_e5m6 with its messages naming ``fn`` (cast_back when reached through it)."""
    if fmt not in CAST_BACK_OUT:
        raise ValueError(f"{fn}: fmt must be 'bf16' or 'fp32', got {fmt!r}")
    q, q_sf, bm, bn = check_cast_back_input(x, x_block_size, fn)
    odt, oname = CAST_BACK_OUT[fmt]
    T = q.size(0)
    if q.dtype != torch.uint8:
        need = "x_special_fmt='e5m6' needs uint8 data" if fn == "cast_back" else "x's data must be uint8 (E5M6 bytes)"
        raise ValueError(f"{fn}: {need}, got {q.dtype}")
    if q.size(1) % 12:
        raise ValueError(f"{fn}: E5M6 rows hold 12 bytes per 8 values; the row length must be a multiple of 12, "
                         f"got {q.size(1)}")
    H = q.size(1) * 2 // 3
    isf, isfp = input_sf_args(q_sf, ceil_div(T, bm), ceil_div(H, bn), fn, "x's sf")
    out = torch.empty((T, H), dtype=odt, device=q.device)
    if T == 0:
        return out
    k = kernel("cast_back_e5m6", q, OT=oname, H=H, SBM=bm, SBN=bn, has_sf=isf is not None, has_sfp=isfp is not None)
    xarg = _runtime.view(q, "u32", (T, H // 8, 3), (3 * H // 8, 3, 1))
    oarg = _runtime.view(out, oname, (T, H // 8, 8), (H, 8, 1))
    k.launch(xarg, oarg, isf, isfp, stream=_runtime.stream(q))
    return out


def cast_back_e5m6(x, fmt: str, x_block_size: Tuple[int, int]) -> torch.Tensor:
    """Dequantises ``x = (uint8 E5M6 data (T, 3H/2), sf)``: out = decode(data) * sf[t // bm,
    j // bn], as bf16 (``fmt='bf16'``) or f32 (``'fp32'``); sf f32 (row- or column-major) or
    packed UE8M0."""
    return run_cast_back_e5m6(x, fmt, x_block_size, "cast_back_e5m6")
