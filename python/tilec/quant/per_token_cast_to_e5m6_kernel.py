"""The E5M6 per-token cast (spec quant-transpose.md §2.4), reached through
per_token_cast(fmt='e5m6'): one scale per row, 8 values in 12 bytes."""
import torch

from .. import _runtime
from .._checks import check_int
from .common import FLOAT_IN, alloc_sf, check_float_x, check_layout_flags, kernel, pow2_divisor, sf_out_args


def per_token_cast_to_e5m6(x: torch.Tensor, num_per_channels: int, use_tma_aligned_col_major_sf: bool = False,
                           round_sf: bool = False, use_packed_ue8m0: bool = False):
    """E5M6 per-row cast (reached as per_token_cast(fmt='e5m6')): out uint8 (T, 3H/2), 8 values
    in 3 little-endian u32 words; sf per §1.4 with one column."""
    fn = "per_token_cast"
    check_layout_flags(use_tma_aligned_col_major_sf, round_sf, use_packed_ue8m0, fn)
    check_float_x(x, fn)
    check_int(fn, "num_per_channels", num_per_channels)
    T, H = x.shape
    if num_per_channels != H:
        raise ValueError(f"{fn}: fmt='e5m6' needs num_per_channels == hidden ({H}), got {num_per_channels}")
    if H % 8:
        raise ValueError(f"{fn}: fmt='e5m6' needs hidden % 8 == 0, got {H}")
    out = torch.empty((T, 3 * H // 2), dtype=torch.uint8, device=x.device)
    sf, store = alloc_sf(T, 1, use_tma_aligned_col_major_sf, use_packed_ue8m0, x.device)
    if T == 0:
        return out, sf
    sf_arg, sfp_arg = sf_out_args(sf, store, use_packed_ue8m0)
    # rows of whole warps of 32-element chunks (H % 1024 == 0): one row per block, H / 32 threads,
    # each chunk's 12 words written as three 16-byte stores; otherwise single groups per thread
    tile = dict(GW=4, NTH=H // 32, BK=H, BM=1) if H % 1024 == 0 and H <= 32768 else dict(GW=1)
    # H = 7168 (224 threads): 5 blocks per SM (55 registers, no spill) measured 90.0 % of the copy
    # ceiling, against 85.4 % for 4 (69 registers) and 74.1 % for 3 (H200, 16384 x 7168;
    # 2026-11-30, bench/ab_generics.py)
    tile["BPS"] = 5 if H == 7168 else 0
    gw = tile["GW"]
    xarg = _runtime.view(x, FLOAT_IN[x.dtype], (T, H // (8 * gw), 8 * gw), (x.stride(0), 8 * gw, 1))
    oarg = _runtime.view(out, "u32", (T, H // (8 * gw), 3 * gw), (3 * H // 8, 3 * gw, 1))
    k = kernel("per_token_cast_e5m6", x, T=FLOAT_IN[x.dtype], H=H, ROUND=round_sf, XA=pow2_divisor(x.stride(0), 32),
               **tile, has_sf=sf_arg is not None, has_sfp=sfp_arg is not None)
    k.launch(xarg, oarg, sf_arg, sfp_arg, stream=_runtime.stream(x))
    return out, sf
