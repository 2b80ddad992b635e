"""The load-balance frequencies of the experts (spec moe-engram-mhc.md §1.9)."""
from typing import Optional

import torch

from .._ops import kernel_op

from .common import SINGLE_HISTOGRAM, check_int, check_tensor, histogram, invalid_counter


@kernel_op(mutates=("invalid_count",), returns="tensor")
def aux_fi(topk_idx: torch.Tensor, num_experts: int, num_aux_topk: int, *, invalid_count: Optional[torch.Tensor] = None) -> torch.Tensor:
    """f32 (E,) load-balance frequencies ``count_e * E / (T * num_aux_topk)`` (-1 ignored; other
    values outside [0, E) ignored and counted into ``invalid_count`` when given). Exact (one
    division) for small inputs; larger ones add per-block fractions atomically, as TileKernels
    does, so the last bits may vary from run to run."""
    fn = "aux_fi"
    check_tensor(fn, "topk_idx", topk_idx, (torch.int64,), 2)
    E = check_int(fn, "num_experts", num_experts, 1, 8192)
    check_int(fn, "num_aux_topk", num_aux_topk, 1)
    invalid = invalid_counter(fn, invalid_count, topk_idx, topk_idx=topk_idx)
    T, K = topk_idx.shape
    if T * K == 0:
        return torch.zeros(E, dtype=torch.float32, device=topk_idx.device)
    single = T * K <= SINGLE_HISTOGRAM
    out = (torch.empty if single else torch.zeros)(E, dtype=torch.float32, device=topk_idx.device)
    histogram(fn, topk_idx, E, None, out, float(T * num_aux_topk), invalid)
    return out
