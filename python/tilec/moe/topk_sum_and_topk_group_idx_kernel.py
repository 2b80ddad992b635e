"""The best expert groups of each token (spec moe-engram-mhc.md §1.3): a group scores its
maximum or the sum of its two largest scores."""
import torch

from .. import _runtime
from .._ops import kernel_op
from .common import check_int, check_tensor


@kernel_op(returns="tensor")
def topk_sum_and_topk_group_idx(scores: torch.Tensor, num_topk_sum: int, num_topk_groups: int) -> torch.Tensor:
    """For f32 ``scores`` (T, G, P): the ``num_topk_groups`` best groups of each row in rank order,
    a group's score being its maximum (num_topk_sum 1) or the sum of its two largest scores (2)."""
    fn = "topk_sum_and_topk_group_idx"
    check_tensor(fn, "scores", scores, (torch.float32,), 3)
    T, G, P = scores.shape
    check_int(fn, "num_topk_sum", num_topk_sum)
    check_int(fn, "num_topk_groups", num_topk_groups)
    if num_topk_sum not in (1, 2):
        raise ValueError(f"{fn}: num_topk_sum must be 1 or 2, got {num_topk_sum}")
    if num_topk_sum > P:
        raise ValueError(f"{fn}: num_topk_sum ({num_topk_sum}) cannot exceed the group size ({P})")
    if G > 32:
        raise ValueError(f"{fn}: at most 32 groups, got {G}")
    if not 1 <= num_topk_groups <= G:
        raise ValueError(f"{fn}: num_topk_groups must be in [1, {G}] (the number of groups), got {num_topk_groups}")
    out = torch.empty((T, num_topk_groups), dtype=torch.int64, device=scores.device)
    if T == 0:
        return out
    gens = (f"G={G}", f"P={P}", f"NS={num_topk_sum}", f"NK={num_topk_groups}")
    _runtime.kernel("topk_sum_and_topk_group_idx", gens, scores).launch(scores, out, stream=_runtime.stream(scores))
    return out
