"""The per-channel cast (spec quant-transpose.md §2.12): one e4m3 scale per 128 tokens of each
channel, the plain case of per_channel_cast_fused."""
import torch

from .._ops import kernel_op

from .._checks import check_int
from .common import FLOAT_IN, check_flags, check_x2d
from .per_channel_cast_fused_kernel import per_channel_cast_fused


@kernel_op()
def per_channel_cast(x: torch.Tensor, fmt: str, num_per_tokens: int, round_sf: bool = False):
    """e4m3 cast with one scale per 128 tokens of each channel: x bf16/f32 contiguous (T, H) with
    T % 128 == 0 and H % 64 == 0. Returns (out (T, H), sf f32 (T / 128, H))."""
    fn = "per_channel_cast"
    if fmt != "e4m3":
        raise ValueError(f"{fn}: fmt must be 'e4m3', got {fmt!r}")
    check_flags(fn, round_sf=round_sf)
    check_x2d(x, fn)
    if x.dtype not in FLOAT_IN:
        raise ValueError(f"{fn}: x must be bfloat16 or float32, got {x.dtype}")
    check_int(fn, "num_per_tokens", num_per_tokens)
    if num_per_tokens != 128:
        raise ValueError(f"{fn}: num_per_tokens must be 128, got {num_per_tokens}")
    T, H = x.shape
    if T % 128:
        raise ValueError(f"{fn}: num_tokens must be a multiple of 128, got {T}")
    if H % 64:
        raise ValueError(f"{fn}: hidden must be a multiple of 64, got {H}")
    return per_channel_cast_fused(x, "e4m3", num_per_tokens=num_per_tokens, round_sf=round_sf)
