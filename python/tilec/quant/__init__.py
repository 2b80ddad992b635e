"""Quantisation (TileKernels ``tile_kernels.quant``).

Implemented so far: :func:`per_token_cast` to e4m3 from bf16/f32 with groups of 16, 32, 64,
128 or a whole row, power-of-two or exact scales, in all three scale layouts. The other formats
and functions raise NotImplementedError naming what is missing.
"""
from typing import Optional, Tuple

import torch

from .. import _runtime
from .common import align, alloc_scaling_factors, ceil_div, check_layout_flags, get_sf_shape

QuantTensor = Tuple[torch.Tensor, torch.Tensor]

__all__ = ["per_token_cast", "QuantTensor"]

_FLOAT_IN = {torch.bfloat16: "bf16", torch.float32: "f32"}
_ptc_kernels = {}


def _pow2_divisor(v: int, cap: int) -> int:
    d = 1
    while d < cap and v % (d * 2) == 0:
        d *= 2
    return d


def per_token_cast(x, fmt: str, num_per_channels: int, x_block_size: Optional[Tuple[int, int]] = None,
                   use_tma_aligned_col_major_sf: bool = False, round_sf: bool = False,
                   use_packed_ue8m0: bool = False) -> QuantTensor:
    """Quantises each row of ``x`` in groups of ``num_per_channels`` consecutive elements (or one
    group per row when it equals the row length) to FP8 e4m3: ``sf = max(amax, 1e-4) / 448``
    (rounded up to a power of two with ``round_sf``), ``out = e4m3(x / sf)`` rounded to nearest
    even and saturated. Returns ``(out, sf)`` with ``out`` float8_e4m3fn ``(T, H)`` and ``sf`` in
    the layout chosen by the flags (spec quant-transpose.md §1.4, §2.1).
    """
    fn = "per_token_cast"
    if fmt != "e4m3":
        raise NotImplementedError(f"{fn}: fmt='{fmt}' is not implemented yet (only 'e4m3'; 'e2m1' and 'e5m6' are missing)")
    if isinstance(x, tuple):
        raise NotImplementedError(f"{fn}: QuantTensor input (x_block_size) is not implemented yet")
    if x_block_size is not None:
        raise ValueError(f"{fn}: x_block_size is only for QuantTensor input")
    if x.dtype not in _FLOAT_IN:
        raise ValueError(f"{fn}: x must be bfloat16 or float32, got {x.dtype}")
    if x.dim() != 2:
        raise ValueError(f"{fn}: x must be 2-D (num_tokens, hidden), got {x.dim()}-D")
    if x.stride(1) != 1 and x.size(1) > 1:
        raise ValueError(f"{fn}: x must have unit stride along the hidden dimension, got {x.stride(1)}")
    check_layout_flags(use_tma_aligned_col_major_sf, round_sf, use_packed_ue8m0, fn)
    T, H = x.shape
    n = num_per_channels
    if n != H and n not in (16, 32, 64, 128):
        raise ValueError(f"{fn}: num_per_channels must be 16, 32, 64, 128 or the hidden size ({H}), got {n}")
    if n == H and H % 64:
        raise ValueError(f"{fn}: one scale per row (num_per_channels == hidden) needs hidden % 64 == 0, got {H}")
    nm, nk = get_sf_shape(T, H, (1, n))
    out = torch.empty((T, H), dtype=torch.float8_e4m3fn, device=x.device)
    sf, store = alloc_scaling_factors(nm, nk, use_tma_aligned_col_major_sf, use_packed_ue8m0, x.device)
    if T == 0:
        return out, sf
    _runtime.require_device(x, fn)
    xa = _pow2_divisor(x.stride(0), 8)
    key = (x.dtype, H, n, round_sf, xa, use_packed_ue8m0)
    k = _ptc_kernels.get(key)
    if k is None:
        gen = (f"T={_FLOAT_IN[x.dtype]}", f"H={H}", f"G={n}", f"ROUND={'true' if round_sf else 'false'}", f"XA={xa}",
               "sf=absent" if use_packed_ue8m0 else "sf=present", "sfp=present" if use_packed_ue8m0 else "sfp=absent")
        k = _ptc_kernels[key] = _runtime.kernel("per_token_cast", gen)
    if use_packed_ue8m0:
        rows = align(nm, 4)
        sfp = _runtime.Arg(store.data_ptr(), "u8", (store.size(0), rows * 4), (rows * 4, 1), store)
        k.launch(x, out, None, sfp, stream=_runtime.stream(x))
    else:
        k.launch(x, out, sf, None, stream=_runtime.stream(x))
    return out, sf
