"""mhc_pre_norm_fn (spec moe-engram-mhc.md §3.7)."""
from typing import Optional

import torch

from ...._ops import kernel_op
from ....mhc._common import (check_bool, check_device, check_float, check_int, check_shape, check_tensor,
                             grad_from_mhc_post)
from ....mhc.norm_fn_kernel import MAX_MIXES, _bwd, _fwd_mul, _fwd_norm, round_to_tf32


def _forward(x, fn, norm_eps, n_splits):
    """(out (..., M3), fn_r, mul, sq): the mixes of x (..., m, H) on fn (M3, m H) and what the
    backward keeps."""
    M3, K = fn.shape
    fn_r = round_to_tf32(fn)
    mul_part, sq_part = _fwd_mul(x.view(-1, K), fn_r, n_splits)
    mul, sq, out = _fwd_norm(mul_part, sq_part, M3, K, norm_eps)
    return out.view(*x.shape[:-2], M3), fn_r, mul, sq


@kernel_op(name="mhc_pre_norm_fn_bwd", mutates=("x_grad_buf",), returns="tensor")
def _mhc_pre_norm_fn_bwd(out_grad: torch.Tensor, mul: torch.Tensor, sq: torch.Tensor, x: torch.Tensor,
                         fn_r: torch.Tensor, x_grad_buf: torch.Tensor, norm_eps: float) -> torch.Tensor:
    """The backward's kernels: x_grad_buf (x's elements, bf16 contiguous) updated in place with
    the residual's gradient, and the gradient of fn (M3, m H) returned (straight through the TF32
    rounding), from the output's gradient (..., M3) and the forward's fn_r, mul and sq."""
    M3, K = fn_r.shape
    return _bwd(out_grad.contiguous().view(-1, M3), mul, sq, x.view(-1, K), fn_r, x_grad_buf.view(-1, K), norm_eps)


def _x_and_fn_grads(x, fn_r, mul, sq, out_grad, norm_eps, fuse_grad_acc):
    """The residual's gradient (None where it went into grad_from_mhc_post) and fn's."""
    buf = grad_from_mhc_post("mhc_pre_norm_fn", "the residual's", x) if fuse_grad_acc else None
    fused = buf is not None
    if not fused:
        buf = torch.zeros_like(x)
    fn_grad = _mhc_pre_norm_fn_bwd(out_grad, mul, sq, x, fn_r, buf, norm_eps)
    if fused:
        del x.untyped_storage().grad_from_mhc_post
        return None, fn_grad
    return buf, fn_grad


class MHCPreNormFn(torch.autograd.Function):
    """The RMS-normalised projection of the flattened residual x (..., m, H) on fn (M3, m H):
    out = (X fn_r^T) * rsqrt(sum X^2 / K + eps), fn_r = round_to_tf32(fn), on the TF32 tensor
    cores split along K into n_splits parts. Saves x, fn_r, the projection and the sums of
    squares. Backward: the residual's gradient is added in place into grad_from_mhc_post when
    fuse_grad_acc and x's storage has it (the attribute is then deleted and None returned for x);
    otherwise into a zero buffer that is returned. fn's gradient is straight through the rounding."""

    @staticmethod
    def forward(ctx, x, fn, norm_eps, fuse_grad_acc, n_splits):
        out, fn_r, mul, sq = _forward(x, fn, norm_eps, n_splits)
        ctx.save_for_backward(x, fn_r, mul, sq)
        ctx.norm_eps, ctx.fuse_grad_acc = norm_eps, fuse_grad_acc
        return out

    @staticmethod
    def backward(ctx, out_grad):
        x, fn_r, mul, sq = ctx.saved_tensors
        x_grad, fn_grad = _x_and_fn_grads(x, fn_r, mul, sq, out_grad, ctx.norm_eps, ctx.fuse_grad_acc)
        return x_grad, fn_grad, None, None, None


def _setup(ctx, a, results):
    _, fn_r, mul, sq = results
    ctx.mark_non_differentiable(fn_r, mul, sq)
    fn, normw = a["mhc_fn"], a["mhc_norm_weight"]
    ctx.save_for_backward(a["residual"], fn_r, mul, sq, fn, normw)
    ctx.norm_eps, ctx.fuse_grad_acc = float(a["mhc_norm_eps"]), a["fuse_grad_acc"]
    ctx.fn_main_grad = getattr(fn, "main_grad", None) if normw is not None else None
    ctx.normw_main_grad = getattr(normw, "main_grad", None) if normw is not None else None


