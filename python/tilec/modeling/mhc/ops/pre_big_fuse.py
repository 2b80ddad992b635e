"""mhc_pre_big_fuse (spec moe-engram-mhc.md §3.8)."""
from typing import Tuple

import torch

from ...._ops import kernel_op
from ....mhc._common import check_float, check_int, check_shape, check_tensor, launch
from ....mhc.norm_fn_kernel import _fwd_mul, round_to_tf32
from .norm_fn import _check_norm_fn


@kernel_op()
def mhc_pre_big_fuse(residual: torch.Tensor, fn: torch.Tensor, mhc_scale: torch.Tensor, mhc_base: torch.Tensor,
                     rms_eps: float, mhc_pre_eps: float, mhc_sinkhorn_eps: float, mhc_post_mult_value: float,
                     sinkhorn_repeat: int, n_splits: int = 16) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(post_mix (..., m, 1) f32, comb_mix (..., m, m) f32, layer_input (..., H) bf16) of the
    residual (..., m, H) in two kernels, bit for bit those of mhc_pre_norm_fn(residual, fn, None,
    rms_eps, fuse_grad_acc=False, n_splits) -> mhc_pre_split_mixes(..., m, mhc_post_mult_value,
    mhc_pre_eps) -> sinkhorn_normalize(comb, sinkhorn_repeat, mhc_sinkhorn_eps) ->
    mhc_pre_apply_mix(residual, pre): the projection kernel of norm_fn with the same splits, then
    one kernel a token for the rest, each piece through the fn the single ops use (spec §3.8).
    Inference: no autograd."""
    name = "mhc_pre_big_fuse"
    _check_norm_fn(name, residual, fn, None, n_splits)
    if residual.dim() < 3:
        raise ValueError(f"{name}: residual must be (..., mhc_mult, hidden_size) with a token dimension, got "
                         f"{tuple(residual.shape)}")
    *lead, m, H = residual.shape
    M3 = m * (m + 2)
    if fn.shape[0] != M3:
        raise ValueError(f"{name}: fn must have mhc_mult * (mhc_mult + 2) = {M3} rows, got {fn.shape[0]}")
    check_tensor(name, "mhc_scale", mhc_scale, torch.float32)
    check_shape(name, "mhc_scale", mhc_scale, (3,), "(3,)")
    check_tensor(name, "mhc_base", mhc_base, torch.float32)
    check_shape(name, "mhc_base", mhc_base, (M3,), "(mhc_mult * (mhc_mult + 2),)")
    eps = [check_float(name, n, v) for n, v in (("rms_eps", rms_eps), ("mhc_pre_eps", mhc_pre_eps),
                                                ("mhc_sinkhorn_eps", mhc_sinkhorn_eps),
                                                ("mhc_post_mult_value", mhc_post_mult_value))]
    check_int(name, "sinkhorn_repeat", sinkhorn_repeat, 1)
    K = m * H
    x = residual.view(-1, K)
    T = x.shape[0]
    post = residual.new_empty((*lead, m, 1), dtype=torch.float32)
    comb = residual.new_empty((*lead, m, m), dtype=torch.float32)
    out = residual.new_empty((*lead, H))
    with torch.no_grad():
        mul_part, sq_part = _fwd_mul(x, round_to_tf32(fn.detach()), n_splits)
        if T:
            launch("mhc_big_fuse", (f"M={m}", "BH=512"), residual, mul_part, sq_part, mhc_scale, mhc_base,
                   residual.view(T, m, H), post.view(T, m), comb.view(T, m, m), out.view(T, H), float(K), eps[0],
                   eps[1], eps[2], eps[3], sinkhorn_repeat)
    return post, comb, out
