"""Rows (and their per-token scales) copied to their expert slots of the fused layout (spec
moe-engram-mhc.md §1.5, §1.6)."""
from typing import Optional, Tuple

import torch

from .. import _runtime
from .._ops import kernel_op, PAIR
from ..quant.common import QuantTensor
from ..utils import align, ceil_div
from .common import check_bool, check_int, check_tensor, invalid_counter, present

_RAW = {1: (torch.uint8, "u8"), 2: (torch.int16, "i16"), 4: (torch.int32, "i32")}


def _raw(t: torch.Tensor) -> torch.Tensor:
    """A contiguous 2-D tensor as rows of the widest of i32 / i16 / u8 words that divide them."""
    rb = t.shape[1] * t.element_size()
    dt = _RAW[next(size for size in (4, 2, 1) if rb % size == 0)][0]
    return t if t.dtype == dt else t.view(dt)


def _row_chunks(words: int, word_bytes: int) -> Tuple[int, int]:
    """(BH words per block, NT threads) for rows of ``words`` words: a chunk of NT threads times v
    16-byte vectors (v <= 8) dividing the row where possible, else 128 threads x 1 vector with a
    masked tail."""
    per_vec = 16 // word_bytes
    if words % per_vec == 0:
        nv = words // per_vec
        best = None
        for nt in (128, 64, 32):
            for v in range(8, 0, -1):
                if nv % (nt * v) == 0 and (best is None or nt * v > best[0] * best[1]):
                    best = (nt, v)
        if best is not None:
            return best[0] * best[1] * per_vec, best[0]
    return 128 * per_vec, 128


def _check_mapping(fn, x, token_topk_to_pos, pos_to_expert):
    check_tensor(fn, "token_topk_to_pos", token_topk_to_pos, (torch.int32,), 2)
    check_tensor(fn, "pos_to_expert", pos_to_expert, (torch.int32,), 1)
    if token_topk_to_pos.shape[0] != x.shape[0]:
        raise ValueError(f"{fn}: token_topk_to_pos must have one row per token ({x.shape[0]}), "
                         f"got {token_topk_to_pos.shape[0]}")


@kernel_op(mutates=("invalid_count",), returns="tensor")
def expand_to_fused(x: torch.Tensor, token_topk_to_pos: torch.Tensor, pos_to_expert: torch.Tensor, *,
                    invalid_count: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Rows of ``x`` (T, H), any dtype, copied to their expert slots: out (N, H) with
    ``out[token_topk_to_pos[t, k]] = x[t]`` and zero rows where ``pos_to_expert < 0``. A position
    outside [-1, N) is dropped (nothing written; checked on the device, no synchronisation) and
    counted into ``invalid_count`` when given (a one-element int32 tensor the kernel adds to)."""
    fn = "expand_to_fused"
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or not x.is_contiguous():
        raise ValueError(f"{fn}: x must be a contiguous 2-D tensor")
    _check_mapping(fn, x, token_topk_to_pos, pos_to_expert)
    invalid = invalid_counter(fn, invalid_count, x, x=x, token_topk_to_pos=token_topk_to_pos,
                              pos_to_expert=pos_to_expert)
    T, H = x.shape
    N = pos_to_expert.shape[0]
    out = torch.empty((N, H), dtype=x.dtype, device=x.device)
    if max(T, N) == 0 or H == 0:
        return out
    xr, outr = _raw(x), _raw(out)
    bh, nt = _row_chunks(xr.shape[1], xr.element_size())
    gens = (f"V={_RAW[xr.element_size()][1]}", f"H={xr.shape[1]}", f"BH={bh}", f"K={token_topk_to_pos.shape[1]}",
            f"NT={nt}", present("invalid", invalid))
    _runtime.kernel("expand_to_fused", gens, x).launch(xr, token_topk_to_pos, pos_to_expert, outr, invalid,
                                                       stream=_runtime.stream(x))
    return out


@kernel_op(kinds={"x": PAIR}, mutates=("invalid_count",))
def expand_to_fused_with_sf(x: QuantTensor, num_per_channels: int, token_topk_to_pos: torch.Tensor,
                            pos_to_expert: torch.Tensor, use_tma_aligned_col_major_sf: bool = False, *,
                            invalid_count: Optional[torch.Tensor] = None):
    """expand_to_fused of quantised data and its per-token scales: returns (out (N, H), out_sf
    (N, Hsf)), out_sf row-major, or with ``use_tma_aligned_col_major_sf`` the transposed view of a
    (Hsf, align(N, 4)) buffer (strides (1, align(N, 4))). Scales are f32, or int32 words of four
    packed UE8M0 bytes (column-major only); padding slots get zero scales. Positions outside
    [-1, N) are dropped and counted as in :func:`expand_to_fused`."""
    fn = "expand_to_fused_with_sf"
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise ValueError(f"{fn}: x must be a (data, sf) pair")
    data, sf = x
    if not isinstance(data, torch.Tensor) or data.dim() != 2 or not data.is_contiguous():
        raise ValueError(f"{fn}: the data must be a contiguous 2-D tensor")
    check_tensor(fn, "sf", sf, (torch.float32, torch.int32), 2)
    check_int(fn, "num_per_channels", num_per_channels)
    check_bool(fn, "use_tma_aligned_col_major_sf", use_tma_aligned_col_major_sf)
    if num_per_channels not in (32, 128):
        raise ValueError(f"{fn}: num_per_channels must be 32 or 128, got {num_per_channels}")
    T, H = data.shape
    ng = ceil_div(H, num_per_channels)
    if sf.dtype == torch.int32:
        if not use_tma_aligned_col_major_sf:
            raise ValueError(f"{fn}: packed UE8M0 (int32) scales need use_tma_aligned_col_major_sf=True")
        ng = ceil_div(ng, 4)
    if tuple(sf.shape) != (T, ng):
        raise ValueError(f"{fn}: sf must be ({T}, {ng}), got {tuple(sf.shape)}")
    _check_mapping(fn, data, token_topk_to_pos, pos_to_expert)
    invalid = invalid_counter(fn, invalid_count, data, x=data, sf=sf, token_topk_to_pos=token_topk_to_pos,
                              pos_to_expert=pos_to_expert)
    N = pos_to_expert.shape[0]
    dev = data.device
    out = torch.empty((N, H), dtype=data.dtype, device=dev)
    if use_tma_aligned_col_major_sf:
        out_sf = torch.empty((ng, align(N, 4)), dtype=sf.dtype, device=dev)[:, :N].T
    else:
        out_sf = torch.empty((N, ng), dtype=sf.dtype, device=dev)
    if max(T, N) == 0 or H == 0:
        return out, out_sf
    xr, outr = _raw(data), _raw(out)
    bh, nt = _row_chunks(xr.shape[1], xr.element_size())
    gens = (f"V={_RAW[xr.element_size()][1]}", f"H={xr.shape[1]}", f"BH={bh}", f"K={token_topk_to_pos.shape[1]}",
            f"NT={nt}", present("invalid", invalid))
    osf = out_sf.view(torch.int32) if out_sf.dtype != torch.int32 else out_sf
    _runtime.kernel("expand_to_fused_with_sf", gens, data).launch(
        xr, sf.view(torch.int32), token_topk_to_pos, pos_to_expert, outr, osf, invalid, stream=_runtime.stream(data))
    return out, out_sf
