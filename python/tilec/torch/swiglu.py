"""Reference SwiGLU forward and backward (``tile_kernels.torch.swiglu_*``), written from the
specification (quant-transpose.md §2.15-§2.17, §3.1): f32 arithmetic in the stated order, the
one fused multiply-add of the backward computed exactly.

Special values (docs/kernels/quant.md, "Special values"): NaN and ±inf go through the arithmetic
as IEEE says, with CUDA's expf (exp(inf) = inf, exp(-inf) = 0, exp(NaN) = NaN; the tests run
these references under emu_math.cuda_math()): silu(inf) = inf, silu(-inf) = -inf / inf = NaN,
silu(-100) = -0. The clamp keeps NaN (torch.clamp; the backward's comparisons are false for NaN),
and NaN is never counted in clamped_count. The activations are then cast by the rules of
tilec.torch.cast; NaN results of float outputs are some NaN (sign and payload unspecified)."""
from typing import Optional

import torch

from .cast import _decode, _expand


def fma(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """f32 a * b + c with a single rounding: the product is exact in f64, the f64 sum is made
    round-to-odd (TwoSum error term), so that the final rounding to f32 is correct. Infinite and
    NaN sums are IEEE's (inf * 0 = NaN, inf - inf = NaN), untouched by the correction."""
    p = a.double() * b.double()
    cd = c.double().expand_as(p)
    s = p + cd
    bb = s - p
    err = (p - (s - bb)) + (cd - bb)
    even = (s.view(torch.int64) & 1) == 0
    toward = torch.where(err > 0, torch.full_like(s, float("inf")), torch.full_like(s, float("-inf")))
    s = torch.where((err != 0) & even & torch.isfinite(s), torch.nextafter(s, toward), s)
    return s.float()


def elementwise_fma(a: torch.Tensor, b, c) -> torch.Tensor:
    """:func:`fma` with ``b`` and ``c`` tensors or Python numbers."""
    b = b if isinstance(b, torch.Tensor) else torch.tensor(float(b), dtype=torch.float32, device=a.device)
    c = c if isinstance(c, torch.Tensor) else torch.tensor(float(c), dtype=torch.float32, device=a.device)
    return fma(a, b, c)


def _weights(pos_to_token_topk: Optional[torch.Tensor], topk_weights: Optional[torch.Tensor], n: int, device):
    if topk_weights is None:
        return None
    flat = topk_weights.float().reshape(-1)
    pos = pos_to_token_topk.long()
    w = flat[pos.clamp(min=0)]
    return torch.where(pos >= 0, w, torch.zeros((), device=device))


def swiglu_forward(x: torch.Tensor, pos_to_token_topk: Optional[torch.Tensor] = None,
                   topk_weights: Optional[torch.Tensor] = None, swiglu_clamp_value: Optional[float] = None,
                   clamped_count: Optional[torch.Tensor] = None) -> torch.Tensor:
    """(N, 2Hh) -> f32 (N, Hh): l / (1 + exp(-l)) * r, l and r the halves (optionally clamped:
    l <= c, -c <= r <= c, with the counts of l > c, r > c and r < -c added to clamped_count),
    times the row's top-k weight (0 for padding rows). NaN stays NaN through the clamp and is not
    counted."""
    hh = x.shape[1] // 2
    l = x[:, :hh].float()
    r = x[:, hh:].float()
    if swiglu_clamp_value is not None:
        c = float(swiglu_clamp_value)
        if clamped_count is not None:
            clamped_count[0] += (l > c).sum()
            clamped_count[1] += (r > c).sum()
            clamped_count[2] += (r < -c).sum()
        l = torch.clamp(l, max=c)
        r = torch.clamp(r, min=-c, max=c)
    out = l / (1.0 + torch.exp(-l)) * r
    w = _weights(pos_to_token_topk, topk_weights, x.shape[0], x.device)
    if w is not None:
        out = out * w[:, None]
    return out


def swiglu_backward(x, grad_out: torch.Tensor, weight: torch.Tensor, pos_to_token_topk: torch.Tensor,
                    token_topk_to_pos: torch.Tensor, num_per_channels: int,
                    swiglu_clamp_value: Optional[float] = None):
    """Backward of the weighted SwiGLU from FP8 inputs (x = (e4m3 (N, 2Hh), f32 scales 1 x n)).
    Returns (out f32 (N, Hh), x_grad f32 (N, 2Hh), weight_grad f32 (num_tokens, K))."""
    xq, xs = x
    xq = xq.reshape(-1, xq.shape[-1])
    n_rows = xq.shape[0]
    full = _decode(xq) * _expand(xs.float(), 1, num_per_channels, n_rows, xq.shape[1])
    hh = full.shape[1] // 2
    xv, yv = full[:, :hh], full[:, hh:]
    zero = torch.zeros((), device=full.device)
    if swiglu_clamp_value is not None:
        c = float(swiglu_clamp_value)
        cx, cyu, cyl = xv > c, yv > c, yv < -c
        xv = torch.where(cx, torch.full_like(xv, c), xv)
        yv = torch.where(cyu, torch.full_like(yv, c), torch.where(cyl, torch.full_like(yv, -c), yv))
    else:
        cx = cyu = cyl = torch.zeros_like(xv, dtype=torch.bool)
    g = grad_out.reshape(n_rows, hh).float()
    w = _weights(pos_to_token_topk, weight, n_rows, full.device)[:, None]
    tmp = 1.0 + torch.exp(-xv)
    act = xv / tmp * yv
    s = 1.0 / tmp
    gws = g * w * s
    out = act * w
    dx = torch.where(cx, zero, gws * yv * fma(xv, 1.0 - s, torch.ones((), device=full.device)))
    dy = torch.where(cyu | cyl, zero, gws * xv)
    weight_grad = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device)
    pos = pos_to_token_topk.long()
    mapped = pos >= 0
    if n_rows:
        weight_grad.view(-1)[pos[mapped]] = (g * act).sum(dim=1)[mapped]
    del token_topk_to_pos  # unmapped entries stay zero
    return out, torch.cat((dx, dy), dim=1), weight_grad
