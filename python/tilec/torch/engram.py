"""Reference Engram hash and gate (``tile_kernels.torch.engram``, spec moe-engram-mhc.md §2.1,
§2.4, §4, §5.3), written from the specification. Imported by module path: tilec.torch does not
re-export these names, as TileKernels' does not. Float64 inputs to the gate stay float64 with no
narrowing, so that the spec's backward formulas (§2.5) can be checked against autograd exactly."""
import math
from typing import Tuple, Union

import torch

from .mhc import _sigmoid


def make_offsets(vocab_sizes: torch.Tensor) -> torch.Tensor:
    """int32 (L, (M-1)*B): per layer the exclusive prefix sum of the flattened (L, M-1, B) table
    sizes, so that every hash table of a layer owns its own range of rows (§2.1)."""
    flat = vocab_sizes.reshape(vocab_sizes.shape[0], -1).long()
    return (torch.cumsum(flat, dim=1) - flat).to(torch.int32)


def engram_hash_ref(ngram_token_ids: torch.Tensor, multipliers: torch.Tensor, vocab_sizes: torch.Tensor,
                    offsets: torch.Tensor) -> torch.Tensor:
    """int32 (L, T, (M-1)*B), §2.1: h = XOR over n of int64(ids[t, n]) * multipliers[l, n] (int64
    products wrapping modulo 2^64, ids sign-extended); after each n >= 1 the B tables of n-gram
    order n take floormod(h, vocab_sizes[l, n-1, j]) in [0, vocab) plus their offset."""
    ids = ngram_token_ids.long()                       # (T, M)
    mult = multipliers.long()                          # (L, M)
    vocab = vocab_sizes.long()                         # (L, M-1, B)
    L, M = mult.shape
    B = vocab.shape[2]
    T = ids.shape[0]
    h = torch.zeros((L, T), dtype=torch.int64, device=ids.device)
    cols = []
    for n in range(M):
        h = h ^ (ids[None, :, n] * mult[:, n, None])
        if n >= 1:
            # torch's % on int64 is the floor modulo: the result has the sign of the divisor
            cols.append(torch.remainder(h[:, :, None], vocab[:, None, n - 1, :]))
    out = torch.cat(cols, dim=2) if cols else h.new_zeros((L, T, 0))
    out = out + offsets.long().reshape(L, 1, (M - 1) * B)
    return out.to(torch.int32).contiguous()


def engram_gate_ref(hidden_states: torch.Tensor, k: torch.Tensor, v: torch.Tensor, weight_hidden: torch.Tensor,
                    weight_embed: torch.Tensor, clamp_value: float, eps: float, save_for_backward: bool = False
                    ) -> Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]:
    """§2.4 as the reference of §5.3 computes it, in f32: x, k (..., hc, D), v (..., D), weights
    (hc, D); raw = sum_d (x*wh)*(k*we); rstd = rsqrt(sum_d x^2 / D + eps) for x and for k;
    dot = raw*rstd_x*rstd_k*D^-1/2; g = sigmoid(sqrt(max(|dot|, clamp_value))*sign(dot)) (so g = 0.5
    where dot = 0); output = bf16(x + g*v). clamp_value comes before eps (§7.4), unlike
    engram_gate_fwd. With save_for_backward, (output, raw, g, rstd_x, rstd_k), the last four f32
    (..., hc): the saved dot is the unnormalised raw sum (§7.5)."""
    wide = hidden_states.dtype == torch.float64
    cd = torch.float64 if wide else torch.float32
    x = hidden_states.to(cd)
    kf = k.to(cd)
    vf = v.to(cd)
    wh = weight_hidden.to(cd)
    we = weight_embed.to(cd)
    D = x.shape[-1]
    scale = torch.tensor(1.0 / math.sqrt(D), dtype=cd, device=x.device)   # D^-1/2 in double, used as f32
    rstd_x = torch.rsqrt((x * x).sum(-1) / D + eps)
    rstd_k = torch.rsqrt((kf * kf).sum(-1) / D + eps)
    raw = ((x * wh) * (kf * we)).sum(-1)
    dot = raw * rstd_x * rstd_k * scale
    gate = _sigmoid(torch.sqrt(torch.clamp_min(dot.abs(), clamp_value)) * torch.sign(dot))
    output = (x + gate.unsqueeze(-1) * vf.unsqueeze(-2)).to(hidden_states.dtype if wide else torch.bfloat16)
    if save_for_backward:
        return output, raw, gate, rstd_x, rstd_k
    return output
