"""The backward of the weighted SwiGLU from its FP8 input, with the per-token e4m3 cast of the
input gradient (spec quant-transpose.md §2.17)."""
from typing import Optional

import torch

from .. import _runtime
from .._ops import kernel_op, PAIR
from .._checks import check_bool, check_float, check_int
from .common import int_vector, kernel, row_tile, tile_shape


@kernel_op(kinds={"x": PAIR}, returns=lambda f, a: (f[0], (f[1], f[2]), f[3], f[4]))
def swiglu_backward_and_per_token_cast(x, grad_out: torch.Tensor, weight: torch.Tensor,
                                       pos_to_token_topk: torch.Tensor, token_topk_to_pos: torch.Tensor,
                                       num_per_channels: int, round_sf: bool = False,
                                       swiglu_clamp_value: Optional[float] = None):
    """Backward of the weighted SwiGLU from its FP8 input ``x = (e4m3 (N, 2Hh), f32 sf
    (N, 2Hh / n))``. Returns ``(out bf16 (N, Hh), (x_grad e4m3 (N, 2Hh), sf f32 (N, 2Hh / n)),
    x_grad bf16 (N, 2Hh), weight_grad f32 (num_tokens, K))``; weight_grad is zero where no row
    maps to it."""
    fn = "swiglu_backward_and_per_token_cast"
    if (not isinstance(x, tuple) or len(x) != 2 or not isinstance(x[0], torch.Tensor)
            or not isinstance(x[1], torch.Tensor)):
        raise ValueError(f"{fn}: x must be a QuantTensor (e4m3 data, f32 sf)")
    xq, xs = x
    check_int(fn, "num_per_channels", num_per_channels)
    check_bool(fn, "round_sf", round_sf)
    if swiglu_clamp_value is not None:
        check_float(fn, "swiglu_clamp_value", swiglu_clamp_value)
    for name, t in (("grad_out", grad_out), ("weight", weight), ("token_topk_to_pos", token_topk_to_pos)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{fn}: {name} must be a tensor, got {type(t).__name__}")
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
    int_vector(pos_to_token_topk, "pos_to_token_topk", N, fn)
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
    # 16 (117 registers, 4 blocks per SM), 60.4 against 44.0 % at 4096 x 2 x 2048 (H200, 2026-11-30,
    # bench/ab_generics.py). One group per row keeps the whole-row tiles of up to 2048 elements.
    # With the compiler's bf16 peepholes (same date and command): 9 blocks per SM (56 registers)
    # measured 74.4 against 72.8 % with 8 (69.3 against 68.6 at 4096 x 2 x 2048); 7 and 10 slower.
    bk = row_tile(hh, n, 512)
    small = n != hh
    bm, vec = tile_shape(bk, nthreads=128, max_elems=1024 if small else 2048, vecs=(16, 8, 4, 2, 1))
    k = kernel("swiglu_backward_per_token_cast", xq, HH=hh, G=n, ROUND=round_sf, CLAMP=swiglu_clamp_value is not None,
               BK=bk, BM=bm, VEC=vec, NTH=128, BPS=9 if small else 0)
    clamp = 0.0 if swiglu_clamp_value is None else float(swiglu_clamp_value)
    k.launch(xq, xs, grad, weight.view(-1), pos_to_token_topk, out, gq, gsf, xg, wg.view(-1), clamp,
             stream=_runtime.stream(xq))
    return out, (gq, gsf), xg, wg
