"""Repeated group indices of a row removed in place (spec moe-engram-mhc.md §1.8)."""
import torch

from .. import _runtime
from ..utils import align
from .common import check_tensor


def inplace_unique_group_indices(group_indices: torch.Tensor, num_groups: int) -> None:
    """In place: an entry >= 0 that repeats an earlier entry of its row becomes -1. Values must be
    -1 or in [0, align(num_groups, 64)) (checked on the device)."""
    fn = "inplace_unique_group_indices"
    check_tensor(fn, "group_indices", group_indices, (torch.int64,), 2)
    if not 1 <= num_groups <= 128:
        raise ValueError(f"{fn}: num_groups must be in [1, 128], got {num_groups}")
    T, K = group_indices.shape
    if T * K == 0:
        return None
    _runtime.kernel("inplace_unique_group_indices", (f"K={K}",), group_indices).launch(group_indices, align(num_groups, 64),
                                                                 stream=_runtime.stream(group_indices))
    return None
