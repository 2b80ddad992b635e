"""Per-channel casts (spec quant-transpose.md §2.12-§2.14, §2.16): per_channel_cast, the fused
variant (row gather, dequantised FP8 input), and the transposing casts with and without SwiGLU."""
from typing import Optional

import torch

from .. import _runtime
from .common import ceil_div, is_bf16_value, kernel

_FLOAT_IN = {torch.bfloat16: "bf16", torch.float32: "f32"}


def _check_x2d(x, fn: str):
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{fn}: x must be a tensor")
    if x.dim() != 2:
        raise ValueError(f"{fn}: x must be 2-D (num_tokens, hidden), got {x.dim()}-D")
    if not x.is_contiguous():
        raise ValueError(f"{fn}: x must be contiguous")


def per_channel_cast(x: torch.Tensor, fmt: str, num_per_tokens: int, round_sf: bool = False):
    """e4m3 cast with one scale per 128 tokens of each channel: x bf16/f32 contiguous (T, H) with
    T % 128 == 0 and H % 64 == 0. Returns (out (T, H), sf f32 (T / 128, H))."""
    fn = "per_channel_cast"
    if fmt != "e4m3":
        raise ValueError(f"{fn}: fmt must be 'e4m3', got {fmt!r}")
    _check_x2d(x, fn)
    if x.dtype not in _FLOAT_IN:
        raise ValueError(f"{fn}: x must be bfloat16 or float32, got {x.dtype}")
    if num_per_tokens != 128:
        raise ValueError(f"{fn}: num_per_tokens must be 128, got {num_per_tokens}")
    T, H = x.shape
    if T % 128:
        raise ValueError(f"{fn}: num_tokens must be a multiple of 128, got {T}")
    if H % 64:
        raise ValueError(f"{fn}: hidden must be a multiple of 64, got {H}")
    return per_channel_cast_fused(x, "e4m3", num_per_tokens=num_per_tokens, round_sf=round_sf)


def per_channel_cast_fused(x, fmt: str, num_per_tokens: int, round_sf: bool = False,
                           num_per_channels: Optional[int] = None, pos_to_token: Optional[torch.Tensor] = None):
    """Per-channel (128 x 1) e4m3 cast, optionally of gathered rows (output row p is input row
    pos_to_token[p], zeros where it is negative) and of a per-token FP8 QuantTensor input
    (x = (e4m3 data, f32 sf (T, H / 128)), num_per_channels = 128, dequantised first).
    Returns (out (T_out, H), sf f32 (cdiv(T_out, 128), H))."""
    fn = "per_channel_cast_fused"
    if fmt != "e4m3":
        raise ValueError(f"{fn}: fmt must be 'e4m3', got {fmt!r}")
    if num_per_tokens != 128:
        raise ValueError(f"{fn}: num_per_tokens must be 128, got {num_per_tokens}")
    xs = None
    if isinstance(x, tuple):
        if len(x) != 2:
            raise ValueError(f"{fn}: a QuantTensor x is a (data, sf) pair")
        x, xs = x
        _check_x2d(x, fn)
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
        _check_x2d(x, fn)
        if x.dtype not in _FLOAT_IN:
            raise ValueError(f"{fn}: x must be bfloat16 or float32, got {x.dtype}")
        if num_per_channels is not None:
            raise ValueError(f"{fn}: num_per_channels is only for QuantTensor input")
        tname = _FLOAT_IN[x.dtype]
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
    # tile went through shared memory); the gathering forms stay one tile per block
    plain = pos_to_token is None and xs is None
    k = kernel("per_channel_cast", x, T=tname, H=H, ROUND=round_sf, STAGES=3 if plain else 0, WAVES=1,
               has_pos=pos_to_token is not None, has_xs=xs is not None)
    k.launch(x, out, sf, pos_to_token, xs, stream=_runtime.stream(x))
    return out, sf


