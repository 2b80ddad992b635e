"""Reference reduction of expert rows (``tile_kernels.torch.reduce_fused``, spec
moe-engram-mhc.md §1.7, §5.3), exact: the fused multiply-add is emulated in float64."""
from typing import Optional, Union

import torch

from ..quant.types import QuantTensor


def fma_f32(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """a * b + c on f32 tensors with ONE rounding (an IEEE fused multiply-add), on any device:
    the product is exact in float64, the sum's rounding error comes from TwoSum, and rounding
    to odd at 53 bits makes the final rounding to f32 the single correct one."""
    p = a.double() * b.double()
    cd = c.double()
    s = p + cd
    bb = s - p
    err = (p - (s - bb)) + (cd - bb)
    bits = s.view(torch.int64)
    fix = (err != 0) & ((bits & 1) == 0) & torch.isfinite(s)
    up = (err > 0) == (s > 0)                                 # the exact value is farther from zero
    bits = torch.where(fix, torch.where(up, bits + 1, bits - 1), bits)
    return bits.view(torch.float64).float()


def elementwise_fma(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """a * b + c with one rounding, as the kernels' contracted multiply-add (:func:`fma_f32`)."""
    return fma_f32(a, b, c)


def reduce_fused(x: Union[torch.Tensor, QuantTensor], topk_weights: Optional[torch.Tensor],
                 token_topk_to_pos: torch.Tensor, fp8_format: str = "",
                 sf: Optional[torch.Tensor] = None) -> torch.Tensor:
    """acc = fma(x[p], s, acc) over k in order for valid p (s = weight, times x_sf[p]); then
    acc * sf[0]; cast to the input dtype or e4m3 (saturating at ±448)."""
    x_sf = None
    if isinstance(x, tuple):
        x, x_sf = x
    T, K = token_topk_to_pos.shape
    H = x.shape[1]
    acc = torch.zeros((T, H), dtype=torch.float32, device=x.device)
    for k in range(K):
        p = token_topk_to_pos[:, k].long()
        valid = p >= 0
        pc = p.clamp_min(0)
        rows = x[pc].float() if x.shape[0] else torch.zeros((T, H), device=x.device)
        s = topk_weights[:, k].float() if topk_weights is not None else torch.ones(T, device=x.device)
        if x_sf is not None and x_sf.shape[0]:
            s = s * x_sf[pc]
        acc = torch.where(valid[:, None], fma_f32(rows, s[:, None].expand_as(rows), acc), acc)
    if sf is not None:
        acc = acc * sf.reshape(-1)[0].item()
    if fp8_format == "e4m3":
        res = acc.clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    else:
        res = acc.to(x.dtype)
    return res
