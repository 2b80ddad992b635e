"""Test-case generators of ``tile_kernels.testing.generator`` (spec moe-engram-mhc.md §0.5,
§5.2, quant-transpose.md §2.4, §2.8): token counts, hidden sizes, SM counts, MoE routing
configurations, E5M6 special inputs and wide-range random floats. ``TK_FULL_TEST`` (1 / true /
True) adds the edge cases (0 tokens, 1 SM, more expert counts)."""
import os
from typing import Dict, Iterator, List, Tuple

import torch

from ..utils import align as _align

__all__ = ["is_full_test", "generate_num_tokens", "generate_hidden_sizes", "generate_num_sms",
           "generate_moe_params", "generate_topk_idx", "generate_e5m6_inputs", "generate_rand_float"]

HIDDEN_SIZES = (576, 2048, 2560, 3072, 4096, 6144, 7168)


def is_full_test() -> bool:
    return os.environ.get("TK_FULL_TEST", "") in ("1", "true", "True")


def generate_num_tokens(alignment: int = 1, is_benchmark: bool = False) -> List[int]:
    """[4001, 8001] (rounded up to ``alignment``), with 0 first in full mode (not for benchmarks)."""
    out = [_align(t, alignment) for t in (4001, 8001)]
    if is_full_test() and not is_benchmark:
        out.insert(0, 0)
    return out


def generate_hidden_sizes(align: int = 64) -> List[int]:
    """The hidden sizes of the tests that are multiples of ``align``."""
    return [h for h in HIDDEN_SIZES if h % align == 0]


def generate_num_sms() -> List[int]:
    """SM counts to test with set_num_sms: [device - 20, device], with 1 first in full mode
    (the device's own count last, so that a loop leaves it set)."""
    from ..config import get_device_num_sms
    n = get_device_num_sms()
    out = [max(1, n - 20), n]
    if is_full_test():
        out.insert(0, 1)
    return out


def generate_moe_params(is_benchmark: bool = False) -> Iterator[Dict[str, int]]:
    """Routing configurations: 4001 tokens sent, num_topk in (2, 6, 8, 9), total experts 72 or
    256 over 8 or 64 EP ranks (where they divide); full mode adds a 0-token case first, top-k 1
    and 7, 288 and 384 experts, and 1, 72 and 256 ranks."""
    full = is_full_test() and not is_benchmark
    if full:
        yield {"num_send_tokens": 0, "num_topk": 1, "num_experts": 1, "num_ep_ranks": 1}
    topks = (1, 2, 6, 7, 8, 9) if full else (2, 6, 8, 9)
    totals = (72, 256, 288, 384) if full else (72, 256)
    ranks = (1, 8, 64, 72, 256) if full else (8, 64)
    for k in topks:
        for total in totals:
            for ep in ranks:
                if total % ep == 0:
                    yield {"num_send_tokens": 4001, "num_topk": k, "num_experts": total // ep, "num_ep_ranks": ep}


def generate_topk_idx(params: Dict[str, int], device: str = "cuda") -> torch.Tensor:
    """Routing indices for one EP rank: top-k of random bf16 scores over all experts of all ranks
    for num_send_tokens * num_ep_ranks tokens; experts of other ranks (>= num_experts) become -1
    and tokens routed nowhere here are dropped. int64 (T', K), values in [-1, num_experts)."""
    E, ep, K = params["num_experts"], params["num_ep_ranks"], params["num_topk"]
    T = params["num_send_tokens"] * ep
    scores = torch.rand((T, E * ep), device=device).to(torch.bfloat16)
    if scores.device.type == "cpu":
        scores = scores.float()  # the same values (and ties); CPU top-k of bf16 is not everywhere
    idx = torch.topk(scores, K, dim=-1, sorted=False).indices
    idx = torch.where(idx >= E, torch.full_like(idx, -1), idx)
    return idx[(idx >= 0).any(dim=1)].contiguous()


# 2^-20 (the smallest E5M6 subnormal), 2^-14 * 63/64 (the largest) and 2^-14 (the smallest normal)
_E5M6_SPECIAL_VALUES = (2.0 ** -20, 2.0 ** -14 * 63 / 64, 2.0 ** -14)


def generate_e5m6_inputs(num_tokens: int, hidden: int, dtype: torch.dtype,
                         device="cuda") -> Iterator[Tuple[torch.Tensor, bool]]:
    """(x, is_special) pairs: randn, then three tensors filled with the special values whose last
    column is 65024 (so sf = 1 and the values land on E5M6 subnormals / the smallest normal)."""
    shape = (num_tokens, hidden)
    yield torch.randn(shape, device=device).to(dtype), False
    for v in _E5M6_SPECIAL_VALUES:
        t = torch.full(shape, v, device=device, dtype=torch.float32)
        t[:, -1] = 65024.0
        yield t.to(dtype), True


def generate_rand_float(shape, device="cuda") -> torch.Tensor:
    """randn * 2^e with one random e in [-110, 126] per tensor, non-finite values replaced and
    the result clamped to +-FLT_MAX / 8."""
    e = int(torch.randint(-110, 127, (1,)).item())
    x = torch.randn(shape, device=device, dtype=torch.float32) * (2.0 ** e)
    big = torch.finfo(torch.float32).max / 8
    x = torch.nan_to_num(x, nan=0.0, posinf=big, neginf=-big)
    return x.clamp(-big, big)
