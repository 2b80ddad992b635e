"""mhc_pre_split_mixes' kernels (spec moe-engram-mhc.md §3.3): the forward per mix, the
backward persistent with per-block partial sums of the scale and base gradients."""
import torch

from ..utils import ceil_div
from ._common import launch, partials

WARPS = 4  # tokens a block of the backward takes at once (a warp each)


def _rows(T: int, n: int) -> int:
    return max(1, min(n, ceil_div(T, WARPS)))


def _partial_rows(T: int) -> int:
    return partials(_rows, T)


def _split_mixes_fwd(z, scale, base, mhc_mult, post_mult, pre_eps, pre, post, comb) -> None:
    """z f32 (T, M3); pre, post (T, m), comb (T, m * m) f32 contiguous."""
    T = z.shape[0]
    if T:
        launch("mhc_split_mixes_fwd", (f"M={mhc_mult}",), z, z, scale, base, pre, post, comb, post_mult, pre_eps)


def _mixes_bwd(z, g_pre, post, g_post, g_comb, scale, base, mhc_mult, post_mult, head: bool):
    """(grad_z, grad_scale, grad_base): the gradient of split_mixes (head False) or of the head
    mix (head True, g_pre the output's gradient); the scale and base gradients summed over the
    partial rows of the persistent blocks."""
    T, C = z.shape
    S = 1 if head else 3
    grad_z = torch.empty_like(z)
    if T == 0:
        return grad_z, torch.zeros_like(scale), torch.zeros_like(base)
    G = _partial_rows(T)
    g_scale = torch.empty((G, S), dtype=torch.float32, device=z.device)
    g_base = torch.empty((G, C), dtype=torch.float32, device=z.device)
    gens = [f"M={mhc_mult}", f"HEAD={'true' if head else 'false'}", f"W={WARPS}"]
    if head:
        gens += ["post=absent", "gpost=absent", "gcomb=absent"]
    else:
        gens += ["post=present", "gpost=present", "gcomb=present"]
    launch("mhc_mixes_bwd", gens, z, z, g_pre, post, g_post, g_comb, scale, base, grad_z, g_scale, g_base,
           post_mult)
    return grad_z, g_scale.sum(0), g_base.sum(0)
