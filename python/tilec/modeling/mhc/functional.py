"""The mHC functional layer (spec moe-engram-mhc.md §3.10)."""
from typing import Optional, Tuple

import torch
import torch.nn.functional as F

from ...mhc._common import check_device, check_float, check_int, check_mult, check_shape, check_tensor
from .ops.expand import _check_expand, expand_to_mhc
from .ops.head_compute_mix import mhc_head_compute_mix
from .ops.norm_fn import mhc_pre_norm_fn
from .ops.pre_apply_mix import mhc_pre_apply_mix
from .ops.pre_big_fuse import mhc_pre_big_fuse
from .ops.pre_split_mixes import mhc_pre_split_mixes
from .ops.sinkhorn import sinkhorn_normalize


def expand_from_embedding(x: torch.Tensor, mhc_mult: int = 4) -> torch.Tensor:
    """The residual (..., mhc_mult, H) of an embedding (..., H): expand_to_mhc(x, mhc_mult)."""
    _check_expand("expand_from_embedding", "x", x, mhc_mult, None)
    return expand_to_mhc(x, mhc_mult)


def _check_layer(name, residual, fn, scale, base, norm_weight, mhc_mult, fn_rows, scale_shape, base_len, floats,
                 n_splits):
    """The arguments of mhc_pre / mhc_head, checked under the layer's own name."""
    check_tensor(name, "residual", residual, torch.bfloat16, dim=4)
    m = check_mult(name, "mhc_mult", mhc_mult)
    if residual.shape[-2] != m:
        raise ValueError(f"{name}: residual must have mhc_mult = {m} streams (residual.shape[-2]), got "
                         f"{tuple(residual.shape)}")
    K = m * residual.shape[-1]
    check_tensor(name, "fn", fn, torch.float32, dim=2)
    if fn.shape[0] not in fn_rows or fn.shape[1] != K:
        raise ValueError(f"{name}: fn must have shape ({' or '.join(map(str, fn_rows))}, mhc_mult * hidden_size = "
                         f"{K}), got {tuple(fn.shape)}")
    check_tensor(name, "scale", scale, torch.float32, min_dim=0)
    if tuple(scale.shape) not in scale_shape:
        raise ValueError(f"{name}: scale must have shape {' or '.join(map(str, scale_shape))}, got {tuple(scale.shape)}")
    check_tensor(name, "base", base, torch.float32, dim=1)
    check_shape(name, "base", base, (base_len(m),), "(mhc_mult * (mhc_mult + 2),)" if base_len(m) != m else "(mhc_mult,)")
    if norm_weight is not None:
        check_tensor(name, "norm_weight", norm_weight, torch.float32, dim=1)
        check_shape(name, "norm_weight", norm_weight, (K,), "(mhc_mult * hidden_size,)")
    for n, v in floats.items():
        check_float(name, n, v)
    check_int(name, "n_splits", n_splits, 1)
    check_device(name, residual=residual, fn=fn, scale=scale, base=base, norm_weight=norm_weight)


def mhc_pre(residual: torch.Tensor, fn: torch.Tensor, scale: torch.Tensor, base: torch.Tensor, *,
            norm_weight: Optional[torch.Tensor] = None, norm_eps: float = 1e-6, mhc_mult: int = 4,
            post_mult_value: float = 1.0, pre_eps: float = 1e-6, sinkhorn_eps: float = 1e-6, sinkhorn_repeat: int = 10,
            n_splits: int = 16) -> Tuple[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
    """The mHC block in front of a sub-layer: (layer_input (..., H), (post_mix, comb_mix)) for
    mhc_post after it. residual (A, B, m, H) bf16, fn (M3, m H), scale (3,), base (M3,),
    norm_weight (m H,) or None. With gradients enabled: mhc_pre_norm_fn -> mhc_pre_split_mixes ->
    sinkhorn_normalize -> mhc_pre_apply_mix, differentiable; without: mhc_pre_big_fuse, the same
    bits, with norm_weight merged into fn first (TileKernels' first version ignored it there)."""
    m = mhc_mult
    M3 = m * (m + 2) if isinstance(m, int) else 0
    floats = {"norm_eps": norm_eps, "post_mult_value": post_mult_value, "pre_eps": pre_eps,
              "sinkhorn_eps": sinkhorn_eps}
    _check_layer("mhc_pre", residual, fn, scale, base, norm_weight, m, (M3,), ((3,),), lambda k: k * (k + 2), floats,
                 n_splits)
    check_int("mhc_pre", "sinkhorn_repeat", sinkhorn_repeat, 1)
    if not torch.is_grad_enabled():
        if norm_weight is not None:
            fn = fn * norm_weight
        post_mix, comb_mix, layer_input = mhc_pre_big_fuse(
            residual, fn, scale, base, rms_eps=norm_eps, mhc_pre_eps=pre_eps, mhc_sinkhorn_eps=sinkhorn_eps,
            mhc_post_mult_value=post_mult_value, sinkhorn_repeat=sinkhorn_repeat, n_splits=n_splits)
        return layer_input, (post_mix, comb_mix)
    mixes = mhc_pre_norm_fn(residual, fn, norm_weight, norm_eps, n_splits=n_splits)
    pre_mix, post_mix, comb_mix = mhc_pre_split_mixes(mixes, scale, base, mhc_mult, post_mult_value, pre_eps)
    comb_mix = sinkhorn_normalize(comb_mix, repeat=sinkhorn_repeat, eps=sinkhorn_eps)
    layer_input = mhc_pre_apply_mix(residual, pre_mix)
    return layer_input, (post_mix, comb_mix)


def mhc_head(residual: torch.Tensor, fn: torch.Tensor, scale: torch.Tensor, base: torch.Tensor, *,
             norm_weight: Optional[torch.Tensor] = None, norm_eps: float = 1e-6, mhc_mult: int = 4,
             pre_eps: float = 1e-6, n_splits: int = 16) -> torch.Tensor:
    """The language-model head's input (..., H) from the last residual (A, B, m, H): fn (m, m H)
    is padded with zero rows to (M3, m H) (differentiably), the first m mixes of
    mhc_pre_norm_fn go through mhc_head_compute_mix with scale (one element) and base (m,), and
    mhc_pre_apply_mix weights the streams. TileKernels' two latent faults are fixed: its backward
    needs no grad_from_mhc_post on the residual (nothing sets one there: a zero buffer is used and
    returned), and the mixes' slice is made contiguous before the head mix."""
    m = mhc_mult
    M3 = m * (2 + m) if isinstance(m, int) and not isinstance(m, bool) else 0
    _check_layer("mhc_head", residual, fn, scale, base, norm_weight, mhc_mult, (m, M3), ((1,), ()), lambda k: k,
                 {"norm_eps": norm_eps, "pre_eps": pre_eps}, n_splits)
    if fn.shape[0] < M3:
        fn = F.pad(fn, (0, 0, 0, M3 - fn.shape[0]))
    mixes = mhc_pre_norm_fn(residual, fn, norm_weight, norm_eps, n_splits=n_splits)
    mixes = mixes[..., :mhc_mult].contiguous()
    scale = scale.reshape(1)
    mix = mhc_head_compute_mix(mixes, scale, base, pre_eps)
    return mhc_pre_apply_mix(residual, mix.unsqueeze(-1))
