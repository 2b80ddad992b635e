"""expand_to_mhc (spec moe-engram-mhc.md §3.1)."""
from typing import Optional

import torch

from ...._ops import kernel_op
from ....mhc._common import check_device, check_mult, check_out, check_tensor
from ....mhc.expand_kernel import _expand_bwd, _expand_fwd


@kernel_op(name="expand_to_mhc_bwd", returns="tensor")
def _expand_to_mhc_bwd(out_grad: torch.Tensor) -> torch.Tensor:
    """The gradient (..., H) bf16 of expand_to_mhc's input from its output's (..., m, H) bf16
    (any strides): the f32 sum over the streams in stream order, rounded once."""
    m, H = out_grad.shape[-2], out_grad.shape[-1]
    g = out_grad.contiguous()
    hidden_grad = g.new_empty((*g.shape[:-2], H))
    _expand_bwd(g.view(-1, m, H), hidden_grad.view(-1, H))
    return hidden_grad


class ExpandToMHCFn(torch.autograd.Function):
    """hidden (..., H) -> (..., mhc_mult, H), every stream a copy; the backward adds the
    streams' gradients in f32, in stream order, and rounds once to bf16."""

    @staticmethod
    def forward(ctx, hidden, mhc_mult, out):
        if out is not None:
            ctx.mark_dirty(out)
        return expand_to_mhc(hidden, mhc_mult, out)     # grad mode is off here: the kernel alone

    @staticmethod
    def backward(ctx, out_grad):
        return _expand_to_mhc_bwd(out_grad), None, None


def _grads(ctx, grads):
    return {"hidden": _expand_to_mhc_bwd(grads[0])}


@kernel_op(mutates=("out",), returns="out", autograd=(lambda ctx, args, results: None, _grads))
def expand_to_mhc(hidden: torch.Tensor, mhc_mult: int, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The mHC residual of an embedding: (..., H) bf16 contiguous -> (..., mhc_mult, H) bf16, each
    of the mhc_mult streams a copy of hidden (into ``out`` when given: bf16, contiguous, that
    shape). Differentiable (the op tilec::expand_to_mhc, its backward tilec::expand_to_mhc_bwd)."""
    _check_expand("expand_to_mhc", "hidden", hidden, mhc_mult, out)
    H = hidden.shape[-1]
    if out is None:
        out = hidden.new_empty((*hidden.shape[:-1], mhc_mult, H))
    _expand_fwd(hidden.view(-1, H), mhc_mult, out.view(-1, mhc_mult, H))
    return out


def _check_expand(fn, name, hidden, mhc_mult, out):
    check_tensor(fn, name, hidden, torch.bfloat16, min_dim=1)
    check_mult(fn, "mhc_mult", mhc_mult)
    shape = (*hidden.shape[:-1], mhc_mult, hidden.shape[-1])
    check_out(fn, out, shape, "(..., mhc_mult, H)", torch.bfloat16, **{name: hidden})
    check_device(fn, **{name: hidden, "out": out})
