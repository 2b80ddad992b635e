"""Reference quantisation (``tile_kernels.torch.cast`` and friends), written from the
specification (quant-transpose.md §1, §3.1, §6): block casts to e4m3 / packed e2m1 in the three
scale layouts, dequantisation, E5M6, and the fused per-channel cast. Plain tensor code."""
from typing import Optional, Tuple

import torch

_MAX = {"e4m3": 448.0, "e2m1": 6.0}
_CMIN = {"e4m3": 1e-4, "e2m1": 6.0 * 2.0 ** -126}
_E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
_HAS_FP8 = hasattr(torch, "float8_e4m3fn") and torch.float8_e4m3fn is not torch.uint8


def _ceil_div(a, b):
    return (a + b - 1) // b


def unpack_from_e2m1fn_x2(x: torch.Tensor, out_dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Decodes packed FP4: byte i holds element 2i in its low nibble and 2i+1 in its high nibble;
    code bits: sign (bit 3), exponent (bits 2-1), mantissa (bit 0). Shape (..., L) -> (..., 2L)."""
    assert x.dtype in (torch.int8, torch.uint8), f"unpack_from_e2m1fn_x2: int8 or uint8 expected, got {x.dtype}"
    if x.dim() == 0:
        raise ValueError("unpack_from_e2m1fn_x2: a 0-d tensor has no bytes to unpack")
    b = x.view(torch.uint8).to(torch.int32)
    codes = torch.stack((b & 0xF, (b >> 4) & 0xF), dim=-1).flatten(-2)
    table = torch.tensor(_E2M1_VALUES, dtype=torch.float32, device=x.device)
    mag = table[(codes & 7).long()]
    sign = torch.where((codes & 8) != 0, -1.0, 1.0).to(torch.float32)
    return (mag * sign).to(out_dtype)


def _e2m1_codes(v: torch.Tensor) -> torch.Tensor:
    """f32 -> e2m1 codes: round to nearest, ties to the even code, saturate at 6, sign kept."""
    bits = v.view(torch.int32)
    sign = (bits >> 31) & 1
    a = v.abs()
    code = ((a > 0.25).int() + (a >= 0.75).int() + (a > 1.25).int() + (a >= 1.75).int() + (a > 2.5).int() +
            (a >= 3.5).int() + (a > 5.0).int())
    return code | (sign << 3)


def pack_to_e2m1fn_x2(v: torch.Tensor) -> torch.Tensor:
    """f32 (..., 2L) -> packed int8 (..., L), even elements in the low nibble."""
    c = _e2m1_codes(v.float().contiguous())
    c = c.view(*c.shape[:-1], c.shape[-1] // 2, 2)
    return (c[..., 0] | (c[..., 1] << 4)).to(torch.uint8).view(torch.int8)


def _e4m3_bits(v: torch.Tensor) -> torch.Tensor:
    """f32 -> e4m3fn bytes (RNE, saturating at 448, sign kept) with integer arithmetic, for a
    torch without float8 dtypes; the same bits as clamp(±448).to(float8_e4m3fn)."""
    v = v.float().clamp(-448.0, 448.0)
    b = v.view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    sign = (b >> 31) << 7
    a = b & 0x7FFFFFFF
    e = a >> 23
    m = (a & 0x7FFFFF) | 0x800000
    # value = m * 2^(e - 150); e4m3 units: normals 2^(E-7-3), subnormals 2^-9
    shift = torch.clamp(141 - e, min=20, max=40)  # bits dropped from m: 20 for normals, more below 2^-6
    q = m >> shift
    rem = m - (q << shift)
    half = torch.ones_like(shift) << (shift - 1)
    up = (rem > half) | ((rem == half) & ((q & 1) == 1))
    q = q + up.to(torch.int64)
    # q counts units of 2^(max(e,121) - 127 - 3); rebuild the code
    ebase = torch.clamp(e - 120, min=0)  # biased e4m3 exponent of the unit scale (0: subnormal)
    code = torch.where(ebase == 0, q, (ebase << 3) + (q - 8))
    code = torch.where(a == 0, torch.zeros_like(code), code)
    return (code | sign).to(torch.uint8)


def to_e4m3(v: torch.Tensor) -> torch.Tensor:
    """f32 -> float8_e4m3fn, RNE with saturation to ±448 (uint8 bytes on a torch without fp8)."""
    if _HAS_FP8:
        return v.clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    return _e4m3_bits(v)


def _e4m3_to_f32(q: torch.Tensor) -> torch.Tensor:
    if _HAS_FP8 and q.dtype == torch.float8_e4m3fn:
        return q.float()
    b = q.view(torch.uint8).to(torch.int32)
    e = (b >> 3) & 0xF
    m = (b & 7).float()
    mag = torch.where(e == 0, m * 2.0 ** -9, (1.0 + m / 8.0) * torch.pow(2.0, (e - 7).float()))
    return torch.where((b & 0x80) != 0, -mag, mag)


def _expand(sf: torch.Tensor, bm: int, bn: int, rows: int, cols: int) -> torch.Tensor:
    return sf.repeat_interleave(bm, 0).repeat_interleave(bn, 1)[:rows, :cols]


def _decode_sf(sf: torch.Tensor, nk: int) -> torch.Tensor:
    """An sf tensor in any of the §1.4 layouts -> f32 (nm, nk)."""
    if sf.dtype == torch.int32:  # packed UE8M0: byte k % 4 of word (m, k // 4)
        words = torch.empty(sf.shape, dtype=torch.int32, device=sf.device).copy_(sf)  # row-major, any view
        b = words.view(torch.uint8).view(sf.shape[0], sf.shape[1] * 4)[:, :nk].to(torch.int32)
        return (b << 23).view(torch.float32)
    return sf.float()[:, :nk]


def _decode(q: torch.Tensor) -> torch.Tensor:
    if q.dtype == torch.int8:
        return unpack_from_e2m1fn_x2(q)
    return _e4m3_to_f32(q)


def _dequant(q: torch.Tensor, q_sf: torch.Tensor, block) -> torch.Tensor:
    bm, bn = block
    v = _decode(q)
    nk = _ceil_div(v.shape[1], bn)
    return v * _expand(_decode_sf(q_sf, nk), bm, bn, v.shape[0], v.shape[1])


def _round_pow2(dq: torch.Tensor) -> torch.Tensor:
    """sf rounded up to a power of two through its bits (§1.2)."""
    return ((dq.view(torch.int32) + 0x7FFFFF) & 0x7F800000).view(torch.float32)


def _layout_sf(dq: torch.Tensor, use_tma_aligned_col_major_sf: bool, use_packed_ue8m0: bool) -> torch.Tensor:
    """f32 (nm, nk) scales in the §1.4 layout the flags choose (padding zero)."""
    nm, nk = dq.shape
    if not use_tma_aligned_col_major_sf:
        return dq.contiguous()
    rows4 = _ceil_div(nm, 4) * 4
    if use_packed_ue8m0:
        words = _ceil_div(nk, 4)
        if rows4 == 0:  # no rows: nothing to pack (a byte view of an empty tensor cannot become int32)
            return torch.zeros((words, 0), dtype=torch.int32, device=dq.device)[:, :nm].T
        e = torch.zeros((words * 4, rows4), dtype=torch.uint8, device=dq.device)
        e[:nk, :nm] = (dq.view(torch.int32) >> 23).to(torch.uint8).T
        # word (m, p) holds bytes (m, 4p + b), b = 0..3, little-endian
        store = e.view(words, 4, rows4).permute(0, 2, 1).contiguous().view(torch.int32).view(words, rows4)
        return store[:, :nm].T
    store = torch.zeros((nk, rows4), dtype=torch.float32, device=dq.device)
    store[:, :nm] = dq.T
    return store[:, :nm].T


def cast(x, fmt: str, block_size: Tuple[int, int] = (32, 32), sf: Optional[torch.Tensor] = None,
         x_block_size: Optional[Tuple[int, int]] = None, round_sf: bool = False,
         use_tma_aligned_col_major_sf: bool = False, use_packed_ue8m0: bool = False):
    """Block quantisation to e4m3 or e2m1 (packed in int8) with one scale per block_size block.
    Returns (data, sf), or data alone when ``sf`` is given (then its reciprocal is the multiplier).
    """
    assert fmt in _MAX, f"cast: fmt must be 'e4m3' or 'e2m1', got {fmt}"
    if isinstance(x, tuple):
        assert x_block_size is not None
        x = _dequant(x[0], x[1], x_block_size)
    x = x.float()
    rows, cols = x.shape
    bm, bn = block_size
    nm, nk = _ceil_div(rows, bm), _ceil_div(cols, bn)
    padded = torch.zeros((nm * bm, nk * bn), dtype=torch.float32, device=x.device)
    padded[:rows, :cols] = x
    blocks = padded.view(nm, bm, nk, bn)
    MAX = torch.tensor(_MAX[fmt], dtype=torch.float32, device=x.device)
    if sf is not None:
        assert not use_tma_aligned_col_major_sf and not use_packed_ue8m0
        q_mult = torch.reciprocal(sf.float())
        dq = None
    else:
        if blocks.numel():
            amax = blocks.abs().amax(dim=(1, 3)).clamp_min(_CMIN[fmt])
        else:
            amax = torch.zeros((nm, nk), dtype=torch.float32, device=x.device)
        dq = amax / MAX
        if round_sf:
            dq = _round_pow2(dq)
            q_mult = 1.0 / dq
        else:
            q_mult = MAX / amax
    scaled = (blocks * q_mult[:, None, :, None]).view(nm * bm, nk * bn)[:rows, :cols]
    data = to_e4m3(scaled) if fmt == "e4m3" else pack_to_e2m1fn_x2(scaled)
    if sf is not None:
        return data
    return data, _layout_sf(dq, use_tma_aligned_col_major_sf, use_packed_ue8m0)


def cast_back(x, fmt: str, block_size: Tuple[int, int] = (32, 32)) -> torch.Tensor:
    """Dequantises (data, sf): decode * expanded sf in f32, then to bf16 ('bf16') or f32 ('fp32')."""
    assert fmt in ("bf16", "fp32"), f"cast_back: fmt must be 'bf16' or 'fp32', got {fmt}"
    v = _dequant(x[0], x[1], block_size)
    return v.to(torch.bfloat16) if fmt == "bf16" else v


# ---- E5M6 (§6.3) ----

def _e5m6_codes(v: torch.Tensor) -> torch.Tensor:
    """f32 -> 12-bit E5M6 codes (int64): truncate to f16, then the parity-aware round-up."""
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
    return c & 0xFFF


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
    (uint8 (T, 3H/2), sf) with MAX 65024 and the amax clamped at 1e-4."""
    T, H = x.shape
    assert num_per_channels == H and H % 8 == 0
    v = x.float()
    amax = v.abs().amax(dim=1, keepdim=True).clamp_min(1e-4) if T else torch.zeros((0, 1), device=x.device)
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
    nk = _ceil_div(v.shape[1], bn)
    v = v * _expand(_decode_sf(q_sf, nk), bm, bn, v.shape[0], v.shape[1])
    return v.to(torch.bfloat16) if fmt == "bf16" else v


def per_channel_cast_fused(x, num_per_tokens: int, num_per_channels: Optional[int] = None, round_sf: bool = False,
                           pos_to_token: Optional[torch.Tensor] = None):
    """Row gather (pos < 0: zero row, data and scale), then a per-channel (num_per_tokens x 1)
    e4m3 cast of x or of the dequantised (q, q_sf) with 1 x num_per_channels groups."""
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
