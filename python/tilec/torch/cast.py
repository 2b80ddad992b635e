"""Reference quantisation (``tile_kernels.torch.cast``), written from the specification
(quant-transpose.md §1, §3.1, §6): block casts to e4m3 / packed e2m1 in the three scale layouts,
dequantisation, and the helpers the E5M6, per-channel and SwiGLU references share. Plain tensor
code.

Special values (docs/kernels/quant.md, "Special values"), as the kernels: a block's amax ignores
NaN (fmax semantics, as the kernels' max reductions; torch's amax would propagate it), -0 counts
as 0 and subnormals are ordinary values (the amax clamp applies). A block whose amax is +inf (it
holds ±inf) gets sf = +inf (UE8M0 byte 0xFF) and multiplier 0 with or without round_sf: its finite
values become zeros of their sign, its ±inf and NaN values NaN. NaN is stored as the one code
0x7F in e4m3 and as 0x7 (+6, as CUDA's cvt) in e2m1, whatever its sign. Dequantisation is IEEE
arithmetic: NaN codes give NaN, an inf scale times a zero code NaN; a NaN of a float result is
"some NaN" (its sign and payload are not specified)."""
from typing import Optional, Tuple

import torch

from ..quant.common import unpack_from_e2m1fn_x2
from ..utils import align, ceil_div

_MAX = {"e4m3": 448.0, "e2m1": 6.0}
_CMIN = {"e4m3": 1e-4, "e2m1": 6.0 * 2.0 ** -126}
_FMT_OF = {torch.float8_e4m3fn: "e4m3", torch.int8: "e2m1"}


def right_shift_unsigned(x: torch.Tensor, shift: int) -> torch.Tensor:
    """x >> shift of an integer tensor with its bits taken as unsigned (a logical shift), in x's
    dtype."""
    if shift == 0:
        return x.clone()
    bits = x.element_size() * 8
    return (x >> shift) & ((1 << (bits - shift)) - 1)


def get_min_clamp_val(dtype: torch.dtype) -> float:
    """The amax clamp minimum (CMIN, §1.1) of the data dtype: float8_e4m3fn, or int8 (packed
    e2m1); a format name ('e4m3', 'e2m1') is taken too."""
    return _CMIN[dtype if isinstance(dtype, str) else _FMT_OF[dtype]]


def get_max_quant_val(dtype: torch.dtype) -> float:
    """The largest finite value (MAX, §1.1) of the data dtype, as for get_min_clamp_val."""
    return _MAX[dtype if isinstance(dtype, str) else _FMT_OF[dtype]]


def transform_sf(sf: torch.Tensor) -> torch.Tensor:
    """Scales as f32 values: packed UE8M0 int32 words (m, p) become the four scales (m, 4p + b),
    b = 0..3 from the least significant byte, each 2^(byte - 127) (byte 0: +0.0); f32 scales are
    returned as they are."""
    if sf.dtype != torch.int32:
        return sf.float()
    byts = torch.stack([right_shift_unsigned(sf, 8 * b) & 0xFF for b in range(4)], dim=-1)
    return (byts.reshape(sf.shape[0], sf.shape[1] * 4) << 23).view(torch.float32)


def convert_to_e2m1_bits(quant_tensor: torch.Tensor, max_quant_val: float, device) -> torch.Tensor:
    """The e2m1 codes (uint8, one per element, sign in bit 3) of already scaled values, rounded
    to nearest with ties to the even code and saturating at +-max_quant_val (§6.2)."""
    v = quant_tensor.to(device=device, dtype=torch.float32).clamp(-max_quant_val, max_quant_val).contiguous()
    return _e2m1_codes(v).to(torch.uint8)


def _e2m1_codes(v: torch.Tensor) -> torch.Tensor:
    """f32 -> e2m1 codes: round to nearest, ties to the even code, saturate at 6, sign kept;
    NaN (of either sign) -> 0x7, +6, as CUDA's cvt.rn.satfinite.e2m1x2 (spec §6.2)."""
    bits = v.view(torch.int32)
    sign = (bits >> 31) & 1
    a = v.abs()
    code = ((a > 0.25).int() + (a >= 0.75).int() + (a > 1.25).int() + (a >= 1.75).int() + (a > 2.5).int() +
            (a >= 3.5).int() + (a > 5.0).int())
    return torch.where(torch.isnan(v), 0x7, code | (sign << 3))


