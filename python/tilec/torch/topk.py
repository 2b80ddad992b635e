"""Reference gates (``tile_kernels.torch.topk``, spec moe-engram-mhc.md §1.1-§1.3, §5.3):
stable top-k, group selection and the group-limited top-K gate, written from the specification."""
from typing import Optional, Tuple

import torch
import torch.nn.functional as F

from ..moe.scoring import ScoringFunc
from .moe import _mask_by_tp


def stable_topk(scores: torch.Tensor, num_topk: int) -> torch.Tensor:
    """Indices of the num_topk largest entries of each row in rank order: descending, ties to the
    smaller index (a stable descending sort). A fresh tensor with row-major strides, also for one
    row (where .contiguous() would keep the sorted tensor's row stride)."""
    idx = torch.sort(scores, dim=-1, descending=True, stable=True).indices[..., :num_topk]
    return idx.clone(memory_format=torch.contiguous_format)


def topk_gate(scores: torch.Tensor, num_topk: int) -> torch.Tensor:
    return stable_topk(scores, num_topk)


def topk_sum_and_topk_group_idx(scores: torch.Tensor, num_group_sum_topk: int, num_topk_groups: int) -> torch.Tensor:
    """Group score = sum of the num_group_sum_topk largest scores of the group (a repeated maximum
    counts twice); the num_topk_groups best groups in rank order."""
    group = torch.topk(scores, num_group_sum_topk, dim=-1, sorted=False).values.sum(-1)
    return stable_topk(group, num_topk_groups)


def score_experts(logits: torch.Tensor, scoring_func) -> Tuple[torch.Tensor, torch.Tensor]:
    """(scores s, ranking scores without bias) of a gate: sigmoid -> (σ(l), σ(l)),
    sqrtsoftplus -> (sqrt(softplus(l)), same), softmax -> (softmax(l), l)."""
    sf = scoring_func if isinstance(scoring_func, ScoringFunc) else ScoringFunc.from_str(scoring_func)
    lf = logits.float()
    if sf == ScoringFunc.SIGMOID:
        s = torch.sigmoid(lf)
        return s, s
    if sf == ScoringFunc.SQRTSOFTPLUS:
        s = F.softplus(lf).sqrt()
        return s, s
    if sf == ScoringFunc.SOFTMAX:
        return torch.softmax(lf, dim=-1), lf
    raise ValueError(f"scoring function {sf} is not supported by the gates")


def top2_sum_gate(logits: torch.Tensor, bias: torch.Tensor, num_topk: int, num_topk_groups: int, num_groups: int,
                  use_shared_as_routed: bool, num_shared_experts: int, routed_scaling_factor: float,
                  ep_rank: int, num_ep_ranks: int, tp_rank: int, num_tp_ranks: int, scoring_func: str,
                  mask: Optional[torch.Tensor] = None, fix_routing_mask: Optional[torch.Tensor] = None,
                  to_physical_map: Optional[torch.Tensor] = None, logical_count: Optional[torch.Tensor] = None,
                  unmapped_topk_idx: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """Spec §1.1 step by step, over all rows at once."""
    T, E = logits.shape
    K = num_topk
    S = num_shared_experts if use_shared_as_routed else 0
    X = to_physical_map.shape[1] - 1 if to_physical_map is not None else 0
    dev = logits.device
    s, rank_base = score_experts(logits, scoring_func)
    r = rank_base + bias.float()
    if num_groups != num_topk_groups:
        P = E // num_groups
        gscore = r.view(T, num_groups, P).topk(2, dim=-1).values.sum(-1)
        kept = torch.zeros((T, num_groups), dtype=torch.bool, device=dev)
        kept.scatter_(1, stable_topk(gscore, num_topk_groups), True)
        r = r.masked_fill(~kept.repeat_interleave(P, dim=1), float("-inf"))
    idx = stable_topk(r, K)
    if fix_routing_mask is not None:
        fixed = unmapped_topk_idx[:, :K].long()
        idx = torch.where(fix_routing_mask.reshape(T, 1).bool(), fixed, idx)
    picked = s.gather(1, idx.clamp_min(0))
    den = torch.full((T,), 1e-20, dtype=torch.float32, device=dev)
    for k in range(K):
        den = den + picked[:, k]
    w = picked / den[:, None] * routed_scaling_factor
    active = torch.ones(T, dtype=torch.bool, device=dev) if mask is None else mask.reshape(T).bool()
    if unmapped_topk_idx is not None:
        unmapped_topk_idx[:, :K] = torch.where(active[:, None], idx, torch.full_like(idx, -1))
    if S:
        idx = torch.cat([idx, (E + torch.arange(S, device=dev)).expand(T, S)], dim=1)
        w = torch.cat([w, torch.ones((T, S), dtype=torch.float32, device=dev)], dim=1)
    if to_physical_map is not None:
        n = logical_count.long()[idx]
        t = torch.arange(T, device=dev, dtype=torch.int64)[:, None]
        d = (ep_rank + t * 23333) % n
        idx = to_physical_map.long()[idx, d]
    idx = _mask_by_tp(idx, (E + X) // num_ep_ranks, tp_rank, num_tp_ranks)
    idx = torch.where(active[:, None], idx, torch.full_like(idx, -1))
    w = torch.where(active[:, None], w, torch.zeros_like(w))
    return idx.contiguous(), w.contiguous()
