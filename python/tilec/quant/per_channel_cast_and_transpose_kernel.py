"""The transposing per-channel cast (spec quant-transpose.md §2.14); its kernel, shared with the
SwiGLU variant, is launched by common.transpose_cast."""
import torch

from .._ops import kernel_op

from .common import transpose_cast


@kernel_op()
def per_channel_cast_and_transpose(x: torch.Tensor, fmt: str, num_per_tokens: int, round_sf: bool = False):
    """e4m3 cast with one scale per ``num_per_tokens`` (32 or 128) tokens of each channel, the
    data returned transposed: out (H, T), sf f32 (T / num_per_tokens, H). x bf16 contiguous,
    T % 128 == 0, H % 64 == 0."""
    fn = "per_channel_cast_and_transpose"
    if fmt != "e4m3":
        raise ValueError(f"{fn}: fmt must be 'e4m3', got {fmt!r}")
    return transpose_cast(x, num_per_tokens, round_sf, False, None, False, fn)
