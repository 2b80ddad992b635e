"""PyTorch reference implementations (``tile_kernels.torch``), written from the specification
(quant-transpose.md §3.1); the tests use them as oracles. Plain tensor code: any device."""
from .quant import (cast, cast_back, cast_back_from_e5m6, cast_to_e5m6, pack_to_e2m1fn_x2,
                    per_channel_cast_fused, unpack_from_e2m1fn_x2)
from .swiglu import swiglu_backward, swiglu_forward
from .transpose import batched_transpose, transpose

__all__ = ["cast", "cast_back", "cast_to_e5m6", "cast_back_from_e5m6", "per_channel_cast_fused",
           "unpack_from_e2m1fn_x2", "pack_to_e2m1fn_x2", "swiglu_forward", "swiglu_backward", "transpose",
           "batched_transpose"]
try:  # the MoE references live in their own module (added by the MoE family)
    from .moe import *  # noqa: F401,F403
except ImportError:
    pass
