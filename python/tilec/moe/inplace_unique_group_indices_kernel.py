"""Repeated group indices of a row removed in place (spec moe-engram-mhc.md §1.8)."""
from typing import Optional

import torch

from .. import _runtime
from .._ops import kernel_op
from ..utils import align
from .common import check_int, check_tensor, invalid_counter, present


@kernel_op(mutates=("group_indices", "invalid_count"), returns="none")
def inplace_unique_group_indices(group_indices: torch.Tensor, num_groups: int, *, invalid_count: Optional[torch.Tensor] = None) -> None:
    """In place: an entry >= 0 that repeats an earlier entry of its row becomes -1. Values are -1
    or in [0, align(num_groups, 64)); any other value becomes -1 too, counted into
    ``invalid_count`` when given (checked on the device: no synchronisation)."""
    fn = "inplace_unique_group_indices"
    check_tensor(fn, "group_indices", group_indices, (torch.int64,), 2)
    check_int(fn, "num_groups", num_groups, 1, 128)
    invalid = invalid_counter(fn, invalid_count, group_indices, group_indices=group_indices)
    T, K = group_indices.shape
    if T * K == 0:
        return None
    gens = (f"K={K}", present("invalid", invalid))
    _runtime.kernel("inplace_unique_group_indices", gens, group_indices).launch(
        group_indices, invalid, align(num_groups, 64), stream=_runtime.stream(group_indices))
    return None