def pack_to_e2m1fn_x2(v: torch.Tensor) -> torch.Tensor:
    """f32 (..., 2L) -> packed int8 (..., L), even elements in the low nibble."""
    c = _e2m1_codes(v.float().contiguous())
    c = c.view(*c.shape[:-1], c.shape[-1] // 2, 2)
    return (c[..., 0] | (c[..., 1] << 4)).to(torch.uint8).view(torch.int8)


def to_e4m3(v: torch.Tensor) -> torch.Tensor:
    """f32 -> float8_e4m3fn, RNE with saturation to ±448 (spec §6.1): clamped, then torch's
    round-to-nearest-even conversion, as TileKernels' oracle does; NaN of either sign -> 0x7F (the
    one NaN code the kernels store: CPU and GPU NaNs differ in sign)."""
    v = v.float()
    q = v.clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(torch.uint8)
    return torch.where(torch.isnan(v), 0x7F, q).to(torch.uint8).view(torch.float8_e4m3fn)


def nan_ignoring_absmax(blocks: torch.Tensor, dim) -> torch.Tensor:
    """max |x| over ``dim`` with NaNs ignored (fmax semantics, as the kernels' reductions); 0 where
    every value is NaN, -0 as 0."""
    a = blocks.abs()
    return torch.where(torch.isnan(a), torch.zeros((), dtype=a.dtype, device=a.device), a).amax(dim=dim)


def _e4m3_to_f32(q: torch.Tensor) -> torch.Tensor:
    """float8_e4m3fn (or its bytes as uint8) -> f32, exactly."""
    return (q.view(torch.float8_e4m3fn) if q.dtype == torch.uint8 else q).float()


def _expand(sf: torch.Tensor, bm: int, bn: int, rows: int, cols: int) -> torch.Tensor:
    return sf.repeat_interleave(bm, 0).repeat_interleave(bn, 1)[:rows, :cols]


def _decode_sf(sf: torch.Tensor, nk: int) -> torch.Tensor:
    """An sf tensor in any of the §1.4 layouts -> f32 (nm, nk)."""
    return transform_sf(sf)[:, :nk]


def _decode(q: torch.Tensor) -> torch.Tensor:
    if q.dtype == torch.int8:
        return unpack_from_e2m1fn_x2(q)
    return _e4m3_to_f32(q)


def _dequant(q: torch.Tensor, q_sf: torch.Tensor, block) -> torch.Tensor:
    bm, bn = block
    v = _decode(q)
    nk = ceil_div(v.shape[1], bn)
    return v * _expand(_decode_sf(q_sf, nk), bm, bn, v.shape[0], v.shape[1])


def _round_pow2(dq: torch.Tensor) -> torch.Tensor:
    """sf rounded up to a power of two through its bits (§1.2)."""
    return ((dq.view(torch.int32) + 0x7FFFFF) & 0x7F800000).view(torch.float32)


def _layout_sf(dq: torch.Tensor, use_tma_aligned_col_major_sf: bool, use_packed_ue8m0: bool) -> torch.Tensor:
    """f32 (nm, nk) scales in the §1.4 layout the flags choose (padding zero)."""
    nm, nk = dq.shape
    if not use_tma_aligned_col_major_sf:
        return dq.contiguous()
    rows4 = align(nm, 4)
    if use_packed_ue8m0:
        words = ceil_div(nk, 4)
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
    NaN is ignored by the amax; a block whose amax is +inf gets sf = +inf and multiplier 0 (also
    with round_sf: 1 / +inf); NaN data is stored as e4m3 0x7F, e2m1 0x7 (module docstring)."""
    assert fmt in _MAX, f"cast: fmt must be 'e4m3' or 'e2m1', got {fmt}"
    if isinstance(x, tuple):
        assert x_block_size is not None
        x = _dequant(x[0], x[1], x_block_size)
    x = x.float()
    rows, cols = x.shape
    bm, bn = block_size
    nm, nk = ceil_div(rows, bm), ceil_div(cols, bn)
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
            amax = nan_ignoring_absmax(blocks, (1, 3)).clamp_min(_CMIN[fmt])
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
    """Dequantises (data, sf): decode * expanded sf in f32, then to bf16 ('bf16') or f32 ('fp32').
    IEEE products: a NaN code gives NaN, an inf scale (UE8M0 0xFF) times a zero code NaN; NaN
    results are some NaN (sign and payload unspecified)."""
    assert fmt in ("bf16", "fp32"), f"cast_back: fmt must be 'bf16' or 'fp32', got {fmt}"
    v = _dequant(x[0], x[1], block_size)
    return v.to(torch.bfloat16) if fmt == "bf16" else v
