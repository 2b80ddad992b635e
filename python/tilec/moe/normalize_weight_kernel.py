"""Top-k weights over their row sums (spec moe-engram-mhc.md §1.12)."""
from typing import Tuple

import torch

from .. import _runtime
from .._ops import kernel_op
from .common import check_tensor


@kernel_op()
def normalize_weight(topk_weights: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """(den (T,), topk_weights / den) with den = ((1e-20 + w0) + w1) + ... in order."""
    fn = "normalize_weight"
    check_tensor(fn, "topk_weights", topk_weights, (torch.float32,), 2)
    T, K = topk_weights.shape
    den = torch.empty(T, dtype=torch.float32, device=topk_weights.device)
    out = torch.empty((T, K), dtype=torch.float32, device=topk_weights.device)
    if T == 0:
        return den, out
    _runtime.kernel("normalize_weight", (f"K={K}",), topk_weights).launch(topk_weights, den, out, stream=_runtime.stream(topk_weights))
    return den, out
