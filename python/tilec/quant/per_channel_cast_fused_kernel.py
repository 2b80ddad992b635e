"""The fused per-channel cast (spec quant-transpose.md §2.13): row gather and dequantised FP8
input before the 128 x 1 e4m3 cast."""
from typing import Optional

import torch

from .. import _runtime
from .._ops import kernel_op, QUANT
from ..utils import ceil_div
from .._checks import check_int
from .common import FLOAT_IN, check_flags, check_x2d, kernel


@kernel_op(kinds={"x": QUANT})
def per_channel_cast_fused(x, fmt: str, num_per_tokens: int, round_sf: bool = False,
                           num_per_channels: Optional[int] = None, pos_to_token: Optional[torch.Tensor] = None):
    """Per-channel (128 x 1) e4m3 cast, optionally of gathered rows (output row p is input row
    pos_to_token[p], zeros where it is negative) and of a per-token FP8 QuantTensor input
    (x = (e4m3 data, f32 sf (T, H / 128)), num_per_channels = 128, dequantised first).
    Returns (out (T_out, H), sf f32 (cdiv(T_out, 128), H))."""
    fn = "per_channel_cast_fused"
    if fmt != "e4m3":
        raise ValueError(f"{fn}: fmt must be 'e4m3', got {fmt!r}")
    check_int(fn, "num_per_tokens", num_per_tokens)
    if num_per_tokens != 128:
        raise ValueError(f"{fn}: num_per_tokens must be 128, got {num_per_tokens}")
    check_flags(fn, round_sf=round_sf)
    if num_per_channels is not None:
        check_int(fn, "num_per_channels", num_per_channels)
    xs = None
    if isinstance(x, tuple):
        if len(x) != 2:
            raise ValueError(f"{fn}: a QuantTensor x is a (data, sf) pair")
        x, xs = x
        check_x2d(x, fn)
        if x.dtype != torch.float8_e4m3fn:
            raise ValueError(f"{fn}: QuantTensor data must be float8_e4m3fn, got {x.dtype}")
        if num_per_channels != 128:
            raise ValueError(f"{fn}: QuantTensor input needs num_per_channels == 128, got {num_per_channels}")
        T, H = x.shape
        if H % 128:
            raise ValueError(f"{fn}: QuantTensor input needs hidden % 128 == 0, got {H}")
        if not isinstance(xs, torch.Tensor) or xs.dtype != torch.float32 or xs.dim() != 2 or not xs.is_contiguous():
            raise ValueError(f"{fn}: x's sf must be a contiguous 2-D float32 tensor")
        if tuple(xs.shape) != (T, H // 128):
            raise ValueError(f"{fn}: x's sf must have shape {(T, H // 128)}, got {tuple(xs.shape)}")
        tname = "e4m3"
    else:
        check_x2d(x, fn)
        if x.dtype not in FLOAT_IN:
            raise ValueError(f"{fn}: x must be bfloat16 or float32, got {x.dtype}")
        if num_per_channels is not None:
            raise ValueError(f"{fn}: num_per_channels is only for QuantTensor input")
        tname = FLOAT_IN[x.dtype]
    T, H = x.shape
    if pos_to_token is not None:
        if (not isinstance(pos_to_token, torch.Tensor) or pos_to_token.dtype != torch.int32 or pos_to_token.dim() != 1
                or not pos_to_token.is_contiguous()):
            raise ValueError(f"{fn}: pos_to_token must be a contiguous 1-D int32 tensor")
        if pos_to_token.numel() % 16:
            raise ValueError(f"{fn}: len(pos_to_token) must be a multiple of 16, got {pos_to_token.numel()}")
        t_out = pos_to_token.numel()
        if t_out and T == 0:
            raise ValueError(f"{fn}: pos_to_token gathers rows from an empty x")
    else:
        if T % 128:
            raise ValueError(f"{fn}: num_tokens must be a multiple of 128 (without pos_to_token), got {T}")
        t_out = T
    out = torch.empty((t_out, H), dtype=torch.float8_e4m3fn, device=x.device)
    sf = torch.empty((ceil_div(t_out, 128), H), dtype=torch.float32, device=x.device)
    if t_out == 0 or H == 0:
        return out, sf
    # the plain cast walks its tiles with one persistent block per SM, three tiles in flight
    # (H200, 16384 x 7168: 91.3 % of the copy ceiling; 75.1 % one tile per block, 59 % before the
    # tile went through shared memory; 2026-11-30, `python3 bench/ab_generics.py`); the gathering
    # forms stay one tile per block
    plain = pos_to_token is None and xs is None
    k = kernel("per_channel_cast", x, T=tname, H=H, ROUND=round_sf, STAGES=3 if plain else 0, WAVES=1,
               has_pos=pos_to_token is not None, has_xs=xs is not None)
    k.launch(x, out, sf, pos_to_token, xs, stream=_runtime.stream(x))
    return out, sf
