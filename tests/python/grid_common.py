"""What the grid tests (test_grid_*_emu.py) share: TileKernels' hidden sizes, token counts,
option grids and routing configurations, scaled to the CPU, and the input generators."""
import itertools

import torch

HIDDEN = (576, 2048, 2560, 3072, 4096, 6144, 7168)
TOKENS = (1, 67, 300)
TOKENS128 = (128, 256, 384)
FLAGS = [(False, True, False), (True, True, True)]  # (col-major, round, packed): TileKernels' grids
DT = {"bf16": torch.bfloat16, "f32": torch.float32}
# TileKernels' routing configurations (generate_moe_params), with 4001 tokens sent scaled to the CPU
MOE = [(k, total // ep, ep) for k in (2, 6, 8, 9) for total in (72, 256) for ep in (8, 64) if total % ep == 0]


def hidden_sizes(align=64):
    return [h for h in HIDDEN if h % align == 0]


def grid(*factors, tokens=TOKENS):
    """The cross product of the factors, each case given a token count in turn (the first factor
    varies slowest, so every hidden size meets every count)."""
    return [c + (tokens[i % len(tokens)],) for i, c in enumerate(itertools.product(*factors))]


def cid(v):
    if isinstance(v, tuple) and len(v) == 3 and all(isinstance(b, bool) for b in v):
        return "col%d-round%d-packed%d" % v
    return str(v)


def kw(flags):
    col, rnd, packed = flags
    return dict(use_tma_aligned_col_major_sf=col, round_sf=rnd, use_packed_ue8m0=packed)


def sample(t, h, dtype=torch.float32, scale=1.0, seed=0):
    """randn rows (a fixed seed per shape) with, where there are enough rows, a row of zeros, one
    of negative zeros, one far below the amax clamp and one of large values."""
    g = torch.Generator().manual_seed(seed * 7919 + t * 31 + h)
    x = torch.randn((t, h), generator=g) * scale
    if t > 4:
        x[1] = 0.0
        x[2] = -0.0
        x[3] *= 1e-30
        x[4] *= 3000.0
    return x.to(dtype)


def routing(k, experts, ranks, tokens, seed=0):
    """generate_topk_idx on the CPU: top-k of random scores over every rank's experts, experts of
    other ranks -1, tokens routed nowhere here dropped."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.rand((tokens * ranks, experts * ranks), generator=g)
    idx = torch.topk(scores, k, dim=-1, sorted=False).indices
    idx = torch.where(idx >= experts, torch.full_like(idx, -1), idx)
    return idx[(idx >= 0).any(dim=1)].contiguous()
