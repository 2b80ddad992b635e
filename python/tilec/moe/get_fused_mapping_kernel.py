"""The expert-major fused layout of routing indices (spec moe-engram-mhc.md §1.4). Unlike
TileKernels', it is deterministic: within an expert, entries come in ascending flattened index
t * K + k, whatever the SM count."""
import torch

from .. import _runtime
from ..config import get_num_sms
from ..utils import align, ceil_div
from .common import check_tensor

# one block does the whole job below this many (token, k) entries (decode): a single launch
_SINGLE_MAPPING = 4096


def get_fused_mapping(topk_idx: torch.Tensor, num_experts: int, num_expanded_tokens: int, alignment: int,
                      force_no_sync: bool = False):
    """The expert-major layout of (T, K) routing indices (spec §1.4): every expert owns
    ``alignment``-padded consecutive slots, filled in ascending flattened index t * K + k.
    Returns (pos_to_expert, pos_to_token, pos_to_token_topk, token_topk_to_pos, expert_start,
    expert_end, num_tokens_per_expert (aligned), num_tokens_per_expert_list). With
    ``num_expanded_tokens == 0`` the slot count is an upper bound; unless ``force_no_sync``, the
    host then reads the counts (a synchronisation) and trims the three pos_to_* arrays. With
    ``force_no_sync`` and 0, the untrimmed upper-bound layout is returned (TileKernels wrote out
    of bounds there). A ``num_expanded_tokens`` below the slots needed is a caller error: slots
    past it are dropped, never written out of bounds."""
    fn = "get_fused_mapping"
    check_tensor(fn, "topk_idx", topk_idx, (torch.int64,), 2)
    T, K = topk_idx.shape
    E = num_experts
    if not 1 <= E <= 1024:
        raise ValueError(f"{fn}: num_experts must be in [1, 1024], got {E}")
    if alignment < 1:
        raise ValueError(f"{fn}: alignment must be positive, got {alignment}")
    if num_expanded_tokens < 0:
        raise ValueError(f"{fn}: num_expanded_tokens must be >= 0, got {num_expanded_tokens}")
    TK = T * K
    bound = (TK + (alignment - 1) * E) // alignment * alignment
    if max(bound, num_expanded_tokens) >= 2 ** 31:
        raise ValueError(f"{fn}: {max(bound, num_expanded_tokens)} slots do not fit int32")
    sync = num_expanded_tokens == 0 and not force_no_sync
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
    outs = (pos_to_expert, pos_to_token, pos_to_token_topk, ttp.view(TK), start, end, counts)
    if TK <= _SINGLE_MAPPING:
        _runtime.kernel("fused_scatter", (f"E={E}", f"K={K}", "SINGLE=true", "part=absent"), topk_idx).launch(
            flat, None, *outs, 0, alignment, stream=stream)
    else:
        cb = align(ceil_div(TK, get_num_sms()), 256)
        nb = ceil_div(TK, cb)
        part = torch.empty((nb + 1, E), dtype=torch.int32, device=dev)
        _runtime.kernel("fused_count", (f"E={E}",), topk_idx).launch(flat, part, cb, stream=stream)
        _runtime.kernel("fused_scan", (f"E={E}",), topk_idx).launch(part, start, end, counts, alignment, stream=stream)
        _runtime.kernel("fused_scatter", (f"E={E}", f"K={K}", "SINGLE=false", "part=present"), topk_idx).launch(
            flat, part, *outs, cb, alignment, stream=stream)
    counts_list = []
    if sync:
        counts_list = counts.tolist()
        used = sum(counts_list)
        pos_to_expert, pos_to_token, pos_to_token_topk = (pos_to_expert[:used], pos_to_token[:used],
                                                          pos_to_token_topk[:used])
    return pos_to_expert, pos_to_token, pos_to_token_topk, ttp, start, end, counts, counts_list
