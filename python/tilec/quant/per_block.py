"""Per-block casts (spec quant-transpose.md §2.5-§2.8): per_block_cast, its scale-only and
precomputed-scale variants, and the lossless FP4 -> FP8 re-scaling."""
from typing import Tuple

import torch

from .. import _runtime
from .common import (alloc_scaling_factors, ceil_div, check_block, check_layout_flags, data_arg, get_sf_shape,
                     input_sf_args, kernel, sf_out_args)

_FLOAT_IN = {torch.bfloat16: "bf16", torch.float32: "f32"}


def _check(x, fmt, block_size, col, rnd, packed, fn):
    if fmt not in ("e4m3", "e2m1"):
        raise ValueError(f"{fn}: fmt must be 'e4m3' or 'e2m1', got {fmt!r}")
    check_layout_flags(col, rnd, packed, fn)
    if not isinstance(x, torch.Tensor) or x.dtype not in _FLOAT_IN:
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


def _out(T, H, fmt, device):
    if fmt == "e4m3":
        out = torch.empty((T, H), dtype=torch.float8_e4m3fn, device=device)
        return out, out
    out = torch.empty((T, H // 2), dtype=torch.int8, device=device)
    return out, _runtime.Arg(out.data_ptr(), "e2m1", (T, H), (H, 1), out)


def _launch(x, fmt, H, bm, bn, rnd, out_arg, sf_arg, sfp_arg, psf):
    # Persistent blocks walking the tiles with their loads in flight ahead (STAGES), as measured
    # fastest on an H200 at 16384 x 7168 (bench/results/2026-11-30/session11/ab_run4.log, % of
    # the copy ceiling): bf16 -> e4m3 128 x 128 90.3 (3 stages, 1 block per SM, 16-element runs;
    # 83.5 one tile per block), f32 -> e4m3 128 x 128 93.9, 32 x 32 94.7, -> e2m1 128 x 128 64.1
    # (47.7), e2m1 32 x 32 66.4 (43.3). The other block shapes take the configuration of their
    # block height.
    if fmt == "e2m1":
        cfg = dict(STAGES=2, WAVES=3, NTH=256, VEC=16) if bm == 128 else dict(STAGES=2, WAVES=6, NTH=128)
    elif x.dtype == torch.float32:
        cfg = dict(STAGES=2, WAVES=2, NTH=256) if bm == 128 else dict(STAGES=2, WAVES=3, NTH=256, VEC=16)
    else:
        cfg = dict(STAGES=3, WAVES=1, NTH=512, VEC=16) if bm == 128 else dict(STAGES=2, WAVES=3, NTH=256, VEC=16)
    k = kernel("per_block_cast", x, T=_FLOAT_IN[x.dtype], O=fmt, H=H, SBM=bm, SBN=bn, ROUND=rnd, **cfg,
               has_out=out_arg is not None, has_sf=sf_arg is not None, has_sfp=sfp_arg is not None,
               has_psf=psf is not None)
    k.launch(x, out_arg, sf_arg, sfp_arg, psf, stream=_runtime.stream(x))


def per_block_cast(x: torch.Tensor, fmt: str, block_size: Tuple[int, int], use_tma_aligned_col_major_sf: bool = False,
                   round_sf: bool = False, use_packed_ue8m0: bool = False):
    """Quantises ``x`` (bf16/f32, contiguous, hidden % 64 == 0) in blocks of ``block_size``
    (32 or 128 each way) to e4m3 or packed e2m1. Returns ``(out, sf)``, sf (cdiv(T, bm),
    cdiv(H, bn)) in the layout the flags choose."""
    fn = "per_block_cast"
    T, H, bm, bn = _check(x, fmt, block_size, use_tma_aligned_col_major_sf, round_sf, use_packed_ue8m0, fn)
    nm, nk = get_sf_shape(T, H, (bm, bn))
    out, out_arg = _out(T, H, fmt, x.device)
    sf, store = alloc_scaling_factors(nm, nk, use_tma_aligned_col_major_sf, use_packed_ue8m0, x.device,
                                      kernel_pads_packed=True)
    if T == 0:
        return out, sf
    sf_arg, sfp_arg = sf_out_args(sf, store, use_packed_ue8m0)
    _launch(x, fmt, H, bm, bn, round_sf, out_arg, sf_arg, sfp_arg, None)
    return out, sf


def per_block_cast_with_sf_only(x: torch.Tensor, fmt: str, block_size: Tuple[int, int],
                                use_tma_aligned_col_major_sf: bool = False, round_sf: bool = False,
                                use_packed_ue8m0: bool = False) -> torch.Tensor:
    """The scales :func:`per_block_cast` would return; no data."""
    fn = "per_block_cast_with_sf_only"
    T, H, bm, bn = _check(x, fmt, block_size, use_tma_aligned_col_major_sf, round_sf, use_packed_ue8m0, fn)
    nm, nk = get_sf_shape(T, H, (bm, bn))
    sf, store = alloc_scaling_factors(nm, nk, use_tma_aligned_col_major_sf, use_packed_ue8m0, x.device,
                                      kernel_pads_packed=True)
    if T == 0:
        return sf
    sf_arg, sfp_arg = sf_out_args(sf, store, use_packed_ue8m0)
    _launch(x, fmt, H, bm, bn, round_sf, None, sf_arg, sfp_arg, None)
    return sf


def per_block_cast_with_precomputed_sf(x: torch.Tensor, fmt: str, block_size: Tuple[int, int], sf: torch.Tensor,
                                       use_tma_aligned_col_major_sf: bool = False, round_sf: bool = False,
                                       use_packed_ue8m0: bool = False) -> torch.Tensor:
    """Quantises with given row-major f32 block scales: out = fmt(x * (1 / sf[block]))."""
    fn = "per_block_cast_with_precomputed_sf"
    if use_tma_aligned_col_major_sf or use_packed_ue8m0:
        raise ValueError(f"{fn}: precomputed scales are row-major f32; use_tma_aligned_col_major_sf and "
                         f"use_packed_ue8m0 must be False")
    T, H, bm, bn = _check(x, fmt, block_size, False, round_sf, False, fn)
    nm, nk = get_sf_shape(T, H, (bm, bn))
    if not isinstance(sf, torch.Tensor) or sf.dtype != torch.float32 or sf.dim() != 2:
        raise ValueError(f"{fn}: sf must be a 2-D float32 tensor")
    if tuple(sf.shape) != (nm, nk):
        raise ValueError(f"{fn}: sf must have shape {(nm, nk)}, got {tuple(sf.shape)}")
    if sf.stride(1) != 1 and nk > 1:
        raise ValueError(f"{fn}: sf must be row-major (unit stride along its columns), got strides {tuple(sf.stride())}")
    out, out_arg = _out(T, H, fmt, x.device)
    if T == 0:
        return out
    _launch(x, fmt, H, bm, bn, round_sf, out_arg, None, None, sf if sf.stride(1) == 1 else sf.contiguous())
    return out


def _pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


def per_block_cast_lossless(x, fmt: str, x_block_size: Tuple[int, int], out_block_size: Tuple[int, int],
                            use_tma_aligned_col_major_sf: bool = False, round_sf: bool = False,
                            use_packed_ue8m0: bool = False):
    """Re-expresses FP4 data with power-of-two block scales (``x = (int8 data, sf)``, blocks
    ``x_block_size``) as e4m3 with coarser power-of-two scales (blocks ``out_block_size``), with
    every dequantised value unchanged. ``round_sf`` is ignored (the scales are powers of two)."""
    fn = "per_block_cast_lossless"
    if fmt != "e4m3":
        raise ValueError(f"{fn}: fmt must be 'e4m3', got {fmt!r}")
    if use_packed_ue8m0 and not use_tma_aligned_col_major_sf:
        raise ValueError(f"{fn}: use_packed_ue8m0 needs use_tma_aligned_col_major_sf=True (packed scales are column-major)")
    if not isinstance(x, tuple) or len(x) != 2:
        raise ValueError(f"{fn}: x must be a QuantTensor (int8 data, sf)")
    q, q_sf = x
    if q.dtype != torch.int8:
        raise ValueError(f"{fn}: x's data must be int8 (packed e2m1), got {q.dtype}")
    if q.dim() != 2:
        raise ValueError(f"{fn}: x must be 2-D (num_tokens, hidden), got {q.dim()}-D")
    if not q.is_contiguous():
        raise ValueError(f"{fn}: x's data must be contiguous")
    ibm, ibn = check_block(x_block_size, "x_block_size", fn)
    obm, obn = check_block(out_block_size, "out_block_size", fn)
    T, H = q.size(0), 2 * q.size(1)
    if H % 32:
        raise ValueError(f"{fn}: hidden (logical) must be a multiple of 32, got {H}")
    if not (_pow2(ibm) and _pow2(ibn) and _pow2(obm) and _pow2(obn)):
        raise ValueError(f"{fn}: block sizes must be powers of two, got {(ibm, ibn)} and {(obm, obn)}")
    if obm % ibm or obn % ibn:
        raise ValueError(f"{fn}: out_block_size {(obm, obn)} must be a multiple of x_block_size {(ibm, ibn)}")
    if obm > 128 or obn > 128:
        raise NotImplementedError(f"{fn}: output blocks above 128 x 128 are not supported, got {(obm, obn)}")
    isf, isfp = input_sf_args(q_sf, ceil_div(T, ibm), ceil_div(H, ibn), fn, "x's sf")
    nm, nk = get_sf_shape(T, H, (obm, obn))
    out = torch.empty((T, H), dtype=torch.float8_e4m3fn, device=q.device)
    sf, store = alloc_scaling_factors(nm, nk, use_tma_aligned_col_major_sf, use_packed_ue8m0, q.device)
    if T == 0:
        return out, sf
    sf_arg, sfp_arg = sf_out_args(sf, store, use_packed_ue8m0)
    # 128 x 128 output blocks: 512 threads, 4 blocks per SM, each reading its tile after working
    # out the scales (32 registers) measured 60.7 % of the copy ceiling, against 52.1 % for 256
    # threads with 3 blocks per SM and 38.4 % for neither (H200, 16384 x 7168, (1, 32) ->
    # (128, 128); session 12, A/B run 4)
    cfg = dict(LATE=True, NTH=512, BPS=4) if obm == 128 and obn == 128 else {}
    k = kernel("per_block_cast_lossless", q, H=H, IBM=ibm, IBN=ibn, OBM=obm, OBN=obn, **cfg, has_isf=isf is not None,
               has_isfp=isfp is not None, has_sf=sf_arg is not None, has_sfp=sfp_arg is not None)
    k.launch(data_arg(q, fn), out, isf, isfp, sf_arg, sfp_arg, stream=_runtime.stream(q))
    return out, sf
