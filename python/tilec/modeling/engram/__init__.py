"""The Engram gate as an autograd layer (TileKernels ``tile_kernels.modeling.engram``, spec
moe-engram-mhc.md §4)."""
from .engram_gate import engram_gate, EngramGateFn

__all__ = ["engram_gate", "EngramGateFn"]
