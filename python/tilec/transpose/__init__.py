"""Transposes (TileKernels ``tile_kernels.transpose``): bit copies for element types of 1, 2 or
4 bytes, through tiles in shared memory."""
from .batched_transpose_kernel import transpose, batched_transpose

__all__ = ["transpose", "batched_transpose"]
