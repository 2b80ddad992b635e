"""mhc_pre_apply_mix (spec moe-engram-mhc.md §3.5)."""
import math
from typing import Optional

import torch

from ....mhc._common import check_device, check_mult, check_out, check_shape, check_tensor
from ....mhc.pre_apply_mix_kernel import _apply_mix_bwd, _apply_mix_fwd


def _grad_buffer(x: torch.Tensor):
    """The residual-gradient buffer mhc_post's backward left on x's storage (spec §3.5, §3.6),
    viewed as x, or None."""
    buf = getattr(x.untyped_storage(), "grad_from_mhc_post", None)
    if buf is None:
        return None
    if not isinstance(buf, torch.Tensor) or buf.dtype != torch.bfloat16 or buf.numel() != x.numel() \
            or not buf.is_contiguous():
        raise ValueError("mhc_pre_apply_mix: the grad_from_mhc_post buffer on x's storage must be a contiguous bf16 "
                         f"tensor of x's {x.numel()} elements")
    return buf.view(x.shape)


class MHCPreApplyMix(torch.autograd.Function):
    """x (..., m, H) bf16 weighted by mix (..., m, 1) f32 -> (..., H) bf16. Saves x and mix. The
    backward adds its x gradient into grad_from_mhc_post in place when x's storage has one (and
    returns None for x), else into a zero buffer that it returns."""

    @staticmethod
    def forward(ctx, x, mix, out):
        *lead, m, H = x.shape
        T = math.prod(lead)
        if out is None:
            out = x.new_empty((*lead, H))
        else:
            ctx.mark_dirty(out)
        _apply_mix_fwd(x.view(T, m, H), mix.view(T, m), out.view(T, H))
        ctx.save_for_backward(x, mix)
        return out

    @staticmethod
    def backward(ctx, o_grad):
        x, mix = ctx.saved_tensors
        *lead, m, H = x.shape
        T = math.prod(lead)
        buf = _grad_buffer(x)
        fused = buf is not None
        if not fused:
            buf = torch.zeros_like(x)
        mix_grad = torch.empty_like(mix)
        _apply_mix_bwd(x.view(T, m, H), mix.view(T, m), o_grad.contiguous().view(T, H), buf.view(T, m, H),
                       mix_grad.view(T, m))
        return (None if fused else buf), mix_grad, None


def mhc_pre_apply_mix(x: torch.Tensor, mix: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The layer input from the residual: out[..., d] = bf16(acc), acc = fma(mix[..., i, 0],
    x[..., i, d], acc) over the streams i = 0 .. m - 1 from 0 (spec §3.5). x bf16 (..., m, H)
    contiguous, mix f32 (..., m, 1) contiguous with x's leading dimensions, ``out`` an optional
    bf16 (..., H) contiguous tensor. Differentiable; see MHCPreApplyMix for the gradient
    protocol."""
    fn = "mhc_pre_apply_mix"
    check_tensor(fn, "x", x, torch.bfloat16, min_dim=2)
    *lead, m, H = x.shape
    check_mult(fn, "x.shape[-2] (mhc_mult)", m)
    check_tensor(fn, "mix", mix, torch.float32, min_dim=2)
    if mix.shape[-1] != 1:
        raise ValueError(f"{fn}: mix must have a last dimension of 1, (..., mhc_mult, 1), got {tuple(mix.shape)}")
    check_shape(fn, "mix", mix, (*lead, m, 1), "x's (..., mhc_mult, 1)")
    check_out(fn, out, (*lead, H), "(..., H)", torch.bfloat16, x=x, mix=mix)
    check_device(fn, x=x, mix=mix)
    return MHCPreApplyMix.apply(x, mix, out)
