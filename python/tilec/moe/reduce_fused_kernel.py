"""The weighted sum of expert rows back to their tokens (spec moe-engram-mhc.md §1.7)."""
from typing import Optional, Tuple, Union

import torch

from .. import _runtime
from .._ops import kernel_op, QUANT
from ..quant.common import QuantTensor
from .common import check_no_overlap, check_tensor, invalid_counter, present


def _reduce_chunk(vectors: int) -> Tuple[int, int]:
    """(NT threads, V vectors per thread) of a reduce_fused block for rows of ``vectors`` 8-element
    vectors: NT a multiple of 32 up to 512 and V <= 4 with NT * V dividing the row, the largest
    chunk first (a whole row when possible), then the larger V. Bytes in flight per SM are what
    the kernel needs; four vectors per thread keep them high at 4 blocks per SM (about 70
    registers), where more rows per block would cost registers for each."""
    best = (32, 1)
    for v in (4, 3, 2, 1):
        for nt in range(32, 513, 32):
            if vectors % (nt * v) == 0 and nt * v > best[0] * best[1]:
                best = (nt, v)
    return best


@kernel_op(kinds={"x": QUANT}, mutates=("out", "invalid_count"),
           returns=lambda f, a: a["out"] if a["out"] is not None else f[0])
def reduce_fused(x: Union[torch.Tensor, QuantTensor], topk_weights: Optional[torch.Tensor],
                 token_topk_to_pos: torch.Tensor, fp8_format: str = "", sf: Optional[torch.Tensor] = None,
                 out: Optional[torch.Tensor] = None, *, invalid_count: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Weighted sum of expert rows back to tokens (spec §1.7), bit-exact: for each token,
    ``acc = fma(x[p], s, acc)`` over its valid slots p in k order, s = weight (or 1) times the
    row scale ``x_sf[p]`` when x is (x, x_sf); then ``acc * sf[0]``; out in x's dtype (bf16
    rounded to nearest even) or, with fp8_format 'e4m3', e4m3 saturating at ±448. A position
    outside [-1, N) is skipped like -1 (checked on the device, no synchronisation) and counted
    into ``invalid_count`` when given (a one-element int32 tensor the kernel adds to). ``out``
    must not overlap an input."""
    fn = "reduce_fused"
    x_sf = None
    if isinstance(x, (tuple, list)):
        if len(x) != 2:
            raise ValueError(f"{fn}: x must be a tensor or an (x, x_sf) pair")
        x, x_sf = x
    check_tensor(fn, "x", x, (torch.float32, torch.bfloat16), 2)
    N, H = x.shape
    if H % 256:
        raise ValueError(f"{fn}: the hidden size must be a multiple of 256, got {H}")
    if x_sf is not None:
        check_tensor(fn, "x_sf", x_sf, (torch.float32,), 1)
        if x_sf.shape[0] != N:
            raise ValueError(f"{fn}: x_sf must have one scale per row of x ({N}), got {x_sf.shape[0]}")
    check_tensor(fn, "token_topk_to_pos", token_topk_to_pos, (torch.int32,), 2)
    T, K = token_topk_to_pos.shape
    if topk_weights is not None:
        check_tensor(fn, "topk_weights", topk_weights, (torch.float32,), 2)
        if tuple(topk_weights.shape) != (T, K):
            raise ValueError(f"{fn}: topk_weights must be ({T}, {K}) like token_topk_to_pos, "
                             f"got {tuple(topk_weights.shape)}")
    if fp8_format == "":
        odt = x.dtype
        if sf is not None:
            raise ValueError(f"{fn}: sf (the output scale) is only for fp8_format='e4m3'")
    elif fp8_format == "e4m3":
        odt = torch.float8_e4m3fn
    else:
        raise ValueError(f"{fn}: fp8_format must be '' or 'e4m3', got '{fp8_format}'")
    if sf is not None:
        if not isinstance(sf, torch.Tensor) or sf.dtype != torch.float32 or sf.numel() != 1:
            raise ValueError(f"{fn}: sf must be a float32 tensor with one element")
    if out is None:
        out = torch.empty((T, H), dtype=odt, device=x.device)
    else:
        if not isinstance(out, torch.Tensor):
            raise ValueError(f"{fn}: out must be a tensor or None, got {type(out).__name__}")
        if out.device != x.device:
            raise ValueError(f"{fn}: out is on {out.device}, x on {x.device}")
        if tuple(out.shape) != (T, H):
            raise ValueError(f"{fn}: out must be ({T}, {H}), got {tuple(out.shape)}")
        if out.dtype != odt:
            raise ValueError(f"{fn}: out must be {str(odt).replace('torch.', '')}, got {str(out.dtype).replace('torch.', '')}")
        if out.stride(1) != 1 and H > 1:
            raise ValueError(f"{fn}: out must have unit stride along the hidden dimension")
    ins = dict(x=x, x_sf=x_sf, topk_weights=topk_weights, token_topk_to_pos=token_topk_to_pos, sf=sf)
    check_no_overlap(fn, "out", out, **ins)
    invalid = invalid_counter(fn, invalid_count, x, out=out, **ins)
    if T == 0:
        return out
    nt, nv = _reduce_chunk(H // 8)
    oa = 1
    while oa < 16 // out.element_size() and out.stride(0) % (oa * 2) == 0:
        oa *= 2
    tx = "f32" if x.dtype == torch.float32 else "bf16"
    gens = (f"TX={tx}", f"TO={'e4m3' if fp8_format else tx}", f"H={H}", f"K={K}",
            f"NT={nt}", f"V={nv}", f"OA={oa}", present("topk_weights", topk_weights), present("x_sf", x_sf),
            present("sf", sf), present("invalid", invalid))
    _runtime.kernel("reduce_fused", gens, x).launch(x, token_topk_to_pos, topk_weights, x_sf,
                                                    None if sf is None else sf.reshape(1), out, invalid,
                                                    stream=_runtime.stream(x))
    return out
