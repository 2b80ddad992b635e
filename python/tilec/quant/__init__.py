"""Quantisation (TileKernels ``tile_kernels.quant``): per-token, per-block and per-channel casts
to FP8 e4m3, packed FP4 e2m1 and E5M6 with scales in three layouts, dequantisation, and the
SwiGLU-fused casts (spec quant-transpose.md). Every argument is checked before a launch; a
violated precondition raises ValueError (NotImplementedError for supported-elsewhere options)
naming the argument and the rule."""
from . import common, types
from .cast_back import cast_back, per_token_cast_back
from .per_block import (per_block_cast, per_block_cast_lossless, per_block_cast_with_precomputed_sf,
                        per_block_cast_with_sf_only)
from .per_channel import (per_channel_cast, per_channel_cast_and_transpose, per_channel_cast_fused,
                          swiglu_forward_and_per_channel_cast_and_transpose)
from .per_token import (per_token_cast, per_token_cast_to_e5m6, per_token_cast_with_precomputed_sf,
                        per_token_cast_with_sf_only)
from .swiglu import swiglu_backward_and_per_token_cast, swiglu_forward_and_per_token_cast
from .types import QuantTensor
from ..torch.quant import unpack_from_e2m1fn_x2

__all__ = ["per_token_cast", "per_token_cast_with_sf_only", "per_token_cast_with_precomputed_sf", "per_block_cast",
           "per_block_cast_with_sf_only", "per_block_cast_with_precomputed_sf", "per_block_cast_lossless",
           "cast_back", "per_token_cast_back", "per_channel_cast", "per_channel_cast_fused",
           "per_channel_cast_and_transpose", "swiglu_forward_and_per_token_cast",
           "swiglu_forward_and_per_channel_cast_and_transpose", "swiglu_backward_and_per_token_cast",
           "unpack_from_e2m1fn_x2", "QuantTensor"]
