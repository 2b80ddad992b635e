"""mhc_pre_apply_mix (spec moe-engram-mhc.md §3.5)."""
import math
from typing import Optional

import torch

from ...._ops import kernel_op
from ....mhc._common import check_device, check_mult, check_out, check_shape, check_tensor, grad_from_mhc_post
from ....mhc.pre_apply_mix_kernel import _apply_mix_bwd, _apply_mix_fwd


@kernel_op(name="mhc_pre_apply_mix_bwd", mutates=("x_grad_buf",), returns="tensor")
def _mhc_pre_apply_mix_bwd(x: torch.Tensor, mix: torch.Tensor, o_grad: torch.Tensor,
                           x_grad_buf: torch.Tensor) -> torch.Tensor:
    """mhc_pre_apply_mix's backward: x_grad_buf (x's shape, bf16 contiguous) updated in place,
    buf = bf16(fma(mix_i, o_grad, buf)), and mix's gradient (mix's shape, f32) returned."""
    *lead, m, H = x.shape
    T = math.prod(lead)
    mix_grad = torch.empty_like(mix)
    _apply_mix_bwd(x.view(T, m, H), mix.view(T, m), o_grad.contiguous().view(T, H), x_grad_buf.view(T, m, H),
                   mix_grad.view(T, m))
    return mix_grad


def _input_grads(ctx, o_grad):
    """(x's gradient or None, mix's): into the grad_from_mhc_post buffer on x's storage when
    there is one (None is returned for x), else into a zero buffer that is returned."""
    x, mix = ctx.saved_tensors
    buf = grad_from_mhc_post("mhc_pre_apply_mix", "x's", x)
    fused = buf is not None
    if not fused:
        buf = torch.zeros_like(x)
    mix_grad = _mhc_pre_apply_mix_bwd(x, mix, o_grad, buf)
    return (None if fused else buf), mix_grad


class MHCPreApplyMix(torch.autograd.Function):
    """x (..., m, H) bf16 weighted by mix (..., m, 1) f32 -> (..., H) bf16. Saves x and mix. The
    backward adds its x gradient into grad_from_mhc_post in place when x's storage has one (and
    returns None for x), else into a zero buffer that it returns."""

    @staticmethod
    def forward(ctx, x, mix, out):
        if out is not None:
            ctx.mark_dirty(out)
        ctx.save_for_backward(x, mix)
        return mhc_pre_apply_mix(x, mix, out)

    @staticmethod
    def backward(ctx, o_grad):
        return (*_input_grads(ctx, o_grad), None)


@kernel_op(mutates=("out",), returns="out", autograd=(
    lambda ctx, a, r: ctx.save_for_backward(a["x"], a["mix"]),
    lambda ctx, grads: dict(zip(("x", "mix"), _input_grads(ctx, grads[0])))))
def mhc_pre_apply_mix(x: torch.Tensor, mix: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The layer input from the residual: out[..., d] = bf16(acc), acc = fma(mix[..., i, 0],
    x[..., i, d], acc) over the streams i = 0 .. m - 1 from 0 (spec §3.5). x bf16 (..., m, H)
    contiguous, mix f32 (..., m, 1) contiguous with x's leading dimensions, ``out`` an optional
    bf16 (..., H) contiguous tensor. Differentiable (backward: tilec::mhc_pre_apply_mix_bwd); see
    MHCPreApplyMix for the gradient protocol."""
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
    T = math.prod(lead)
    if out is None:
        out = x.new_empty((*lead, H))
    _apply_mix_fwd(x.view(T, m, H), mix.view(T, m), out.view(T, H))
    return out
