"""SwiGLU fused with the per-token e4m3 cast (spec quant-transpose.md §2.15), with the optional
top-k weights, expert mask and clamp counts of the MoE up-projection."""
from typing import Optional

import torch

from .. import _runtime
from .._ops import kernel_op
from .._checks import check_float, check_int, check_no_overlap
from .common import (FLOAT_IN, alloc_sf, check_layout_flags, f32, int_vector, kernel, row_tile, sf_out_args,
                     tile_shape)


@kernel_op(mutates=("clamped_count",))
def swiglu_forward_and_per_token_cast(x: torch.Tensor, fmt: str, num_per_channels: int,
                                      pos_to_token_topk: Optional[torch.Tensor] = None,
                                      topk_weights: Optional[torch.Tensor] = None,
                                      pos_to_expert: Optional[torch.Tensor] = None,
                                      use_tma_aligned_col_major_sf: bool = False, round_sf: bool = False,
                                      use_packed_ue8m0: bool = False, swiglu_clamp_value: Optional[float] = None,
                                      clamped_count: Optional[torch.Tensor] = None,
                                      sf_clamp_min: Optional[float] = None):
    """a = (l / (1 + exp(-l))) * r (l, r the two halves of each row of x, optionally clamped; the
    clamp hits are added to ``clamped_count``), times the row's top-k weight, then the per-token
    e4m3 cast in groups of ``num_per_channels`` (128 or Hh). Rows with pos_to_expert < 0 come out
    as zeros. Returns (out (N, Hh), sf)."""
    fn = "swiglu_forward_and_per_token_cast"
    if fmt != "e4m3":
        raise ValueError(f"{fn}: fmt must be 'e4m3', got {fmt!r}")
    check_layout_flags(use_tma_aligned_col_major_sf, round_sf, use_packed_ue8m0, fn)
    if swiglu_clamp_value is not None:
        check_float(fn, "swiglu_clamp_value", swiglu_clamp_value)
    if sf_clamp_min is not None:
        check_float(fn, "sf_clamp_min", sf_clamp_min)
    if not isinstance(x, torch.Tensor) or x.dtype not in FLOAT_IN:
        raise ValueError(f"{fn}: x must be a bfloat16 or float32 tensor")
    if x.dim() != 2:
        raise ValueError(f"{fn}: x must be 2-D (num_rows, 2 * hidden), got {x.dim()}-D")
    if not x.is_contiguous():
        raise ValueError(f"{fn}: x must be contiguous")
    N, H2 = x.shape
    hh = H2 // 2
    if H2 % 256:
        raise ValueError(f"{fn}: each half of x must have a multiple of 128 columns, got x.shape[1] = {H2}")
    n = check_int(fn, "num_per_channels", num_per_channels)
    if n not in (128, hh):
        raise ValueError(f"{fn}: num_per_channels must be 128 or the half width ({hh}), got {n}")
    if use_tma_aligned_col_major_sf and n != 128:
        raise ValueError(f"{fn}: use_tma_aligned_col_major_sf needs num_per_channels == 128")
    if pos_to_token_topk is not None:
        int_vector(pos_to_token_topk, "pos_to_token_topk", N, fn)
        if topk_weights is None:
            raise ValueError(f"{fn}: pos_to_token_topk needs topk_weights")
    if topk_weights is not None:
        if pos_to_token_topk is None:
            raise ValueError(f"{fn}: topk_weights needs pos_to_token_topk")
        if topk_weights.dtype != torch.float32 or topk_weights.dim() != 2 or not topk_weights.is_contiguous():
            raise ValueError(f"{fn}: topk_weights must be a contiguous 2-D float32 tensor (num_tokens, num_topk)")
    if pos_to_expert is not None:
        int_vector(pos_to_expert, "pos_to_expert", N, fn)
    if clamped_count is not None:
        if swiglu_clamp_value is None:
            raise ValueError(f"{fn}: clamped_count needs swiglu_clamp_value")
        if (not isinstance(clamped_count, torch.Tensor) or clamped_count.dtype != torch.int64
                or tuple(clamped_count.shape) != (3,) or not clamped_count.is_contiguous()):
            raise ValueError(f"{fn}: clamped_count must be a contiguous int64 tensor of shape (3,)")
        if clamped_count.device != x.device:
            raise ValueError(f"{fn}: clamped_count is on {clamped_count.device}, x on {x.device}")
        check_no_overlap(fn, "clamped_count", clamped_count, x=x, pos_to_token_topk=pos_to_token_topk,
                         topk_weights=topk_weights, pos_to_expert=pos_to_expert)
    out = torch.empty((N, hh), dtype=torch.float8_e4m3fn, device=x.device)
    sf, store = alloc_sf(N, hh // n, use_tma_aligned_col_major_sf, use_packed_ue8m0, x.device)
    if N == 0:
        return out, sf
    sf_arg, sfp_arg = sf_out_args(sf, store, use_packed_ue8m0)
    # 128 threads with 16-element runs: 16-byte stores of the e4m3 data, and 64-80 KB of loads in
    # flight per SM (256 threads with 8-element runs: 32-64 KB; 52 registers in the MoE variant)
    # rows of up to 2048 columns per tile: at 8192 x 2 x 2048 one row of 2048 measured 78.6 % of
    # the copy ceiling against 74.8 % for two rows of 1024 (H200, 2026-11-30,
    # bench/ab_generics.py); 3584 and 7168 keep 512 and 1024
    bk = row_tile(hh, n, 2048)
    bm, vec = tile_shape(bk, nthreads=128, max_elems=8192, vecs=(16, 8, 4, 2, 1))
    # 16 elements per thread: 10 blocks per SM, which caps registers at 48 so that ptxas does not
    # interleave all 16 SiLUs (80 registers): 84.7 -> 89.6 % of the copy ceiling at 16384 x 2 x 3584,
    # 72.5 -> 75.1 % at 8192 x 2 x 2048 (H200, 2026-11-30, bench/ab_generics.py). Counting spills
    # at 48: 9 blocks (56 registers) there.
    bps = (9 if clamped_count is not None else 10) if bm * bk == 16 * 128 else 0
    cmin = 1e-4 if sf_clamp_min is None else float(sf_clamp_min)
    # the scales' division by 448 as a corrected product (dsl/quant.tl: div_by_format_max, the IEEE
    # bits wherever the quotient is a normal number, amax >= 448 * 2^-126): 93.0 against 90.6 % of
    # the copy ceiling at 16384 x 2 x 3584 (H200, 2026-12-01, OLD=1 scripts/gpu_ab.sh); a smaller
    # sf_clamp_min (or 0) keeps the IEEE division
    fast = f32(cmin) >= 448 * 2.0 ** -126
    k = kernel("swiglu_per_token_cast", x, T=FLOAT_IN[x.dtype], HH=hh, G=n, ROUND=round_sf,
               CLAMP=swiglu_clamp_value is not None, COUNT=clamped_count is not None, BK=bk, BM=bm, VEC=vec, NTH=128,
               BPS=bps, **({} if fast else dict(FASTDIV=False)),
               has_sf=sf_arg is not None, has_sfp=sfp_arg is not None, has_ptt=pos_to_token_topk is not None,
               has_weights=topk_weights is not None, has_pte=pos_to_expert is not None,
               has_counts=clamped_count is not None)
    clamp = 0.0 if swiglu_clamp_value is None else float(swiglu_clamp_value)
    k.launch(x, out, sf_arg, sfp_arg, pos_to_token_topk, None if topk_weights is None else topk_weights.view(-1),
             pos_to_expert, clamped_count, clamp, cmin,
             stream=_runtime.stream(x))
    return out, sf
