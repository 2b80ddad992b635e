"""The mHC functional layer (spec moe-engram-mhc.md §3.10)."""
import torch

from .ops.expand import _check_expand, expand_to_mhc


def expand_from_embedding(x: torch.Tensor, mhc_mult: int = 4) -> torch.Tensor:
    """The residual (..., mhc_mult, H) of an embedding (..., H): expand_to_mhc(x, mhc_mult)."""
    _check_expand("expand_from_embedding", "x", x, mhc_mult, None)
    return expand_to_mhc(x, mhc_mult)
