"""SwiGLU fused with the transposing per-channel cast (spec quant-transpose.md §2.16), launched
by common.transpose_cast."""
from typing import Optional

import torch

from .._ops import kernel_op

from .common import transpose_cast


@kernel_op()
def swiglu_forward_and_per_channel_cast_and_transpose(x: torch.Tensor, fmt: str, num_per_tokens: int,
                                                      round_sf: bool = False, without_transpose: bool = False,
                                                      swiglu_clamp_value: Optional[float] = None):
    """SwiGLU of x's halves (gate, value), rounded to bf16, then the per-channel e4m3 cast of
    :func:`per_channel_cast_and_transpose` (out (Hh, T), or (T, Hh) with ``without_transpose``)."""
    fn = "swiglu_forward_and_per_channel_cast_and_transpose"
    if fmt != "e4m3":
        raise ValueError(f"{fn}: fmt must be 'e4m3', got {fmt!r}")
    return transpose_cast(x, num_per_tokens, round_sf, without_transpose, swiglu_clamp_value, True, fn)
