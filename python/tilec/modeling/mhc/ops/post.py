"""mhc_post and its plain forward and backward (spec moe-engram-mhc.md §3.6)."""
from typing import Optional

import torch

from ...._ops import kernel_op
from ....mhc._common import check_out
from ....mhc.post_kernel import _check_post, mhc_post_bwd, mhc_post_fwd

__all__ = ["MHCPost", "mhc_post", "mhc_post_fwd", "mhc_post_bwd"]


def _input_grads(ctx, d_o):
    """mhc_post_bwd's four gradients, each viewed to its input's shape, with the residual's also
    left on the residual's storage as grad_from_mhc_post for the mhc_pre backward passes that
    follow (set here rather than by the op, so that a traced backward leaves it on the traced
    residual and the compiled graph's run has no side effect)."""
    x, residual, post_layer_mix, comb_res_mix = ctx.saved_tensors
    d_x, d_residual, d_post, d_comb = mhc_post_bwd(x, residual, post_layer_mix, comb_res_mix, d_o,
                                                   fuse_grad_acc=False)
    residual.untyped_storage().grad_from_mhc_post = d_residual
    return (d_x.view(x.shape), d_residual.view(residual.shape), d_post.view(post_layer_mix.shape),
            d_comb.view(comb_res_mix.shape))


class MHCPost(torch.autograd.Function):
    """The new residual post (x) x + comb^T . residual. Saves x, residual, post and comb; the
    backward (mhc_post_bwd) leaves the residual's gradient on its storage as grad_from_mhc_post
    for the mhc_pre backward passes that follow, and returns it as well."""

    @staticmethod
    def forward(ctx, x, residual, post_layer_mix, comb_res_mix, out):
        if out is not None:
            ctx.mark_dirty(out)
        ctx.save_for_backward(x, residual, post_layer_mix, comb_res_mix)
        return mhc_post_fwd(x, residual, post_layer_mix, comb_res_mix, out)

    @staticmethod
    def backward(ctx, d_o):
        return (*_input_grads(ctx, d_o), None)


_NAMES = ("x", "residual", "post_layer_mix", "comb_res_mix")


@kernel_op(mutates=("out",), returns="out", autograd=(
    lambda ctx, a, r: ctx.save_for_backward(*(a[n] for n in _NAMES)),
    lambda ctx, grads: dict(zip(_NAMES, _input_grads(ctx, grads[0])))))
def mhc_post(x: torch.Tensor, residual: torch.Tensor, post_layer_mix: torch.Tensor, comb_res_mix: torch.Tensor,
             out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The residual after a sub-layer: x bf16 (S, T, H) the sub-layer's output, residual bf16
    (S, T, m, H), post_layer_mix f32 (S, T, m, 1), comb_res_mix f32 (S, T, m, m); returns bf16
    (S, T, m, H) (see mhc_post_fwd). Differentiable in the four tensors (backward: the op
    tilec::mhc_post_bwd, see MHCPost)."""
    _check_post("mhc_post", x, residual, post_layer_mix, comb_res_mix)
    check_out("mhc_post", out, residual.shape, "residual's", torch.bfloat16, x=x, residual=residual,
              post_layer_mix=post_layer_mix, comb_res_mix=comb_res_mix)
    return mhc_post_fwd.impl(x, residual, post_layer_mix, comb_res_mix, out)
