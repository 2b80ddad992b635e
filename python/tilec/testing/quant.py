"""Test-input generators of the quantisation family (``tile_kernels.testing``, spec
quant-transpose.md §3.3): test grids, E5M6 special inputs, wide-range random floats, and a
small MoE routing map for the fused kernels."""
import os

import torch

from . import clear_unused_sf  # noqa: F401  (re-exported here as in TileKernels)

HIDDEN_SIZES = [576, 2048, 2560, 3072, 4096, 6144, 7168]


def _align(a: int, b: int) -> int:
    return (a + b - 1) // b * b


def full_test() -> bool:
    return os.environ.get("TK_FULL_TEST", "0") not in ("", "0")


def generate_num_tokens(alignment: int = 1, is_benchmark: bool = False):
    """[align(4001, a), align(8001, a)], with 0 first in full mode (not for benchmarks)."""
    v = [_align(4001, alignment), _align(8001, alignment)]
    return ([0] + v) if full_test() and not is_benchmark else v


def generate_hidden_sizes(align: int = 64):
    return [h for h in HIDDEN_SIZES if h % align == 0]


def generate_e5m6_inputs(shape, dtype, device="cuda"):
    """randn, and three tensors filled with 2^-20, 2^-14 * 63/64 and 2^-14 whose last column is
    65024 (so sf = 1 and the values land on E5M6 subnormals / the smallest normal)."""
    out = [torch.randn(shape, device=device).to(dtype)]
    for v in (2.0 ** -20, 2.0 ** -14 * 63 / 64, 2.0 ** -14):
        t = torch.full(shape, v, device=device, dtype=torch.float32)
        t[:, -1] = 65024.0
        out.append(t.to(dtype))
    return out


def generate_rand_float(shape, device="cuda"):
    """randn * 2^e with one random e in [-110, 126] per tensor, non-finite values replaced and
    the result clamped to +-FLT_MAX / 8."""
    e = int(torch.randint(-110, 127, (1,)).item())
    x = torch.randn(shape, device=device, dtype=torch.float32) * (2.0 ** e)
    big = torch.finfo(torch.float32).max / 8
    x = torch.nan_to_num(x, nan=0.0, posinf=big, neginf=-big)
    return x.clamp(-big, big)


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
