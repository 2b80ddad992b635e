"""mhc_pre_norm_fn's pieces (spec moe-engram-mhc.md §3.7). round_to_tf32 is here as in
TileKernels; the kernels of the projection join it with the TF32 gemm."""
import torch


def round_to_tf32(x: torch.Tensor) -> torch.Tensor:
    """The f32 tensor x with 0x1000 added to its bits as int32 (spec §3.7): the 19 high bits are x
    rounded to TF32 to nearest, ties away from zero; the 13 low ones are what the addition leaves,
    ignored by a TF32 tensor-core operation. A new tensor of x's shape."""
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float32:
        got = type(x).__name__ if not isinstance(x, torch.Tensor) else str(x.dtype).replace("torch.", "")
        raise ValueError(f"round_to_tf32: x must be a float32 tensor, got {got}")
    return (x.contiguous().view(torch.int32) + 0x1000).view(torch.float32)
