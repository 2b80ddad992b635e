"""transpose and batched_transpose (spec quant-transpose.md §2.19, §2.20): bit copies for element
types of 1, 2 or 4 bytes, through tiles in shared memory."""
import torch

from .. import _runtime
from .._ops import kernel_op
from ..utils import ceil_div

# the kernel is generic over the element's width only: any dtype is moved as raw bits
_BITS_AS = {1: (torch.uint8, "u8"), 2: (torch.bfloat16, "bf16"), 4: (torch.float32, "f32")}


_NAMES = {torch.uint8: "u8", torch.int8: "i8", torch.float8_e4m3fn: "e4m3", torch.float8_e5m2: "e5m2",
          torch.bfloat16: "bf16", torch.float16: "f16", torch.int16: "i16", torch.float32: "f32", torch.int32: "i32"}
_configs = {}


def _tile(es, B, M, N):
    """(rows, columns, threads) of a block's tile: 128 x 128 bf16 and 64 x 128 f32 (32 KiB), 256 x
    256 bytes (64 KiB) — so that every block reads and writes runs of at least 256 contiguous bytes
    per row (runs of 128 bytes, as 128 x 128 u8 tiles had, reached about half the copy ceiling on
    an H200). Extents that are not a multiple of the tile get a partial last tile (the kernel masks
    it); only a matrix smaller than the tile gets a smaller one. A batch of fewer than 1024 such
    tiles (under two waves of resident blocks) gets smaller tiles: bf16 and bytes half the size
    each way (4032 x 2048 bf16 67.5 against 64.1 % of the copy ceiling, 8064 x 4096 e4m3 75.6
    against 72.6; halved tiles lost 1-7 points at the larger shapes); f32 (with full-width
    columns) the columns halved first, then the rows, until there are 2000 tiles (4032 x 2048:
    64 x 64, 19.7-20.3 us against 20.2-20.4 for 32 x 64; 4032 x 1024 stays 32 x 64, 64 x 64
    measured 11.9 against 11.4 us). Batches of more than one matrix of bf16 in 128 x 128 tiles
    take 512 threads: 8 x 4032 x 7168 226.0 against 227.4 us, 32 x 4032 x 2048 256.3 against
    258.1; single matrices measured 0.1-1 % slower with them. (H200, 2026-12-01,
    bench/ab_generics.py.)"""
    bx = {1: 256, 2: 128, 4: 64}[es]
    by = {1: 256, 2: 128, 4: 128}[es]
    while bx > 64 and bx > M:
        bx //= 2
    while by > 64 and by > N:
        by //= 2

    def tiles():
        return B * ceil_div(M, bx) * ceil_div(N, by)
    if es == 4 and tiles() < 1024 and by > 64:
        while tiles() < 2000 and (by > 64 or bx > 32):
            if by > 64:
                by //= 2
            else:
                bx //= 2
    elif tiles() < 1024 and bx > 32 and by > 64:
        bx, by = max(bx // 2, 32), by // 2
    nth = 512 if B > 1 and es == 2 and (bx, by) == (128, 128) else 256
    return bx, by, nth


def _generics(dtype, es, B, M, N, sa):
    """(generics, whether x must be viewed as raw bits) for one configuration, cached. Blocks go
    down x's columns (YMAJOR, the faster order) unless that puts more than 65535 column tiles in
    the grid's second dimension; then along its rows."""
    bx, by, nth = _tile(es, B, M, N)
    ymajor = ceil_div(N, by) <= 65535
    key = (dtype, bx, by, nth, sa, ymajor)
    entry = _configs.get(key)
    if entry is None:
        # the kernel copies bits: dtypes the language lacks travel as unsigned integers of their width
        tname = _NAMES.get(dtype) or _BITS_AS[es][1]
        gens = (f"T={tname}", f"BX={bx}", f"BY={by}", f"SA={sa}") + (() if nth == 256 else (f"NTH={nth}",)) \
            + (() if ymajor else ("YMAJOR=false",))
        entry = _configs[key] = (gens, dtype not in _NAMES)
    return entry


@kernel_op(returns="tensor")
def batched_transpose(x: torch.Tensor) -> torch.Tensor:
    """Returns a new contiguous ``(B, N, M)`` tensor with ``out[b, j, i] = x[b, i, j]``.

    ``x`` is 3-D ``(B, M, N)`` with ``M % 64 == 0``, ``N % 64 == 0``, unit stride along N and a
    row stride that is a multiple of 4 elements; any 1-, 2- or 4-byte dtype. Empty inputs return
    an empty result without launching.
    """
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"batched_transpose: x must be a tensor, got {type(x).__name__}")
    if x.dim() != 3:
        raise ValueError(f"batched_transpose: x must be 3-D (B, M, N), got {x.dim()}-D")
    return _batched_transpose(x, "batched_transpose")


def _batched_transpose(x: torch.Tensor, fn: str) -> torch.Tensor:
    B, M, N = x.shape
    out = torch.empty((B, N, M), dtype=x.dtype, device=x.device)
    if B == 0 or M == 0 or N == 0:
        return out
    es = x.element_size()
    if es not in _BITS_AS:
        raise ValueError(f"{fn}: x must have 1-, 2- or 4-byte elements, got {x.dtype}")
    if M % 64 or N % 64:
        d = "0 and 1" if fn == "transpose" else "1 and 2"
        raise ValueError(f"{fn}: x's dimensions {d} must be multiples of 64, got {M} and {N}")
    sb, sm, sn = x.stride()
    if sn != 1:
        raise ValueError(f"{fn}: x must have unit stride along its last dimension, got {sn}")
    if sm % 4:
        raise ValueError(f"{fn}: x's row stride must be a multiple of 4, got {sm}")
    if _runtime.faking():   # a fake implementation: the output is all there is
        return out
    vec = 16 // es
    sa = _runtime.pow2_divisor(sm, vec) if B == 1 else min(_runtime.pow2_divisor(sm, vec), _runtime.pow2_divisor(sb, vec))
    gens, as_bits = _generics(x.dtype, es, B, M, N, sa)
    k = _runtime.kernel("batched_transpose", gens, x)
    if as_bits:
        x, ov = x.view(_BITS_AS[es][0]), out.view(_BITS_AS[es][0])
    else:
        ov = out
    k.launch(x, ov, stream=_runtime.stream(x))
    return out


@kernel_op(returns="tensor")
def transpose(x: torch.Tensor) -> torch.Tensor:
    """Returns a new contiguous ``(N, M)`` tensor with ``out[j, i] = x[i, j]``; ``x`` is 2-D with
    the requirements of :func:`batched_transpose` (row strides other than N are allowed)."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"transpose: x must be a tensor, got {type(x).__name__}")
    if x.dim() != 2:
        raise ValueError(f"transpose: x must be 2-D (M, N), got {x.dim()}-D")
    if x.size(0) == 0 or x.size(1) == 0:
        return torch.empty((x.size(1), x.size(0)), dtype=x.dtype, device=x.device)
    return _batched_transpose(x.unsqueeze(0), "transpose")[0]