def _grads(ctx, grads):
    """The residual's gradient and that of the merged weight fn' = fn * normw (fn's itself
    without a norm weight); with one, through the product column by column: fn_grad += g * normw, normw_grad[c] += sum over rows j of g[j, c] fn[j, c],
    added into the parameters' ``main_grad`` where they have one (None is then returned for
    them), else into fresh zero buffers."""
    x, fn_r, mul, sq, fn, normw = ctx.saved_tensors
    x_grad, g = _x_and_fn_grads(x, fn_r, mul, sq, grads[0], ctx.norm_eps, ctx.fuse_grad_acc)
    if normw is None:
        return {"residual": x_grad, "mhc_fn": g}
    fn_grad = ctx.fn_main_grad if ctx.fn_main_grad is not None else torch.zeros_like(fn)
    normw_grad = ctx.normw_main_grad if ctx.normw_main_grad is not None else torch.zeros_like(normw)
    fn_grad.addcmul_(g, normw)
    normw_grad.add_((g * fn).sum(0))
    return {"residual": x_grad, "mhc_fn": None if ctx.fn_main_grad is not None else fn_grad,
            "mhc_norm_weight": None if ctx.normw_main_grad is not None else normw_grad}


def _check_norm_fn(fn_name, residual, mhc_fn, mhc_norm_weight, n_splits):
    check_tensor(fn_name, "residual", residual, torch.bfloat16, min_dim=2)
    m, H = residual.shape[-2], residual.shape[-1]
    check_tensor(fn_name, "mhc_fn", mhc_fn, torch.float32, dim=2)
    if mhc_fn.shape[-1] != m * H:
        raise ValueError(f"{fn_name}: mhc_fn must have mhc_mult * hidden_size = {m * H} columns (residual "
                         f"{tuple(residual.shape)}), got {tuple(mhc_fn.shape)}")
    if not 1 <= mhc_fn.shape[0] <= MAX_MIXES:
        raise ValueError(f"{fn_name}: mhc_fn must have 1 to {MAX_MIXES} rows (mhc_mult * (mhc_mult + 2), so "
                         f"mhc_mult <= 4), got {mhc_fn.shape[0]}")
    if mhc_norm_weight is not None:
        check_tensor(fn_name, "mhc_norm_weight", mhc_norm_weight, torch.float32, dim=1)
        check_shape(fn_name, "mhc_norm_weight", mhc_norm_weight, (m * H,), "(mhc_mult * hidden_size,)")
    check_int(fn_name, "n_splits", n_splits, 1)
    check_device(fn_name, residual=residual, mhc_fn=mhc_fn, mhc_norm_weight=mhc_norm_weight)


@kernel_op(returns="tensor", saves=3, autograd=(_setup, _grads))
def mhc_pre_norm_fn(residual: torch.Tensor, mhc_fn: torch.Tensor, mhc_norm_weight: Optional[torch.Tensor],
                    mhc_norm_eps: float, fuse_grad_acc: bool = True, n_splits: int = 16) -> torch.Tensor:
    """The mixes (..., M3) f32 of the residual (..., m, H) bf16 contiguous: the projection of the
    flattened residual X (T, m H) on mhc_fn (M3, m H) f32 (times mhc_norm_weight (m H,) column by
    column when given), read as TF32, times rsqrt(sum of X^2 / (m H) + mhc_norm_eps) (spec §3.7).
    n_splits: the split of the projection along m H (any positive count, honoured; the result's
    rounding depends on it). Differentiable in the residual, mhc_fn and mhc_norm_weight (backward:
    tilec::mhc_pre_norm_fn_bwd); see MHCPreNormFn for fuse_grad_acc. The op tilec::mhc_pre_norm_fn
    also returns fn_r, the projection and the sums of squares, for the backward."""
    fn = "mhc_pre_norm_fn"
    _check_norm_fn(fn, residual, mhc_fn, mhc_norm_weight, n_splits)
    eps = check_float(fn, "mhc_norm_eps", mhc_norm_eps)
    check_bool(fn, "fuse_grad_acc", fuse_grad_acc)
    if mhc_norm_weight is not None:
        mhc_fn = mhc_fn * mhc_norm_weight
    out, fn_r, mul, sq = _forward(residual, mhc_fn, eps, n_splits)
    return out, (fn_r, mul, sq)
