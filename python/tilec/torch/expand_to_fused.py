"""Reference expansion to the fused layout (``tile_kernels.torch.expand_to_fused``, spec
moe-engram-mhc.md §1.5, §1.6, §5.3): rows and per-token scales copied to their expert slots."""
import torch

from ..utils import align


def expand_to_fused(x: torch.Tensor, token_topk_to_pos: torch.Tensor, pos_to_expert: torch.Tensor) -> torch.Tensor:
    """out[p] = x[t] for every (t, k) with p = token_topk_to_pos[t, k] >= 0; other rows zero."""
    N, H = pos_to_expert.shape[0], x.shape[1]
    out = torch.zeros((N, H), dtype=x.dtype, device=x.device)
    p = token_topk_to_pos.long()
    t = torch.arange(x.shape[0], device=x.device)[:, None].expand_as(p)
    v = p >= 0
    if H:  # moved as raw bytes, so that any dtype (FP8 too) works
        out.view(torch.uint8)[p[v]] = x.contiguous().view(torch.uint8)[t[v]]
    return out


def expand_to_fused_with_sf(x, num_per_channels: int, token_topk_to_pos: torch.Tensor, pos_to_expert: torch.Tensor,
                            use_tma_aligned_col_major_sf: bool = False):
    """expand_to_fused of the data and of the scale rows; the scales of padding slots are zero.
    Column-major scales are the transposed view of a (Hsf, align(N, 4)) buffer."""
    data, sf = x
    out = expand_to_fused(data, token_topk_to_pos, pos_to_expert)
    out_sf = expand_to_fused(sf, token_topk_to_pos, pos_to_expert)
    if use_tma_aligned_col_major_sf:
        N = out_sf.shape[0]
        buf = torch.zeros((out_sf.shape[1], align(N, 4)), dtype=sf.dtype, device=sf.device)
        buf[:, :N] = out_sf.T
        out_sf = buf[:, :N].T
    return out, out_sf
