"""Autograd layers over the kernel families (TileKernels ``tile_kernels.modeling``, spec
moe-engram-mhc.md §3.10, §4): ``engram`` (the Engram gate); ``mhc`` joins it with its family."""
from . import engram

__all__ = ["engram"]
