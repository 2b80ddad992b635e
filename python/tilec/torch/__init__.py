"""PyTorch reference implementations (``tile_kernels.torch``), written from the specification
(quant-transpose.md §3.1); the tests use them as oracles. Plain tensor code: any device."""
from typing import Optional, Tuple

import torch

__all__ = ["cast", "cast_back", "unpack_from_e2m1fn_x2", "pack_to_e2m1fn_x2", "transpose", "batched_transpose"]

_MAX = {"e4m3": 448.0, "e2m1": 6.0}
_CMIN = {"e4m3": 1e-4, "e2m1": 6.0 * 2.0 ** -126}
_E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


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
    mag = table[codes & 7]
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


def _expand(sf: torch.Tensor, bm: int, bn: int, rows: int, cols: int) -> torch.Tensor:
    return sf.repeat_interleave(bm, 0).repeat_interleave(bn, 1)[:rows, :cols]


def _decode_sf(sf: torch.Tensor, nk: int) -> torch.Tensor:
    """An sf tensor in any of the §1.4 layouts -> f32 (nm, nk)."""
    if sf.dtype == torch.int32:  # packed UE8M0: byte k % 4 of word (m, k // 4)
        b = sf.contiguous().view(torch.uint8).view(sf.shape[0], -1)[:, :nk].to(torch.int32)
        return (b << 23).view(torch.float32)
    return sf.float()


def _dequant(q: torch.Tensor, q_sf: torch.Tensor, block) -> torch.Tensor:
    bm, bn = block
    v = unpack_from_e2m1fn_x2(q) if q.dtype == torch.int8 else q.float()
    nk = _ceil_div(v.shape[1], bn)
    return v * _expand(_decode_sf(q_sf, nk), bm, bn, v.shape[0], v.shape[1])


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
        amax = blocks.abs().amax(dim=(1, 3)).clamp_min(_CMIN[fmt])
        dq = amax / MAX
        if round_sf:
            dq = ((dq.view(torch.int32) + 0x7FFFFF) & 0x7F800000).view(torch.float32)
            q_mult = 1.0 / dq
        else:
            q_mult = MAX / amax
    scaled = (blocks * q_mult[:, None, :, None]).view(nm * bm, nk * bn)[:rows, :cols]
    if fmt == "e4m3":
        data = scaled.clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    else:
        data = pack_to_e2m1fn_x2(scaled)
    if sf is not None:
        return data
    if use_tma_aligned_col_major_sf:
        # the storage recipe of §1.4: column-major with rows padded to a multiple of 4, so that
        # the strides are (1, align(nm, 4)) even for a single column
        rows4 = _ceil_div(nm, 4) * 4
        if use_packed_ue8m0:
            words = _ceil_div(nk, 4)
            e = torch.zeros((words * 4, rows4), dtype=torch.uint8, device=x.device)
            e[:nk, :nm] = (dq.view(torch.int32) >> 23).to(torch.uint8).T
            # word (m, p) holds bytes (m, 4p + b), b = 0..3, little-endian
            store = e.view(words, 4, rows4).permute(0, 2, 1).contiguous().view(torch.int32).view(words, rows4)
            return data, store[:, :nm].T
        store = torch.zeros((nk, rows4), dtype=torch.float32, device=x.device)
        store[:, :nm] = dq.T
        return data, store[:, :nm].T
    return data, dq.contiguous()


def cast_back(x, fmt: str, block_size: Tuple[int, int] = (32, 32)) -> torch.Tensor:
    """Dequantises (data, sf): decode * expanded sf in f32, then to bf16 ('bf16') or f32 ('fp32')."""
    assert fmt in ("bf16", "fp32"), f"cast_back: fmt must be 'bf16' or 'fp32', got {fmt}"
    v = _dequant(x[0], x[1], block_size)
    return v.to(torch.bfloat16) if fmt == "bf16" else v


def transpose(x: torch.Tensor) -> torch.Tensor:
    return x.T.contiguous()


def batched_transpose(x: torch.Tensor) -> torch.Tensor:
    return x.transpose(1, 2).contiguous()
from .moe import *  # noqa: E402,F401,F403  (the MoE references, tilec/torch/moe.py)
