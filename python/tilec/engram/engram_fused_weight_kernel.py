"""The fused RMSNorm weight of the Engram gate (spec moe-engram-mhc.md §2.2)."""
import torch

from .. import _runtime
from .._ops import kernel_op
from .common import check_shape, check_tensor


@kernel_op(returns="tensor")
def fused_weight(weight_hidden: torch.Tensor, weight_embed: torch.Tensor) -> torch.Tensor:
    """f32 (hc, D) = f32(weight_hidden) * f32(weight_embed), exact (a product of two bf16 values
    fits an f32). Both bf16 (hc, D) contiguous; any D (TileKernels: a multiple of 256)."""
    fn = "fused_weight"
    check_tensor(fn, "weight_hidden", weight_hidden, (torch.bfloat16,), 2)
    check_tensor(fn, "weight_embed", weight_embed, (torch.bfloat16,), 2)
    check_shape(fn, "weight_embed", weight_embed, weight_hidden.shape, "(hc_mult, hidden_size)", "weight_hidden")
    hc, D = weight_hidden.shape
    out = torch.empty((hc, D), dtype=torch.float32, device=weight_hidden.device)
    if hc * D == 0:
        return out
    _runtime.kernel("engram_fused_weight", (), weight_hidden).launch(
        weight_hidden, weight_embed, out, stream=_runtime.stream(weight_hidden))
    return out
