"""PyTorch references of the MoE family (spec moe-engram-mhc.md §1, §5.3), written from the
specification: plain tensor code on any device, exact where the spec asks for bit-exact results
(the fused multiply-add of reduce_fused is emulated exactly in float64). get_fused_mapping here
fills each expert's slots in ascending flattened (token, k) order, the order of tilec.moe."""
from typing import Optional, Tuple, Union

import torch
import torch.nn.functional as F

from ..moe.scoring import ScoringFunc

__all__ = ["stable_topk", "topk_gate", "topk_sum_and_topk_group_idx", "score_experts", "top2_sum_gate",
           "get_fused_mapping", "expand_to_fused", "expand_to_fused_with_sf", "reduce_fused", "fma_f32",
           "inplace_unique_group_indices", "aux_fi", "group_count", "mask_indices_by_tp", "normalize_weight"]


def stable_topk(scores: torch.Tensor, k: int) -> torch.Tensor:
    """Indices of the k largest entries of each row in rank order: descending, ties to the
    smaller index (a stable descending sort)."""
    return torch.sort(scores, dim=-1, descending=True, stable=True).indices[..., :k].contiguous()


def topk_gate(scores: torch.Tensor, num_topk: int) -> torch.Tensor:
    return stable_topk(scores, num_topk)


def topk_sum_and_topk_group_idx(scores: torch.Tensor, num_topk_sum: int, num_topk_groups: int) -> torch.Tensor:
    """Group score = sum of the num_topk_sum largest scores of the group (a repeated maximum
    counts twice); the num_topk_groups best groups in rank order."""
    group = torch.topk(scores, num_topk_sum, dim=-1, sorted=False).values.sum(-1)
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


def _mask_by_tp(idx: torch.Tensor, R: int, tp_rank: int, num_tp_ranks: int) -> torch.Tensor:
    """Spec §1.1 step 9 on int64 indices: experts of EP ranks congruent to tp_rank modulo
    num_tp_ranks renumbered densely, the rest (and negative indices) -1."""
    Q = R * num_tp_ranks
    keep = (idx >= 0) & (torch.div(idx, R, rounding_mode="floor") % num_tp_ranks == tp_rank)
    i1 = idx - tp_rank * R
    i2 = i1 - torch.div(i1, Q, rounding_mode="floor") * (Q - R)
    return torch.where(keep & (i2 >= 0), i2, torch.full_like(i2, -1))


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


def _expanded_size(T: int, K: int, E: int, alignment: int) -> int:
    return (T * K + (alignment - 1) * E) // alignment * alignment


def get_fused_mapping(topk_idx: torch.Tensor, num_experts: int, num_expanded_tokens: int, alignment: int,
                      force_no_sync: bool = False):
    """Spec §1.4 with the filled slots of each expert in ascending flattened index t * K + k."""
    T, K = topk_idx.shape
    E = num_experts
    dev = topk_idx.device
    flat = topk_idx.reshape(-1)
    valid = flat >= 0
    counts = torch.bincount(flat[valid], minlength=E)[:E]
    aligned = (counts + alignment - 1) // alignment * alignment
    end = torch.cumsum(aligned, 0)
    start = end - aligned
    sync = num_expanded_tokens == 0 and not force_no_sync
    N = _expanded_size(T, K, E, alignment) if num_expanded_tokens == 0 else num_expanded_tokens
    keys = torch.where(valid, flat, torch.full_like(flat, E))
    order = torch.sort(keys, stable=True).indices            # entries grouped by expert, ascending i
    first = torch.cumsum(counts, 0) - counts                 # first position of expert e in order
    n_valid = int(valid.sum())
    ent = order[:n_valid]
    exp = flat[ent]
    slot = start[exp] + torch.arange(n_valid, device=dev) - first[exp]
    pos_to_expert = torch.full((N,), -1, dtype=torch.int32, device=dev)
    pos_to_token = torch.full((N,), -1, dtype=torch.int32, device=dev)
    pos_to_token_topk = torch.full((N,), -1, dtype=torch.int32, device=dev)
    pos_to_expert[slot] = exp.int()
    pos_to_token[slot] = torch.div(ent, K, rounding_mode="floor").int()
    pos_to_token_topk[slot] = ent.int()
    ttp = torch.full((T * K,), -1, dtype=torch.int32, device=dev)
    ttp[ent] = slot.int()
    counts_list = []
    if sync:
        counts_list = aligned.tolist()
        used = sum(counts_list)
        pos_to_expert, pos_to_token, pos_to_token_topk = pos_to_expert[:used], pos_to_token[:used], \
            pos_to_token_topk[:used]
    return (pos_to_expert, pos_to_token, pos_to_token_topk, ttp.view(T, K), start.int(), end.int(), aligned.int(),
            counts_list)


def expand_to_fused(x: torch.Tensor, token_topk_to_pos: torch.Tensor, pos_to_expert: torch.Tensor) -> torch.Tensor:
    """out[p] = x[t] for every (t, k) with p = token_topk_to_pos[t, k] >= 0; other rows zero."""
    N, H = pos_to_expert.shape[0], x.shape[1]
    out = torch.zeros((N, H), dtype=x.dtype, device=x.device)
    p = token_topk_to_pos.long()
    t = torch.arange(x.shape[0], device=x.device)[:, None].expand_as(p)
    v = p >= 0
    if H:  # moved as raw bytes, so that any dtype (FP8 too) works
        out.view(torch.uint8)[p[v]] = x.contiguous().view(torch.uint8)[t[v]]
    return out


