"""mhc_pre_apply_mix's kernels (spec moe-engram-mhc.md §3.5): the forward's weighted sum of the
streams, the backward's in-place update of the residual-gradient buffer and the mix gradient."""
from ._common import launch

BH_FWD = 512
BH_BWD = 256


def _apply_mix_fwd(x, mix, out) -> None:
    """x bf16 (T, m, H), mix f32 (T, m), out bf16 (T, H)."""
    T, m, H = x.shape
    if T * H:
        launch("mhc_apply_mix_fwd", (f"M={m}", f"BH={BH_FWD}"), x, x, mix, out)


def _apply_mix_bwd(x, mix, o_grad, x_grad_buf, mix_grad) -> None:
    """x_grad_buf (T, m, H) bf16 updated in place; mix_grad f32 (T, m) written."""
    T, m, H = x.shape
    if T:
        launch("mhc_apply_mix_bwd", (f"M={m}", f"BH={BH_BWD}"), x, x, mix, o_grad, x_grad_buf, mix_grad)
