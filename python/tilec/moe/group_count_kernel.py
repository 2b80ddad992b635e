"""The histogram of group indices (spec moe-engram-mhc.md §1.10)."""
from typing import Optional

import torch

from .._ops import kernel_op

from .common import SINGLE_HISTOGRAM, check_int, check_tensor, histogram, invalid_counter


@kernel_op(mutates=("invalid_count",), returns="tensor")
def group_count(group_idx: torch.Tensor, num_groups: int, *, invalid_count: Optional[torch.Tensor] = None) -> torch.Tensor:
    """int32 (num_groups,) counts of each value of ``group_idx``; -1 is ignored, and so is any
    other value outside [0, num_groups), which is counted into ``invalid_count`` when given (a
    one-element int32 tensor the kernel adds to)."""
    fn = "group_count"
    check_tensor(fn, "group_idx", group_idx, (torch.int64,), 2)
    check_int(fn, "num_groups", num_groups, 1, 8192)
    invalid = invalid_counter(fn, invalid_count, group_idx, group_idx=group_idx)
    T, K = group_idx.shape
    if T * K == 0:
        return torch.zeros(num_groups, dtype=torch.int32, device=group_idx.device)
    single = T * K <= SINGLE_HISTOGRAM
    out = (torch.empty if single else torch.zeros)(num_groups, dtype=torch.int32, device=group_idx.device)
    histogram(fn, group_idx, num_groups, out, None, 1.0, invalid)
    return out
