"""The top-k gate over expert scores (spec moe-engram-mhc.md §1.2)."""
import torch

from .. import _runtime
from .._ops import kernel_op
from .common import check_int, check_tensor


@kernel_op(returns="tensor")
def topk_gate(scores: torch.Tensor, num_topk: int) -> torch.Tensor:
    """The ``num_topk`` best experts of each row of f32 ``scores`` (T, E), as int64 (T, num_topk)
    in rank order: descending score, ties to the smaller index (a stable descending sort)."""
    fn = "topk_gate"
    check_tensor(fn, "scores", scores, (torch.float32,), 2)
    T, E = scores.shape
    check_int(fn, "num_topk", num_topk)
    if not 1 <= num_topk <= E:
        raise ValueError(f"{fn}: num_topk must be in [1, {E}] (the number of experts), got {num_topk}")
    if E > 1024:
        raise ValueError(f"{fn}: at most 1024 experts, got {E}")
    out = torch.empty((T, num_topk), dtype=torch.int64, device=scores.device)
    if T == 0:
        return out
    _runtime.kernel("topk_gate", (f"E={E}", f"K={num_topk}"), scores).launch(scores, out, stream=_runtime.stream(scores))
    return out
