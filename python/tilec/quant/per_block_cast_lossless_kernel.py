"""The lossless FP4 -> FP8 re-scaling (spec quant-transpose.md §2.8): per_block_cast_lossless."""
from typing import Tuple

import torch

from .. import _runtime
from .._ops import kernel_op, PAIR
from ..utils import ceil_div, is_power_of_two
from .common import alloc_sf, check_block, check_flags, data_arg, input_sf_args, kernel, sf_grid, sf_out_args


@kernel_op(kinds={"x": PAIR})
def per_block_cast_lossless(x, fmt: str, x_block_size: Tuple[int, int], out_block_size: Tuple[int, int],
                            use_tma_aligned_col_major_sf: bool = False, round_sf: bool = False,
                            use_packed_ue8m0: bool = False):
    """Re-expresses FP4 data with power-of-two block scales (``x = (int8 data, sf)``, blocks
    ``x_block_size``) as e4m3 with coarser power-of-two scales (blocks ``out_block_size``), with
    every dequantised value unchanged. ``round_sf`` is ignored (the scales are powers of two)."""
    fn = "per_block_cast_lossless"
    if fmt != "e4m3":
        raise ValueError(f"{fn}: fmt must be 'e4m3', got {fmt!r}")
    check_flags(fn, use_tma_aligned_col_major_sf=use_tma_aligned_col_major_sf, round_sf=round_sf,
                use_packed_ue8m0=use_packed_ue8m0)
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
    if not (is_power_of_two(ibm) and is_power_of_two(ibn) and is_power_of_two(obm) and is_power_of_two(obn)):
        raise ValueError(f"{fn}: block sizes must be powers of two, got {(ibm, ibn)} and {(obm, obn)}")
    if obm % ibm or obn % ibn:
        raise ValueError(f"{fn}: out_block_size {(obm, obn)} must be a multiple of x_block_size {(ibm, ibn)}")
    if obm > 128 or obn > 128:
        raise NotImplementedError(f"{fn}: output blocks above 128 x 128 are not supported, got {(obm, obn)}")
    isf, isfp = input_sf_args(q_sf, ceil_div(T, ibm), ceil_div(H, ibn), fn, "x's sf")
    nm, nk = sf_grid(T, H, (obm, obn))
    out = torch.empty((T, H), dtype=torch.float8_e4m3fn, device=q.device)
    sf, store = alloc_sf(nm, nk, use_tma_aligned_col_major_sf, use_packed_ue8m0, q.device)
    if T == 0:
        return out, sf
    sf_arg, sfp_arg = sf_out_args(sf, store, use_packed_ue8m0)
    # 128 x 128 output blocks: 512 threads, 4 blocks per SM, each reading its tile after working
    # out the scales (32 registers) measured 60.7 % of the copy ceiling, against 52.1 % for 256
    # threads with 3 blocks per SM and 38.4 % for neither (H200, 16384 x 7168, (1, 32) ->
    # (128, 128); 2026-11-30, bench/ab_generics.py)
    cfg = dict(LATE=True, NTH=512, BPS=4) if obm == 128 and obn == 128 else {}
    k = kernel("per_block_cast_lossless", q, H=H, IBM=ibm, IBN=ibn, OBM=obm, OBN=obn, **cfg, has_isf=isf is not None,
               has_isfp=isfp is not None, has_sf=sf_arg is not None, has_sfp=sfp_arg is not None)
    k.launch(data_arg(q, fn), out, isf, isfp, sf_arg, sfp_arg, stream=_runtime.stream(q))
    return out, sf
