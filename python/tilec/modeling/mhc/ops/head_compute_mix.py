"""mhc_head_compute_mix (spec moe-engram-mhc.md §3.4)."""
from typing import Tuple

import torch

from ...._ops import kernel_op
from ....mhc._common import check_device, check_float, check_mult, check_shape, check_tensor
from ....mhc.head_compute_mix_kernel import _head_mix_bwd, _head_mix_fwd


@kernel_op(name="mhc_head_compute_mix_bwd")
def _mhc_head_compute_mix_bwd(input_mix: torch.Tensor, g_out: torch.Tensor, mhc_scale: torch.Tensor,
                              mhc_base: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(grad_input_mix (A, B, m), grad_scale (1,), grad_base (m,)) of mhc_head_compute_mix from
    its input and the output's gradient."""
    A, B, m = input_mix.shape
    z = input_mix.contiguous().view(A * B, m)
    grad_z, grad_scale, grad_base = _head_mix_bwd(z, g_out.contiguous().view(A * B, m), mhc_scale, mhc_base)
    return grad_z.view(A, B, m), grad_scale, grad_base


def _save(ctx, input_mix, mhc_scale, mhc_base):
    ctx.save_for_backward(input_mix, mhc_scale, mhc_base)


def _input_grads(ctx, g_out):
    z, scale, base = ctx.saved_tensors
    return _mhc_head_compute_mix_bwd(z, g_out, scale, base)


class MHCHeadComputeMix(torch.autograd.Function):
    """sigmoid(fma(input_mix, scale, base)) + eps on (A, B, m); saves input_mix, scale, base."""

    @staticmethod
    def forward(ctx, input_mix, mhc_scale, mhc_base, mhc_pre_eps):
        _save(ctx, input_mix, mhc_scale, mhc_base)
        return mhc_head_compute_mix(input_mix, mhc_scale, mhc_base, mhc_pre_eps)

    @staticmethod
    def backward(ctx, g_out):
        return (*_input_grads(ctx, g_out), None)


@kernel_op(returns="tensor", autograd=(
    lambda ctx, a, r: _save(ctx, a["input_mix"], a["mhc_scale"], a["mhc_base"]),
    lambda ctx, grads: dict(zip(("input_mix", "mhc_scale", "mhc_base"), _input_grads(ctx, grads[0])))))
def mhc_head_compute_mix(input_mix: torch.Tensor, mhc_scale: torch.Tensor, mhc_base: torch.Tensor,
                         mhc_pre_eps: float) -> torch.Tensor:
    """The head's stream weights: sigmoid(fma(input_mix[..., j], mhc_scale[0], mhc_base[j])) +
    mhc_pre_eps (spec §3.4). input_mix f32 (A, B, m) (any strides), mhc_scale f32 (1,), mhc_base
    f32 (m,); returns f32 (A, B, m). Differentiable in the three tensors (backward:
    tilec::mhc_head_compute_mix_bwd)."""
    fn = "mhc_head_compute_mix"
    check_tensor(fn, "input_mix", input_mix, torch.float32, dim=3, contiguous=False)
    m = input_mix.shape[-1]
    check_mult(fn, "input_mix.shape[-1] (mhc_mult)", m)
    check_tensor(fn, "mhc_scale", mhc_scale, torch.float32)
    check_shape(fn, "mhc_scale", mhc_scale, (1,), "(1,)")
    check_tensor(fn, "mhc_base", mhc_base, torch.float32)
    check_shape(fn, "mhc_base", mhc_base, (m,), "(mhc_mult,)")
    check_device(fn, input_mix=input_mix, mhc_scale=mhc_scale, mhc_base=mhc_base)
    eps = check_float(fn, "mhc_pre_eps", mhc_pre_eps)
    A, B, _ = input_mix.shape
    z = input_mix.contiguous().view(A * B, m)
    out = z.new_empty((A, B, m))
    _head_mix_fwd(z, mhc_scale, mhc_base, eps, out.view(-1, m))
    return out
