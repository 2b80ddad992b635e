"""mhc_head_compute_mix's kernels (spec moe-engram-mhc.md §3.4): the forward per mix (the same
map as split_mixes' pre mixes), the backward through split_mixes' backward kernel in its head
form."""
from ._common import launch
from .pre_split_mixes_kernel import _mixes_bwd


def _head_mix_fwd(z, scale, base, pre_eps, out) -> None:
    """z, out f32 (T, m)."""
    T, m = z.shape
    if T * m:
        launch("mhc_head_mix_fwd", (f"M={m}",), z, z, scale, base, out, pre_eps)


def _head_mix_bwd(z, g_out, scale, base):
    m = z.shape[1]
    return _mixes_bwd(z, g_out, None, None, None, scale, base, m, 1.0, head=True)
