"""Per-block casts (spec quant-transpose.md §2.5-§2.7): per_block_cast, its scale-only and
precomputed-scale variants."""
from typing import Tuple

import torch

from .. import _runtime
from .._ops import kernel_op
from .common import (FLOAT_IN, alloc_data_out, alloc_sf, check_block, check_flags, check_layout_flags, kernel, sf_grid,
                     sf_out_args)


def _check(x, fmt, block_size, col, rnd, packed, fn):
    if fmt not in ("e4m3", "e2m1"):
        raise ValueError(f"{fn}: fmt must be 'e4m3' or 'e2m1', got {fmt!r}")
    check_layout_flags(col, rnd, packed, fn)
    if not isinstance(x, torch.Tensor) or x.dtype not in FLOAT_IN:
        raise ValueError(f"{fn}: x must be a bfloat16 or float32 tensor, got {getattr(x, 'dtype', type(x))}")
    if x.dim() != 2:
        raise ValueError(f"{fn}: x must be 2-D (num_tokens, hidden), got {x.dim()}-D")
    if not x.is_contiguous():
        raise ValueError(f"{fn}: x must be contiguous")
    bm, bn = check_block(block_size, "block_size", fn)
    if bm not in (32, 128) or bn not in (32, 128):
        raise ValueError(f"{fn}: block_size must be (32 or 128, 32 or 128), got {(bm, bn)}")
    T, H = x.shape
    if H % 64:
        raise ValueError(f"{fn}: hidden must be a multiple of 64, got {H}")
    return T, H, bm, bn


def _launch(x, fmt, H, bm, bn, rnd, out_arg, sf_arg, sfp_arg, psf):
    # Persistent blocks walking the tiles with their loads in flight ahead (STAGES), as measured
    # fastest on an H200 at 16384 x 7168 (2026-11-30, bench/ab_generics.py, % of the copy
    # ceiling): bf16 -> e4m3 128 x 128 90.3 (3 stages, 1 block per SM, 16-element runs;
    # 83.5 one tile per block), f32 -> e4m3 128 x 128 93.9, 32 x 32 94.7, -> e2m1 128 x 128 64.1
    # (47.7), e2m1 32 x 32 66.4 (43.3). The other block shapes take the configuration of their
    # block height.
    if fmt == "e2m1":
        cfg = dict(STAGES=2, WAVES=3, NTH=256, VEC=16) if bm == 128 else dict(STAGES=2, WAVES=6, NTH=128)
    elif x.dtype == torch.float32:
        cfg = dict(STAGES=2, WAVES=2, NTH=256) if bm == 128 else dict(STAGES=2, WAVES=3, NTH=256, VEC=16)
    else:
        cfg = dict(STAGES=3, WAVES=1, NTH=512, VEC=16) if bm == 128 else dict(STAGES=2, WAVES=3, NTH=256, VEC=16)
    k = kernel("per_block_cast", x, T=FLOAT_IN[x.dtype], O=fmt, H=H, SBM=bm, SBN=bn, ROUND=rnd, **cfg,
               has_out=out_arg is not None, has_sf=sf_arg is not None, has_sfp=sfp_arg is not None,
               has_psf=psf is not None)
    k.launch(x, out_arg, sf_arg, sfp_arg, psf, stream=_runtime.stream(x))


@kernel_op()
def per_block_cast(x: torch.Tensor, fmt: str, block_size: Tuple[int, int], use_tma_aligned_col_major_sf: bool = False,
                   round_sf: bool = False, use_packed_ue8m0: bool = False):
    """Quantises ``x`` (bf16/f32, contiguous, hidden % 64 == 0) in blocks of ``block_size``
    (32 or 128 each way) to e4m3 or packed e2m1. Returns ``(out, sf)``, sf (cdiv(T, bm),
    cdiv(H, bn)) in the layout the flags choose."""
    fn = "per_block_cast"
    T, H, bm, bn = _check(x, fmt, block_size, use_tma_aligned_col_major_sf, round_sf, use_packed_ue8m0, fn)
    nm, nk = sf_grid(T, H, (bm, bn))
    out, out_arg = alloc_data_out(T, H, fmt, x.device)
    sf, store = alloc_sf(nm, nk, use_tma_aligned_col_major_sf, use_packed_ue8m0, x.device,
                                      kernel_pads_packed=True)
    if T == 0:
        return out, sf
    sf_arg, sfp_arg = sf_out_args(sf, store, use_packed_ue8m0)
    _launch(x, fmt, H, bm, bn, round_sf, out_arg, sf_arg, sfp_arg, None)
    return out, sf


@kernel_op(returns="tensor")
def per_block_cast_with_sf_only(x: torch.Tensor, fmt: str, block_size: Tuple[int, int],
                                use_tma_aligned_col_major_sf: bool = False, round_sf: bool = False,
                                use_packed_ue8m0: bool = False) -> torch.Tensor:
    """The scales :func:`per_block_cast` would return; no data."""
    fn = "per_block_cast_with_sf_only"
    T, H, bm, bn = _check(x, fmt, block_size, use_tma_aligned_col_major_sf, round_sf, use_packed_ue8m0, fn)
    nm, nk = sf_grid(T, H, (bm, bn))
    sf, store = alloc_sf(nm, nk, use_tma_aligned_col_major_sf, use_packed_ue8m0, x.device,
                                      kernel_pads_packed=True)
    if T == 0:
        return sf
    sf_arg, sfp_arg = sf_out_args(sf, store, use_packed_ue8m0)
    _launch(x, fmt, H, bm, bn, round_sf, None, sf_arg, sfp_arg, None)
    return sf


@kernel_op(returns="tensor")
def per_block_cast_with_precomputed_sf(x: torch.Tensor, fmt: str, block_size: Tuple[int, int], sf: torch.Tensor,
                                       use_tma_aligned_col_major_sf: bool = False, round_sf: bool = False,
                                       use_packed_ue8m0: bool = False) -> torch.Tensor:
    """Quantises with given row-major f32 block scales: out = fmt(x * (1 / sf[block]))."""
    fn = "per_block_cast_with_precomputed_sf"
    check_flags(fn, use_tma_aligned_col_major_sf=use_tma_aligned_col_major_sf, use_packed_ue8m0=use_packed_ue8m0)
    if use_tma_aligned_col_major_sf or use_packed_ue8m0:
        raise ValueError(f"{fn}: precomputed scales are row-major f32; use_tma_aligned_col_major_sf and "
                         f"use_packed_ue8m0 must be False")
    T, H, bm, bn = _check(x, fmt, block_size, False, round_sf, False, fn)
    nm, nk = sf_grid(T, H, (bm, bn))
    if not isinstance(sf, torch.Tensor) or sf.dtype != torch.float32 or sf.dim() != 2:
        raise ValueError(f"{fn}: sf must be a 2-D float32 tensor")
    if tuple(sf.shape) != (nm, nk):
        raise ValueError(f"{fn}: sf must have shape {(nm, nk)}, got {tuple(sf.shape)}")
    if sf.stride(1) != 1 and nk > 1:
        raise ValueError(f"{fn}: sf must be row-major (unit stride along its columns), got strides {tuple(sf.stride())}")
    out, out_arg = alloc_data_out(T, H, fmt, x.device)
    if T == 0:
        return out
    _launch(x, fmt, H, bm, bn, round_sf, out_arg, None, None, sf if sf.stride(1) == 1 else sf.contiguous())
    return out