def expand_to_fused_with_sf(x, num_per_channels: int, token_topk_to_pos: torch.Tensor, pos_to_expert: torch.Tensor,
                            use_tma_aligned_col_major_sf: bool = False):
    """expand_to_fused of the data and of the scale rows; the scales of padding slots are zero.
    Column-major scales are the transposed view of a (Hsf, align(N, 4)) buffer."""
    data, sf = x
    out = expand_to_fused(data, token_topk_to_pos, pos_to_expert)
    out_sf = expand_to_fused(sf, token_topk_to_pos, pos_to_expert)
    if use_tma_aligned_col_major_sf:
        N = out_sf.shape[0]
        buf = torch.zeros((out_sf.shape[1], (N + 3) // 4 * 4), dtype=sf.dtype, device=sf.device)
        buf[:, :N] = out_sf.T
        out_sf = buf[:, :N].T
    return out, out_sf


def fma_f32(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """a * b + c on f32 tensors with ONE rounding (an IEEE fused multiply-add), on any device:
    the product is exact in float64, the sum's rounding error comes from TwoSum, and rounding
    to odd at 53 bits makes the final rounding to f32 the single correct one."""
    p = a.double() * b.double()
    cd = c.double()
    s = p + cd
    bb = s - p
    err = (p - (s - bb)) + (cd - bb)
    bits = s.view(torch.int64)
    fix = (err != 0) & ((bits & 1) == 0) & torch.isfinite(s)
    up = (err > 0) == (s > 0)                                 # the exact value is farther from zero
    bits = torch.where(fix, torch.where(up, bits + 1, bits - 1), bits)
    return bits.view(torch.float64).float()


def reduce_fused(x: Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]], topk_weights: Optional[torch.Tensor],
                 token_topk_to_pos: torch.Tensor, fp8_format: str = "", sf: Optional[torch.Tensor] = None,
                 out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """acc = fma(x[p], s, acc) over k in order for valid p (s = weight, times x_sf[p]); then
    acc * sf[0]; cast to the input dtype or e4m3 (saturating at ±448)."""
    x_sf = None
    if isinstance(x, tuple):
        x, x_sf = x
    T, K = token_topk_to_pos.shape
    H = x.shape[1]
    acc = torch.zeros((T, H), dtype=torch.float32, device=x.device)
    for k in range(K):
        p = token_topk_to_pos[:, k].long()
        valid = p >= 0
        pc = p.clamp_min(0)
        rows = x[pc].float() if x.shape[0] else torch.zeros((T, H), device=x.device)
        s = topk_weights[:, k].float() if topk_weights is not None else torch.ones(T, device=x.device)
        if x_sf is not None and x_sf.shape[0]:
            s = s * x_sf[pc]
        acc = torch.where(valid[:, None], fma_f32(rows, s[:, None].expand_as(rows), acc), acc)
    if sf is not None:
        acc = acc * sf.reshape(-1)[0].item()
    if fp8_format == "e4m3":
        res = acc.clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    else:
        res = acc.to(x.dtype)
    if out is not None:
        out.copy_(res)
        return out
    return res


def inplace_unique_group_indices(group_indices: torch.Tensor, num_groups: int) -> None:
    """In place: an entry >= 0 equal to an earlier entry of its row becomes -1."""
    K = group_indices.shape[1]
    x = group_indices
    earlier = torch.ones((K, K), dtype=torch.bool, device=x.device).tril(-1)   # [k, j]: j < k
    dup = ((x[:, :, None] == x[:, None, :]) & earlier).any(-1) & (x >= 0)
    x.masked_fill_(dup, -1)


def group_count(group_idx: torch.Tensor, num_groups: int) -> torch.Tensor:
    flat = group_idx.reshape(-1)
    return torch.bincount(flat[flat >= 0], minlength=num_groups)[:num_groups].int()


def aux_fi(topk_idx: torch.Tensor, num_experts: int, num_aux_topk: int) -> torch.Tensor:
    T = topk_idx.shape[0]
    counts = group_count(topk_idx, num_experts)
    if T == 0:
        return torch.zeros(num_experts, dtype=torch.float32, device=topk_idx.device)
    return counts.float() * num_experts / (T * num_aux_topk)


def mask_indices_by_tp(indices: torch.Tensor, n: int, num_ep_ranks: int, tp_rank: int,
                       num_tp_ranks: int) -> torch.Tensor:
    return _mask_by_tp(indices.long(), n // num_ep_ranks, tp_rank, num_tp_ranks).to(indices.dtype)


def normalize_weight(topk_weights: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """den = ((1e-20 + w0) + w1) + ..., in order; weights / den."""
    T, K = topk_weights.shape
    den = torch.full((T,), 1e-20, dtype=torch.float32, device=topk_weights.device)
    for k in range(K):
        den = den + topk_weights[:, k]
    return den, topk_weights / den[:, None]
