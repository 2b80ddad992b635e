"""Test helpers of the quantisation family (``tile_kernels.testing.quant``, spec
quant-transpose.md §3.3): clearing unused packed scale bytes, and tilec's generators: E5M6
special inputs as a list, magnitude clamping, and a small MoE routing map for the fused kernels."""
import torch

from ..utils import align, ceil_div
from . import generator
from .generator import generate_hidden_sizes, generate_num_tokens, generate_rand_float  # noqa: F401


def clear_unused_sf(sf: torch.Tensor, hidden: int, num_per_channels: int) -> torch.Tensor:
    """Packed UE8M0 sf as (rows, align(cdiv(hidden, n), 4)) bytes with the pad bytes zeroed."""
    nk = ceil_div(hidden, num_per_channels)
    width = align(nk, 4)
    b = sf.contiguous().flatten().view(torch.uint8).view(-1, width).clone()
    b[:, nk:] = 0
    return b


def generate_e5m6_inputs(shape, dtype, device="cuda"):
    """The four inputs of generator.generate_e5m6_inputs for a (rows, hidden) ``shape``, as a
    list: randn, then the three special tensors."""
    return [x for x, _ in generator.generate_e5m6_inputs(shape[0], shape[1], dtype, device)]


def clamp_abs_ratio(x: torch.Tensor, ratio_log2: int = 9) -> torch.Tensor:
    """Magnitudes raised to at least max|x| / 2^ratio_log2 (sign kept)."""
    floor = x.abs().max() / (2.0 ** ratio_log2)
    return torch.where(x.abs() < floor, torch.copysign(floor.expand_as(x), x), x)


def generate_fused_mapping(num_tokens: int, num_topk: int, num_experts: int, alignment: int, device="cuda"):
    """A random MoE routing of num_tokens tokens to num_topk distinct experts each, laid out
    expert by expert with each expert's segment padded to a multiple of `alignment` rows.
    Returns (pos_to_token, pos_to_token_topk, pos_to_expert, token_topk_to_pos), int32; padding
    positions hold -1."""
    topk = torch.rand((num_tokens, num_experts), device=device).topk(num_topk, dim=1).indices
    flat_e = topk.reshape(-1).long()
    order = torch.sort(flat_e * (num_tokens * num_topk) + torch.arange(flat_e.numel(), device=device)).indices
    counts = torch.bincount(flat_e, minlength=num_experts)
    padded = (counts + alignment - 1) // alignment * alignment
    starts = torch.cumsum(padded, 0) - padded
    cstarts = torch.cumsum(counts, 0) - counts
    total = int(padded.sum().item())
    pos_to_token_topk = torch.full((total,), -1, dtype=torch.int32, device=device)
    pos_to_expert = torch.full((total,), -1, dtype=torch.int32, device=device)
    sorted_e = flat_e[order]
    rank = torch.arange(order.numel(), device=device) - cstarts[sorted_e]
    pos = starts[sorted_e] + rank
    pos_to_token_topk[pos] = order.to(torch.int32)
    pos_to_expert[pos] = sorted_e.to(torch.int32)
    token_topk_to_pos = torch.empty(num_tokens * num_topk, dtype=torch.int32, device=device)
    token_topk_to_pos[order] = pos.to(torch.int32)
    pos_to_token = torch.where(pos_to_token_topk >= 0, pos_to_token_topk // num_topk, pos_to_token_topk)
    return pos_to_token.int(), pos_to_token_topk, pos_to_expert, token_topk_to_pos.view(num_tokens, num_topk)


def expand_rows(x: torch.Tensor, pos_to_token: torch.Tensor) -> torch.Tensor:
    """Row p of the result is x[pos_to_token[p]], or zeros where it is negative."""
    out = x[pos_to_token.long().clamp(min=0)]
    return torch.where((pos_to_token >= 0)[:, None], out, torch.zeros((), dtype=x.dtype, device=x.device))
