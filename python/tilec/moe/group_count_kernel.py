"""The histogram of group indices (spec moe-engram-mhc.md §1.10)."""
import torch

from .common import SINGLE_HISTOGRAM, check_tensor, histogram


def group_count(group_idx: torch.Tensor, num_groups: int) -> torch.Tensor:
    """int32 (num_groups,) counts of each value of ``group_idx`` (-1 ignored; other values must
    lie in [0, num_groups))."""
    fn = "group_count"
    check_tensor(fn, "group_idx", group_idx, (torch.int64,), 2)
    if not 1 <= num_groups <= 8192:
        raise ValueError(f"{fn}: num_groups must be in [1, 8192], got {num_groups}")
    T, K = group_idx.shape
    if T * K == 0:
        return torch.zeros(num_groups, dtype=torch.int32, device=group_idx.device)
    single = T * K <= SINGLE_HISTOGRAM
    out = (torch.empty if single else torch.zeros)(num_groups, dtype=torch.int32, device=group_idx.device)
    histogram(fn, group_idx, num_groups, out, None, 1.0)
    return out
