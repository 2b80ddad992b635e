"""The mHC functional layer (TileKernels ``tile_kernels.modeling.mhc``, spec moe-engram-mhc.md
§3.10) over the ops of ``tilec.modeling.mhc.ops``."""
from . import ops
from .functional import expand_from_embedding

__all__ = ["ops", "expand_from_embedding"]
