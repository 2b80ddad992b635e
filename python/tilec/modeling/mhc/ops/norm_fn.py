"""mhc_pre_norm_fn (spec moe-engram-mhc.md §3.7)."""
from typing import Optional

import torch

from ....mhc._common import check_bool, check_device, check_float, check_int, check_shape, check_tensor
from ....mhc.norm_fn_kernel import MAX_MIXES, _bwd, _fwd_mul, _fwd_norm, round_to_tf32


class _MHCFnNormwMerge(torch.autograd.Function):
    """fn' = fn * normw column by column. The gradients go into the parameters' ``main_grad``
    where they have one (and None is returned for them), else into fresh zero buffers:
    fn_grad += g * normw, normw_grad[c] += sum over rows j of g[j, c] * fn[j, c]."""

    @staticmethod
    def forward(ctx, fn, normw):
        ctx.fn_main_grad = getattr(fn, "main_grad", None)
        ctx.normw_main_grad = getattr(normw, "main_grad", None)
        ctx.save_for_backward(fn, normw)
        return fn * normw

    @staticmethod
    def backward(ctx, g):
        fn, normw = ctx.saved_tensors
        fn_grad = ctx.fn_main_grad if ctx.fn_main_grad is not None else torch.zeros_like(fn)
        normw_grad = ctx.normw_main_grad if ctx.normw_main_grad is not None else torch.zeros_like(normw)
        fn_grad.addcmul_(g, normw)
        normw_grad.add_((g * fn).sum(0))
        return (None if ctx.fn_main_grad is not None else fn_grad,
                None if ctx.normw_main_grad is not None else normw_grad)


class MHCPreNormFn(torch.autograd.Function):
    """The RMS-normalised projection of the flattened residual x (..., m, H) on fn (M3, m H):
    out = (X fn_r^T) * rsqrt(sum X^2 / K + eps), fn_r = round_to_tf32(fn), on the TF32 tensor
    cores split along K into n_splits parts. Saves x, fn_r, the projection and the sums of
    squares. Backward: the residual's gradient is added in place into grad_from_mhc_post when
    fuse_grad_acc and x's storage has it (the attribute is then deleted and None returned for x);
    otherwise into a zero buffer that is returned. fn's gradient is straight through the rounding."""

    @staticmethod
    def forward(ctx, x, fn, norm_eps, fuse_grad_acc, n_splits):
        M3, K = fn.shape
        lead = x.shape[:-2]
        xt = x.view(-1, K)
        fn_r = round_to_tf32(fn)
        mul_part, sq_part = _fwd_mul(xt, fn_r, n_splits)
        mul, sq, out = _fwd_norm(mul_part, sq_part, M3, K, norm_eps)
        ctx.save_for_backward(x, fn_r, mul, sq)
        ctx.norm_eps, ctx.fuse_grad_acc = norm_eps, fuse_grad_acc
        return out.view(*lead, M3)

    @staticmethod
    def backward(ctx, out_grad):
        x, fn_r, mul, sq = ctx.saved_tensors
        M3, K = fn_r.shape
        storage = x.untyped_storage()
        buf = getattr(storage, "grad_from_mhc_post", None) if ctx.fuse_grad_acc else None
        fused = buf is not None
        if fused:
            if not isinstance(buf, torch.Tensor) or buf.dtype != torch.bfloat16 or buf.numel() != x.numel() \
                    or not buf.is_contiguous():
                raise ValueError("mhc_pre_norm_fn: the grad_from_mhc_post buffer on the residual's storage must be a "
                                 f"contiguous bf16 tensor of the residual's {x.numel()} elements")
            buf = buf.view(x.shape)
        else:
            buf = torch.zeros_like(x)
        fn_grad = _bwd(out_grad.contiguous().view(-1, M3), mul, sq, x.view(-1, K), fn_r, buf.view(-1, K),
                       ctx.norm_eps)
        if fused:
            del storage.grad_from_mhc_post
            return None, fn_grad, None, None, None
        return buf, fn_grad, None, None, None


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


def mhc_pre_norm_fn(residual: torch.Tensor, mhc_fn: torch.Tensor, mhc_norm_weight: Optional[torch.Tensor],
                    mhc_norm_eps: float, fuse_grad_acc: bool = True, n_splits: int = 16) -> torch.Tensor:
    """The mixes (..., M3) f32 of the residual (..., m, H) bf16 contiguous: the projection of the
    flattened residual X (T, m H) on mhc_fn (M3, m H) f32 (times mhc_norm_weight (m H,) column by
    column when given), read as TF32, times rsqrt(sum of X^2 / (m H) + mhc_norm_eps) (spec §3.7).
    n_splits: the split of the projection along m H (any positive count, honoured; the result's
    rounding depends on it). Differentiable in the residual, mhc_fn and mhc_norm_weight; see
    MHCPreNormFn for fuse_grad_acc."""
    fn = "mhc_pre_norm_fn"
    _check_norm_fn(fn, residual, mhc_fn, mhc_norm_weight, n_splits)
    eps = check_float(fn, "mhc_norm_eps", mhc_norm_eps)
    check_bool(fn, "fuse_grad_acc", fuse_grad_acc)
    if mhc_norm_weight is not None:
        mhc_fn = _MHCFnNormwMerge.apply(mhc_fn, mhc_norm_weight)
    return MHCPreNormFn.apply(residual, mhc_fn, eps, fuse_grad_acc, n_splits)
