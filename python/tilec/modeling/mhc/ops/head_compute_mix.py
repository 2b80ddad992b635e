"""mhc_head_compute_mix (spec moe-engram-mhc.md §3.4)."""
import torch

from ....mhc._common import check_device, check_float, check_mult, check_shape, check_tensor
from ....mhc.head_compute_mix_kernel import _head_mix_bwd, _head_mix_fwd


class MHCHeadComputeMix(torch.autograd.Function):
    """sigmoid(fma(input_mix, scale, base)) + eps on (A, B, m); saves input_mix, scale, base."""

    @staticmethod
    def forward(ctx, input_mix, mhc_scale, mhc_base, mhc_pre_eps):
        A, B, m = input_mix.shape
        z = input_mix.contiguous().view(A * B, m)
        out = z.new_empty((A, B, m))
        _head_mix_fwd(z, mhc_scale, mhc_base, mhc_pre_eps, out.view(-1, m))
        ctx.save_for_backward(z, mhc_scale, mhc_base)
        ctx.shape = input_mix.shape
        return out

    @staticmethod
    def backward(ctx, g_out):
        z, scale, base = ctx.saved_tensors
        grad_z, grad_scale, grad_base = _head_mix_bwd(z, g_out.contiguous().view(z.shape), scale, base)
        return grad_z.view(ctx.shape), grad_scale, grad_base, None


def mhc_head_compute_mix(input_mix: torch.Tensor, mhc_scale: torch.Tensor, mhc_base: torch.Tensor,
                         mhc_pre_eps: float) -> torch.Tensor:
    """The head's stream weights: sigmoid(fma(input_mix[..., j], mhc_scale[0], mhc_base[j])) +
    mhc_pre_eps (spec §3.4). input_mix f32 (A, B, m) (any strides), mhc_scale f32 (1,), mhc_base
    f32 (m,); returns f32 (A, B, m). Differentiable in the three tensors."""
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
    return MHCHeadComputeMix.apply(input_mix, mhc_scale, mhc_base, eps)
