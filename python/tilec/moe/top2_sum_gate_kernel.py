"""The group-limited top-K gate (spec moe-engram-mhc.md §1.1): scoring, group selection, weights,
the logical -> physical expert map and EP/TP masking."""
from typing import Optional, Tuple

import torch

from .. import _runtime
from .._ops import kernel_op
from .common import check_bool, check_float, check_int, check_no_overlap, check_tensor, invalid_counter, present
from .scoring import ScoringFunc


@kernel_op(mutates=("unmapped_topk_idx", "invalid_count"))
def top2_sum_gate(logits: torch.Tensor, bias: torch.Tensor, num_topk: int, num_topk_groups: int, num_groups: int,
                  use_shared_as_routed: bool, num_shared_experts: int, routed_scaling_factor: float,
                  ep_rank: int, num_ep_ranks: int, tp_rank: int, num_tp_ranks: int, scoring_func: str,
                  mask: Optional[torch.Tensor] = None, fix_routing_mask: Optional[torch.Tensor] = None,
                  to_physical_map: Optional[torch.Tensor] = None, logical_count: Optional[torch.Tensor] = None,
                  unmapped_topk_idx: Optional[torch.Tensor] = None, *,
                  invalid_count: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """Group-limited top-K gate (spec §1.1): returns (topk_idx int64, topk_weights f32), both
    (T, num_topk + S) with S shared-expert slots when ``use_shared_as_routed``. Scores: sigmoid,
    sqrt(softplus) or softmax; ranking on score + bias (softmax: logit + bias); with grouping the
    ``num_topk_groups`` groups with the largest top-2 sums are kept; weights are the picked
    scores over (1e-20 + their sum) times ``routed_scaling_factor``; then the optional logical ->
    physical map and EP/TP masking (-1 for experts of other TP ranks; weights kept). Rows whose
    ``mask`` is False get -1 / 0. ``unmapped_topk_idx`` (T, num_topk) receives the logical picks
    (and provides them for the rows of ``fix_routing_mask``). Checked on the device, with no
    synchronisation: a fixed index outside [0, E) and a ``logical_count`` outside [1, replicas]
    drop their slot (-1, weight 0) and are counted into ``invalid_count`` when given (a
    one-element int32 tensor the kernel adds to)."""
    fn = "top2_sum_gate"
    check_tensor(fn, "logits", logits, (torch.float32,), 2)
    check_tensor(fn, "bias", bias, (torch.float32,), 1)
    T, E = logits.shape
    for name, v in (("num_topk", num_topk), ("num_topk_groups", num_topk_groups), ("num_groups", num_groups),
                    ("num_shared_experts", num_shared_experts), ("ep_rank", ep_rank), ("num_ep_ranks", num_ep_ranks),
                    ("tp_rank", tp_rank), ("num_tp_ranks", num_tp_ranks)):
        check_int(fn, name, v)
    check_bool(fn, "use_shared_as_routed", use_shared_as_routed)
    check_float(fn, "routed_scaling_factor", routed_scaling_factor)
    if not isinstance(scoring_func, str):
        raise ValueError(f"{fn}: scoring_func must be a string (sigmoid, sqrtsoftplus or softmax), "
                         f"got {type(scoring_func).__name__}")
    K = num_topk
    if bias.shape[0] != E:
        raise ValueError(f"{fn}: bias must have {E} elements (one per expert), got {bias.shape[0]}")
    sf = ScoringFunc.from_str(scoring_func)
    if sf == ScoringFunc.IDENTITY:
        raise ValueError(f"{fn}: scoring_func 'identity' is not supported (sigmoid, sqrtsoftplus or softmax)")
    if E > 1024:
        raise ValueError(f"{fn}: at most 1024 experts, got {E}")
    if (num_groups == 0) != (num_topk_groups == 0):
        raise ValueError(f"{fn}: num_groups and num_topk_groups must both be 0 or both be positive, "
                         f"got {num_groups} and {num_topk_groups}")
    if not 1 <= K <= E:
        raise ValueError(f"{fn}: num_topk must be in [1, {E}] (the number of experts), got {K}")
    if K > 32:
        raise ValueError(f"{fn}: num_topk must be at most 32, got {K}")
    if num_topk_groups > num_groups:
        raise ValueError(f"{fn}: num_topk_groups ({num_topk_groups}) cannot exceed num_groups ({num_groups})")
    if num_groups and E % num_groups:
        raise ValueError(f"{fn}: the number of experts ({E}) must be a multiple of num_groups ({num_groups})")
    grouped = num_groups != num_topk_groups
    if grouped:
        P = E // num_groups
        if num_groups > 32:
            raise ValueError(f"{fn}: grouping supports at most 32 groups, got {num_groups}")
        if not 2 <= P <= 32:
            raise ValueError(f"{fn}: grouping needs 2 to 32 experts per group, got {P}")
        if K > num_topk_groups * P:
            raise ValueError(f"{fn}: num_topk ({K}) exceeds the experts of the kept groups ({num_topk_groups * P})")
    if (to_physical_map is None) != (logical_count is None):
        raise ValueError(f"{fn}: to_physical_map and logical_count must be given together")
    if use_shared_as_routed:
        S = num_shared_experts
        if S not in (1, 2):
            raise ValueError(f"{fn}: num_shared_experts must be 1 or 2 with use_shared_as_routed, got {S}")
        if K % S or E % (K // S):
            raise ValueError(f"{fn}: with use_shared_as_routed, num_topk ({K}) must be a multiple of "
                             f"num_shared_experts ({S}) and the experts ({E}) a multiple of num_topk / S")
        if to_physical_map is None:
            raise ValueError(f"{fn}: use_shared_as_routed needs to_physical_map and logical_count")
    else:
        S = 0
    if K + S > 32:
        raise ValueError(f"{fn}: num_topk + shared experts must be at most 32, got {K + S}")
    X = 0
    if to_physical_map is not None:
        check_tensor(fn, "to_physical_map", to_physical_map, (torch.int32,), 2)
        check_tensor(fn, "logical_count", logical_count, (torch.int32,), 1)
        if to_physical_map.shape[0] != E + S or to_physical_map.shape[1] < 1:
            raise ValueError(f"{fn}: to_physical_map must be ({E + S}, 1 + num_extra_experts), "
                             f"got {tuple(to_physical_map.shape)}")
        if logical_count.shape[0] != E + S:
            raise ValueError(f"{fn}: logical_count must have {E + S} elements, got {logical_count.shape[0]}")
        X = to_physical_map.shape[1] - 1
        if S > X:
            raise ValueError(f"{fn}: use_shared_as_routed needs at least {S} extra experts in to_physical_map, got {X}")
    if num_ep_ranks < 1 or (E + X) // num_ep_ranks < 1:
        raise ValueError(f"{fn}: num_ep_ranks must be in [1, {E + X}], got {num_ep_ranks}")
    if num_tp_ranks < 1 or not 0 <= tp_rank < num_tp_ranks:
        raise ValueError(f"{fn}: tp_rank must be in [0, num_tp_ranks), got {tp_rank} of {num_tp_ranks}")
    if mask is not None:
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.numel() != T:
            raise ValueError(f"{fn}: mask must be a bool tensor with {T} elements (one per token)")
    if unmapped_topk_idx is not None:
        u = unmapped_topk_idx
        check_tensor(fn, "unmapped_topk_idx", u, (torch.int64,), 2, contiguous=False)
        if tuple(u.shape) != (T, K) or (u.stride(1) != 1 and K > 1):
            raise ValueError(f"{fn}: unmapped_topk_idx must be ({T}, {K}) with unit stride along k")
    if fix_routing_mask is not None:
        if unmapped_topk_idx is None:
            raise ValueError(f"{fn}: fix_routing_mask needs unmapped_topk_idx (the fixed indices)")
        check_tensor(fn, "fix_routing_mask", fix_routing_mask, (torch.bool,), 1)
        if fix_routing_mask.shape[0] != T:
            raise ValueError(f"{fn}: fix_routing_mask must have {T} elements, got {fix_routing_mask.shape[0]}")
    if unmapped_topk_idx is not None:
        check_no_overlap(fn, "unmapped_topk_idx", unmapped_topk_idx, logits=logits, bias=bias, mask=mask,
                         fix_routing_mask=fix_routing_mask, to_physical_map=to_physical_map,
                         logical_count=logical_count)
    invalid = invalid_counter(fn, invalid_count, logits, logits=logits, bias=bias, mask=mask,
                              fix_routing_mask=fix_routing_mask, to_physical_map=to_physical_map,
                              logical_count=logical_count, unmapped_topk_idx=unmapped_topk_idx)
    dev = logits.device
    topk_idx = torch.empty((T, K + S), dtype=torch.int64, device=dev)
    topk_weights = torch.empty((T, K + S), dtype=torch.float32, device=dev)
    if T == 0:
        return topk_idx, topk_weights
    ng, ntg = (num_groups, num_topk_groups) if grouped else (0, 0)
    gens = (f"E={E}", f"K={K}", f"S={S}", f"NG={ng}", f"NTG={ntg}", f"SCORING={int(sf)}", present("mask", mask),
            present("fix_routing_mask", fix_routing_mask), present("to_physical_map", to_physical_map),
            present("logical_count", logical_count), present("unmapped_topk_idx", unmapped_topk_idx),
            present("invalid", invalid))
    m = None if mask is None else mask.reshape(T).view(torch.uint8)
    f = None if fix_routing_mask is None else fix_routing_mask.view(torch.uint8)
    _runtime.kernel("top2_sum_gate", gens, logits).launch(
        logits, bias, topk_idx, topk_weights, m, f, to_physical_map, logical_count, unmapped_topk_idx, invalid,
        float(routed_scaling_factor), int(ep_rank), (E + X) // num_ep_ranks, int(tp_rank), int(num_tp_ranks),
        stream=_runtime.stream(logits))
    return topk_idx, topk_weights
