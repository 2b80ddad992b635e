"""mhc_pre_apply_mix's kernels (spec moe-engram-mhc.md §3.5): the forward's weighted sum of the
streams, the backward's in-place update of the residual-gradient buffer and the mix gradient."""
import torch

from ._common import hidden_splits, launch

BH_FWD = 512
BH_BWD = 256
STAGES = 2   # the backward's pipeline


def _apply_mix_fwd(x, mix, out) -> None:
    """x bf16 (T, m, H), mix f32 (T, m), out bf16 (T, H)."""
    T, m, H = x.shape
    if T * H:
        launch("mhc_apply_mix_fwd", (f"M={m}", f"BH={BH_FWD}"), x, x, mix, out)


def _apply_mix_bwd(x, mix, o_grad, x_grad_buf, mix_grad) -> None:
    """x_grad_buf (T, m, H) bf16 updated in place; mix_grad f32 (T, m) written (the sums of the
    hidden splits added by torch where there are several)."""
    T, m, H = x.shape
    if T == 0:
        return
    ns = hidden_splits(T, H, BH_BWD)
    part = mix_grad.view(T, 1, m) if ns == 1 else torch.empty((T, ns, m), dtype=torch.float32, device=x.device)
    launch("mhc_apply_mix_bwd", (f"M={m}", f"BH={BH_BWD}", f"S={STAGES}"), x, x, mix, o_grad, x_grad_buf, part)
    if ns > 1:
        torch.sum(part, 1, out=mix_grad)
