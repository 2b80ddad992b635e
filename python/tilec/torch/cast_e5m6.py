"""Reference E5M6 quantisation (``tile_kernels.torch.cast_e5m6``, spec quant-transpose.md §3.1,
§6.3): the per-row cast to 12-bit E5M6 codes, 8 per 12 bytes, and its dequantisation.

Special values as in tilec.torch.cast (docs/kernels/quant.md, "Special values"): the row's amax
ignores NaN; a row whose amax is +inf gets sf = +inf (UE8M0 0xFF) and multiplier 0 (finite values
become zeros of their sign, ±inf and NaN become NaN); NaN is stored as the code 0x7FF (the top 12
bits of 0x7FFF, the f16 NaN of the GPU's conversion), whatever its sign and payload; the E5M6 inf
code is never produced. A NaN code decodes to NaN."""
from typing import Tuple

import torch

from ..utils import ceil_div
from .cast import _decode_sf, _expand, _layout_sf, _round_pow2, nan_ignoring_absmax
from .cast import right_shift_unsigned, transform_sf  # noqa: F401  (TileKernels has them in this module too)


E5M6_NAN = 0x7FF   # the one NaN code: the top 12 bits of the GPU's f16 NaN 0x7FFF


def _e5m6_codes(v: torch.Tensor) -> torch.Tensor:
    """f32 -> 12-bit E5M6 codes (int64): truncate to f16, then the parity-aware round-up; NaN ->
    E5M6_NAN."""
    b = v.contiguous().view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    sign = (b >> 31) << 15
    e = (b >> 23) & 0xFF
    m = b & 0x7FFFFF
    normal = ((e - 112) << 10) | (m >> 13)
    sub = (m | 0x800000) >> torch.clamp(126 - e, 0, 63)
    mag = torch.where(e >= 143, torch.full_like(e, 0x7C00),
                      torch.where(e >= 113, normal, torch.where(e >= 103, sub, torch.zeros_like(e))))
    c = (sign | mag) >> 4
    rem = b & 0x1FFFF
    c = c + (((c & 1) + rem) > 0x10000).to(torch.int64)
    return torch.where(torch.isnan(v), E5M6_NAN, c & 0xFFF)


def _pack_e5m6(codes: torch.Tensor) -> torch.Tensor:
    """(T, H) codes -> (T, 3H/2) uint8: 8 codes per 3 little-endian u32 words (MSB-first)."""
    T, H = codes.shape
    h = codes.view(T, H // 8, 8)
    w0 = (h[..., 0] << 20) | (h[..., 1] << 8) | (h[..., 2] >> 4)
    w1 = ((h[..., 2] & 0xF) << 28) | (h[..., 3] << 16) | (h[..., 4] << 4) | (h[..., 5] >> 8)
    w2 = ((h[..., 5] & 0xFF) << 24) | (h[..., 6] << 12) | h[..., 7]
    words = torch.stack((w0, w1, w2), dim=-1)  # (T, H/8, 3)
    byts = torch.stack([(words >> (8 * i)) & 0xFF for i in range(4)], dim=-1)
    return byts.to(torch.uint8).reshape(T, H // 8 * 12)


def _unpack_e5m6(x: torch.Tensor) -> torch.Tensor:
    """(T, 3H/2) uint8 -> (T, H) f32 (exact)."""
    T, P = x.shape
    b = x.to(torch.int64).view(T, P // 12, 3, 4)
    w = b[..., 0] | (b[..., 1] << 8) | (b[..., 2] << 16) | (b[..., 3] << 24)
    w0, w1, w2 = w[..., 0], w[..., 1], w[..., 2]
    f = [(w0 >> 16), (w0 >> 4), (w0 << 8) | (w1 >> 24), (w1 >> 12), w1, (w1 << 12) | (w2 >> 20), (w2 >> 8), (w2 << 4)]
    h = torch.stack([v & 0xFFF0 for v in f], dim=-1).view(T, P // 12 * 8)
    h = torch.where(h >= 0x8000, h - 0x10000, h).to(torch.int16)
    return h.view(torch.float16).float()


def cast_to_e5m6(x: torch.Tensor, num_per_channels: int, use_tma_aligned_col_major_sf: bool = False,
                 round_sf: bool = False, use_packed_ue8m0: bool = False):
    """Per-row E5M6 quantisation (num_per_channels must be the row length): returns
    (uint8 (T, 3H/2), sf) with MAX 65024 and the amax clamped at 1e-4 (NaN ignored; +inf: sf
    +inf, multiplier 0; NaN stored as 0x7FF)."""
    T, H = x.shape
    assert num_per_channels == H and H % 8 == 0
    v = x.float()
    amax = nan_ignoring_absmax(v, 1)[:, None].clamp_min(1e-4) if T else torch.zeros((0, 1), device=x.device)
    MAX = torch.tensor(65024.0, dtype=torch.float32, device=x.device)
    dq = amax / MAX
    if round_sf:
        dq = _round_pow2(dq)
        e = (dq.view(torch.int32) >> 23) - 127
        inv = ((127 - e).clamp(min=0) << 23).view(torch.float32)
    else:
        inv = MAX / amax
    out = _pack_e5m6(_e5m6_codes(v * inv)) if T else torch.empty((0, 3 * H // 2), dtype=torch.uint8,
                                                                   device=x.device)
    return out, _layout_sf(dq, use_tma_aligned_col_major_sf, use_packed_ue8m0)


def cast_back_from_e5m6(x, fmt: str, x_block_size: Tuple[int, int]) -> torch.Tensor:
    """Dequantises (E5M6 bytes, sf) to bf16 or f32."""
    assert fmt in ("bf16", "fp32")
    q, q_sf = x
    v = _unpack_e5m6(q)
    bm, bn = x_block_size
    nk = ceil_div(v.shape[1], bn)
    v = v * _expand(_decode_sf(q_sf, nk), bm, bn, v.shape[0], v.shape[1])
    return v.to(torch.bfloat16) if fmt == "bf16" else v
