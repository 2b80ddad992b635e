"""mhc_pre_split_mixes (spec moe-engram-mhc.md §3.3)."""
from typing import Tuple

import torch

from ....mhc._common import check_device, check_float, check_mult, check_shape, check_tensor
from ....mhc.pre_split_mixes_kernel import _mixes_bwd, _split_mixes_fwd


class MHCPreSplitMixes(torch.autograd.Function):
    """The mixes (A, B, M3) split into pre (A, B, m, 1), post (A, B, m, 1), comb (A, B, m, m).
    Saves the mixes, post, scale and base; the scale and base gradients are summed from the
    backward's per-block partials."""

    @staticmethod
    def forward(ctx, input_mixes, mhc_scale, mhc_base, mhc_mult, mhc_post_mult_value, mhc_pre_eps):
        A, B, M3 = input_mixes.shape
        m = mhc_mult
        z = input_mixes.contiguous().view(A * B, M3)
        pre = z.new_empty((A, B, m, 1))
        post = z.new_empty((A, B, m, 1))
        comb = z.new_empty((A, B, m, m))
        _split_mixes_fwd(z, mhc_scale, mhc_base, m, mhc_post_mult_value, mhc_pre_eps, pre.view(-1, m),
                         post.view(-1, m), comb.view(-1, m * m))
        ctx.save_for_backward(z, post, mhc_scale, mhc_base)
        ctx.mhc_mult, ctx.post_mult, ctx.shape = m, mhc_post_mult_value, input_mixes.shape
        return pre, post, comb

    @staticmethod
    def backward(ctx, g_pre, g_post, g_comb):
        z, post, scale, base = ctx.saved_tensors
        m = ctx.mhc_mult
        T = z.shape[0]
        g_pre = torch.zeros_like(post) if g_pre is None else g_pre
        g_post = torch.zeros_like(post) if g_post is None else g_post
        g_comb = z.new_zeros((T, m * m)) if g_comb is None else g_comb
        grad_z, grad_scale, grad_base = _mixes_bwd(
            z, g_pre.contiguous().view(T, m), post.view(T, m), g_post.contiguous().view(T, m),
            g_comb.contiguous().view(T, m * m), scale, base, m, ctx.post_mult, head=False)
        return grad_z.view(ctx.shape), grad_scale, grad_base, None, None, None


def mhc_pre_split_mixes(input_mixes: torch.Tensor, mhc_scale: torch.Tensor, mhc_base: torch.Tensor, mhc_mult: int,
                        mhc_post_mult_value: float, mhc_pre_eps: float) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(pre, post, comb) of the mixes z = input_mixes (f32 (A, B, M3), M3 = m (m + 2), any
    strides), scale a = mhc_scale (f32 (3,)) and base b = mhc_base (f32 (M3,)), per token:
    pre[i] = sigmoid(fma(z[i], a0, b[i])) + mhc_pre_eps, post[i] = sigmoid(fma(z[m + i], a1,
    b[m + i])) * mhc_post_mult_value, comb[i, j] = fma(z[2m + i m + j], a2, b[2m + i m + j]) (spec
    §3.3). Shapes (A, B, m, 1), (A, B, m, 1), (A, B, m, m), f32 contiguous. Differentiable in
    input_mixes, mhc_scale and mhc_base."""
    fn = "mhc_pre_split_mixes"
    check_tensor(fn, "input_mixes", input_mixes, torch.float32, dim=3, contiguous=False)
    m = check_mult(fn, "mhc_mult", mhc_mult)
    M3 = m * (m + 2)
    if input_mixes.shape[-1] != M3:
        raise ValueError(f"{fn}: input_mixes must have mhc_mult * (mhc_mult + 2) = {M3} mixes in its last "
                         f"dimension, got {input_mixes.shape[-1]}")
    check_tensor(fn, "mhc_scale", mhc_scale, torch.float32)
    check_shape(fn, "mhc_scale", mhc_scale, (3,), "(3,)")
    check_tensor(fn, "mhc_base", mhc_base, torch.float32)
    check_shape(fn, "mhc_base", mhc_base, (M3,), "(mhc_mult * (mhc_mult + 2),)")
    check_device(fn, input_mixes=input_mixes, mhc_scale=mhc_scale, mhc_base=mhc_base)
    post_mult = check_float(fn, "mhc_post_mult_value", mhc_post_mult_value)
    pre_eps = check_float(fn, "mhc_pre_eps", mhc_pre_eps)
    return MHCPreSplitMixes.apply(input_mixes, mhc_scale, mhc_base, m, post_mult, pre_eps)
