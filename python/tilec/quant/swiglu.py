"""SwiGLU fused with per-token casts (spec quant-transpose.md §2.15, §2.17)."""
from typing import Optional

import torch

from .. import _runtime
from .common import alloc_scaling_factors, check_layout_flags, f32, kernel, sf_out_args, tile_shape

_FLOAT_IN = {torch.bfloat16: "bf16", torch.float32: "f32"}


def _row_tile(hh: int, n: int, target: int):
    """Columns per tile: a whole row (n == hh) or the widest of 1024..n dividing hh."""
    if n == hh:
        return hh
    bk = target
    while bk > n and (hh % bk or bk % n):
        bk //= 2
    return bk


def _int_vector(t, name, n, fn):
    if not isinstance(t, torch.Tensor) or t.dtype != torch.int32 or t.dim() != 1:
        raise ValueError(f"{fn}: {name} must be a 1-D int32 tensor")
    if t.numel() != n:
        raise ValueError(f"{fn}: {name} must have {n} entries (one per row of x), got {t.numel()}")
    if not t.is_contiguous():
        raise ValueError(f"{fn}: {name} must be contiguous")


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
    if not isinstance(x, torch.Tensor) or x.dtype not in _FLOAT_IN:
        raise ValueError(f"{fn}: x must be a bfloat16 or float32 tensor")
    if x.dim() != 2:
        raise ValueError(f"{fn}: x must be 2-D (num_rows, 2 * hidden), got {x.dim()}-D")
    if not x.is_contiguous():
        raise ValueError(f"{fn}: x must be contiguous")
    N, H2 = x.shape
    hh = H2 // 2
    if H2 % 256:
        raise ValueError(f"{fn}: each half of x must have a multiple of 128 columns, got x.shape[1] = {H2}")
    n = num_per_channels
    if n not in (128, hh):
        raise ValueError(f"{fn}: num_per_channels must be 128 or the half width ({hh}), got {n}")
    if use_tma_aligned_col_major_sf and n != 128:
        raise ValueError(f"{fn}: use_tma_aligned_col_major_sf needs num_per_channels == 128")
    if pos_to_token_topk is not None:
        _int_vector(pos_to_token_topk, "pos_to_token_topk", N, fn)
        if topk_weights is None:
            raise ValueError(f"{fn}: pos_to_token_topk needs topk_weights")
    if topk_weights is not None:
        if pos_to_token_topk is None:
            raise ValueError(f"{fn}: topk_weights needs pos_to_token_topk")
        if topk_weights.dtype != torch.float32 or topk_weights.dim() != 2 or not topk_weights.is_contiguous():
            raise ValueError(f"{fn}: topk_weights must be a contiguous 2-D float32 tensor (num_tokens, num_topk)")
    if pos_to_expert is not None:
        _int_vector(pos_to_expert, "pos_to_expert", N, fn)
    if clamped_count is not None:
        if swiglu_clamp_value is None:
            raise ValueError(f"{fn}: clamped_count needs swiglu_clamp_value")
        if (not isinstance(clamped_count, torch.Tensor) or clamped_count.dtype != torch.int64
                or tuple(clamped_count.shape) != (3,) or not clamped_count.is_contiguous()):
            raise ValueError(f"{fn}: clamped_count must be a contiguous int64 tensor of shape (3,)")
    out = torch.empty((N, hh), dtype=torch.float8_e4m3fn, device=x.device)
    sf, store = alloc_scaling_factors(N, hh // n, use_tma_aligned_col_major_sf, use_packed_ue8m0, x.device)
    if N == 0:
        return out, sf
    sf_arg, sfp_arg = sf_out_args(sf, store, use_packed_ue8m0)
    # 128 threads with 16-element runs: 16-byte stores of the e4m3 data, and 64-80 KB of loads in
    # flight per SM (256 threads with 8-element runs: 32-64 KB; 52 registers in the MoE variant)
    # rows of up to 2048 columns per tile: at 8192 x 2 x 2048 one row of 2048 measured 78.6 % of
    # the copy ceiling against 74.8 % for two rows of 1024 (H200, session 14 call 10); 3584 and
    # 7168 keep 512 and 1024
    bk = _row_tile(hh, n, 2048)
    bm, vec = tile_shape(bk, nthreads=128, max_elems=8192, vecs=(16, 8, 4, 2, 1))
    # 16 elements per thread: 10 blocks per SM, which caps registers at 48 so that ptxas does not
    # interleave all 16 SiLUs (80 registers): 84.7 -> 89.6 % of the copy ceiling at 16384 x 2 x 3584,
    # 72.5 -> 75.1 % at 8192 x 2 x 2048 (H200, session 13 call 11). Counting spills at 48: 9 blocks
    # (56 registers) there.
    bps = (9 if clamped_count is not None else 10) if bm * bk == 16 * 128 else 0
    cmin = 1e-4 if sf_clamp_min is None else float(sf_clamp_min)
    # the scales' division by 448 as a corrected product (dsl/quant.tl: div_by_format_max, the IEEE
    # bits wherever the quotient is a normal number, amax >= 448 * 2^-126): 93.0 against 90.6 % of
    # the copy ceiling at 16384 x 2 x 3584 (H200, session 15 call 17); a smaller sf_clamp_min (or
    # 0) keeps the IEEE division
    fast = f32(cmin) >= 448 * 2.0 ** -126
    k = kernel("swiglu_per_token_cast", x, T=_FLOAT_IN[x.dtype], HH=hh, G=n, ROUND=round_sf,
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


def swiglu_backward_and_per_token_cast(x, grad_out: torch.Tensor, weight: torch.Tensor,
                                       pos_to_token_topk: torch.Tensor, token_topk_to_pos: torch.Tensor,
                                       num_per_channels: int, round_sf: bool = False,
                                       swiglu_clamp_value: Optional[float] = None):
    """Backward of the weighted SwiGLU from its FP8 input ``x = (e4m3 (N, 2Hh), f32 sf
    (N, 2Hh / n))``. Returns ``(out bf16 (N, Hh), (x_grad e4m3 (N, 2Hh), sf f32 (N, 2Hh / n)),
    x_grad bf16 (N, 2Hh), weight_grad f32 (num_tokens, K))``; weight_grad is zero where no row
    maps to it."""
    fn = "swiglu_backward_and_per_token_cast"
    if not isinstance(x, tuple) or len(x) != 2:
        raise ValueError(f"{fn}: x must be a QuantTensor (e4m3 data, f32 sf)")
    xq, xs = x
    if xq.dtype != torch.float8_e4m3fn:
        raise ValueError(f"{fn}: x's data must be float8_e4m3fn, got {xq.dtype}")
    if xq.dim() < 2 or not xq.is_contiguous():
        raise ValueError(f"{fn}: x's data must be a contiguous tensor of at least 2 dimensions")
    xq = xq.view(-1, xq.shape[-1])
    N, H2 = xq.shape
    n = num_per_channels
    if n not in (32, 128):
        raise ValueError(f"{fn}: num_per_channels must be 32 or 128, got {n}")
    if H2 % (2 * n):
        raise ValueError(f"{fn}: x.shape[-1] must be a multiple of 2 * num_per_channels ({2 * n}), got {H2}")
    hh = H2 // 2
    if xs.dtype != torch.float32 or not xs.is_contiguous() or tuple(xs.reshape(-1, xs.shape[-1]).shape) != (N, H2 // n):
        raise ValueError(f"{fn}: x's sf must be a contiguous float32 tensor of shape {(N, H2 // n)}")
    xs = xs.reshape(N, H2 // n)
    if grad_out.dtype != torch.bfloat16:
        raise ValueError(f"{fn}: grad_out must be bfloat16, got {grad_out.dtype}")
    if grad_out.numel() != N * hh:
        raise ValueError(f"{fn}: grad_out must hold {N} x {hh} elements, got shape {tuple(grad_out.shape)}")
    if not grad_out.is_contiguous():
        raise ValueError(f"{fn}: grad_out must be contiguous")
    grad = grad_out.view(N, hh)
    if weight.dtype != torch.float32 or weight.dim() != 2 or not weight.is_contiguous():
        raise ValueError(f"{fn}: weight must be a contiguous 2-D float32 tensor (num_tokens, num_topk)")
    _int_vector(pos_to_token_topk, "pos_to_token_topk", N, fn)
    if (token_topk_to_pos.dtype != torch.int32 or tuple(token_topk_to_pos.shape) != tuple(weight.shape)
            or not token_topk_to_pos.is_contiguous()):
        raise ValueError(f"{fn}: token_topk_to_pos must be a contiguous int32 tensor of weight's shape "
                         f"{tuple(weight.shape)}")
    dev = xq.device
    out = torch.empty((N, hh), dtype=torch.bfloat16, device=dev)
    gq = torch.empty((N, H2), dtype=torch.float8_e4m3fn, device=dev)
    gsf = torch.empty((N, H2 // n), dtype=torch.float32, device=dev)
    xg = torch.empty((N, H2), dtype=torch.bfloat16, device=dev)
    wg = torch.zeros(weight.shape, dtype=torch.float32, device=dev)
    if N == 0:
        return out, (gq, gsf), xg, wg
    # Groups of n < hh: tiles of 1024 elements (2 x 512, runs of 8) on 128 threads, 8 blocks per
    # SM (64 registers): 66.0 % of the copy ceiling against 45.1 % for 4 x 512 tiles with runs of
    # 16 (117 registers, 4 blocks per SM), 60.4 against 44.0 % at 4096 x 2 x 2048 (H200, session 12,
    # A/B run 13). One group per row keeps the whole-row tiles of up to 2048 elements. Session 14
    # (call 7): 9 blocks per SM (56 registers) measured 74.4 against 72.8 % with 8 (69.3 against
    # 68.6 at 4096 x 2 x 2048); 7 and 10 slower.
    bk = _row_tile(hh, n, 512)
    small = n != hh
    bm, vec = tile_shape(bk, nthreads=128, max_elems=1024 if small else 2048, vecs=(16, 8, 4, 2, 1))
    k = kernel("swiglu_backward_per_token_cast", xq, HH=hh, G=n, ROUND=round_sf, CLAMP=swiglu_clamp_value is not None,
               BK=bk, BM=bm, VEC=vec, NTH=128, BPS=9 if small else 0)
    clamp = 0.0 if swiglu_clamp_value is None else float(swiglu_clamp_value)
    k.launch(xq, xs, grad, weight.view(-1), pos_to_token_topk, out, gq, gsf, xg, wg.view(-1), clamp,
             stream=_runtime.stream(xq))
    return out, (gq, gsf), xg, wg
