"""Reference fused per-channel cast (``tile_kernels.torch.per_channel_cast_fused``, spec
quant-transpose.md §3.1): row gather, then the 128 x 1 e4m3 cast of the rows or of their
dequantised FP8 values."""
from typing import Optional

import torch

from .cast import _decode, _dequant, _expand, cast


def per_channel_cast_fused(x, num_per_tokens: int, num_per_channels: Optional[int], round_sf: bool,
                           pos_to_token: Optional[torch.Tensor]):
    """Row gather (pos < 0: zero row, data and scale), then a per-channel (num_per_tokens x 1)
    e4m3 cast of x or of the dequantised (q, q_sf) with 1 x num_per_channels groups. Special
    values as in tilec.torch.cast: NaN codes and inf scales dequantise as IEEE says, then the
    cast's rules (NaN ignored by the amax, +inf columns get sf = +inf, NaN stored as 0x7F)."""
    quant = isinstance(x, tuple)
    if pos_to_token is not None:
        idx = pos_to_token.long().clamp(min=0)
        keep = (pos_to_token >= 0)[:, None]
        if quant:
            q, s = x
            qv = torch.where(keep, _decode(q[idx]), torch.zeros((), device=q.device))
            sv = torch.where(keep, s[idx].float(), torch.zeros((), device=s.device))
            x = qv * _expand(sv, 1, num_per_channels, qv.shape[0], qv.shape[1])
        else:
            x = torch.where(keep, x[idx].float(), torch.zeros((), device=x.device))
    elif quant:
        x = _dequant(x[0], x[1], (1, num_per_channels))
    return cast(x.float(), "e4m3", (num_per_tokens, 1), round_sf=round_sf)
