"""Quantisation (TileKernels ``tile_kernels.quant``): per-token, per-block and per-channel casts
to FP8 e4m3, packed FP4 e2m1 and E5M6 with scales in three layouts, dequantisation, and the
SwiGLU-fused casts (spec quant-transpose.md). One module per function family, under TileKernels'
module names. Every argument is checked before a launch; a violated precondition raises
ValueError (NotImplementedError for supported-elsewhere options) naming the argument and the
rule."""
from . import common, types
from .swiglu_forward_and_per_channel_cast_and_transpose_kernel import swiglu_forward_and_per_channel_cast_and_transpose
from .per_channel_cast_kernel import per_channel_cast
from .per_channel_cast_fused_kernel import per_channel_cast_fused
from .per_channel_cast_and_transpose_kernel import per_channel_cast_and_transpose
from .swiglu_forward_and_per_token_cast_kernel import swiglu_forward_and_per_token_cast
from .swiglu_backward_and_per_token_cast_kernel import swiglu_backward_and_per_token_cast
from .common import unpack_from_e2m1fn_x2
from .per_token_cast_kernel import per_token_cast, per_token_cast_with_precomputed_sf, per_token_cast_with_sf_only
from .per_block_cast_kernel import per_block_cast, per_block_cast_with_precomputed_sf, per_block_cast_with_sf_only
from .cast_back_kernel import cast_back, per_token_cast_back
from .per_block_cast_lossless_kernel import per_block_cast_lossless
from .types import QuantTensor

__all__ = ["per_token_cast", "per_token_cast_with_sf_only", "per_token_cast_with_precomputed_sf", "per_block_cast",
           "per_block_cast_with_sf_only", "per_block_cast_with_precomputed_sf", "per_block_cast_lossless",
           "cast_back", "per_token_cast_back", "per_channel_cast", "per_channel_cast_fused",
           "per_channel_cast_and_transpose", "swiglu_forward_and_per_token_cast",
           "swiglu_forward_and_per_channel_cast_and_transpose", "swiglu_backward_and_per_token_cast",
           "unpack_from_e2m1fn_x2", "QuantTensor"]
