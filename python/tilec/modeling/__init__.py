"""Autograd layers over the kernel families (TileKernels ``tile_kernels.modeling``, spec
moe-engram-mhc.md §3.10, §4): ``engram`` (the Engram gate) and ``mhc`` (the manifold
hyper-connection's ops and functional layer)."""
from . import engram, mhc

__all__ = ["engram", "mhc"]
