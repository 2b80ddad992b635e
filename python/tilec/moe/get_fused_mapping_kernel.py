"""The expert-major fused layout of routing indices (spec moe-engram-mhc.md §1.4). Unlike
TileKernels', it is deterministic: within an expert, entries come in ascending flattened index
t * K + k, whatever the SM count."""
from typing import Optional

import torch

from .. import _runtime
from .._ops import kernel_op
from ..config import get_num_sms
from ..utils import align, ceil_div
from .common import check_int, check_tensor, invalid_counter, present

# one block does the whole job below this many (token, k) entries (decode): a single launch
_SINGLE_MAPPING = 4096


def get_fused_mapping(topk_idx: torch.Tensor, num_experts: int, num_expanded_tokens: int, alignment: int,
                      force_no_sync: bool = False, *, invalid_count: Optional[torch.Tensor] = None):
    """The expert-major layout of (T, K) routing indices (spec §1.4): every expert owns
    ``alignment``-padded consecutive slots, filled in ascending flattened index t * K + k.
    Returns (pos_to_expert, pos_to_token, pos_to_token_topk, token_topk_to_pos, expert_start,
    expert_end, num_tokens_per_expert (aligned), num_tokens_per_expert_list). With
    ``num_expanded_tokens == 0`` the slot count is an upper bound; unless ``force_no_sync``, the
    host then reads the counts (a synchronisation) and trims the three pos_to_* arrays. With
    ``force_no_sync`` and 0, the untrimmed upper-bound layout is returned (TileKernels wrote out
    of bounds there).

    Checked on the device, with no synchronisation: an index outside [-1, num_experts) (any int64
    value) and an entry whose slot would be at or past ``num_expanded_tokens`` (a caller's too
    small size) are dropped — treated as -1, token_topk_to_pos -1, nothing written for them — and
    counted into ``invalid_count`` when given (a one-element int32 tensor the kernel adds to)."""
    r = _fused_mapping(topk_idx, num_experts, num_expanded_tokens, alignment, force_no_sync, invalid_count)
    counts_list = []
    if num_expanded_tokens == 0 and not force_no_sync:   # the synchronising path (a graph break when traced)
        counts_list = r[6].tolist()
        used = sum(counts_list)
        r = (r[0][:used], r[1][:used], r[2][:used]) + tuple(r[3:])
    return (*r, counts_list)


@kernel_op("get_fused_mapping", mutates=("invalid_count",))
def _fused_mapping(topk_idx: torch.Tensor, num_experts: int, num_expanded_tokens: int, alignment: int,
                   force_no_sync: bool, invalid_count: Optional[torch.Tensor]):
    """The launches of get_fused_mapping: its seven tensors, untrimmed."""
    fn = "get_fused_mapping"
    check_tensor(fn, "topk_idx", topk_idx, (torch.int64,), 2)
    T, K = topk_idx.shape
    E = check_int(fn, "num_experts", num_experts, 1, 1024)
    check_int(fn, "alignment", alignment, 1)
    check_int(fn, "num_expanded_tokens", num_expanded_tokens, 0)
    if not isinstance(force_no_sync, bool):
        raise ValueError(f"{fn}: force_no_sync must be a bool, got {type(force_no_sync).__name__}")
    invalid = invalid_counter(fn, invalid_count, topk_idx, topk_idx=topk_idx)
    TK = T * K
    bound = (TK + (alignment - 1) * E) // alignment * alignment
    if max(bound, num_expanded_tokens) >= 2 ** 31:
        raise ValueError(f"{fn}: {max(bound, num_expanded_tokens)} slots do not fit int32")
    N = bound if num_expanded_tokens == 0 else num_expanded_tokens
    dev = topk_idx.device
    pos_to_expert = torch.empty(N, dtype=torch.int32, device=dev)
    pos_to_token = torch.empty(N, dtype=torch.int32, device=dev)
    pos_to_token_topk = torch.empty(N, dtype=torch.int32, device=dev)
    ttp = torch.empty((T, K), dtype=torch.int32, device=dev)
    start = torch.empty(E, dtype=torch.int32, device=dev)
    end = torch.empty(E, dtype=torch.int32, device=dev)
    counts = torch.empty(E, dtype=torch.int32, device=dev)
    stream = _runtime.stream(topk_idx)
    flat = topk_idx.view(TK)
    outs = (pos_to_expert, pos_to_token, pos_to_token_topk, ttp.view(TK), start, end, counts, invalid)
    inv = present("invalid", invalid)
    if TK <= _SINGLE_MAPPING:
        _runtime.kernel("fused_scatter", (f"E={E}", f"K={K}", "SINGLE=true", "part=absent", inv), topk_idx).launch(
            flat, None, *outs, 0, alignment, stream=stream)
    else:
        cb = align(ceil_div(TK, get_num_sms()), 256)
        nb = ceil_div(TK, cb)
        part = torch.empty((nb + 1, E), dtype=torch.int32, device=dev)
        _runtime.kernel("fused_count", (f"E={E}",), topk_idx).launch(flat, part, cb, stream=stream)
        _runtime.kernel("fused_scan", (f"E={E}",), topk_idx).launch(part, start, end, counts, alignment, stream=stream)
        _runtime.kernel("fused_scatter", (f"E={E}", f"K={K}", "SINGLE=false", "part=present", inv), topk_idx).launch(
            flat, part, *outs, cb, alignment, stream=stream)
    return pos_to_expert, pos_to_token, pos_to_token_topk, ttp, start, end, counts