def _transpose_cast(x, npt, round_sf, without_transpose, clamp, swiglu, fn):
    _check_x2d(x, fn)
    if x.dtype != torch.bfloat16:
        raise ValueError(f"{fn}: x must be bfloat16, got {x.dtype}")
    if npt not in (32, 128):
        raise ValueError(f"{fn}: num_per_tokens must be 32 or 128, got {npt}")
    T, HX = x.shape
    if T % 128:
        raise ValueError(f"{fn}: num_tokens must be a multiple of 128, got {T}")
    if swiglu and HX % 128:
        raise ValueError(f"{fn}: x.shape[1] must be a multiple of 128, got {HX}")
    if not swiglu and HX % 64:
        raise ValueError(f"{fn}: hidden must be a multiple of 64, got {HX}")
    HO = HX // 2 if swiglu else HX
    out = torch.empty((T, HO) if without_transpose else (HO, T), dtype=torch.float8_e4m3fn, device=x.device)
    sf = torch.empty((T // npt, HO), dtype=torch.float32, device=x.device)
    if T == 0 or HO == 0:
        return out, sf
    # H200, 16384 rows, % of the copy ceiling (bench/results/2026-11-30/session11/): one scale
    # per 128 rows without SwiGLU: 128 x 128 tiles, persistent blocks with 3 tiles in flight, 88.7
    # (81.9 one tile per block with blocks_per_sm(3)); with SwiGLU: 128 x 64 tiles, persistent
    # with 2 stages and 2 blocks per SM, 54.1 (53.5 one per block with blocks_per_sm(3), 45.8 with
    # 128 x 32 tiles; 56.7 before the kernel became a loop over tiles); one scale per 32
    # rows: persistent, 2 stages, 2 blocks per SM, 31.8 (22.3 one tile per block). Otherwise
    # 128 x 64 one per block (32 columns measured slower). Session 13, with silu(): SwiGLU one tile
    # per block with blocks_per_sm(3), 56.4 (persistent 53.9; 8192 x 2 x 2048: 48.9 against 47.2).
    # Session 14, with bf16 widened by integer arithmetic and paired roundings: persistent again,
    # 63.7 against 60.7 one tile per block (8192 x 2 x 2048: 55.9 against 51.3; call 7).
    # Session 15: without SwiGLU, the persistent blocks' tiles in y-major order (down the rows, so
    # the blocks at work together write whole rows of the transposed output): 91.9 against 88.3
    # (8064 rows: 85.9 against 84.7; one scale per 32 rows 45.6 against 45.1); with SwiGLU 0.6-0.9
    # points slower, not taken (call 3).
    # SwiGLU untransposed with one scale per 128 rows: persistent with the table 80.6 against 37.4
    # one tile per block (65.5 persistent without it; call 15).
    # Session 16: with one scale per 32 rows each thread holds runs of 8 rows (the kernel's
    # row_run), which leaves 74 registers instead of 93: 3 persistent blocks per SM of 128 x 64
    # tiles, 86.4 against 77.5 with 2 (8064 rows: 82.1 against 74.2; 49.7 / 51.7 before the runs;
    # call 1); 128 x 128 tiles as for one scale per 128 rows 89.1 against 87.7 (8064 rows: 83.5
    # against 82.4; call 2).
    cfg = dict(BK=64)
    if not swiglu and HO % 128 == 0:
        cfg = dict(BK=128, STAGES=3, WAVES=1, YMAJOR=not without_transpose)
    elif npt == 32 or swiglu:
        cfg = dict(BK=64, STAGES=2, WAVES=3 if npt == 32 and not swiglu else 2,
                   YMAJOR=not swiglu and not without_transpose)
    # SwiGLU in persistent blocks: the SiLU of the gate half looked up in a table of its values in
    # shared memory (loaded once per block), when the clamped gate is still a bf16 value: 77.5
    # against 64.4 % of the copy ceiling at 16384 x 2 x 3584, 64.2 against 56.3 at 8192 x 2 x 2048
    # (H200, session 15 call 13); one scale per 32 rows untransposed 49.4 against 47.9 (call 9);
    # transposed with one scale per 32 rows 39.0 against 46.1 (call 15), but with the runs of 8
    # rows 78.2 against 66.0 (8064 rows: 71.5 against 61.4; session 16 call 1). Every SwiGLU
    # configuration above is persistent, which the table (loaded once per block) needs.
    lut = None
    if USE_SILU_LUT and swiglu and (clamp is None or is_bf16_value(float(clamp))):
        lut = silu_lut(x.device)
    k = kernel("per_channel_cast_transpose", x, SWIGLU=swiglu, NPT=npt, ROUND=round_sf, CLAMP=clamp is not None, **cfg,
               has_outt=not without_transpose, has_outn=without_transpose, has_silu_lut=lut is not None)
    k.launch(x, sf, None if without_transpose else out, out if without_transpose else None, lut,
             float(clamp) if clamp is not None else 0.0, stream=_runtime.stream(x))
    return out, sf


USE_SILU_LUT = True   # False: silu() computed (for A/B runs)
SILU_LUT_SIZE = 8196   # dsl/quant.tl
_silu_luts = {}


def silu_lut(device: torch.device) -> torch.Tensor:
    """The SiLU table of the per-channel SwiGLU cast on ``device`` (dsl/quant.tl, SILU_LUT_SIZE:
    silu() of the 8192 bf16 values 2^-25 <= |l| < 2^7 and the multipliers of l outside that
    range), computed once by the kernel silu_table, so that a lookup gives the bits the kernels'
    silu() computes."""
    key = (device.type, device.index)
    t = _silu_luts.get(key)
    if t is None:
        t = torch.empty(SILU_LUT_SIZE, dtype=torch.float32, device=device)
        kernel("silu_table", t).launch(t, stream=_runtime.stream(t))
        _silu_luts[key] = t
    return t


def per_channel_cast_and_transpose(x: torch.Tensor, fmt: str, num_per_tokens: int, round_sf: bool = False):
    """e4m3 cast with one scale per ``num_per_tokens`` (32 or 128) tokens of each channel, the
    data returned transposed: out (H, T), sf f32 (T / num_per_tokens, H). x bf16 contiguous,
    T % 128 == 0, H % 64 == 0."""
    fn = "per_channel_cast_and_transpose"
    if fmt != "e4m3":
        raise ValueError(f"{fn}: fmt must be 'e4m3', got {fmt!r}")
    return _transpose_cast(x, num_per_tokens, round_sf, False, None, False, fn)


def swiglu_forward_and_per_channel_cast_and_transpose(x: torch.Tensor, fmt: str, num_per_tokens: int,
                                                      round_sf: bool = False, without_transpose: bool = False,
                                                      swiglu_clamp_value: Optional[float] = None):
    """SwiGLU of x's halves (gate, value), rounded to bf16, then the per-channel e4m3 cast of
    :func:`per_channel_cast_and_transpose` (out (Hh, T), or (T, Hh) with ``without_transpose``)."""
    fn = "swiglu_forward_and_per_channel_cast_and_transpose"
    if fmt != "e4m3":
        raise ValueError(f"{fn}: fmt must be 'e4m3', got {fmt!r}")
    return _transpose_cast(x, num_per_tokens, round_sf, without_transpose, swiglu_clamp_value, True, fn)
