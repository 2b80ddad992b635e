"""Routing indices restricted to one TP rank's experts, renumbered densely (spec moe-engram-mhc.md
§1.11)."""
import torch

from .. import _runtime
from .._ops import kernel_op
from .common import check_int, check_tensor

_INT_NAMES = {torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64", torch.uint8: "u8"}


@kernel_op(returns="tensor")
def mask_indices_by_tp(indices: torch.Tensor, n: int, num_ep_ranks: int, tp_rank: int,
                       num_tp_ranks: int) -> torch.Tensor:
    """Keeps the experts of the EP ranks that belong to TP rank ``tp_rank`` (EP rank r with
    r mod num_tp_ranks == tp_rank; ``n // num_ep_ranks`` experts per EP rank) and renumbers them
    densely; every other entry (and every negative one) becomes -1. Same dtype as ``indices``."""
    fn = "mask_indices_by_tp"
    check_tensor(fn, "indices", indices, tuple(_INT_NAMES), 2)
    for name, v in (("n", n), ("num_ep_ranks", num_ep_ranks), ("tp_rank", tp_rank), ("num_tp_ranks", num_tp_ranks)):
        check_int(fn, name, v)
    if num_ep_ranks < 1 or n // num_ep_ranks < 1:
        raise ValueError(f"{fn}: n // num_ep_ranks (experts per EP rank) must be positive, got n={n}, "
                         f"num_ep_ranks={num_ep_ranks}")
    if num_tp_ranks < 1 or not 0 <= tp_rank < num_tp_ranks:
        raise ValueError(f"{fn}: tp_rank must be in [0, num_tp_ranks), got {tp_rank} of {num_tp_ranks}")
    out = torch.empty_like(indices)
    N = indices.numel()
    if N == 0:
        return out
    # the experts per EP rank and the TP rank count are compile-time in the kernel (divisions by
    # constants); the few pairs a model uses compile once each
    _runtime.kernel("mask_indices_by_tp", (f"V={_INT_NAMES[indices.dtype]}", f"R={n // num_ep_ranks}",
                                   f"NTP={int(num_tp_ranks)}"), indices).launch(
        indices.view(N), out.view(N), int(tp_rank), stream=_runtime.stream(indices))
    return out
