"""Reference MoE utilities (``tile_kernels.torch.moe``, spec moe-engram-mhc.md §1.4, §1.8-§1.12,
§5.3), written from the specification: plain tensor code on any device. get_fused_mapping here
fills each expert's slots in ascending flattened (token, k) order, the order of tilec.moe."""
from typing import Tuple

import torch


def _mask_by_tp(idx: torch.Tensor, R: int, tp_rank: int, num_tp_ranks: int) -> torch.Tensor:
    """Spec §1.1 step 9 on int64 indices: experts of EP ranks congruent to tp_rank modulo
    num_tp_ranks renumbered densely, the rest (and negative indices) -1."""
    Q = R * num_tp_ranks
    keep = (idx >= 0) & (torch.div(idx, R, rounding_mode="floor") % num_tp_ranks == tp_rank)
    i1 = idx - tp_rank * R
    i2 = i1 - torch.div(i1, Q, rounding_mode="floor") * (Q - R)
    return torch.where(keep & (i2 >= 0), i2, torch.full_like(i2, -1))


def _expanded_size(T: int, K: int, E: int, alignment: int) -> int:
    return (T * K + (alignment - 1) * E) // alignment * alignment


def get_fused_mapping(topk_idx: torch.Tensor, num_experts: int, num_expanded_tokens: int, alignment: int,
                      force_no_sync: bool = False):
    """Spec §1.4 with the filled slots of each expert in ascending flattened index t * K + k. An
    index outside [-1, E), or an entry whose slot is at or past num_expanded_tokens, is dropped:
    token_topk_to_pos -1 and nothing written for it (the kernels' rule)."""
    T, K = topk_idx.shape
    E = num_experts
    dev = topk_idx.device
    flat = topk_idx.reshape(-1)
    valid = (flat >= 0) & (flat < E)
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
    fits = slot < N
    ent, exp, slot = ent[fits], exp[fits], slot[fits]
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
