"""mhc_pre_split_mixes (spec moe-engram-mhc.md §3.3)."""
from typing import Optional, Tuple

import torch

from ...._ops import kernel_op
from ....mhc._common import check_device, check_float, check_mult, check_shape, check_tensor
from ....mhc.pre_split_mixes_kernel import _mixes_bwd, _split_mixes_fwd


@kernel_op(name="mhc_pre_split_mixes_bwd")
def _mhc_pre_split_mixes_bwd(input_mixes: torch.Tensor, post: torch.Tensor, g_pre: Optional[torch.Tensor],
                             g_post: Optional[torch.Tensor], g_comb: Optional[torch.Tensor], mhc_scale: torch.Tensor,
                             mhc_base: torch.Tensor, mhc_mult: int,
                             mhc_post_mult_value: float) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(grad_input_mixes (A, B, M3), grad_scale (3,), grad_base (M3,)) of mhc_pre_split_mixes
    from the forward's input mixes and post output and the outputs' gradients (None: zero); the
    scale and base gradients summed from the kernel's per-block partials."""
    A, B, M3 = input_mixes.shape
    m = mhc_mult
    T = A * B
    z = input_mixes.contiguous().view(T, M3)
    g_pre = torch.zeros_like(post) if g_pre is None else g_pre
    g_post = torch.zeros_like(post) if g_post is None else g_post
    g_comb = z.new_zeros((T, m * m)) if g_comb is None else g_comb
    grad_z, grad_scale, grad_base = _mixes_bwd(
        z, g_pre.contiguous().view(T, m), post.view(T, m), g_post.contiguous().view(T, m),
        g_comb.contiguous().view(T, m * m), mhc_scale, mhc_base, m, mhc_post_mult_value, head=False)
    return grad_z.view(A, B, M3), grad_scale, grad_base


def _save(ctx, input_mixes, post, mhc_scale, mhc_base, mhc_mult, post_mult):
    ctx.save_for_backward(input_mixes, post, mhc_scale, mhc_base)
    ctx.mhc_mult, ctx.post_mult = mhc_mult, post_mult


def _input_grads(ctx, g_pre, g_post, g_comb):
    z, post, scale, base = ctx.saved_tensors
    return _mhc_pre_split_mixes_bwd(z, post, g_pre, g_post, g_comb, scale, base, ctx.mhc_mult, ctx.post_mult)


class MHCPreSplitMixes(torch.autograd.Function):
    """The mixes (A, B, M3) split into pre (A, B, m, 1), post (A, B, m, 1), comb (A, B, m, m).
    Saves the mixes, post, scale and base; the scale and base gradients are summed from the
    backward's per-block partials."""

    @staticmethod
    def forward(ctx, input_mixes, mhc_scale, mhc_base, mhc_mult, mhc_post_mult_value, mhc_pre_eps):
        pre, post, comb = mhc_pre_split_mixes(input_mixes, mhc_scale, mhc_base, mhc_mult, mhc_post_mult_value,
                                              mhc_pre_eps)
        _save(ctx, input_mixes, post, mhc_scale, mhc_base, mhc_mult, float(mhc_post_mult_value))
        return pre, post, comb

    @staticmethod
    def backward(ctx, g_pre, g_post, g_comb):
        return (*_input_grads(ctx, g_pre, g_post, g_comb), None, None, None)


def _setup(ctx, a, results):
    _save(ctx, a["input_mixes"], results[1], a["mhc_scale"], a["mhc_base"], a["mhc_mult"],
          float(a["mhc_post_mult_value"]))


def _grads(ctx, grads):
    return dict(zip(("input_mixes", "mhc_scale", "mhc_base"), _input_grads(ctx, *grads)))


@kernel_op(autograd=(_setup, _grads))
def mhc_pre_split_mixes(input_mixes: torch.Tensor, mhc_scale: torch.Tensor, mhc_base: torch.Tensor, mhc_mult: int,
                        mhc_post_mult_value: float, mhc_pre_eps: float) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(pre, post, comb) of the mixes z = input_mixes (f32 (A, B, M3), M3 = m (m + 2), any
    strides), scale a = mhc_scale (f32 (3,)) and base b = mhc_base (f32 (M3,)), per token:
    pre[i] = sigmoid(fma(z[i], a0, b[i])) + mhc_pre_eps, post[i] = sigmoid(fma(z[m + i], a1,
    b[m + i])) * mhc_post_mult_value, comb[i, j] = fma(z[2m + i m + j], a2, b[2m + i m + j]) (spec
    §3.3). Shapes (A, B, m, 1), (A, B, m, 1), (A, B, m, m), f32 contiguous. Differentiable in
    input_mixes, mhc_scale and mhc_base (backward: tilec::mhc_pre_split_mixes_bwd)."""
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
    A, B, _ = input_mixes.shape
    z = input_mixes.contiguous().view(A * B, M3)
    pre = z.new_empty((A, B, m, 1))
    post = z.new_empty((A, B, m, 1))
    comb = z.new_empty((A, B, m, m))
    _split_mixes_fwd(z, mhc_scale, mhc_base, m, post_mult, pre_eps, pre.view(-1, m), post.view(-1, m),
                     comb.view(-1, m * m))
    return pre, post, comb
